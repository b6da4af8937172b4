"""Störmer–Verlet (generalized leapfrog) as one compiled loop over all steps (numba): on
additive coordinates, and in its variational form on ball, free and planar joints.

The same method as :class:`~kanedyn.integrators.verlet.Verlet` on additive coordinates
(its readable reference, tested step for step against this loop), for a plain Model
whose force elements (if any) all have rows in :mod:`kanedyn.forces.kernel`
(:func:`.rk4_compiled.applicable` with ``forces=True``); with ``x = q − q_n``,
``p = M v`` (Hairer, Lubich & Wanner 2006, eq. VI.3.4):

    p_{n+½} = p_n + h/2 K(t_n, q_n, p_{n+½}),     K = ∂T/∂q|_v − g + τ(t, q, v),  v = M⁻¹p
    x       = h/2 [M(q_n)⁻¹ + M(q_n + x)⁻¹] p_{n+½}
    p_{n+1} = p_{n+½} + h/2 K(t_n + h, q_n + x, p_{n+½})

with τ = τ_nc − k (q − q_rest) of the force rows (:func:`~kanedyn.forces.kernel.joint_forces`;
none without them) and ``W_nc += h/2 (v_{n+½}ᵀτ_nc,a + v_bᵀτ_nc,b)``, the trapezoid of the
two kicks, as the reference. One numba signature: ``forces`` a runtime flag, P always an
array.

Both implicit equations by Newton with closed-form matrices (:func:`_matrix`:
``1 − h/2 (Bᵀ − C)M⁻¹`` for the half kick, C = diag of the force rows' damping slopes,
``1 + h/2 M⁻¹B`` for the position, ``B = ∂(Mv)/∂q``
from the compiled RNEA tangent pass), LU-factored, kept from step to step and evaluated
afresh when a solve contracts slowly or takes more than ``refresh_after`` iterations;
the reference iterates with the identity (a fixed point contracting like h|∂²H/∂q∂p|)
and takes difference Jacobians when that is slow (the 20-link chain). Both stop by the
test of :func:`.base.newton` (:func:`_newton_test`) at the reference's ``tol``. Predictors:
the half kick ``p_{n+½} − p_n`` and the correction ``x − h v_{n+½}`` of the last steps
extrapolated as in :mod:`.gauss_compiled` (the reference starts from p_n and h v_{n+½}).
The Cholesky factor of M(q_n) is kept for the first equation; the M(q_{n+1}) of the last
iterate serves the final kick, v_{n+1} and the next step.

Ball, free and planar joints (:func:`run_chart`, :func:`_variational_loop`; where
:func:`chart_applicable`): the variational step of the reference
(``Verlet._variational_step``, the discrete Euler–Lagrange map of
``L_d(q_0, q_1) = h/2 L(q_0, x/h) + h/2 L(q_1, W(x)/h)``, q_1 = φ_{q_0}(x)):

    μ_n + h/2 (G + τ)(t_n, q_n, x/h) + K(x)ᵀ g_v = 0,   g_v = ½ M_0 x/h + ½ (∂W/∂x)ᵀ M_1 W/h
    μ_{n+1} = J(x)⁻ᵀ g_v + h/2 (G + τ)(t_n + h, q_{n+1}, W/h),   v_{n+1} = M_1⁻¹ μ_{n+1}

(μ = M v, G = ∂T/∂q − g by the energy kernel, τ the force rows' springs and τ_nc with the
springs' coordinates gathered as in the tangent form of :mod:`.gauss_compiled`,
``W_nc += h/2 (x/h · τ_nc,a + W/h · τ_nc,b)``). The chart and what L_d needs of it — φ,
J(x)⁻ᵀ, W = J(x)x, (∂W/∂x)ᵀ y and Kᵀ y, K = ∂x/∂q_0 at fixed q_1 — are the compiled joint
charts of :mod:`kanedyn.constraints.system_kernel` (tested against
:mod:`.chart`). Newton as the reference's :func:`.base.newton`: the matrix −M_0/h, a
forward-difference Jacobian (:func:`_chart_fd_matrix`, the columns of
:func:`.base.fd_jacobian`) when a solve contracts slowly (restart from the predictor when it
diverges), that Jacobian kept for the following steps while h stays (the reference's
``reuse`` dict), the same stopping test and ``maxiter``; the predictor extrapolates
x − h v_n of the last steps (the reference starts from h v_n).

An iteration that fails makes the whole run fall back to the Python method, which
reports what happens; a blow-up or a non-finite state is reported from here.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..constraints import system_kernel as sk
from ..dynamics import _compiled, kernels
from ..dynamics.derivatives_kernel import rnea_tangent_static
from ..dynamics.energy_kernel import energy_pass
from ..dynamics.flat import flatten
from ..forces.kernel import (
    applied_forces,
    damping_slopes,
    empty_rows,
    has_forces,
    joint_forces,
    wrench_forces_add,
)
from .base import cholesky, cholesky_solve, nan_max
from .gauss_compiled import (
    BAD_STATE,
    NEWTON_FAILED,
    PREDICTOR_STEPS,
    STATE_GUARD,
    best_order,
    dof_coordinates,
    extrapolate,
    gather,
    lu_factor,
    lu_solve,
    report_state_guard,
    tangent_applicable,
)
from .rk4_compiled import (
    first_run_problem,
    largest_speed,
    ready_or_python,
    save_sample,
    state_guard,
    step_grid,
    store,
)

_compiled.key_cache(__name__)


#: what :func:`_newton_test` says of an update
GO_ON, CONVERGED, SLOW, DIVERGING, FAILED = 0, 1, 2, 3, 4


@nb.njit(cache=True, _nrt=False, nogil=True)
def _newton_test(size, scale, last, finite, refreshed, tol) -> int:
    """The tests of :func:`.base.newton` after an update of size ``size`` (the previous
    one ``last``, inf at the first), in its order: with a kept matrix (not ``refreshed``
    in this solve) :data:`DIVERGING` (a non-finite update, or a growing one: restart with
    a fresh matrix); :data:`FAILED` (not finite); :data:`CONVERGED` (the update or
    ``θ/(1−θ)|Δ|`` below ``tol · scale``, or an update at roundoff, below 1e-9 · scale, that
    no longer shrinks — from the second update on: a first update that small says only
    that the predictor was good); :data:`SLOW` (θ > 0.25 with a kept matrix: time for a fresh one);
    else :data:`GO_ON`."""
    if not refreshed and (not finite or (last < np.inf and size > last)):
        return DIVERGING
    if not finite:
        return FAILED
    if size <= tol * scale:
        return CONVERGED
    theta = size / last if last < np.inf and last > 0 else 1.0
    if theta < 0.5 and theta / (1 - theta) * size <= tol * scale:
        return CONVERGED
    if last < np.inf and size <= 1e-9 * scale and theta >= 0.5:
        return CONVERGED
    if not refreshed and last < np.inf and size > 0.25 * last:
        return SLOW
    return GO_ON


@nb.njit(cache=True, _nrt=False, nogil=True)
def _newton_update(J, piv, r, dx, y, last, refreshed, tol):
    """``y ← y − J⁻¹r`` (J LU-factored, ``dx`` work); returns (the update's size |Δy|∞, the
    verdict of :func:`_newton_test` on it)."""
    for i in range(r.shape[0]):
        dx[i] = r[i]
    lu_solve(J, piv, dx)
    size, scale = 0.0, 0.0
    for i in range(y.shape[0]):
        y[i] -= dx[i]
        size = nan_max(size, abs(dx[i]))
        scale = max(scale, abs(y[i]))
    return size, _newton_test(size, scale, last, np.isfinite(size), refreshed, tol)


@nb.njit(cache=True, nogil=True)
def predict(hist, newest, order, known, c, u, guess, y, start):
    """``y = start = c u + the extrapolation`` (:func:`.gauss_compiled.extrapolate`, at
    ``order`` ≤ ``known``) of the differences ``y − c u`` kept in ``hist``: a solve's
    predictor (``guess`` (1, n) work)."""
    guess[:, :] = 0.0
    if known > 0:
        extrapolate(hist, newest, min(order, known), guess)
    for i in range(y.shape[0]):
        y[i] = c * u[i] + guess[0, i]
    start[:] = y


@nb.njit(cache=True, nogil=True)
def guard_and_save(step, n_steps, every, q, v, vmax0, blowup, wnc, Q, V, Wk, k_out,
                   status) -> int:
    """The end of a step of both loops: the state guard of ``run_fixed`` (on failure status
    ← [STATE_GUARD, step, code], the state into the spare last rows of Q and V, and −1
    returned), else the sample kept with its W_nc (:func:`.rk4_compiled.save_sample`): the
    next sample's index."""
    g = state_guard(q, v, vmax0, blowup)
    if g != 0:
        status[0], status[1], status[2] = STATE_GUARD, step, g
        Q[Q.shape[0] - 1, :] = q
        V[V.shape[0] - 1, :] = v
        return -1
    kept = save_sample(step, n_steps, every, q, v, Q, V, k_out)
    if kept != k_out:
        Wk[k_out] = wnc
    return kept


