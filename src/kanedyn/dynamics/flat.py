"""The flat array form of a Model, which every compiled consumer reads.

A :class:`~kanedyn.model.Model` is a tuple of Python objects; a kernel wants
contiguous numbers. ``flatten(model)`` packs everything the compiled code needs —
the recursive algorithms, the energy and derivative kernels, the configuration map,
the compiled integrator loops and the batches — into one float64 array ``data`` of
shape (nb + 1, WIDTH), by the layout of :mod:`.layout` (its docstring has the table
of columns, and the version rule): row i (0 ≤ i < nb) describes body i, the last
row the whole model. One array keeps the cost of calling a numba function low (each
array argument costs about 0.05 µs to unbox).

``data`` is a view into a larger 1-D array ``buf``: a header (nb, nq, nv, the
length of ``buf``), then ``data``, then room for a workspace for the single-state
entry points of :mod:`.kernels` (``rnea_f`` etc., and the C entry points ``rnea_c``
etc. that take bare pointers), which take a buffer of this form alone in place of
the model and the scratch arrays they would otherwise allocate on every call. The
Model's ``buf`` is only the template: it is write-protected, and every kernel call
runs on the copy held by a :class:`~kanedyn.dynamics.data.Data` (one per thread),
so nothing reachable from the Model's flat form is written by a kernel. (``data``
stays writeable as an array flag only because numba types a read-only array as
another type, which the kernels' fixed signatures refuse; the tests check it is
unchanged, bit for bit, after every algorithm.)

The flat form is computed once per Model and cached by the Model's identity
(a Model is immutable; its entry is dropped when the Model is collected): the one
caching rule for every consumer. What a single-state call needs is also kept on the
Model (see :class:`_Hot`): the buffer of the default Data of the thread that first
called, and the per-thread default Data of the others.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import ModelError
from ..model import Model
from ..model.joints import QUAT_TOL
from ..model.model import singular_tolerance
from . import layout
from .kernels import workspace_size
from .kernels.joint_extension import entry_table
from .layout import (
    ARMATURE,
    CHAIN,
    E_TREE,
    GRAV,
    HDR,
    IBAR,
    IQ,
    IV,
    MASS,
    NB,
    NQ,
    NV,
    NVJ,
    PARENT,
    QTOL,
    R_TREE,
    SINGTOL,
    WIDTH,
    H,
)


@dataclass(frozen=True, eq=False)
class FlatModel:
    """The packed arrays of one Model, and the few facts the wrappers need."""

    data: NDArray          # (nb + 1, WIDTH) float64, C-contiguous; never written
    buf: NDArray           # 1-D: header, data, workspace; a read-only template (Data copies it)
    nb: int
    nq: int
    nv: int
    quaternion_bodies: tuple[int, ...]   # bodies whose q holds a quaternion


def _pack(model: Model) -> FlatModel:
    nb = model.nb
    size = HDR + (nb + 1) * WIDTH
    buf = np.zeros(size + workspace_size(nb, model.nv))
    buf[:4] = nb, model.nq, model.nv, buf.size
    data = buf[HDR:size].reshape(nb + 1, WIDTH)
    quats = []
    for b in model.bodies:
        j = b.joint
        row = data[b.index]
        # the joint's own columns (JTYPE, AXIS, PITCH, SIDX, AXIS_ID): its pack method
        j.pack(row, layout)
        if row[layout.JTYPE] == layout.EXTENSION:  # primitives of its own: its entry table
            row[layout.JFUNCS] = entry_table(type(j))
        row[E_TREE:E_TREE + 9] = b.placement.E.reshape(9)
        row[R_TREE:R_TREE + 3] = b.placement.r
        I = b.inertia
        row[MASS] = I[5, 5]
        # I[:3, 3:] = m c× = h×
        row[H:H + 3] = (I[2, 4], I[0, 5], I[1, 3])
        row[IBAR:IBAR + 9] = I[:3, :3].reshape(9)
        row[PARENT] = b.parent
        row[IQ] = b.iq.start
        row[IV] = b.iv.start
        row[NVJ] = j.nv
        row[ARMATURE] = j.armature
        if j.has_quaternion:
            quats.append(b.index)
    data[nb, NB] = nb
    data[nb, NQ] = model.nq
    data[nb, NV] = model.nv
    data[nb, GRAV:GRAV + 3] = model.gravity
    data[nb, QTOL] = QUAT_TOL
    # 1 when every body hangs from the one before it (CRBA then fills all of M)
    data[nb, CHAIN] = float(all(b.parent == b.index - 1 for b in model.bodies))
    data[nb, SINGTOL] = singular_tolerance(model)
    buf.flags.writeable = False  # the kernels write into a Data's copy only
    return FlatModel(data, buf, nb, model.nq, model.nv, tuple(quats))


# id(model) -> FlatModel. A Model is not hashable (it holds arrays), so a
# WeakKeyDictionary cannot key on it; a finalizer drops the entry when the
# Model dies, before its id can be reused.
_CACHE: dict[int, FlatModel] = {}
#: the attribute of a Model that holds its :class:`_Hot` tuple
HOT = "_kd_hot"


class _Hot(tuple):
    """``(buf, nv, (nv, nv), owner, per_thread)``: what a single-state call needs, kept on
    the Model itself (attribute :data:`HOT`), because reading one attribute costs ~40 ns
    less than a dict lookup by ``id(model)`` in the hottest Python path. ``buf`` is the
    buffer of the default :class:`~kanedyn.dynamics.data.Data` of thread ``owner`` (the
    one that first called; ``threading.get_ident()``), ``per_thread`` the dict
    ``thread ident -> default Data`` of every thread that called. A call from the owner
    with no ``data=`` uses ``buf`` straight away (the C front end compares the ident as
    ``PyThread_get_thread_ident()``); any other goes through
    :func:`~kanedyn.dynamics.data.data_of`. A deep copy or a pickle of the Model does not
    carry it: it reduces to an empty tuple, which the wrappers' unpacking rejects
    (ValueError), and they make the new Model's own. (A shallow copy shares it.)"""

    __slots__ = ()

    def __reduce__(self):
        return (tuple, ())


def flatten(model: Model) -> FlatModel:
    """The cached flat form of ``model`` (built on first use)."""
    fm = _CACHE.get(id(model))
    if fm is None:
        if not isinstance(model, Model):
            raise ModelError(f"expected a kanedyn Model, got {type(model).__name__}")
        fm = _pack(model)
        _CACHE[id(model)] = fm
        weakref.finalize(model, _CACHE.pop, id(model), None)
    return fm


def fast(model: Model) -> tuple[NDArray, int, tuple[int, int], int, dict]:
    """``model``'s :class:`_Hot` tuple, flattening it and making the calling thread's
    default Data on first use."""
    hot = getattr(model, HOT, ())
    if len(hot) != 5:
        from .data import attach

        hot = attach(model)
    return hot
