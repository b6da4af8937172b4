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

A single state of C-contiguous float64 arrays, on a frame already used once with the
model (its array cached on the model, :class:`_Frames`), goes from C straight to the
kernel (``FrameCaller`` of ``_fastcall.c``, set up by :func:`_c_front`); every other
call reaches the Python function behind it (``kd.frame_jacobian.__wrapped__``), with
the same bits and the same errors.
"""

from __future__ import annotations

import functools
import inspect
import os

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import KanedynError
from ..model import Model
from ._dispatch import F8, SMALL_BATCH, batch, fail, general
from .data import FRAMES, Data, _ident, data_of
from .flat import flatten
from .frames_kernel import ACC, CLASSICAL, DJAC, JAC, POSE, VEL, frame_params

REFERENCES = ("local", "local_world_aligned", "world")
_CODES = {r: k << 6 for k, r in enumerate(REFERENCES)}  # op = want | ref << 6
# the op of each call and reference, one dict lookup on the fast path
_OPS = {w: {r: w | c for r, c in _CODES.items()} for w in (VEL, ACC, ACC | CLASSICAL, JAC, DJAC)}
_VEL_OPS, _ACC_OPS, _CACC_OPS, _JAC_OPS, _DJAC_OPS = (_OPS[w] for w in (
    VEL, ACC, ACC | CLASSICAL, JAC, DJAC))
_ND, _empty = np.ndarray, np.empty  # (module globals: no attribute lookup per call)
ATTR = FRAMES  # the Model's attribute holding its owner thread's frame arrays (data.py)
_NO_J = np.empty((1, 1))
_NO_J3 = np.empty((1, 1, 1))


def _load(*args):
    """The stand-in of ``_frame_f`` until its kernel is loaded: on a cold cache
    (:mod:`.first_calls`) the status :data:`PENDING` (the fast paths then take
    :func:`_general`, which answers by :mod:`.frames_reference`), else the kernel."""
    global _frame_f
    from .frames_kernel import entry

    if not _ready(_SINGLE):
        return PENDING
    _frame_f = entry("frame_f")
    return _frame_f(*args)


#: the status of ``_frame_f``'s stand-in while the kernel compiles (no kernel's status)
PENDING = 1 << 60
# first_calls jobs: the single-state kernel, its C entry point, the batched kernel
_SINGLE, _C, _BATCH = (f"call:{__name__}:{f}" for f in ("ready_single", "ready_c",
                                                          "ready_batch"))


def ready_single() -> None:
    from .frames_kernel import entry

    entry("frame_f")


def ready_c() -> None:
    from .frames_kernel import c_entry

    c_entry("frame_c")


def ready_batch() -> None:
    from .frames_kernel import ready

    ready("frame_batch")


def _in_cache(job: str) -> bool:
    """Whether the frame kernel of ``job`` is compiled here or in numba's disk cache."""
    from . import frames_kernel as fk
    from .first_calls import compiled_or_cached
    from .kernels.entries import c_in_cache

    def kernel_in_cache(name):
        return compiled_or_cached(getattr(fk, name), fk.SIGNATURES[name])

    if job == _C:
        from numba import types

        ptr = types.CPointer(types.float64)
        return c_in_cache(fk._C_MADE, "frame_c", fk.frame_c, kernel_in_cache, "frame_f",
                          (ptr, ptr, ptr, ptr, types.int64, ptr, ptr))
    return kernel_in_cache("frame_f" if job == _SINGLE else "frame_batch")


def _ready(job: str, request: bool = True) -> bool:
    from . import first_calls

    return first_calls.available(job, priority=0 if job != _BATCH else 1, request=request,
                                 cached=lambda: _in_cache(job),
                                 ready=lambda: first_calls.make(job))