@nb.njit(cache=True, nogil=True)
def _matrix(data, q, v, L, h, sign, slope, J, piv) -> bool:
    """LU of ``1 + sign h/2 M⁻¹B`` (sign +1, position equation) or of its transpose with
    sign −1 (half kick: ``1 − h/2 (Bᵀ − C)M⁻¹``), ``B = ∂(M v)/∂q`` at (q, v) by the RNEA
    tangent pass without gravity (so ``∂K/∂p = (Bᵀ − C)M⁻¹`` since ∂(∂T/∂q)/∂v = Bᵀ and
    ∂τ_nc/∂v = −C, C = diag(``slope``) the slopes of the force rows' dampers and friction,
    and ``∂(M⁻¹p)/∂q = −M⁻¹B``); L the Cholesky factor of M(q)."""
    n = v.shape[0]
    B = np.empty((n, n))
    if rnea_tangent_static(data, False, q, v, B) != 0:
        return False
    col, e = np.empty(n), np.zeros(n)
    for k in range(n):  # M⁻¹B column by column
        cholesky_solve(L, L.shape[0], B[:, k].copy(), col)
        for i in range(n):
            if sign > 0:
                J[i, k] = 0.5 * h * col[i]
            else:
                J[k, i] = -0.5 * h * col[i]  # (M⁻¹B)ᵀ = BᵀM⁻¹ (M symmetric)
    if sign < 0:
        for k in range(n):  # + h/2 C M⁻¹, row k: C_k (M⁻¹ e_k)ᵀ (M⁻¹ symmetric)
            if slope[k] != 0.0:
                e[k] = 1.0
                cholesky_solve(L, L.shape[0], e, col)
                e[k] = 0.0
                for i in range(n):
                    J[k, i] += 0.5 * h * slope[k] * col[i]
    for i in range(n):
        J[i, i] += 1.0
    return lu_factor(J, piv)


