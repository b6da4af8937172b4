"""numba kernels of the recursive algorithms, on the flat model of :mod:`.flat`.

The same algorithms as :mod:`.reference` (Featherstone 2008: RNEA Table 5.1,
CRBA Table 6.2, ABA Table 7.1), written for speed:

- every Plücker transform is kept as (E, r), ``X = [E 0; -E r× E]``, and
  applied in that form (a 6x6 matrix is never built);
- rigid-body inertias are their 10 parameters (m, h = m c, Ī) and are moved
  with the (E, r) formula of Xᵀ I X (Featherstone 2008, Table 2.5);
- RNEA and CRBA work in body coordinates, as the book; ABA works in world
  coordinates, where articulated inertias pass to the parent by a plain sum
  instead of a 6x6 congruence per body (the quantities are the same, only their
  coordinates differ; the tests compare with the body-frame reference); they are
  symmetric and kept packed (21 entries), and a free root joint is solved directly;
- the algorithms proper (``rnea_core``, ``crba_core``, ``aba_core``) allocate
  nothing: the single-state entry points (``rnea_f`` etc.) carve their workspace
  out of the model's packed buffer, the batched kernels allocate one per task of
  :data:`BATCH_TASK` states, ``*_into`` one per call (for other compiled code);
  the loops are explicit, no BLAS on tiny matrices;
- the batched kernels run :data:`LANES` states at once through the same arithmetic,
  vectorised across the states (``rnea_lanes``, ``crba_lanes``, ``aba_lanes``; see
  "Several states at once" below), with the per-state bits;
- joints whose motion subspace is a unit vector e_k (revolute or prismatic about
  a coordinate axis, flat column ``SIDX``) skip the products with S: ``Sᵀ f`` is
  ``f[k]``, ``I S`` a column of I, ``v × S q̇`` four products;
- CRBA takes the cos and sin of all joint angles in one vectorised polynomial loop
  (:func:`sincos`, 1-2 ulp of libm) instead of a libm call per joint; RNEA and ABA
  still call libm (their results are libm's bits);
- the small helpers are compiled with ``_nrt=False``: they allocate nothing,
  and without it numba reference-counts every array argument of every call
  (atomic operations that cost ~30 ns per helper call, more than the arithmetic);
  the ones LLVM would not inline by itself (joint_transform, s_times, s_dot,
  compose, inertia_to_parent_add: calls with ~25 scalar arguments each) are
  ``forceinline``; so are ``crba_core`` and ``aba_core`` themselves, into their
  entry points (a call passing six to fourteen array structs member by member:
  CRBA 2-12 %, ABA on the small robots 3-8 % faster; RNEA gained nothing).

Every kernel returns a status: 0 ok, ``i + 1`` the quaternion of body i is
not of unit norm, :data:`BAD_SHAPE` an input has the wrong length,
:data:`NOT_FINITE` the result is not finite, ``SINGULAR - i`` (ABA) joint i moves
no inertia: a pivot of its ``D_i = S_iᵀ I^A_i S_i + armature_i 1`` is at most the
model's ``SINGTOL`` (so nothing is divided by zero).

Armature (``ARMATURE``, a rotor inertia per joint, added to M's diagonal at each of
the joint's speeds): RNEA adds ``armature ⊙ a`` to τ, CRBA adds it to M's diagonal, ABA
to ``D_i`` — exact, as the rotor's inertia acts on the joint's own speeds only
(τ_i = S_iᵀ f_i + armature_i q̈_i), so the book's derivation of Table 7.1 goes through
with ``D_i`` so augmented; the kinetic energy gains ``½ Σ armature v²``. The Python wrappers turn a
non-zero status into a :class:`~kanedyn.StateError` naming the culprit.

Spatial vectors are rows of (n, 6) arrays. ``fastmath`` is off: the kernels
must agree with the reference implementation to rounding.
"""

from __future__ import annotations

import numpy as np
from numba import carray, cfunc, njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from . import _compiled

# the flat layout (defined in layout.py; re-exported here while this file is split)
from .layout import (  # noqa: F401
    ARMATURE,
    AXIS,
    AXIS_ID,
    CHAIN,
    E_TREE,
    FREE,
    GRAV,
    HDR,
    HELICAL,
    IBAR,
    IQ,
    IV,
    JOINT_CODES,
    JTYPE,
    MASS,
    NB,
    NQ,
    NV,
    NVJ,
    PARENT,
    PITCH,
    PLANAR,
    PRISMATIC,
    QTOL,
    R_TREE,
    REVOLUTE,
    SIDX,
    SINGTOL,
    SPHERICAL,
    WIDTH,
    H,
)

# numba's cache of the kernels below is keyed by the layout and this file's imports
_compiled.key_cache(__name__)

NOT_FINITE = -1
BAD_SHAPE = -2
#: ``SINGULAR - i``: joint i moves no inertia (ABA's D_i has a pivot <= SINGTOL)
SINGULAR = -3

# The packed buffer of the single-state entry points (``*_f`` below): one 1-D float64
# array holding a header (nb, nq, nv, its own length), the flat model, and a workspace for the
# algorithms, so that a call from Python passes one array for all of it. Each array
# argument costs numba's dispatcher ~25 ns to type and, with the runtime (NRT) on,
# ~20 ns more to wrap; each array allocated in a kernel ~25 ns. The entry points
# are therefore compiled without the runtime and allocate nothing (the header is
# layout.HDR floats long).


def workspace_size(nb: int, nv: int) -> int:
    """Floats of workspace the entry points need: the largest of RNEA, CRBA and ABA."""
    rnea = 12 * nb + 6 * (3 * nb + 2)
    crba = 12 * nb + 13 * nb + 12 + 3 * nb
    aba = 24 * nb + 6 * nv + 6 * (3 * nb + 8) + 21 * nb + 72 * nb + nv
    return max(rnea, crba, aba)


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
def s_column(data, i, c, dst, k):
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
def s_times(data, i, x, dst, k):
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
def s_dot(data, i, c, F, k):
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


# --- spatial algebra on rows, transforms as (E, r) ---------------------------

@njit(cache=True, _nrt=False, forceinline=True)
def x_motion_s(e0, e1, e2, e3, e4, e5, e6, e7, e8, r0, r1, r2, w0, w1, w2, v0, v1, v2):
    """``X (ω, v)`` for X = (E, r) and a motion given as scalars: ω' = E ω,
    v' = E (v - r × ω)."""
    u0 = v0 - (r1 * w2 - r2 * w1)
    u1 = v1 - (r2 * w0 - r0 * w2)
    u2 = v2 - (r0 * w1 - r1 * w0)
    return (e0 * w0 + e1 * w1 + e2 * w2, e3 * w0 + e4 * w1 + e5 * w2,
            e6 * w0 + e7 * w1 + e8 * w2, e0 * u0 + e1 * u1 + e2 * u2,
            e3 * u0 + e4 * u1 + e5 * u2, e6 * u0 + e7 * u1 + e8 * u2)


@njit(cache=True, _nrt=False)
def x_motion(X, i, src, j, dst, k):
    """``dst[k] = X_i src[j]`` (:func:`x_motion_s`)."""
    (dst[k, 0], dst[k, 1], dst[k, 2], dst[k, 3], dst[k, 4], dst[k, 5]) = x_motion_s(
        X[i, 0], X[i, 1], X[i, 2], X[i, 3], X[i, 4], X[i, 5], X[i, 6], X[i, 7], X[i, 8],
        X[i, 9], X[i, 10], X[i, 11], src[j, 0], src[j, 1], src[j, 2], src[j, 3], src[j, 4],
        src[j, 5])


@njit(cache=True, _nrt=False)
def xt_force_add(X, i, src, j, dst, k):
    """``dst[k] += X_iᵀ src[j]`` (:func:`xt_force`)."""
    c0, c1, c2, c3, c4, c5 = xt_force(X[i, 0], X[i, 1], X[i, 2], X[i, 3], X[i, 4], X[i, 5],
                                      X[i, 6], X[i, 7], X[i, 8], X[i, 9], X[i, 10], X[i, 11],
                                      src[j, 0], src[j, 1], src[j, 2], src[j, 3], src[j, 4],
                                      src[j, 5])
    dst[k, 0] += c0
    dst[k, 1] += c1
    dst[k, 2] += c2
    dst[k, 3] += c3
    dst[k, 4] += c4
    dst[k, 5] += c5


@njit(cache=True, _nrt=False, forceinline=True)
def cross_motion_s(w0, w1, w2, u0, u1, u2, a0, a1, a2, b0, b1, b2):
    """``(ω, v_O) × (a, b)`` = (ω × a, ω × b + v_O × a) on scalars."""
    return (w1 * a2 - w2 * a1, w2 * a0 - w0 * a2, w0 * a1 - w1 * a0,
            w1 * b2 - w2 * b1 + u1 * a2 - u2 * a1, w2 * b0 - w0 * b2 + u2 * a0 - u0 * a2,
            w0 * b1 - w1 * b0 + u0 * a1 - u1 * a0)


@njit(cache=True, _nrt=False)
def cross_motion_add(v, i, m, j, dst, k):
    """``dst[k] += v[i] × m[j]`` (:func:`cross_motion_s`)."""
    c0, c1, c2, c3, c4, c5 = cross_motion_s(v[i, 0], v[i, 1], v[i, 2], v[i, 3], v[i, 4],
                                            v[i, 5], m[j, 0], m[j, 1], m[j, 2], m[j, 3],
                                            m[j, 4], m[j, 5])
    dst[k, 0] += c0
    dst[k, 1] += c1
    dst[k, 2] += c2
    dst[k, 3] += c3
    dst[k, 4] += c4
    dst[k, 5] += c5


@njit(cache=True, _nrt=False, forceinline=True)
def cross_unit_add(v, i, k, s, dst, r):
    """``dst[r] += v[i] × (s e_k)``, e_k the k-th unit vector of R⁶ (the motion
    ``S q̇`` of a joint whose S is e_k): for k < 3 ``(ω × s e_k, v_O × s e_k)``,
    for k = 3 + l ``(0, ω × s e_l)``; 4 products instead of 24."""
    if k < 3:
        if k == 0:
            dst[r, 1] += v[i, 2] * s
            dst[r, 2] -= v[i, 1] * s
            dst[r, 4] += v[i, 5] * s
            dst[r, 5] -= v[i, 4] * s
        elif k == 1:
            dst[r, 0] -= v[i, 2] * s
            dst[r, 2] += v[i, 0] * s
            dst[r, 3] -= v[i, 5] * s
            dst[r, 5] += v[i, 3] * s
        else:
            dst[r, 0] += v[i, 1] * s
            dst[r, 1] -= v[i, 0] * s
            dst[r, 3] += v[i, 4] * s
            dst[r, 4] -= v[i, 3] * s
    elif k == 3:
        dst[r, 4] += v[i, 2] * s
        dst[r, 5] -= v[i, 1] * s
    elif k == 4:
        dst[r, 3] -= v[i, 2] * s
        dst[r, 5] += v[i, 0] * s
    else:
        dst[r, 3] += v[i, 1] * s
        dst[r, 4] -= v[i, 0] * s


@njit(cache=True, _nrt=False, forceinline=True)
def cross_force_s(w0, w1, w2, u0, u1, u2, n0, n1, n2, f0, f1, f2):
    """``(ω, v_O) ×* (n, f)`` = (ω × n + v_O × f, ω × f) on scalars."""
    return (w1 * n2 - w2 * n1 + u1 * f2 - u2 * f1, w2 * n0 - w0 * n2 + u2 * f0 - u0 * f2,
            w0 * n1 - w1 * n0 + u0 * f1 - u1 * f0, w1 * f2 - w2 * f1, w2 * f0 - w0 * f2,
            w0 * f1 - w1 * f0)


@njit(cache=True, _nrt=False)
def cross_force_add(v, i, f, j, dst, k):
    """``dst[k] += v[i] ×* f[j]`` (:func:`cross_force_s`)."""
    c0, c1, c2, c3, c4, c5 = cross_force_s(v[i, 0], v[i, 1], v[i, 2], v[i, 3], v[i, 4],
                                           v[i, 5], f[j, 0], f[j, 1], f[j, 2], f[j, 3],
                                           f[j, 4], f[j, 5])
    dst[k, 0] += c0
    dst[k, 1] += c1
    dst[k, 2] += c2
    dst[k, 3] += c3
    dst[k, 4] += c4
    dst[k, 5] += c5


