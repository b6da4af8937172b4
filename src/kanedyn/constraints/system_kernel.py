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
form (``compiled_form()`` is None); the Python path takes them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..dynamics import _compiled
from ..dynamics.kernels.crba import crba_into
from ..dynamics.kernels.joint_rows import (
    joint_transform,
    motion_subspace_column,
    motion_subspace_times,
)
from ..dynamics.kernels.kinematics import kinematics_into
from ..dynamics.kernels.rnea import rnea_into
from ..dynamics.kernels.spatial_rows import x_motion
from ..dynamics.layout import IV, NVJ, PARENT

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
@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
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
@njit(cache=True)
def bias_accelerations(data, q, v, vel, acc):
    """``acc[i]`` = spatial acceleration of body i at v̇ = 0 without gravity (body
    coordinates): ``a_i = X_up a_p + crm(v_i) S v_i``; ``vel`` from kinematics_into."""
    nb = data.shape[0] - 1
    X = np.empty((nb, 12))
    vJ = np.empty((1, 6))
    for i in range(nb):
        joint_transform(data, i, q, X)
        motion_subspace_times(data, i, v, vJ, 0)
        w0, w1, w2, u0, u1, u2 = vel[i, 0], vel[i, 1], vel[i, 2], vel[i, 3], vel[i, 4], vel[i, 5]
        m0, m1, m2, n0, n1, n2 = vJ[0, 0], vJ[0, 1], vJ[0, 2], vJ[0, 3], vJ[0, 4], vJ[0, 5]
        # crm(v) m = [ω × m_ω; ω × m_v + v_O × m_ω]
        c0, c1, c2 = w1 * m2 - w2 * m1, w2 * m0 - w0 * m2, w0 * m1 - w1 * m0
        c3 = w1 * n2 - w2 * n1 + u1 * m2 - u2 * m1
        c4 = w2 * n0 - w0 * n2 + u2 * m0 - u0 * m2
        c5 = w0 * n1 - w1 * n0 + u0 * m1 - u1 * m0
        par = int(data[i, PARENT])
        if par >= 0:
            x_motion(X, i, acc, par, acc, i)
            acc[i, 0] += c0
            acc[i, 1] += c1
            acc[i, 2] += c2
            acc[i, 3] += c3
            acc[i, 4] += c4
            acc[i, 5] += c5
        else:
            acc[i, 0], acc[i, 1], acc[i, 2], acc[i, 3], acc[i, 4], acc[i, 5] = \
                c0, c1, c2, c3, c4, c5


@njit(cache=True)
def side_kinematics(data, body, c, R, p, vel, acc, use_v, x, Jp, Jw, ab, wab):
    """One side of a closure: the world point x of body point c, its Jacobian Jp
    (3 × nv), the angular Jacobian Jw, and with ``use_v`` its bias acceleration ``ab`` and
    the body's world ω and bias ω̇ (``wab[0]``, ``wab[1]``). body < 0: the world."""
    nv = Jp.shape[1]
    for a in range(3):
        for j in range(nv):
            Jp[a, j] = 0.0
            Jw[a, j] = 0.0
        ab[a] = 0.0
        wab[0, a] = 0.0
        wab[1, a] = 0.0
    if body < 0:
        for a in range(3):
            x[a] = c[a]
        return
    for a in range(3):
        x[a] = p[body, a] + R[body, a, 0] * c[0] + R[body, a, 1] * c[1] + R[body, a, 2] * c[2]
    col = np.empty((1, 6))
    j = body
    while j >= 0:  # the motion columns of the supporting joints, in world coordinates
        o = int(data[j, IV])
        for k in range(int(data[j, NVJ])):
            motion_subspace_column(data, j, k, col, 0)
            w = R[j] @ col[0, :3]
            u = R[j] @ col[0, 3:]
            # velocity of the point x moving with the column: u + p_j × w + w × x
            #   = u + w × (x − p_j)
            d0, d1, d2 = x[0] - p[j, 0], x[1] - p[j, 1], x[2] - p[j, 2]
            Jp[0, o + k] = u[0] + w[1] * d2 - w[2] * d1
            Jp[1, o + k] = u[1] + w[2] * d0 - w[0] * d2
            Jp[2, o + k] = u[2] + w[0] * d1 - w[1] * d0
            Jw[0, o + k], Jw[1, o + k], Jw[2, o + k] = w[0], w[1], w[2]
        j = int(data[j, PARENT])
    if use_v:
        w, vO = vel[body, :3], vel[body, 3:]
        wd, aO = acc[body, :3], acc[body, 3:]
        a_body = aO + np.cross(w, vO) + np.cross(wd, c) + np.cross(w, np.cross(w, c))
        ab[:] = R[body] @ a_body
        wab[0, :] = R[body] @ w
        wab[1, :] = R[body] @ wd


