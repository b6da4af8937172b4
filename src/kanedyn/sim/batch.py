"""The compiled RK4 loops, for one run and for N runs at once; the table of batched methods.

:func:`rk4_run` integrates one state with the classical RK4 method, the joint forces
(the rows of :mod:`kanedyn.forces.kernel`: springs, dampers, constant and sinusoidal
torques, the smoothed Stribeck law of :mod:`kanedyn.friction.laws_kernel`) evaluated
between the stages at their times, with the guards of ``run_fixed``, the kept samples, the
work W_nc of the non-conservative forces and, on request, the energy — all in numba,
without the GIL. It takes Models with additive coordinates (revolute, prismatic, helical
joints); :func:`kanedyn.sim.rk4_manifold.rk4_manifold_run` is the same loop on the
configuration manifold, for every other Model (ball, free and planar joints, joint types
with a compiled ``integrate``) and for Models with armature. Both
``kd.simulate(model, ..., method="rk4")`` (:func:`run_rk4`, with the optional energy
projection) and ``simulate_batch`` (which runs them per state in ``prange``) call them:
a single run is the batch of one, and gives the same bits. Their integrator parts (the
stage state and the update, the projection, the guards, the step grid) are those of
:mod:`kanedyn.integrators.rk4_compiled`; the Python reference is
:class:`kanedyn.integrators.rk4.RK4` (the same steps, tested to round-off). They live in
``sim`` because they compose forces and friction with the integrator (DESIGN's import
order keeps integrators from importing them).

``simulate_batch(model, Q0, V0, t_final, dt=...)`` integrates N independent runs of
one Model — the steps, times and kept samples of ``kd.simulate`` (the last step
shortened to land on t_final, and kept) — parallel over runs. Q0's quaternions are
checked and normalised as ``kd.simulate``'s q0.

Per-run parameters change a run's model or forces without building N
models: ``params={"mass:link3": masses, "damping:joint1": c, ...}``, each an
array of N values. A ``mass:<body>`` scales that body's whole spatial inertia
(same shape, other density). Force quantities name a joint:
``stiffness``/``rest`` of a :class:`~kanedyn.forces.JointSpring`, ``damping``
of a :class:`~kanedyn.forces.JointDamper`, ``Fc``/``Fs``/``vs``/``delta``/``Fv``
of the Stribeck law of a :class:`~kanedyn.forces.JointFriction`.

The batch takes the force elements just named, constant
:class:`~kanedyn.forces.JointTorque` and :class:`~kanedyn.forces.SinusoidalTorque` (the
rows of :func:`kanedyn.forces.kernel.force_rows`). On joints of several speeds (ball,
free, planar) a damper acts on each of the joint's speeds (``τ = −c v_j``, as
:class:`~kanedyn.forces.JointDamper`), so ``JointDamper`` and a per-run
``damping:<joint>`` work on them; springs, sinusoidal torques and Stribeck friction need
the one coordinate of a 1-DOF additive joint: on a joint of several speeds they, and
``stiffness``/``rest``/``Fc``/... of it, are refused naming the joint. Other force
elements are refused with the reason. ``kd.simulate`` takes these loops for any Model
without force elements or with only those; otherwise the Python steps.

Batched methods
---------------
``simulate_batch(..., method=...)`` looks the method up in :data:`METHODS`, a table of
:class:`BatchMethod`: its name, ``refuses(model)`` (why it cannot take the Model, or None)
and ``runs(model, D, P, Q0, V0, steps, every, outQ, outV, outW, outE, status)``, which
fills the outputs of every run by a compiled whole-run loop of one state called in
``prange`` — ``D[k]`` the run's flat array (its ``mass:`` parameters applied), ``P[k]``
its force rows, ``steps``/``every`` the grid of
:func:`~kanedyn.integrators.rk4_compiled.step_grid`, ``status[k]`` left [code, step,
kernel status] by a run that stops (codes in :data:`STOPPED`). Today the table holds
``"rk4"`` (:func:`rk4_run` or the manifold loop, by the Model). Another compiled loop
(AVF, a friction treatment) joins it with one entry: write its loop for one state with
these outputs, a ``prange`` driver like :func:`_rk4_runs`, and its ``refuses``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import njit, prange
from numpy.typing import ArrayLike, NDArray

from ..dynamics import _compiled
from ..dynamics import kernels as K
from ..dynamics._dispatch import singular_error
from ..dynamics.flat import flatten
from ..dynamics.layout import IBAR, MASS, H
from ..errors import DivergenceError, KanedynError, SolverError, StateError
from ..forces.kernel import (
    P_C,
    P_DELTA,
    P_FC,
    P_FRIC,
    P_FS,
    P_FV,
    P_K,
    P_REST,
    P_VS,
    force_rows,
    has_forces,
    joint_forces,
    spring_potential,
)
from ..integrators.base import Solution
from ..integrators.projection import parse_invariants
from ..integrators.rk4_compiled import (
    BAD_KERNEL_STATE,
    BLOWUP,
    NOT_FINITE,
    compiled_or_none,
    energy_of,
    largest_speed,
    project_energy,
    rk4_stage_state,
    rk4_update,
    save_sample,
    state_guard,
    step_grid,
    store,
)
from ..model import Model
from ..model.configuration import check_configuration
from ..model.model import singular_joints

_compiled.key_cache(__name__)

QUANTITIES = {"stiffness": P_K, "rest": P_REST, "damping": P_C, "Fc": P_FC, "Fs": P_FS,
              "vs": P_VS, "delta": P_DELTA, "Fv": P_FV}

#: why a run stopped, by the status code of :mod:`kanedyn.integrators.rk4_compiled`
STOPPED = {NOT_FINITE: "the state became NaN or infinite",
           BLOWUP: "blow-up (speed beyond blowup=)",
           BAD_KERNEL_STATE: "the dynamics kernel reported a bad state",
           4: "the energy projection did not converge"}  # (rk4_manifold.PROJECTION_FAILED)


@dataclass
class BatchTrajectory:
    """Results of :func:`simulate_batch`, with a leading run axis.

    ``t`` (S,), ``q`` (N, S, nq), ``v`` (N, S, nv), ``energy`` (N, S) — kinetic +
    gravitational + spring potential — ``work_nc`` (N, S) the work of the
    non-conservative forces, and ``budget = E − E(0) − W_nc``.
    """

    t: NDArray
    q: NDArray
    v: NDArray
    energy: NDArray
    work_nc: NDArray
    method: str = "rk4"

    @property
    def budget(self) -> NDArray:
        return self.energy - self.energy[:, :1] - self.work_nc

    def __len__(self) -> int:
        return self.q.shape[0]


# --- the loop -------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def _energy(data, P, q, v, summary):
    """T + V_gravity + V_springs of one state: T and V from the compiled kernel of
    ``kd.kinetic_energy`` (:func:`~kanedyn.dynamics.kernels.kinematics.summary_into`,
    rotors included), another pass than the integrators' energy kernel, so a batch's
    energy checks the single run's independently."""
    K.summary_into(data, q, v, True, summary)
    return summary[0] + summary[1] + spring_potential(P, q)


