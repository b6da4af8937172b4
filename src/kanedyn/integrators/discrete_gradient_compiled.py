"""The discrete-gradient methods as one compiled loop over all steps (numba).

The same methods as their Python references — :class:`~.discrete_gradient.AVF`,
:class:`~.discrete_gradient.ItohAbe` (both variants) and the ``"gonzalez"`` variant of
:class:`~.energy_momentum.EnergyMomentum` — for a plain Model with additive coordinates
whose force elements all have rows in :mod:`kanedyn.forces.kernel`
(:func:`.rk4_compiled.applicable`), tested step for step against them. Every one solves,
in canonical variables z = (q, p), p = M(q) v, for the increment d = (Δq, Δp) of

    R(d) = (Δq − h ∇̄_pH,  Δp + h ∇̄_qH − h τ_nc(t + h/2, q + Δq/2, ∇̄_pH)) = 0,

with its own discrete gradient ∇̄H(z, z + d) (:data:`AVF`, :data:`ITOH_ABE`,
:data:`ITOH_ABE_SYMMETRIC`, :data:`GONZALEZ`; formulas in the references' docstrings),
evaluated by the kernels behind ``kd.crba`` (M, then a Cholesky factor for v = M⁻¹p) and
the energy kernel (∂T/∂q|_v, g(q), T, V). The force rows (springs, dampers, smoothed
Stribeck friction, constant and sinusoidal torques) enter as the Python methods take them:
the springs' potential in H, τ_nc in the momentum equation, ``W_nc += h v̄ᵀ τ_nc`` with
v̄ = Δq/h, so that the budget E − E₀ − W_nc closes to round-off; Itoh–Abe's polish sweeps
its momentum equation with τ_nc as ``ItohAbe.polish`` does. Any other element makes the
method take its Python steps.

This module imports the force rows of :mod:`kanedyn.forces` (DESIGN's order has
integrators below forces; a recorded exception in tests/test_import_direction.py): numba
cannot take the force kernel as an argument without losing its disk cache, so the loop
compiles the one compiled form of the elements in.

What makes it fast (docs/benchmarks.md, "Issue 17: compiled discrete gradients"):

- **Newton matrix**: the exact Jacobian of R to first order in h, ``∂R/∂d = 1 + h
  [[−∂ḡ_p/∂Δq, −∂ḡ_p/∂Δp], [∂ḡ_q/∂Δq, ∂ḡ_q/∂Δp]]`` with ``∂ḡ/∂d ≈ W ⊙ ∇²H(z_n)``: W = ½
  for the symmetric discrete gradients (AVF, Gonzalez, symmetrised Itoh–Abe), and for
  Itoh–Abe the weights of its coordinate path (1 for a coordinate moved before, ½ for
  itself, 0 after). ∇²H from the tangent passes of
  :mod:`kanedyn.dynamics.derivatives_kernel` (``B = ∂(Mv)/∂q`` and ``∂g/∂q`` by the
  zero-velocity pass ``rnea_tangent_static``, ``∂²T/∂q²`` by ``kinetic_tangent``):
  ``H_pp = M⁻¹``, ``H_pq = −M⁻¹B``, ``H_qq = −∂²T/∂q² + ∂g/∂q + BᵀM⁻¹B`` (Legendre
  transform, as ``ModelSystem.canonical_jacobians``); with force rows the springs' k join
  H_qq and the slopes C = diag(−∂τ_nc/∂v) ≥ 0 of dampers and friction join the momentum
  rows as ``h C ∂ḡ_p/∂d`` (which keeps Newton contracting on a steep smoothed friction
  law, as the block-triangular matrix with C of the former AVF loop). Newton then
  contracts by O(h² |∇³H| |d|) per iteration (≈ 1e-5–1e-4 on the benchmark chains,
  against 2e-3–4e-2 for the block-triangular ``[[1, −h/2 M⁻¹], [0, 1]]`` it replaces;
  taken at the midpoint of the predicted step). The matrix is LU-factored and kept for at
  most ``refresh`` (:data:`REFRESH`, 50) steps — building it costs about seven AVF
  residuals —, rebuilt at the next step when a step's iteration contracted by less than
  ``slow`` (:data:`SLOW`, 3e-2), at once when by less than 0.1 (rates judged only on
  updates above the roundoff floor).
- **Predictor**: the polynomial extrapolation of the last k ≤ ``degree`` + 1 increments
  (:data:`DEGREE` = 8; 2 for Itoh–Abe, whose differences of H are noisy), k the order
  that predicted the last step best (:func:`.gauss_compiled.best_order`, as the midpoint
  loop): on smooth motion the highest, with an error O((h ω)^k) of the increment, which
  leaves one Newton update a step on the 7-link benchmark chain at dt = 1e-3 (degree 4:
  two); where a smoothed friction law turns within a step a high-degree extrapolation
  misses by 1e-3–1e-1 of the increment, and a low one does better.
- **Stopping**: Newton's error after an update is bounded by θ/(1 − θ) times the update,
  θ the contraction; the first update of a step takes θ carried from the last step that
  measured it (Hairer & Wanner's RADAU5 carries its rate the same way), so a step whose
  predictor was good ends after one residual. AVF only: Gonzalez's and Itoh–Abe's
  residuals hold differences of H, whose round-off makes the carried θ unreliable (with
  it Gonzalez's energy error on the 7-link chain at dt = 5e-3 grew from 2e-14 to 1.1e-12),
  so they measure θ within every step.
- One Cholesky factorization per mass matrix (``cholesky``/``cholesky_solve`` of
  :mod:`.base`), the Newton matrix by ``lu_factor``/``lu_solve`` of
  :mod:`.gauss_compiled`; no allocation inside a step.

A step whose Newton iteration does not settle (after one rebuilt matrix), a kernel that
refuses a state, or a blow-up makes :func:`run` return None: the Python method then takes
the whole run and reports what happens (step, time, residual, method).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..dynamics import _compiled, kernels
from ..dynamics.derivatives_kernel import kinetic_tangent, rnea_tangent_static
from ..dynamics.energy_kernel import (
    energy_pass_into,
    energy_pass_posed,
    energy_workspace,
    poses_from_transforms,
)
from ..dynamics.flat import flatten
from ..dynamics.kernels.aba import aba_core, aba_workspace
from ..dynamics.kernels.crba import crba_core
from ..dynamics.layout import GRAV, MASS, H
from ..forces.kernel import (
    P_K,
    damping_slopes,
    empty_rows,
    has_forces,
    joint_forces,
    spring_gradient_add,
    spring_potential,
)
from .base import cholesky, cholesky_solve
from .gauss_compiled import best_order, extrapolate, lu_factor, lu_solve
from .rk4_compiled import save_sample, state_guard, step_grid, store

_compiled.key_cache(__name__)

#: the discrete gradients of the loop (its ``kind`` argument)
AVF, ITOH_ABE, ITOH_ABE_SYMMETRIC, GONZALEZ = 0, 1, 2, 3
#: the predictor's degree for AVF and Gonzalez (module doc)
DEGREE = 8
#: the Newton matrix is kept at most REFRESH steps, rebuilt at the next step after one whose
#: iteration contracted by less than SLOW (module doc)
REFRESH, SLOW = 50, 3e-2
_EPS = np.finfo(np.float64).eps


# --------------------------------------------------------------------- H and its gradient
@nb.njit(cache=True, nogil=True)
def potential(data, q, ew) -> float:
    """V(q) = −Σ m_i gᵀ c_i (world centres of mass) from the body poses; NaN if the
    kernels refuse q. ew: the energy pass's workspace (its pose arrays are used)."""
    nb_ = data.shape[0] - 1
    R, P, vel = ew[4], ew[5], ew[1]
    if kernels.kinematics_into(data, q, q, False, R, P, vel) != 0:
        return np.nan
    V = 0.0
    for i in range(nb_):
        m = data[i, MASS]
        for a in range(3):
            mc = (m * P[i, a] + R[i, a, 0] * data[i, H] + R[i, a, 1] * data[i, H + 1]
                  + R[i, a, 2] * data[i, H + 2])
            V -= data[nb_, GRAV + a] * mc
    return V


