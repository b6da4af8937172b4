"""Local canonical coordinates for the Hamiltonian methods on ball, free and planar joints.

Around the configuration q_n at the start of a step, a chart ``q = φ_n(x)`` with φ_n(0) = q_n
gives coordinates x ∈ R^nv, the velocity map ``v = J(x) ẋ``, and the momentum conjugate to x,

    p = J(x)ᵀ M(q) v,          H(x, p) = ½ pᵀ J⁻¹M⁻¹J⁻ᵀ p + V(φ_n(x)) = E(q, v),

a Hamiltonian system in canonical form (the cotangent lift of the chart). At x = 0, J = 1
and p = M v, so every chart centred on the current configuration agrees with the others
there: a step taken in the chart of q_n and read back as (q, v) is a step of the method in
the manifold's own canonical structure, re-centred at the next step. E does not depend on
the chart, so a discrete gradient of H conserves E exactly.

The chart of each joint (``ModelChart``):

- revolute, prismatic, helical: ``q = q_n + x``, J = 1;
- spherical: ``quat = quat_n ⊗ exp(x)`` (the quaternion only moves by the exponential map),
  ``J = J_r(x)``, the right Jacobian of SO(3) (Barfoot 2017, eq. 7.77b);
- free: the rotation as for a ball joint, the position additively in the start's axes,
  ``p = p_n + R_n ρ``; with body velocity (ω, v_O), ``J = diag(J_r(φ), exp(φ)ᵀ)``
  (SO(3) x R³; the SE(3) exponential of the joint's own integrate() would need the
  derivative of the SE(3) right Jacobian, which has no short closed form);
- planar: ``(x, y) = (x_n, y_n) + R(θ_n) ρ``, ``θ = θ_n + ψ``, ``J = diag(R(−ψ), 1)``.

Hamilton's equations need ``∂H/∂x|_p = Jᵀ(∂V/∂q − ∂T/∂q|_v) − D(x, ẋ)ᵀ M v`` (the Legendre
transform ∂H/∂x = −∂L/∂x with L = ½ (Jẋ)ᵀ M (Jẋ) − V), where ``D(x, w) δ = d/dε J(x + εδ) w``,
given here in closed form; for SO(3), with a = (1 − cos θ)/θ², b = (θ − sin θ)/θ³,
``J_r w = w − a x×w + b x×(x×w)`` and

    D = a w× − b ((x×w)× + x× w×) + (b'/θ · x×(x×w) − a'/θ · x×w) xᵀ

(the SO(3) maths, J_r, D, exp and the quaternion update, is :mod:`kanedyn.spatial.lie`'s).

A system that is not a Model gets :class:`ProtocolChart`: ``q_n ⊕ x`` and J(x) from the
protocol (``integrate_configuration``, ``chart_jacobian``), no D — enough for Itoh–Abe,
which needs energy values only.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..spatial import quat_to_matrix
from ..spatial.lie import (
    quat_times_exp,
    skew3,
    so3_exp_matrix,
    so3_right_jacobian,
    so3_right_jacobian_derivative,
)
from .base import (
    chart_jacobian,
    gravity_torques,
    kinetic_energy_gradient,
    solve_spd,
)


class ModelChart:
    """The per-joint charts of the module doc for a system that declares them
    (``has_chart``, ``chart_joints``)."""

    has_derivative = True

    def __init__(self, system):
        self.system = system
        self.nv = system.nv
        self.blocks = []  # (kind, iq, iv) for every non-additive joint
        self.add_q, self.add_v = [], []
        for kind, iq, iv in system.chart_joints:
            if kind in ("revolute", "prismatic", "helical"):
                self.add_q.extend(range(iq.start, iq.stop))
                self.add_v.extend(range(iv.start, iv.stop))
            elif kind in ("spherical", "free", "planar"):
                self.blocks.append((kind, iq, iv))
            else:
                raise ValueError(kind)
        self.add_q = np.array(self.add_q, dtype=int)
        self.add_v = np.array(self.add_v, dtype=int)

    #: the joint kinds this chart knows
    KINDS = ("revolute", "prismatic", "helical", "spherical", "free", "planar")

    @classmethod
    def applies(cls, system) -> bool:
        """The system declares per-joint charts (``has_chart``, ``chart_joints``: a
        capability, see :mod:`kanedyn.sim.system`) of kinds this chart knows."""
        if not getattr(system, "has_chart", False):
            return False
        return all(kind in cls.KINDS for kind, _, _ in system.chart_joints)

    def point(self, qn: NDArray, x: NDArray) -> NDArray:
        q = np.array(qn, dtype=float)
        q[self.add_q] += x[self.add_v]
        for kind, iq, iv in self.blocks:
            xj, qj = x[iv], qn[iq]
            if kind == "spherical":
                q[iq] = quat_times_exp(qj, xj)
            elif kind == "free":
                q[iq.start + 3:iq.stop] = quat_times_exp(qj[3:7], xj[:3])
                q[iq.start:iq.start + 3] = qj[:3] + quat_to_matrix(qj[3:7]) @ xj[3:]
            else:  # planar: (x, y, θ)
                c, s = np.cos(qj[2]), np.sin(qj[2])
                q[iq] = (qj[0] + c * xj[0] - s * xj[1], qj[1] + s * xj[0] + c * xj[1],
                         qj[2] + xj[2])
        return q

    def jacobian(self, qn: NDArray, x: NDArray) -> NDArray:
        J = np.eye(self.nv)
        for kind, _, iv in self.blocks:
            xj = x[iv]
            if kind == "spherical":
                J[iv, iv] = so3_right_jacobian(xj)
            elif kind == "free":
                i = iv.start
                J[i:i + 3, i:i + 3] = so3_right_jacobian(xj[:3])
                J[i + 3:i + 6, i + 3:i + 6] = so3_exp_matrix(xj[:3]).T
            else:
                c, s = np.cos(xj[2]), np.sin(xj[2])
                i = iv.start
                J[i:i + 2, i:i + 2] = ((c, s), (-s, c))  # R(−ψ)
        return J

    def derivative(self, qn: NDArray, x: NDArray, w: NDArray) -> NDArray:
        """D with ``D δ = d/dε J(x + εδ) w`` (zero on additive joints)."""
        D = np.zeros((self.nv, self.nv))
        for kind, _, iv in self.blocks:
            xj, wj = x[iv], w[iv]
            i = iv.start
            if kind == "spherical":
                D[iv, iv] = so3_right_jacobian_derivative(xj, wj)
            elif kind == "free":
                D[i:i + 3, i:i + 3] = so3_right_jacobian_derivative(xj[:3], wj[:3])
                # exp(φ + εδ)ᵀ = exp(−ε J_r δ) exp(φ)ᵀ: d/dε exp(φ)ᵀ u = (exp(φ)ᵀ u)× J_r δ
                Rt_u = so3_exp_matrix(xj[:3]).T @ wj[3:]
                D[i + 3:i + 6, i:i + 3] = skew3(Rt_u) @ so3_right_jacobian(xj[:3])
            else:
                c, s = np.cos(xj[2]), np.sin(xj[2])
                u0, u1 = wj[0], wj[1]
                # d/dψ R(−ψ) u = R(−ψ) (u_y, −u_x)
                D[i, i + 2] = c * u1 + s * (-u0)
                D[i + 1, i + 2] = -s * u1 + c * (-u0)
        return D


    # --- what the variational (discrete Lagrangian) form of Verlet needs ---------------
    def end_velocity(self, x: NDArray) -> tuple[NDArray, NDArray]:
        """(W, ∂W/∂x) with W(x) = J(x) x: h times the body velocity, at q = φ_n(x), of the
        chart curve s ↦ φ_n(s x). W = x on exponential charts (J_r(x) x = x); the free
        joint's position block is exp(φ)ᵀρ, the planar one R(−ψ)ρ."""
        W = np.array(x, dtype=float)
        DW = np.eye(self.nv)
        for kind, _, iv in self.blocks:
            i, xj = iv.start, x[iv]
            if kind == "free":
                Et = so3_exp_matrix(xj[:3]).T
                u = Et @ xj[3:]
                W[i + 3:i + 6] = u
                DW[i + 3:i + 6, i:i + 3] = skew3(u) @ so3_right_jacobian(xj[:3])
                DW[i + 3:i + 6, i + 3:i + 6] = Et
            elif kind == "planar":
                c, s = np.cos(xj[2]), np.sin(xj[2])
                r0, r1 = xj[0], xj[1]
                W[i], W[i + 1] = c * r0 + s * r1, -s * r0 + c * r1
                DW[i:i + 2, i:i + 2] = ((c, s), (-s, c))
                DW[i, i + 2] = c * r1 + s * (-r0)
                DW[i + 1, i + 2] = -s * r1 + c * (-r0)
        return W, DW

    def start_sensitivity(self, x: NDArray) -> NDArray:
        """K with ``dx = K δ`` when the chart's centre moves by ``q_n ⊕ εδ`` (body velocity δ)
        and the point φ_n(x) stays: −1 on additive joints, −J_l(x)⁻¹ = −J_r(x)⁻ᵀ on
        exponential charts (log(exp(−εδ) exp(x))), and for the translations of the free and
        planar charts ``dρ = −δv + ρ × δω`` resp. ``dρ = −δv + δψ (ρ_y, −ρ_x)``."""
        K = -np.eye(self.nv)
        for kind, _, iv in self.blocks:
            i, xj = iv.start, x[iv]
            if kind == "spherical":
                K[iv, iv] = -np.linalg.inv(so3_right_jacobian(xj)).T
            elif kind == "free":
                K[i:i + 3, i:i + 3] = -np.linalg.inv(so3_right_jacobian(xj[:3])).T
                K[i + 3:i + 6, i:i + 3] = skew3(xj[3:6])
            else:
                K[i, i + 2], K[i + 1, i + 2] = xj[1], -xj[0]
        return K


