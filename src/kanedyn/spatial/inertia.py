"""Spatial inertia (Featherstone 2008, sec. 2.13).

About a frame origin O, a body of mass m with centre of mass c and rotational
inertia I_c about its centre of mass has
``I_O = [I_c + m c× c×ᵀ, m c×; m c×ᵀ, m 1]`` and kinetic energy ``½ vᵀ I_O v``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .algebra import skew, unskew


def spatial_inertia(mass: float, com: ArrayLike, I_com: ArrayLike) -> NDArray:
    """The 6x6 spatial inertia about the frame origin (spatial_v2 ``mcI``)."""
    c = np.asarray(com, dtype=float).reshape(3)
    Ic = np.asarray(I_com, dtype=float).reshape(3, 3)
    C = skew(c)
    out = np.zeros((6, 6))
    out[:3, :3] = Ic + mass * C @ C.T
    out[:3, 3:] = mass * C
    out[3:, :3] = mass * C.T
    out[3:, 3:] = mass * np.eye(3)
    return out


def inertia_parameters(I: ArrayLike) -> tuple[float, NDArray, NDArray]:
    """Inverse of :func:`spatial_inertia`: ``(m, c, I_c)``."""
    I = np.asarray(I, dtype=float)
    m = I[3, 3]
    if m <= 0.0:
        return 0.0, np.zeros(3), I[:3, :3].copy()
    c = unskew(I[:3, 3:]) / m
    C = skew(c)
    return m, c, I[:3, :3] - m * C @ C.T


def transform_inertia(X: ArrayLike, I_A: ArrayLike) -> NDArray:
    """Spatial inertia in B coordinates from A coordinates: ``I_B = X* I_A X⁻¹`` (X = B_X_A)."""
    X = np.asarray(X, dtype=float)
    Xinv = np.linalg.inv(X)
    return Xinv.T @ np.asarray(I_A, dtype=float) @ Xinv


def rotational_inertia_is_physical(I_com: ArrayLike, tol: float = 1e-9) -> tuple[bool, str]:
    """Whether a rotational inertia about the centre of mass can belong to a rigid body.

    It must be symmetric and positive semidefinite, and its principal moments
    must satisfy the triangle inequality ``I1 + I2 ≥ I3`` (and permutations).
    A point mass (all zero) is physical. Returns ``(ok, reason)``.
    """
    I = np.asarray(I_com, dtype=float)
    scale = max(1.0, float(np.abs(I).max()))
    if not np.allclose(I, I.T, atol=tol * scale):
        return False, "not symmetric"
    ev = np.linalg.eigvalsh(0.5 * (I + I.T))
    if ev[0] < -tol * scale:
        return False, f"not positive semidefinite (principal moments {ev})"
    if ev[0] + ev[1] < ev[2] - tol * scale:
        return False, f"principal moments {ev} break the triangle inequality I1 + I2 >= I3"
    return True, ""
