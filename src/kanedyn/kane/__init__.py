"""Kane's method: generalized speeds, partial velocities, F_r + F_r* = 0, nonholonomic
constraints, auxiliary speeds, code generation."""

from .codegen import CompiledSystem
from .eom import EquationsOfMotion
from .linearize import linearize
from .loads import Force, Particle, RigidBody, Torque, inertia
from .system import (
    KaneSystem,
    generalized_active_forces,
    generalized_inertia_forces,
    index3_equations,
    kanes_equations,
    kinematics,
    kinetic_energy,
    partial_velocities,
    udot_symbol,
)
from .tree import derive

__all__ = [
    "CompiledSystem",
    "EquationsOfMotion",
    "Force",
    "KaneSystem",
    "Particle",
    "RigidBody",
    "Torque",
    "derive",
    "generalized_active_forces",
    "generalized_inertia_forces",
    "index3_equations",
    "inertia",
    "kanes_equations",
    "kinematics",
    "kinetic_energy",
    "linearize",
    "partial_velocities",
    "udot_symbol",
]
