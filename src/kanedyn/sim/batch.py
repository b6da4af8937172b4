"""Many simulations at once: N initial states (and per-run parameters) stepped together.

``simulate_batch(model, Q0, V0, t_final, dt=...)`` integrates N independent runs
of one Model with the classical RK4 method — the same scheme as
``kd.simulate(..., method="rk4")``, so each run agrees with a single run to
round-off — but the whole loop (forces, the articulated-body algorithm of
:mod:`kanedyn.dynamics.kernels`, the stages) runs in one numba kernel,
parallel over runs. The RK4 stage states and update are the compiled ones of
:mod:`kanedyn.integrators.rk4_compiled` (the single-run loop's), and the friction
force the compiled Stribeck law of :mod:`kanedyn.friction.laws_kernel`.

Per-run parameters change a run's model or forces without building N
models: ``params={"mass:link3": masses, "damping:joint1": c, ...}``, each an
array of N values. A ``mass:<body>`` scales that body's whole spatial inertia
(same shape, other density). Force quantities name a joint:
``stiffness``/``rest`` of a :class:`~kanedyn.forces.JointSpring`, ``damping``
of a :class:`~kanedyn.forces.JointDamper`, ``Fc``/``Fs``/``vs``/``delta``/``Fv``
of the Stribeck law of a :class:`~kanedyn.forces.JointFriction`.

The kernel takes models whose joints all have one speed and an additive
configuration (revolute, prismatic, helical), and the force elements just
named; anything else is refused with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange
from numpy.typing import ArrayLike, NDArray

from ..dynamics import _compiled
from ..dynamics import kernels as K
from ..dynamics._dispatch import singular_error
from ..dynamics.flat import flatten
from ..dynamics.layout import IBAR, MASS, H
from ..errors import DivergenceError, KanedynError, StateError
from ..friction.laws_kernel import stribeck_force, stribeck_parameters
from ..integrators.rk4_compiled import rk4_stage_state, rk4_update, state_is_finite
from ..model import Model
from ..model.model import singular_joints

_compiled.key_cache(__name__)

# per-dof force parameters, columns of P[run, dof, :]
P_K, P_REST, P_C, P_FRIC, P_FC, P_FS, P_VS, P_DELTA, P_FV, P_EPS, P_SMOOTH, P_SURF = range(12)
NPAR = 12
QUANTITIES = {"stiffness": P_K, "rest": P_REST, "damping": P_C, "Fc": P_FC, "Fs": P_FS,
              "vs": P_VS, "delta": P_DELTA, "Fv": P_FV}
METHODS = ("rk4",)


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


# --- the kernel ---------------------------------------------------------------------

@njit(cache=True)
def _forces(P, q, v, tau_nc, tau):
    """τ of springs (conservative), dampers and Stribeck friction (non-conservative; the
    law's one compiled form, :func:`~kanedyn.friction.laws_kernel.stribeck_force`, at the
    slip speed v - v_surface)."""
    for j in range(q.shape[0]):
        t_nc = -P[j, P_C] * v[j]
        if P[j, P_FRIC] != 0.0:
            t_nc -= stribeck_force(v[j] - P[j, P_SURF], P[j, P_FC], P[j, P_FS], P[j, P_VS],
                                   P[j, P_DELTA], P[j, P_FV], P[j, P_EPS],
                                   int(P[j, P_SMOOTH]))
        tau_nc[j] = t_nc
        tau[j] = t_nc - P[j, P_K] * (q[j] - P[j, P_REST])


@njit(cache=True)
def _energy(data, P, q, v, summary):
    """T + V_gravity + V_springs of one state: T and V from the compiled kernel of
    ``kd.energy`` (:func:`~kanedyn.dynamics.kernels.kinematics.summary_into`, rotors
    included), another pass than the integrators' energy kernel, so a batch's energy
    checks the single run's independently."""
    K.summary_into(data, q, v, True, summary)
    Vs = 0.0
    for j in range(q.shape[0]):
        d = q[j] - P[j, P_REST]
        Vs += 0.5 * P[j, P_K] * d * d
    return summary[0] + summary[1] + Vs


