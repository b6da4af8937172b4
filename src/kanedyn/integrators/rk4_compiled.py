"""RK4, and RK4 with energy projection, as one compiled loop over all steps (numba).

The Python step loop costs tens of µs per step in calls and small arrays, far
more than the O(n) dynamics of a small chain. For the common case — a plain
Model with additive coordinates (revolute, prismatic, helical joints) and no
force elements — :class:`~kanedyn.integrators.rk4.RK4` runs this loop instead,
which calls the compiled ABA kernel of :mod:`kanedyn.dynamics.kernels` (the
function behind ``kd.aba``) and the energy kernel of
:mod:`kanedyn.dynamics.energy_kernel` directly, both on the model's one flat array.
It computes the same steps as the Python RK4 (tested to roundoff) — the design
note's "tight stepping loop".

With ``project=True`` each step is followed by the energy projection of
:mod:`.projection`: ``(q, v) = (q̃, ṽ) + λ (∂E/∂q, M ṽ)``, λ by Newton on
``E(q, v) = E₀`` (simplified: the slope at λ = 0, ``|∂E/∂q|² + |Mṽ|²``).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..dynamics import _compiled, kernels
from ..dynamics.energy_kernel import energy_pass
from ..dynamics.flat import flatten
from ..errors import DivergenceError, SolverError

_compiled.key_cache(__name__)


# The two halves of a classical RK4 step on (q, v) with q̇ = v, v̇ = a(q, v) (Hairer,
# Nørsett & Wanner, Solving ODEs I, eq. II.1.9), written once for every compiled RK4
# loop: this module's single run and the batch of :mod:`kanedyn.sim.batch`, which add
# their own accelerations (and forces) between them.

@nb.njit(cache=True, _nrt=False)
def rk4_stage_state(q, v, q_rate, v_rate, c, q_stage, v_stage):
    """The state of the next stage: ``q_stage = q + c q_rate``, ``v_stage = v + c v_rate``
    (c = h/2 for stages 2 and 3, h for stage 4; the rates those of the stage before)."""
    for i in range(q.shape[0]):
        q_stage[i] = q[i] + c * q_rate[i]
        v_stage[i] = v[i] + c * v_rate[i]


@nb.njit(cache=True, _nrt=False)
def rk4_update(q, v, h, k2q, k3q, k4q, k1v, k2v, k3v, k4v):
    """In place: ``q += h/6 (v + 2 k2q + 2 k3q + k4q)``, ``v += h/6 (k1v + 2 k2v + 2 k3v +
    k4v)``, where k1q = v (each q_i is updated before v_i, which it reads)."""
    for i in range(q.shape[0]):
        q[i] += h / 6.0 * (v[i] + 2.0 * k2q[i] + 2.0 * k3q[i] + k4q[i])
        v[i] += h / 6.0 * (k1v[i] + 2.0 * k2v[i] + 2.0 * k3v[i] + k4v[i])


@nb.njit(cache=True, _nrt=False)
def largest_speed(v) -> float:
    """max_i |v_i|: the compiled loops' blow-up guard compares it with its start value."""
    vm = 0.0
    for i in range(v.shape[0]):
        vm = max(vm, abs(v[i]))
    return vm


@nb.njit(cache=True, _nrt=False)
def state_is_finite(q, v) -> bool:
    """Whether every q_i and v_i is finite (neither NaN nor infinite)."""
    for i in range(q.shape[0]):
        if not np.isfinite(q[i]):
            return False
    for i in range(v.shape[0]):
        if not np.isfinite(v[i]):
            return False
    return True


