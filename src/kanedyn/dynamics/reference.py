"""Reference implementations, one state at a time, in the notation of Featherstone (2008).

These are the readable definitions. The public functions (:mod:`.rnea`,
:mod:`.crba`, ...) validate input, handle batches and call the fast kernels,
which are tested against these.

Notation: ``X_up[i]`` = i_X_parent(i), ``S`` motion subspace, ``crm``/``crf``
motion/force cross products, ``a_grav`` gravity as a spatial acceleration.
Spatial quantities of body i are in body i coordinates.

Armature ``J_r`` (a joint's rotor inertia, ``body.joint.armature``) acts on the joint's
own speeds: ``τ_i = S_iᵀ f_i + J_r,i q̈_i``, so M gains ``diag(J_r)``, ABA's
``D_i = S_iᵀ U_i + J_r,i 1`` and T gains ``½ Σ J_r v²``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..model import Model
from ..spatial import crf, crm


def joint_transforms(model: Model, q: NDArray) -> list[NDArray]:
    """``X_up[i] = X_J(q_i) X_tree[i]``: parent coordinates to body i coordinates."""
    return [b.joint.transform(q[b.iq]) @ b.X_tree for b in model.bodies]


def rnea(model: Model, q: NDArray, v: NDArray, a: NDArray, f_ext: NDArray | None = None,
         gravity: bool = True) -> NDArray:
    """Inverse dynamics ``τ = M(q) a + h(q, v) - Σ J_iᵀ f_ext,i`` (Featherstone 2008, Table 5.1).

    ``f_ext[i]`` is the external spatial force on body i, in body i coordinates.
    """
    X_up, f = rnea_forces(model, q, v, a, f_ext, gravity)
    tau = np.zeros(model.nv)
    for b in reversed(model.bodies):  # backward pass: child before parent
        i, p = b.index, b.parent
        tau[b.iv] = b.joint.motion_subspace().T @ f[i] + b.joint.armature * a[b.iv]
        if p >= 0:
            f[p] = f[p] + X_up[i].T @ f[i]
    return tau


def rnea_forces(model: Model, q: NDArray, v: NDArray, a: NDArray,
                f_ext: NDArray | None = None,
                gravity: bool = True) -> tuple[list[NDArray], list[NDArray]]:
    """RNEA's forward pass (Featherstone 2008, Table 5.1): ``(X_up, f)`` with each body's
    ``f_i = I_i a_i + v_i ×* I_i v_i - f_ext,i`` before the backward pass adds the
    children's, a_i measured from the free-fall frame (a_0 = -a_grav) when ``gravity``."""
    X_up, vel, acc = body_motions(model, q, v, a, gravity)
    f = [None] * model.nb
    for b in model.bodies:
        i = b.index
        f[i] = b.inertia @ acc[i] + crf(vel[i]) @ b.inertia @ vel[i]
        if f_ext is not None:
            f[i] = f[i] - f_ext[i]
    return X_up, f


def body_motions(model: Model, q: NDArray, v: NDArray, a: NDArray,
                 gravity: bool = True) -> tuple[list[NDArray], list[NDArray], list[NDArray]]:
    """``(X_up, vel, acc)``: RNEA's forward pass of motions (Table 5.1), body coordinates,
    ``v_i = X_up[i] v_λ(i) + S_i q̇_i``, ``a_i = X_up[i] a_λ(i) + S_i q̈_i + v_i × S_i q̇_i``,
    a_0 = -a_grav when ``gravity``."""
    a_grav = model.gravity_spatial if gravity else np.zeros(6)
    X_up = joint_transforms(model, q)
    nb = model.nb
    vel, acc = [None] * nb, [None] * nb
    for b in model.bodies:  # parent before child
        i, p = b.index, b.parent
        S = b.joint.motion_subspace()
        vJ = S @ v[b.iv]
        if p < 0:
            vel[i] = vJ
            acc[i] = X_up[i] @ (-a_grav) + S @ a[b.iv]
        else:
            vel[i] = X_up[i] @ vel[p] + vJ
            acc[i] = X_up[i] @ acc[p] + S @ a[b.iv] + crm(vel[i]) @ vJ
    return X_up, vel, acc


def crba(model: Model, q: NDArray) -> NDArray:
    """Joint-space inertia matrix by the composite-rigid-body algorithm (Table 6.2)."""
    X_up = joint_transforms(model, q)
    Ic = [b.inertia.copy() for b in model.bodies]
    M = np.zeros((model.nv, model.nv))
    for b in reversed(model.bodies):
        i, p = b.index, b.parent
        if p >= 0:
            Ic[p] = Ic[p] + X_up[i].T @ Ic[i] @ X_up[i]
    for b in model.bodies:
        i = b.index
        F = Ic[i] @ b.joint.motion_subspace()
        M[b.iv, b.iv] = b.joint.motion_subspace().T @ F + b.joint.armature * np.eye(b.joint.nv)
        j = i
        while model.bodies[j].parent >= 0:
            F = X_up[j].T @ F
            j = model.bodies[j].parent
            bj = model.bodies[j]
            M[bj.iv, b.iv] = bj.joint.motion_subspace().T @ F
            M[b.iv, bj.iv] = M[bj.iv, b.iv].T
    return M


