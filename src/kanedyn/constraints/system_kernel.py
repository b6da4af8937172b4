"""The constraint primitives compiled (numba): M, f, g, C = G and γ of a constrained system.

A constrained system that can be compiled hands out a :class:`CompiledForm` (its
``compiled_form()``): a kind, a float64 parameter array and, for a Model, the flat
model (``flatten(model).data``, :mod:`kanedyn.dynamics.flat`). :func:`primitives`
evaluates at one state what the Python methods of
:class:`~kanedyn.constraints.system.ConstrainedMechanics` give — ``mass_matrix``,
``applied_forces``, ``constraint``, ``constraint_matrix``, ``gamma`` — and the compiled
DAE solver (:mod:`kanedyn.integrators.radau_compiled`) calls it per stage. Two kinds:

- :data:`KIND_ANDREWS`: Andrews' squeezer (:func:`~.problems.andrews_system`), its
  formulas as the test set states them; the rows of g are sums of ``k·trig(c·q)`` minus
  a constant, so ``G`` and ``γ = −Ġ q̇ = Σ T (c·q̇)²`` follow term by term (the readable
  form: :func:`~.problems._andrews_terms`).
- :data:`KIND_MODEL`: a :class:`~kanedyn.Model` cut open at loop closures
  (:class:`~.loops.LoopClosure` only, every joint with ``q̇ = v``). M by the CRBA
  kernel, ``f = −h`` by the RNEA kernel, and the loop rows by :func:`loop_rows_kernel`,
  the compiled :func:`~.loops.loop_rows`: world poses, velocities and the bias
  accelerations (v̇ = 0, no gravity) of a forward pass, ``a_i = X_up a_p + crm(v_i) S v_i``
  (Featherstone 2008, Table 5.1), then for a body point ``x = p + R c``: ``G`` columns
  ``u_j + w_j × x`` of the ancestors j (w_j, u_j: the joint's motion column in world
  coordinates about the world origin) and ``γ = −R (a_O + ω × v_O + ω̇ × c + ω × (ω × c))``
  (body quantities), and for a direction pair ``g = u·w``, ``G = (w × u)·(J_ωb − J_ωa)``,
  ``γ = −((ẇ × u + w × u̇)·(ω_b − ω_a) + (w × u)·(ω̇_b − ω̇_a))``.

Nonholonomic rows, user g(q), force elements and joints with ``q̇ ≠ v`` have no compiled
form (``compiled_form()`` is None); the Python path takes them. Ball, free and planar
joints (q̇ = W(q) v) have one for the constrained energy–momentum loop only
(``ConstrainedSystem.compiled_chart_form()``): it moves them in the charts compiled here
(``chart_point`` ... ``chart_derivative_t_sub``, the section "joint charts": the charts of
:mod:`kanedyn.integrators.chart`); M, g, G and γ above take any built-in joint as they
are, on the nv speeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..dynamics import _compiled
from ..dynamics.kernels.crba import crba_core
from ..dynamics.kernels.joint_rows import (
    joint_transform,
    motion_subspace_column,
    motion_subspace_times,
)
from ..dynamics.kernels.kinematics import kinematics_into
from ..dynamics.kernels.rnea import rnea_core
from ..dynamics.kernels.spatial_rows import x_motion
from ..dynamics.layout import FREE, IQ, IV, JTYPE, NVJ, PARENT, PLANAR, SPHERICAL
from ..spatial.lie import so3_coefficients

_compiled.key_cache(__name__)  # (see dynamics/_compiled.py)

KIND_ANDREWS, KIND_MODEL = 1, 2

#: Andrews' scalar parameters in the order of the packed array (then the g terms)
ANDREWS_PACKED = ("m1", "m2", "m3", "m4", "m5", "m6", "m7", "i1", "i2", "i3", "i4", "i5",
                  "i6", "i7", "ra", "rr", "da", "e", "ea", "zt", "zf", "fa", "u", "sa",
                  "sb", "ta", "tb", "ua", "ub", "sc", "sd", "xb", "yb", "xc", "yc", "c0",
                  "l0", "mom")
_NA = len(ANDREWS_PACKED)
#: entries per term of g: k, is_sin, row, the 7 phase coefficients
_TERM = 10
#: entries per loop closure: body a, body b, rotation kind, number of point axes,
#: the 3 axes, frame a (R row-major, p), frame b (R row-major, p)
_LOOP = 31
_KIND_CODE = {"point": 0, "revolute": 1, "weld": 2}


@dataclass(frozen=True)
class CompiledForm:
    """What the compiled primitives need of a system: ``kind``, ``params``, ``data``
    (the flat model for :data:`KIND_MODEL`, an empty (1, 1) array otherwise)."""

    kind: int
    params: NDArray
    data: NDArray


def pack_andrews(P: dict, K, is_sin, Cph, rows, consts) -> NDArray:
    """Andrews' parameters and the terms of g in one array (see :data:`ANDREWS_PACKED`)."""
    nt = len(K)
    out = np.zeros(_NA + 1 + _TERM * nt + 6)
    out[:_NA] = [P[k] for k in ANDREWS_PACKED]
    out[_NA] = nt
    for k in range(nt):
        o = _NA + 1 + _TERM * k
        out[o:o + 3] = K[k], float(is_sin[k]), rows[k]
        out[o + 3:o + 10] = Cph[k]
    out[_NA + 1 + _TERM * nt:] = consts
    return out


def pack_loops(closures, bodies) -> NDArray:
    """Loop closures (on bodies: ``bodies[k] = (ia, ib)``, -1 the world) in one array."""
    out = np.zeros(1 + _LOOP * len(closures))
    out[0] = len(closures)
    for k, (lc, (ia, ib)) in enumerate(zip(closures, bodies, strict=True)):
        o = 1 + _LOOP * k
        out[o] = -1 if ia is None else ia
        out[o + 1] = -1 if ib is None else ib
        out[o + 2] = _KIND_CODE[lc.kind]
        out[o + 3] = len(lc.axes)
        out[o + 4:o + 4 + len(lc.axes)] = lc.axes
        for s, fr in enumerate((lc.frame_a, lc.frame_b)):
            R, p = (np.eye(3), np.zeros(3)) if fr is None else fr
            out[o + 7 + 12 * s:o + 16 + 12 * s] = np.asarray(R, dtype=float).reshape(9)
            out[o + 16 + 12 * s:o + 19 + 12 * s] = np.asarray(p, dtype=float).reshape(3)
    return out


