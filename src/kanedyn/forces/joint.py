"""Joint-space force elements: prescribed torques, linear springs and viscous dampers.

Joints are named; :meth:`bind` resolves the names against a system (a
:class:`~kanedyn.sim.system.ModelSystem` or anything with a ``model``
attribute, a compiled Kane tree derived from a Model — its ``source_model`` —, or
anything with ``joint_names`` and one speed per joint).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ModelError, StateError
from .base import ForceElement


def joint_model(system):
    """The Model whose joints name the coordinates and speeds of ``system``: its ``model``
    (a ModelSystem), else its ``source_model`` (a compiled Kane tree derived from a
    Model: the same q and v), else None."""
    model = getattr(system, "model", None)
    return model if model is not None else getattr(system, "source_model", None)


def joint_speed_slice(system, joint: str) -> slice:
    """The slice of v that belongs to the joint named ``joint`` in ``system``."""
    model = joint_model(system)
    if model is not None:
        return model.bodies[model.joint_index(joint)].iv
    names = list(getattr(system, "joint_names", []))
    if joint not in names:
        raise ModelError(f"no joint named {joint!r}; joints are {names}")
    if len(names) != system.nv:
        raise ModelError(
            f"cannot locate joint {joint!r}: the system has {system.nv} speeds for "
            f"{len(names)} joint names and no model to say which speed is whose"
        )
    k = names.index(joint)
    return slice(k, k + 1)


def _joint_list(joints: str | Sequence[str] | None) -> list[str] | None:
    if joints is None:
        return None
    return [joints] if isinstance(joints, str) else list(joints)


class JointTorque(ForceElement):
    """A prescribed joint force τ(t, q, v) (an actuator, a controller).

    ``fn(t, q, v)`` returns the forces on ``joints`` (in the order given, one
    entry per speed of each), or on all nv speeds when ``joints`` is None.
    ``fn`` may also be numbers, a constant τ (``constant`` then holds them): the
    compiled loops of ``kd.simulate`` take a constant torque (and a
    :class:`SinusoidalTorque`) in their own code, while a Python function makes the
    run take the Python steps (a call into Python at every force evaluation: tens of
    µs a step instead of a few). Non-conservative: its work ``∫ vᵀ τ dt`` enters W_nc.
    """

    def __init__(self, fn: Callable[[float, NDArray, NDArray], ArrayLike] | ArrayLike,
                 joints: str | Sequence[str] | None = None):
        self.constant: NDArray | None = None
        if not callable(fn):
            try:
                c = np.atleast_1d(np.asarray(fn, dtype=float))
            except (TypeError, ValueError):
                c = None
            if c is None or c.ndim != 1 or not np.all(np.isfinite(c)):
                raise ModelError(f"JointTorque needs a function of (t, q, v) or finite "
                                 f"constant numbers; got {fn!r}")
            self.constant = c
            fn = _Constant(c)
        self.fn = fn
        self.joints = _joint_list(joints)
        self._idx: NDArray | None = None
        self._nv: int | None = None

    def bind(self, system) -> JointTorque:
        out = JointTorque(self.fn if self.constant is None else self.constant, self.joints)
        out._nv = system.nv
        if self.joints is not None:
            out._idx = np.concatenate(
                [np.arange(system.nv)[joint_speed_slice(system, j)] for j in self.joints])
        return out

    def generalized_force(self, t, q, v):
        if self._nv is None:
            raise ModelError("JointTorque used before bind(system)")
        f = np.atleast_1d(np.asarray(self.fn(t, q, v), dtype=float))
        n = self._nv if self._idx is None else self._idx.size
        if f.shape != (n,):
            raise StateError(f"JointTorque function returned shape {f.shape}, expected ({n},)")
        if self._idx is None:
            return f
        tau = np.zeros(self._nv)
        tau[self._idx] = f
        return tau

    def jacobians(self, t, q, v):
        if self.constant is None:
            return None  # a function of (t, q, v): its derivatives are not known
        z = np.zeros((self._nv, self._nv))
        return z, z.copy()


class _Constant:
    """τ(t, q, v) = c, the function of a constant :class:`JointTorque`."""

    def __init__(self, c: NDArray):
        self.c = c

    def __call__(self, t, q, v) -> NDArray:
        return self.c


class SinusoidalTorque(ForceElement):
    """A periodic joint force on a 1-DOF joint, ``τ = offset + amplitude sin(2π f t + phase)``
    (a shaker, a test load); taken by the compiled loops of ``kd.simulate``.
    Non-conservative: its work enters W_nc."""

    def __init__(self, joint: str, amplitude: float, frequency: float, phase: float = 0.0,
                 offset: float = 0.0):
        vals = dict(amplitude=amplitude, frequency=frequency, phase=phase, offset=offset)
        for k, x in vals.items():
            if not np.isfinite(float(x)):
                raise ModelError(f"SinusoidalTorque on {joint!r}: {k} = {x} is not finite")
        self.joint = joint
        self.amplitude, self.frequency = float(amplitude), float(frequency)
        self.phase, self.offset = float(phase), float(offset)
        self._iv: int | None = None
        self._nv = 0

    def __repr__(self) -> str:
        return (f"SinusoidalTorque({self.joint!r}, amplitude={self.amplitude}, "
                f"frequency={self.frequency}, phase={self.phase}, offset={self.offset})")

    def bind(self, system) -> SinusoidalTorque:
        sv = joint_speed_slice(system, self.joint)
        if sv.stop - sv.start != 1:
            raise ModelError(f"SinusoidalTorque: joint {self.joint!r} has "
                             f"{sv.stop - sv.start} speeds; it needs a 1-DOF joint")
        out = SinusoidalTorque(self.joint, self.amplitude, self.frequency, self.phase,
                               self.offset)
        out._iv, out._nv = sv.start, system.nv
        return out

    def generalized_force(self, t, q, v):
        if self._iv is None:
            raise ModelError("SinusoidalTorque used before bind(system)")
        tau = np.zeros(self._nv)
        tau[self._iv] = self.offset + self.amplitude * np.sin(
            2.0 * np.pi * self.frequency * t + self.phase)
        return tau

    def jacobians(self, t, q, v):
        z = np.zeros((self._nv, self._nv))
        return z, z.copy()


class JointSpring(ForceElement):
    """A linear spring on a 1-dof joint: ``τ = −k (q − q_rest)``, ``V = ½ k (q − q_rest)²``.

    Conservative: its potential is part of the energy E, not of W_nc.
    """

    conservative = True

    def __init__(self, joint: str, stiffness: float, rest: float = 0.0):
        if not np.isfinite(stiffness) or stiffness < 0:
            raise ModelError(f"JointSpring on {joint!r}: stiffness {stiffness} must be ≥ 0")
        self.joint, self.k, self.rest = joint, float(stiffness), float(rest)
        self._iq: int | None = None
        self._iv: int | None = None
        self._nv = 0

    def bind(self, system) -> JointSpring:
        model = joint_model(system)
        out = JointSpring(self.joint, self.k, self.rest)
        sv = joint_speed_slice(system, self.joint)
        if sv.stop - sv.start != 1:
            raise ModelError(f"JointSpring: joint {self.joint!r} has {sv.stop - sv.start} "
                             "speeds; a linear spring needs a 1-dof joint")
        if model is not None:
            b = model.bodies[model.joint_index(self.joint)]
            if b.joint.nq != 1:
                raise ModelError(f"JointSpring: joint {self.joint!r} is not 1-dof")
            out._iq = b.iq.start
        elif system.nq == system.nv:
            out._iq = sv.start
        else:
            raise ModelError(f"JointSpring: cannot locate the coordinate of {self.joint!r}")
        out._iv, out._nv = sv.start, system.nv
        return out

    def generalized_force(self, t, q, v):
        tau = np.zeros(self._nv)
        tau[self._iv] = -self.k * (q[self._iq] - self.rest)
        return tau

    def potential(self, q):
        return 0.5 * self.k * (float(q[self._iq]) - self.rest) ** 2

    def jacobians(self, t, q, v):
        dq = np.zeros((self._nv, self._nv))
        dq[self._iv, self._iv] = -self.k
        return dq, np.zeros((self._nv, self._nv))


class JointDamper(ForceElement):
    """Viscous damping on a joint's speeds: ``τ = −c v_j`` (c ≥ 0); dissipates ``c |v_j|²``.

    ``c=None`` takes the joint's own ``damping`` field (from URDF).
    """

    dissipative = True

    def __init__(self, joint: str, c: float | None = None):
        if c is not None and (not np.isfinite(c) or c < 0):
            raise ModelError(f"JointDamper on {joint!r}: coefficient {c} must be ≥ 0")
        self.joint, self.c = joint, c
        self._sv: slice | None = None
        self._nv = 0

    def bind(self, system) -> JointDamper:
        c = self.c
        if c is None:
            model = joint_model(system)
            if model is None:
                raise ModelError(f"JointDamper on {self.joint!r}: give c (no model to read)")
            c = float(model.bodies[model.joint_index(self.joint)].joint.damping)
        out = JointDamper(self.joint, c)
        out._sv, out._nv = joint_speed_slice(system, self.joint), system.nv
        return out

    def generalized_force(self, t, q, v):
        tau = np.zeros(self._nv)
        tau[self._sv] = -self.c * np.asarray(v)[self._sv]
        return tau

    def jacobians(self, t, q, v):
        dv = np.zeros((self._nv, self._nv))
        i = np.arange(self._nv)[self._sv]
        dv[i, i] = -self.c
        return np.zeros((self._nv, self._nv)), dv
