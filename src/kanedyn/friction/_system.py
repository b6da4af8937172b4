"""The system protocol for friction simulations: a Model is wrapped, anything else is
used as it is (compiled Kane system, constrained system, a user's own)."""

from __future__ import annotations

import numpy as np

from ..errors import FrictionError
from ..model import Model

_PROTOCOL = ("nq", "nv", "mass_matrix", "nonlinear_effects", "q_dot", "energy")


class ModelSystem:
    """A Model seen through the system protocol (public dynamics API only)."""

    def __init__(self, model: Model):
        import kanedyn as kd

        self.model = model
        self._kd = kd
        self.nq, self.nv = model.nq, model.nv

    def mass_matrix(self, q):
        return self._kd.crba(self.model, q)

    def nonlinear_effects(self, q, v):
        return self._kd.nonlinear_effects(self.model, q, v)

    def forward_dynamics(self, q, v, tau):
        return self._kd.aba(self.model, q, v, tau)

    def energy(self, q, v):
        return float(self._kd.kinetic_energy(self.model, q, v)
                     + self._kd.potential_energy(self.model, q))

    def q_dot(self, q, v):
        return self._kd.q_dot(self.model, q, v)

    def integrate_configuration(self, q, v, dt):
        return self._kd.integrate_configuration(self.model, q, v, dt)


def as_system(system):
    """``system`` if it follows the protocol, a :class:`ModelSystem` if it is a Model."""
    if isinstance(system, Model):
        return ModelSystem(system)
    missing = [a for a in _PROTOCOL if not hasattr(system, a)]
    if missing:
        raise FrictionError(
            f"{type(system).__name__} is neither a Model nor a system: it lacks {missing}"
        )
    return system


def checked_state(x, n: int, what: str) -> np.ndarray:
    """``x`` as a finite float vector of length n, or a StateError naming it."""
    from ..errors import StateError

    a = np.asarray(x, dtype=float).ravel()
    if a.size != n:
        raise StateError(f"{what} has {a.size} entries; the system needs {n}")
    if not np.all(np.isfinite(a)):
        raise StateError(f"{what} contains NaN or infinity: {a}")
    return a.copy()


def joint_speed_index(system, joint) -> int:
    """Index into v of a 1-DOF joint given by name (Model) or by speed index."""
    model = getattr(system, "model", None)
    if isinstance(joint, str):
        if model is None:
            names = getattr(system, "joint_names", None)
            if names is None or joint not in names:
                raise FrictionError(f"joint {joint!r} unknown to this system (give its v index)")
            return list(names).index(joint)
        b = model.bodies[model.joint_index(joint)]
        if b.joint.nv != 1:
            raise FrictionError(
                f"joint {joint!r} is {b.joint.kind} with {b.joint.nv} speeds; "
                "friction elements act on 1-DOF joints"
            )
        return b.iv.start
    if isinstance(joint, (int, np.integer)) and 0 <= int(joint) < system.nv:
        return int(joint)
    raise FrictionError(f"joint {joint!r} is not a joint name or a speed index 0..{system.nv - 1}")
