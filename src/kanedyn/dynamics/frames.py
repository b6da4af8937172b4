"""Frames: the pose, velocity, acceleration, Jacobian and its time variation of any frame.

A frame is a point of interest with axes, fixed to a body (``model.frames``: merged
fixed links of a URDF — a tool centre point, a sensor, a camera —, frames added
with :meth:`Model.add_frame <kanedyn.model.Model.add_frame>`); a body is a frame
too (its origin and axes), and so is the world (``model.root_name``). Every
quantity here is that of the frame F itself, never of its body's origin.

``reference`` says in which coordinates a spatial motion ``[ω; v]`` of F is given,
exactly as Pinocchio's ``ReferenceFrame``:

- ``"local"`` (``LOCAL``): about F's origin, in F's axes;
- ``"local_world_aligned"`` (``LOCAL_WORLD_ALIGNED``): about F's origin, in world
  axes — v is ṗ_F, the J of robotics texts;
- ``"world"`` (``WORLD``): Plücker coordinates of the world frame: ω, and the
  velocity of the body point passing through the world origin (the same for every
  frame of one body; not about F's origin).

Accelerations: *spatial* (``classical=False``) is Featherstone's, the time
derivative of the spatial velocity field at a fixed point; *classical* is the
acceleration of the body point at the reference's origin — for ``local`` and
``local_world_aligned`` the acceleration p̈_F of F's origin, what differentiating
a position twice gives — ``a_lin + ω × v`` (Featherstone 2008, eq. 2.46); the
angular part is ω̇ in both. Gravity is not included.

The time variation J̇ is ``d/dt J(q(t))`` along the motion with speeds v, in the
same reference, so ``J v̇ + J̇ v = d/dt (J v)``, which is:

- ``"local"``: the *spatial* acceleration in F's coordinates;
- ``"local_world_aligned"``: the *classical* acceleration (ω̇, p̈_F) in world axes;
- ``"world"``: the *spatial* acceleration in world coordinates

— Pinocchio's ``getFrameJacobianTimeVariation`` in each reference (checked in the
tests). The computation is :mod:`.frames_kernel` (numba); the readable definitions
are :mod:`.frames_reference`.
"""

from __future__ import annotations

import weakref

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import KanedynError
from ..model import Model
from ._dispatch import F8, batch, fail, general
from .flat import _CACHE, flatten
from .frames_kernel import (
    ACC,
    CLASSICAL,
    DJAC,
    JAC,
    OUT_A,
    OUT_P,
    OUT_SIZE,
    OUT_V,
    POSE,
    VEL,
    workspace_size,
)

REFERENCES = ("local", "local_world_aligned", "world")

# id(model) -> [workspace of the single-state kernel, {frame: (body, (1, 12) X_F)}];
# the entry is dropped when the Model is collected (as flat._CACHE)
_FRAMES: dict[int, list] = {}
_NO_J = np.empty((1, 1))
_NO_J3 = np.empty((1, 1, 1))


def _load(*args):
    global _frame_f
    from .frames_kernel import entry

    _frame_f = entry("frame_f")
    return _frame_f(*args)


_frame_f = _load


def _resolve(model: Model, frame) -> tuple[int, NDArray, NDArray]:
    """(body, X_F as one (E, r) row, workspace) of ``frame``, cached per model."""
    c = _FRAMES.get(id(model))
    if c is None:
        if not isinstance(model, Model):
            flatten(model)  # the ModelError naming what was passed
        c = [np.empty(workspace_size(model.nb)), {}]
        _FRAMES[id(model)] = c
        weakref.finalize(model, _FRAMES.pop, id(model), None)
    try:
        hit = c[1].get(frame)
    except TypeError:  # unhashable: not a name
        hit = None
    if hit is None:
        fr = model.frame(frame)
        F = np.empty((1, 12))
        F[0, :9] = fr.placement.E.reshape(9)
        F[0, 9:] = fr.placement.r
        hit = (fr.body, F)
        c[1][frame] = hit
    return hit[0], hit[1], c[0]


def _reference(reference: str) -> int:
    try:
        return REFERENCES.index(reference)
    except ValueError:
        raise KanedynError(f"unknown reference {reference!r}; choose one of {REFERENCES}") \
            from None