# ------------------------------------------------------------------ Andrews' squeezer
@njit(cache=True, _nrt=False, nogil=True)
def andrews_mass(p, q, M):
    """M(q) of Andrews' squeezer (Hairer & Wanner II, sec. VII.7)."""
    m1, m2, m3, m4, m5, m6, m7 = p[0], p[1], p[2], p[3], p[4], p[5], p[6]
    i1, i2, i3, i4, i5, i6, i7 = p[7], p[8], p[9], p[10], p[11], p[12], p[13]
    ra, rr, da, e, ea, zt, zf, fa, u = p[14], p[15], p[16], p[17], p[18], p[19], p[20], \
        p[21], p[22]
    sa, sb, ta, tb, ua, ub = p[23], p[24], p[25], p[26], p[27], p[28]
    ee, zz = e - ea, zf - fa
    for i in range(7):
        for j in range(7):
            M[i, j] = 0.0
    cth, sph, som = np.cos(q[1]), np.sin(q[3]), np.sin(q[5])
    M[0, 0] = m1 * ra ** 2 + m2 * (rr ** 2 - 2 * da * rr * cth + da ** 2) + i1 + i2
    M[1, 0] = M[0, 1] = m2 * (da ** 2 - da * rr * cth) + i2
    M[1, 1] = m2 * da ** 2 + i2
    M[2, 2] = m3 * (sa ** 2 + sb ** 2) + i3
    M[3, 3] = m4 * ee ** 2 + i4
    M[4, 3] = M[3, 4] = m4 * (ee ** 2 + zt * ee * sph) + i4
    M[4, 4] = m4 * (zt ** 2 + 2 * zt * ee * sph + ee ** 2) + m5 * (ta ** 2 + tb ** 2) + i4 + i5
    M[5, 5] = m6 * zz ** 2 + i6
    M[6, 5] = M[5, 6] = m6 * (zz ** 2 - u * zz * som) + i6
    M[6, 6] = (m6 * (zz ** 2 - 2 * u * zz * som + u ** 2) + m7 * (ua ** 2 + ub ** 2) + i6
               + i7)


@njit(cache=True, _nrt=False, nogil=True)
def andrews_force(p, q, v, f):
    """f(q, q̇): the driving moment, the spring between D and C, the Coriolis terms."""
    m2, m4, m6 = p[1], p[3], p[5]
    rr, da, e, ea, zt, zf, fa, u = p[15], p[16], p[17], p[18], p[19], p[20], p[21], p[22]
    sc, sd, xb, yb, xc, yc, c0, l0, mom = (p[29], p[30], p[31], p[32], p[33], p[34], p[35],
                                           p[36], p[37])
    ee, zz = e - ea, zf - fa
    th, ga, ph, om = q[1], q[2], q[3], q[5]
    bep, thp, php, dep, omp, epp = v[0], v[1], v[3], v[4], v[5], v[6]
    cg, sg = np.cos(ga), np.sin(ga)
    xd = sd * cg + sc * sg + xb
    yd = sd * sg - sc * cg + yb
    lang = np.sqrt((xd - xc) ** 2 + (yd - yc) ** 2)
    fs = -c0 * (lang - l0) / lang
    fx, fy = fs * (xd - xc), fs * (yd - yc)
    f[0] = mom - m2 * da * rr * thp * (thp + 2 * bep) * np.sin(th)
    f[1] = m2 * da * rr * bep ** 2 * np.sin(th)
    f[2] = fx * (sc * cg - sd * sg) + fy * (sd * cg + sc * sg)
    f[3] = m4 * zt * ee * dep ** 2 * np.cos(ph)
    f[4] = -m4 * zt * ee * php * (php + 2 * dep) * np.cos(ph)
    f[5] = -m6 * u * zz * epp ** 2 * np.cos(om)
    f[6] = m6 * u * zz * omp * (omp + 2 * epp) * np.cos(om)


@njit(cache=True, _nrt=False, nogil=True)
def andrews_constraints(p, q, v, want_gamma, g, G, gam):
    """g, G (and γ if asked) from the terms ``T = k·trig(φ)``, ``φ = c·q``: g sums T minus
    the row's constant, G sums ``T'(φ) c``, γ sums ``T φ̇²`` (``d²T/dt²`` at q̈ = 0 is
    ``T'' φ̇² = −T φ̇²``, and γ = −that)."""
    nt = int(p[_NA])
    oc = _NA + 1 + _TERM * nt
    for r in range(6):
        g[r] = -p[oc + r]
        gam[r] = 0.0
        for j in range(7):
            G[r, j] = 0.0
    for k in range(nt):
        o = _NA + 1 + _TERM * k
        kk, is_sin, r = p[o], p[o + 1] > 0.5, int(p[o + 2])
        phi = 0.0
        phid = 0.0
        for j in range(7):
            phi += p[o + 3 + j] * q[j]
            phid += p[o + 3 + j] * v[j]
        s, c = np.sin(phi), np.cos(phi)
        T = kk * s if is_sin else kk * c
        dT = kk * c if is_sin else -kk * s
        g[r] += T
        for j in range(7):
            G[r, j] += dT * p[o + 3 + j]
        if want_gamma:
            gam[r] += T * phid * phid


# ------------------------------------------------------------------ loop closures
@njit(cache=True, nogil=True)
def workspace_size(data, nv):
    """Length of the float64 workspace :func:`primitives` takes (carved by
    :func:`_carve`): per body R (9), p (3), v and a (6 each), X_up (12), the RNEA rows
    (18), the CRBA's composite inertias (13) and angles (3); 12 + 12 more for those two,
    12 rows of 6 for the closures, and four 3 × nv Jacobians."""
    nb = data.shape[0] - 1
    return 70 * nb + 96 + 12 * nv


