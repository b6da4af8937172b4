"""The prismatic joint: translation q along a unit axis of the joint frame.

X_J = translation by q a, S = (0; a), W = 1, q ⊕ x = q + x. Compiled
primitives (below the class; see :mod:`.base`): code PRISMATIC; an axis along
coordinate axis k packs SIDX = 3 + k (S is then a unit column, which the kernels
exploit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Joint, compiled_primitive, register_joint_type, unit_axis
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
    compiled_parameters = ("AXIS",)

    def __post_init__(self):
        object.__setattr__(self, "axis", tuple(unit_axis(self.axis, self.name)))

    def pose(self, qj):
        return np.eye(3), float(qj[0]) * np.asarray(self.axis)

    def symbolic_model(self, qj, uj, ops):
        one, zero = ops.number(1.0), ops.number(0.0)
        R = [[one if r == k else zero for k in range(3)] for r in range(3)]
        return R, [ops.number(x) * qj[0] for x in self.axis], [uj[0]]

    def motion_subspace(self, qj=None):
        S = np.zeros((6, 1))
        S[3:, 0] = self.axis
        return S

    def pack(self, row, layout):
        super().pack(row, layout)
        row[layout.AXIS:layout.AXIS + 3] = self.axis
        k = coordinate_axis(self.axis)
        row[layout.SIDX] = -1 if k < 0 else 3 + k


# --- compiled primitives (a = (a0, a1, a2) the unit axis) ---------------------------

@compiled_primitive
def joint_pose(q, k, a0, a1, a2):
    """(0, R = 1, p = q[k] a)."""
    th = q[k]
    return (0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, th * a0, th * a1, th * a2)


@compiled_primitive
def motion_subspace_column(c, a0, a1, a2):
    """S = (0; a)."""
    return 0.0, 0.0, 0.0, a0, a1, a2


@compiled_primitive
def motion_subspace_times(x, o, a0, a1, a2):
    """S x = (0 a; x a) (0 a, not 0: the bits of the kernels' branch)."""
    v = x[o]
    return 0.0 * a0, 0.0 * a1, 0.0 * a2, v * a0, v * a1, v * a2


@compiled_primitive
def motion_subspace_transpose_times(F, k, c, a0, a1, a2):
    """Sᵀ f = a · f, (n; f) = F[k]."""
    return a0 * F[k, 3] + a1 * F[k, 4] + a2 * F[k, 5]
