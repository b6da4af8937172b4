"""Body Jacobians. Which frame a Jacobian is expressed in is named explicitly.

For body b with spatial velocity ``[ω; v]``:

- ``frame="local"``: ω and the velocity of b's origin, both in b's own axes
  (Pinocchio ``LOCAL``; ``J @ v`` equals ``forward_kinematics(...).velocity[b]``).
- ``frame="local_world_aligned"``: ω and the velocity of b's origin, in world
  axes (Pinocchio ``LOCAL_WORLD_ALIGNED``; the usual "geometric Jacobian" of
  robotics texts, whose lower rows give ṗ).
- ``frame="world"``: the spatial velocity in world coordinates, the linear part
  being the velocity of the body point now passing through the world origin
  (Pinocchio ``WORLD``; Featherstone's spatial velocity in base coordinates).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import KanedynError
from ..model import Model
from ..spatial import skew
from . import reference
from ._state import states

FRAMES = ("local", "local_world_aligned", "world")


def jacobian(model: Model, q: ArrayLike, body: str | int, frame: str = "local") -> NDArray:
    """The 6 x nv Jacobian of ``body`` (a name or index), rows ``[ω; v]``; see module doc."""
    if frame not in FRAMES:
        raise KanedynError(f"unknown Jacobian frame {frame!r}; choose one of {FRAMES}")
    i = model.body_index(body)
    (Q,), single = states(model, q)
    out = np.empty((Q.shape[0], 6, model.nv))
    for k, x in enumerate(Q):
        J = reference.jacobian_local(model, x, i)
        if frame != "local":
            R, p = reference.body_placements(model, x)
            Rb = R[i]
            Jw = np.vstack([Rb @ J[:3], Rb @ J[3:]])
            if frame == "world":
                # v at the world origin = v at p + ω × (0 - p)
                Jw[3:] += skew(p[i]) @ Jw[:3]
            J = Jw
        out[k] = J
    return out[0] if single else out