@njit(cache=True, forceinline=True, nogil=True)
def _carve(ws, nb, nv):
    """The workspace's parts (see :func:`workspace_size`). (Not ``_nrt=False``: it makes
    the views it returns, whose references the caller then owns.)"""
    o = 0
    R = ws[o:o + 9 * nb].reshape((nb, 3, 3))
    o += 9 * nb
    p = ws[o:o + 3 * nb].reshape((nb, 3))
    o += 3 * nb
    vel = ws[o:o + 6 * nb].reshape((nb, 6))
    o += 6 * nb
    acc = ws[o:o + 6 * nb].reshape((nb, 6))
    o += 6 * nb
    X = ws[o:o + 12 * nb].reshape((nb, 12))
    o += 12 * nb
    w = ws[o:o + 18 * nb + 12].reshape((3 * nb + 2, 6))  # RNEA's rows
    o += 18 * nb + 12
    P = ws[o:o + 13 * nb].reshape((nb, 13))  # CRBA's composite inertias
    o += 13 * nb
    F = ws[o:o + 12].reshape((2, 6))
    o += 12
    A = ws[o:o + 3 * nb]
    o += 3 * nb
    S = ws[o:o + 72].reshape((12, 6))  # the closures' rows (loop_rows_kernel)
    o += 72
    J = ws[o:o + 12 * nv].reshape((4, 3, nv))  # Jp a, Jp b, Jω a, Jω b
    return R, p, vel, acc, X, w, P, F, A, S, J


@njit(cache=True, _nrt=False, forceinline=True, nogil=True)
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(cache=True, _nrt=False, nogil=True)
def bias_accelerations(data, q, v, vel, acc, X, vJ):
    """``acc[i]`` = spatial acceleration of body i at v̇ = 0 without gravity (body
    coordinates): ``a_i = X_up a_p + crm(v_i) S v_i``; ``vel`` from kinematics_into,
    ``X`` (nb, 12) and ``vJ`` (1, 6) workspace."""
    nb = data.shape[0] - 1
    for i in range(nb):
        joint_transform(data, i, q, X)
        motion_subspace_times(data, i, v, vJ, 0)
        # crm(v) m = [ω × m_ω; ω × m_v + v_O × m_ω]
        c0, c1, c2 = _cross(vel[i, 0], vel[i, 1], vel[i, 2], vJ[0, 0], vJ[0, 1], vJ[0, 2])
        d0, d1, d2 = _cross(vel[i, 0], vel[i, 1], vel[i, 2], vJ[0, 3], vJ[0, 4], vJ[0, 5])
        e0, e1, e2 = _cross(vel[i, 3], vel[i, 4], vel[i, 5], vJ[0, 0], vJ[0, 1], vJ[0, 2])
        par = int(data[i, PARENT])
        if par >= 0:
            x_motion(X, i, acc, par, acc, i)
        else:
            acc[i, :] = 0.0
        acc[i, 0] += c0
        acc[i, 1] += c1
        acc[i, 2] += c2
        acc[i, 3] += d0 + e0
        acc[i, 4] += d1 + e1
        acc[i, 5] += d2 + e2


@njit(cache=True, _nrt=False, nogil=True)
def side_kinematics(data, body, c, R, p, vel, acc, use_v, Jp, Jw, col, out):
    """One side of a closure: the world point x of body point c, its Jacobian Jp
    (3 × nv) and the angular Jacobian Jw (columns ``u_j + w_j × (x − p_j)`` and ``w_j``
    of the supporting joints j); with ``use_v`` the point's bias acceleration
    ``R (a_O + ω × v_O + ω̇ × c + ω × (ω × c))`` and the body's world ω and bias ω̇.
    ``out`` rows: x, bias acceleration, ω, ω̇. body < 0: the world. ``col``: (1, 6)."""
    Jp[:, :] = 0.0
    Jw[:, :] = 0.0
    out[:, :] = 0.0
    if body < 0:
        out[0, 0], out[0, 1], out[0, 2] = c[0], c[1], c[2]
        return
    Rb = R[body]
    for a in range(3):
        out[0, a] = p[body, a] + Rb[a, 0] * c[0] + Rb[a, 1] * c[1] + Rb[a, 2] * c[2]
    j = body
    while j >= 0:  # the motion columns of the supporting joints, in world coordinates
        o = int(data[j, IV])
        Rj = R[j]
        d0, d1, d2 = out[0, 0] - p[j, 0], out[0, 1] - p[j, 1], out[0, 2] - p[j, 2]
        for k in range(int(data[j, NVJ])):
            motion_subspace_column(data, j, k, col, 0)
            for a in range(3):
                Jw[a, o + k] = Rj[a, 0] * col[0, 0] + Rj[a, 1] * col[0, 1] + Rj[a, 2] * col[0, 2]
                Jp[a, o + k] = Rj[a, 0] * col[0, 3] + Rj[a, 1] * col[0, 4] + Rj[a, 2] * col[0, 5]
            x0, x1, x2 = _cross(Jw[0, o + k], Jw[1, o + k], Jw[2, o + k], d0, d1, d2)
            Jp[0, o + k] += x0
            Jp[1, o + k] += x1
            Jp[2, o + k] += x2
        j = int(data[j, PARENT])
    if not use_v:
        return
    w0, w1, w2 = vel[body, 0], vel[body, 1], vel[body, 2]
    wd0, wd1, wd2 = acc[body, 0], acc[body, 1], acc[body, 2]
    a0, a1, a2 = _cross(w0, w1, w2, vel[body, 3], vel[body, 4], vel[body, 5])
    b0, b1, b2 = _cross(wd0, wd1, wd2, c[0], c[1], c[2])
    e0, e1, e2 = _cross(w0, w1, w2, c[0], c[1], c[2])
    f0, f1, f2 = _cross(w0, w1, w2, e0, e1, e2)
    ab0 = acc[body, 3] + a0 + b0 + f0
    ab1 = acc[body, 4] + a1 + b1 + f1
    ab2 = acc[body, 5] + a2 + b2 + f2
    for a in range(3):
        out[1, a] = Rb[a, 0] * ab0 + Rb[a, 1] * ab1 + Rb[a, 2] * ab2
        out[2, a] = Rb[a, 0] * w0 + Rb[a, 1] * w1 + Rb[a, 2] * w2
        out[3, a] = Rb[a, 0] * wd0 + Rb[a, 1] * wd1 + Rb[a, 2] * wd2