def _by_reference(model: Model, q, v, a, frame, op: int, res, J) -> None:
    """``res`` (and ``J``) of one state as the kernel writes them, by
    :mod:`.frames_reference` (a first call on a cold cache, :mod:`.first_calls`)."""
    from . import frames_reference as ref

    want, reference = op & 63, REFERENCES[op >> 6]
    if want & POSE:
        R, p = ref.frame_placement(model, q, frame)
        res[:9], res[9:12] = R.ravel(), p
    elif want & VEL:
        res[:6] = ref.frame_velocity(model, q, v, frame, reference)
    elif want & (ACC | CLASSICAL):
        res[:6] = ref.frame_acceleration(model, q, v, a, frame, reference,
                                         bool(want & CLASSICAL))
    if want & JAC:
        J[:] = ref.frame_jacobian(model, q, frame, reference)
    elif want & DJAC:
        J[:] = ref.frame_jacobian_time_variation(model, q, v, frame, reference)


_frame_f = _load


def _resolve(model: Model, frame, data: Data | None = None) -> tuple[NDArray, tuple, int]:
    """(P, (6, nv), owner) of ``frame`` in ``data`` (default: the calling thread's), made
    and cached there on first use (ModelError listing the frames if there is none)."""
    fm = flatten(model)  # (ModelError if model is not a Model)
    d = data_of(model, data)
    c = d.frames
    try:
        hit = c.get(frame)
    except TypeError:  # unhashable: not a name
        hit = None
    if hit is None:
        fr = model.frame(frame)
        hit = (frame_params(fm.data, fr.body, fr.placement.E, fr.placement.r), (6, fm.nv),
               d.owner)
        c[frame] = hit
    return hit


def _reference(reference: str) -> int:
    try:
        return _CODES[reference]
    except (KeyError, TypeError):
        raise KanedynError(f"unknown reference {reference!r}; choose one of {REFERENCES}") \
            from None


def _general(model: Model, q, v, a, frame, want: int, reference, what: str,
             data: Data | None = None):
    """Every call the fast paths do not take: another thread's or a given Data,
    validation, batches, errors. Returns (res (k,) or (N, k), J or J̇, single)."""
    P, (_, nv), _ = _resolve(model, frame, data)
    op = want | _reference(reference)
    use_v = bool(want & (VEL | ACC | CLASSICAL | DJAC))
    use_a = bool(want & (ACC | CLASSICAL))
    speeds = ((v, "v"),) * use_v + ((a, "a"),) * use_a
    (Q, *X), _, single = general(model, q, speeds)
    N = Q.shape[0]
    V = X[0] if use_v else Q
    A = X[1] if use_a else Q
    k = 12 if want & POSE else 6
    res = np.empty((N, k))
    J = np.empty((N, 6, nv)) if want & (JAC | DJAC) else _NO_J3
    status = np.zeros(N, dtype=np.int64)
    if N == 1 or not _ready(_BATCH, request=N > SMALL_BATCH):
        # one state (first call, a list, another dtype: no batch kernel to compile), or a
        # batch while its kernel is not there (first_calls): state by state
        for k in range(N):
            status[k] = _frame_f(P, Q[k], V[k], A[k], op, res[k], J[k % J.shape[0]])
            if status[k] == PENDING:
                status[k] = 0
                q_k = None if V is Q else V[k]
                _by_reference(model, Q[k], q_k, None if A is Q else A[k], frame, op, res[k],
                              J[k % J.shape[0]])
    else:
        from .frames_kernel import ready

        batch(ready("frame_batch"), P, Q, V, A, op, res, J, status)
    if status.any():
        fail(model, status, what, q, speeds)  # (names the input, and the state of a batch)
    if single:
        return res[0], J[0], True
    return res, J, False


