"""The joint-space inertia matrix by the composite-rigid-body algorithm (Featherstone 2008,
Table 6.2).

Composite inertias, child before parent (body coordinates):

    I^c_i = I_i + Σ_{children j} X_up[j]ᵀ I^c_j X_up[j]

then for each joint i, ``F = I^c_i S_i``, ``M_ii = S_iᵀ F``, and up the support,
``F ← X_up[j]ᵀ F``, ``M_λ(j),i = M_i,λ(j) = S_λ(j)ᵀ F`` for every ancestor; an armature
adds to M's diagonal. :func:`crba_core` (one state), :func:`crba_lanes` (several at
once, the same bits), :func:`crba_batch`, :func:`crba_f` (the packed buffer). The
readable form: :func:`kanedyn.dynamics.reference.crba`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .. import _compiled
from ..layout import (
    ARMATURE,
    AXIS_ID,
    CHAIN,
    HDR,
    IQ,
    IV,
    MASS,
    NQ,
    NV,
    NVJ,
    PARENT,
    SIDX,
    SUNIT,
    WIDTH,
)
from .constants import BAD_SHAPE, NOT_FINITE
from .joint_rows import (
    SINCOS_BIG,
    SINCOS_MIN,
    joint_transform,
    lanes_x_up,
    motion_subspace_column,
    motion_subspace_transpose_times,
    sincos,
    unit_axis_transform,
)
from .lanes import BATCH_TASK, LANE_ANGLES, LANE_BODIES, LANES, stack_array
from .spatial_rows import (
    inertia_column,
    inertia_moved,
    inertia_params,
    inertia_times,
    inertia_to_parent_add,
    inertia_unit_column,
    unit_component,
    xt_force,
    xt_force_scalars,
)

_compiled.key_cache(__name__)  # (see dynamics/_compiled.py)


@njit(cache=True, _nrt=False, forceinline=True)
def mass_matrix_entries(data, j, col, n0, n1, n2, f0, f1, f2, M, F):
    """``M[o_j + r, col] = M[col, o_j + r] = S_j[:, r]ᵀ (n, f)``: the entries of joint j
    in column ``col``, from the force (n, f) in body j coordinates (F: a scratch row)."""
    oj = int(data[j, IV])
    kj = int(data[j, SIDX])
    if kj >= 0:  # S_j = e_k
        x = unit_component(kj, n0, n1, n2, f0, f1, f2)
        M[oj, col] = x
        M[col, oj] = x
    elif data[j, SUNIT] == 6:  # S_j = 1
        M[oj, col], M[oj + 1, col], M[oj + 2, col] = n0, n1, n2
        M[oj + 3, col], M[oj + 4, col], M[oj + 5, col] = f0, f1, f2
        M[col, oj], M[col, oj + 1], M[col, oj + 2] = n0, n1, n2
        M[col, oj + 3], M[col, oj + 4], M[col, oj + 5] = f0, f1, f2
    else:
        F[0, 0], F[0, 1], F[0, 2], F[0, 3], F[0, 4], F[0, 5] = n0, n1, n2, f0, f1, f2
        mass_matrix_entries_general(data, j, col, F, M)


@njit(cache=True, _nrt=False)
def mass_matrix_entries_general(data, j, col, F, M):
    """:func:`mass_matrix_entries` for any joint, the force in F[0] (a call of its own: the rare
    case stays out of the inlined walk, which is smaller for it)."""
    oj = int(data[j, IV])
    for r in range(int(data[j, NVJ])):
        x = motion_subspace_transpose_times(data, j, r, F, 0)
        M[oj + r, col] = x
        M[col, oj + r] = x


@njit(cache=True, _nrt=False, forceinline=True)
def crba_core(data, q, M, X, P, F, A):
    """Joint-space inertia matrix (Table 6.2): composite inertias ``I^c_i`` summed
    child to parent in body coordinates, then ``F = I^c_i S_i`` carried up the
    support of body i by force transforms, ``M_ji = S_jᵀ F`` at each ancestor j.

    A body and its child (both with S = e_k) walk their columns together: two
    independent chains of products per step. A free joint (S = 1) gives its rows of M
    as the force itself and its own 6x6 block as ``I^c``. The joint transforms take
    cos and sin from :func:`sincos` (from :data:`SINCOS_MIN` bodies on).

    Workspace (written, never read before): ``X`` (nb, 12) X_up[i]; ``P`` (nb, 13) the
    composite inertia parameters; ``F`` (2, 6) scratch rows; ``A`` (3 nb) the joint
    angles, their cos and their sin.

    (A world-coordinate variant, where composite inertias add without transforms
    and each entry is one dot product, was measured 15-25 % slower on the shipped
    robots: their trees are shallow, so the per-body cost of going to world
    coordinates outweighs the per-pair saving.)
    """
    nb = data.shape[0] - 1
    nv = M.shape[0]
    # from SINCOS_MIN bodies on, the angles of the joints first (those about unit axes,
    # most, use them), their cos and sin in one vectorised loop
    vec = nb >= SINCOS_MIN
    if vec:
        for i in range(nb):
            A[i] = q[int(data[i, IQ])]
        sincos(A[:nb], A[nb:2 * nb], A[2 * nb:3 * nb])
    for i in range(nb):
        if vec and data[i, AXIS_ID] >= 0 and abs(A[i]) <= SINCOS_BIG:
            unit_axis_transform(data, i, A[nb + i], A[2 * nb + i], X)
        elif joint_transform(data, i, q, X):
            return i + 1
    inertia_params(data, P)
    for i in range(nb - 1, -1, -1):
        p = int(data[i, PARENT])
        if p >= 0:
            inertia_to_parent_add(X, i, P, i, P, p)
    if data[nb, CHAIN] == 0.0:
        # a tree: the entries of two bodies on different branches stay 0 (on a chain
        # every pair is ancestor and descendant, and the walk below writes all of M)
        for a in range(nv):
            for b in range(nv):
                M[a, b] = 0.0
    # one column at a time, or two: body i + 1 hanging from body i, both with S = e_k
    # (most of a URDF robot's chains), whose columns walk up together, two independent
    # chains of products per step (a lone walk waits on the latency of each transform)
    i = 0
    c = 0
    while i < nb:
        oi = int(data[i, IV])
        nvi = int(data[i, NVJ])
        ki = int(data[i, SIDX])
        pair = (ki >= 0 and i + 1 < nb and int(data[i + 1, PARENT]) == i
                and data[i + 1, SIDX] >= 0)
        if pair:
            kb = int(data[i + 1, SIDX])
            inertia_column(P, i, ki, F, 0)
            inertia_column(P, i + 1, kb, F, 1)
            M[oi, oi] = F[0, ki]
            M[oi + 1, oi + 1] = F[1, kb]
            b0, b1, b2, b3, b4, b5 = xt_force_scalars(X, i + 1, F[1, 0], F[1, 1], F[1, 2],
                                                      F[1, 3], F[1, 4], F[1, 5])
            x = unit_component(ki, b0, b1, b2, b3, b4, b5)
            M[oi, oi + 1] = x
            M[oi + 1, oi] = x
            ca = oi
        else:
            # F = I^c_i S_i[:, c]; a unit-vector S (most joints) picks a column of I^c_i
            if ki >= 0:
                inertia_column(P, i, ki, F, 0)
                M[oi, oi] = F[0, ki]
            elif data[i, SUNIT] == 6:  # S = 1: I^c_i S = I^c_i
                inertia_column(P, i, c, F, 0)
                for r in range(6):
                    M[oi + r, oi + c] = F[0, r]
            else:
                motion_subspace_column(data, i, c, F, 1)
                inertia_times(P, i, 0, F, 1, F, 0)
                for r in range(nvi):
                    M[oi + r, oi + c] = motion_subspace_transpose_times(data, i, r, F, 0)
            ca = oi + c
        # up the support: F ← X_up[j]ᵀ F, on scalars so that F stays in registers (the
        # compiler cannot tell F from M or X)
        a0, a1, a2, a3, a4, a5 = F[0, 0], F[0, 1], F[0, 2], F[0, 3], F[0, 4], F[0, 5]
        j = i
        p = int(data[j, PARENT])
        while p >= 0:
            a0, a1, a2, a3, a4, a5 = xt_force_scalars(X, j, a0, a1, a2, a3, a4, a5)
            if pair:
                b0, b1, b2, b3, b4, b5 = xt_force_scalars(X, j, b0, b1, b2, b3, b4, b5)
            j = p
            mass_matrix_entries(data, j, ca, a0, a1, a2, a3, a4, a5, M, F)
            if pair:
                mass_matrix_entries(data, j, ca + 1, b0, b1, b2, b3, b4, b5, M, F)
            p = int(data[j, PARENT])
        if pair:
            i += 2
        else:
            c += 1
            if c == nvi:
                i += 1
                c = 0
    add_armature(data, M)
    # M is symmetric positive definite: a finite diagonal bounds every entry,
    # |M_ij| <= sqrt(M_ii M_jj), and checking it costs nv, not nv² (1.5 µs at nv = 38)
    for a in range(nv):
        if not np.isfinite(M[a, a]):
            return NOT_FINITE
    return 0


@njit(cache=True, _nrt=False, forceinline=True)
def add_armature(data, M):
    """M's diagonal += each joint's armature, at each of its speeds."""
    nb = data.shape[0] - 1
    for i in range(nb):
        arm = data[i, ARMATURE]
        if arm != 0.0:
            o = int(data[i, IV])
            for c in range(int(data[i, NVJ])):
                M[o + c, o + c] += arm


@njit(cache=True)
def crba_into(data, q, M):
    """:func:`crba_core` with a workspace of its own: X_up (nb, 12), composite inertia
    parameters (nb, 13), two force rows, the joint angles with their cos and sin (3 nb)."""
    nb = data.shape[0] - 1
    return crba_core(data, q, M, np.empty((nb, 12)), np.empty((nb, 13)), np.empty((2, 6)),
                     np.empty(3 * nb))


@njit(cache=True, nogil=True)
def crba1(data, q, M):
    nb = data.shape[0] - 1
    nv = int(data[nb, NV])
    if not (q.shape[0] == int(data[nb, NQ]) and M.shape[0] == nv and M.shape[1] == nv):
        return BAD_SHAPE
    return crba_into(data, q, M)


# --- several states at once (see lanes.py) ------------------------------------------

@njit(cache=True, forceinline=True)
def crba_lanes(data, Q, k0, L, out, status, Xs, Fs):
    """:func:`crba_core` for the L <= LANES states ``Q[k0:k0 + L]`` at once, into
    ``out[k0:k0 + L]`` and ``status[k0:k0 + L]`` (see "Several states at once" in lanes.py).
    ``Xs``, ``Fs``: scalar rows for the lane-by-lane fallbacks."""
    X = stack_array((LANE_BODIES, 12, LANES))  # X_up[i], lane l
    P = stack_array((LANE_BODIES, 13, LANES))  # I^c_i parameters
    C = stack_array((3, LANE_ANGLES))  # angles, cos, sin
    F = stack_array((6, LANES))  # the force walking up
    T = stack_array((9, LANES))  # an inertia moved to the parent
    nb = data.shape[0] - 1
    nv = out.shape[1]
    for l in range(L):
        status[k0 + l] = 0
    # X_up: joints about a unit axis from the cos and sin of all angles at once
    lanes_x_up(data, Q, k0, L, X, Xs, C, status)
    # composite inertias, child to parent (P[i] = (m, h, Ī), data[i, MASS:MASS + 13])
    for i in range(nb):
        for c in range(13):
            for l in range(L):
                P[i, c, l] = data[i, MASS + c]
    for i in range(nb - 1, -1, -1):
        p = int(data[i, PARENT])
        if p < 0:
            continue
        # into T first: reading P[i] and adding to P[p] in one loop would again need
        # run-time overlap checks
        for l in range(L):
            (T[0, l], T[1, l], T[2, l], T[3, l], T[4, l], T[5, l], T[6, l], T[7, l],
             T[8, l]) = inertia_moved(
                X[i, 0, l], X[i, 1, l], X[i, 2, l], X[i, 3, l], X[i, 4, l], X[i, 5, l],
                X[i, 6, l], X[i, 7, l], X[i, 8, l], X[i, 9, l], X[i, 10, l], X[i, 11, l],
                P[i, 0, l], P[i, 1, l], P[i, 2, l], P[i, 3, l], P[i, 4, l], P[i, 5, l],
                P[i, 6, l], P[i, 7, l], P[i, 8, l], P[i, 9, l], P[i, 10, l], P[i, 11, l],
                P[i, 12, l])
        for c, t in ((1, 0), (2, 1), (3, 2), (4, 3), (5, 4), (6, 5), (7, 4), (8, 6), (9, 7),
                     (10, 5), (11, 7), (12, 8)):
            for l in range(L):
                P[p, c, l] += T[t, l]
        for l in range(L):
            P[p, 0, l] += P[i, 0, l]
    if data[nb, CHAIN] == 0.0:  # a tree: see crba_core
        for l in range(L):
            for a in range(nv):
                for b in range(nv):
                    out[k0 + l, a, b] = 0.0
    # the columns, one at a time: F = I^c_i S_i[:, c] carried up the support
    for i in range(nb):
        oi = int(data[i, IV])
        ki = int(data[i, SIDX])
        nvi = int(data[i, NVJ])
        free = data[i, SUNIT] == 6
        for c in range(nvi):
            col = oi + c
            if ki >= 0 or free:  # S = e_k or S = 1: a column of I^c_i
                k = ki if ki >= 0 else c
                for l in range(L):
                    F[0, l], F[1, l], F[2, l], F[3, l], F[4, l], F[5, l] = inertia_unit_column(
                        k, P[i, 0, l], P[i, 1, l], P[i, 2, l], P[i, 3, l], P[i, 4, l],
                        P[i, 5, l], P[i, 6, l], P[i, 7, l], P[i, 8, l], P[i, 9, l],
                        P[i, 10, l], P[i, 11, l], P[i, 12, l])
                for r in range(nvi):
                    for l in range(L):
                        out[k0 + l, oi + r, col] = F[k if ki >= 0 else r, l]
            else:
                # the model's column, the same in every lane
                motion_subspace_column(data, i, c, Fs, 1)
                for l in range(L):
                    inertia_times(P[:, :, l], i, 0, Fs, 1, Fs, 0)
                    for r in range(6):
                        F[r, l] = Fs[0, r]
                    for r in range(nvi):
                        out[k0 + l, oi + r, col] = motion_subspace_transpose_times(
                            data, i, r, Fs, 0)
            j = i
            p = int(data[j, PARENT])
            while p >= 0:
                for l in range(L):
                    F[0, l], F[1, l], F[2, l], F[3, l], F[4, l], F[5, l] = xt_force(
                        X[j, 0, l], X[j, 1, l], X[j, 2, l], X[j, 3, l], X[j, 4, l], X[j, 5, l],
                        X[j, 6, l], X[j, 7, l], X[j, 8, l], X[j, 9, l], X[j, 10, l],
                        X[j, 11, l], F[0, l], F[1, l], F[2, l], F[3, l], F[4, l], F[5, l])
                j = p
                # the entries of joint j in column col and row col (as mass_matrix_entries)
                oj = int(data[j, IV])
                kj = int(data[j, SIDX])
                if kj >= 0 or data[j, SUNIT] == 6:
                    for r in range(1 if kj >= 0 else 6):
                        for l in range(L):
                            x = F[kj if kj >= 0 else r, l]
                            out[k0 + l, oj + r, col] = x
                            out[k0 + l, col, oj + r] = x
                else:
                    for l in range(L):
                        for r in range(6):
                            Fs[0, r] = F[r, l]
                        for r in range(int(data[j, NVJ])):
                            x = motion_subspace_transpose_times(data, j, r, Fs, 0)
                            out[k0 + l, oj + r, col] = x
                            out[k0 + l, col, oj + r] = x
                p = int(data[j, PARENT])
    for l in range(L):  # as crba_core: the armature, then a finite diagonal bounds every entry
        add_armature(data, out[k0 + l])
        if status[k0 + l] == 0:
            for a in range(nv):
                if not np.isfinite(out[k0 + l, a, a]):
                    status[k0 + l] = NOT_FINITE
                    break


@njit(cache=True, parallel=True, nogil=True)
def crba_batch(data, Q, out, status):
    N = Q.shape[0]
    nb = data.shape[0] - 1
    for t in prange((N + BATCH_TASK - 1) // BATCH_TASK):
        X = np.empty((nb, 12))
        end = min(N, (t + 1) * BATCH_TASK)
        if nb <= LANE_BODIES:
            Fs = np.empty((2, 6))
            for k in range(t * BATCH_TASK, end, LANES):
                crba_lanes(data, Q, k, min(LANES, end - k), out, status, X, Fs)
        else:
            P = np.empty((nb, 13))
            F = np.empty((2, 6))
            A = np.empty(3 * nb)
            for k in range(t * BATCH_TASK, end):
                status[k] = crba_core(data, Q[k], out[k], X, P, F, A)


# --- the single-state entry points on the packed buffer ------------------------------
# (Without the runtime a function cannot return a view it made, so each entry point
# carves its own views out of the buffer: ``o`` is where the workspace starts.)

@njit(cache=True, _nrt=False, nogil=True)
def crba_f(buf, q, M):
    nb = int(buf[0])
    nv = int(buf[2])
    if not (q.shape[0] == int(buf[1]) and M.shape[0] == nv and M.shape[1] == nv):
        return BAD_SHAPE
    o = HDR + (nb + 1) * WIDTH
    return crba_core(buf[HDR:o].reshape((nb + 1, WIDTH)), q, M,
                     buf[o:o + 12 * nb].reshape((nb, 12)),
                     buf[o + 12 * nb:o + 25 * nb].reshape((nb, 13)),
                     buf[o + 25 * nb:o + 25 * nb + 12].reshape((2, 6)),
                     buf[o + 25 * nb + 12:o + 28 * nb + 12])
