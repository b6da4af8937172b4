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

The computation is :func:`kanedyn.dynamics.kernels.kinematics.jacobian_into` (numba); the
readable definition is :func:`kanedyn.dynamics.reference.jacobian_local`.

Given the name of a frame that is not a body (a merged fixed link such as a tool
centre point, a sensor, a frame of :meth:`Model.add_frame <kanedyn.model.Model.add_frame>`),
the Jacobian is that frame's, about its own origin (:func:`kanedyn.frame_jacobian`),
never that of the body it is fixed to.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import KanedynError
from ..model import Model
from ._dispatch import K, entry_stub, fail, general
from .data import Data, data_of
from .flat import _CACHE, flatten
from .frames import frame_jacobian
from .kernels.entries import ENTRIES

_JACOBIAN = ENTRIES["jacobian"]
_J_ROWS = _JACOBIAN.result[0]  # J is (6, nv): read once, not per call
_jacobian1 = entry_stub(_JACOBIAN.single, globals(), "_jacobian1")

FRAMES = ("local", "local_world_aligned", "world")


def jacobian(model: Model, q: ArrayLike, body: str | int, frame: str = "local", *,
             data: Data | None = None) -> NDArray:
    """The 6 x nv Jacobian of ``body`` (a name or index), rows ``[ω; v]``; see module doc.

    Given the name of a frame that is not a body (``model.frames``), the Jacobian of that
    frame about its own origin, ``frame`` its reference: :func:`kanedyn.frame_jacobian`."""
    if frame not in FRAMES:
        raise KanedynError(f"unknown Jacobian frame {frame!r}; choose one of {FRAMES}")
    code = FRAMES.index(frame)
    if isinstance(body, str) and body not in model.body_names:
        # a frame that is not a body (a merged link, a TCP, a sensor, the world): its own
        # Jacobian, about its own origin — never that of the body it is fixed to
        return frame_jacobian(model, q, body, reference=frame)
    i = model.body_index(body)
    if data is not None:  # (these kernels write only into the arrays they return)
        data_of(model, data)
    fm = _CACHE.get(id(model)) or flatten(model)
    J = np.empty((_J_ROWS, fm.nv))
    try:
        if q.ndim != 1:  # a batch (or no array): skip numba's costly type mismatch
            raise TypeError
        s = _jacobian1(fm.data, q, i, code, J)
    except (TypeError, AttributeError):
        (Q,), _, single = general(model, q, ())
        N = Q.shape[0]
        out = np.empty((N, *_JACOBIAN.result_shape(fm.nv)))
        status = np.zeros(N, dtype=np.int64)
        K[_JACOBIAN.batch](fm.data, Q, i, code, out, status)
        if status.any():
            fail(model, status, "jacobian", Q, ())
        return out[0] if single else out
    if s:
        fail(model, s, "jacobian", q, ())
    return J
