"""Implicit midpoint and 2-stage Gauss as one compiled loop over all steps (numba).

The same method as :class:`~kanedyn.integrators.gauss.GaussLegendre` (its readable
reference, tested step for step against this loop) for a plain Model with additive
coordinates whose force elements (if any) all have rows in :mod:`kanedyn.forces.kernel`
(:func:`.rk4_compiled.applicable` with ``forces=True``): canonical
``z = (q, p)``, ``q̇ = v = M⁻¹p``, ``ṗ = ∂T/∂q − g(q) + τ`` from the CRBA kernel behind
``kd.crba``, a Cholesky solve and the energy kernel of :mod:`kanedyn.dynamics.energy_kernel`.
With ball, free and planar joints among revolute, prismatic and helical ones
(:func:`tangent_applicable`) the tangent form of the reference: ``z = (ξ, v)``,
``q = q0 ⊕ ξ`` (quaternions moved by the exponential map, a free joint by the SE(3)
exponential of its body twist, a planar joint by the SE(2) one: the joints' own charts,
:func:`chart_point`), ``ξ̇ = J(ξ)⁻¹v`` with the SO(3), SE(3) or SE(2) right Jacobian of
each such joint (:func:`chart_block`; SE(2) in closed form, :func:`se2_right_jacobian`),
``v̇`` by the ABA kernel (:func:`tangent_field`); symmetric and of the same order, not
symplectic. energy_momentum's ``"projection"`` variant takes the tangent form on chains
whose joints all add too (its ``_TangentMidpoint``; ``tangent_applicable`` with
``additive``): there q = q0 + ξ and ξ̇ = v, joint by joint.

Force rows (springs, dampers, smoothed Stribeck friction, constant and sinusoidal
torques: :func:`~kanedyn.forces.kernel.joint_forces` at each stage's time ``t + c_i h``
and state) enter f as in ``GaussLegendre._f`` — τ = τ_nc − k (q − q_rest) in ṗ (canonical)
or in the ABA torque (tangent; a spring on a 1-DOF joint of a tree with ball joints reads
its coordinate ``q[iqd[j]]``, :func:`dof_coordinates`, :func:`gather`) —, their
Jacobians ``F_q = −diag(k)``, ``F_v = −diag(C)`` (C the slopes of dampers and friction,
:func:`~kanedyn.forces.kernel.damping_slopes`) join the closed-form Newton matrix, and
``W_nc += h Σ b_i v_iᵀ τ_nc(t + c_i h, v_i)`` at the solved stages (the reference's
quadrature; v_i = (A⁻¹Z)_i/h in canonical form, the stage velocity in tangent form), so
that the budget E − E₀ − W_nc is the Python run's. The loop has one numba signature:
``forces``, ``tangent`` and ``project`` are runtime flags, P is always an array
(:func:`~kanedyn.forces.kernel.empty_rows` when there are none). Like
:mod:`.discrete_gradient_compiled` it imports the force kernel (a recorded exception to
DESIGN's import order).

Stages by Newton on ``Z_i − h Σ_j a_ij f(z0 + Z_j) = 0`` with the stage matrix
``1 − h [a_ij ∂f/∂z(z0 + Z_j)]`` in closed form (:func:`newton_matrix`, the formula of
:meth:`GaussLegendre._jf`: ``∂v/∂q = −M⁻¹B``, ``∂ṗ/∂q = L_qq + Bᵀ∂v/∂q``, ``∂ṗ/∂p = BᵀM⁻¹``,
B and L_qq from the compiled RNEA tangent pass and ∂²T/∂q² of
:mod:`kanedyn.dynamics.derivatives_kernel`), LU-factored (partial pivoting) when it is
evaluated and kept from step to step; evaluated afresh after a solve of more than
``REFRESH_AFTER`` iterations, or within a solve that contracts slowly (ratio > 0.25)
or diverges (restart from the predictor) — the rules of :func:`.base.newton`, with its
stopping test (the update, or ``θ/(1−θ)|Δx|``, below ``tol |Z|``; the roundoff-stagnation
stop only from the second update). The predictor extrapolates the stages of the last
steps (:func:`extrapolate`, a polynomial in the step index through up to
:data:`PREDICTOR_STEPS` of them) at the order that predicted the last step best
(:func:`best_order`); on smooth motion it is within the tolerance of the solution, and
one or two Newton updates settle a step where the reference's Euler predictor
``c_i h f(z0)`` takes three. The solution is the same to the Newton tolerance.

``project="energy"``: after each step the projection of :class:`.projection.Projected`
(standard projection along ∇E, scalar simplified Newton, the same stopping test) onto
E = E₀ + W_nc (springs' potential in E), in :func:`project_energy_standard`; with momentum
rows after the energy (``project=("energy", "momentum")``, ``"angular_momentum"``,
``"linear_momentum"``) onto E and those rows of [L; P] at their start values, in
:func:`project_standard` (the reference's gradients: ∂[L; P]/∂q by central differences).

A step whose Newton iteration fails (or a mass matrix that is not positive definite)
makes the whole run fall back to the Python method, which reports the step, the time,
the residual and the method; a blow-up or a non-finite state is reported from here
with the message of :func:`.base.check_state`.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..dynamics import _compiled, kernels
from ..dynamics.derivatives_kernel import kinetic_tangent, rnea_tangent, rnea_tangent_static
from ..dynamics.energy_kernel import energy_pass
from ..dynamics.flat import flatten
from ..dynamics.layout import FREE, IQ, IV, JTYPE, NVJ, PLANAR, SPHERICAL
from ..forces.kernel import (
    P_K,
    applied_forces,
    damping_slopes,
    empty_rows,
    has_forces,
    joint_forces,
    spring_gradient_add,
    spring_potential,
    wrench_forces_add,
)
from ..model.joints import free, planar, spherical
from ..spatial.lie import RIGHT_JACOBIAN_QUADRATURE, skew3, so3_coefficients, so3_right_jacobian
from .base import cholesky, cholesky_solve, nan_max
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

#: ``status[0]`` of the loops: Newton failed (hand the run to the Python method), the
#: state failed the guard (report it, ``status[2]`` the guard's code), a kernel refused
#: the state or M is not positive definite (hand the run over too)
NEWTON_FAILED, STATE_GUARD, BAD_STATE = 1, 2, 3

#: the predictor extrapolates the stages of up to this many past steps (the order that
#: predicted the last step best)
PREDICTOR_STEPS = 8


# ------------------------------------------------------------------ small dense algebra
@nb.njit(cache=True, _nrt=False, nogil=True)
def lu_factor(A, piv) -> bool:
    """In place, ``P A = L U`` by Gaussian elimination with partial pivoting (Golub & Van
    Loan, Alg. 3.4.1): unit L below the diagonal, U on and above; ``piv[k]`` the row
    swapped with k at step k. False if a pivot is zero or not finite (singular)."""
    n = A.shape[0]
    for k in range(n):
        p, big = k, abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > big:
                p, big = i, abs(A[i, k])
        if not (big > 0.0 and np.isfinite(big)):
            return False
        piv[k] = p
        if p != k:
            for j in range(n):
                A[k, j], A[p, j] = A[p, j], A[k, j]
        for i in range(k + 1, n):
            lik = A[i, k] / A[k, k]
            A[i, k] = lik
            if lik != 0.0:
                for j in range(k + 1, n):
                    A[i, j] -= lik * A[k, j]
    return True


@nb.njit(cache=True, _nrt=False, nogil=True)
def lu_solve(LU, piv, b):
    """In place, ``b ← A⁻¹ b`` from :func:`lu_factor`'s factors."""
    n = LU.shape[0]
    for k in range(n):
        p = piv[k]
        if p != k:
            b[k], b[p] = b[p], b[k]
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= LU[i, k] * b[k]
        b[i] = s
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= LU[i, k] * b[k]
        b[i] = s / LU[i, i]


