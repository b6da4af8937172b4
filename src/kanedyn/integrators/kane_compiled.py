"""Fixed-step methods on compiled Kane systems as compiled loops — Störmer–Verlet, midpoint,
gauss4, AVF, energy–momentum (Gonzalez), Itoh–Abe, and RK4 with force elements or the
energy projection —: one loop per method for every system, which takes the system's
generated functions as first-class functions.

A :class:`~kanedyn.kane.codegen.runtime.CompiledSystem` (numba backend) carries its
equations as generated ``@njit`` functions (``mass_matrix(q, t, M)``, ``forcing(q, u, τ,
t, F)``, ``energy(q, u, t, E)``, each returning a status). A loop here receives them as
numba ``FunctionType`` values (calls through a pointer, not inlined) and has one explicit
signature, so that it is compiled — and cached on disk — once for all systems, instead of
once per generated module as the RK4 written into the module text
(``printers._NUMBA_RK4``). The calls cost next to the generated arithmetic they run.

Störmer–Verlet (:func:`run_verlet`): the leapfrog of :class:`.verlet.Verlet` on additive
coordinates (q̇ = u exactly, ``chart_is_additive``) — its readable reference, tested step
for step against this loop — in the reference's own arithmetic: x = q − q_n, p = M v,

    p_{n+½} = p_n + h/2 K(q_n, p_{n+½}),      K = ∂T/∂q|_v − g(q),  v = M⁻¹ p,
    x       = h/2 [M(q_n)⁻¹ + M(q_n + x)⁻¹] p_{n+½},
    p_{n+1} = p_{n+½} + h/2 K(q_n + x, p_{n+½})

(Hairer, Lubich & Wanner 2006, eq. VI.3.4), ∂T/∂q by central differences of the generated
kinetic energy (step 1e-6, :func:`.base.kinetic_energy_gradient`), g(q) = −forcing(q, 0, 0)
(:func:`.base.gravity_torques`), M⁻¹ by Cholesky (:func:`.base.solve_spd`). Both implicit
equations by :func:`.base.newton`'s iteration with the identity for a matrix (a fixed point
contracting like h|∂²H/∂q∂p|), forward-difference Jacobians when it contracts slowly or
diverges, its stopping test and ``maxiter``; the reference's predictors (p_n and h v_{n+½}).
Midpoint and gauss4 (:func:`run_gauss`): :class:`.gauss.GaussLegendre`'s stages in
canonical coordinates z = (x, y), q = q_n + x, y = M v, ż = (M⁻¹y, −∂H/∂q), as the
reference computes them for a system without closed-form derivatives: Newton on
``Z − h (A ⊗ 1) F(z_n + Z) = 0`` with its kinematic matrix ``1 − h A ⊗ [0 M⁻¹; 0 0]``, a
forward-difference Jacobian of the stage residual where that contracts slowly (kept for
the next steps while h stays: the reference's ``reuse``), its stopping test; the predictor
c h f(z_n); z_{n+1} = z_n + (b A⁻¹) Z.

AVF, Itoh–Abe (:func:`run_avf`, :func:`run_itoh_abe`; one loop) and Gonzalez
(:func:`run_gonzalez`): the steps of :class:`.discrete_gradient.AVF`,
:class:`.discrete_gradient.ItohAbe` and ``EnergyMomentum._gonzalez_step``
(:mod:`.energy_momentum`) on additive coordinates, d = (Δq, Δp) from
``(Δq − h ∇̄_pH, Δp + h ∇̄_qH) = 0`` with their discrete gradients ∇̄H (Gauss–Legendre
quadrature of ∇H; H along the coordinate paths; the midpoint gradient with Gonzalez's
correction), by :func:`.base.newton` with the kinematic matrix ``[1, −h/2 M(q_n)⁻¹; 0, 1]``
from the last step's d, p carried from step to step (Gonzalez: p = M v at every step),
Itoh–Abe's polish of Δp after it. M⁻¹ is made as numpy's ``inv`` makes it (gesv on the
identity), so that the residuals holding it round as the references'.

RK4 with force elements or the energy projection (:func:`run_rk4`; without them the loop
generated with the equations runs, ``printers._NUMBA_RK4``): :class:`.rk4.RK4`'s stages,
u̇ by the generated ``forward_dynamics`` with τ = τ_nc + τ_springs of the rows as its inputs
(the generalized forces, where the inputs are those: a tree derived from a Model; without
force elements zero inputs, of any number, as ``forward_dynamics(q, v, 0)``), W_nc by
the same stages (ẇ = vᵀτ_nc); on additive coordinates q ⊕ ξ = q + ξ and ξ̇ = v, on a chart
that is not (quaternions) the stages of midpoint's chart loop below, q_n ⊕ ξ and
ξ̇ = J(ξ)⁻¹ v by the generated chart functions (:func:`_chart_rates`), and
q_{n+1} = q_n ⊕ (h/6)(k₁ + 2k₂ + 2k₃ + k₄): the quaternions move by the exponential map,
as rk4.py's ``integrate_configuration``, and stay of unit norm. One loop and signature
for both (``additive`` a runtime flag).

Force elements with rows in :mod:`kanedyn.forces.kernel` (springs, dampers, smoothed
Stribeck friction, constant and sinusoidal torques: a tree derived from a Model, whose
joints name its coordinates and speeds, ``source_model``) enter each loop where its
reference puts them: the springs' potential in H (so in ∂H/∂q, the kicks and the
energies), τ_nc at the reference's time and state — Verlet's kicks at t_n and t_n + h
(``τ_nc(t, q, M⁻¹p)``, W_nc by the trapezoidal rule of the two kicks), the Gauss stages at
t_n + c_i h (W_nc = h Σ b_i v_iᵀτ_nc,i from the last residual), the discrete gradients'
momentum equation ``Δp + h ∇̄_qH − h τ_nc(t_n + h/2, q_n + Δq/2, ∇̄_pH)`` (W_nc =
h v̄ᵀτ_nc at v̄ = Δq/h; Itoh–Abe's polish solves its p-equation with τ_nc by the
reference's sweeps).

``project="energy"`` on RK4, midpoint and gauss4 (:func:`_project_energy`; in the
quaternions' chart below, RK4's too): each step
followed by :class:`.projection.Projected`'s scalar Newton onto E₀ + W_nc along ∇E at
the step's end (∂T/∂q by the central differences above, M v), to its bar 4e-15 (1 + |E₀|).

Midpoint, gauss4 and energy_momentum on a chart that is not additive (quaternions: q̇ ≠ u;
:func:`run_gauss_chart`): :class:`.gauss.GaussLegendre`'s stages in its tangent
coordinates z = (ξ, v), q = q_n ⊕ ξ, ż = (J(ξ)⁻¹ v, u̇(q, v)), u̇ by the generated
``forward_dynamics``, q_n ⊕ ξ and J(ξ) by the generated ``chart_point`` and
``chart_jacobian`` (``CompiledSystem.compiled_chart``: integrate_configuration's and
chart_jacobian's arithmetic, the quaternion groups baked in), ξ̇ by LU as the reference's
``solve``; Newton as above with the kinematic matrix ``1 − h A ⊗ [0 1; 0 0]``.
``project="energy"`` and energy_momentum's ``"projection"`` variant (that midpoint, then
the projection onto E₀ + W_nc; :func:`_project_energy`) in the same loop: the
projection's scalar Newton in the chart of the step's end, ∂T/∂ξ by central differences
through ``chart_point``. energy_momentum's ``"projection"`` variant takes this loop on
additive coordinates too (its midpoint is in the tangent form there as well,
``_TangentMidpoint``; :func:`chart_applicable` with ``additive``): the generated
``chart_point`` is then q_n + ξ and ``chart_jacobian`` the identity, exactly, so that
ξ̇ = v as the reference's (its ``chart_jacobian`` None).

Itoh–Abe (forward and symmetric) on that chart (:func:`run_itoh_abe_chart`):
:class:`.discrete_gradient.ItohAbe`'s step in :mod:`.chart`'s canonical coordinates
z = (x, p) centred on q_n, q = q_n ⊕ x, p = J(x)ᵀ M v, H(x, p) = E(q_n ⊕ x, M⁻¹J(x)⁻ᵀp)
(J = 1 exactly at x = 0, as ``ProtocolChart``), its discrete gradient along the coordinate
paths (the central difference of H below |Δx_i| = 1e-5: the protocol chart has no
closed-form ∂H/∂x), ∇̄_pH with ∂²H/∂p² = J⁻¹M⁻¹J⁻ᵀ, Newton with the kinematic matrix
``[1, −h/2 M(q_n)⁻¹; 0, 1]``, the difference Jacobian kept while h stays (the reference's
``reuse`` in a chart), stagnation 1e-6 and ITOH_ABE_FLOOR, the two-sweep polish of a
chart, and the momentum carried as J(Δx)⁻ᵀ(p_n + Δp). Equal to the Python steps bit for
bit, states and Newton iterations, where both take a quaternion's norm alike (tested);
numpy's ``norm`` takes BLAS's ddot where the generated ``chart_point`` sums the squares
in order, an ulp apart at some points, which Itoh–Abe's quotients of H and Newton's stop
then carry: round-off (tested).

AVF and Störmer–Verlet on that chart (:func:`run_avf_chart`, :func:`run_verlet_chart`;
a ``ChartCompiledSystem``, whose ``compiled_chart_derivative()`` gives the generated W(q)
``_rates``, ∂q̇/∂q and ∂T/∂q, built on first use): discrete_gradient.py's AVF step in
chart.py's canonical coordinates with ``SystemChart`` — ∇̄H the 3-node Gauss quadrature
of ∂H/∂x = Jᵀ(∂V/∂q − W(q)ᵀ∂T/∂q) − D(x, ẋ)ᵀ M v and ẋ (:func:`_chart_gradient`, D in
``CompiledSystem.chart_derivative``'s closed form, :func:`_chart_derivative`), the
Newton of Itoh–Abe's chart loop without its polish and stagnation floor (bar 1e-9), the
momentum carried as J⁻ᵀp —; verlet.py's ``_variational_step`` — x from μ_n +
h/2 G(q_n, x/h) + Kᵀ g_v = 0, g_v = ½ M_0 x/h + ½ (J + D(x, x))ᵀ M_1 J x/h, K the
start sensitivity (:func:`_start_sensitivity`), Newton from h v_n with −M_0/h and the
kept difference Jacobian, μ_{n+1} = J⁻ᵀ g_v + h/2 G(q_{n+1}, J x/h) —; the force rows
where those steps put them. The Python steps' states, W_nc and Newton iterations to
round-off (numba's products round apart from numpy's by ulps, which Newton's stop
carries: ≤ 8e-14 in v over 200 steps; tested).

Force elements with rows in the quaternions' chart (a tree derived from a Model, its
inputs the nv generalized forces: :func:`chart_applicable`; RK4's as above), where the
Python steps put them: the springs read the coordinates of their 1-DOF joints (``iqd``,
:func:`.gauss_compiled.dof_coordinates`; q_j is not the coordinate of speed j past a
quaternion), their potential in E and H, and the wrench rows q itself. Midpoint and
gauss4: τ = τ_nc + τ_springs at (t_n + c_i h, q_n ⊕ ξ_i, v_i) as the forward dynamics'
inputs (gauss.py's ``p.tau``), W_nc = h Σ b_i v_iᵀτ_nc,i of the last residual, the
projection onto E₀ + W_nc with the springs' k (q − q_rest) in ∇_ξE. Itoh–Abe: the
momentum equation ``Δp + h ∇̄_xH − h J(x̄)ᵀ τ_nc(t_n + h/2, q_n ⊕ x̄, J(x̄) ∇̄_pH)`` at
x̄ = Δx/2 (discrete_gradient.py's ``forcing`` in a chart, :func:`_chart_force`), the same
term in the polish's p-equation, W_nc = h v̄ᵀτ_nc at ẋ̄ = Δx/h. The Python steps'
states and W_nc to round-off (τ summed, J ẋ̄ and Jᵀτ in another order than numpy's;
tested).

Where a loop does not apply (force elements without rows — a Python function, a system
not derived from a Model —, speeds other than the coordinate rates but for midpoint,
gauss4, energy_momentum's projection variant, itoh_abe, avf, verlet and rk4 in the
quaternions' chart,
constraints, the numpy or C backends, another projection) or an iteration fails, the
Python steps run the whole way and report what happens.
"""

from __future__ import annotations

import warnings

import numba as nb
import numpy as np
from numba import types

from ..dynamics import _compiled
from ..forces.kernel import (
    empty_rows,
    joint_forces,
    spring_gradient_add,
    spring_potential,
    wrench_forces_add,
)
from ..spatial.lie import skew3, so3_right_jacobian, so3_right_jacobian_derivative
from .base import ITOH_ABE_FLOOR, _chol_solve
from .gauss_compiled import NEWTON_FAILED, STATE_GUARD, dof_coordinates, energy_scale, gather
from .rk4_compiled import save_sample, state_guard, store

_compiled.key_cache(__name__)

_V = types.float64[::1]
#: the generated functions' signatures (kanedyn.kane.codegen.printers: status 0 or the
#: index of a non-finite input)
MASS_MATRIX = types.FunctionType(types.int64(_V, types.float64, _V))
FORCING = types.FunctionType(types.int64(_V, _V, _V, types.float64, _V))
ENERGY = types.FunctionType(types.int64(_V, _V, types.float64, _V))
#: the generated ``forward_dynamics(q, u, τ, t, u̇, work)`` (Cholesky of M u̇ = forcing)
FORWARD_DYNAMICS = types.FunctionType(types.int64(_V, _V, _V, types.float64, _V, _V))
#: the generated chart functions (printers._NUMBA_RK4): q ← q0 ⊕ ξ, J (flat) ← J(ξ)
CHART_POINT = types.FunctionType(types.int64(_V, _V, _V))
CHART_JACOBIAN = types.FunctionType(types.int64(_V, _V, _V))
#: the index in q of each speed's coordinate on 1-DOF additive joints, −1 on the others'
#: (:func:`.gauss_compiled.dof_coordinates`): what the springs of the force rows read
_IQD = types.int64[::1]

#: the reference's central-difference step of ∂T/∂q (base.kinetic_energy_gradient)
_KE_STEP = 1e-6
#: base.newton's default bar for an update at roundoff that no longer shrinks
_STAGNATION = 1e-9
_EPS = np.finfo(np.float64).eps

@nb.njit(cache=True, nogil=True)
def _kind(k):
    """k as a plain int64: numba types a constant argument as a literal and compiles the
    callee once per value; through this, one compiled ``_stage_newton`` (and
    ``_project_energy``) serves every loop and kind."""
    return np.int64(k)


# work rows of U (n wide)
_QN, _P0, _PH, _VA, _R, _XS, _RS, _XK, _RK, _Q, _U, _DT, _F, _QK, _TN, _TS = range(16)


@nb.njit(cache=True, nogil=True)
def _workspace(n, ninputs):
    """What every loop works in: the rows U (n wide), M, E, zero speeds and inputs."""
    return (np.zeros((16, n)), np.empty((n, n)), np.empty(3), np.zeros(n),
            np.zeros(max(ninputs, 1)))


@nb.njit(cache=True, nogil=True)
def _additive_fns(mass_matrix, forcing, energy, P, forces, data):
    """``fns``, what the helpers take, of a loop on additive coordinates: the generated
    functions, the force rows, whether they act, the Model's flat array, and no index of
    the speeds' coordinates (``fns[6]`` empty: q_j is the coordinate of speed j)."""
    return (mass_matrix, forcing, energy, P, forces, data, np.empty(0, dtype=np.int64),
            np.empty(0))


@nb.njit(cache=True, nogil=True)
def _dofs(fns, q):
    """The coordinates the springs of the force rows read, one per speed: q itself on
    additive coordinates (``fns[6]`` empty), else q[iqd[j]] gathered into ``fns[7]``
    (:func:`.gauss_compiled.gather`: 0 on the speeds of ball and free joints, which carry
    no spring)."""
    if fns[6].shape[0] == 0:
        return q
    gather(fns[6], q, fns[7])
    return fns[7]


@nb.njit(cache=True, nogil=True)
def _force_power(fns, t, q, v, U) -> float:
    """U[_TN] ← τ_nc(t, q, v) and U[_TS] ← τ = τ_nc + τ_springs of the force rows
    (``fns[3]``; zero without rows, ``fns[4]`` False); returns the power vᵀτ_nc. The
    springs read the speeds' coordinates (:func:`_dofs`), the wrench rows q itself
    (:func:`~kanedyn.forces.kernel.applied_forces`' two parts)."""
    tau = U[_TN]
    if not fns[4]:
        tau[:] = 0.0
        U[_TS] = 0.0
        return 0.0
    # (q was finite for M(q))
    joint_forces(fns[3], t, _dofs(fns, q), v, tau, U[_TS])
    wrench_forces_add(fns[5], fns[3], q, tau, U[_TS])
    power = 0.0
    for i in range(v.shape[0]):
        power += v[i] * tau[i]
    return power