@njit(cache=True, _nrt=False, nogil=True)
def _frame_axes(R, body, Rf, F):
    """World axes (columns of F) of a closure frame with axes Rf on ``body`` (-1: world)."""
    for a in range(3):
        for b in range(3):
            if body < 0:
                F[a, b] = Rf[a, b]
            else:
                F[a, b] = (R[body, a, 0] * Rf[0, b] + R[body, a, 1] * Rf[1, b]
                           + R[body, a, 2] * Rf[2, b])


@njit(cache=True, nogil=True)
def loop_rows_kernel(data, L, q, v, use_v, g, G, gam, ws):
    """g, G (rows of C) and, with ``use_v``, γ of the loop closures packed in L
    (:func:`pack_loops`); the compiled :func:`~kanedyn.constraints.loops.loop_rows`.
    ``ws``: the workspace of :func:`workspace_size`. Returns the kinematics kernel's
    status (0 ok)."""
    nb = data.shape[0] - 1
    nv = G.shape[1]
    R, p, vel, acc, X, _, _, _, _, S, J = _carve(ws, nb, nv)
    st = kinematics_into(data, q, v, use_v, R, p, vel)
    if st:
        return st
    col = S[:1]
    if use_v:
        bias_accelerations(data, q, v, vel, acc, X, col)
    sa, sb = S[1:5, :3], S[5:9, :3]  # x, bias acceleration, ω, ω̇ of each side
    FA, FB = S[9:12, :3], S[9:12, 3:]
    row = 0
    for k in range(int(L[0])):
        o = 1 + _LOOP * k
        ia, ib, kind, nax = int(L[o]), int(L[o + 1]), int(L[o + 2]), int(L[o + 3])
        side_kinematics(data, ia, L[o + 16:o + 19], R, p, vel, acc, use_v, J[0], J[2], col, sa)
        side_kinematics(data, ib, L[o + 28:o + 31], R, p, vel, acc, use_v, J[1], J[3], col, sb)
        for m in range(nax):
            a = int(L[o + 4 + m])
            g[row] = sb[0, a] - sa[0, a]
            for j in range(nv):
                G[row, j] = J[1, a, j] - J[0, a, j]
            if use_v:
                gam[row] = -(sb[1, a] - sa[1, a])
            row += 1
        if kind == 0:
            continue
        _frame_axes(R, ia, L[o + 7:o + 16].reshape((3, 3)), FA)
        _frame_axes(R, ib, L[o + 19:o + 28].reshape((3, 3)), FB)
        for m in range(2 if kind == 1 else 3):
            # the pairs of loops._ROT_PAIRS: revolute (0,2),(1,2); weld (1,2),(2,0),(0,1)
            i, jj = (m, 2) if kind == 1 else ((m + 1) % 3, (m + 2) % 3)
            u0, u1, u2 = FA[0, i], FA[1, i], FA[2, i]
            w0, w1, w2 = FB[0, jj], FB[1, jj], FB[2, jj]
            n0, n1, n2 = _cross(w0, w1, w2, u0, u1, u2)
            g[row] = u0 * w0 + u1 * w1 + u2 * w2
            for j in range(nv):
                G[row, j] = (n0 * (J[3, 0, j] - J[2, 0, j]) + n1 * (J[3, 1, j] - J[2, 1, j])
                             + n2 * (J[3, 2, j] - J[2, 2, j]))
            if use_v:
                # u̇ = ω_a × u, ẇ = ω_b × w; γ = −((ẇ × u + w × u̇)·Δω + (w × u)·Δω̇)
                ud0, ud1, ud2 = _cross(sa[2, 0], sa[2, 1], sa[2, 2], u0, u1, u2)
                wd0, wd1, wd2 = _cross(sb[2, 0], sb[2, 1], sb[2, 2], w0, w1, w2)
                p0, p1, p2 = _cross(wd0, wd1, wd2, u0, u1, u2)
                r0, r1, r2 = _cross(w0, w1, w2, ud0, ud1, ud2)
                gam[row] = -((p0 + r0) * (sb[2, 0] - sa[2, 0]) + (p1 + r1) * (sb[2, 1] - sa[2, 1])
                             + (p2 + r2) * (sb[2, 2] - sa[2, 2])
                             + n0 * (sb[3, 0] - sa[3, 0]) + n1 * (sb[3, 1] - sa[3, 1])
                             + n2 * (sb[3, 2] - sa[3, 2]))
            row += 1
    return 0


# ------------------------------------------------------------------ joint charts
# The local canonical charts of :mod:`kanedyn.integrators.chart` (``ModelChart``, the
# joints' ``chart_*`` methods), compiled for the constrained energy–momentum loop: centred
# on q_n, ``q = φ_n(x)`` with x ∈ R^nv; additive joints (revolute, prismatic, helical)
# ``q = q_n + x``, J = 1; a ball joint ``quat = quat_n ⊗ exp(x)``, J = J_r(x); a free joint
# ``(p_n + R_n ρ, quat_n ⊗ exp φ)``, J = diag(J_r(φ), exp(φ)ᵀ); a planar joint
# ``((x_n, y_n) + R(θ_n) ρ, θ_n + ψ)``, J = diag(R(−ψ), 1). J is block diagonal: the
# blocks of the ball and free joints are kept per body in ``Jb`` (nb, 18): J_r row-major,
# then exp(φ)ᵀ row-major (free joints); a planar joint's are (cos ψ, sin ψ) in Jb[i, :2].
# On additive joints every function below copies (J = 1 exactly, D = 0), so a model
# without ball, free or planar joints gets the same bits as without a chart. Every
# function here knows all three curved joints: AVF and Itoh–Abe in the chart
# (:mod:`kanedyn.integrators.avf_chart_compiled`) and the variational Störmer–Verlet loop
# (:mod:`kanedyn.integrators.verlet_compiled`, with the three functions of the discrete
# Lagrangian, ``chart_end_velocity``, ``chart_end_velocity_t_times``,
# ``chart_start_sensitivity_t_times``) take planar joints; which joints the constrained
# energy–momentum loop takes, its caller checks (``ConstrainedSystem.compiled_chart_form``).
# Joint types beyond the built-in codes have no compiled chart.