# ------------------------------------------------------------------ Hamilton's equations
@nb.njit(cache=True, nogil=True)
def hamiltonian_field(data, P, forces, t, q, p, M, L, v, dT, dV, out, tnc, tau, fq, fp) -> int:
    """``(fq, fp) = (∂H/∂p, −∂H/∂q + τ_nc) = (M⁻¹p, ∂T/∂q|_v − g + τ)`` at (t, q, p), as
    :meth:`.base.Problem.hamiltonian_gradient` with the force rows P when ``forces`` (τ =
    τ_nc − k (q − q_rest): the springs' potential in H, τ_nc of :func:`joint_forces` at
    (t, q, v)); M and its Cholesky factor L are left for the caller. 0, or
    :data:`BAD_STATE`."""
    if kernels.crba1(data, q, M) != 0 or not cholesky(M, M.shape[0], L):
        return BAD_STATE
    cholesky_solve(L, L.shape[0], p, v)
    if energy_pass(data, q, v, dT, dV, out) != 0:
        return BAD_STATE
    for i in range(v.shape[0]):
        fq[i] = v[i]
        fp[i] = dT[i] - dV[i]
    if forces and applied_forces(data, P, t, q, v, tnc, tau):
        return BAD_STATE
    if forces:
        for i in range(v.shape[0]):
            fp[i] += tau[i]
    return 0


@nb.njit(cache=True, _nrt=False, nogil=True)
def gather(iqd, q, qd):
    """qd[j] = q[iqd[j]]: the coordinate of speed j on 1-DOF additive joints (what the
    springs of the force rows read), 0 where the speed has none (iqd[j] < 0)."""
    for j in range(qd.shape[0]):
        qd[j] = q[iqd[j]] if iqd[j] >= 0 else 0.0


_GL_S, _GL_W = RIGHT_JACOBIAN_QUADRATURE


@nb.njit(cache=True, nogil=True)
def se3_right_jacobian(xi, S, W):
    """``J_r(ξ) = ∫₀¹ Ad_{exp(−sξ)} ds`` for a body twist ξ = (φ, ρ), by the quadrature (nodes
    S, weights W) of :func:`kanedyn.spatial.lie.se3_right_jacobian` (its numpy form, the
    reference): at each node ``Ad = [E 0; −E r× E]``, E = exp(w×), w = −sφ, r = V(w) sρ."""
    J = np.zeros((6, 6))
    eye = np.eye(3)
    w, rho = np.empty(3), np.empty(3)
    for k in range(S.shape[0]):
        s = S[k]
        for i in range(3):
            w[i] = -s * xi[i]
            rho[i] = s * xi[3 + i]
        th = np.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
        b, c, _, _ = so3_coefficients(th)
        a = 1.0 - th * th * c  # sin θ/θ
        Wx = skew3(w)
        W2 = Wx @ Wx
        E = eye + a * Wx + b * W2
        r = (eye - b * Wx + c * W2) @ rho
        ER = E @ skew3(r)
        J[:3, :3] += W[k] * E
        J[3:, 3:] += W[k] * E
        J[3:, :3] -= W[k] * ER
    return J


@nb.njit(cache=True, nogil=True)
def chart_point(data, q0, x, out):
    """``out = q0 ⊕ x``: ``q0 ⊗ exp(x)`` for ball joints, the SE(3) exponential of the body
    twist for free joints, the SE(2) one for planar joints (the joints' compiled
    ``integrate``, as ``ModelSystem.integrate_configuration``), ``q0 + x`` for additive
    joints."""
    for i in range(data.shape[0] - 1):
        a, b = int(data[i, IQ]), int(data[i, IV])
        kind = int(data[i, JTYPE])
        if kind == SPHERICAL:
            spherical.integrate(q0, a, x, b, 1.0, out)
        elif kind == FREE:
            free.integrate(q0, a, x, b, 1.0, out)
        elif kind == PLANAR:
            planar.integrate(q0, a, x, b, 1.0, out)
        else:
            for e in range(int(data[i, NVJ])):
                out[a + e] = q0[a + e] + 1.0 * x[b + e]


@nb.njit(cache=True, nogil=True)
def tangent_field(data, P, forces, iqd, t, q0, x, y, q, qd, tnc, tau, pivb, fx, fy) -> int:
    """``(ξ̇, v̇) = (J(ξ)⁻¹ v, ABA(q0 ⊕ ξ, v, τ))`` at z = (ξ, v) = (x, y), the tangent form of
    :meth:`.gauss.GaussLegendre._f` (J block diagonal, :func:`chart_block`); q ← q0 ⊕ ξ;
    τ the force rows' at (t, q, v) when ``forces`` (else tau stays 0). 0, or
    :data:`BAD_STATE`."""
    chart_point(data, q0, x, q)
    if forces:
        gather(iqd, q, qd)
        joint_forces(P, t, qd, y, tnc, tau)
        if wrench_forces_add(data, P, q, tnc, tau):  # (the wrench rows: at q itself)
            return BAD_STATE
    if kernels.aba1(data, q, y, tau, fy) != 0:
        return BAD_STATE
    for k in range(y.shape[0]):
        fx[k] = y[k]
    for i in range(data.shape[0] - 1):
        kind, b = int(data[i, JTYPE]), int(data[i, IV])
        if kind == SPHERICAL or kind == FREE or kind == PLANAR:
            Jb = chart_block(kind, x, b)
            if not lu_factor(Jb, pivb):
                return BAD_STATE
            lu_solve(Jb, pivb, fx[b:b + Jb.shape[0]])
    return 0


