"""Inverse dynamics by the recursive Newton-Euler algorithm (Featherstone 2008, Table 5.1).

Forward pass, parent λ(i) before child i (body coordinates, a_0 = -a_grav):

    v_i = X_up[i] v_λ(i) + S_i q̇_i
    a_i = X_up[i] a_λ(i) + S_i q̈_i + v_i × S_i q̇_i
    f_i = I_i a_i + v_i ×* I_i v_i - f_ext,i

backward pass, child before parent:

    τ_i = S_iᵀ f_i (+ armature_i q̈_i),    f_λ(i) += X_up[i]ᵀ f_i

:func:`rnea_core` (one state, no allocation), :func:`rnea_lanes` (several states at
once, the same bits), :func:`rnea_batch`, and the single-state entry points on the
packed buffer (``rnea_f``, ``rnea_f_fext``, ``nle_f`` with q̈ = 0, ``gravity_f`` with
q̇ = q̈ = 0). The readable form: :func:`kanedyn.dynamics.reference.rnea`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .. import _compiled
from ..layout import ARMATURE, AXIS_ID, GRAV, HDR, IQ, IV, JTYPE, MASS, NV, NVJ, PARENT, SIDX, WIDTH
from .constants import BAD_SHAPE, NOT_FINITE
from .joint_rows import (
    joint_transform,
    lane_cos_sin,
    lane_joint_transform,
    lane_motion_subspace_times,
    lane_unit_axis_transform,
    motion_subspace_times,
    motion_subspace_transpose_times,
)
from .lanes import BATCH_TASK, LANE_BODIES, LANES, lane_cross_unit_add, stack_array
from .spatial_rows import (
    all_finite,
    cross_force_add,
    cross_force_s,
    cross_motion_add,
    cross_motion_s,
    cross_unit_add,
    inertia_times,
    inertia_times_s,
    state_lengths_ok,
    x_motion,
    x_motion_s,
    xt_force,
    xt_force_add,
)

_compiled.key_cache(__name__)  # (see dynamics/_compiled.py)


@njit(cache=True, _nrt=False)
def rnea_core(data, q, v, a, fext, use_v, use_a, use_fext, tau, X, w):
    """``τ = M(q) a + h(q, v) - Σ J_iᵀ f_ext,i`` into tau (Table 5.1).

    ``use_v``/``use_a`` False treat v/a as zero (nonlinear_effects, gravity_torques).
    Workspace (written, never read before): ``X`` (nb, 12), X_up[i] = (E row-major, r);
    ``w`` (3 nb + 2, 6), the spatial vectors: rows ``i`` (v_i), ``nb + i`` (a_i),
    ``2 nb + i`` (f_i), and two spare rows at ``3 nb`` (S v_i, then S a_i or I v_i).
    """
    nb = data.shape[0] - 1
    A = nb
    F = 2 * nb
    J = 3 * nb
    g0 = data[nb, GRAV]
    g1 = data[nb, GRAV + 1]
    g2 = data[nb, GRAV + 2]
    for m in range(6):
        w[J, m] = 0.0
    for i in range(nb):  # forward pass: parent before child
        if joint_transform(data, i, q, X):
            return i + 1
        p = int(data[i, PARENT])
        if use_v:
            motion_subspace_times(data, i, v, w, J)
        if p < 0:
            # a_0 = -a_grav = [0; -g], seen from body i
            w[J + 1, 0] = 0.0
            w[J + 1, 1] = 0.0
            w[J + 1, 2] = 0.0
            w[J + 1, 3] = -g0
            w[J + 1, 4] = -g1
            w[J + 1, 5] = -g2
            x_motion(X, i, w, J + 1, w, A + i)
            for m in range(6):
                w[i, m] = w[J, m]
        else:
            x_motion(X, i, w, A + p, w, A + i)
            if use_v:
                x_motion(X, i, w, p, w, i)
                for m in range(6):
                    w[i, m] += w[J, m]
                k = int(data[i, SIDX])
                if k >= 0:  # S q̇ = q̇ e_k
                    cross_unit_add(w, i, k, v[int(data[i, IV])], w, A + i)
                else:
                    cross_motion_add(w, i, w, J, w, A + i)
        if use_a:
            motion_subspace_times(data, i, a, w, J + 1)
            for m in range(6):
                w[A + i, m] += w[J + 1, m]
        inertia_times(data, i, MASS, w, A + i, w, F + i)
        if use_v:
            inertia_times(data, i, MASS, w, i, w, J + 1)  # I v
            cross_force_add(w, i, w, J + 1, w, F + i)
        if use_fext:
            for m in range(6):
                w[F + i, m] -= fext[i, m]
    for i in range(nb - 1, -1, -1):  # backward pass: child before parent
        o = int(data[i, IV])
        k = int(data[i, SIDX])
        if k >= 0:
            tau[o] = w[F + i, k]
        else:
            for c in range(int(data[i, NVJ])):
                tau[o + c] = motion_subspace_transpose_times(data, i, c, w, F + i)
        arm = data[i, ARMATURE]
        if use_a and arm != 0.0:  # the rotor's inertia: τ += armature ⊙ a
            for c in range(int(data[i, NVJ])):
                tau[o + c] += arm * a[o + c]
        p = int(data[i, PARENT])
        if p >= 0:
            xt_force_add(X, i, w, F + i, w, F + p)
    return 0 if all_finite(tau) else NOT_FINITE


@njit(cache=True)
def rnea_into(data, q, v, a, fext, use_v, use_a, use_fext, tau):
    """:func:`rnea_core` with a workspace of its own (for the batched and compiled callers)."""
    nb = data.shape[0] - 1
    return rnea_core(data, q, v, a, fext, use_v, use_a, use_fext, tau,
                     np.empty((nb, 12)), np.empty((3 * nb + 2, 6)))


@njit(cache=True, nogil=True)
def rnea1(data, q, v, a, tau):
    """One state, no external forces; status (see module doc)."""
    nv = int(data[data.shape[0] - 1, NV])
    if not (state_lengths_ok(data, q, nv, v) and a.shape[0] == nv and tau.shape[0] == nv):
        return BAD_SHAPE
    return rnea_into(data, q, v, a, data, True, True, False, tau)  # data: unused f_ext


# --- several states at once (see lanes.py) ------------------------------------------

@njit(cache=True, forceinline=True)
def rnea_lanes(data, Q, V, A, Fx, use_v, use_a, use_fext, k0, L, out, status, Xs, Ws):
    """:func:`rnea_core` for the L <= LANES states ``k0 .. k0 + L - 1`` at once (see
    "Several states at once" in lanes.py). ``Xs``, ``Ws``: scalar rows for the lane-by-lane
    fallbacks."""
    X = stack_array((LANE_BODIES, 12, LANES))  # X_up[i]
    Vb = stack_array((LANE_BODIES, 6, LANES))  # v_i
    Ab = stack_array((LANE_BODIES, 6, LANES))  # a_i
    Fb = stack_array((LANE_BODIES, 6, LANES))  # f_i
    Sv = stack_array((6, LANES))  # S_i q̇_i
    T = stack_array((6, LANES))  # scratch
    C = stack_array((2, LANES))  # cos, sin of a joint angle
    nb = data.shape[0] - 1
    for l in range(L):
        status[k0 + l] = 0
    for i in range(nb):  # forward pass: parent before child
        # X_up[i] (as joint_transform: libm's cos and sin)
        k = int(data[i, IQ])
        if data[i, AXIS_ID] >= 0:
            lane_cos_sin(Q, k0, k, L, C[0], C[1])
            lane_unit_axis_transform(data, i, C[0], C[1], X, i, L)
        else:
            for l in range(L):
                if lane_joint_transform(data, i, Q[k0 + l], Xs, X, i, l) and status[k0 + l] == 0:
                    status[k0 + l] = i + 1
        p = int(data[i, PARENT])
        o = int(data[i, IV])
        jt = int(data[i, JTYPE])
        ki = int(data[i, SIDX])
        # S_i q̇_i (as motion_subspace_times)
        if use_v:
            lane_motion_subspace_times(data, i, jt, o, V, k0, L, Sv)
        if p < 0:
            # a_0 = -a_grav = [0; -g], seen from body i
            g0, g1, g2 = -data[nb, GRAV], -data[nb, GRAV + 1], -data[nb, GRAV + 2]
            for l in range(L):
                (Ab[i, 0, l], Ab[i, 1, l], Ab[i, 2, l], Ab[i, 3, l], Ab[i, 4, l],
                 Ab[i, 5, l]) = x_motion_s(
                    X[i, 0, l], X[i, 1, l], X[i, 2, l], X[i, 3, l], X[i, 4, l], X[i, 5, l],
                    X[i, 6, l], X[i, 7, l], X[i, 8, l], X[i, 9, l], X[i, 10, l], X[i, 11, l],
                    0.0, 0.0, 0.0, g0, g1, g2)
            for m in range(6):
                for l in range(L):
                    Vb[i, m, l] = Sv[m, l] if use_v else 0.0
        else:
            for l in range(L):
                (Ab[i, 0, l], Ab[i, 1, l], Ab[i, 2, l], Ab[i, 3, l], Ab[i, 4, l],
                 Ab[i, 5, l]) = x_motion_s(
                    X[i, 0, l], X[i, 1, l], X[i, 2, l], X[i, 3, l], X[i, 4, l], X[i, 5, l],
                    X[i, 6, l], X[i, 7, l], X[i, 8, l], X[i, 9, l], X[i, 10, l], X[i, 11, l],
                    Ab[p, 0, l], Ab[p, 1, l], Ab[p, 2, l], Ab[p, 3, l], Ab[p, 4, l],
                    Ab[p, 5, l])
            if use_v:
                for l in range(L):
                    (Vb[i, 0, l], Vb[i, 1, l], Vb[i, 2, l], Vb[i, 3, l], Vb[i, 4, l],
                     Vb[i, 5, l]) = x_motion_s(
                        X[i, 0, l], X[i, 1, l], X[i, 2, l], X[i, 3, l], X[i, 4, l],
                        X[i, 5, l], X[i, 6, l], X[i, 7, l], X[i, 8, l], X[i, 9, l],
                        X[i, 10, l], X[i, 11, l], Vb[p, 0, l], Vb[p, 1, l], Vb[p, 2, l],
                        Vb[p, 3, l], Vb[p, 4, l], Vb[p, 5, l])
                for m in range(6):
                    for l in range(L):
                        Vb[i, m, l] += Sv[m, l]
                if ki >= 0:  # v_i × (q̇ e_k): as cross_unit_add
                    lane_cross_unit_add(Vb, i, ki, V, k0, o, L, Ab)
                else:
                    for l in range(L):
                        (T[0, l], T[1, l], T[2, l], T[3, l], T[4, l], T[5, l]) = cross_motion_s(
                            Vb[i, 0, l], Vb[i, 1, l], Vb[i, 2, l], Vb[i, 3, l], Vb[i, 4, l],
                            Vb[i, 5, l], Sv[0, l], Sv[1, l], Sv[2, l], Sv[3, l], Sv[4, l],
                            Sv[5, l])
                    for m in range(6):
                        for l in range(L):
                            Ab[i, m, l] += T[m, l]
        if use_a:
            lane_motion_subspace_times(data, i, jt, o, A, k0, L, T)
            for m in range(6):
                for l in range(L):
                    Ab[i, m, l] += T[m, l]
        # f_i = I_i a_i + v_i ×* I_i v_i (the inertia is the model's, the same in every lane)
        M = MASS
        for l in range(L):
            (Fb[i, 0, l], Fb[i, 1, l], Fb[i, 2, l], Fb[i, 3, l], Fb[i, 4, l],
             Fb[i, 5, l]) = inertia_times_s(
                data[i, M], data[i, M + 1], data[i, M + 2], data[i, M + 3], data[i, M + 4],
                data[i, M + 5], data[i, M + 6], data[i, M + 7], data[i, M + 8],
                data[i, M + 9], data[i, M + 10], data[i, M + 11], data[i, M + 12],
                Ab[i, 0, l], Ab[i, 1, l], Ab[i, 2, l], Ab[i, 3, l], Ab[i, 4, l], Ab[i, 5, l])
        if use_v:
            for l in range(L):
                (T[0, l], T[1, l], T[2, l], T[3, l], T[4, l], T[5, l]) = inertia_times_s(
                    data[i, M], data[i, M + 1], data[i, M + 2], data[i, M + 3],
                    data[i, M + 4], data[i, M + 5], data[i, M + 6], data[i, M + 7],
                    data[i, M + 8], data[i, M + 9], data[i, M + 10], data[i, M + 11],
                    data[i, M + 12], Vb[i, 0, l], Vb[i, 1, l], Vb[i, 2, l], Vb[i, 3, l],
                    Vb[i, 4, l], Vb[i, 5, l])
            for l in range(L):
                (Sv[0, l], Sv[1, l], Sv[2, l], Sv[3, l], Sv[4, l], Sv[5, l]) = cross_force_s(
                    Vb[i, 0, l], Vb[i, 1, l], Vb[i, 2, l], Vb[i, 3, l], Vb[i, 4, l],
                    Vb[i, 5, l], T[0, l], T[1, l], T[2, l], T[3, l], T[4, l], T[5, l])
            for m in range(6):
                for l in range(L):
                    Fb[i, m, l] += Sv[m, l]
        if use_fext:
            for m in range(6):
                for l in range(L):
                    Fb[i, m, l] -= Fx[k0 + l, i, m]
    for i in range(nb - 1, -1, -1):  # backward pass: child before parent
        o = int(data[i, IV])
        k = int(data[i, SIDX])
        if k >= 0:
            for l in range(L):
                out[k0 + l, o] = Fb[i, k, l]
        else:
            for l in range(L):
                for m in range(6):
                    Ws[0, m] = Fb[i, m, l]
                for c in range(int(data[i, NVJ])):
                    out[k0 + l, o + c] = motion_subspace_transpose_times(data, i, c, Ws, 0)
        arm = data[i, ARMATURE]
        if use_a and arm != 0.0:  # as rnea_core
            for c in range(int(data[i, NVJ])):
                for l in range(L):
                    out[k0 + l, o + c] += arm * A[k0 + l, o + c]
        p = int(data[i, PARENT])
        if p >= 0:
            for l in range(L):
                (T[0, l], T[1, l], T[2, l], T[3, l], T[4, l], T[5, l]) = xt_force(
                    X[i, 0, l], X[i, 1, l], X[i, 2, l], X[i, 3, l], X[i, 4, l], X[i, 5, l],
                    X[i, 6, l], X[i, 7, l], X[i, 8, l], X[i, 9, l], X[i, 10, l], X[i, 11, l],
                    Fb[i, 0, l], Fb[i, 1, l], Fb[i, 2, l], Fb[i, 3, l], Fb[i, 4, l],
                    Fb[i, 5, l])
            for m in range(6):
                for l in range(L):
                    Fb[p, m, l] += T[m, l]
    for l in range(L):
        if status[k0 + l] == 0 and not all_finite(out[k0 + l]):
            status[k0 + l] = NOT_FINITE


@njit(cache=True, parallel=True, nogil=True)
def rnea_batch(data, Q, V, A, F, use_v, use_a, use_fext, out, status):
    """RNEA over a batch of states (rows), in parallel; per-state status."""
    N = Q.shape[0]
    nb = data.shape[0] - 1
    for t in prange((N + BATCH_TASK - 1) // BATCH_TASK):
        X = np.empty((nb, 12))
        w = np.empty((3 * nb + 2, 6))
        end = min(N, (t + 1) * BATCH_TASK)
        if nb <= LANE_BODIES:
            for k in range(t * BATCH_TASK, end, LANES):
                rnea_lanes(data, Q, V, A, F, use_v, use_a, use_fext, k, min(LANES, end - k),
                           out, status, X, w)
        else:
            for k in range(t * BATCH_TASK, end):
                kf = k if use_fext else 0  # without external forces F has one (unused) row
                status[k] = rnea_core(data, Q[k], V[k], A[k], F[kf], use_v, use_a, use_fext,
                                      out[k], X, w)


# --- the single-state entry points on the packed buffer ------------------------------
# (Without the runtime a function cannot return a view it made, so each entry point
# carves its own views out of the buffer: ``o`` is where the workspace starts.)

@njit(cache=True, _nrt=False, nogil=True)
def rnea_f(buf, q, v, a, tau):
    """RNEA of one state, no external forces; status (see module doc)."""
    nb = int(buf[0])
    nv = int(buf[2])
    if not (q.shape[0] == int(buf[1]) and v.shape[0] == nv and a.shape[0] == nv
            and tau.shape[0] == nv):
        return BAD_SHAPE
    o = HDR + (nb + 1) * WIDTH
    data = buf[HDR:o].reshape((nb + 1, WIDTH))
    return rnea_core(data, q, v, a, data, True, True, False, tau,  # data: unused f_ext
                     buf[o:o + 12 * nb].reshape((nb, 12)),
                     buf[o + 12 * nb:o + 30 * nb + 12].reshape((3 * nb + 2, 6)))


@njit(cache=True, _nrt=False, nogil=True)
def rnea_f_fext(buf, q, v, a, fext, tau):
    nb = int(buf[0])
    nv = int(buf[2])
    if not (q.shape[0] == int(buf[1]) and v.shape[0] == nv and a.shape[0] == nv
            and tau.shape[0] == nv and fext.shape[0] == nb and fext.shape[1] == 6):
        return BAD_SHAPE
    o = HDR + (nb + 1) * WIDTH
    return rnea_core(buf[HDR:o].reshape((nb + 1, WIDTH)), q, v, a, fext, True, True, True,
                     tau, buf[o:o + 12 * nb].reshape((nb, 12)),
                     buf[o + 12 * nb:o + 30 * nb + 12].reshape((3 * nb + 2, 6)))


@njit(cache=True, _nrt=False, nogil=True)
def nle_f(buf, q, v, tau):
    """h(q, v) = RNEA(q, v, 0)."""
    nb = int(buf[0])
    nv = int(buf[2])
    if not (q.shape[0] == int(buf[1]) and v.shape[0] == nv and tau.shape[0] == nv):
        return BAD_SHAPE
    o = HDR + (nb + 1) * WIDTH
    data = buf[HDR:o].reshape((nb + 1, WIDTH))
    return rnea_core(data, q, v, v, data, True, False, False, tau,
                     buf[o:o + 12 * nb].reshape((nb, 12)),
                     buf[o + 12 * nb:o + 30 * nb + 12].reshape((3 * nb + 2, 6)))


@njit(cache=True, _nrt=False, nogil=True)
def gravity_f(buf, q, tau):
    """g(q) = RNEA(q, 0, 0)."""
    nb = int(buf[0])
    if not (q.shape[0] == int(buf[1]) and tau.shape[0] == int(buf[2])):
        return BAD_SHAPE
    o = HDR + (nb + 1) * WIDTH
    data = buf[HDR:o].reshape((nb + 1, WIDTH))
    return rnea_core(data, q, tau, tau, data, False, False, False, tau,
                     buf[o:o + 12 * nb].reshape((nb, 12)),
                     buf[o + 12 * nb:o + 30 * nb + 12].reshape((3 * nb + 2, 6)))