def frame_placement(model: Model, q: ArrayLike, frame: str | int, *,
                    data: Data | None = None) -> tuple[NDArray, NDArray]:
    """Pose of ``frame`` in the world: its axes R (3x3, columns in world coordinates) and
    origin p, ``R_F = R_b R_bF``, ``p_F = p_b + R_b p_bF`` with (R_bF, p_bF) its placement
    on body b. A batch of configurations gives R (N, 3, 3) and p (N, 3)."""
    try:
        P, shape, owner = getattr(model, ATTR)[frame]
    except (AttributeError, KeyError, TypeError, ValueError):
        pass
    else:
        if data is None and owner == _ident() and type(q) is _ND and q.ndim == 1 \
                and q.dtype is F8:
            res = _empty(12)
            if not _frame_f(P, q, q, q, POSE, res, _NO_J):
                return res[:9].reshape(3, 3), res[9:]
    res, _, single = _general(model, q, None, None, frame, POSE, "local",
                              "frame_placement", data)
    if single:
        return res[:9].reshape(3, 3), res[9:12]
    return res[:, :9].reshape(-1, 3, 3), res[:, 9:12]


def frame_velocity(model: Model, q: ArrayLike, v: ArrayLike, frame: str | int,
                   reference: str = "local", *, data: Data | None = None) -> NDArray:
    """Spatial velocity ``[ω; v]`` of ``frame`` in ``reference`` (module doc):
    ``v_F = F_X_b v_b`` in F's coordinates (Featherstone 2008, eq. 2.20), then moved.
    Equals ``frame_jacobian(model, q, frame, reference) @ v``."""
    try:
        P, shape, owner = getattr(model, ATTR)[frame]
        op = _VEL_OPS[reference]
    except (AttributeError, KeyError, TypeError, ValueError):
        pass
    else:
        if (data is None and owner == _ident() and type(q) is _ND and q.ndim == 1
                and q.dtype is F8 and type(v) is _ND and v.ndim == 1 and v.dtype is F8):
            res = _empty(6)
            if not _frame_f(P, q, v, q, op, res, _NO_J):
                return res
    return _general(model, q, v, None, frame, VEL, reference, "frame_velocity", data)[0]


def frame_acceleration(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike,
                       frame: str | int, reference: str = "local",
                       classical: bool = True, *, data: Data | None = None) -> NDArray:
    """Acceleration ``[ω̇; a]`` of ``frame`` at the state (q, v, v̇ = a), gravity left out.

    Spatial (``classical=False``): ``a_F = F_X_b a_b`` with
    ``a_i = X_up[i] a_p + S_i a_i + v_i × S_i v_i`` (Featherstone 2008, eq. 5.7), moved to
    ``reference``; classical (default): its linear part plus ``ω × v`` (eq. 2.46), the
    acceleration of F's origin for ``local`` and ``local_world_aligned``."""
    try:
        P, shape, owner = getattr(model, ATTR)[frame]
        op = (_CACC_OPS if classical else _ACC_OPS)[reference]
    except (AttributeError, KeyError, TypeError, ValueError):
        pass
    else:
        if (data is None and owner == _ident() and type(q) is _ND and q.ndim == 1
                and q.dtype is F8 and type(v) is _ND and v.ndim == 1 and v.dtype is F8
                and type(a) is _ND and a.ndim == 1 and a.dtype is F8):
            res = _empty(6)
            if not _frame_f(P, q, v, a, op, res, _NO_J):
                return res
    want = ACC | CLASSICAL if classical else ACC
    return _general(model, q, v, a, frame, want, reference, "frame_acceleration", data)[0]


def frame_jacobian(model: Model, q: ArrayLike, frame: str | int,
                   reference: str = "local", *, data: Data | None = None) -> NDArray:
    """The 6 x nv Jacobian of ``frame``, rows ``[ω; v]`` in ``reference``: the velocity of
    the frame is ``J v``. Column c of joint j on the frame's support is ``X S_j[:, c]``,
    S_j carried from body j to the reference (Featherstone 2008, eq. 3.34 / §8.1)."""
    try:
        P, shape, owner = getattr(model, ATTR)[frame]
        op = _JAC_OPS[reference]
    except (AttributeError, KeyError, TypeError, ValueError):
        pass
    else:
        if data is None and owner == _ident() and type(q) is _ND and q.ndim == 1 \
                and q.dtype is F8:
            J = _empty(shape)
            if not _frame_f(P, q, q, q, op, q, J):
                return J
    return _general(model, q, None, None, frame, JAC, reference, "frame_jacobian", data)[1]