@nb.njit(cache=True, nogil=True)
def chart_block(kind, x, b):
    """The block of J(ξ) (``v = J ξ̇`` along q0 ⊕ ξ) of a ball (SO(3) right Jacobian), free
    (SE(3) right Jacobian, :func:`se3_right_jacobian`) or planar joint (SE(2) right
    Jacobian, :func:`se2_right_jacobian`) whose speeds start at b."""
    if kind == SPHERICAL:
        return so3_right_jacobian(x[b:b + 3])
    if kind == PLANAR:
        return se2_right_jacobian(x[b], x[b + 1], x[b + 2])
    return se3_right_jacobian(x[b:b + 6], _GL_S, _GL_W)


@nb.njit(cache=True, nogil=True)
def se2_right_jacobian(rx, ry, psi):
    """J(ξ) of a planar joint's chart ``q0 ⊕ ξ = q0 exp(ξ)``, ξ = (ρ, ψ) a body twist of
    SE(2) (speeds (v_x, v_y, ω_z)), in closed form (derived here; it equals the quadrature
    ``∫₀¹ Ad_{exp(−sξ)} ds`` of the Python joint, tested): exp(ξ) = (R(ψ), V(ψ) ρ) with
    ``V(ψ) = ∫₀¹ R(sψ) ds = (R(ψ) − 1) J₂⁻¹/ψ`` (J₂ = [[0, −1], [1, 0]]), so the body
    velocity of ψ ↦ exp(ξ) is ``(R(−ψ)(V ρ̇ + V' ρ ψ̇), ψ̇)`` with ``R(−ψ)V(ψ) = V(−ψ)`` and
    ``R(−ψ)V'(ψ) = (1 − V(−ψ))/ψ``:

        J = [[a, b, e ρ_x − f ρ_y], [−b, a, f ρ_x + e ρ_y], [0, 0, 1]],

    ``a = sin ψ/ψ``, ``b = (1 − cos ψ)/ψ``, ``e = (1 − a)/ψ = (ψ − sin ψ)/ψ²``,
    ``f = b/ψ = (1 − cos ψ)/ψ²``; e by its series below |ψ| = 0.5 (the closed form
    cancels to ≈ 6ε/ψ² there), f as ½ (sin(ψ/2)/(ψ/2))²."""
    h = 0.5 * psi
    if abs(psi) < 0.5:
        # (ψ − sin ψ)/ψ² = Σ_k (−1)^k ψ^(2k+1)/(2k+3)!, sin(h)/h = Σ_k (−1)^k h^(2k)/(2k+1)!
        e, term, k = 0.0, psi / 6.0, 0
        while abs(term) > 1e-18 * abs(psi) and k < 12:
            e += term
            term *= -psi * psi / ((2 * k + 4) * (2 * k + 5))
            k += 1
        sh, term, k = 0.0, 1.0, 0
        while abs(term) > 1e-18 and k < 12:
            sh += term
            term *= -h * h / ((2 * k + 2) * (2 * k + 3))
            k += 1
        a = 1.0 - psi * e
    else:
        a = np.sin(psi) / psi
        e = (1.0 - a) / psi
        sh = np.sin(h) / h
    f = 0.5 * sh * sh
    b = f * psi
    J = np.eye(3)
    J[0, 0], J[0, 1], J[0, 2] = a, b, e * rx - f * ry
    J[1, 0], J[1, 1], J[1, 2] = -b, a, f * rx + e * ry
    return J


@nb.njit(cache=True, nogil=True)
def stage_residual(data, P, forces, iqd, tangent, t, c, q0, p0, Z, A, h, F, R, qs, ps, M, L, v,
                   dT, dV, out, qd, tnc, tau, pivb) -> int:
    """``R_i = Z_i − h Σ_j a_ij f(t + c_j h, z0 + Z_j)`` (Z, F, R: s x 2n; z0 = (q0, p0)
    canonical, ``(0, v0)`` with q = q0 ⊕ ξ if ``tangent``; the force rows P when
    ``forces``)."""
    st, n = A.shape[0], p0.shape[0]
    for j in range(st):
        tj = t + c[j] * h
        for k in range(n):
            ps[k] = p0[k] + Z[j, n + k]
        if tangent:
            s = tangent_field(data, P, forces, iqd, tj, q0, Z[j, :n], ps, qs, qd, tnc, tau, pivb,
                              F[j, :n], F[j, n:])
        else:
            for k in range(n):
                qs[k] = q0[k] + Z[j, k]
            s = hamiltonian_field(data, P, forces, tj, qs, ps, M, L, v, dT, dV, out, tnc, tau,
                                  F[j, :n], F[j, n:])
        if s != 0:
            return BAD_STATE
    for i in range(st):
        for k in range(2 * n):
            acc = 0.0
            for j in range(st):
                acc += A[i, j] * F[j, k]
            R[i, k] = Z[i, k] - h * acc
    return 0