@njit(cache=True, _nrt=False, forceinline=True)
def inertia_times_s(m, h0, h1, h2, i0, i1, i2, i3, i4, i5, i6, i7, i8, w0, w1, w2, u0, u1, u2):
    """``I (ω, v_O)`` for the rigid inertia (m, h, Ī = [i0 i1 i2; ...]) on scalars:
    n = Ī ω + h × v_O, f = m v_O - h × ω."""
    return (i0 * w0 + i1 * w1 + i2 * w2 + h1 * u2 - h2 * u1,
            i3 * w0 + i4 * w1 + i5 * w2 + h2 * u0 - h0 * u2,
            i6 * w0 + i7 * w1 + i8 * w2 + h0 * u1 - h1 * u0,
            m * u0 - (h1 * w2 - h2 * w1), m * u1 - (h2 * w0 - h0 * w2),
            m * u2 - (h0 * w1 - h1 * w0))


@njit(cache=True, _nrt=False)
def inertia_times(P, i, o, m, j, dst, k):
    """``dst[k] = I m[j]`` (:func:`inertia_times_s`) for the rigid inertia of parameters
    P[i, o:o+13] = (m, h, Ī)."""
    (dst[k, 0], dst[k, 1], dst[k, 2], dst[k, 3], dst[k, 4], dst[k, 5]) = inertia_times_s(
        P[i, o], P[i, o + 1], P[i, o + 2], P[i, o + 3], P[i, o + 4], P[i, o + 5],
        P[i, o + 6], P[i, o + 7], P[i, o + 8], P[i, o + 9], P[i, o + 10], P[i, o + 11],
        P[i, o + 12], m[j, 0], m[j, 1], m[j, 2], m[j, 3], m[j, 4], m[j, 5])


@njit(cache=True, _nrt=False, forceinline=True)
def inertia_unit_column(k, m, h0, h1, h2, i0, i1, i2, i3, i4, i5, i6, i7, i8):
    """``I e_k``, column k of the rigid inertia of parameters (m, h, Ī = [i0 i1 i2; ...]),
    ``I = [Ī, h×; h×ᵀ, m 1]``: for k < 3, ``[Ī e_k; e_k × h]``; for k = 3 + l,
    ``[h × e_l; m e_l]`` (the motion subspace of a joint about a unit axis)."""
    if k < 3:
        a0 = i0 if k == 0 else (i1 if k == 1 else i2)
        a1 = i3 if k == 0 else (i4 if k == 1 else i5)
        a2 = i6 if k == 0 else (i7 if k == 1 else i8)
        c0, c1, c2 = (0.0, -h2, h1) if k == 0 else ((h2, 0.0, -h0) if k == 1 else (-h1, h0, 0.0))
        return a0, a1, a2, c0, c1, c2
    l = k - 3
    c0, c1, c2 = (0.0, h2, -h1) if l == 0 else ((-h2, 0.0, h0) if l == 1 else (h1, -h0, 0.0))
    return c0, c1, c2, (m if l == 0 else 0.0), (m if l == 1 else 0.0), (m if l == 2 else 0.0)


@njit(cache=True, _nrt=False, forceinline=True)
def inertia_column(P, i, k, dst, r):
    """``dst[r] = I e_k`` (:func:`inertia_unit_column`) for the parameters P[i] = (m, h, Ī)."""
    (dst[r, 0], dst[r, 1], dst[r, 2], dst[r, 3], dst[r, 4],
     dst[r, 5]) = inertia_unit_column(k, P[i, 0], P[i, 1], P[i, 2], P[i, 3], P[i, 4], P[i, 5],
                                      P[i, 6], P[i, 7], P[i, 8], P[i, 9], P[i, 10], P[i, 11],
                                      P[i, 12])


@njit(cache=True, _nrt=False)
def inertia_params(data, P):
    """P[i] = (m, h, Ī row-major) of body i, copied from the flat model."""
    for i in range(P.shape[0]):
        P[i, 0] = data[i, MASS]
        for m in range(3):
            P[i, 1 + m] = data[i, H + m]
        for m in range(9):
            P[i, 4 + m] = data[i, IBAR + m]


@njit(cache=True, _nrt=False, forceinline=True)
def inertia_moved(e00, e01, e02, e10, e11, e12, e20, e21, e22, r0, r1, r2,
                  m, h0, h1, h2, i0, i1, i2, i3, i4, i5, i6, i7, i8):
    """``Xᵀ I X`` in parameter form for X = (E, r) and I = (m, h, Ī) given as scalars
    (Featherstone 2008, Table 2.5): the mass is unchanged; with y = Eᵀ h,
    h' = y + m r and
    Ī' = Eᵀ Ī E - r× y× - (y + m r)× r× = Eᵀ Ī E - (y rᵀ + r yᵀ + m r rᵀ) + (2 r·y + m r·r) 1.
    Returns h' and the entries (00, 01, 02, 11, 12, 22) of the symmetric Ī'.
    """
    y0 = e00 * h0 + e10 * h1 + e20 * h2
    y1 = e01 * h0 + e11 * h1 + e21 * h2
    y2 = e02 * h0 + e12 * h1 + e22 * h2
    diag = 2.0 * (r0 * y0 + r1 * y1 + r2 * y2) + m * (r0 * r0 + r1 * r1 + r2 * r2)
    # Eᵀ Ī E, with T = Ī E first (T[c, b] = tcb); written out, because indexing a tuple
    # with a loop variable is a slow switch in numba
    t00 = i0 * e00 + i1 * e10 + i2 * e20
    t01 = i0 * e01 + i1 * e11 + i2 * e21
    t02 = i0 * e02 + i1 * e12 + i2 * e22
    t10 = i3 * e00 + i4 * e10 + i5 * e20
    t11 = i3 * e01 + i4 * e11 + i5 * e21
    t12 = i3 * e02 + i4 * e12 + i5 * e22
    t20 = i6 * e00 + i7 * e10 + i8 * e20
    t21 = i6 * e01 + i7 * e11 + i8 * e21
    t22 = i6 * e02 + i7 * e12 + i8 * e22
    s00 = e00 * t00 + e10 * t10 + e20 * t20 - (2.0 * y0 * r0 + m * r0 * r0) + diag
    s11 = e01 * t01 + e11 * t11 + e21 * t21 - (2.0 * y1 * r1 + m * r1 * r1) + diag
    s22 = e02 * t02 + e12 * t12 + e22 * t22 - (2.0 * y2 * r2 + m * r2 * r2) + diag
    s01 = e00 * t01 + e10 * t11 + e20 * t21 - (y0 * r1 + r0 * y1 + m * r0 * r1)
    s02 = e00 * t02 + e10 * t12 + e20 * t22 - (y0 * r2 + r0 * y2 + m * r0 * r2)
    s12 = e01 * t02 + e11 * t12 + e21 * t22 - (y1 * r2 + r1 * y2 + m * r1 * r2)
    return y0 + m * r0, y1 + m * r1, y2 + m * r2, s00, s01, s02, s11, s12, s22


@njit(cache=True, _nrt=False, forceinline=True)
def inertia_to_parent_add(X, i, Ps, src, P, dst):
    """``P[dst] += X_iᵀ I(Ps[src]) X_i`` (:func:`inertia_moved`) for X_i = X[i]."""
    m = Ps[src, 0]
    h0, h1, h2, s00, s01, s02, s11, s12, s22 = inertia_moved(
        X[i, 0], X[i, 1], X[i, 2], X[i, 3], X[i, 4], X[i, 5], X[i, 6], X[i, 7], X[i, 8],
        X[i, 9], X[i, 10], X[i, 11], m, Ps[src, 1], Ps[src, 2], Ps[src, 3], Ps[src, 4],
        Ps[src, 5], Ps[src, 6], Ps[src, 7], Ps[src, 8], Ps[src, 9], Ps[src, 10], Ps[src, 11],
        Ps[src, 12])
    P[dst, 0] += m
    P[dst, 1] += h0
    P[dst, 2] += h1
    P[dst, 3] += h2
    P[dst, 4] += s00
    P[dst, 5] += s01
    P[dst, 6] += s02
    P[dst, 7] += s01
    P[dst, 8] += s11
    P[dst, 9] += s12
    P[dst, 10] += s02
    P[dst, 11] += s12
    P[dst, 12] += s22


@njit(cache=True, _nrt=False)
def all_finite(x):
    """Whether every entry of the 1-D array x is finite."""
    for k in range(x.shape[0]):
        if not np.isfinite(x[k]):
            return False
    return True


@njit(cache=True, _nrt=False)
def all_finite2(x):
    """Whether every entry of the 2-D array x is finite."""
    for a in range(x.shape[0]):
        for b in range(x.shape[1]):
            if not np.isfinite(x[a, b]):
                return False
    return True


# --- RNEA ---------------------------------------------------------------------

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
            s_times(data, i, v, w, J)
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
            s_times(data, i, a, w, J + 1)
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
                tau[o + c] = s_dot(data, i, c, w, F + i)
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


@njit(cache=True, _nrt=False)
def _shape_ok(data, q, nx, x):
    nb = data.shape[0] - 1
    return q.shape[0] == int(data[nb, NQ]) and x.shape[0] == nx


@njit(cache=True)
def rnea1(data, q, v, a, tau):
    """One state, no external forces; status (see module doc)."""
    nv = int(data[data.shape[0] - 1, NV])
    if not (_shape_ok(data, q, nv, v) and a.shape[0] == nv and tau.shape[0] == nv):
        return BAD_SHAPE
    return rnea_into(data, q, v, a, data, True, True, False, tau)  # data: unused f_ext


# States per task of the batched kernels: each task allocates its workspace once.
# Tasks are handed out dynamically (the wrappers set numba's parallel chunk size to
# 1 around the call), so a thread whose core is busy with other work takes fewer.
BATCH_TASK = 32


# --- Several states at once: the batched RNEA and CRBA ------------------------
#
# The batched RNEA and CRBA run LANES states through the algorithm together: every
# quantity of the recursion is an (·, LANES) block, and each step a loop over the
# lanes, which the compiler turns into vector instructions (8 doubles with AVX-512).
# The tree, the joint types and so every branch are the same for all states, so
# the lanes never diverge; only joints whose S is not a unit vector (rare), failed
# quaternions and, in CRBA, angles beyond SINCOS_BIG fall back to the scalar
# helpers, lane by lane. The arithmetic is that of rnea_core and crba_core,
# operation for operation: a state gives the same bits alone or in a batch.
#
# The vectoriser needs to know that the blocks do not overlap, or it gives up
# ("too many memory checks"): numba does not mark arrays as not aliasing, so the
# blocks live on the stack (:func:`stack_array`, an LLVM alloca, which no other
# pointer can alias), sized for up to LANE_BODIES bodies (larger trees take the
# per-state kernels), and the lane loops run to a count the compiler does not know
# (a loop of exactly 8 is unrolled first and then not vectorised).

#: states per lane block (one AVX-512 register of doubles)
LANES = 8
#: the largest tree the lane kernels take (their stack blocks: ~120 kB each)
LANE_BODIES = 64
# (stack_array takes constants: a product written in the call is not one to numba)
_LANE_ANGLES = LANE_BODIES * LANES


@intrinsic
def stack_array(typingctx, shape):
    """A C-contiguous float64 array of the given shape (a tuple of compile-time constant
    ints) on the stack of the calling function: it lives as long as that function's
    frame, and the compiler knows that no other array overlaps it. Its size is the
    product of the shape, so the array cannot reach past its block."""
    if not (isinstance(shape, types.BaseTuple)
            and all(isinstance(d, types.IntegerLiteral) for d in shape.types)):
        return None
    dims = [d.literal_value for d in shape.types]
    arrty = types.Array(types.float64, len(dims), "C")

    def codegen(context, builder, sig, args):
        from numba.np.arrayobj import make_array, populate_array

        intp = context.get_value_type(types.intp)
        size = 1
        for d in dims:
            size *= d
        data = cgutils.alloca_once(builder, context.get_value_type(types.float64), size=size)
        strides, step = [], 8
        for d in reversed(dims):
            strides.insert(0, step)
            step *= d
        ary = make_array(arrty)(context, builder)
        populate_array(ary, data=data, shape=[intp(d) for d in dims],
                       strides=[intp(x) for x in strides], itemsize=intp(8), meminfo=None)
        return ary._getvalue()

    return arrty(shape), codegen


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
def lane_s_times(data, i, jt, o, Xv, k0, L, dst):
    """``dst[:, l] = S_i x_i`` of lane l for the speed-sized rows ``Xv[k0 + l]`` (as
    :func:`s_times`, operation for operation)."""
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