@njit(cache=True)
def _stage(data, P, q, v, tau_nc, tau, fext, a):
    _forces(P, q, v, tau_nc, tau)
    K.aba_into(data, q, v, tau, fext, False, a)
    w = 0.0
    for j in range(v.shape[0]):
        w += v[j] * tau_nc[j]
    return w


@njit(cache=True, parallel=True)
def _rk4_batch(D, Q0, V0, P, h, nsteps, save_every, outQ, outV, outW, outE, status):
    N, n = Q0.shape
    nb = D.shape[1] - 1
    for k in prange(N):
        data = D[k]
        q = Q0[k].copy()
        v = V0[k].copy()
        qs = np.empty(n)
        k1v = np.empty(n)
        k2v = np.empty(n)
        k3v = np.empty(n)
        k4v = np.empty(n)
        k2x = np.empty(n)
        k3x = np.empty(n)
        k4x = np.empty(n)
        tau_nc = np.empty(n)
        tau = np.empty(n)
        fext = np.zeros((nb, 6))
        summary = np.empty(11)
        w = 0.0
        outQ[k, 0] = q
        outV[k, 0] = v
        outW[k, 0] = 0.0
        outE[k, 0] = _energy(data, P[k], q, v, summary)
        status[k] = -1
        for step in range(1, nsteps + 1):
            k1w = _stage(data, P[k], q, v, tau_nc, tau, fext, k1v)
            rk4_stage_state(q, v, v, k1v, 0.5 * h, qs, k2x)
            k2w = _stage(data, P[k], qs, k2x, tau_nc, tau, fext, k2v)
            rk4_stage_state(q, v, k2x, k2v, 0.5 * h, qs, k3x)
            k3w = _stage(data, P[k], qs, k3x, tau_nc, tau, fext, k3v)
            rk4_stage_state(q, v, k3x, k3v, h, qs, k4x)
            k4w = _stage(data, P[k], qs, k4x, tau_nc, tau, fext, k4v)
            rk4_update(q, v, h, k2x, k3x, k4x, k1v, k2v, k3v, k4v)
            w += (h / 6) * (k1w + 2 * k2w + 2 * k3w + k4w)
            if not state_is_finite(q, v):
                status[k] = step
                break
            if step % save_every == 0:
                s = step // save_every
                outQ[k, s] = q
                outV[k, s] = v
                outW[k, s] = w
                outE[k, s] = _energy(data, P[k], q, v, summary)


# --- the Python side ------------------------------------------------------------------

def _force_parameters(model: Model, forces, N: int) -> NDArray:
    from ..forces import JointDamper, JointFriction, JointSpring
    from ..friction.laws import Stribeck

    P = np.zeros((N, model.nv, NPAR))
    P[:, :, P_VS] = 1.0
    P[:, :, P_DELTA] = 1.0
    P[:, :, P_EPS] = 1.0
    for f in forces:
        iv = model.joint_index(f.joint) if hasattr(f, "joint") else None
        if isinstance(f, JointSpring):
            P[:, iv, P_K] += f.k
            P[:, iv, P_REST] = f.rest
        elif isinstance(f, JointDamper):
            c = model.bodies[iv].joint.damping if f.c is None else f.c
            P[:, iv, P_C] += c
        elif isinstance(f, JointFriction) and type(f.law) is Stribeck and f.law.smoothing:
            try:
                Fc, Fs, vs, delta, Fv, eps, kind = stribeck_parameters(f.law)
            except KanedynError as exc:
                raise KanedynError(f"simulate_batch: the friction on {f.joint!r} has no "
                                   f"batched kernel: {exc}") from exc
            P[:, iv, P_FRIC] = 1.0
            P[:, iv, [P_FC, P_FS, P_VS, P_DELTA, P_FV]] = (Fc, Fs, vs, delta, Fv)
            P[:, iv, P_EPS] = eps
            P[:, iv, P_SMOOTH] = kind
            P[:, iv, P_SURF] = f.surface_velocity
        else:
            raise KanedynError(
                f"simulate_batch: no batched kernel for {f!r}; it takes JointSpring, "
                "JointDamper and JointFriction with a smoothed Stribeck law (for other "
                "elements run kd.simulate per state)")
    return P


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
            iv = model.joint_index(target)
            col = QUANTITIES[qty]
            if qty in ("Fc", "Fs", "vs", "delta", "Fv") and not np.all(P[:, iv, P_FRIC]):
                raise StateError(f"simulate_batch: {name!r}: joint {target!r} has no "
                                 "JointFriction element to take it")
            P[:, iv, col] = vals
        else:
            raise StateError(f"simulate_batch: unknown parameter {name!r}; write "
                             f"'<quantity>:<name>' with quantity mass (a body) or one of "
                             f"{', '.join(QUANTITIES)} (a joint)")


