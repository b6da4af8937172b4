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
projection) and ``simulate_batch`` (which runs them per state, :func:`each_run`) call them:
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
``stiffness``/``rest``/``Fc``/... of it, are refused naming the joint. A constant
:class:`~kanedyn.forces.ExternalWrench` runs in every batched loop (its wrench row, τ = Jᵀf
at each run's q). Other force elements are refused with the reason. ``kd.simulate`` takes
these loops for any Model without force elements or with only those; otherwise the Python
steps.

Batched methods
---------------
``simulate_batch(..., method=...)`` looks the method up in :data:`METHODS`, a table of
:class:`BatchMethod`: its name, ``refuses(model)`` (why it cannot take the Model, or None),
``runs(model, D, P, Q0, V0, steps, every, outQ, outV, outW, outE, status, opts)``, which
fills the outputs of every run by a compiled whole-run loop of one state called per run
on numba's threads (:func:`each_run`) — ``D[k]`` the run's flat array (its ``mass:``
parameters applied), ``P[k]`` its force rows, ``steps``/``every`` the grid of
:func:`~kanedyn.integrators.rk4_compiled.step_grid`, ``status[k]`` left [code, step,
kernel status] by a run that stops (codes in :data:`STOPPED`), ``opts`` the method's
options and the force elements —, the names of the ``kd.simulate`` options it takes too
(``options``) and whether its loop takes force elements (``forces``). The table holds

- ``"rk4"``: :func:`rk4_run` or the manifold loop, by the Model;
- ``"midpoint"``, ``"gauss4"``: ``_gauss_loop`` of :mod:`kanedyn.integrators.gauss_compiled`
  per run (:func:`_gauss_runs`; ball, free and planar joints by its tangent form), with the force
  rows and their per-run parameters, W_nc by the method's quadrature (springs and
  friction on the 1-DOF joints of a tree with ball joints read their coordinate through
  :func:`~kanedyn.integrators.gauss_compiled.dof_coordinates`);
