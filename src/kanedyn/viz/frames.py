"""The mechanism's geometry over a trajectory, as the report and the animations draw it."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .. import dynamics as dyn
from ..errors import KanedynError, StateError
from ..model import Model
from ..spatial import matrix_to_quat


def animation_frames(model: Model, t: ArrayLike, q: ArrayLike, max_frames: int = 240) -> dict:
    """Per-frame 3D points of the mechanism, from ``kd.forward_kinematics``.

    The trajectory is resampled to at most ``max_frames`` frames, uniformly in
    time (nearest output sample; no interpolation, so quaternions stay exact).

    Returns a dict (JSON-ready lists):

    * ``t`` (F,) — the frame times;
    * ``origins`` (F, nb, 3) — each body's frame origin (its joint's location) in the world;
    * ``coms`` (F, nb, 3) — each body's centre of mass in the world;
    * ``quats`` (F, nb, 4) — each body's orientation in the world, a unit quaternion
      (w, x, y, z): with ``origins`` the body's pose, which carries its visuals;
    * ``anchors`` (nr, 3) and ``roots`` — where the root bodies' joint frames are fixed in
      the world, and which bodies they carry (free-floating roots have none);
    * ``parents`` (nb,) — parent body index, -1 for a root;
    * ``names`` — body names; ``model`` — the model's name;
    * ``bounds`` — (min corner, max corner) of everything drawn.

    A skeleton is drawn with a segment from each body's parent origin (or its
    anchor) to its own origin, and a thin one from the origin to its centre of mass.
    """
    tt = np.asarray(t, dtype=float).reshape(-1)
    Q = np.asarray(q, dtype=float)
    if Q.ndim != 2 or Q.shape[0] != tt.size:
        raise StateError(f"animation_frames: q must have shape ({tt.size}, {model.nq}), "
                         f"got {Q.shape}")
    if Q.shape[1] != model.nq:
        raise StateError(f"animation_frames: q has {Q.shape[1]} columns, model {model.name!r} "
                         f"has nq = {model.nq}")
    if tt.size == 0:
        raise StateError("animation_frames: the trajectory is empty")
    if not (np.all(np.isfinite(tt)) and np.all(np.isfinite(Q))):
        raise StateError("animation_frames: t or q contains NaN or infinity")
    if np.any(np.diff(tt) < 0):
        raise StateError("animation_frames: t is not increasing")
    if int(max_frames) < 1:
        raise KanedynError(f"animation_frames: max_frames must be >= 1, got {max_frames}")
    F = min(int(max_frames), tt.size)
    if F == tt.size:
        idx = np.arange(tt.size)
    else:
        targets = np.linspace(tt[0], tt[-1], F)
        idx = np.clip(np.searchsorted(tt, targets), 0, tt.size - 1)
    origins = np.empty((F, model.nb, 3))
    coms = np.empty((F, model.nb, 3))
    quats = np.empty((F, model.nb, 4))
    for f, k in enumerate(idx):
        kin = dyn.forward_kinematics(model, np.ascontiguousarray(Q[k]))
        origins[f] = kin.p
        for b in model.bodies:
            coms[f, b.index] = kin.p[b.index] + kin.R[b.index] @ b.com
            quats[f, b.index] = matrix_to_quat(kin.R[b.index])
    # a root's joint frame is fixed in the world at the placement's origin; a free-floating
    # root is tied to nothing, so it gets no anchor and no segment to one
    roots = [b.index for b in model.bodies if b.parent < 0 and b.joint.kind != "free"]
    anchors = np.array([model.bodies[i].placement.translation for i in roots]).reshape(-1, 3)
    pts = np.concatenate([origins.reshape(-1, 3), coms.reshape(-1, 3), anchors])
    return {
        "model": model.name,
        "t": tt[idx].tolist(),
        "origins": origins.tolist(),
        "coms": coms.tolist(),
        "quats": quats.tolist(),
        "anchors": anchors.tolist(),
        "roots": roots,
        "parents": [b.parent for b in model.bodies],
        "names": model.body_names,
        "bounds": [pts.min(axis=0).tolist(), pts.max(axis=0).tolist()],
    }
