"""Joint-space inertia matrix by the composite-rigid-body algorithm (Featherstone 2008, Table 6.2)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..model import Model
from . import reference
from ._state import states


def crba(model: Model, q: ArrayLike) -> NDArray:
    """M(q), symmetric positive definite (nv x nv; (N, nv, nv) for a batch)."""
    (Q,), single = states(model, q)
    out = np.empty((Q.shape[0], model.nv, model.nv))
    for k in range(Q.shape[0]):
        out[k] = reference.crba(model, Q[k])
    return out[0] if single else out
