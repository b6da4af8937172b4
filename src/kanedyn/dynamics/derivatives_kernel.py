"""The tangent pass of :mod:`.derivatives` compiled (numba), on the flat array of a Model.

Same recursion, line for line, as :func:`kanedyn.dynamics.derivatives._rnea_tangent`
and :func:`~kanedyn.dynamics.derivatives.kinetic_energy_gradient_derivative` (the
readable definitions it is tested against); the spatial operators are 6x6 matrices
built in place and multiplied by explicit loops (no allocation per body, no BLAS
call on tiny matrices). It reads the one flat array of :mod:`.flat` (columns in
:mod:`.layout`): the joint transforms and motion subspaces come from
:mod:`.kernels`, the 6x6 inertias from their 10 parameters, once per call.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from . import _compiled, kernels
from .layout import GRAV, IBAR, IV, MASS, NVJ, PARENT
from .layout import H as H_COLUMN  # (H is the subtree momentum below)

_compiled.key_cache(__name__)


@nb.njit(cache=True, nogil=True)
def _skew_into(w, o, M, r, c, sign):
    """M[r:r+3, c:c+3] = sign * skew(w[o:o+3])."""
    M[r, c] = 0.0
    M[r, c + 1] = -sign * w[o + 2]
    M[r, c + 2] = sign * w[o + 1]
    M[r + 1, c] = sign * w[o + 2]
    M[r + 1, c + 1] = 0.0
    M[r + 1, c + 2] = -sign * w[o]
    M[r + 2, c] = -sign * w[o + 1]
    M[r + 2, c + 1] = sign * w[o]
    M[r + 2, c + 2] = 0.0


@nb.njit(cache=True, nogil=True)
def _crm(x, C):
    """crm(x) = [ω× 0; v× ω×]."""
    C[:, :] = 0.0
    _skew_into(x, 0, C, 0, 0, 1.0)
    _skew_into(x, 0, C, 3, 3, 1.0)
    _skew_into(x, 3, C, 3, 0, 1.0)


@nb.njit(cache=True, nogil=True)
def _crf(x, C):
    """crf(x) = −crm(x)ᵀ = [ω× v×; 0 ω×]."""
    C[:, :] = 0.0
    _skew_into(x, 0, C, 0, 0, 1.0)
    _skew_into(x, 0, C, 3, 3, 1.0)
    _skew_into(x, 3, C, 0, 3, 1.0)


@nb.njit(cache=True, nogil=True)
def _crf_bar(b, C):
    """C with crf(a) b = C a, b = [n; f]: [−n× −f×; −f× 0]."""
    C[:, :] = 0.0
    _skew_into(b, 0, C, 0, 0, -1.0)
    _skew_into(b, 3, C, 0, 3, -1.0)
    _skew_into(b, 3, C, 3, 0, -1.0)


@nb.njit(cache=True, nogil=True)
def _mv(A, x, out):
    for r in range(6):
        s = 0.0
        for k in range(6):
            s += A[r, k] * x[k]
        out[r] = s


@nb.njit(cache=True, nogil=True)
def _mtv(A, x, out):
    for r in range(6):
        s = 0.0
        for k in range(6):
            s += A[k, r] * x[k]
        out[r] = s


@nb.njit(cache=True, nogil=True)
def _mm_add(A, B, out, sign):
    """out (6 x m) += sign * A (6x6) @ B (6 x m)."""
    for r in range(6):
        for c in range(B.shape[1]):
            s = 0.0
            for k in range(6):
                s += A[r, k] * B[k, c]
            out[r, c] += sign * s


@nb.njit(cache=True, nogil=True)
def _mtm_add(A, B, out):
    """out (6 x m) += Aᵀ @ B."""
    for r in range(6):
        for c in range(B.shape[1]):
            s = 0.0
            for k in range(6):
                s += A[k, r] * B[k, c]
            out[r, c] += s


@nb.njit(cache=True, nogil=True)
def _cols_add(A, S, nvj, out, c0):
    """out[:, c0:c0+nvj] += A @ S[:, :nvj]."""
    for r in range(6):
        for c in range(nvj):
            s = 0.0
            for k in range(6):
                s += A[r, k] * S[k, c]
            out[r, c0 + c] += s


@nb.njit(cache=True, nogil=True)
def _body_arrays(data, q, X, S, I):
    """X[i] = i_X_parent(i) = [E 0; −E r× E] from X_up = (E, r) of
    :func:`kernels.joint_transform`; S[i, :, :nvj] the motion subspace; I[i] the spatial
    inertia ``[Ī, h×; h×ᵀ, m 1]``. 0, or ``i + 1`` if the quaternion of body i is not unit."""
    nb_ = data.shape[0] - 1
    Xr = np.empty((nb_, 12))
    Sc = np.empty((1, 6))
    for i in range(nb_):
        if kernels.joint_transform(data, i, q, Xr):
            return i + 1
        X[i, :, :] = 0.0
        for a in range(3):
            for c in range(3):
                X[i, a, c] = Xr[i, 3 * a + c]
                X[i, a + 3, c + 3] = Xr[i, 3 * a + c]
        # lower-left block −E r×
        r0, r1, r2 = Xr[i, 9], Xr[i, 10], Xr[i, 11]
        for a in range(3):
            e0, e1, e2 = Xr[i, 3 * a], Xr[i, 3 * a + 1], Xr[i, 3 * a + 2]
            X[i, a + 3, 0] = -(e1 * r2 - e2 * r1)
            X[i, a + 3, 1] = -(e2 * r0 - e0 * r2)
            X[i, a + 3, 2] = -(e0 * r1 - e1 * r0)
        S[i, :, :] = 0.0
        for c in range(int(data[i, NVJ])):
            kernels.motion_subspace_column(data, i, c, Sc, 0)
            for r in range(6):
                S[i, r, c] = Sc[0, r]
        m = data[i, MASS]
        h0, h1, h2 = data[i, H_COLUMN], data[i, H_COLUMN + 1], data[i, H_COLUMN + 2]
        I[i, :, :] = 0.0
        for a in range(3):
            for c in range(3):
                I[i, a, c] = data[i, IBAR + 3 * a + c]
            I[i, 3 + a, 3 + a] = m
        # upper right h×, lower left h×ᵀ = −h×
        I[i, 0, 4], I[i, 0, 5] = -h2, h1
        I[i, 1, 3], I[i, 1, 5] = h2, -h0
        I[i, 2, 3], I[i, 2, 4] = -h1, h0
        I[i, 4, 0], I[i, 5, 0] = -h2, h1
        I[i, 3, 1], I[i, 5, 1] = h2, -h0
        I[i, 3, 2], I[i, 4, 2] = -h1, h0
    return 0


@nb.njit(cache=True, nogil=True)
def rnea_tangent(data, gravity, q, v, a, dq, dv):
    """dq ← ∂τ/∂q (tangent chart), dv ← ∂τ/∂v of RNEA(q, v, a), with the model's gravity
    if ``gravity``, else none. 0, or ``i + 1`` if the quaternion of body i is not unit."""
    nb_ = data.shape[0] - 1
    nv = v.shape[0]
    X = np.empty((nb_, 6, 6))
    S = np.empty((nb_, 6, 6))
    inertia = np.empty((nb_, 6, 6))
    st = _body_arrays(data, q, X, S, inertia)
    if st:
        return st
    vel = np.zeros((nb_, 6))
    acc = np.zeros((nb_, 6))
    f = np.zeros((nb_, 6))
    Dvq = np.zeros((nb_, 6, nv))
    Dvv = np.zeros((nb_, 6, nv))
    Daq = np.zeros((nb_, 6, nv))
    Dav = np.zeros((nb_, 6, nv))
    Dfq = np.zeros((nb_, 6, nv))
    Dfv = np.zeros((nb_, 6, nv))
    vp = np.empty(6)
    ap = np.empty(6)
    vJ = np.empty(6)
    h = np.empty(6)
    t6 = np.empty(6)
    C = np.empty((6, 6))
    G = np.empty((6, 6))
    ng = np.zeros(6)  # −a_grav = −[0; g]
    if gravity:
        for k in range(3):
            ng[3 + k] = -data[nb_, GRAV + k]
    for i in range(nb_):
        p = int(data[i, PARENT])
        c0, nj = int(data[i, IV]), int(data[i, NVJ])
        Si = S[i]
        Xi = X[i]
        for r in range(6):
            s = 0.0
            for c in range(nj):
                s += Si[r, c] * v[c0 + c]
            vJ[r] = s
        if p < 0:
            vp[:] = 0.0
            _mv(Xi, ng, ap)
        else:
            _mv(Xi, vel[p], vp)
            _mv(Xi, acc[p], ap)
            _mm_add(Xi, Dvq[p], Dvq[i], 1.0)
            _mm_add(Xi, Dvv[p], Dvv[i], 1.0)
            _mm_add(Xi, Daq[p], Daq[i], 1.0)
            _mm_add(Xi, Dav[p], Dav[i], 1.0)
        for r in range(6):
            vel[i, r] = vp[r] + vJ[r]
        # acc = ap + S a + crm(vel) vJ
        _crm(vel[i], C)
        _mv(C, vJ, t6)
        for r in range(6):
            s = ap[r] + t6[r]
            for c in range(nj):
                s += Si[r, c] * a[c0 + c]
            acc[i, r] = s
        _crm(vp, C)
        _cols_add(C, Si, nj, Dvq[i], c0)
        for r in range(6):
            for c in range(nj):
                Dvv[i, r, c0 + c] += Si[r, c]
        _crm(ap, C)
        _cols_add(C, Si, nj, Daq[i], c0)
        _crm(vJ, C)
        _mm_add(C, Dvq[i], Daq[i], -1.0)
        _mm_add(C, Dvv[i], Dav[i], -1.0)
        _crm(vel[i], C)
        _cols_add(C, Si, nj, Dav[i], c0)
        I = inertia[i]
        _mv(I, vel[i], h)
        _crf(vel[i], C)
        _mv(C, h, t6)
        _mv(I, acc[i], f[i])
        for r in range(6):
            f[i, r] += t6[r]
        # G = crf̄(h) + crf(v) I
        _crf_bar(h, G)
        for r in range(6):
            for c in range(6):
                s = 0.0
                for k in range(6):
                    s += C[r, k] * I[k, c]
                G[r, c] += s
        _mm_add(I, Daq[i], Dfq[i], 1.0)
        _mm_add(G, Dvq[i], Dfq[i], 1.0)
        _mm_add(I, Dav[i], Dfv[i], 1.0)
        _mm_add(G, Dvv[i], Dfv[i], 1.0)
    for i in range(nb_ - 1, -1, -1):
        p = int(data[i, PARENT])
        c0, nj = int(data[i, IV]), int(data[i, NVJ])
        Si = S[i]
        for c in range(nj):
            for col in range(nv):
                s1 = 0.0
                s2 = 0.0
                for k in range(6):
                    s1 += Si[k, c] * Dfq[i, k, col]
                    s2 += Si[k, c] * Dfv[i, k, col]
                dq[c0 + c, col] = s1
                dv[c0 + c, col] = s2
        if p >= 0:
            _crf_bar(f[i], C)
            _cols_add(C, Si, nj, Dfq[i], c0)
            _mtv(X[i], f[i], t6)
            for r in range(6):
                f[p, r] += t6[r]
            _mtm_add(X[i], Dfq[i], Dfq[p])
            _mtm_add(X[i], Dfv[i], Dfv[p])
    return 0


@nb.njit(cache=True, nogil=True)
def rnea_tangent_static(data, gravity, q, a, dq):
    """dq ← ∂/∂q [M(q) a + g(q)] (tangent chart), g the model's gravity if ``gravity``,
    else none: :func:`rnea_tangent` at v = 0 without its ∂τ/∂v. With v = 0 every velocity
    term of RNEA vanishes, so one pass carries only ∂a_i/∂q and ∂f_i/∂q — a third of the
    work. In the Newton matrices of the implicit loops: B = ∂(M v)/∂q is this with a = v and
    no gravity, ∂g/∂q this with a = 0 and gravity. 0, or ``i + 1`` if the quaternion of
    body i is not unit.

    Forward, for body i with parent p: a_i = X_i a_p + S_i a_(i) (a_root = −a_grav),
    ∂a_i/∂q = X_i ∂a_p/∂q + crm(X_i a_p) S_i on joint i's columns (∂X_i/∂q_i = −crm(S_i) X_i),
    f_i = I_i a_i. Backward: τ_i = S_iᵀ f_i, f_p += X_iᵀ f_i, ∂f_p/∂q += X_iᵀ (∂f_i/∂q +
    crf̄(f_i) S_i on joint i's columns) (Featherstone 2008, Table 5.1, differentiated)."""
    nb_ = data.shape[0] - 1
    nv = a.shape[0]
    X = np.empty((nb_, 6, 6))
    S = np.empty((nb_, 6, 6))
    inertia = np.empty((nb_, 6, 6))
    st = _body_arrays(data, q, X, S, inertia)
    if st:
        return st
    acc = np.zeros((nb_, 6))
    f = np.zeros((nb_, 6))
    Daq = np.zeros((nb_, 6, nv))
    Dfq = np.zeros((nb_, 6, nv))
    ap = np.empty(6)
    t6 = np.empty(6)
    C = np.empty((6, 6))
    ng = np.zeros(6)  # −a_grav = −[0; g]
    if gravity:
        for k in range(3):
            ng[3 + k] = -data[nb_, GRAV + k]
    for i in range(nb_):
        p = int(data[i, PARENT])
        c0, nj = int(data[i, IV]), int(data[i, NVJ])
        Si = S[i]
        if p < 0:
            _mv(X[i], ng, ap)
        else:
            _mv(X[i], acc[p], ap)
            _mm_add(X[i], Daq[p], Daq[i], 1.0)
        for r in range(6):
            s = ap[r]
            for c in range(nj):
                s += Si[r, c] * a[c0 + c]
            acc[i, r] = s
        _crm(ap, C)
        _cols_add(C, Si, nj, Daq[i], c0)
        _mv(inertia[i], acc[i], f[i])
        _mm_add(inertia[i], Daq[i], Dfq[i], 1.0)
    for i in range(nb_ - 1, -1, -1):
        p = int(data[i, PARENT])
        c0, nj = int(data[i, IV]), int(data[i, NVJ])
        Si = S[i]
        for c in range(nj):
            for col in range(nv):
                s1 = 0.0
                for k in range(6):
                    s1 += Si[k, c] * Dfq[i, k, col]
                dq[c0 + c, col] = s1
        if p >= 0:
            _crf_bar(f[i], C)
            _cols_add(C, Si, nj, Dfq[i], c0)
            _mtv(X[i], f[i], t6)
            for r in range(6):
                f[p, r] += t6[r]
            _mtm_add(X[i], Dfq[i], Dfq[p])
    return 0


@nb.njit(cache=True, nogil=True)
def kinetic_tangent(data, q, v, D):
    """D ← ∂/∂q (∂T/∂q) at fixed v, both in the tangent chart. 0, or ``i + 1`` if the
    quaternion of body i is not unit."""
    nb_ = data.shape[0] - 1
    nv = v.shape[0]
    X = np.empty((nb_, 6, 6))
    S = np.empty((nb_, 6, 6))
    inertia = np.empty((nb_, 6, 6))
    st = _body_arrays(data, q, X, S, inertia)
    if st:
        return st
    V = np.zeros((nb_, 6))
    Vp = np.zeros((nb_, 6))
    H = np.zeros((nb_, 6))
    DV = np.zeros((nb_, 6, nv))
    DH = np.zeros((nb_, 6, nv))
    C = np.empty((6, 6))
    t6 = np.empty(6)
    for i in range(nb_):
        p = int(data[i, PARENT])
        c0, nj = int(data[i, IV]), int(data[i, NVJ])
        if p >= 0:
            _mv(X[i], V[p], Vp[i])
            _mm_add(X[i], DV[p], DV[i], 1.0)
            _crm(Vp[i], C)
            _cols_add(C, S[i], nj, DV[i], c0)
        for r in range(6):
            s = Vp[i, r]
            for c in range(nj):
                s += S[i, r, c] * v[c0 + c]
            V[i, r] = s
        _mv(inertia[i], V[i], H[i])
        _mm_add(inertia[i], DV[i], DH[i], 1.0)
    B = np.zeros((6, nv))
    for i in range(nb_ - 1, -1, -1):
        p = int(data[i, PARENT])
        c0, nj = int(data[i, IV]), int(data[i, NVJ])
        B[:, :] = 0.0
        _crf_bar(H[i], C)
        _mm_add(C, DV[i], B, 1.0)  # DV[i] = δ(v_λ in i's coordinates): v_J is fixed
        _crf(Vp[i], C)
        _mm_add(C, DH[i], B, 1.0)
        for c in range(nj):
            for col in range(nv):
                s = 0.0
                for k in range(6):
                    s += S[i, k, c] * B[k, col]
                D[c0 + c, col] = -s
        if p >= 0:
            _crf_bar(H[i], C)
            _cols_add(C, S[i], nj, DH[i], c0)
            _mtv(X[i], H[i], t6)
            for r in range(6):
                H[p, r] += t6[r]
            _mtm_add(X[i], DH[i], DH[p])
    return 0