@nb.njit(cache=True, nogil=True)
def newton_matrix(data, P, forces, iqd, tangent, t, c, q0, p0, Z, A, h, Jm, piv) -> bool:
    """``Jm ← 1 − h [a_ij ∂f/∂z(t + c_j h, z0 + Z_j)]``, LU-factored in place (:func:`lu_factor`).

    ∂f/∂z at (q, p) (canonical; :meth:`.gauss.GaussLegendre._jf`): with ``B = ∂(Mv)/∂q``
    (RNEA tangent pass at (q, 0, v) without gravity), ``L_qq = ∂²T/∂q² − ∂g/∂q`` and v =
    M⁻¹p, ``[[−M⁻¹B, M⁻¹], [L_qq + F_q + (Bᵀ + F_v)(−M⁻¹B), (Bᵀ + F_v)M⁻¹]]``, with the force
    rows' Jacobians (when ``forces``) ``F_q = −diag(k)`` (springs) and ``F_v = −diag(C)``,
    C the slopes of dampers and friction (:func:`damping_slopes`). Tangent, at (ξ, v) with
    q = q0 ⊕ ξ: ``[[K(v), J(ξ)⁻¹], [A_q J(ξ), A_v]]``, ``A_{q,v} = M⁻¹ (F_{q,v} −
    ∂RNEA/∂(q, v))`` at a = ABA(q, v, τ), K the ``chart_rate_jacobian`` of a Model's system
    (−½ Sᵀ crm(S v_j) S for each ball, free or planar joint: −½ ω× on a ball joint).
    False if a kernel refuses the state or the matrix is singular."""
    st, n = A.shape[0], p0.shape[0]
    N = 2 * n
    M = np.empty((n, n))
    Lc = np.empty((n, n))
    Minv = np.empty((n, n))
    e = np.zeros(n)
    col = np.empty(n)
    q, y, v = np.empty(n), np.empty(n), np.empty(n)
    zero = np.zeros(n)
    B, G, K = np.empty((n, n)), np.empty((n, n)), np.empty((n, n))
    Jf = np.empty((N, N))
    qt, acc, tau = np.empty(q0.shape[0]), np.empty(n), np.zeros(n)
    qd, tnc, slope = np.empty(n), np.empty(n), np.zeros(n)
    Jm[:, :] = 0.0
    for i in range(st * N):
        Jm[i, i] = 1.0
    for j in range(st):
        if tangent:
            for k in range(n):
                y[k] = p0[k] + Z[j, n + k]
            if not _tangent_jacobian(data, P, forces, iqd, t + c[j] * h, q0, Z[j, :n], y, qt,
                                     qd, tnc, acc, tau, slope, M, Lc, Minv, B, G, Jf):
                return False
            _add_stage_blocks(Jm, Jf, A, h, j)
            continue
        for k in range(n):
            q[k] = q0[k] + Z[j, k]
            y[k] = p0[k] + Z[j, n + k]
        if kernels.crba1(data, q, M) != 0 or not cholesky(M, M.shape[0], Lc):
            return False
        for k in range(n):  # M⁻¹ column by column
            e[k] = 1.0
            cholesky_solve(Lc, Lc.shape[0], e, col)
            e[k] = 0.0
            Minv[:, k] = col
        v[:] = Minv @ y
        s = rnea_tangent_static(data, False, q, v, B)     # B = ∂(M v)/∂q
        s |= rnea_tangent_static(data, True, q, zero, G)  # ∂g/∂q
        s |= kinetic_tangent(data, q, v, K)
        if s != 0:
            return False
        dvdq = -(Minv @ B)
        Bt = B.T.copy()  # ∂P/∂v = Bᵀ + F_v
        if forces:
            damping_slopes(P, v, slope)
            for i in range(n):
                Bt[i, i] -= slope[i]
                K[i, i] -= P[i, P_K]  # ∂P/∂q|_v += F_q (the sign of −G below: K − G)
        Jf[:n, :n] = dvdq
        Jf[:n, n:] = Minv
        Jf[n:, :n] = K - G + Bt @ dvdq
        Jf[n:, n:] = Bt @ Minv
        _add_stage_blocks(Jm, Jf, A, h, j)
    return lu_factor(Jm, piv)


@nb.njit(cache=True, nogil=True)
def _add_stage_blocks(Jm, Jf, A, h, j):
    """The column j of stage blocks: ``Jm[i, j] −= h a_ij Jf`` for every stage i."""
    N = Jf.shape[0]
    for i in range(A.shape[0]):
        c = h * A[i, j]
        for r in range(N):
            for k in range(N):
                Jm[i * N + r, j * N + k] -= c * Jf[r, k]


@nb.njit(cache=True, nogil=True)
def _tangent_jacobian(data, P, forces, iqd, t, q0, x, v, q, qd, tnc, acc, tau, slope, M, Lc,
                      Minv, Dq, Dv, Jf) -> bool:
    """∂f/∂z of the tangent form at (t, ξ, v) = (t, x, v) (:func:`newton_matrix`) into Jf."""
    n = v.shape[0]
    chart_point(data, q0, x, q)
    if forces:
        gather(iqd, q, qd)
        joint_forces(P, t, qd, v, tnc, tau)
        damping_slopes(P, v, slope)
        if wrench_forces_add(data, P, q, tnc, tau):
            return False
    if kernels.aba1(data, q, v, tau, acc) != 0 or kernels.crba1(data, q, M) != 0 \
            or not cholesky(M, M.shape[0], Lc):
        return False
    e, col = np.zeros(n), np.empty(n)
    for k in range(n):
        e[k] = 1.0
        cholesky_solve(Lc, Lc.shape[0], e, col)
        e[k] = 0.0
        Minv[:, k] = col
    if rnea_tangent(data, True, q, v, acc, Dq, Dv) != 0:
        return False
    if forces:  # ∂RNEA/∂(q, v) − F_{q,v}: F_q = −diag(k), F_v = −diag(C)
        for i in range(n):
            Dq[i, i] += P[i, P_K]
            Dv[i, i] += slope[i]
    J = np.eye(n)
    K = np.zeros((n, n))
    for i in range(data.shape[0] - 1):
        kind, b = int(data[i, JTYPE]), int(data[i, IV])
        if kind == PLANAR:
            J[b:b + 3, b:b + 3] = chart_block(kind, x, b)
            # −½ Sᵀ crm(S v_j) S: (S v_j) × (S x) = (v_y ψ − ω x_y, ω x_x − v_x ψ, 0) in
            # the speeds' order (v_x, v_y, ω_z)
            K[b, b + 1], K[b, b + 2] = 0.5 * v[b + 2], -0.5 * v[b + 1]
            K[b + 1, b], K[b + 1, b + 2] = -0.5 * v[b + 2], 0.5 * v[b]
        elif kind == SPHERICAL or kind == FREE:
            Jb = chart_block(kind, x, b)
            m = Jb.shape[0]
            J[b:b + m, b:b + m] = Jb
            # −½ crm(v_j): −½ ω× on the rotation, −½ [ω× 0; v× ω×] for a twist
            K[b:b + 3, b:b + 3] = -0.5 * skew3(v[b:b + 3])
            if kind == FREE:
                K[b + 3:b + 6, b:b + 3] = -0.5 * skew3(v[b + 3:b + 6])
                K[b + 3:b + 6, b + 3:b + 6] = -0.5 * skew3(v[b:b + 3])
    Jf[:n, :n] = K
    Jf[:n, n:] = np.linalg.inv(J)
    Jf[n:, :n] = -(Minv @ Dq) @ J
    Jf[n:, n:] = -(Minv @ Dv)
    return True


