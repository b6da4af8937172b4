"""Between the public functions and the kernels: lazy loading, the general path, errors.

A single state of float64 arrays goes straight to the kernel's compiled entry
point, past numba's dispatcher (whose type check costs about as much as a small
robot's arithmetic): the wrapper checks ``ndim`` and ``dtype is F8`` of each
array it passes, which is all the entry point relies on (it takes any strides;
see :func:`kanedyn.dynamics.kernels.entry`). Anything else — a batch, a list,
another dtype, an ``out=`` that is not a writeable float64 array — takes the
general path. The kernel itself checks lengths, quaternion norms and the
finiteness of its result and returns a status. Only when either says no does
Python look closer: :func:`general` converts and validates (raising a
:class:`~kanedyn.StateError` that names the input at fault) and :func:`fail`
explains a non-zero status.
"""

from __future__ import annotations

import functools
import os

import numpy as np
from numpy.typing import NDArray

from ..errors import SolverError, StateError
from ..model import Model
from ..model.configuration import as_state
from ..model.joints import QUAT_TOL
from ._state import external_forces


class _Kernels:
    """``K.name`` (or ``K[name]``) is the compiled kernel ``name`` of the entry-point
    table (:data:`kanedyn.dynamics.kernels.ENTRIES`), loaded on first use (so that
    importing kanedyn compiles nothing): the bare entry point of a single-state kernel on
    the packed buffer (see ``kernels.entry``: the caller checks ndim and dtype of what it
    passes), the dispatcher of any other — as the table says (``kernels.load``)."""

    def __getattr__(self, name: str):
        from .kernels import load

        disp = load(name)
        setattr(self, name, disp)
        return disp

    def __getitem__(self, name: str):
        return getattr(self, name)


K = _Kernels()
F8 = np.dtype(np.float64)


def entry_stub(kernel: str, namespace: dict, key: str):
    """A stand-in for the kernel ``kernel`` of the entry-point table, to be bound to the
    global ``key`` of the wrapper's module: its first call loads the kernel (its bare
    entry point, or its dispatcher: ``kernels.load``), rebinds that global to it and
    forwards the call. The hot path then reads a plain module global (~20 ns), where
    ``K.name`` costs ~45 ns more (a class with ``__getattr__`` defeats CPython's
    attribute specialization)."""

    def load(*args):
        from .kernels import load as load_kernel

        f = load_kernel(kernel)
        namespace[key] = f
        return f(*args)

    return load


def c_front(wrapper, entry):
    """``wrapper`` with the C fast path of ``_fastcall.c`` in front of it, for the entry
    point ``entry`` of the table (:class:`kanedyn.dynamics.kernels.Entry`): a call with
    its state arrays (``entry.inputs``), C-contiguous float64 of the model's lengths (and
    ``out=``, and ``f_ext=None`` where the entry takes f_ext) goes from C straight to its
    C entry point (``entry.c``, see ``kernels.c_entry``), the result of the entry's shape;
    every other call, and every call whose kernel says no, reaches ``wrapper`` unchanged.
    Where the extension is not built (no C compiler at install), or is older than the
    table, or ``KANEDYN_NO_C=1`` is set, this is ``wrapper`` itself. Name, docstring and
    signature are the wrapper's."""
    if os.environ.get("KANEDYN_NO_C", "") not in ("", "0") or entry.c is None:
        return wrapper
    try:
        from ._fastcall import Caller
    except ImportError:
        return wrapper

    def loader() -> int:
        from .kernels import c_address

        return c_address(entry)

    from .kernels.entries import DIM_NB, DIM_NV

    # the table's row as _fastcall.c reads it: each state's length ('q': nq, 'v': nv), the
    # result's dimensions (-1: nv, -2: nb)
    inputs = "".join("q" if name == "q" else "v" for name in entry.inputs)
    result = tuple(-1 if d == DIM_NV else -2 if d == DIM_NB else d for d in entry.result)
    try:
        caller = Caller(wrapper, loader, inputs, result, fext=entry.takes_f_ext)
    except TypeError:  # an extension built before it took a row of the table
        return wrapper
    return functools.update_wrapper(caller, wrapper)


def writable(out, ndim: int) -> bool:
    """Whether ``out`` can take a result in place: a writeable float64 ndarray of
    ``ndim`` dimensions (its shape is the kernel's to check)."""
    return (isinstance(out, np.ndarray) and out.ndim == ndim and out.dtype is F8
            and out.flags.writeable)


def batch(kernel, *args) -> None:
    """Run a batched kernel with its tasks handed out one at a time (numba's parallel
    chunk size 1, restored after): on a machine whose cores are shared, the static
    even split would wait for the thread that got the busier core."""
    import numba

    old = numba.set_parallel_chunksize(1)
    try:
        kernel(*args)
    finally:
        numba.set_parallel_chunksize(old)


