"""The compiled pieces of RK4 (numba), and what the compiled integrator loops share.

The Python step loop costs tens of µs per step in calls and small arrays, far more
than the O(n) dynamics of a small chain — hence the design note's "tight stepping
loop". RK4 has one readable reference, :class:`~kanedyn.integrators.rk4.RK4` (on the
system protocol), and one compiled loop, :func:`kanedyn.sim.batch.rk4_run`, which both
``kd.simulate(model, ..., method="rk4")`` and ``kd.simulate_batch`` run (a single run is
the batch of one) on additive coordinates (its twin on the configuration manifold, for
ball, free, planar joints and armature, is :mod:`kanedyn.sim.rk4_manifold`, with the
guards, grid and samples of this module). That loop lives in :mod:`kanedyn.sim` because
it adds joint forces between the stages (the Stribeck law of :mod:`kanedyn.friction`,
which integrators may not import); this module holds its integrator parts, on the flat
array of a Model:

- the two halves of a classical RK4 step, :func:`rk4_stage_state` and :func:`rk4_update`;
- :func:`energy_of`, the bodies' energy by the energy kernel of
  :mod:`kanedyn.dynamics.energy_kernel` (the loop's projection onto ``E = E₀ + W_nc``,
  with force elements too, is :func:`.gauss_compiled.project_energy_standard`, the
  compiled midpoint loop's, which is :class:`.projection.Projected`'s iteration);
- what every compiled loop (this RK4, the discrete gradients of
  :mod:`.discrete_gradient_compiled`) does around its
  steps: the step grid (:func:`step_grid`), the guards (:func:`state_guard`), storing
  the kept samples (:func:`store`, :func:`save_sample`), and the fall-back to the Python
  steps when numba fails (:func:`compiled_or_none`).
"""

from __future__ import annotations

import warnings

import numba as nb
import numpy as np

from ..dynamics import _compiled
from ..dynamics.energy_kernel import energy_pass

_compiled.key_cache(__name__)

#: the codes a compiled loop leaves in ``status[0]`` when it stops early (0: it did not)
NOT_FINITE, BLOWUP, BAD_KERNEL_STATE = 1, 2, 3


# The two halves of a classical RK4 step on (q, v) with q̇ = v, v̇ = a(q, v) (Hairer,
# Nørsett & Wanner, Solving ODEs I, eq. II.1.9), written once for every compiled RK4
# loop; the loop adds its accelerations (and forces) between them.

@nb.njit(cache=True, _nrt=False, nogil=True)
def rk4_stage_state(q, v, q_rate, v_rate, c, q_stage, v_stage):
    """The state of the next stage: ``q_stage = q + c q_rate``, ``v_stage = v + c v_rate``
    (c = h/2 for stages 2 and 3, h for stage 4; the rates those of the stage before)."""
    for i in range(q.shape[0]):
        q_stage[i] = q[i] + c * q_rate[i]
        v_stage[i] = v[i] + c * v_rate[i]


@nb.njit(cache=True, _nrt=False, nogil=True)
def rk4_update(q, v, h, k2q, k3q, k4q, k1v, k2v, k3v, k4v):
    """In place: ``q += h/6 (v + 2 k2q + 2 k3q + k4q)``, ``v += h/6 (k1v + 2 k2v + 2 k3v +
    k4v)``, where k1q = v (each q_i is updated before v_i, which it reads)."""
    for i in range(q.shape[0]):
        q[i] += h / 6.0 * (v[i] + 2.0 * k2q[i] + 2.0 * k3q[i] + k4q[i])
        v[i] += h / 6.0 * (k1v[i] + 2.0 * k2v[i] + 2.0 * k3v[i] + k4v[i])


@nb.njit(cache=True, nogil=True)
def energy_of(data, q, v, dT, dV, out) -> float:
    """E = T + V of the bodies (E₀ of the loops' energy projection), by the energy
    kernel; NaN if the kernel refuses the state (the projection then reports it)."""
    if energy_pass(data, q, v, dT, dV, out) != 0:
        return np.nan
    return out[0] + out[1]


@nb.njit(cache=True, _nrt=False, nogil=True)
def largest_speed(v) -> float:
    """max_i |v_i|: the compiled loops' blow-up guard compares it with its start value."""
    vm = 0.0
    for i in range(v.shape[0]):
        vm = max(vm, abs(v[i]))
    return vm


@nb.njit(cache=True, _nrt=False, nogil=True)
def state_is_finite(q, v) -> bool:
    """Whether every q_i and v_i is finite (neither NaN nor infinite)."""
    for i in range(q.shape[0]):
        if not np.isfinite(q[i]):
            return False
    for i in range(v.shape[0]):
        if not np.isfinite(v[i]):
            return False
    return True