@njit(cache=True, nogil=True)
def _stage(data, P, forces, t, q, v, tau_nc, tau, fext, a, ws):
    """a = ABA(q, v, τ(t, q, v)) with the joint forces τ of the rows ``P``
    (:func:`~kanedyn.forces.kernel.joint_forces`; none unless ``forces``), ``ws`` the ABA
    workspace (:func:`~kanedyn.dynamics.kernels.aba.aba_workspace`, allocated once a
    run); returns the kernel's status (0 ok)."""
    if forces:
        joint_forces(P, t, q, v, tau_nc, tau)
    return K.aba_core(data, q, v, tau, fext, False, a, *ws)


@njit(cache=True, _nrt=False, nogil=True)
def _power(v, tau_nc):
    """vᵀ τ_nc, the rate of W_nc."""
    w = 0.0
    for j in range(v.shape[0]):
        w += v[j] * tau_nc[j]
    return w


@njit(cache=True, nogil=True)
def rk4_run(data, P, forces, t0, q0, v0, steps, every, project, blowup, record, Q, V, W, E,
            status):
    """One run of classical RK4 from (q0, v0) at t0 by the steps ``steps`` (the grid of
    :func:`~kanedyn.integrators.rk4_compiled.step_grid`), on the flat array ``data``:

        k₁ = f(x), k₂ = f(x + h/2 k₁), k₃ = f(x + h/2 k₂), k₄ = f(x + h k₃),
        x ← x + h/6 (k₁ + 2k₂ + 2k₃ + k₄),   x = (q, v, W_nc), f = (v, a, vᵀτ_nc)

    (Hairer, Nørsett & Wanner, Solving ODEs I, II.1.9), a = ABA(q, v, τ) with the joint
    forces of the rows ``P`` (:mod:`kanedyn.forces.kernel`) when ``forces``; then, if
    ``project``, the energy projection (no forces). Keeps the state after every
    ``every``-th step and the last in ``Q``, ``V``, ``W`` (and the energy in ``E`` if
    ``record``), sample 0 the start.
    Returns the number of samples kept; ``status`` (3,) is left [0, 0, 0], or [code, step
    (from 1), kernel status] of the step at which the state became non-finite, blew up
    (speed beyond ``blowup (1 + max|v0|)``) or a kernel refused it."""
    nv = v0.shape[0]
    nb = data.shape[0] - 1
    n_steps = steps.shape[0]
    q, v = q0.copy(), v0.copy()
    qs, k1v, k2v, k3v, k4v = np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv)
    k2q, k3q, k4q = np.empty(nv), np.empty(nv), np.empty(nv)
    tau_nc, tau, fext = np.zeros(nv), np.zeros(nv), np.zeros((nb, 6))
    ws = K.aba_workspace(nb, nv)
    summary = np.empty(11)
    # for the projection: M, ∂T/∂q, ∂V/∂q, the energy kernel's output, work vectors
    M, dT, dV, out = np.empty((nv, nv)), np.empty(nv), np.empty(nv), np.empty(8)
    E0 = energy_of(data, q, v, dT, dV, out) if project else 0.0
    vmax0 = largest_speed(v)
    status[:] = 0
    w = 0.0
    W[0] = 0.0
    if record:
        E[0] = _energy(data, P, q, v, summary)
    k = store(q, v, Q, V, 0)
    for n in range(n_steps):
        h = steps[n]
        t = t0 + n * steps[0]  # the grid of step_grid: t0 + n dt
        s = _stage(data, P, forces, t, q, v, tau_nc, tau, fext, k1v, ws)
        k1w = _power(v, tau_nc) if forces else 0.0
        rk4_stage_state(q, v, v, k1v, 0.5 * h, qs, k2q)  # k2q = v of stage 2
        s |= _stage(data, P, forces, t + 0.5 * h, qs, k2q, tau_nc, tau, fext, k2v, ws)
        k2w = _power(k2q, tau_nc) if forces else 0.0
        rk4_stage_state(q, v, k2q, k2v, 0.5 * h, qs, k3q)
        s |= _stage(data, P, forces, t + 0.5 * h, qs, k3q, tau_nc, tau, fext, k3v, ws)
        k3w = _power(k3q, tau_nc) if forces else 0.0
        rk4_stage_state(q, v, k3q, k3v, h, qs, k4q)
        s |= _stage(data, P, forces, t + h, qs, k4q, tau_nc, tau, fext, k4v, ws)
        k4w = _power(k4q, tau_nc) if forces else 0.0
        rk4_update(q, v, h, k2q, k3q, k4q, k1v, k2v, k3v, k4v)
        w += (h / 6) * (k1w + 2 * k2w + 2 * k3w + k4w)
        if project:
            s |= project_energy(data, q, v, E0, M, dT, dV, out, qs, k4q, k1v, k2v)
        code = state_guard(q, v, vmax0, blowup)
        if code != NOT_FINITE and s != 0:  # (the order of run_fixed's checks)
            code = BAD_KERNEL_STATE
        if code != 0:
            status[0], status[1], status[2] = code, n + 1, s
            return k
        kept = save_sample(n, n_steps, every, q, v, Q, V, k)
        if kept != k:
            W[k] = w
            if record:
                E[k] = _energy(data, P, q, v, summary)
            k = kept
    return k


