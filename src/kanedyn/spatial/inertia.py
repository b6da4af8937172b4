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


#: rotational inertias whose defect (see :func:`rotational_inertia_defect`) is at most
#: this fraction of their largest principal moment are rounding, clipped silently
INERTIA_ROUNDING = 1e-9


def rotational_inertia_defect(I_com: ArrayLike, scale: float = 0.0) -> tuple[float, str]:
    """How far a symmetric rotational inertia about the centre of mass is from a rigid
    body's, relative to its largest principal moment (or to ``scale`` if larger: the
    size of the terms it was computed from, e.g. ``m |c|²`` for an inertia moved to the
    centre of mass, whose rounding it carries): ``(defect, reason)``.

    I is the inertia of some mass distribution if and only if its second moment
    ``Σ = ½ tr(I) 1 − I`` is positive semidefinite (Wensing, Kim & Slotine 2017,
    "Linear matrix inequalities for physically consistent inertial parameter
    identification"): Σ's eigenvalues are ``½ (I_j + I_k − I_i)``, so this is the
    triangle inequality ``I1 + I2 ≥ I3`` of the principal moments I1 ≤ I2 ≤ I3, which
    implies I ⪰ 0 (``I1 ≥ I3 − I2 ≥ 0``). The defect is
    ``max(0, I3 − I1 − I2) / max(I3, scale)`` (0 for a physical inertia, a point mass
    included; infinite when that denominator is 0 < defect); ``reason`` says which
    condition fails ("" if none).
    """
    I = np.asarray(I_com, dtype=float)
    ev = np.linalg.eigvalsh(0.5 * (I + I.T))
    gap = ev[2] - ev[0] - ev[1]
    if not gap > 0.0:
        return 0.0, ""
    ref = max(float(ev[2]), float(scale))
    defect = gap / ref if ref > 0.0 else np.inf
    if ev[0] < 0.0:
        why = f"not positive semidefinite (principal moments {ev})"
    else:
        why = (f"principal moments {ev} break the triangle inequality I1 + I2 >= I3 "
               f"by {100.0 * defect:.3g} % of I3")
    return float(defect), why


def clip_rotational_inertia(I_com: ArrayLike) -> NDArray:
    """The nearest physical rotational inertia in the sense of the second moment: the
    negative eigenvalue of ``Σ = ½ tr(I) 1 − I`` (see :func:`rotational_inertia_defect`)
    set to zero, ``I' = tr(Σ') 1 − Σ'``. It raises the two smaller principal moments by
    half the defect each and keeps the axes and the largest moment; an inertia that is
    already physical is returned unchanged (the same array values)."""
    I = np.asarray(I_com, dtype=float)
    S = 0.5 * np.trace(I) * np.eye(3) - I
    w, V = np.linalg.eigh(0.5 * (S + S.T))
    if w[0] >= 0.0:
        return I.copy()
    S = (V * np.maximum(w, 0.0)) @ V.T
    return np.trace(S) * np.eye(3) - S
