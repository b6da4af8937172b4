"""The entry points of the kernels: one table that declares them, and their loaders.

Each public computation served by a compiled kernel is one :class:`Entry` of
:data:`ENTRIES`: the state arrays it takes after the model (``q`` has the model's nq
entries, every other one nv), its integer options, whether it takes external forces
``f_ext`` (nb x 6, body coordinates), the shape of one state's result, and the
kernels that compute it:

- ``single``: one state on the model's packed buffer (``flat.py``: header, flat model,
  workspace), ``int64 single(buf, *inputs, *options, out)``, a status (0 ok, see
  :mod:`.constants`). It is called as its bare compiled entry point (:func:`entry`),
  past numba's dispatcher: the caller passes float64 arrays of the declared ndim.
  ``single_fext`` is the same with ``f_ext`` before the options. (``packed=False``:
  ``single`` takes the flat model instead, ``int64 single(data, *inputs, *options,
  *outs)``, and is called through its dispatcher.)
- ``batch``: N states (rows), in parallel, a status per state.
- ``c``: the C entry point of ``single`` for ``_fastcall.c`` (:func:`c_entry`), on bare
  pointers: ``int64 c(double *buf, double *x..., double *out)``; None where the C front
  end does not serve the computation.

The wrappers (``dynamics/rnea.py``, ...) and ``_dispatch`` read the kernels' names,
their number of inputs and the result's shape from here (:func:`load` knows from the
table whether a kernel is called bare or through its dispatcher), so a new entry
point is one row of the table, its kernels, and its wrapper.

A kernel is compiled for the one signature of :data:`SIGNATURES` (or of its module's
``SIGNATURES``) on first use: importing kanedyn compiles nothing.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from numba import carray, cfunc, njit, types

from .. import _compiled
from .aba import aba_f
from .crba import crba_f
from .rnea import gravity_f, nle_f, rnea_f

_compiled.key_cache(__name__)  # (see dynamics/_compiled.py)

#: the result's dimensions that are the model's number of speeds and of bodies
DIM_NV = "nv"
DIM_NB = "nb"


@dataclass(frozen=True)
class Entry:
    """One entry point of the kernels (see the module doc)."""

    #: the computation: the public function of that name (``kanedyn.<name>``), or the
    #: function of ``dynamics/`` behind several (``energy``: ``energy.summary``;
    #: ``centroidal_momentum``: ``[h_G, Ȧ_G v]`` for it and ``centroidal_momentum_bias``)
    name: str
    #: the state arrays after the model, in order (q: nq entries; the others: nv)
    inputs: tuple[str, ...]
    #: the shape of one state's result: ints, :data:`DIM_NV` for the model's nv and
    #: :data:`DIM_NB` for its number of bodies (the first output, where there are several)
    result: tuple[int | str, ...]
    #: the single-state kernel
    single: str
    #: the batched kernel
    batch: str
    #: the single-state kernel with f_ext, or None: the computation takes no f_ext
    single_fext: str | None = None
    #: the C entry point of ``single`` for ``_fastcall.c``, or None
    c: str | None = None
    #: integer arguments after the states (a body index, a frame code)
    options: tuple[str, ...] = ()
    #: whether ``single`` takes the packed buffer and is called bare (see module doc)
    packed: bool = True
    #: the module (in kanedyn.dynamics) that holds the kernels
    module: str = "kernels"
    #: the shapes of further outputs after the first (forward kinematics: p, velocity)
    more: tuple[tuple[int | str, ...], ...] = ()

    @property
    def takes_f_ext(self) -> bool:
        return self.single_fext is not None

    def result_shape(self, nv: int, nb: int = -1) -> tuple[int, ...]:
        """The shape of one state's result for a model of ``nv`` speeds and ``nb`` bodies."""
        if DIM_NB in self.result and nb < 0:
            raise ValueError(f"{self.name}: the result's shape {self.result} needs nb")
        return tuple(nv if d == DIM_NV else nb if d == DIM_NB else d for d in self.result)


