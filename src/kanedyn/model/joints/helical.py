"""The helical (screw) joint: rotation q about the axis, translation ``h q`` along it.

S = (a; h a) (the axis passes through the joint frame's origin), W = 1,
q ⊕ x = q + x. Compiled primitives: code HELICAL, AXIS and PITCH packed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...spatial import axis_angle
from .base import Joint, register_joint_type, unit_axis


@register_joint_type
@dataclass(frozen=True)
class Helical(Joint):
    """Screw motion: rotation q about the axis with translation ``pitch * q`` along it."""

    axis: tuple = (0.0, 0.0, 1.0)
    pitch: float = 0.0
    nq = 1
    nv = 1
    kind = "helical"
    compiled_code = "HELICAL"

    def __post_init__(self):
        object.__setattr__(self, "axis", tuple(unit_axis(self.axis, self.name)))

    def pose(self, qj):
        a = np.asarray(self.axis)
        return axis_angle(a, float(qj[0])), self.pitch * float(qj[0]) * a

    def motion_subspace(self, qj=None):
        a = np.asarray(self.axis)
        S = np.zeros((6, 1))
        S[:3, 0] = a
        S[3:, 0] = self.pitch * a  # the axis passes through the origin, so v_O = h a
        return S

    def pack(self, row, layout):
        super().pack(row, layout)
        row[layout.AXIS:layout.AXIS + 3] = self.axis
        row[layout.PITCH] = self.pitch
