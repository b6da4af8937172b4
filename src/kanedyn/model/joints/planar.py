"""The planar joint: motion in the joint frame's xy-plane, q = (x, y, θ).

v = (v_x, v_y, ω_z) is the child's velocity in its own axes (as in Pinocchio),
so ``q̇ = W(q) v`` with W rotating (v_x, v_y) by θ; ``q ⊕ v dt`` is the exact
flow of SE(2). The integrators' chart is ``(x, y, θ) ⊕ (ρ, ψ) = (p + R(θ) ρ, θ + ψ)``.
Compiled primitives (below the class; see :mod:`.base`): code PLANAR.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...spatial.lie import se2_coefficients
from .base import Joint, compiled_primitive, register_joint_type


def _rotation(th: float) -> np.ndarray:
    c, s = np.cos(th), np.sin(th)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


@register_joint_type
@dataclass(frozen=True)
class Planar(Joint):
    """Motion in the joint frame's xy-plane: q = (x, y, θ), v = (v_x, v_y, ω_z) in child axes.

    As in Pinocchio, the speeds are the child's velocity in its own axes, so
    ``q̇ = W(q) v`` with W rotating (v_x, v_y) by θ.
    """

    nq = 3
    nv = 3
    kind = "planar"
    chart_is_additive = False
    compiled_code = "PLANAR"

    def pose(self, qj):
        x, y, th = (float(t) for t in qj)
        return _rotation(th), np.array([x, y, 0.0])

    def symbolic_model(self, qj, uj, ops):
        s, c = ops.sincos(qj[2])
        zero, one = ops.number(0.0), ops.number(1.0)
        R = [[c, -s, zero], [s, c, zero], [zero, zero, one]]
        return R, [qj[0], qj[1], zero], [c * uj[0] - s * uj[1], s * uj[0] + c * uj[1], uj[2]]

    def motion_subspace(self, qj=None):
        S = np.zeros((6, 3))
        S[3, 0] = 1.0  # v_x
        S[4, 1] = 1.0  # v_y
        S[2, 2] = 1.0  # ω_z
        return S

    def kinematic_map(self, qj):
        return _rotation(qj[2])

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

    # --- the chart (x, y, θ) ⊕ (ρ, ψ) = (p + R(θ) ρ, θ + ψ) ---
    @classmethod
    def chart_point(cls, qj, xj):
        c, s = np.cos(qj[2]), np.sin(qj[2])
        return np.array([qj[0] + c * xj[0] - s * xj[1], qj[1] + s * xj[0] + c * xj[1],
                         qj[2] + xj[2]])

    @classmethod
    def chart_jacobian(cls, xj):
        c, s = np.cos(xj[2]), np.sin(xj[2])
        J = np.eye(3)
        J[:2, :2] = ((c, s), (-s, c))  # R(−ψ)
        return J

    @classmethod
    def chart_derivative(cls, xj, wj):
        c, s = np.cos(xj[2]), np.sin(xj[2])
        u0, u1 = wj[0], wj[1]
        D = np.zeros((3, 3))
        # d/dψ R(−ψ) u = R(−ψ) (u_y, −u_x)
        D[0, 2] = c * u1 + s * (-u0)
        D[1, 2] = -s * u1 + c * (-u0)
        return D

    @classmethod
    def chart_end_velocity(cls, xj):
        # W = (R(−ψ) ρ, ψ)
        c, s = np.cos(xj[2]), np.sin(xj[2])
        r0, r1 = xj[0], xj[1]
        W = np.array(xj, dtype=float)
        DW = np.eye(3)
        W[0], W[1] = c * r0 + s * r1, -s * r0 + c * r1
        DW[:2, :2] = ((c, s), (-s, c))
        DW[0, 2] = c * r1 + s * (-r0)
        DW[1, 2] = -s * r1 + c * (-r0)
        return W, DW

    @classmethod
    def chart_start_sensitivity(cls, xj):
        # dρ = −δv + δψ (ρ_y, −ρ_x), dψ = −δψ
        K = -np.eye(3)
        K[0, 2], K[1, 2] = xj[1], -xj[0]
        return K


# --- compiled primitives: q = (x, y, θ), speeds (v_x, v_y, ω_z) -------------------------

@compiled_primitive
def joint_pose(q, k):
    """(0, R = rot_z(θ), p = (x, y, 0))."""
    c = np.cos(q[k + 2])
    s = np.sin(q[k + 2])
    return 0, c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0, q[k], q[k + 1], 0.0


@compiled_primitive
def motion_subspace_column(c):
    """S[:, c]: e_3 (v_x), e_4 (v_y), e_2 (ω_z)."""
    return (0.0, 0.0, 1.0 if c == 2 else 0.0, 1.0 if c == 0 else 0.0,
            1.0 if c == 1 else 0.0, 0.0)


@compiled_primitive
def motion_subspace_times(x, o):
    """S x = (0, 0, ω_z, v_x, v_y, 0)."""
    return 0.0, 0.0, x[o + 2], x[o], x[o + 1], 0.0


@compiled_primitive
def motion_subspace_transpose_times(F, k, c):
    """S[:, c]ᵀ f: f_x, f_y, n_z of F[k]."""
    return F[k, 3 + c if c < 2 else 2]


@compiled_primitive
def integrate(q, a, v, b, dt, out):
    """The exact SE(2) flow of the body twist v dt (as :meth:`Planar.integrate`)."""
    vx, vy, w = dt * v[b], dt * v[b + 1], dt * v[b + 2]
    th = q[a + 2]
    if abs(w) < 1e-9:
        s1, s2 = 1.0 - w * w / 6.0, w / 2.0
    else:
        s1, s2 = np.sin(w) / w, (1.0 - np.cos(w)) / w
    dx, dy = s1 * vx - s2 * vy, s2 * vx + s1 * vy
    c, s = np.cos(th), np.sin(th)
    out[a] = q[a] + c * dx - s * dy
    out[a + 1] = q[a + 1] + s * dx + c * dy
    out[a + 2] = th + w
