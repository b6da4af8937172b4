"""Forward kinematics: where each body is, and how it moves.

The computation is :func:`kanedyn.dynamics.kernels.kinematics.kinematics_into` (numba); the
readable definitions are :func:`kanedyn.dynamics.reference.body_placements` and
:func:`~kanedyn.dynamics.reference.body_velocities`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..model import Model
from ._dispatch import K, entry_stub, fail, general
from .data import Data, data_of
from .energy import COM, summary
from .flat import _CACHE, flatten
from .frames import frame_placement as frame_placement  # (it lives in frames.py now)
from .kernels.entries import ENTRIES

_FK = ENTRIES["forward_kinematics"]
_kinematics1 = entry_stub(_FK.single, globals(), "_kinematics1")


@dataclass(frozen=True)
class Kinematics:
    """Result of :func:`forward_kinematics` for one state.

    ``R[i]``, ``p[i]``: axes and origin of body i in world coordinates.
    ``velocity[i]``: spatial velocity ``[ω; v_O]`` of body i in body i
    coordinates (O its origin) — Pinocchio's ``data.v`` — or None if no v was given.
    """

    R: NDArray
    p: NDArray
    velocity: NDArray | None


def forward_kinematics(model: Model, q: ArrayLike, v: ArrayLike | None = None, *,
                       data: Data | None = None):
    """Body poses (and spatial velocities, if v is given). A batch gives a list."""
    if data is not None:  # (these kernels write only into the arrays they return)
        data_of(model, data)
    fm = _CACHE.get(id(model)) or flatten(model)
    nb = fm.nb
    R, p, vel = np.empty((nb, 3, 3)), np.empty((nb, 3)), np.empty((nb, 6))
    use_v = v is not None
    try:
        if q.ndim != 1:  # a batch (or no array): skip numba's costly type mismatch
            raise TypeError
        s = _kinematics1(fm.data, q, v if use_v else q, use_v, R, p, vel)
    except (TypeError, AttributeError):
        speeds = ((v, "v"),) if use_v else ()
        (Q, *X), _, single = general(model, q, speeds)
        N = Q.shape[0]
        R, p, vel = np.empty((N, nb, 3, 3)), np.empty((N, nb, 3)), np.empty((N, nb, 6))
        status = np.zeros(N, dtype=np.int64)
        K[_FK.batch](fm.data, Q, X[0] if use_v else Q, use_v, R, p, vel, status)
        if status.any():
            fail(model, status, "forward_kinematics", Q, tuple(zip(X, ("v",), strict=True)))
        res = [Kinematics(R[k], p[k], vel[k] if use_v else None) for k in range(N)]
        return res[0] if single else res
    if s:
        fail(model, s, "forward_kinematics", q, ((v, "v"),) if use_v else ())
    return Kinematics(R, p, vel if use_v else None)


def center_of_mass(model: Model, q: ArrayLike, *, data: Data | None = None) -> NDArray:
    """Centre of mass of the whole model in world coordinates."""
    out = summary(model, q, data=data)
    return out[COM].copy() if out.ndim == 1 else out[:, COM].copy()
