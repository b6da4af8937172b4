"""The prismatic joint: translation q along a unit axis of the joint frame.

X_J = translation by q a, S = (0; a), W = 1, q ⊕ x = q + x. Compiled
primitives: code PRISMATIC; an axis along coordinate axis k packs SIDX = 3 + k
(S is then a unit column, which the kernels exploit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Joint, register_joint_type, unit_axis
from .revolute import coordinate_axis


@register_joint_type
@dataclass(frozen=True)
class Prismatic(Joint):
    """Translation by q along a unit axis of the joint frame."""

    axis: tuple = (0.0, 0.0, 1.0)
    nq = 1
    nv = 1
    kind = "prismatic"
    compiled_code = "PRISMATIC"

    def __post_init__(self):
        object.__setattr__(self, "axis", tuple(unit_axis(self.axis, self.name)))

    def pose(self, qj):
        return np.eye(3), float(qj[0]) * np.asarray(self.axis)

    def motion_subspace(self, qj=None):
        S = np.zeros((6, 1))
        S[3:, 0] = self.axis
        return S

    def pack(self, row, layout):
        super().pack(row, layout)
        row[layout.AXIS:layout.AXIS + 3] = self.axis
        k = coordinate_axis(self.axis)
        row[layout.SIDX] = -1 if k < 0 else 3 + k
