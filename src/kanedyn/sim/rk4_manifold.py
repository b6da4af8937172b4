"""The compiled RK4 loop on the configuration manifold: ball, free, planar joints, armature.

:func:`rk4_manifold_run` is :func:`kanedyn.sim.batch.rk4_run` for a Model whose
configuration is not additive (quaternions of ball and free joints, the SE(2) pose of a
planar joint, a joint type of one's own with a compiled ``integrate``) or that has
armature (rotor inertia). It takes the steps of the Python reference,
:class:`kanedyn.integrators.rk4.RK4`, in the tangent chart ``q = q_n ⊕ ξ`` of each step's
start (Munthe-Kaas's RKMK with the classical tableau):

    k_i = (ξ̇_i, v̇_i) = (J(ξ_i)⁻¹ v_i, ABA(q_n ⊕ ξ_i, v_i, τ)),
    (ξ_1, v_1) = (0, v_n),   (ξ_{2,3}, v_{2,3}) = h/2 k_{1,2},   (ξ_4, v_4) = h k_3,
    q_{n+1} = q_n ⊕ h/6 (ξ̇_1 + 2ξ̇_2 + 2ξ̇_3 + ξ̇_4),   v_{n+1} = v_n + h/6 (v̇_1 + 2v̇_2 + 2v̇_3 + v̇_4)

(J the right Jacobian of the chart, :mod:`.chart_kernel`; J(0) = 1), ``q ⊕ ξ`` by each
joint's compiled ``integrate`` (:mod:`.configuration_kernel`, quaternions renormalised),
the dynamics by the ABA kernel (armature included). The work W_nc of the joint forces is
a third state ``ẇ = vᵀ τ_nc`` with the same stages. The energy projection
(``project="energy"``, with or without force elements) is the Python
:class:`~kanedyn.integrators.projection.Projected`'s, step for step:
``(q, v) = (q̃ ⊕ λ ∂E/∂q, ṽ + λ M ṽ)`` with λ by
simplified Newton (slope ``|∂E/∂q|² + |Mṽ|²`` at q̃), until ``|E − E₀ − W_nc| ≤ 4e-15
(1 + |E₀|)`` (at most 20 iterations; accepted at ``1e-13 (1 + |E₀|)``, else a failure),
E = T + V with the rotors' ½ Σ J v² (:func:`~kanedyn.dynamics.energy_kernel.energy_terms`)
and the springs' potential (∂E/∂q with their k (q − q_rest)); W_nc the RK4 quadrature
above, so that the budget E − E₀ − W_nc closes to round-off.

Joint forces are the rows of :mod:`kanedyn.forces.kernel`
(:func:`~kanedyn.forces.kernel.joint_forces`, at the stages' times), read per speed: a
damper on every speed of its joint, a spring, a sinusoid or Stribeck friction on a
1-DOF additive joint, whose coordinate is ``q[iq_of_dof[j]]`` (−1 on the speeds of
multi-DOF joints, where no spring can sit).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..dynamics import _compiled
from ..dynamics import kernels as K
from ..dynamics.energy_kernel import energy_terms
from ..dynamics.flat import flatten
from ..forces.kernel import (
    has_forces,
    joint_forces,
    spring_gradient_add,
    spring_potential,
    wrench_forces_add,
)
from ..integrators.base import Solution
from ..integrators.gauss_compiled import energy_scale, gather, project_standard
from ..integrators.rk4_compiled import (
    BAD_KERNEL_STATE,
    NOT_FINITE,
    largest_speed,
    save_sample,
    state_guard,
    step_grid,
    store,
)
from ..model import Model
from .batch import PROJECTION_FAILED, _power, raise_stopped
from .chart_kernel import chart_rate_into
from .configuration_kernel import integrate_into

_compiled.key_cache(__name__)


def dof_coordinates(model: Model) -> NDArray:
    """``iq_of_dof`` (nv,): the index in q of each speed's coordinate on 1-DOF additive
    joints, −1 on the speeds of the other joints."""
    out = np.full(model.nv, -1, dtype=np.int64)
    for b in model.bodies:
        if b.joint.chart_is_additive and b.joint.nv == 1:
            out[b.iv.start] = b.iq.start
    return out


@njit(cache=True, nogil=True)
def _energy(data, P, iq_of_dof, q, v, qd, summary):
    """T (rotors included) + V_gravity + V_springs of one state, by the kernel of
    ``kd.kinetic_energy`` (as :func:`kanedyn.sim.batch._energy`)."""
    K.summary_into(data, q, v, True, summary)
    gather(iq_of_dof, q, qd)
    return summary[0] + summary[1] + spring_potential(P, qd)


@njit(cache=True, nogil=True)
def _stage(data, P, iq_of_dof, forces, t, q, v, qd, tau_nc, tau, fext, a, ws):
    """a = ABA(q, v, τ(t, q, v)) with the joint forces of the rows P and its wrench rows
    (none unless ``forces``); returns the kernel's status."""
    if forces:
        gather(iq_of_dof, q, qd)
        joint_forces(P, t, qd, v, tau_nc, tau)
        s = wrench_forces_add(data, P, q, tau_nc, tau)  # (the wrench rows: at q itself)
        if s:
            return s
    return K.aba_core(data, q, v, tau, fext, False, a, *ws)