@nb.njit(cache=True, nogil=True)
def _midpoint_force(fns, t, dq, vbar, U) -> float:
    """U[_TN] ← τ_nc(t, q_n + Δq/2, v̄) (discrete_gradient.py's ``forcing`` on additive
    coordinates; q_n in U[_QN], the point in U[_XS]); returns v̄ᵀτ_nc."""
    q = U[_XS]
    for i in range(vbar.shape[0]):
        q[i] = U[_QN, i] + 0.5 * dq[i]
    return _force_power(fns, t, q, vbar, U)


@nb.njit(cache=True, nogil=True)
def _save(step, n_steps, every, q, v, work, Q, V, W, k) -> int:
    """:func:`.rk4_compiled.save_sample` with W_nc beside the state."""
    k_next = save_sample(step, n_steps, every, q, v, Q, V, k)
    if k_next != k:
        W[k] = work
    return k_next


@nb.njit(cache=True, nogil=True)
def _largest(v) -> float:
    out = 0.0
    for i in range(v.shape[0]):
        out = max(out, abs(v[i]))
    return out


@nb.njit(cache=True, nogil=True)
def _guarded(q, v, vmax0, blowup, step, Q, V, status) -> bool:
    """False, with STATE_GUARD in status and the state in the spare last rows of Q and V,
    when the state after ``step`` fails :func:`.rk4_compiled.state_guard`."""
    if state_guard(q, v, vmax0, blowup) == 0:
        return True
    status[0], status[1] = STATE_GUARD, step
    Q[Q.shape[0] - 1, :] = q
    V[V.shape[0] - 1, :] = v
    return False


@nb.njit(cache=True, nogil=True)
def _inverse(M):
    """M⁻¹ as numpy's ``inv`` makes it, LAPACK's gesv on the identity (numba's ``inv`` takes
    getri, whose rounding differs: the references' M⁻¹ enters Itoh–Abe's residual)."""
    # (C order, as numpy's: a row of it is then contiguous for BLAS's dot, as the reference's)
    return np.ascontiguousarray(np.linalg.solve(M, np.eye(M.shape[0])))


@nb.njit(cache=True, nogil=True)
def _velocity(mass_matrix, q, p, M, v) -> bool:
    """v = M(q)⁻¹ p (:func:`.base.solve_spd`); False where M is refused or not SPD."""
    n = M.shape[0]  # (nv: q has nq entries in a chart that is not additive)
    if mass_matrix(q, 0.0, M.reshape(n * n)) != 0:
        return False
    return _chol_solve(M, p, v)


@nb.njit(cache=True, nogil=True)
def _kinetic_gradient(energy, q, v, qk, E, dT) -> bool:
    """dT[:n] ← ∂T/∂q|_v by central differences of the generated T, step 1e-6
    (:func:`.base.kinetic_energy_gradient`; q ⊕ ±e_j = q ± e_j: the chart is additive),
    qk the scratch; False where the generated energy refuses a point."""
    n = q.shape[0]
    for j in range(n):
        for i in range(n):
            qk[i] = q[i]
        qk[j] = q[j] + _KE_STEP
        if energy(qk, v, 0.0, E) != 0:
            return False
        up = E[1]
        qk[j] = q[j] + -_KE_STEP
        if energy(qk, v, 0.0, E) != 0:
            return False
        dT[j] = (up - E[1]) / (2 * _KE_STEP)
    return True


@nb.njit(cache=True, nogil=True)
def _kick(fns, x, p, U, M, E, zu, zt, k) -> bool:
    """k ← −∂H/∂x(x, p) = ∂T/∂q|_v − g at q = q_n + x, v = M⁻¹p, in the reference's order
    of operations (:meth:`.base.Problem.hamiltonian_gradient`), the springs of the force
    rows (``fns[3]``, where ``fns[4]``) in ∂H/∂q; U[_U] ← v."""
    mass_matrix, forcing, energy, P, forces = fns[0], fns[1], fns[2], fns[3], fns[4]
    n = x.shape[0]
    qn, q, v, dT, F, qk = U[_QN], U[_Q], U[_U], U[_DT], U[_F], U[_QK]
    for i in range(n):
        q[i] = qn[i] + x[i]
    if not _velocity(mass_matrix, q, p, M, v):
        return False
    if not _kinetic_gradient(energy, q, v, qk, E, dT) or forcing(q, zu, zt, 0.0, F) != 0:
        return False
    for i in range(n):
        k[i] = -dT[i] + -F[i]  # ∂H/∂q = −∂T/∂q + g, g = −forcing(q, 0, 0)
    if forces:  # − τ_springs = + k (q − q_rest)
        spring_gradient_add(P, q, 1.0, k)
    for i in range(n):
        k[i] = -k[i]
    return True


@nb.njit(cache=True, nogil=True)
def _force_kick(fns, t, x, p, U, M, E, zu, zt, k) -> float:
    """k ← −∂H/∂x + τ_nc(t, q, v) at (x, p) (verlet.py's and gauss.py's ``τ_nc − ∂H/∂x``),
    U[_U] ← v; returns the power vᵀτ_nc, NaN where a generated function refuses q."""
    if not _kick(fns, x, p, U, M, E, zu, zt, k):
        return np.nan
    if not fns[4]:
        return 0.0
    power = _force_power(fns, t, U[_Q], U[_U], U)
    for i in range(x.shape[0]):
        k[i] = U[_TN, i] - -k[i]
    return power


@nb.njit(cache=True, nogil=True)
def _simplified_jacobian(M, h, Jm) -> None:
    """Jm ← [[1, −h/2 M⁻¹], [0, 1]], M = M(q_n): the discrete gradients' Newton matrix for
    d = (Δx, Δp) with ∇̄_pH ≈ M⁻¹ p and the derivatives in x left out, which Newton's kept
    or refreshed matrix supplies (discrete_gradient.py's step: the same start)."""
    n = M.shape[0]
    Minv = _inverse(M)
    for a in range(2 * n):
        for b in range(2 * n):
            Jm[a, b] = 1.0 if a == b else 0.0
    for a in range(n):
        for b in range(n):
            Jm[a, n + b] = -0.5 * h * Minv[a, b]


@nb.njit(cache=True, nogil=True)
def _residual(kind, fns, h, t, x, U, M, E, zu, zt, r) -> bool:
    """The step's two implicit equations: ``kind`` 0, the half kick at p = x:
    r = x − p_n − h/2 K(q_n, x), K = −∂H/∂x + τ_nc(t_n, q_n, M⁻¹x); 1, the position at x:
    r = x − h/2 (v_{n+½} + M(q_n + x)⁻¹ p_{n+½})."""
    n = x.shape[0]
    if kind == 0:
        if np.isnan(_force_kick(fns, t, zu, x, U, M, E, zu, zt, r)):
            return False
        for i in range(n):
            r[i] = x[i] - U[_P0, i] - 0.5 * h * r[i]
        return True
    q, v = U[_Q], U[_U]
    for i in range(n):
        q[i] = U[_QN, i] + x[i]
    if not _velocity(fns[0], q, U[_PH], M, v):
        return False
    for i in range(n):
        r[i] = x[i] - 0.5 * h * (U[_VA, i] + v[i])
    return True


@nb.njit(cache=True, nogil=True)
def _finite(a) -> bool:
    for i in range(a.shape[0]):
        if not np.isfinite(a[i]):
            return False
    return True


#: the one signature of the loop: the generated functions as first-class functions
_ROWS = types.float64[:, ::1]
#: what every loop takes first: the generated functions, the number of inputs, the force
#: rows (kanedyn.forces.kernel), whether they act, and the flat array of the Model the tree
#: was derived from (its wrench rows' kinematics; a placeholder without wrench rows)
_FNS = (MASS_MATRIX, FORCING, ENERGY, types.int64, _ROWS, types.boolean, _ROWS)
#: then, after the method's own arguments and q0, v0: the run's step sizes and start
#: times, the number of steps, the sampling, Newton's tolerance and maxiter (the discrete
#: gradients' stagnation bar after them); last the guard, the samples Q, V, W_nc, the
#: iterations and the status
_RUN = (_V, _V, types.int64, types.int64, types.float64, types.int64)
_OUT = (types.float64, _ROWS, _ROWS, _V, types.int32[::1], types.int64[::1])
_VERLET_SIGNATURE = types.int64(*_FNS, _V, _V, *_RUN, *_OUT)


def _verlet_loop(mass_matrix, forcing, energy, ninputs, P, forces, data, q0, v0, steps, times,
                 n_steps, every, tol, maxiter, blowup, Q, V, W, iters, status):
    """The whole leapfrog run (module doc): samples into Q, V, W (the last row: a state
    that failed the guard); status[0] 0, NEWTON_FAILED or STATE_GUARD with status[1] the
    step; returns the number of samples stored."""
    fns = _additive_fns(mass_matrix, forcing, energy, P, forces, data)
    n = v0.shape[0]
    U, M, E, zu, zt = _workspace(n, ninputs)
    none, none2, no_reuse = np.empty(0), np.empty((0, 0)), np.zeros(0, dtype=np.bool_)
    q, v, x, kb, tc = q0.copy(), v0.copy(), np.empty(n), np.empty(n), np.empty(1)
    k_out, vmax0, work = store(q, v, Q, V, 0), _largest(v), 0.0
    W[0] = 0.0
    for step in range(n_steps):
        h, t = steps[step], times[step]
        tc[0] = t
        U[_QN] = q
        if mass_matrix(q, 0.0, M.reshape(n * n)) != 0:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        U[_P0] = M @ v
        x[:] = U[_P0]  # the half kick, from p_n
        i1 = _stage_newton(_kind(5), fns, None, none2, none, none, h, tc, none, none, 0.0, none,
                           x, none2, none2, no_reuse, tol, maxiter, _STAGNATION, U, M, E, zu, zt,
                           none2)
        wa = np.nan if i1 < 0 else _force_kick(fns, t, zu, x, U, M, E, zu, zt, kb)
        if np.isnan(wa):
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        U[_PH] = x
        U[_VA] = U[_U]
        for i in range(n):  # the position, from h v_{n+½}
            x[i] = h * U[_VA, i]
        i2 = _stage_newton(_kind(6), fns, None, none2, none, none, h, tc, none, none, 0.0, none,
                           x, none2, none2, no_reuse, tol, maxiter, _STAGNATION, U, M, E, zu, zt,
                           none2)
        wb = np.nan if i2 < 0 else _force_kick(fns, t + h, x, U[_PH], U, M, E, zu, zt, kb)
        if np.isnan(wb):
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        p1 = U[_R]
        for i in range(n):
            p1[i] = U[_PH, i] + 0.5 * h * kb[i]
            q[i] = U[_QN, i] + x[i]
        if not _velocity(mass_matrix, q, p1, M, v):
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        iters[step] = i1 + i2
        work += 0.5 * h * (wa + wb)
        if not _guarded(q, v, vmax0, blowup, step, Q, V, status):
            return k_out
        k_out = _save(step, n_steps, every, q, v, work, Q, V, W, k_out)
    return k_out


# ------------------------------------------------------------------ the energy projection
#: projection.Projected's defaults: the bar on |G| (× 4 (1 + |E0|)), its iterations
PROJECTION_TOL, PROJECTION_MAXITER = 1e-15, 20


@nb.njit(cache=True, nogil=True)
def _energy(fns, q, v, E) -> float:
    """E(q, v) = T + V (+ the springs' potential of the rows): ``Problem.energy``; NaN
    where the generated energy refuses q."""
    if fns[2](q, v, 0.0, E) != 0:
        return np.nan
    if fns[4]:
        return E[0] + spring_potential(fns[3], _dofs(fns, q))
    return E[0]


@nb.njit(cache=True, nogil=True)
def _chart_kinetic_gradient(energy, point, q, v, E, dT) -> bool:
    """dT[:n] ← ∂T/∂ξ|_v at ξ = 0 in the chart of q by central differences through the
    generated ``point``, T(q ⊕ ±1e-6 e_j) (:func:`.base.kinetic_energy_gradient` on a
    chart that is not additive); False where a generated function refuses a point."""
    n = v.shape[0]
    e, qk = np.zeros(n), np.empty(q.shape[0])
    for j in range(n):
        e[j] = _KE_STEP
        if point(q, e, qk) != 0 or energy(qk, v, 0.0, E) != 0:
            return False
        up = E[1]
        e[j] = -_KE_STEP
        if point(q, e, qk) != 0 or energy(qk, v, 0.0, E) != 0:
            return False
        dT[j] = (up - E[1]) / (2 * _KE_STEP)
        e[j] = 0.0
    return True


@nb.njit(cache=True, nogil=True)
def _energy_gradient(fns, point, q, v, U, M, E, zu, zt, D) -> bool:
    """D ← (∂E/∂q|_v, ∂E/∂v) = (∂T/∂q + g − τ_springs, M v) (``Problem.energy_gradient``:
    g = −forcing(q, 0, 0)), ∂T/∂q by central differences of T as :func:`_kick`'s on
    additive coordinates (``point`` None), else through the generated chart ``point``
    (∂/∂ξ at ξ = 0 in the chart of q, :func:`_chart_kinetic_gradient`)."""
    mass_matrix, forcing, energy, P, forces = fns[0], fns[1], fns[2], fns[3], fns[4]
    n = v.shape[0]
    F = U[_F]
    if point is None:
        ok = _kinetic_gradient(energy, q, v, U[_QK], E, D)
    else:
        ok = _chart_kinetic_gradient(energy, point, q, v, E, D)
    if (not ok or forcing(q, zu, zt, 0.0, F) != 0
            or mass_matrix(q, 0.0, M.reshape(n * n)) != 0):
        return False
    for i in range(n):
        D[i] = D[i] + -F[i]
    if forces:  # (∂/∂ξ_j of a spring's q_j is 1: its joint is additive)
        spring_gradient_add(P, _dofs(fns, q), 1.0, D[:n])
    D[n:] = M @ v
    return True


@nb.njit(cache=True, nogil=True)
def _moved(point, qt, D, lam, xi, q) -> bool:
    """q ← q̃ moved by λ ∇_qE (D[:n]): q̃ + λ ∇_qE on additive coordinates (``point``
    None), else q̃ ⊕ λ ∇_ξE by the generated chart ``point`` (xi its scratch); False where
    that refuses the point."""
    n = xi.shape[0]
    if point is None:
        for i in range(n):
            q[i] = qt[i] + D[i] * lam
        return True
    for i in range(n):
        xi[i] = D[i] * lam
    return point(qt, xi, q) == 0


@nb.njit(cache=True, nogil=True)
def _project_energy(fns, point, target, scale, q, v, U, M, E, zu, zt, D, tol, maxiter) -> int:
    """(q, v) ← the state moved along ∇E(q̃, v̂) onto E = ``target`` (E₀ + W_nc) by
    :class:`.projection.Projected`'s scalar Newton (energy alone): λ ← λ − G/|∇E|²,
    z = z̃ + λ ∇E, until |G| ≤ 4 tol s, or at ``maxiter`` if |G| ≤ 1e-13 s, s the size of
    the terms of E at z̃ (:func:`.gauss_compiled.energy_scale`; ``scale`` = 1 + |E₀|); the
    iterations, −1 if it fails. On additive coordinates
    (``point`` None) q = q̃ + λ ∇_qE; on a chart that is not additive (projection.py's
    ``Projected`` there) in the chart of the step's end q̃: q = q̃ ⊕ λ ∇_ξE by the
    generated ``point`` (:func:`_moved`)."""
    n = v.shape[0]
    if not _energy_gradient(fns, point, q, v, U, M, E, zu, zt, D):
        return -1
    dd = D @ D
    if not dd > 0.0:
        return -1
    ginv = 1.0 / dd
    qt, vt, xi = q.copy(), v.copy(), np.empty(n)
    G = _energy(fns, qt, vt, E) - target
    T = 0.0  # ½ vᵀ(M v), M v = ∂E/∂v: the bar on the terms of E (gauss_compiled.energy_scale)
    for i in range(n):
        T += 0.5 * vt[i] * D[n + i]
    scale = energy_scale(scale - 1.0, T, G + target)
    lam = 0.0
    for it in range(1, maxiter + 1):
        lam -= ginv * G
        for i in range(n):
            v[i] = vt[i] + D[n + i] * lam
        if not _moved(point, qt, D, lam, xi, q):
            return -1
        G = _energy(fns, q, v, E) - target
        if abs(G) <= tol * scale * 4:
            return it
    return maxiter if abs(G) <= 1e-13 * scale else -1


