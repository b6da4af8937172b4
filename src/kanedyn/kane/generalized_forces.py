"""Generalized active and inertia forces and the kinetic energy of a
:class:`~kanedyn.kane.system.KaneSystem`, as whole expressions: the book's
definitions (Kane & Levinson, *Dynamics: Theory and Applications*, 1985, Ch. 4),
one per speed (u, then the auxiliary speeds), dependent speeds not eliminated.
:func:`~kanedyn.kane.equations.kanes_equations` forms the same sums through
intermediates instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sympy as sp

from .kinematics import Kinematics, kinematics

if TYPE_CHECKING:
    from .system import KaneSystem

__all__ = ["generalized_active_forces", "generalized_inertia_forces", "kinetic_energy"]


def generalized_active_forces(system: KaneSystem, kin: Kinematics | None = None) -> sp.Matrix:
    """``F_r = Σ_loads (v_r · R + ω_r · T)`` (Kane & Levinson Ch. 4, generalized
    active forces), one per speed (u, then auxiliary); dependent speeds not yet
    eliminated."""
    kin = kin or kinematics(system)
    F = [sp.S.Zero] * len(kin.speeds)
    for parts, load in kin.loads:
        for r, pr in enumerate(parts):
            F[r] += pr.dot(load.vector)
    return sp.Matrix(F)


def generalized_inertia_forces(system: KaneSystem, kin: Kinematics | None = None) -> sp.Matrix:
    """``F_r* = Σ (v_r · (−m a) + ω_r · (−α · I − ω × I · ω))`` (Kane & Levinson
    Ch. 4, generalized inertia forces), I the central inertia dyadic; one per speed."""
    kin = kin or kinematics(system)
    Fs = [sp.S.Zero] * len(kin.speeds)
    for body, (_v, w, v_r, w_r, a, alpha) in zip(system.bodies, kin.bodies, strict=True):
        R_star = -body.mass * a
        T_star = None
        if w is not None and body.inertia != 0:
            T_star = -(body.inertia.dot(alpha) + w.cross(body.inertia.dot(w)))
        for r in range(len(kin.speeds)):
            Fs[r] += v_r[r].dot(R_star)
            if T_star is not None:
                Fs[r] += w_r[r].dot(T_star)
    return sp.Matrix(Fs)


def kinetic_energy(system: KaneSystem, kin: Kinematics | None = None) -> sp.Expr:
    """``K = Σ ½ m v·v + ½ ω·I·ω`` (auxiliary speeds zero, q̇ eliminated)."""
    kin = kin or kinematics(system)
    K = sp.S.Zero
    for body, (v, w, *_rest) in zip(system.bodies, kin.bodies, strict=True):
        K += body.mass * v.dot(v) / 2
        if w is not None and body.inertia != 0:
            K += w.dot(body.inertia.dot(w)) / 2
    return K