@nb.njit(cache=True, _nrt=False, nogil=True)
def state_guard(q, v, vmax0, blowup) -> int:
    """0, :data:`NOT_FINITE` (a NaN or an infinity in q or v), or :data:`BLOWUP` (a speed
    beyond ``blowup (1 + vmax0)``, vmax0 the largest speed at the start): the test of
    ``run_fixed``'s ``check_state``, in the compiled loops."""
    if not state_is_finite(q, v):
        return NOT_FINITE
    if largest_speed(v) > blowup * (1.0 + vmax0):
        return BLOWUP
    return 0


@nb.njit(cache=True, _nrt=False, nogil=True)
def store(q, v, Q, V, k):
    """``Q[k] = q``, ``V[k] = v``; returns k + 1 (the index of the next sample)."""
    for i in range(q.shape[0]):
        Q[k, i] = q[i]
    for i in range(v.shape[0]):
        V[k, i] = v[i]
    return k + 1


@nb.njit(cache=True, _nrt=False, nogil=True)
def save_sample(n, n_steps, every, q, v, Q, V, k):
    """After step n (from 0) of n_steps: store (q, v) as sample k if that step is kept —
    every ``every``-th and the last, as ``run_fixed`` — and return the next sample's
    index (k itself when the step is not kept)."""
    if (n + 1) % every == 0 or n == n_steps - 1:
        return store(q, v, Q, V, k)
    return k


def step_grid(dt: float, t0: float, tf: float, save_every: int):
    """(n_steps, step sizes, times, save_every, indices of the saved samples) of a fixed-step
    run from t0 to tf: the times and the shortened last step of ``run_fixed``."""
    n_steps = int(np.ceil((tf - t0) / dt - 1e-9)) if tf > t0 else 0
    times = t0 + dt * np.arange(n_steps + 1, dtype=float)  # t = t0 + (n + 1) dt
    if n_steps:
        times[-1] = tf
    steps = np.full(n_steps, dt)
    if n_steps:
        steps[-1] = min(dt, tf - (t0 + (n_steps - 1) * dt))
    every = max(1, int(save_every))
    keep = [0] + [n + 1 for n in range(n_steps) if (n + 1) % every == 0 or n == n_steps - 1]
    return n_steps, steps, times, every, keep


def applicable(problem, forces: bool = False) -> bool:
    """A plain Model, additive coordinates, no force elements, no progress bar, no armature
    (the loops' energy is the bodies' alone; a model with rotors takes the Python steps,
    whose energy includes ½ Σ armature v²). ``forces``: a loop that takes the force rows
    of :mod:`kanedyn.forces.kernel` (``problem.force_rows``) also applies when every force
    element has one."""
    s = problem.system
    no_forces = problem.tau_cons is None and problem.tau_nc is None
    return (getattr(s, "compiled_step", None) is not None  # a capability (sim/system.py)
            and (no_forces or (forces and problem.force_rows is not None))
            and problem.progress is None)


def first_run_problem(model, q0, v0):
    """A three-step problem on ``model`` (a small Model the caller builds) with what the
    compiled loops' ``run`` functions read of a Problem: for the first-run jobs of
    :func:`kanedyn.dynamics.first_calls.loop_ready`, which compile a loop for the argument
    types of every run."""
    from types import SimpleNamespace

    q0, v0 = np.asarray(q0, float), np.asarray(v0, float)
    system = SimpleNamespace(compiled_step=model, tree_model=model, nq=q0.size, nv=v0.size)
    return SimpleNamespace(system=system, force_rows=None, dt=1e-3, t0=0.0, t_final=3e-3,
                           save_every=1, q0=q0, v0=v0, blowup=1e8)


def ready_or_python(loop, args: tuple, job: str) -> bool:
    """:func:`kanedyn.dynamics.first_calls.loop_ready` of ``loop`` with ``args`` and the
    first-run job ``job`` of the loop's module (``call:<module>:<job>``): False on a cold
    cache, where the caller returns None and the Python steps run."""
    from ..dynamics import first_calls  # (in here: not part of the callers' compile keys)

    return first_calls.loop_ready(loop, args, f"call:{loop.__module__}:{job}")


def compiled_or_none(name: str, run, *args):
    """``run(*args)``, or None (with a RuntimeWarning) when numba cannot compile it — the
    kernels changed under us: the caller's Python step loop still works."""
    from numba.core.errors import NumbaError

    try:
        return run(*args)
    except NumbaError as e:
        warnings.warn(f"{name}: compiled loop unavailable ({type(e).__name__}); using the "
                      "Python step loop", RuntimeWarning, stacklevel=4)
        return None
