"""numba kernels of frame kinematics, on the flat model of :mod:`.flat`.

The same quantities as :mod:`.frames_reference` (the readable definitions they
are tested against), computed in one pass down the support of the frame's body
(root to body; other branches of the tree are not visited), with the joint and
spatial helpers of :mod:`.kernels`:

- ``X_up[j]`` (:func:`~.kernels.joint_transform`), the world pose (R_j, p_j), and
  when asked the body velocity ``v_j = X_up[j] v_p + S_j q̇_j`` and acceleration
  ``a_j = X_up[j] a_p + S_j q̈_j + v_j × S_j q̇_j`` in body coordinates (no gravity);
- the frame F with placement ``X_F = (E, r)`` (frame_X_body): ``R_F = R_b Eᵀ``,
  ``p_F = p_b + R_b r``; ``v_F = X_F v_b``, ``a_F = X_F a_b`` in F's coordinates,
  then moved to the reference (``local_world_aligned``: (R_F ω, R_F u); ``world``:
  (R_F ω, R_F u + p_F × R_F ω)); classical: linear part plus ω × v in that reference;
- Jacobian columns of each support joint j, first in the world about its origin,
  ``(w, u) = (R_j s_ω, R_j s_v + p_j × w)``, with ``J̇ = v_j^0 × (w, u)`` (S_j is
  constant in body j); local_world_aligned shifts the point to p_F,
  ``(w, u + w × p_F)``, ``J̇ = (ẇ, u̇ + ẇ × p_F + w × ṗ_F)``; local turns that into
  F's axes, ``R_Fᵀ J``, ``J̇ = R_Fᵀ (J̇_lwa - ω × J_lwa)``.

The single-state entry :func:`frame_f` reads the model and carves its workspace out
of the frame's array P (:func:`frame_params`), which the wrapper keeps per model and
frame (no allocation per call, one argument for model, frame and workspace); the batch runs
states in parallel, a workspace per task. :func:`frame_c` is frame_f on bare pointers,
for the C fast path of :mod:`.frames` (``FrameCaller`` of ``_fastcall.c``). Status as
in :mod:`.kernels`.
"""

from __future__ import annotations

import numpy as np
from numba import carray, njit, prange, types

from . import _compiled
from ._compiled import KernelModule
from .kernels.constants import BAD_SHAPE, NOT_FINITE
from .kernels.entries import Sig, c_function
from .kernels.joint_rows import (
    SINCOS_BIG,
    SINCOS_MIN,
    joint_transform,
    motion_subspace_column,
    motion_subspace_times,
    sincos,
    unit_axis_transform,
)
from .kernels.lanes import BATCH_TASK
from .kernels.spatial_rows import all_finite2, cross_motion_add, cross_unit_add, x_motion
from .layout import (
    AXIS_ID,
    IQ,
    IV,
    NQ,
    NV,
    NVJ,
    PARENT,
    SIDX,
    WIDTH,
)

_compiled.key_cache(__name__)

#: what to compute (bits of ``want``)
POSE, VEL, ACC, CLASSICAL, JAC, DJAC = 1, 2, 4, 8, 16, 32
#: reference codes, in the order of :data:`kanedyn.dynamics.frames.REFERENCES`
LOCAL, LWA, WORLD = 0, 1, 2
#: layout of ``out``: R_F (9, row-major), p_F (3), velocity (6), acceleration (6)
OUT_R, OUT_P, OUT_V, OUT_A, OUT_SIZE = 0, 9, 12, 18, 24


# The frame array P, (3 nb + 7) x WIDTH, so that every part of it is a slice (a view
# without the reshape, which costs ~20 ns in a kernel): row 0 the frame — X_F = (E, r)
# in columns 0-11, the body in 12, then nb, nq, nv (P_NB, P_NQ, P_NV: the sizes that
# frame_c and _fastcall.c read from the bare buffer) —, rows 1..nb+1 a copy of the
# flat model, then the workspace of one state: a row per body holding X_up (12), R (9),
# p (3), v (6), a (6) (columns 0-35), nb rows holding the support and its angles, cos,
# sin (4 nb contiguous entries), 4 scratch rows and the 24 results.


