"""The constrained energy–momentum step compiled (numba): the whole run in one call.

The readable reference is :class:`~.constrained_energy_momentum.ConstrainedEnergyMomentum`
(and its ``"avf"`` form, :class:`~.constrained_energy_momentum.ConstrainedAVF`); see its
module doc for the step. :func:`cem_run` is the same algorithm — one step solves, for
u = (Δq, Δp, λ, μ),

    Δq =  h ∇̄_pH + h ∇̄_pγᵀ μ
    Δp = −h ∇̄_qH − h ∇̄gᵀ λ − h ∇̄_qγᵀ μ,     g(q') = 0,   γ(q', p') = G(q') v' = 0

(Gonzalez, *J. Nonlinear Sci.* 9 (1999) 473, with the hidden constraint as a second
phase-space constraint), with Gonzalez's midpoint discrete gradients
``∇̄f = a + [Δf − a·Δz]/(w·Δz) w`` (*J. Nonlinear Sci.* 6 (1996) 449) — written as one
compiled loop: the same predictor (the last two steps extrapolated; the constrained
accelerations after a change of h), the same simplified Newton matrix (central
differences in the chart for ∂γ/∂x, the stiffness and ∂ẋ/∂x, kept ``REFRESH`` steps,
rebuilt after a slow step: one whose updates took more than ``SLOW[1]`` iterations to
fall to ``SLOW[0]``), the same update measure and the same convergence and stall rules.
What it evaluates, it evaluates compiled: M, g and G by
:func:`kanedyn.constraints.system_kernel.primitives` (the CRBA kernel and the loop-closure
rows radau5's compiled loop uses), ∂T/∂q, ∂V/∂q and V by the energy kernel, M⁻¹ by a
Cholesky factor, the Newton matrix by Gaussian elimination with partial pivoting.

Ball, free and planar joints are moved as the reference moves them, in the local canonical chart
of :mod:`.chart` centred on the start of the step (``quat = quat_n ⊗ exp(x)``, the free
joint's position ``p_n + R_n ρ``, a planar joint's ``((x_n, y_n) + R(θ_n) ρ, θ_n + ψ)``;
J = J_r(x), resp. diag(J_r(φ), exp(φ)ᵀ), resp. diag(R(−ψ), 1)): the unknowns
are (Δx, Δp) with p the momentum conjugate to x, v = M⁻¹J⁻ᵀp, ∂H/∂x = Jᵀ(∂V/∂q − ∂T/∂q)
− D(x, ẋ)ᵀ M v, ∂g/∂x = G J, γ = G v (:func:`_chart_state`, :func:`_chart_gradient`, on
the compiled charts of :mod:`kanedyn.constraints.system_kernel`: ``chart_point``,
``chart_blocks``, ``chart_jt_times``, ``chart_j_solve``, ``chart_jt_solve``,
``chart_derivative_t_sub``). On revolute, prismatic and helical joints the chart is
q_n + x and every chart function copies, so a model without ball, free or planar joints
takes the same arithmetic as before they were added. The quaternions stay unit (the exponential
map, renormalised).

Where the two differ in arithmetic (sums in another order, M⁻¹ by Cholesky rather than
LAPACK's inverse, an unblocked LU), the steps differ by round-off: the test
``tests/integrators/test_constrained_energy_momentum_compiled.py`` checks the two step
for step.

``kd.simulate(constrained_system, ..., method="energy_momentum" | "avf")`` takes this loop
when the system is a Model cut at loop closures (only
:class:`~kanedyn.constraints.LoopClosure` rows) whose joints are revolute, prismatic,
helical, ball (spherical), free or planar — ``ConstrainedSystem.compiled_chart_form()``;
with q̇ = v joints only that is the form radau5's compiled loop takes, ``compiled_form()`` —
and there are no ``momenta=``, no progress bar, and the option ``compiled`` is not False
(:func:`applicable`): the four-bar, the slider–crank, the spatial RSSR (a ball joint), the
same on a free-floating frame, the Stewart platform (a free platform) and a plate on a
planar joint pinned to a rocker run compiled.
Force elements (``forces=``) run compiled when each has a row of
:mod:`kanedyn.forces.kernel` (springs, dampers, smoothed friction, constant and periodic
torques, constant wrenches), on additive joints and on ball and free joints alike, as the
reference's ``_equations``: the springs in H; F = J(x̄)ᵀ τ_nc(t + h/2, q̄, J(x̄) Δx/h) in
the momentum equation, at the chart's midpoint x̄ = Δx/2, q̄ = φ(x̄) (``chart_j_times``,
``chart_jt_times``; on additive joints J = 1, q̄ = q + Δq/2); Δx·F in W_nc. The joint rows
read per speed: a damper acts on every speed of its joint, a spring, a sinusoid or friction
on a 1-DOF additive joint reads its coordinate q[iqd[j]] (``iqd`` of
:func:`.gauss_compiled.dof_coordinates`; q has nq ≠ nv entries on ball and free joints),
the wrench rows read the whole q̄. The slopes C = −∂τ_nc/∂v of dampers and friction at v0
join the Newton matrix's momentum rows (at x = 0, J = 1), as in the reference's, so that
both rebuild it at the same steps. Joint types beyond the built-in ones,
user constraints g(q), velocity rows, a system's own ``tau=``, force elements without a
row, and ``momenta=`` take the Python steps. Newton failures, a singular Newton matrix and a
blow-up raise the reference's errors (step, time, residual, what to do); a kernel that
refuses a state hands the run to the Python steps, which then say what happened.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..constraints import system_kernel as sk
from ..dynamics import _compiled
from ..dynamics.energy_kernel import energy_pass_into, energy_workspace
from ..forces.kernel import (
    damping_slopes,
    empty_rows,
    has_forces,
    joint_forces,
    spring_gradient_add,
    spring_potential,
    wrench_forces_add,
)
from .base import cholesky, cholesky_solve
from .gauss_compiled import gather, lu_factor, lu_solve
from .rk4_compiled import save_sample, state_guard, store

_compiled.key_cache(__name__)  # (see dynamics/_compiled.py)

#: status codes of :func:`cem_run` (``info[0]``)
OK, NEWTON_FAILED, SINGULAR, KERNEL_REFUSED, DIVERGED = 0, 1, 2, 3, 4
#: a slow step (its Newton updates above SLOW_LEVEL after SLOW_ITERATIONS iterations):
#: the reference's ``SLOW``
SLOW_LEVEL, SLOW_ITERATIONS = 1e-8, 5
_EPS = np.finfo(np.float64).eps


# --------------------------------------------------------------------- one point's terms
@nb.njit(cache=True, nogil=True)
def _mass_and_rows(P, data, q, M, L, g, G, ws, f, gam) -> bool:
    """M(q) with its Cholesky factor L, g(q) and G(q) (the compiled primitives); False if a
    kernel refuses q or M is not positive definite."""
    if sk.primitives(sk.KIND_MODEL, P, data, q, q, False, False, M, f, g, G, gam, ws) != 0:
        return False
    return cholesky(M, M.shape[0], L)


@nb.njit(cache=True, nogil=True)
def _chart_state(P, data, qn, x, p, q, M, L, g, G, Jb, pv, v, ws, f, gam) -> bool:
    """At the chart point x (centred on qn) with the momentum p conjugate to x: q ← φ(x),
    M(q) with its factor L, g(q), G(q) (on v, not yet times J), J(x)'s blocks Jb (the
    compiled charts of :mod:`~kanedyn.constraints.system_kernel`), pv ← J⁻ᵀp (= M v) and
    v ← M⁻¹pv (``ChartHamiltonian._state``; on additive joints J = 1 and pv = p). False if
    a kernel refuses q or M is not positive definite."""
    sk.chart_point(data, qn, x, q)
    if not _mass_and_rows(P, data, q, M, L, g, G, ws, f, gam):
        return False
    sk.chart_blocks(data, x, Jb)
    sk.chart_jt_solve(data, Jb, p, pv)
    cholesky_solve(L, M.shape[0], pv, v)
    return True


@nb.njit(cache=True, nogil=True)
def _chart_gradient(data, FP, forces, iqd, qd, x, q, v, pv, Jb, dT, dV, out, ew, xdot,
                    gx) -> bool:
    """After :func:`_chart_state`: xdot ← ∂H/∂p = J⁻¹v and gx ← ∂H/∂x|_p = Jᵀ(∂V/∂q −
    ∂T/∂q|_v) − D(x, ẋ)ᵀ pv (the Legendre transform in the chart,
    ``ChartHamiltonian.gradient``); out[1] = V(q). With ``forces`` the springs of the rows
    FP too, read per speed from qd ← q[iqd] (:func:`~.gauss_compiled.gather`). (dT is
    overwritten.)"""
    if energy_pass_into(data, q, v, dT, dV, out, *ew) != 0:
        return False
    for i in range(v.shape[0]):
        dT[i] = dV[i] - dT[i]
    sk.chart_jt_times(data, Jb, dT, gx)
    sk.chart_j_solve(data, Jb, v, xdot)
    sk.chart_derivative_t_sub(data, Jb, x, xdot, pv, gx)
    if forces:
        # the springs of the force rows FP: only on 1-DOF additive joints (force_rows),
        # where J's block is 1, so k (q_j − q_rest) adds to gx's row j as it is
        gather(iqd, q, qd)
        spring_gradient_add(FP, qd, 1.0, gx)
        out[1] += spring_potential(FP, qd)
    return True


#: w·d below which the constraint rows' correction is left out: with A = G(q̄) at the
#: midpoint, Δg − A d = O(|d|³), under the round-off of Δg itself for |d| < 1e-6, while
#: the computed correction is that round-off divided by |d|² (noise that stalls Newton
#: where the mechanism starts from rest, e.g. a joint breaking away from stiction)
G_FLOOR = 1e-12
#: a Newton iteration stalled above ``tol`` (updates no longer contracting) is taken when
#: the step's energy defect |H' − H − W| is below STALL_DEFECT · ε (1 + |H|) (the
#: round-off of H, a sum of kinetic and potential terms that can each exceed |H|, and of
#: the work) and either its updates are below 1e-6 or its residual is at the round-off
#: floor of its own evaluation (:func:`residual_floor`, :func:`at_floor`: where the
#: mechanism comes to rest the corrections' round-off over a small |Δz| holds the updates
#: near 1e-6 of the small |Δx| and |p|). Where G M⁻¹ Gᵀ is ill-conditioned (the four-bar
#: turning through its near-dead points at 4 rad/s) the multipliers' round-off holds the
#: updates near 1e-12 and the defect near 70 ε (1 + |H|)
STALL_DEFECT = 256.0
#: the update from which a fresh Newton matrix is judged to contract (a kept one: the 2nd):
#: on two arms gripping one object (a weld or a revolute loop closure) the first two
#: updates from an extrapolated λ went 2.2e-4 → 2.0e-4, then 1e-6, 1e-8, ...
SETTLE = 3
#: the round-off of a value in units of ε times its scale, in :func:`residual_floor`
#: (as the update measure's allowance for q and p)
ROUNDOFF = 4.0


@nb.njit(cache=True, nogil=True)
def residual_floor(h, H0, den_h, den_g, lam1, gmax, q_norm, terms):
    """(ν, δg): the round-off floor of the step's residual at the sizes in it (a stalled
    Newton iteration is taken when its residual is there; module doc of the reference).

    Gonzalez's corrections ``[Δf − a·Δz]/(w·Δz) w`` carry the round-off δ of Δf divided
    by |w| (the bracket itself is O(|w|³)): in the rows of Δx and Δp the correction of ∇H
    puts h δH/|w| there, that of ∇g, times λ, h Σ|λ| δg/|Δx|. Where the mechanism comes to
    rest (|Δz| ~ 1e-6) that noise is ~1e-12 and dominates the residual: the updates it
    makes, measured against the small |Δx| and |p| (:func:`_update_size`), stall near 1e-6,
    whichever way round-off falls. ``den_h`` = w·Δz where ∇H's correction is made, else
    0; ``den_g`` = w·Δx where g's is, else 0; ``lam1`` = Σ|λ|; ``gmax`` the largest entry
    of ∂g/∂x at the midpoint; ``terms`` = |Δz| + h (|a| + Σ|λ| gmax + |F|), the sizes of
    the rows' own terms. δH = ROUNDOFF ε (1 + |H|); δg = ROUNDOFF ε (1 + |q|)(1 + gmax)
    (g: positions, of the size of q and of the lever arms in G). The γ correction is
    multiplied by μ = O(h²) and left out. ν bounds the rows of Δx and Δp, δg those of g."""
    dg = ROUNDOFF * _EPS * (1.0 + q_norm) * (1.0 + gmax)
    nu = ROUNDOFF * _EPS * terms
    if den_h > 0.0:
        nu += h * ROUNDOFF * _EPS * (1.0 + abs(H0)) / np.sqrt(den_h)
    if den_g > 0.0:
        nu += h * lam1 * dg / np.sqrt(den_g)
    return nu, dg


@nb.njit(cache=True, nogil=True)
def _corrected_rows(A, d, w, delta, out, floor):
    """out ← Gonzalez's discrete gradient of each row: ``A + [(Δf − A d)/(w·d)] wᵀ``, the
    correction left out below w·d = ``floor`` (as ``corrected_rows``)."""
    den = 0.0
    for j in range(d.shape[0]):
        den += w[j] * d[j]
    for r in range(A.shape[0]):
        c = 0.0
        if den > floor:
            s = 0.0
            for j in range(d.shape[0]):
                s += A[r, j] * d[j]
            c = (delta[r] - s) / den
        for j in range(d.shape[0]):
            out[r, j] = A[r, j] + c * w[j]


# ------------------------------------------------------------------------ the residual
@nb.njit(cache=True, nogil=True)
def equations(P, data, FP, forces, iqd, tm, u, q0, p0, H0, g0, gam0, h, mask, aq, xi, wq,
              midpoint, r, st, wk, fw):
    """r ← the residual of the step's equations at u = (Δx, Δp, λ, μ) (the reference's
    ``_equations``; x the chart centred on q0, x = Δq on additive joints); returns
    |H' − H − W| (the step's energy error if it ended at u), or −1 if a kernel refused a
    state. ``st`` (q', v', g', γ') is left at the end point. With ``forces``: the springs
    of the rows FP in H (their coordinates q[iqd]), and F = J(x̄)ᵀ τ_nc(t + h/2, q̄,
    J(x̄) Δx/h) of the rows in the momentum equation (x̄ = Δx/2, q̄ = φ(x̄); on additive
    joints J = 1, q̄ = q + Δq/2), its work W = Δx·F left in ``fw[5][0]``; the residual's
    round-off floor (:func:`residual_floor`: ν for the rows of Δx and Δp, δg for g's) in
    ``fw[5][1]``, ``fw[5][2]``."""
    n, m = p0.shape[0], g0.shape[0]
    q1, v1, g1, gam1 = st
    (M, L, Gb, G1, qs, ps, vs, gq, a, dz, w, dgH, Gbar, Abar, Gam, Ab, dT, dV, out, f, gam,
     gs, ws, ew, xs, pv, Jb, GbJ, col) = wk
    qd = fw[0]
    for i in range(n):
        xs[i] = u[i]
        dz[i] = u[i]
        dz[n + i] = u[n + i]
        w[i] = u[i] * mask[i]
        w[n + i] = u[n + i]
        ps[i] = p0[i] + u[n + i]
    # the end point: q' = φ(Δx), M, g, G at q'; v' = M⁻¹J⁻ᵀp'; H' = ½ v'ᵀM v' + V(q');
    # γ' = G(q') v'
    if not _chart_state(P, data, q0, xs, ps, q1, M, L, g1, G1, Jb, pv, v1, ws, f, gam):
        return -1.0
    if not _chart_gradient(data, FP, forces, iqd, qd, xs, q1, v1, pv, Jb, dT, dV, out, ew, vs,
                           gq):
        return -1.0
    T = 0.0
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += M[i, j] * v1[j]
        T += v1[i] * s
    H1 = 0.5 * T + out[1]
    for k in range(m):
        s = 0.0
        for j in range(n):
            s += G1[k, j] * v1[j]
        gam1[k] = s
    # the base gradient of H: at the midpoint (Gonzalez), or the AVF quadrature
    a[:] = 0.0
    if not midpoint:
        for k in range(xi.shape[0]):
            for i in range(n):
                xs[i] = xi[k] * u[i]
                ps[i] = p0[i] + xi[k] * u[n + i]
            if not _chart_state(P, data, q0, xs, ps, qs, M, L, gs, Gb, Jb, pv, vs, ws, f,
                                gam):
                return -1.0
            if not _chart_gradient(data, FP, forces, iqd, qd, xs, qs, vs, pv, Jb, dT, dV, out,
                                   ew, col, gq):
                return -1.0
            for i in range(n):
                a[i] += wq[k] * gq[i]
                a[n + i] += wq[k] * col[i]
    # the midpoint x̄ = Δx/2: G(q̄) J(x̄) and J⁻¹M(q̄)⁻¹ (and ∇H(x̄, p + Δp/2) for
    # Gonzalez's)
    for i in range(n):
        xs[i] = 0.5 * u[i]
        ps[i] = p0[i] + 0.5 * u[n + i]
    if not _chart_state(P, data, q0, xs, ps, qs, M, L, gs, Gb, Jb, pv, vs, ws, f, gam):
        return -1.0
    if midpoint:
        if not _chart_gradient(data, FP, forces, iqd, qd, xs, qs, vs, pv, Jb, dT, dV, out, ew,
                               col, gq):
            return -1.0
        for i in range(n):
            a[i] = gq[i]
            a[n + i] = col[i]
    for k in range(m):
        sk.chart_jt_times(data, Jb, Gb[k], GbJ[k])  # ∂g/∂x = G J: the rows Jᵀ G[k]
    # Gonzalez's correction of ∇H along Δz (w: Δz less the cyclic coordinates' Δq),
    # dropped below the round-off of ΔH (as energy_momentum._gonzalez_correction)
    den, ad, aa = 0.0, 0.0, 0.0
    for i in range(2 * n):
        den += w[i] * dz[i]
        ad += a[i] * dz[i]
        aa += a[i] * a[i]
    floor = 1e3 * _EPS * (abs(H0) + 1.0) / (np.sqrt(aa) + 1e-300)
    c = (H1 - H0 - ad) / den if den > floor * floor else 0.0
    for i in range(2 * n):
        dgH[i] = a[i] + c * w[i] if den > floor * floor else a[i]
    den_h = den if den > floor * floor else 0.0
    # ∇̄g: G(q̄) J(x̄) corrected along Δx (w = Δx less the cyclic coordinates)
    for k in range(m):
        gam[k] = g1[k] - g0[k]
    _corrected_rows(GbJ, u[:n], w[:n], gam, Gbar, G_FLOOR)
    # ∇̄γ: the base (∂γ/∂x of the Newton matrix, G J · J⁻¹M⁻¹J⁻ᵀ = G M⁻¹J⁻ᵀ at the
    # midpoint) corrected along Δz
    for k in range(m):
        cholesky_solve(L, n, Gb[k], vs)  # M⁻¹ G[k]ᵀ (M symmetric) ...
        sk.chart_j_solve(data, Jb, vs, Ab[k])  # ... then J⁻¹: the row k of G M⁻¹J⁻ᵀ
        for j in range(n):
            Abar[k, j] = aq[k, j]
            Abar[k, n + j] = Ab[k, j]
        gam[k] = gam1[k] - gam0[k]
    _corrected_rows(Abar, dz, w, gam, Gam, 1e-30)
    lam = u[2 * n:2 * n + m]
    mu = u[2 * n + m:2 * n + 2 * m]
    for i in range(n):
        sx = dgH[n + i]
        sp = dgH[i]
        for k in range(m):
            sx += Gam[k, n + i] * mu[k]
            sp += Gbar[k, i] * lam[k] + Gam[k, i] * mu[k]
        r[i] = u[i] - h * sx
        r[n + i] = u[n + i] + h * sp
    for k in range(m):
        r[2 * n + k] = g1[k]
        r[2 * n + m + k] = gam1[k]
    work = 0.0
    wout = fw[5]
    f_max = 0.0
    if forces:
        # at the midpoint of the last _chart_state: qs = φ(x̄), Jb = J(x̄) (on additive
        # joints qs = q + Δq/2 and J = 1: every chart function copies)
        _, xd, vk, tau_nc, tau, _ = fw
        for i in range(n):
            xd[i] = u[i] / h
        sk.chart_j_times(data, Jb, xd, vk)  # v̄ = J(x̄) Δx/h
        gather(iqd, qs, qd)  # the joint rows read the coordinate of their speed
        joint_forces(FP, tm, qd, vk, tau_nc, tau)
        if wrench_forces_add(data, FP, qs, tau_nc, tau):  # (the wrench rows: at q̄ itself)
            return -1.0
        sk.chart_jt_times(data, Jb, tau_nc, tau)  # F = J(x̄)ᵀ τ_nc (tau: free scratch)
        for i in range(n):
            r[n + i] -= h * tau[i]
            work += u[i] * tau[i]
            f_max = max(f_max, abs(tau[i]))
        wout[0] = work
    # the round-off floor of this residual (residual_floor): ν in wout[1], δg in wout[2]
    den_g, lam1, gmax, terms, a_max = 0.0, 0.0, 0.0, 0.0, 0.0
    for j in range(n):
        den_g += w[j] * u[j]
    for k in range(m):
        lam1 += abs(lam[k])
        for j in range(n):
            gmax = max(gmax, abs(GbJ[k, j]))
    for i in range(2 * n):
        terms = max(terms, abs(dz[i]))
        a_max = max(a_max, abs(a[i]))
    q_norm = 0.0
    for i in range(q0.shape[0]):
        q_norm = max(q_norm, abs(q0[i]))
    wout[1], wout[2] = residual_floor(h, H0, den_h, den_g if den_g > G_FLOOR else 0.0, lam1,
                                      gmax, q_norm,
                                      terms + h * (a_max + lam1 * gmax + f_max))
    return abs(H1 - H0 - work)


# ----------------------------------------------------------------------- Newton matrix
@nb.njit(cache=True, nogil=True)
def newton_matrix(P, data, FP, forces, iqd, qd, h, q0, v0, p0, M0, L0, G0, lam, K, piv, aq,
                  norms, wk, nw, slope) -> int:
    """K ← the LU factors of the simplified Newton matrix at the start of the step (the
    reference's ``_newton_matrix``: the blocks h M⁻¹, h Gᵀ, G, G M⁻¹, and by central
    differences in the chart at fixed p — step 1e-7 (1 + |q|) — ∂γ/∂x (γ = G v), the
    stiffness ∂(∇_xH + (G J)ᵀλ)/∂x and ∂ẋ/∂x); aq ← ∂γ/∂x, norms ← (‖G‖₁, ‖M⁻¹Gᵀ‖∞).
    With ``forces``: the slopes C of the rows FP's dampers and friction at v0 in the
    momentum rows (the reference's ``_damping_slopes``; J(0) = 1 in a chart); their
    springs read q per speed by ``iqd`` into ``qd``. Returns OK, SINGULAR (a pivot at
    1e-13 of the largest) or KERNEL_REFUSED."""
    n, m = p0.shape[0], G0.shape[0]
    if forces:
        damping_slopes(FP, v0, slope)
    (M, L, G, qe, ve, gq, Ai, e, col, GAi, ends, Kqq, Kxp, dT, dV, out, f, gs, gam, ws, ew,
     xe, pv, Jb, xd, GJ) = nw
    for j in range(n):  # M⁻¹ column by column from the factor of M(q)
        e[:] = 0.0
        e[j] = 1.0
        cholesky_solve(L0, n, e, col)
        for i in range(n):
            Ai[i, j] = col[i]
    step = 0.0
    for i in range(q0.shape[0]):
        step = max(step, abs(q0[i]))
    step = 1e-7 * (1.0 + step)
    for k in range(n):
        for s in range(2):
            xe[:] = 0.0
            xe[k] = step if s == 0 else -step
            if not _chart_state(P, data, q0, xe, p0, qe, M, L, gs, G, Jb, pv, ve, ws, f,
                                gam):
                return KERNEL_REFUSED
            if not _chart_gradient(data, FP, forces, iqd, qd, xe, qe, ve, pv, Jb, dT, dV, out,
                                   ew, xd, gq):
                return KERNEL_REFUSED
            for r in range(m):  # γ = G(q) v at x = ±e_k (fixed p)
                t = 0.0
                for j in range(n):
                    t += G[r, j] * ve[j]
                ends[s, r] = t
                sk.chart_jt_times(data, Jb, G[r], GJ[r])  # ∂g/∂x = G J
            for i in range(n):  # ∇_xH + (G J)ᵀλ, and ∂H/∂p = ẋ
                t = gq[i]
                for r in range(m):
                    t += GJ[r, i] * lam[r]
                ends[s, m + i] = t
                ends[s, m + n + i] = xd[i]
        for r in range(m):
            aq[r, k] = (ends[0, r] - ends[1, r]) / (2 * step)
        for i in range(n):
            Kqq[i, k] = (ends[0, m + i] - ends[1, m + i]) / (2 * step)
            Kxp[i, k] = (ends[0, m + n + i] - ends[1, m + n + i]) / (2 * step)
    for r in range(m):  # G M⁻¹
        for j in range(n):
            t = 0.0
            for i in range(n):
                t += G0[r, i] * Ai[i, j]
            GAi[r, j] = t
    N = 2 * n + 2 * m
    K[:, :] = 0.0
    for i in range(n):
        for j in range(n):
            d = 1.0 if i == j else 0.0
            K[i, j] = d - 0.5 * h * Kxp[i, j]
            K[i, n + j] = -0.5 * h * Ai[i, j]
            K[n + i, j] = 0.5 * h * Kqq[i, j]
            K[n + i, n + j] = d + 0.5 * h * Kxp[j, i]
        if forces:  # −h τ_nc(.., Δq/h): ∂/∂Δx ≈ C = −∂τ_nc/∂v (dampers, friction) at v0
            K[n + i, i] += slope[i]
        for r in range(m):
            K[i, 2 * n + m + r] = -h * GAi[r, i]
            K[n + i, 2 * n + r] = h * G0[r, i]
            K[n + i, 2 * n + m + r] = h * aq[r, i]
            K[2 * n + r, i] = G0[r, i]
            K[2 * n + m + r, i] = aq[r, i]
            K[2 * n + m + r, n + i] = GAi[r, i]
    # the sizes by which the update measure weighs the multipliers' updates
    gn, gan = 0.0, 0.0
    for j in range(n):
        t = 0.0
        for r in range(m):
            t += abs(G0[r, j])
        gn = max(gn, t)
        t = 0.0
        for r in range(m):
            t += abs(GAi[r, j])  # (M⁻¹Gᵀ)[j, r] = (G M⁻¹)[r, j]
        gan = max(gan, t)
    norms[0], norms[1] = gn, gan
    if not lu_factor(K, piv):
        return SINGULAR
    big, small = 0.0, np.inf
    for i in range(N):
        big = max(big, abs(K[i, i]))
        small = min(small, abs(K[i, i]))
    if not small > 1e-13 * big:
        return SINGULAR
    return OK


@nb.njit(cache=True, nogil=True)
def constrained_acceleration(P, data, q, v, A, piv, b, M, g, G, gam, f, ws) -> bool:
    """b ← (v̇, λ) of ``[M Gᵀ; G 0] [v̇; λ] = [f; γ]`` (``accelerations``, the index-1
    solve), f = −h(q, v): the predictor after a change of h."""
    n, m = v.shape[0], g.shape[0]
    if sk.primitives(sk.KIND_MODEL, P, data, q, v, True, True, M, f, g, G, gam, ws) != 0:
        return False
    A[:, :] = 0.0
    for i in range(n):
        for j in range(n):
            A[i, j] = M[i, j]
        for r in range(m):
            A[i, n + r] = G[r, i]
            A[n + r, i] = G[r, i]
        b[i] = f[i]
    for r in range(m):
        b[n + r] = gam[r]
    if not lu_factor(A, piv):
        return False
    lu_solve(A, piv, b)
    return True


@nb.njit(cache=True, nogil=True)
def at_floor(r, n, m, floors, gan) -> bool:
    """The residual r at the round-off floor of its own evaluation (the reference's
    ``_at_floor``): the rows of Δx and Δp within ν, those of g within δg (``floors[1]``,
    ``floors[2]``: :func:`residual_floor`), those of γ = G v within ‖G M⁻¹‖ ν (``gan``:
    what ν in the momenta moves γ by)."""
    nu, dg = floors[1], floors[2]
    for i in range(2 * n):
        if not abs(r[i]) <= nu:
            return False
    for k in range(m):
        if not (abs(r[2 * n + k]) <= dg and abs(r[2 * n + m + k]) <= gan * nu):
            return False
    return True


@nb.njit(cache=True, nogil=True)
def _update_size(du, u, n, m, p0_norm, q_norm, h, norms) -> float:
    """A Newton update measured by what it moves (the reference's ``_update_size``)."""
    ux, up, dx, dp, dl, dm = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    for i in range(n):
        ux = max(ux, abs(u[i]))
        up = max(up, abs(u[n + i]))
        dx = max(dx, abs(du[i]))
        dp = max(dp, abs(du[n + i]))
    for k in range(m):
        dl = max(dl, abs(du[2 * n + k]))
        dm = max(dm, abs(du[2 * n + m + k]))
    sx = max(ux, 1e-6 * (1.0 + q_norm))
    sp = max(p0_norm, up, 1e-300)
    move_x = max(dx, h * norms[1] * dm)
    move_p = max(dp, h * norms[0] * dl)
    return max(max(move_x - 4 * _EPS * (1.0 + q_norm), 0.0) / sx,
               max(move_p - 4 * _EPS * sp, 0.0) / sp)


# ------------------------------------------------------------------------------ the loop
@nb.njit(cache=True, nogil=True)
def cem_run(P, data, FP, forces, iqd, times, q0, v0, lam0, steps, every, mask, xi, wq,
            midpoint, tol, maxiter, refresh, blowup, Q, V, W, RG, RGV, lam_mid, iters, info,
            finfo, bad):
    """The whole run (the reference's ``step`` repeated, with ``run_fixed``'s guards):
    ``times``/``steps`` the start and size of each step (the last one shortened to land
    on t_final, as ``run_fixed``: :func:`.rk4_compiled.step_grid`), samples every
    ``every`` steps into Q, V with their residuals g (RG) and G v (RGV); λ of each step in
    ``lam_mid``, Newton iterations in ``iters``. ``info`` = (status, step, iterations,
    worst block, steps done); ``finfo`` = (t, h, largest residual); ``bad`` the state (q,
    v) at a blow-up, or q at a singular Newton matrix; with ``forces`` the force rows FP
    act and W holds the work W_nc at the samples. q has nq entries, v and the chart
    coordinates nv (ball and free joints: the charts of :mod:`.chart`, compiled in
    :mod:`~kanedyn.constraints.system_kernel`); ``iqd`` (nv) the index in q of each speed's
    coordinate on 1-DOF additive joints, −1 elsewhere (:func:`.gauss_compiled.dof_coordinates`:
    what the springs and the joint rows read; 0, 1, ..., nv − 1 on an additive tree)."""
    nq, n, m = q0.shape[0], v0.shape[0], lam0.shape[0]
    N = 2 * n + 2 * m
    nb_ = data.shape[0] - 1
    mm = max(m, 1)
    ws = np.empty(sk.workspace_size(data, n))
    ew = energy_workspace(nb_)
    f, gam, gs = np.empty(n), np.empty(mm), np.empty(mm)
    dT, dV, out = np.empty(n), np.empty(n), np.empty(8)
    Jb, pv = np.zeros((nb_, 18)), np.empty(n)
    wk = (np.empty((n, n)), np.zeros((n, n)), np.empty((m, n)), np.empty((m, n)),
          np.empty(nq), np.empty(n), np.empty(n), np.empty(n), np.empty(2 * n),
          np.empty(2 * n), np.empty(2 * n), np.empty(2 * n), np.empty((m, n)),
          np.empty((m, 2 * n)), np.empty((m, 2 * n)), np.empty((m, n)), dT, dV, out, f, gam,
          gs, ws, ew, np.empty(n), pv, Jb, np.empty((m, n)), np.empty(n))
    nw = (np.empty((n, n)), np.zeros((n, n)), np.empty((m, n)), np.empty(nq), np.empty(n),
          np.empty(n), np.empty((n, n)), np.empty(n), np.empty(n), np.empty((m, n)),
          np.empty((2, m + 2 * n)), np.empty((n, n)), np.empty((n, n)), dT, dV, out, f, gs,
          gam, ws, ew, np.empty(n), pv, Jb, np.empty(n), np.empty((m, n)))
    st = (np.empty(nq), np.empty(n), np.empty(m), np.empty(m))
    # (qd: q per speed; ẋ = Δx/h; v̄ = J(x̄) ẋ; τ_nc; τ; the step's work)
    fw = (np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.zeros(3))
    slope = np.zeros(n)
    work = 0.0
    W[0] = 0.0
    M0, L0, G0, g0 = np.empty((n, n)), np.zeros((n, n)), np.empty((m, n)), np.empty(m)
    p0, gam0 = np.empty(n), np.empty(m)
    K, piv = np.empty((N, N)), np.empty(N, dtype=np.int64)
    KA, piva, b = np.empty((n + m, n + m)), np.empty(n + m, dtype=np.int64), np.empty(n + m)
    aq, norms = np.zeros((m, n)), np.zeros(2)
    u, ut, du, r = np.empty(N), np.empty(N), np.empty(N), np.empty(N)
    last1, last2 = np.empty(N), np.empty(N)
    have1, have2, last_h = False, False, 0.0
    have_lu, lu_h = False, 0.0
    q, v = q0.copy(), v0.copy()
    info[:] = 0
    n_steps = steps.shape[0]
    vmax0 = 0.0
    for i in range(n):
        vmax0 = max(vmax0, abs(v[i]))
    k_out = store(q, v, Q, V, 0)
    for step in range(n_steps):
        h, t = steps[step], times[step]
        # the start of the step: p = M v, H, g, G, γ = G v
        if not _mass_and_rows(P, data, q, M0, L0, g0, G0, ws, f, gam):
            info[0], info[1] = KERNEL_REFUSED, step
            return k_out
        if energy_pass_into(data, q, v, dT, dV, out, *ew) != 0:  # (V(q) in out[1])
            info[0], info[1] = KERNEL_REFUSED, step
            return k_out
        T = 0.0
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += M0[i, j] * v[j]
            p0[i] = s
            T += v[i] * s
        H0 = 0.5 * T + out[1]
        if forces:
            gather(iqd, q, fw[0])
            H0 += spring_potential(FP, fw[0])
        q_norm, p0_norm = 0.0, 0.0
        for i in range(nq):
            q_norm = max(q_norm, abs(q[i]))
        for i in range(n):
            p0_norm = max(p0_norm, abs(p0[i]))
        for k in range(m):
            s = 0.0
            for j in range(n):
                s += G0[k, j] * v[j]
            gam0[k] = s
        if step == 0:  # the residuals of the first sample
            for k in range(m):
                RG[0, k], RGV[0, k] = g0[k], gam0[k]
        same = have1 and abs(last_h - h) <= 1e-9 * h
        if same:
            # predictor: the last two steps' unknowns extrapolated
            for i in range(N):
                u[i] = last1[i] if not have2 else 2.0 * last1[i] - last2[i]
        else:
            if not constrained_acceleration(P, data, q, v, KA, piva, b, M0, gs, G0, gam, f,
                                            ws):
                info[0], info[1] = KERNEL_REFUSED, step
                return k_out
            # (it wrote M0 and G0 again: the same values, from the same kernels)
            for i in range(n):
                u[i] = h * v[i]
                s = 0.0
                for j in range(n):
                    s += M0[i, j] * b[j]
                u[n + i] = h * s
            for k in range(m):
                u[2 * n + k] = lam0[k] if step == 0 else lam_mid[step - 1, k]
                u[2 * n + m + k] = 0.0
        rebuilt = False
        if not have_lu or abs(lu_h - h) > 1e-9 * h or step % refresh == 0:
            code = newton_matrix(P, data, FP, forces, iqd, fw[0], h, q, v, p0, M0, L0, G0,
                                 u[2 * n:2 * n + m], K, piv, aq, norms, wk, nw, slope)
            if code != OK:
                info[0], info[1] = code, step
                finfo[0], finfo[1] = t, h
                bad[:nq] = q
                return k_out
            have_lu, lu_h, rebuilt = True, h, True
        while True:
            # simplified Newton from the predictor (the reference's ``_solve``)
            for i in range(N):
                ut[i] = u[i]
            defect = equations(P, data, FP, forces, iqd, t + 0.5 * h, ut, q, p0, H0, g0,
                               gam0, h, mask, aq, xi, wq, midpoint, r, st, wk, fw)
            if defect < 0.0:
                info[0], info[1] = KERNEL_REFUSED, step
                return k_out
            ok, nonfinite = False, False
            last = np.inf
            it = 0
            reach = 0  # the iteration at which the update first fell to SLOW_LEVEL
            for it in range(1, maxiter + 1):
                for i in range(N):
                    du[i] = r[i]
                lu_solve(K, piv, du)
                for i in range(N):
                    du[i] = -du[i]
                    ut[i] += du[i]
                defect = equations(P, data, FP, forces, iqd, t + 0.5 * h, ut, q, p0, H0,
                                   g0, gam0, h, mask, aq, xi, wq, midpoint, r, st, wk, fw)
                finite = defect >= 0.0
                for i in range(N):
                    if not (np.isfinite(r[i]) and np.isfinite(ut[i])):
                        finite = False
                if not finite:
                    nonfinite = True
                    break
                err = _update_size(du, ut, n, m, p0_norm, q_norm, h, norms)
                if reach == 0 and err <= SLOW_LEVEL:
                    reach = it
                if err <= tol:
                    ok = True
                    break
                # the round-off floor, or not converging (a fresh matrix gets one update more:
                # the first from the predictor can carry a λ far off, SETTLE)
                if it >= (SETTLE if rebuilt else 2) and err > 0.9 * last:
                    if err <= 1e-12 or (defect <= STALL_DEFECT * _EPS * (1.0 + abs(H0))
                                        and (err <= 1e-6
                                             or at_floor(r, n, m, fw[5], norms[1]))):
                        ok = True
                    break
                last = err
            if ok or rebuilt:
                break
            # slow or diverging with the kept matrix: a fresh one, from the predictor
            code = newton_matrix(P, data, FP, forces, iqd, fw[0], h, q, v, p0, M0, L0, G0,
                                 u[2 * n:2 * n + m], K, piv, aq, norms, wk, nw, slope)
            if code != OK:
                info[0], info[1] = code, step
                finfo[0], finfo[1] = t, h
                bad[:nq] = q
                return k_out
            have_lu, lu_h, rebuilt = True, h, True
        iters[step] = it
        if not ok:
            info[0], info[1], info[2] = NEWTON_FAILED, step, it
            finfo[0], finfo[1] = t, h
            # the worst block: Δq, Δp, g = 0, G v = 0 (non-finite: reported as the first)
            worst, blk = -1.0, 0
            for kb in range(4):
                lo = (0, n, 2 * n, 2 * n + m)[kb]
                hi = (n, 2 * n, 2 * n + m, N)[kb]
                bm = 0.0
                for i in range(lo, hi):
                    x = abs(r[i]) if np.isfinite(r[i]) else np.inf
                    bm = max(bm, x)
                if bm > worst:
                    worst, blk = bm, kb
            info[3] = 0 if nonfinite else blk
            finfo[2] = worst
            return k_out
        if reach == 0 or reach > SLOW_ITERATIONS:
            # a slow step: the kept matrix has gone stale, refresh it for the next step
            have_lu = False
        if same:
            last2[:] = last1
        have2 = same
        last1[:] = ut
        have1, last_h = True, h
        for k in range(m):
            lam_mid[step, k] = ut[2 * n + k]
        q1, v1, g1, gam1 = st
        q[:] = q1
        v[:] = v1
        info[4] = step + 1
        code = state_guard(q, v, vmax0, blowup)
        if code != 0:
            info[0], info[1] = DIVERGED, step
            bad[:nq] = q
            bad[nq:] = v
            return k_out
        if forces:
            work += fw[5][0]  # Δx·F of the accepted step
        k_new = save_sample(step, n_steps, every, q, v, Q, V, k_out)
        if k_new != k_out:
            W[k_out] = work
            for k in range(m):
                RG[k_out, k], RGV[k_out, k] = g1[k], gam1[k]
            k_out = k_new
    return k_out


# ------------------------------------------------------------------------- from Python
def applicable(method) -> sk.CompiledForm | None:
    """The compiled form of ``method``'s system when :func:`cem_run` can take its run (the
    module doc), else None."""
    from .chart import ModelChart
    from .dae_common import compiled_form_of

    problem = method.problem
    if (not method.opts["compiled"] or method.k or method.sys_nc or method.friction is not None
            or problem.progress is not None):
        return None
    if (problem.tau_cons is not None or problem.tau_nc is not None) and problem.force_rows is None:
        return None  # force elements, one of them without a compiled row
    if method.chart is None:
        form = compiled_form_of(method.system)
    else:
        # ball, free and planar joints: their charts compiled (system_kernel), where the system
        # offers them (ConstrainedSystem.compiled_chart_form) and the reference's chart is
        # the joints' own (ModelChart)
        get = getattr(method.system, "compiled_chart_form", None)
        form = get() if callable(get) and isinstance(method.chart, ModelChart) else None
    return form if form is not None and form.kind == sk.KIND_MODEL else None


def run(method):
    """``method``'s whole run (a ConstrainedEnergyMomentum or ConstrainedAVF, its start
    values already made consistent) by :func:`cem_run`: the Solution with the reference's
    records (``finish``), or None when the loop does not apply or a kernel refused a
    state (the Python steps then take the run). Raises the reference's errors."""
    from ..errors import SolverError
    from .base import Solution, check_state
    from .constrained_energy_momentum import REFRESH
    from .gauss_compiled import dof_coordinates
    from .rk4_compiled import compiled_or_none, step_grid

    form = applicable(method)
    if form is None:
        return None
    problem, s = method.problem, method.system
    nq, n, m = s.nq, s.nv, s.nc
    n_steps, steps, times, every, keep = step_grid(problem.dt, problem.t0, problem.t_final,
                                                   problem.save_every)
    if n_steps == 0:
        return None
    n_out = len(keep)
    Q, V, W = np.empty((n_out, s.nq)), np.empty((n_out, n)), np.zeros(n_out)
    FP = (np.ascontiguousarray(problem.force_rows, dtype=float)
          if problem.force_rows is not None else empty_rows(n))
    RG, RGV = np.empty((n_out, m)), np.empty((n_out, m))
    lam_mid = np.empty((n_steps, m))
    iters = np.zeros(n_steps, dtype=np.int64)
    info, finfo, bad = np.zeros(5, dtype=np.int64), np.zeros(3), np.zeros(nq + n)
    midpoint = method.gradient == "midpoint"
    q0 = np.array(problem.q0, dtype=float)
    v0 = np.array(problem.v0, dtype=float)
    k_out = compiled_or_none(
        method.name, cem_run, form.params, form.data, FP, has_forces(FP),
        dof_coordinates(s.model), times, q0, v0,
        np.array(method.lam0, dtype=float).reshape(m), steps, every,
        np.asarray(method.mask, dtype=float), np.asarray(method.xi, dtype=float),
        np.asarray(method.wq, dtype=float), midpoint, float(method.opts["tol"]),
        int(method.opts["maxiter"]), REFRESH, float(problem.blowup), Q, V, W, RG,
        RGV, lam_mid, iters, info, finfo, bad)
    if k_out is None:
        return None
    status, step = int(info[0]), int(info[1])
    if status == KERNEL_REFUSED:
        return None
    if status == NEWTON_FAILED:
        raise SolverError(method.newton_failure(step, finfo[0], finfo[1], int(info[2]),
                                                finfo[2], int(info[3])))
    if status == SINGULAR:
        raise method.singular_matrix(bad[:nq].copy(), float(finfo[0]))
    if status == DIVERGED:
        vmax0 = float(np.abs(v0).max()) if n else 0.0
        check_state(problem, method.name, step + 1, float(times[step + 1]), bad[:nq].copy(),
                    bad[nq:].copy(), vmax0)
        return None  # (check_state raises: the loop's test is the same)
    method.newton_iterations += int(iters.sum())
    method._n += n_steps
    method.lam_mid = list(lam_mid)
    sol = Solution(times[keep], Q, V, W,
                   {"newton_iterations": iters.astype(np.int32)}, method.name, "")
    return method.finish(sol, residuals=(RG, RGV))