@nb.njit(cache=True, nogil=True)
def mass_workspace(n, nb_):
    """(M, L, then the CRBA kernel's scratch: X_up (nb, 12), composite inertias (nb, 13),
    two force rows, the joint angles with cos and sin (3 nb))."""
    return (np.empty((n, n)), np.zeros((n, n)), np.empty((nb_, 12)), np.empty((nb_, 13)),
            np.empty((2, 6)), np.empty(3 * nb_))


@nb.njit(cache=True, nogil=True)
def factor_mass(data, q, mw) -> bool:
    """mw[0] ← M(q) by the CRBA kernel (:func:`kanedyn.dynamics.kernels.crba.crba_core`,
    in mw's scratch), mw[1] ← its Cholesky factor; False if a kernel refuses q or M is
    not positive definite."""
    M, L = mw[0], mw[1]
    if crba_core(data, q, M, mw[2], mw[3], mw[4], mw[5]) != 0:
        return False
    return cholesky(M, M.shape[0], L)


@nb.njit(cache=True, nogil=True)
def velocity(data, q, p, mw, v) -> bool:
    """v ← M(q)⁻¹ p (mw: the workspace of :func:`factor_mass`, left holding M(q) and its
    Cholesky factor)."""
    if not factor_mass(data, q, mw):
        return False
    cholesky_solve(mw[1], p.shape[0], p, v)
    return True