@njit(cache=True, _nrt=False, forceinline=True, nogil=True)
def _quat_exp_into(qn, k, x0, x1, x2, q, o):
    """q[o:o+4] = qn[k:k+4] ⊗ exp(x), renormalised (:func:`kanedyn.spatial.lie.quat_times_exp`:
    sin(θ/2)/θ by its series below θ = 1e-4)."""
    th = np.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
    w = np.cos(0.5 * th)
    kk = 0.5 - th * th / 48.0 if th < 1e-4 else np.sin(0.5 * th) / th
    b1, b2, b3 = kk * x0, kk * x1, kk * x2
    a0, a1, a2, a3 = qn[k], qn[k + 1], qn[k + 2], qn[k + 3]
    r0 = a0 * w - a1 * b1 - a2 * b2 - a3 * b3
    r1 = a0 * b1 + a1 * w + a2 * b3 - a3 * b2
    r2 = a0 * b2 - a1 * b3 + a2 * w + a3 * b1
    r3 = a0 * b3 + a1 * b2 - a2 * b1 + a3 * w
    nn = np.sqrt(r0 * r0 + r1 * r1 + r2 * r2 + r3 * r3)
    q[o], q[o + 1], q[o + 2], q[o + 3] = r0 / nn, r1 / nn, r2 / nn, r3 / nn


@njit(cache=True, _nrt=False, nogil=True)
def chart_point(data, qn, x, q):
    """q ← φ_n(x), the chart centred on qn (the section's comment)."""
    for i in range(data.shape[0] - 1):
        jt, iq, iv = int(data[i, JTYPE]), int(data[i, IQ]), int(data[i, IV])
        if jt == SPHERICAL:
            _quat_exp_into(qn, iq, x[iv], x[iv + 1], x[iv + 2], q, iq)
        elif jt == FREE:
            _quat_exp_into(qn, iq + 3, x[iv], x[iv + 1], x[iv + 2], q, iq + 3)
            w, a, b, c = qn[iq + 3], qn[iq + 4], qn[iq + 5], qn[iq + 6]
            r0, r1, r2 = x[iv + 3], x[iv + 4], x[iv + 5]
            q[iq] = qn[iq] + ((1 - 2 * (b * b + c * c)) * r0 + 2 * (a * b - w * c) * r1
                              + 2 * (a * c + w * b) * r2)
            q[iq + 1] = qn[iq + 1] + (2 * (a * b + w * c) * r0 + (1 - 2 * (a * a + c * c)) * r1
                                      + 2 * (b * c - w * a) * r2)
            q[iq + 2] = qn[iq + 2] + (2 * (a * c - w * b) * r0 + 2 * (b * c + w * a) * r1
                                      + (1 - 2 * (a * a + b * b)) * r2)
        elif jt == PLANAR:  # (x, y) = (x_n, y_n) + R(θ_n) ρ, θ = θ_n + ψ
            c, s = np.cos(qn[iq + 2]), np.sin(qn[iq + 2])
            q[iq] = qn[iq] + c * x[iv] - s * x[iv + 1]
            q[iq + 1] = qn[iq + 1] + s * x[iv] + c * x[iv + 1]
            q[iq + 2] = qn[iq + 2] + x[iv + 2]
        else:
            for k in range(int(data[i, NVJ])):
                q[iq + k] = qn[iq + k] + x[iv + k]


@njit(cache=True, _nrt=False, nogil=True)
def chart_blocks(data, x, Jb):
    """Jb[i] ← the blocks of J(x) of body i's ball or free joint: ``J_r = 1 − a x× +
    b (x×)²`` (with (x×)² = x xᵀ − θ² 1) and, for a free joint, ``exp(φ)ᵀ`` (Rodrigues,
    ``exp = 1 + (1 − θ² b) x× + a (x×)²``); a, b of
    :func:`~kanedyn.spatial.lie.so3_coefficients`; for a planar joint (cos ψ, sin ψ) in
    Jb[i, :2] (its block R(−ψ))."""
    for i in range(data.shape[0] - 1):
        jt = int(data[i, JTYPE])
        if jt == PLANAR:
            psi = x[int(data[i, IV]) + 2]
            Jb[i, 0], Jb[i, 1] = np.cos(psi), np.sin(psi)
            continue
        if jt != SPHERICAL and jt != FREE:
            continue
        iv = int(data[i, IV])
        x0, x1, x2 = x[iv], x[iv + 1], x[iv + 2]
        t2 = x0 * x0 + x1 * x1 + x2 * x2
        a, b, _, _ = so3_coefficients(np.sqrt(t2))
        xs = (x0, x1, x2)
        for r in range(3):
            for c in range(3):
                d = 1.0 if r == c else 0.0
                # x×[r, c]: (0, −x2, x1; x2, 0, −x0; −x1, x0, 0)
                X = 0.0
                if r != c:
                    k = 3 - r - c
                    X = xs[k] if (c - r) % 3 == 2 else -xs[k]
                X2 = xs[r] * xs[c] - t2 * d
                Jb[i, 3 * r + c] = d - a * X + b * X2
                if jt == FREE:  # exp(φ)ᵀ[r, c] = exp(φ)[c, r] = 1 − (1 − θ² b) X[r, c] + a X2
                    Jb[i, 9 + 3 * r + c] = d - (1.0 - t2 * b) * X + a * X2