@nb.njit(cache=True, nogil=True)
def _projected(fns, point, project, target, E0, q, v, U, M, E, zu, zt, D) -> int:
    """The Gauss loops' energy projection after a step where ``project``
    (:func:`_project_energy` onto ``target`` = E₀ + W_nc, its bar scaled by 1 + |E₀|,
    projection.Projected's tol and maxiter): its iterations, 0 without it, −1 if it
    fails."""
    if not project:
        return 0
    return _project_energy(fns, point, target, 1.0 + abs(E0), q, v, U, M, E, zu, zt, D,
                           PROJECTION_TOL, _kind(PROJECTION_MAXITER))


# ------------------------------------------------------------------ midpoint and gauss4
@nb.njit(cache=True, nogil=True)
def _stage_residual(kind, fns, chart, hA, xi, w, h, tc, pw, mask, H0, z0, Z, U, M, E, zu, zt, F,
                    R) -> bool:
    """The implicit equations of a step at Z, R ← their residual, z0 = (0, p_n); the force
    rows' τ_nc (``fns``) at the times ``tc``:

    - ``kind`` 0, collocation (gauss.py's ``_f`` in canonical coordinates): R = Z − (hA) F,
      F_i = (M⁻¹y, τ_nc − ∂H/∂q) at z0 + Z_i = (x, y), q = q_n + x, t_n + c_i h = tc[i],
      for the stages Z (st × 2n); pw[i] ← the stage's power vᵀτ_nc;
    - ``kind`` 1, AVF (discrete_gradient.py): Z = (Δq, Δp), ∇̄H = Σ_k w_k ∇H(z0 + ξ_k Z),
      R = (Δq − h ∇̄_pH, Δp + h ∇̄_qH − h τ_nc), τ_nc at (tc[0] = t_n + h/2,
      q_n + Δq/2, ∇̄_pH) (the same term in kinds 2 to 4);
    - ``kind`` 2, Gonzalez (energy_momentum.py): the same R with his discrete gradient
      (:func:`_gonzalez_residual`);
    - ``kind`` 3 and 4, Itoh–Abe forward and symmetric (discrete_gradient.py): the same R
      with their discrete gradient (:func:`_itoh_abe_gradient`);
    - ``kind`` 5 and 6, Störmer–Verlet's half kick (τ_nc at tc[0] = t_n) and position
      (:func:`_residual`);
    - ``kind`` 7, collocation in the chart of the quaternions (gauss.py's ``_f`` in tangent
      coordinates z = (ξ, v), z0 = (0, v_n)): F_i = (J(ξ)⁻¹ v, u̇(q_n ⊕ ξ, v)) by the
      generated functions in ``chart`` (:func:`_chart_rates`; None for the other kinds),
      then R as for kind 0;
    - ``kind`` 8 and 9, Itoh–Abe forward and symmetric in the chart's canonical
      coordinates (chart.py: z = (x, p_x), z0 = (0, p_n)), Z = (Δx, Δp): R = (Δx − h ∇̄_pH,
      Δp + h ∇̄_xH − h J(x̄)ᵀτ_nc) with their discrete gradient of H(x, p)
      (:func:`_itoh_abe_gradient`), τ_nc at tc[0] = t_n + h/2 and the chart's midpoint
      (:func:`_chart_minus_force`);
    - ``kind`` 10, AVF in the chart's canonical coordinates (the same z and Z as kinds 8 and
      9): ∇̄H = Σ_k w_k ∇H(ξ_k Δx, p_n + ξ_k Δp) with the closed-form ∂H/∂x of
      :func:`_chart_gradient` (the chart's derivative functions in ``chart[9]``), then R as
      for kinds 8 and 9;
    - ``kind`` 11, Störmer–Verlet's variational step in that chart (verlet.py's
      ``_variational_step``): Z = x, z0 = μ_n (:func:`_verlet_chart_residual`)."""
    if kind == 10:
        return _avf_chart_residual(fns, chart, xi, w, h, tc, z0, Z, U, M, E, zu, zt, F, R)
    if kind == 11:
        return _verlet_chart_residual(fns, chart, h, tc, z0, Z, U, M, zu, zt, R)
    if kind == 5 or kind == 6:
        return _residual(kind - 5, fns, h, tc[0], Z, U, M, E, zu, zt, R)
    n2 = z0.shape[0]
    n = n2 // 2
    x, y = U[_XK], U[_RK]
    if kind == 8 or kind == 9:
        if not _itoh_abe_gradient(fns, chart, kind == 9, z0[n:], Z[:n], Z[n:], U, M, E, F):
            return False
        for i in range(n):
            R[i] = Z[i] - h * F[0, n + i]
            R[n + i] = Z[n + i] + h * F[0, i]
        return _chart_minus_force(fns, chart, h, tc[0], Z[:n], F[0, n:], U, R)
    if kind == 2:
        if not _gonzalez_residual(fns, h, mask, H0, z0, Z, U, M, E, zu, zt, F, R):
            return False
        return _minus_force(fns, h, tc[0], Z, F[0, n:], U, R)
    if kind == 3 or kind == 4:
        if not _itoh_abe_gradient(fns, None, kind == 4, z0[n:], Z[:n], Z[n:], U, M, E, F):
            return False
        for i in range(n):
            R[i] = Z[i] - h * F[0, n + i]
            R[n + i] = Z[n + i] + h * F[0, i]
        return _minus_force(fns, h, tc[0], Z, F[0, n:], U, R)
    if kind == 1:
        gq, gp = F[0, :n], F[0, n:]
        gq[:] = 0.0
        gp[:] = 0.0
        k = F[1, :n]
        for j in range(xi.shape[0]):
            for i in range(n):
                x[i] = xi[j] * Z[i]
                y[i] = z0[n + i] + xi[j] * Z[n + i]
            if not _kick(fns, x, y, U, M, E, zu, zt, k):
                return False
            for i in range(n):
                gq[i] += w[j] * -k[i]  # ∂H/∂q = −(the kick)
                gp[i] += w[j] * U[_U, i]
        for i in range(n):
            R[i] = Z[i] - h * gp[i]
            R[n + i] = Z[n + i] + h * gq[i]
        return _minus_force(fns, h, tc[0], Z, gp, U, R)
    st = hA.shape[0]
    if kind == 7:
        if not _chart_rates(fns, chart, tc, z0, Z, U, zt, F, pw):
            return False
    for i in range(st if kind == 0 else 0):
        for k in range(n):
            x[k] = z0[k] + Z[i * n2 + k]
            y[k] = z0[n + k] + Z[i * n2 + n + k]
        pw[i] = _force_kick(fns, tc[i], x, y, U, M, E, zu, zt, F[i, n:])
        if np.isnan(pw[i]):
            return False
        F[i, :n] = U[_U]
    G = hA @ F
    for i in range(st):
        for k in range(n2):
            R[i * n2 + k] = Z[i * n2 + k] - G[i, k]
    return True


@nb.njit(cache=True, nogil=True)
def _chart_rates(fns, chart, tc, z0, Z, U, zt, F, pw) -> bool:
    """F_i ← (ξ̇, v̇) at the stage z0 + Z_i = (ξ, v) in the chart q = q_n ⊕ ξ (gauss.py's
    ``_f`` in tangent form): v̇ = the generated forward dynamics at q, v, t = 0 and the
    inputs τ = τ_nc + τ_springs of the force rows at (tc[i], q, v) (``p.tau``; zero
    without rows, as ``forward_dynamics(q, v, τ)`` is called there), pw[i] ← the power
    vᵀτ_nc; ξ̇ = J(ξ)⁻¹ v by LAPACK's LU (numpy's ``solve``), J(ξ) and q by the generated
    ``chart_jacobian`` and ``chart_point``; one stage per row of F. False where a
    generated function refuses a state. ``chart``: (forward dynamics, chart_point,
    chart_jacobian, q_n, then the scratch q, x, y, work and J, and last the chart's
    derivative functions with their scratch, :func:`_avf_chart_loop`'s, None in the other
    loops), None in the loops without a chart, where this is not compiled (numba prunes
    the branch on the argument's type)."""
    if chart is not None:
        fd, point, jacobian, qn, q, x, y, work, J = (chart[0], chart[1], chart[2], chart[3],
                                                     chart[4], chart[5], chart[6], chart[7],
                                                     chart[8])
        n = x.shape[0]
        n2 = 2 * n
        for i in range(F.shape[0]):
            for k in range(n):
                x[k] = z0[k] + Z[i * n2 + k]
                y[k] = z0[n + k] + Z[i * n2 + n + k]
            if point(qn, x, q) != 0:
                return False
            tau = zt
            if fns[4]:
                pw[i] = _force_power(fns, tc[i], q, y, U)
                tau = U[_TS]
            if fd(q, y, tau, 0.0, F[i, n:], work) != 0:
                return False
            if jacobian(qn, x, J) != 0:
                return False
            F[i, :n] = np.linalg.solve(J.reshape((n, n)), y)
        return True
    return False


@nb.njit(cache=True, nogil=True)
def _minus_force(fns, h, t, Z, vbar, U, R) -> bool:
    """R[n:] −= h τ_nc(t, q_n + Δq/2, v̄) (the discrete gradients' momentum equation,
    discrete_gradient.py's ``forcing`` on additive coordinates, v̄ = ∇̄_pH); nothing
    without force rows."""
    if not fns[4]:
        return True
    n = vbar.shape[0]
    _midpoint_force(fns, t, Z, vbar, U)
    for i in range(n):
        R[n + i] -= h * U[_TN, i]
    return True


@nb.njit(cache=True, nogil=True)
def _hamiltonian(fns, q, p, M, E, v) -> float:
    """H(q, p) = E(q, M⁻¹p) by the generated energy (energy_momentum.py's ``_H``), + the
    springs' potential of the force rows; NaN where a generated function refuses q."""
    if not _velocity(fns[0], q, p, M, v):
        return np.nan
    return _energy(fns, q, v, E)


@nb.njit(cache=True, nogil=True)
def _gonzalez_residual(fns, h, mask, H0, z0, Z, U, M, E, zu, zt, F, R) -> bool:
    """R ← (Δq − h ∇̄_pH, Δp + h ∇̄_qH) with Gonzalez's discrete gradient
    ∇̄H = g + [ΔH − g·Δz]/(w·Δz) w, g = ∇H at the midpoint z_n + Δz/2, w = Δz without the
    cyclic Δq_k (``mask``), the correction dropped below its round-off floor
    (energy_momentum.py's ``_gonzalez_correction``)."""
    n = Z.shape[0] // 2
    x, y = U[_XK], U[_RK]
    g, d, wv = F[0], F[1], np.empty(2 * n)
    for i in range(n):
        x[i] = 0.5 * Z[i]
        y[i] = z0[n + i] + 0.5 * Z[n + i]
    if not _kick(fns, x, y, U, M, E, zu, zt, g[:n]):
        return False
    for i in range(n):
        g[i] = -g[i]  # ∂H/∂q = −(the kick)
        g[n + i] = U[_U, i]
    q, p = U[_Q], U[_F]
    for i in range(n):
        q[i] = U[_QN, i] + Z[i]
        p[i] = z0[n + i] + Z[n + i]
    dH = _hamiltonian(fns, q, p, M, E, U[_DT]) - H0
    if not np.isfinite(dH):
        return False
    for i in range(2 * n):
        d[i] = Z[i]
        wv[i] = Z[i] * mask[i] if i < n else Z[i]
    den = wv @ d
    floor = 1e3 * _EPS * (abs(H0) + 1.0) / (np.sqrt(g @ g) + 1e-300)
    if den > floor * floor:
        c = (dH - g @ d) / den
        for i in range(2 * n):
            g[i] = g[i] + c * wv[i]
    for i in range(n):
        R[i] = Z[i] - h * g[n + i]
        R[n + i] = Z[n + i] + h * g[i]
    return True


@nb.njit(cache=True, nogil=True)
def _configuration_part(fns, qn, p, dq, reverse, U, M, E, x, xm, g) -> bool:
    """Itoh–Abe's ∇̄_qH at p held, the coordinates moved 1..n (``reverse``: n..1):
    ``[H(.., q_i + Δq_i, ..) − H(..)]/Δq_i``, below an increment of 1e-5 (1 + |q_i|) the
    central difference of H at the increment's midpoint (discrete_gradient.py's
    ``ItohAbe.configuration_part``, additive coordinates)."""
    n = qn.shape[0]
    q, v = U[_Q], U[_DT]
    for i in range(n):
        x[i] = 0.0
        q[i] = qn[i] + x[i]
    H_prev = _hamiltonian(fns, q, p, M, E, v)
    for k in range(n):
        i = n - 1 - k if reverse else k
        scale = 1.0 + abs(qn[i])
        if abs(dq[i]) > 1e-5 * scale:
            x[i] = dq[i]
            for j in range(n):
                q[j] = qn[j] + x[j]
            H_new = _hamiltonian(fns, q, p, M, E, v)
            g[i] = (H_new - H_prev) / dq[i]
        else:
            e = 1e-5 * scale
            xm[:] = x
            xm[i] = 0.5 * dq[i] + e
            for j in range(n):
                q[j] = qn[j] + xm[j]
            Hp = _hamiltonian(fns, q, p, M, E, v)
            xm[i] -= 2 * e
            for j in range(n):
                q[j] = qn[j] + xm[j]
            g[i] = (Hp - _hamiltonian(fns, q, p, M, E, v)) / (2 * e)
            x[i] = dq[i]
            for j in range(n):
                q[j] = qn[j] + x[j]
            H_new = _hamiltonian(fns, q, p, M, E, v)
        if not np.isfinite(H_new) or not np.isfinite(g[i]):
            return False
        H_prev = H_new
    return True


@nb.njit(cache=True, nogil=True)
def _momentum_part(fns, qn, dq, p0, dp, reverse, U, M, pk, g) -> bool:
    """Itoh–Abe's ∇̄_pH at q_n + Δq: H is quadratic in p, so each quotient is exactly
    (M⁻¹ p̃)_i + ½ Δp_i M⁻¹_ii, p̃ the momenta moved so far (``momentum_part``)."""
    n = qn.shape[0]
    q = U[_Q]
    for i in range(n):
        q[i] = qn[i] + dq[i]
    if fns[0](q, 0.0, M.reshape(n * n)) != 0:
        return False
    Minv = _inverse(M)
    pk[:] = p0
    for k in range(n):
        i = n - 1 - k if reverse else k
        g[i] = Minv[i] @ pk + 0.5 * dp[i] * Minv[i, i]
        pk[i] += dp[i]
    return True


@nb.njit(cache=True, nogil=True)
def _path_configuration(fns, chart, p, dq, reverse, U, M, E, x, xm, g) -> bool:
    """Itoh–Abe's ∇̄_qH along the coordinate path at p held: on additive coordinates
    (``chart`` None) :func:`_configuration_part` from q_n = U[_QN], in the quaternions'
    chart :func:`_chart_configuration_part` from x = 0."""
    if chart is None:
        return _configuration_part(fns, U[_QN], p, dq, reverse, U, M, E, x, xm, g)
    return _chart_configuration_part(fns, chart, p, dq, reverse, U, M, E, x, xm, g)


@nb.njit(cache=True, nogil=True)
def _path_momentum(fns, chart, dq, p0, dp, reverse, U, M, pk, g) -> bool:
    """Itoh–Abe's ∇̄_pH at the path's configuration q_n + Δq (:func:`_momentum_part`;
    ``chart`` not None: q_n ⊕ Δx, :func:`_chart_momentum_part`)."""
    if chart is None:
        return _momentum_part(fns, U[_QN], dq, p0, dp, reverse, U, M, pk, g)
    return _chart_momentum_part(fns, chart, dq, p0, dp, reverse, M, pk, g)


@nb.njit(cache=True, nogil=True)
def _itoh_abe_gradient(fns, chart, symmetric, p0, dq, dp, U, M, E, F) -> bool:
    """F[0] ← Itoh–Abe's discrete gradient (∇̄_qH, ∇̄_pH) for d = (Δq, Δp) from (q_n, p_n):
    q_1..q_n at p_n, then p_1..p_n at q_n + Δq; ``symmetric``: its mean with the reverse
    path (p_n..p_1 at q_n, then q_n..q_1 at p_n + Δp) (``ItohAbe.discrete_gradient``). On
    additive coordinates (``chart`` None) or, ``chart`` the generated chart functions, of
    H(x, p) in the chart centred on q_n (x from 0, the momenta canonical to x)."""
    n = dq.shape[0]
    g, x, xm, pk, w = F[0], U[_XS], U[_RS], U[_F], U[_R]
    if not _path_configuration(fns, chart, p0, dq, False, U, M, E, x, xm, g[:n]):
        return False
    if not _path_momentum(fns, chart, dq, p0, dp, False, U, M, pk, g[n:]):
        return False
    if symmetric:
        g2 = F[1]
        for i in range(n):
            w[i] = p0[i] + dp[i]
        if not _path_configuration(fns, chart, w, dq, True, U, M, E, x, xm, g2[:n]):
            return False
        for i in range(n):
            xm[i] = 0.0
        if not _path_momentum(fns, chart, xm, p0, dp, True, U, M, pk, g2[n:]):
            return False
        for i in range(2 * n):
            g[i] = 0.5 * (g[i] + g2[i])
    return True