@nb.njit(cache=True, nogil=True)
def _verlet_loop(data, P, forces, t0, q0, v0, dt, n_steps, every, tol, maxiter, refresh_after,
                 history, blowup, Q, V, Wk, iters, status):
    n = v0.shape[0]
    q, v = q0.copy(), v0.copy()
    M0, L0, M1, L1 = np.empty((n, n)), np.empty((n, n)), np.empty((n, n)), np.empty((n, n))
    p0, ph, va, vb = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    x, xs, r, dx = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    start, dT, dV, out = np.empty(n), np.empty(n), np.empty(n), np.empty(8)
    J1, J2 = np.empty((n, n)), np.empty((n, n))
    tnc, tau, slope = np.zeros(n), np.zeros(n), np.zeros(n)
    wnc = 0.0
    Wk[0] = 0.0
    piv1, piv2 = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    # the predictors: p_{n+½} − p_n and x − h v_{n+½} of the last steps, extrapolated
    kicks, corrs = np.zeros((history, 1, n)), np.zeros((history, 1, n))
    guess, work, now = np.zeros((1, n)), np.zeros((1, n)), np.zeros((1, n))
    known, newest, order1, order2 = 0, -1, 1, 1
    last_h, have1, have2 = 0.0, False, False
    vmax0 = largest_speed(v)
    k_out = store(q, v, Q, V, 0)
    if kernels.crba1(data, q, M1) != 0 or not cholesky(M1, M1.shape[0], L1):
        status[0], status[1] = BAD_STATE, 0
        return k_out
    for step in range(n_steps):
        h = dt[step]
        t = t0 + step * dt[0]  # the step's start (the grid of step_grid and run_fixed)
        if h != last_h:
            known, have1, have2 = 0, False, False
        M0[:, :] = M1  # M(q_n), from the end of the last step
        L0[:, :] = L1
        p0[:] = M0 @ v
        # --- p_{n+½} = p_n + h/2 K(q_n, p_{n+½}) ----------------------------------
        predict(kicks, newest, order1, known, 1.0, p0, guess, ph, start)
        it1, last, test, refreshed = 0, np.inf, GO_ON, False
        while True:
            cholesky_solve(L0, L0.shape[0], ph, va)
            if test == CONVERGED:
                break  # v_{n+½} at the solution (K there is not needed)
            if energy_pass(data, q, va, dT, dV, out) != 0:
                status[0], status[1] = BAD_STATE, step
                return k_out
            if forces:  # K += τ(t, q_n, v_{n+½}): springs, τ_nc and the wrenches
                if applied_forces(data, P, t, q, va, tnc, tau):
                    status[0], status[1] = BAD_STATE, step
                    return k_out
                for i in range(n):
                    dT[i] += tau[i]
            for i in range(n):
                r[i] = ph[i] - p0[i] - 0.5 * h * (dT[i] - dV[i])
            if not have1 or test == SLOW or test == DIVERGING:
                if test == DIVERGING:
                    # restart from the predictor, with a fresh matrix there
                    ph[:] = start
                    last, test = np.inf, SLOW
                    continue
                if forces:
                    damping_slopes(P, va, slope)
                if not _matrix(data, q, va, L0, h, -1.0, slope, J1, piv1):
                    break
                have1, refreshed = True, refreshed or test == SLOW
            it1 += 1
            if it1 > maxiter:
                break
            last, test = _newton_update(J1, piv1, r, dx, ph, last, refreshed, tol)
            if test == FAILED:
                break
        if test != CONVERGED:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        if forces:  # W_nc: the trapezoid of the two kicks, ½ h (v_aᵀτ_a + v_bᵀτ_b)
            applied_forces(data, P, t, q, va, tnc, tau)  # (its status was 0 in the kick)
            for i in range(n):
                wnc += 0.5 * h * va[i] * tnc[i]
        # --- x = h/2 (v_{n+½} + M(q_n + x)⁻¹ p_{n+½}) --------------------------------
        predict(corrs, newest, order2, known, h, va, guess, x, start)
        it2, last, test, refreshed = 0, np.inf, GO_ON, False
        while True:
            for i in range(n):
                xs[i] = q[i] + x[i]
            if kernels.crba1(data, xs, M1) != 0 or not cholesky(M1, M1.shape[0], L1):
                status[0], status[1] = BAD_STATE, step
                return k_out
            cholesky_solve(L1, L1.shape[0], ph, vb)
            if test == CONVERGED:
                break  # M(q_{n+1}) and M(q_{n+1})⁻¹ p_{n+½} at the solution
            for i in range(n):
                r[i] = x[i] - 0.5 * h * (va[i] + vb[i])
            if not have2 or test == SLOW or test == DIVERGING:
                if test == DIVERGING:
                    # restart from the predictor, with a fresh matrix there
                    x[:] = start
                    last, test = np.inf, SLOW
                    continue
                if not _matrix(data, xs, vb, L1, h, 1.0, slope, J2, piv2):
                    break
                have2, refreshed = True, refreshed or test == SLOW
            it2 += 1
            if it2 > maxiter:
                break
            last, test = _newton_update(J2, piv2, r, dx, x, last, refreshed, tol)
            if test == FAILED:
                break
        if test != CONVERGED:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        # the matrices are kept while the solves stay short
        have1 = have1 and it1 <= refresh_after
        have2 = have2 and it2 <= refresh_after
        # --- p_{n+1} = p_{n+½} + h/2 K(q_{n+1}, p_{n+½}); v_{n+1} = M(q_{n+1})⁻¹ p_{n+1} ---
        if energy_pass(data, xs, vb, dT, dV, out) != 0:
            status[0], status[1] = BAD_STATE, step
            return k_out
        if forces:  # the kick at (t + h, q_{n+1}, M(q_{n+1})⁻¹ p_{n+½})
            if applied_forces(data, P, t + h, xs, vb, tnc, tau):
                status[0], status[1] = BAD_STATE, step
                return k_out
            for i in range(n):
                dT[i] += tau[i]
                wnc += 0.5 * h * vb[i] * tnc[i]
        for i in range(n):
            now[0, i] = ph[i] - p0[i]
        order1 = best_order(kicks, newest, known, now, work)
        for i in range(n):
            now[0, i] = x[i] - h * va[i]
        order2 = best_order(corrs, newest, known, now, work)
        newest, known = (newest + 1) % history, min(known + 1, history)
        for i in range(n):
            kicks[newest, 0, i] = ph[i] - p0[i]
            corrs[newest, 0, i] = x[i] - h * va[i]
            r[i] = ph[i] + 0.5 * h * (dT[i] - dV[i])
            q[i] = xs[i]
        cholesky_solve(L1, L1.shape[0], r, v)
        last_h = h
        iters[step] = it1 + it2
        kept = guard_and_save(step, n_steps, every, q, v, vmax0, blowup, wnc, Q, V, Wk, k_out,
                              status)
        if kept < 0:
            return k_out
        k_out = kept
    return k_out