@njit(cache=True, _nrt=False, forceinline=True)
def lane_cross_unit_add(Vb, i, k, Xv, k0, o, L, dst):
    """``dst[i, :, l] += v_i × (s e_k)`` with s = ``Xv[k0 + l, o]`` (as :func:`cross_unit_add`)."""
    if k < 3:
        # rows (r1, r2) += ±(ω_a, ω_b) s and (r4, r5) += ±(v_a, v_b) s
        a, b = (2, 1) if k == 0 else ((2, 0) if k == 1 else (1, 0))
        r1, r2 = (1, 2) if k == 0 else ((0, 2) if k == 1 else (0, 1))
        sg = 1.0 if k != 1 else -1.0
        for l in range(L):
            s = Xv[k0 + l, o]
            x1 = Vb[i, a, l] * s
            x2 = Vb[i, b, l] * s
            y1 = Vb[i, 3 + a, l] * s
            y2 = Vb[i, 3 + b, l] * s
            if sg > 0:
                dst[i, r1, l] += x1
                dst[i, r2, l] -= x2
                dst[i, 3 + r1, l] += y1
                dst[i, 3 + r2, l] -= y2
            else:
                dst[i, r1, l] -= x1
                dst[i, r2, l] += x2
                dst[i, 3 + r1, l] -= y1
                dst[i, 3 + r2, l] += y2
    else:
        a, b = (2, 1) if k == 3 else ((2, 0) if k == 4 else (1, 0))
        r1, r2 = (4, 5) if k == 3 else ((3, 5) if k == 4 else (3, 4))
        sg = 1.0 if k != 4 else -1.0
        for l in range(L):
            s = Xv[k0 + l, o]
            x1 = Vb[i, a, l] * s
            x2 = Vb[i, b, l] * s
            if sg > 0:
                dst[i, r1, l] += x1
                dst[i, r2, l] -= x2
            else:
                dst[i, r1, l] -= x1
                dst[i, r2, l] += x2


@njit(cache=True, forceinline=True)
def rnea_lanes(data, Q, V, A, Fx, use_v, use_a, use_fext, k0, L, out, status, Xs, Ws):
    """:func:`rnea_core` for the L <= LANES states ``k0 .. k0 + L - 1`` at once (see
    "Several states at once" above). ``Xs``, ``Ws``: scalar rows for the lane-by-lane
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
        # S_i q̇_i (as s_times)
        if use_v:
            lane_s_times(data, i, jt, o, V, k0, L, Sv)
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
            lane_s_times(data, i, jt, o, A, k0, L, T)
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
                    out[k0 + l, o + c] = s_dot(data, i, c, Ws, 0)
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


@njit(cache=True, parallel=True)
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


# --- CRBA ---------------------------------------------------------------------

@njit(cache=True, _nrt=False, forceinline=True)
def compose(X, i, X0, p):
    """``X0[i] = X[i] X0[p]`` in (E, r) form: E = E_i E_p, r = r_p + E_pᵀ r_i."""
    for a in range(3):
        for b in range(3):
            X0[i, 3 * a + b] = (X[i, 3 * a] * X0[p, b] + X[i, 3 * a + 1] * X0[p, 3 + b]
                                + X[i, 3 * a + 2] * X0[p, 6 + b])
    for a in range(3):
        X0[i, 9 + a] = (X0[p, 9 + a] + X0[p, a] * X[i, 9] + X0[p, 3 + a] * X[i, 10]
                        + X0[p, 6 + a] * X[i, 11])


@njit(cache=True, _nrt=False, forceinline=True)
def x_inv_motion_s(e0, e1, e2, e3, e4, e5, e6, e7, e8, r0, r1, r2, s0, s1, s2, s3, s4, s5):
    """``X⁻¹ (ω, v)`` for X = (E, r) and a motion given as scalars: ω' = Eᵀ ω,
    v' = Eᵀ v + r × ω'."""
    w0 = e0 * s0 + e3 * s1 + e6 * s2
    w1 = e1 * s0 + e4 * s1 + e7 * s2
    w2 = e2 * s0 + e5 * s1 + e8 * s2
    u0 = e0 * s3 + e3 * s4 + e6 * s5
    u1 = e1 * s3 + e4 * s4 + e7 * s5
    u2 = e2 * s3 + e5 * s4 + e8 * s5
    return w0, w1, w2, u0 + r1 * w2 - r2 * w1, u1 + r2 * w0 - r0 * w2, u2 + r0 * w1 - r1 * w0


@njit(cache=True, _nrt=False)
def x_inv_motion(X, i, src, j, dst, k):
    """``dst[k] = X_i⁻¹ src[j]`` (:func:`x_inv_motion_s`)."""
    (dst[k, 0], dst[k, 1], dst[k, 2], dst[k, 3], dst[k, 4], dst[k, 5]) = x_inv_motion_s(
        X[i, 0], X[i, 1], X[i, 2], X[i, 3], X[i, 4], X[i, 5], X[i, 6], X[i, 7], X[i, 8],
        X[i, 9], X[i, 10], X[i, 11], src[j, 0], src[j, 1], src[j, 2], src[j, 3], src[j, 4],
        src[j, 5])


@njit(cache=True, _nrt=False, forceinline=True)
def xt_force(e0, e1, e2, e3, e4, e5, e6, e7, e8, r0, r1, r2, n0, n1, n2, f0, f1, f2):
    """``Xᵀ (n, f)`` for X = (E, r) given as scalars: f' = Eᵀ f, n' = Eᵀ n + r × f'."""
    g0 = e0 * f0 + e3 * f1 + e6 * f2
    g1 = e1 * f0 + e4 * f1 + e7 * f2
    g2 = e2 * f0 + e5 * f1 + e8 * f2
    m0 = e0 * n0 + e3 * n1 + e6 * n2 + r1 * g2 - r2 * g1
    m1 = e1 * n0 + e4 * n1 + e7 * n2 + r2 * g0 - r0 * g2
    m2 = e2 * n0 + e5 * n1 + e8 * n2 + r0 * g1 - r1 * g0
    return m0, m1, m2, g0, g1, g2


@njit(cache=True, _nrt=False, forceinline=True)
def xt_force_scalars(X, j, n0, n1, n2, f0, f1, f2):
    """``X_jᵀ (n, f)`` on scalars (:func:`xt_force` with X_j read from X[j])."""
    return xt_force(X[j, 0], X[j, 1], X[j, 2], X[j, 3], X[j, 4], X[j, 5], X[j, 6], X[j, 7],
                    X[j, 8], X[j, 9], X[j, 10], X[j, 11], n0, n1, n2, f0, f1, f2)


@njit(cache=True, _nrt=False, forceinline=True)
def unit_component(k, n0, n1, n2, f0, f1, f2):
    """``e_kᵀ (n, f)``, component k of a force given as scalars."""
    if k < 3:
        return n0 if k == 0 else (n1 if k == 1 else n2)
    return f0 if k == 3 else (f1 if k == 4 else f2)


@njit(cache=True, _nrt=False, forceinline=True)
def m_entries(data, j, col, n0, n1, n2, f0, f1, f2, M, F):
    """``M[o_j + r, col] = M[col, o_j + r] = S_j[:, r]ᵀ (n, f)``: the entries of joint j
    in column ``col``, from the force (n, f) in body j coordinates (F: a scratch row)."""
    oj = int(data[j, IV])
    kj = int(data[j, SIDX])
    if kj >= 0:  # S_j = e_k
        x = unit_component(kj, n0, n1, n2, f0, f1, f2)
        M[oj, col] = x
        M[col, oj] = x
    elif int(data[j, JTYPE]) == FREE:  # S_j = 1
        M[oj, col], M[oj + 1, col], M[oj + 2, col] = n0, n1, n2
        M[oj + 3, col], M[oj + 4, col], M[oj + 5, col] = f0, f1, f2
        M[col, oj], M[col, oj + 1], M[col, oj + 2] = n0, n1, n2
        M[col, oj + 3], M[col, oj + 4], M[col, oj + 5] = f0, f1, f2
    else:
        F[0, 0], F[0, 1], F[0, 2], F[0, 3], F[0, 4], F[0, 5] = n0, n1, n2, f0, f1, f2
        m_entries_general(data, j, col, F, M)


@njit(cache=True, _nrt=False)
def m_entries_general(data, j, col, F, M):
    """:func:`m_entries` for any joint, the force in F[0] (a call of its own: the rare
    case stays out of the inlined walk, which is smaller for it)."""
    oj = int(data[j, IV])
    for r in range(int(data[j, NVJ])):
        x = s_dot(data, j, r, F, 0)
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
            elif int(data[i, JTYPE]) == FREE:  # S = 1: I^c_i S = I^c_i
                inertia_column(P, i, c, F, 0)
                for r in range(6):
                    M[oi + r, oi + c] = F[0, r]
            else:
                s_column(data, i, c, F, 1)
                inertia_times(P, i, 0, F, 1, F, 0)
                for r in range(nvi):
                    M[oi + r, oi + c] = s_dot(data, i, r, F, 0)
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
            m_entries(data, j, ca, a0, a1, a2, a3, a4, a5, M, F)
            if pair:
                m_entries(data, j, ca + 1, b0, b1, b2, b3, b4, b5, M, F)
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


@njit(cache=True)
def crba1(data, q, M):
    nb = data.shape[0] - 1
    nv = int(data[nb, NV])
    if not (q.shape[0] == int(data[nb, NQ]) and M.shape[0] == nv and M.shape[1] == nv):
        return BAD_SHAPE
    return crba_into(data, q, M)


# --- CRBA on several states at once (see "Several states at once" above) -------

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


@njit(cache=True, forceinline=True)
def crba_lanes(data, Q, k0, L, out, status, Xs, Fs):
    """:func:`crba_core` for the L <= LANES states ``Q[k0:k0 + L]`` at once, into
    ``out[k0:k0 + L]`` and ``status[k0:k0 + L]`` (see "Several states at once" above).
    ``Xs``, ``Fs``: scalar rows for the lane-by-lane fallbacks."""
    X = stack_array((LANE_BODIES, 12, LANES))  # X_up[i], lane l
    P = stack_array((LANE_BODIES, 13, LANES))  # I^c_i parameters
    C = stack_array((3, _LANE_ANGLES))  # angles, cos, sin
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
        free = int(data[i, JTYPE]) == FREE
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
                s_column(data, i, c, Fs, 1)  # the model's column, the same in every lane
                for l in range(L):
                    inertia_times(P[:, :, l], i, 0, Fs, 1, Fs, 0)
                    for r in range(6):
                        F[r, l] = Fs[0, r]
                    for r in range(nvi):
                        out[k0 + l, oi + r, col] = s_dot(data, i, r, Fs, 0)
            j = i
            p = int(data[j, PARENT])
            while p >= 0:
                for l in range(L):
                    F[0, l], F[1, l], F[2, l], F[3, l], F[4, l], F[5, l] = xt_force(
                        X[j, 0, l], X[j, 1, l], X[j, 2, l], X[j, 3, l], X[j, 4, l], X[j, 5, l],
                        X[j, 6, l], X[j, 7, l], X[j, 8, l], X[j, 9, l], X[j, 10, l],
                        X[j, 11, l], F[0, l], F[1, l], F[2, l], F[3, l], F[4, l], F[5, l])
                j = p
                # the entries of joint j in column col and row col (as m_entries)
                oj = int(data[j, IV])
                kj = int(data[j, SIDX])
                if kj >= 0 or int(data[j, JTYPE]) == FREE:
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
                            x = s_dot(data, j, r, Fs, 0)
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


@njit(cache=True, parallel=True)
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


# --- ABA ----------------------------------------------------------------------
#
# Articulated inertias are symmetric: ABA keeps them packed, the 21 entries (a, c),
# a >= c, of the lower triangle row by row at ``a (a + 1) / 2 + c``, so that the
# update ``I^A_p += I^A_i - U D⁻¹ Uᵀ`` of pass 2 works on 21 entries instead of 36.
# Row a of the full matrix reads the packed entries
#   a = 0: 0, 1, 3, 6, 10, 15     a = 3: 6, 7, 8, 9, 13, 18
#   a = 1: 1, 2, 4, 7, 11, 16     a = 4: 10, 11, 12, 13, 14, 19
#   a = 2: 3, 4, 5, 8, 12, 17     a = 5: 15, 16, 17, 18, 19, 20
# The helpers below are written out on scalars: the compiler cannot tell the
# workspace arrays apart, so a loop that stores into one reloads the others, while
# scalars stay in registers.

@njit(cache=True, _nrt=False, forceinline=True)
def sym_times_s(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16,
                a17, a18, a19, a20, x0, x1, x2, x3, x4, x5):
    """``A x`` for the symmetric 6x6 matrix of packed entries a0..a20 (see above)."""
    return (a0 * x0 + a1 * x1 + a3 * x2 + a6 * x3 + a10 * x4 + a15 * x5,
            a1 * x0 + a2 * x1 + a4 * x2 + a7 * x3 + a11 * x4 + a16 * x5,
            a3 * x0 + a4 * x1 + a5 * x2 + a8 * x3 + a12 * x4 + a17 * x5,
            a6 * x0 + a7 * x1 + a8 * x2 + a9 * x3 + a13 * x4 + a18 * x5,
            a10 * x0 + a11 * x1 + a12 * x2 + a13 * x3 + a14 * x4 + a19 * x5,
            a15 * x0 + a16 * x1 + a17 * x2 + a18 * x3 + a19 * x4 + a20 * x5)