class ProtocolChart:
    """``q_n ⊕ x`` and J(x) from the system protocol alone (no D)."""

    has_derivative = False

    def __init__(self, system):
        self.system = system

    def point(self, qn, x):
        return self.system.integrate_configuration(qn, x, 1.0)

    def jacobian(self, qn, x):
        # J(0) = 1 exactly: the step starts from p = M v, and the protocol's fallback J (by
        # differences, ≈ 1e-10) would otherwise make H(0, p) differ from E(q, v)
        if not np.any(x):
            return np.eye(self.system.nv)
        J = chart_jacobian(self.system, qn, x)
        return np.eye(self.system.nv) if J is None else J

    def derivative(self, qn, x, w):  # pragma: no cover - guarded by has_derivative
        raise NotImplementedError


def make_chart(system):
    return ModelChart(system) if ModelChart.applies(system) else ProtocolChart(system)


class AdditiveHamiltonian:
    """H(x, p) with q = q_n + x and p = M v: the canonical variables of additive joints, in
    the same interface as :class:`~kanedyn.integrators.chart.ChartHamiltonian`."""

    def __init__(self, problem, qn):
        self.problem, self.system, self.qn = problem, problem.system, qn

    def energy(self, x, p):
        q = self.qn + x
        return self.problem.energy(q, solve_spd(self.system.mass_matrix(q), p))

    def gradient(self, x, p):
        a, b, v = self.problem.hamiltonian_gradient(self.qn + x, p)
        return a, b, None, v, None

    def inverse_mass(self, x):
        return np.linalg.inv(self.system.mass_matrix(self.qn + x))

    def state(self, x, p):
        q = self.qn + x
        return q, solve_spd(self.system.mass_matrix(q), p), None

    def velocity(self, x, p):
        """ẋ = ∂H/∂p = M⁻¹ p."""
        return solve_spd(self.system.mass_matrix(self.qn + x), p)


