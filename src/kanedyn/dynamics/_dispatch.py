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
import inspect
import os

import numpy as np
from numpy.typing import NDArray

from ..errors import SolverError, StateError
from ..model import Model
from ..model.configuration import as_state
from ..model.joints import QUAT_TOL
from . import first_calls
from ._state import external_forces
from .data import _ident, buffer_of
from .flat import fast, flatten


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


class Pending(TypeError):
    """Raised by a stand-in whose kernel is still compiling (:mod:`.first_calls`): the
    fast path takes it for "not arrays" and hands the call to the general path, which
    answers it by the reference."""


def kernel_ready(kernel: str, priority: int = 0) -> bool:
    """:func:`.first_calls.available` of kernel ``kernel`` of the entry-point table."""
    return first_calls.available(f"kernel:{kernel}", priority)


def entry_stub(kernel: str, namespace: dict, key: str, tiered: bool = False):
    """A stand-in for the kernel ``kernel`` of the entry-point table, to be bound to the
    global ``key`` of the wrapper's module: its first call loads the kernel (its bare
    entry point, or its dispatcher: ``kernels.load``), rebinds that global to it and
    forwards the call. The hot path then reads a plain module global (~20 ns), where
    ``K.name`` costs ~45 ns more (a class with ``__getattr__`` defeats CPython's
    attribute specialization). ``tiered``: while the kernel is not compiled (and not in
    numba's disk cache) it raises :class:`Pending` instead (:mod:`.first_calls`)."""

    def load(*args):
        from .kernels import load as load_kernel

        if tiered and not kernel_ready(kernel):
            raise Pending(kernel)
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
    if entry.c is None:
        return wrapper

    tiered = entry.name in first_calls.REFERENCE

    def loader() -> int | None:
        from .kernels import c_address

        if tiered and not first_calls.available(f"c:{entry.c}"):
            return None  # (_fastcall.c: the wrapper answers, and the next call asks again)
        return c_address(entry)

    from .kernels.entries import DIM_NB, DIM_NV

    # the table's row as _fastcall.c reads it: each state's length ('q': nq, 'v': nv), the
    # result's dimensions (-1: nv, -2: nb)
    inputs = "".join("q" if name == "q" else "v" for name in entry.inputs)
    result = tuple(-1 if d == DIM_NV else -2 if d == DIM_NB else d for d in entry.result)
    return c_front_of(wrapper, loader, inputs, result, fext=entry.takes_f_ext)


def c_front_of(wrapper, loader, inputs: str, result: tuple[int, ...], fext: bool = False):
    """:func:`c_front` for a computation outside the entry-point table (the joint torque
    regressor of ``identify``): ``loader()`` gives the address of its C entry point
    (``int64 f(double *buf, double *x..., double *out)`` on the packed buffer),
    ``inputs`` one character per state array ('q': nq entries, 'v': nv), ``result`` the
    result's dimensions as ``_fastcall.c`` reads them (a size, or -1: nv, -2: nb, -3:
    10 nb). ``wrapper`` itself where the extension is not built, is older than these
    arguments, or ``KANEDYN_NO_C=1`` is set."""
    if os.environ.get("KANEDYN_NO_C", "") not in ("", "0"):
        return wrapper
    try:
        from ._fastcall import Caller
    except ImportError:
        return wrapper
    try:
        caller = Caller(wrapper, loader, inputs, result, fext=fext, retry=True)
    except (TypeError, ValueError):  # an extension built before it took these arguments
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


