"""numba kernels of :mod:`.centroidal`: the centroidal momentum matrix A_G, and the
centroidal momentum h_G with its bias rate Ȧ_G v, on the flat model of :mod:`.flat`.

The readable definitions they are tested against are
:func:`kanedyn.dynamics.centroidal.centroidal_momentum_matrix_reference` and
:func:`~kanedyn.dynamics.centroidal.centroidal_momentum_bias_reference`.
Built from the joint, spatial and inertia helpers of :mod:`.kernels` (transforms as
(E, r), rigid inertias as their 13 parameters), as RNEA and CRBA are:

- ``ag_core`` is CRBA's first half (composite inertias ``I^c_i`` in body coordinates,
  child to parent), then each column ``I^c_i S_i`` — the momentum of the subtree of
  joint i moving alone at unit speed — taken to world axes about the centre of mass
  by one force transform ``(E_0i, p_i - c)``;
- ``cm_core`` is RNEA's passes with zero joint accelerations and without gravity: the
  body velocities v_i, bias accelerations a_i, momenta ``I_i v_i`` and their rates
  ``I_i a_i + v_i ×* I_i v_i``, summed child to parent, shifted from the world
  origin to the centre of mass at the roots.

A batch of A_G runs eight states at a time through ``ag_core``'s arithmetic
(``ag_lanes``, as ``crba_lanes`` in :mod:`.kernels`), with the same bits as one state;
``cm_batch`` goes state by state. A single state of A_G may come from C
(``ag_c``, for ``_fastcall.c``).

Status codes as in :mod:`.kernels`, plus :data:`NO_MASS` (the model's total mass is
not positive, so it has no centre of mass).

(numba's on-disk cache of these kernels is keyed to this file: a change to a helper of
:mod:`.kernels` they inline is not seen until this file changes too, or the cache is
cleared — as for every kernel module that calls another's.)
"""

from __future__ import annotations

import numpy as np
from numba import carray, njit, prange, types
from numba.extending import intrinsic

from . import _compiled
from ._compiled import KernelModule
from .kernels.constants import BAD_SHAPE, NOT_FINITE
from .kernels.entries import Sig, c_function
from .kernels.joint_rows import (
    SINCOS_BIG,
    SINCOS_MIN,
    joint_transform,
    lanes_x_up,
    motion_subspace_column,
    motion_subspace_times,
    sincos,
    unit_axis_transform,
)
from .kernels.lanes import BATCH_TASK, LANE_BODIES, LANES, stack_array
from .kernels.spatial_rows import (
    add_at,
    add_row,
    all_finite,
    all_finite2,
    cross_force_add,
    cross_motion_add,
    cross_unit_add,
    inertia_column,
    inertia_moved,
    inertia_params,
    inertia_times,
    inertia_to_parent_add,
    inertia_unit_column,
    world_transform,
    x_motion,
    xt_force,
)
from .layout import (
    AXIS_ID,
    HDR,
    IQ,
    IV,
    MASS,
    NVJ,
    PARENT,
    SIDX,
    SUNIT,
    WIDTH,
    H,
)

_compiled.key_cache(__name__)

#: the total mass of the model is not positive: no centre of mass
NO_MASS = -3


def workspace_size(nb: int) -> int:
    """Floats of workspace of the single-state entry points here (the larger of A_G's and
    h_G's), carved out of the model's packed buffer after its flat data; the buffer's
    workspace (sized for ABA, :func:`kanedyn.dynamics.kernels.workspace_size`) is larger."""
    return max(12 * nb + 12 * nb + 13 * nb + 12 + 3 * nb, 12 * nb + 6 * (4 * nb + 2) + 4 * nb)


# --- A_G ------------------------------------------------------------------------