@nb.njit(cache=True, nogil=True)
def _itoh_abe_polish(fns, symmetric, h, t, z0, d, U, M, E, F) -> bool:
    """Δp ← −h ∇̄_qH(Δq, Δp) + h τ_nc(t, q_n + Δq/2, ∇̄_pH) after Newton (``ItohAbe.polish``,
    additive coordinates): sweeps of that fixed point until Δp repeats, at most 4 — the
    forward path's ∇̄_qH does not depend on Δp (without forces one sweep settles it) —;
    the symmetric variant's does, and takes one sweep, as the reference."""
    n = d.shape[0] // 2
    dq, dp = d[:n], d[n:]
    gq, gp, new = F[0, :n], F[0, n:], U[_RK]
    if not symmetric and not _configuration_part(fns, U[_QN], z0[n:], dq, False, U, M, E,
                                                 U[_XS], U[_RS], gq):
        return False
    for _ in range(1 if symmetric else 4):
        if symmetric:
            if not _itoh_abe_gradient(fns, None, True, z0[n:], dq, dp, U, M, E, F):
                return False
        elif fns[4] and not _momentum_part(fns, U[_QN], dq, z0[n:], dp, False, U, M, U[_F],
                                           gp):
            return False
        for i in range(n):
            new[i] = -h * gq[i]
        if fns[4]:
            _midpoint_force(fns, t, dq, gp, U)
            for i in range(n):
                new[i] += h * U[_TN, i]
        same = True
        for i in range(n):
            same = same and new[i] == dp[i]
        if same:
            break
        dp[:] = new
    return True


@nb.njit(cache=True, nogil=True)
def _stage_fd(kind, fns, chart, hA, xi, w, h, tc, pw, mask, H0, z0, Z, R, U, M, E, zu, zt, F,
              J) -> bool:
    """J ← the forward-difference Jacobian of the residual at Z (R its value):
    :func:`.base.fd_jacobian`'s columns."""
    m = Z.shape[0]
    Zk, Rk = np.empty(m), np.empty(m)
    for k in range(m):
        d = 1e-7 * max(1.0, abs(Z[k]))
        Zk[:] = Z
        Zk[k] += d
        if not _stage_residual(kind, fns, chart, hA, xi, w, h, tc, pw, mask, H0, z0, Zk, U, M, E,
                               zu, zt, F, Rk):
            return False
        for i in range(m):
            J[i, k] = (Rk[i] - R[i]) / d
    return True


@nb.njit(cache=True, nogil=True)
def _refreshed(kind, fns, chart, hA, xi, w, h, tc, pw, mask, H0, z0, Z, R, U, M, E, zu, zt, F,
               kept, have_kept):
    """A new difference Jacobian at Z (:func:`_stage_fd`), kept for the next solves where
    the caller keeps one (``have_kept`` not empty: the reference's ``reuse``); empty when a
    residual fails."""
    m = Z.shape[0]
    J = np.empty((m, m))
    if not _stage_fd(kind, fns, chart, hA, xi, w, h, tc, pw, mask, H0, z0, Z, R, U, M, E, zu,
                     zt, F, J):
        return np.empty((0, 0))
    if have_kept.shape[0] > 0:
        kept[:] = J
        have_kept[0] = True
    return J


@nb.njit(cache=True, nogil=True)
def _stage_newton(kind, fns, chart, hA, xi, w, h, tc, pw, mask, H0, z0, Z, Jm, kept, have_kept,
                  tol, maxiter, stagnation, U, M, E, zu, zt, F) -> int:
    """Z ← the solution of equations ``kind`` by :func:`.base.newton` from the guess in Z,
    with the matrix Jm (empty: the identity) — or, once a difference Jacobian was taken in
    an earlier step of this h, that one (``kept``: the reference's ``reuse``, which gauss.py
    passes and the others do not: ``have_kept`` empty) —, a difference Jacobian where it
    contracts slowly, a restart from the guess where it diverges; the iterations, or −1
    when it fails."""
    m = Z.shape[0]
    R, dx = np.empty(m), np.empty(m)
    if (not _stage_residual(kind, fns, chart, hA, xi, w, h, tc, pw, mask, H0, z0, Z, U, M, E,
                            zu, zt, F, R) or not _finite(R)):
        return -1
    Zs, Rs = Z.copy(), R.copy()
    J = kept.copy() if have_kept.shape[0] > 0 and have_kept[0] else Jm
    refreshed, last = False, np.inf
    # Itoh–Abe's stall taken as roundoff only below ITOH_ABE_FLOOR or under a refreshed
    # matrix (base.newton's ``floor``, which ItohAbe passes)
    floor = ITOH_ABE_FLOOR if kind == 3 or kind == 4 or kind == 8 or kind == 9 else 0.0
    for it in range(1, maxiter + 1):
        # (an empty Jm stands for the identity: Verlet's fixed point, which numpy's solve
        # gives exactly, without the solve)
        if J.shape[0] == 0:
            dx[:] = R
        else:
            dx[:] = np.linalg.solve(J, R)
        size = 0.0
        for i in range(m):
            Z[i] += -dx[i]
            size = max(size, abs(dx[i]))
        finite = (_stage_residual(kind, fns, chart, hA, xi, w, h, tc, pw, mask, H0, z0, Z, U, M,
                                  E, zu, zt, F, R)
                  and _finite(R))
        if not refreshed and (not finite or (it >= 2 and size > last)):
            Z[:] = Zs
            R[:] = Rs
            J = _refreshed(kind, fns, chart, hA, xi, w, h, tc, pw, mask, H0, z0, Z, R, U, M, E, zu,
                           zt, F, kept, have_kept)
            if J.shape[0] == 0:
                return -1
            refreshed, last = True, np.inf
            continue
        if not finite:
            return -1
        scale = 0.0
        for i in range(m):
            scale = max(scale, abs(Z[i]))
        if size <= tol * scale:
            return it
        theta = size / last if np.isfinite(last) and last > 0 else 1.0
        if theta < 0.5 and theta / (1 - theta) * size <= tol * scale:
            return it
        if (size <= stagnation * scale and theta >= 0.5
                and (floor <= 0.0 or refreshed or size <= floor * scale)):
            return it
        if it >= 2 and size > 0.25 * last and not refreshed:
            J = _refreshed(kind, fns, chart, hA, xi, w, h, tc, pw, mask, H0, z0, Z, R, U, M, E, zu,
                           zt, F, kept, have_kept)
            if J.shape[0] == 0:
                return -1
            refreshed = True
        last = size
    return -1


def _gauss_loop(mass_matrix, forcing, energy, ninputs, P, forces, data, A, b, d, c, project, q0,
                v0, steps, times, n_steps, every, tol, maxiter, blowup, Q, V, W, iters,
                status):
    """The whole run of midpoint (one stage) or gauss4 (two) in canonical coordinates
    z = (x, y), q = q_n + x, y = M v (module doc; gauss.py's step with its kinematic
    matrix 1 − h A ⊗ [0 M⁻¹; 0 0]), ``project``: each step followed by the energy
    projection onto E₀ + W_nc (:func:`_project_energy`; its iterations added to the
    step's); status and return as :func:`_verlet_loop`'s."""
    fns = _additive_fns(mass_matrix, forcing, energy, P, forces, data)
    n = v0.shape[0]
    st, n2 = A.shape[0], 2 * n
    m = st * n2
    U, M, E, zu, zt = _workspace(n, ninputs)
    F, tc, pw = np.empty((st, n2)), np.empty(st), np.zeros(st)
    z0, Z, f0, none = np.zeros(n2), np.empty(m), np.empty((1, n2)), np.empty(0)
    Jm, kept, have_kept = np.empty((m, m)), np.empty((m, m)), np.zeros(1, dtype=np.bool_)
    q, v = q0.copy(), v0.copy()
    k_out, vmax0, work = store(q, v, Q, V, 0), _largest(v), 0.0
    D = np.empty(2 * n)
    E0 = _energy(fns, q, v, E) if project else 0.0
    W[0] = 0.0
    last_h = np.nan
    for step in range(n_steps):
        h, t = steps[step], times[step]
        for i in range(st):
            tc[i] = t + c[i] * h
        U[_QN] = q
        if mass_matrix(q, 0.0, M.reshape(n * n)) != 0:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        z0[n:] = M @ v
        if np.isnan(_force_kick(fns, t, zu, z0[n:], U, M, E, zu, zt, f0[0, n:])):
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        f0[0, :n] = U[_U]
        ch = c * h
        for i in range(st):
            for k in range(n2):
                Z[i * n2 + k] = ch[i] * f0[0, k]
        if h != last_h:  # the reference's reuse dict: a new h drops the kept Jacobian
            have_kept[0] = False
            last_h = h
        K = _inverse(M)  # (M: M(q_n), made again by the kick at x = 0)
        for a in range(m):
            for e in range(m):
                Jm[a, e] = 0.0
        for i in range(st):
            for j in range(st):
                for r in range(n):
                    for s_ in range(n):
                        Jm[i * n2 + r, j * n2 + n + s_] = h * (A[i, j] * K[r, s_])
        for a in range(m):
            for e in range(m):
                Jm[a, e] = (1.0 if a == e else 0.0) - Jm[a, e]
        it = _stage_newton(_kind(0), fns, None, h * A, none, none, h, tc, pw, none, 0.0, z0, Z,
                           Jm, kept, have_kept, tol, maxiter, _STAGNATION, U, M, E, zu, zt, F)
        if it < 0:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        z1 = z0 + d @ Z.reshape((st, n2))
        for i in range(n):
            q[i] = q[i] + z1[i]
        if mass_matrix(q, 0.0, M.reshape(n * n)) != 0:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        v[:] = np.linalg.solve(M, z1[n:].copy())
        work += h * (b @ pw) if forces else 0.0  # (the last residual's stage powers)
        it2 = _projected(fns, None, project, E0 + work, E0, q, v, U, M, E, zu, zt, D)
        if it2 < 0:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        iters[step] = it + it2
        if not _guarded(q, v, vmax0, blowup, step, Q, V, status):
            return k_out
        k_out = _save(step, n_steps, every, q, v, work, Q, V, W, k_out)
    return k_out


_GAUSS_SIGNATURE = types.int64(*_FNS, _ROWS, _V, _V, _V, types.boolean, _V, _V, *_RUN,
                               *_OUT)


# ------------------------------------------------------------ AVF, Gonzalez, Itoh–Abe
def _dg_loop(mass_matrix, forcing, energy, ninputs, P, forces, data, kind, xi, w, mask, q0, v0,
             steps, times, n_steps, every, tol, maxiter, stagnation, blowup, Q, V, W, iters,
             status):
    """The whole run of a discrete gradient on additive coordinates: AVF (``kind`` 1),
    Gonzalez (2; energy_momentum.py's ``_gonzalez_step``), Itoh–Abe (3 forward, 4
    symmetric) — d = (Δq, Δp) by Newton with the kinematic matrix [1, −h/2 M(q_n)⁻¹; 0, 1],
    from the last step's d (h v_n, 0 at the first step and after h changed), Itoh–Abe's
    polish after it; p carried from step to step (the references' ``_carry``: p_{n+1} =
    p_n + Δp, not M v), but Gonzalez's p_n = M v_n and H_n at every step; status and return
    as :func:`_verlet_loop`'s."""
    fns = _additive_fns(mass_matrix, forcing, energy, P, forces, data)
    n = v0.shape[0]
    n2 = 2 * n
    U, M, E, zu, zt = _workspace(n, ninputs)
    F, none, no_reuse = np.empty((2, n2)), np.empty((0, 0)), np.zeros(0, dtype=np.bool_)
    z0, d, Jm, vh = np.zeros(n2), np.zeros(n2), np.empty((n2, n2)), np.empty(n)
    tc, pw = np.empty(1), np.empty(0)
    q, v = q0.copy(), v0.copy()
    k_out, vmax0, work = store(q, v, Q, V, 0), _largest(v), 0.0
    W[0] = 0.0
    last_h = np.nan
    for step in range(n_steps):
        h = steps[step]
        tc[0] = times[step] + 0.5 * h  # the forces act at the midpoint of the step
        U[_QN] = q
        if mass_matrix(q, 0.0, M.reshape(n * n)) != 0:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        if step == 0 or kind == 2:
            z0[n:] = M @ v
        _simplified_jacobian(M, h, Jm)  # (before H0's M(q) again)
        H0 = 0.0
        if kind == 2:
            H0 = _hamiltonian(fns, q, z0[n:], M, E, vh)
            if not np.isfinite(H0):
                status[0], status[1] = NEWTON_FAILED, step
                return k_out
        if h != last_h:  # the predictor: the last increment of this h, else h v_n
            for i in range(n):
                d[i] = h * v[i]
                d[n + i] = 0.0
            last_h = h
        it = _stage_newton(kind, fns, None, none, xi, w, h, tc, pw, mask, H0, z0, d, Jm, none,
                           no_reuse, tol, maxiter, stagnation, U, M, E, zu, zt, F)
        if it < 0 or (kind >= 3 and not _itoh_abe_polish(fns, kind == 4, h, tc[0], z0, d, U,
                                                         M, E, F)):
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        if forces:  # h v̄ᵀτ_nc(t + h/2, q_n + Δq/2, v̄), v̄ = Δq/h
            vbar = U[_VA]
            for i in range(n):
                vbar[i] = d[i] / h
            work += h * _midpoint_force(fns, tc[0], d, vbar, U)
        for i in range(n):
            q[i] = q[i] + d[i]
            z0[n + i] = z0[n + i] + d[n + i]
        if not _velocity(mass_matrix, q, z0[n:], M, v):
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        iters[step] = it
        if not _guarded(q, v, vmax0, blowup, step, Q, V, status):
            return k_out
        k_out = _save(step, n_steps, every, q, v, work, Q, V, W, k_out)
    return k_out


_DG_SIGNATURE = types.int64(*_FNS, types.int64, _V, _V, _V, _V, _V, *_RUN, types.float64,
                            *_OUT)


# ------------------------------------------------- RK4 with force rows or the projection


@nb.njit(cache=True, nogil=True)
def _rk4_stage(fd, fns, t, q, v, U, zt, work, a) -> float:
    """a ← u̇(q, v) with τ = τ_nc + τ_springs of the rows at t as the inputs (rk4.py's
    ``_f``; without rows the zero inputs zt, as ``forward_dynamics(q, v, 0)`` takes them:
    any number of inputs); returns ẇ = vᵀτ_nc, NaN where the generated forward dynamics
    refuses the state."""
    w = _force_power(fns, t, q, v, U)
    if fd(q, v, U[_TS] if fns[4] else zt, 0.0, a, work) != 0:
        return np.nan
    return w