@nb.njit(cache=True, nogil=True)
def hamiltonian(data, P, forces, q, p, mw, v, ew) -> float:
    """H(q, p) = ½ pᵀM⁻¹p + V(q) (+ the springs' potential of the force rows P when
    ``forces``); NaN if a kernel refuses q."""
    if not velocity(data, q, p, mw, v):
        return np.nan
    T = 0.0
    for i in range(p.shape[0]):
        T += 0.5 * p[i] * v[i]
    H = T + potential(data, q, ew)
    if forces:
        H += spring_potential(P, q)
    return H


@nb.njit(cache=True, nogil=True)
def energy(data, P, forces, q, p, mw, v, ew, dT, dV, out) -> float:
    """H(q, p) = T + V by the energy kernel at v = M⁻¹p (the energy the trajectory
    reports, springs included); NaN if a kernel refuses q."""
    if not velocity(data, q, p, mw, v) or energy_pass_into(data, q, v, dT, dV, out, *ew) != 0:
        return np.nan
    H = out[0] + out[1]
    if forces:
        H += spring_potential(P, q)
    return H


@nb.njit(cache=True, nogil=True)
def gradient(data, P, forces, q, p, mw, v, ew, dT, dV, out, gq) -> bool:
    """gq ← ∂H/∂q|_p = g(q) − ∂T/∂q|_v (+ the springs' k (q − q_rest)), v ← ∂H/∂p = M⁻¹p,
    out[0] + out[1] = H without the springs."""
    if not velocity(data, q, p, mw, v) or energy_pass_into(data, q, v, dT, dV, out, *ew) != 0:
        return False
    for i in range(q.shape[0]):
        gq[i] = dV[i] - dT[i]
    if forces:
        spring_gradient_add(P, q, 1.0, gq)
    return True


# ------------------------------------- the same by the articulated-body algorithm: O(n)
# The functions above (CRBA, a Cholesky factor, then the energy pass) are the readable
# reference: M(q) is formed and factored, O(n²) + O(n³) per value of ∇H. The residuals use
# the forms below instead, in which M⁻¹p comes from one articulated-body pass (O(n)); they
# are tested against the reference (tests/integrators/test_discrete_gradient_compiled.py).
@nb.njit(cache=True, nogil=True)
def aba_velocity_workspace(data, n):
    """(the flat array with gravity set to zero, a zero n-vector, ABA's scratch
    :func:`kanedyn.dynamics.kernels.aba.aba_workspace`) for :func:`velocity_aba`."""
    nb_ = data.shape[0] - 1
    free = data.copy()
    for a in range(3):
        free[nb_, GRAV + a] = 0.0
    return free, np.zeros(n), aba_workspace(nb_, n)


@nb.njit(cache=True, nogil=True)
def velocity_aba(q, p, aw, v) -> bool:
    """v ← M(q)⁻¹ p by one articulated-body pass (Featherstone 2008, Table 7.1): ABA
    solves ``M(q) q̈ = τ − C(q, v) v − g(q)``; with v = 0 and gravity set to zero it is
    ``q̈ = M⁻¹ τ``, here with τ = p. O(n) against the CRBA + Cholesky of
    :func:`velocity`. aw: :func:`aba_velocity_workspace`; its ABA scratch then holds the
    body poses of q (``ws[1][i]`` = (E, r) of body i from the world)."""
    free, zero, ws = aw
    return aba_core(free, q, zero, p, free, False, v, *ws) == 0


@nb.njit(cache=True, nogil=True)
def potential_from_poses(data, X0) -> float:
    """V(q) = −Σ m_i gᵀ c_i from the poses X0[i] = (E, r) (E: world to body, r: the body's
    origin in the world) that ABA leaves: ``m c_world = m r + Eᵀ h`` (h = m c, body
    coordinates), as :func:`potential` from the kinematics pass."""
    nb_ = data.shape[0] - 1
    V = 0.0
    for i in range(nb_):
        m = data[i, MASS]
        for a in range(3):
            mc = (m * X0[i, 9 + a] + X0[i, a] * data[i, H] + X0[i, 3 + a] * data[i, H + 1]
                  + X0[i, 6 + a] * data[i, H + 2])
            V -= data[nb_, GRAV + a] * mc
    return V


@nb.njit(cache=True, nogil=True)
def hamiltonian_aba(data, P, forces, q, p, aw, v) -> float:
    """:func:`hamiltonian` in O(n): ``H = ½ pᵀ v + V(q)`` with v = M⁻¹p by
    :func:`velocity_aba` and V from the poses of the same pass (+ the springs' potential);
    NaN if the kernel refuses q. (T = ½ pᵀM⁻¹p includes the rotors' armature, as in
    :func:`hamiltonian`.)"""
    if not velocity_aba(q, p, aw, v):
        return np.nan
    T = 0.0
    for i in range(p.shape[0]):
        T += 0.5 * p[i] * v[i]
    H = T + potential_from_poses(data, aw[2][1])
    if forces:
        H += spring_potential(P, q)
    return H