@njit(cache=True, _nrt=False, forceinline=True)
def ag_core(data, q, Ag, X, X0, P, F, C):
    """``A_G`` (6 x nv, angular rows first) into Ag; status.

    Workspace (written, never read before): ``X`` (nb, 12) X_up[i]; ``X0`` (nb, 12)
    ``i_X_0`` (E_0i: world to body axes; r: the body origin in the world); ``P`` (nb, 13)
    the composite inertia parameters; ``F`` (2, 6) scratch rows; ``C`` (3 nb) the joint
    angles, their cos and sin (from :data:`~kanedyn.dynamics.kernels.SINCOS_MIN` bodies
    on, in one vectorised loop, as CRBA takes them).
    """
    nb = data.shape[0] - 1
    vec = nb >= SINCOS_MIN
    if vec:
        for i in range(nb):
            C[i] = q[int(data[i, IQ])]
        sincos(C[:nb], C[nb:2 * nb], C[2 * nb:3 * nb])
    for i in range(nb):
        if vec and data[i, AXIS_ID] >= 0 and abs(C[i]) <= SINCOS_BIG:
            unit_axis_transform(data, i, C[nb + i], C[2 * nb + i], X)
        elif joint_transform(data, i, q, X):
            return i + 1
        world_transform(X, i, X0, int(data[i, PARENT]))
    inertia_params(data, P)
    for i in range(nb - 1, -1, -1):
        p = int(data[i, PARENT])
        if p >= 0:
            inertia_to_parent_add(X, i, P, i, P, p)
    # total mass and centre of mass, from the roots' composite inertias: m c = m p + R h
    mass = 0.0
    c0 = 0.0
    c1 = 0.0
    c2 = 0.0
    for i in range(nb):
        if int(data[i, PARENT]) < 0:
            m = P[i, 0]
            mass += m
            c0 += m * X0[i, 9] + X0[i, 0] * P[i, 1] + X0[i, 3] * P[i, 2] + X0[i, 6] * P[i, 3]
            c1 += m * X0[i, 10] + X0[i, 1] * P[i, 1] + X0[i, 4] * P[i, 2] + X0[i, 7] * P[i, 3]
            c2 += m * X0[i, 11] + X0[i, 2] * P[i, 1] + X0[i, 5] * P[i, 2] + X0[i, 8] * P[i, 3]
    if not mass > 0.0:
        return NO_MASS
    c0 /= mass
    c1 /= mass
    c2 /= mass
    for i in range(nb):
        o = int(data[i, IV])
        k = int(data[i, SIDX])
        # the force transform to world axes about the centre of mass: (E_0i, p_i - c)
        d0 = X0[i, 9] - c0
        d1 = X0[i, 10] - c1
        d2 = X0[i, 11] - c2
        for col in range(int(data[i, NVJ])):
            # F = I^c_i S_i[:, col]; S = e_k (most joints), or the unit columns of a
            # spherical or free joint, pick a column of I^c_i
            if k >= 0:
                inertia_column(P, i, k, F, 0)
            elif data[i, SUNIT] > 0:  # S[:, col] = e_col
                inertia_column(P, i, col, F, 0)
            else:
                motion_subspace_column(data, i, col, F, 1)
                inertia_times(P, i, 0, F, 1, F, 0)
            n0, n1, n2, f0, f1, f2 = xt_force(
                X0[i, 0], X0[i, 1], X0[i, 2], X0[i, 3], X0[i, 4], X0[i, 5], X0[i, 6],
                X0[i, 7], X0[i, 8], d0, d1, d2, F[0, 0], F[0, 1], F[0, 2], F[0, 3], F[0, 4],
                F[0, 5])
            Ag[0, o + col] = n0
            Ag[1, o + col] = n1
            Ag[2, o + col] = n2
            Ag[3, o + col] = f0
            Ag[4, o + col] = f1
            Ag[5, o + col] = f2
    return 0 if all_finite2(Ag) else NOT_FINITE


@njit(cache=True)
def ag_into(data, q, Ag):
    """:func:`ag_core` with a workspace of its own."""
    nb = data.shape[0] - 1
    return ag_core(data, q, Ag, np.empty((nb, 12)), np.empty((nb, 12)), np.empty((nb, 13)),
                   np.empty((2, 6)), np.empty(3 * nb))


@njit(cache=True, _nrt=False, nogil=True)
def ag_f(buf, q, Ag):
    """A_G of one state; the workspace from the model's packed buffer."""
    nb = int(buf[0])
    nv = int(buf[2])
    o = HDR + (nb + 1) * WIDTH
    if not (q.shape[0] == int(buf[1]) and Ag.shape[0] == 6 and Ag.shape[1] == nv
            and buf.shape[0] >= o + 40 * nb + 12):
        return BAD_SHAPE
    return ag_core(buf[HDR:o].reshape((nb + 1, WIDTH)), q, Ag,
                   buf[o:o + 12 * nb].reshape((nb, 12)),
                   buf[o + 12 * nb:o + 24 * nb].reshape((nb, 12)),
                   buf[o + 24 * nb:o + 37 * nb].reshape((nb, 13)),
                   buf[o + 37 * nb:o + 37 * nb + 12].reshape((2, 6)),
                   buf[o + 37 * nb + 12:o + 40 * nb + 12])