@njit(cache=True, nogil=True, parallel=True)
def _rk4_runs(D, P, forces, Q0, V0, steps, every, blowup, outQ, outV, outW, outE, status):
    """:func:`rk4_run` for each run k (its own flat array ``D[k]`` and force rows
    ``P[k]``), the runs spread over the threads."""
    for k in prange(Q0.shape[0]):
        rk4_run(D[k], P[k], forces, 0.0, Q0[k], V0[k], steps, every, False, blowup, True, outQ[k],
                outV[k], outW[k], outE[k], status[k])


# --- the methods simulate_batch takes -------------------------------------------------

@dataclass(frozen=True)
class BatchMethod:
    """A whole-run compiled loop that :func:`simulate_batch` runs for every state (see the
    module doc, "Batched methods").

    ``refuses(model)``: why the method cannot take this Model (a sentence naming the joint
    or element), or None. ``runs(model, D, P, Q0, V0, steps, every, outQ, outV, outW, outE,
    status)``: fill the outputs of every run k from (Q0[k], V0[k]) on the flat array D[k]
    with the force rows P[k], by the compiled loop of one state called in ``prange``; a run
    that stops leaves [code, step, kernel status] in status[k] (codes: :data:`STOPPED`).
    """

    name: str
    refuses: Callable[[Model], str | None]
    runs: Callable[..., None]