@nb.njit(cache=True, nogil=True)
def gradient_aba(data, P, forces, q, p, aw, v, ew, dT, dV, out, gq) -> bool:
    """:func:`gradient` in O(n): v ← M⁻¹p by :func:`velocity_aba`, then the energy pass's
    ``−∂H/∂q|_p = ∂T/∂q|_v − g(q)`` (the Legendre transform: ``∂H/∂q|_p = −∂L/∂q|_v``,
    and ∂T/∂q|_v = −Σ σᵀ crf(V_λ) H_k in one pass, :mod:`kanedyn.dynamics.energy_kernel`),
    on the body poses the articulated-body pass has just computed."""
    if not velocity_aba(q, p, aw, v):
        return False
    poses_from_transforms(aw[2][1], ew[4], ew[5])  # (R, P of energy_workspace)
    energy_pass_posed(data, v, dT, dV, out, *ew)
    for i in range(q.shape[0]):
        gq[i] = dV[i] - dT[i]
    if forces:
        spring_gradient_add(P, q, 1.0, gq)
    return True


# ------------------------------------------------------------------- discrete gradients
@nb.njit(cache=True, nogil=True)
def configuration_part(data, P, forces, q, p, dq, reverse, g, x, aw, v, H_start) -> bool:
    """Itoh–Abe's ∇̄_qH at fixed p, the coordinates moved in the order 1..n (``reverse``:
    n..1): ``g_i = [H(.., q_i + Δq_i, ..) − H(..)]/Δq_i``; below an increment of
    1e-5 (1 + |q_i|) the central difference of H at the increment's midpoint (as
    :meth:`.discrete_gradient.ItohAbe.configuration_part`). Each H by
    :func:`hamiltonian_aba` (O(n); aw its workspace)."""
    n = q.shape[0]
    for i in range(n):
        x[i] = q[i]
    # H(q, p) at the path's start: given (the same for every residual of a step), or NaN
    H_prev = H_start if np.isfinite(H_start) else hamiltonian_aba(data, P, forces, x, p, aw, v)
    for k in range(n):
        i = n - 1 - k if reverse else k
        scale = 1.0 + abs(q[i])
        if abs(dq[i]) > 1e-5 * scale:
            x[i] = q[i] + dq[i]
            H_new = hamiltonian_aba(data, P, forces, x, p, aw, v)
            g[i] = (H_new - H_prev) / dq[i]
        else:
            e = 1e-5 * scale
            x[i] = q[i] + (0.5 * dq[i] + e)
            Hp = hamiltonian_aba(data, P, forces, x, p, aw, v)
            x[i] = q[i] + (0.5 * dq[i] - e)
            g[i] = (Hp - hamiltonian_aba(data, P, forces, x, p, aw, v)) / (2 * e)
            x[i] = q[i] + dq[i]
            H_new = hamiltonian_aba(data, P, forces, x, p, aw, v)
        if not np.isfinite(H_new):
            return False
        H_prev = H_new
    return True


@nb.njit(cache=True, nogil=True)
def configuration_gradient(data, P, forces, kind, q, p, d, H0, g, g1, x, pk, aw, v) -> bool:
    """g ← Itoh–Abe's ∇̄_qH for the increment d = (Δq, Δp): the forward path q_1..q_n at p
    (H0 = H(q, p)), and for ``ITOH_ABE_SYMMETRIC`` its mean with the reverse path
    q_n..q_1 at p + Δp (the second half of the reverse path p_n..p_1, then q_n..q_1). The
    one form of it for :func:`_residual` and :func:`_polish`; g1, x, pk: scratch."""
    n = q.shape[0]
    dq = d[:n]
    if not configuration_part(data, P, forces, q, p, dq, False, g, x, aw, v, H0):
        return False
    if kind == ITOH_ABE_SYMMETRIC:
        for i in range(n):
            pk[i] = p[i] + d[n + i]
        if not configuration_part(data, P, forces, q, pk, dq, True, g1, x, aw, v, np.nan):
            return False
        for i in range(n):
            g[i] = 0.5 * (g[i] + g1[i])
    return True


@nb.njit(cache=True, nogil=True)
def momentum_part(Minv, p, dp, reverse, g):
    """Itoh–Abe's ∇̄_pH with ∂²H/∂p² = M⁻¹ (of the configuration it is taken at): in
    closed form, ``g_i = (M⁻¹ p̃)_i + ½ Δp_i M⁻¹_ii`` with p̃ the momenta moved so far."""
    n = p.shape[0]
    for k in range(n):
        i = n - 1 - k if reverse else k
        s = 0.5 * dp[i] * Minv[i, i]
        for j in range(n):
            moved = (j > i) if reverse else (j < i)
            s += Minv[i, j] * (p[j] + dp[j] if moved else p[j])
        g[i] = s