def _whole_run(problem, loop):
    """The outputs of a whole run (the samples of :func:`.rk4_compiled.step_grid`, a spare
    row for a state that failed the guard), filled by ``loop(P, steps, n_steps, every, Q,
    V, W, iters, status)``, which returns False where the loop is not compiled yet
    (:func:`.rk4_compiled.ready_or_python`): a Solution, None to fall back, or the guard's
    DivergenceError."""
    from .base import Solution

    s = problem.system
    P = problem.force_rows if problem.force_rows is not None else empty_rows(s.nv)
    n_steps, steps, times, every, keep = step_grid(problem.dt, problem.t0, problem.t_final,
                                                   problem.save_every)
    Q = np.empty((len(keep) + 1, s.nq))  # the spare row: a state that failed the guard
    V = np.empty((len(keep) + 1, s.nv))
    W = np.zeros(len(keep) + 1)
    iters = np.zeros(n_steps, dtype=np.int32)
    status = np.zeros(3, dtype=np.int64)
    if loop(np.ascontiguousarray(P, float), steps, n_steps, every, Q, V, W, iters,
            status) is False:
        return None  # (on a cold cache: the Python steps, while a process compiles it)
    if status[0] == STATE_GUARD:
        report_state_guard(problem, "verlet", status, Q, V, times)
    if status[0]:
        return None
    return Solution(times[keep], Q[:-1], V[:-1], W[:-1], {"newton_iterations": iters},
                    "verlet")