def general(model: Model, q, speeds: tuple, f_ext=None):
    """Validated, contiguous float64 (N, ·) inputs: ``(Q, [X...], F or None, single)``.

    ``speeds`` is a tuple of (array, name) pairs of speed-sized inputs; a single
    state broadcasts against a batch. Quaternions are checked (all states at
    once) but not normalised here: the kernels normalise them, so a state gives
    the same bits whether it comes alone or in a batch.
    """
    Q, single = as_state(model, q, model.nq, "q")
    check_quaternions(model, Q)
    arrays = [Q]
    for x, name in speeds:
        X, s = as_state(model, x, model.nv, name)
        single = single and s
        arrays.append(X)
    N = max(a.shape[0] for a in arrays)
    for k, a in enumerate(arrays):
        if a.shape[0] not in (1, N):
            raise StateError(f"batch sizes differ: {[a.shape[0] for a in arrays]}")
        if a.shape[0] == 1 and N > 1:
            arrays[k] = np.broadcast_to(a, (N, a.shape[1]))
    # the kernels take writeable C-contiguous float64 (numba types read-only arrays apart)
    arrays = [np.require(x, np.float64, ["C", "W"]) for x in arrays]
    F = None if f_ext is None else np.require(external_forces(model, f_ext, N), np.float64,
                                              ["C", "W"])
    return arrays, F, single


def check_quaternions(model: Model, Q: NDArray) -> None:
    """StateError naming the joint (and the state of a batch) whose quaternion is not unit."""
    for b in model.bodies:
        if not b.joint.has_quaternion:
            continue
        qs = Q[:, b.iq][:, b.joint.quaternion]
        n = np.linalg.norm(qs, axis=1)
        bad = np.flatnonzero(~(np.abs(n - 1.0) <= QUAT_TOL))
        if bad.size:
            k = int(bad[0])
            where = f" (state {k} of the batch)" if Q.shape[0] > 1 else ""
            raise StateError(
                f"joint {b.joint.name!r}: quaternion {qs[k]} has norm {n[k]:.6g}, "
                f"not 1 (tolerance {QUAT_TOL}){where}; normalise it or integrate with "
                "integrate_configuration"
            )


def batch_result(out, shape: tuple, *inputs) -> NDArray:
    """The array a batched kernel writes into: the caller's ``out`` itself when it is a
    writeable C-contiguous float64 array of exactly that shape that overlaps no input
    (then :func:`store` has nothing to copy, and a reused ``out`` costs no fresh pages),
    otherwise a new array."""
    if (writable(out, len(shape)) and out.shape == shape and out.flags.c_contiguous
            and not any(x is not None and np.may_share_memory(out, x) for x in inputs)):
        return out
    return np.empty(shape)


def store(out: NDArray | None, result: NDArray) -> NDArray:
    """``result``, or ``out`` holding it when the caller passed ``out=``."""
    if out is None or result is out:
        return result
    if (not isinstance(out, np.ndarray) or out.shape != result.shape
            or out.dtype != np.float64 or not out.flags.writeable):
        raise StateError(f"out= must be a writeable float64 array of shape {result.shape}; "
                         f"got {getattr(out, 'dtype', type(out).__name__)} "
                         f"{getattr(out, 'shape', '')}"
                         + ("" if getattr(getattr(out, "flags", None), "writeable", True)
                            else " (read-only)"))
    out[...] = result
    return out


def singular_error(model: Model, joint: str, what: str, where: str = "") -> SolverError:
    """The SolverError of an algorithm that needs M(q)⁻¹ on a model where ``joint`` moves
    no inertia."""
    from ..model.model import singular_joints

    try:
        others = [n for n in singular_joints(model) if n != joint]
    except Exception:  # naming the others is a courtesy; never hide the error itself
        others = []
    more = f" (so do {others})" if others else ""
    return SolverError(
        f"{what}: joint {joint!r} moves no inertia{where}{more}: the bodies it carries are "
        "massless or their mass lies on its axis, so M(q) is singular and has no inverse; "
        f"give it a rotor inertia (e.g. kd.load_urdf(..., armature={{{joint!r}: 1e-4}})) "
        "or its bodies mass")


def fail(model: Model, status: NDArray | int, what: str, q, speeds: tuple, f_ext=None):
    """Raise the StateError that explains a non-zero kernel status (a SolverError for a
    joint that moves no inertia, where ABA would divide by zero)."""
    from .kernels import BAD_SHAPE, NOT_FINITE, SINGULAR

    st = np.atleast_1d(np.asarray(status))
    k = int(np.flatnonzero(st)[0])
    s = int(st[k])
    # the general checks name a wrong shape, a NaN input or a bad quaternion precisely
    (Q, *_), F, single = general(model, q, speeds, f_ext)
    where = "" if single else f" (state {k} of the batch)"
    if s > 0:
        j = model.bodies[s - 1].joint
        n = np.linalg.norm(Q[k, model.bodies[s - 1].iq][-4:])
        raise StateError(f"joint {j.name!r}: quaternion has norm {n:.6g}, not 1{where}")
    if s == BAD_SHAPE:
        raise StateError(f"{what}: an input or out= has the wrong shape{where}")
    if s <= SINGULAR:
        raise singular_error(model, model.bodies[SINGULAR - s].joint.name, what, where)
    assert s == NOT_FINITE
    raise StateError(f"{what}: the result is not finite for finite input{where} — "
                     "the state is far outside the model's range (overflow)")
