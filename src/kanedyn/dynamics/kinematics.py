"""Forward kinematics: where each body is, and how it moves."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..model import Model
from . import reference
from ._state import states


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


def forward_kinematics(model: Model, q: ArrayLike, v: ArrayLike | None = None):
    """Body poses (and spatial velocities, if v is given). A batch gives a list."""
    if v is None:
        (Q,), single = states(model, q)
        res = [Kinematics(*reference.body_placements(model, x), None) for x in Q]
    else:
        (Q, V), single = states(model, q, (v, "v"))
        res = [Kinematics(*reference.body_placements(model, x),
                          reference.body_velocities(model, x, y)) for x, y in zip(Q, V)]
    return res[0] if single else res


def frame_placement(model: Model, q: ArrayLike, name: str | int) -> tuple[NDArray, NDArray]:
    """Pose (R, p) in the world of a body or of any named frame (merged fixed links,
    sensors), for one configuration."""
    (Q,), _ = states(model, q)
    R, p = reference.body_placements(model, Q[0])
    if isinstance(name, str) and name in model.frames:
        fr = model.frames[name]
        Rb, pb = R[fr.body], p[fr.body]
        return Rb @ fr.placement.rotation, pb + Rb @ fr.placement.translation
    i = model.body_index(name)
    return R[i].copy(), p[i].copy()


def center_of_mass(model: Model, q: ArrayLike) -> NDArray:
    """Centre of mass of the whole model in world coordinates."""
    (Q,), single = states(model, q)
    out = np.empty((Q.shape[0], 3))
    for k, x in enumerate(Q):
        R, p = reference.body_placements(model, x)
        out[k] = sum(b.mass * (p[b.index] + R[b.index] @ b.com) for b in model.bodies)
        out[k] /= model.total_mass
    return out[0] if single else out