# A_G on several states at once, LANES states through the arithmetic of ag_core
# together, operation for operation, on stack blocks (see "Several states at once" in
# kernels/lanes.py): a state gives the same bits alone or in a batch.
_LANE_ANGLES = LANE_BODIES * LANES


@njit(cache=True, _nrt=False, forceinline=True)
def lane_column_out(X0, i, l, G, F0, F1, F2, F3, F4, F5, out, k0, col):
    """``out[k0 + l, :, col]`` = the force (F0..F5) of body i, lane l, to world axes about
    the centre of mass ``G[1:4, l]`` (as in ag_core)."""
    n0, n1, n2, f0, f1, f2 = xt_force(
        X0[i, 0, l], X0[i, 1, l], X0[i, 2, l], X0[i, 3, l], X0[i, 4, l], X0[i, 5, l],
        X0[i, 6, l], X0[i, 7, l], X0[i, 8, l], X0[i, 9, l] - G[1, l], X0[i, 10, l] - G[2, l],
        X0[i, 11, l] - G[3, l], F0, F1, F2, F3, F4, F5)
    out[k0 + l, 0, col] = n0
    out[k0 + l, 1, col] = n1
    out[k0 + l, 2, col] = n2
    out[k0 + l, 3, col] = f0
    out[k0 + l, 4, col] = f1
    out[k0 + l, 5, col] = f2


@njit(cache=True, forceinline=True)
def ag_lanes(data, Q, k0, L, out, status, Xs, Fs):
    """:func:`ag_core` for the L <= LANES states ``Q[k0:k0 + L]`` at once, into
    ``out[k0:k0 + L]`` and ``status[k0:k0 + L]``. ``Xs``, ``Fs``: scalar rows for the
    lane-by-lane fallbacks (joints not about a unit axis, general motion subspaces)."""
    X = stack_array((LANE_BODIES, 12, LANES))  # X_up[i], lane l
    X0 = stack_array((LANE_BODIES, 12, LANES))  # i_X_0
    P = stack_array((LANE_BODIES, 13, LANES))  # I^c_i parameters
    C = stack_array((3, _LANE_ANGLES))  # angles, cos, sin
    T = stack_array((12, LANES))  # a transform composed, an inertia moved
    G = stack_array((4, LANES))  # total mass, then the centre of mass
    nb = data.shape[0] - 1
    for l in range(L):
        status[k0 + l] = 0
    # X_up, as crba_lanes
    lanes_x_up(data, Q, k0, L, X, Xs, C, status)
    # i_X_0 = X_up[i] i_X_0[parent] (compose), through T: reading X0[p] and writing X0[i]
    # in one loop would need run-time overlap checks
    for i in range(nb):
        p = int(data[i, PARENT])
        if p < 0:
            for c in range(12):
                for l in range(L):
                    X0[i, c, l] = X[i, c, l]
            continue
        for a in range(3):
            for b in range(3):
                for l in range(L):
                    T[3 * a + b, l] = (X[i, 3 * a, l] * X0[p, b, l]
                                       + X[i, 3 * a + 1, l] * X0[p, 3 + b, l]
                                       + X[i, 3 * a + 2, l] * X0[p, 6 + b, l])
        for a in range(3):
            for l in range(L):
                T[9 + a, l] = (X0[p, 9 + a, l] + X0[p, a, l] * X[i, 9, l]
                               + X0[p, 3 + a, l] * X[i, 10, l] + X0[p, 6 + a, l] * X[i, 11, l])
        for c in range(12):
            for l in range(L):
                X0[i, c, l] = T[c, l]
    # composite inertias, child to parent, as crba_lanes
    for i in range(nb):
        for c in range(13):
            for l in range(L):
                P[i, c, l] = data[i, MASS + c]
    for i in range(nb - 1, -1, -1):
        p = int(data[i, PARENT])
        if p < 0:
            continue
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
    # total mass and centre of mass from the roots, as ag_core
    for c in range(4):
        for l in range(L):
            G[c, l] = 0.0
    for i in range(nb):
        if int(data[i, PARENT]) < 0:
            for l in range(L):
                m = P[i, 0, l]
                G[0, l] += m
                G[1, l] += (m * X0[i, 9, l] + X0[i, 0, l] * P[i, 1, l] + X0[i, 3, l] * P[i, 2, l]
                            + X0[i, 6, l] * P[i, 3, l])
                G[2, l] += (m * X0[i, 10, l] + X0[i, 1, l] * P[i, 1, l]
                            + X0[i, 4, l] * P[i, 2, l] + X0[i, 7, l] * P[i, 3, l])
                G[3, l] += (m * X0[i, 11, l] + X0[i, 2, l] * P[i, 1, l]
                            + X0[i, 5, l] * P[i, 2, l] + X0[i, 8, l] * P[i, 3, l])
    for l in range(L):
        if not G[0, l] > 0.0:  # (numba raises on a division by zero)
            if status[k0 + l] == 0:
                status[k0 + l] = NO_MASS
            continue
        G[1, l] /= G[0, l]
        G[2, l] /= G[0, l]
        G[3, l] /= G[0, l]
    # the columns I^c_i S_i, to world axes about the centre of mass
    for i in range(nb):
        o = int(data[i, IV])
        k = int(data[i, SIDX])
        unit = k >= 0 or data[i, SUNIT] > 0
        for col in range(int(data[i, NVJ])):
            kk = k if k >= 0 else col
            if unit:
                for l in range(L):
                    F0, F1, F2, F3, F4, F5 = inertia_unit_column(
                        kk, P[i, 0, l], P[i, 1, l], P[i, 2, l], P[i, 3, l], P[i, 4, l],
                        P[i, 5, l], P[i, 6, l], P[i, 7, l], P[i, 8, l], P[i, 9, l],
                        P[i, 10, l], P[i, 11, l], P[i, 12, l])
                    lane_column_out(X0, i, l, G, F0, F1, F2, F3, F4, F5, out, k0, o + col)
            else:
                # the model's column, the same in every lane
                motion_subspace_column(data, i, col, Fs, 1)
                for l in range(L):
                    inertia_times(P[:, :, l], i, 0, Fs, 1, Fs, 0)
                    lane_column_out(X0, i, l, G, Fs[0, 0], Fs[0, 1], Fs[0, 2], Fs[0, 3],
                                    Fs[0, 4], Fs[0, 5], out, k0, o + col)
    for l in range(L):
        if status[k0 + l] == 0 and not all_finite2(out[k0 + l]):
            status[k0 + l] = NOT_FINITE