@njit(cache=True, _nrt=False, forceinline=True)
def sym_times(A, i, x0, x1, x2, x3, x4, x5):
    """``A_i x`` for the symmetric 6x6 matrix packed in A[i] (see above), as 6 scalars."""
    return sym_times_s(A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4], A[i, 5], A[i, 6],
                       A[i, 7], A[i, 8], A[i, 9], A[i, 10], A[i, 11], A[i, 12], A[i, 13],
                       A[i, 14], A[i, 15], A[i, 16], A[i, 17], A[i, 18], A[i, 19], A[i, 20],
                       x0, x1, x2, x3, x4, x5)


@njit(cache=True, _nrt=False, forceinline=True)
def sym_rank1_to_parent(A, i, p, b0, b1, b2, b3, b4, b5, u0, u1, u2, u3, u4, u5):
    """``A[p] += A[i] - b uᵀ`` on the 21 packed entries, for ``b uᵀ`` symmetric
    (``b = U/D``, u = U: the articulated inertia ``I^a = I^A - U D⁻¹ Uᵀ`` of a
    one-speed joint, passed to the parent)."""
    A[p, 0] += A[i, 0] - b0 * u0
    A[p, 1] += A[i, 1] - b1 * u0
    A[p, 2] += A[i, 2] - b1 * u1
    A[p, 3] += A[i, 3] - b2 * u0
    A[p, 4] += A[i, 4] - b2 * u1
    A[p, 5] += A[i, 5] - b2 * u2
    A[p, 6] += A[i, 6] - b3 * u0
    A[p, 7] += A[i, 7] - b3 * u1
    A[p, 8] += A[i, 8] - b3 * u2
    A[p, 9] += A[i, 9] - b3 * u3
    A[p, 10] += A[i, 10] - b4 * u0
    A[p, 11] += A[i, 11] - b4 * u1
    A[p, 12] += A[i, 12] - b4 * u2
    A[p, 13] += A[i, 13] - b4 * u3
    A[p, 14] += A[i, 14] - b4 * u4
    A[p, 15] += A[i, 15] - b5 * u0
    A[p, 16] += A[i, 16] - b5 * u1
    A[p, 17] += A[i, 17] - b5 * u2
    A[p, 18] += A[i, 18] - b5 * u3
    A[p, 19] += A[i, 19] - b5 * u4
    A[p, 20] += A[i, 20] - b5 * u5


@njit(cache=True, _nrt=False, forceinline=True)
def inertia_world_s(data, i, e00, e01, e02, e10, e11, e12, e20, e21, e22, r0, r1, r2):
    """The rigid inertia of body i in world coordinates, ``X0ᵀ I_i X0`` (:func:`inertia_moved`),
    from its parameters in the flat model and ``X0 = i_X_0`` = (E, r) given as scalars; Ī
    is read as symmetric (its upper triangle). Returns m, h⁰ and the entries 00, 01, 11,
    02, 12, 22 of Ī⁰ (the first six packed entries of ``[Ī⁰, h⁰×; h⁰×ᵀ, m 1]``)."""
    m = data[i, MASS]
    I = IBAR
    j00, j01, j02 = data[i, I], data[i, I + 1], data[i, I + 2]
    j11, j12, j22 = data[i, I + 4], data[i, I + 5], data[i, I + 8]
    g0, g1, g2, s00, s01, s02, s11, s12, s22 = inertia_moved(
        e00, e01, e02, e10, e11, e12, e20, e21, e22, r0, r1, r2,
        m, data[i, H], data[i, H + 1], data[i, H + 2],
        j00, j01, j02, j01, j11, j12, j02, j12, j22)
    return m, g0, g1, g2, s00, s01, s11, s02, s12, s22


@njit(cache=True, _nrt=False, forceinline=True)
def inertia_to_world(data, i, X0, A):
    """``A[i] = X0ᵀ I_i X0`` packed (:func:`inertia_world_s`, X0 = X0[i]). Returns the
    parameters (m, h⁰, Ī⁰ as its entries 00, 01, 02, 11, 12, 22)."""
    m, g0, g1, g2, A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4], A[i, 5] = inertia_world_s(
        data, i, X0[i, 0], X0[i, 1], X0[i, 2], X0[i, 3], X0[i, 4], X0[i, 5], X0[i, 6],
        X0[i, 7], X0[i, 8], X0[i, 9], X0[i, 10], X0[i, 11])
    # lower left h⁰×ᵀ (row 3 + a, column c: (h⁰×)[c, a]), lower right m 1
    A[i, 6], A[i, 7], A[i, 8], A[i, 9] = 0.0, g2, -g1, m
    A[i, 10], A[i, 11], A[i, 12], A[i, 13], A[i, 14] = -g2, 0.0, g0, 0.0, m
    A[i, 15], A[i, 16], A[i, 17], A[i, 18], A[i, 19], A[i, 20] = g1, -g0, 0.0, 0.0, 0.0, m
    return m, g0, g1, g2, A[i, 0], A[i, 1], A[i, 3], A[i, 2], A[i, 4], A[i, 5]


@njit(cache=True, _nrt=False, forceinline=True)
def rigid_times(m, h0, h1, h2, j00, j01, j02, j11, j12, j22, w0, w1, w2, u0, u1, u2):
    """``I x`` (:func:`inertia_times_s`) for the rigid inertia ``[Ī, h×; h×ᵀ, m 1]`` with Ī
    symmetric, given by its entries jab."""
    return inertia_times_s(m, h0, h1, h2, j00, j01, j02, j01, j11, j12, j02, j12, j22,
                           w0, w1, w2, u0, u1, u2)


@njit(cache=True, _nrt=False, forceinline=True)
def cholesky_entry(L, b, r, c, d, tol):
    """Entry (r, c), r >= c, of the Cholesky factor of a matrix A, into ``L[b + r, c]``,
    from ``d = A[r, c]`` and the columns of L before c (column by column, top down).
    False when a pivot (r == c) is at most ``tol``: A is singular to that tolerance (a NaN
    pivot, from an overflow, is not: the result is then NaN, reported as not finite)."""
    for l in range(c):
        d -= L[b + r, l] * L[b + c, l]
    if r == c:
        if d <= tol:
            return False
        L[b + c, c] = np.sqrt(d)
    else:
        L[b + r, c] = d / L[b + c, c]
    return True