#: columns of P's row 0 holding the model's nb, nq and nv
P_NB, P_NQ, P_NV = 13, 14, 15


def param_rows(nb: int) -> int:
    """Rows of the frame array P of a model with nb bodies."""
    return 3 * nb + 7


def frame_params(data, body: int, E, r):
    """The frame array P (see above) of a frame on ``body`` with placement X_F = (E, r)
    (frame_X_body), for the flat model ``data``: one array, as each argument of a
    compiled call costs ~50 ns to unbox."""
    nb = data.shape[0] - 1
    P = np.zeros((param_rows(nb), WIDTH))
    P[0, :9] = np.asarray(E, dtype=float).reshape(9)
    P[0, 9:12] = r
    P[0, 12] = body
    P[0, P_NB], P[0, P_NQ], P[0, P_NV] = nb, data[nb, NQ], data[nb, NV]
    P[1:nb + 2] = data
    return P


@njit(cache=True, _nrt=False, forceinline=True)
def to_reference(ref, RF, p0, p1, p2, w0, w1, w2, u0, u1, u2):
    """A motion (ω, u) in F's coordinates (at F's origin) in the coordinates of ``ref``;
    ``RF[0:9]`` is R_F row-major (the ``out`` array: no view is made, see frame_batch)."""
    if ref == LOCAL:
        return w0, w1, w2, u0, u1, u2
    a0 = RF[0] * w0 + RF[1] * w1 + RF[2] * w2
    a1 = RF[3] * w0 + RF[4] * w1 + RF[5] * w2
    a2 = RF[6] * w0 + RF[7] * w1 + RF[8] * w2
    b0 = RF[0] * u0 + RF[1] * u1 + RF[2] * u2
    b1 = RF[3] * u0 + RF[4] * u1 + RF[5] * u2
    b2 = RF[6] * u0 + RF[7] * u1 + RF[8] * u2
    if ref == WORLD:  # the body point at the world origin: u_O = u_F + p_F × ω
        b0 += p1 * a2 - p2 * a1
        b1 += p2 * a0 - p0 * a2
        b2 += p0 * a1 - p1 * a0
    return a0, a1, a2, b0, b1, b2


@njit(cache=True, _nrt=False, forceinline=True)
def compose_pose(R, p, X, i, par):
    """R_i = R_p E_iᵀ, p_i = p_p + R_p r_i (R_p = 1, p_p = 0 for the world, par < 0),
    with X[i] = (E_i, r_i) the transform from the parent to body i (row-major E)."""
    e0, e1, e2, e3, e4, e5, e6, e7, e8 = (X[i, 0], X[i, 1], X[i, 2], X[i, 3], X[i, 4],
                                          X[i, 5], X[i, 6], X[i, 7], X[i, 8])
    r0, r1, r2 = X[i, 9], X[i, 10], X[i, 11]
    if par < 0:
        a0, a1, a2, a3, a4, a5, a6, a7, a8 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
        t0 = t1 = t2 = 0.0
    else:
        a0, a1, a2, a3, a4, a5, a6, a7, a8 = (R[par, 0], R[par, 1], R[par, 2], R[par, 3],
                                              R[par, 4], R[par, 5], R[par, 6], R[par, 7],
                                              R[par, 8])
        t0, t1, t2 = p[par, 0], p[par, 1], p[par, 2]
    # row m of R_i: (R_p)_m · (column c of Eᵀ = row c of E)
    R[i, 0] = a0 * e0 + a1 * e1 + a2 * e2
    R[i, 1] = a0 * e3 + a1 * e4 + a2 * e5
    R[i, 2] = a0 * e6 + a1 * e7 + a2 * e8
    R[i, 3] = a3 * e0 + a4 * e1 + a5 * e2
    R[i, 4] = a3 * e3 + a4 * e4 + a5 * e5
    R[i, 5] = a3 * e6 + a4 * e7 + a5 * e8
    R[i, 6] = a6 * e0 + a7 * e1 + a8 * e2
    R[i, 7] = a6 * e3 + a7 * e4 + a8 * e5
    R[i, 8] = a6 * e6 + a7 * e7 + a8 * e8
    p[i, 0] = t0 + a0 * r0 + a1 * r1 + a2 * r2
    p[i, 1] = t1 + a3 * r0 + a4 * r1 + a5 * r2
    p[i, 2] = t2 + a6 * r0 + a7 * r1 + a8 * r2


