"""``kd.simulate``: system + forces + method -> Trajectory."""

from __future__ import annotations

import warnings
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike

from ..errors import FrictionError, KanedynWarning, SolverError, StateError
from ..forces import ForceElement, ForceSet, JointFriction
from ..forces.kernel import force_rows
from ..integrators import get_method, kane_index3, run_fixed
from ..integrators.base import Problem, is_nonholonomic
from ..integrators.constrained_energy_momentum import CONSTRAINED_METHODS
from ..integrators.eliminated import check_method, consistent_start, run_eliminated
from ..integrators.projection import Projected, check_conserved, parse_invariants
from ..integrators.scipy_ivp import SCIPY_METHODS
from ..model import Model
from ..model.configuration import check_configuration
from .batch import run_rk4
from .progress import ProgressBar, wants_progress
from .stickslip import simulate_stick_slip
from .system import as_system
from .time_stepping import time_stepping
from .trajectory import FrictionRecord, Trajectory

#: fixed-step methods that take the accelerations from ``system.forward_dynamics`` (so they
#: respect the constraints of a constrained system); the others use M(q) and ∇H
FORWARD_DYNAMICS_METHODS = ("rk4",)

#: the simulations of joint friction with exact stiction, which are sim's own (not
#: integrators): event-driven mode switching (:mod:`.stickslip`) and Moreau's per-step
#: complementarity (:mod:`.time_stepping`)
STICK_SLIP_METHODS = ("stickslip", "time_stepping")


def _is_constrained(system) -> bool:
    """A system that declares it carries constraints (``handles_constraints``)."""
    return bool(getattr(system, "handles_constraints", False))


def _stick_slip(system, q0, v0, t_final: float, method: str, dt: float | None, forces,
                project, t0: float, save_every: int, options: dict) -> Trajectory:
    """kd.simulate for the methods of :data:`STICK_SLIP_METHODS`: the JointFriction
    elements of ``forces`` (exact laws included) become friction joints, as do the
    entries of ``joints=`` (which may also hold LuGre laws and Karnopp bands)."""
    if project is not None:
        raise SolverError(f"simulate: project= wraps the integrators' fixed-step methods, "
                          f"not {method!r}")
    if t0 != 0.0:
        raise StateError(f"simulate: method {method!r} starts at t0 = 0 (got {t0})")
    if save_every != 1:
        raise StateError(f"simulate: save_every is not an option of method {method!r}")
    joints = dict(options.pop("joints", None) or {})
    surface = dict(options.pop("surface_velocity", None) or {})
    others = []
    for f in forces or ():
        if isinstance(f, JointFriction):
            if f.joint in joints:
                raise FrictionError(f"simulate: joint {f.joint!r} has two friction laws "
                                    "(a JointFriction and an entry of joints=)")
            joints[f.joint] = f.law
            if f.surface_velocity != 0.0:
                surface[f.joint] = f.surface_velocity
        else:
            others.append(f)
    if method == "stickslip":
        # ivp_method: a solve_ivp method for the segments instead of kanedyn's DOPRI5
        return simulate_stick_slip(system, q0, v0, t_final, joints, forces=others,
                                   surface_velocity=surface, dt_out=dt,
                                   method=options.pop("ivp_method", None), **options)
    if dt is None:
        raise StateError("simulate: method 'time_stepping' is a fixed-step method; give dt")
    return time_stepping(system, q0, v0, t_final, dt, joints, surface_velocity=surface,
                         forces=others, **options)


def _exact_friction(sys_, forces):
    """Split off the JointFriction elements of exact laws, for the constrained step:
    (the other forces, [(speed index, q index, law), ...])."""
    others, spec = [], []
    for f in forces or ():
        if not (isinstance(f, JointFriction) and f.discontinuous):
            others.append(f)
            continue
        if f.surface_velocity != 0.0:
            raise FrictionError(f"simulate: JointFriction on {f.joint!r}: the constrained "
                                "step takes exact friction against a still surface only")
        j = f.bind(sys_)._iv
        model = getattr(sys_, "model", None)
        if isinstance(model, Model):
            iq = next(b.iq.start for b in model.bodies if b.iv.start == j and b.joint.nv == 1)
        elif sys_.nq == sys_.nv:
            iq = j
        else:
            raise FrictionError(f"simulate: JointFriction on {f.joint!r}: no q index for "
                                f"speed {j} of {getattr(sys_, 'name', sys_)!r}")
        spec.append((j, iq, f.law))
    return others, spec