def run_batch(entry, model: Model, q, speeds: tuple, f_ext=None, out=None, *,
              what: str | None = None, options: tuple = (), pack=None, fail=fail):
    """The general path of ``entry``'s wrapper (any array-like input, one state or a
    batch): validate (:func:`general`), run its batched kernel, explain a status, store
    into ``out``. The batched kernel takes ``(flat model, Q, *X[, F, has F], *options,
    result, status)``; ``pack(N, fm, X, F, has_F)``, where given, returns what stands
    between Q and the options instead (RNEA's kernel, shared by three entries, takes
    flags there). ``fail``: the status explainer (:func:`fail`, or the wrapper's own)."""
    what = what or entry.name
    fm = flatten(model)
    (Q, *X), F, single = general(model, q, speeds, f_ext)
    N = Q.shape[0]
    res = batch_result(None if single else out, (N, *entry.result_shape(fm.nv, fm.nb)),
                       Q, *X, F)
    status = np.zeros(N, dtype=np.int64)
    Fk = F if F is not None else np.zeros((1, fm.nb, 6))
    if pack is not None:
        args = pack(N, fm, X, Fk, F is not None)
    else:
        args = (*X, Fk, F is not None) if entry.takes_f_ext else X
    if (entry.name in first_calls.REFERENCE and not batch_ready(entry, N)
            and by_state(entry, model, Q, X, F, res)):
        return store(out, res[0] if single else res)
    batch(K[entry.batch], fm.data, Q, *args, *options, res, status)
    if status.any():
        fail(model, status, what, Q, tuple((x, n) for x, (_, n) in zip(X, speeds, strict=True)),
             F)
    return store(out, res[0] if single else res)


#: a batch of more states than this asks for its batched kernel on a cold cache; a
#: smaller one is answered state by state until that kernel is compiled for another
SMALL_BATCH = 64


def batch_ready(entry, N: int) -> bool:
    """Whether the batched kernel of ``entry`` is to run a batch of N states now
    (:mod:`.first_calls`): yes when it is compiled or loads from the disk cache; on a
    cold cache a batch of more than :data:`SMALL_BATCH` states has it compiled in the
    background (and is answered state by state meanwhile), a smaller one does without."""
    return first_calls.available(f"kernel:{entry.batch}", priority=1,
                                 request=N > SMALL_BATCH)


def by_state(entry, model: Model, Q, X, F, res) -> bool:
    """``res`` state by state while the batched kernel is not there (:func:`batch_ready`):
    by the single-state kernel where it is ready, else by the reference
    (:func:`.first_calls.reference`; the single-state kernel is then asked for). False
    when a state has a status or a result that is not finite: the caller then runs the
    batched kernel, whose status explains it."""
    kernel = entry.single if F is None else entry.single_fext
    if not kernel_ready(kernel):
        return first_calls.reference(entry.name, model, Q, X, F, res)
    f, buf = K[kernel], buffer_of(model, None)
    for k in range(Q.shape[0]):
        fk = () if F is None else (F[k],)
        if f(buf, Q[k], *(x[k] for x in X), *fk, res[k]):
            return False
    return True


def fast_path(entry, *, fail=fail, view=None, options: dict | None = None):
    """Decorator: the public function of the entry point ``entry`` (a row of
    :data:`kanedyn.dynamics.kernels.ENTRIES`) from its general path.

    The decorated function (signature, docstring, body: the general path, which any
    call the fast path does not take reaches with its arguments unchanged) is replaced
    by one of the same signature that first tries one state of float64 arrays on the
    kernel's bare entry point (``entry.single``, ``entry.single_fext`` with an ``f_ext``
    array; see ``kernels.entry``): it reads the model's hot tuple (``flat._Hot``), takes
    the calling thread's buffer or that of ``data=`` (``data.py``), checks ``ndim`` and
    ``dtype is F8`` of each array it passes and writes into a fresh result or into a
    writeable ``out=`` of the result's ndim. The function is written out as source for
    the entry's inputs and compiled once, at import: a wrapper written by hand would
    spend the same steps, a generic one (``*args``, loops over the inputs) ~100 ns more
    per call, which is a small robot's whole arithmetic. ``fail``: the status explainer
    (:func:`fail`, or the wrapper's own); ``view``: an index of the kernel's result that
    is the function's (``centroidal_momentum``: the first half); ``options``: parameter
    name -> the function that makes the kernel's integer option of it."""

    def make(general_path):
        return _make_fast_path(entry, general_path, fail, view, options or {})

    return make


def _shape_expr(entry) -> str:
    from .kernels.entries import DIM_NB, DIM_NV

    dims = ["nv" if d == DIM_NV else "model.nb" if d == DIM_NB else str(d)
            for d in entry.result]
    if dims == ["nv", "nv"]:
        return "shape"  # the hot tuple's (nv, nv): no tuple built per call
    return dims[0] if len(dims) == 1 else f"({', '.join(dims)})"


