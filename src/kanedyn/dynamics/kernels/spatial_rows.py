"""Spatial algebra on rows: motions and forces as (6,) rows, transforms as (E, r).

Featherstone 2008, Chapter 2 (Table 2.5, the efficient formulae), with
``X = [E 0; -E r× E]`` the transform from A to B coordinates (E the rotation, r B's
origin in A coordinates), a motion m = (ω, v) and a force f = (n, f):

    X m = (E ω, E (v - r × ω))           Xᵀ f = (Eᵀ n + r × Eᵀ f, Eᵀ f)
    X⁻¹ m = (Eᵀ ω, Eᵀ v + r × Eᵀ ω)      (ω, v) × m, (ω, v) ×* f

and a rigid-body inertia as its parameters (m, h = m c, Ī), ``I = [Ī h×; h×ᵀ m 1]``,
moved to the parent as ``Xᵀ I X`` in parameter form (:func:`inertia_moved`). The
``*_s`` forms take and return scalars (which the compiler keeps in registers); the
others read and write rows of arrays. Also here: the packed symmetric 6x6 matrices of
ABA's articulated inertias (21 entries) and one step of a Cholesky factorisation.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .. import _compiled
from ..layout import E_TREE, IBAR, MASS, NQ, R_TREE, H

_compiled.key_cache(__name__)  # (see dynamics/_compiled.py)

# --- spatial algebra on rows, transforms as (E, r) ---------------------------

@njit(cache=True, _nrt=False, forceinline=True)
def add_row(dst, k, c0, c1, c2, c3, c4, c5):
    """``dst[k] += (c0, ..., c5)``: a spatial vector given as scalars added to row k."""
    dst[k, 0] += c0
    dst[k, 1] += c1
    dst[k, 2] += c2
    dst[k, 3] += c3
    dst[k, 4] += c4
    dst[k, 5] += c5


@njit(cache=True, _nrt=False, forceinline=True)
def add_at(x, o, c0, c1, c2, c3, c4, c5):
    """``x[o:o+6] += (c0, ..., c5)`` (:func:`add_row` for a flat array)."""
    x[o] += c0
    x[o + 1] += c1
    x[o + 2] += c2
    x[o + 3] += c3
    x[o + 4] += c4
    x[o + 5] += c5


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
    add_row(dst, k, c0, c1, c2, c3, c4, c5)


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
    add_row(dst, k, c0, c1, c2, c3, c4, c5)


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
    add_row(dst, k, c0, c1, c2, c3, c4, c5)


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
def world_transform(X, i, X0, p):
    """``X0[i] = X[i] X0[p]`` (:func:`compose`), or ``X[i]`` itself for a root (p < 0):
    body i's transform from the world, its parent's already in X0."""
    if p < 0:
        for m in range(12):
            X0[i, m] = X[i, m]
    else:
        compose(X, i, X0, p)


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


# --- packed symmetric 6x6 matrices (ABA's articulated inertias) -------------------
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


@njit(cache=True, _nrt=False)
def state_lengths_ok(data, q, nx, x):
    nb = data.shape[0] - 1
    return q.shape[0] == int(data[nb, NQ]) and x.shape[0] == nx


@njit(cache=True, _nrt=False, forceinline=True)
def tree_compose(row, x, r00, r01, r02, r10, r11, r12, r20, r21, r22, p0, p1, p2):
    """``x = X_J X_tree`` as (E row-major, r) from the joint pose (R, p) and the body
    row's X_tree: ``X_J = plucker(Rᵀ, p)``, so ``E = Rᵀ E_tree``, ``r = r_tree + E_treeᵀ p``."""
    for b in range(3):
        t0 = row[E_TREE + b]
        t1 = row[E_TREE + 3 + b]
        t2 = row[E_TREE + 6 + b]
        x[b] = r00 * t0 + r10 * t1 + r20 * t2
        x[3 + b] = r01 * t0 + r11 * t1 + r21 * t2
        x[6 + b] = r02 * t0 + r12 * t1 + r22 * t2
        x[9 + b] = (row[R_TREE + b] + row[E_TREE + b] * p0
                    + row[E_TREE + 3 + b] * p1 + row[E_TREE + 6 + b] * p2)