@njit(cache=True, nogil=True)
def _chart_point(data, q, v, c, kx, kv, xi, qs, vs):
    """The state of the next stage: ``ξ = c k_x``, ``q_s = q ⊕ ξ``, ``v_s = v + c k_v``
    (c = h/2 for stages 2 and 3, h for stage 4; the rates those of the stage before)."""
    for i in range(v.shape[0]):
        xi[i] = c * kx[i]
        vs[i] = v[i] + c * kv[i]
    integrate_into(data, q, xi, 1.0, qs)


@njit(cache=True, nogil=True)
def project_energy_manifold(data, P, iq_of_dof, forces, q, v, target, E0, M, dT, dV, out, qs,
                            vs, dq, b, qd) -> int:
    """In place, ``(q, v) ← (q ⊕ λ ∂E/∂q, v + λ M v)`` with ``E = target`` (E₀ + W_nc; E0
    the initial energy, for the scale): the Python projection's Newton iteration (module
    doc); with the force rows P (``forces``) E includes the springs' potential (their
    coordinates located by ``iq_of_dof``). ``qs`` (nq), ``vs``, ``dq``, ``b``, ``qd`` (nv)
    work vectors; returns 0, a kernel's status, or :data:`PROJECTION_FAILED`."""
    nv = v.shape[0]
    s = energy_terms(data, q, v, dT, dV, out)
    s |= K.crba1(data, q, M)
    slope = 0.0
    G = out[0] + out[1] - target
    for i in range(nv):
        dq[i] = dT[i] + dV[i]
    if forces:
        gather(iq_of_dof, q, qd)
        spring_gradient_add(P, qd, 1.0, dq)
        G += spring_potential(P, qd)
    for i in range(nv):
        slope += dq[i] * dq[i]
    for i in range(nv):  # b = M v
        bi = 0.0
        for j in range(nv):
            bi += M[i, j] * v[j]
        b[i] = bi
        slope += bi * bi
    scale = energy_scale(E0, out[0], G + target)
    lam = 0.0
    for _ in range(20):
        lam -= (1.0 / slope) * G
        for i in range(nv):
            dT[i] = dq[i] * lam
            vs[i] = v[i] + b[i] * lam
        integrate_into(data, q, dT, 1.0, qs)
        s |= energy_terms(data, qs, vs, dT, dV, out)
        G = out[0] + out[1] - target
        if forces:
            gather(iq_of_dof, qs, qd)
            G += spring_potential(P, qd)
        if abs(G) <= 4e-15 * scale:
            break
    if not abs(G) <= 1e-13 * scale:
        return PROJECTION_FAILED if s == 0 else s
    q[:] = qs
    v[:] = vs
    return s


