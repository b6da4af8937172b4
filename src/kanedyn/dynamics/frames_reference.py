"""Frame kinematics, one state at a time, in the notation of Featherstone (2008).

The readable definitions that :mod:`.frames_kernel` (numba) is tested against.
A frame F is fixed to body b (``model.frame(name)``): ``X_F = F_X_b`` its
placement, so that a motion vector of b in b coordinates becomes, at F's origin
and in F's axes, ``X_F m``.

Quantities of F are first formed in F's own coordinates (``local``), then moved:

- ``local``: ``m_F``, at F's origin, in F's axes (Pinocchio ``LOCAL``);
- ``local_world_aligned``: ``diag(R_F, R_F) m_F``, still at F's origin, world axes
  (``LOCAL_WORLD_ALIGNED``);
- ``world``: ``0_X_F m_F``, Plücker coordinates of the world: the linear part is
  that of the body point passing through the world origin (``WORLD``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..model import Model
from ..spatial import Transform, crm, skew
from .reference import body_placements, body_velocities, jacobian_local, joint_transforms

REFERENCES = ("local", "local_world_aligned", "world")


def body_accelerations(model: Model, q: NDArray, v: NDArray, a: NDArray) -> NDArray:
    """Spatial acceleration of every body in its own coordinates, gravity left out:
    ``a_i = X_up[i] a_p + S_i q̈_i + v_i × S_i q̇_i`` (Featherstone 2008, eq. 5.7)."""
    X_up = joint_transforms(model, q)
    vel = body_velocities(model, q, v)
    acc = np.empty((model.nb, 6))
    for b in model.bodies:
        S = b.joint.motion_subspace()
        a_p = np.zeros(6) if b.parent < 0 else X_up[b.index] @ acc[b.parent]
        acc[b.index] = a_p + S @ a[b.iv] + crm(vel[b.index]) @ (S @ v[b.iv])
    return acc


def frame_placement(model: Model, q: NDArray, frame) -> tuple[NDArray, NDArray]:
    """``R_F = R_b E_Fᵀ``, ``p_F = p_b + R_b r_F``: the pose of F in the world."""
    fr = model.frame(frame)
    if fr.body < 0:
        return fr.placement.rotation.copy(), fr.placement.translation.copy()
    R, p = body_placements(model, q)
    Rb, pb = R[fr.body], p[fr.body]
    return Rb @ fr.placement.rotation, pb + Rb @ fr.placement.translation


def _to_reference(model: Model, q: NDArray, frame, reference: str) -> NDArray:
    """The 6x6 map from F's local coordinates to those of ``reference``."""
    R, p = frame_placement(model, q, frame)
    if reference == "local":
        return np.eye(6)
    if reference == "local_world_aligned":
        return np.kron(np.eye(2), R)
    return Transform.from_pose(R, p).inverse().matrix()  # 0_X_F


def frame_velocity(model: Model, q: NDArray, v: NDArray, frame, reference: str) -> NDArray:
    """``v_F = X_F v_b``, moved to ``reference``."""
    fr = model.frame(frame)
    if fr.body < 0:
        return np.zeros(6)
    v_F = fr.placement.matrix() @ body_velocities(model, q, v)[fr.body]
    return _to_reference(model, q, frame, reference) @ v_F


def frame_acceleration(model: Model, q: NDArray, v: NDArray, a: NDArray, frame,
                       reference: str, classical: bool) -> NDArray:
    """Spatial ``a_F = X_F a_b`` moved to ``reference``; classical: its linear part plus
    ``ω × v`` of the velocity in the same reference — at F's origin (local and
    local_world_aligned) the acceleration p̈_F of that point, in world the acceleration
    of the body point passing through the world origin (Featherstone 2008, eq. 2.46)."""
    fr = model.frame(frame)
    if fr.body < 0:
        return np.zeros(6)
    acc = _to_reference(model, q, frame, reference) @ (
        fr.placement.matrix() @ body_accelerations(model, q, v, a)[fr.body])
    if classical:
        vel = frame_velocity(model, q, v, frame, reference)
        acc[3:] += np.cross(vel[:3], vel[3:])
    return acc


def frame_jacobian(model: Model, q: NDArray, frame, reference: str) -> NDArray:
    """``J = T_ref X_F J_b`` with J_b the body Jacobian in body coordinates:
    ``frame_velocity = J v``."""
    fr = model.frame(frame)
    if fr.body < 0:
        return np.zeros((6, model.nv))
    J_F = fr.placement.matrix() @ jacobian_local(model, q, fr.body)
    return _to_reference(model, q, frame, reference) @ J_F


def frame_jacobian_time_variation(model: Model, q: NDArray, v: NDArray, frame,
                                  reference: str) -> NDArray:
    """``J̇ = dJ/dt`` along the motion with speeds v, so that ``d/dt (J v) = J v̇ + J̇ v``.

    In the world, the columns of joint j are ``0_X_j S_j`` and ``S_j`` is constant in
    body j, so ``d/dt (0_X_j S_j) = v_j × 0_X_j S_j`` with v_j the spatial velocity of
    body j in world coordinates (Featherstone 2008, eq. 2.38 and §3.2). The other
    references are ``T(q) J_world``: local_world_aligned ``T = [1 0; -p_F× 1]`` (a
    shift of the point to p_F), ``Ṫ = [0 0; -ṗ_F× 0]``; local ``T = F_X_0``,
    ``Ṫ = -v_F× F_X_0`` (v_F the local frame velocity).
    """
    fr = model.frame(frame)
    if fr.body < 0:
        return np.zeros((6, model.nv))
    J0 = frame_jacobian(model, q, frame, "world")
    R, p = body_placements(model, q)
    vel = body_velocities(model, q, v)
    dJ0 = np.zeros_like(J0)
    for j in model.support(fr.body):
        bj = model.bodies[j]
        v0_j = Transform.from_pose(R[j], p[j]).inverse().matrix() @ vel[j]  # world coords
        dJ0[:, bj.iv] = crm(v0_j) @ J0[:, bj.iv]
    if reference == "world":
        return dJ0
    RF, pF = frame_placement(model, q, frame)
    v_lwa = frame_velocity(model, q, v, frame, "local_world_aligned")
    T = np.block([[np.eye(3), np.zeros((3, 3))], [-skew(pF), np.eye(3)]])
    dT = np.block([[np.zeros((3, 3)), np.zeros((3, 3))], [-skew(v_lwa[3:]), np.zeros((3, 3))]])
    dJ_lwa = T @ dJ0 + dT @ J0
    if reference == "local_world_aligned":
        return dJ_lwa
    # J_local = diag(R_Fᵀ, R_Fᵀ) J_lwa and d/dt R_Fᵀ = -R_Fᵀ ω×
    W = np.kron(np.eye(2), skew(v_lwa[:3]))
    return np.kron(np.eye(2), RF.T) @ (dJ_lwa - W @ (T @ J0))