def _rk4_refuses(model: Model) -> str | None:
    return None  # every tree: additive joints in rk4_run, the others in rk4_manifold_run


def _manifold(model: Model) -> bool:
    """Whether a model takes the manifold loop (as kd.simulate: a configuration that is not
    additive, or armature) rather than :func:`rk4_run`."""
    return not all(b.joint.chart_is_additive for b in model.bodies) or model.armature.any()


def _rk4_batch(model, D, P, Q0, V0, steps, every, outQ, outV, outW, outE, status) -> None:
    # no blow-up guard (np.inf): a batch stops a run only at a non-finite state
    if _manifold(model):
        from .rk4_manifold import dof_coordinates, manifold_runs

        manifold_runs(D, P, dof_coordinates(model), has_forces(P), Q0, V0, steps, every,
                      np.inf, outQ, outV, outW, outE, status)
    else:
        _rk4_runs(D, P, has_forces(P), Q0, V0, steps, every, np.inf, outQ, outV, outW, outE,
                  status)


#: the batched methods by name; another compiled whole-run loop is added as one entry
METHODS: dict[str, BatchMethod] = {"rk4": BatchMethod("rk4", _rk4_refuses, _rk4_batch)}


# --- the Python side ------------------------------------------------------------------

def _one_speed(body) -> bool:
    """Whether the body's joint is 1-DOF additive (revolute, prismatic, helical): springs
    and friction need its one coordinate."""
    return body.joint.chart_is_additive and body.joint.nv == 1


def run_rk4(compiled: bool, problem, forces, project) -> Solution | None:
    """``kd.simulate``'s rk4 by :func:`rk4_run`: a Solution, or None where the loop does
    not apply — ``compiled`` False (the method's ``compiled=`` option), a progress bar, a
    system that is not a Model (neither ``compiled_step``, a Model with additive
    coordinates and no armature, for this loop, nor ``compiled_manifold_step``, any other
    Model, for :func:`kanedyn.sim.rk4_manifold.rk4_manifold_run`), force elements the
    loops do not take (or springs and friction on joints of several speeds), a projection
    onto anything but the energy, or the energy projection with force elements (its target
    E₀ + W_nc and the springs' potential are the Python projection's)."""
    model = getattr(problem.system, "compiled_step", None)
    run = _run_one
    if model is None:  # ball, free, planar joints, armature: the manifold loop
        from .rk4_manifold import run_one as run

        model = getattr(problem.system, "compiled_manifold_step", None)
    if not compiled or model is None or problem.progress is not None:
        return None
    invariants = None if project is None else parse_invariants(project)
    forces = list(forces or ())
    if invariants not in (None, ("energy",)) or (invariants and forces):
        return None
    P, why = force_rows(model, forces)
    if why is not None:
        return None
    name = "rk4" if invariants is None else f"rk4+project{invariants}"
    return compiled_or_none(name, run, problem, model, P, invariants is not None, name)