def _make_fast_path(entry, general_path, fail_, view, options: dict):
    sig = inspect.signature(general_path)
    params = list(sig.parameters)
    what = general_path.__name__
    names = entry.inputs
    assert params[1:1 + len(names)] == list(names) and "data" in params, (what, params)
    has_out, has_fext = "out" in params, entry.takes_f_ext
    assert has_fext == ("f_ext" in params) and set(options) == set(entry.options), what
    ns = {"F8": F8, "_empty": np.empty, "_fast": fast, "_ident": _ident,
          "_buffer_of": buffer_of, "_writable": writable, "_fail": fail_,
          "_general": general_path, "_view": view}
    tiered = entry.name in first_calls.REFERENCE
    ns["_single"] = entry_stub(entry.single, ns, "_single", tiered)
    if has_fext:
        ns["_single_fext"] = entry_stub(entry.single_fext, ns, "_single_fext", tiered)
    for k, o in enumerate(entry.options):
        ns[f"_option{k}"] = options[o]
    # the header: the parameters as written, with defaults by name (set below)
    head = []
    for p in sig.parameters.values():
        if p.kind is p.KEYWORD_ONLY and "*" not in head:
            head.append("*")
        head.append(p.name if p.default is p.empty else f"{p.name}=None")
    x = ", ".join(names)
    opts = "".join(f"_{o}, " for o in entry.options)
    speeds = "(" + "".join(f"({n}, {n!r}), " for n in names[1:]) + ")"
    checks = " and ".join([f"{n}.ndim == 1" for n in names] + [f"{n}.dtype is F8" for n in names])
    shape, ndim = _shape_expr(entry), len(entry.result)
    ret = "res" if view is None else "res[_view]"
    call_f = f"_single_fext(buf, {x}, f_ext, {opts}res)" if has_fext else ""
    lines = [f"def {what}({', '.join(head)}):"]
    lines += [f"    _{o} = _option{k}({o})" for k, o in enumerate(entry.options)]
    lines += [
        "    try:",
        "        buf, nv, shape, owner, _ = model._kd_hot  # (flat._Hot)",
        "    except (AttributeError, ValueError):",
        "        buf, nv, shape, owner, _ = _fast(model)",
        "    if data is not None or owner != _ident():  # (data.py)",
        "        buf = _buffer_of(model, data)",
        "    try:",
        f"        if {checks}:",
        # the common case first, in the fewest steps
        "            if " + " and ".join(["out is None"] * has_out + ["f_ext is None"] * has_fext
                                         or ["True"]) + ":",
        f"                res = _empty({shape})",
        f"                if not (s := _single(buf, {x}, {opts}res)):",
        f"                    return {ret}",
        f"                _fail(model, s, {what!r}, q, {speeds})",
    ]
    if has_out and not has_fext:
        lines += [
            f"            elif _writable(out, {ndim}):",
            f"                if s := _single(buf, {x}, {opts}out):",
            f"                    _fail(model, s, {what!r}, q, {speeds})",
            "                return out",
        ]
    elif has_fext:
        lines += [
            (f"            res = _empty({shape}) if out is None else "
             f"(out if _writable(out, {ndim}) else None)") if has_out
            else f"            res = _empty({shape})",
            "            if res is not None:",
            "                if f_ext is None:",
            f"                    s = _single(buf, {x}, {opts}res)",
            "                elif f_ext.ndim == 2 and f_ext.dtype is F8:",
            f"                    s = {call_f}",
            "                else:",
            "                    s = None",
            "                if s is not None:",
            "                    if s:",
            f"                        _fail(model, s, {what!r}, q, {speeds}, f_ext)",
            f"                    return {ret}",
        ]
    args = ", ".join(p if p in ("model", *names) else f"{p}={p}" for p in params)
    lines += [
        "    except (AttributeError, TypeError):  # not arrays",
        "        pass",
        f"    return _general({args})",
    ]
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<fast path of {general_path.__module__}.{what}>", "exec"), ns)
    f = ns[what]
    f.__defaults__, f.__kwdefaults__ = general_path.__defaults__, general_path.__kwdefaults__
    for attr in ("__module__", "__qualname__", "__doc__", "__annotations__"):
        setattr(f, attr, getattr(general_path, attr))
    f._kd_source = source  # (for reading: what the call runs)
    return f
