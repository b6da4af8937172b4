"""Joint friction as a force element: τ_j = -F(v_j - v_surface) for a static law F.

A smoothed (or smooth-by-construction) law is an ordinary force with a
Jacobian ∂τ_j/∂v_j = -F'(w), so every integrator of ``kd.simulate`` can take
it; its work ∫ τ_j v_j dt is the friction's share of the non-conservative
work W_nc in the energy budget. An exact law (sgn) is flagged
``discontinuous``: integrators that assume a smooth right-hand side refuse
it, and exact stick–slip is done by ``kd.simulate(..., method="stickslip")``
(:mod:`kanedyn.sim.stickslip`) instead. LuGre carries a bristle state and is
not a memoryless force element; simulate it with ``method="stickslip"`` or
``method="time_stepping"`` and ``joints={joint: law}``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..errors import FrictionError
from ..friction.laws import FrictionLaw, Stribeck
from ..friction.smoothing import make_smoothing
from .base import ForceElement
from .joint import joint_speed_slice


class JointFriction(ForceElement):
    """Friction on a 1-DOF joint, ``τ_j = -law(v_j - surface_velocity)``."""

    def __init__(self, joint: str, law: FrictionLaw, surface_velocity: float = 0.0):
        if not isinstance(law, FrictionLaw):
            from ..friction.karnopp import Karnopp
            from ..friction.lugre import LuGre

            why = ("Karnopp's band holds v̇ with the force that the other forces call for, "
                   "which only a simulator that knows them all applies: use "
                   "kd.simulate(method='time_stepping', joints={joint: law})"
                   if isinstance(law, Karnopp) else
                   "LuGre carries a bristle state: use kd.simulate(method='stickslip' or "
                   "'time_stepping', joints={joint: law})" if isinstance(law, LuGre) else
                   "give a law of kanedyn.friction (Stribeck, TanhStribeck, ...)")
            raise FrictionError(f"JointFriction on {joint!r}: {law!r} is not a static "
                                f"friction law, the only kind a force element takes; {why}")
        self.joint, self.law = joint, law
        self.surface_velocity = float(surface_velocity)
        # against a still surface friction only takes energy out; a moving belt can feed it in
        self.dissipative = self.surface_velocity == 0.0
        if not np.isfinite(self.surface_velocity):
            raise FrictionError(f"JointFriction on {joint!r}: surface velocity is not finite")
        self.discontinuous = bool(law.discontinuous)
        self._iv: int | None = None
        self._nv = 0

    def __repr__(self) -> str:
        return f"JointFriction({self.joint!r}, {self.law!r})"

    def bind(self, system) -> JointFriction:
        sv = joint_speed_slice(system, self.joint)
        if sv.stop - sv.start != 1:
            raise FrictionError(f"JointFriction: joint {self.joint!r} has "
                                f"{sv.stop - sv.start} speeds; friction needs a 1-DOF joint")
        out = JointFriction(self.joint, self.law, self.surface_velocity)
        out._iv, out._nv = sv.start, system.nv
        return out

    def _check(self):
        if self._iv is None:
            raise FrictionError(f"JointFriction on {self.joint!r} used before bind(system)")

    def generalized_force(self, t, q, v):
        self._check()
        tau = np.zeros(self._nv)
        tau[self._iv] = -self.law(float(v[self._iv]) - self.surface_velocity)
        return tau

    def jacobians(self, t, q, v):
        self._check()
        dv = np.zeros((self._nv, self._nv))
        dv[self._iv, self._iv] = -self.law.derivative(float(v[self._iv]) - self.surface_velocity)
        return np.zeros((self._nv, self._nv)), dv

    def dissipation(self, t, q, v) -> float:
        """Heat produced in the contact, ``F(w) w >= 0`` (w the sliding speed)."""
        self._check()
        w = float(v[self._iv]) - self.surface_velocity
        return float(self.law(w)) * w


def urdf_friction(model, smoothing: str | None = None, eps: float | None = None,
                  joints: Iterable[str] | None = None) -> list[JointFriction]:
    """Friction elements from the joints' URDF ``<dynamics friction=... damping=...>``:
    a Coulomb level ``friction`` (Fs = Fc) and a viscous coefficient ``damping``
    on every 1-DOF joint where either is non-zero. ``smoothing`` ("tanh" or
    "sqrt", width ``eps``) makes them usable by every integrator."""
    sm = make_smoothing(smoothing, eps)
    names = set(joints) if joints is not None else None
    out = []
    for b in model.bodies:
        j = b.joint
        if j.nv != 1 or (names is not None and j.name not in names):
            continue
        if j.friction > 0.0 or j.damping > 0.0:
            out.append(JointFriction(j.name, Stribeck(j.friction, j.friction, 1.0, 2.0,
                                                      j.damping, sm)))
    return out