@nb.njit(cache=True, nogil=True)
def inverse(L, Minv, e, col):
    """Minv ← M⁻¹ from its Cholesky factor L."""
    n = L.shape[0]
    for j in range(n):
        e[:] = 0.0
        e[j] = 1.0
        cholesky_solve(L, n, e, col)
        for i in range(n):
            Minv[i, j] = col[i]


# --------------------------------------------------------------------------- Newton matrix
@nb.njit(cache=True, nogil=True)
def newton_matrix(data, P, forces, kind, q, v, L, h, J, piv, Minv, B, G, D, zero, e,
                  col, slope) -> bool:
    """J ← the LU factors of ``1 + h [[−∂ḡ_p/∂Δq, −∂ḡ_p/∂Δp], [∂ḡ_q/∂Δq, ∂ḡ_q/∂Δp]]``
    with ``∂ḡ/∂d = W ⊙ ∇²H(q, p)`` (module doc); L the Cholesky factor of M(q). With
    force rows: the springs' k in H_qq, and the p-rows' ``+ h C ∂ḡ_p/∂d`` of
    ``−h τ_nc(ḡ_p)``, C = diag(−∂τ_nc/∂v) ≥ 0 (dampers, friction) at v."""
    n = q.shape[0]
    inverse(L, Minv, e, col)
    zero[:] = 0.0
    s = rnea_tangent_static(data, False, q, v, B)     # B = ∂(M v)/∂q
    s |= rnea_tangent_static(data, True, q, zero, G)  # ∂g/∂q
    s |= kinetic_tangent(data, q, v, D)                    # ∂²T/∂q²
    if s != 0:
        return False
    A = -(Minv @ B)             # H_pq = ∂v/∂q|_p
    K = B.T @ (Minv @ B)        # H_qq = −∂²T/∂q² + ∂g/∂q + BᵀM⁻¹B
    for i in range(n):
        for j in range(n):
            K[i, j] += G[i, j] - D[i, j]
    slope[:] = 0.0
    if forces:
        damping_slopes(P, v, slope)
        for i in range(n):
            K[i, i] += P[i, P_K]
    for i in range(n):
        for j in range(n):
            if kind == ITOH_ABE:  # the weights of the path q_1..q_n, then p_1..p_n
                w = 1.0 if j < i else (0.5 if j == i else 0.0)
                wqq, wqp, wpq, wpp = w, 0.0, 1.0, w
            else:
                wqq, wqp, wpq, wpp = 0.5, 0.5, 0.5, 0.5
            d = 1.0 if i == j else 0.0
            J[i, j] = d - h * wpq * A[i, j]                 # ∂R_q/∂Δq
            J[i, n + j] = -h * wpp * Minv[i, j]             # ∂R_q/∂Δp
            J[n + i, j] = h * (wqq * K[i, j] + slope[i] * wpq * A[i, j])  # ∂R_p/∂Δq
            J[n + i, n + j] = d + h * (wqp * A[j, i]                       # ∂R_p/∂Δp
                                       + slope[i] * wpp * Minv[i, j])      # (H_qp = H_pqᵀ)
    return lu_factor(J, piv)