@njit(cache=True, _nrt=False, forceinline=True)
def frame_core(data, q, v, a, body, F, want, ref, out, J, dJ, X, R, p, Vb, Ab, T, chain,
               ang, cs, sn):
    """Frame F (placement F[0] = (E, r) on ``body``, -1 the world) at one state.

    ``ang``, ``cs``, ``sn``: scratch of nb entries (angles of the support's unit-axis
    joints and their cos, sin: :func:`~.kernels.sincos` for all at once on a support of
    :data:`~.kernels.SINCOS_MIN` bodies or more, as CRBA; libm below, or for an angle
    beyond :data:`~.kernels.SINCOS_BIG` or NaN).

    Compiled without numba's runtime and inlined into :func:`frame_f` only: the views
    it makes (``ang[:depth]``) hold no reference count, so a function that counts them
    (any caller compiled with the runtime, e.g. a parallel one) must not inline it —
    the batch calls frame_f instead."""
    need_a = (want & (ACC | CLASSICAL)) != 0
    need_v = need_a or (want & (VEL | DJAC)) != 0
    # the support of the body, body first
    depth = 0
    j = body
    while j >= 0:
        chain[depth] = j
        depth += 1
        j = int(data[j, PARENT])
    vec = depth >= SINCOS_MIN
    if vec:
        for d in range(depth):
            i = int(chain[d])
            if data[i, AXIS_ID] >= 0:
                x = q[int(data[i, IQ])]
                if not abs(x) <= SINCOS_BIG:
                    vec = False
                ang[d] = x
            else:
                ang[d] = 0.0
        if vec:
            sincos(ang[:depth], cs[:depth], sn[:depth])
    for d in range(depth - 1, -1, -1):
        i = int(chain[d])
        if vec and data[i, AXIS_ID] >= 0:
            unit_axis_transform(data, i, cs[d], sn[d], X)
        elif joint_transform(data, i, q, X):
            return i + 1
        par = int(data[i, PARENT])
        # pose of body i in its parent is (Eᵀ, r): R_i = R_p Eᵀ, p_i = p_p + R_p r.
        # R, p and X are views of one buffer, so the compiler must assume that a store
        # to R[i] changes R[par] and X[i]: their entries are read into locals once.
        compose_pose(R, p, X, i, par)
        if need_v:
            k = int(data[i, SIDX])
            if k >= 0:  # S = e_k: S q̇ is one entry, v × S q̇ four products
                qd = v[int(data[i, IV])]
                if par >= 0:
                    x_motion(X, i, Vb, par, Vb, i)
                else:
                    for m in range(6):
                        Vb[i, m] = 0.0
                Vb[i, k] += qd
                if need_a:
                    if par >= 0:
                        x_motion(X, i, Ab, par, Ab, i)
                    else:
                        for m in range(6):
                            Ab[i, m] = 0.0
                    Ab[i, k] += a[int(data[i, IV])]
                    cross_unit_add(Vb, i, k, qd, Ab, i)
            else:
                motion_subspace_times(data, i, v, T, 0)  # S q̇
                if par >= 0:
                    x_motion(X, i, Vb, par, Vb, i)
                    for m in range(6):
                        Vb[i, m] += T[0, m]
                else:
                    for m in range(6):
                        Vb[i, m] = T[0, m]
                if need_a:
                    motion_subspace_times(data, i, a, Ab, i)  # S q̈
                    if par >= 0:
                        x_motion(X, i, Ab, par, T, 1)
                        for m in range(6):
                            Ab[i, m] += T[1, m]
                    cross_motion_add(Vb, i, T, 0, Ab, i)
    # the frame's pose (a frame on the world: F[0] is frame_X_world, its origin r)
    for m in range(3):
        for c in range(3):
            if body >= 0:
                out[OUT_R + 3 * m + c] = (R[body, 3 * m] * F[0, 3 * c] + R[body, 3 * m + 1]
                                          * F[0, 3 * c + 1] + R[body, 3 * m + 2] * F[0, 3 * c + 2])
            else:
                out[OUT_R + 3 * m + c] = F[0, 3 * c + m]
        if body >= 0:
            out[OUT_P + m] = (p[body, m] + R[body, 3 * m] * F[0, 9] + R[body, 3 * m + 1] * F[0, 10]
                              + R[body, 3 * m + 2] * F[0, 11])
        else:
            out[OUT_P + m] = F[0, 9 + m]
    RF = out  # R_F is out[OUT_R:OUT_R + 9], OUT_R = 0
    p0, p1, p2 = out[OUT_P], out[OUT_P + 1], out[OUT_P + 2]
    if need_v:
        if body >= 0:
            x_motion(F, 0, Vb, body, T, 2)
        else:
            for m in range(6):
                T[2, m] = 0.0
        (out[OUT_V], out[OUT_V + 1], out[OUT_V + 2], out[OUT_V + 3], out[OUT_V + 4],
         out[OUT_V + 5]) = to_reference(ref, RF, p0, p1, p2, T[2, 0], T[2, 1], T[2, 2],
                                        T[2, 3], T[2, 4], T[2, 5])
    if need_a:
        if body >= 0:
            x_motion(F, 0, Ab, body, T, 3)
        else:
            for m in range(6):
                T[3, m] = 0.0
        (out[OUT_A], out[OUT_A + 1], out[OUT_A + 2], out[OUT_A + 3], out[OUT_A + 4],
         out[OUT_A + 5]) = to_reference(ref, RF, p0, p1, p2, T[3, 0], T[3, 1], T[3, 2],
                                        T[3, 3], T[3, 4], T[3, 5])
        if want & CLASSICAL:  # + ω × v, both in the reference's coordinates
            w0, w1, w2 = out[OUT_V], out[OUT_V + 1], out[OUT_V + 2]
            u0, u1, u2 = out[OUT_V + 3], out[OUT_V + 4], out[OUT_V + 5]
            out[OUT_A + 3] += w1 * u2 - w2 * u1
            out[OUT_A + 4] += w2 * u0 - w0 * u2
            out[OUT_A + 5] += w0 * u1 - w1 * u0
    if want & (JAC | DJAC):
        jac_columns(data, body, want, ref, RF, p0, p1, p2, J, dJ, R, p, Vb, T, chain, depth)
    # only what was computed (the other entries of out are not written)
    n = OUT_A + 6 if need_a else (OUT_V + 6 if need_v else OUT_V)
    ok = True
    for m in range(n):
        ok = ok and np.isfinite(out[m])
    if want & JAC:
        ok = ok and all_finite2(J)
    if want & DJAC:
        ok = ok and all_finite2(dJ)
    return 0 if ok else NOT_FINITE