@njit(cache=True, _nrt=False, forceinline=True, nogil=True)
def _solve3(a00, a01, a02, a10, a11, a12, a20, a21, a22, y, k, out, j):
    """out[j:j+3] ← A⁻¹ y[k:k+3], A = (a_rc), by its adjugate."""
    c00 = a11 * a22 - a12 * a21
    c01 = a02 * a21 - a01 * a22
    c02 = a01 * a12 - a02 * a11
    c10 = a12 * a20 - a10 * a22
    c11 = a00 * a22 - a02 * a20
    c12 = a02 * a10 - a00 * a12
    c20 = a10 * a21 - a11 * a20
    c21 = a01 * a20 - a00 * a21
    c22 = a00 * a11 - a01 * a10
    det = a00 * c00 + a01 * c10 + a02 * c20
    y0, y1, y2 = y[k], y[k + 1], y[k + 2]
    out[j] = (c00 * y0 + c01 * y1 + c02 * y2) / det
    out[j + 1] = (c10 * y0 + c11 * y1 + c12 * y2) / det
    out[j + 2] = (c20 * y0 + c21 * y1 + c22 * y2) / det


@njit(cache=True, _nrt=False, forceinline=True, nogil=True)
def _times3(A, o, y, k, out, j):
    """out[j:j+3] ← A y[k:k+3], A row-major at A[o:o+9]."""
    y0, y1, y2 = y[k], y[k + 1], y[k + 2]
    for r in range(3):
        out[j + r] = A[o + 3 * r] * y0 + A[o + 3 * r + 1] * y1 + A[o + 3 * r + 2] * y2


@njit(cache=True, _nrt=False, forceinline=True, nogil=True)
def _times3t(A, o, y, k, out, j):
    """out[j:j+3] ← Aᵀ y[k:k+3], A row-major at A[o:o+9]."""
    y0, y1, y2 = y[k], y[k + 1], y[k + 2]
    for r in range(3):
        out[j + r] = A[o + r] * y0 + A[o + 3 + r] * y1 + A[o + 6 + r] * y2


@njit(cache=True, _nrt=False, forceinline=True, nogil=True)
def _planar_block_times(Jb, i, y, k, out):
    """out[k:k+3] ← diag(R(−ψ), 1) y[k:k+3], a planar joint's block of J (Jb[i, :2] =
    (cos ψ, sin ψ))."""
    c, s = Jb[i, 0], Jb[i, 1]
    y0, y1 = y[k], y[k + 1]
    out[k], out[k + 1], out[k + 2] = c * y0 + s * y1, -s * y0 + c * y1, y[k + 2]


@njit(cache=True, _nrt=False, forceinline=True, nogil=True)
def _planar_block_t_times(Jb, i, y, k, out):
    """out[k:k+3] ← diag(R(−ψ), 1)ᵀ y[k:k+3] = (R(ψ) y_ρ, y_ψ), the transpose (and the
    inverse: R is orthogonal) of :func:`_planar_block_times`."""
    c, s = Jb[i, 0], Jb[i, 1]
    y0, y1 = y[k], y[k + 1]
    out[k], out[k + 1], out[k + 2] = c * y0 - s * y1, s * y0 + c * y1, y[k + 2]


@njit(cache=True, _nrt=False, nogil=True)
def chart_jt_times(data, Jb, y, out):
    """out ← J(x)ᵀ y (Jb of :func:`chart_blocks`); a planar joint's block R(−ψ)ᵀ = R(ψ)."""
    for i in range(data.shape[0] - 1):
        jt, iv = int(data[i, JTYPE]), int(data[i, IV])
        if jt == SPHERICAL or jt == FREE:
            _times3t(Jb[i], 0, y, iv, out, iv)
            if jt == FREE:  # (exp(φ)ᵀ)ᵀ = exp(φ)
                _times3t(Jb[i], 9, y, iv + 3, out, iv + 3)
        elif jt == PLANAR:
            _planar_block_t_times(Jb, i, y, iv, out)
        else:
            for k in range(int(data[i, NVJ])):
                out[iv + k] = y[iv + k]


@njit(cache=True, _nrt=False, nogil=True)
def chart_j_times(data, Jb, y, out):
    """out ← J(x) y (Jb of :func:`chart_blocks`): J_r y_φ on a ball or free joint's
    rotation, exp(φ)ᵀ y_ρ on a free joint's translation, ``(R(−ψ) y_ρ, y_ψ)`` on a planar
    joint, y elsewhere — the transpose of :func:`chart_jt_times` block by block. The body
    velocity v = J(x) ẋ of a chart velocity ẋ."""
    for i in range(data.shape[0] - 1):
        jt, iv = int(data[i, JTYPE]), int(data[i, IV])
        if jt == SPHERICAL or jt == FREE:
            _times3(Jb[i], 0, y, iv, out, iv)
            if jt == FREE:
                _times3(Jb[i], 9, y, iv + 3, out, iv + 3)
        elif jt == PLANAR:
            _planar_block_times(Jb, i, y, iv, out)
        else:
            for k in range(int(data[i, NVJ])):
                out[iv + k] = y[iv + k]


@njit(cache=True, _nrt=False, nogil=True)
def chart_j_solve(data, Jb, y, out):
    """out ← J(x)⁻¹ y."""
    for i in range(data.shape[0] - 1):
        jt, iv = int(data[i, JTYPE]), int(data[i, IV])
        if jt == SPHERICAL or jt == FREE:
            A = Jb[i]
            _solve3(A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8], y, iv, out, iv)
            if jt == FREE:  # (exp(φ)ᵀ)⁻¹ = exp(φ)
                _times3t(A, 9, y, iv + 3, out, iv + 3)
        elif jt == PLANAR:  # R(−ψ)⁻¹ = R(ψ) = R(−ψ)ᵀ
            _planar_block_t_times(Jb, i, y, iv, out)
        else:
            for k in range(int(data[i, NVJ])):
                out[iv + k] = y[iv + k]


@njit(cache=True, _nrt=False, nogil=True)
def chart_jt_solve(data, Jb, y, out):
    """out ← J(x)⁻ᵀ y."""
    for i in range(data.shape[0] - 1):
        jt, iv = int(data[i, JTYPE]), int(data[i, IV])
        if jt == SPHERICAL or jt == FREE:
            A = Jb[i]
            _solve3(A[0], A[3], A[6], A[1], A[4], A[7], A[2], A[5], A[8], y, iv, out, iv)
            if jt == FREE:  # (exp(φ)ᵀ)⁻ᵀ = exp(φ)ᵀ
                _times3(A, 9, y, iv + 3, out, iv + 3)
        elif jt == PLANAR:  # R(−ψ)⁻ᵀ = R(−ψ)
            _planar_block_times(Jb, i, y, iv, out)
        else:
            for k in range(int(data[i, NVJ])):
                out[iv + k] = y[iv + k]