def _rk4_loop(mass_matrix, forcing, energy, ninputs, P, forces, data, forward_dynamics,
              chart_point, chart_jacobian, iqd, additive, project, q0, v0, steps, times,
              n_steps, every, tol, maxiter, blowup, Q, V, W, iters, status):
    """The whole RK4 run with force rows or the energy projection (module doc): the stages
    of :class:`.rk4.RK4` at t, t + h/2, t + h/2, t + h in its chart q = q_n ⊕ ξ from
    z_n = (0, v_n), stage i at z_n + c_i h k_{i−1}: ``additive``, q_n ⊕ ξ = q_n + ξ and
    ξ̇ = v (:func:`_rk4_stage`); else (quaternions) q_n ⊕ ξ by the generated ``chart_point``
    and ξ̇ = J(ξ)⁻¹ v by ``chart_jacobian`` and LU, u̇ with τ = τ_nc + τ_springs of the
    rows as the inputs, the springs on the coordinates ``iqd`` of their speeds (empty on
    additive coordinates: q itself), as midpoint's stages in the chart
    (:func:`_chart_rates`); q_{n+1} = q_n ⊕ (h/6)(k₁ + 2k₂ + 2k₃ + k₄) (the exponential
    map: the quaternions stay of unit norm), W_nc by the same stages (ẇ = vᵀτ_nc); then
    where ``project`` the energy projection of :class:`.projection.Projected` onto
    E₀ + W_nc (:func:`_project_energy`, in the chart of the step's end where not
    ``additive``; its iterations in ``iters``); status[0] NEWTON_FAILED (a generated
    function refused a state, or the projection failed: the Python steps then report it)
    or STATE_GUARD, status[1] the step; returns the number of samples stored."""
    n, nq = v0.shape[0], q0.shape[0]
    fns = (mass_matrix, forcing, energy, P, forces, data, iqd, np.empty(n))
    U, M, E, zu, zt = _workspace(n, ninputs)
    q, v = q0.copy(), v0.copy()
    work = np.empty(max(n * n, 1))
    qn = np.empty(nq)
    chart = (forward_dynamics, chart_point, chart_jacobian, qn, np.empty(nq), np.empty(n),
             np.empty(n), work, np.empty(n * n), None)
    K = np.empty((4, 1, 2 * n))  # (ξ̇, v̇) of the four stages (each a row of _chart_rates)
    z0, Z, tc, pw = np.zeros(2 * n), np.zeros(2 * n), np.empty(1), np.zeros(1)
    qs, a, xi, D, kw = np.empty(nq), np.empty(n), np.empty(n), np.empty(2 * n), np.empty(4)
    k_out, vmax0, w = store(q, v, Q, V, 0), _largest(v), 0.0
    E0 = _energy(fns, q, v, E) if project else 0.0
    W[0] = 0.0
    for step in range(n_steps):
        h, t = steps[step], times[step]
        qn[:] = q
        z0[n:] = v
        for s in range(4):
            c = 0.0 if s == 0 else (h if s == 3 else 0.5 * h)  # (0.5 h or h) × k_{s−1}
            for i in range(2 * n):
                Z[i] = 0.0 if s == 0 else c * K[s - 1, 0, i]
            tc[0] = t if s == 0 else (t + h if s == 3 else t + h / 2)
            if additive:
                for i in range(n):
                    qs[i] = q[i] + Z[i]
                    xi[i] = v[i] + Z[n + i]
                kw[s] = _rk4_stage(forward_dynamics, fns, tc[0], qs, xi, U, zt, work, a)
                for i in range(n):
                    K[s, 0, i] = xi[i]  # ξ̇ = v: the chart is additive
                    K[s, 0, n + i] = a[i]
            else:
                kw[s] = pw[0] if _chart_rates(fns, chart, tc, z0, Z, U, zt, K[s], pw) else np.nan
            if np.isnan(kw[s]):
                status[0], status[1] = NEWTON_FAILED, step
                return k_out
        h6 = h / 6
        for i in range(n):
            xi[i] = h6 * (K[0, 0, i] + 2 * K[1, 0, i] + 2 * K[2, 0, i] + K[3, 0, i])
            v[i] = v[i] + h6 * (K[0, 0, n + i] + 2 * K[1, 0, n + i] + 2 * K[2, 0, n + i]
                                + K[3, 0, n + i])
        if additive:
            for i in range(n):
                q[i] = q[i] + xi[i]
        elif chart_point(qn, xi, q) != 0:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        w += h6 * (kw[0] + 2 * kw[1] + 2 * kw[2] + kw[3])
        if project:
            if additive:
                it = _project_energy(fns, None, E0 + w, 1.0 + abs(E0), q, v, U, M, E, zu, zt,
                                     D, tol, maxiter)
            else:
                it = _project_energy(fns, chart_point, E0 + w, 1.0 + abs(E0), q, v, U, M, E,
                                     zu, zt, D, tol, maxiter)
            if it < 0:
                status[0], status[1] = NEWTON_FAILED, step
                return k_out
            iters[step] = it
        if not _guarded(q, v, vmax0, blowup, step, Q, V, status):
            return k_out
        k_out = _save(step, n_steps, every, q, v, w, Q, V, W, k_out)
    return k_out


_RK4_SIGNATURE = types.int64(*_FNS, FORWARD_DYNAMICS, CHART_POINT, CHART_JACOBIAN, _IQD,
                             types.boolean, types.boolean, _V, _V, *_RUN, *_OUT)


def rk4_applicable(problem, project) -> bool:
    """RK4 on a compiled Kane tree with the generated chart functions, additive coordinates
    (:func:`applicable`) or a chart that is not (quaternions, :func:`chart_applicable`),
    force elements only with rows and then inputs that are its nv generalized forces (the
    loop passes τ as the inputs; without force elements zero inputs, of any number), no
    projection or the energy's alone, no progress bar. (Without force elements and
    projection the loop generated with the equations runs instead.)"""
    from .projection import parse_invariants

    s = problem.system
    no_forces = (problem.tau_cons is None and problem.tau_nc is None
                 and problem.potential is None)
    return ((applicable(problem) or chart_applicable(problem))
            and getattr(s, "compiled_forward_dynamics", None) is not None
            and getattr(s, "compiled_chart", None) is not None
            and (no_forces or int(s.ninputs) == s.nv)
            and (project is None or parse_invariants(project) == ("energy",)))


def run_rk4(problem, project: bool):
    """RK4's run (``project``: with the energy projection) in :func:`_rk4_loop` (see
    :func:`_run`), on additive coordinates or in the quaternions' chart; None also where
    numba's LU meets a singular J(ξ) (as :func:`run_gauss_chart`): the Python steps take
    the run."""
    from .base import chart_is_additive

    s = problem.system
    additive = chart_is_additive(s)
    iqd = np.empty(0, dtype=np.int64) if additive else _dof_coordinates(s)
    name = "rk4+project('energy',)" if project else "rk4"
    head = (*_functions_and_rows(problem), s.compiled_forward_dynamics, *s.compiled_chart,
            iqd, additive, bool(project))
    try:
        return _run(problem, name, _rk4_loop, _RK4_SIGNATURE, head,
                    (PROJECTION_TOL, PROJECTION_MAXITER))
    except np.linalg.LinAlgError:
        return None


# ------------------------------------------- midpoint and gauss4 in the quaternions' chart


def _gauss_chart_loop(mass_matrix, forcing, energy, ninputs, P, forces, data, forward_dynamics,
                      chart_point, chart_jacobian, iqd, A, b, d, c, project, q0, v0, steps,
                      times, n_steps, every, tol, maxiter, blowup, Q, V, W, iters, status):
    """The whole run of midpoint (one stage) or gauss4 (two) on a system whose chart is not
    additive (quaternions), in gauss.py's tangent coordinates z = (ξ, v), q = q_n ⊕ ξ,
    ż = (J(ξ)⁻¹ v, u̇): its stage equations (:func:`_chart_rates`), its Newton matrix, the
    kinematic part 1 − h A ⊗ [0 1; 0 0], and the rest of its Newton (:func:`_stage_newton`,
    the difference Jacobian kept while h stays), the predictor c h f(z_n), z_{n+1} =
    z_n + (b A⁻¹) Z, q_{n+1} = q_n ⊕ ξ_{n+1}: the same arithmetic as the reference's, in
    the generated functions; the force rows (springs on the coordinates ``iqd`` of
    their speeds, :func:`.gauss_compiled.dof_coordinates`) in the inputs τ of each
    stage's forward dynamics at t_n + c_i h, W_nc = h Σ b_i v_iᵀτ_nc,i of the last
    residual, as the reference's; ``project``: each step followed by the energy projection
    onto E₀ + W_nc in the chart (:func:`_project_energy`; its iterations added to the
    step's: energy_momentum's ``"projection"`` variant is midpoint so); status and return
    as :func:`_verlet_loop`'s."""
    n, nq = v0.shape[0], q0.shape[0]
    fns = (mass_matrix, forcing, energy, P, forces, data, iqd, np.empty(n))
    st, n2 = A.shape[0], 2 * n
    m = st * n2
    U, M, E, zu, zt = _workspace(n, ninputs)
    F, tc, pw = np.empty((st, n2)), np.empty(st), np.zeros(st)
    z0, Z, f0, none = np.zeros(n2), np.empty(m), np.empty((1, n2)), np.empty(0)
    Jm, kept, have_kept = np.empty((m, m)), np.empty((m, m)), np.zeros(1, dtype=np.bool_)
    zero = np.zeros(n2)
    qn, q1, xi = np.empty(nq), np.empty(nq), np.empty(n)
    chart = (forward_dynamics, chart_point, chart_jacobian, qn, np.empty(nq), np.empty(n),
             np.empty(n), np.empty(max(n * n, 1)), np.empty(n * n), None)
    q, v = q0.copy(), v0.copy()
    k_out, vmax0, work = store(q, v, Q, V, 0), _largest(v), 0.0
    D, t0, pw0 = np.empty(n2), np.empty(1), np.zeros(1)
    E0 = _energy(fns, q, v, E) if project else 0.0
    W[0] = 0.0
    last_h = np.nan
    for step in range(n_steps):
        h, t = steps[step], times[step]
        for i in range(st):
            tc[i] = t + c[i] * h
        t0[0] = t
        qn[:] = q
        z0[n:] = v
        # f(z_n): the stage at Z = 0, at t_n
        if not _chart_rates(fns, chart, t0, z0, zero, U, zt, f0, pw0):
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        ch = c * h
        for i in range(st):
            for k in range(n2):
                Z[i * n2 + k] = ch[i] * f0[0, k]
        if h != last_h:  # the reference's reuse dict: a new h drops the kept Jacobian
            have_kept[0] = False
            last_h = h
        for a in range(m):
            for e in range(m):
                Jm[a, e] = 1.0 if a == e else 0.0
        for i in range(st):
            for j in range(st):
                for r in range(n):
                    Jm[i * n2 + r, j * n2 + n + r] -= h * A[i, j]
        it = _stage_newton(_kind(7), fns, chart, h * A, none, none, h, tc, pw, none, 0.0, z0, Z,
                           Jm, kept, have_kept, tol, maxiter, _STAGNATION, U, M, E, zu, zt, F)
        if it < 0:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        z1 = z0 + d @ Z.reshape((st, n2))
        xi[:] = z1[:n]
        if chart_point(qn, xi, q1) != 0:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        q[:] = q1
        v[:] = z1[n:]
        work += h * (b @ pw) if forces else 0.0  # (the last residual's stage powers)
        it2 = _projected(fns, chart_point, project, E0 + work, E0, q, v, U, M, E, zu, zt, D)
        if it2 < 0:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        iters[step] = it + it2
        if not _guarded(q, v, vmax0, blowup, step, Q, V, status):
            return k_out
        k_out = _save(step, n_steps, every, q, v, work, Q, V, W, k_out)
    return k_out


_GAUSS_CHART_SIGNATURE = types.int64(*_FNS, FORWARD_DYNAMICS, CHART_POINT, CHART_JACOBIAN,
                                     _IQD, _ROWS, _V, _V, _V, types.boolean, _V, _V, *_RUN,
                                     *_OUT)


def chart_applicable(problem, additive: bool = False) -> bool:
    """A compiled Kane tree with the generated chart functions (``compiled_chart``) whose
    chart is not additive (quaternions; the additive ones take :func:`applicable`'s loops)
    — or is, where ``additive``: energy_momentum's ``"projection"`` variant, whose midpoint
    is in the tangent form on additive coordinates too (``_TangentMidpoint``), which this
    loop then computes with the generated ``chart_point`` q0 + ξ and ``chart_jacobian``
    the identity (exactly: ξ̇ = v as the reference's ``chart_jacobian`` None) —,
    no force elements or only elements with rows (``problem.force_rows``, of the Model the
    tree was derived from, whose inputs are its nv generalized forces: the loops pass τ as
    the inputs of the forward dynamics), and no progress bar: what
    :func:`_gauss_chart_loop` and :func:`_itoh_abe_chart_loop` take. Elements without rows
    (a Python function, a system not derived from a Model) take the Python steps."""
    from .base import chart_is_additive

    s = problem.system
    no_forces = (problem.tau_cons is None and problem.tau_nc is None
                 and problem.potential is None)
    rows = (getattr(problem, "force_rows", None) is not None
            and getattr(s, "source_model", None) is not None and int(s.ninputs) == s.nv)
    return (getattr(s, "compiled_chart", None) is not None
            and getattr(s, "compiled_forward_dynamics", None) is not None
            and (additive or not chart_is_additive(s)) and (no_forces or rows)
            and problem.progress is None)


def _dof_coordinates(s) -> np.ndarray:
    """The index in q of each speed's coordinate on the 1-DOF additive joints of the tree's
    Model (:func:`.gauss_compiled.dof_coordinates`; −1 elsewhere, and everywhere without
    a Model): what the springs of the force rows read in the chart loops."""
    model = getattr(s, "source_model", None)
    if model is None:
        return np.full(s.nv, -1, dtype=np.int64)
    return np.ascontiguousarray(dof_coordinates(model), dtype=np.int64)


def run_gauss_chart(problem, name: str, A: np.ndarray, b: np.ndarray, d: np.ndarray,
                    c: np.ndarray, tol: float, maxiter: int, project: bool = False):
    """Midpoint's or gauss4's run (``name``; their tableau A, b, c and d = b A⁻¹;
    ``project``: with the energy projection) in the quaternions' chart,
    :func:`_gauss_chart_loop` (see :func:`_run`); None also where numba's LU meets a
    singular J(ξ) (as :func:`run_itoh_abe_chart`): the Python steps take the run."""
    s = problem.system
    head = (*_functions_and_rows(problem), s.compiled_forward_dynamics, *s.compiled_chart,
            _dof_coordinates(s), *(np.ascontiguousarray(a, float) for a in (A, b, d, c)),
            bool(project))
    try:
        return _run(problem, name, _gauss_chart_loop, _GAUSS_CHART_SIGNATURE, head,
                    (float(tol), int(maxiter)))
    except np.linalg.LinAlgError:
        return None


# ------------------------------------------------------ Itoh–Abe in the quaternions' chart
@nb.njit(cache=True, nogil=True)
def _nonzero(x) -> bool:
    """Any x_i ≠ 0 (numpy's ``any``: −0.0 counts as zero)."""
    for i in range(x.shape[0]):
        if x[i] != 0.0:
            return True
    return False


@nb.njit(cache=True, nogil=True)
def _chart_momentum(chart, x, p, pv) -> bool:
    """pv ← J(x)⁻ᵀ p, the momentum M v at q_n ⊕ x of the chart's canonical p (chart.py's
    ``ChartHamiltonian._state``), J(x) by the generated ``chart_jacobian`` into the chart's
    scratch J, J = 1 exactly at x = 0 (``ProtocolChart.jacobian``), the solve by LAPACK's
    LU as numpy's ``solve``; False where the generated function refuses x."""
    if chart is not None:
        jacobian, qn, J = chart[2], chart[3], chart[8]
        n = x.shape[0]
        if not _nonzero(x):
            pv[:] = p  # (LU of the identity: p exactly)
            return True
        if jacobian(qn, x, J) != 0:
            return False
        pv[:] = np.linalg.solve(J.reshape((n, n)).T, p)
        return True
    return False


@nb.njit(cache=True, nogil=True)
def _chart_hamiltonian(fns, chart, x, p, M, E, v, pv) -> float:
    """H(x, p) = E(q_n ⊕ x, M⁻¹ J(x)⁻ᵀ p) in the chart centred on q_n (chart.py's
    ``ChartHamiltonian.energy``; M⁻¹ by Cholesky, :func:`.base.solve_spd`), q into the
    chart's scratch q, v and pv = M v the scratch; NaN where a generated function refuses
    the point."""
    if chart is not None:
        point, qn, q = chart[1], chart[3], chart[4]
        if point(qn, x, q) != 0 or not _chart_momentum(chart, x, p, pv):
            return np.nan
        if not _velocity(fns[0], q, pv, M, v):
            return np.nan
        return _energy(fns, q, v, E)
    return np.nan


#: ItohAbe.configuration_part's switch in a chart without the closed-form ∂H/∂x
#: (ProtocolChart: has_derivative False): below it, the central difference of H
_IA_SWITCH = 1e-5


@nb.njit(cache=True, nogil=True)
def _chart_configuration_part(fns, chart, p, dq, reverse, U, M, E, x, xm, g) -> bool:
    """Itoh–Abe's ∇̄_xH at p held, x moved from 0 one coordinate at a time (1..n,
    ``reverse``: n..1): ``[H(.., x_i + Δx_i, ..) − H(..)]/Δx_i``, below |Δx_i| = 1e-5 the
    central difference of H (step 1e-5) at the increment's midpoint
    (``ItohAbe.configuration_part`` in a chart whose x starts at 0: the scale 1 + |0|)."""
    n = dq.shape[0]
    v, pv = U[_DT], U[_U]
    for i in range(n):
        x[i] = 0.0
    H_prev = _chart_hamiltonian(fns, chart, x, p, M, E, v, pv)
    for k in range(n):
        i = n - 1 - k if reverse else k
        if abs(dq[i]) > _IA_SWITCH:
            x[i] = dq[i]
            H_new = _chart_hamiltonian(fns, chart, x, p, M, E, v, pv)
            g[i] = (H_new - H_prev) / dq[i]
        else:
            e = _IA_SWITCH
            xm[:] = x
            xm[i] = 0.5 * dq[i] + e
            Hp = _chart_hamiltonian(fns, chart, xm, p, M, E, v, pv)
            xm[i] -= 2 * e
            g[i] = (Hp - _chart_hamiltonian(fns, chart, xm, p, M, E, v, pv)) / (2 * e)
            x[i] = dq[i]
            H_new = _chart_hamiltonian(fns, chart, x, p, M, E, v, pv)
        if not np.isfinite(H_new) or not np.isfinite(g[i]):
            return False
        H_prev = H_new
    return True