def run(problem, tol: float, maxiter: int, refresh_after: int = 3):
    """The whole Störmer–Verlet run in the compiled loop: a Solution, or None to fall back."""
    def loop(P, steps, n_steps, every, Q, V, W, iters, status):
        args = (flatten(problem.system.compiled_step).data, P, has_forces(P),
                float(problem.t0), np.ascontiguousarray(problem.q0, float),
                np.ascontiguousarray(problem.v0, float), steps, n_steps, every, float(tol),
                int(maxiter), int(refresh_after), PREDICTOR_STEPS, float(problem.blowup), Q, V,
                W, iters, status)
        if not ready_or_python(_verlet_loop, args, "first_run"):
            return False
        _verlet_loop(*args)
    return _whole_run(problem, loop)


# ------------------------------------------------ the variational form on ball, free, planar
# The chart q_{n+1} = φ_{q_n}(x) and what the discrete Lagrangian needs of it are
# constraints.system_kernel's compiled charts (section "joint charts"): work vectors of one
# row each in U (nv wide).
_W, _Y, _GV, _VX, _DT, _DV, _TNC, _TAU, _RK = range(9)


@nb.njit(cache=True, nogil=True)
def _chart_end(data, q, x, h, M0, q1, Jb, M1, U) -> bool:
    """The end of the step at x: ``q1 = φ_q(x)``, J(x)'s blocks Jb, ``W = J(x) x``,
    ``M1 = M(q1)`` and ``g_v = ½ M0 x/h + ½ (∂W/∂x)ᵀ M1 W/h`` (U rows); False when the
    mass matrix kernel refuses q1."""
    n = x.shape[0]
    W, y, gv = U[_W], U[_Y], U[_GV]
    sk.chart_point(data, q, x, q1)
    sk.chart_blocks(data, x, Jb)
    sk.chart_end_velocity(data, Jb, x, W)
    if kernels.crba1(data, q1, M1) != 0:
        return False
    for i in range(n):
        s = 0.0
        for k in range(n):
            s += M1[i, k] * W[k]
        y[i] = s
    sk.chart_end_velocity_t_times(data, Jb, x, W, y, gv)
    for i in range(n):
        s = 0.0
        for k in range(n):
            s += M0[i, k] * x[k]
        gv[i] = 0.5 * s / h + 0.5 * gv[i] / h
    return True