@nb.njit(cache=True)
def _rk4_loop(data, q0, v0, dt, n_steps, every, project, blowup, Q, V, status):
    nv = v0.shape[0]
    q, v = q0.copy(), v0.copy()
    tau = np.zeros(nv)
    k1v, k2v, k3v, k4v = np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv)
    qs, vs, k2q, k3q = np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv)
    dT, dV, out = np.empty(nv), np.empty(nv), np.empty(8)
    M = np.empty((nv, nv))
    energy_pass(data, q, v, dT, dV, out)
    E0 = out[0] + out[1]
    vmax0 = largest_speed(v)
    Q[0, :] = q
    V[0, :] = v
    k = 1
    for n in range(n_steps):
        h = dt[n]
        s = kernels.aba1(data, q, v, tau, k1v)
        rk4_stage_state(q, v, v, k1v, 0.5 * h, qs, k2q)  # k2q = v of stage 2
        s |= kernels.aba1(data, qs, k2q, tau, k2v)
        rk4_stage_state(q, v, k2q, k2v, 0.5 * h, qs, k3q)
        s |= kernels.aba1(data, qs, k3q, tau, k3v)
        rk4_stage_state(q, v, k3q, k3v, h, qs, vs)
        s |= kernels.aba1(data, qs, vs, tau, k4v)
        rk4_update(q, v, h, k2q, k3q, vs, k1v, k2v, k3v, k4v)
        if project:
            s |= energy_pass(data, q, v, dT, dV, out)
            s |= kernels.crba1(data, q, M)
            b = M @ v
            slope = 0.0
            for i in range(nv):
                dT[i] += dV[i]  # a = ∂E/∂q
                slope += dT[i] * dT[i] + b[i] * b[i]
            f = out[0] + out[1] - E0
            lam = 0.0
            for _ in range(8):
                lam -= f / slope
                for i in range(nv):
                    qs[i] = q[i] + lam * dT[i]
                    vs[i] = v[i] + lam * b[i]
                s |= energy_pass(data, qs, vs, k1v, k2v, out)
                f = out[0] + out[1] - E0
                if abs(f) <= 2e-16 * abs(E0):
                    break
            q[:] = qs
            v[:] = vs
        if not state_is_finite(q, v):
            status[0], status[1] = 1, n + 1
            return k
        if s != 0 or largest_speed(v) > blowup * (1.0 + vmax0):
            status[0], status[1] = 2 if s == 0 else 3, n + 1
            return k
        if (n + 1) % every == 0 or n == n_steps - 1:
            Q[k, :] = q
            V[k, :] = v
            k += 1
    return k


def step_grid(problem):
    """(n_steps, step sizes, times, save_every, indices of the saved samples) of a fixed-step
    run from t0 to t_final; the last step is shortened to land on t_final (as run_fixed)."""
    dt, t0, tf = problem.dt, problem.t0, problem.t_final
    n_steps = int(np.ceil((tf - t0) / dt - 1e-9)) if tf > t0 else 0
    steps = np.full(n_steps, dt)
    if n_steps:
        steps[-1] = tf - (t0 + (n_steps - 1) * dt)
    times = t0 + np.concatenate([[0.0], np.cumsum(steps)])
    if n_steps:
        times[-1] = tf
    every = max(1, int(problem.save_every))
    keep = [0] + [n + 1 for n in range(n_steps) if (n + 1) % every == 0 or n == n_steps - 1]
    return n_steps, steps, times, every, keep


def applicable(problem) -> bool:
    """A plain Model, additive coordinates, no force elements, no progress bar, no armature
    (the loops' energy is the bodies' alone; a model with rotors takes the Python steps,
    whose energy includes ½ Σ armature v²)."""
    s = problem.system
    return (getattr(s, "compiled_step", None) is not None  # a capability (sim/system.py)
            and problem.tau_cons is None and problem.tau_nc is None and problem.progress is None)


def run(problem, name: str, project: bool):
    """The whole run in the compiled loop; returns a Solution."""
    from .base import Solution

    s, model = problem.system, problem.system.compiled_step
    n_steps, steps, times, every, keep = step_grid(problem)
    Q = np.empty((len(keep), s.nq))
    V = np.empty((len(keep), s.nv))
    status = np.zeros(2, dtype=np.int64)
    k = _rk4_loop(flatten(model).data, np.ascontiguousarray(problem.q0, float),
                  np.ascontiguousarray(problem.v0, float), steps, n_steps, every, project,
                  float(problem.blowup), Q, V, status)
    if status[0]:
        n = int(status[1])
        what = {1: "the state became NaN or infinite", 2: "blow-up (speed beyond blowup=)",
                3: "the dynamics kernel reported a bad state"}[int(status[0])]
        cls = SolverError if status[0] == 3 else DivergenceError
        raise cls(f"{name}: {what} at step {n}, t = {times[n]:.6g}: q = "
                  f"{np.array2string(Q[k - 1], precision=4)}, v = "
                  f"{np.array2string(V[k - 1], precision=4)} (last saved state); reduce dt")
    return Solution(times[keep], Q, V, np.zeros(len(keep)),
                    {"newton_iterations": np.zeros(n_steps, dtype=np.int32)}, name)
