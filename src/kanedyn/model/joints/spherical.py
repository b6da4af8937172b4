"""The spherical (ball) joint: q = unit quaternion (w, x, y, z), v = ω in child axes.

``q̇ = ½ q ⊗ (0, ω)``; ``q ⊕ v dt = q ⊗ exp(dt ω)`` (exact, stays unit); the
chart ``q ⊕ x = q ⊗ exp(x)`` with J = J_r of SO(3) (Barfoot 2017, 7.1.5).
Compiled primitives: code SPHERICAL.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...spatial import quat_exp, quat_multiply, quat_to_matrix
from ...spatial.lie import (
    quat_difference,
    quat_rate_matrix,
    quat_times_exp,
    so3_right_jacobian,
    so3_right_jacobian_derivative,
)
from .base import Joint, random_unit_quaternion, register_joint_type


@register_joint_type
@dataclass(frozen=True)
class Spherical(Joint):
    """Ball joint: q = unit quaternion (w, x, y, z), v = angular velocity in child axes."""

    nq = 4
    nv = 3
    kind = "spherical"
    quaternion = slice(0, 4)
    chart_is_additive = False
    compiled_code = "SPHERICAL"

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

    def random_configuration(self, rng, scale=1.0):
        return random_unit_quaternion(rng)

    def integrate(self, qj, vj, dt):
        return quat_multiply(qj, quat_exp(dt * np.asarray(vj, dtype=float)))

    def difference(self, q0, q1):
        return quat_difference(q0, q1)

    def exponential_right_jacobian(self, q0, xi):
        return so3_right_jacobian(xi)

    # --- the chart q ⊗ exp(x) ---
    @classmethod
    def chart_point(cls, qj, xj):
        return quat_times_exp(qj, xj)

    @classmethod
    def chart_jacobian(cls, xj):
        return so3_right_jacobian(xj)

    @classmethod
    def chart_derivative(cls, xj, wj):
        return so3_right_jacobian_derivative(xj, wj)

    @classmethod
    def chart_start_sensitivity(cls, xj):
        return -np.linalg.inv(so3_right_jacobian(xj)).T