@njit(cache=True, _nrt=False, nogil=True)
def chart_derivative_t_sub(data, Jb, x, w, y, out):
    """out ← out − D(x, w)ᵀ y on the ball, free and planar joints' speeds, D δ = d/dε J(x + εδ) w
    (``ModelChart.derivative``; zero on additive joints, which are left as they are). On
    SO(3), from ``D = a w× − b ((x×w)× + x× w×) + c xᵀ``, c = b'/θ x×(x×w) − a'/θ x×w
    (:func:`~kanedyn.spatial.lie.so3_right_jacobian_derivative`):
    ``Dᵀy = a y×w − b (y×(x×w) + w×(x×y)) + (c·y) x``; a free joint adds
    ``J_rᵀ (y_ρ × exp(φ)ᵀ w_ρ)`` to its rotation rows (its D[3:, :3] = (exp(φ)ᵀw_ρ)× J_r).
    On a planar joint J = diag(R(−ψ), 1) depends on ψ alone, so D has one column,
    ``D[:2, 2] = d/dψ R(−ψ) w_ρ = R(−ψ) (w_y, −w_x)``, and Dᵀy has one entry, its ψ row
    ``d · y_ρ`` (``Planar.chart_derivative``)."""
    for i in range(data.shape[0] - 1):
        jt = int(data[i, JTYPE])
        if jt == PLANAR:
            iv = int(data[i, IV])
            c, s = Jb[i, 0], Jb[i, 1]
            u0, u1 = w[iv], w[iv + 1]
            d0, d1 = c * u1 - s * u0, -s * u1 - c * u0
            out[iv + 2] -= d0 * y[iv] + d1 * y[iv + 1]
            continue
        if jt != SPHERICAL and jt != FREE:
            continue
        iv = int(data[i, IV])
        x0, x1, x2 = x[iv], x[iv + 1], x[iv + 2]
        w0, w1, w2 = w[iv], w[iv + 1], w[iv + 2]
        y0, y1, y2 = y[iv], y[iv + 1], y[iv + 2]
        a, b, da, db = so3_coefficients(np.sqrt(x0 * x0 + x1 * x1 + x2 * x2))
        xw0, xw1, xw2 = _cross(x0, x1, x2, w0, w1, w2)
        xxw0, xxw1, xxw2 = _cross(x0, x1, x2, xw0, xw1, xw2)
        c0, c1, c2 = db * xxw0 - da * xw0, db * xxw1 - da * xw1, db * xxw2 - da * xw2
        cy = c0 * y0 + c1 * y1 + c2 * y2
        yw0, yw1, yw2 = _cross(y0, y1, y2, w0, w1, w2)
        yxw0, yxw1, yxw2 = _cross(y0, y1, y2, xw0, xw1, xw2)
        xy0, xy1, xy2 = _cross(x0, x1, x2, y0, y1, y2)
        wxy0, wxy1, wxy2 = _cross(w0, w1, w2, xy0, xy1, xy2)
        out[iv] -= a * yw0 - b * (yxw0 + wxy0) + cy * x0
        out[iv + 1] -= a * yw1 - b * (yxw1 + wxy1) + cy * x1
        out[iv + 2] -= a * yw2 - b * (yxw2 + wxy2) + cy * x2
        if jt == FREE:
            Jbi = Jb[i]
            u0, u1, u2 = w[iv + 3], w[iv + 4], w[iv + 5]
            e0 = Jbi[9] * u0 + Jbi[10] * u1 + Jbi[11] * u2   # exp(φ)ᵀ w_ρ
            e1 = Jbi[12] * u0 + Jbi[13] * u1 + Jbi[14] * u2
            e2 = Jbi[15] * u0 + Jbi[16] * u1 + Jbi[17] * u2
            z0, z1, z2 = _cross(y[iv + 3], y[iv + 4], y[iv + 5], e0, e1, e2)
            for r in range(3):  # J_rᵀ z
                out[iv + r] -= Jbi[r] * z0 + Jbi[3 + r] * z1 + Jbi[6 + r] * z2


@njit(cache=True, _nrt=False, nogil=True)
def chart_end_velocity(data, Jb, x, W):
    """W ← J(x) x, h times the body velocity at φ_n(x) of the chart curve s ↦ φ_n(s x)
    (``ModelChart.end_velocity``): x on additive and ball joints (J_r(x) x = x), a free
    joint's translation ``exp(φ)ᵀ ρ``, a planar joint's ``R(−ψ) ρ`` (Jb of
    :func:`chart_blocks`)."""
    for i in range(data.shape[0] - 1):
        jt, iv = int(data[i, JTYPE]), int(data[i, IV])
        if jt == FREE:
            for k in range(3):
                W[iv + k] = x[iv + k]
            _times3(Jb[i], 9, x, iv + 3, W, iv + 3)
        elif jt == PLANAR:
            _planar_block_times(Jb, i, x, iv, W)
        else:
            for k in range(int(data[i, NVJ])):
                W[iv + k] = x[iv + k]


