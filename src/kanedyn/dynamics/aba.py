"""Forward dynamics by the articulated-body algorithm (Featherstone 2008, Table 7.1).

The computation is :func:`kanedyn.dynamics.kernels.aba_core` (numba); the
readable definition is :func:`kanedyn.dynamics.reference.aba`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..model import Model
from ._dispatch import K, fail, general, store
from .flat import FAST, fast, flatten

_empty = np.empty


def aba(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike,
        f_ext: ArrayLike | None = None, *, out: NDArray | None = None) -> NDArray:
    """Accelerations ``v̇ = M(q)⁻¹ (τ - h(q, v) + Σ J_iᵀ f_ext,i)``, in O(n).

    ``f_ext`` as in :func:`kanedyn.rnea`. Accepts one state or a batch
    (leading axis; the batch runs in parallel). ``out``: an array of the result's
    shape to write into (and return).
    """
    try:
        buf, nv = FAST[id(model)]
    except KeyError:
        buf, nv = fast(model)
    qdd = _empty(nv) if out is None else out
    try:
        if q.ndim != 1:  # a batch (or no array): skip numba's costly type mismatch
            raise TypeError
        if f_ext is None:
            s = K.aba_f(buf, q, v, tau, qdd)
        else:
            s = K.aba_f_fext(buf, q, v, tau, f_ext, qdd)
    except (TypeError, AttributeError):
        return store(out, _aba_general(model, q, v, tau, f_ext))
    if s:
        fail(model, s, "aba", q, ((v, "v"), (tau, "tau")), f_ext)
    return qdd


def _aba_general(model, q, v, tau, f_ext):
    fm = flatten(model)
    speeds = ((v, "v"), (tau, "tau"))
    (Q, V, T), F, single = general(model, q, speeds, f_ext)
    N = Q.shape[0]
    out = np.empty((N, fm.nv))
    status = np.zeros(N, dtype=np.int64)
    Fk = F if F is not None else np.zeros((1, fm.nb, 6))
    K.aba_batch(fm.data, Q, V, T, Fk, F is not None, out, status)
    if status.any():
        fail(model, status, "aba", Q, ((V, "v"), (T, "tau")), F)
    return out[0] if single else out