# ------------------------------------------------------------------ energy projection
@nb.njit(cache=True, nogil=True, inline="always")
def energy_scale(E0: float, T: float, E: float) -> float:
    """The size against which an energy projection judges |E − target|:
    1 + |E₀| + |T| + |E − T| at the state projected (:meth:`.projection.Projected._scale`,
    the reference) — a falling body's T and V grow apart while E stays near E₀, and a bar
    on 1 + |E₀| alone fell below the rounding of T + V."""
    return 1.0 + abs(E0) + abs(T) + abs(E - T)


@nb.njit(cache=True, nogil=True)
def project_energy_standard(data, P, forces, iqd, tangent, q, v, target, E0, M, tol, maxiter,
                            dT, dV, out, qs, vs, dz, t2, qd):
    """In place, ``(q, v) ← (q, v) + λ (∂E/∂q, M v)`` with ``E(q, v) = target``: the
    projection of :class:`.projection.Projected` for ``project="energy"`` (Hairer, Lubich
    & Wanner 2006, IV.4): λ by simplified Newton with the slope ``|∂E/∂q|² + |Mv|²`` at
    the start, until ``|E − target| ≤ 4 tol s`` (or ``1e-13 s`` after ``maxiter``), s the
    size :func:`energy_scale` of the terms of E at the start; q moves by ``q ⊕ λ ∂E/∂q``
    if ``tangent``. M is M(q) on entry. E0 is the initial energy; the target is E0 + W_nc
    (the reference's). With the force rows P (``forces``) E includes the springs'
    potential. Returns (status, iterations): status 0, or :data:`NEWTON_FAILED` (not
    converged), :data:`BAD_STATE`."""
    n = v.shape[0]
    if energy_pass(data, q, v, dT, dV, out) != 0:
        return BAD_STATE, 0
    b = M @ v
    dd = 0.0
    for i in range(n):
        dT[i] += dV[i]  # ∂E/∂q
    G = out[0] + out[1] - target
    if forces:
        gather(iqd, q, qd)
        spring_gradient_add(P, qd, 1.0, dT)
        G += spring_potential(P, qd)
    for i in range(n):
        dd += dT[i] * dT[i] + b[i] * b[i]
    ginv = 1.0 / dd
    scale = energy_scale(E0, out[0], G + target)
    lam = 0.0
    for it in range(1, maxiter + 1):
        lam -= ginv * G
        for i in range(n):
            dz[i] = dT[i] * lam
            vs[i] = v[i] + b[i] * lam
        if tangent:
            chart_point(data, q, dz, qs)
        else:
            for i in range(n):
                qs[i] = q[i] + dz[i]
        if energy_pass(data, qs, vs, dz, t2, out) != 0:
            return BAD_STATE, it
        G = out[0] + out[1] - target
        if forces:
            gather(iqd, qs, qd)
            G += spring_potential(P, qd)
        if abs(G) <= tol * scale * 4:
            q[:] = qs
            v[:] = vs
            return 0, it
    if abs(G) <= 1e-13 * scale:
        q[:] = qs
        v[:] = vs
        return 0, maxiter
    return NEWTON_FAILED, maxiter


@nb.njit(cache=True, nogil=True)
def _invariants(data, P, forces, iqd, q, v, target, rows, h0, dT, dV, out, qd, G) -> bool:
    """G ← (E − target, [L; P][rows] − h0[rows]) at (q, v) (with the springs' potential of
    the force rows in E), dT ← ∂E/∂q; False if the kernel refuses q."""
    if energy_pass(data, q, v, dT, dV, out) != 0:
        return False
    G[0] = out[0] + out[1] - target
    for i in range(v.shape[0]):
        dT[i] += dV[i]
    if forces:
        gather(iqd, q, qd)
        spring_gradient_add(P, qd, 1.0, dT)
        G[0] += spring_potential(P, qd)
    for j in range(rows.shape[0]):
        G[1 + j] = out[2 + rows[j]] - h0[rows[j]]
    return True


@nb.njit(cache=True, nogil=True)
def project_standard(data, P, forces, iqd, tangent, q, v, target, E0, M, rows, h0, tol,
                     maxiter, dT, dV, out, qs, vs, qd, D, G, e, dz):
    """In place, the projection of :class:`.projection.Projected` onto the energy and the
    rows ``rows`` of the momentum [L; P] (world, about the origin; targets h0 from the
    run's start), invariants ("energy", momentum rows...) in that order: ``(q, v) ← (q, v)
    ⊕ Dᵀλ`` with G(q, v) = 0, D the gradients at the start — energy ``(∂E/∂q, M v)``,
    momentum ``∂h/∂v`` exactly (h is linear in v: h(q, e_k)) and ``∂h/∂q`` by central
    differences of step 1e-6 in the chart —, λ by simplified Newton with ``(D Dᵀ)⁻¹``,
    until ``|G| ≤ 4 tol s`` (or ``1e-13 s`` after ``maxiter``), s = :func:`energy_scale`
    + max|h0|.
    Returns (status, iterations) as :func:`project_energy_standard`."""
    n = v.shape[0]
    k = 1 + rows.shape[0]
    if not _invariants(data, P, forces, iqd, q, v, target, rows, h0, dT, dV, out, qd, G):
        return BAD_STATE, 0
    T0 = out[0]  # (out is overwritten by the columns below)
    b = M @ v
    for i in range(n):
        D[0, i] = dT[i]
        D[0, n + i] = b[i]
    for c in range(n):
        e[:] = 0.0
        e[c] = 1.0
        if energy_pass(data, q, e, dV, dz, out) != 0:
            return BAD_STATE, 0
        for j in range(rows.shape[0]):
            D[1 + j, n + c] = out[2 + rows[j]]
        for sgn in (1.0, -1.0):
            e[c] = sgn * 1e-6
            if tangent:
                chart_point(data, q, e, qs)
            else:
                for i in range(q.shape[0]):
                    qs[i] = q[i] + e[i]
            if energy_pass(data, qs, v, dV, dz, out) != 0:
                return BAD_STATE, 0
            for j in range(rows.shape[0]):
                if sgn > 0:
                    D[1 + j, c] = out[2 + rows[j]]
                else:
                    D[1 + j, c] = (D[1 + j, c] - out[2 + rows[j]]) / 2e-6
    Ginv = np.linalg.inv(D @ D.T)
    scale = energy_scale(E0, T0, G[0] + target)
    hmax = 0.0
    for j in range(6):
        hmax = max(hmax, abs(h0[j]))
    scale += hmax
    lam = np.zeros(k)
    worst = 0.0
    for it in range(1, maxiter + 1):
        lam -= Ginv @ G
        for i in range(n):  # Dᵀλ: e the step in q (the chart), vs the new speeds
            sq, sv = 0.0, 0.0
            for j in range(k):
                sq += D[j, i] * lam[j]
                sv += D[j, n + i] * lam[j]
            e[i] = sq
            vs[i] = v[i] + sv
        if tangent:
            chart_point(data, q, e, qs)
        else:
            for i in range(n):
                qs[i] = q[i] + e[i]
        if not _invariants(data, P, forces, iqd, qs, vs, target, rows, h0, dz, dV, out, qd,
                           G):
            return BAD_STATE, it
        worst = 0.0
        for j in range(k):
            worst = max(worst, abs(G[j]))
        if worst <= tol * scale * 4:
            q[:] = qs
            v[:] = vs
            return 0, it
    if worst <= 1e-13 * scale:
        q[:] = qs
        v[:] = vs
        return 0, maxiter
    return NEWTON_FAILED, maxiter


