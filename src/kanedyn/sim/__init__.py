"""kanedyn.sim: ``simulate()`` — system + forces + integrator -> :class:`Trajectory`,
with the energy budget and saving/loading of results (see docs/simulation.md)."""

from .simulate import simulate
from .system import ModelSystem, as_system
from .trajectory import Trajectory

__all__ = ["ModelSystem", "Trajectory", "as_system", "simulate"]