@njit(cache=True, nogil=True)
def rk4_manifold_run(data, P, iq_of_dof, forces, t0, q0, v0, steps, every, project, prows,
                     blowup, record, Q, V, W, E, status):
    """One run of RK4 on the manifold (module doc) from (q0, v0) at t0 by the steps ``steps``;
    the arguments, the kept samples and ``status`` as :func:`kanedyn.sim.batch.rk4_run`'s,
    with ``iq_of_dof`` (:func:`dof_coordinates`) locating the springs' coordinates and
    ``status[0]`` = :data:`PROJECTION_FAILED` when the projection does not converge.
    ``prows``: the rows of [L; P] the projection keeps beside the energy (none: the
    energy alone, :func:`project_energy_manifold`; else
    :func:`kanedyn.integrators.gauss_compiled.project_standard`, for models without
    rotor armature)."""
    nq, nv = q0.shape[0], v0.shape[0]
    nb = data.shape[0] - 1
    n_steps = steps.shape[0]
    q, v = q0.copy(), v0.copy()
    qs, vs, xi, qd = np.empty(nq), np.empty(nv), np.empty(nv), np.empty(nv)
    k1v, k2v, k3v, k4v = np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv)
    k2x, k3x, k4x = np.empty(nv), np.empty(nv), np.empty(nv)
    tau_nc, tau, fext = np.zeros(nv), np.zeros(nv), np.zeros((nb, 6))
    ws = K.aba_workspace(nb, nv)
    cq, X0, Xs, Wj = np.empty(nq), np.empty((nb, 12)), np.empty((nb, 12)), np.empty((4, 6, 6))
    summary = np.empty(11)
    M, dT, dV, out = np.empty((nv, nv)), np.empty(nv), np.empty(nv), np.empty(8)
    b = np.empty(nv)
    E0 = 0.0
    kp = 1 + prows.shape[0]
    Dp, Gp, ep, dzp = np.empty((kp, 2 * nv)), np.empty(kp), np.empty(nv), np.empty(nv)
    h0 = np.zeros(6)
    if project:
        energy_terms(data, q, v, dT, dV, out)
        E0 = out[0] + out[1]
        h0[:] = out[2:8]
        if forces:
            gather(iq_of_dof, q, qd)
            E0 += spring_potential(P, qd)
    vmax0 = largest_speed(v)
    status[:] = 0
    w = 0.0
    W[0] = 0.0
    if record:
        E[0] = _energy(data, P, iq_of_dof, q, v, qd, summary)
    k = store(q, v, Q, V, 0)
    cq[:] = q
    for n in range(n_steps):
        h = steps[n]
        t = t0 + n * steps[0]  # the grid of step_grid: t0 + n dt
        # stage 1: ξ = 0, J = 1, so ξ̇ = v
        s = _stage(data, P, iq_of_dof, forces, t, q, v, qd, tau_nc, tau, fext, k1v, ws)
        k1w = _power(v, tau_nc) if forces else 0.0
        # stage 2 at (q ⊕ h/2 k1x, v + h/2 k1v)
        _chart_point(data, q, v, 0.5 * h, v, k1v, xi, qs, vs)
        s |= _stage(data, P, iq_of_dof, forces, t + 0.5 * h, qs, vs, qd, tau_nc, tau, fext,
                    k2v, ws)
        k2w = _power(vs, tau_nc) if forces else 0.0
        s |= chart_rate_into(data, q, xi, vs, cq, X0, Xs, Wj, k2x)
        # stage 3 at (q ⊕ h/2 k2x, v + h/2 k2v)
        _chart_point(data, q, v, 0.5 * h, k2x, k2v, xi, qs, vs)
        s |= _stage(data, P, iq_of_dof, forces, t + 0.5 * h, qs, vs, qd, tau_nc, tau, fext,
                    k3v, ws)
        k3w = _power(vs, tau_nc) if forces else 0.0
        s |= chart_rate_into(data, q, xi, vs, cq, X0, Xs, Wj, k3x)
        # stage 4 at (q ⊕ h k3x, v + h k3v)
        _chart_point(data, q, v, h, k3x, k3v, xi, qs, vs)
        s |= _stage(data, P, iq_of_dof, forces, t + h, qs, vs, qd, tau_nc, tau, fext, k4v, ws)
        k4w = _power(vs, tau_nc) if forces else 0.0
        s |= chart_rate_into(data, q, xi, vs, cq, X0, Xs, Wj, k4x)
        # the update, in the Python reference's order of operations
        for i in range(nv):
            xi[i] = h / 6 * (v[i] + 2 * k2x[i] + 2 * k3x[i] + k4x[i])
            v[i] += h / 6 * (k1v[i] + 2 * k2v[i] + 2 * k3v[i] + k4v[i])
        integrate_into(data, q, xi, 1.0, qs)
        q[:] = qs
        w += (h / 6) * (k1w + 2 * k2w + 2 * k3w + k4w)
        if project and prows.shape[0] > 0:
            # onto E = E0 + W_nc and the kept rows of [L; P], as Projected
            s |= K.crba1(data, q, M)
            if s == 0:
                p, _ = project_standard(data, P, forces, iq_of_dof, True, q, v, E0 + w, E0, M,
                                        prows, h0, 1e-15, 20, dT, dV, out, qs, vs, qd, Dp,
                                        Gp, ep, dzp)
                s |= 0 if p == 0 else PROJECTION_FAILED
        elif project:
            # onto E = E0 + W_nc, as Projected
            s |= project_energy_manifold(data, P, iq_of_dof, forces, q, v, E0 + w, E0, M, dT,
                                         dV, out, qs, vs, xi, b, qd)
        code = state_guard(q, v, vmax0, blowup)
        if code != NOT_FINITE and s == PROJECTION_FAILED:
            code = PROJECTION_FAILED
        elif code != NOT_FINITE and s != 0:  # (the order of run_fixed's checks)
            code = BAD_KERNEL_STATE
        if code != 0:
            status[0], status[1], status[2] = code, n + 1, s
            return k
        kept = save_sample(n, n_steps, every, q, v, Q, V, k)
        if kept != k:
            W[k] = w
            if record:
                E[k] = _energy(data, P, iq_of_dof, q, v, qd, summary)
            k = kept
    return k


