"""Check (g): static equilibrium — the gravity terms at rest are physically sensible.

Three independent statements about ``g(q) = h(q, 0)``, the joint forces that
hold the mechanism still:

* **by hand** (:func:`static_gravity_torques`): the weight of the bodies a
  joint carries, taken about that joint. With ``W_j = [Σ (c_i − p_j) × m_i g;
  Σ m_i g]`` the gravity wrench on the subtree of body j about its origin p_j,
  in world axes, the joint must supply ``τ_j = −S_jᵀ X_j W_j``, X_j turning
  world axes into body j's. For a revolute joint that is
  ``−a_j · Σ (c_i − p_j) × m_i g``. Positions only: no RNEA, no velocities.
* **virtual work**: ``g(q) = ∂V/∂q`` in the tangent space (central difference
  of the potential along ``q ∘ exp(±ε e_k)``) — this one needs no tree and
  runs on any system.
* **symmetry at rest**: at the neutral configuration, a joint whose subtree
  has its centre of mass on the gravity line through the joint origin (a
  chain hanging straight down) carries no gravity moment; its rotational
  torques must vanish.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import dynamics as dyn
from ..model import Model
from ..model import configuration as cfg
from .result import CheckResult, skipped

#: relative error allowed between RNEA's g(q) and the hand computation (rounding only)
STATIC_TOL = 1e-9
#: relative error allowed for g = ∂V/∂q by a central difference with ε = 1e-5 (O(ε²) ≈ 1e-10)
VIRTUAL_WORK_TOL = 1e-6


def static_gravity_torques(model: Model, q: ArrayLike) -> NDArray:
    """Joint forces holding the model at rest against gravity, from positions alone.

    ``τ_j = −S_jᵀ [R_jᵀ Σ_{i∈sub(j)} (c_i − p_j) × m_i g;  R_jᵀ Σ_{i∈sub(j)} m_i g]``
    with ``R_j, p_j`` the pose of body j (``kd.forward_kinematics``), ``c_i``
    the world centre of mass of body i, S_j the joint's motion subspace in body
    coordinates. It must equal ``kd.gravity_torques(model, q)``.
    """
    q = np.asarray(q, dtype=float)
    if q.ndim == 2:
        return np.array([static_gravity_torques(model, x) for x in q])
    kin = dyn.forward_kinematics(model, q)
    g = model.gravity
    com = np.array([kin.p[b.index] + kin.R[b.index] @ b.com for b in model.bodies])
    tau = np.zeros(model.nv)
    for b in model.bodies:
        sub = model.subtree(b.index)
        m = np.array([model.bodies[i].mass for i in sub])
        moment = sum(np.cross(com[i] - kin.p[b.index], mi * g)
                     for i, mi in zip(sub, m, strict=True))
        force = m.sum() * g
        Rt = kin.R[b.index].T
        wrench = np.concatenate([Rt @ moment, Rt @ force])
        tau[b.iv] = -b.joint.motion_subspace().T @ wrench
    return tau


def _scale(model: Model, q) -> float:
    """A torque scale: total weight times the largest distance of a centre of mass from a joint."""
    kin = dyn.forward_kinematics(model, q)
    com = np.array([kin.p[b.index] + kin.R[b.index] @ b.com for b in model.bodies])
    reach = max(float(np.linalg.norm(com[:, None] - kin.p[None], axis=-1).max()), 1.0)
    return model.total_mass * float(np.linalg.norm(model.gravity)) * reach


def static_by_hand(subject, Q) -> CheckResult:
    name, title = "static_hand", "static torques vs hand computation"
    if subject.model is None:
        return skipped(name, title, "needs a Model (the hand computation walks the tree)")
    model = subject.model
    if not np.linalg.norm(model.gravity) > 0:
        return skipped(name, title, "the model has no gravity")
    worst, where = 0.0, ""
    for k, q in enumerate(Q):
        err = np.abs(dyn.gravity_torques(model, q) - static_gravity_torques(model, q))
        r = float(err.max()) / _scale(model, q)
        if not np.isfinite(r):
            r = np.inf
        if r > worst:
            worst = r
            where = f"; worst at sample {k}, joint {_joint_of(model, int(np.argmax(err)))!r}"
    ok = worst <= STATIC_TOL
    return CheckResult(name, ok, worst, STATIC_TOL,
                       f"|g(q) - sum (c - p_j) x m g . axis| / (m g reach), {len(Q)} "
                       f"configurations{'' if ok else where}", title)


def _joint_of(model: Model, dof: int) -> str:
    for b in model.bodies:
        if b.iv.start <= dof < b.iv.stop:
            return b.joint.name
    return "?"


def static_virtual_work(subject, Q, eps: float = 1e-5) -> CheckResult:
    """``g(q) = ∂V/∂q`` along each tangent direction, V = energy at rest."""
    name, title = "static_potential", "g(q) = dV/dq (virtual work)"
    worst, where, largest = 0.0, "", 0.0
    zero = np.zeros(subject.nv)
    for k, q in enumerate(Q):
        g = subject.nonlinear_effects(q, zero)
        dV = np.empty(subject.nv)
        for j in range(subject.nv):
            e = np.zeros(subject.nv)
            e[j] = eps
            dV[j] = (subject.potential(subject.integrate_configuration(q, e, 1.0))
                     - subject.potential(subject.integrate_configuration(q, -e, 1.0))) / (2 * eps)
        scale = max(float(np.abs(g).max()), float(np.abs(dV).max()), 1e-300)
        largest = max(largest, scale)
        r = float(np.abs(g - dV).max()) / scale
        if not np.isfinite(r):
            r = np.inf
        if r > worst:
            worst, where = r, f"; worst at sample {k}, coordinate {int(np.argmax(np.abs(g - dV)))}"
    if largest == 1e-300:
        return skipped(name, title, "no potential energy (no gravity)")
    ok = worst <= VIRTUAL_WORK_TOL
    return CheckResult(name, ok, worst, VIRTUAL_WORK_TOL,
                       f"central difference eps = {eps:g} on the manifold, {len(Q)} "
                       f"configurations{'' if ok else where}", title)


def static_symmetry(subject) -> CheckResult:
    """At q = neutral, joints whose load hangs on their gravity line hold no moment."""
    name, title = "static_symmetry", "zero gravity torque where symmetric"
    if subject.model is None:
        return skipped(name, title, "needs a Model")
    model = subject.model
    g = model.gravity
    if not np.linalg.norm(g) > 0:
        return skipped(name, title, "the model has no gravity")
    q0 = cfg.neutral(model)
    kin = dyn.forward_kinematics(model, q0)
    com = np.array([kin.p[b.index] + kin.R[b.index] @ b.com for b in model.bodies])
    ghat = g / np.linalg.norm(g)
    tau = dyn.gravity_torques(model, q0)
    scale = _scale(model, q0)
    reach = scale / (model.total_mass * np.linalg.norm(g))
    joints, worst = [], 0.0
    for b in model.bodies:
        sub = model.subtree(b.index)
        m = np.array([model.bodies[i].mass for i in sub])
        c = (m[:, None] * com[sub]).sum(axis=0) / m.sum()
        off = c - kin.p[b.index]
        if np.linalg.norm(off - (off @ ghat) * ghat) > 1e-12 * reach:
            continue
        # only the rotational part of the joint can be load-free: its moment arm is zero
        S = b.joint.motion_subspace()
        rot = np.linalg.norm(S[3:], axis=0) < 1e-12
        if not rot.any():
            continue
        joints.append(b.joint.name)
        worst = max(worst, float(np.abs(tau[b.iv][rot]).max()) / scale)
    if not joints:
        return skipped(name, title, "no joint has its load on its gravity line at q = neutral")
    return CheckResult(name, worst <= STATIC_TOL, worst, STATIC_TOL,
                       f"q = neutral; load hangs on the gravity line of {', '.join(joints)}",
                       title)
