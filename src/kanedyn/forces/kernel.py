"""The force elements of the compiled loops (numba): one row of parameters per speed.

A compiled loop (RK4 and the batches of :mod:`kanedyn.sim.batch`, the discrete
gradients of :mod:`kanedyn.integrators.discrete_gradient_compiled`, midpoint and gauss4
of :mod:`kanedyn.integrators.gauss_compiled`, Störmer–Verlet of
:mod:`kanedyn.integrators.verlet_compiled`, the time-stepping of
:mod:`kanedyn.sim.time_stepping_compiled`) cannot call the Python ``generalized_force``
of an element; :func:`force_rows` turns the elements it can take into a table
``P (nv, NPAR)`` and :func:`joint_forces` evaluates them, for each speed j:

    τ_nc,j = −c_j v_j − F_j(v_j − v_surface,j) + τ0_j + A_j sin(ω_j t + φ_j),
    τ_j    = τ_nc,j − k_j (q_j − q_rest,j)

(a :class:`~.joint.JointDamper`, a :class:`~.friction.JointFriction` with a smoothed
Stribeck law — its one compiled form, :func:`~kanedyn.friction.laws_kernel.stribeck_force`
—, a constant :class:`~.joint.JointTorque`, a :class:`~.joint.SinusoidalTorque`, and a
:class:`~.joint.JointSpring`, whose potential ½ k (q − q_rest)² is part of the energy).
The elements' own ``generalized_force`` are the reference, tested to round-off.

A constant :class:`~.wrench.ExternalWrench` takes a row of its own after the nv rows of
the speeds (``force_rows(..., wrenches=True)``, for the loops that evaluate them by
:func:`applied_forces` at the configuration itself): ``τ_nc += J(q)ᵀ f``, by virtual power
(Featherstone 2008, eq. 5.20), as the world-frame column of each ancestor's motion
subspace dotted with f taken to world axes about the world origin. Any other element (a
torque or a wrench given as a Python function, an exact or a LuGre law) has no row:
:func:`force_rows` says why, and the run takes the Python steps.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..dynamics import _compiled
from ..dynamics.kernels.kinematics import world_column, world_poses
from ..dynamics.layout import IV, NVJ, PARENT
from ..errors import KanedynError
from ..friction.laws_kernel import stribeck_derivative, stribeck_force, stribeck_parameters

_compiled.key_cache(__name__)

# per-dof force parameters, the columns of P[dof, :]
(P_K, P_REST, P_C, P_FRIC, P_FC, P_FS, P_VS, P_DELTA, P_FV, P_EPS, P_SMOOTH, P_SURF, P_TAU,
 P_AMP, P_OMEGA, P_PHASE) = range(16)
NPAR = 16
# a wrench row (after the nv rows of the speeds): its body, frame (0 local, 2 world), f;
# its column P_TAU set to 1 so that has_forces sees it (joint_forces reads the nv rows only)
W_BODY, W_FRAME, W_F, W_MARK = 0, 1, 2, P_TAU
WRENCH_FRAMES = {"local": 0, "world": 2}


@njit(cache=True, nogil=True)
def joint_forces(P, t, q, v, tau_nc, tau):
    """τ_nc and τ = τ_nc + τ_springs of the rows ``P`` at (t, q, v) (module doc); one
    speed per joint (q_j the coordinate of speed j)."""
    for j in range(v.shape[0]):
        t_nc = -P[j, P_C] * v[j] + P[j, P_TAU]
        if P[j, P_AMP] != 0.0:
            t_nc += P[j, P_AMP] * np.sin(P[j, P_OMEGA] * t + P[j, P_PHASE])
        if P[j, P_FRIC] != 0.0:
            t_nc -= stribeck_force(v[j] - P[j, P_SURF], P[j, P_FC], P[j, P_FS], P[j, P_VS],
                                   P[j, P_DELTA], P[j, P_FV], P[j, P_EPS],
                                   int(P[j, P_SMOOTH]))
        tau_nc[j] = t_nc
        tau[j] = t_nc - P[j, P_K] * (q[j] - P[j, P_REST])


@njit(cache=True, nogil=True)
def damping_slopes(P, v, out):
    """out_j = −∂τ_nc,j/∂v_j = c_j + F_j'(v_j − v_surface,j) ≥ 0 (τ_nc is diagonal in v)."""
    for j in range(v.shape[0]):
        d = P[j, P_C]
        if P[j, P_FRIC] != 0.0:
            d += stribeck_derivative(v[j] - P[j, P_SURF], P[j, P_FC], P[j, P_FS], P[j, P_VS],
                                     P[j, P_DELTA], P[j, P_FV], P[j, P_EPS],
                                     int(P[j, P_SMOOTH]))
        out[j] = d


