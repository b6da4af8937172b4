"""Joint models: transform X_J(q), motion subspace S, and kinematic map q̇ = W(q) v.

Every joint here has a *constant* motion subspace S expressed in the child
(successor) frame, so the joint bias velocity ``c_J = Ṡ v`` is zero. Where the
speeds are not derivatives of the coordinates (spherical, free and planar
joints), the kinematic map ``W(q)`` says how q moves. This is the
Featherstone/Pinocchio convention: v is the joint velocity in child
coordinates.

The joint transform is ``X_J = child_X_jointframe = plucker(R(q).T, p(q))``
with ``R(q), p(q)`` the pose of the child frame in the joint (predecessor)
frame.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..errors import ModelError, StateError
from ..spatial import axis_angle, quat_exp, quat_multiply, quat_to_matrix
from ..spatial.lie import quat_difference, quat_rate_matrix, se2_coefficients, so3_left_jacobian

#: how far from unit norm a quaternion in q may be before it is an error
QUAT_TOL = 1e-4


def _unit_axis(axis, joint: str) -> NDArray:
    a = np.asarray(axis, dtype=float).reshape(3)
    n = np.linalg.norm(a)
    if not np.isfinite(n) or n < 1e-12:
        raise ModelError(f"joint {joint!r}: axis {a} is zero or not finite")
    return a / n


def _checked_quat(qj: NDArray, joint: str) -> NDArray:
    n = np.linalg.norm(qj)
    if not abs(n - 1.0) <= QUAT_TOL:
        raise StateError(
            f"joint {joint!r}: quaternion {qj} has norm {n:.6g}, not 1 "
            f"(tolerance {QUAT_TOL}); normalise it or integrate with integrate_configuration"
        )
    return qj / n


@dataclass(frozen=True)
class JointLimits:
    """Joint limits and dynamics data as URDF gives them (used by force elements)."""

    lower: float | None = None
    upper: float | None = None
    effort: float | None = None
    velocity: float | None = None


@dataclass(frozen=True)
class Joint:
    """Base class. Subclasses define ``nq``, ``nv``, ``kind`` and the maps.

    ``damping`` and ``friction`` are used by force elements; ``armature`` (finite, ≥ 0,
    checked by ModelBuilder) is a rotor inertia added to M's diagonal at each of the
    joint's speeds (MuJoCo's ``dof_armature``, Pinocchio's ``model.armature``), which
    every numeric algorithm honours."""

    name: str
    damping: float = 0.0
    friction: float = 0.0
    armature: float = 0.0
    limits: JointLimits = field(default_factory=JointLimits)

    nq = 0
    nv = 0
    kind = "joint"

    # --- the joint model -------------------------------------------------
    def pose(self, qj: NDArray) -> tuple[NDArray, NDArray]:
        """Pose (R, p) of the child frame in the joint frame."""
        raise NotImplementedError

    def motion_subspace(self, qj: NDArray | None = None) -> NDArray:
        """S (6 x nv), in child coordinates, constant for every joint here."""
        raise NotImplementedError

    def kinematic_map(self, qj: NDArray) -> NDArray:
        """W(q) (nq x nv) with ``q̇_j = W(q_j) v_j``."""
        return np.eye(self.nq, self.nv)

    def neutral(self) -> NDArray:
        return np.zeros(self.nq)

    def integrate(self, qj: NDArray, vj: NDArray, dt: float) -> NDArray:
        """Configuration reached from q_j at constant speed v_j after dt (on the manifold)."""
        return qj + dt * vj

    def difference(self, q0: NDArray, q1: NDArray) -> NDArray:
        """The constant speed v that takes q0 to q1 in unit time (inverse of integrate)."""
        return q1 - q0

    def check(self, qj: NDArray) -> NDArray:
        """Validate this joint's part of q; returns it (normalised where it is a quaternion)."""
        return qj

    # --- derived ------------------------------------------------------------
    def transform(self, qj: NDArray) -> NDArray:
        """X_J (6x6) = child_X_jointframe."""
        from ..spatial import plucker

        R, p = self.pose(qj)
        return plucker(R.T, p)

    @property
    def is_fixed(self) -> bool:
        return self.nv == 0


@dataclass(frozen=True)
class Fixed(Joint):
    """No motion; merged into the parent body when a Model is built."""

    kind = "fixed"

    def pose(self, qj):
        return np.eye(3), np.zeros(3)

    def motion_subspace(self, qj=None):
        return np.zeros((6, 0))


@dataclass(frozen=True)
class Revolute(Joint):
    """Rotation by q about a unit axis of the joint frame (URDF revolute and continuous)."""

    axis: tuple = (0.0, 0.0, 1.0)
    continuous: bool = False
    nq = 1
    nv = 1
    kind = "revolute"

    def __post_init__(self):
        object.__setattr__(self, "axis", tuple(_unit_axis(self.axis, self.name)))

    def pose(self, qj):
        return axis_angle(self.axis, float(qj[0])), np.zeros(3)

    def motion_subspace(self, qj=None):
        S = np.zeros((6, 1))
        S[:3, 0] = self.axis
        return S


@dataclass(frozen=True)
class Prismatic(Joint):
    """Translation by q along a unit axis of the joint frame."""

    axis: tuple = (0.0, 0.0, 1.0)
    nq = 1
    nv = 1
    kind = "prismatic"

    def __post_init__(self):
        object.__setattr__(self, "axis", tuple(_unit_axis(self.axis, self.name)))

    def pose(self, qj):
        return np.eye(3), float(qj[0]) * np.asarray(self.axis)

    def motion_subspace(self, qj=None):
        S = np.zeros((6, 1))
        S[3:, 0] = self.axis
        return S