@njit(cache=True, _nrt=False, forceinline=True)
def aba_core(data, q, v, tau, fext, use_fext, qdd, X, X0, S0, w, IA, LW, y):
    """Forward dynamics by the articulated-body algorithm (Table 7.1), O(n), in world
    coordinates.

    Every spatial quantity of body i — motion subspace S⁰_i, velocity, inertia,
    articulated inertia I^A_i and bias force p^A_i — is expressed in world
    coordinates, so the articulated inertia passes to the parent by a plain sum,
    ``I^A_p += I^a_i``, with no 6x6 congruence per body (the book's body-coordinate
    version is :func:`kanedyn.dynamics.reference.aba`).

    The velocity-product and gravity terms are taken in pass 1, as in RNEA: ``a⁰_i =
    a⁰_p + c_i`` (``a⁰ = -a_grav`` at a root, ``c_i = v_i × S_i q̇_i``, the same vector
    in any coordinates since a body-fixed S has ``Ṡ⁰ = v_i × S⁰``) is the acceleration
    body i would have with q̈ = 0, and ``p_i = I_i a⁰_i + v_i ×* I_i v_i - f_ext,i``.
    Passes 2 and 3 then work on ``δ_i = a_i - a⁰_i = δ_p + S_i q̈_i``: the book's
    recursion with c = 0 and ``a'_i = δ_p`` (0 at a root), which spares pass 2 the
    product ``I^a c`` of every body.

    One speed (most joints): ``U = I^A S``, ``D = Sᵀ U`` a scalar, ``u = τ - Sᵀ p^A``;
    the parent receives ``I^a = I^A - U Uᵀ/D`` and ``p^a = p^A + U u/D``, and
    ``q̈ = (u - Uᵀ δ_p)/D``. Several speeds: ``D_i = S_iᵀ U_i`` is factored
    ``D_i = L_i L_iᵀ``; with ``W_i = L_i⁻¹ U_iᵀ`` and ``y_i = L_i⁻¹ u_i`` the book's
    ``U D⁻¹ Uᵀ = Wᵀ W``, ``U D⁻¹ u = Wᵀ y`` and ``q̈_i = L_i⁻ᵀ (y_i - W_i δ_p)``.

    A free joint at the root (a floating base) is solved directly: its S⁰ = X0⁻¹ is
    invertible, so ``S⁰ᵀ (I^A δ + p^A) = τ`` gives ``I^A δ = X0ᵀ τ - p^A`` (τ a force
    in body coordinates, X0ᵀ takes it to the world), one 6x6 Cholesky solve, and
    ``q̈ = X0 δ`` — instead of forming U, D and W for six columns.
    """
    nb = data.shape[0] - 1
    # workspace: X (nb, 12) X_up[i]; X0 (nb, 12) i_X_0, world to body i coordinates;
    # S0 (nv, 6) motion subspace columns, world coordinates; y (nv);
    # w (3 nb + 8, 6) spatial vectors, rows: v_i at i, a⁰_i (pass 1) then δ_i (pass 3)
    # at AC + i, p^A_i at PA + i; scratch at TM (0, 1: vectors, 2..7: U_i columns);
    # IA (nb, 21) I^A_i packed (see above); LW (12 nb, 6): L_i (Cholesky factor of
    # D_i) at rows 6i.., W_i = L⁻¹ Uᵀ (rows 0..nv_i-1) at WO + 6i..
    AC = nb
    PA = 2 * nb
    TM = 3 * nb
    WO = 6 * nb
    tol = data[nb, SINGTOL]
    g0 = data[nb, GRAV]
    g1 = data[nb, GRAV + 1]
    g2 = data[nb, GRAV + 2]
    for i in range(nb):  # pass 1: velocities, a⁰ and bias forces, parent before child
        if joint_transform(data, i, q, X):
            return i + 1
        par = int(data[i, PARENT])
        if par < 0:
            for m in range(12):
                X0[i, m] = X[i, m]
        else:
            compose(X, i, X0, par)
        n = int(data[i, NVJ])
        o = int(data[i, IV])
        k = int(data[i, SIDX])
        if k >= 0:
            # S = e_k: S⁰ = X0⁻¹ e_k; for k < 3 ω = E0ᵀ e_k (row k of E0), v = r0 × ω;
            # for k = 3 + l, ω = 0 and v = row l of E0
            l = k if k < 3 else k - 3
            e0, e1, e2 = X0[i, 3 * l], X0[i, 3 * l + 1], X0[i, 3 * l + 2]
            if k < 3:
                r0, r1, r2 = X0[i, 9], X0[i, 10], X0[i, 11]
                S0[o, 0], S0[o, 1], S0[o, 2] = e0, e1, e2
                S0[o, 3] = r1 * e2 - r2 * e1
                S0[o, 4] = r2 * e0 - r0 * e2
                S0[o, 5] = r0 * e1 - r1 * e0
            else:
                S0[o, 0], S0[o, 1], S0[o, 2] = 0.0, 0.0, 0.0
                S0[o, 3], S0[o, 4], S0[o, 5] = e0, e1, e2
            for m in range(6):
                w[TM, m] = S0[o, m] * v[o]  # v_J = S⁰ q̇
        elif par < 0 and int(data[i, JTYPE]) == FREE:
            # floating base: v_J = X0⁻¹ v (S⁰ itself is not formed, see above)
            for m in range(6):
                w[TM + 1, m] = v[o + m]
            x_inv_motion(X0, i, w, TM + 1, w, TM)
        else:
            for m in range(6):
                w[TM, m] = 0.0
            for c in range(n):
                s_column(data, i, c, w, TM + 1)
                x_inv_motion(X0, i, w, TM + 1, S0, o + c)
                for m in range(6):
                    w[TM, m] += S0[o + c, m] * v[o + c]  # v_J = S⁰ q̇
        if par < 0:  # v = v_J, a⁰ = -a_grav + c = [0; -g] + c
            for m in range(6):
                w[i, m] = w[TM, m]
            w[AC + i, 0], w[AC + i, 1], w[AC + i, 2] = 0.0, 0.0, 0.0
            w[AC + i, 3], w[AC + i, 4], w[AC + i, 5] = -g0, -g1, -g2
        else:
            for m in range(6):
                w[i, m] = w[par, m] + w[TM, m]
                w[AC + i, m] = w[AC + par, m]
        cross_motion_add(w, i, w, TM, w, AC + i)  # c = v × v_J
        # p_i = I_i a⁰_i + v_i ×* I_i v_i - f_ext,i (f_ext given in body coordinates)
        M, h0, h1, h2, j00, j01, j02, j11, j12, j22 = inertia_to_world(data, i, X0, IA)
        w[TM, 0], w[TM, 1], w[TM, 2], w[TM, 3], w[TM, 4], w[TM, 5] = rigid_times(
            M, h0, h1, h2, j00, j01, j02, j11, j12, j22,
            w[i, 0], w[i, 1], w[i, 2], w[i, 3], w[i, 4], w[i, 5])
        (w[PA + i, 0], w[PA + i, 1], w[PA + i, 2], w[PA + i, 3], w[PA + i, 4],
         w[PA + i, 5]) = rigid_times(M, h0, h1, h2, j00, j01, j02, j11, j12, j22,
                                     w[AC + i, 0], w[AC + i, 1], w[AC + i, 2],
                                     w[AC + i, 3], w[AC + i, 4], w[AC + i, 5])
        cross_force_add(w, i, w, TM, w, PA + i)
        if use_fext:
            for m in range(6):
                w[TM, m] = 0.0
            xt_force_add(X0, i, fext, i, w, TM)
            for m in range(6):
                w[PA + i, m] -= w[TM, m]
    for i in range(nb - 1, -1, -1):  # pass 2: articulated inertias, child before parent
        n = int(data[i, NVJ])
        o = int(data[i, IV])
        b = 6 * i
        par = int(data[i, PARENT])
        if n == 1:
            # one speed (most joints): D = Sᵀ U is a scalar, no factorization; the W
            # row holds U itself and the L entry 1/D (pass 3 reads them so)
            s0, s1, s2, s3, s4, s5 = S0[o, 0], S0[o, 1], S0[o, 2], S0[o, 3], S0[o, 4], S0[o, 5]
            u0, u1, u2, u3, u4, u5 = sym_times(IA, i, s0, s1, s2, s3, s4, s5)
            p0, p1, p2 = w[PA + i, 0], w[PA + i, 1], w[PA + i, 2]
            p3, p4, p5 = w[PA + i, 3], w[PA + i, 4], w[PA + i, 5]
            d = s0 * u0 + s1 * u1 + s2 * u2 + s3 * u3 + s4 * u4 + s5 * u5 + data[i, ARMATURE]
            if d <= tol:
                return SINGULAR - i
            u = tau[o] - (s0 * p0 + s1 * p1 + s2 * p2 + s3 * p3 + s4 * p4 + s5 * p5)
            dinv = 1.0 / d
            LW[b, 0] = dinv
            y[o] = u
            LW[WO + b, 0], LW[WO + b, 1], LW[WO + b, 2] = u0, u1, u2
            LW[WO + b, 3], LW[WO + b, 4], LW[WO + b, 5] = u3, u4, u5
            if par >= 0:  # p^a = p^A + U u/D and I^a = I^A - U Uᵀ/D, to the parent
                e = u * dinv
                w[PA + par, 0] += p0 + u0 * e
                w[PA + par, 1] += p1 + u1 * e
                w[PA + par, 2] += p2 + u2 * e
                w[PA + par, 3] += p3 + u3 * e
                w[PA + par, 4] += p4 + u4 * e
                w[PA + par, 5] += p5 + u5 * e
                sym_rank1_to_parent(IA, i, par, u0 * dinv, u1 * dinv, u2 * dinv, u3 * dinv,
                                    u4 * dinv, u5 * dinv, u0, u1, u2, u3, u4, u5)
            continue
        if par < 0 and int(data[i, JTYPE]) == FREE:
            # floating base: I^A δ = X0ᵀ τ - p^A by the Cholesky factor L of I^A (SPD),
            # δ kept in y[o:o+6] for pass 3
            w[TM + 1, 0], w[TM + 1, 1], w[TM + 1, 2] = tau[o], tau[o + 1], tau[o + 2]
            w[TM + 1, 3], w[TM + 1, 4], w[TM + 1, 5] = tau[o + 3], tau[o + 4], tau[o + 5]
            for m in range(6):
                w[TM, m] = -w[PA + i, m]
            xt_force_add(X0, i, w, TM + 1, w, TM)
            if data[i, ARMATURE] != 0.0:
                free_root_armature(IA, i, X0, data[i, ARMATURE])
            for c in range(6):
                for r in range(c, 6):
                    if not cholesky_entry(LW, b, r, c, IA[i, r * (r + 1) // 2 + c], tol):
                        return SINGULAR - i
            for r in range(6):  # L z = rhs
                s = w[TM, r]
                for l in range(r):
                    s -= LW[b + r, l] * w[TM + 1, l]
                w[TM + 1, r] = s / LW[b + r, r]
            for r in range(5, -1, -1):  # Lᵀ δ = z
                s = w[TM + 1, r]
                for l in range(r + 1, 6):
                    s -= LW[b + l, r] * y[o + l]
                y[o + r] = s / LW[b + r, r]
            continue
        # several speeds: U = I^A S, D = Sᵀ U, then its Cholesky factor L (D is SPD for
        # a model that moves inertia)
        for c in range(n):  # scratch row 2 + c: U_i[:, c]
            (w[TM + 2 + c, 0], w[TM + 2 + c, 1], w[TM + 2 + c, 2], w[TM + 2 + c, 3],
             w[TM + 2 + c, 4], w[TM + 2 + c, 5]) = sym_times(
                IA, i, S0[o + c, 0], S0[o + c, 1], S0[o + c, 2], S0[o + c, 3], S0[o + c, 4],
                S0[o + c, 5])
        for c in range(n):
            for r in range(c, n):
                d = data[i, ARMATURE] if r == c else 0.0
                for m in range(6):
                    d += S0[o + r, m] * w[TM + 2 + c, m]
                if not cholesky_entry(LW, b, r, c, d, tol):
                    return SINGULAR - i
        # u = τ_i - Sᵀ p^A; y = L⁻¹ u; W = L⁻¹ Uᵀ (forward substitution)
        for r in range(n):
            u = tau[o + r]
            for m in range(6):
                u -= S0[o + r, m] * w[PA + i, m]
            for l in range(r):
                u -= LW[b + r, l] * y[o + l]
            y[o + r] = u / LW[b + r, r]
            for m in range(6):
                x = w[TM + 2 + r, m]
                for l in range(r):
                    x -= LW[b + r, l] * LW[WO + b + l, m]
                LW[WO + b + r, m] = x / LW[b + r, r]
        if par >= 0:  # p^a = p^A + Wᵀ y and I^a = I^A - Wᵀ W, to the parent
            for a in range(6):
                s = w[PA + i, a]
                for l in range(n):
                    s += LW[WO + b + l, a] * y[o + l]
                w[PA + par, a] += s
            for a in range(6):
                for c in range(a + 1):
                    x = IA[i, a * (a + 1) // 2 + c]
                    for l in range(n):
                        x -= LW[WO + b + l, a] * LW[WO + b + l, c]
                    IA[par, a * (a + 1) // 2 + c] += x
    for i in range(nb):  # pass 3: q̈ and δ, parent before child (δ_p = 0 at a root)
        n = int(data[i, NVJ])
        o = int(data[i, IV])
        par = int(data[i, PARENT])
        b = 6 * i
        if par < 0:
            if n == 6 and int(data[i, JTYPE]) == FREE:  # floating base: q̈ = X0 δ
                for m in range(6):
                    w[AC + i, m] = y[o + m]
                x_motion(X0, i, w, AC + i, w, TM)
                for m in range(6):
                    qdd[o + m] = w[TM, m]
                continue
            for m in range(6):
                w[AC + i, m] = 0.0
        else:
            for m in range(6):
                w[AC + i, m] = w[AC + par, m]
        if n == 1:  # q̈ = (u - Uᵀ δ_p) / D
            s = y[o]
            for m in range(6):
                s -= LW[WO + b, m] * w[AC + i, m]
            qdd[o] = s * LW[b, 0]
        else:  # q̈ = L⁻ᵀ (y - W δ_p)  (back substitution)
            for r in range(n - 1, -1, -1):
                s = y[o + r]
                for m in range(6):
                    s -= LW[WO + b + r, m] * w[AC + i, m]
                for l in range(r + 1, n):
                    s -= LW[b + l, r] * qdd[o + l]
                qdd[o + r] = s / LW[b + r, r]
        for c in range(n):
            for m in range(6):
                w[AC + i, m] += S0[o + c, m] * qdd[o + c]
    return 0 if all_finite(qdd) else NOT_FINITE


@njit(cache=True, _nrt=False, forceinline=True)
def free_root_armature(IA, i, X0, arm):
    """``I^A_i += arm X0ᵀ X0`` (packed) for a free root, whose v̇ = X0 δ: the rotor term
    ``arm v̇`` of τ, taken to the world by X0ᵀ as aba_core's direct solve needs it. With
    ``X0 = [E 0; -E r× E]``, ``X0ᵀ X0 = [1 - r×r×, r×; -r×, 1]``."""
    r0, r1, r2 = X0[i, 9], X0[i, 10], X0[i, 11]
    rr = r0 * r0 + r1 * r1 + r2 * r2
    IA[i, 0] += arm * (1.0 + rr - r0 * r0)
    IA[i, 1] -= arm * r1 * r0
    IA[i, 2] += arm * (1.0 + rr - r1 * r1)
    IA[i, 3] -= arm * r2 * r0
    IA[i, 4] -= arm * r2 * r1
    IA[i, 5] += arm * (1.0 + rr - r2 * r2)
    # rows 3..5, columns 0..2: -r×, entries (a, c) = -(r×)[a - 3, c]
    IA[i, 7] += arm * r2   # (3, 1): -(-r2)
    IA[i, 8] -= arm * r1   # (3, 2): -(r1)
    IA[i, 10] -= arm * r2  # (4, 0): -(r2)
    IA[i, 12] += arm * r0  # (4, 2): -(-r0)
    IA[i, 15] += arm * r1  # (5, 0): -(-r1)
    IA[i, 16] -= arm * r0  # (5, 1): -(r0)
    IA[i, 9] += arm
    IA[i, 14] += arm
    IA[i, 20] += arm


@njit(cache=True)
def aba_into(data, q, v, tau, fext, use_fext, qdd):
    """:func:`aba_core` with a workspace of its own."""
    nb = data.shape[0] - 1
    nv = qdd.shape[0]
    return aba_core(data, q, v, tau, fext, use_fext, qdd, np.empty((nb, 12)),
                    np.empty((nb, 12)), np.empty((nv, 6)), np.empty((3 * nb + 8, 6)),
                    np.empty((nb, 21)), np.empty((12 * nb, 6)), np.empty(nv))


@njit(cache=True)
def aba1(data, q, v, tau, qdd):
    nv = int(data[data.shape[0] - 1, NV])
    if not (_shape_ok(data, q, nv, v) and tau.shape[0] == nv and qdd.shape[0] == nv):
        return BAD_SHAPE
    return aba_into(data, q, v, tau, data, False, qdd)


# ABA on several states at once (see "Several states at once" above), for trees whose
# joints all have one speed, but for free joints at roots: the several-speed branch
# of aba_core (a Cholesky factor per joint) stays per state. Its blocks are larger
# than RNEA's and CRBA's, hence a smaller limit on the bodies.

#: the largest tree the ABA lane kernel takes (its stack blocks: ~180 kB)
ABA_LANE_BODIES = 40


@njit(cache=True, _nrt=False)
def aba_lanes_fit(data):
    """Whether the lane kernel takes this tree: at most ABA_LANE_BODIES bodies, every
    joint of one speed but free joints at roots."""
    nb = data.shape[0] - 1
    if nb > ABA_LANE_BODIES:
        return False
    for i in range(nb):
        if data[i, NVJ] != 1 and not (data[i, PARENT] < 0 and int(data[i, JTYPE]) == FREE):
            return False
        if data[i, NVJ] == 6 and data[i, ARMATURE] != 0.0:  # a free root with a rotor
            return False
    return True


@njit(cache=True, forceinline=True)
def aba_lanes(data, Q, V, Tau, Fx, use_fext, k0, L, out, status, Xs, Ws):
    """:func:`aba_core` for the L <= LANES states ``k0 .. k0 + L - 1`` at once, operation
    for operation (the same bits), for a tree that :func:`aba_lanes_fit`. The one-speed
    joints' W row is U itself and their L entry 1/D, as in aba_core; a free root's
    6x6 Cholesky factor is taken lane by lane in vector loops."""
    X0 = stack_array((ABA_LANE_BODIES, 12, LANES))  # i_X_0
    S0 = stack_array((ABA_LANE_BODIES, 6, LANES))  # S⁰_i (one column)
    Vb = stack_array((ABA_LANE_BODIES, 6, LANES))  # v_i
    Ab = stack_array((ABA_LANE_BODIES, 6, LANES))  # a⁰_i (pass 1), δ_i (pass 3)
    Pb = stack_array((ABA_LANE_BODIES, 6, LANES))  # p^A_i
    Ub = stack_array((ABA_LANE_BODIES, 6, LANES))  # U_i = I^A_i S⁰_i
    IA = stack_array((ABA_LANE_BODIES, 21, LANES))  # I^A_i packed
    Di = stack_array((ABA_LANE_BODIES, LANES))  # 1 / D_i
    Yb = stack_array((ABA_LANE_BODIES, LANES))  # u_i = τ_i - S⁰ᵀ p^A_i
    Xt = stack_array((1, 12, LANES))  # X_up[i]
    T = stack_array((27, LANES))  # scratch
    Lc = stack_array((6, 6, LANES))  # a free root's factor
    Z = stack_array((12, LANES))  # its right side, z, δ
    nb = data.shape[0] - 1
    for l in range(L):
        status[k0 + l] = 0
    for i in range(nb):  # pass 1: velocities, a⁰ and bias forces, parent before child
        k = int(data[i, IQ])
        if data[i, AXIS_ID] >= 0:  # X_up as in rnea_lanes
            lane_cos_sin(Q, k0, k, L, T[0], T[1])
            lane_unit_axis_transform(data, i, T[0], T[1], Xt, 0, L)
        else:
            for l in range(L):
                if lane_joint_transform(data, i, Q[k0 + l], Xs, Xt, 0, l) and status[k0 + l] == 0:
                    status[k0 + l] = i + 1
        par = int(data[i, PARENT])
        o = int(data[i, IV])
        ki = int(data[i, SIDX])
        if par < 0:
            for c in range(12):
                for l in range(L):
                    X0[i, c, l] = Xt[0, c, l]
        else:  # as compose, through T (X0[p] read, X0[i] written)
            for a in range(3):
                for b in range(3):
                    for l in range(L):
                        T[3 * a + b, l] = (Xt[0, 3 * a, l] * X0[par, b, l]
                                           + Xt[0, 3 * a + 1, l] * X0[par, 3 + b, l]
                                           + Xt[0, 3 * a + 2, l] * X0[par, 6 + b, l])
            for a in range(3):
                for l in range(L):
                    T[9 + a, l] = (X0[par, 9 + a, l] + X0[par, a, l] * Xt[0, 9, l]
                                   + X0[par, 3 + a, l] * Xt[0, 10, l]
                                   + X0[par, 6 + a, l] * Xt[0, 11, l])
            for c in range(12):
                for l in range(L):
                    X0[i, c, l] = T[c, l]
        # S⁰ and v_J = S⁰ q̇ (into T[12:18])
        if ki >= 0:
            r = ki if ki < 3 else ki - 3
            for l in range(L):
                e0, e1, e2 = X0[i, 3 * r, l], X0[i, 3 * r + 1, l], X0[i, 3 * r + 2, l]
                if ki < 3:
                    r0, r1, r2 = X0[i, 9, l], X0[i, 10, l], X0[i, 11, l]
                    S0[i, 0, l], S0[i, 1, l], S0[i, 2, l] = e0, e1, e2
                    S0[i, 3, l] = r1 * e2 - r2 * e1
                    S0[i, 4, l] = r2 * e0 - r0 * e2
                    S0[i, 5, l] = r0 * e1 - r1 * e0
                else:
                    S0[i, 0, l], S0[i, 1, l], S0[i, 2, l] = 0.0, 0.0, 0.0
                    S0[i, 3, l], S0[i, 4, l], S0[i, 5, l] = e0, e1, e2
            for m in range(6):
                for l in range(L):
                    T[12 + m, l] = S0[i, m, l] * V[k0 + l, o]
        elif par < 0 and int(data[i, JTYPE]) == FREE:  # v_J = X0⁻¹ v
            for l in range(L):
                (T[12, l], T[13, l], T[14, l], T[15, l], T[16, l], T[17, l]) = x_inv_motion_s(
                    X0[i, 0, l], X0[i, 1, l], X0[i, 2, l], X0[i, 3, l], X0[i, 4, l],
                    X0[i, 5, l], X0[i, 6, l], X0[i, 7, l], X0[i, 8, l], X0[i, 9, l],
                    X0[i, 10, l], X0[i, 11, l], V[k0 + l, o], V[k0 + l, o + 1],
                    V[k0 + l, o + 2], V[k0 + l, o + 3], V[k0 + l, o + 4], V[k0 + l, o + 5])
        else:  # one speed, S not a unit vector: S⁰ = X0⁻¹ s, s the model's column
            s_column(data, i, 0, Ws, 1)
            for l in range(L):
                (S0[i, 0, l], S0[i, 1, l], S0[i, 2, l], S0[i, 3, l], S0[i, 4, l],
                 S0[i, 5, l]) = x_inv_motion_s(
                    X0[i, 0, l], X0[i, 1, l], X0[i, 2, l], X0[i, 3, l], X0[i, 4, l],
                    X0[i, 5, l], X0[i, 6, l], X0[i, 7, l], X0[i, 8, l], X0[i, 9, l],
                    X0[i, 10, l], X0[i, 11, l], Ws[1, 0], Ws[1, 1], Ws[1, 2], Ws[1, 3],
                    Ws[1, 4], Ws[1, 5])
            for m in range(6):
                for l in range(L):
                    T[12 + m, l] = 0.0 + S0[i, m, l] * V[k0 + l, o]
        if par < 0:  # v = v_J, a⁰ = [0; -g] + c
            for m in range(6):
                for l in range(L):
                    Vb[i, m, l] = T[12 + m, l]
            for m in range(6):
                x = 0.0 if m < 3 else -data[nb, GRAV + m - 3]
                for l in range(L):
                    Ab[i, m, l] = x
        else:
            for m in range(6):
                for l in range(L):
                    Vb[i, m, l] = Vb[par, m, l] + T[12 + m, l]
            for m in range(6):
                for l in range(L):
                    Ab[i, m, l] = Ab[par, m, l]
        for l in range(L):  # c = v × v_J; p = I a⁰ + v ×* I v
            (T[0, l], T[1, l], T[2, l], T[3, l], T[4, l], T[5, l]) = cross_motion_s(
                Vb[i, 0, l], Vb[i, 1, l], Vb[i, 2, l], Vb[i, 3, l], Vb[i, 4, l], Vb[i, 5, l],
                T[12, l], T[13, l], T[14, l], T[15, l], T[16, l], T[17, l])
        for m in range(6):
            for l in range(L):
                Ab[i, m, l] += T[m, l]
        for l in range(L):
            M, h0, h1, h2, j00, j01, j11, j02, j12, j22 = inertia_world_s(
                data, i, X0[i, 0, l], X0[i, 1, l], X0[i, 2, l], X0[i, 3, l], X0[i, 4, l],
                X0[i, 5, l], X0[i, 6, l], X0[i, 7, l], X0[i, 8, l], X0[i, 9, l],
                X0[i, 10, l], X0[i, 11, l])
            IA[i, 0, l], IA[i, 1, l], IA[i, 2, l] = j00, j01, j11
            IA[i, 3, l], IA[i, 4, l], IA[i, 5, l] = j02, j12, j22
            IA[i, 6, l], IA[i, 7, l], IA[i, 8, l], IA[i, 9, l] = 0.0, h2, -h1, M
            IA[i, 10, l], IA[i, 11, l], IA[i, 12, l], IA[i, 13, l] = -h2, 0.0, h0, 0.0
            IA[i, 14, l], IA[i, 15, l], IA[i, 16, l], IA[i, 17, l] = M, h1, -h0, 0.0
            IA[i, 18, l], IA[i, 19, l], IA[i, 20, l] = 0.0, 0.0, M
            t0, t1, t2, t3, t4, t5 = rigid_times(
                M, h0, h1, h2, j00, j01, j02, j11, j12, j22,
                Vb[i, 0, l], Vb[i, 1, l], Vb[i, 2, l], Vb[i, 3, l], Vb[i, 4, l], Vb[i, 5, l])
            p0, p1, p2, p3, p4, p5 = rigid_times(
                M, h0, h1, h2, j00, j01, j02, j11, j12, j22,
                Ab[i, 0, l], Ab[i, 1, l], Ab[i, 2, l], Ab[i, 3, l], Ab[i, 4, l], Ab[i, 5, l])
            c0, c1, c2, c3, c4, c5 = cross_force_s(
                Vb[i, 0, l], Vb[i, 1, l], Vb[i, 2, l], Vb[i, 3, l], Vb[i, 4, l], Vb[i, 5, l],
                t0, t1, t2, t3, t4, t5)
            Pb[i, 0, l], Pb[i, 1, l], Pb[i, 2, l] = p0 + c0, p1 + c1, p2 + c2
            Pb[i, 3, l], Pb[i, 4, l], Pb[i, 5, l] = p3 + c3, p4 + c4, p5 + c5
        if use_fext:  # p -= X0ᵀ f_ext (as aba_core: into a zeroed row, then subtracted)
            for l in range(L):
                c0, c1, c2, c3, c4, c5 = xt_force(
                    X0[i, 0, l], X0[i, 1, l], X0[i, 2, l], X0[i, 3, l], X0[i, 4, l],
                    X0[i, 5, l], X0[i, 6, l], X0[i, 7, l], X0[i, 8, l], X0[i, 9, l],
                    X0[i, 10, l], X0[i, 11, l], Fx[k0 + l, i, 0], Fx[k0 + l, i, 1],
                    Fx[k0 + l, i, 2], Fx[k0 + l, i, 3], Fx[k0 + l, i, 4], Fx[k0 + l, i, 5])
                Pb[i, 0, l] -= 0.0 + c0
                Pb[i, 1, l] -= 0.0 + c1
                Pb[i, 2, l] -= 0.0 + c2
                Pb[i, 3, l] -= 0.0 + c3
                Pb[i, 4, l] -= 0.0 + c4
                Pb[i, 5, l] -= 0.0 + c5
    for i in range(nb - 1, -1, -1):  # pass 2: articulated inertias, child before parent
        o = int(data[i, IV])
        par = int(data[i, PARENT])
        if par < 0 and int(data[i, JTYPE]) == FREE:
            aba_lanes_free_root(Tau, k0, o, L, X0, i, Pb, IA, Lc, Z, data[nb, SINGTOL], status)
            continue
        for l in range(L):
            s0, s1, s2 = S0[i, 0, l], S0[i, 1, l], S0[i, 2, l]
            s3, s4, s5 = S0[i, 3, l], S0[i, 4, l], S0[i, 5, l]
            u0, u1, u2, u3, u4, u5 = sym_times_s(
                IA[i, 0, l], IA[i, 1, l], IA[i, 2, l], IA[i, 3, l], IA[i, 4, l], IA[i, 5, l],
                IA[i, 6, l], IA[i, 7, l], IA[i, 8, l], IA[i, 9, l], IA[i, 10, l],
                IA[i, 11, l], IA[i, 12, l], IA[i, 13, l], IA[i, 14, l], IA[i, 15, l],
                IA[i, 16, l], IA[i, 17, l], IA[i, 18, l], IA[i, 19, l], IA[i, 20, l],
                s0, s1, s2, s3, s4, s5)
            p0, p1, p2 = Pb[i, 0, l], Pb[i, 1, l], Pb[i, 2, l]
            p3, p4, p5 = Pb[i, 3, l], Pb[i, 4, l], Pb[i, 5, l]
            d = s0 * u0 + s1 * u1 + s2 * u2 + s3 * u3 + s4 * u4 + s5 * u5 + data[i, ARMATURE]
            u = Tau[k0 + l, o] - (s0 * p0 + s1 * p1 + s2 * p2 + s3 * p3 + s4 * p4 + s5 * p5)
            if not d <= data[nb, SINGTOL]:  # (NaN from an overflow: NOT_FINITE below)
                dinv = 1.0 / d
            else:  # as aba_core, which stops there; this lane's result is not used
                dinv = 0.0
                if status[k0 + l] == 0:
                    status[k0 + l] = SINGULAR - i
            Di[i, l] = dinv
            Yb[i, l] = u
            Ub[i, 0, l], Ub[i, 1, l], Ub[i, 2, l] = u0, u1, u2
            Ub[i, 3, l], Ub[i, 4, l], Ub[i, 5, l] = u3, u4, u5
            # p^a = p^A + U u/D and I^a = I^A - U Uᵀ/D (into T, added to the parent below)
            e = u * dinv
            T[21, l], T[22, l], T[23, l] = p0 + u0 * e, p1 + u1 * e, p2 + u2 * e
            T[24, l], T[25, l], T[26, l] = p3 + u3 * e, p4 + u4 * e, p5 + u5 * e
            b0, b1, b2 = u0 * dinv, u1 * dinv, u2 * dinv
            b3, b4, b5 = u3 * dinv, u4 * dinv, u5 * dinv
            T[0, l] = IA[i, 0, l] - b0 * u0
            T[1, l] = IA[i, 1, l] - b1 * u0
            T[2, l] = IA[i, 2, l] - b1 * u1
            T[3, l] = IA[i, 3, l] - b2 * u0
            T[4, l] = IA[i, 4, l] - b2 * u1
            T[5, l] = IA[i, 5, l] - b2 * u2
            T[6, l] = IA[i, 6, l] - b3 * u0
            T[7, l] = IA[i, 7, l] - b3 * u1
            T[8, l] = IA[i, 8, l] - b3 * u2
            T[9, l] = IA[i, 9, l] - b3 * u3
            T[10, l] = IA[i, 10, l] - b4 * u0
            T[11, l] = IA[i, 11, l] - b4 * u1
            T[12, l] = IA[i, 12, l] - b4 * u2
            T[13, l] = IA[i, 13, l] - b4 * u3
            T[14, l] = IA[i, 14, l] - b4 * u4
            T[15, l] = IA[i, 15, l] - b5 * u0
            T[16, l] = IA[i, 16, l] - b5 * u1
            T[17, l] = IA[i, 17, l] - b5 * u2
            T[18, l] = IA[i, 18, l] - b5 * u3
            T[19, l] = IA[i, 19, l] - b5 * u4
            T[20, l] = IA[i, 20, l] - b5 * u5
        if par >= 0:
            for m in range(6):
                for l in range(L):
                    Pb[par, m, l] += T[21 + m, l]
            for c in range(21):
                for l in range(L):
                    IA[par, c, l] += T[c, l]
    for i in range(nb):  # pass 3: q̈ and δ, parent before child (δ_p = 0 at a root)
        o = int(data[i, IV])
        par = int(data[i, PARENT])
        if par < 0 and int(data[i, JTYPE]) == FREE:  # q̈ = X0 δ
            for m in range(6):
                for l in range(L):
                    Ab[i, m, l] = Z[6 + m, l]
            for l in range(L):
                (out[k0 + l, o], out[k0 + l, o + 1], out[k0 + l, o + 2], out[k0 + l, o + 3],
                 out[k0 + l, o + 4], out[k0 + l, o + 5]) = x_motion_s(
                    X0[i, 0, l], X0[i, 1, l], X0[i, 2, l], X0[i, 3, l], X0[i, 4, l],
                    X0[i, 5, l], X0[i, 6, l], X0[i, 7, l], X0[i, 8, l], X0[i, 9, l],
                    X0[i, 10, l], X0[i, 11, l], Ab[i, 0, l], Ab[i, 1, l], Ab[i, 2, l],
                    Ab[i, 3, l], Ab[i, 4, l], Ab[i, 5, l])
            continue
        for m in range(6):
            for l in range(L):
                Ab[i, m, l] = 0.0 if par < 0 else Ab[par, m, l]
        for l in range(L):  # q̈ = (u - Uᵀ δ_p) / D; δ = δ_p + S⁰ q̈
            x = Yb[i, l]
            for m in range(6):
                x -= Ub[i, m, l] * Ab[i, m, l]
            x = x * Di[i, l]
            T[0, l] = x
        for l in range(L):
            out[k0 + l, o] = T[0, l]
        for m in range(6):
            for l in range(L):
                Ab[i, m, l] += S0[i, m, l] * T[0, l]
    for l in range(L):
        if status[k0 + l] == 0 and not all_finite(out[k0 + l]):
            status[k0 + l] = NOT_FINITE


@njit(cache=True, _nrt=False, forceinline=True)
def aba_lanes_free_root(Tau, k0, o, L, X0, i, Pb, IA, Lc, Z, tol, status):
    """Pass 2 of :func:`aba_lanes` for a free root, as aba_core: ``I^A δ = X0ᵀ τ - p^A``
    by the Cholesky factor Lc of I^A; δ into Z[6:12] (Z[0:6]: the right side, then z)."""
    for l in range(L):
        c0, c1, c2, c3, c4, c5 = xt_force(
            X0[i, 0, l], X0[i, 1, l], X0[i, 2, l], X0[i, 3, l], X0[i, 4, l], X0[i, 5, l],
            X0[i, 6, l], X0[i, 7, l], X0[i, 8, l], X0[i, 9, l], X0[i, 10, l], X0[i, 11, l],
            Tau[k0 + l, o], Tau[k0 + l, o + 1], Tau[k0 + l, o + 2], Tau[k0 + l, o + 3],
            Tau[k0 + l, o + 4], Tau[k0 + l, o + 5])
        Z[0, l], Z[1, l], Z[2, l] = -Pb[i, 0, l] + c0, -Pb[i, 1, l] + c1, -Pb[i, 2, l] + c2
        Z[3, l], Z[4, l], Z[5, l] = -Pb[i, 3, l] + c3, -Pb[i, 4, l] + c4, -Pb[i, 5, l] + c5
    for c in range(6):  # as cholesky_entry, column by column
        for r in range(c, 6):
            for l in range(L):
                d = IA[i, r * (r + 1) // 2 + c, l]
                for k in range(c):
                    d -= Lc[r, k, l] * Lc[c, k, l]
                if r != c:
                    Lc[r, c, l] = d / Lc[c, c, l]
                elif not d <= tol:
                    Lc[r, c, l] = np.sqrt(d)
                else:  # singular: NaN, never a division by zero (the status says which)
                    Lc[r, c, l] = np.nan
                    if status[k0 + l] == 0:
                        status[k0 + l] = SINGULAR - i
    for r in range(6):  # L z = rhs
        for l in range(L):
            x = Z[r, l]
            for k in range(r):
                x -= Lc[r, k, l] * Z[k, l]
            Z[r, l] = x / Lc[r, r, l]
    for r in range(5, -1, -1):  # Lᵀ δ = z
        for l in range(L):
            x = Z[r, l]
            for k in range(r + 1, 6):
                x -= Lc[k, r, l] * Z[6 + k, l]
            Z[6 + r, l] = x / Lc[r, r, l]


@njit(cache=True, parallel=True)
def aba_batch(data, Q, V, Tau, F, use_fext, out, status):
    N = Q.shape[0]
    nb = data.shape[0] - 1
    nv = out.shape[1]
    lanes = aba_lanes_fit(data)
    for t in prange((N + BATCH_TASK - 1) // BATCH_TASK):
        X = np.empty((nb, 12))
        w = np.empty((3 * nb + 8, 6))
        end = min(N, (t + 1) * BATCH_TASK)
        if lanes:
            for k in range(t * BATCH_TASK, end, LANES):
                aba_lanes(data, Q, V, Tau, F, use_fext, k, min(LANES, end - k), out, status,
                          X, w)
            continue
        X0 = np.empty((nb, 12))
        S0 = np.empty((nv, 6))
        IA = np.empty((nb, 21))
        LW = np.empty((12 * nb, 6))
        y = np.empty(nv)
        for k in range(t * BATCH_TASK, end):
            kf = k if use_fext else 0
            status[k] = aba_core(data, Q[k], V[k], Tau[k], F[kf], use_fext, out[k], X, X0,
                                 S0, w, IA, LW, y)


# --- kinematics, energy, momentum, Jacobian -------------------------------------

@njit(cache=True)
def kinematics_into(data, q, v, use_v, R, p, vel):
    """Body poses in the world (``R[i]`` axes, ``p[i]`` origin) and, if ``use_v``, the
    spatial velocities ``vel[i]`` in body coordinates (rows of a (nb, 6) array).

    From ``X_up[i] = (E, r)``: the pose of body i in its parent is ``(Eᵀ, r)``, so
    ``R_i = R_p Eᵀ``, ``p_i = p_p + R_p r``; ``v_i = X_up[i] v_p + S_i v_i``.
    """
    nb = data.shape[0] - 1
    X = np.empty((nb, 12))
    for i in range(nb):
        if joint_transform(data, i, q, X):
            return i + 1
        par = int(data[i, PARENT])
        for a in range(3):
            for b in range(3):
                if par < 0:
                    R[i, a, b] = X[i, 3 * b + a]
                else:
                    R[i, a, b] = (R[par, a, 0] * X[i, 3 * b] + R[par, a, 1] * X[i, 3 * b + 1]
                                  + R[par, a, 2] * X[i, 3 * b + 2])
            if par < 0:
                p[i, a] = X[i, 9 + a]
            else:
                p[i, a] = (p[par, a] + R[par, a, 0] * X[i, 9] + R[par, a, 1] * X[i, 10]
                           + R[par, a, 2] * X[i, 11])
        if use_v:
            s_times(data, i, v, vel, i)
            if par >= 0:
                o0, o1, o2, o3, o4, o5 = (vel[i, 0], vel[i, 1], vel[i, 2], vel[i, 3],
                                          vel[i, 4], vel[i, 5])
                x_motion(X, i, vel, par, vel, i)
                vel[i, 0] += o0
                vel[i, 1] += o1
                vel[i, 2] += o2
                vel[i, 3] += o3
                vel[i, 4] += o4
                vel[i, 5] += o5
    return 0


@njit(cache=True)
def summary_into(data, q, v, use_v, out):
    """``out = [T, V, L (3), P (3), c (3)]``: kinetic energy ``½ Σ v_iᵀ I_i v_i``, potential
    energy ``-Σ m_i gᵀ c_i``, spatial momentum in world coordinates about the world origin,
    and the centre of mass of the whole model (world)."""
    nb = data.shape[0] - 1
    R = np.empty((nb, 3, 3))
    p = np.empty((nb, 3))
    vel = np.empty((nb + 1, 6))  # last row: I_i v_i
    st = kinematics_into(data, q, v, use_v, R, p, vel)
    if st:
        return st
    for k in range(11):
        out[k] = 0.0
    mass = 0.0
    for i in range(nb):
        m = data[i, MASS]
        mass += m
        for a in range(3):
            # m c_world = m p + R h
            mc = m * p[i, a] + (R[i, a, 0] * data[i, H] + R[i, a, 1] * data[i, H + 1]
                                + R[i, a, 2] * data[i, H + 2])
            out[1] -= data[nb, GRAV + a] * mc
            out[8 + a] += mc
        if use_v:
            inertia_times(data, i, MASS, vel, i, vel, nb)
            for k in range(6):
                out[0] += 0.5 * vel[i, k] * vel[nb, k]
            # body momentum [n; f] (body axes, about its origin) to world axes about the
            # world origin: P = R f, L = R n + p × P
            n0, n1, n2 = vel[nb, 0], vel[nb, 1], vel[nb, 2]
            f0, f1, f2 = vel[nb, 3], vel[nb, 4], vel[nb, 5]
            P0 = R[i, 0, 0] * f0 + R[i, 0, 1] * f1 + R[i, 0, 2] * f2
            P1 = R[i, 1, 0] * f0 + R[i, 1, 1] * f1 + R[i, 1, 2] * f2
            P2 = R[i, 2, 0] * f0 + R[i, 2, 1] * f1 + R[i, 2, 2] * f2
            out[2] += R[i, 0, 0] * n0 + R[i, 0, 1] * n1 + R[i, 0, 2] * n2
            out[3] += R[i, 1, 0] * n0 + R[i, 1, 1] * n1 + R[i, 1, 2] * n2
            out[4] += R[i, 2, 0] * n0 + R[i, 2, 1] * n1 + R[i, 2, 2] * n2
            out[2] += p[i, 1] * P2 - p[i, 2] * P1
            out[3] += p[i, 2] * P0 - p[i, 0] * P2
            out[4] += p[i, 0] * P1 - p[i, 1] * P0
            out[5] += P0
            out[6] += P1
            out[7] += P2
            arm = data[i, ARMATURE]
            if arm != 0.0:  # the rotor's kinetic energy, ½ armature v² (no momentum)
                o = int(data[i, IV])
                for c in range(int(data[i, NVJ])):
                    out[0] += 0.5 * arm * v[o + c] * v[o + c]
    for a in range(3):
        out[8 + a] /= mass
    return 0 if all_finite(out) else NOT_FINITE


@njit(cache=True)
def jacobian_into(data, q, body, frame, J):
    """The 6 x nv Jacobian of ``body``: frame 0 local, 1 local_world_aligned, 2 world.

    Each column S_j[:, c] of an ancestor j is taken to world coordinates about the
    world origin, ``(ω, v_O) = (R_j ω_j, R_j v_j + p_j × R_j ω_j)``; then
    local_world_aligned moves the point to the body origin, ``v = v_O + ω × p_b``,
    and local rotates that into body axes, ``(R_bᵀ ω, R_bᵀ v)``.
    """
    nb = data.shape[0] - 1
    R = np.empty((nb, 3, 3))
    p = np.empty((nb, 3))
    col = np.empty((2, 6))
    st = kinematics_into(data, q, q, False, R, p, col)
    if st:
        return st
    for a in range(J.shape[0]):
        for b in range(J.shape[1]):
            J[a, b] = 0.0
    j = body
    while j >= 0:
        o = int(data[j, IV])
        for c in range(int(data[j, NVJ])):
            s_column(data, j, c, col, 0)
            for a in range(3):
                col[1, a] = R[j, a, 0] * col[0, 0] + R[j, a, 1] * col[0, 1] + R[j, a, 2] * col[0, 2]
                col[1, 3 + a] = (R[j, a, 0] * col[0, 3] + R[j, a, 1] * col[0, 4]
                                 + R[j, a, 2] * col[0, 5])
            w0, w1, w2 = col[1, 0], col[1, 1], col[1, 2]
            # v_O = R v + p_j × ω
            u0 = col[1, 3] + p[j, 1] * w2 - p[j, 2] * w1
            u1 = col[1, 4] + p[j, 2] * w0 - p[j, 0] * w2
            u2 = col[1, 5] + p[j, 0] * w1 - p[j, 1] * w0
            if frame != 2:  # the velocity of the point at the body origin: v_O + ω × p_b
                u0 += w1 * p[body, 2] - w2 * p[body, 1]
                u1 += w2 * p[body, 0] - w0 * p[body, 2]
                u2 += w0 * p[body, 1] - w1 * p[body, 0]
            if frame == 0:
                for a in range(3):
                    J[a, o + c] = R[body, 0, a] * w0 + R[body, 1, a] * w1 + R[body, 2, a] * w2
                    J[3 + a, o + c] = R[body, 0, a] * u0 + R[body, 1, a] * u1 + R[body, 2, a] * u2
            else:
                J[0, o + c], J[1, o + c], J[2, o + c] = w0, w1, w2
                J[3, o + c], J[4, o + c], J[5, o + c] = u0, u1, u2
        j = int(data[j, PARENT])
    return 0 if all_finite2(J) else NOT_FINITE


@njit(cache=True)
def kinematics1(data, q, v, use_v, R, p, vel):
    nb = data.shape[0] - 1
    if q.shape[0] != int(data[nb, NQ]) or (use_v and v.shape[0] != int(data[nb, NV])):
        return BAD_SHAPE
    return kinematics_into(data, q, v, use_v, R, p, vel)


@njit(cache=True)
def summary1(data, q, v, use_v, out):
    nb = data.shape[0] - 1
    if q.shape[0] != int(data[nb, NQ]) or (use_v and v.shape[0] != int(data[nb, NV])):
        return BAD_SHAPE
    return summary_into(data, q, v, use_v, out)


@njit(cache=True)
def jacobian1(data, q, body, frame, J):
    if q.shape[0] != int(data[data.shape[0] - 1, NQ]):
        return BAD_SHAPE
    return jacobian_into(data, q, body, frame, J)


@njit(cache=True, parallel=True)
def kinematics_batch(data, Q, V, use_v, R, p, vel, status):
    for k in prange(Q.shape[0]):
        status[k] = kinematics_into(data, Q[k], V[k], use_v, R[k], p[k], vel[k])


@njit(cache=True, parallel=True)
def summary_batch(data, Q, V, use_v, out, status):
    for k in prange(Q.shape[0]):
        status[k] = summary_into(data, Q[k], V[k], use_v, out[k])


@njit(cache=True, parallel=True)
def jacobian_batch(data, Q, body, frame, out, status):
    for k in prange(Q.shape[0]):
        status[k] = jacobian_into(data, Q[k], body, frame, out[k])


# --- single-state entry points on the packed buffer ------------------------------
#
# The workspace in the buffer is shared by every call on one model, which is safe
# because these run holding the GIL (numba's default, nogil=False): two Python
# threads never run them at once. Compiled code that calls the algorithms
# (batches, compiled integrators) uses the *_into functions, which allocate.

# (Without the runtime a function cannot return a view it made, so each entry point
# carves its own views out of the buffer: ``o`` is where the workspace starts.)

@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
def _aba_f(buf, q, v, tau, fext, use_fext, qdd):
    nb = int(buf[0])
    nv = int(buf[2])
    o = HDR + (nb + 1) * WIDTH
    data = buf[HDR:o].reshape((nb + 1, WIDTH))
    o1 = o + 12 * nb
    o2 = o1 + 12 * nb
    o3 = o2 + 6 * nv
    o4 = o3 + 6 * (3 * nb + 8)
    o5 = o4 + 21 * nb
    o6 = o5 + 72 * nb
    if not use_fext:
        fext = data  # unused
    return aba_core(data, q, v, tau, fext, use_fext, qdd,
                    buf[o:o1].reshape((nb, 12)), buf[o1:o2].reshape((nb, 12)),
                    buf[o2:o3].reshape((nv, 6)), buf[o3:o4].reshape((3 * nb + 8, 6)),
                    buf[o4:o5].reshape((nb, 21)), buf[o5:o6].reshape((12 * nb, 6)),
                    buf[o6:o6 + nv])


@njit(cache=True, _nrt=False)
def aba_f(buf, q, v, tau, qdd):
    nv = int(buf[2])
    if not (q.shape[0] == int(buf[1]) and v.shape[0] == nv and tau.shape[0] == nv
            and qdd.shape[0] == nv):
        return BAD_SHAPE
    return _aba_f(buf, q, v, tau, buf[:HDR].reshape((1, HDR)), False, qdd)  # unused f_ext


@njit(cache=True, _nrt=False)
def aba_f_fext(buf, q, v, tau, fext, qdd):
    nv = int(buf[2])
    if not (q.shape[0] == int(buf[1]) and v.shape[0] == nv and tau.shape[0] == nv
            and qdd.shape[0] == nv and fext.shape[0] == int(buf[0]) and fext.shape[1] == 6):
        return BAD_SHAPE
    return _aba_f(buf, q, v, tau, fext, True, qdd)


# --- C entry points: the *_f kernels on bare pointers, for _fastcall.c ---------------
# Plain functions here, made cfuncs by c_entry() on first use (a cfunc compiles when
# it is made, and importing kanedyn compiles nothing). They live in this file so that
# numba's on-disk cache of them is invalidated with the kernels'. The caller
# (_fastcall.c) has checked that each state array is C-contiguous float64 of the
# model's length, and allocated the result.

@njit(cache=True, forceinline=True)
def _buf(bp):
    return carray(bp, (int(bp[3]),))


def rnea_c(bp, qp, vp, ap, taup):
    nv = int(bp[2])
    return rnea_f(_buf(bp), carray(qp, (int(bp[1]),)), carray(vp, (nv,)), carray(ap, (nv,)),
                  carray(taup, (nv,)))


def nle_c(bp, qp, vp, taup):
    nv = int(bp[2])
    return nle_f(_buf(bp), carray(qp, (int(bp[1]),)), carray(vp, (nv,)), carray(taup, (nv,)))


def gravity_c(bp, qp, taup):
    return gravity_f(_buf(bp), carray(qp, (int(bp[1]),)), carray(taup, (int(bp[2]),)))


def crba_c(bp, qp, Mp):
    nv = int(bp[2])
    return crba_f(_buf(bp), carray(qp, (int(bp[1]),)), carray(Mp, (nv, nv)))


def aba_c(bp, qp, vp, taup, qddp):
    nv = int(bp[2])
    return aba_f(_buf(bp), carray(qp, (int(bp[1]),)), carray(vp, (nv,)), carray(taup, (nv,)),
                 carray(qddp, (nv,)))


_C_ENTRIES = {"rnea_c": "rnea_f", "nle_c": "nle_f", "gravity_c": "gravity_f",
              "crba_c": "crba_f", "aba_c": "aba_f"}
_C_MADE: dict = {}


def c_entry(name: str) -> int:
    """The address of C entry point ``name`` (``int64 f(double *buf, double *x..., double
    *out)``), compiled or loaded from the on-disk cache on first use.

    The ``*_f`` kernel it calls is readied first (compiled for its declared
    any-strides signature, compilation then disabled), so that the cfunc always
    calls that one specialisation, whatever was called before."""
    made = _C_MADE.get(name)
    if made is None:
        ready(_C_ENTRIES[name])
        ptr = types.CPointer(types.float64)
        nargs = globals()[name].__code__.co_argcount
        made = cfunc(types.int64(*([ptr] * nargs)), cache=True)(globals()[name])
        _C_MADE[name] = made
    return made.address


# --- entry points: compiled for one signature each, on first use -----------------

_V = "float64[::1]"
_M = "float64[:, ::1]"
_T3 = "float64[:, :, ::1]"
_I = "int64[::1]"
_B = "boolean"
_A = "float64[:]"
_A2 = "float64[:, :]"
SIGNATURES = {
    "rnea1": f"int64({_M}, {_V}, {_V}, {_V}, {_V})",
    "crba1": f"int64({_M}, {_V}, {_M})",
    "aba1": f"int64({_M}, {_V}, {_V}, {_V}, {_V})",
    # any strides for the caller's arrays (the entry point is called without the
    # dispatcher's type check, see entry(); only ndim and dtype are checked in Python)
    "rnea_f": f"int64({_V}, {_A}, {_A}, {_A}, {_A})",
    "rnea_f_fext": f"int64({_V}, {_A}, {_A}, {_A}, {_A2}, {_A})",
    "nle_f": f"int64({_V}, {_A}, {_A}, {_A})",
    "gravity_f": f"int64({_V}, {_A}, {_A})",
    "crba_f": f"int64({_V}, {_A}, {_A2})",
    "aba_f": f"int64({_V}, {_A}, {_A}, {_A}, {_A})",
    "aba_f_fext": f"int64({_V}, {_A}, {_A}, {_A}, {_A2}, {_A})",
    "rnea_batch": f"void({_M}, {_M}, {_M}, {_M}, {_T3}, {_B}, {_B}, {_B}, {_M}, {_I})",
    "crba_batch": f"void({_M}, {_M}, {_T3}, {_I})",
    "aba_batch": f"void({_M}, {_M}, {_M}, {_M}, {_T3}, {_B}, {_M}, {_I})",
    "kinematics1": f"int64({_M}, {_V}, {_V}, {_B}, {_T3}, {_M}, {_M})",
    "summary1": f"int64({_M}, {_V}, {_V}, {_B}, {_V})",
    "jacobian1": f"int64({_M}, {_V}, int64, int64, {_M})",
    "kinematics_batch": f"void({_M}, {_M}, {_M}, {_B}, float64[:, :, :, ::1], {_T3}, {_T3}, "
                        f"{_I})",
    "summary_batch": f"void({_M}, {_M}, {_M}, {_B}, {_M}, {_I})",
    "jacobian_batch": f"void({_M}, {_M}, int64, int64, {_T3}, {_I})",
}


def ready(name: str):
    """The dispatcher of entry point ``name``, compiled (or loaded from the on-disk
    cache) for its one signature, with further compilation disabled: an argument of
    another type (not float64, not C-contiguous, wrong number of dimensions) raises
    TypeError at once instead of compiling a new specialisation, and the Python
    wrapper then takes its general path."""
    disp = globals()[name]
    if not disp.signatures:  # (a second call would meet compilation disabled)
        disp.compile(SIGNATURES[name])
        disp.disable_compile()
    return disp


def entry(name: str):
    """The compiled entry point of ``name`` itself, without numba's dispatcher.

    The dispatcher types every argument before the call (~25 ns an array, ~150 ns
    for five), which is most of what a small robot's call costs beyond the
    arithmetic. The entry point only unboxes: it accepts any ndarray whose items
    are 8 bytes and trusts it to have the declared number of dimensions (one with
    more would overrun numba's array struct). So the caller must pass float64
    arrays of the declared ndim — the wrappers check ``x.ndim`` and
    ``x.dtype is F8`` of every caller's array, and pass their own buffers — and
    the signatures take any strides.
    """
    disp = ready(name)
    return disp.overloads[disp.signatures[0]].entry_point