def _run(model: Model, q, v, a, frame, want: int, ref: int, what: str):
    """(out (24,) or (N, 24), J, dJ, single) of the frame kernel for ``want``."""
    fm = _CACHE.get(id(model)) or flatten(model)
    body, F, ws = _resolve(model, frame)
    use_v = bool(want & (VEL | ACC | CLASSICAL | DJAC))
    use_a = bool(want & (ACC | CLASSICAL))
    nv = fm.nv
    if (type(q) is np.ndarray and q.ndim == 1 and q.dtype is F8
            and (not use_v or (type(v) is np.ndarray and v.ndim == 1 and v.dtype is F8))
            and (not use_a or (type(a) is np.ndarray and a.ndim == 1 and a.dtype is F8))):
        out = np.empty(OUT_SIZE)
        J = np.empty((6, nv)) if want & JAC else _NO_J
        dJ = np.empty((6, nv)) if want & DJAC else _NO_J
        s = _frame_f(fm.data, q, v if use_v else q, a if use_a else q, body, F, want, ref,
                     out, J, dJ, ws)
        if not s:
            return out, J, dJ, True
    speeds = ((v, "v"),) * use_v + ((a, "a"),) * use_a
    (Q, *X), _, single = general(model, q, speeds)
    N = Q.shape[0]
    V = X[0] if use_v else Q
    A = X[1] if use_a else Q
    out = np.empty((N, OUT_SIZE))
    J = np.empty((N, 6, nv)) if want & JAC else _NO_J3
    dJ = np.empty((N, 6, nv)) if want & DJAC else _NO_J3
    status = np.zeros(N, dtype=np.int64)
    from .frames_kernel import ready

    batch(ready("frame_batch"), fm.data, Q, V, A, body, F, want, ref, out, J, dJ, status)
    if status.any():
        fail(model, status, what, Q, tuple(zip(X, ("v", "a")[:len(X)], strict=True)))
    if single:
        return out[0], J[0], dJ[0], True
    return out, J, dJ, False


def frame_placement(model: Model, q: ArrayLike, frame: str | int) -> tuple[NDArray, NDArray]:
    """Pose of ``frame`` in the world: its axes R (3x3, columns in world coordinates) and
    origin p, ``R_F = R_b R_bF``, ``p_F = p_b + R_b p_bF`` with (R_bF, p_bF) its placement
    on body b. A batch of configurations gives R (N, 3, 3) and p (N, 3)."""
    out, _, _, single = _run(model, q, None, None, frame, POSE, 0, "frame_placement")
    if single:
        return out[:9].reshape(3, 3), out[OUT_P:OUT_P + 3]
    return out[:, :9].reshape(-1, 3, 3), out[:, OUT_P:OUT_P + 3]


def frame_velocity(model: Model, q: ArrayLike, v: ArrayLike, frame: str | int,
                   reference: str = "local") -> NDArray:
    """Spatial velocity ``[ω; v]`` of ``frame`` in ``reference`` (module doc):
    ``v_F = F_X_b v_b`` in F's coordinates (Featherstone 2008, eq. 2.20), then moved.
    Equals ``frame_jacobian(model, q, frame, reference) @ v``."""
    out, _, _, single = _run(model, q, v, None, frame, VEL, _reference(reference),
                             "frame_velocity")
    return out[OUT_V:OUT_V + 6] if single else out[:, OUT_V:OUT_V + 6]


def frame_acceleration(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike,
                       frame: str | int, reference: str = "local",
                       classical: bool = True) -> NDArray:
    """Acceleration ``[ω̇; a]`` of ``frame`` at the state (q, v, v̇ = a), gravity left out.

    Spatial (``classical=False``): ``a_F = F_X_b a_b`` with
    ``a_i = X_up[i] a_p + S_i a_i + v_i × S_i v_i`` (Featherstone 2008, eq. 5.7), moved to
    ``reference``; classical (default): its linear part plus ``ω × v`` (eq. 2.46), the
    acceleration of F's origin for ``local`` and ``local_world_aligned``."""
    want = ACC | CLASSICAL if classical else ACC
    out, _, _, single = _run(model, q, v, a, frame, want, _reference(reference),
                             "frame_acceleration")
    return out[OUT_A:OUT_A + 6] if single else out[:, OUT_A:OUT_A + 6]


def frame_jacobian(model: Model, q: ArrayLike, frame: str | int,
                   reference: str = "local") -> NDArray:
    """The 6 x nv Jacobian of ``frame``, rows ``[ω; v]`` in ``reference``: the velocity of
    the frame is ``J v``. Column c of joint j on the frame's support is ``X S_j[:, c]``,
    S_j carried from body j to the reference (Featherstone 2008, eq. 3.34 / §8.1)."""
    _, J, _, _ = _run(model, q, None, None, frame, JAC, _reference(reference),
                      "frame_jacobian")
    return J


def frame_jacobian_time_variation(model: Model, q: ArrayLike, v: ArrayLike, frame: str | int,
                                  reference: str = "local") -> NDArray:
    """``J̇ = d/dt J(q(t))`` of :func:`frame_jacobian` along the motion with speeds v, in
    the same reference, so that ``J v̇ + J̇ v`` is the spatial (local, world) or the
    classical (local_world_aligned) acceleration of the frame (module doc). In the world
    the columns of joint j change as ``v_j × (0_X_j S_j)`` (Featherstone 2008, §3.2)."""
    _, _, dJ, _ = _run(model, q, v, None, frame, DJAC, _reference(reference),
                       "frame_jacobian_time_variation")
    return dJ
