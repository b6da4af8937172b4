"""Energy, momentum and ∂T/∂q of a Model in one O(n) pass (numba), for the integrators.

Discrete-gradient and projection methods evaluate T, V and ``∂T/∂q`` many
times per step; the public ``kd.kinetic_energy`` / ``kd.potential_energy`` are
the readable (and independent) definitions, tested against this kernel.

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

from ..model import Model

REVOLUTE, PRISMATIC, HELICAL, PLANAR, SPHERICAL, FREE = range(6)
_KINDS = {"revolute": REVOLUTE, "prismatic": PRISMATIC, "helical": HELICAL,
          "planar": PLANAR, "spherical": SPHERICAL, "free": FREE}


class FlatEnergyModel:
    """The constant arrays of a Model the kernel needs (built once per ModelSystem)."""

    def __init__(self, model: Model):
        n = model.nb
        self.kind = np.empty(n, np.int64)
        self.parent = np.empty(n, np.int64)
        self.iq = np.empty(n, np.int64)
        self.iv = np.empty(n, np.int64)
        self.nvj = np.empty(n, np.int64)
        self.axis = np.zeros((n, 3))
        self.pitch = np.zeros(n)
        self.Et = np.empty((n, 3, 3))
        self.rt = np.empty((n, 3))
        self.inertia = np.empty((n, 6, 6))
        self.S = np.zeros((n, 6, 6))
        self.mass = np.empty(n)
        self.com = np.empty((n, 3))
        for b in model.bodies:
            i, j = b.index, b.joint
            self.kind[i] = _KINDS[j.kind]
            self.parent[i] = b.parent
            self.iq[i], self.iv[i], self.nvj[i] = b.iq.start, b.iv.start, j.nv
            if hasattr(j, "axis"):
                self.axis[i] = j.axis
            self.pitch[i] = getattr(j, "pitch", 0.0)
            self.Et[i] = b.placement.rotation
            self.rt[i] = b.placement.translation
            self.inertia[i] = b.inertia
            self.S[i, :, :j.nv] = j.motion_subspace()
            self.mass[i] = b.mass
            self.com[i] = b.com
        self.gravity = np.asarray(model.gravity, dtype=float).copy()
        self.armature = np.ascontiguousarray(model.armature)
        self.nv = model.nv

    def evaluate(self, q: np.ndarray, v: np.ndarray, dT: np.ndarray, dV: np.ndarray,
                 out: np.ndarray) -> None:
        """out = [T, V, L(3), P(3)]; dT ← ∂T/∂q, dV ← ∂V/∂q = g(q) (tangent space)."""
        _energy_pass(self.kind, self.parent, self.iq, self.iv, self.nvj, self.axis, self.pitch,
                     self.Et, self.rt, self.inertia, self.S, self.mass, self.com, self.gravity,
                     q, v, dT, dV, out)
        add_rotor_energy(self.armature, v, out)


@nb.njit(cache=True)
def add_rotor_energy(armature, v, out):
    """``out[0] += ½ Σ armature v²``: the rotors' kinetic energy (armature, a joint's rotor
    inertia, acts on its own speeds only: T gains this, ∂T/∂q and the momentum nothing)."""
    for k in range(v.shape[0]):
        out[0] += 0.5 * armature[k] * v[k] * v[k]


@nb.njit(cache=True)
def _rodrigues(a, th, R):
    s, c = np.sin(th), np.cos(th)
    t = 1.0 - c
    x, y, z = a[0], a[1], a[2]
    R[0, 0] = c + t * x * x
    R[0, 1] = t * x * y - s * z
    R[0, 2] = t * x * z + s * y
    R[1, 0] = t * x * y + s * z
    R[1, 1] = c + t * y * y
    R[1, 2] = t * y * z - s * x
    R[2, 0] = t * x * z - s * y
    R[2, 1] = t * y * z + s * x
    R[2, 2] = c + t * z * z


@nb.njit(cache=True)
def _quat_matrix(w, x, y, z, R):
    R[0, 0] = 1 - 2 * (y * y + z * z)
    R[0, 1] = 2 * (x * y - w * z)
    R[0, 2] = 2 * (x * z + w * y)
    R[1, 0] = 2 * (x * y + w * z)
    R[1, 1] = 1 - 2 * (x * x + z * z)
    R[1, 2] = 2 * (y * z - w * x)
    R[2, 0] = 2 * (x * z - w * y)
    R[2, 1] = 2 * (y * z + w * x)
    R[2, 2] = 1 - 2 * (x * x + y * y)


@nb.njit(cache=True)
def _joint_pose(kind, qs, k, axis, pitch, Rj, pj):
    pj[:] = 0.0
    if kind == REVOLUTE:
        _rodrigues(axis, qs[k], Rj)
    elif kind == PRISMATIC:
        Rj[:, :] = 0.0
        for a in range(3):
            Rj[a, a] = 1.0
            pj[a] = qs[k] * axis[a]
    elif kind == HELICAL:
        _rodrigues(axis, qs[k], Rj)
        for a in range(3):
            pj[a] = pitch * qs[k] * axis[a]
    elif kind == PLANAR:
        c, s = np.cos(qs[k + 2]), np.sin(qs[k + 2])
        Rj[:, :] = 0.0
        Rj[0, 0], Rj[0, 1], Rj[1, 0], Rj[1, 1], Rj[2, 2] = c, -s, s, c, 1.0
        pj[0], pj[1] = qs[k], qs[k + 1]
    elif kind == SPHERICAL:
        _quat_matrix(qs[k], qs[k + 1], qs[k + 2], qs[k + 3], Rj)
    else:  # FREE
        _quat_matrix(qs[k + 3], qs[k + 4], qs[k + 5], qs[k + 6], Rj)
        pj[0], pj[1], pj[2] = qs[k], qs[k + 1], qs[k + 2]


@nb.njit(cache=True)
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@nb.njit(cache=True)
def _energy_pass(kind, parent, iq, iv, nvj, axis, pitch, Et, rt, inertia, S, mass, com, g,
                 q, v, dT, dV, out):
    n = kind.shape[0]
    msub = np.zeros(n)  # subtree mass and first moment Σ m c (world), for ∂V/∂q
    mcsub = np.zeros((n, 3))
    R = np.empty((n, 3, 3))
    P = np.empty((n, 3))
    Vw = np.zeros((n, 6))
    Vp = np.zeros((n, 6))
    H = np.zeros((n, 6))
    sig = np.empty((n, 6, 6))
    Rj = np.empty((3, 3))
    ER = np.empty((3, 3))
    pj = np.empty(3)
    tmp = np.empty(3)
    tmp2 = np.empty(3)
    wc = np.empty(3)
    vc = np.empty(3)
    hc = np.empty(6)
    T = 0.0
    Vpot = 0.0
    for i in range(n):
        _joint_pose(kind[i], q, iq[i], axis[i], pitch[i], Rj, pj)
        p = parent[i]
        # pose: T_i = T_parent * T_tree * T_joint
        for a in range(3):
            tmp[a] = rt[i, a]
            for b in range(3):
                tmp[a] += Et[i, a, b] * pj[b]
        for a in range(3):
            for b in range(3):
                s_ = 0.0
                for c in range(3):
                    s_ += Et[i, a, c] * Rj[c, b]
                ER[a, b] = s_
                R[i, a, b] = s_
        if p >= 0:
            for a in range(3):
                for b in range(3):
                    s_ = 0.0
                    for c in range(3):
                        s_ += R[p, a, c] * ER[c, b]
                    R[i, a, b] = s_
            for a in range(3):
                s_ = P[p, a]
                for c in range(3):
                    s_ += R[p, a, c] * tmp[c]
                P[i, a] = s_
            for a in range(6):
                Vp[i, a] = Vw[p, a]
        else:
            for a in range(3):
                P[i, a] = tmp[a]
        # world motion axes σ_e = [R s_ω; R s_v + p × R s_ω], and V_i = V_λ + Σ σ_e v_e
        for a in range(6):
            Vw[i, a] = Vp[i, a]
        for e in range(nvj[i]):
            for a in range(3):
                s_w = 0.0
                s_v = 0.0
                for c in range(3):
                    s_w += R[i, a, c] * S[i, c, e]
                    s_v += R[i, a, c] * S[i, 3 + c, e]
                sig[i, a, e] = s_w
                tmp2[a] = s_v
            for a in range(3):
                wc[a] = sig[i, a, e]
            _cross(P[i], wc, tmp)
            for a in range(3):
                sig[i, 3 + a, e] = tmp2[a] + tmp[a]
            ve = v[iv[i] + e]
            for a in range(6):
                Vw[i, a] += sig[i, a, e] * ve
        # body-coordinate velocity, momentum h_c = I V_c, back to world
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
        for a in range(6):
            s_ = 0.0
            for c in range(6):
                s_ += inertia[i, a, c] * hc[c]
            T += 0.5 * s_ * hc[a]
            if a < 3:
                wc[a] = s_
            else:
                vc[a - 3] = s_
        # world momentum: f = R f_c, n_O = R n_c + p × f
        for a in range(3):
            s_w = 0.0
            s_v = 0.0
            for c in range(3):
                s_w += R[i, a, c] * wc[c]
                s_v += R[i, a, c] * vc[c]
            H[i, a] = s_w
            H[i, 3 + a] = s_v
        for a in range(3):
            tmp2[a] = H[i, 3 + a]
        _cross(P[i], tmp2, tmp)
        for a in range(3):
            H[i, a] += tmp[a]
        # potential: −m gᵀ (p + R c)
        for a in range(3):
            s_ = P[i, a]
            for c in range(3):
                s_ += R[i, a, c] * com[i, c]
            Vpot -= mass[i] * g[a] * s_
            mcsub[i, a] = mass[i] * s_
        msub[i] = mass[i]
    for a in range(6):
        out[2 + a] = 0.0
    for i in range(n - 1, -1, -1):
        # dT_e = −σ_eᵀ crf(V_λ) H, crf([ω; v]) [n; f] = [ω×n + v×f; ω×f]
        for a in range(3):
            wc[a] = Vp[i, a]
            vc[a] = Vp[i, 3 + a]
        for a in range(3):
            tmp2[a] = H[i, a]
        _cross(wc, tmp2, tmp)
        fn0, fn1, fn2 = tmp[0], tmp[1], tmp[2]
        for a in range(3):
            tmp2[a] = H[i, 3 + a]
        _cross(vc, tmp2, tmp)
        fn0 += tmp[0]
        fn1 += tmp[1]
        fn2 += tmp[2]
        _cross(wc, tmp2, tmp)  # ω × f
        for e in range(nvj[i]):
            dT[iv[i] + e] = -(sig[i, 0, e] * fn0 + sig[i, 1, e] * fn1 + sig[i, 2, e] * fn2
                              + sig[i, 3, e] * tmp[0] + sig[i, 4, e] * tmp[1]
                              + sig[i, 5, e] * tmp[2])
        # ∂V/∂ξ_e = −Σ_subtree m gᵀ(σ_v + σ_ω × c) = −M_k gᵀσ_v − σ_ω·(mc_k × g)
        for a in range(3):
            tmp2[a] = mcsub[i, a]
        _cross(tmp2, g, tmp)
        for e in range(nvj[i]):
            dV[iv[i] + e] = -(msub[i] * (g[0] * sig[i, 3, e] + g[1] * sig[i, 4, e]
                                         + g[2] * sig[i, 5, e])
                              + sig[i, 0, e] * tmp[0] + sig[i, 1, e] * tmp[1]
                              + sig[i, 2, e] * tmp[2])
        p = parent[i]
        if p >= 0:
            for a in range(6):
                H[p, a] += H[i, a]
            msub[p] += msub[i]
            for a in range(3):
                mcsub[p, a] += mcsub[i, a]
        else:
            for a in range(6):
                out[2 + a] += H[i, a]
    out[0] = T
    out[1] = Vpot