# ------------------------------------------------------------------------------ the loop
@nb.njit(cache=True, nogil=True)
def _dg_loop(data, P, forces, t0, kind, carry_p, q0, v0, dt, n_steps, every, xi, w, mask, tol,
             stagnation, maxiter, refresh, degree, slow, floor, blowup, Q, V, Wk, iters,
             status):
    n = v0.shape[0]
    nb_ = data.shape[0] - 1
    q, v = q0.copy(), v0.copy()
    mw0 = mass_workspace(n, nb_)  # M(q) at the start of the step, its factor
    M0, L0 = mw0[0], mw0[1]
    mw = mass_workspace(n, nb_)  # M and its factor at the points the residual visits
    ew = energy_workspace(nb_)
    aw = aba_velocity_workspace(data, n)  # M⁻¹p by ABA (O(n)) in the residuals
    # the Cholesky factor at the step's end is needed by Itoh–Abe's M⁻¹(q) and by p = M v
    # (Gonzalez's reference without carry_p); otherwise v = M⁻¹p by ABA
    need_M0 = not carry_p or kind == ITOH_ABE or kind == ITOH_ABE_SYMMETRIC
    Minv, Minv0 = np.empty((n, n)), np.empty((n, n))
    B, G, D = np.empty((n, n)), np.empty((n, n)), np.empty((n, n))
    J, piv = np.empty((2 * n, 2 * n)), np.empty(2 * n, dtype=np.int64)
    zero, e, col, x = np.zeros(n), np.empty(n), np.empty(n), np.empty(n)
    qk, pk, vk, dT, dV, out = (np.empty(n), np.empty(n), np.empty(n), np.empty(n),
                               np.empty(n), np.empty(8))
    gq, gp, g1, g2 = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    d, d0, r = np.zeros(2 * n), np.zeros(2 * n), np.empty(2 * n)
    tau_nc, tau, slope = np.zeros(n), np.zeros(n), np.zeros(n)
    work = 0.0
    Wk[0] = 0.0
    # the last increments (a ring, newest at `newest`), the order k ≤ degree + 1 of the
    # extrapolation that predicted the last step best
    hist = np.zeros((degree + 1, 1, 2 * n))
    d0_, work_ = d0.reshape((1, 2 * n)), np.empty((1, 2 * n))
    n_hist, newest, order, last_h, since = 0, 0, 1, 0.0, refresh
    rate_kept = np.inf  # the last contraction measured (carried to the next steps' first update)
    kind_carries = kind == AVF
    p = np.empty(n)
    if not factor_mass(data, q, mw0):
        status[0], status[1] = 3, 0
        return store(q, v, Q, V, 0)
    p[:] = M0 @ v
    k_out = store(q, v, Q, V, 0)
    vmax0 = 0.0
    for i in range(n):
        vmax0 = max(vmax0, abs(v[i]))
    for step in range(n_steps):
        h = dt[step]
        tm = t0 + step * dt[0] + 0.5 * h  # the midpoint time (the grid of step_grid)
        if not carry_p:
            p[:] = M0 @ v  # the Gonzalez reference takes p = M v at every step
        H0 = 0.0
        if kind != AVF:  # Gonzalez's ΔH; Itoh–Abe: H at the start of the forward path
            H0 = hamiltonian_aba(data, P, forces, q, p, aw, vk)
        if kind == ITOH_ABE or kind == ITOH_ABE_SYMMETRIC:  # (and M⁻¹ at q)
            inverse(L0, Minv0, e, col)
        if h != last_h:
            n_hist, since = 0, refresh
        # predictor: the polynomial through the last `order` increments, extrapolated
        # (Σ_j (−1)^{j+1} C(k, j) d_{n−j}); `order` the one that predicted the last step
        # best (high on smooth motion, low where a friction law turns sharply)
        if n_hist == 0:
            for i in range(n):
                d0[i] = h * v[i]
                d0[n + i] = 0.0
        else:
            extrapolate(hist, newest, min(order, n_hist), d0_)
        ok, total = False, 0
        for attempt in range(2):
            # the Newton matrix: kept for `refresh` steps, rebuilt when it contracts badly
            fresh = since >= refresh or attempt == 1
            if attempt == 0 or not np.all(np.isfinite(d)):
                d[:] = d0  # (a rebuilt matrix goes on from the last iterate)
            if fresh:
                # ∇²H at the midpoint of the predicted step: the AVF Jacobian
                # Σ w_k ξ_k ∇²H(z + ξ_k d) differs from ½∇²H(z + d/2) by O(h |d|²)
                for i in range(n):
                    qk[i] = q[i] + 0.5 * d[i]
                    pk[i] = p[i] + 0.5 * d[n + i]
                if not velocity(data, qk, pk, mw, vk) or not newton_matrix(
                        data, P, forces, kind, qk, vk, mw[1], h, J, piv, Minv, B, G, D,
                        zero, e, col, slope):
                    status[0], status[1] = 3, step
                    return k_out
                since = 0
                status[2] += 1
            last, rate = np.inf, 0.0
            for it in range(1, maxiter + 1):
                total += 1
                if not _residual(data, P, forces, tm, kind, q, p, H0, Minv0, d, h, xi, w, mask, r,
                                 gq, gp, g1, g2, qk, pk, vk, dT, dV, out, mw, aw, ew, Minv, x, e,
                                 col, tau_nc, tau):
                    break
                lu_solve(J, piv, r)
                size, scale = 0.0, 0.0
                for i in range(2 * n):
                    d[i] -= r[i]
                    size = max(size, abs(r[i]))
                    scale = max(scale, abs(d[i]))
                if not np.isfinite(size):
                    break
                if it == 1:
                    # the first update: the contraction carried from the last step that
                    # measured it (as Hairer & Wanner's RADAU5 carry theirs) — when it is
                    # small the update is already below tol (AVF only: the differences
                    # of H in Gonzalez's and Itoh–Abe's R make it unreliable, module doc)
                    theta = rate_kept if kind_carries else 1.0
                else:
                    theta = size / last if last > 0 else 1.0
                # the contraction of the matrix, judged only on updates well above the
                # roundoff floor of R (where θ says nothing about the matrix): 1e-12 for
                # the gradients, 1e-9 for Itoh–Abe's differences of H
                measured = it >= 2 and last > max(1e3 * tol, 1e-3 * stagnation) * scale
                if measured:
                    rate = theta
                    rate_kept = theta
                if (size <= tol * scale
                        or (theta < 0.5 and theta / (1 - theta) * size <= tol * scale)
                        or (it >= 2 and size <= stagnation * scale and theta >= 0.5)
                        or (it >= 2 and size <= floor * scale)):
                    # (stagnation: an update at the roundoff floor that no longer shrinks —
                    # which takes two updates to see, as the predictor may start within it;
                    # `floor`: an update this small leaves an error at the noise of R)
                    ok = True
                    break
                if measured and theta > 0.1 and not fresh:
                    break  # the kept matrix hardly contracts: rebuild it now
                last = size
            if ok and rate > slow:
                since = refresh  # it contracts slowly: rebuild it at the next step
            if ok or fresh:
                break  # (a fresh matrix that fails: the Python method reports)
        iters[step] = total
        if not ok:
            status[0], status[1] = 1, step
            return k_out
        since += 1
        if kind == ITOH_ABE or kind == ITOH_ABE_SYMMETRIC:
            if not _polish(data, P, forces, tm, kind, q, p, H0, Minv0, d, h, g1, g2, gp, x, mw,
                           aw, vk, Minv, e, col, qk, pk, tau_nc, tau):
                status[0], status[1] = 3, step
                return k_out
        if forces:
            # W_nc += h v̄ᵀ τ_nc(t + h/2, q̄, v̄) with v̄ = Δq/h (the Python methods')
            for i in range(n):
                qk[i] = q[i] + 0.5 * d[i]
                vk[i] = d[i] / h
            joint_forces(P, tm, qk, vk, tau_nc, tau)
            for i in range(n):
                work += h * vk[i] * tau_nc[i]
        d_ = d.reshape((1, 2 * n))
        order = best_order(hist, newest, n_hist, d_, work_) if n_hist else 1
        newest = (newest + 1) % (degree + 1)
        hist[newest] = d_
        n_hist, last_h = min(n_hist + 1, degree + 1), h
        for i in range(n):
            q[i] += d[i]
            p[i] += d[n + i]
        if need_M0:
            if not factor_mass(data, q, mw0):
                status[0], status[1] = 3, step
                return k_out
            cholesky_solve(L0, n, p, v)
        elif not velocity_aba(q, p, aw, v):
            status[0], status[1] = 3, step
            return k_out
        if state_guard(q, v, vmax0, blowup) != 0:
            status[0], status[1] = 2, step + 1
            return k_out
        kept = save_sample(step, n_steps, every, q, v, Q, V, k_out)
        if kept != k_out:
            Wk[k_out] = work
            k_out = kept
    return k_out