def aba(model: Model, q: NDArray, v: NDArray, tau: NDArray,
        f_ext: NDArray | None = None) -> NDArray:
    """Forward dynamics by the articulated-body algorithm (Table 7.1), O(n)."""
    X_up = joint_transforms(model, q)
    nb = model.nb
    vel, c, IA, pA = [None] * nb, [None] * nb, [None] * nb, [None] * nb
    for b in model.bodies:  # pass 1: velocities and bias forces
        i, p = b.index, b.parent
        vJ = b.joint.motion_subspace() @ v[b.iv]
        vel[i] = vJ if p < 0 else X_up[i] @ vel[p] + vJ
        c[i] = crm(vel[i]) @ vJ
        IA[i] = b.inertia.copy()
        pA[i] = crf(vel[i]) @ b.inertia @ vel[i]
        if f_ext is not None:
            pA[i] = pA[i] - f_ext[i]
    U, Dinv, u = [None] * nb, [None] * nb, [None] * nb
    for b in reversed(model.bodies):  # pass 2: articulated inertias, child before parent
        i, p = b.index, b.parent
        S = b.joint.motion_subspace()
        U[i] = IA[i] @ S
        Dinv[i] = np.linalg.inv(S.T @ U[i] + b.joint.armature * np.eye(b.joint.nv))
        u[i] = tau[b.iv] - S.T @ pA[i]
        if p >= 0:
            Ia = IA[i] - U[i] @ Dinv[i] @ U[i].T
            pa = pA[i] + Ia @ c[i] + U[i] @ Dinv[i] @ u[i]
            IA[p] = IA[p] + X_up[i].T @ Ia @ X_up[i]
            pA[p] = pA[p] + X_up[i].T @ pa
    acc = [None] * nb
    qdd = np.zeros(model.nv)
    for b in model.bodies:  # pass 3: accelerations, parent before child
        i, p = b.index, b.parent
        S = b.joint.motion_subspace()
        a_p = -model.gravity_spatial if p < 0 else acc[p]
        a_prime = X_up[i] @ a_p + c[i]
        qdd[b.iv] = Dinv[i] @ (u[i] - U[i].T @ a_prime)
        acc[i] = a_prime + S @ qdd[b.iv]
    return qdd


def body_placements(model: Model, q: NDArray) -> tuple[NDArray, NDArray]:
    """Pose of every body in the world: axes ``R[i]`` (3x3) and origin ``p[i]``."""
    R = np.empty((model.nb, 3, 3))
    p = np.empty((model.nb, 3))
    for b in model.bodies:
        Rj, pj = b.joint.pose(q[b.iq])
        # parent -> joint frame -> child, as poses: T = T_parent * T_tree * T_joint
        Rt, pt = b.placement.rotation, b.placement.translation
        if b.parent < 0:
            Rp, pp = np.eye(3), np.zeros(3)
        else:
            Rp, pp = R[b.parent], p[b.parent]
        R[b.index] = Rp @ Rt @ Rj
        p[b.index] = pp + Rp @ (pt + Rt @ pj)
    return R, p


def body_velocities(model: Model, q: NDArray, v: NDArray) -> NDArray:
    """Spatial velocity of every body, in its own coordinates (nb x 6)."""
    X_up = joint_transforms(model, q)
    vel = np.empty((model.nb, 6))
    for b in model.bodies:
        vJ = b.joint.motion_subspace() @ v[b.iv]
        vel[b.index] = vJ if b.parent < 0 else X_up[b.index] @ vel[b.parent] + vJ
    return vel


def kinetic_energy(model: Model, q: NDArray, v: NDArray) -> float:
    """``T = ½ Σ v_iᵀ I_i v_i + ½ Σ J_r v²`` (bodies, then rotors)."""
    vel = body_velocities(model, q, v)
    return 0.5 * float(sum(vel[b.index] @ b.inertia @ vel[b.index]
                           + b.joint.armature * v[b.iv] @ v[b.iv] for b in model.bodies))


def potential_energy(model: Model, q: NDArray) -> float:
    """``V = -Σ m_i gᵀ c_i`` with c_i the centre of mass of body i in the world."""
    R, p = body_placements(model, q)
    return -float(sum(b.mass * model.gravity @ (p[b.index] + R[b.index] @ b.com)
                      for b in model.bodies))


def spatial_momentum(model: Model, q: NDArray, v: NDArray) -> NDArray:
    """Total spatial momentum ``[L_O; P]`` in world coordinates, about the world origin."""
    R, p = body_placements(model, q)
    vel = body_velocities(model, q, v)
    h = np.zeros(6)
    for b in model.bodies:
        hb = b.inertia @ vel[b.index]  # body momentum in body coordinates
        Rb, pb = R[b.index], p[b.index]
        lin = Rb @ hb[3:]
        h[:3] += Rb @ hb[:3] + np.cross(pb, lin)
        h[3:] += lin
    return h


def jacobian_local(model: Model, q: NDArray, body: int) -> NDArray:
    """Body Jacobian in the body's own coordinates: ``v_body = J v`` (6 x nv)."""
    X_up = joint_transforms(model, q)
    J = np.zeros((6, model.nv))
    X = np.eye(6)  # body_X_j, accumulated from the body towards the root
    j = body
    while j >= 0:
        bj = model.bodies[j]
        J[:, bj.iv] = X @ bj.joint.motion_subspace()
        X = X @ X_up[j]
        j = bj.parent
    return J