# ------------------------------------------------------------------ the predictor
@nb.njit(cache=True, _nrt=False, nogil=True)
def extrapolate(hist, newest, k, out):
    """``out = Σ_{j=1..k} (−1)^(j+1) C(k, j) Z_(n−j)``: the polynomial of degree k − 1 through
    the unknowns of the last k steps (``hist``, a ring whose latest entry is ``newest``),
    extrapolated one step on (error O(h^k) times the k-th derivative of the unknowns)."""
    history = hist.shape[0]
    out[:, :] = 0.0
    coef = 1.0
    for j in range(k):
        coef = coef * (k - j) / (j + 1)  # C(k, j + 1)
        c = coef if j % 2 == 0 else -coef
        h = hist[(newest - j) % history]
        for i in range(out.shape[0]):
            for m in range(out.shape[1]):
                out[i, m] += c * h[i, m]


@nb.njit(cache=True, _nrt=False, nogil=True)
def best_order(hist, newest, known, Z, work) -> int:
    """The order k ≤ ``known`` whose extrapolation (:func:`extrapolate`) came closest to
    this step's solution Z — the one to predict the next step with (high orders win on
    smooth motion, low ones when the step resolves it poorly); while the ring fills, the
    next order is tried as soon as it can be formed."""
    best, order = np.inf, 1
    for k in range(1, known + 1):
        extrapolate(hist, newest, k, work)
        e = 0.0
        for i in range(Z.shape[0]):
            for m in range(Z.shape[1]):
                e = max(e, abs(work[i, m] - Z[i, m]))
        if e < best:
            best, order = e, k
    if known < hist.shape[0]:
        order = max(order, known + 1)
    return order


