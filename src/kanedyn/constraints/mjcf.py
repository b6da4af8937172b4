"""Loop closures of an MJCF model: its ``<equality connect|weld>`` elements.

MuJoCo enforces an equality softly (``solref``/``solimp``); here it is an
exact holonomic constraint of a :class:`ConstrainedSystem`: ``connect`` a
point constraint (the anchor on body1 stays on the point of body2 it
touches at the reference configuration), ``weld`` a weld (body2's anchor
frame keeps its reference pose in body1; with ``relpose``, body2's anchor stays
on body1's point ``relpose[:3]`` and body2's axes keep the rotation
``relpose[3:]`` relative to body1's).

A connect between bodies that all move in one plane (a planar linkage,
common in MJCF files) has a row along the plane's normal that no motion can
change: its Jacobian row is zero everywhere, which a soft constraint
tolerates and an exact one does not (the constraint matrix would lose rank).
Such rows are dropped: a row whose Jacobian vanishes at several random
configurations vanishes identically (the rows are analytic in q), so the row
is constant, and it is zero at the reference configuration where MuJoCo
defines the constraint as satisfied.
"""

from __future__ import annotations

import numpy as np

from ..model import Model, random_configuration
from .loops import LoopClosure
from .model_system import ConstrainedSystem

#: random configurations at which a connect's rows are tested for an identically zero Jacobian
_SAMPLES = 4


def mjcf_loops(robot, drop_idle_rows: bool = True) -> list[LoopClosure]:
    """One :class:`LoopClosure` per active ``<connect>``/``<weld>`` of a parsed MJCF model
    (:class:`kanedyn.model.mjcf.MJCFRobot`), named as in the file.

    ``drop_idle_rows``: a connect keeps only its world axes along which the two bodies
    can move apart (see the module docstring)."""
    out = []
    for e in robot.equalities:
        lc = LoopClosure(e.body_a, e.body_b, e.kind, e.frame_a, e.frame_b, name=e.name)
        if drop_idle_rows and e.kind == "point":
            axes = _moving_axes(robot.model, lc)
            if axes != (0, 1, 2):
                lc = LoopClosure(e.body_a, e.body_b, "point", e.frame_a, e.frame_b, axes,
                                 e.name)
        out.append(lc)
    return out


def _moving_axes(model, lc: LoopClosure) -> tuple[int, ...]:
    system = ConstrainedSystem(model, [lc])
    G = np.array([system.constraint_matrix(0.0, random_configuration(model, seed))
                  for seed in range(_SAMPLES)])  # (samples, 3, nv)
    size = np.abs(G).max(axis=(0, 2))
    keep = tuple(int(a) for a in range(3) if size[a] > 1e-12 * max(size.max(), 1e-300))
    return keep or (0, 1, 2)


def mjcf_system(robot, drop_idle_rows: bool = True) -> Model | ConstrainedSystem:
    """What ``kd.simulate`` takes for an MJCF robot: its Model, or a
    :class:`ConstrainedSystem` of it with its loop closures when the file has equalities
    (pass the force elements, e.g. :func:`kanedyn.forces.mjcf_forces`, to ``kd.simulate``)."""
    loops = mjcf_loops(robot, drop_idle_rows)
    if not loops:
        return robot.model
    return ConstrainedSystem(robot.model, loops)