@njit(cache=True, nogil=True)
def spring_potential(P, q) -> float:
    """Σ ½ k_j (q_j − q_rest,j)², the springs' share of the energy."""
    V = 0.0
    for j in range(q.shape[0]):
        d = q[j] - P[j, P_REST]
        V += 0.5 * P[j, P_K] * (d * d)  # (JointSpring.potential's rounding: ½k · d²)
    return V


@njit(cache=True, nogil=True)
def spring_gradient_add(P, q, weight, out):
    """out_j += weight k_j (q_j − q_rest,j): the springs' share of ∂H/∂q, weighted (a
    quadrature node's)."""
    for j in range(q.shape[0]):
        out[j] += weight * P[j, P_K] * (q[j] - P[j, P_REST])


@njit(cache=True, nogil=True)
def wrench_forces_add(data, P, q, tau_nc, tau):
    """τ_nc += Σ J_bᵀ f and τ += the same, for the wrench rows P[nv:] (module doc).

    Each f is taken to world axes about the world origin, (n_O, f_O) = (R_b n + p_b × R_b f,
    R_b f) for a local one (as it is for a world one); then τ_j = s_jᵀ (n_O, f_O) for each
    column s_j = (R_j ω, R_j v + p_j × R_j ω) of an ancestor's motion subspace in the same
    coordinates (:func:`~kanedyn.dynamics.kernels.kinematics.world_column`, the columns of
    the world-frame Jacobian). Returns the kinematics' status (0, or the failing body + 1)."""
    nv = tau_nc.shape[0]
    if P.shape[0] == nv:
        return 0
    st, R, p, col = world_poses(data, q)
    if st:
        return st
    for w in range(nv, P.shape[0]):
        b = int(P[w, W_BODY])
        n0, n1, n2 = P[w, W_F], P[w, W_F + 1], P[w, W_F + 2]
        f0, f1, f2 = P[w, W_F + 3], P[w, W_F + 4], P[w, W_F + 5]
        if P[w, W_FRAME] == 0.0:  # body axes about its origin → world axes, world origin
            g0 = R[b, 0, 0] * f0 + R[b, 0, 1] * f1 + R[b, 0, 2] * f2
            g1 = R[b, 1, 0] * f0 + R[b, 1, 1] * f1 + R[b, 1, 2] * f2
            g2 = R[b, 2, 0] * f0 + R[b, 2, 1] * f1 + R[b, 2, 2] * f2
            m0 = R[b, 0, 0] * n0 + R[b, 0, 1] * n1 + R[b, 0, 2] * n2
            m1 = R[b, 1, 0] * n0 + R[b, 1, 1] * n1 + R[b, 1, 2] * n2
            m2 = R[b, 2, 0] * n0 + R[b, 2, 1] * n1 + R[b, 2, 2] * n2
            n0 = m0 + p[b, 1] * g2 - p[b, 2] * g1
            n1 = m1 + p[b, 2] * g0 - p[b, 0] * g2
            n2 = m2 + p[b, 0] * g1 - p[b, 1] * g0
            f0, f1, f2 = g0, g1, g2
        j = b
        while j >= 0:
            o = int(data[j, IV])
            for c in range(int(data[j, NVJ])):
                w0, w1, w2, u0, u1, u2 = world_column(data, R, p, j, c, col)
                t = w0 * n0 + w1 * n1 + w2 * n2 + u0 * f0 + u1 * f1 + u2 * f2
                tau_nc[o + c] += t
                tau[o + c] += t
            j = int(data[j, PARENT])
    return 0


@njit(cache=True, nogil=True)
def applied_forces(data, P, t, q, v, tau_nc, tau):
    """:func:`joint_forces` and then the wrench rows (:func:`wrench_forces_add`) at the
    configuration q of the model ``data`` (additive coordinates: q_j the coordinate of
    speed j). Returns the kinematics' status (0: done)."""
    joint_forces(P, t, q, v, tau_nc, tau)
    return wrench_forces_add(data, P, q, tau_nc, tau)


def empty_rows(nv: int) -> NDArray:
    """Rows that apply nothing (the law's vs, δ, ε at 1 so that nothing divides by 0)."""
    P = np.zeros((nv, NPAR))
    P[:, [P_VS, P_DELTA, P_EPS]] = 1.0
    return P