# ------------------------------------------------------------------ the loop
@nb.njit(cache=True, nogil=True)
def _gauss_loop(data, P, forces, iqd, t0, tangent, q0, v0, dt, n_steps, every, A, Ainv, b, c,
                d, tol, maxiter, refresh_after, history, project, prows, ptol, pmaxiter, blowup,
                Q, V, Wk, iters, status):
    n = v0.shape[0]
    st = A.shape[0]
    N = 2 * n
    q, v = q0.copy(), v0.copy()
    M, L = np.empty((n, n)), np.empty((n, n))
    vk, dT, dV, out = np.empty(n), np.empty(n), np.empty(n), np.empty(8)
    qs, ps, t1, t2 = np.empty(q0.shape[0]), np.empty(n), np.empty(n), np.empty(n)
    p0, tau, pivb = np.empty(n), np.zeros(n), np.zeros(6, dtype=np.int64)
    qd, tnc, vst = np.zeros(n), np.zeros(n), np.empty(n)
    work = 0.0
    Wk[0] = 0.0
    Z = np.zeros((st, N))
    F = np.empty((st, N))
    R = np.empty((st, N))
    Zs, Rs = np.empty((st, N)), np.empty((st, N))
    hist = np.zeros((history, st, N))  # the stages of the last steps, a ring
    newest, order = -1, 1
    dx = np.empty(st * N)
    Jm = np.empty((st * N, st * N))
    piv = np.zeros(st * N, dtype=np.int64)
    have_J, known, last_h, last_it = False, 0, 0.0, 0
    if energy_pass(data, q, v, dT, dV, out) != 0:
        status[0], status[1] = BAD_STATE, 0
        return 0
    E0 = out[0] + out[1]
    # the momentum rows the projection keeps (``prows``, with the energy) at the start
    h0 = out[2:8].copy()
    kp = 1 + prows.shape[0]
    Dp, Gp, ep, dzp = np.empty((kp, 2 * n)), np.empty(kp), np.empty(n), np.empty(n)
    if forces:
        gather(iqd, q, qd)
        E0 += spring_potential(P, qd)
    vmax0 = largest_speed(v)
    k_out = store(q, v, Q, V, 0)
    if not tangent and kernels.crba1(data, q, M) != 0:
        status[0], status[1] = BAD_STATE, 0
        return k_out
    for step in range(n_steps):
        h = dt[step]
        t = t0 + step * dt[0]  # the step's start (the grid of step_grid and run_fixed)
        if tangent:
            p0[:] = v  # z0 = (0, v0)
        else:
            p0[:] = M @ v  # z0 = (0, M v0), M = M(q0) from the end of the last step
        if h != last_h:
            have_J, known = False, 0  # a new step size: a new matrix, no history
        # predictor: the stages of the last steps extrapolated, else c_i h f(z0)
        if known > 0:
            extrapolate(hist, newest, min(order, known), Z)
        else:
            Z[:, :] = 0.0
            if stage_residual(data, P, forces, iqd, tangent, t, c, q, p0, Z, A, h, F, R, qs,
                              ps, M, L, vk, dT, dV, out, qd, tnc, tau, pivb) != 0:
                status[0], status[1] = BAD_STATE, step
                return k_out
            for i in range(st):
                for k in range(N):
                    Z[i, k] = c[i] * h * F[0, k]
        # Newton, the rules of base.newton with a closed-form matrix
        if stage_residual(data, P, forces, iqd, tangent, t, c, q, p0, Z, A, h, F, R, qs, ps, M,
                          L, vk, dT, dV, out, qd, tnc, tau, pivb) != 0 \
                or not np.isfinite(largest_speed(R.ravel())):
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        Zs[:, :] = Z
        Rs[:, :] = R
        if not have_J or last_it > refresh_after:
            if not newton_matrix(data, P, forces, iqd, tangent, t, c, q, p0, Z, A, h, Jm,
                                 piv):
                status[0], status[1] = NEWTON_FAILED, step
                return k_out
            have_J = True
        refreshed = False
        last = np.inf
        ok = False
        it = 0
        while it < maxiter:
            it += 1
            dx[:] = R.ravel()
            lu_solve(Jm, piv, dx)
            size, scale = 0.0, 0.0
            for i in range(st):
                for k in range(N):
                    Z[i, k] -= dx[i * N + k]
                    size = nan_max(size, abs(dx[i * N + k]))
                    scale = max(scale, abs(Z[i, k]))
            # the stopping test first: z1 needs no f at the converged stages, so the
            # residual there (which the reference evaluates) is skipped
            if np.isfinite(size):
                theta = size / last if last < np.inf and last > 0 else 1.0
                if (size <= tol * scale
                        or (theta < 0.5 and theta / (1 - theta) * size <= tol * scale)
                        # at the residual's roundoff: an update that no longer shrinks (not
                        # the first: that small, it says only that the predictor was good)
                        or (last < np.inf and size <= 1e-9 * scale and theta >= 0.5)):
                    ok = True
                    break
            bad = stage_residual(data, P, forces, iqd, tangent, t, c, q, p0, Z, A, h, F, R, qs,
                                 ps, M, L, vk, dT, dV, out, qd, tnc, tau, pivb)
            finite = bad == 0 and np.isfinite(largest_speed(R.ravel())) and np.isfinite(size)
            if not refreshed and (not finite or (it >= 2 and size > last)):
                # diverging with the kept matrix: restart from the predictor, fresh matrix
                Z[:, :] = Zs
                R[:, :] = Rs
                if not newton_matrix(data, P, forces, iqd, tangent, t, c, q, p0, Z, A, h, Jm,
                                 piv):
                    break
                refreshed, last = True, np.inf
                continue
            if not finite:
                break
            if it >= 2 and size > 0.25 * last and not refreshed:
                if not newton_matrix(data, P, forces, iqd, tangent, t, c, q, p0, Z, A, h, Jm,
                                 piv):
                    break
                refreshed = True
            last = size
        if not ok:
            status[0], status[1] = NEWTON_FAILED, step
            return k_out
        last_it, last_h = it, h
        if forces:
            # W_nc += h Σ b_i v_iᵀ τ_nc(t + c_i h, q_i, v_i) (the reference's quadrature):
            # v_i the stage velocity, y_i in tangent form, else q̇ at the stage, (A⁻¹Z)_i/h
            # (= f_i at the solution of the stage equations); q_i = q + x_i in canonical
            # form, q ⊕ ξ_i in tangent form (the wrench rows take it)
            for i in range(st):
                for k in range(n):
                    if tangent:
                        vst[k] = p0[k] + Z[i, n + k]
                    else:
                        acc = 0.0
                        for j in range(st):
                            acc += Ainv[i, j] * Z[j, k]
                        vst[k] = acc / h
                        qs[k] = q[k] + Z[i, k]
                if tangent:
                    joint_forces(P, t + c[i] * h, qd, vst, tnc, tau)
                    chart_point(data, q, Z[i, :n], qs)
                    if wrench_forces_add(data, P, qs, tnc, tau):
                        status[0], status[1] = NEWTON_FAILED, step
                        return k_out
                elif applied_forces(data, P, t + c[i] * h, qs, vst, tnc, tau):
                    status[0], status[1] = NEWTON_FAILED, step
                    return k_out
                pw = 0.0
                for k in range(n):
                    pw += vst[k] * tnc[k]
                work += h * b[i] * pw
        order = best_order(hist, newest, known, Z, Zs)
        newest, known = (newest + 1) % history, min(known + 1, history)
        hist[newest] = Z
        # z1 = z0 + Σ d_i Z_i; canonical: q1 = q0 + x1, v1 = M(q1)⁻¹ p1; tangent:
        # q1 = q0 ⊕ x1, v1 = y1
        for k in range(n):
            sq, sp = 0.0, 0.0
            for i in range(st):
                sq += d[i] * Z[i, k]
                sp += d[i] * Z[i, n + k]
            t1[k] = sq
            ps[k] = p0[k] + sp
        if tangent:
            chart_point(data, q, t1, qs)
            q[:] = qs
            v[:] = ps
        else:
            for k in range(n):
                q[k] += t1[k]
        if (not tangent or project) and kernels.crba1(data, q, M) != 0:
            status[0], status[1] = BAD_STATE, step
            return k_out
        if not tangent:
            if not cholesky(M, M.shape[0], L):
                status[0], status[1] = BAD_STATE, step
                return k_out
            cholesky_solve(L, L.shape[0], ps, v)
        if project and prows.shape[0] > 0:
            s, pit = project_standard(data, P, forces, iqd, tangent, q, v, E0 + work, E0, M,
                                      prows, h0, ptol, pmaxiter, dT, dV, out, qs, ps, qd, Dp,
                                      Gp, ep, dzp)
        elif project:
            s, pit = project_energy_standard(data, P, forces, iqd, tangent, q, v, E0 + work, E0,
                                             M, ptol, pmaxiter, dT, dV, out, qs, ps, t1, t2,
                                             qd)
            it += pit
            if s != 0:
                status[0], status[1] = s, step
                return k_out
            if not tangent and kernels.crba1(data, q, M) != 0:
                status[0], status[1] = BAD_STATE, step
                return k_out
        iters[step] = it
        g = state_guard(q, v, vmax0, blowup)
        if g != 0:
            status[0], status[1], status[2] = STATE_GUARD, step, g
            Q[Q.shape[0] - 1, :] = q  # the state that failed, for the report
            V[V.shape[0] - 1, :] = v
            return k_out
        kept = save_sample(step, n_steps, every, q, v, Q, V, k_out)
        if kept != k_out:
            Wk[k_out] = work
            k_out = kept
    return k_out


def report_state_guard(problem, name: str, status, Q, V, times) -> None:
    """Raise the DivergenceError of :func:`.base.check_state` for the state a compiled loop
    stopped at (step ``status[1]``, stored in the last rows of Q and V)."""
    from .base import check_state

    n = int(status[1])
    v0 = np.asarray(problem.v0, float)
    vmax0 = float(np.abs(v0).max()) if v0.size else 0.0
    check_state(problem, name, n + 1, float(times[n + 1]), Q[-1].copy(), V[-1].copy(), vmax0)