ENTRIES: dict[str, Entry] = {e.name: e for e in (
    Entry("rnea", ("q", "v", "a"), (DIM_NV,), "rnea_f", "rnea_batch", "rnea_f_fext", "rnea_c"),
    Entry("nonlinear_effects", ("q", "v"), (DIM_NV,), "nle_f", "rnea_batch", c="nle_c"),
    Entry("gravity_torques", ("q",), (DIM_NV,), "gravity_f", "rnea_batch", c="gravity_c"),
    Entry("crba", ("q",), (DIM_NV, DIM_NV), "crba_f", "crba_batch", c="crba_c"),
    Entry("aba", ("q", "v", "tau"), (DIM_NV,), "aba_f", "aba_batch", "aba_f_fext", "aba_c"),
    # poses and velocities (R, p, velocity), a summary [T, V, L (3), P (3), c (3)], a body
    # Jacobian: on the flat model, through the dispatcher
    Entry("forward_kinematics", ("q", "v"), (DIM_NB, 3, 3), "kinematics1", "kinematics_batch",
          packed=False, more=((DIM_NB, 3), (DIM_NB, 6))),
    Entry("energy", ("q", "v"), (11,), "summary1", "summary_batch", packed=False),
    Entry("jacobian", ("q",), (6, DIM_NV), "jacobian1", "jacobian_batch",
          options=("body", "frame"), packed=False),
    Entry("centroidal_momentum_matrix", ("q",), (6, DIM_NV), "ag_f", "ag_batch", c="ag_c",
          module="centroidal_kernel"),
    # [h_G, Ȧ_G v]: centroidal_momentum and centroidal_momentum_bias
    Entry("centroidal_momentum", ("q", "v"), (12,), "cm_f", "cm_batch",
          module="centroidal_kernel"),
    Entry("joint_wrenches", ("q", "v", "a"), (DIM_NB, 6), "jw_f", "jw_batch", "jw_f_fext",
          options=("reference",), module="joint_wrenches_kernel"),
)}

# every kernel the table names: (its entry, whether it is called bare)
_KERNELS: dict[str, tuple[Entry, bool]] = {}
for _e in ENTRIES.values():
    _KERNELS[_e.batch] = (_e, False)
    _KERNELS[_e.single] = (_e, _e.packed)
    if _e.single_fext:
        _KERNELS[_e.single_fext] = (_e, _e.packed)
del _e


def _module(entry: Entry):
    if entry.module == "kernels":
        return importlib.import_module(__name__)
    return importlib.import_module(f"kanedyn.dynamics.{entry.module}")


def load(name: str):
    """Kernel ``name`` of the table, ready to call: the bare entry point of a packed
    single-state kernel (:func:`entry`), the dispatcher of any other (:func:`ready`),
    from the module that holds it."""
    entry_, bare = _KERNELS[name]
    module = _module(entry_)
    return module.entry(name) if bare else module.ready(name)


def c_address(entry_: Entry) -> int:
    """The address of the C entry point of ``entry_`` (its module's ``c_entry``)."""
    if entry_.c is None:
        raise KeyError(f"{entry_.name} has no C entry point")
    return _module(entry_).c_entry(entry_.c)


# --- C entry points: the packed single-state kernels on bare pointers, for _fastcall.c
# Plain functions here, made cfuncs by c_entry() on first use (a cfunc compiles when
# it is made, and importing kanedyn compiles nothing). They live in this file so that
# numba's on-disk cache of them is invalidated with the kernels'. The caller
# (_fastcall.c) has checked that each state array is C-contiguous float64 of the
# model's length, and allocated the result.

@njit(cache=True, forceinline=True)
def buffer_of(bp):
    return carray(bp, (int(bp[3]),))


def rnea_c(bp, qp, vp, ap, taup):
    nv = int(bp[2])
    return rnea_f(buffer_of(bp), carray(qp, (int(bp[1]),)), carray(vp, (nv,)), carray(ap, (nv,)),
                  carray(taup, (nv,)))


def nle_c(bp, qp, vp, taup):
    nv = int(bp[2])
    return nle_f(buffer_of(bp), carray(qp, (int(bp[1]),)), carray(vp, (nv,)), carray(taup, (nv,)))