@nb.njit(cache=True, nogil=True)
def _chart_start(data, P, forces, t, h, q, qd, mu, x, Jb, U, out, r) -> bool:
    """The residual of the discrete Euler–Lagrange equation at x (after
    :func:`_chart_end`): ``r = μ_n + h/2 (G + τ)(t, q_n, x/h) + Kᵀ g_v``, G = ∂T/∂q − g,
    τ the force rows' (springs and τ_nc; ``qd`` the 1-DOF coordinates of q_n); U[_VX] ←
    x/h. False when the energy kernel refuses q_n."""
    n = x.shape[0]
    vx, dT, dV = U[_VX], U[_DT], U[_DV]
    for i in range(n):
        vx[i] = x[i] / h
    if energy_pass(data, q, vx, dT, dV, out) != 0:
        return False
    if forces:
        joint_forces(P, t, qd, vx, U[_TNC], U[_TAU])
        if wrench_forces_add(data, P, q, U[_TNC], U[_TAU]):  # (the wrench rows: at q_n)
            return False
        for i in range(n):
            dT[i] += U[_TAU, i]
    sk.chart_start_sensitivity_t_times(data, Jb, x, U[_GV], r)
    for i in range(n):
        r[i] += mu[i] + 0.5 * h * (dT[i] - dV[i])
    return True


@nb.njit(cache=True, nogil=True)
def _chart_fd_matrix(data, P, forces, t, h, q, qd, mu, M0, x, r, J, piv, xk, q1, Jb, M1, U,
                     out) -> bool:
    """LU of the forward-difference Jacobian of the residual at x (r its value there), the
    columns of :func:`.base.fd_jacobian` (step 1e-7 max(1, |x_k|)); the work of
    :func:`_chart_end` is overwritten."""
    n = x.shape[0]
    rk = U[_RK]
    for k in range(n):
        xk[:] = x
        hk = 1e-7 * max(1.0, abs(x[k]))
        xk[k] += hk
        if not _chart_end(data, q, xk, h, M0, q1, Jb, M1, U):
            return False
        if not _chart_start(data, P, forces, t, h, q, qd, mu, xk, Jb, U, out, rk):
            return False
        for i in range(n):
            J[i, k] = (rk[i] - r[i]) / hk
    return lu_factor(J, piv)