@njit(cache=True, _nrt=False, nogil=True)
def chart_end_velocity_t_times(data, Jb, x, W, y, out):
    """out ← (∂W/∂x)ᵀ y, W of :func:`chart_end_velocity` (``ModelChart.end_velocity``'s
    ∂W/∂x): y on additive and ball joints; a free joint, whose
    ``∂W/∂x = [1 0; u× J_r  exp(φ)ᵀ]`` with u = exp(φ)ᵀ ρ, ``(y_φ + J_rᵀ (y_ρ × u),
    exp(φ) y_ρ)``; a planar joint, ``∂W/∂x = [R(−ψ) d; 0 1]`` with ``d = ∂(R(−ψ) ρ)/∂ψ
    = R(−ψ) (ρ_y, −ρ_x)``, ``(R(ψ) y_ρ, dᵀ y_ρ + y_ψ)``."""
    for i in range(data.shape[0] - 1):
        jt, iv = int(data[i, JTYPE]), int(data[i, IV])
        if jt == FREE:
            A = Jb[i]
            z0, z1, z2 = _cross(y[iv + 3], y[iv + 4], y[iv + 5], W[iv + 3], W[iv + 4], W[iv + 5])
            for r in range(3):  # y_φ + J_rᵀ z
                out[iv + r] = y[iv + r] + A[r] * z0 + A[3 + r] * z1 + A[6 + r] * z2
            _times3t(A, 9, y, iv + 3, out, iv + 3)  # (exp(φ)ᵀ)ᵀ y_ρ
        elif jt == PLANAR:
            c, s = Jb[i, 0], Jb[i, 1]
            r0, r1, y0, y1 = x[iv], x[iv + 1], y[iv], y[iv + 1]
            d0, d1 = c * r1 - s * r0, -s * r1 - c * r0
            out[iv], out[iv + 1] = c * y0 - s * y1, s * y0 + c * y1
            out[iv + 2] = d0 * y0 + d1 * y1 + y[iv + 2]
        else:
            for k in range(int(data[i, NVJ])):
                out[iv + k] = y[iv + k]


@njit(cache=True, _nrt=False, nogil=True)
def chart_start_sensitivity_t_times(data, Jb, x, y, out):
    """out ← Kᵀ y, K = ∂x/∂q_n at fixed φ_n(x) (``ModelChart.start_sensitivity``): −y on
    additive joints; ``−J_r⁻¹ y`` on a ball joint (K = −J_r⁻ᵀ); a free joint
    (K = [−J_r⁻ᵀ 0; ρ× −1]) ``(−J_r⁻¹ y_φ + y_ρ × ρ, −y_ρ)``; a planar joint
    (dρ = −δv + δψ (ρ_y, −ρ_x), dψ = −δψ) ``(−y_ρ, ρ_y y_0 − ρ_x y_1 − y_ψ)``."""
    for i in range(data.shape[0] - 1):
        jt, iv = int(data[i, JTYPE]), int(data[i, IV])
        if jt == SPHERICAL or jt == FREE:
            A = Jb[i]
            _solve3(A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8], y, iv, out, iv)
            for k in range(3):
                out[iv + k] = -out[iv + k]
            if jt == FREE:
                z0, z1, z2 = _cross(y[iv + 3], y[iv + 4], y[iv + 5],
                                    x[iv + 3], x[iv + 4], x[iv + 5])
                out[iv] += z0
                out[iv + 1] += z1
                out[iv + 2] += z2
                for k in range(3, 6):
                    out[iv + k] = -y[iv + k]
        elif jt == PLANAR:
            y0, y1 = y[iv], y[iv + 1]
            out[iv], out[iv + 1] = -y0, -y1
            out[iv + 2] = x[iv + 1] * y0 - x[iv] * y1 - y[iv + 2]
        else:
            for k in range(int(data[i, NVJ])):
                out[iv + k] = -y[iv + k]


# ------------------------------------------------------------------ one entry point
@njit(cache=True, nogil=True)
def primitives(kind, P, data, q, v, want_f, want_gamma, M, f, g, G, gam, ws):
    """At one state: M(q), f(q, v) (``want_f``), g(q), G(q) and γ(q, v) (``want_gamma``).
    ``ws``: a workspace of :func:`workspace_size` floats (Andrews needs none). Returns 0,
    or the kernel status that refused the state."""
    if kind == KIND_ANDREWS:
        andrews_mass(P, q, M)
        if want_f:
            andrews_force(P, q, v, f)
        andrews_constraints(P, q, v, want_gamma, g, G, gam)
        return 0
    nb = data.shape[0] - 1
    _, _, _, _, X, w, Pc, F, A, _, _ = _carve(ws, nb, M.shape[0])
    st = crba_core(data, q, M, X, Pc, F, A)  # (with the armature)
    if want_f and st == 0:
        st = rnea_core(data, q, v, v, data, True, False, False, f, X, w)  # h(q, v); f = −h
        for i in range(f.shape[0]):
            f[i] = -f[i]
    if st == 0:
        st = loop_rows_kernel(data, P, q, v, want_gamma, g, G, gam, ws)
    return st


@njit(cache=True, nogil=True)
def residuals_batch(kind, P, data, Q, V, A, res_g, res_Gv, res_acc):
    """The three levels at each state k (rows of Q, V, A = v̇): ``g``, ``G v`` and
    ``G v̇ − γ`` (:meth:`~kanedyn.constraints.system.ConstrainedMechanics.residuals`).
    Returns 0, or the first kernel status that refused a state."""
    nv = V.shape[1]
    nc = res_g.shape[1]
    M = np.empty((nv, nv))
    f = np.empty(nv)
    G = np.empty((nc, nv))
    gam = np.empty(nc)
    ws = np.empty(workspace_size(data, nv))
    for k in range(Q.shape[0]):
        st = primitives(kind, P, data, Q[k], V[k], False, True, M, f, res_g[k], G, gam, ws)
        if st:
            return st
        for r in range(nc):
            Gv = 0.0
            Ga = 0.0
            for j in range(nv):
                Gv += G[r, j] * V[k, j]
                Ga += G[r, j] * A[k, j]
            res_Gv[k, r] = Gv
            res_acc[k, r] = Ga - gam[r]
    return 0


@njit(cache=True, nogil=True)
def loop_rows_batch(data, L, Q, V, use_v, g, G, gam):
    """:func:`loop_rows_kernel` at each state k (rows of Q, V) into g[k], G[k], gam[k].
    Returns 0, or the first kernel status that refused a state."""
    ws = np.empty(workspace_size(data, G.shape[2]))
    for k in range(Q.shape[0]):
        st = loop_rows_kernel(data, L, Q[k], V[k], use_v, g[k], G[k], gam[k], ws)
        if st:
            return st
    return 0