@nb.njit(cache=True, nogil=True)
def _residual(data, P, forces, tm, kind, q, p, H0, Minv0, d, h, xi, w, mask, r, gq, gp, g1, g2,
              qk, pk, vk, dT, dV, out, mw, aw, ew, Minv, x, e, col, tau_nc, tau) -> bool:
    """r ← R(d) = (Δq − h ∇̄_pH, Δp + h ∇̄_qH − h τ_nc(t + h/2, q + Δq/2, ∇̄_pH)) for the
    discrete gradient ``kind`` (τ_nc: the force rows P, when ``forces``)."""
    n = q.shape[0]
    dq, dp = d[:n], d[n:]
    if kind == AVF:
        # ∫₀¹ ∇H(z + ξ d) dξ by Gauss–Legendre (Quispel & McLaren 2008)
        gq[:] = 0.0
        gp[:] = 0.0
        for k in range(xi.shape[0]):
            for i in range(n):
                qk[i] = q[i] + xi[k] * dq[i]
                pk[i] = p[i] + xi[k] * dp[i]
            if not gradient_aba(data, P, forces, qk, pk, aw, vk, ew, dT, dV, out, g1):
                return False
            for i in range(n):
                gq[i] += w[k] * g1[i]
                gp[i] += w[k] * vk[i]
    elif kind == GONZALEZ:
        # ∇H(z̄) + [ΔH − ∇H(z̄)·d]/(m·d) m, m = d without the cyclic Δq_k (Gonzalez 1996)
        for i in range(n):
            qk[i] = q[i] + 0.5 * dq[i]
            pk[i] = p[i] + 0.5 * dp[i]
        if not gradient_aba(data, P, forces, qk, pk, aw, vk, ew, dT, dV, out, gq):
            return False
        gp[:] = vk
        for i in range(n):
            qk[i] = q[i] + dq[i]
            pk[i] = p[i] + dp[i]
        dH = hamiltonian_aba(data, P, forces, qk, pk, aw, vk) - H0
        if not np.isfinite(dH):
            return False
        den, gd, gg = 0.0, 0.0, 0.0
        for i in range(n):
            den += mask[i] * dq[i] * dq[i] + dp[i] * dp[i]
            gd += gq[i] * dq[i] + gp[i] * dp[i]
            gg += gq[i] * gq[i] + gp[i] * gp[i]
        floor = 1e3 * _EPS * (abs(H0) + 1.0) / (np.sqrt(gg) + 1e-300)
        if den > floor * floor:
            c = (dH - gd) / den
            for i in range(n):
                gq[i] += c * mask[i] * dq[i]
                gp[i] += c * dp[i]
    else:
        # Itoh–Abe (Itoh & Abe 1988): q_1..q_n at p, then p_1..p_n at q + Δq; symmetrised:
        # the mean with the reverse path p_n..p_1 at q, then q_n..q_1 at p + Δp
        if not configuration_gradient(data, P, forces, kind, q, p, d, H0, gq, g1, x, pk, aw,
                                      vk):
            return False
        for i in range(n):
            qk[i] = q[i] + dq[i]
        if not factor_mass(data, qk, mw):
            return False
        inverse(mw[1], Minv, e, col)
        momentum_part(Minv, p, dp, False, gp)
        if kind == ITOH_ABE_SYMMETRIC:
            momentum_part(Minv0, p, dp, True, g2)
            for i in range(n):
                gp[i] = 0.5 * (gp[i] + g2[i])
    for i in range(n):
        r[i] = dq[i] - h * gp[i]
        r[n + i] = dp[i] + h * gq[i]
    if forces:
        for i in range(n):
            qk[i] = q[i] + 0.5 * dq[i]
        joint_forces(P, tm, qk, gp, tau_nc, tau)
        for i in range(n):
            r[n + i] -= h * tau_nc[i]
    return True


