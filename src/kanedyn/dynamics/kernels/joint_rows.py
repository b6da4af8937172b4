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

from .. import _compiled
from ..layout import (
    AXIS,
    AXIS_ID,
    E_TREE,
    FREE,
    HELICAL,
    IQ,
    IV,
    JTYPE,
    PITCH,
    PLANAR,
    PRISMATIC,
    QTOL,
    R_TREE,
    REVOLUTE,
    SPHERICAL,
)

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
    frame, so ``E = Rᵀ E_tree`` and ``r = r_tree + E_treeᵀ p``.
    """
    jt = int(data[i, JTYPE])
    k = int(data[i, IQ])
    if data[i, AXIS_ID] >= 0:
        unit_axis_transform(data, i, np.cos(q[k]), np.sin(q[k]), X)
        return 0
    p0 = 0.0
    p1 = 0.0
    p2 = 0.0
    if jt == REVOLUTE or jt == HELICAL or jt == PRISMATIC:
        ax = data[i, AXIS]
        ay = data[i, AXIS + 1]
        az = data[i, AXIS + 2]
        th = q[k]
        if jt == PRISMATIC:
            r00, r01, r02 = 1.0, 0.0, 0.0
            r10, r11, r12 = 0.0, 1.0, 0.0
            r20, r21, r22 = 0.0, 0.0, 1.0
            p0, p1, p2 = th * ax, th * ay, th * az
        else:
            # Rodrigues: R = c 1 + s a× + (1 - c) a aᵀ
            c = np.cos(th)
            s = np.sin(th)
            t = 1.0 - c
            r00, r01, r02 = c + t * ax * ax, t * ax * ay - s * az, t * ax * az + s * ay
            r10, r11, r12 = t * ax * ay + s * az, c + t * ay * ay, t * ay * az - s * ax
            r20, r21, r22 = t * ax * az - s * ay, t * ay * az + s * ax, c + t * az * az
            if jt == HELICAL:
                d = data[i, PITCH] * th
                p0, p1, p2 = d * ax, d * ay, d * az
    elif jt == PLANAR:
        c = np.cos(q[k + 2])
        s = np.sin(q[k + 2])
        r00, r01, r02 = c, -s, 0.0
        r10, r11, r12 = s, c, 0.0
        r20, r21, r22 = 0.0, 0.0, 1.0
        p0, p1 = q[k], q[k + 1]
    else:  # SPHERICAL or FREE: a unit quaternion (w, x, y, z)
        if jt == FREE:
            p0, p1, p2 = q[k], q[k + 1], q[k + 2]
            k += 3
        w, x, y, z = q[k], q[k + 1], q[k + 2], q[k + 3]
        n = np.sqrt(w * w + x * x + y * y + z * z)
        if abs(n - 1.0) > data[data.shape[0] - 1, QTOL]:
            return 1
        w, x, y, z = w / n, x / n, y / n, z / n
        r00, r01, r02 = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
        r10, r11, r12 = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
        r20, r21, r22 = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
    for b in range(3):
        t0 = data[i, E_TREE + b]
        t1 = data[i, E_TREE + 3 + b]
        t2 = data[i, E_TREE + 6 + b]
        X[i, b] = r00 * t0 + r10 * t1 + r20 * t2
        X[i, 3 + b] = r01 * t0 + r11 * t1 + r21 * t2
        X[i, 6 + b] = r02 * t0 + r12 * t1 + r22 * t2
        X[i, 9 + b] = (data[i, R_TREE + b] + data[i, E_TREE + b] * p0
                    + data[i, E_TREE + 3 + b] * p1 + data[i, E_TREE + 6 + b] * p2)
    return 0


@njit(cache=True, _nrt=False)
def motion_subspace_column(data, i, c, dst, k):
    """``dst[k] = S_i[:, c]``, column c of the motion subspace of joint i."""
    for m in range(6):
        dst[k, m] = 0.0
    jt = int(data[i, JTYPE])
    if jt == REVOLUTE or jt == HELICAL:
        for m in range(3):
            dst[k, m] = data[i, AXIS + m]
        if jt == HELICAL:
            for m in range(3):
                dst[k, 3 + m] = data[i, PITCH] * data[i, AXIS + m]
    elif jt == PRISMATIC:
        for m in range(3):
            dst[k, 3 + m] = data[i, AXIS + m]
    elif jt == PLANAR:  # speeds (v_x, v_y, ω_z)
        dst[k, 3 + c if c < 2 else 2] = 1.0
    else:  # SPHERICAL: [1; 0]; FREE: 1 (6x6)
        dst[k, c] = 1.0


@njit(cache=True, _nrt=False, forceinline=True)
def motion_subspace_times(data, i, x, dst, k):
    """``dst[k] = S_i x_i`` with x_i the joint's part of the speed-sized vector x."""
    jt = int(data[i, JTYPE])
    o = int(data[i, IV])
    if jt == REVOLUTE or jt == HELICAL or jt == PRISMATIC:
        # S = [a; 0] (revolute), [0; a] (prismatic), [a; h a] (helical)
        wa = 0.0 if jt == PRISMATIC else x[o]
        va = x[o] if jt == PRISMATIC else (x[o] * data[i, PITCH] if jt == HELICAL else 0.0)
        for m in range(3):
            dst[k, m] = wa * data[i, AXIS + m]
            dst[k, 3 + m] = va * data[i, AXIS + m]
    elif jt == PLANAR:
        dst[k, 0] = 0.0
        dst[k, 1] = 0.0
        dst[k, 2] = x[o + 2]
        dst[k, 3] = x[o]
        dst[k, 4] = x[o + 1]
        dst[k, 5] = 0.0
    elif jt == SPHERICAL:
        for m in range(3):
            dst[k, m] = x[o + m]
            dst[k, 3 + m] = 0.0
    else:
        for m in range(6):
            dst[k, m] = x[o + m]