@nb.njit(cache=True, nogil=True)
def _chart_momentum_part(fns, chart, dq, p0, dp, reverse, M, pk, g) -> bool:
    """Itoh–Abe's ∇̄_pH at x = Δx: H is quadratic in p with ∂²H/∂p² = A = J⁻¹M⁻¹J⁻ᵀ
    (``ChartHamiltonian.inverse_mass``: the inverses as numpy's ``inv``, :func:`_inverse`,
    the products in its order (J⁻¹M⁻¹)J⁻ᵀ), so g_i = (A p̃)_i + ½ Δp_i A_ii exactly, p̃
    the momenta moved so far (``momentum_part``)."""
    if chart is not None:
        point, jacobian, qn, q, J = chart[1], chart[2], chart[3], chart[4], chart[8]
        n = dq.shape[0]
        if point(qn, dq, q) != 0 or fns[0](q, 0.0, M.reshape(n * n)) != 0:
            return False
        if _nonzero(dq):
            if jacobian(qn, dq, J) != 0:
                return False
            Ji = _inverse(J.reshape((n, n)))
        else:
            Ji = np.eye(n)  # (ProtocolChart's J(0) = 1, whose inverse is exact)
        A = (Ji @ _inverse(M)) @ Ji.T
        pk[:] = p0
        for k in range(n):
            i = n - 1 - k if reverse else k
            g[i] = A[i] @ pk + 0.5 * dp[i] * A[i, i]
            pk[i] += dp[i]
        return True
    return False


@nb.njit(cache=True, nogil=True)
def _chart_velocity_part(fns, chart, symmetric, p0, dq, dp, U, M, g) -> bool:
    """g ← ∇̄_pH alone (the second half of :func:`_itoh_abe_gradient`'s in the chart; the
    symmetric variant's: the mean with the reverse path's, at x = 0)."""
    if not _chart_momentum_part(fns, chart, dq, p0, dp, False, M, U[_F], g):
        return False
    if symmetric:
        zero, g2 = U[_RS], U[_XS]
        zero[:] = 0.0
        if not _chart_momentum_part(fns, chart, zero, p0, dp, True, M, U[_F], g2):
            return False
        for i in range(g.shape[0]):
            g[i] = 0.5 * (g[i] + g2[i])
    return True


@nb.njit(cache=True, nogil=True)
def _chart_force(fns, chart, t, dx, xdot, U, out) -> float:
    """out ← J(x̄)ᵀ τ_nc(t, q_n ⊕ x̄, J(x̄) ẋ̄) at the step's midpoint x̄ = Δx/2 in the chart
    centred on q_n (discrete_gradient.py's ``forcing`` in a chart: the force in x, by
    virtual power), τ_nc of the force rows (:func:`_force_power`, into U[_TN]); returns
    its power vᵀτ_nc, v = J(x̄) ẋ̄, NaN where a generated function refuses x̄. The chart's
    scratch q, x, y and J hold q_n ⊕ x̄, x̄, v and J(x̄)."""
    if chart is not None:
        point, jacobian, qn, q, xm, v, J = (chart[1], chart[2], chart[3], chart[4],
                                            chart[5], chart[6], chart[8])
        n = dx.shape[0]
        for i in range(n):
            xm[i] = 0.5 * dx[i]
        if point(qn, xm, q) != 0 or jacobian(qn, xm, J) != 0:
            return np.nan
        for i in range(n):
            acc = 0.0
            for k in range(n):
                acc += J[i * n + k] * xdot[k]
            v[i] = acc
        power = _force_power(fns, t, q, v, U)
        tau = U[_TN]
        for k in range(n):
            acc = 0.0
            for i in range(n):
                acc += J[i * n + k] * tau[i]
            out[k] = acc
        return power
    return np.nan


@nb.njit(cache=True, nogil=True)
def _chart_minus_force(fns, chart, h, t, dx, xdot, U, R) -> bool:
    """R[n:] −= h J(x̄)ᵀ τ_nc(t, q_n ⊕ x̄, J(x̄) ẋ̄) (:func:`_chart_force`: the chart's
    momentum equation with the force rows, ẋ̄ = ∇̄_pH); nothing without them; False where
    a generated function refuses x̄."""
    if not fns[4]:
        return True
    n = dx.shape[0]
    f = U[_VA]
    if np.isnan(_chart_force(fns, chart, t, dx, xdot, U, f)):
        return False
    for i in range(n):
        R[n + i] -= h * f[i]
    return True


@nb.njit(cache=True, nogil=True)
def _chart_itoh_abe_polish(fns, chart, symmetric, h, t, p0, d, U, M, E, F) -> bool:
    """``ItohAbe.polish`` in a chart: two sweeps, the second from Δx ← h ∇̄_pH(Δx, Δp),
    each then Δp ← −h ∇̄_xH + h J(x̄)ᵀτ_nc(t, q_n ⊕ x̄, J(x̄) ∇̄_pH) (the force rows' term,
    :func:`_chart_force`, with the forward path's ∇̄_pH or the symmetric gradient's) —
    forward: until Δp repeats, at most 4 (∇̄_xH does not depend on Δp: without forces one
    settles it); symmetric: once, as the reference."""
    n = d.shape[0] // 2
    dq, dp = d[:n], d[n:]
    g, gp, new = F[0], F[1, n:], U[_RK]
    for sweep in range(2):
        if sweep:
            if not _chart_velocity_part(fns, chart, symmetric, p0, dq, dp, U, M, gp):
                return False
            for i in range(n):
                dq[i] = h * gp[i]
        if not symmetric and not _chart_configuration_part(fns, chart, p0, dq, False, U, M,
                                                           E, U[_XS], U[_RS], g[:n]):
            return False
        for _ in range(1 if symmetric else 4):
            if symmetric:
                if not _itoh_abe_gradient(fns, chart, True, p0, dq, dp, U, M, E, F):
                    return False
            elif fns[4] and not _chart_momentum_part(fns, chart, dq, p0, dp, False, M, U[_F],
                                                     g[n:]):
                return False
            for i in range(n):
                new[i] = -h * g[i]
            if fns[4]:
                if np.isnan(_chart_force(fns, chart, t, dq, g[n:], U, U[_VA])):
                    return False
                for i in range(n):
                    new[i] += h * U[_VA, i]
            same = True
            for i in range(n):
                same = same and new[i] == dp[i]
            if same:
                break
            dp[:] = new[:n]
    return True


@nb.njit(cache=True, nogil=True)
def _chart_step_end(mass_matrix, chart_point, fns, chart, forces, h, t, qn, d, z0, x, vbar, q,
                    pv, v, U, M) -> float:
    """The end of a step of the avf and Itoh–Abe chart loops, Newton's (Δx, Δp) in d: W_nc's
    h v̄ᵀτ_nc(t + h/2, q_n ⊕ Δx/2, v̄), v̄ = J(Δx/2) Δx/h (with ``forces``; 0 without); then
    q = q_n ⊕ Δx, the momentum p_n + Δp carried to q's own chart (z0[n:], pv) and
    v = M(q)⁻¹p. Returns the work; NaN where a piece failed."""
    n = v.shape[0]
    dw = 0.0
    if forces:
        for i in range(n):
            vbar[i] = d[i] / h
        power = _chart_force(fns, chart, t, d[:n], vbar, U, U[_VA])
        if np.isnan(power):
            return np.nan
        dw = h * power
    for i in range(n):
        x[i] = d[i]
        z0[n + i] = z0[n + i] + d[n + i]  # p_n + Δp
    if chart_point(qn, x, q) != 0 or not _chart_momentum(chart, x, z0[n:], pv):
        return np.nan
    z0[n:] = pv
    if not _velocity(mass_matrix, q, pv, M, v):
        return np.nan
    return dw


def _itoh_abe_chart_loop(mass_matrix, forcing, energy, ninputs, P, forces, data,
                         forward_dynamics, chart_point, chart_jacobian, iqd, symmetric, q0, v0,
                         steps, times, n_steps, every, tol, maxiter, stagnation, blowup, Q, V,
                         W, iters, status):
    """The whole run of Itoh–Abe (forward, or ``symmetric``) on a system whose chart is not
    additive (quaternions), in chart.py's canonical coordinates centred on q_n: z = (x, p),
    q = q_n ⊕ x, p = J(x)ᵀ M v, d = (Δx, Δp) from ``(Δx − h ∇̄_pH, Δp + h ∇̄_xH) = 0``
    (:func:`_itoh_abe_gradient`) by :func:`_stage_newton` with the kinematic matrix
    [1, −h/2 M(q_n)⁻¹; 0, 1], the difference Jacobian kept while h stays (the reference's
    ``reuse`` in a chart), the stagnation bar and ITOH_ABE_FLOOR; the last step's d as
    predictor (h v_n, 0 at the first step and after h changed); the polish
    (:func:`_chart_itoh_abe_polish`); q_{n+1} = q_n ⊕ Δx, and p_{n+1} = J(Δx)⁻ᵀ (p_n + Δp)
    = M v_{n+1} carried to the next step (``_carry``; p_0 = M v_0): the arithmetic of
    discrete_gradient.py's step, in the generated functions; the force rows (springs on the
    coordinates ``iqd`` of their speeds) with the springs' potential in H and τ_nc in the
    momentum equation at t_n + h/2 and the chart's midpoint (:func:`_chart_minus_force`),
    W_nc = h v̄ᵀτ_nc there at ẋ̄ = Δx/h, as the reference's; status and return as
    :func:`_verlet_loop`'s."""
    n, nq = v0.shape[0], q0.shape[0]
    fns = (mass_matrix, forcing, energy, P, forces, data, iqd, np.empty(n))
    n2 = 2 * n
    U, M, E, zu, zt = _workspace(n, ninputs)
    F, none, tc, pw = np.empty((2, n2)), np.empty(0), np.zeros(1), np.zeros(1)
    z0, d, Jm, hA = np.zeros(n2), np.zeros(n2), np.empty((n2, n2)), np.empty((0, 0))
    kept, have_kept = np.empty((n2, n2)), np.zeros(1, dtype=np.bool_)
    qn, xi, pv, vbar = np.empty(nq), np.empty(n), np.empty(n), np.empty(n)
    chart = (forward_dynamics, chart_point, chart_jacobian, qn, np.empty(nq), np.empty(n),
             np.empty(n), np.empty(max(n * n, 1)), np.empty(n * n), None)
    kind = _kind(9) if symmetric else _kind(8)
    q, v = q0.copy(), v0.copy()
    k_out, vmax0, work = store(q, v, Q, V, 0), _largest(v), 0.0
    W[0] = 0.0
    last_h = np.nan
    for step in range(n_steps):
        h = steps[step]
        tc[0] = times[step] + 0.5 * h  # the forces act at the midpoint of the step
        qn[:] = q
        if mass_matrix(q, 0.0, M.reshape(n * n)) != 0:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        if step == 0:  # (then p carried: J⁻ᵀ p at the last step's end)
            z0[n:] = M @ v
        _simplified_jacobian(M, h, Jm)
        if h != last_h:  # a new h: the predictor h v_n, and the kept Jacobian dropped
            for i in range(n):
                d[i] = h * v[i]
                d[n + i] = 0.0
            have_kept[0] = False
            last_h = h
        it = _stage_newton(kind, fns, chart, hA, none, none, h, tc, pw, none, 0.0, z0, d, Jm,
                           kept, have_kept, tol, maxiter, stagnation, U, M, E, zu, zt, F)
        if it < 0 or not _chart_itoh_abe_polish(fns, chart, symmetric, h, tc[0], z0[n:], d,
                                                U, M, E, F):
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        dw = _chart_step_end(mass_matrix, chart_point, fns, chart, forces, h, tc[0], qn, d,
                             z0, xi, vbar, q, pv, v, U, M)
        if np.isnan(dw):
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        work += dw
        iters[step] = it
        if not _guarded(q, v, vmax0, blowup, step, Q, V, status):
            return k_out
        k_out = _save(step, n_steps, every, q, v, work, Q, V, W, k_out)
    return k_out


_ITOH_ABE_CHART_SIGNATURE = types.int64(*_FNS, FORWARD_DYNAMICS, CHART_POINT, CHART_JACOBIAN,
                                        _IQD, types.boolean, _V, _V, *_RUN, types.float64, *_OUT)


def run_itoh_abe_chart(problem, symmetric: bool, tol: float, maxiter: int,
                       stagnation: float):
    """Itoh–Abe's run (forward or ``symmetric``) in the quaternions' chart,
    :func:`_itoh_abe_chart_loop` (where :func:`chart_applicable`; see :func:`_run`); None
    also where numba's LU meets a singular J(x) (|x| = 2π, where the chart ends), which it
    raises as LinAlgError: the Python steps take that as a NaN residual and restart Newton,
    or report the step."""
    s = problem.system
    head = (*_functions_and_rows(problem), s.compiled_forward_dynamics, *s.compiled_chart,
            _dof_coordinates(s), bool(symmetric))
    try:
        return _run(problem, "itoh_abe", _itoh_abe_chart_loop, _ITOH_ABE_CHART_SIGNATURE,
                    head, (float(tol), int(maxiter), float(stagnation)))
    except np.linalg.LinAlgError:
        return None


# ------------------------------------------------------------ AVF in the quaternions' chart
#: the generated ``_rates(q, t, zero, e, rate0, W)`` (W(q), nq × nv: printers' numba
#: template) and the chart module's ``qdot_jacobian(q, u, t, Kq)`` (∂q̇/∂q, flat) and
#: ``kinetic_gradient(q, u, t, dTq)`` (∂T/∂q at fixed u): what
#: ``ChartCompiledSystem.compiled_chart_derivative`` gives, with the quaternion groups
RATES = types.FunctionType(types.int64(_V, types.float64, _V, _V, _V, _ROWS))
QDOT_JACOBIAN = types.FunctionType(types.int64(_V, _V, types.float64, _V))
KINETIC_GRADIENT = types.FunctionType(types.int64(_V, _V, types.float64, _V))
_GROUPS = types.int64[:, ::1]


@nb.njit(cache=True, nogil=True)
def _chart_derivative(dchart, q, x, w, Wq, N, D) -> bool:
    """D ← D(x, w) with ``D δ = d/dε J(x + εδ) w`` at q = q_n ⊕ x (W(q) in Wq, N = WᵀW and
    Φ in the scratch Phi from :func:`_chart_jacobian`):
    ``CompiledSystem.chart_derivative``'s closed form and arithmetic —
    ``W D = (∂Φ/∂ξ · δ) w − (K(q, u) − K(q, 0)) Φ``, u = J w from the normal equations
    N u = Wᵀ Φ w, N = WᵀW, K the generated ∂q̇/∂q, Φ = W(q_n) off the quaternions and
    G(q_g) J_r(x_g) on group g, with the quaternion term
    ``G(q_g)(D_r(x_g, w_g) − ½ (J_r w_g)× J_r) − ¼ q_g (J_rᵀ J_r w_g)ᵀ`` on its rows —,
    solved by the normal equations; False where the generated ∂q̇/∂q refuses q."""
    qjac, qg, ug, Phi, zero, K1, K0 = (dchart[1], dchart[3], dchart[4], dchart[6], dchart[7],
                                       dchart[9], dchart[10])
    nq = q.shape[0]
    u = np.linalg.solve(N, Wq.T @ (Phi @ w))
    if qjac(q, u, 0.0, K1) != 0 or qjac(q, zero, 0.0, K0) != 0:
        return False
    R = -(K1.reshape((nq, nq)) - K0.reshape((nq, nq))) @ Phi
    for g in range(qg.shape[0]):
        a, b = qg[g], ug[g]
        xg = np.array([x[b[0]], x[b[1]], x[b[2]]])
        wg = np.array([w[b[0]], w[b[1]], w[b[2]]])
        Jr = so3_right_jacobian(xg)
        y = Jr @ wg
        qv = np.array([q[a[0]], q[a[1]], q[a[2]], q[a[3]]])
        T = (_quat_rate_matrix(q, a) @ (so3_right_jacobian_derivative(xg, wg)
                                        - 0.5 * skew3(y) @ Jr)
             - 0.25 * np.outer(qv, Jr.T @ y))
        for i in range(4):
            for c in range(3):
                R[a[i], b[c]] += T[i, c]
    D[:, :] = np.linalg.solve(N, Wq.T @ R)
    return True


