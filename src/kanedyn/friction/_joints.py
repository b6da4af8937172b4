"""Which speed of a mechanism a friction law acts on."""

from __future__ import annotations

import numpy as np

from ..errors import FrictionError


def joint_speed_index(system, joint) -> int:
    """Index into v of a 1-DOF joint, given by name or by speed index.

    ``system`` is anything with ``nv`` and either a ``model`` (a Model: names are
    its joints'), a ``source_model`` (a compiled Kane tree of a Model, whose speeds are
    the Model's) or ``joint_names`` (one name per speed); an integer is taken as the
    speed index itself."""
    model = getattr(system, "model", None)
    if model is None:
        model = getattr(system, "source_model", None)
    if isinstance(joint, str):
        if model is None:
            names = getattr(system, "joint_names", None)
            if names is None or joint not in names:
                raise FrictionError(f"joint {joint!r} unknown to this system (give its v index)")
            return list(names).index(joint)
        b = model.bodies[model.joint_index(joint)]
        if b.joint.nv != 1:
            raise FrictionError(
                f"joint {joint!r} is {b.joint.kind} with {b.joint.nv} speeds; "
                "friction elements act on 1-DOF joints"
            )
        return b.iv.start
    if isinstance(joint, (int, np.integer)) and 0 <= int(joint) < system.nv:
        return int(joint)
    raise FrictionError(f"joint {joint!r} is not a joint name or a speed index 0..{system.nv - 1}")


class ModelSpeeds:
    """A Model seen only for :func:`joint_speed_index` (its ``model`` and ``nv``)."""

    def __init__(self, model):
        self.model, self.nv = model, model.nv