@nb.njit(cache=True, nogil=True)
def _variational_loop(data, P, forces, iqd, t0, q0, v0, dt, n_steps, every, tol, maxiter,
                      history, blowup, Q, V, Wk, iters, status):
    n, nq = v0.shape[0], q0.shape[0]
    q, v, q1, qd = q0.copy(), v0.copy(), np.empty(nq), np.zeros(n)
    M0, M1, L1 = np.empty((n, n)), np.empty((n, n)), np.empty((n, n))
    J, Jfd = np.empty((n, n)), np.empty((n, n))
    piv, pivfd = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    Jb = np.zeros((data.shape[0] - 1, 18))
    U = np.zeros((9, n))
    mu, x, r, dx, start, xk = (np.empty(n), np.empty(n), np.empty(n), np.empty(n),
                               np.empty(n), np.empty(n))
    out = np.empty(8)
    wnc = 0.0
    Wk[0] = 0.0
    # the predictor: x − h v_n of the last steps, extrapolated
    corrs = np.zeros((history, 1, n))
    guess, work, now = np.zeros((1, n)), np.zeros((1, n)), np.zeros((1, n))
    known, newest, order = 0, -1, 1
    last_h, have_fd = 0.0, False
    vmax0 = largest_speed(v)
    k_out = store(q, v, Q, V, 0)
    if kernels.crba1(data, q, M1) != 0 or not cholesky(M1, n, L1):
        status[0], status[1] = BAD_STATE, 0
        return k_out
    for step in range(n_steps):
        h = dt[step]
        t = t0 + step * dt[0]  # the step's start (the grid of step_grid and run_fixed)
        if h != last_h:  # the reference's reuse dict is keyed by h
            known, have_fd = 0, False
        M0[:, :] = M1  # M(q_n), from the end of the last step
        for i in range(n):
            s = 0.0
            for k in range(n):
                s += M0[i, k] * v[k]
            mu[i] = s
        if forces:
            gather(iqd, q, qd)
        if not have_fd:  # the reference's matrix, −M(q_n)/h, until a difference Jacobian
            for i in range(n):
                for k in range(n):
                    J[i, k] = -M0[i, k] / h
            lu_factor(J, piv)
        predict(corrs, newest, order, known, h, v, guess, x, start)
        it, last, test, refreshed, ok = 0, np.inf, GO_ON, False, True
        while True:
            if not _chart_end(data, q, x, h, M0, q1, Jb, M1, U):
                ok = False
                break
            if test == CONVERGED:
                break  # q_{n+1}, J, W, M(q_{n+1}) and g_v at the solution
            if not _chart_start(data, P, forces, t, h, q, qd, mu, x, Jb, U, out, r):
                ok = False
                break
            if test == SLOW or test == DIVERGING:
                if test == DIVERGING:
                    # restart from the predictor, with a difference Jacobian there
                    x[:] = start
                    last, test = np.inf, SLOW
                    continue
                if not _chart_fd_matrix(data, P, forces, t, h, q, qd, mu, M0, x, r, Jfd,
                                        pivfd, xk, q1, Jb, M1, U, out):
                    ok = False
                    break
                have_fd, refreshed = True, True
            it += 1
            if it > maxiter:
                break
            if have_fd:
                last, test = _newton_update(Jfd, pivfd, r, dx, x, last, refreshed, tol)
            else:
                last, test = _newton_update(J, piv, r, dx, x, last, refreshed, tol)
            if test == FAILED:
                break
        if not ok or test != CONVERGED:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        if not cholesky(M1, n, L1):
            status[0], status[1] = BAD_STATE, step
            return k_out
        # μ_{n+1} = J(x)⁻ᵀ g_v + h/2 (G + τ)(t + h, q_{n+1}, W/h); W_nc by the trapezoid
        vb, dT, dV = U[_Y], U[_DT], U[_DV]
        wa = 0.0
        if forces:  # τ_nc at the start, (t, q_n, x/h), for the work
            vx = U[_VX]
            for i in range(n):
                vx[i] = x[i] / h
            joint_forces(P, t, qd, vx, U[_TNC], U[_TAU])
            wrench_forces_add(data, P, q, U[_TNC], U[_TAU])  # (0: as in the residual)
            for i in range(n):
                wa += vx[i] * U[_TNC, i]
        for i in range(n):
            vb[i] = U[_W, i] / h
        if energy_pass(data, q1, vb, dT, dV, out) != 0:
            status[0], status[1] = BAD_STATE, step
            return k_out
        if forces:
            gather(iqd, q1, qd)
            joint_forces(P, t + h, qd, vb, U[_TNC], U[_TAU])
            if wrench_forces_add(data, P, q1, U[_TNC], U[_TAU]):
                status[0], status[1] = BAD_STATE, step
                return k_out
            wb = 0.0
            for i in range(n):
                dT[i] += U[_TAU, i]
                wb += vb[i] * U[_TNC, i]
            wnc += 0.5 * h * (wa + wb)
        sk.chart_jt_solve(data, Jb, U[_GV], r)
        for i in range(n):
            r[i] += 0.5 * h * (dT[i] - dV[i])
            now[0, i] = x[i] - h * v[i]
        order = best_order(corrs, newest, known, now, work)
        newest, known = (newest + 1) % history, min(known + 1, history)
        corrs[newest, 0, :] = now[0]
        cholesky_solve(L1, n, r, v)
        q[:] = q1
        last_h = h
        iters[step] = it
        kept = guard_and_save(step, n_steps, every, q, v, vmax0, blowup, wnc, Q, V, Wk, k_out,
                              status)
        if kept < 0:
            return k_out
        k_out = kept
    return k_out


