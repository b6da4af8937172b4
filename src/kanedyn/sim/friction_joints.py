"""What the stick–slip simulations (:mod:`.stickslip`, :mod:`.time_stepping`) share: the
system they run on and the check of a state vector."""

from __future__ import annotations

import numpy as np

from ..errors import FrictionError, StateError
from ..model import Model
from .system import ModelSystem

#: what the friction simulations call on a system (the protocol of DESIGN.md, less
#: forward_dynamics: they solve the partitioned M v̇ = b themselves)
PROTOCOL = ("nq", "nv", "mass_matrix", "nonlinear_effects", "q_dot", "energy")


def friction_system(system):
    """``system`` if it follows the protocol, a :class:`~.system.ModelSystem` if it is a
    Model, else a FrictionError naming what it lacks."""
    if isinstance(system, Model):
        return ModelSystem(system)
    missing = [a for a in PROTOCOL if not hasattr(system, a)]
    if missing:
        raise FrictionError(
            f"{type(system).__name__} is neither a Model nor a system: it lacks {missing}"
        )
    return system


def checked_state(x, n: int, what: str) -> np.ndarray:
    """``x`` as a finite float vector of length n, or a StateError naming it."""
    a = np.asarray(x, dtype=float).ravel()
    if a.size != n:
        raise StateError(f"{what} has {a.size} entries; the system needs {n}")
    if not np.all(np.isfinite(a)):
        raise StateError(f"{what} contains NaN or infinity: {a}")
    return a.copy()