def dof_coordinates(model) -> np.ndarray:
    """``iqd`` (nv,): the index in q of each speed's coordinate on 1-DOF additive joints
    (what the springs of the force rows read, :func:`gather`), −1 on the others' speeds."""
    out = np.full(model.nv, -1, dtype=np.int64)
    for body in model.bodies:
        if body.joint.chart_is_additive and body.joint.nv == 1:
            out[body.iv.start] = body.iq.start
    return out


def run(problem, stages: int, tol: float, maxiter: int, refresh_after: int, name: str,
        project: bool = False, history: int = PREDICTOR_STEPS, tangent: bool = False,
        label: str | None = None, invariants: tuple[str, ...] = ("energy",)):
    """The whole run of midpoint (``stages=1``) or gauss4 (2), optionally with the
    projection onto ``invariants`` (the energy first, then momentum rows:
    :func:`momentum_rows`), in the compiled loop: a Solution, or None to fall back.
    ``label``: the Solution's method name (default ``name``, with ``+project(...)`` if
    ``project``)."""
    from .base import Solution

    s = problem.system
    model = s.tree_model if tangent else s.compiled_step
    P = problem.force_rows if problem.force_rows is not None else empty_rows(s.nv)
    n_steps, steps, times, every, keep = step_grid(problem.dt, problem.t0, problem.t_final,
                                                   problem.save_every)
    # one spare row: where a loop leaves the state that failed its guard
    Q = np.empty((len(keep) + 1, s.nq))
    V = np.empty((len(keep) + 1, s.nv))
    W = np.zeros(len(keep) + 1)
    iters = np.zeros(n_steps, dtype=np.int32)
    status = np.zeros(3, dtype=np.int64)
    A, Ainv, b, c, d = tableau(stages)
    ptol, pmaxiter = _projection_defaults()
    args = (flatten(model).data, np.ascontiguousarray(P, float), has_forces(P),
            dof_coordinates(model), float(problem.t0), bool(tangent),
            np.ascontiguousarray(problem.q0, float), np.ascontiguousarray(problem.v0, float),
            steps, n_steps, every, A, Ainv, b, c, d, float(tol), int(maxiter),
            int(refresh_after), int(history), bool(project),
            np.array(momentum_rows(invariants), dtype=np.int64), ptol, pmaxiter,
            float(problem.blowup), Q, V, W, iters, status)
    if not ready_or_python(_gauss_loop, args, "first_run"):
        return None  # (on a cold cache: the Python steps, while a process compiles it)
    try:
        _gauss_loop(*args)
    except np.linalg.LinAlgError:
        # the projection's ∇G∇Gᵀ is singular (dependent invariants): the Python steps
        # meet the same matrix and say so, with the step and the invariants
        return None
    if label is None:
        label = f"{name}+project{tuple(invariants)}" if project else name
    if status[0] == STATE_GUARD:
        report_state_guard(problem, label, status, Q, V, times)
    if status[0]:
        return None  # the Python method takes the whole run, and reports what happens
    return Solution(times[keep], Q[:-1], V[:-1], W[:-1], {"newton_iterations": iters}, label)


def momentum_rows(invariants) -> list[int]:
    """The rows of [L; P] that a projection onto ``invariants`` keeps beside the energy,
    in their order; None when the compiled projection cannot take them (the energy must
    come first: the order of the rows is the order of the reference's equations)."""
    from .projection import _ROWS

    names = tuple(invariants)
    if not names or names[0] != "energy" or "energy" in names[1:]:
        return None
    rows: list[int] = []
    for nm in names[1:]:
        r = _ROWS[nm]
        rows.extend(range(r.start, r.stop))
    return rows


def tableau(stages: int):
    """(A, A⁻¹, b, c, d = bᵀA⁻¹) of the Gauss method of ``stages`` stages, contiguous, as
    :func:`_gauss_loop` takes them."""
    from .gauss import TABLEAUX

    A, b, c = TABLEAUX[stages]
    Ainv = np.linalg.inv(A)
    return (np.ascontiguousarray(A), np.ascontiguousarray(Ainv), np.ascontiguousarray(b),
            np.ascontiguousarray(c), np.ascontiguousarray(b @ Ainv))


def tangent_applicable(problem, planar: bool = False, additive: bool = False) -> bool:
    """The tangent form of the loop takes a Model's system (``tree_model``) whose joints are
    revolute, prismatic, helical, ball or free joints (and planar ones if ``planar``, which
    every caller passes now: midpoint, gauss4 and energy_momentum's projection in this
    loop, and the chart loops of :mod:`.verlet_compiled` and :mod:`.avf_chart_compiled`;
    the default stays False for a caller that has no planar branch), at least one
    of them not additive (else the canonical form applies) unless ``additive`` — the
    caller that steps an additive chain in the tangent form too, energy_momentum's
    ``"projection"`` variant (``_TangentMidpoint``: z = (ξ, v), q = q0 + ξ, ξ̇ = v, which
    :func:`chart_point` and :func:`tangent_field` compute so on those joints) —, without
    rotor armature or a progress bar, whose force elements (if any) all have rows of
    :mod:`kanedyn.forces.kernel` (``problem.force_rows``)."""
    from ..dynamics.layout import HELICAL, PLANAR, PRISMATIC, REVOLUTE

    s = problem.system
    model = getattr(s, "tree_model", None)
    no_forces = problem.tau_cons is None and problem.tau_nc is None
    if (model is None or (getattr(s, "chart_is_additive", True) and not additive)
            or model.armature.any()
            or not (no_forces or problem.force_rows is not None)
            or problem.progress is not None):
        return False
    kinds = flatten(model).data[:-1, JTYPE]
    allowed = (REVOLUTE, PRISMATIC, HELICAL, SPHERICAL, FREE) + ((PLANAR,) if planar else ())
    return bool(np.isin(kinds, allowed).all())


def _projection_defaults() -> tuple[float, int]:
    """(tol, maxiter) of :class:`.projection.Projected` as ``kd.simulate`` builds it."""
    import inspect

    from .projection import Projected

    sig = inspect.signature(Projected.__init__).parameters
    return float(sig["tol"].default), int(sig["maxiter"].default)


def first_run() -> None:
    """Three midpoint steps of a one-link pendulum, which compile :func:`_gauss_loop` for
    the argument types of every run, midpoint or gauss4, canonical or tangent
    (:func:`kanedyn.dynamics.first_calls.loop_ready`)."""
    from ..model.builders import pendulum_chain

    run(first_run_problem(pendulum_chain(1), [0.3], [0.0]), 1, 1e-12, 20, 3, "midpoint")