def run_one(problem, model: Model, P: NDArray, project: bool, name: str,
            prows: tuple[int, ...] = ()) -> Solution:
    """``kd.simulate``'s rk4 by :func:`rk4_manifold_run` (the Solution, or the error of the
    step at which the run stopped)."""
    n_steps, steps, times, every, keep = step_grid(problem.dt, problem.t0, problem.t_final,
                                                   problem.save_every)
    Q = np.empty((len(keep), model.nq))
    V = np.empty((len(keep), model.nv))
    W = np.empty(len(keep))
    status = np.zeros(3, dtype=np.int64)
    args = (flatten(model).data, P, dof_coordinates(model), has_forces(P), float(problem.t0),
            np.ascontiguousarray(problem.q0, float), np.ascontiguousarray(problem.v0, float),
            steps, every, project, np.array(prows, dtype=np.int64), float(problem.blowup),
            False, Q, V, W, np.empty(0), status)
    from ..dynamics import first_calls  # (in here: not part of this module's compile key)

    if not first_calls.loop_ready(rk4_manifold_run, args, f"call:{__name__}:first_run"):
        return None  # (on a cold cache: the Python steps, while a process compiles it)
    try:
        k = rk4_manifold_run(*args)
    except np.linalg.LinAlgError:
        return None  # dependent invariants (∇G∇Gᵀ singular): the Python steps say so
    if status[0]:
        raise_stopped(name, status, times, Q[k - 1], V[k - 1])
    return Solution(times[keep], Q, V, W, {"newton_iterations": np.zeros(n_steps, np.int32)},
                    name)


def first_run() -> None:
    """``kd.simulate``'s rk4 on one body on a ball joint: compiles
    :func:`rk4_manifold_run` for the argument types of every run (the job of
    :func:`run_one`'s :func:`~kanedyn.dynamics.first_calls.loop_ready`)."""
    from ..model.builders import random_tree
    from ..model.configuration import neutral
    from .simulate import simulate

    model = random_tree(1, joint_types=("spherical",))
    simulate(model, neutral(model), [0.1, 0.2, 0.3], 3e-3, method="rk4", dt=1e-3)
