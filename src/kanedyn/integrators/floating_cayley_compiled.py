"""The ``"floating"`` variant of energy_momentum compiled: a free base with 1-DOF joints
below it, no gravity, the whole run in one numba call.

The readable reference is ``EnergyMomentum._floating_step`` (:mod:`.energy_momentum`,
module doc "floating"); this is the same step, tested against it step for step. In
y = (μ, θ, p_θ) — μ the first six rows of z = M v (the momentum conjugate to the base's
body twist), θ the joint angles, p_θ the rest of z —, with H(θ, z) = ½ zᵀM(θ)⁻¹z + V(θ)
and Gonzalez's discrete gradient ∇̄H = (ν̄, ∇̄_θH, ∇̄_pH) over Δy (correction along Δy):

    Δμ = h ad*_ν̄ μ̄ + h τ_base,   Δθ = h ∇̄_pH,   Δp = −h ∇̄_θH + h τ_θ(t + h/2, θ̄, v̄),

solved by simplified Newton with the reference's matrix (1 but for −h/2 M⁻¹ in the θ rows)
and its stopping rule (:func:`.base.newton`: a forward-difference matrix when the
iteration contracts slowly); then the base moves by the SE(3) element f with
Ad_f = cay(h ad_ν̄) and μ' = Ad_fᵀ μ (no forces) keeps the world momentum exactly.
M⁻¹z by one articulated-body pass, ∂T/∂θ by the energy pass on its poses
(:func:`.discrete_gradient_compiled.gradient_aba`). Force rows act on the joints below
the base (the springs in V, dampers, smoothed friction, constant and periodic torques);
rows on the base's own speeds take the Python steps; the wrench rows act on every speed, the
base's included (Jᵀf with the base where the step starts, as the reference).

Two departures from the reference's arithmetic, for its round-off only: z = M v is carried
from step to step (the reference forms M v anew), and H, ∇H and M⁻¹z are evaluated with
the base at the world origin (they do not depend on its pose). Each keeps the step's H the
same function from step to step; with the reference's choices the compiled loop's energy
drifted 2e-11 over 10 s on bench/dg_newton.py's floating arm, with these 5e-14.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..dynamics import _compiled
from ..dynamics.energy_kernel import energy_workspace
from ..forces.kernel import (
    joint_forces,
    spring_gradient_add,
    spring_potential,
    wrench_forces_add,
)
from .discrete_gradient_compiled import (
    aba_velocity_workspace,
    factor_mass,
    gradient_aba,
    hamiltonian_aba,
    inverse,
    mass_workspace,
    velocity_aba,
)
from .lie_cayley_compiled import cayley_attitude, quaternion_rotation
from .rk4_compiled import save_sample, state_guard, step_grid, store

_compiled.key_cache(__name__)  # (see dynamics/_compiled.py)

#: status codes of :func:`floating_run` (``status[0]``)
OK, NEWTON_FAILED, STATE_GUARD, BAD_STATE = 0, 1, 2, 3
#: Newton's tolerance and stagnation bound of every run (:func:`run`, simulate_batch's)
TOL, STAGNATION = 1e-15, 1e-9
_EPS = np.finfo(np.float64).eps


@nb.njit(cache=True, nogil=True)
def _energy(data, P, forces, qq, z, aw, v) -> float:
    """H(θ, z) at qq = (base, θ): ½ zᵀv with v = M⁻¹z by ABA (+ the springs on θ); NaN if
    refused. (As ½ zᵀv its round-off is that of the energy kernel's Σ ½ V_iᵀI_iV_i at
    the same v, 2.7e-15 against 2.4e-14 on bench/dg_newton.py's floating arm: Gonzalez's
    correction divides it by |Δy|².)"""
    H = hamiltonian_aba(data, P, False, qq, z, aw, v)
    if forces:
        H += spring_potential(P[6:], qq[7:])
    return H


@nb.njit(cache=True, nogil=True)
def _discrete_gradient(data, P, forces, base, th0, z0, H0, d, n, qq, zb, aw, v, ew, dT, dV,
                       out, gq, g) -> bool:
    """g ← Gonzalez's (ν̄, ∇̄_θH, ∇̄_pH) over d = (Δμ, Δθ, Δp) (the reference's ``dg``)."""
    for a in range(7):
        qq[a] = base[a]
    for i in range(n):
        qq[7 + i] = th0[i] + 0.5 * d[6 + i]
    for a in range(6):
        zb[a] = z0[a] + 0.5 * d[a]
    for i in range(n):
        zb[6 + i] = z0[6 + i] + 0.5 * d[6 + n + i]
    if not gradient_aba(data, P, False, qq, zb, aw, v, ew, dT, dV, out, gq):
        return False
    if forces:  # the springs' k (θ − θ_rest) in ∇_θH
        spring_gradient_add(P[6:], qq[7:], 1.0, gq[6:])
    for a in range(6):
        g[a] = v[a]
    for i in range(n):
        g[6 + i] = gq[6 + i]
        g[6 + n + i] = v[6 + i]
    for i in range(n):
        qq[7 + i] = th0[i] + d[6 + i]
    for a in range(6):
        zb[a] = z0[a] + d[a]
    for i in range(n):
        zb[6 + i] = z0[6 + i] + d[6 + n + i]
    dH = _energy(data, P, forces, qq, zb, aw, v) - H0
    if not np.isfinite(dH):
        return False
    den, gd, gg = 0.0, 0.0, 0.0
    for k in range(d.shape[0]):
        den += d[k] * d[k]
        gd += g[k] * d[k]
        gg += g[k] * g[k]
    floor = 1e3 * _EPS * (abs(H0) + 1.0) / (np.sqrt(gg) + 1e-300)
    if den > floor * floor:
        c = (dH - gd) / den
        for k in range(d.shape[0]):
            g[k] += c * d[k]
    return True


@nb.njit(cache=True, nogil=True)
def _forcing(data, P, tm, pose, th0, d, g, n, thb, vb, tnc, tau, fw) -> float:
    """τ_θ at (t + h/2, θ̄, v̄_θ) into tnc (the rows of the joints below the base) and the
    base's τ into fw[1][:6]: the wrench rows' Jᵀf at (the base at ``pose``, the step's
    start as the reference takes it, θ̄), their θ part added to tnc. Returns the power
    v̄ᵀτ (ν̄ the base's share of v̄) — NaN where the kinematics refuse the state."""
    qw, tw, ts = fw
    for i in range(n):
        thb[i] = th0[i] + 0.5 * d[6 + i]
        vb[i] = g[6 + n + i]
    joint_forces(P[6:], tm, thb, vb, tnc, tau)
    tw[:] = 0.0
    if P.shape[0] > tw.shape[0]:  # (rows after the nv of the speeds: wrenches)
        for a in range(7):
            qw[a] = pose[a]
        for i in range(n):
            qw[7 + i] = thb[i]
        if wrench_forces_add(data, P, qw, tw, ts):
            return np.nan
        for i in range(n):
            tnc[i] += tw[6 + i]
    power = 0.0
    for a in range(6):
        power += g[a] * tw[a]
    for i in range(n):
        power += vb[i] * tnc[i]
    return power


@nb.njit(cache=True, nogil=True)
def _residual(data, P, forces, tm, h, base, pose, th0, z0, H0, d, n, qq, zb, aw, v, ew, dT,
              dV, out, gq, g, thb, vb, tnc, tau, fw, r) -> bool:
    """r ← the step's residual at d (the reference's ``residual``)."""
    if not _discrete_gradient(data, P, forces, base, th0, z0, H0, d, n, qq, zb, aw, v, ew,
                              dT, dV, out, gq, g):
        return False
    # Δμ − h ad*_ν̄ μ̄, ad*_ν μ = crm(ν)ᵀ μ: (ω×)ᵀ m + (u×)ᵀ f, (ω×)ᵀ f for μ = (m, f)
    w0, w1, w2, u0, u1, u2 = g[0], g[1], g[2], g[3], g[4], g[5]
    m0, m1, m2 = z0[0] + 0.5 * d[0], z0[1] + 0.5 * d[1], z0[2] + 0.5 * d[2]
    f0, f1, f2 = z0[3] + 0.5 * d[3], z0[4] + 0.5 * d[4], z0[5] + 0.5 * d[5]
    a0 = -(w1 * m2 - w2 * m1) - (u1 * f2 - u2 * f1)
    a1 = -(w2 * m0 - w0 * m2) - (u2 * f0 - u0 * f2)
    a2 = -(w0 * m1 - w1 * m0) - (u0 * f1 - u1 * f0)
    a3 = -(w1 * f2 - w2 * f1)
    a4 = -(w2 * f0 - w0 * f2)
    a5 = -(w0 * f1 - w1 * f0)
    r[0], r[1], r[2] = d[0] - h * a0, d[1] - h * a1, d[2] - h * a2
    r[3], r[4], r[5] = d[3] - h * a3, d[4] - h * a4, d[5] - h * a5
    for i in range(n):
        r[6 + i] = d[6 + i] - h * g[6 + n + i]
        r[6 + n + i] = d[6 + n + i] + h * g[6 + i]
    if forces:
        if np.isnan(_forcing(data, P, tm, pose, th0, d, g, n, thb, vb, tnc, tau, fw)):
            return False
        for a in range(6):
            r[a] -= h * fw[1][a]
        for i in range(n):
            r[6 + n + i] -= h * tnc[i]
    return True


@nb.njit(cache=True, nogil=True)
def floating_run(data, P, forces, nc, t0, q0, v0, dt, n_steps, every, tol, stagnation,
                 maxiter, blowup, Q, V, W, iters, status):
    """The run from (q0, v0) (q = (base position, quaternion w x y z, θ), v = (base twist in
    body coordinates, θ̇)); the kept samples in Q, V, W (W_nc), row 0 the start; returns
    how many were written. ``status`` = (code, step): NEWTON_FAILED and BAD_STATE (a
    kernel refused a state) at the index of the step, STATE_GUARD (a non-finite state or a
    speed beyond ``blowup`` (1 + max|v0|)) at the step counted from 1. ``forces``: the rows
    P act (springs included); ``nc``: some of them are not conservative (then μ' = μ + Δμ,
    as the reference)."""
    nv = v0.shape[0]
    n = nv - 6
    N = 6 + 2 * n
    nb_ = data.shape[0] - 1
    q, v = q0.copy(), v0.copy()
    mw = mass_workspace(nv, nb_)
    aw = aba_velocity_workspace(data, nv)
    ew = energy_workspace(nb_)
    Minv = np.empty((nv, nv))
    z0, zb, vv, dT, dV, gq = (np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv),
                              np.empty(nv), np.empty(nv))
    out = np.empty(8)
    qq, base, th0 = np.empty(q.shape[0]), np.empty(7), np.empty(n)
    thb, vb, tnc, tau = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    pose = np.empty(7)  # the base at the step's start (the wrench rows' kinematics)
    fw = (np.empty(q.shape[0]), np.zeros(nv), np.zeros(nv))
    g, d, d0, r, r0, rk, xs, dk = (np.empty(N), np.empty(N), np.zeros(N), np.empty(N),
                                   np.empty(N), np.empty(N), np.empty(N), np.empty(N))
    Jm, Jk = np.empty((N, N)), np.empty((N, N))
    C, A, Cp, R = np.empty((6, 6)), np.empty((6, 6)), np.empty((6, 6)), np.empty((3, 3))
    last_h = 0.0
    have_fd = False  # Jk holds a difference matrix of this h (base.newton's ``reuse``)
    work = 0.0
    W[0] = 0.0
    k_out = store(q, v, Q, V, 0)
    vmax0 = 0.0
    for i in range(nv):
        vmax0 = max(vmax0, abs(v[i]))
    for step in range(n_steps):
        h = dt[step]
        tm = t0 + step * dt[0] + 0.5 * h
        if not factor_mass(data, q, mw):
            status[0], status[1] = BAD_STATE, step
            return k_out
        if step == 0:
            z0[:] = mw[0] @ v
        else:
            # z carried from the last step, not M v again: v = M⁻¹z came from ABA, and M v
            # by the CRBA leaves z by ~cond(M) ε, a state whose energy is not the one the
            # step kept (the reference's round trip through one Cholesky factor is closer)
            z0[:] = zb
        # H, its gradient and v = M⁻¹z are taken with the base at the world origin: without
        # gravity they do not depend on its pose, and at the pose it has each step their
        # round-off would (≈ 1e-14 of H a step, a random walk of the kept energy)
        for a in range(7):
            base[a] = 1.0 if a == 3 else 0.0
            pose[a] = q[a]
        for i in range(n):
            th0[i] = q[7 + i]
        for a in range(7):
            qq[a] = base[a]
        for i in range(n):
            qq[7 + i] = th0[i]
        H0 = _energy(data, P, forces, qq, z0, aw, vv)
        inverse(mw[1], Minv)
        for i in range(N):
            for j in range(N):
                Jm[i, j] = 1.0 if i == j else 0.0
        for i in range(n):
            for j in range(6):
                Jm[6 + i, j] = -0.5 * h * Minv[6 + i, j]
            for j in range(n):
                Jm[6 + i, 6 + n + j] = -0.5 * h * Minv[6 + i, 6 + j]
        # the predictor: the last step's increments (the reference's)
        if h != last_h:
            have_fd = False
            for k in range(N):
                d0[k] = 0.0
            for i in range(n):
                d0[6 + i] = h * v[6 + i]
        for k in range(N):
            d[k] = d0[k]
        # simplified Newton as base.newton: a forward-difference matrix when it diverges
        # (from the start) or contracts slowly (from where it is)
        ok = _residual(data, P, forces, tm, h, base, pose, th0, z0, H0, d, n, qq, zb, aw, vv,
                       ew, dT, dV, out, gq, g, thb, vb, tnc, tau, fw, r)
        if not ok:
            status[0], status[1] = BAD_STATE, step
            return k_out
        xs[:] = d
        r0[:] = r
        if not have_fd:  # (a difference matrix built at an earlier step of this h is kept)
            Jk[:] = Jm
        refreshed = False
        last = np.inf
        it, done = 0, False
        while it < maxiter:
            it += 1
            dk[:] = np.linalg.solve(Jk, r)
            for k in range(N):
                d[k] -= dk[k]
            finite = _residual(data, P, forces, tm, h, base, pose, th0, z0, H0, d, n, qq, zb,
                               aw, vv, ew, dT, dV, out, gq, g, thb, vb, tnc, tau, fw, r)
            size = 0.0
            for k in range(N):
                size = max(size, abs(dk[k]))
                finite = finite and np.isfinite(r[k])
            if not refreshed and (not finite or (it >= 2 and size > last)):
                d[:] = xs
                r[:] = r0
                if not _fd_matrix(data, P, forces, tm, h, base, pose, th0, z0, H0, d, r, n, qq,
                                  zb, aw, vv, ew, dT, dV, out, gq, g, thb, vb, tnc, tau, fw,
                                  rk, Jk):
                    break
                refreshed, last, have_fd = True, np.inf, True
                continue
            if not finite:
                break
            scale = 0.0
            for k in range(N):
                scale = max(scale, abs(d[k]))
            if size <= tol * scale:
                done = True
                break
            theta = size / last if np.isfinite(last) and last > 0 else 1.0
            if theta < 0.5 and theta / (1 - theta) * size <= tol * scale:
                done = True
                break
            if size <= stagnation * scale and theta >= 0.5:
                done = True
                break
            if it >= 2 and size > 0.25 * last and not refreshed:
                if not _fd_matrix(data, P, forces, tm, h, base, pose, th0, z0, H0, d, r, n, qq,
                                  zb, aw, vv, ew, dT, dV, out, gq, g, thb, vb, tnc, tau, fw,
                                  rk, Jk):
                    break
                refreshed, have_fd = True, True
            last = size
        iters[step] = it
        if not done:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        d0[:] = d
        last_h = h
        if not _discrete_gradient(data, P, forces, base, th0, z0, H0, d, n, qq, zb, aw, vv,
                                  ew, dT, dV, out, gq, g):
            status[0], status[1] = BAD_STATE, step
            return k_out
        # the base: Ad_f = C = cay(h ad_ν̄) = (1 − A/2)⁻¹(1 + A/2), A = h crm(ν̄)
        for i in range(6):
            for j in range(6):
                A[i, j] = 0.0
        _crm(g, h, A)
        for i in range(6):
            for j in range(6):
                C[i, j] = (1.0 if i == j else 0.0) - 0.5 * A[i, j]
                Cp[i, j] = (1.0 if i == j else 0.0) + 0.5 * A[i, j]
        Cs = np.linalg.solve(C, Cp)
        # p_f× = B = C[3:, :3] Rcᵀ (the new base frame's position in the old)
        pf0 = pf1 = pf2 = 0.0
        for k in range(3):
            pf0 += Cs[5, k] * Cs[1, k]   # B[2, 1]
            pf1 += Cs[3, k] * Cs[2, k]   # B[0, 2]
            pf2 += Cs[4, k] * Cs[0, k]   # B[1, 0]
        quaternion_rotation(q[3], q[4], q[5], q[6], R)  # the old attitude moves p_f
        for a in range(3):
            q[a] += R[a, 0] * pf0 + R[a, 1] * pf1 + R[a, 2] * pf2
        cayley_attitude(q, h, g[0], g[1], g[2])
        for i in range(n):
            q[7 + i] = th0[i] + d[6 + i]
        if nc:
            for a in range(6):
                zb[a] = z0[a] + d[a]
            work += h * _forcing(data, P, tm, pose, th0, d, g, n, thb, vb, tnc, tau, fw)
        else:
            for a in range(6):  # μ' = Ad_fᵀ μ: the world momentum kept exactly
                s = 0.0
                for b in range(6):
                    s += Cs[b, a] * z0[b]
                zb[a] = s
        for i in range(n):
            zb[6 + i] = z0[6 + i] + d[6 + n + i]
        for i in range(n):
            qq[7 + i] = q[7 + i]
        if not velocity_aba(qq, zb, aw, v):
            status[0], status[1] = BAD_STATE, step  # (the index of the step, as above)
            return k_out
        if state_guard(q, v, vmax0, blowup) != 0:
            status[0], status[1] = STATE_GUARD, step + 1
            return k_out
        kept = save_sample(step, n_steps, every, q, v, Q, V, k_out)
        if kept != k_out:
            W[k_out] = work
            k_out = kept
    return k_out


