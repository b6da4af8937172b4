"""The per-joint primitives on the flat model: the joint transform and the motion subspace.

Featherstone 2008, Chapter 4 (joint models, Table 4.1): joint i gives the transform
from its parent's coordinates to body i's, ``X_up[i] = X_J(q_i) X_tree[i]``, and its
motion subspace ``S_i`` (6 x nv_i), the joint velocity being ``v_J = S_i q̇_i``.
Transforms are kept as (E, r), ``X = [E 0; -E r× E]``:

- :func:`joint_transform`: ``X_up[i]`` for every joint type (Rodrigues' formula for
  revolute and helical joints, the unit quaternion for spherical and free ones);
  :func:`unit_axis_transform`, the shortcut for a revolute joint about a coordinate
  axis (two rows of E_tree mixed by cos and sin);
- :func:`motion_subspace_column` (column c of S), :func:`motion_subspace_times`
  (``S x``), :func:`motion_subspace_transpose_times` (``S[:, c]ᵀ f``: the component of
  a force along the joint's speed c, RNEA's ``τ_i = S_iᵀ f_i``, CRBA's ``M_ji = S_jᵀ F``);
- :func:`sincos`: cos and sin of all joint angles at once, a polynomial the compiler
  vectorises;
- their lane forms (``lane_*``, :func:`lanes_x_up`): the same for several states at
  once (see :mod:`.lanes`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...model.joints import free, helical, planar, prismatic, revolute, spherical
from .. import _compiled
from ..layout import (
    AXIS,
    AXIS_ID,
    E_TREE,
    EXTENSION,
    HELICAL,
    IQ,
    IV,
    JFUNCS,
    JTYPE,
    PITCH,
    PLANAR,
    PRISMATIC,
    QTOL,
    R_TREE,
    REVOLUTE,
    SPHERICAL,
    SUNIT,
)
from .joint_extension import (
    COLUMN,
    TIMES,
    TRANSFORM,
    TRANSPOSE_TIMES,
    call_column,
    call_times,
    call_transform,
    call_transpose_times,
    table_entry,
)
from .spatial_rows import tree_compose

_compiled.key_cache(__name__)  # (see dynamics/_compiled.py)

# --- joints ------------------------------------------------------------------

@njit(cache=True, _nrt=False, forceinline=True)
def unit_axis_transform(data, i, c, s, X):
    """X[i] of a revolute joint about the unit axis e_ax, from c = cos q_i, s = sin q_i:
    R = 1 on e_ax and a plane rotation on (e_u, e_w), so Eᵀ_J E_tree mixes two rows of
    E_tree: row_u = c T_u + s T_w, row_w = c T_w - s T_u."""
    ax = int(data[i, AXIS_ID])
    u = (ax + 1) % 3
    w = (ax + 2) % 3
    for b in range(3):
        tu = data[i, E_TREE + 3 * u + b]
        tw = data[i, E_TREE + 3 * w + b]
        X[i, 3 * u + b] = c * tu + s * tw
        X[i, 3 * w + b] = c * tw - s * tu
        X[i, 3 * ax + b] = data[i, E_TREE + 3 * ax + b]
        X[i, 9 + b] = data[i, R_TREE + b]


# cos and sin of all joint angles at once (see sincos): π/2 in three parts of 33 bits
# (n π/2 exact in each for |n| < 2^20), and the minimax polynomials of fdlibm's
# __kernel_sin / __kernel_cos on [-π/4, π/4] (FreeBSD msun k_sin.c, k_cos.c)
PIO2_1 = 1.57079632673412561417e+00
PIO2_2 = 6.07710050630396597660e-11
PIO2_3 = 2.02226624871116645580e-21
INVPIO2 = 6.36619772367581382433e-01
SIN1, SIN2 = -1.66666666666666324348e-01, 8.33333333332248946124e-03
SIN3, SIN4 = -1.98412698298579493134e-04, 2.75573137070700676789e-06
SIN5, SIN6 = -2.50507602534068634195e-08, 1.58969099521155010221e-10
COS1, COS2 = 4.16666666666666019037e-02, -1.38888888888741095749e-03
COS3, COS4 = 2.48015872894767294178e-05, -2.75573143513906633035e-07
COS5, COS6 = 2.08757232129817482790e-09, -1.13596475577881948265e-11
#: sincos serves |angles| up to this (the reduction above is exact for |n| < 2^20)
SINCOS_BIG = 1e5
#: CRBA calls sincos from this many bodies on (a vector of angles, 8 with AVX-512);
#: below, the scalar tail of the loop does not beat libm (ur5, 6 bodies: 4 % slower)
SINCOS_MIN = 8


@njit(cache=True, _nrt=False)
def sincos(x, cx, sx):
    """``cx[k], sx[k] = cos, sin of x[k]`` for every k, to 1-2 ulp of libm.

    libm's sincos costs ~23 ns a call here, ~0.7 µs for the 32 revolute joints of the
    humanoid; this loop has no calls and no branches, so the compiler vectorises it
    over the angles (8 at a time): ~4 ns an angle. x = n π/2 + r with |r| <= π/4
    (Cody-Waite reduction; n times each of the first two parts of π/2 is exact), then
    sin r and cos r by fdlibm's polynomials, exchanged and negated by the quadrant
    n mod 4. For |angle| <= :data:`SINCOS_BIG`: the caller takes libm beyond (and for
    NaN), which keeps the loop free of calls (a fallback loop here was unrolled into
    two dozen libm calls, doubling the code of crba_f).
    """
    for k in range(x.shape[0]):
        a = x[k]
        n = np.floor(a * INVPIO2 + 0.5)
        r = ((a - n * PIO2_1) - n * PIO2_2) - n * PIO2_3
        z = r * r
        w = z * z
        sr = SIN2 + z * (SIN3 + z * SIN4) + z * w * (SIN5 + z * SIN6)
        sn = r + z * r * (SIN1 + z * sr)
        cr = z * (COS1 + z * (COS2 + z * COS3)) + w * w * (COS4 + z * (COS5 + z * COS6))
        hz = 0.5 * z
        t = 1.0 - hz
        cs = t + (((1.0 - t) - hz) + z * cr)
        # quadrant n mod 4 = 2 b + a: a swaps sin and cos, then cos < 0 for 1, 2, sin for 2, 3
        h = 0.5 * n
        odd = h != np.floor(h)
        m = n - 4.0 * np.floor(0.25 * n)
        c1 = sn if odd else cs
        s1 = cs if odd else sn
        cx[k] = -c1 if (m == 1.0 or m == 2.0) else c1
        sx[k] = -s1 if m >= 2.0 else s1


@njit(cache=True, _nrt=False, forceinline=True)
def joint_transform(data, i, q, X):
    """``X_up[i] = X_J(q_i) X_tree[i]`` into X[i] = (E row-major, r); 1 if a quaternion is not unit.

    ``X_J = plucker(Rᵀ, p)`` with (R, p) the pose of the child in the joint
    frame (the joint type's ``joint_pose``), so ``E = Rᵀ E_tree`` and
    ``r = r_tree + E_treeᵀ p``.
    """
    jt = int(data[i, JTYPE])
    k = int(data[i, IQ])
    if data[i, AXIS_ID] >= 0:
        unit_axis_transform(data, i, np.cos(q[k]), np.sin(q[k]), X)
        return 0
    if jt == EXTENSION:  # a type of its own: X_up[i] made by its entry point
        return call_transform(table_entry(int(data[i, JFUNCS]), TRANSFORM), q, k, data[i],
                              data[data.shape[0] - 1, QTOL], X[i])
    # the dispatcher: one line per joint code (tests/model/test_joint_primitives.py checks
    # that every registered compiled_code has its line, against the numpy definition)
    if jt == REVOLUTE or jt == HELICAL:
        # one inlined Rodrigues for both (two copies of it and of libm's cos and sin grew
        # every kernel by ~150 instructions): the screw is the revolute rotation and its
        # translation along the axis, as helical.joint_pose
        (bad, r00, r01, r02, r10, r11, r12, r20, r21, r22, p0, p1, p2) = revolute.joint_pose(
            q, k, data[i, AXIS], data[i, AXIS + 1], data[i, AXIS + 2])
        if jt == HELICAL:
            p0, p1, p2 = helical.screw_translation(
                q, k, data[i, AXIS], data[i, AXIS + 1], data[i, AXIS + 2], data[i, PITCH])
    elif jt == PRISMATIC:
        (bad, r00, r01, r02, r10, r11, r12, r20, r21, r22, p0, p1, p2) = prismatic.joint_pose(
            q, k, data[i, AXIS], data[i, AXIS + 1], data[i, AXIS + 2])
    elif jt == PLANAR:
        (bad, r00, r01, r02, r10, r11, r12, r20, r21, r22, p0, p1, p2) = planar.joint_pose(q, k)
    else:  # SPHERICAL or FREE: one inlined quaternion rotation for both (as above)
        free_joint = jt != SPHERICAL  # FREE
        (bad, r00, r01, r02, r10, r11, r12, r20, r21, r22, p0, p1, p2) = spherical.joint_pose(
            q, k + 3 if free_joint else k, data[data.shape[0] - 1, QTOL])
        if free_joint:  # as free.joint_pose: the ball's rotation, translated
            p0, p1, p2 = free.translation(q, k)
    if bad:
        return 1
    tree_compose(data[i], X[i], r00, r01, r02, r10, r11, r12, r20, r21, r22, p0, p1, p2)
    return 0


@njit(cache=True, _nrt=False)
def motion_subspace_column(data, i, c, dst, k):
    """``dst[k] = S_i[:, c]``, column c of the motion subspace of joint i."""
    jt = int(data[i, JTYPE])
    if data[i, SUNIT] > 0:  # S[:, c] = e_c
        s0, s1, s2, s3, s4, s5 = (1.0 if c == 0 else 0.0, 1.0 if c == 1 else 0.0,
                                  1.0 if c == 2 else 0.0, 1.0 if c == 3 else 0.0,
                                  1.0 if c == 4 else 0.0, 1.0 if c == 5 else 0.0)
    elif jt == REVOLUTE:
        s0, s1, s2, s3, s4, s5 = revolute.motion_subspace_column(
            c, data[i, AXIS], data[i, AXIS + 1], data[i, AXIS + 2])
    elif jt == PRISMATIC:
        s0, s1, s2, s3, s4, s5 = prismatic.motion_subspace_column(
            c, data[i, AXIS], data[i, AXIS + 1], data[i, AXIS + 2])
    elif jt == HELICAL:
        s0, s1, s2, s3, s4, s5 = helical.motion_subspace_column(
            c, data[i, AXIS], data[i, AXIS + 1], data[i, AXIS + 2], data[i, PITCH])
    elif jt == PLANAR:
        s0, s1, s2, s3, s4, s5 = planar.motion_subspace_column(c)
    else:  # EXTENSION
        s0, s1, s2, s3, s4, s5 = call_column(table_entry(int(data[i, JFUNCS]), COLUMN), c,
                                             data[i])
    dst[k, 0], dst[k, 1], dst[k, 2], dst[k, 3], dst[k, 4], dst[k, 5] = s0, s1, s2, s3, s4, s5


@njit(cache=True, _nrt=False, forceinline=True)
def subspace_times(data, i, jt, x, o):
    """``S_i x_i`` (six scalars), x_i = x[o:o + nv_i]: the dispatcher of the joint types'
    ``motion_subspace_times``."""
    n = data[i, SUNIT]
    if n > 0:  # S = [1; 0]: x_i and zeros
        return (x[o], x[o + 1], x[o + 2], x[o + 3] if n > 3 else 0.0,
                x[o + 4] if n > 4 else 0.0, x[o + 5] if n > 5 else 0.0)
    if jt == REVOLUTE:
        return revolute.motion_subspace_times(
            x, o, data[i, AXIS], data[i, AXIS + 1], data[i, AXIS + 2])
    if jt == PRISMATIC:
        return prismatic.motion_subspace_times(
            x, o, data[i, AXIS], data[i, AXIS + 1], data[i, AXIS + 2])
    if jt == HELICAL:
        return helical.motion_subspace_times(
            x, o, data[i, AXIS], data[i, AXIS + 1], data[i, AXIS + 2], data[i, PITCH])
    if jt == PLANAR:
        return planar.motion_subspace_times(x, o)
    return call_times(table_entry(int(data[i, JFUNCS]), TIMES), x, o, data[i])  # EXTENSION


@njit(cache=True, _nrt=False, forceinline=True)
def motion_subspace_times(data, i, x, dst, k):
    """``dst[k] = S_i x_i`` with x_i the joint's part of the speed-sized vector x."""
    (dst[k, 0], dst[k, 1], dst[k, 2], dst[k, 3], dst[k, 4],
     dst[k, 5]) = subspace_times(data, i, int(data[i, JTYPE]), x, int(data[i, IV]))


@njit(cache=True, _nrt=False, forceinline=True)
def motion_subspace_transpose_times(data, i, c, F, k):
    """``S_i[:, c]ᵀ F[k]``: the power-conjugate component c of a force on joint i."""
    if data[i, SUNIT] > 0:  # S[:, c] = e_c
        return F[k, c]
    jt = int(data[i, JTYPE])
    if jt == REVOLUTE:
        return revolute.motion_subspace_transpose_times(
            F, k, c, data[i, AXIS], data[i, AXIS + 1], data[i, AXIS + 2])
    if jt == PRISMATIC:
        return prismatic.motion_subspace_transpose_times(
            F, k, c, data[i, AXIS], data[i, AXIS + 1], data[i, AXIS + 2])
    if jt == HELICAL:
        return helical.motion_subspace_transpose_times(
            F, k, c, data[i, AXIS], data[i, AXIS + 1], data[i, AXIS + 2], data[i, PITCH])
    if jt == PLANAR:
        return planar.motion_subspace_transpose_times(F, k, c)
    return call_transpose_times(table_entry(int(data[i, JFUNCS]), TRANSPOSE_TIMES), F[k], c,
                                data[i])  # EXTENSION


@njit(cache=True, _nrt=False)
def lane_joint_transform(data, i, q, Xs, X, r, l):
    """``X[r, :, l] = X_up[i]`` of state q by :func:`joint_transform` (through the
    scalar row ``Xs[i]``); its status."""
    s = joint_transform(data, i, q, Xs)
    for c in range(12):
        X[r, c, l] = Xs[i, c]
    return s


@njit(cache=True, _nrt=False, forceinline=True)
def lane_cos_sin(Q, k0, iq, L, c, s):
    """``c[l], s[l]`` = libm's cos and sin of ``Q[k0 + l, iq]`` (as joint_transform)."""
    for l in range(L):
        c[l] = np.cos(Q[k0 + l, iq])
        s[l] = np.sin(Q[k0 + l, iq])


@njit(cache=True, _nrt=False, forceinline=True)
def lane_unit_axis_transform(data, i, c, s, X, r, L):
    """``X[r, :, l]`` = X_up[i] of a revolute joint about a unit axis for each lane l,
    from c[l] = cos q_i, s[l] = sin q_i (as :func:`unit_axis_transform`). One row per
    loop: rows whose offsets the compiler cannot compare would need run-time overlap
    checks."""
    ax = int(data[i, AXIS_ID])
    u = (ax + 1) % 3
    w = (ax + 2) % 3
    for b in range(3):
        tu = data[i, E_TREE + 3 * u + b]
        tw = data[i, E_TREE + 3 * w + b]
        for l in range(L):
            X[r, 3 * u + b, l] = c[l] * tu + s[l] * tw
        for l in range(L):
            X[r, 3 * w + b, l] = c[l] * tw - s[l] * tu
        for l in range(L):
            X[r, 3 * ax + b, l] = data[i, E_TREE + 3 * ax + b]
        for l in range(L):
            X[r, 9 + b, l] = data[i, R_TREE + b]


@njit(cache=True, _nrt=False, forceinline=True)
def lane_motion_subspace_times(data, i, jt, o, Xv, k0, L, dst):
    """``dst[:, l] = S_i x_i`` of lane l for the speed-sized rows ``Xv[k0 + l]`` (as
    :func:`motion_subspace_times`, operation for operation)."""
    for l in range(L):
        (dst[0, l], dst[1, l], dst[2, l], dst[3, l], dst[4, l],
         dst[5, l]) = subspace_times(data, i, jt, Xv[k0 + l], o)


# --- the X_up block of several states at once (CRBA, A_G) ---------------------------

@njit(cache=True, forceinline=True)
def lanes_x_up(data, Q, k0, L, X, Xs, C, status):
    """X_up[i] of every body for the states k0 .. k0 + L - 1 (lane l: X[i, :, l]), as the
    batched CRBA and A_G take them: joints about a unit axis from the cos and sin of all
    angles at once (:func:`sincos`, ``C`` = angles, cos, sin; libm on a small tree, or
    for an angle beyond :data:`SINCOS_BIG` or NaN), other joints lane by lane. A lane
    whose joint transform fails gets status i + 1 (the first such body)."""
    nb = data.shape[0] - 1
    vec = nb >= SINCOS_MIN
    if vec:
        for i in range(nb):
            iq = int(data[i, IQ])
            for l in range(L):
                C[0, i * L + l] = Q[k0 + l, iq]
        sincos(C[0, :nb * L], C[1, :nb * L], C[2, :nb * L])
    for i in range(nb):
        if data[i, AXIS_ID] >= 0:
            cq, sq = C[1, i * L:(i + 1) * L], C[2, i * L:(i + 1) * L]
            if not vec:  # a small tree: libm's cos and sin
                lane_cos_sin(Q, k0, int(data[i, IQ]), L, cq, sq)
            lane_unit_axis_transform(data, i, cq, sq, X, i, L)
            for l in range(L):
                if vec and not abs(C[0, i * L + l]) <= SINCOS_BIG:  # (and NaN): libm
                    lane_joint_transform(data, i, Q[k0 + l], Xs, X, i, l)
        else:
            for l in range(L):
                if lane_joint_transform(data, i, Q[k0 + l], Xs, X, i, l) and status[k0 + l] == 0:
                    status[k0 + l] = i + 1
