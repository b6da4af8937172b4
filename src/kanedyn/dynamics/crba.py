"""Joint-space inertia matrix by the composite-rigid-body algorithm (Featherstone 2008, Table 6.2).

The computation is :func:`kanedyn.dynamics.kernels.crba_into` (numba); the
readable definition is :func:`kanedyn.dynamics.reference.crba`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..model import Model
from ._dispatch import K, fail, general
from .flat import _CACHE, flatten


def crba(model: Model, q: ArrayLike) -> NDArray:
    """M(q), symmetric positive definite (nv x nv; (N, nv, nv) for a batch)."""
    fm = _CACHE.get(id(model)) or flatten(model)
    M = np.empty((fm.nv, fm.nv))
    try:
        s = K.crba1(fm.data, q, M)
    except TypeError:
        (Q,), _, single = general(model, q, ())
        N = Q.shape[0]
        out = np.empty((N, fm.nv, fm.nv))
        status = np.zeros(N, dtype=np.int64)
        K.crba_batch(fm.data, Q, out, status)
        if status.any():
            fail(model, status, "crba", Q, ())
        return out[0] if single else out
    if s:
        fail(model, s, "crba", q, ())
    return M