@njit(cache=True, _nrt=False, forceinline=True)
def jac_columns(data, body, want, ref, RF, p0, p1, p2, J, dJ, R, p, Vb, T, chain, depth):
    """J (and J̇) of frame F into J (dJ): the columns of the support joints (module doc)."""
    with_d = (want & DJAC) != 0
    with_j = (want & JAC) != 0
    for m in range(6):
        if with_j:
            for c in range(J.shape[1]):
                J[m, c] = 0.0
        if with_d:
            for c in range(dJ.shape[1]):
                dJ[m, c] = 0.0
    # ṗ_F and ω of the body, world axes (for J̇ of local_world_aligned and local)
    Wb0 = Wb1 = Wb2 = Pd0 = Pd1 = Pd2 = 0.0
    if with_d and body >= 0:
        w0, w1, w2 = Vb[body, 0], Vb[body, 1], Vb[body, 2]
        Wb0 = R[body, 0] * w0 + R[body, 1] * w1 + R[body, 2] * w2
        Wb1 = R[body, 3] * w0 + R[body, 4] * w1 + R[body, 5] * w2
        Wb2 = R[body, 6] * w0 + R[body, 7] * w1 + R[body, 8] * w2
        u0, u1, u2 = Vb[body, 3], Vb[body, 4], Vb[body, 5]
        # velocity of the body point at p_F: R_b v_b + ω × (p_F - p_b)
        e0, e1, e2 = p0 - p[body, 0], p1 - p[body, 1], p2 - p[body, 2]
        Pd0 = R[body, 0] * u0 + R[body, 1] * u1 + R[body, 2] * u2 + Wb1 * e2 - Wb2 * e1
        Pd1 = R[body, 3] * u0 + R[body, 4] * u1 + R[body, 5] * u2 + Wb2 * e0 - Wb0 * e2
        Pd2 = R[body, 6] * u0 + R[body, 7] * u1 + R[body, 8] * u2 + Wb0 * e1 - Wb1 * e0
    Om0 = Om1 = Om2 = Vo0 = Vo1 = Vo2 = 0.0
    dw0 = dw1 = dw2 = du0 = du1 = du2 = 0.0
    for d in range(depth):
        j = int(chain[d])
        if with_d:  # v_j^0: spatial velocity of body j in world coordinates
            w0, w1, w2 = Vb[j, 0], Vb[j, 1], Vb[j, 2]
            Om0 = R[j, 0] * w0 + R[j, 1] * w1 + R[j, 2] * w2
            Om1 = R[j, 3] * w0 + R[j, 4] * w1 + R[j, 5] * w2
            Om2 = R[j, 6] * w0 + R[j, 7] * w1 + R[j, 8] * w2
            u0, u1, u2 = Vb[j, 3], Vb[j, 4], Vb[j, 5]
            Vo0 = R[j, 0] * u0 + R[j, 1] * u1 + R[j, 2] * u2 + p[j, 1] * Om2 - p[j, 2] * Om1
            Vo1 = R[j, 3] * u0 + R[j, 4] * u1 + R[j, 5] * u2 + p[j, 2] * Om0 - p[j, 0] * Om2
            Vo2 = R[j, 6] * u0 + R[j, 7] * u1 + R[j, 8] * u2 + p[j, 0] * Om1 - p[j, 1] * Om0
        o = int(data[j, IV])
        k = int(data[j, SIDX])
        for c in range(int(data[j, NVJ])):
            if k >= 0:  # S = e_k: a column of R_j, no products
                if k < 3:
                    w0, w1, w2 = R[j, k], R[j, 3 + k], R[j, 6 + k]
                    u0 = p[j, 1] * w2 - p[j, 2] * w1
                    u1 = p[j, 2] * w0 - p[j, 0] * w2
                    u2 = p[j, 0] * w1 - p[j, 1] * w0
                else:
                    w0 = w1 = w2 = 0.0
                    u0, u1, u2 = R[j, k - 3], R[j, k], R[j, k + 3]
            else:
                # (T[0], T[1]: free after the forward pass)
                motion_subspace_column(data, j, c, T, 1)
                s0, s1, s2, s3, s4, s5 = T[1, 0], T[1, 1], T[1, 2], T[1, 3], T[1, 4], T[1, 5]
                w0 = R[j, 0] * s0 + R[j, 1] * s1 + R[j, 2] * s2
                w1 = R[j, 3] * s0 + R[j, 4] * s1 + R[j, 5] * s2
                w2 = R[j, 6] * s0 + R[j, 7] * s1 + R[j, 8] * s2
                u0 = R[j, 0] * s3 + R[j, 1] * s4 + R[j, 2] * s5 + p[j, 1] * w2 - p[j, 2] * w1
                u1 = R[j, 3] * s3 + R[j, 4] * s4 + R[j, 5] * s5 + p[j, 2] * w0 - p[j, 0] * w2
                u2 = R[j, 6] * s3 + R[j, 7] * s4 + R[j, 8] * s5 + p[j, 0] * w1 - p[j, 1] * w0
            if with_d:  # (ẇ, u̇) = v_j^0 × (w, u)
                dw0 = Om1 * w2 - Om2 * w1
                dw1 = Om2 * w0 - Om0 * w2
                dw2 = Om0 * w1 - Om1 * w0
                du0 = Om1 * u2 - Om2 * u1 + Vo1 * w2 - Vo2 * w1
                du1 = Om2 * u0 - Om0 * u2 + Vo2 * w0 - Vo0 * w2
                du2 = Om0 * u1 - Om1 * u0 + Vo0 * w1 - Vo1 * w0
            if ref != WORLD:  # the point at p_F: u + w × p_F
                u0 += w1 * p2 - w2 * p1
                u1 += w2 * p0 - w0 * p2
                u2 += w0 * p1 - w1 * p0
                if with_d:  # + ẇ × p_F + w × ṗ_F
                    du0 += dw1 * p2 - dw2 * p1 + w1 * Pd2 - w2 * Pd1
                    du1 += dw2 * p0 - dw0 * p2 + w2 * Pd0 - w0 * Pd2
                    du2 += dw0 * p1 - dw1 * p0 + w0 * Pd1 - w1 * Pd0
            if ref == LOCAL:
                if with_d:  # R_Fᵀ (J̇ - ω × J), both blocks
                    dw0 -= Wb1 * w2 - Wb2 * w1
                    dw1 -= Wb2 * w0 - Wb0 * w2
                    dw2 -= Wb0 * w1 - Wb1 * w0
                    du0 -= Wb1 * u2 - Wb2 * u1
                    du1 -= Wb2 * u0 - Wb0 * u2
                    du2 -= Wb0 * u1 - Wb1 * u0
                    dJ[0, o + c] = RF[0] * dw0 + RF[3] * dw1 + RF[6] * dw2
                    dJ[1, o + c] = RF[1] * dw0 + RF[4] * dw1 + RF[7] * dw2
                    dJ[2, o + c] = RF[2] * dw0 + RF[5] * dw1 + RF[8] * dw2
                    dJ[3, o + c] = RF[0] * du0 + RF[3] * du1 + RF[6] * du2
                    dJ[4, o + c] = RF[1] * du0 + RF[4] * du1 + RF[7] * du2
                    dJ[5, o + c] = RF[2] * du0 + RF[5] * du1 + RF[8] * du2
                if with_j:
                    J[0, o + c] = RF[0] * w0 + RF[3] * w1 + RF[6] * w2
                    J[1, o + c] = RF[1] * w0 + RF[4] * w1 + RF[7] * w2
                    J[2, o + c] = RF[2] * w0 + RF[5] * w1 + RF[8] * w2
                    J[3, o + c] = RF[0] * u0 + RF[3] * u1 + RF[6] * u2
                    J[4, o + c] = RF[1] * u0 + RF[4] * u1 + RF[7] * u2
                    J[5, o + c] = RF[2] * u0 + RF[5] * u1 + RF[8] * u2
            else:
                if with_j:
                    J[0, o + c], J[1, o + c], J[2, o + c] = w0, w1, w2
                    J[3, o + c], J[4, o + c], J[5, o + c] = u0, u1, u2
                if with_d:
                    dJ[0, o + c], dJ[1, o + c], dJ[2, o + c] = dw0, dw1, dw2
                    dJ[3, o + c], dJ[4, o + c], dJ[5, o + c] = du0, du1, du2


