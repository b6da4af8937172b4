"""The classical Runge–Kutta method of order 4, on the configuration manifold.

Order 4; conserves nothing exactly — the energy error grows (drifts) like
``C t dt⁴`` (Hairer, Nørsett & Wanner, *Solving ODEs I*, II.1). The stages live
in the tangent chart ``q = q_n ⊕ ξ`` with ``ξ̇ = J(ξ)⁻¹ v`` (Munthe-Kaas's RKMK
idea), so quaternions move only by the exponential map. The non-conservative
work ``W_nc`` is integrated as an extra state
``ẇ = vᵀ τ_nc`` with the same stages, so the budget closes to the method's own
accuracy.
"""

from __future__ import annotations

import numpy as np

from .base import FixedStepMethod, chart_is_additive, chart_jacobian


class RK4(FixedStepMethod):
    """Classical RK4 (explicit, fixed step, 4 dynamics evaluations per step).

    This class is the readable reference. ``compiled=True`` (default): ``kd.simulate``
    runs a plain Model, without force elements or with joint springs, dampers and
    smoothed Stribeck friction, in a compiled RK4 loop (also the batches'): one with
    additive coordinates and no armature in :func:`kanedyn.sim.batch.rk4_run` (its
    stages are those of :mod:`.rk4_compiled`), any other (ball, free, planar joints,
    armature) in :func:`kanedyn.sim.rk4_manifold.rk4_manifold_run`, which takes these
    chart stages (``ξ̇ = J(ξ)⁻¹ v`` by :mod:`kanedyn.sim.chart_kernel`); same steps, less
    overhead. Both also take ``project="energy"``, with force elements onto E₀ + W_nc
    (:class:`.projection.Projected`'s target, the springs' potential in E). A compiled
    Kane system runs the RK4 generated with its equations, or with force rows or
    ``project="energy"`` :func:`kanedyn.integrators.kane_compiled.run_rk4` (these stages,
    with quaternions in this chart by its generated chart functions).
    ``compiled=False`` takes these Python steps.
    """

    name = "rk4"
    order = 4
    options = {"compiled": True}

    def __init__(self, problem, **options):
        super().__init__(problem, **options)
        self.additive = chart_is_additive(self.system)

    def _f(self, t, q0, xi, v):
        """(ξ̇, v̇, ẇ) at the point q0 ⊕ ξ of the chart."""
        p, s = self.problem, self.system
        q = q0 + xi if self.additive else s.integrate_configuration(q0, xi, 1.0)
        if p.has_nc:
            tnc = p.tau_nc(t, q, v)
            tau = tnc if p.tau_cons is None else tnc + p.tau_cons(q)
            w = float(v @ tnc)
        else:
            tau = np.zeros(s.nv) if p.tau_cons is None else p.tau_cons(q)
            w = 0.0
        a = s.forward_dynamics(q, v, tau)
        J = None if self.additive else chart_jacobian(s, q0, xi)
        xid = v if J is None else np.linalg.solve(J, v)
        return xid, a, w

    def step(self, t, q, v, h):
        z = np.zeros(self.system.nv)
        k1x, k1v, k1w = self._f(t, q, z, v)
        k2x, k2v, k2w = self._f(t + h / 2, q, 0.5 * h * k1x, v + 0.5 * h * k1v)
        k3x, k3v, k3w = self._f(t + h / 2, q, 0.5 * h * k2x, v + 0.5 * h * k2v)
        k4x, k4v, k4w = self._f(t + h, q, h * k3x, v + h * k3v)
        xi = (h / 6) * (k1x + 2 * k2x + 2 * k3x + k4x)
        v1 = v + (h / 6) * (k1v + 2 * k2v + 2 * k3v + k4v)
        dw = (h / 6) * (k1w + 2 * k2w + 2 * k3w + k4w)
        q1 = q + xi if self.additive else self.system.integrate_configuration(q, xi, 1.0)
        return q1, v1, dw
