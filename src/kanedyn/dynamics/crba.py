"""Joint-space inertia matrix by the composite-rigid-body algorithm (Featherstone 2008, Table 6.2).

The computation is :func:`kanedyn.dynamics.kernels.crba.crba_core` (numba); the
readable definition is :func:`kanedyn.dynamics.reference.crba`.
"""

from __future__ import annotations

from numpy.typing import ArrayLike, NDArray

from ..model import Model
from ._dispatch import c_front, fast_path, run_batch
from .data import Data
from .kernels.entries import ENTRIES

_CRBA = ENTRIES["crba"]


@fast_path(_CRBA)
def crba(model: Model, q: ArrayLike, *, out: NDArray | None = None,
         data: Data | None = None) -> NDArray:
    """M(q), symmetric positive definite (nv x nv; (N, nv, nv) for a batch).

    ``out``: an array of the result's shape to write into (and return).
    """
    # (one float64 state goes straight to the kernel: the fast path of _dispatch.fast_path)
    return run_batch(_CRBA, model, q, (), None, out)


crba = c_front(crba, _CRBA)