@nb.njit(cache=True, nogil=True)
def _crm(nu, h, A):
    """A ← h crm(ν) = h [[ω×, 0], [u×, ω×]] for ν = (ω, u)."""
    w0, w1, w2, u0, u1, u2 = h * nu[0], h * nu[1], h * nu[2], h * nu[3], h * nu[4], h * nu[5]
    for b in range(2):
        o = 3 * b
        A[o + 0, o + 1], A[o + 0, o + 2] = -w2, w1
        A[o + 1, o + 0], A[o + 1, o + 2] = w2, -w0
        A[o + 2, o + 0], A[o + 2, o + 1] = -w1, w0
    A[3, 1], A[3, 2] = -u2, u1
    A[4, 0], A[4, 2] = u2, -u0
    A[5, 0], A[5, 1] = -u1, u0


@nb.njit(cache=True, nogil=True)
def _fd_matrix(data, P, forces, tm, h, base, pose, th0, z0, H0, d, r, n, qq, zb, aw, v, ew,
               dT, dV, out, gq, g, thb, vb, tnc, tau, fw, rk, Jk) -> bool:
    """Jk ← the forward-difference Jacobian of the residual at d (r its value there), as
    :func:`.base.fd_jacobian`."""
    N = d.shape[0]
    for k in range(N):
        step = 1e-7 * max(1.0, abs(d[k]))
        keep = d[k]
        d[k] = keep + step
        ok = _residual(data, P, forces, tm, h, base, pose, th0, z0, H0, d, n, qq, zb, aw, v,
                       ew, dT, dV, out, gq, g, thb, vb, tnc, tau, fw, rk)
        d[k] = keep
        if not ok:
            return False
        for i in range(N):
            Jk[i, k] = (rk[i] - r[i]) / step
    return True