def gravity_c(bp, qp, taup):
    return gravity_f(buffer_of(bp), carray(qp, (int(bp[1]),)), carray(taup, (int(bp[2]),)))


def crba_c(bp, qp, Mp):
    nv = int(bp[2])
    return crba_f(buffer_of(bp), carray(qp, (int(bp[1]),)), carray(Mp, (nv, nv)))


def aba_c(bp, qp, vp, taup, qddp):
    nv = int(bp[2])
    return aba_f(buffer_of(bp), carray(qp, (int(bp[1]),)), carray(vp, (nv,)), carray(taup, (nv,)),
                 carray(qddp, (nv,)))


_C_MADE: dict = {}
_SHIMS = {"rnea_c": rnea_c, "nle_c": nle_c, "gravity_c": gravity_c, "crba_c": crba_c,
          "aba_c": aba_c}
#: the single-state kernel each C entry point calls
_C_SINGLE = {e.c: e.single for e in ENTRIES.values() if e.c and e.module == "kernels"}


def c_function(made: dict, name: str, shim, ready, single: str, argtypes=None) -> int:
    """The address of the cfunc of ``shim``, made once per ``name`` (kept in ``made``) and
    compiled or loaded from the on-disk cache (numba keys it by ``shim``'s module): ``int64
    f(double *...)``, one pointer per argument of ``shim``, or ``argtypes``.

    The single-state kernel ``single`` it calls is readied first (``ready(single)``:
    compiled for its declared any-strides signature, compilation then disabled), so that
    the cfunc always calls that one specialisation, whatever was called before (and a
    stale disk cache of the module has been dropped first, :mod:`.._compiled`)."""
    f = made.get(name)
    if f is None:
        ready(single)
        f = made[name] = cfunc(c_signature(shim, argtypes), cache=True)(shim)
    return f.address


def c_signature(shim, argtypes=None):
    """The cfunc signature :func:`c_function` gives ``shim``."""
    ptr = types.CPointer(types.float64)
    return types.int64(*(argtypes or [ptr] * shim.__code__.co_argcount))


def c_in_cache(made: dict, name: str, shim, in_cache, single: str, argtypes=None) -> bool:
    """Whether the C entry point ``name`` (:func:`c_function`'s arguments) and the
    single-state kernel it calls are made in this process or load from numba's disk
    cache (``in_cache(single)``), without compiling or loading anything."""
    from numba.core import sigutils
    from numba.core.ccallback import CFunc

    from ..first_calls import in_disk_cache

    if name in made:
        return True
    if not in_cache(single):
        return False
    f = CFunc(shim, sigutils.normalize_signature(c_signature(shim, argtypes)), locals={},
              options={})
    f.enable_caching()
    return in_disk_cache(f._cache, f._sig, f._targetdescr.target_context)


def in_cache(name: str) -> bool:
    """Whether kernel ``name`` of this package is compiled in this process or loads from
    numba's disk cache for its signature (reads the cache's index only)."""
    from ..first_calls import compiled_or_cached

    return compiled_or_cached(_dispatcher(name), SIGNATURES[name])


def c_entry_in_cache(name: str) -> bool:
    """:func:`c_in_cache` of C entry point ``name`` of this file."""
    return c_in_cache(_C_MADE, name, _SHIMS[name], in_cache, _C_SINGLE[name])


def c_entry(name: str) -> int:
    """The address of C entry point ``name`` (``int64 f(double *buf, double *x..., double
    *out)``), compiled or loaded from the on-disk cache on first use (:func:`c_function`)."""
    return c_function(_C_MADE, name, _SHIMS[name], ready, _C_SINGLE[name])


# --- compiled for one signature each, on first use ----------------------------------

class Sig:
    """The numba types the kernels' signatures are written in (:data:`SIGNATURES` here,
    and each kernel module's)."""

    V = "float64[::1]"  # C-contiguous vector
    M = "float64[:, ::1]"  # C-contiguous matrix
    T3 = "float64[:, :, ::1]"  # C-contiguous 3-d array
    I = "int64[::1]"  # noqa: E741 (a status per state)
    B = "boolean"
    A = "float64[:]"  # any-strides vector (a caller's array)
    A2 = "float64[:, :]"  # any-strides matrix


