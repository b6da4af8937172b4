"""Loop closures of an MJCF model: its ``<equality connect|weld>`` elements.

MuJoCo enforces an equality softly (``solref``/``solimp``); here it is an
exact holonomic constraint of a :class:`ConstrainedSystem`: ``connect`` a
point constraint (the anchor on body1 stays on the point of body2 it
touches at the reference configuration), ``weld`` a weld (body2's anchor
frame keeps its reference pose, or ``relpose``, in body1).
"""

from __future__ import annotations

from .loops import LoopClosure
from .model_system import ConstrainedSystem


def mjcf_loops(robot) -> list[LoopClosure]:
    """One :class:`LoopClosure` per active ``<connect>``/``<weld>`` of a parsed MJCF model
    (:class:`kanedyn.model.mjcf.MJCFRobot`), named as in the file."""
    return [LoopClosure(e.body_a, e.body_b, e.kind, e.frame_a, e.frame_b, name=e.name)
            for e in robot.equalities]


def mjcf_system(robot):
    """What ``kd.simulate`` takes for an MJCF robot: its Model, or a
    :class:`ConstrainedSystem` of it with its loop closures when the file has equalities
    (pass the force elements, e.g. :func:`kanedyn.forces.mjcf_forces`, to ``kd.simulate``)."""
    loops = mjcf_loops(robot)
    if not loops:
        return robot.model
    return ConstrainedSystem(robot.model, loops)