def simulate_batch(model: Model, Q0: ArrayLike, V0: ArrayLike, t_final: float,
                   method: str = "rk4", dt: float | None = None, forces=(),
                   params: dict | None = None, save_every: int = 1) -> BatchTrajectory:
    """Integrate N runs of ``model`` from the rows of ``Q0`` (N, nq) and ``V0`` (N, nv).

    See the module docstring for ``params``. Raises :class:`DivergenceError`
    naming the runs whose state became non-finite.
    """
    if not isinstance(model, Model):
        raise KanedynError("simulate_batch takes a Model (its kernels run on the model's "
                           "flat arrays); for another system call kd.simulate per state")
    if method not in METHODS:
        raise KanedynError(f"simulate_batch: unknown method {method!r}; batched methods: "
                           f"{', '.join(METHODS)}")
    odd = [b.joint.name for b in model.bodies
           if not (b.joint.chart_is_additive and b.joint.nv == 1)]
    if odd:
        raise KanedynError(f"simulate_batch: joints {odd} are not 1-DOF additive joints "
                           "(revolute, prismatic, helical), which the batched kernel needs")
    bad = singular_joints(model)
    if bad:  # the batched steps call ABA, which needs M⁻¹: say which joint, before any step
        raise singular_error(model, bad[0], "simulate_batch")
    Q0 = np.ascontiguousarray(Q0, dtype=float)
    V0 = np.ascontiguousarray(V0, dtype=float)
    if Q0.ndim != 2 or Q0.shape[1] != model.nq or V0.shape != Q0.shape:
        raise StateError(f"simulate_batch: Q0 and V0 must both be (N, {model.nq}); got "
                         f"{Q0.shape} and {V0.shape}")
    if not (np.all(np.isfinite(Q0)) and np.all(np.isfinite(V0))):
        raise StateError("simulate_batch: Q0 or V0 contains NaN or infinity")
    if dt is None:
        raise StateError("simulate_batch: give the step dt (the batched methods are fixed-step)")
    if not (np.isfinite(dt) and dt > 0) or not (np.isfinite(t_final) and t_final >= 0):
        raise StateError(f"simulate_batch: need dt > 0 and t_final ≥ 0, got {dt}, {t_final}")
    if int(save_every) != save_every or save_every < 1:
        raise StateError(f"simulate_batch: save_every = {save_every!r} must be a positive int")
    N = Q0.shape[0]
    nsteps = int(round(t_final / dt))
    if abs(nsteps * dt - t_final) > 1e-9 * max(1.0, t_final):
        raise StateError(f"simulate_batch: t_final = {t_final} is not a whole number of steps "
                         f"dt = {dt}")
    nsteps -= nsteps % save_every
    D = np.ascontiguousarray(np.repeat(flatten(model).data[None], N, axis=0))
    P = _force_parameters(model, forces, N)
    _apply_params(model, D, P, params or {}, N)
    S = nsteps // save_every + 1
    outQ = np.empty((N, S, model.nq))
    outV = np.empty((N, S, model.nv))
    outW = np.empty((N, S))
    outE = np.empty((N, S))
    status = np.empty(N, np.int64)
    _rk4_batch(D, Q0, V0, P, float(dt), nsteps, int(save_every), outQ, outV, outW, outE, status)
    bad = np.flatnonzero(status >= 0)
    if bad.size:
        where = ", ".join(f"run {k} at t = {status[k] * dt:g}" for k in bad[:5])
        raise DivergenceError(f"simulate_batch: {bad.size} of {N} runs diverged (non-finite "
                              f"state): {where}{' ...' if bad.size > 5 else ''}")
    t = dt * save_every * np.arange(S)
    return BatchTrajectory(t, outQ, outV, outE, outW, method)