class ChartHamiltonian:
    """H(x, p) of the module doc in the chart centred on ``qn``, and what the methods need."""

    def __init__(self, problem, chart, qn: NDArray):
        self.problem, self.chart, self.qn = problem, chart, np.asarray(qn, float)
        self.system = problem.system

    def _state(self, x: NDArray, p: NDArray):
        q = self.chart.point(self.qn, x)
        J = self.chart.jacobian(self.qn, x)
        try:
            pv = np.linalg.solve(J.T, p)  # M v
        except np.linalg.LinAlgError:
            # |x| = 2π: the chart of a ball joint ends there. NaN lets Newton see a
            # diverging iterate (and restart, or report the step) instead of a crash
            nan = np.full(p.size, np.nan)
            return q, nan, J, nan
        return q, solve_spd(self.system.mass_matrix(q), pv), J, pv

    def state(self, x: NDArray, p: NDArray) -> tuple[NDArray, NDArray, NDArray]:
        """(q, v, J) at (x, p): v = M⁻¹ J⁻ᵀ p."""
        return self._state(x, p)[:3]

    def velocity(self, x: NDArray, p: NDArray) -> NDArray:
        """ẋ = ∂H/∂p = J⁻¹ v."""
        q, v, J, _ = self._state(x, p)
        return np.linalg.solve(J, v)

    def energy(self, x: NDArray, p: NDArray) -> float:
        q, v = self._state(x, p)[:2]
        return self.problem.energy(q, v)

    def inverse_mass(self, x: NDArray) -> NDArray:
        """∂²H/∂p² = J⁻¹ M⁻¹ J⁻ᵀ."""
        q = self.chart.point(self.qn, x)
        J = self.chart.jacobian(self.qn, x)
        Ji = np.linalg.inv(J)
        return Ji @ np.linalg.inv(self.system.mass_matrix(q)) @ Ji.T

    def gradient(self, x: NDArray, p: NDArray) -> tuple:
        """(∂H/∂x, ∂H/∂p = ẋ, q, v, J) at (x, p)."""
        P, s = self.problem, self.system
        q, v, J, pv = self._state(x, p)
        if hasattr(s, "hamiltonian_terms"):
            dT, dV = s.hamiltonian_terms(q, v)
        else:
            dT, dV = kinetic_energy_gradient(s, q, v), gravity_torques(s, q)
        if P.tau_cons is not None:
            dV = dV - P.tau_cons(q)
        xdot = np.linalg.solve(J, v)
        gx = J.T @ (dV - dT)
        if self.chart.has_derivative:
            gx = gx - self.chart.derivative(self.qn, x, xdot).T @ pv
        return gx, xdot, q, v, J


def canonical_coordinates(problem, chart, qn):
    """The canonical variables centred on qn: (q − q_n, M v) when ``chart`` is None (additive
    joints), else those of the chart (module doc)."""
    if chart is None:
        return AdditiveHamiltonian(problem, qn)
    return ChartHamiltonian(problem, chart, qn)
