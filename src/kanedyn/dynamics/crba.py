"""Joint-space inertia matrix by the composite-rigid-body algorithm (Featherstone 2008, Table 6.2).

The computation is :func:`kanedyn.dynamics.kernels.crba.crba_core` (numba); the
readable definition is :func:`kanedyn.dynamics.reference.crba`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..model import Model
from ._dispatch import (
    F8,
    K,
    batch,
    batch_result,
    c_front,
    entry_stub,
    fail,
    general,
    store,
    writable,
)
from .data import Data, _ident, buffer_of
from .flat import fast, flatten
from .kernels.entries import ENTRIES

_CRBA = ENTRIES["crba"]
_empty = np.empty
_crba_f = entry_stub(_CRBA.single, globals(), "_crba_f")


def crba(model: Model, q: ArrayLike, *, out: NDArray | None = None,
         data: Data | None = None) -> NDArray:
    """M(q), symmetric positive definite (nv x nv; (N, nv, nv) for a batch).

    ``out``: an array of the result's shape to write into (and return).
    """
    try:
        buf, _, shape, owner, _ = model._kd_hot  # (flat._Hot)
    except (AttributeError, ValueError):
        buf, _, shape, owner, _ = fast(model)
    if data is not None or owner != _ident():  # (data.py)
        buf = buffer_of(model, data)
    try:
        # one float64 state straight to the kernel's entry point (see kernels.entry)
        if q.ndim == 1 and q.dtype is F8:
            if out is None:  # the common case first, in the fewest steps
                M = _empty(shape)
                if not (s := _crba_f(buf, q, M)):
                    return M
                fail(model, s, "crba", q, ())
            M = out if writable(out, 2) else None
            if M is not None:
                s = _crba_f(buf, q, M)
                if s:
                    fail(model, s, "crba", q, ())
                return M
    except (AttributeError, TypeError):  # not an array
        pass
    fm = flatten(model)
    (Q,), _, single = general(model, q, ())
    N = Q.shape[0]
    res = batch_result(None if single else out, (N, *_CRBA.result_shape(fm.nv)), Q)
    status = np.zeros(N, dtype=np.int64)
    batch(K[_CRBA.batch], fm.data, Q, res, status)
    if status.any():
        fail(model, status, "crba", Q, ())
    return store(out, res[0] if single else res)


crba = c_front(crba, _CRBA)