@dataclass(frozen=True)
class Helical(Joint):
    """Screw motion: rotation q about the axis with translation ``pitch * q`` along it."""

    axis: tuple = (0.0, 0.0, 1.0)
    pitch: float = 0.0
    nq = 1
    nv = 1
    kind = "helical"

    def __post_init__(self):
        object.__setattr__(self, "axis", tuple(_unit_axis(self.axis, self.name)))

    def pose(self, qj):
        a = np.asarray(self.axis)
        return axis_angle(a, float(qj[0])), self.pitch * float(qj[0]) * a

    def motion_subspace(self, qj=None):
        a = np.asarray(self.axis)
        S = np.zeros((6, 1))
        S[:3, 0] = a
        S[3:, 0] = self.pitch * a  # the axis passes through the origin, so v_O = h a
        return S


@dataclass(frozen=True)
class Planar(Joint):
    """Motion in the joint frame's xy-plane: q = (x, y, θ), v = (v_x, v_y, ω_z) in child axes.

    As in Pinocchio, the speeds are the child's velocity in its own axes, so
    ``q̇ = W(q) v`` with W rotating (v_x, v_y) by θ.
    """

    nq = 3
    nv = 3
    kind = "planar"

    def pose(self, qj):
        x, y, th = (float(t) for t in qj)
        c, s = np.cos(th), np.sin(th)
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]), np.array([x, y, 0.0])

    def motion_subspace(self, qj=None):
        S = np.zeros((6, 3))
        S[3, 0] = 1.0  # v_x
        S[4, 1] = 1.0  # v_y
        S[2, 2] = 1.0  # ω_z
        return S

    def kinematic_map(self, qj):
        c, s = np.cos(qj[2]), np.sin(qj[2])
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])

    def integrate(self, qj, vj, dt):
        # exact flow of SE(2) with constant body twist
        vx, vy, w = (float(t) * dt for t in vj)
        th = float(qj[2])
        a, b = se2_coefficients(w)
        dx, dy = a * vx - b * vy, b * vx + a * vy
        c, s = np.cos(th), np.sin(th)
        return np.array([qj[0] + c * dx - s * dy, qj[1] + s * dx + c * dy, th + w])

    def difference(self, q0, q1):
        w = float(q1[2] - q0[2])
        c, s = np.cos(q0[2]), np.sin(q0[2])
        dx0, dy0 = q1[0] - q0[0], q1[1] - q0[1]
        dx, dy = c * dx0 + s * dy0, -s * dx0 + c * dy0  # displacement in the start's axes
        a, b = se2_coefficients(w)
        det = a * a + b * b  # [a -b; b a]⁻¹ = [a b; -b a] / det
        return np.array([(a * dx + b * dy) / det, (-b * dx + a * dy) / det, w])


@dataclass(frozen=True)
class Spherical(Joint):
    """Ball joint: q = unit quaternion (w, x, y, z), v = angular velocity in child axes."""

    nq = 4
    nv = 3
    kind = "spherical"

    def pose(self, qj):
        return quat_to_matrix(qj), np.zeros(3)

    def motion_subspace(self, qj=None):
        S = np.zeros((6, 3))
        S[:3, :3] = np.eye(3)
        return S

    def kinematic_map(self, qj):
        return quat_rate_matrix(qj)

    def neutral(self):
        return np.array([1.0, 0.0, 0.0, 0.0])

    def check(self, qj):
        return _checked_quat(qj, self.name)

    def integrate(self, qj, vj, dt):
        return quat_multiply(qj, quat_exp(dt * np.asarray(vj, dtype=float)))

    def difference(self, q0, q1):
        return quat_difference(q0, q1)


@dataclass(frozen=True)
class Free(Joint):
    """Floating joint: q = (p, quaternion), v = (ω, v_O) of the child in child axes."""

    nq = 7
    nv = 6
    kind = "free"

    def pose(self, qj):
        return quat_to_matrix(qj[3:7]), np.asarray(qj[:3], dtype=float)

    def motion_subspace(self, qj=None):
        return np.eye(6)

    def kinematic_map(self, qj):
        W = np.zeros((7, 6))
        W[:3, 3:] = quat_to_matrix(qj[3:7])  # ṗ = R v_O
        W[3:, :3] = quat_rate_matrix(qj[3:7])
        return W

    def neutral(self):
        return np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])

    def check(self, qj):
        out = np.array(qj, dtype=float)
        out[3:7] = _checked_quat(qj[3:7], self.name)
        return out

    def integrate(self, qj, vj, dt):
        # exponential map of SE(3) for a constant body twist (ω, v)
        w, v = dt * np.asarray(vj[:3], dtype=float), dt * np.asarray(vj[3:], dtype=float)
        R = quat_to_matrix(qj[3:7])
        V = so3_left_jacobian(w)
        out = np.empty(7)
        out[:3] = qj[:3] + R @ (V @ v)
        out[3:] = quat_multiply(qj[3:7], quat_exp(w))
        return out

    def difference(self, q0, q1):
        w = quat_difference(q0[3:7], q1[3:7])
        R0 = quat_to_matrix(q0[3:7])
        V = so3_left_jacobian(w)
        v = np.linalg.solve(V, R0.T @ (q1[:3] - q0[:3]))
        return np.concatenate([w, v])


#: joint type name (URDF's, and the builders') -> its Joint class
JOINT_TYPES = {
    "fixed": Fixed,
    "revolute": Revolute,
    "continuous": Revolute,
    "prismatic": Prismatic,
    "helical": Helical,
    "planar": Planar,
    "spherical": Spherical,
    "free": Free,
    "floating": Free,
}

