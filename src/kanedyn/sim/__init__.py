"""kanedyn.sim: ``simulate()`` — system + forces + integrator -> :class:`Trajectory`,
with the energy budget and saving/loading of results (see docs/simulation.md)."""

from .simulate import simulate
from .system import ModelSystem, as_system
from .trajectory import FrictionRecord, Switch, Trajectory

__all__ = ["FrictionRecord", "ModelSystem", "Switch", "Trajectory", "as_system", "simulate"]