@njit(cache=True, parallel=True, nogil=True)
def ag_batch(data, Q, out, status):
    """A_G over a batch of states, in parallel (LANES at a time up to LANE_BODIES
    bodies); per-state status."""
    N = Q.shape[0]
    nb = data.shape[0] - 1
    for t in prange((N + BATCH_TASK - 1) // BATCH_TASK):
        X = np.empty((nb, 12))
        F = np.empty((2, 6))
        end = min(N, (t + 1) * BATCH_TASK)
        if nb <= LANE_BODIES:
            for k in range(t * BATCH_TASK, end, LANES):
                ag_lanes(data, Q, k, min(LANES, end - k), out, status, X, F)
        else:
            X0 = np.empty((nb, 12))
            P = np.empty((nb, 13))
            C = np.empty(3 * nb)
            for k in range(t * BATCH_TASK, end):
                status[k] = ag_core(data, Q[k], out[k], X, X0, P, F, C)


# --- h_G and Ȧ_G v ---------------------------------------------------------------

@njit(cache=True, _nrt=False, forceinline=True)
def cm_core(data, q, v, out, X, w, Mh):
    """``out = [h_G (6), Ȧ_G v (6)]``, angular parts first; status.

    Workspace (written, never read before): ``X`` (nb, 12) X_up[i]; ``w`` (4 nb + 2, 6)
    rows ``i`` (v_i), ``nb + i`` (a_i, the acceleration at q̈ = 0 without gravity),
    ``2 nb + i`` (the rate of momentum of the subtree of i), ``3 nb + i`` (its momentum),
    and a spare row at ``4 nb`` (S v_i); ``Mh`` (nb, 4) the mass and first moment m c of
    the subtree of i, in body i coordinates.
    """
    nb = data.shape[0] - 1
    A = nb
    F = 2 * nb
    Hr = 3 * nb
    J = 4 * nb
    for i in range(nb):  # forward pass: parent before child
        if joint_transform(data, i, q, X):
            return i + 1
        p = int(data[i, PARENT])
        motion_subspace_times(data, i, v, w, J)
        if p < 0:
            # a root moves with S v_i alone; its acceleration S q̈ + v × S v is zero
            for m in range(6):
                w[i, m] = w[J, m]
                w[A + i, m] = 0.0
        else:
            x_motion(X, i, w, p, w, i)
            for m in range(6):
                w[i, m] += w[J, m]
            x_motion(X, i, w, A + p, w, A + i)
            k = int(data[i, SIDX])
            if k >= 0:  # S q̇ = q̇ e_k
                cross_unit_add(w, i, k, v[int(data[i, IV])], w, A + i)
            else:
                cross_motion_add(w, i, w, J, w, A + i)
        inertia_times(data, i, MASS, w, i, w, Hr + i)  # h_i = I_i v_i
        inertia_times(data, i, MASS, w, A + i, w, F + i)  # ḣ_i = I_i a_i + v_i ×* h_i
        cross_force_add(w, i, w, Hr + i, w, F + i)
        Mh[i, 0] = data[i, MASS]
        for m in range(3):
            Mh[i, 1 + m] = data[i, H + m]
    for m in range(12):
        out[m] = 0.0
    mass = 0.0
    c0 = 0.0
    c1 = 0.0
    c2 = 0.0
    for i in range(nb - 1, -1, -1):  # backward pass: child before parent
        p = int(data[i, PARENT])
        # the subtree's momentum, its rate and its first moment, to the parent (or, at a
        # root, to the world: X_up of a root is root_X_world)
        h0, h1, h2, h3, h4, h5 = xt_force(
            X[i, 0], X[i, 1], X[i, 2], X[i, 3], X[i, 4], X[i, 5], X[i, 6], X[i, 7], X[i, 8],
            X[i, 9], X[i, 10], X[i, 11], w[Hr + i, 0], w[Hr + i, 1], w[Hr + i, 2],
            w[Hr + i, 3], w[Hr + i, 4], w[Hr + i, 5])
        d0, d1, d2, d3, d4, d5 = xt_force(
            X[i, 0], X[i, 1], X[i, 2], X[i, 3], X[i, 4], X[i, 5], X[i, 6], X[i, 7], X[i, 8],
            X[i, 9], X[i, 10], X[i, 11], w[F + i, 0], w[F + i, 1], w[F + i, 2],
            w[F + i, 3], w[F + i, 4], w[F + i, 5])
        # first moment in parent coordinates: Eᵀ (m c) + m r
        m = Mh[i, 0]
        y0 = X[i, 0] * Mh[i, 1] + X[i, 3] * Mh[i, 2] + X[i, 6] * Mh[i, 3] + m * X[i, 9]
        y1 = X[i, 1] * Mh[i, 1] + X[i, 4] * Mh[i, 2] + X[i, 7] * Mh[i, 3] + m * X[i, 10]
        y2 = X[i, 2] * Mh[i, 1] + X[i, 5] * Mh[i, 2] + X[i, 8] * Mh[i, 3] + m * X[i, 11]
        if p >= 0:
            add_row(w, Hr + p, h0, h1, h2, h3, h4, h5)
            add_row(w, F + p, d0, d1, d2, d3, d4, d5)
            Mh[p, 0] += m
            Mh[p, 1] += y0
            Mh[p, 2] += y1
            Mh[p, 3] += y2
        else:
            add_at(out, 0, h0, h1, h2, h3, h4, h5)
            add_at(out, 6, d0, d1, d2, d3, d4, d5)
            mass += m
            c0 += y0
            c1 += y1
            c2 += y2
    if not mass > 0.0:
        return NO_MASS
    c0 /= mass
    c1 /= mass
    c2 /= mass
    # about the centre of mass: n_G = n_O - c × f; for the rate, d/dt (c × P) = c × Ṗ
    # (ċ × P = 0: P = m ċ)
    for b in range(0, 12, 6):
        f0, f1, f2 = out[b + 3], out[b + 4], out[b + 5]
        out[b] -= c1 * f2 - c2 * f1
        out[b + 1] -= c2 * f0 - c0 * f2
        out[b + 2] -= c0 * f1 - c1 * f0
    return 0 if all_finite(out) else NOT_FINITE


@njit(cache=True)
def cm_into(data, q, v, out):
    """:func:`cm_core` with a workspace of its own."""
    nb = data.shape[0] - 1
    return cm_core(data, q, v, out, np.empty((nb, 12)), np.empty((4 * nb + 2, 6)),
                   np.empty((nb, 4)))


@njit(cache=True, _nrt=False, nogil=True)
def cm_f(buf, q, v, out):
    """[h_G, Ȧ_G v] of one state; the workspace from the model's packed buffer."""
    nb = int(buf[0])
    o = HDR + (nb + 1) * WIDTH
    if not (q.shape[0] == int(buf[1]) and v.shape[0] == int(buf[2]) and out.shape[0] == 12
            and buf.shape[0] >= o + 40 * nb + 12):
        return BAD_SHAPE
    return cm_core(buf[HDR:o].reshape((nb + 1, WIDTH)), q, v, out,
                   buf[o:o + 12 * nb].reshape((nb, 12)),
                   buf[o + 12 * nb:o + 36 * nb + 12].reshape((4 * nb + 2, 6)),
                   buf[o + 36 * nb + 12:o + 40 * nb + 12].reshape((nb, 4)))


@njit(cache=True, parallel=True, nogil=True)
def cm_batch(data, Q, V, out, status):
    """[h_G, Ȧ_G v] over a batch of states, in parallel; per-state status."""
    N = Q.shape[0]
    nb = data.shape[0] - 1
    for t in prange((N + BATCH_TASK - 1) // BATCH_TASK):
        X = np.empty((nb, 12))
        w = np.empty((4 * nb + 2, 6))
        Mh = np.empty((nb, 4))
        for k in range(t * BATCH_TASK, min(N, (t + 1) * BATCH_TASK)):
            status[k] = cm_core(data, Q[k], V[k], out[k], X, w, Mh)


# --- the C entry point of A_G, for _fastcall.c (as kernels.c_entry) ----------------

@intrinsic
def _at(typingctx, p, k):
    """``p + k``: the address of entry k of the buffer p points to (numba has no pointer
    arithmetic of its own)."""
    if not (isinstance(p, types.CPointer) and isinstance(k, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        return builder.gep(args[0], [args[1]])

    return p(p, k), codegen


def ag_c(bp, qp, Ap):
    """:func:`ag_f` on bare pointers, its flat model and workspace made as arrays straight
    from their addresses in the buffer (``carray``) rather than as reshaped slices of it:
    each reshape is a call into numba's runtime helper, and ag_f's five cost about a fifth
    of ur5's whole call from Python."""
    nb, nv = int(bp[0]), int(bp[2])
    o = HDR + (nb + 1) * WIDTH
    if int(bp[3]) < o + 40 * nb + 12:  # (the buffer's length, as ag_f checks it)
        return BAD_SHAPE
    return ag_core(carray(_at(bp, HDR), (nb + 1, WIDTH)), carray(qp, (int(bp[1]),)),
                   carray(Ap, (6, nv)), carray(_at(bp, o), (nb, 12)),
                   carray(_at(bp, o + 12 * nb), (nb, 12)),
                   carray(_at(bp, o + 24 * nb), (nb, 13)),
                   carray(_at(bp, o + 37 * nb), (2, 6)),
                   carray(_at(bp, o + 37 * nb + 12), (3 * nb,)))


_C_MADE: dict = {}


def c_entry(name: str) -> int:
    """The address of the C entry point ``name`` (``ag_c``: ``int64 f(double *buf,
    double *q, double *A_G)``), compiled or loaded from the on-disk cache on first use,
    after its ``*_f`` kernel is readied (:func:`kanedyn.dynamics.kernels.entries.c_function`)."""
    return c_function(_C_MADE, name, globals()[name], ready, name[:-2] + "_f")


# --- entry points: compiled for one signature each, on first use -----------------

SIGNATURES = {
    # any strides for the caller's arrays: called without the dispatcher's type check
    # (see kernels.entry); the wrappers check ndim and dtype
    "ag_f": f"int64({Sig.V}, {Sig.A}, {Sig.A2})",
    "cm_f": f"int64({Sig.V}, {Sig.A}, {Sig.A}, {Sig.A})",
    "ag_batch": f"void({Sig.M}, {Sig.M}, {Sig.T3}, {Sig.I})",
    "cm_batch": f"void({Sig.M}, {Sig.M}, {Sig.M}, {Sig.M}, {Sig.I})",
}


_LOADER = KernelModule(globals())
# the dispatcher of a kernel, compiled for its one signature, and its bare compiled entry
# point (KernelModule.ready, .entry)
ready, entry = _LOADER.ready, _LOADER.entry
