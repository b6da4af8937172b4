"""Forward dynamics by the articulated-body algorithm (Featherstone 2008, Table 7.1)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..model import Model
from . import reference
from ._state import external_forces, states


def aba(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike,
        f_ext: ArrayLike | None = None) -> NDArray:
    """Accelerations ``v̇ = M(q)⁻¹ (τ - h(q, v) + Σ J_iᵀ f_ext,i)``, in O(n).

    ``f_ext`` as in :func:`kanedyn.rnea`. Accepts one state or a batch.
    """
    (Q, V, T), single = states(model, q, (v, "v"), (tau, "tau"))
    F = external_forces(model, f_ext, Q.shape[0])
    out = np.empty((Q.shape[0], model.nv))
    for k in range(Q.shape[0]):
        out[k] = reference.aba(model, Q[k], V[k], T[k], None if F is None else F[k])
    return out[0] if single else out
