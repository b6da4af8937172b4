"""Functions of the configuration manifold: neutral q, q̇ = W(q) v, integration on the manifold.

Each accepts one state or a batch with a leading axis.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import StateError
from .model import Model


def as_state(model: Model, x: ArrayLike, n: int, what: str) -> tuple[NDArray, bool]:
    """``x`` as a float array of shape (N, n); also whether it was a single state."""
    try:
        raw = np.asarray(x)
    except ValueError:  # a ragged nesting of lists
        raise StateError(f"{what} must have shape ({n},) or (N, {n}); its rows differ "
                         "in length") from None
    if raw.dtype.kind not in "biuf" and not (
            raw.dtype.kind == "O" and all(isinstance(e, (int, float, np.integer, np.floating))
                                          for e in raw.flat)):
        got = {"c": "complex numbers", "U": "strings", "S": "bytes"}.get(
            raw.dtype.kind, f"entries of type {raw.dtype}")
        raise StateError(f"{what} must hold real numbers; got {got}")
    a = raw.astype(float, copy=False)
    if a.ndim == 1:
        single = True
        a = a[None, :]
    elif a.ndim == 2:
        single = False
    else:
        raise StateError(f"{what} must have shape ({n},) or (N, {n}); got {a.shape}")
    if a.shape[1] != n:
        raise StateError(
            f"{what} has {a.shape[1]} entries but model {model.name!r} needs {n}"
        )
    if not np.all(np.isfinite(a)):
        raise StateError(f"{what} contains NaN or infinity")
    return a, single


def check_configuration(model: Model, q: ArrayLike) -> tuple[NDArray, bool]:
    """Validated (N, nq) configurations, quaternions checked and normalised."""
    Q, single = as_state(model, q, model.nq, "q")
    if model.has_quaternions:
        Q = Q.copy()
        for b in model.bodies:
            if b.joint.nq != b.joint.nv:
                for k in range(Q.shape[0]):
                    Q[k, b.iq] = b.joint.check(Q[k, b.iq])
    return Q, single


def neutral(model: Model) -> NDArray:
    """The zero configuration (unit quaternions, all other coordinates 0)."""
    return np.concatenate([b.joint.neutral() for b in model.bodies])


def random_configuration(model: Model, rng: np.random.Generator | int | None = None,
                         scale: float = 1.0) -> NDArray:
    """A random valid configuration: angles and positions ~ U(-scale, scale), random
    unit quaternions (uniform on SO(3))."""
    rng = np.random.default_rng(rng)
    q = np.empty(model.nq)
    for b in model.bodies:
        q[b.iq] = b.joint.random_configuration(rng, scale)
    return q


def _joint_by_joint(model: Model, q: ArrayLike, v: ArrayLike, width: int, fn) -> NDArray:
    """out[k, joint part] = fn(joint, q_j, v_j) over a batch, with the checks of q and v."""
    Q, single = check_configuration(model, q)
    V, _ = as_state(model, v, model.nv, "v")
    if V.shape[0] != Q.shape[0]:
        raise StateError(f"q has {Q.shape[0]} states but v has {V.shape[0]}")
    out = np.empty((Q.shape[0], width))
    for k in range(Q.shape[0]):
        for b in model.bodies:
            out[k, b.iq] = fn(b.joint, Q[k, b.iq], V[k, b.iv])
    return out[0] if single else out


def q_dot(model: Model, q: ArrayLike, v: ArrayLike) -> NDArray:
    """``q̇ = W(q) v``, joint by joint (quaternion kinematics for spherical and free joints)."""
    return _joint_by_joint(model, q, v, model.nq, lambda j, qj, vj: j.kinematic_map(qj) @ vj)


def integrate_configuration(model: Model, q: ArrayLike, v: ArrayLike, dt: float) -> NDArray:
    """The configuration reached from q by moving with constant speeds v for time dt.

    Exact on each joint's manifold: the exponential map of SO(3) for spherical
    joints, of SE(3) for free joints (body twist held constant), of SE(2) for
    planar ones, ``q + dt v`` for the rest. Quaternions stay unit.
    """
    return _joint_by_joint(model, q, v, model.nq, lambda j, qj, vj: j.integrate(qj, vj, dt))


def difference(model: Model, q0: ArrayLike, q1: ArrayLike) -> NDArray:
    """The speeds v with ``integrate_configuration(model, q0, v, 1) == q1``."""
    Q0, single = check_configuration(model, q0)
    Q1, _ = check_configuration(model, q1)
    out = np.empty((Q0.shape[0], model.nv))
    for k in range(Q0.shape[0]):
        for b in model.bodies:
            out[k, b.iv] = b.joint.difference(Q0[k, b.iq], Q1[k, b.iq])
    return out[0] if single else out