def _friction_record(sol, spec) -> FrictionRecord | None:
    """The FrictionRecord of a constrained run with exact friction (else None)."""
    if not spec or "friction_force" not in sol.stats:
        return None
    st = sol.stats
    stuck = st["friction_stuck"].astype(bool)
    idx = [j for j, _, _ in spec]
    mode = np.where(stuck, 0, np.sign(sol.v[:, idx])).astype(int)
    work = st["friction_work"]
    return FrictionRecord(joints=idx, force=st["friction_force"], mode=mode, stuck=stuck,
                          work=work, other_work=sol.work_nc - work, dissipated=-work,
                          z=np.zeros((len(sol.t), 0)))


def _rows(sys_, fs: ForceSet):
    """The force elements as the compiled loops' rows (:mod:`kanedyn.forces.kernel`) and
    None, or (None, why): no elements or no compiled loop for this system (why None), or
    an element without a compiled form (why says which).
    On a tree with ball or free joints (the tangent form of midpoint and gauss4) the rows
    of its Model (springs and friction on its 1-DOF joints, dampers on every speed); on a
    Model cut at loop closures (a ConstrainedSystem with a compiled form: the constrained
    energy–momentum loop) the rows of its tree; on a compiled Kane tree derived from a
    Model (integrators/kane_compiled.py) the rows of that Model, whose q and v it has.
    Constant wrenches take rows (``wrenches=True``) — on a constrained system those of its
    tree, ball and free joints included —: the loops evaluate them at q itself."""
    model = (getattr(sys_, "compiled_step", None)
             or getattr(sys_, "compiled_manifold_step", None))
    if model is None and callable(getattr(sys_, "compiled_form", None)):
        model = getattr(sys_, "model", None)
    if model is None and getattr(sys_, "compiled_functions", None) is not None:
        model = getattr(sys_, "source_model", None)  # a compiled Kane tree of a Model
    if not fs.elements or model is None:
        return None, None
    return force_rows(model, fs.elements, wrenches=True)


#: the fixed-step methods that run in a compiled loop when every force element has rows
COMPILED_METHODS = ("rk4", "midpoint", "gauss4", "verlet", "avf", "itoh_abe",
                    "energy_momentum")


def _say_python_steps(sol, method: str, why: str) -> None:
    """What a run that could have been compiled costs for an element without compiled
    form: ``stats["python_steps"]`` holds the reason, and a KanedynWarning says it."""
    sol.stats["python_steps"] = why
    warnings.warn(f"simulate[{method}]: {why}; so every step of this run went through "
                  "Python, typically 10–70x the time a step of the compiled loop takes "
                  "(docs/benchmarks.md). Give the element as constants, or one that has "
                  "a compiled form, to run compiled", KanedynWarning, stacklevel=3)


