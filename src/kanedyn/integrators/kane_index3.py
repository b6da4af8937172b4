"""Exact energy and exact configuration constraints for a compiled Kane system.

``kd.simulate(compiled, q0, u0, T, method="energy_momentum" | "avf", dt=...)`` on a
compiled Kane system whose constraints are configuration constraints g(q) = 0 only (its
dependent speeds are their rates: as many as dependent coordinates) runs the constrained
discrete-gradient step of :mod:`.constrained_energy_momentum` — Gonzalez's discrete
gradients of H, g and the hidden constraint G u, so that E, g and G u hold to round-off
at every step (Gonzalez, *J. Nonlinear Sci.* 9 (1999) 473) — on the system's *index-3
form*: the same KaneSystem derived without eliminating its dependent speeds
(:func:`kanedyn.kane.index3_equations`, compiled by ``compiled.index3_form()``), presented
as a constrained system by :class:`kanedyn.constraints.KaneConstrainedSystem` (all
speeds, M and forcing of every speed, g, ∂g/∂q, γ and the generated ∂T/∂q, ∂V/∂q). The
step is the Python one of :mod:`.constrained_energy_momentum`, unchanged.

Why this form and not a discrete gradient on the independent coordinates: the reduced
equations are an ODE in (q, u_ind) whose q_dep is tied to q_ind by g only implicitly;
a discrete gradient there needs H as a function of the independent coordinates alone,
i.e. the constraints solved inside every evaluation, and would still have to step q_dep
(today's eliminated ``avf`` projects q_dep after the step and rescales the speeds to the
energy, which keeps E but is not a discrete gradient). The index-3 form keeps g as an
equation of the step and reuses the tested integrator.

The run starts from the eliminated system's state: q0 (made consistent by
``kd.simulate``) and the independent speeds u0, the dependent ones from the velocity
constraints (:meth:`~kanedyn.constraints.KaneConstrainedSystem.all_speeds`). The
trajectory is returned in the eliminated system's terms — q and the independent speeds,
so that its energy is the compiled system's — with the index-3 run's records in
``stats``: ``speeds`` (all speeds, the KaneSystem's order), ``dependent_speeds``,
``residual_g`` (g), ``residual_Gv`` (G u of all speeds, the hidden constraint), ``lam``
(the multipliers) and ``form`` ("index3").

``avf`` on such a system takes this path when the index-3 form can be formed (q̇ = u,
T and V known, the equations derived from a KaneSystem); otherwise it keeps the eliminated
AVF of :mod:`.eliminated` (``stats["form"] = "eliminated"``). ``energy_momentum`` has only
this path, and says what is missing.

Loads: the conservative ones (in q alone: gravity, springs) through V; those in the speeds,
the time or the inputs (dampers, motors) through their work — their generalized active
forces F_nc are generated with the index-3 form
(:meth:`~kanedyn.constraints.KaneConstrainedSystem.nonconservative_forces`) and the step
takes them at its midpoint, so that E − E0 − W_nc closes to round-off (``work_nc``). At the
start, Lagrange's equations forcing = ∂T/∂q − (∂(M u)/∂q) u − ∂V/∂q + F_nc are checked at
random states (a V that is not the loads' potential names the speed). Force elements
(``forces=``) are refused: the index-3 form has its loads in its equations. A system with
inputs is refused too: this path is given no values for them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import SolverError, StateError, SymbolicError
from .base import Problem, Solution, run_fixed
from .constrained_energy_momentum import CONSTRAINED_METHODS


def applies(system, method: str) -> bool:
    """``method`` is a constrained energy method and ``system`` has configuration
    constraints only (every dependent speed the rate of one)."""
    q_dep = getattr(system, "q_dependent", None)
    return (method in CONSTRAINED_METHODS and bool(q_dep)
            and len(getattr(system, "dependent_speed_names", ())) == len(q_dep))


def index3_system(system, method: str):
    """The :class:`~kanedyn.constraints.KaneConstrainedSystem` of ``system``, or None for
    ``avf`` when the index-3 form cannot be formed (the eliminated AVF then runs); for
    ``energy_momentum`` a SolverError saying what is missing."""
    from ..constraints.kane_system import KaneConstrainedSystem

    try:
        return KaneConstrainedSystem(system)
    except SymbolicError as e:
        if method == "avf":
            return None
        raise SolverError(f"simulate: method {method!r} on {system.name!r} integrates its "
                          f"index-3 form, which cannot be formed: {e}") from None


def run(problem: Problem, method: str, cs, **options) -> Solution:
    """The run of ``method`` on the index-3 form ``cs`` of ``problem.system`` (module doc)."""
    s = problem.system
    if (problem.tau_cons is not None or problem.tau_nc is not None
            or problem.potential is not None):
        raise SolverError(
            f"simulate: method {method!r} on {s.name!r} integrates its index-3 form, whose "
            "loads are in its equations: force elements (forces=) are not taken; put them "
            "in the KaneSystem's loads (a spring's potential in potential_energy; a damper "
            "or a motor, in u or t, enters through its work)")
    if problem.dt is None:
        raise StateError(f"simulate: method {method!r} is a fixed-step method; give dt")
    v0 = cs.all_speeds(problem.q0, problem.v0)
    inner = replace(problem, system=cs, q0=np.array(problem.q0, dtype=float), v0=v0,
                    force_jacobians=None, force_rows=None)
    stepper = CONSTRAINED_METHODS[method](inner, **options)
    sol = stepper.finish(run_fixed(stepper, inner))
    V = sol.v
    sol.stats["speeds"] = V.copy()
    sol.stats["dependent_speeds"] = V[:, cs.dependent]
    sol.stats["form"] = "index3"
    return Solution(sol.t, sol.q, V[:, cs.independent].copy(), sol.work_nc, sol.stats,
                    method, sol.message)
