"""Constraint projection around any fixed-step method of :mod:`kanedyn.integrators`.

``ConstraintProjected(method)`` takes a step with ``method`` (on the unstabilised index-1
ODE that a constrained system's ``forward_dynamics`` defines) and then moves (q, v) back
onto g = 0 and C v = 0, each the nearest point in the mass metric
(:func:`kanedyn.constraints.projection.project`; Hairer, Lubich & Wanner, *Geometric
Numerical Integration*, sec. IV.4). It composes with the energy projection
``Projected(ConstraintProjected(AVF(problem)), "energy")``.
"""

from __future__ import annotations

from ..constraints.projection import project
from ..errors import SolverError
from .base import FixedStepMethod


class ConstraintProjected(FixedStepMethod):
    """``base`` followed by the projection onto the position and velocity constraints."""

    def __init__(self, base: FixedStepMethod, tol: float = 1e-12):
        if not getattr(base.system, "handles_constraints", False):
            raise SolverError(f"ConstraintProjected: {base.system!r} is not a constrained "
                              "system (kanedyn.constraints)")
        self.base = base
        self.problem, self.system = base.problem, base.system
        self.name = f"{base.name}+project(constraints)"
        self.order = base.order
        self.tol = tol
        self.newton_iterations = 0

    def step(self, t, q, v, h):
        before = self.base.newton_iterations
        q1, v1, dw = self.base.step(t, q, v, h)
        self.newton_iterations += self.base.newton_iterations - before
        q1, v1 = project(self.system, q1, v1, t + h, self.tol)
        return q1, v1, dw
