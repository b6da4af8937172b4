"""The spherical (ball) joint: q = unit quaternion (w, x, y, z), v = ω in child axes.

``q̇ = ½ q ⊗ (0, ω)``; ``q ⊕ v dt = q ⊗ exp(dt ω)`` (exact, stays unit); the
chart ``q ⊕ x = q ⊗ exp(x)`` with J = J_r of SO(3) (Barfoot 2017, 7.1.5).
Compiled primitives (below the class; see :mod:`.base`): code SPHERICAL; S = [1; 0]
(:attr:`~.base.Joint.identity_columns`), so only the pose and ``q ⊕ v dt`` are compiled
here, with the quaternion maths the free joint shares.
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
from .base import Joint, compiled_primitive, random_unit_quaternion, register_joint_type


def quaternion_rotation(w, x, y, z) -> list:
    """The rotation of a unit quaternion (w, x, y, z) as nested lists (as
    :func:`kanedyn.spatial.quat_to_matrix`), of numbers or symbols."""
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]]


def quaternion_rate(w, x, y, z, om, half) -> list:
    """``q̇ = ½ q ⊗ (0, ω)`` for the body angular velocity ω (``half`` = ½ as the caller
    writes it)."""
    G = [[-x, -y, -z], [w, -z, y], [z, w, -x], [-y, x, w]]
    return [half * (G[k][0] * om[0] + G[k][1] * om[1] + G[k][2] * om[2]) for k in range(4)]


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
    identity_columns = True

    def pose(self, qj):
        return quat_to_matrix(qj), np.zeros(3)

    def symbolic_model(self, qj, uj, ops):
        zero = ops.number(0.0)
        R = ops.matrix(quaternion_rotation(*qj), "RJ")
        return R, [zero] * 3, quaternion_rate(*qj, uj, ops.half)

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


# --- compiled primitives --------------------------------------------------------------

@compiled_primitive
def quaternion_matrix(w, x, y, z):
    """R (row-major) of the unit quaternion (w, x, y, z)."""
    return (1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y))


@compiled_primitive
def joint_pose(q, k, qtol):
    """(bad, R, p = 0) of the quaternion q[k:k+4]: bad = 1 (R, p zero) when its norm is
    off 1 by more than qtol, else R of the normalised quaternion."""
    w, x, y, z = q[k], q[k + 1], q[k + 2], q[k + 3]
    n = np.sqrt(w * w + x * x + y * y + z * z)
    if abs(n - 1.0) > qtol:
        return 1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = quaternion_matrix(w / n, x / n, y / n, z / n)
    return 0, r00, r01, r02, r10, r11, r12, r20, r21, r22, 0.0, 0.0, 0.0


@compiled_primitive
def quaternion_times_exp(q, k, w0, w1, w2, out, o):
    """out[o:o+4] = q[k:k+4] ⊗ exp((w0, w1, w2)), normalised (the norm stays 1 to
    roundoff over any number of steps: no √N ε random walk)."""
    th = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    c = np.cos(0.5 * th)
    s = 0.5 - th * th / 48.0 if th < 1e-6 else np.sin(0.5 * th) / th
    bw, bx, by, bz = c, s * w0, s * w1, s * w2
    aw, ax, ay, az = q[k], q[k + 1], q[k + 2], q[k + 3]
    rw = aw * bw - ax * bx - ay * by - az * bz
    rx = aw * bx + ax * bw + ay * bz - az * by
    ry = aw * by - ax * bz + ay * bw + az * bx
    rz = aw * bz + ax * by - ay * bx + az * bw
    n = np.sqrt(rw * rw + rx * rx + ry * ry + rz * rz)
    out[o], out[o + 1], out[o + 2], out[o + 3] = rw / n, rx / n, ry / n, rz / n


@compiled_primitive
def integrate(q, a, v, b, dt, out):
    """q ⊗ exp(dt ω) (as :meth:`Spherical.integrate`)."""
    quaternion_times_exp(q, a, dt * v[b], dt * v[b + 1], dt * v[b + 2], out, a)
