"""What the checks work on: a Model, or any object with the system protocol of DESIGN.md.

A :class:`Subject` gives every check the same handful of functions —
``mass_matrix, nonlinear_effects, forward_dynamics, energy, potential, q_dot,
integrate_configuration`` — and a way to draw states on the configuration
manifold. For a :class:`~kanedyn.Model` they come from the public algorithms
(``kd.crba``, ``kd.nonlinear_effects``, ``kd.aba``) and the energy from
``kd.kinetic_energy + kd.potential_energy``, which are computed body by body
and not from the equations of motion. For a protocol system they are the
system's own methods, and checks that need the tree (static torques by hand,
momentum symmetries, symbolic cross-derivations) are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .. import dynamics as dyn
from ..errors import ModelError
from ..model import Model
from ..model import configuration as cfg


def _c(x) -> NDArray:
    return np.ascontiguousarray(x, dtype=float)

PROTOCOL = ("nq", "nv", "mass_matrix", "nonlinear_effects", "forward_dynamics", "energy",
            "q_dot", "integrate_configuration")


@dataclass(frozen=True)
class Subject:
    """The thing under test. ``model`` is None for a protocol system."""

    name: str
    nq: int
    nv: int
    model: Model | None
    system: object | None
    q_base: NDArray

    # --- the equations --------------------------------------------------------
    def mass_matrix(self, q: NDArray) -> NDArray:
        if self.model is not None:
            return np.asarray(dyn.crba(self.model, _c(q)), dtype=float)
        return np.asarray(self.system.mass_matrix(q), dtype=float)

    def nonlinear_effects(self, q: NDArray, v: NDArray) -> NDArray:
        if self.model is not None:
            return np.asarray(dyn.nonlinear_effects(self.model, _c(q), _c(v)), dtype=float)
        return np.asarray(self.system.nonlinear_effects(q, v), dtype=float)

    def forward_dynamics(self, q: NDArray, v: NDArray, tau: NDArray) -> NDArray:
        if self.model is not None:
            return np.asarray(dyn.aba(self.model, _c(q), _c(v), _c(tau)), dtype=float)
        return np.asarray(self.system.forward_dynamics(q, v, tau), dtype=float)

    # --- energy, computed apart from the equations ------------------------------
    def energy(self, q: NDArray, v: NDArray) -> float:
        if self.model is not None:
            return float(dyn.kinetic_energy(self.model, _c(q), _c(v))
                         + dyn.potential_energy(self.model, _c(q)))
        return float(self.system.energy(q, v))

    def potential(self, q: NDArray) -> float:
        """V(q) = E(q, 0): the energy at rest."""
        if self.model is not None:
            return float(dyn.potential_energy(self.model, _c(q)))
        return float(self.system.energy(q, np.zeros(self.nv)))

    # --- the configuration manifold -------------------------------------------
    def q_dot(self, q: NDArray, v: NDArray) -> NDArray:
        if self.model is not None:
            return cfg.q_dot(self.model, q, v)
        return np.asarray(self.system.q_dot(q, v), dtype=float)

    def integrate_configuration(self, q: NDArray, v: NDArray, dt: float) -> NDArray:
        if self.model is not None:
            return cfg.integrate_configuration(self.model, q, v, dt)
        return np.asarray(self.system.integrate_configuration(q, v, dt), dtype=float)

    def normalize(self, q: NDArray) -> NDArray:
        """Project q back onto the manifold (unit quaternions); identity without quaternions."""
        if self.model is not None and self.model.has_quaternions:
            return cfg.check_configuration(self.model, q)[0][0]
        return q

    def random_state(self, rng: np.random.Generator, scale: float = 1.0):
        """(q, v): q on the manifold (angles and offsets of order ``scale``), v ~ N(0, 1)."""
        if self.model is not None:
            q = cfg.random_configuration(self.model, rng, scale=scale)
        else:
            # any system can move along its tangent space, which keeps q on the manifold
            q = self.integrate_configuration(self.q_base, rng.uniform(-scale, scale, self.nv), 1.0)
        return q, rng.normal(size=self.nv)


def as_subject(obj, q0=None) -> Subject:
    """Wrap a Model or a protocol system. ``q0`` is a base configuration for a system
    (default: ``obj.neutral()`` if it has one, else zeros)."""
    if isinstance(obj, Model):
        return Subject(obj.name, obj.nq, obj.nv, obj, None, cfg.neutral(obj))
    missing = [a for a in PROTOCOL if not hasattr(obj, a)]
    if missing:
        raise ModelError(
            f"cannot verify {type(obj).__name__}: it is neither a kanedyn Model nor a system "
            f"(missing {', '.join(missing)} of the system protocol {', '.join(PROTOCOL)})"
        )
    nq, nv = int(obj.nq), int(obj.nv)
    if q0 is None:
        q0 = obj.neutral() if callable(getattr(obj, "neutral", None)) else np.zeros(nq)
    q0 = np.asarray(q0, dtype=float)
    if q0.shape != (nq,):
        raise ModelError(f"base configuration q0 has shape {q0.shape}, the system needs ({nq},)")
    name = getattr(obj, "name", None)
    if not name:
        inner = getattr(getattr(obj, "model", None), "name", None)
        name = f"{type(obj).__name__}({inner})" if inner else type(obj).__name__
    return Subject(str(name), nq, nv, None, obj, q0)
