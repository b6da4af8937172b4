"""Kane's method: generalized speeds, partial velocities, F_r + F_r* = 0, nonholonomic
constraints, auxiliary speeds, code generation."""

from .eom import EquationsOfMotion

__all__ = ["EquationsOfMotion"]