def _vector(x, n: int, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.shape != (n,):
        raise StateError(f"{what} must have shape ({n},), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise StateError(f"{what} contains NaN or infinity: {a}")
    return a.copy()


def simulate(system, q0: ArrayLike, v0: ArrayLike, t_final: float, method: str = "rk4",
             dt: float | None = None, forces: Iterable[ForceElement] | None = None,
             project: str | tuple[str, ...] | None = None, progress: bool | None = None,
             t0: float = 0.0, save_every: int = 1, blowup: float = 1e8,
             **options) -> Trajectory:
    """Integrate ``q̇ = W(q) v``, ``M(q) v̇ + h(q, v) = τ`` from (q0, v0) at t0 to t_final.

    ``system``: a :class:`~kanedyn.Model` (wrapped in a
    :class:`~kanedyn.sim.system.ModelSystem`) or any object of the system
    protocol (a compiled Kane system, a constrained system), taken as is.
    ``method``: a registered name (:func:`kanedyn.integrators.available_methods`).
    ``dt``: the step of fixed-step methods (required for them); for adaptive
    ones the output spacing (dense output), or None for every accepted step.
    ``forces``: force elements (springs, dampers, torques, wrenches);
    ``project``: ``"energy"`` or a tuple of invariants, wraps a fixed-step method
    in a projection. ``progress``: a bar on stderr (None: only on a terminal).
    ``save_every``: keep every k-th step of a fixed-step method.
    ``blowup``: a speed beyond blowup × (1 + max|v0|) stops the run with a
    DivergenceError (as does a NaN). Other keyword options go to the method.

    Joint friction with exact stiction (a JointFriction of an exact law) takes
    ``method="stickslip"`` (event-driven: a stuck joint does not move at all;
    :func:`kanedyn.sim.stickslip.simulate_stick_slip`, whose options it accepts: ``tau``,
    ``joints``, ``rtol``, ``compiled``, ...; ``ivp_method`` is its ``method``, a solve_ivp
    method for the segments; ``dt`` is then the output spacing) or
    ``method="time_stepping"`` (a complementarity problem per step of ``dt``;
    :func:`kanedyn.sim.time_stepping.time_stepping`). Their trajectories carry the
    friction forces, the stick/slip phases and the switches in ``traj.friction``.
    On a constrained system, ``method="energy_momentum"`` or ``"avf"`` take exact friction
    inside their step (:mod:`kanedyn.integrators.constrained_friction`; ``traj.friction``
    has the forces, held phases and work, without switch events).
    """
    sys_ = as_system(system)
    for attr in ("nq", "nv", "forward_dynamics", "energy", "integrate_configuration"):
        if not hasattr(sys_, attr):
            raise SolverError(f"simulate: {system!r} is not a system (it has no {attr!r}); "
                              "pass a Model or an object of the system protocol")
    nq, nv = int(sys_.nq), int(sys_.nv)
    q0 = _vector(q0, nq, "q0")
    eliminated = bool(getattr(sys_, "eliminated_constraints", False))
    if eliminated:  # on the configuration manifold; v0 the independent speeds (or all)
        q0, v0 = consistent_start(sys_, q0, v0)
    else:
        v0 = _vector(v0, nv, "v0")
    model = getattr(sys_, "model", None)
    if isinstance(model, Model):
        q0 = check_configuration(model, q0)[0][0]  # unit quaternions, named joint if not
    t_final, t0 = float(t_final), float(t0)
    if not np.isfinite(t_final) or not np.isfinite(t0):
        raise StateError(f"simulate: t0 = {t0} and t_final = {t_final} must be finite")
    if t_final < 0:
        raise StateError(f"simulate: t_final = {t_final} is negative")
    if t_final < t0:
        raise StateError(f"simulate: t_final = {t_final} is before t0 = {t0}")
    if dt is not None:
        dt = float(dt)
        if not np.isfinite(dt) or dt <= 0:
            raise StateError(f"simulate: dt = {dt} must be a positive finite number")
    if int(save_every) != save_every or save_every < 1:
        raise StateError(f"simulate: save_every = {save_every!r} must be a positive integer")
    if not (blowup > 0):
        raise StateError(f"simulate: blowup = {blowup} must be positive")
    if method in STICK_SLIP_METHODS:
        return _stick_slip(sys_, q0, v0, t_final, method, dt, forces, project, t0,
                           int(save_every), options)
    fn, kind = get_method(method)
    if _is_constrained(sys_) and method in CONSTRAINED_METHODS:
        # exact energy and exact constraints together (integrators/constrained_energy_momentum)
        fn = CONSTRAINED_METHODS[method]
        if project is not None:
            raise SolverError(f"simulate: method {method!r} on a constrained system keeps the "
                              "energy and the constraints by construction; project= does "
                              "not apply")
    elif kind == "fixed" and method not in FORWARD_DYNAMICS_METHODS and _is_constrained(sys_):
        # these methods build their steps from M(q) and the energy gradients, which for a
        # constrained system describe the *unconstrained* motion: refuse rather than drift
        raise SolverError(
            f"simulate: method {method!r} integrates the unconstrained Hamiltonian and would "
            f"ignore the constraints of {getattr(sys_, 'name', 'this system')!r}; use "
            f"{' or '.join(CONSTRAINED_METHODS)} (exact energy and constraints), radau5 or "
            f"ida (DAE solvers), or {', '.join(FORWARD_DYNAMICS_METHODS)} (which step the "
            "constrained accelerations)")
    index3 = None  # the index-3 form of a configuration-constrained Kane system
    if eliminated and kane_index3.applies(sys_, method):
        # exact energy and exact g(q) = 0 (integrators/kane_index3.py); None: avf keeps the
        # eliminated form where the index-3 one cannot be formed
        index3 = kane_index3.index3_system(sys_, method)
    if eliminated:
        if index3 is None:
            check_method(sys_, method)
    elif is_nonholonomic(sys_) and method not in SCIPY_METHODS:
        # the other methods step q in a chart of dimension nv, which cannot hold the
        # motion of a system with fewer speeds than coordinates
        raise SolverError(
            f"simulate: {getattr(sys_, 'name', 'this system')!r} is nonholonomic ({sys_.nq} "
            f"coordinates, {sys_.nv} independent speeds); method {method!r} cannot integrate "
            f"it — use one of the solve_ivp methods {', '.join(SCIPY_METHODS)}, which "
            "integrate q̇ = W(q) v directly")
    if _is_constrained(sys_) and method in CONSTRAINED_METHODS:
        # exact stick–slip inside the constrained step (integrators/constrained_friction)
        forces, spec = _exact_friction(sys_, forces)
        if spec:
            if "friction" in options:
                raise SolverError("simulate: give exact friction as JointFriction elements "
                                  "in forces=, not as friction=")
            options["friction"] = spec
    fs = ForceSet(sys_, forces)
    bad = [type(e).__name__ for e in fs.elements if e.discontinuous]
    if bad:
        raise SolverError(
            f"simulate: force element(s) {bad} are discontinuous in v, which method "
            f"{method!r} cannot integrate; smooth the law, or use method='stickslip' "
            "(or 'time_stepping') for exact stick–slip")
    bar = ProgressBar(t0, t_final, f"simulate[{method}]") if wants_progress(progress) else None
    rows, no_rows = _rows(sys_, fs)
    problem = Problem(
        system=sys_, q0=q0, v0=v0, t_final=t_final, dt=dt, t0=t0,
        tau_cons=fs.tau_conservative if fs.conservative else None,
        tau_nc=fs.tau_nonconservative if fs.nonconservative else None,
        potential=fs.potential if fs.conservative else None,
        force_jacobians=fs.jacobians,
        force_rows=rows,
        progress=bar, blowup=float(blowup), save_every=int(save_every),
    )
    try:
        if eliminated:
            if project is not None:
                raise SolverError(f"simulate: project= does not apply to "
                                  f"{getattr(sys_, 'name', 'this system')!r}, whose methods "
                                  "project onto its configuration constraints themselves")
            if index3 is not None:
                sol = kane_index3.run(problem, method, index3, **options)
            else:
                sol = run_eliminated(problem, method, **options)
                if kane_index3.applies(sys_, method):
                    sol.stats["form"] = "eliminated"
        elif kind == "fixed":
            if dt is None:
                raise StateError(f"simulate: method {method!r} is a fixed-step method; give dt")
            stepper = fn(problem, **options)
            if project is not None:
                check_conserved(problem, parse_invariants(project))
            if method == "rk4":  # the one compiled RK4 loop (sim's: it adds the joint forces)
                sol = run_rk4(stepper.opts["compiled"], problem, fs.elements, project)
            else:
                fast = getattr(stepper, "compiled_run", None)
                sol = fast(project) if fast is not None else None
            if sol is None:
                compiled = stepper.opts.get("compiled", True)  # (the method's own option)
                if project is not None:
                    stepper = Projected(stepper, parse_invariants(project))
                sol = run_fixed(stepper, problem)
                finish = getattr(stepper, "finish", None)  # a method's own records
                if finish is not None:
                    sol = finish(sol)
                if no_rows is not None and method in COMPILED_METHODS and compiled:
                    _say_python_steps(sol, method, no_rows)
        else:
            if project is not None:
                raise SolverError(f"simulate: project= wraps fixed-step methods; {method!r} is "
                                  f"{kind} (use rk4, midpoint, ... with project=)")
            if save_every != 1:
                raise StateError(f"simulate: save_every is for fixed-step methods; {method!r} "
                                 "samples every dt by dense output (give dt)")
            sol = fn(problem, **options)
    finally:
        if bar is not None:
            bar.close()
    return Trajectory(sol.t, sol.q, sol.v, sol.work_nc, sol.stats, sol.method or method,
                      problem, friction=_friction_record(sol, options.get("friction")))
