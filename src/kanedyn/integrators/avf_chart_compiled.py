"""AVF and Itoh–Abe on ball, free and planar joints (with additive ones mixed in) as
compiled loops (numba).

The same steps as the Python reference, :class:`~.discrete_gradient.AVF` in the local
canonical chart of :mod:`.chart` (``_DiscreteGradient.step`` with ``ChartHamiltonian``),
for a Model's system whose force elements (if any) all have rows in
:mod:`kanedyn.forces.kernel` (:func:`applicable`). Centred on q_n, with
``q = φ_n(x)``, ``p = J(x)ᵀ M v`` (p_0 = M(q_n) v_n at the first step, then the carried
J(x)⁻ᵀ p of the last step, as the reference's ``_carry``), the increment d = (Δx, Δp)
solves

    R(d) = (Δx − h ḡ_p,  Δp + h ḡ_x) = 0,   ḡ = Σ_k w_k ∇H(ξ_k Δx, p_0 + ξ_k Δp)

(Gauss–Legendre nodes ξ_k, weights w_k on [0, 1]), with ``∂H/∂p = ẋ = J⁻¹ v`` and
``∂H/∂x = Jᵀ(∂V/∂q − ∂T/∂q|_v) − D(x, ẋ)ᵀ (M v)`` (``ChartHamiltonian.gradient``), where
``M v = J⁻ᵀ p`` and ``v = M(q)⁻¹ J⁻ᵀ p``. With force rows the springs' ``k (q − q_rest)``
join ∂V/∂q (their 1-DOF coordinates gathered per speed, as in :mod:`.verlet_compiled`),
the momentum rows take ``− h J(x̄)ᵀ τ_nc(t + h/2, φ_n(x̄), J(x̄) ḡ_p)`` at the chart
midpoint x̄ = Δx/2 (``_DiscreteGradient.forcing``: the joints' rows, then the wrench rows
at q̄), and ``W_nc += h (J(x̄) Δx/h)ᵀ τ_nc`` there, so that the budget closes. The chart
and its pieces (φ, J's blocks, J⁻ᵀ y, J⁻¹ y, J y, Jᵀ y, D(x, w)ᵀ y) are the compiled joint
charts of :mod:`kanedyn.constraints.system_kernel` (ball, free and planar joints: a planar
joint's ``(x_n, y_n) + R(θ_n) ρ``, ``θ_n + ψ``, J = diag(R(−ψ), 1)); ∂T/∂q and ∂V/∂q are
the energy kernel's, M the CRBA kernel's with the
Cholesky factor of :mod:`.base` (the reference's ``solve_spd``).

Newton as the reference's :func:`.base.newton` with the ``reuse`` dict: the kinematic
matrix ``[[1, −h/2 M(q_n)⁻¹], [0, 1]]`` until a solve contracts slowly (θ > 0.25) or
diverges, then the forward-difference Jacobian of R (the columns of
:func:`.base.fd_jacobian`), kept for the following steps while h stays; the same stopping
test (:func:`.verlet_compiled._newton_test`: tol relative to |d|∞, θ/(1−θ)|Δ|, a stall
below 1e-9 |d| — AVF's ``stagnation``) and ``maxiter``; the predictor the last step's
increment (the reference's ``_last``), (h v_n, 0) at the first step and when h changes.
The steps agree with the reference's to round-off (numpy's LAPACK solves against the
adjugate 3x3 solves and the LU here; tests/integrators/test_chart_methods.py).

Itoh–Abe (both variants, :func:`run_itoh_abe`, :func:`_itoh_abe_chart_loop`) is the same
loop with the reference's discrete gradient, stopping rule and polish (the section
"Itoh–Abe in the chart" below).

A kernel that refuses a state or a Newton iteration that does not settle makes the whole
run fall back to the Python method, which reports what happens; a blow-up or a non-finite
state is reported from here (the state guard of ``run_fixed``).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..constraints import system_kernel as sk
from ..dynamics import _compiled, kernels
from ..dynamics.energy_kernel import energy_pass
from ..dynamics.flat import flatten
from ..forces.kernel import (
    empty_rows,
    has_forces,
    joint_forces,
    spring_gradient_add,
    spring_potential,
    wrench_forces_add,
)
from .base import cholesky, cholesky_solve, nan_max
from .gauss_compiled import (
    BAD_STATE,
    NEWTON_FAILED,
    STATE_GUARD,
    dof_coordinates,
    gather,
    lu_factor,
    lu_solve,
    report_state_guard,
    tangent_applicable,
)
from .rk4_compiled import first_run_problem, largest_speed, ready_or_python, step_grid, store
from .verlet_compiled import (
    CONVERGED,
    DIVERGING,
    FAILED,
    GO_ON,
    SLOW,
    _newton_update,
    guard_and_save,
)

_compiled.key_cache(__name__)

# work vectors of one row each in U (nv wide): the node's point x and momentum p, J⁻ᵀp
# (= M v), v, ẋ, ∂T/∂q, ∂V/∂q, ∂H/∂x, the sums ḡ_x, ḡ_p; the force rows' 1-DOF
# coordinates, τ_nc and τ, the velocity at the chart midpoint and J(x̄)ᵀτ_nc
_X, _P, _PV, _V, _XD, _DT, _DV, _GX, _SX, _SP, _QD, _TNC, _TAU, _VM, _F = range(15)


@nb.njit(cache=True, nogil=True)
def _chart_state(data, qn, x, p, q, Jb, M, L, pv, v) -> bool:
    """``q ← φ_n(x)``, Jb ← J(x)'s blocks, ``pv ← J(x)⁻ᵀ p`` (= M v), ``M ← M(q)``, L its
    Cholesky factor, ``v ← M⁻¹ pv`` (``ChartHamiltonian._state``); False when a kernel
    refuses q or M is not positive definite (a non-finite x: Newton's diverging iterate)."""
    n = x.shape[0]
    sk.chart_point(data, qn, x, q)
    sk.chart_blocks(data, x, Jb)
    sk.chart_jt_solve(data, Jb, p, pv)
    if kernels.crba1(data, q, M) != 0 or not cholesky(M, n, L):
        return False
    cholesky_solve(L, n, pv, v)
    return True


@nb.njit(cache=True, nogil=True)
def _chart_gradient(data, P, forces, iqd, qn, q, Jb, M, L, U, out) -> bool:
    """U[_GX] ← ∂H/∂x and U[_XD] ← ∂H/∂p = J⁻¹v at (x, p) = (U[_X], U[_P])
    (``ChartHamiltonian.gradient``): ``Jᵀ(∂V/∂q − ∂T/∂q) − D(x, ẋ)ᵀ J⁻ᵀp``, ∂V/∂q with
    the force rows' springs ``k (q − q_rest)`` when ``forces`` (the reference's
    ``dV − tau_cons(q)``)."""
    n = U.shape[1]
    x, pv, v, xd, dT, dV = U[_X], U[_PV], U[_V], U[_XD], U[_DT], U[_DV]
    if not _chart_state(data, qn, x, U[_P], q, Jb, M, L, pv, v):
        return False
    if energy_pass(data, q, v, dT, dV, out) != 0:
        return False
    if forces:
        gather(iqd, q, U[_QD])
        spring_gradient_add(P, U[_QD], 1.0, dV)
    sk.chart_j_solve(data, Jb, v, xd)
    for i in range(n):
        dV[i] -= dT[i]  # ∂V/∂q − ∂T/∂q|_v
    sk.chart_jt_times(data, Jb, dV, U[_GX])
    sk.chart_derivative_t_sub(data, Jb, x, xd, pv, U[_GX])
    return True


@nb.njit(cache=True, nogil=True)
def _forcing(data, P, iqd, t, qn, d, xd, qm, Jm, U) -> float:
    """U[_F] ← ``J(x̄)ᵀ τ_nc(t, φ_n(x̄), J(x̄) ẋ)`` at the chart midpoint x̄ = Δx/2
    (``_DiscreteGradient.forcing``: the force rows' τ_nc, then the wrench rows' at q̄);
    returns its power ``(J(x̄) ẋ)ᵀ τ_nc``, NaN when the kinematics refuse q̄."""
    n = U.shape[1]
    xm, vm, tnc = U[_X], U[_VM], U[_TNC]
    for i in range(n):
        xm[i] = 0.5 * d[i]
    sk.chart_point(data, qn, xm, qm)
    sk.chart_blocks(data, xm, Jm)
    sk.chart_j_times(data, Jm, xd, vm)
    gather(iqd, qm, U[_QD])
    joint_forces(P, t, U[_QD], vm, tnc, U[_TAU])
    if wrench_forces_add(data, P, qm, tnc, U[_TAU]):
        return np.nan
    sk.chart_jt_times(data, Jm, tnc, U[_F])
    power = 0.0
    for i in range(n):
        power += vm[i] * tnc[i]
    return power


@nb.njit(cache=True, nogil=True)
def _rows(data, P, forces, iqd, t, qn, d, h, gx, gp, q, Jb, U, r) -> bool:
    """r ← R(d) = (Δx − h ḡ_p, Δp + h ḡ_x) from a discrete gradient (gx, gp) = (ḡ_x, ḡ_p),
    with force rows ``− h J(x̄)ᵀτ_nc(t + h/2, q̄, J(x̄) ḡ_p)`` in the momentum rows
    (:func:`_forcing`); False when r is not finite or the kinematics refuse q̄."""
    n = gx.shape[0]
    for i in range(n):
        r[i] = d[i] - h * gp[i]
        r[n + i] = d[n + i] + h * gx[i]
    if forces:
        if not np.isfinite(_forcing(data, P, iqd, t + 0.5 * h, qn, d, gp, q, Jb, U)):
            return False
        for i in range(n):
            r[n + i] -= h * U[_F, i]
    return bool(np.isfinite(r).all())


@nb.njit(cache=True, nogil=True)
def _residual(data, P, forces, iqd, t, qn, p0, d, h, xi, w, q, Jb, M, L, U, out, r) -> bool:
    """r ← R(d) of the module doc (``_DiscreteGradient.step``'s residual with
    ``AVF.discrete_gradient``; with force rows ``− h J(x̄)ᵀτ_nc(t + h/2, q̄, J(x̄) ḡ_p)`` in
    the momentum rows)."""
    n = U.shape[1]
    sx, sp = U[_SX], U[_SP]
    sx[:] = 0.0
    sp[:] = 0.0
    for k in range(xi.shape[0]):
        s = xi[k]
        for i in range(n):
            U[_X, i] = s * d[i]
            U[_P, i] = p0[i] + s * d[n + i]
        if not _chart_gradient(data, P, forces, iqd, qn, q, Jb, M, L, U, out):
            return False
        for i in range(n):
            sx[i] += w[k] * U[_GX, i]
            sp[i] += w[k] * U[_XD, i]
    return _rows(data, P, forces, iqd, t, qn, d, h, sx, sp, q, Jb, U, r)


@nb.njit(cache=True, nogil=True)
def _fd_matrix(data, P, forces, iqd, t, qn, p0, d, r, h, xi, w, q, Jb, M, L, U, out, dk, rk, J,
               piv) -> bool:
    """LU of the forward-difference Jacobian of R at d (r = R(d)): the columns of
    :func:`.base.fd_jacobian` (step 1e-7 max(1, |d_k|))."""
    m = d.shape[0]
    for k in range(m):
        dk[:] = d
        hk = 1e-7 * max(1.0, abs(d[k]))
        dk[k] += hk
        if not _residual(data, P, forces, iqd, t, qn, p0, dk, h, xi, w, q, Jb, M, L, U, out,
                         rk):
            return False
        for i in range(m):
            J[i, k] = (rk[i] - r[i]) / hk
    return lu_factor(J, piv)


@nb.njit(cache=True, nogil=True)
def _kinematic_matrix(L0, h, J, piv, e, col) -> bool:
    """LU of the reference's ``[[1, −h/2 M(q_n)⁻¹], [0, 1]]`` (L0: M(q_n)'s Cholesky
    factor; M⁻¹ column by column)."""
    n = L0.shape[0]
    J[:, :] = 0.0
    for i in range(2 * n):
        J[i, i] = 1.0
    for k in range(n):
        e[:] = 0.0
        e[k] = 1.0
        cholesky_solve(L0, n, e, col)
        for i in range(n):
            J[i, n + k] = -0.5 * h * col[i]
    return lu_factor(J, piv)


@nb.njit(cache=True, nogil=True)
def _chart_work(data, nq, n):
    """The work arrays of a chart step (n speeds, nq coordinates): q1 (a point φ_n(x)),
    M, L (M(q) and its Cholesky factor), Jb (J(x)'s blocks), U (the rows of ``_X`` …),
    out (the energy kernel's), pv, e, col."""
    return (np.empty(nq), np.empty((n, n)), np.empty((n, n)),
            np.zeros((data.shape[0] - 1, 18)), np.zeros((15, n)), np.empty(8), np.empty(n),
            np.empty(n), np.empty(n))


@nb.njit(cache=True, nogil=True)
def _newton_work(m):
    """Newton's work arrays for m = 2n unknowns: d (the increment, the predictor between
    steps), r, dx, start, dk, rk, the kinematic matrix's LU Jk, piv and the difference
    Jacobian's Jfd, pivfd."""
    return (np.zeros(m), np.empty(m), np.empty(m), np.empty(m), np.empty(m), np.empty(m),
            np.empty((m, m)), np.empty((m, m)), np.zeros(m, dtype=np.int64),
            np.zeros(m, dtype=np.int64))


@nb.njit(cache=True, nogil=True)
def _start(data, q0, v0, M, Q, V, Wk, status):
    """The start of both loops: q, v ← q_0, v_0, sample 0 stored with W_nc = 0, the blow-up
    bound vmax0 = max|v_0|, L0 ← the Cholesky factor of M(q_0) (M ← M(q_0)) and
    ``p_0 = M(q_0) v_0`` (J(0) = 1; later steps carry J⁻ᵀp). Returns
    (q, v, p0, L0, vmax0, the next sample's index, ok); not ok (status ← BAD_STATE at step 0)
    when the CRBA kernel refuses q_0 or M(q_0) is not positive definite."""
    n = v0.shape[0]
    q, v = q0.copy(), v0.copy()
    p0, L0 = np.empty(n), np.empty((n, n))
    Wk[0] = 0.0
    vmax0 = largest_speed(v)
    k_out = store(q, v, Q, V, 0)
    if kernels.crba1(data, q, M) != 0 or not cholesky(M, n, L0):
        status[0], status[1] = BAD_STATE, 0
        return q, v, p0, L0, vmax0, k_out, False
    for i in range(n):
        s = 0.0
        for k in range(n):
            s += M[i, k] * v[k]
        p0[i] = s
    return q, v, p0, L0, vmax0, k_out, True


@nb.njit(cache=True, nogil=True)
def _step_start(t0, dt, step, last_h, have_fd, v, d, L0, Jk, piv, e, col, status):
    """The step's h = dt[step] and start t = t0 + step dt[0] (the grid of step_grid and
    run_fixed). The reference's reuse dict and predictor are keyed by h: where h changes,
    the kept difference Jacobian is dropped and d ← (h v_n, 0) (else d stays the last
    step's increment, the reference's predictor); without a kept difference Jacobian,
    Jk, piv ← the LU of :func:`_kinematic_matrix` at h. Returns (h, t, have_fd, ok); not ok
    (status ← BAD_STATE) when that matrix is singular."""
    h = dt[step]
    t = t0 + step * dt[0]
    if h != last_h:
        have_fd = False
        n = v.shape[0]
        for i in range(n):
            d[i] = h * v[i]
            d[n + i] = 0.0
    if not have_fd and not _kinematic_matrix(L0, h, Jk, piv, e, col):
        status[0], status[1] = BAD_STATE, step
        return h, t, have_fd, False
    return h, t, have_fd, True


@nb.njit(cache=True, nogil=True)
def _step_end(data, P, forces, iqd, t, h, d, q, v, p0, q1, Jb, M, L0, pv, U, wnc, step, it,
              iters, n_steps, every, vmax0, blowup, Q, V, Wk, k_out, status):
    """The end of a converged step d = (Δx, Δp): ``W_nc += h (J(x̄) ẋ̄)ᵀ τ_nc`` with
    ẋ̄ = Δx/h (the reference's), ``q_{n+1} = φ_n(Δx)``, ``v_{n+1} = M⁻¹ J⁻ᵀ (p_0 + Δp)``
    and the next ``p_0 = J⁻ᵀ p`` (L0 ← M(q_{n+1})'s Cholesky factor), the step's Newton
    count, then the state guard and the sample (:func:`.verlet_compiled.guard_and_save`).
    Returns (W_nc, the next sample's index), the index −1 when the loop stops (status
    ← BAD_STATE where a kernel refuses q_{n+1}, else the guard's)."""
    n = v.shape[0]
    if forces:
        for i in range(n):
            U[_SP, i] = d[i] / h
        wnc += h * _forcing(data, P, iqd, t + 0.5 * h, q, d, U[_SP], q1, Jb, U)
    for i in range(n):
        U[_P, i] = p0[i] + d[n + i]
    if not _chart_state(data, q, d[:n], U[_P], q1, Jb, M, L0, pv, v):
        status[0], status[1] = BAD_STATE, step
        return wnc, -1
    p0[:] = pv
    q[:] = q1
    iters[step] = it
    return wnc, guard_and_save(step, n_steps, every, q, v, vmax0, blowup, wnc, Q, V, Wk,
                               k_out, status)


@nb.njit(cache=True, nogil=True)
def _avf_chart_loop(data, P, forces, iqd, t0, q0, v0, dt, n_steps, every, xi, w, tol, maxiter,
                    blowup, Q, V, Wk, iters, status):
    m = 2 * v0.shape[0]
    q1, M, L, Jb, U, out, pv, e, col = _chart_work(data, q0.shape[0], v0.shape[0])
    d, r, dx, start, dk, rk, Jk, Jfd, piv, pivfd = _newton_work(m)
    q, v, p0, L0, vmax0, k_out, ok = _start(data, q0, v0, M, Q, V, Wk, status)
    if not ok:
        return k_out
    wnc, last_h, have_fd = 0.0, 0.0, False
    for step in range(n_steps):
        h, t, have_fd, ok = _step_start(t0, dt, step, last_h, have_fd, v, d, L0, Jk, piv, e,
                                        col, status)
        if not ok:
            return k_out
        start[:] = d
        it, last, test, refreshed, ok = 0, np.inf, GO_ON, False, True
        while True:
            if test == CONVERGED:
                break
            if not _residual(data, P, forces, iqd, t, q, p0, d, h, xi, w, q1, Jb, M, L, U, out,
                             r):
                if test == GO_ON and it > 0 and not refreshed:
                    test = DIVERGING  # a non-finite residual with the kept matrix: restart
                else:
                    ok = False
                    break
            if test == SLOW or test == DIVERGING:
                if test == DIVERGING:
                    # restart from the predictor, with a difference Jacobian there
                    d[:] = start
                    last, test = np.inf, SLOW
                    continue
                if not _fd_matrix(data, P, forces, iqd, t, q, p0, d, r, h, xi, w, q1, Jb, M, L,
                                  U, out, dk, rk, Jfd, pivfd):
                    ok = False
                    break
                have_fd, refreshed = True, True
            it += 1
            if it > maxiter:
                break
            if have_fd:
                last, test = _newton_update(Jfd, pivfd, r, dx, d, last, refreshed, tol)
            else:
                last, test = _newton_update(Jk, piv, r, dx, d, last, refreshed, tol)
            if test == FAILED:
                break
        if not ok or test != CONVERGED:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        wnc, kept = _step_end(data, P, forces, iqd, t, h, d, q, v, p0, q1, Jb, M, L0, pv, U,
                              wnc, step, it, iters, n_steps, every, vmax0, blowup, Q, V, Wk,
                              k_out, status)
        if kept < 0:
            return k_out
        k_out, last_h = kept, h
    return k_out


def _call(loop, args) -> bool:
    """``loop(*args)``; False when a diverging Newton iterate made a 3x3 block of J(x)
    singular inside the joint charts (numba's float division by zero raises
    ZeroDivisionError): the caller falls back to the Python steps, which report the
    failure (step, time, residual, method)."""
    try:
        loop(*args)
    except ZeroDivisionError:
        return False
    return True


def applicable(problem) -> bool:
    """:func:`_avf_chart_loop` takes a Model's system (``tree_model``) whose joints are
    revolute, prismatic, helical, ball, free or planar joints, one at least not additive,
    without rotor armature or a progress bar, whose force elements (if any) all have rows
    (:func:`.gauss_compiled.tangent_applicable` with ``planar``, as the variational
    Störmer–Verlet loop)."""
    return tangent_applicable(problem, planar=True)


def run(problem, nodes: int, tol: float, maxiter: int):
    """The whole AVF run in the chart in the compiled loop: a Solution, or None to fall
    back (a cold cache: the Python steps, while a process compiles the loop)."""
    x, wts = np.polynomial.legendre.leggauss(nodes)
    return _run(problem, "avf", _avf_chart_loop, "first_run", (),
                (0.5 * (x + 1.0), 0.5 * wts, float(tol), int(maxiter)))


def _run(problem, name: str, loop, job: str, variant: tuple, settings: tuple):
    """``loop`` (a chart loop of this module) over the whole run of ``problem``, with the
    arguments data, P, forces, iqd, ``*variant``, t0, q0, v0, the step grid, ``*settings``,
    blowup and the result arrays: the Solution of method ``name``, or None to fall back (a
    cold cache, where ``job`` compiles the loop; a singular chart block; a failure that the
    Python steps report). A blow-up is reported from here (``run_fixed``'s state guard)."""
    from .base import Solution

    s = problem.system
    model = s.tree_model
    n_steps, steps, times, every, keep = step_grid(problem.dt, problem.t0, problem.t_final,
                                                   problem.save_every)
    Q = np.empty((len(keep) + 1, s.nq))  # the spare row: a state that failed the guard
    V = np.empty((len(keep) + 1, s.nv))
    W = np.zeros(len(keep) + 1)
    iters = np.zeros(n_steps, dtype=np.int32)
    status = np.zeros(3, dtype=np.int64)
    P = problem.force_rows if problem.force_rows is not None else empty_rows(s.nv)
    P = np.ascontiguousarray(P, float)
    args = (flatten(model).data, P, has_forces(P), dof_coordinates(model), *variant,
            float(problem.t0), np.ascontiguousarray(problem.q0, float),
            np.ascontiguousarray(problem.v0, float), steps, n_steps, every, *settings,
            float(problem.blowup), Q, V, W, iters, status)
    if not ready_or_python(loop, args, job):
        return None
    if not _call(loop, args):
        return None
    if status[0] == STATE_GUARD:
        report_state_guard(problem, name, status, Q, V, times)
    if status[0]:
        return None
    return Solution(times[keep], Q[:-1], V[:-1], W[:-1], {"newton_iterations": iters}, name)


def first_run() -> None:
    """Three AVF steps of one body on a ball joint, which compile :func:`_avf_chart_loop`
    for the argument types of every run (:func:`kanedyn.dynamics.first_calls.loop_ready`)."""
    from ..model.builders import random_tree

    model = random_tree(1, joint_types=("spherical",))
    run(first_run_problem(model, [1.0, 0.0, 0.0, 0.0], [0.1, 0.2, 0.3]), 3, 1e-14, 30)


# ------------------------------------------------------------------ Itoh–Abe in the chart
# The same loop for :class:`~.discrete_gradient.ItohAbe` (``_DiscreteGradient.step`` with its
# ``discrete_gradient`` and ``polish``): ∇̄_xH by increments of H one chart coordinate at a
# time (below |Δx_i| = 1e-3 the mean of the analytic ∂H/∂x_i over the increment by 2-point
# Gauss–Legendre), ∇̄_pH in closed form with ∂²H/∂p² = J⁻¹M⁻¹J⁻ᵀ at Δx, the symmetric
# variant the mean with the reverse path; Newton stops at the reference's stagnation 1e-6
# and floor (:data:`.base.ITOH_ABE_FLOOR`); the polish's two sweeps.
_GL2A, _GL2B = 0.5 - np.sqrt(3.0) / 6.0, 0.5 + np.sqrt(3.0) / 6.0


@nb.njit(cache=True, nogil=True)
def _newton_test_floor(size, scale, last, finite, refreshed, tol, stagnation, floor) -> int:
    """:func:`.verlet_compiled._newton_test` with :func:`.base.newton`'s ``stagnation`` and
    ``floor`` (a stall taken as roundoff only below ``floor`` |d| or once refreshed)."""
    if not refreshed and (not finite or (last < np.inf and size > last)):
        return DIVERGING
    if not finite:
        return FAILED
    if size <= tol * scale:
        return CONVERGED
    theta = size / last if last < np.inf and last > 0 else 1.0
    if theta < 0.5 and theta / (1 - theta) * size <= tol * scale:
        return CONVERGED
    if (last < np.inf and size <= stagnation * scale and theta >= 0.5
            and (floor <= 0.0 or refreshed or size <= floor * scale)):
        return CONVERGED
    if not refreshed and last < np.inf and size > 0.25 * last:
        return SLOW
    return GO_ON


@nb.njit(cache=True, nogil=True)
def _energy(data, P, forces, iqd, qn, x, p, q, Jb, M, L, U, out) -> float:
    """H(x, p) = E(φ_n(x), M⁻¹J⁻ᵀp) (``ChartHamiltonian.energy``: T + V of the energy
    kernel, the springs' potential added); NaN if a kernel refuses the point."""
    if not _chart_state(data, qn, x, p, q, Jb, M, L, U[_PV], U[_V]):
        return np.nan
    if energy_pass(data, q, U[_V], U[_DT], U[_DV], out) != 0:
        return np.nan
    H = out[0] + out[1]
    if forces:
        gather(iqd, q, U[_QD])
        H += spring_potential(P, U[_QD])
    return H


@nb.njit(cache=True, nogil=True)
def _configuration_part(data, P, forces, iqd, qn, p, dq, reverse, g, x, q, Jb, M, L, U,
                        out) -> bool:
    """g ← ∇̄_xH (``ItohAbe.configuration_part`` in a Model's chart: the quotients of H
    above |Δx_i| = 1e-3, the 2-point Gauss–Legendre mean of ∂H/∂x_i below)."""
    n = dq.shape[0]
    x[:] = 0.0
    H_prev = _energy(data, P, forces, iqd, qn, x, p, q, Jb, M, L, U, out)
    for k in range(n):
        i = n - 1 - k if reverse else k
        if abs(dq[i]) > 1e-3:
            x[i] = dq[i]
            H_new = _energy(data, P, forces, iqd, qn, x, p, q, Jb, M, L, U, out)
            g[i] = (H_new - H_prev) / dq[i]
        else:
            gi = 0.0
            for s in (_GL2A, _GL2B):
                for j in range(n):
                    U[_X, j] = x[j]
                    U[_P, j] = p[j]
                U[_X, i] = s * dq[i]
                if not _chart_gradient(data, P, forces, iqd, qn, q, Jb, M, L, U, out):
                    return False
                gi += 0.5 * U[_GX, i]
            g[i] = gi
            x[i] = dq[i]
            H_new = _energy(data, P, forces, iqd, qn, x, p, q, Jb, M, L, U, out)
        H_prev = H_new
    return bool(np.isfinite(g).all())


@nb.njit(cache=True, nogil=True)
def _inverse_mass(data, qn, dq, q, Jb, M, L, Minv, e, col, U) -> bool:
    """Minv ← ∂²H/∂p² = J⁻¹M⁻¹J⁻ᵀ at x = Δx (``ChartHamiltonian.inverse_mass``), column by
    column."""
    n = dq.shape[0]
    sk.chart_point(data, qn, dq, q)
    sk.chart_blocks(data, dq, Jb)
    if kernels.crba1(data, q, M) != 0 or not cholesky(M, n, L):
        return False
    for k in range(n):
        e[:] = 0.0
        e[k] = 1.0
        sk.chart_jt_solve(data, Jb, e, U[_PV])
        cholesky_solve(L, n, U[_PV], U[_V])
        sk.chart_j_solve(data, Jb, U[_V], col)
        for i in range(n):
            Minv[i, k] = col[i]
    return True


@nb.njit(cache=True, nogil=True)
def _momentum_part(Minv, p0, dp, reverse, g, p):
    """g ← ∇̄_pH (``ItohAbe.momentum_part``): ``(A p)_i + ½ Δp_i A_ii``, p moved in order."""
    n = dp.shape[0]
    p[:] = p0
    for k in range(n):
        i = n - 1 - k if reverse else k
        s = 0.0
        for j in range(n):
            s += Minv[i, j] * p[j]
        g[i] = s + 0.5 * dp[i] * Minv[i, i]
        p[i] += dp[i]


@nb.njit(cache=True, nogil=True)
def _ia_gradient(data, P, forces, iqd, symmetric, qn, p0, d, gq, gp, W, x, q, Jb, M, L, U,
                 out, Minv, Minv0, e, col) -> bool:
    """(gq, gp) ← ``ItohAbe.discrete_gradient`` at d = (Δx, Δp); W (4, n) work. Minv0:
    ∂²H/∂p² at x = 0 (M(q_n)⁻¹, J(0) = 1)."""
    n = gq.shape[0]
    dq, dp = d[:n], d[n:]
    if not _configuration_part(data, P, forces, iqd, qn, p0, dq, False, gq, x, q, Jb, M, L, U,
                               out):
        return False
    if not _inverse_mass(data, qn, dq, q, Jb, M, L, Minv, e, col, U):
        return False
    _momentum_part(Minv, p0, dp, False, gp, W[0])
    if symmetric:
        for i in range(n):
            W[1, i] = p0[i] + dp[i]
        if not _configuration_part(data, P, forces, iqd, qn, W[1], dq, True, W[2], x, q, Jb,
                                   M, L, U, out):
            return False
        _momentum_part(Minv0, p0, dp, True, W[3], W[0])
        for i in range(n):
            gq[i] = 0.5 * (gq[i] + W[2, i])
            gp[i] = 0.5 * (gp[i] + W[3, i])
    return True


@nb.njit(cache=True, nogil=True)
def _ia_residual(data, P, forces, iqd, symmetric, t, qn, p0, d, h, r, gq, gp, W, x, q, Jb, M,
                 L, U, out, Minv, Minv0, e, col) -> bool:
    """r ← R(d) with Itoh–Abe's discrete gradient (and the force rows' τ_nc at the chart
    midpoint, as :func:`_residual`)."""
    if not _ia_gradient(data, P, forces, iqd, symmetric, qn, p0, d, gq, gp, W, x, q, Jb, M, L,
                        U, out, Minv, Minv0, e, col):
        return False
    return _rows(data, P, forces, iqd, t, qn, d, h, gq, gp, q, Jb, U, r)


@nb.njit(cache=True, nogil=True)
def _ia_polish(data, P, forces, iqd, symmetric, t, qn, p0, d, h, gq, gp, W, x, q, Jb, M, L, U,
               out, Minv, Minv0, e, col, new) -> bool:
    """``ItohAbe.polish`` in a chart: two sweeps of ``Δx = h ∇̄_pH`` (the second) and of the
    momentum equation ``Δp = −h ∇̄_xH + h J(x̄)ᵀτ_nc`` (up to 4 times; once for the symmetric
    variant), d updated in place."""
    n = gq.shape[0]
    dq, dp = d[:n], d[n:]
    for sweep in range(2):
        if sweep:
            if not _ia_gradient(data, P, forces, iqd, symmetric, qn, p0, d, gq, gp, W, x, q,
                                Jb, M, L, U, out, Minv, Minv0, e, col):
                return False
            for i in range(n):
                dq[i] = h * gp[i]
        if not symmetric:
            if not _configuration_part(data, P, forces, iqd, qn, p0, dq, False, gq, x, q, Jb,
                                       M, L, U, out):
                return False
            if not _inverse_mass(data, qn, dq, q, Jb, M, L, Minv, e, col, U):
                return False
        for _ in range(1 if symmetric else 4):
            if symmetric:
                if not _ia_gradient(data, P, forces, iqd, symmetric, qn, p0, d, gq, gp, W, x,
                                    q, Jb, M, L, U, out, Minv, Minv0, e, col):
                    return False
            else:
                _momentum_part(Minv, p0, dp, False, gp, W[0])
            for i in range(n):
                new[i] = -h * gq[i]
            if forces:
                if not np.isfinite(_forcing(data, P, iqd, t + 0.5 * h, qn, d, gp, q, Jb, U)):
                    return False
                for i in range(n):
                    new[i] += h * U[_F, i]
            same = True
            for i in range(n):
                same = same and new[i] == dp[i]
            if same:
                break
            dp[:] = new
    return True


@nb.njit(cache=True, nogil=True)
def _itoh_abe_chart_loop(data, P, forces, iqd, symmetric, t0, q0, v0, dt, n_steps, every, tol,
                         maxiter, stagnation, floor, blowup, Q, V, Wk, iters, status):
    n, m = v0.shape[0], 2 * v0.shape[0]
    q1, M, L, Jb, U, out, pv, e, col = _chart_work(data, q0.shape[0], n)
    d, r, dx, start, dk, rk, Jk, Jfd, piv, pivfd = _newton_work(m)
    Minv, Minv0, W = np.empty((n, n)), np.empty((n, n)), np.zeros((4, n))
    x, gq, gp, new, zero = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.zeros(n)
    q, v, p0, L0, vmax0, k_out, ok = _start(data, q0, v0, M, Q, V, Wk, status)
    if not ok:
        return k_out
    wnc, last_h, have_fd = 0.0, 0.0, False
    for step in range(n_steps):
        h, t, have_fd, ok = _step_start(t0, dt, step, last_h, have_fd, v, d, L0, Jk, piv, e,
                                        col, status)
        if not ok:
            return k_out
        if symmetric and not _inverse_mass(data, q, zero, q1, Jb, M, L, Minv0, e, col, U):
            status[0], status[1] = BAD_STATE, step
            return k_out
        start[:] = d
        it, last, test, refreshed, ok = 0, np.inf, GO_ON, False, True
        while True:
            if test == CONVERGED:
                break
            if not _ia_residual(data, P, forces, iqd, symmetric, t, q, p0, d, h, r, gq, gp, W,
                                x, q1, Jb, M, L, U, out, Minv, Minv0, e, col):
                if it > 0 and not refreshed:
                    test = DIVERGING  # a non-finite residual with the kept matrix: restart
                else:
                    ok = False
                    break
            if test == SLOW or test == DIVERGING:
                if test == DIVERGING:
                    d[:] = start
                    last, test = np.inf, SLOW
                    continue
                for k in range(m):  # the columns of base.fd_jacobian
                    dk[:] = d
                    hk = 1e-7 * max(1.0, abs(d[k]))
                    dk[k] += hk
                    if not _ia_residual(data, P, forces, iqd, symmetric, t, q, p0, dk, h, rk,
                                        gq, gp, W, x, q1, Jb, M, L, U, out, Minv, Minv0, e,
                                        col):
                        ok = False
                        break
                    for i in range(m):
                        Jfd[i, k] = (rk[i] - r[i]) / hk
                if not ok or not lu_factor(Jfd, pivfd):
                    ok = False
                    break
                have_fd, refreshed = True, True
            it += 1
            if it > maxiter:
                break
            for i in range(m):
                dx[i] = r[i]
            if have_fd:
                lu_solve(Jfd, pivfd, dx)
            else:
                lu_solve(Jk, piv, dx)
            size, scale = 0.0, 0.0
            for i in range(m):
                d[i] -= dx[i]
                size = nan_max(size, abs(dx[i]))
                scale = max(scale, abs(d[i]))
            test = _newton_test_floor(size, scale, last, np.isfinite(size), refreshed, tol,
                                      stagnation, floor)
            last = size
            if test == FAILED:
                break
        if not ok or test != CONVERGED:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        if not _ia_polish(data, P, forces, iqd, symmetric, t, q, p0, d, h, gq, gp, W, x, q1,
                          Jb, M, L, U, out, Minv, Minv0, e, col, new):
            status[0], status[1] = BAD_STATE, step
            return k_out
        wnc, kept = _step_end(data, P, forces, iqd, t, h, d, q, v, p0, q1, Jb, M, L0, pv, U,
                              wnc, step, it, iters, n_steps, every, vmax0, blowup, Q, V, Wk,
                              k_out, status)
        if kept < 0:
            return k_out
        k_out, last_h = kept, h
    return k_out


def run_itoh_abe(problem, symmetric: bool, tol: float, maxiter: int, stagnation: float,
                 floor: float):
    """The whole Itoh–Abe run in the chart in the compiled loop: a Solution, or None to fall
    back."""
    return _run(problem, "itoh_abe", _itoh_abe_chart_loop, "first_run_itoh_abe",
                (bool(symmetric),), (float(tol), int(maxiter), float(stagnation), float(floor)))


def first_run_itoh_abe() -> None:
    """Three Itoh–Abe steps of one body on a ball joint, which compile
    :func:`_itoh_abe_chart_loop` for the argument types of every run."""
    from ..model.builders import random_tree

    model = random_tree(1, joint_types=("spherical",))
    run_itoh_abe(first_run_problem(model, [1.0, 0.0, 0.0, 0.0], [0.1, 0.2, 0.3]), False,
                 1e-15, 30, 1e-6, 1e-10)