@nb.njit(cache=True, nogil=True)
def _phi(dchart, q, x, Phi):
    """Phi ← Φ = ∂(q_n ⊕ x)/∂x at q = q_n ⊕ x (``CompiledSystem._chart_parts``): W(q_n)
    (the scratch W0) off the quaternions, G(q_g) J_r(x_g) on group g."""
    qg, ug, W0 = dchart[3], dchart[4], dchart[5]
    Phi[:, :] = W0
    for g in range(qg.shape[0]):
        a, b = qg[g], ug[g]
        GJ = _quat_rate_matrix(q, a) @ so3_right_jacobian(np.array([x[b[0]], x[b[1]],
                                                                    x[b[2]]]))
        for i in range(4):
            Phi[a[i], :] = 0.0
            for c in range(3):
                Phi[a[i], b[c]] = GJ[i, c]


@nb.njit(cache=True, nogil=True)
def _chart_jacobian(dchart, q, x, Wq, J):
    """J ← J(x) = N⁻¹ WᵀΦ at q = q_n ⊕ x, W = W(q) in Wq, N = WᵀW (the generated
    ``chart_jacobian``'s arithmetic, on the W(q) at hand rather than anew), 1 exactly at
    x = 0 (``ProtocolChart.jacobian``); Φ into the scratch Phi (:func:`_phi`); returns N."""
    Phi = dchart[6]
    _phi(dchart, q, x, Phi)
    N = Wq.T @ Wq
    if _nonzero(x):
        J[:, :] = np.linalg.solve(N, Wq.T @ Phi)
    else:
        J[:, :] = np.eye(J.shape[0])
    return N


@nb.njit(cache=True, nogil=True)
def _tangent_terms(fns, dchart, q, v, Wq, fresh, U, zu, zt, dT, g) -> bool:
    """dT ← ∂T/∂q|_v in the tangent space, W(q)ᵀ ∂T/∂q|_u (the generated ``_rates`` into
    Wq where ``fresh``, else the W(q) in Wq, and ``kinetic_gradient``:
    ``ChartCompiledSystem.hamiltonian_terms``), and g ← ∂V/∂q
    − τ_springs = −forcing(q, 0, 0) + k (q_j − q_rest) with the springs of the force rows
    (``dV − P.tau_cons(q)``); False where a generated function refuses q."""
    rates, kgrad, zero, e, rate0, dTq = (dchart[0], dchart[2], dchart[7], dchart[8],
                                         dchart[11], dchart[13])
    n = v.shape[0]
    if (fresh and rates(q, 0.0, zero, e, rate0, Wq) != 0) or kgrad(q, v, 0.0, dTq) != 0:
        return False
    F = U[_F]
    if fns[1](q, zu, zt, 0.0, F) != 0:
        return False
    dT[:] = Wq.T @ dTq
    for i in range(n):
        g[i] = -F[i]  # g(q) = −forcing(q, 0, 0)
    if fns[4]:  # ∂V/∂q − τ_springs = + k (q − q_rest)
        spring_gradient_add(fns[3], _dofs(fns, q), 1.0, g)
    return True


@nb.njit(cache=True, nogil=True)
def _quat_rate_matrix(q, a):
    """G(q_g) with ½ q_g ⊗ (0, y) = G y, q_g = q[a] (:func:`kanedyn.spatial.lie.
    quat_rate_matrix`)."""
    w, x, y, z = q[a[0]], q[a[1]], q[a[2]], q[a[3]]
    return 0.5 * np.array([[-x, -y, -z], [w, -z, y], [z, w, -x], [-y, x, w]])


@nb.njit(cache=True, nogil=True)
def _chart_gradient(fns, chart, dchart, x, p, U, M, zu, zt, gx, xdot) -> bool:
    """(gx, xdot) ← (∂H/∂x, ∂H/∂p = ẋ) at (x, p) in the chart centred on q_n, in
    ``ChartHamiltonian.gradient``'s arithmetic with a compiled Kane tree's
    ``SystemChart``: q = q_n ⊕ x by the generated ``chart_point``, W(q) by ``_rates`` and
    J(x) from them (:func:`_chart_jacobian`; 1 exactly at x = 0), M v = J⁻ᵀ p by
    LU, v = M⁻¹(M v) by Cholesky, ẋ = J⁻¹ v by LU; the tangent ∂T/∂q = W(q)ᵀ ∂T/∂q|_u (the
    generated ``_rates`` and ``kinetic_gradient``: ``hamiltonian_terms``), ∂V/∂q =
    −forcing(q, 0, 0) with the springs of the force rows (+ k (q_j − q_rest)), and

        ∂H/∂x = Jᵀ(∂V/∂q − ∂T/∂q) − D(x, ẋ)ᵀ M v

    (D by :func:`_chart_derivative`). ``dchart`` None: not compiled (numba prunes the
    branch on the argument's type). False where a generated function refuses the point."""
    if dchart is not None:
        point, qn, q = chart[1], chart[3], chart[4]
        Wq, pv, v, g, D, dT, J = (dchart[12], dchart[14], dchart[15], dchart[16], dchart[17],
                                  dchart[18], dchart[20])
        rates, zero, e, rate0 = dchart[0], dchart[7], dchart[8], dchart[11]
        n = x.shape[0]
        if point(qn, x, q) != 0 or rates(q, 0.0, zero, e, rate0, Wq) != 0:
            return False
        N = _chart_jacobian(dchart, q, x, Wq, J)
        pv[:] = np.linalg.solve(J.T, p)
        if not _velocity(fns[0], q, pv, M, v):
            return False
        if not _tangent_terms(fns, dchart, q, v, Wq, False, U, zu, zt, dT, g):
            return False
        for i in range(n):
            g[i] = g[i] - dT[i]
        xdot[:] = np.linalg.solve(J, v)
        gx[:] = J.T @ g
        if not _chart_derivative(dchart, q, x, xdot, Wq, N, D):
            return False
        gx[:] = gx - D.T @ pv
        return True
    return False


@nb.njit(cache=True, nogil=True)
def _avf_chart_residual(fns, chart, xi, w, h, tc, z0, Z, U, M, E, zu, zt, F, R) -> bool:
    """AVF's residual in the chart centred on q_n (``kind`` 10 of :func:`_stage_residual`):
    F[0] ← ∇̄H = Σ_k w_k ∇H(ξ_k Δx, p_n + ξ_k Δp) (``AVF.discrete_gradient``, ∇H of
    :func:`_chart_gradient`), R = (Δx − h ∇̄_pH, Δp + h ∇̄_xH − h J(x̄)ᵀτ_nc)
    (:func:`_chart_minus_force`)."""
    if chart is not None:
        n = z0.shape[0] // 2
        gq, gp = F[0, :n], F[0, n:]
        gq[:] = 0.0
        gp[:] = 0.0
        x, y, a, b = U[_XK], U[_RK], U[_XS], U[_RS]
        for j in range(xi.shape[0]):
            for i in range(n):
                x[i] = xi[j] * Z[i]
                y[i] = z0[n + i] + xi[j] * Z[n + i]
            if not _chart_gradient(fns, chart, chart[9], x, y, U, M, zu, zt, a, b):
                return False
            for i in range(n):
                gq[i] = gq[i] + w[j] * a[i]
                gp[i] = gp[i] + w[j] * b[i]
        for i in range(n):
            R[i] = Z[i] - h * gp[i]
            R[n + i] = Z[n + i] + h * gq[i]
        return _chart_minus_force(fns, chart, h, tc[0], Z[:n], gp, U, R)
    return False


@nb.njit(cache=True, nogil=True)
def _derivative_scratch(rates, qdot_jacobian, kinetic_gradient, qg, ug, W0, nq, n):
    """``chart[9]`` of the loops that take the chart's derivative: (rates, ∂q̇/∂q, ∂T/∂q,
    qg, ug, W(q_n), Φ, zero speeds, e, K(q, u), K(q, 0), rate0, W(q), ∂T/∂q|_u, M v, v,
    ∂V/∂q − ∂T/∂q, D, the tangent ∂T/∂q, then Verlet's: J x, J, M(q_n), K)."""
    return (rates, qdot_jacobian, kinetic_gradient, qg, ug, W0, np.empty((nq, n)),
            np.zeros(n), np.empty(n), np.empty(nq * nq), np.empty(nq * nq), np.empty(nq),
            np.empty((nq, n)), np.empty(nq), np.empty(n), np.empty(n), np.empty(n),
            np.empty((n, n)), np.empty(n), np.empty(n), np.empty((n, n)), np.empty((n, n)),
            np.empty((n, n)))


def _avf_chart_loop(mass_matrix, forcing, energy, ninputs, P, forces, data, forward_dynamics,
                    chart_point, chart_jacobian, rates, qdot_jacobian, kinetic_gradient, qg, ug,
                    iqd, xi, w, q0, v0, steps, times, n_steps, every, tol, maxiter, blowup, Q,
                    V, W, iters, status):
    """The whole run of AVF (Gauss–Legendre nodes ``xi`` and weights ``w`` on [0, 1]) on a
    system whose chart is not additive (quaternions), in chart.py's canonical coordinates
    centred on q_n: z = (x, p), q = q_n ⊕ x, p = J(x)ᵀ M v, d = (Δx, Δp) from
    ``(Δx − h ∇̄_pH, Δp + h ∇̄_xH) = 0`` with ∇̄H the quadrature of the closed-form ∇H
    (:func:`_avf_chart_residual`: the generated chart functions, ``_rates``, ∂q̇/∂q and
    ∂T/∂q, the quaternion groups ``qg``, ``ug`` of the coordinates and speeds), by
    :func:`_stage_newton` with the kinematic matrix [1, −h/2 M(q_n)⁻¹; 0, 1], the
    difference Jacobian kept while h stays (the reference's ``reuse`` in a chart), the
    stagnation bar 1e-9; the last step's d as predictor ((h v_n, 0) at the first step and
    after h changed); q_{n+1} = q_n ⊕ Δx, p_{n+1} = J(Δx)⁻ᵀ (p_n + Δp) = M v_{n+1} carried to
    the next step (p_0 = M v_0): discrete_gradient.py's AVF step with chart.py's
    ``SystemChart``, in the generated functions. The force rows (springs on the
    coordinates ``iqd`` of their speeds) with the springs' potential in H and τ_nc in the
    momentum equation at t_n + h/2 and the chart's midpoint, W_nc = h v̄ᵀτ_nc there at
    ẋ̄ = Δx/h, as :func:`_itoh_abe_chart_loop`'s; status and return as
    :func:`_verlet_loop`'s."""
    n, nq = v0.shape[0], q0.shape[0]
    fns = (mass_matrix, forcing, energy, P, forces, data, iqd, np.empty(n))
    n2 = 2 * n
    U, M, E, zu, zt = _workspace(n, ninputs)
    F, none, tc, pw = np.empty((2, n2)), np.empty(0), np.zeros(1), np.zeros(1)
    z0, d, Jm, hA = np.zeros(n2), np.zeros(n2), np.empty((n2, n2)), np.empty((0, 0))
    kept, have_kept = np.empty((n2, n2)), np.zeros(1, dtype=np.bool_)
    qn, x1, pv, vbar = np.empty(nq), np.empty(n), np.empty(n), np.empty(n)
    W0 = np.empty((nq, n))
    dchart = _derivative_scratch(rates, qdot_jacobian, kinetic_gradient, qg, ug, W0, nq, n)
    chart = (forward_dynamics, chart_point, chart_jacobian, qn, np.empty(nq), np.empty(n),
             np.empty(n), np.empty(max(n * n, 1)), np.empty(n * n), dchart)
    q, v = q0.copy(), v0.copy()
    k_out, vmax0, work = store(q, v, Q, V, 0), _largest(v), 0.0
    W[0] = 0.0
    last_h = np.nan
    for step in range(n_steps):
        h = steps[step]
        tc[0] = times[step] + 0.5 * h  # the forces act at the midpoint of the step
        qn[:] = q
        if (mass_matrix(q, 0.0, M.reshape(n * n)) != 0
                or rates(qn, 0.0, dchart[7], dchart[8], dchart[11], W0) != 0):
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        if step == 0:  # (then p carried: J⁻ᵀ p at the last step's end)
            z0[n:] = M @ v
        _simplified_jacobian(M, h, Jm)
        if h != last_h:  # a new h: the predictor h v_n, and the kept Jacobian dropped
            for i in range(n):
                d[i] = h * v[i]
                d[n + i] = 0.0
            have_kept[0] = False
            last_h = h
        it = _stage_newton(_kind(10), fns, chart, hA, xi, w, h, tc, pw, none, 0.0, z0, d, Jm,
                           kept, have_kept, tol, maxiter, _STAGNATION, U, M, E, zu, zt, F)
        if it < 0:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        dw = _chart_step_end(mass_matrix, chart_point, fns, chart, forces, h, tc[0], qn, d,
                             z0, x1, vbar, q, pv, v, U, M)
        if np.isnan(dw):
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        work += dw
        iters[step] = it
        if not _guarded(q, v, vmax0, blowup, step, Q, V, status):
            return k_out
        k_out = _save(step, n_steps, every, q, v, work, Q, V, W, k_out)
    return k_out


_AVF_CHART_SIGNATURE = types.int64(*_FNS, FORWARD_DYNAMICS, CHART_POINT, CHART_JACOBIAN, RATES,
                                   QDOT_JACOBIAN, KINETIC_GRADIENT, _GROUPS, _GROUPS, _IQD, _V,
                                   _V, _V, _V, *_RUN, *_OUT)


def avf_chart_applicable(problem) -> bool:
    """:func:`chart_applicable` and the chart's derivative functions compiled
    (``compiled_chart_derivative``: a numba ``ChartCompiledSystem``), what
    :func:`_avf_chart_loop` takes besides."""
    s = problem.system
    return (chart_applicable(problem) and getattr(s, "has_chart_derivative", False)
            and hasattr(s, "compiled_chart_derivative"))


def run_avf_chart(problem, xi: np.ndarray, w: np.ndarray, tol: float, maxiter: int):
    """AVF's run (Gauss–Legendre nodes ξ and weights w on [0, 1]) in the quaternions'
    chart, :func:`_avf_chart_loop` (where :func:`avf_chart_applicable`; see :func:`_run`;
    the chart's derivative functions built on first use); None where they are not
    compiled, or where numba's LU meets a singular J(x) or N (as
    :func:`run_itoh_abe_chart`): the Python steps take the run."""
    s = problem.system
    derivative = s.compiled_chart_derivative()
    if derivative is None:
        return None
    head = (*_functions_and_rows(problem), s.compiled_forward_dynamics, *s.compiled_chart,
            *derivative, _dof_coordinates(s), np.ascontiguousarray(xi, float),
            np.ascontiguousarray(w, float))
    try:
        return _run(problem, "avf", _avf_chart_loop, _AVF_CHART_SIGNATURE, head,
                    (float(tol), int(maxiter)))
    except np.linalg.LinAlgError:
        return None


# ------------------------------------------ Störmer–Verlet's variational step in that chart
@nb.njit(cache=True, nogil=True)
def _start_sensitivity(dchart, qn, x, q, K) -> bool:
    """K ← ∂x/∂q_n at fixed q = q_n ⊕ x (``ChartCompiledSystem.chart_start_sensitivity``):
    Φ(x) K = −B, B = W(q_n) + ∂q̇/∂q(q_n, x) W(q_n) off the quaternions (the Euler step's
    ∂q/∂q_n, K the generated ∂q̇/∂q), the columns W(q_n)_g,k ⊗ exp(x_g) on group g (the
    right product by exp(x_g)); solved by the normal equations. False where the generated
    ∂q̇/∂q refuses q_n."""
    qjac, qg, ug, W0, Phi, K1 = dchart[1], dchart[3], dchart[4], dchart[5], dchart[6], dchart[9]
    nq, n = qn.shape[0], x.shape[0]
    _phi(dchart, q, x, Phi)
    if qjac(qn, x, 0.0, K1) != 0:
        return False
    B = W0 + K1.reshape((nq, nq)) @ W0
    for g in range(qg.shape[0]):
        a, b = qg[g], ug[g]
        x0, x1, x2 = x[b[0]], x[b[1]], x[b[2]]
        th = np.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
        c = 0.5 - th * th / 48.0 if th < 1e-6 else np.sin(0.5 * th) / th  # (quat_exp's)
        ew, ex, ey, ez = np.cos(0.5 * th), c * x0, c * x1, c * x2
        for k in range(n):
            pw, px, py, pz = W0[a[0], k], W0[a[1], k], W0[a[2], k], W0[a[3], k]
            B[a[0], k] = pw * ew - px * ex - py * ey - pz * ez
            B[a[1], k] = pw * ex + px * ew + py * ez - pz * ey
            B[a[2], k] = pw * ey - px * ez + py * ew + pz * ex
            B[a[3], k] = pw * ez + px * ey - py * ex + pz * ew
    K[:, :] = -np.linalg.solve(Phi.T @ Phi, Phi.T @ B)
    return True


