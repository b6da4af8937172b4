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
The elements' own ``generalized_force`` are the reference, tested to round-off. Any
other element (a torque given as a Python function, a wrench, an exact or a LuGre law)
has no row: :func:`force_rows` says why, and the run takes the Python steps.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..dynamics import _compiled
from ..errors import KanedynError
from ..friction.laws_kernel import stribeck_derivative, stribeck_force, stribeck_parameters

_compiled.key_cache(__name__)

# per-dof force parameters, the columns of P[dof, :]
(P_K, P_REST, P_C, P_FRIC, P_FC, P_FS, P_VS, P_DELTA, P_FV, P_EPS, P_SMOOTH, P_SURF, P_TAU,
 P_AMP, P_OMEGA, P_PHASE) = range(16)
NPAR = 16


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


def empty_rows(nv: int) -> NDArray:
    """Rows that apply nothing (the law's vs, δ, ε at 1 so that nothing divides by 0)."""
    P = np.zeros((nv, NPAR))
    P[:, [P_VS, P_DELTA, P_EPS]] = 1.0
    return P


def force_rows(model, forces, friction: bool = True) -> tuple[NDArray | None, str | None]:
    """(P, None): the rows of ``forces`` on ``model``, one per speed; or (None, why one of
    them has no row). A damper acts on every speed of its joint (τ = −c v_j); springs,
    sinusoidal torques and Stribeck friction need the one coordinate of a 1-DOF additive
    joint (revolute, prismatic, helical) and are refused, naming the joint, on others.
    ``friction=False``: friction elements are not taken here (a loop that treats friction
    itself)."""
    from ..friction.laws import Stribeck
    from .friction import JointFriction
    from .joint import JointDamper, JointSpring, JointTorque, SinusoidalTorque

    P = empty_rows(model.nv)
    for f in forces:
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
            return None, (f"{type(f).__name__}{where} has no compiled form: the compiled "
                          "loops take JointSpring, "
                          "JointDamper, JointTorque with constant values, SinusoidalTorque "
                          "and JointFriction with a smoothed Stribeck law")
    return P, None


def has_forces(P: NDArray) -> bool:
    """Whether any row acts (else a loop skips them)."""
    return bool(np.any(P[..., [P_K, P_C, P_FRIC, P_TAU, P_AMP]] != 0.0))
