"""Force elements applied in a simulation: springs, dampers, joint friction, actuators,
external wrenches."""

from .base import ForceElement

__all__ = ["ForceElement"]
