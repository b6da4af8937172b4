"""Inverse dynamics by the recursive Newton–Euler algorithm (Featherstone 2008, Table 5.1).

The computation is :func:`kanedyn.dynamics.kernels.rnea.rnea_core` (numba); the
readable definition it is tested against is :func:`kanedyn.dynamics.reference.rnea`.
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

_RNEA, _NLE, _GRAVITY = (ENTRIES[n] for n in ("rnea", "nonlinear_effects", "gravity_torques"))
_empty = np.empty
_rnea_f = entry_stub(_RNEA.single, globals(), "_rnea_f")
_rnea_f_fext = entry_stub(_RNEA.single_fext, globals(), "_rnea_f_fext")
_nle_f = entry_stub(_NLE.single, globals(), "_nle_f")
_gravity_f = entry_stub(_GRAVITY.single, globals(), "_gravity_f")


def rnea(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike,
         f_ext: ArrayLike | None = None, *, out: NDArray | None = None,
         data: Data | None = None) -> NDArray:
    """Joint forces ``τ = M(q) a + C(q, v) v + g(q) - Σ_i J_iᵀ f_ext,i``.

    ``f_ext`` (nb x 6, optional) is the external spatial force ``[n; f]`` on
    each body, in that body's coordinates (Pinocchio's LOCAL convention).
    Accepts one state or a batch (leading axis; the batch runs in parallel).
    ``out``: an array of the result's shape to write into (and return), which
    saves an allocation per call in a hot loop.
    """
    try:
        buf, nv, _, owner, _ = model._kd_hot  # (flat._Hot)
    except (AttributeError, ValueError):
        buf, nv, _, owner, _ = fast(model)
    if data is not None or owner != _ident():  # (data.py)
        buf = buffer_of(model, data)
    try:
        # one state of float64 arrays goes straight to the kernel's entry point, which
        # relies on these checks (see kernels.entry); anything else takes the general path
        if (q.ndim == 1 and v.ndim == 1 and a.ndim == 1 and q.dtype is F8
                and v.dtype is F8 and a.dtype is F8):
            if out is None and f_ext is None:  # the common case first, in the fewest steps
                tau = _empty(nv)
                if not (s := _rnea_f(buf, q, v, a, tau)):
                    return tau
                fail(model, s, "rnea", q, ((v, "v"), (a, "a")))
            tau = _empty(nv) if out is None else (out if writable(out, 1) else None)
            if tau is not None:
                if f_ext is None:
                    s = _rnea_f(buf, q, v, a, tau)
                elif f_ext.ndim == 2 and f_ext.dtype is F8:
                    s = _rnea_f_fext(buf, q, v, a, f_ext, tau)
                else:
                    s = None
                if s is not None:
                    if s:
                        fail(model, s, "rnea", q, ((v, "v"), (a, "a")), f_ext)
                    return tau
    except (AttributeError, TypeError):  # not arrays
        pass
    return store(out, _rnea_general(model, q, v, a, f_ext, True, True, "rnea", out))


rnea = c_front(rnea, _RNEA)


def nonlinear_effects(model: Model, q: ArrayLike, v: ArrayLike, *,
                      out: NDArray | None = None, data: Data | None = None) -> NDArray:
    """``h(q, v) = C(q, v) v + g(q)`` = RNEA with zero acceleration."""
    try:
        buf, nv, _, owner, _ = model._kd_hot  # (flat._Hot)
    except (AttributeError, ValueError):
        buf, nv, _, owner, _ = fast(model)
    if data is not None or owner != _ident():  # (data.py)
        buf = buffer_of(model, data)
    try:
        if q.ndim == 1 and v.ndim == 1 and q.dtype is F8 and v.dtype is F8:
            tau = _empty(nv) if out is None else (out if writable(out, 1) else None)
            if tau is not None:
                s = _nle_f(buf, q, v, tau)
                if s:
                    fail(model, s, "nonlinear_effects", q, ((v, "v"),))
                return tau
    except (AttributeError, TypeError):
        pass
    return store(out, _rnea_general(model, q, v, None, None, True, False,
                                    "nonlinear_effects"))


nonlinear_effects = c_front(nonlinear_effects, _NLE)


def gravity_torques(model: Model, q: ArrayLike, *, out: NDArray | None = None,
                    data: Data | None = None) -> NDArray:
    """``g(q)``: the joint forces that hold the model still against gravity."""
    try:
        buf, nv, _, owner, _ = model._kd_hot  # (flat._Hot)
    except (AttributeError, ValueError):
        buf, nv, _, owner, _ = fast(model)
    if data is not None or owner != _ident():  # (data.py)
        buf = buffer_of(model, data)
    try:
        if q.ndim == 1 and q.dtype is F8:
            tau = _empty(nv) if out is None else (out if writable(out, 1) else None)
            if tau is not None:
                s = _gravity_f(buf, q, tau)
                if s:
                    fail(model, s, "gravity_torques", q, ())
                return tau
    except (AttributeError, TypeError):
        pass
    return store(out, _rnea_general(model, q, None, None, None, False, False,
                                    "gravity_torques"))


gravity_torques = c_front(gravity_torques, _GRAVITY)


def _rnea_general(model, q, v, a, f_ext, use_v, use_a, what, out_=None):
    """Any array-like input, one state or a batch: validate, then the parallel kernel."""
    fm = flatten(model)
    speeds = tuple(x for x in ((v, "v"), (a, "a")) if x[0] is not None)
    (Q, *X), F, single = general(model, q, speeds, f_ext)
    N = Q.shape[0]
    zeros = None
    if len(X) < 2:
        zeros = np.zeros((N, fm.nv))
    V = X[0] if use_v else zeros
    A = X[1] if use_a else zeros
    out = batch_result(None if single else out_, (N, *_RNEA.result_shape(fm.nv)), Q, *X, F)
    status = np.zeros(N, dtype=np.int64)
    Fk = F if F is not None else np.zeros((1, fm.nb, 6))
    batch(K[_RNEA.batch], fm.data, Q, V, A, Fk, use_v, use_a, F is not None, out, status)
    if status.any():
        fail(model, status, what, Q, tuple((x, n) for x, (_, n) in zip(X, speeds, strict=True)), F)
    return out[0] if single else out