- ``"verlet"``: ``_verlet_loop`` of :mod:`kanedyn.integrators.verlet_compiled` per run
  (additive joints), or its ``_variational_loop`` (ball, free and planar joints among
  them: the variational step in the joints' charts), with the force rows and W_nc as
  midpoint;
- ``"avf"``, ``"itoh_abe"`` (``variant="forward"`` or ``"symmetric"``),
  ``"energy_momentum"`` (its ``"gonzalez"`` variant, what ``variant="auto"`` picks on
  additive chains; ``variant="projection"`` asked for there runs as on ball joints,
  below): on additive joints ``_dg_loop`` of
  :mod:`kanedyn.integrators.discrete_gradient_compiled` per run (:func:`_dg_runs`), with
  the force rows (springs, dampers, constant and sinusoidal torques, smoothed Stribeck
  friction, and their per-run parameters) and W_nc. With ball and free joints among
  revolute, prismatic and helical ones (:func:`_chart_batch`), the loops ``kd.simulate``
  runs there: avf and itoh_abe ``_avf_chart_loop`` and ``_itoh_abe_chart_loop`` of
  :mod:`kanedyn.integrators.avf_chart_compiled` per run (:func:`_chart_runs`; the
  canonical chart centred on each step's start), energy_momentum its ``"projection"``
  variant (what ``variant="auto"`` picks there) by ``_gauss_loop``'s tangent midpoint
  followed by the projection onto E₀ + W_nc and, for a free root without gravity or
  forces, [L; P] (:func:`_gauss_runs` with ``project``) — the same force rows and per-run
  parameters (dampers act on every speed of a ball or free joint; springs, sinusoidal
  torques and friction on its 1-DOF joints); its ``"lie"`` variant (a single torque-free
  free body, what ``variant="auto"`` picks there) by
  :func:`~kanedyn.integrators.lie_cayley_compiled.lie_run` per run (:func:`_lie_runs`;
  a per-run ``mass:`` scales m and I_c), and its ``"floating"`` variant (a free root with
  hinges below it, no gravity) by
  :func:`~kanedyn.integrators.floating_cayley_compiled.floating_run` per run
  (:func:`_floating_runs`; force rows on the arm, none on the base's speeds). Planar
  joints run in the same loops (the chart loops and the tangent midpoint know them); rotor
  armature is refused. The method's
  stepper is built from the Problem ``kd.simulate`` builds (its options checked, the
  variant and the cyclic coordinates of energy_momentum chosen) and the loop's settings
  read from it, so that each run is the compiled ``kd.simulate`` run; options:
  ``tol``/``maxiter``/``nodes`` (avf), ``tol``/``maxiter``/``variant`` (itoh_abe),
  ``maxiter``/``variant``/``cyclic``/``tol``/``momentum`` (energy_momentum; ``tol``
  the projection variant's Newton tolerance);
- ``"time_stepping"``: :func:`~kanedyn.sim.time_stepping_compiled.time_stepping_run` per run
  (:func:`_ts_runs`): the JointFriction elements with Stribeck laws and the entries of
  ``joints=`` (Stribeck laws, LuGre laws, Karnopp bands; ``surface_velocity=``, as
  ``kd.simulate``'s options) become friction joints (exact stick–slip by the box LCP,
  smoothed, Karnopp, LuGre) with a friction table per run, so that ``Fc:``/``Fs:``/
  ``vs:``/``delta:``/``Fv:`` of a friction joint, ``band:`` of a Karnopp band and
  ``sigma0:``/``sigma1:``/``sigma2:`` of a LuGre law set it per run; the grid of
  ``time_stepping`` (``round(t_final/dt)`` steps), the stick flags in
  ``BatchTrajectory.stuck``. Its runs take that table, so :func:`simulate_batch` calls
  :func:`_time_stepping_batch` for it (``runs`` is None);
- ``"stickslip"``: the event-driven loop,
  :func:`~kanedyn.sim.stickslip_compiled.stickslip_run` per run (:func:`_stickslip_runs`),
  exact Stribeck laws only, with time_stepping's friction table and its per-run levels,
  sampled on the same grid (``runs`` None likewise); the trees of ``kd.simulate``'s
  compiled loop — ball, free and planar joints among the additive ones — with friction on
  1-DOF joints.

Each gives, run by run, the single ``kd.simulate`` with the method to the bit (the same
loop, the same options) — where ``kd.simulate`` runs it compiled: a run whose Newton
iteration fails (in a chart loop also a singular J(x) of a diverging iterate, numba's
ZeroDivisionError) or whose kernel refuses a state is reported stopped here (codes
NEWTON_STOPPED, BAD_KERNEL_STATE), where ``kd.simulate`` hands it to the Python method.
What a loop cannot take is refused before any step, naming the method, the joint or
element and the batched methods that take it: an exact law outside time_stepping and
stickslip; an element without a compiled row (a torque or a wrench given as a function:
``kd.simulate`` per state). Another compiled loop joins with one entry: write its loop for
one state with these outputs, a driver like :func:`_gauss_runs` (:func:`each_run`), and
its ``refuses``.

A run that stops does not lose the others: :func:`simulate_batch` raises
:class:`DivergenceError` naming the runs (run, time, why); the error's ``result`` holds the
:class:`BatchTrajectory` (a stopped run NaN from its failed step on) and ``failures`` maps
run -> (t, why).
"""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numba import get_num_threads, njit
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
    applied_forces,
    force_rows,
    has_forces,
    spring_potential,
)
from ..integrators.base import Solution
from ..integrators.discrete_gradient import NEWTON_TOL
from ..integrators.discrete_gradient_compiled import COST, _dg_loop
from ..integrators.gauss_compiled import (
    BAD_STATE,
    NEWTON_FAILED,
    PREDICTOR_STEPS,
    STATE_GUARD,
    _gauss_loop,
    _projection_defaults,
    dof_coordinates,
    gather,
    momentum_rows,
    project_energy_standard,
    tableau,
)
from ..integrators.projection import parse_invariants
from ..integrators.rk4_compiled import (
    BAD_KERNEL_STATE,
    BLOWUP,
    NOT_FINITE,
    compiled_or_none,
    energy_of,
    largest_speed,
    rk4_stage_state,
    rk4_update,
    save_sample,
    state_guard,
    step_grid,
    store,
)
from ..integrators.verlet_compiled import _variational_loop, _verlet_loop
from ..model import Model
from ..model.configuration import check_configuration
from ..model.model import singular_joints
from . import time_stepping_compiled as tsc
from .time_stepping_compiled import time_stepping_run

_compiled.key_cache(__name__)

QUANTITIES = {"stiffness": P_K, "rest": P_REST, "damping": P_C, "Fc": P_FC, "Fs": P_FS,
              "vs": P_VS, "delta": P_DELTA, "Fv": P_FV}

#: the projection did not converge (rk4_run, rk4_manifold_run)
PROJECTION_FAILED = 4
#: why a run stopped, by the status code of :mod:`kanedyn.integrators.rk4_compiled`
STOPPED = {NOT_FINITE: "the state became NaN or infinite",
           BLOWUP: "blow-up (speed beyond blowup=)",
           BAD_KERNEL_STATE: "the dynamics kernel reported a bad state",
           PROJECTION_FAILED: "the energy projection did not converge"}


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
    #: time_stepping: the stick flags (N, S, n_friction_joints), in kd.simulate's order of
    #: the friction joints (those of ``joints=`` first, then the JointFriction elements)
    stuck: NDArray | None = None

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
    (:func:`~kanedyn.forces.kernel.applied_forces`: the wrench rows too; none unless
    ``forces``), ``ws`` the ABA workspace (:func:`~kanedyn.dynamics.kernels.aba.aba_workspace`,
    allocated once a run); returns the kernel's status (0 ok)."""
    if forces:
        st = applied_forces(data, P, t, q, v, tau_nc, tau)
        if st:
            return st
    return K.aba_core(data, q, v, tau, fext, False, a, *ws)


@njit(cache=True, _nrt=False, nogil=True)
def _power(v, tau_nc):
    """vᵀ τ_nc, the rate of W_nc."""
    w = 0.0
    for j in range(v.shape[0]):
        w += v[j] * tau_nc[j]
    return w


@njit(cache=True, nogil=True)
def rk4_run(data, P, forces, t0, q0, v0, steps, every, project, ptol, pmaxiter, blowup, record,
            Q, V, W, E, status):
    """One run of classical RK4 from (q0, v0) at t0 by the steps ``steps`` (the grid of
    :func:`~kanedyn.integrators.rk4_compiled.step_grid`), on the flat array ``data``:

        k₁ = f(x), k₂ = f(x + h/2 k₁), k₃ = f(x + h/2 k₂), k₄ = f(x + h k₃),
        x ← x + h/6 (k₁ + 2k₂ + 2k₃ + k₄),   x = (q, v, W_nc), f = (v, a, vᵀτ_nc)

    (Hairer, Nørsett & Wanner, Solving ODEs I, II.1.9), a = ABA(q, v, τ) with the joint
    forces of the rows ``P`` (:mod:`kanedyn.forces.kernel`) when ``forces``; then, if
    ``project``, the energy projection of :class:`~kanedyn.integrators.projection.Projected`
    onto ``E = E₀ + W_nc`` (the springs' potential in E; ``project_energy_standard`` of
    :mod:`kanedyn.integrators.gauss_compiled`, tolerance ``ptol`` and ``pmaxiter``
    iterations as the Python projection's), so that the budget E − E₀ − W_nc closes to
    round-off. Keeps the state after every ``every``-th step and the last in ``Q``, ``V``,
    ``W`` (and the energy in ``E`` if ``record``), sample 0 the start.
    Returns the number of samples kept; ``status`` (3,) is left [0, 0, 0], or [code, step
    (from 1), kernel status] of the step at which the state became non-finite, blew up
    (speed beyond ``blowup (1 + max|v0|)``), a kernel refused it or the projection did not
    converge (code 4)."""
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
    iqd, qd = np.arange(nv), np.empty(nv)  # additive 1-DOF joints: speed j's coordinate q[j]
    E0 = 0.0
    if project:
        E0 = energy_of(data, q, v, dT, dV, out)
        if forces:
            E0 += spring_potential(P, q)
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
        p = 0
        if project and s == 0:
            s |= K.crba1(data, q, M)
            if s == 0:
                # onto E = E0 + W_nc, as Projected (k4q, k1v, k2v, k3v: work vectors)
                p, _ = project_energy_standard(data, P, forces, iqd, False, q, v, E0 + w, E0,
                                               M, ptol, pmaxiter, dT, dV, out, k4q, k1v,
                                               k2v, k3v, qd)
        code = state_guard(q, v, vmax0, blowup)
        if code != NOT_FINITE and s != 0:  # (the order of run_fixed's checks)
            code = BAD_KERNEL_STATE
        elif code != NOT_FINITE and p == BAD_STATE:
            code = BAD_KERNEL_STATE
        elif code == 0 and p != 0:
            code = PROJECTION_FAILED
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


def each_run(n: int, run: Callable[[int], None]) -> None:
    """``run(k)`` for k = 0..n−1, spread over numba's number of threads
    (:func:`numba.get_num_threads`). Each ``run(k)`` is one call of a single-run compiled
    loop (``nogil``: the threads run at once) — the very kernel ``kd.simulate`` calls, with
    arguments of the same types, so that a batch compiles nothing of its own. (A ``prange``
    driver around such a loop is compiled as a new function with the loop relinked and
    optimised into it: 37 s of compilation for midpoint on a cold cache, against 0.4 s to
    load the cached loop.) The first exception of a run is raised."""
    threads = min(n, get_num_threads())
    if threads <= 1:
        for k in range(n):
            run(k)
        return
    with ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(run, range(n)):
            pass


# --- the methods simulate_batch takes -------------------------------------------------

@dataclass(frozen=True)
class BatchMethod:
    """A whole-run compiled loop that :func:`simulate_batch` runs for every state (see the
    module doc, "Batched methods").

    ``refuses(model)``: why the method cannot take this Model (a sentence naming the joint
    or element), or None. ``runs(model, D, P, Q0, V0, steps, every, outQ, outV, outW, outE,
    status, opts)``: fill the outputs of every run k from (Q0[k], V0[k]) on the flat array
    D[k] with the force rows P[k], by the compiled loop of one state called per run
    (:func:`each_run`);
    a run that stops leaves [code, step, kernel status] in status[k] (codes:
    :data:`STOPPED`). ``opts``: the keyword options given to :func:`simulate_batch` (only
    those named in ``options``) and ``"forces"``, the force elements. ``forces``: whether
    the loop takes force elements (the rows of :mod:`kanedyn.forces.kernel`); a method
    without refuses them naming the element and the methods that take them.
    """

    name: str
    refuses: Callable[[Model], str | None]
    runs: Callable[..., None] | None
    #: the keyword options of ``kd.simulate``'s method that the batch takes too
    options: tuple[str, ...] = ()
    forces: bool = True


def _rk4_refuses(model: Model) -> str | None:
    return None  # every tree: additive joints in rk4_run, the others in rk4_manifold_run


def _manifold(model: Model) -> bool:
    """Whether a model takes the manifold loop (as kd.simulate: a configuration that is not
    additive, or armature) rather than :func:`rk4_run`."""
    return not all(b.joint.chart_is_additive for b in model.bodies) or model.armature.any()


def _rk4_batch(model, D, P, Q0, V0, steps, every, outQ, outV, outW, outE, status,
               opts=None) -> None:
    # no blow-up guard (np.inf): a batch stops a run only at a non-finite state
    forces = has_forces(P)
    if _manifold(model):
        from .rk4_manifold import dof_coordinates, rk4_manifold_run

        iq_of_dof = dof_coordinates(model)

        def run(k: int) -> None:
            rk4_manifold_run(D[k], P[k], iq_of_dof, forces, 0.0, Q0[k], V0[k], steps, every,
                             False, np.zeros(0, dtype=np.int64), np.inf, True, outQ[k],
                             outV[k], outW[k], outE[k], status[k])
    else:
        ptol, pmaxiter = _projection_defaults()

        def run(k: int) -> None:
            rk4_run(D[k], P[k], forces, 0.0, Q0[k], V0[k], steps, every, False, ptol,
                    pmaxiter, np.inf, True, outQ[k], outV[k], outW[k], outE[k], status[k])
    each_run(Q0.shape[0], run)


# --- midpoint, gauss4, verlet: the implicit loops of integrators, one per run ----------

#: a stopped implicit run (the loops' NEWTON_FAILED), beside the codes of rk4_compiled
NEWTON_STOPPED = 5
STOPPED[NEWTON_STOPPED] = "the Newton iteration of a step did not converge"


@njit(cache=True, nogil=True)
def _finish(data, P, iqd, Q, V, W, kept, outQ, outV, outW, outE):
    """Copy the ``kept`` samples of an implicit loop, with their work ``W`` (W_nc), into a
    run's outputs with their energy (T + V_gravity from the kernel of
    ``kd.kinetic_energy``, as :func:`_energy`, and the springs' potential at the
    coordinates ``q[iqd[j]]`` of their speeds, :func:`~kanedyn.integrators.gauss_compiled.gather`);
    samples a stopped run did not reach are NaN."""
    summary = np.empty(11)
    qd = np.zeros(V.shape[1])
    for i in range(outQ.shape[0]):
        if i < kept:
            outQ[i] = Q[i]
            outV[i] = V[i]
            K.summary_into(data, Q[i], V[i], True, summary)
            gather(iqd, Q[i], qd)
            outE[i] = summary[0] + summary[1] + spring_potential(P, qd)
            outW[i] = W[i]
        else:
            outQ[i] = np.nan
            outV[i] = np.nan
            outE[i] = np.nan
            outW[i] = np.nan


def _gauss_runs(D, P, forces, iqd, tangent, Q0, V0, steps, every, A, Ainv, b, c, d, tol,
                maxiter, refresh_after, history, outQ, outV, outW, outE, status,
                project=False, prows=None, ptol=0.0, pmaxiter=0) -> None:
    """:func:`~kanedyn.integrators.gauss_compiled._gauss_loop` (midpoint or gauss4 by the
    tableau A, A⁻¹, b, c, d of :func:`~kanedyn.integrators.gauss_compiled.tableau`) for
    each run k on ``D[k]`` with the force rows ``P[k]`` (:func:`each_run`); status[k] left
    as the loop leaves it (translated by :func:`_implicit_status`). Its arguments are those
    of ``gauss_compiled.run`` (t0 = 0, no blow-up guard); ``project``: each step followed
    by the projection onto E₀ + W_nc and the momentum rows ``prows`` (tolerance ``ptol``,
    ``pmaxiter`` iterations) — energy_momentum's ``"projection"`` variant."""
    if prows is None:
        prows = np.zeros(0, dtype=np.int64)
    n_steps = steps.shape[0]
    S = outQ.shape[1]

    def run(k: int) -> None:
        Q, V = np.empty((S + 1, Q0.shape[1])), np.empty((S + 1, V0.shape[1]))
        W = np.zeros(S + 1)
        iters = np.zeros(n_steps, dtype=np.int32)
        kept = _gauss_loop(D[k], P[k], forces, iqd, 0.0, tangent, Q0[k], V0[k], steps, n_steps,
                           every, A, Ainv, b, c, d, tol, maxiter, refresh_after, history,
                           project, prows, ptol, pmaxiter, np.inf, Q, V, W, iters, status[k])
        _finish(D[k], P[k], iqd, Q, V, W, kept, outQ[k], outV[k], outW[k], outE[k])
    each_run(Q0.shape[0], run)


def _verlet_runs(D, P, forces, iqd, chart, Q0, V0, steps, every, tol, maxiter, refresh_after,
                 history, outQ, outV, outW, outE, status) -> None:
    """:func:`~kanedyn.integrators.verlet_compiled._verlet_loop` (additive joints) or, if
    ``chart``, its ``_variational_loop`` (ball, free and planar joints) for each run k on
    ``D[k]`` with the force rows ``P[k]`` (:func:`each_run`), with the arguments of
    ``verlet_compiled.run`` / ``run_chart`` (t0 = 0, no blow-up guard)."""
    n_steps = steps.shape[0]
    S = outQ.shape[1]

    def run(k: int) -> None:
        Q, V = np.empty((S + 1, Q0.shape[1])), np.empty((S + 1, V0.shape[1]))
        W = np.zeros(S + 1)
        iters = np.zeros(n_steps, dtype=np.int32)
        if chart:
            kept = _variational_loop(D[k], P[k], forces, iqd, 0.0, Q0[k], V0[k], steps,
                                     n_steps, every, tol, maxiter, history, np.inf, Q, V, W,
                                     iters, status[k])
        else:
            kept = _verlet_loop(D[k], P[k], forces, 0.0, Q0[k], V0[k], steps, n_steps, every,
                                tol, maxiter, refresh_after, history, np.inf, Q, V, W, iters,
                                status[k])
        _finish(D[k], P[k], iqd, Q, V, W, kept, outQ[k], outV[k], outW[k], outE[k])
    each_run(Q0.shape[0], run)


def _implicit_status(status: NDArray) -> None:
    """The implicit loops' [code, step index, guard code] as the batch's [code, step from 1,
    kernel status] (the codes of :data:`STOPPED`), in place."""
    code = status[:, 0].copy()
    stopped = code != 0
    status[stopped, 1] += 1  # the loops give the index of the step that failed
    status[code == NEWTON_FAILED, 0] = NEWTON_STOPPED
    status[code == STATE_GUARD, 0] = status[code == STATE_GUARD, 2]  # NOT_FINITE / BLOWUP
    status[code == BAD_STATE, 0] = BAD_KERNEL_STATE


def _element_name(f) -> str:
    """A force element as the messages name it: its type and joint(s)."""
    joints = getattr(f, "joints", None) or [getattr(f, "joint", None)]
    return type(f).__name__ + ("" if joints[0] is None else " on " + ", ".join(map(repr, joints)))


def _no_forces(method: str, forces, P: NDArray | None) -> None:
    """Refuse force elements (or per-run force parameters, in ``P``) for a method whose
    compiled loop integrates the conservative tree only (``BatchMethod.forces`` False; no
    method of :data:`METHODS` today), naming the element and the batched methods that take
    it."""
    way_out = (f"use method={', '.join(repr(m) for m in _WITH_FORCES)} for springs, dampers, "
               f"torques and smoothed friction, or kd.simulate(..., method={method!r}) per "
               "state")
    if forces:
        raise KanedynError(f"simulate_batch: method {method!r} takes no force elements (its "
                           "compiled loop integrates the conservative tree only), got "
                           f"{_element_name(forces[0])}; {way_out}")
    if P is not None and has_forces(P):
        raise KanedynError(f"simulate_batch: method {method!r} takes no force elements, and "
                           f"params= gives joint forces per run; {way_out}")


def _implicit_refuses(name: str) -> Callable[[Model], str | None]:
    """``refuses`` of every implicit method as kd.simulate runs it compiled: midpoint/gauss4
    (ball, free and planar joints by the tangent form), verlet (by the variational step in
    their charts), avf, itoh_abe (the discrete-gradient loop on additive coordinates, the
    chart loops of :mod:`~kanedyn.integrators.avf_chart_compiled` on the others) and
    energy_momentum (its variant's loop: the tangent midpoint with the energy projection
    there); no rotor armature (``rk4_compiled.applicable``,
    ``gauss_compiled.tangent_applicable``) and no joint type beyond :data:`_CHARTED`."""
    def refuses(model: Model) -> str | None:
        if model.armature.any():
            return (f"its joints have rotor armature, which the compiled {name} loop does "
                    "not take; use method='rk4'")
        for b in model.bodies:
            if not b.joint.chart_is_additive and b.joint.kind not in _CHARTED:
                return (f"joint {b.joint.name!r} is a {b.joint.kind} joint; the compiled "
                        f"{name} loop takes revolute, prismatic, helical, ball, free and "
                        "planar joints; use method='rk4' (every joint type)")
        return None
    return refuses


#: the joints of several speeds the compiled chart loops take (ball = "spherical")
_CHARTED = ("spherical", "free", "planar")


def _gauss_batch(stages: int):
    def runs(model, D, P, Q0, V0, steps, every, outQ, outV, outW, outE, status,
             opts=None) -> None:
        from ..integrators.gauss import REFRESH_AFTER, GaussLegendre

        A, Ainv, b, c, d = tableau(stages)
        tangent = not all(bd.joint.chart_is_additive for bd in model.bodies)
        _gauss_runs(D, P, has_forces(P), dof_coordinates(model), tangent, Q0, V0, steps, every,
                    A, Ainv, b, c, d, float(GaussLegendre.options["tol"]),
                    int(GaussLegendre.options["maxiter"]), REFRESH_AFTER, PREDICTOR_STEPS,
                    outQ, outV, outW, outE, status)
        _implicit_status(status)
    return runs


def _verlet_batch(model, D, P, Q0, V0, steps, every, outQ, outV, outW, outE, status,
                  opts=None) -> None:
    from ..integrators.verlet import Verlet

    chart = not all(bd.joint.chart_is_additive for bd in model.bodies)
    _verlet_runs(D, P, has_forces(P), dof_coordinates(model), chart, Q0, V0, steps, every,
                 float(Verlet.options["tol"]), int(Verlet.options["maxiter"]), 3,
                 PREDICTOR_STEPS, outQ, outV, outW, outE,
                 status)  # refresh_after 3: verlet_compiled.run's default
    _implicit_status(status)


# --- avf, itoh_abe, energy_momentum: the discrete-gradient loop, one per run -----------

def _dg_runs(D, P, forces, kind, carry_p, Q0, V0, steps, every, xi, w, mask, tol, stagnation,
             maxiter, refresh, degree, slow, floor, outQ, outV, outW, outE, status) -> None:
    """:func:`~kanedyn.integrators.discrete_gradient_compiled._dg_loop` (the discrete
    gradient ``kind``: AVF, Itoh–Abe forward or symmetric, Gonzalez) for each run k on
    ``D[k]`` with the force rows ``P[k]`` (:func:`each_run`); status[k] left
    as the loop leaves it, [code, step index, Newton matrices built] (translated by
    :func:`_dg_status`). The one call of ``_dg_loop`` on the batch side: its arguments are
    those of ``discrete_gradient_compiled.run`` (no blow-up guard, as the other batches)."""
    n_steps = steps.shape[0]
    S = outQ.shape[1]
    iqd = np.arange(V0.shape[1], dtype=np.int64)  # additive coordinates: q_j of speed j

    def run(k: int) -> None:
        Q, V = np.empty((S + 1, Q0.shape[1])), np.empty((S + 1, V0.shape[1]))
        W = np.zeros(S + 1)
        iters = np.zeros(n_steps, dtype=np.int32)
        kept = _dg_loop(D[k], P[k], forces, 0.0, kind, carry_p, Q0[k], V0[k], steps, n_steps,
                        every, xi, w, mask, tol, stagnation, maxiter, refresh, degree, slow,
                        COST, floor, np.inf, Q, V, W, iters, status[k])
        _finish(D[k], P[k], iqd, Q, V, W, kept, outQ[k], outV[k], outW[k], outE[k])
    each_run(Q0.shape[0], run)


def _dg_status(status: NDArray) -> None:
    """The discrete-gradient loop's [code, step, matrices] as the batch's [code, step from 1,
    0] (codes of :data:`STOPPED`), in place: its code 1 (Newton did not settle, at the step
    index) -> NEWTON_STOPPED, 2 (the state guard, at the step from 1; with no blow-up bound
    only a non-finite state) -> NOT_FINITE, 3 (a kernel refused a state or M, at the step
    index) -> BAD_KERNEL_STATE."""
    code = status[:, 0].copy()
    status[:, 2] = 0
    status[(code == 1) | (code == 3), 1] += 1
    status[code == 1, 0] = NEWTON_STOPPED
    status[code == 2, 0] = NOT_FINITE
    status[code == 3, 0] = BAD_KERNEL_STATE


def _dg_problem(model, D, P, Q0, V0, steps, forces):
    """The Problem of run 0 as ``kd.simulate`` builds it (its force elements' τ, the force
    rows), from which the method's stepper is built and its variant and settings read. Per-run
    joint forces given by ``params=`` alone (no element) count as forces, as they would for
    ``kd.simulate`` with the element (the stepper's choices, e.g. energy_momentum's variant,
    depend on whether forces act)."""
    from ..forces import ForceSet
    from ..integrators.base import Problem
    from .system import as_system

    sys_ = as_system(model)
    fs = ForceSet(sys_, forces)
    springs = bool(fs.conservative) or bool(np.any(P[:, :model.nv, P_K] != 0.0))
    acting = bool(fs.nonconservative) or (has_forces(P) and not fs.elements)
    return Problem(system=sys_, q0=Q0[0], v0=V0[0], t_final=float(steps.sum()),
                   dt=float(steps[0]), tau_cons=fs.tau_conservative if springs else None,
                   tau_nc=fs.tau_nonconservative if acting else None,
                   potential=fs.potential if springs else None,
                   force_rows=np.ascontiguousarray(P[0]))


def _dg_batch(name: str):
    """``runs`` of a discrete-gradient method: the method's stepper is built as
    ``kd.simulate`` builds it (its options checked, its variant and cyclic coordinates
    chosen), and its settings for the compiled loop read from it; a Model with ball or
    free joints goes to :func:`_chart_batch`."""
    def runs(model, D, P, Q0, V0, steps, every, outQ, outV, outW, outE, status, opts) -> None:
        from ..integrators import discrete_gradient_compiled as dgc
        from ..integrators import get_method

        options = {k: v for k, v in opts.items() if k != "forces"}
        if options.get("compiled", True) is False:
            raise KanedynError(f"simulate_batch: method {name!r} runs its compiled loop; "
                               "compiled=False is kd.simulate's (the Python steps)")
        problem = _dg_problem(model, D, P, Q0, V0, steps, opts["forces"])
        try:
            stepper = get_method(name)[0](problem, **options)
        except SolverError as e:
            raise KanedynError(f"simulate_batch: {e}") from None
        if name != "energy_momentum" and stepper.alpha > 0.0:
            raise KanedynError(f"simulate_batch: {name}'s dissipation= has no compiled loop; "
                               "use kd.simulate per state")
        if (not all(b.joint.chart_is_additive for b in model.bodies)
                or (name == "energy_momentum" and stepper.variant == "projection")):
            # (energy_momentum's projection variant on an additive chain too: its midpoint
            # is in the tangent form there as well, as kd.simulate runs it)
            _chart_batch(name, stepper, model, D, P, Q0, V0, steps, every, outQ, outV, outW,
                         outE, status)
            return
        mask = np.ones(model.nv)
        xi = w = np.ones(1)
        carry_p, degree, floor = True, dgc.DEGREE, 0.0  # dgc.run's defaults
        if name == "avf":
            kind = dgc.AVF
            xi, w = stepper.xi, stepper.w
        elif name == "itoh_abe":
            kind = dgc.ITOH_ABE_SYMMETRIC if stepper.symmetric else dgc.ITOH_ABE
            floor = 1e-10  # (ItohAbe.compiled_run's)
        else:  # (the "gonzalez" variant: lie and floating need a free joint)
            kind, carry_p = dgc.GONZALEZ, False
            mask[list(stepper.cyclic)] = 0.0
        tol = NEWTON_TOL if name == "energy_momentum" else float(stepper.opts["tol"])
        stagnation = stepper.stagnation if name != "energy_momentum" else 1e-9
        _dg_runs(D, P, has_forces(P), kind, carry_p, Q0, V0, steps, every,
                 np.ascontiguousarray(xi, float), np.ascontiguousarray(w, float), mask,
                 tol, float(stagnation), int(stepper.opts["maxiter"]), dgc.REFRESH, degree,
                 dgc.SLOW, floor, outQ, outV, outW, outE, status)  # (dgc.run's defaults)
        _dg_status(status)
    return runs


# --- avf, itoh_abe, energy_momentum on ball and free joints: the chart loops ----------

def _chart_runs(D, P, forces, iqd, loop, settings, Q0, V0, steps, every, outQ, outV, outW,
                outE, status) -> None:
    """The chart loop ``loop`` of :mod:`~kanedyn.integrators.avf_chart_compiled`
    (``_avf_chart_loop`` with ``settings`` = (ξ, w, tol, maxiter), or
    ``_itoh_abe_chart_loop`` with (symmetric, tol, maxiter, stagnation, floor)) for each run
    k on ``D[k]`` with the force rows ``P[k]`` (:func:`each_run`), with the arguments of
    ``avf_chart_compiled.run`` / ``run_itoh_abe`` (t0 = 0, no blow-up guard); status[k] as
    the loop leaves it (translated by :func:`_implicit_status`). A diverging Newton iterate
    can make a 3x3 block of J(x) singular inside the joint charts, where numba's division
    raises ZeroDivisionError (``avf_chart_compiled._call``: kd.simulate then hands the run
    to the Python steps): the run is reported stopped by Newton at the step it was on (the
    first step without an iteration count)."""
    n_steps = steps.shape[0]
    S = outQ.shape[1]
    itoh_abe = len(settings) == 5

    def run(k: int) -> None:
        Q, V = np.empty((S + 1, Q0.shape[1])), np.empty((S + 1, V0.shape[1]))
        W = np.zeros(S + 1)
        iters = np.zeros(n_steps, dtype=np.int32)
        try:
            if itoh_abe:
                symmetric, tol, maxiter, stagnation, floor = settings
                kept = loop(D[k], P[k], forces, iqd, symmetric, 0.0, Q0[k], V0[k], steps,
                            n_steps, every, tol, maxiter, stagnation, floor, np.inf, Q, V, W,
                            iters, status[k])
            else:
                xi, w, tol, maxiter = settings
                kept = loop(D[k], P[k], forces, iqd, 0.0, Q0[k], V0[k], steps, n_steps, every,
                            xi, w, tol, maxiter, np.inf, Q, V, W, iters, status[k])
        except ZeroDivisionError:
            # (a converged step leaves its count ≥ 1 in iters)
            step = int(np.flatnonzero(iters == 0)[0]) if (iters == 0).any() else n_steps - 1
            status[k, 0], status[k, 1], status[k, 2] = NEWTON_FAILED, step, 0
            kept = 1 + step // every  # the samples of the steps before it
        _finish(D[k], P[k], iqd, Q, V, W, kept, outQ[k], outV[k], outW[k], outE[k])
    each_run(Q0.shape[0], run)


def _chart_batch(name, stepper, model, D, P, Q0, V0, steps, every, outQ, outV, outW, outE,
                 status) -> None:
    """avf and itoh_abe on a Model with ball or free joints: the chart loops per run
    (:func:`_chart_runs`), their settings those ``compiled_discrete_gradient`` passes
    (``avf_chart_compiled.run``: ξ, w of the stepper, tol, maxiter; ``run_itoh_abe``: the
    variant, tol, maxiter, the stepper's stagnation and floor); energy_momentum: its
    ``"projection"`` variant (what ``variant="auto"`` picks there unless the ``"lie"`` or
    ``"floating"`` scheme applies; asked for on an additive chain, there too) by
    ``_gauss_loop``'s tangent midpoint and projection, the
    arguments of ``EnergyMomentum._compiled_projection``; its ``"lie"`` and ``"floating"``
    variants by :func:`_lie_runs` and :func:`_floating_runs`."""
    from ..integrators import avf_chart_compiled as acc
    from ..integrators import gauss_compiled

    forces, iqd = has_forces(P), dof_coordinates(model)
    if name == "energy_momentum":
        from ..integrators.gauss import REFRESH_AFTER

        if stepper.variant == "lie":
            _lie_runs(stepper, model, D, P, Q0, V0, steps, every, outQ, outV, outW, outE,
                      status)
            return
        if stepper.variant == "floating":
            _floating_runs(stepper, model, D, P, Q0, V0, steps, every, outQ, outV, outW, outE,
                           status)
            return
        rows = gauss_compiled.momentum_rows(stepper.invariants)
        if rows is None:
            raise KanedynError(f"simulate_batch: energy_momentum's projection onto "
                               f"{stepper.invariants} has no compiled loop; use kd.simulate "
                               "per state")
        A, Ainv, b, c, d = tableau(1)
        m = stepper.inner.base
        ptol, pmaxiter = _projection_defaults()
        _gauss_runs(D, P, forces, iqd, True, Q0, V0, steps, every, A, Ainv, b, c, d,
                    float(m.opts["tol"]), int(m.opts["maxiter"]), REFRESH_AFTER,
                    PREDICTOR_STEPS, outQ, outV, outW, outE, status, True,
                    np.array(rows, dtype=np.int64), ptol, pmaxiter)
    elif name == "avf":
        _chart_runs(D, P, forces, iqd, acc._avf_chart_loop,
                    (np.ascontiguousarray(stepper.xi, float),
                     np.ascontiguousarray(stepper.w, float), float(stepper.opts["tol"]),
                     int(stepper.opts["maxiter"])),
                    Q0, V0, steps, every, outQ, outV, outW, outE, status)
    else:
        _chart_runs(D, P, forces, iqd, acc._itoh_abe_chart_loop,
                    (bool(stepper.symmetric), float(stepper.opts["tol"]),
                     int(stepper.opts["maxiter"]), float(stepper.stagnation),
                     float(stepper.floor)),
                    Q0, V0, steps, every, outQ, outV, outW, outE, status)
    _implicit_status(status)


def _lie_runs(stepper, model, D, P, Q0, V0, steps, every, outQ, outV, outW, outE,
              status) -> None:
    """energy_momentum's ``"lie"`` variant (a single torque-free body on a free joint):
    :func:`~kanedyn.integrators.lie_cayley_compiled.lie_run` per run (:func:`each_run`)
    with the arguments of ``lie_cayley_compiled.run`` (m, c, I_c, I_c⁻¹ and g of the
    stepper; t0 = 0, no blow-up guard), W_nc 0 (no forces: the variant is not picked
    with any). A per-run ``mass:`` of the body scales m, I_c (and I_c⁻¹ inversely) by the
    ratio of the run's mass to the model's, as it scales the flat array's inertia (c
    unchanged). Its status [code, step] becomes the batch's [code, step from 1, 0]:
    Newton at step index n -> NEWTON_STOPPED at n + 1, the state guard (at the step from
    1) -> NOT_FINITE."""
    from ..integrators import lie_cayley_compiled as lcc

    n_steps = steps.shape[0]
    S = outQ.shape[1]
    f = np.ascontiguousarray
    m0 = float(stepper.m)
    c, g = f(stepper.c, float), f(stepper.g, float)
    Ic, Ici = f(stepper.Ic, float), f(stepper.Ic_inv, float)
    maxiter, iqd = int(stepper.opts["maxiter"]), dof_coordinates(model)
    mass = model.bodies[0].mass

    def run(k: int) -> None:
        ratio = D[k, 0, MASS] / mass
        m, I, Ii = (m0, Ic, Ici) if ratio == 1.0 else (m0 * ratio, Ic * ratio, Ici / ratio)
        Q, V = np.empty((S, 7)), np.empty((S, 6))
        iters = np.zeros(n_steps, dtype=np.int32)
        st = np.zeros(2, dtype=np.int64)
        kept = lcc.lie_run(m, c, I, Ii, g, Q0[k], V0[k], steps, n_steps, every, maxiter,
                           np.inf, Q, V, iters, st)
        if st[0] == lcc.NEWTON_FAILED:
            status[k, 0], status[k, 1] = NEWTON_STOPPED, st[1] + 1
        elif st[0] == lcc.STATE_GUARD:
            status[k, 0], status[k, 1] = NOT_FINITE, st[1]
        _finish(D[k], P[k], iqd, Q, V, np.zeros(S), kept, outQ[k], outV[k], outW[k], outE[k])
    each_run(Q0.shape[0], run)


def _floating_runs(stepper, model, D, P, Q0, V0, steps, every, outQ, outV, outW, outE,
                   status) -> None:
    """energy_momentum's ``"floating"`` variant (a free root with revolute, prismatic or
    helical joints below it, no gravity):
    :func:`~kanedyn.integrators.floating_cayley_compiled.floating_run` per run
    (:func:`each_run`) with the arguments of ``floating_cayley_compiled.run`` (its rows act
    when force elements are given, ``nc`` when some are not conservative: the stepper's
    Problem; t0 = 0, no blow-up guard). A force on the base's speeds (a damper on the free
    joint) has no row that loop takes (kd.simulate runs the Python steps): refused. Its
    status [code, step] becomes the batch's: Newton (at the step's index) ->
    NEWTON_STOPPED, a kernel's refusal (likewise) -> BAD_KERNEL_STATE, at the step from 1;
    the state guard (already from 1) -> NOT_FINITE."""
    from ..integrators import floating_cayley_compiled as fcc

    base = fcc._inactive_rows(P.shape[2])
    if np.any(P[:, :6] != base[None]):
        raise KanedynError(
            f"simulate_batch: energy_momentum's 'floating' variant cannot take a force on "
            f"the free joint {model.bodies[0].joint.name!r} (its compiled loop has no row "
            "for the base's speeds); pass variant='projection' (batched), or call "
            "kd.simulate(..., method='energy_momentum') per state")
    problem = stepper.problem
    forces = bool(problem.tau_cons is not None or problem.tau_nc is not None)
    nc = problem.tau_nc is not None
    n_steps = steps.shape[0]
    S = outQ.shape[1]
    maxiter, iqd = int(stepper.opts["maxiter"]), dof_coordinates(model)
    codes = {fcc.NEWTON_FAILED: NEWTON_STOPPED, fcc.BAD_STATE: BAD_KERNEL_STATE}

    def run(k: int) -> None:
        Q, V = np.empty((S, Q0.shape[1])), np.empty((S, V0.shape[1]))
        W = np.zeros(S)
        iters = np.zeros(n_steps, dtype=np.int32)
        st = np.zeros(2, dtype=np.int64)
        kept = fcc.floating_run(D[k], P[k], forces, nc, 0.0, Q0[k], V0[k], steps, n_steps,
                                every, fcc.TOL, fcc.STAGNATION, maxiter, np.inf, Q, V, W, iters, st)
        if st[0] == fcc.STATE_GUARD:
            status[k, 0], status[k, 1] = NOT_FINITE, st[1]
        elif st[0] != fcc.OK:
            status[k, 0], status[k, 1] = codes[int(st[0])], st[1] + 1
        _finish(D[k], P[k], iqd, Q, V, W, kept, outQ[k], outV[k], outW[k], outE[k])
    each_run(Q0.shape[0], run)


# --- time_stepping: exact stick–slip by the box LCP, one compiled run per state --------

#: a stopped time-stepping run whose friction complementarity problem was not solved
LCP_STOPPED = 6
STOPPED[LCP_STOPPED] = "the friction complementarity problem (box LCP) was not solved"


def _ts_runs(D, P, forces, FT, idx, Q0, V0, dt, n_steps, keep, outQ, outV, outW, outE,
             outS, status) -> None:
    """:func:`~kanedyn.sim.time_stepping_compiled.time_stepping_run` for each run k (its
    flat array ``D[k]``, force rows ``P[k]`` and friction table ``FT[k]``; :func:`each_run`);
    the steps ``keep`` of each kept in the outputs (``outS`` the stick flags), status[k] =
    [code, step] of time_stepping_run."""
    nf = idx.shape[0]

    def run(k: int) -> None:
        Q, V = np.empty((n_steps + 1, Q0.shape[1])), np.empty((n_steps + 1, V0.shape[1]))
        FR, Z = np.zeros((n_steps + 1, nf)), np.zeros((n_steps + 1, nf))
        ST = np.zeros((n_steps + 1, nf), dtype=np.bool_)
        E = np.empty(n_steps + 1)
        Wf, Wo, Dh = np.zeros(n_steps + 1), np.zeros(n_steps + 1), np.zeros(n_steps + 1)
        st = np.zeros(2, np.int64)
        time_stepping_run(D[k], P[k], forces, FT[k], idx, Q0[k], V0[k], dt, n_steps, Q, V,
                          FR, ST, E, Wf, Wo, Dh, Z, st)
        status[k, 0], status[k, 1] = st[0], st[1]
        outQ[k] = Q[keep]
        outV[k] = V[keep]
        outE[k] = E[keep]
        outW[k] = Wf[keep] + Wo[keep]
        outS[k] = ST[keep]
    each_run(Q0.shape[0], run)


SWITCHES_STOPPED = 7
STOPPED[SWITCHES_STOPPED] = ("the event-driven stick–slip stopped (its step size collapsed, "
                             "or mode switches without progress: Zeno behaviour)")


def _stickslip_runs(D, P, forces, FT, idx, Q0, V0, t_final, times, keep, options, outQ, outV,
                    outW, outE, outS, status) -> None:
    """:func:`~kanedyn.sim.stickslip_compiled.stickslip_run` for each run k (its ``D[k]``,
    ``P[k]``, ``FT[k]``; the modes at t = 0 by
    :func:`~kanedyn.sim.stickslip_compiled.start_modes`; :func:`each_run`), sampled at
    ``times[keep]``;
    status[k] = [code, index in ``times`` of the first time not reached] where a run
    stopped."""
    import inspect

    from .stickslip import event_settings, simulate_stick_slip
    from .stickslip_compiled import SS_KERNEL, SS_NOT_FINITE, start_modes, stickslip_run

    names = ("rtol", "atol", "max_step", "stick_step", "max_switches")
    given = {k: p.default for k, p in inspect.signature(simulate_stick_slip).parameters.items()
             if k in names}  # (kd.simulate's defaults, and its checks)
    given.update((k, options[k]) for k in names if k in options)
    rtol, atol, max_step, stick_step, max_switches = event_settings(t_final, **given)
    nq, nv, nf = Q0.shape[1], V0.shape[1], idx.shape[0]
    code_of = {SS_NOT_FINITE: NOT_FINITE, SS_KERNEL: BAD_KERNEL_STATE}
    grid = np.ascontiguousarray(times[keep])

    def run(k: int) -> None:
        y0 = np.concatenate([Q0[k], V0[k], np.zeros(3)])
        steps = np.zeros(2, np.int64)
        mode = np.zeros(nf, np.int64)
        n_start = start_modes(D[k], P[k], forces, FT[k], idx, y0, mode)
        S, ns, _, _, code, t_stop = stickslip_run(
            D[k], P[k], forces, FT[k], idx, y0, mode, t_final, rtol, atol, max_step,
            stick_step, grid, max_switches, n_start, steps)
        n = y0.shape[0]  # (the state of stickslip.py: q, v, W_friction, W_other, D)
        outQ[k, :ns] = S[:ns, 1:1 + nq]
        outV[k, :ns] = S[:ns, 1 + nq:1 + nq + nv]
        outW[k, :ns] = S[:ns, 1 + nq + nv] + S[:ns, 2 + nq + nv]
        outE[k, :ns] = S[:ns, -1]
        outS[k, :ns] = S[:ns, 1 + n:1 + n + nf] == 0.0
        if code:
            status[k, 0] = code_of.get(int(code), SWITCHES_STOPPED)
            status[k, 1] = min(int(np.searchsorted(times, t_stop)), times.shape[0] - 1)

    each_run(Q0.shape[0], run)


def _ts_refuses(model: Model) -> str | None:
    for b in model.bodies:
        if not _one_speed(b) and b.joint.nv > 0:
            return (f"joint {b.joint.name!r} is a {b.joint.kind} joint; the compiled "
                    "time-stepping takes revolute, prismatic and helical joints (friction "
                    "acts on one coordinate); use method='rk4' with a smoothed law or "
                    "dampers")
    return None


def _ss_refuses(model: Model) -> str | None:
    from .stickslip_compiled import joint_not_taken

    joint = joint_not_taken(model)
    if joint is None:
        return None
    return (f"joint {joint.name!r} is a {joint.kind} joint; the compiled event-driven loop "
            "takes revolute, prismatic, helical, ball, free and planar joints")


#: per-run friction quantities of a time-stepping batch: the columns of its table FT
_FT_COLUMNS = {"Fc": tsc.FT_FC, "Fs": tsc.FT_FS, "vs": tsc.FT_VS, "delta": tsc.FT_DELTA,
               "Fv": tsc.FT_FV, "band": tsc.FT_BAND, "sigma0": tsc.FT_S0,
               "sigma1": tsc.FT_S1, "sigma2": tsc.FT_S2}
#: the per-run quantities of a friction joint, by its treatment (time_stepping's kinds)
_FT_OF_KIND = {"exact": ("Fc", "Fs", "vs", "delta", "Fv"),
               "smooth": ("Fc", "Fs", "vs", "delta", "Fv"),
               "karnopp": ("Fc", "Fs", "vs", "delta", "Fv", "band"),
               "lugre": ("Fc", "Fs", "vs", "delta", "sigma0", "sigma1", "sigma2")}


def _time_stepping_batch(model, D, Q0, V0, t_final, dt, forces, params, save_every, options,
                         event_driven: bool = False):
    """simulate_batch's ``time_stepping``: the JointFriction elements (exact, smoothed) and
    the entries of ``joints=`` (Stribeck laws, LuGre laws, Karnopp bands) become friction
    joints as in kd.simulate (``joints=`` first, then the elements, with their
    ``surface_velocity=``), the other elements force rows; the steps of time_stepping
    (``round(t_final/dt)`` of ``dt``), every ``save_every``-th and the last kept. Returns
    (times, keep, outputs..., status). ``event_driven``: ``stickslip`` instead — exact
    Stribeck laws only, each run the event-driven loop sampled at those times
    (:func:`_stickslip_runs`)."""
    from ..forces.friction import JointFriction
    from ..friction.karnopp import Karnopp
    from ..friction.laws import Stribeck
    from ..friction.laws_kernel import SMOOTHING_CODES
    from ..friction.lugre import LuGre
    from .time_stepping import friction_table

    N = Q0.shape[0]
    laws = dict(options.get("joints") or {})
    surface = {j: float(x) for j, x in (options.get("surface_velocity") or {}).items()}
    others = []
    for f in forces or ():
        if isinstance(f, JointFriction):
            if f.joint in laws:
                raise KanedynError(f"simulate_batch: joint {f.joint!r} has two friction laws "
                                   "(a JointFriction and an entry of joints=)")
            laws[f.joint] = f.law
            if f.surface_velocity != 0.0:
                surface[f.joint] = f.surface_velocity
        else:
            others.append(f)
    joints, items = list(laws), list(laws.values())
    for j, x in laws.items():
        if j not in model.joint_names:
            raise KanedynError(f"simulate_batch: joints= names {j!r}, which is not a joint "
                               f"of {model.name!r} ({', '.join(model.joint_names)})")
        joint = model.bodies[model.joint_index(j)].joint
        if joint.nv != 1:  # (stickslip's trees have ball, free and planar joints too)
            raise KanedynError(f"simulate_batch: friction acts on one coordinate; joint {j!r} "
                               f"is a {joint.kind} joint with {joint.nv} speeds")
        law = x.law if isinstance(x, Karnopp) else x
        if not isinstance(law, LuGre) and (type(law) is not Stribeck or (
                law.smoothing is not None and law.smoothing.kind not in SMOOTHING_CODES)):
            raise KanedynError(f"simulate_batch: time_stepping batches Stribeck laws (exact, "
                               f"smoothed, or in a Karnopp band) and LuGre laws; joint {j!r} "
                               f"has {x!r}: use kd.simulate per state for it")
    for j in surface:
        if j not in laws:
            raise KanedynError(f"simulate_batch: surface_velocity names {j!r}, which has no "
                               "friction law (JointFriction or joints=)")
    vb = [surface.get(j, 0.0) for j in joints]
    if not joints:
        raise KanedynError(f"simulate_batch: method "
                           f"{'stickslip' if event_driven else 'time_stepping'!r} needs "
                           "JointFriction elements in forces= (or laws in joints=); without "
                           "friction use 'rk4', 'verlet' or 'avf'")
    idx = np.array([model.bodies[model.joint_index(j)].iv.start for j in joints], np.int64)
    kinds = ["karnopp" if isinstance(x, Karnopp) else "lugre" if isinstance(x, LuGre)
             else "exact" if x.discontinuous else "smooth" for x in items]  # (time_stepping's)
    rows, why = force_rows(model, others, friction=True, wrenches=True)
    if why is not None:
        raise KanedynError(f"simulate_batch: {why}")
    P = np.ascontiguousarray(np.repeat(rows[None], N, axis=0))
    FT = np.ascontiguousarray(np.repeat(friction_table(items, kinds, np.array(vb))[None], N,
                                        axis=0))
    rest = {}
    for name, vals in (params or {}).items():
        qty, _, target = name.partition(":")
        if qty in _FT_COLUMNS:
            if target not in joints:
                raise StateError(f"simulate_batch: {name!r}: joint {target!r} has no "
                                 "JointFriction element (or law in joints=) to take it")
            kind = kinds[joints.index(target)]
            if qty not in _FT_OF_KIND[kind]:
                raise StateError(f"simulate_batch: {name!r}: joint {target!r}'s friction is "
                                 f"{kind}, which takes {', '.join(_FT_OF_KIND[kind])} per run")
            vals = np.asarray(vals, dtype=float)
            if vals.shape != (N,) or not np.all(np.isfinite(vals)):
                raise StateError(f"simulate_batch: params[{name!r}] must be {N} finite "
                                 f"numbers, one per run; got shape {vals.shape}")
            if qty in ("vs", "band", "sigma0") and np.any(vals <= 0):
                raise StateError(f"simulate_batch: params[{name!r}] must be > 0 (it divides "
                                 "the law)")
            FT[:, joints.index(target), _FT_COLUMNS[qty]] = vals
        else:
            rest[name] = vals
    _apply_params(model, D, P, rest, N)
    n_steps = int(round(t_final / dt))
    times = np.arange(n_steps + 1) * dt
    keep = np.unique(np.r_[np.arange(0, n_steps + 1, save_every), n_steps]).astype(np.int64)
    S = len(keep)
    outQ, outV = np.empty((N, S, model.nq)), np.empty((N, S, model.nv))
    outW, outE = np.empty((N, S)), np.empty((N, S))
    outS = np.zeros((N, S, len(idx)), dtype=bool)
    status = np.zeros((N, 3), np.int64)
    if event_driven:
        if any(k != "exact" or type(x) is not Stribeck for k, x in zip(kinds, items,
                                                                        strict=True)):
            bad = next(j for j, k, x in zip(joints, kinds, items, strict=True)
                       if k != "exact" or type(x) is not Stribeck)
            raise KanedynError(f"simulate_batch: method 'stickslip' batches exact Stribeck "
                               f"laws (event-driven stick–slip); joint {bad!r} has "
                               f"{laws[bad]!r}: use method='time_stepping' for it")
        _stickslip_runs(D, P, has_forces(P), FT, idx, Q0, V0, float(t_final), times, keep,
                        options, outQ, outV, outW, outE, outS, status)
        return times, keep, outQ, outV, outW, outE, outS, status
    _ts_runs(D, P, has_forces(P), FT, idx, Q0, V0, float(dt), n_steps, keep, outQ, outV,
             outW, outE, outS, status)
    code = status[:, 0].copy()  # TS_NOT_FINITE, TS_KERNEL, TS_LCP -> the codes of STOPPED
    status[code == tsc.TS_NOT_FINITE, 0] = NOT_FINITE
    status[code == tsc.TS_KERNEL, 0] = BAD_KERNEL_STATE
    status[code == tsc.TS_LCP, 0] = LCP_STOPPED
    return times, keep, outQ, outV, outW, outE, outS, status


#: the batched methods by name; another compiled whole-run loop is added as one entry
METHODS: dict[str, BatchMethod] = {
    "rk4": BatchMethod("rk4", _rk4_refuses, _rk4_batch),
    "midpoint": BatchMethod("midpoint", _implicit_refuses("midpoint"), _gauss_batch(1)),
    "gauss4": BatchMethod("gauss4", _implicit_refuses("gauss4"), _gauss_batch(2)),
    "verlet": BatchMethod("verlet", _implicit_refuses("verlet"), _verlet_batch),
    "avf": BatchMethod("avf", _implicit_refuses("avf"), _dg_batch("avf"),
                       ("tol", "maxiter", "nodes")),
    "itoh_abe": BatchMethod("itoh_abe", _implicit_refuses("itoh_abe"), _dg_batch("itoh_abe"),
                            ("tol", "maxiter", "variant")),
    "energy_momentum": BatchMethod("energy_momentum", _implicit_refuses("energy_momentum"),
                                   _dg_batch("energy_momentum"),
                                   ("maxiter", "variant", "cyclic", "tol", "momentum")),
    # (its runs take the friction table too: simulate_batch calls _time_stepping_batch)
    "time_stepping": BatchMethod("time_stepping", _ts_refuses, None,
                                 ("joints", "surface_velocity")),
    # (event-driven stick–slip, exact Stribeck laws: simulate_batch calls
    # _time_stepping_batch(..., event_driven=True))
    "stickslip": BatchMethod("stickslip", _ss_refuses, None,
                             ("joints", "surface_velocity", "rtol", "atol", "max_step",
                              "stick_step", "max_switches")),
}

#: the methods whose compiled loops take force elements (and so, for the others, the way out)
_WITH_FORCES = ("avf", "itoh_abe", "energy_momentum", "midpoint", "gauss4", "verlet", "rk4")


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
    Model, for :func:`kanedyn.sim.rk4_manifold.rk4_manifold_run`; a compiled Kane tree
    runs the loop generated with its equations, or with force rows or the energy
    projection :func:`kanedyn.integrators.kane_compiled.run_rk4`, additive coordinates or
    quaternions), force elements the
    loops do not take (or springs and friction on joints of several speeds), or a
    projection onto anything but the energy first (the energy projection, with force
    elements onto E₀ + W_nc with the springs' potential in E, is the loops'; momentum rows
    after it the manifold loop's, on a model without rotor armature)."""
    kane = getattr(problem.system, "compiled_rk4", None)
    if kane is not None:  # a compiled Kane system: the loop generated with its equations
        if not compiled:
            return None
        if (forces or problem.tau_nc is not None or problem.tau_cons is not None
                or project is not None):
            # with force rows or the energy projection, integrators/kane_compiled.py's loop
            # (the generated one has neither)
            from ..integrators import kane_compiled

            if not kane_compiled.rk4_applicable(problem, project):
                return None
            return compiled_or_none("rk4", kane_compiled.run_rk4, problem, project is not None)
        if problem.progress is not None:
            return None
        return _run_generated(problem, kane)
    model = getattr(problem.system, "compiled_step", None)
    run = _run_one
    if model is None:  # ball, free, planar joints, armature: the manifold loop
        from .rk4_manifold import run_one as run

        model = getattr(problem.system, "compiled_manifold_step", None)
    if not compiled or model is None or problem.progress is not None:
        return None
    invariants = None if project is None else parse_invariants(project)
    forces = list(forces or ())
    extra = ()  # the momentum rows kept beside the energy: the manifold loop, no armature
    if invariants not in (None, ("energy",)):
        rows = momentum_rows(invariants)
        if run is _run_one or rows is None or model.armature.any():
            return None
        extra = (tuple(rows),)
    # (constant wrenches: both loops' stages evaluate them at q itself)
    P, why = force_rows(model, forces, wrenches=True)
    if why is not None:
        return None
    name = "rk4" if invariants is None else f"rk4+project{invariants}"
    return compiled_or_none(name, run, problem, model, P, invariants is not None, name,
                            *extra)


def _run_generated(problem, loop) -> Solution:
    """RK4 by a compiled Kane system's generated loop (``compiled_rk4``: no loads, no
    inputs), with the stops of :func:`_run_one`."""
    n_steps, steps, times, every, keep = step_grid(problem.dt, problem.t0, problem.t_final,
                                                   problem.save_every)
    s = problem.system
    Q = np.empty((len(keep), s.nq))
    V = np.empty((len(keep), s.nv))
    status = np.zeros(3, dtype=np.int64)
    k = loop(np.ascontiguousarray(problem.q0, float), np.ascontiguousarray(problem.v0, float),
             float(problem.t0), float(problem.dt), steps, every, float(problem.blowup), Q, V,
             status)
    if status[0] == 3 and status[2] == -1:  # the generated forward dynamics: M(q) not SPD
        s._status(-1, Q[k - 1])
    if status[0]:
        code = BLOWUP if status[0] == 2 else NOT_FINITE
        raise_stopped("rk4", np.array([code, status[1], 0]), times, Q[k - 1], V[k - 1])
    return Solution(times[keep], Q, V, np.zeros(len(keep)),
                    {"newton_iterations": np.zeros(n_steps, np.int32)}, "rk4")


def _run_one(problem, model: Model, P: NDArray, project: bool, name: str) -> Solution:
    n_steps, steps, times, every, keep = step_grid(problem.dt, problem.t0, problem.t_final,
                                                   problem.save_every)
    Q = np.empty((len(keep), model.nq))
    V = np.empty((len(keep), model.nv))
    W = np.empty(len(keep))
    status = np.zeros(3, dtype=np.int64)
    ptol, pmaxiter = _projection_defaults()
    args = (flatten(model).data, P, has_forces(P), float(problem.t0),
            np.ascontiguousarray(problem.q0, float), np.ascontiguousarray(problem.v0, float),
            steps, every, project, ptol, pmaxiter, float(problem.blowup), False, Q, V, W,
            np.empty(0), status)
    from ..dynamics import first_calls  # (in here: not part of this module's compile key)

    if not first_calls.loop_ready(rk4_run, args, f"call:{__name__}:first_rk4_run"):
        return None  # (on a cold cache: the Python steps, while a process compiles it)
    k = rk4_run(*args)
    if status[0]:
        raise_stopped(name, status, times, Q[k - 1], V[k - 1])
    return Solution(times[keep], Q, V, W, {"newton_iterations": np.zeros(n_steps, np.int32)},
                    name)


def first_rk4_run() -> None:
    """``kd.simulate``'s rk4 on a one-link pendulum: compiles :func:`rk4_run` for the
    argument types of every run (the job of :func:`_run_one`'s
    :func:`~kanedyn.dynamics.first_calls.loop_ready`)."""
    from ..model.builders import pendulum_chain
    from .simulate import simulate

    simulate(pendulum_chain(1), [0.3], [0.0], 3e-3, method="rk4", dt=1e-3)


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


def _run_methods(model, method, D, Q0, V0, t_final, dt, forces, params, save_every, options):
    """simulate_batch for the methods whose runs take (D, P): the grid of step_grid."""
    N = Q0.shape[0]
    forces = list(forces or ())
    entry = METHODS[method]
    if not entry.forces:
        _no_forces(method, forces, None)
    for f in forces:
        if getattr(f, "discontinuous", False):
            raise KanedynError(
                f"simulate_batch: method {method!r} cannot take {_element_name(f)}: its law "
                "is discontinuous in v (exact stiction); use method='time_stepping' (exact "
                "stick–slip by the box LCP), or smooth the law (Stribeck(..., smoothing=...)) "
                f"for {', '.join(_WITH_FORCES)}")
    n_steps, steps, times, every, keep = step_grid(float(dt), 0.0, float(t_final),
                                                   int(save_every))
    rows, why = force_rows(model, forces, wrenches=True)  # (every batched loop takes them)
    if why is not None:
        raise KanedynError(f"simulate_batch: method {method!r}: {why}; kd.simulate per state "
                           "takes any element (its Python steps)")
    P = np.ascontiguousarray(np.repeat(rows[None], N, axis=0))
    _apply_params(model, D, P, params or {}, N)
    if not entry.forces:
        _no_forces(method, (), P)
    S = len(keep)
    outQ = np.empty((N, S, model.nq))
    outV = np.empty((N, S, model.nv))
    outW = np.empty((N, S))
    outE = np.empty((N, S))
    status = np.zeros((N, 3), np.int64)
    entry.runs(model, D, P, Q0, V0, steps, every, outQ, outV, outW, outE, status,
               {**options, "forces": forces})
    return times, keep, outQ, outV, outW, outE, status


def simulate_batch(model: Model, Q0: ArrayLike, V0: ArrayLike, t_final: float,
                   method: str = "rk4", dt: float | None = None, forces=(),
                   params: dict | None = None, save_every: int = 1,
                   **options) -> BatchTrajectory:
    """Integrate N runs of ``model`` from the rows of ``Q0`` (N, nq) and ``V0`` (N, nv).

    The steps of ``dt`` from 0, the last one shortened to land on ``t_final``; the state
    after every ``save_every``-th step and after the last is kept (the samples of
    ``kd.simulate``). ``method``: a key of :data:`METHODS` (rk4, midpoint, gauss4, verlet,
    avf, itoh_abe, energy_momentum, time_stepping, stickslip; module doc, "Batched
    methods"); each
    run equals ``kd.simulate`` with that method. ``options``: the method's options of
    ``kd.simulate`` that the batch takes (``BatchMethod.options``: ``variant=`` of
    itoh_abe and energy_momentum, ``tol``/``maxiter``/``nodes`` of avf, ``cyclic=``,
    ``tol=`` and ``momentum=`` of energy_momentum, ``joints=``/``surface_velocity=`` of
    time_stepping — LuGre laws and Karnopp bands). See the module docstring for ``params``. Raises
    :class:`DivergenceError` naming the runs that stopped (run, time, why), the finished
    runs in its ``result``.
    """
    if not isinstance(model, Model):
        raise KanedynError("simulate_batch takes a Model (its kernels run on the model's "
                           "flat arrays); for another system call kd.simulate per state")
    if method not in METHODS:
        raise KanedynError(f"simulate_batch: unknown method {method!r}; batched methods: "
                           f"{', '.join(METHODS)}")
    unknown = sorted(set(options) - set(METHODS[method].options))
    if unknown:
        raise KanedynError(f"simulate_batch: method {method!r} takes no option(s) "
                           f"{', '.join(unknown)}; its options: "
                           f"{', '.join(METHODS[method].options) or 'none'}")
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
    D = np.ascontiguousarray(np.repeat(flatten(model).data[None], N, axis=0))
    stuck = None
    if method in ("time_stepping", "stickslip"):
        times, keep, outQ, outV, outW, outE, stuck, status = _time_stepping_batch(
            model, D, Q0, V0, float(t_final), float(dt), forces, params, int(save_every),
            options, event_driven=method == "stickslip")
    else:
        times, keep, outQ, outV, outW, outE, status = _run_methods(
            model, method, D, Q0, V0, t_final, dt, forces, params, save_every, options)
    result = BatchTrajectory(times[keep], outQ, outV, outE, outW, method, stuck)
    bad = np.flatnonzero(status[:, 0])
    for k in bad:  # samples at or after the step that stopped run k were not reached
        late = times[keep] >= times[status[k, 1]]
        for out in (outQ, outV, outE, outW):
            out[k, late] = np.nan
    if bad.size:
        why = "; ".join(sorted({STOPPED[int(c)] for c in status[bad, 0]}))
        where = ", ".join(f"run {k} at t = {times[status[k, 1]]:g}" for k in bad[:5])
        err = DivergenceError(f"simulate_batch: {bad.size} of {N} runs stopped ({why}): "
                              f"{where}{' ...' if bad.size > 5 else ''}; the other runs' "
                              "results are in the error's .result")
        err.result = result  # the runs that finished are kept (a stopped one is NaN after)
        err.failures = {int(k): (float(times[status[k, 1]]), STOPPED[int(status[k, 0])])
                        for k in bad}
        raise err
    return result
