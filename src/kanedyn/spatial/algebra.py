"""Cross products of spatial vectors (Featherstone 2008, eqs. 2.31-2.33)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def skew(w: ArrayLike) -> NDArray:
    """The 3x3 matrix ``w×`` with ``skew(w) @ u == np.cross(w, u)``."""
    x, y, z = np.asarray(w, dtype=float)
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def unskew(S: ArrayLike) -> NDArray:
    """The vector w of a skew-symmetric matrix ``w×`` (its antisymmetric part)."""
    S = np.asarray(S, dtype=float)
    return 0.5 * np.array([S[2, 1] - S[1, 2], S[0, 2] - S[2, 0], S[1, 0] - S[0, 1]])


def crm(v: ArrayLike) -> NDArray:
    """Motion cross product matrix ``v× = [ω× 0; v_O× ω×]`` (eq. 2.31)."""
    v = np.asarray(v, dtype=float)
    wx, vx = skew(v[:3]), skew(v[3:])
    out = np.zeros((6, 6))
    out[:3, :3] = wx
    out[3:, :3] = vx
    out[3:, 3:] = wx
    return out


def crf(v: ArrayLike) -> NDArray:
    """Force cross product matrix ``v×* = -(v×)^T`` (eq. 2.32)."""
    return -crm(v).T


def cross_motion(v: ArrayLike, m: ArrayLike) -> NDArray:
    """``v × m`` for two motion vectors, without forming the 6x6 matrix."""
    v, m = np.asarray(v, dtype=float), np.asarray(m, dtype=float)
    w, vo = v[:3], v[3:]
    return np.concatenate([np.cross(w, m[:3]), np.cross(vo, m[:3]) + np.cross(w, m[3:])])


def cross_force(v: ArrayLike, f: ArrayLike) -> NDArray:
    """``v ×* f`` for a motion vector v and a force vector f."""
    v, f = np.asarray(v, dtype=float), np.asarray(f, dtype=float)
    w, vo = v[:3], v[3:]
    return np.concatenate([np.cross(w, f[:3]) + np.cross(vo, f[3:]), np.cross(w, f[3:])])
