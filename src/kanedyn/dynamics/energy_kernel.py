"""Energy, momentum and ∂T/∂q of a Model in one O(n) pass (numba), for the integrators.

Discrete-gradient and projection methods evaluate T, V and ``∂T/∂q`` many
times per step; the public ``kd.kinetic_energy`` / ``kd.potential_energy`` are
the readable (and independent) definitions, tested against this kernel. It reads
the one flat array of :mod:`.flat` (columns in :mod:`.layout`) and takes the joint
transforms and motion subspaces of :mod:`.kernels`.

Everything is computed in world coordinates, where the subtree sums need no
transforms. For body i with world pose (R_i, p_i), its spatial velocity about
the world origin is ``V_i = V_λ(i) + Σ_e σ_e v_e`` with σ_e the joint's motion
axes mapped to the world; ``h_i = X_i* I_i X_i⁻¹ V_i`` its momentum and
``H_k = Σ_{i ∈ subtree(k)} h_i``. Then (derivation in
:meth:`ModelSystem.kinetic_energy_gradient`)

    T = ½ Σ_i V_iᵀ h_i,   V = −Σ_i m_i gᵀ c_i,   ∂T/∂ξ_{k,e} = −σ_eᵀ crf(V_λ(k)) H_k,
    ∂V/∂ξ_{k,e} = −m_k gᵀσ_{v,e} − σ_{ω,e}·(mc_k × g),   [L; P] = Σ_roots H,

with m_k and mc_k = Σ m_i c_i the mass and first moment of k's subtree (a
point x of the subtree moves with σ_v + σ_ω × x when joint k moves along σ).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from . import _compiled, kernels
from .layout import ARMATURE, GRAV, IBAR, IV, MASS, NVJ, PARENT, H

_compiled.key_cache(__name__)


@nb.njit(cache=True, nogil=True)
def add_rotor_energy(data, v, out):
    """``out[0] += ½ Σ armature v²``: the rotors' kinetic energy (armature, a joint's rotor
    inertia, acts on its own speeds only: T gains this, ∂T/∂q and the momentum nothing)."""
    for i in range(data.shape[0] - 1):
        arm = data[i, ARMATURE]
        if arm != 0.0:
            o = int(data[i, IV])
            for c in range(int(data[i, NVJ])):
                out[0] += 0.5 * arm * v[o + c] * v[o + c]


@nb.njit(cache=True, nogil=True)
def energy_terms(data, q, v, dT, dV, out):
    """``out = [T, V, L (3), P (3)]`` with the rotors' energy in T, ``dT ← ∂T/∂q``,
    ``dV ← ∂V/∂q = g(q)`` (tangent space): what :class:`~kanedyn.ModelSystem` asks for.
    Returns the status of :func:`energy_pass` (``i + 1``: the quaternion of body i is not
    unit)."""
    s = energy_pass(data, q, v, dT, dV, out)
    add_rotor_energy(data, v, out)
    return s


@nb.njit(cache=True, nogil=True)
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@nb.njit(cache=True, nogil=True)
def energy_workspace(n):
    """The scratch arrays of :func:`energy_pass_into` for n bodies: a loop calling the pass
    many times (the compiled discrete gradients) allocates them once."""
    return (np.empty((n, 6)), np.empty((n, 6)), np.empty(n), np.empty((n, 3)),
            np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 6)), np.empty((n, 6, 6)),
            np.empty((6, 6)))


@nb.njit(cache=True, nogil=True)
def energy_pass(data, q, v, dT, dV, out):
    """``out[:8] = [T, V, L, P]`` of the bodies (no rotors), ``dT ← ∂T/∂q``, ``dV ← ∂V/∂q``;
    0, or ``i + 1`` if the quaternion of body i is not of unit norm (out is then not set).
    The body poses (R_i, p_i) are those of :func:`kernels.kinematics_into`."""
    return energy_pass_into(data, q, v, dT, dV, out, *energy_workspace(data.shape[0] - 1))


@nb.njit(cache=True, nogil=True)
def energy_pass_into(data, q, v, dT, dV, out, Vw, Vp, msub, mcsub, R, P, Hm, sig, small):
    """:func:`energy_pass` in the workspace of :func:`energy_workspace` (every entry is
    written before it is read): the body poses of q, then :func:`energy_pass_posed`."""
    st = kernels.kinematics_into(data, q, v, False, R, P, Vp)  # (no velocities: Vp unused)
    if st:
        return st
    return energy_pass_posed(data, v, dT, dV, out, Vw, Vp, msub, mcsub, R, P, Hm, sig, small)


@nb.njit(cache=True, nogil=True)
def poses_from_transforms(X0, R, P):
    """R[i], P[i] (body axes and origin in the world, as :func:`kernels.kinematics_into`
    gives them) from the world-to-body transforms X0[i] = (E, r) that the articulated-body
    pass leaves (E row-major): R_i = E_iᵀ, P_i = r_i."""
    for i in range(X0.shape[0]):
        for a in range(3):
            for c in range(3):
                R[i, a, c] = X0[i, 3 * c + a]
            P[i, a] = X0[i, 9 + a]


@nb.njit(cache=True, nogil=True)
def energy_pass_posed(data, v, dT, dV, out, Vw, Vp, msub, mcsub, R, P, Hm, sig, small):
    """:func:`energy_pass_into` with the body poses R, P already given (by
    :func:`kernels.kinematics_into` or :func:`poses_from_transforms`): the velocities,
    momenta, T, V and the backward pass for ∂T/∂q, ∂V/∂q. Returns 0."""
    n = data.shape[0] - 1
    g = data[n, GRAV:GRAV + 3]
    # Vw, Vp: world spatial velocities of each body and its parent; msub, mcsub: subtree
    # mass and first moment Σ m c (world), for ∂V/∂q; R, P: body axes and origins in the
    # world; Hm: world momenta (then subtree sums); sig: world motion axes
    Sc = small[0:1, :]
    tmp = small[1, :3]
    tmp2 = small[2, :3]
    wc = small[3, :3]
    vc = small[4, :3]
    hc = small[5, :]
    T = 0.0
    Vpot = 0.0
    for i in range(n):
        p = int(data[i, PARENT])
        for a in range(6):
            Vp[i, a] = Vw[p, a] if p >= 0 else 0.0
        # world motion axes σ_e = [R s_ω; R s_v + p × R s_ω], and V_i = V_λ + Σ σ_e v_e
        for a in range(6):
            Vw[i, a] = Vp[i, a]
        o = int(data[i, IV])
        nvj = int(data[i, NVJ])
        for e in range(nvj):
            kernels.motion_subspace_column(data, i, e, Sc, 0)
            for a in range(3):
                s_w = 0.0
                s_v = 0.0
                for c in range(3):
                    s_w += R[i, a, c] * Sc[0, c]
                    s_v += R[i, a, c] * Sc[0, 3 + c]
                sig[i, a, e] = s_w
                tmp2[a] = s_v
            for a in range(3):
                wc[a] = sig[i, a, e]
            _cross(P[i], wc, tmp)
            for a in range(3):
                sig[i, 3 + a, e] = tmp2[a] + tmp[a]
            ve = v[o + e]
            for a in range(6):
                Vw[i, a] += sig[i, a, e] * ve
        # body-coordinate velocity hc = [ω; v] (about the body origin)
        for a in range(3):
            wc[a] = Vw[i, a]
        _cross(P[i], wc, tmp)  # p × ω
        for a in range(3):
            tmp2[a] = Vw[i, 3 + a] - tmp[a]  # velocity of the point p, world axes
        for a in range(3):
            s_w = 0.0
            s_v = 0.0
            for c in range(3):
                s_w += R[i, c, a] * Vw[i, c]
                s_v += R[i, c, a] * tmp2[c]
            hc[a] = s_w
            hc[3 + a] = s_v
        # body momentum I hc = [Ī ω + h × v; m v − h × ω] (I from its 10 parameters)
        m = data[i, MASS]
        h0, h1, h2 = data[i, H], data[i, H + 1], data[i, H + 2]
        w0, w1, w2, u0, u1, u2 = hc[0], hc[1], hc[2], hc[3], hc[4], hc[5]
        for a in range(3):
            wc[a] = (data[i, IBAR + 3 * a] * w0 + data[i, IBAR + 3 * a + 1] * w1
                     + data[i, IBAR + 3 * a + 2] * w2)
        wc[0] += h1 * u2 - h2 * u1
        wc[1] += h2 * u0 - h0 * u2
        wc[2] += h0 * u1 - h1 * u0
        vc[0] = m * u0 - (h1 * w2 - h2 * w1)
        vc[1] = m * u1 - (h2 * w0 - h0 * w2)
        vc[2] = m * u2 - (h0 * w1 - h1 * w0)
        T += 0.5 * (wc[0] * w0 + wc[1] * w1 + wc[2] * w2 + vc[0] * u0 + vc[1] * u1
                    + vc[2] * u2)
        # world momentum: f = R f_c, n_O = R n_c + p × f
        for a in range(3):
            s_w = 0.0
            s_v = 0.0
            for c in range(3):
                s_w += R[i, a, c] * wc[c]
                s_v += R[i, a, c] * vc[c]
            Hm[i, a] = s_w
            Hm[i, 3 + a] = s_v
        for a in range(3):
            tmp2[a] = Hm[i, 3 + a]
        _cross(P[i], tmp2, tmp)
        for a in range(3):
            Hm[i, a] += tmp[a]
        # potential: −gᵀ m c_world, m c_world = m p + R h
        for a in range(3):
            mc = m * P[i, a] + R[i, a, 0] * h0 + R[i, a, 1] * h1 + R[i, a, 2] * h2
            Vpot -= g[a] * mc
            mcsub[i, a] = mc
        msub[i] = m
    for a in range(6):
        out[2 + a] = 0.0
    for i in range(n - 1, -1, -1):
        # dT_e = −σ_eᵀ crf(V_λ) H, crf([ω; v]) [n; f] = [ω×n + v×f; ω×f]
        for a in range(3):
            wc[a] = Vp[i, a]
            vc[a] = Vp[i, 3 + a]
        for a in range(3):
            tmp2[a] = Hm[i, a]
        _cross(wc, tmp2, tmp)
        fn0, fn1, fn2 = tmp[0], tmp[1], tmp[2]
        for a in range(3):
            tmp2[a] = Hm[i, 3 + a]
        _cross(vc, tmp2, tmp)
        fn0 += tmp[0]
        fn1 += tmp[1]
        fn2 += tmp[2]
        _cross(wc, tmp2, tmp)  # ω × f
        o = int(data[i, IV])
        nvj = int(data[i, NVJ])
        for e in range(nvj):
            dT[o + e] = -(sig[i, 0, e] * fn0 + sig[i, 1, e] * fn1 + sig[i, 2, e] * fn2
                          + sig[i, 3, e] * tmp[0] + sig[i, 4, e] * tmp[1]
                          + sig[i, 5, e] * tmp[2])
        # ∂V/∂ξ_e = −Σ_subtree m gᵀ(σ_v + σ_ω × c) = −M_k gᵀσ_v − σ_ω·(mc_k × g)
        for a in range(3):
            tmp2[a] = mcsub[i, a]
        _cross(tmp2, g, tmp)
        for e in range(nvj):
            dV[o + e] = -(msub[i] * (g[0] * sig[i, 3, e] + g[1] * sig[i, 4, e]
                                     + g[2] * sig[i, 5, e])
                          + sig[i, 0, e] * tmp[0] + sig[i, 1, e] * tmp[1]
                          + sig[i, 2, e] * tmp[2])
        p = int(data[i, PARENT])
        if p >= 0:
            for a in range(6):
                Hm[p, a] += Hm[i, a]
            msub[p] += msub[i]
            for a in range(3):
                mcsub[p, a] += mcsub[i, a]
        else:
            for a in range(6):
                out[2 + a] += Hm[i, a]
    out[0] = T
    out[1] = Vpot
    return 0