def _run_one(problem, model: Model, P: NDArray, project: bool, name: str) -> Solution:
    n_steps, steps, times, every, keep = step_grid(problem.dt, problem.t0, problem.t_final,
                                                   problem.save_every)
    Q = np.empty((len(keep), model.nq))
    V = np.empty((len(keep), model.nv))
    W = np.empty(len(keep))
    status = np.zeros(3, dtype=np.int64)
    k = rk4_run(flatten(model).data, P, has_forces(P), float(problem.t0),
                np.ascontiguousarray(problem.q0, float), np.ascontiguousarray(problem.v0, float),
                steps, every, project, float(problem.blowup), False, Q, V, W, np.empty(0),
                status)
    if status[0]:
        raise_stopped(name, status, times, Q[k - 1], V[k - 1])
    return Solution(times[keep], Q, V, W, {"newton_iterations": np.zeros(n_steps, np.int32)},
                    name)


def raise_stopped(name: str, status: NDArray, times: NDArray, q: NDArray, v: NDArray):
    """Raise the error of a compiled run that stopped (``status`` of :func:`rk4_run`), with
    the step, its time and the last saved state (q, v)."""
    n = int(status[1])
    cls = DivergenceError if status[0] in (NOT_FINITE, BLOWUP) else SolverError
    raise cls(f"{name}: {STOPPED[int(status[0])]} at step {n}, t = {times[n]:.6g}: q = "
              f"{np.array2string(q, precision=4)}, v = "
              f"{np.array2string(v, precision=4)} (last saved state); reduce dt")


def _apply_params(model: Model, D: NDArray, P: NDArray, params: dict, N: int) -> None:
    for name, values in params.items():
        qty, _, target = name.partition(":")
        vals = np.asarray(values, dtype=float)
        if vals.shape != (N,) or not np.all(np.isfinite(vals)):
            raise StateError(f"simulate_batch: params[{name!r}] must be {N} finite numbers, "
                             f"one per run; got shape {vals.shape}")
        if qty == "mass":
            if target not in model.body_names:
                # a merged link's name would scale the whole body it is merged into
                where = (f"it is a frame on body "
                         f"{model.bodies[model.frames[target].body].name!r}"
                         if target in model.frames and model.frames[target].body >= 0
                         else f"bodies are {model.body_names}")
                raise StateError(f"simulate_batch: {name!r}: {target!r} is not a body; "
                                 f"{where}")
            i = model.body_index(target)
            m = model.bodies[i].mass
            if m <= 0 or np.any(vals <= 0):
                raise StateError(f"simulate_batch: {name!r}: masses must be positive "
                                 f"(body {target!r} has mass {m})")
            s = (vals / m)[:, None]
            D[:, i, MASS] *= s[:, 0]
            D[:, i, H:H + 3] *= s
            D[:, i, IBAR:IBAR + 9] *= s
        elif qty in QUANTITIES:
            body = model.bodies[model.joint_index(target)]
            iv = body.iv  # the joint's speeds: a damping acts on each of them
            col = QUANTITIES[qty]
            if qty != "damping" and not _one_speed(body):
                raise StateError(f"simulate_batch: {name!r}: joint {target!r} is a "
                                 f"{body.joint.kind} joint ({body.joint.nv} speeds); "
                                 "per-run stiffness, rest and friction parameters need a "
                                 "1-DOF joint (damping works on every joint)")
            if qty in ("Fc", "Fs", "vs", "delta", "Fv") and not np.all(P[:, iv, P_FRIC]):
                raise StateError(f"simulate_batch: {name!r}: joint {target!r} has no "
                                 "JointFriction element to take it")
            P[:, iv, col] = vals[:, None]
        else:
            raise StateError(f"simulate_batch: unknown parameter {name!r}; write "
                             f"'<quantity>:<name>' with quantity mass (a body) or one of "
                             f"{', '.join(QUANTITIES)} (a joint)")


