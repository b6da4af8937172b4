"""Forward dynamics by the articulated-body algorithm (Featherstone 2008, Table 7.1).

The computation is :func:`kanedyn.dynamics.kernels.aba.aba_core` (numba); the
readable definition is :func:`kanedyn.dynamics.reference.aba`.
"""

from __future__ import annotations

from numpy.typing import ArrayLike, NDArray

from ..model import Model
from ._dispatch import c_front, fast_path, run_batch
from .data import Data
from .kernels.entries import ENTRIES

_ABA = ENTRIES["aba"]


@fast_path(_ABA)
def aba(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike,
        f_ext: ArrayLike | None = None, *, out: NDArray | None = None,
        data: Data | None = None) -> NDArray:
    """Accelerations ``v̇ = M(q)⁻¹ (τ - h(q, v) + Σ J_iᵀ f_ext,i)``, in O(n).

    ``f_ext`` as in :func:`kanedyn.rnea`. Accepts one state or a batch
    (leading axis; the batch runs in parallel). ``out``: an array of the result's
    shape to write into (and return).
    """
    # (one float64 state goes straight to the kernel: the fast path of _dispatch.fast_path)
    return run_batch(_ABA, model, q, ((v, "v"), (tau, "tau")), f_ext, out)


aba = c_front(aba, _ABA)