@njit(cache=True, _nrt=False, forceinline=True)
def motion_subspace_transpose_times(data, i, c, F, k):
    """``S_i[:, c]ᵀ F[k]``: the power-conjugate component c of a force on joint i."""
    jt = int(data[i, JTYPE])
    if jt == REVOLUTE:
        return data[i, AXIS] * F[k, 0] + data[i, AXIS + 1] * F[k, 1] + data[i, AXIS + 2] * F[k, 2]
    if jt == PRISMATIC:
        return data[i, AXIS] * F[k, 3] + data[i, AXIS + 1] * F[k, 4] + data[i, AXIS + 2] * F[k, 5]
    if jt == HELICAL:
        h = data[i, PITCH]
        return (data[i, AXIS] * (F[k, 0] + h * F[k, 3])
                + data[i, AXIS + 1] * (F[k, 1] + h * F[k, 4])
                + data[i, AXIS + 2] * (F[k, 2] + h * F[k, 5]))
    if jt == PLANAR:
        return F[k, 3 + c if c < 2 else 2]
    return F[k, c]


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
    if jt == REVOLUTE or jt == HELICAL or jt == PRISMATIC:
        h = data[i, PITCH]
        for m in range(3):
            am = data[i, AXIS + m]
            for l in range(L):
                x = Xv[k0 + l, o]
                wa = 0.0 if jt == PRISMATIC else x
                va = x if jt == PRISMATIC else (x * h if jt == HELICAL else 0.0)
                dst[m, l] = wa * am
                dst[3 + m, l] = va * am
    elif jt == PLANAR:
        for l in range(L):
            dst[0, l] = 0.0
            dst[1, l] = 0.0
            dst[2, l] = Xv[k0 + l, o + 2]
            dst[3, l] = Xv[k0 + l, o]
            dst[4, l] = Xv[k0 + l, o + 1]
            dst[5, l] = 0.0
    elif jt == SPHERICAL:
        for m in range(3):
            for l in range(L):
                dst[m, l] = Xv[k0 + l, o + m]
                dst[3 + m, l] = 0.0
    else:
        for m in range(6):
            for l in range(L):
                dst[m, l] = Xv[k0 + l, o + m]


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