@njit(cache=True, _nrt=False, forceinline=True)
def deliver(want, out, res):
    """The result asked for, from ``out`` into ``res``: the pose (R_F row-major, p_F), or
    the acceleration, or the velocity (a Jacobian is written in place)."""
    if want & POSE:
        for m in range(12):
            res[m] = out[m]
    elif want & (ACC | CLASSICAL):
        for m in range(6):
            res[m] = out[OUT_A + m]
    elif want & VEL:
        for m in range(6):
            res[m] = out[OUT_V + m]


@njit(cache=True, _nrt=False, nogil=True)
def frame_f(P, q, v, a, op, res, J):
    """One state. ``P`` holds the frame, the model and the workspace (:func:`frame_params`),
    ``op = want | ref << 6``; ``J`` takes the Jacobian or J̇ (one is asked for at a
    time). Checks the lengths of what ``want`` reads and writes."""
    nb = (P.shape[0] - 7) // 3
    data = P[1:nb + 2]
    nv = int(data[nb, NV])
    want = op & 63
    if (q.shape[0] != int(data[nb, NQ]) or P.shape[1] != WIDTH
            or ((want & POSE) and res.shape[0] < 12)
            or ((want & (VEL | ACC | CLASSICAL)) and res.shape[0] < 6)
            or ((want & (VEL | ACC | CLASSICAL | DJAC)) and v.shape[0] != nv)
            or ((want & (ACC | CLASSICAL)) and a.shape[0] != nv)
            or ((want & (JAC | DJAC)) and (J.shape[0] != 6 or J.shape[1] != nv))):
        return BAD_SHAPE
    W = P[nb + 2:2 * nb + 2]
    c = 3 * nb + 2  # scratch rows, then the results
    C = P[2 * nb + 2:3 * nb + 2].reshape(nb * WIDTH)  # support, angles, cos, sin
    out = P[c + 4, :OUT_SIZE]
    st = frame_core(data, q, v, a, int(P[0, 12]), P[0:1, :12], want, op >> 6, out, J, J,
                    W[:, 0:12], W[:, 12:21], W[:, 21:24], W[:, 24:30], W[:, 30:36],
                    P[c:c + 4, :6], C[:nb], C[nb:2 * nb], C[2 * nb:3 * nb], C[3 * nb:4 * nb])
    deliver(want, out, res)
    return st