def applicable(method) -> bool:
    """Whether :func:`floating_run` takes ``method``'s run: the floating variant (which
    checked the model), a Model's compiled form, force elements all with rows and none on
    the base's speeds, no progress bar."""
    problem = method.problem
    if problem.progress is not None or _model(problem.system) is None:
        return False
    if problem.tau_nc is not None or problem.tau_cons is not None:
        P = problem.force_rows
        if P is None or np.any(P[:6] != _inactive_rows(P.shape[1])):
            return False
    return True


def _model(system):
    return getattr(system, "compiled_step", None) or getattr(system, "tree_model", None)


def _inactive_rows(width: int) -> np.ndarray:
    from .discrete_gradient_compiled import empty_rows

    return empty_rows(6)[:, :width]


def run(method, problem):
    """The whole run of ``method`` (an EnergyMomentum of the ``"floating"`` variant), or
    None when it does not apply or stops (Newton, a non-finite state, a blow-up): the
    Python steps then take the run and report what happens."""
    from ..dynamics.flat import flatten
    from .base import Solution
    from .discrete_gradient_compiled import empty_rows

    if not applicable(method):
        return None
    s = problem.system
    n_steps, steps, times, every, keep = step_grid(problem.dt, problem.t0, problem.t_final,
                                                   problem.save_every)
    if n_steps == 0:
        return None
    P = problem.force_rows if problem.force_rows is not None else empty_rows(s.nv)
    forces = problem.force_rows is not None
    Q, V, W = np.empty((len(keep), s.nq)), np.empty((len(keep), s.nv)), np.zeros(len(keep))
    iters = np.zeros(n_steps, dtype=np.int32)
    status = np.zeros(2, dtype=np.int64)
    f = np.ascontiguousarray
    floating_run(flatten(_model(s)).data, f(P, float), forces, problem.tau_nc is not None,
                 float(problem.t0),
                 f(problem.q0, float), f(problem.v0, float), steps, n_steps, every, TOL,
                 STAGNATION, int(method.opts["maxiter"]), float(problem.blowup), Q, V, W, iters,
                 status)
    if status[0] != OK:
        return None
    return Solution(times[keep], Q, V, W, {"newton_iterations": iters}, method.name)
