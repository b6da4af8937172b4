"""Kinetic and potential energy and spatial momentum, computed from the bodies directly
(not from the equations of motion), so they check those equations independently.

One kernel (:func:`kanedyn.dynamics.kernels.kinematics.summary_into`) computes all of them
from the body poses and velocities; the readable definitions are
:func:`kanedyn.dynamics.reference.kinetic_energy`, ``potential_energy`` and
``spatial_momentum``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..model import Model
from ._dispatch import K, entry_stub, fail, general
from .data import Data, data_of
from .flat import _CACHE, flatten
from .kernels.entries import ENTRIES

_SUMMARY = ENTRIES["energy"]
_summary1 = entry_stub(_SUMMARY.single, globals(), "_summary1")

# layout of a summary row
T, V, MOMENTUM, COM = 0, 1, slice(2, 8), slice(8, 11)


def summary(model: Model, q: ArrayLike, v: ArrayLike | None = None, *,
            data: Data | None = None) -> NDArray:
    """``[T, V, L (3), P (3), c (3)]`` for one state (11,) or a batch (N, 11); T and the
    momentum are zero when v is None."""
    if data is not None:  # (these kernels write only into the arrays they return)
        data_of(model, data)
    fm = _CACHE.get(id(model)) or flatten(model)
    out = np.empty(11)
    try:
        if q.ndim != 1:  # a batch (or no array): skip numba's costly type mismatch
            raise TypeError
        if v is None:
            s = _summary1(fm.data, q, q, False, out)
        else:
            s = _summary1(fm.data, q, v, True, out)
    except (TypeError, AttributeError):
        speeds = () if v is None else ((v, "v"),)
        (Q, *X), _, single = general(model, q, speeds)
        N = Q.shape[0]
        out = np.empty((N, 11))
        status = np.zeros(N, dtype=np.int64)
        K[_SUMMARY.batch](fm.data, Q, X[0] if X else Q, bool(X), out, status)
        if status.any():
            fail(model, status, "energy", Q, tuple(zip(X, ("v",), strict=True)))
        return out[0] if single else out
    if s:
        fail(model, s, "energy", q, () if v is None else ((v, "v"),))
    return out


def kinetic_energy(model: Model, q: ArrayLike, v: ArrayLike, *, data: Data | None = None):
    """``T = ½ Σ_i v_iᵀ I_i v_i`` (= ½ vᵀ M(q) v)."""
    out = summary(model, q, v, data=data)
    return float(out[T]) if out.ndim == 1 else out[:, T]


def potential_energy(model: Model, q: ArrayLike, *, data: Data | None = None):
    """Gravitational potential ``V = -Σ_i m_i gᵀ c_i`` (zero at the world origin)."""
    out = summary(model, q, data=data)
    return float(out[V]) if out.ndim == 1 else out[:, V]


def spatial_momentum(model: Model, q: ArrayLike, v: ArrayLike, *,
                     data: Data | None = None) -> NDArray:
    """Total spatial momentum ``[L; P]`` in world coordinates, L about the world origin."""
    out = summary(model, q, v, data=data)
    return out[MOMENTUM].copy() if out.ndim == 1 else out[:, MOMENTUM].copy()
