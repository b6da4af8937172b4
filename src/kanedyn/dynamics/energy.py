"""Kinetic and potential energy and spatial momentum, computed from the bodies directly
(not from the equations of motion), so they check those equations independently."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..model import Model
from . import reference
from ._state import states


def kinetic_energy(model: Model, q: ArrayLike, v: ArrayLike):
    """``T = ½ Σ_i v_iᵀ I_i v_i`` (= ½ vᵀ M(q) v)."""
    (Q, V), single = states(model, q, (v, "v"))
    out = np.array([reference.kinetic_energy(model, x, y) for x, y in zip(Q, V)])
    return float(out[0]) if single else out


def potential_energy(model: Model, q: ArrayLike):
    """Gravitational potential ``V = -Σ_i m_i gᵀ c_i`` (zero at the world origin)."""
    (Q,), single = states(model, q)
    out = np.array([reference.potential_energy(model, x) for x in Q])
    return float(out[0]) if single else out


def spatial_momentum(model: Model, q: ArrayLike, v: ArrayLike) -> NDArray:
    """Total spatial momentum ``[L; P]`` in world coordinates, L about the world origin."""
    (Q, V), single = states(model, q, (v, "v"))
    out = np.array([reference.spatial_momentum(model, x, y) for x, y in zip(Q, V)])
    return out[0] if single else out
