"""Forward dynamics by the articulated-body algorithm (Featherstone 2008, Table 7.1).

The computation is :func:`kanedyn.dynamics.kernels.aba.aba_core` (numba); the
readable definition is :func:`kanedyn.dynamics.reference.aba`.
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

_ABA = ENTRIES["aba"]
_empty = np.empty
_aba_f = entry_stub(_ABA.single, globals(), "_aba_f")
_aba_f_fext = entry_stub(_ABA.single_fext, globals(), "_aba_f_fext")


def aba(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike,
        f_ext: ArrayLike | None = None, *, out: NDArray | None = None,
        data: Data | None = None) -> NDArray:
    """Accelerations ``v̇ = M(q)⁻¹ (τ - h(q, v) + Σ J_iᵀ f_ext,i)``, in O(n).

    ``f_ext`` as in :func:`kanedyn.rnea`. Accepts one state or a batch
    (leading axis; the batch runs in parallel). ``out``: an array of the result's
    shape to write into (and return).
    """
    try:
        buf, nv, _, owner, _ = model._kd_hot  # (flat._Hot)
    except (AttributeError, ValueError):
        buf, nv, _, owner, _ = fast(model)
    if data is not None or owner != _ident():  # (data.py)
        buf = buffer_of(model, data)
    try:
        # one float64 state straight to the kernel's entry point (see kernels.entry)
        if (q.ndim == 1 and v.ndim == 1 and tau.ndim == 1 and q.dtype is F8
                and v.dtype is F8 and tau.dtype is F8):
            if out is None and f_ext is None:  # the common case first, in the fewest steps
                qdd = _empty(nv)
                if not (s := _aba_f(buf, q, v, tau, qdd)):
                    return qdd
                fail(model, s, "aba", q, ((v, "v"), (tau, "tau")))
            qdd = _empty(nv) if out is None else (out if writable(out, 1) else None)
            if qdd is not None:
                if f_ext is None:
                    s = _aba_f(buf, q, v, tau, qdd)
                elif f_ext.ndim == 2 and f_ext.dtype is F8:
                    s = _aba_f_fext(buf, q, v, tau, f_ext, qdd)
                else:
                    s = None
                if s is not None:
                    if s:
                        fail(model, s, "aba", q, ((v, "v"), (tau, "tau")), f_ext)
                    return qdd
    except (AttributeError, TypeError):  # not arrays
        pass
    return store(out, _aba_general(model, q, v, tau, f_ext, out))


aba = c_front(aba, _ABA)


def _aba_general(model, q, v, tau, f_ext, out_=None):
    fm = flatten(model)
    speeds = ((v, "v"), (tau, "tau"))
    (Q, V, T), F, single = general(model, q, speeds, f_ext)
    N = Q.shape[0]
    out = batch_result(None if single else out_, (N, *_ABA.result_shape(fm.nv)), Q, V, T, F)
    status = np.zeros(N, dtype=np.int64)
    Fk = F if F is not None else np.zeros((1, fm.nb, 6))
    batch(K[_ABA.batch], fm.data, Q, V, T, Fk, F is not None, out, status)
    if status.any():
        fail(model, status, "aba", Q, ((V, "v"), (T, "tau")), F)
    return out[0] if single else out