@nb.njit(cache=True, nogil=True)
def _end_parts(fns, chart, dchart, h, x, M0, M, gv) -> bool:
    """Verlet.``_variational_step``'s ``parts(x)``: the chart's scratch q ← q_1 = q_n ⊕ x,
    J ← J(x) (:func:`_chart_jacobian`, on W(q_1) by ``_rates``), dchart's W ← J x (the
    end velocity, ×h) and gv ← ½ M_0 x/h + ½ (J + D(x, x))ᵀ M_1 (J x)/h
    (``SystemChart.end_velocity``, D of :func:`_chart_derivative` with W(q_1)); False where
    a generated function refuses q_1."""
    if dchart is not None:
        point, qn, q = chart[1], chart[3], chart[4]
        Wq, D, Wv, J = dchart[12], dchart[17], dchart[19], dchart[20]
        rates, zero, e, rate0 = dchart[0], dchart[7], dchart[8], dchart[11]
        n = x.shape[0]
        if point(qn, x, q) != 0 or rates(q, 0.0, zero, e, rate0, Wq) != 0:
            return False
        N = _chart_jacobian(dchart, q, x, Wq, J)
        Wv[:] = J @ x
        if not _chart_derivative(dchart, q, x, x, Wq, N, D):
            return False
        if fns[0](q, 0.0, M.reshape(n * n)) != 0:
            return False
        a = M0 @ x
        b = (0.5 * (J + D).T) @ (M @ Wv)
        for i in range(n):
            gv[i] = 0.5 * a[i] / h + b[i] / h
        return True
    return False


@nb.njit(cache=True, nogil=True)
def _verlet_chart_residual(fns, chart, h, tc, mu, Z, U, M, zu, zt, R) -> bool:
    """The variational step's equation in x (``kind`` 11 of :func:`_stage_residual`;
    Verlet.``_variational_step``'s ``residual``): R = μ_n + h/2 G(q_n, x/h) + Kᵀ g_v
    (+ h/2 τ_nc(t_n, q_n, x/h) with the force rows), G = ∂L/∂q|_v = ∂T/∂q − ∂V/∂q +
    τ_springs (:func:`_tangent_terms` at q_n, W(q_n) kept), K the start sensitivity
    (:func:`_start_sensitivity`), g_v of :func:`_end_parts`; M_0 in ``chart[9][21]``."""
    if chart is not None:
        return _variational_residual(fns, chart, chart[9], h, tc, mu, Z, U, M, zu, zt, R)
    return False


@nb.njit(cache=True, nogil=True)
def _variational_residual(fns, chart, dchart, h, tc, mu, Z, U, M, zu, zt, R) -> bool:
    """:func:`_verlet_chart_residual`'s body; ``dchart`` None (the loops without the
    chart's derivative): not compiled (numba prunes the branch on the argument's type)."""
    if dchart is not None:
        qn, q = chart[3], chart[4]
        M0, K, gv = dchart[21], dchart[22], U[_XK]
        dT, g, vx = U[_XS], U[_RS], U[_RK]
        n = Z.shape[0]
        if not _end_parts(fns, chart, dchart, h, Z, M0, M, gv):
            return False
        for i in range(n):
            vx[i] = Z[i] / h
        if not _tangent_terms(fns, dchart, qn, vx, dchart[5], False, U, zu, zt, dT, g):
            return False
        if not _start_sensitivity(dchart, qn, Z, q, K):
            return False
        kg = K.T @ gv
        for i in range(n):
            R[i] = mu[i] + 0.5 * h * (dT[i] - g[i]) + kg[i]
        if fns[4]:
            _force_power(fns, tc[0], qn, vx, U)
            for i in range(n):
                R[i] += 0.5 * h * U[_TN, i]
        return True
    return False


def _verlet_chart_loop(mass_matrix, forcing, energy, ninputs, P, forces, data,
                       forward_dynamics, chart_point, chart_jacobian, rates, qdot_jacobian,
                       kinetic_gradient, qg, ug, iqd, q0, v0, steps, times, n_steps, every,
                       tol, maxiter, blowup, Q, V, W, iters, status):
    """The whole run of Störmer–Verlet's variational step (verlet.py's
    ``_variational_step``, the discrete Lagrangian of the pair (q_n, q_n ⊕ x)) on a system
    whose chart is not additive (quaternions), with chart.py's ``SystemChart`` in the
    generated functions: x from μ_n + h/2 G(q_n, x/h) + Kᵀ g_v (+ h/2 τ_nc(t_n, q_n, x/h))
    = 0 (:func:`_verlet_chart_residual`) by :func:`_stage_newton` from h v_n with the
    matrix −M_0/h, the difference Jacobian kept while h stays (the reference's ``reuse``),
    stagnation 1e-9; then q_{n+1} = q_n ⊕ x, v̇ = J x/h, μ_{n+1} = J(x)⁻ᵀ g_v +
    h/2 G(q_{n+1}, v̇) (+ h/2 τ_nc(t_n + h, q_{n+1}, v̇)), v_{n+1} = M(q_{n+1})⁻¹ μ_{n+1} by
    Cholesky; W_nc by the trapezoidal rule of the two force terms' powers; status and
    return as :func:`_verlet_loop`'s."""
    n, nq = v0.shape[0], q0.shape[0]
    fns = (mass_matrix, forcing, energy, P, forces, data, iqd, np.empty(n))
    U, M, E, zu, zt = _workspace(n, ninputs)
    F, none, tc, pw = np.empty((2, 2 * n)), np.empty(0), np.zeros(1), np.zeros(1)
    x, Jm, hA = np.zeros(n), np.empty((n, n)), np.empty((0, 0))
    kept, have_kept = np.empty((n, n)), np.zeros(1, dtype=np.bool_)
    qn, mu, mu1, vd, gv = np.empty(nq), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    dT, g = np.empty(n), np.empty(n)
    W0 = np.empty((nq, n))
    dchart = _derivative_scratch(rates, qdot_jacobian, kinetic_gradient, qg, ug, W0, nq, n)
    M0 = dchart[21]
    chart = (forward_dynamics, chart_point, chart_jacobian, qn, np.empty(nq), np.empty(n),
             np.empty(n), np.empty(max(n * n, 1)), np.empty(n * n), dchart)
    q, v = q0.copy(), v0.copy()
    k_out, vmax0, work = store(q, v, Q, V, 0), _largest(v), 0.0
    W[0] = 0.0
    last_h = np.nan
    for step in range(n_steps):
        h, t = steps[step], times[step]
        tc[0] = t
        qn[:] = q
        if (mass_matrix(q, 0.0, M0.reshape(n * n)) != 0
                or rates(qn, 0.0, dchart[7], dchart[8], dchart[11], W0) != 0):
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        mu[:] = M0 @ v
        for a in range(n):
            for b in range(n):
                Jm[a, b] = -M0[a, b] / h
        if h != last_h:  # a new h drops the kept Jacobian (the reference's reuse)
            have_kept[0] = False
            last_h = h
        for i in range(n):
            x[i] = h * v[i]
        it = _stage_newton(_kind(11), fns, chart, hA, none, none, h, tc, pw, none, 0.0, mu, x,
                           Jm, kept, have_kept, tol, maxiter, _STAGNATION, U, M, E, zu, zt, F)
        if it < 0 or not _end_parts(fns, chart, dchart, h, x, M0, M, gv):
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        q[:] = chart[4]
        J = dchart[20]
        for i in range(n):
            vd[i] = dchart[19][i] / h
        if not _tangent_terms(fns, dchart, q, vd, dchart[12], False, U, zu, zt, dT, g):
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        mu1[:] = np.linalg.solve(J.T, gv)
        for i in range(n):
            mu1[i] = mu1[i] + 0.5 * h * (dT[i] - g[i])
        if forces:
            for i in range(n):
                vd[i] = x[i] / h
            wa = _force_power(fns, t, qn, vd, U)
            for i in range(n):
                vd[i] = dchart[19][i] / h
            wb = _force_power(fns, t + h, q, vd, U)
            for i in range(n):
                mu1[i] += 0.5 * h * U[_TN, i]
            work += 0.5 * h * (wa + wb)
        if not _velocity(mass_matrix, q, mu1, M, v):
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        iters[step] = it
        if not _guarded(q, v, vmax0, blowup, step, Q, V, status):
            return k_out
        k_out = _save(step, n_steps, every, q, v, work, Q, V, W, k_out)
    return k_out


_VERLET_CHART_SIGNATURE = types.int64(*_FNS, FORWARD_DYNAMICS, CHART_POINT, CHART_JACOBIAN,
                                      RATES, QDOT_JACOBIAN, KINETIC_GRADIENT, _GROUPS, _GROUPS,
                                      _IQD, _V, _V, *_RUN, *_OUT)


def run_verlet_chart(problem, tol: float, maxiter: int):
    """Störmer–Verlet's variational step in the quaternions' chart,
    :func:`_verlet_chart_loop` (where :func:`avf_chart_applicable`; see :func:`_run`);
    None where the chart's derivative functions are not compiled, or where numba's LU
    meets a singular matrix: the Python steps take the run."""
    s = problem.system
    derivative = s.compiled_chart_derivative()
    if derivative is None:
        return None
    head = (*_functions_and_rows(problem), s.compiled_forward_dynamics, *s.compiled_chart,
            *derivative, _dof_coordinates(s))
    try:
        return _run(problem, "verlet", _verlet_chart_loop, _VERLET_CHART_SIGNATURE, head,
                    (float(tol), int(maxiter)))
    except np.linalg.LinAlgError:
        return None


_LOOPS: dict = {}


def _compiled_loop(py_func, signature):
    """``py_func`` compiled for its one signature on first use (an explicit signature
    compiles at once: so not at import)."""
    loop = _LOOPS.get(py_func)
    if loop is None:
        loop = _LOOPS[py_func] = nb.njit(signature, cache=True, nogil=True)(py_func)
    return loop


def compile_loops() -> None:
    """Every loop here compiled for its one signature, or loaded from numba's disk cache
    (``kanedyn precompile``: a first run on a Kane system then does not wait for it)."""
    from numba.core.errors import NumbaExperimentalFeatureWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaExperimentalFeatureWarning)
        for loop, signature in ((_verlet_loop, _VERLET_SIGNATURE),
                                (_gauss_loop, _GAUSS_SIGNATURE), (_dg_loop, _DG_SIGNATURE),
                                (_rk4_loop, _RK4_SIGNATURE),
                                (_gauss_chart_loop, _GAUSS_CHART_SIGNATURE),
                                (_itoh_abe_chart_loop, _ITOH_ABE_CHART_SIGNATURE),
                                (_avf_chart_loop, _AVF_CHART_SIGNATURE),
                                (_verlet_chart_loop, _VERLET_CHART_SIGNATURE)):
            _compiled_loop(loop, signature)


def applicable(problem) -> bool:
    """A system with the capability ``compiled_functions`` (a numba-compiled Kane tree whose
    energy is split into T and V: :class:`~kanedyn.kane.codegen.runtime.CompiledSystem`)
    and additive coordinates (q̇ = u), no force elements or only elements with rows
    (``problem.force_rows``: :mod:`kanedyn.forces.kernel`), and no progress bar: what the
    loops take."""
    s = problem.system
    no_forces = (problem.tau_cons is None and problem.tau_nc is None
                 and problem.potential is None)
    return (getattr(s, "compiled_functions", None) is not None
            and bool(getattr(s, "chart_is_additive", False)) and s.nq == s.nv
            and (no_forces or getattr(problem, "force_rows", None) is not None)
            and problem.progress is None)


def run_verlet(problem, tol: float, maxiter: int):
    """Störmer–Verlet's run in :func:`_verlet_loop` (see :func:`_run`)."""
    return _run_newton(problem, "verlet", _verlet_loop, _VERLET_SIGNATURE, (), tol, maxiter)


def run_gauss(problem, name: str, A: np.ndarray, b: np.ndarray, d: np.ndarray, c: np.ndarray,
              tol: float, maxiter: int, project: bool = False):
    """Midpoint's or gauss4's run (``name``; their tableau A, b, c and d = b A⁻¹;
    ``project``: with the energy projection) in :func:`_gauss_loop` (see :func:`_run`)."""
    tableau = (*(np.ascontiguousarray(a, float) for a in (A, b, d, c)), bool(project))
    name = f"{name}+project('energy',)" if project else name
    return _run_newton(problem, name, _gauss_loop, _GAUSS_SIGNATURE, tableau, tol, maxiter)


def run_avf(problem, xi: np.ndarray, w: np.ndarray, tol: float, maxiter: int):
    """AVF's run (Gauss–Legendre nodes ξ and weights w on [0, 1]) in :func:`_dg_loop`
    (see :func:`_run`)."""
    return _run_dg(problem, "avf", 1, xi, w, np.ones(problem.system.nv), tol, maxiter,
                   _STAGNATION)


def run_gonzalez(problem, mask: np.ndarray, tol: float, maxiter: int):
    """energy_momentum's Gonzalez variant (``mask``, nv long: 0 on the cyclic coordinates
    left out of the correction, 1 elsewhere) in :func:`_dg_loop` (see :func:`_run`)."""
    none = np.empty(0)
    return _run_dg(problem, "energy_momentum", 2, none, none, mask, tol, maxiter,
                   _STAGNATION)


def run_itoh_abe(problem, symmetric: bool, tol: float, maxiter: int, stagnation: float):
    """Itoh–Abe's run (forward or ``symmetric``) in :func:`_dg_loop` (see :func:`_run`)."""
    none = np.empty(0)
    return _run_dg(problem, "itoh_abe", 4 if symmetric else 3, none, none,
                   np.ones(problem.system.nv), tol, maxiter, stagnation)


def _run_dg(problem, name, kind, xi, w, mask, tol, maxiter, stagnation):
    arrays = tuple(np.ascontiguousarray(a, float) for a in (xi, w, mask))
    return _run_newton(problem, name, _dg_loop, _DG_SIGNATURE, (kind, *arrays), tol, maxiter,
                stagnation)


def _run_newton(problem, name: str, py_func, signature, args: tuple, tol: float,
                maxiter: int, *stagnation: float):
    """A run in one of the implicit methods' loops, ``args`` its method's arguments after
    the generated functions and the force rows (``stagnation``: Newton's bar for the
    discrete gradients' loop); see :func:`_run`."""
    return _run(problem, name, py_func, signature, (*_functions_and_rows(problem), *args),
                (float(tol), int(maxiter), *stagnation))


def _functions_and_rows(problem) -> tuple:
    """What every loop takes first (``_FNS``): the generated functions, the number of
    inputs, the force rows (empty rows where there are none) and whether they act."""
    s = problem.system
    rows = getattr(problem, "force_rows", None)
    P = np.ascontiguousarray(empty_rows(s.nv) if rows is None else rows, dtype=float)
    data = np.zeros((1, 1))  # (read only for wrench rows, which need the source Model)
    if P.shape[0] > s.nv:
        from ..dynamics.flat import flatten

        data = flatten(s.source_model).data
    return (*s.compiled_functions, int(s.ninputs), P, rows is not None, data)


def _run(problem, name: str, py_func, signature, head: tuple, tail: tuple):
    """A whole run of ``problem`` (a compiled Kane system, where :func:`applicable`) in the
    loop ``py_func``: ``py_func(*head, q0, v0, steps, times, n_steps, every, *tail, blowup,
    Q, V, W, iters, status)``; a Solution, None to fall back to the Python steps (an
    iteration failed), or the guard's DivergenceError."""
    from numba.core.errors import NumbaExperimentalFeatureWarning

    from .base import Solution
    from .gauss_compiled import report_state_guard
    from .rk4_compiled import step_grid

    s = problem.system
    n_steps, steps, times, every, keep = step_grid(problem.dt, problem.t0, problem.t_final,
                                                   problem.save_every)
    Q = np.empty((len(keep) + 1, s.nq))  # the spare row: a state that failed the guard
    V = np.empty((len(keep) + 1, s.nv))
    W = np.zeros(len(keep) + 1)
    iters = np.zeros(n_steps, dtype=np.int32)
    status = np.zeros(3, dtype=np.int64)
    with warnings.catch_warnings():
        # numba notes that first-class function types are experimental, where it compiles
        # the loop and where it types the generated functions passed in
        warnings.simplefilter("ignore", NumbaExperimentalFeatureWarning)
        _compiled_loop(py_func, signature)(
            *head, np.ascontiguousarray(problem.q0, float),
            np.ascontiguousarray(problem.v0, float), np.ascontiguousarray(steps, float),
            np.ascontiguousarray(times, float), int(n_steps), int(every), *tail,
            float(problem.blowup), Q, V, W, iters, status)
    if status[0] == STATE_GUARD:
        report_state_guard(problem, name, status, Q, V, times)
    if status[0]:
        return None
    return Solution(times[keep], Q[:-1], V[:-1], W[:-1], {"newton_iterations": iters}, name)