@njit(cache=True, parallel=True, nogil=True)
def frame_batch(P, Q, V, A, op, res, J, status):
    """States k of Q (V, A: as many rows; res, J: as many, or 1 when not wanted): each
    task runs :func:`frame_f` on a copy of P (its own workspace), so the batch reuses
    frame_f's compiled code instead of compiling the core a second time."""
    N = Q.shape[0]
    for t in prange((N + BATCH_TASK - 1) // BATCH_TASK):
        Pt = P.copy()
        for k in range(t * BATCH_TASK, min(N, (t + 1) * BATCH_TASK)):
            status[k] = frame_f(Pt, Q[k], V[k], A[k], op, res[k if res.shape[0] == N else 0],
                                J[k if J.shape[0] == N else 0])


# --- the C entry point, for _fastcall.c (as kernels.c_entry) ------------------------

def frame_c(Pp, qp, vp, ap, op, resp, Jp):
    """:func:`frame_f` on bare pointers, its sizes from P's row 0 (``FrameCaller`` of
    _fastcall.c has checked the states' lengths against them, and points v, a and res at
    some other array of the call where ``op`` does not read or write them)."""
    nb, nv = int(Pp[P_NB]), int(Pp[P_NV])
    return frame_f(carray(Pp, (3 * nb + 7, WIDTH)), carray(qp, (int(Pp[P_NQ]),)),
                   carray(vp, (nv,)), carray(ap, (nv,)), op,
                   carray(resp, (12 if op & POSE else 6,)), carray(Jp, (6, nv)))


_C_MADE: dict = {}


def c_entry(name: str) -> int:
    """The address of the C entry point ``name`` (``frame_c``: ``int64 f(double *P,
    double *q, double *v, double *a, int64 op, double *res, double *J)``), compiled or
    loaded from the on-disk cache on first use, after :func:`frame_f` is readied (see
    :func:`kanedyn.dynamics.kernels.c_entry`: the cfunc then calls that one
    specialisation, and a stale cache has been dropped first)."""
    ptr = types.CPointer(types.float64)
    return c_function(_C_MADE, name, globals()[name], ready, "frame_f",
                      (ptr, ptr, ptr, ptr, types.int64, ptr, ptr))


SIGNATURES = {
    "frame_f": f"int64({Sig.M}, {Sig.A}, {Sig.A}, {Sig.A}, int64, {Sig.A}, {Sig.A2})",
    "frame_batch": f"void({Sig.M}, {Sig.M}, {Sig.M}, {Sig.M}, int64, {Sig.M}, {Sig.T3}, "
                   f"{Sig.I})",
}


_LOADER = KernelModule(globals(), first={"frame_batch": ("frame_f",)})
# the dispatcher of a kernel, compiled for its one signature, and its bare compiled entry
# point (KernelModule.ready, .entry)
ready, entry = _LOADER.ready, _LOADER.entry