def chart_applicable(problem) -> bool:
    """:func:`_variational_loop` takes a Model's system (``tree_model``) whose joints are
    revolute, prismatic, helical, ball, free or planar joints, one at least not additive,
    without rotor armature or a progress bar, whose force elements (if any) all have rows
    (the conditions of :func:`.gauss_compiled.tangent_applicable`, planar joints added)."""
    return tangent_applicable(problem, planar=True)


def run_chart(problem, tol: float, maxiter: int):
    """The whole variational Störmer–Verlet run on ball, free and planar joints in the
    compiled loop: a Solution, or None to fall back."""
    model = problem.system.tree_model

    def loop(P, steps, n_steps, every, Q, V, W, iters, status):
        args = (flatten(model).data, P, has_forces(P), dof_coordinates(model),
                float(problem.t0), np.ascontiguousarray(problem.q0, float),
                np.ascontiguousarray(problem.v0, float), steps, n_steps, every, float(tol),
                int(maxiter), PREDICTOR_STEPS, float(problem.blowup), Q, V, W, iters, status)
        if not ready_or_python(_variational_loop, args, "first_run_chart"):
            return False
        _variational_loop(*args)
    return _whole_run(problem, loop)


def first_run() -> None:
    """Three Störmer–Verlet steps of a one-link pendulum, which compile
    :func:`_verlet_loop` for the argument types of every run
    (:func:`kanedyn.dynamics.first_calls.loop_ready`)."""
    from ..model.builders import pendulum_chain

    run(first_run_problem(pendulum_chain(1), [0.3], [0.0]), 1e-12, 20)


def first_run_chart() -> None:
    """Three variational Störmer–Verlet steps of one body on a ball joint, which compile
    :func:`_variational_loop` for the argument types of every run."""
    from ..model.builders import random_tree

    model = random_tree(1, joint_types=("spherical",))
    run_chart(first_run_problem(model, [1.0, 0.0, 0.0, 0.0], [0.1, 0.2, 0.3]), 1e-12, 20)