_V, _M, _T3, _I, _B, _A, _A2 = Sig.V, Sig.M, Sig.T3, Sig.I, Sig.B, Sig.A, Sig.A2
SIGNATURES = {
    "rnea1": f"int64({_M}, {_V}, {_V}, {_V}, {_V})",
    "crba1": f"int64({_M}, {_V}, {_M})",
    "aba1": f"int64({_M}, {_V}, {_V}, {_V}, {_V})",
    # any strides for the caller's arrays (the entry point is called without the
    # dispatcher's type check, see entry(); only ndim and dtype are checked in Python)
    "rnea_f": f"int64({_V}, {_A}, {_A}, {_A}, {_A})",
    "rnea_f_fext": f"int64({_V}, {_A}, {_A}, {_A}, {_A2}, {_A})",
    "nle_f": f"int64({_V}, {_A}, {_A}, {_A})",
    "gravity_f": f"int64({_V}, {_A}, {_A})",
    "crba_f": f"int64({_V}, {_A}, {_A2})",
    "aba_f": f"int64({_V}, {_A}, {_A}, {_A}, {_A})",
    "aba_f_fext": f"int64({_V}, {_A}, {_A}, {_A}, {_A2}, {_A})",
    "rnea_batch": f"void({_M}, {_M}, {_M}, {_M}, {_T3}, {_B}, {_B}, {_B}, {_M}, {_I})",
    "crba_batch": f"void({_M}, {_M}, {_T3}, {_I})",
    "aba_batch": f"void({_M}, {_M}, {_M}, {_M}, {_T3}, {_B}, {_M}, {_I})",
    "kinematics1": f"int64({_M}, {_V}, {_V}, {_B}, {_T3}, {_M}, {_M})",
    "summary1": f"int64({_M}, {_V}, {_V}, {_B}, {_V})",
    "jacobian1": f"int64({_M}, {_V}, int64, int64, {_M})",
    "kinematics_batch": f"void({_M}, {_M}, {_M}, {_B}, float64[:, :, :, ::1], {_T3}, {_T3}, "
                        f"{_I})",
    "summary_batch": f"void({_M}, {_M}, {_M}, {_B}, {_M}, {_I})",
    "jacobian_batch": f"void({_M}, {_M}, int64, int64, {_T3}, {_I})",
}


def _dispatcher(name: str):
    from . import aba, crba, kinematics, rnea

    for module in (rnea, crba, aba, kinematics):
        disp = getattr(module, name, None)
        if disp is not None:
            return disp
    raise KeyError(f"no kernel {name!r} in kanedyn.dynamics.kernels")


def ready(name: str):
    """The dispatcher of kernel ``name``, compiled (or loaded from the on-disk
    cache) for its one signature, with further compilation disabled: an argument of
    another type (not float64, not C-contiguous, wrong number of dimensions) raises
    TypeError at once instead of compiling a new specialisation, and the Python
    wrapper then takes its general path."""
    disp = _dispatcher(name)
    if not disp.signatures:  # (a second call would meet compilation disabled)
        disp.compile(SIGNATURES[name])
        disp.disable_compile()
    return disp


def entry(name: str):
    """The compiled entry point of ``name`` itself, without numba's dispatcher.

    The dispatcher types every argument before the call (~25 ns an array, ~150 ns
    for five), which is most of what a small robot's call costs beyond the
    arithmetic. The entry point only unboxes: it accepts any ndarray whose items
    are 8 bytes and trusts it to have the declared number of dimensions (one with
    more would overrun numba's array struct). So the caller must pass float64
    arrays of the declared ndim — the wrappers check ``x.ndim`` and
    ``x.dtype is F8`` of every caller's array, and pass their own buffers — and
    the signatures take any strides.
    """
    disp = ready(name)
    return disp.overloads[disp.signatures[0]].entry_point
