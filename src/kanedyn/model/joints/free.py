"""The free (floating) joint: q = (p, quaternion), v = (ω, v_O) of the child in child axes.

``ṗ = R v_O``, ``q̇_quat = ½ q ⊗ (0, ω)``; ``q ⊕ v dt`` is the SE(3) exponential
of the body twist. The integrators' chart is ``(p, q) ⊕ (φ, ρ) = (p + R ρ, q ⊗ exp φ)``
(SO(3) × R³, not SE(3)). Compiled primitives (below the class; see :mod:`.base`): code
FREE; S = 1 (:attr:`~.base.Joint.identity_columns`, which the kernels' floating-base paths
read), so only the pose and ``q ⊕ v dt`` are compiled here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...spatial import quat_exp, quat_multiply, quat_to_matrix
from ...spatial.lie import (
    quat_difference,
    quat_rate_matrix,
    quat_times_exp,
    se3_right_jacobian,
    skew3,
    so3_exp_matrix,
    so3_left_jacobian,
    so3_right_jacobian,
    so3_right_jacobian_derivative,
)
from .base import Joint, compiled_primitive, random_unit_quaternion, register_joint_type
from .spherical import joint_pose as rotation_pose
from .spherical import (
    quaternion_matrix,
    quaternion_rate,
    quaternion_rotation,
    quaternion_times_exp,
)


@register_joint_type
@dataclass(frozen=True)
class Free(Joint):
    """Floating joint: q = (p, quaternion), v = (ω, v_O) of the child in child axes."""

    nq = 7
    nv = 6
    kind = "free"
    quaternion = slice(3, 7)
    chart_is_additive = False
    compiled_code = "FREE"
    identity_columns = True

    def pose(self, qj):
        return quat_to_matrix(qj[3:7]), np.asarray(qj[:3], dtype=float)

    def symbolic_model(self, qj, uj, ops):
        R = ops.matrix(quaternion_rotation(*qj[3:7]), "RJ")
        # ṗ = R v_O, q̇ = ½ q ⊗ (0, ω)
        pdot = [sum(R[r][k] * uj[3 + k] for k in range(3)) for r in range(3)]
        return R, list(qj[:3]), pdot + quaternion_rate(*qj[3:7], uj[:3], ops.half)

    def motion_subspace(self, qj=None):
        return np.eye(6)

    def kinematic_map(self, qj):
        W = np.zeros((7, 6))
        W[:3, 3:] = quat_to_matrix(qj[3:7])  # ṗ = R v_O
        W[3:, :3] = quat_rate_matrix(qj[3:7])
        return W

    def neutral(self):
        return np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])

    def random_configuration(self, rng, scale=1.0):
        return np.concatenate([rng.uniform(-scale, scale, 3), random_unit_quaternion(rng)])

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

    def exponential_right_jacobian(self, q0, xi):
        return se3_right_jacobian(xi)

    # --- the chart (p + R ρ, q ⊗ exp φ) ---
    @classmethod
    def chart_point(cls, qj, xj):
        out = np.empty(7)
        out[3:] = quat_times_exp(qj[3:7], xj[:3])
        out[:3] = qj[:3] + quat_to_matrix(qj[3:7]) @ xj[3:]
        return out

    @classmethod
    def chart_jacobian(cls, xj):
        J = np.eye(6)
        J[:3, :3] = so3_right_jacobian(xj[:3])
        J[3:, 3:] = so3_exp_matrix(xj[:3]).T
        return J

    @classmethod
    def chart_derivative(cls, xj, wj):
        D = np.zeros((6, 6))
        D[:3, :3] = so3_right_jacobian_derivative(xj[:3], wj[:3])
        # exp(φ + εδ)ᵀ = exp(−ε J_r δ) exp(φ)ᵀ: d/dε exp(φ)ᵀ u = (exp(φ)ᵀ u)× J_r δ
        Rt_u = so3_exp_matrix(xj[:3]).T @ wj[3:]
        D[3:, :3] = skew3(Rt_u) @ so3_right_jacobian(xj[:3])
        return D

    @classmethod
    def chart_end_velocity(cls, xj):
        # W = (φ, exp(φ)ᵀ ρ)
        W = np.array(xj, dtype=float)
        DW = np.eye(6)
        Et = so3_exp_matrix(xj[:3]).T
        u = Et @ xj[3:]
        W[3:] = u
        DW[3:, :3] = skew3(u) @ so3_right_jacobian(xj[:3])
        DW[3:, 3:] = Et
        return W, DW

    @classmethod
    def chart_start_sensitivity(cls, xj):
        K = -np.eye(6)
        K[:3, :3] = -np.linalg.inv(so3_right_jacobian(xj[:3])).T
        K[3:, :3] = skew3(xj[3:6])
        return K


# URDF's "floating" is the free joint
register_joint_type(Free, "floating")


# --- compiled primitives: q = (p, quaternion), v = (ω, v_O) ------------------------------

@compiled_primitive
def translation(q, k):
    """p = q[k:k+3]."""
    return q[k], q[k + 1], q[k + 2]


@compiled_primitive
def joint_pose(q, k, qtol):
    """(bad, R, p): R of the quaternion q[k+3:k+7] as the spherical joint's (bad = 1 when
    it is not unit within qtol), p = q[k:k+3] (the dispatcher inlines these two parts,
    sharing the rotation with the spherical code)."""
    (bad, r00, r01, r02, r10, r11, r12, r20, r21, r22,
     _, _, _) = rotation_pose(q, k + 3, qtol)
    p0, p1, p2 = translation(q, k)
    return bad, r00, r01, r02, r10, r11, r12, r20, r21, r22, p0, p1, p2


@compiled_primitive
def integrate(q, a, v, b, dt, out):
    """The SE(3) exponential of the body twist v dt (as :meth:`Free.integrate`):
    p + R V(ω) v_O and q ⊗ exp(ω), ``V u = u + c1 ω×u + c2 ω×(ω×u)``."""
    w0, w1, w2 = dt * v[b], dt * v[b + 1], dt * v[b + 2]
    u0, u1, u2 = dt * v[b + 3], dt * v[b + 4], dt * v[b + 5]
    th = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    if th < 1e-6:
        c1, c2 = 0.5, 1.0 / 6.0
    else:
        c1 = (1.0 - np.cos(th)) / (th * th)
        c2 = (th - np.sin(th)) / (th * th * th)
    x0, x1, x2 = w1 * u2 - w2 * u1, w2 * u0 - w0 * u2, w0 * u1 - w1 * u0
    y0, y1, y2 = w1 * x2 - w2 * x1, w2 * x0 - w0 * x2, w0 * x1 - w1 * x0
    d0, d1, d2 = u0 + c1 * x0 + c2 * y0, u1 + c1 * x1 + c2 * y1, u2 + c1 * x2 + c2 * y2
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = quaternion_matrix(
        q[a + 3], q[a + 4], q[a + 5], q[a + 6])
    out[a] = q[a] + (r00 * d0 + r01 * d1 + r02 * d2)
    out[a + 1] = q[a + 1] + (r10 * d0 + r11 * d1 + r12 * d2)
    out[a + 2] = q[a + 2] + (r20 * d0 + r21 * d1 + r22 * d2)
    quaternion_times_exp(q, a + 3, w0, w1, w2, out, a + 3)
