"""Inverse dynamics by the recursive Newton–Euler algorithm (Featherstone 2008, Table 5.1)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..model import Model
from . import reference
from ._state import external_forces, states


def rnea(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike,
         f_ext: ArrayLike | None = None) -> NDArray:
    """Joint forces ``τ = M(q) a + C(q, v) v + g(q) - Σ_i J_iᵀ f_ext,i``.

    ``f_ext`` (nb x 6, optional) is the external spatial force ``[n; f]`` on
    each body, in that body's coordinates (Pinocchio's LOCAL convention).
    Accepts one state or a batch (leading axis).
    """
    (Q, V, A), single = states(model, q, (v, "v"), (a, "a"))
    F = external_forces(model, f_ext, Q.shape[0])
    out = np.empty((Q.shape[0], model.nv))
    for k in range(Q.shape[0]):
        out[k] = reference.rnea(model, Q[k], V[k], A[k], None if F is None else F[k])
    return out[0] if single else out


def nonlinear_effects(model: Model, q: ArrayLike, v: ArrayLike) -> NDArray:
    """``h(q, v) = C(q, v) v + g(q)`` = RNEA with zero acceleration."""
    return rnea(model, q, v, np.zeros(model.nv))


def gravity_torques(model: Model, q: ArrayLike) -> NDArray:
    """``g(q)``: the joint forces that hold the model still against gravity."""
    return rnea(model, q, np.zeros(model.nv), np.zeros(model.nv))