def frame_jacobian_time_variation(model: Model, q: ArrayLike, v: ArrayLike, frame: str | int,
                                  reference: str = "local", *,
                                  data: Data | None = None) -> NDArray:
    """``J̇ = d/dt J(q(t))`` of :func:`frame_jacobian` along the motion with speeds v, in
    the same reference, so that ``J v̇ + J̇ v`` is the spatial (local, world) or the
    classical (local_world_aligned) acceleration of the frame (module doc). In the world
    the columns of joint j change as ``v_j × (0_X_j S_j)`` (Featherstone 2008, §3.2)."""
    try:
        P, shape, owner = getattr(model, ATTR)[frame]
        op = _DJAC_OPS[reference]
    except (AttributeError, KeyError, TypeError, ValueError):
        pass
    else:
        if (data is None and owner == _ident() and type(q) is _ND and q.ndim == 1
                and q.dtype is F8 and type(v) is _ND and v.ndim == 1 and v.dtype is F8):
            dJ = _empty(shape)
            if not _frame_f(P, q, v, q, op, q, dJ):
                return dJ
    return _general(model, q, v, None, frame, DJAC, reference,
                    "frame_jacobian_time_variation", data)[1]


# --- the C fast path in front of each function ------------------------------------

#: what a FrameCaller returns (_fastcall.c RESULT_*)
_POSE_RESULT, _VECTOR_RESULT, _MATRIX_RESULT = 0, 1, 2


def _c_front(wrapper, nin: int, result: int, ops: dict, spatial_ops: dict | None = None):
    """``wrapper`` with the C fast path of ``_fastcall.c`` (``FrameCaller``) in front: a
    call with ``nin`` C-contiguous float64 states, a frame already cached on the model
    (:func:`_resolve`) and a reference of ``ops`` (``reference -> op`` of the kernel;
    ``spatial_ops`` for ``classical=False``) goes from C to ``frames_kernel.frame_c``;
    every other call, and every call whose kernel says no, reaches ``wrapper``
    unchanged. The parameters after the states and the default reference are read from
    ``wrapper``'s signature. ``wrapper`` itself without the extension (or one built
    before it had FrameCaller) or with ``KANEDYN_NO_C=1``."""
    if os.environ.get("KANEDYN_NO_C", "") not in ("", "0"):
        return wrapper
    try:
        from ._fastcall import FrameCaller
    except ImportError:
        return wrapper
    # (data= is keyword-only: a call that gives it reaches the wrapper, FrameCaller does
    # not know it)
    sig = [p for p in list(inspect.signature(wrapper).parameters.values())[1 + nin:]
           if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    params = tuple(p.name for p in sig)
    reference = sig[1].default if len(sig) > 1 else "local"
    assert params[:1] == ("frame",) and params[1:2] in ((), ("reference",))
    assert params[2:] in ((), ("classical",)) and (len(sig) < 3 or sig[2].default is True)

    def loader() -> int | None:
        from . import frames_kernel

        if not _ready(_C):
            return None  # (_fastcall.c: the wrapper answers, and the next call asks again)
        return frames_kernel.c_entry("frame_c")

    try:
        caller = FrameCaller(wrapper, loader, nin, result, params, reference, ops, spatial_ops,
                             retry=True)
    except TypeError:  # an extension built before it took retry
        return wrapper
    return functools.update_wrapper(caller, wrapper)


frame_placement = _c_front(frame_placement, 1, _POSE_RESULT, {"local": POSE})
frame_velocity = _c_front(frame_velocity, 2, _VECTOR_RESULT, _VEL_OPS)
frame_acceleration = _c_front(frame_acceleration, 3, _VECTOR_RESULT, _CACC_OPS, _ACC_OPS)
frame_jacobian = _c_front(frame_jacobian, 1, _MATRIX_RESULT, _JAC_OPS)
frame_jacobian_time_variation = _c_front(frame_jacobian_time_variation, 2, _MATRIX_RESULT,
                                         _DJAC_OPS)
