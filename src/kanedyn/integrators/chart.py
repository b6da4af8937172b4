"""Local canonical coordinates for the Hamiltonian methods on ball, free and planar joints.

Around the configuration q_n at the start of a step, a chart ``q = φ_n(x)`` with φ_n(0) = q_n
gives coordinates x ∈ R^nv, the velocity map ``v = J(x) ẋ``, and the momentum conjugate to x,

    p = J(x)ᵀ M(q) v,          H(x, p) = ½ pᵀ J⁻¹M⁻¹J⁻ᵀ p + V(φ_n(x)) = E(q, v),

a Hamiltonian system in canonical form (the cotangent lift of the chart). At x = 0, J = 1
and p = M v, so every chart centred on the current configuration agrees with the others
there: a step taken in the chart of q_n and read back as (q, v) is a step of the method in
the manifold's own canonical structure, re-centred at the next step. E does not depend on
the chart, so a discrete gradient of H conserves E exactly.

The chart of each joint (``ModelChart``; each is its joint type's ``chart_*`` methods in
:mod:`kanedyn.model.joints`, reached through the system's ``chart_types``):

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
which needs energy values only. A compiled Kane tree with quaternions (or speeds other
than q̇) gets :class:`SystemChart`: that chart with D and the start sensitivity from its
generated ∂q̇/∂q (``CompiledSystem.chart_derivative``, ``chart_start_sensitivity``), so
avf and verlet run on it too. Its charts are the joints' own where the joints are a
Model's (q0 ⊗ exp(x) on a quaternion; the Euler step q0 + W(q0) x elsewhere, which is
p_n + R_n ρ on a free joint's position and (x_n, y_n) + R(θ_n) ρ on a planar one's).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .base import (
    chart_jacobian,
    gravity_torques,
    kinetic_energy_gradient,
    solve_spd,
)


class ModelChart:
    """The per-joint charts of the module doc for a system that declares them
    (``has_chart``, ``chart_joints``, ``chart_types``): each non-additive joint's block
    is its joint type's ``chart_point``, ``chart_jacobian``, ... (the joint modules of
    :mod:`kanedyn.model.joints`), the additive ones are added in one go."""

    has_derivative = True

    def __init__(self, system):
        self.system = system
        self.nv = system.nv
        self.blocks = []  # (joint type, iq, iv) for every non-additive joint
        self.add_q, self.add_v = [], []
        for kind, iq, iv in system.chart_joints:
            jt = system.chart_types[kind]
            if jt.chart_is_additive:
                self.add_q.extend(range(iq.start, iq.stop))
                self.add_v.extend(range(iv.start, iv.stop))
            else:
                self.blocks.append((jt, iq, iv))
        self.add_q = np.array(self.add_q, dtype=int)
        self.add_v = np.array(self.add_v, dtype=int)

    @classmethod
    def applies(cls, system) -> bool:
        """The system declares per-joint charts (``has_chart``, ``chart_joints`` and
        ``chart_types``, kind → joint type: capabilities, see :mod:`kanedyn.sim.system`)."""
        if not getattr(system, "has_chart", False):
            return False
        types = getattr(system, "chart_types", {})
        return all(kind in types for kind, _, _ in system.chart_joints)

    def point(self, qn: NDArray, x: NDArray) -> NDArray:
        q = np.array(qn, dtype=float)
        q[self.add_q] += x[self.add_v]
        for jt, iq, iv in self.blocks:
            q[iq] = jt.chart_point(qn[iq], x[iv])
        return q

    def jacobian(self, qn: NDArray, x: NDArray) -> NDArray:
        J = np.eye(self.nv)
        for jt, _, iv in self.blocks:
            J[iv, iv] = jt.chart_jacobian(x[iv])
        return J

    def derivative(self, qn: NDArray, x: NDArray, w: NDArray) -> NDArray:
        """D with ``D δ = d/dε J(x + εδ) w`` (zero on additive joints)."""
        D = np.zeros((self.nv, self.nv))
        for jt, _, iv in self.blocks:
            D[iv, iv] = jt.chart_derivative(x[iv], w[iv])
        return D

    # --- what the variational (discrete Lagrangian) form of Verlet needs ---------------
    def end_velocity(self, qn: NDArray, x: NDArray) -> tuple[NDArray, NDArray]:
        """(W, ∂W/∂x) with W(x) = J(x) x: h times the body velocity, at q = φ_n(x), of the
        chart curve s ↦ φ_n(s x). W = x on exponential charts (J_r(x) x = x); the free
        joint's position block is exp(φ)ᵀρ, the planar one R(−ψ)ρ (the joints' charts do
        not depend on qn)."""
        W = np.array(x, dtype=float)
        DW = np.eye(self.nv)
        for jt, _, iv in self.blocks:
            W[iv], DW[iv, iv] = jt.chart_end_velocity(x[iv])
        return W, DW

    def start_sensitivity(self, qn: NDArray, x: NDArray) -> NDArray:
        """K with ``dx = K δ`` when the chart's centre moves by ``q_n ⊕ εδ`` (body velocity δ)
        and the point φ_n(x) stays: −1 on additive joints, −J_l(x)⁻¹ = −J_r(x)⁻ᵀ on
        exponential charts (log(exp(−εδ) exp(x))), and for the translations of the free and
        planar charts ``dρ = −δv + ρ × δω`` resp. ``dρ = −δv + δψ (ρ_y, −ρ_x)``."""
        K = -np.eye(self.nv)
        for jt, _, iv in self.blocks:
            K[iv, iv] = jt.chart_start_sensitivity(x[iv])
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


class SystemChart(ProtocolChart):
    """:class:`ProtocolChart` with the derivatives the system gives (capability
    ``has_chart_derivative``: ``chart_derivative(q0, ξ, w)`` and
    ``chart_start_sensitivity(q0, ξ)``, in :class:`ModelChart`'s conventions): a compiled
    Kane tree whose chart is curved, whose derivatives come from its generated ∂q̇/∂q
    (:meth:`kanedyn.kane.codegen.runtime.CompiledSystem.chart_derivative`). Enough for avf
    and verlet."""

    has_derivative = True

    @classmethod
    def applies(cls, system) -> bool:
        return bool(getattr(system, "has_chart_derivative", False))

    def derivative(self, qn, x, w):
        """D with ``D δ = d/dε J(x + εδ) w``."""
        return self.system.chart_derivative(qn, x, w)

    def point(self, qn, x):
        """q_n ⊕ x (:meth:`ProtocolChart.point`), the one the system's J and D at (q_n, x)
        form and keep (``chart_point``)."""
        return self.system.chart_point(qn, x)

    def end_velocity(self, qn, x):
        """(W, ∂W/∂x) with W(x) = J(x) x (:meth:`ModelChart.end_velocity`): ∂W/∂x = J + D(x, x)."""
        J = self.jacobian(qn, x)
        return J @ x, J + self.derivative(qn, x, x)

    def start_sensitivity(self, qn, x):
        """K = ∂x/∂q_n at fixed φ_n(x) (:meth:`ModelChart.start_sensitivity`)."""
        return self.system.chart_start_sensitivity(qn, x)


def make_chart(system):
    """The chart of ``system``: its joints' (:class:`ModelChart`), else the protocol's with
    the derivatives the system gives (:class:`SystemChart`), else the protocol's alone."""
    if ModelChart.applies(system):
        return ModelChart(system)
    return SystemChart(system) if SystemChart.applies(system) else ProtocolChart(system)


class AdditiveHamiltonian:
    """H(x, p) with q = q_n + x and p = M v: the canonical variables of additive joints, in
    the same interface as :class:`~kanedyn.integrators.chart.ChartHamiltonian`."""

    def __init__(self, problem, qn):
        self.problem, self.system, self.qn = problem, problem.system, qn

    def energy(self, x, p):
        q = self.qn + x
        return self.problem.energy(q, solve_spd(self.system.mass_matrix(q), p))

    def gradient(self, x, p):
        """(∂H/∂x, ẋ = ∂H/∂p, q, v, None): q itself too, which a force element that depends
        on the configuration (a wrench, a torque of q) is evaluated at."""
        q = self.qn + x
        a, b, v = self.problem.hamiltonian_gradient(q, p)
        return a, b, q, v, None

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