@njit(cache=True)
def loop_rows_kernel(data, L, q, v, use_v, g, G, gam):
    """g, G (rows of C) and, with ``use_v``, γ of the loop closures packed in L
    (:func:`pack_loops`); the compiled :func:`~kanedyn.constraints.loops.loop_rows`.
    Returns the kinematics kernel's status (0 ok)."""
    nb = data.shape[0] - 1
    nv = G.shape[1]
    R = np.empty((nb, 3, 3))
    p = np.empty((nb, 3))
    vel = np.empty((nb, 6))
    acc = np.empty((nb, 6))
    st = kinematics_into(data, q, v, use_v, R, p, vel)
    if st:
        return st
    if use_v:
        bias_accelerations(data, q, v, vel, acc)
    xa, xb, aa, abb = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    Jpa, Jpb = np.empty((3, nv)), np.empty((3, nv))
    Jwa, Jwb = np.empty((3, nv)), np.empty((3, nv))
    wa, wb = np.empty((2, 3)), np.empty((2, 3))
    FA, FB = np.empty((3, 3)), np.empty((3, 3))
    row = 0
    for k in range(int(L[0])):
        o = 1 + _LOOP * k
        ia, ib, kind, nax = int(L[o]), int(L[o + 1]), int(L[o + 2]), int(L[o + 3])
        Ra, pa = L[o + 7:o + 16].reshape((3, 3)), L[o + 16:o + 19]
        Rb, pb = L[o + 19:o + 28].reshape((3, 3)), L[o + 28:o + 31]
        side_kinematics(data, ia, pa, R, p, vel, acc, use_v, xa, Jpa, Jwa, aa, wa)
        side_kinematics(data, ib, pb, R, p, vel, acc, use_v, xb, Jpb, Jwb, abb, wb)
        for m in range(nax):
            a = int(L[o + 4 + m])
            g[row] = xb[a] - xa[a]
            for j in range(nv):
                G[row, j] = Jpb[a, j] - Jpa[a, j]
            if use_v:
                gam[row] = -(abb[a] - aa[a])
            row += 1
        if kind == 0:
            continue
        RA = np.eye(3) if ia < 0 else R[ia]
        RB = np.eye(3) if ib < 0 else R[ib]
        FA[:, :] = RA @ Ra
        FB[:, :] = RB @ Rb
        for m in range(2 if kind == 1 else 3):
            # the pairs of loops._ROT_PAIRS: revolute (0,2),(1,2); weld (1,2),(2,0),(0,1)
            if kind == 1:
                i, jj = m, 2
            else:
                i, jj = (m + 1) % 3, (m + 2) % 3
            u, w = FA[:, i].copy(), FB[:, jj].copy()
            n = np.cross(w, u)
            g[row] = u @ w
            for j in range(nv):
                G[row, j] = (n[0] * (Jwb[0, j] - Jwa[0, j]) + n[1] * (Jwb[1, j] - Jwa[1, j])
                             + n[2] * (Jwb[2, j] - Jwa[2, j]))
            if use_v:
                ud, wd = np.cross(wa[0], u), np.cross(wb[0], w)
                dw, dwd = wb[0] - wa[0], wb[1] - wa[1]
                gam[row] = -((np.cross(wd, u) + np.cross(w, ud)) @ dw + n @ dwd)
            row += 1
    return 0


# ------------------------------------------------------------------ one entry point
@njit(cache=True)
def primitives(kind, P, data, q, v, want_f, want_gamma, M, f, g, G, gam):
    """At one state: M(q), f(q, v) (``want_f``), g(q), G(q) and γ(q, v) (``want_gamma``).
    Returns 0, or the kernel status that refused the state."""
    if kind == KIND_ANDREWS:
        andrews_mass(P, q, M)
        if want_f:
            andrews_force(P, q, v, f)
        andrews_constraints(P, q, v, want_gamma, g, G, gam)
        return 0
    st = crba_into(data, q, M)
    if want_f and st == 0:
        st = rnea_into(data, q, v, v, data, True, False, False, f)  # h(q, v); f = −h
        for i in range(f.shape[0]):
            f[i] = -f[i]
    if st == 0:
        st = loop_rows_kernel(data, P, q, v, want_gamma, g, G, gam)
    return st


@njit(cache=True)
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
    for k in range(Q.shape[0]):
        st = primitives(kind, P, data, Q[k], V[k], False, True, M, f, res_g[k], G, gam)
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