def simulate_batch(model: Model, Q0: ArrayLike, V0: ArrayLike, t_final: float,
                   method: str = "rk4", dt: float | None = None, forces=(),
                   params: dict | None = None, save_every: int = 1) -> BatchTrajectory:
    """Integrate N runs of ``model`` from the rows of ``Q0`` (N, nq) and ``V0`` (N, nv).

    The steps of ``dt`` from 0, the last one shortened to land on ``t_final``; the state
    after every ``save_every``-th step and after the last is kept (the samples of
    ``kd.simulate``). See the module docstring for ``params``. Raises
    :class:`DivergenceError` naming the runs whose state became non-finite.
    """
    if not isinstance(model, Model):
        raise KanedynError("simulate_batch takes a Model (its kernels run on the model's "
                           "flat arrays); for another system call kd.simulate per state")
    if method not in METHODS:
        raise KanedynError(f"simulate_batch: unknown method {method!r}; batched methods: "
                           f"{', '.join(METHODS)}")
    why = METHODS[method].refuses(model)
    if why is not None:
        raise KanedynError(f"simulate_batch: method {method!r} cannot take {model.name!r}: "
                           f"{why}")
    bad = singular_joints(model)
    if bad:  # the batched steps call ABA, which needs M⁻¹: say which joint, before any step
        raise singular_error(model, bad[0], "simulate_batch")
    Q0 = np.ascontiguousarray(Q0, dtype=float)
    V0 = np.ascontiguousarray(V0, dtype=float)
    if Q0.ndim != 2 or Q0.shape[1] != model.nq or V0.shape != (Q0.shape[0], model.nv):
        raise StateError(f"simulate_batch: Q0 and V0 must be (N, {model.nq}) and "
                         f"(N, {model.nv}); got {Q0.shape} and {V0.shape}")
    if not (np.all(np.isfinite(Q0)) and np.all(np.isfinite(V0))):
        raise StateError("simulate_batch: Q0 or V0 contains NaN or infinity")
    try:  # unit quaternions (normalised within the tolerance, as kd.simulate's q0)
        Q0 = np.ascontiguousarray(check_configuration(model, Q0)[0])
    except StateError as e:
        raise StateError(f"simulate_batch: Q0: {e}") from None
    if dt is None:
        raise StateError("simulate_batch: give the step dt (the batched methods are fixed-step)")
    if not (np.isfinite(dt) and dt > 0) or not (np.isfinite(t_final) and t_final >= 0):
        raise StateError(f"simulate_batch: need dt > 0 and t_final ≥ 0, got {dt}, {t_final}")
    if int(save_every) != save_every or save_every < 1:
        raise StateError(f"simulate_batch: save_every = {save_every!r} must be a positive int")
    N = Q0.shape[0]
    n_steps, steps, times, every, keep = step_grid(float(dt), 0.0, float(t_final),
                                                   int(save_every))
    D = np.ascontiguousarray(np.repeat(flatten(model).data[None], N, axis=0))
    rows, why = force_rows(model, forces)
    if why is not None:
        raise KanedynError(f"simulate_batch: {why}")
    P = np.ascontiguousarray(np.repeat(rows[None], N, axis=0))
    _apply_params(model, D, P, params or {}, N)
    S = len(keep)
    outQ = np.empty((N, S, model.nq))
    outV = np.empty((N, S, model.nv))
    outW = np.empty((N, S))
    outE = np.empty((N, S))
    status = np.zeros((N, 3), np.int64)
    METHODS[method].runs(model, D, P, Q0, V0, steps, every, outQ, outV, outW, outE, status)
    bad = np.flatnonzero(status[:, 0])
    if bad.size:
        why = "; ".join(sorted({STOPPED[int(c)] for c in status[bad, 0]}))
        where = ", ".join(f"run {k} at t = {times[status[k, 1]]:g}" for k in bad[:5])
        raise DivergenceError(f"simulate_batch: {bad.size} of {N} runs diverged ({why}): "
                              f"{where}{' ...' if bad.size > 5 else ''}")
    return BatchTrajectory(times[keep], outQ, outV, outE, outW, method)
