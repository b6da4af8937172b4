"""Bodies and loads of a general (non-tree) mechanism for Kane's method.

Kinematics use :mod:`sympy.physics.vector` (ReferenceFrame, Point, Vector,
Dyadic, dynamicsymbols); the objects here only say *what* moves and *what*
acts on it, so that :mod:`kanedyn.kane.generalized_forces` and
:mod:`kanedyn.kane.equations` can form the generalized active and inertia
forces (Kane & Levinson, *Dynamics: Theory and Applications*, 1985, Ch. 4).

A load is either a force bound to a point (its line of action passes through
the point) or a torque (a couple) on a rigid frame. Forces and torques may be
of any origin: gravity, a motor torque, drag, a thruster, a control input, an
unknown reaction exposed through an auxiliary speed.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp
from sympy.physics.vector import Dyadic, Point, ReferenceFrame, Vector, outer

from ..errors import SymbolicError


@dataclass(frozen=True)
class RigidBody:
    """A rigid body: mass ``mass`` at ``masscenter``, body-fixed ``frame``,
    central inertia dyadic ``inertia`` (about the mass centre)."""

    name: str
    masscenter: Point
    frame: ReferenceFrame
    mass: sp.Expr
    inertia: Dyadic

    def __post_init__(self) -> None:
        if not isinstance(self.masscenter, Point):
            raise SymbolicError(f"body {self.name!r}: masscenter must be a sympy Point")
        if not isinstance(self.frame, ReferenceFrame):
            raise SymbolicError(f"body {self.name!r}: frame must be a sympy ReferenceFrame")
        if not isinstance(self.inertia, Dyadic) and self.inertia != 0:
            raise SymbolicError(f"body {self.name!r}: inertia must be a Dyadic (see inertia())")


@dataclass(frozen=True)
class Particle:
    """A point mass ``mass`` at ``point``."""

    name: str
    point: Point
    mass: sp.Expr

    def __post_init__(self) -> None:
        if not isinstance(self.point, Point):
            raise SymbolicError(f"particle {self.name!r}: point must be a sympy Point")


@dataclass(frozen=True)
class Force:
    """A force ``vector`` whose line of action passes through ``point``."""

    point: Point
    vector: Vector
    name: str = ""


@dataclass(frozen=True)
class Torque:
    """A couple of moment ``vector`` acting on the rigid ``frame``."""

    frame: ReferenceFrame
    vector: Vector
    name: str = ""


def inertia(frame: ReferenceFrame, ixx, iyy, izz, ixy=0, iyz=0, izx=0) -> Dyadic:
    """Inertia dyadic with the given scalars in ``frame`` (products of inertia
    as the matrix entries, i.e. ``I = Σ I_ij e_i e_j``)."""
    e = (frame.x, frame.y, frame.z)
    matrix = ((ixx, ixy, izx), (ixy, iyy, iyz), (izx, iyz, izz))
    total = Dyadic(0)
    for i in range(3):
        for j in range(3):
            if matrix[i][j] != 0:
                total += matrix[i][j] * outer(e[i], e[j])
    return total


def as_load(load) -> Force | Torque:
    """Accept :class:`Force`, :class:`Torque`, or SymPy-style tuples
    ``(Point, Vector)`` / ``(ReferenceFrame, Vector)``."""
    if isinstance(load, Force | Torque):
        return load
    if isinstance(load, tuple) and len(load) == 2:
        where, vec = load
        if not isinstance(vec, Vector) and vec != 0:
            raise SymbolicError(f"load {load!r}: the second entry must be a Vector")
        vec = Vector(0) if vec == 0 else vec
        if isinstance(where, Point):
            return Force(where, vec)
        if isinstance(where, ReferenceFrame):
            return Torque(where, vec)
    raise SymbolicError(
        f"load {load!r} is neither a Force, a Torque, (Point, Vector) nor (ReferenceFrame, Vector)"
    )