@nb.njit(cache=True, nogil=True)
def _polish(data, P, forces, tm, kind, q, p, H0, Minv0, d, h, g1, g2, gp, x, mw, aw, v, Minv,
            e, col, qk, pk, tau_nc, tau) -> bool:
    """Δp ← −h ∇̄_qH(Δq, Δp) + h τ_nc(t + h/2, q̄, ∇̄_pH) once more after Newton (as
    ``ItohAbe.polish`` for additive coordinates: with forces, up to four sweeps of that
    fixed point for the forward variant, one for the symmetric): the momentum equation
    then holds to the noise of the energy differences rather than Newton's stopping
    point."""
    n = q.shape[0]
    dq = d[:n]
    dp = d[n:]
    if not configuration_gradient(data, P, forces, kind, q, p, d, H0, g1, g2, x, pk, aw, v):
        return False
    if not forces:
        for i in range(n):
            dp[i] = -h * g1[i]
        return True
    # ∇̄_pH at Δp (M⁻¹ at q + Δq; the symmetric variant's mean with the reverse path at q)
    for i in range(n):
        qk[i] = q[i] + dq[i]
    if not factor_mass(data, qk, mw):
        return False
    inverse(mw[1], Minv, e, col)
    for i in range(n):
        qk[i] = q[i] + 0.5 * dq[i]
    for _ in range(1 if kind == ITOH_ABE_SYMMETRIC else 4):
        momentum_part(Minv, p, dp, False, gp)
        if kind == ITOH_ABE_SYMMETRIC:
            momentum_part(Minv0, p, dp, True, v)
            for i in range(n):
                gp[i] = 0.5 * (gp[i] + v[i])
        joint_forces(P, tm, qk, gp, tau_nc, tau)
        same = True
        for i in range(n):
            g2[i] = -h * g1[i] + h * tau_nc[i]
            same = same and g2[i] == dp[i]
        if same:
            break
        for i in range(n):
            dp[i] = g2[i]
    return True


def run(problem, name: str, kind: int, tol: float, maxiter: int, *, nodes: int = 3,
        stagnation: float = 1e-9, cyclic=(), carry_p: bool = True, refresh: int = REFRESH,
        degree: int = DEGREE, slow: float = SLOW, floor: float = 0.0):
    """The whole run in the compiled loop: a Solution, or None to fall back."""
    from .base import Solution

    s, model = problem.system, problem.system.compiled_step
    P = problem.force_rows if problem.force_rows is not None else empty_rows(s.nv)
    n_steps, steps, times, every, keep = step_grid(problem.dt, problem.t0, problem.t_final,
                                                   problem.save_every)
    Q = np.empty((len(keep), s.nq))
    V = np.empty((len(keep), s.nv))
    W = np.zeros(len(keep))
    iters = np.zeros(n_steps, dtype=np.int32)
    x, wts = np.polynomial.legendre.leggauss(nodes)
    mask = np.ones(s.nv)
    mask[list(cyclic)] = 0.0
    status = np.zeros(3, dtype=np.int64)  # (stop code, at step, Newton matrices built)
    _dg_loop(flatten(model).data, np.ascontiguousarray(P, float), has_forces(P),
             float(problem.t0), kind, carry_p, np.ascontiguousarray(problem.q0, float),
             np.ascontiguousarray(problem.v0, float), steps, n_steps, every, 0.5 * (x + 1.0),
             0.5 * wts, mask, float(tol), float(stagnation), int(maxiter), int(refresh),
             int(degree), float(slow), float(floor), float(problem.blowup), Q, V, W, iters,
             status)
    if status[0]:
        return None  # the Python method takes the whole run, and reports what happens
    return Solution(times[keep], Q, V, W,
                    {"newton_iterations": iters, "newton_matrices": np.array([status[2]])}, name)