def force_rows(model, forces, friction: bool = True,
               wrenches: bool = False) -> tuple[NDArray | None, str | None]:
    """(P, None): the rows of ``forces`` on ``model``, one per speed; or (None, why one of
    them has no row). A damper acts on every speed of its joint (τ = −c v_j); springs,
    sinusoidal torques and Stribeck friction need the one coordinate of a 1-DOF additive
    joint (revolute, prismatic, helical) and are refused, naming the joint, on others.
    ``friction=False``: friction elements are not taken here (a loop that treats friction
    itself). ``wrenches=True`` (a loop that calls :func:`applied_forces`): each constant
    ExternalWrench a row after the nv rows, on its body (one on a frame that is not a body
    taken to its body: a local one by the frame's fixed placement, a world one as it is)."""
    from ..friction.laws import Stribeck
    from .friction import JointFriction
    from .joint import JointDamper, JointSpring, JointTorque, SinusoidalTorque
    from .wrench import ExternalWrench

    P = empty_rows(model.nv)
    extra = []
    for f in forces:
        if wrenches and isinstance(f, ExternalWrench) and not callable(f.wrench):
            fr = model.frame(f.body)
            if fr.body < 0:
                continue  # a wrench on the world moves nothing (its Jacobian is 0)
            w = np.asarray(f.wrench, dtype=float)
            if f.frame == "local":  # in the frame's axes about its origin → the body's
                w = fr.placement.transpose_apply_force(w)
            row = np.zeros(NPAR)
            row[W_BODY], row[W_FRAME] = fr.body, WRENCH_FRAMES[f.frame]
            row[W_F:W_F + 6] = w
            row[W_MARK] = 1.0
            extra.append(row)
            continue
        body = model.bodies[model.joint_index(f.joint)] if hasattr(f, "joint") else None
        if (isinstance(f, (JointSpring, SinusoidalTorque, JointFriction))
                and not (body.joint.chart_is_additive and body.joint.nv == 1)):
            return None, (f"{type(f).__name__} on {f.joint!r}: the joint has "
                          f"{body.joint.nv} speeds (a {body.joint.kind} joint); the compiled "
                          "springs, sinusoidal torques and friction need a 1-DOF additive "
                          "joint")
        iv = None if body is None else body.iv.start
        if isinstance(f, JointSpring):
            P[iv, P_K] += f.k
            P[iv, P_REST] = f.rest
        elif isinstance(f, JointDamper):
            c = body.joint.damping if f.c is None else f.c
            P[body.iv, P_C] += c
        elif isinstance(f, JointTorque) and f.constant is not None:
            idx = (np.arange(model.nv) if f.joints is None else
                   np.array([model.bodies[model.joint_index(j)].iv.start for j in f.joints]))
            if f.constant.shape != idx.shape:
                return None, (f"JointTorque: {f.constant.size} constants for "
                              f"{idx.size} speeds")
            P[idx, P_TAU] += f.constant
        elif isinstance(f, SinusoidalTorque) and P[iv, P_AMP] == 0.0:
            P[iv, P_TAU] += f.offset
            P[iv, [P_AMP, P_OMEGA, P_PHASE]] = (f.amplitude, 2.0 * np.pi * f.frequency,
                                                f.phase)
        elif (friction and isinstance(f, JointFriction) and type(f.law) is Stribeck
              and f.law.smoothing and not P[iv, P_FRIC]):
            try:
                Fc, Fs, vs, delta, Fv, eps, kind = stribeck_parameters(f.law)
            except KanedynError as exc:
                return None, f"the friction on {f.joint!r} has no compiled form: {exc}"
            P[iv, P_FRIC] = 1.0
            P[iv, [P_FC, P_FS, P_VS, P_DELTA, P_FV]] = (Fc, Fs, vs, delta, Fv)
            P[iv, P_EPS] = eps
            P[iv, P_SMOOTH] = kind
            P[iv, P_SURF] = f.surface_velocity
        else:
            joints = getattr(f, "joints", None) or [getattr(f, "joint", None)]
            where = "" if joints[0] is None else " on " + ", ".join(map(repr, joints))
            if isinstance(f, ExternalWrench):
                where = f" on {f.body!r}" + (" (a Python function)" if callable(f.wrench)
                                             else "")
            return None, (f"{type(f).__name__}{where} has no compiled form: the compiled "
                          "loops take JointSpring, "
                          "JointDamper, JointTorque with constant values, SinusoidalTorque "
                          "and JointFriction with a smoothed Stribeck law"
                          + (", ExternalWrench with a constant wrench" if wrenches else ""))
    return (np.vstack([P, *extra]) if extra else P), None


def has_forces(P: NDArray) -> bool:
    """Whether any row acts (else a loop skips them)."""
    return bool(np.any(P[..., [P_K, P_C, P_FRIC, P_TAU, P_AMP]] != 0.0))
