"""The helical (screw) joint: rotation q about the axis, translation ``h q`` along it.

S = (a; h a) (the axis passes through the joint frame's origin), W = 1,
q ⊕ x = q + x. Compiled primitives (below the class; see :mod:`.base`): code HELICAL, AXIS and PITCH
packed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...spatial import axis_angle
from . import revolute
from .base import Joint, compiled_primitive, register_joint_type, unit_axis


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
    compiled_parameters = ("AXIS", "PITCH")

    def __post_init__(self):
        object.__setattr__(self, "axis", tuple(unit_axis(self.axis, self.name)))

    def pose(self, qj):
        a = np.asarray(self.axis)
        return axis_angle(a, float(qj[0])), self.pitch * float(qj[0]) * a

    def symbolic_model(self, qj, uj, ops):
        s, c = ops.sincos(qj[0])
        a = [ops.number(x) for x in self.axis]
        p = [ops.number(self.pitch * x) * qj[0] for x in self.axis]
        return revolute.axis_rotation(a, c, s), p, [uj[0]]

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


# --- compiled primitives (a = (a0, a1, a2) the unit axis, h the pitch) ----------------

@compiled_primitive
def screw_translation(q, k, a0, a1, a2, h):
    """p = (h q[k]) a, the translation of the screw."""
    d = h * q[k]
    return d * a0, d * a1, d * a2


@compiled_primitive
def joint_pose(q, k, a0, a1, a2, h):
    """(0, R, p) with R the revolute one (Rodrigues) and p the screw's translation (the
    dispatcher inlines these two parts, sharing the rotation with the revolute code)."""
    (bad, r00, r01, r02, r10, r11, r12, r20, r21, r22,
     _, _, _) = revolute.joint_pose(q, k, a0, a1, a2)
    p0, p1, p2 = screw_translation(q, k, a0, a1, a2, h)
    return bad, r00, r01, r02, r10, r11, r12, r20, r21, r22, p0, p1, p2


@compiled_primitive
def motion_subspace_column(c, a0, a1, a2, h):
    """S = (a; h a)."""
    return a0, a1, a2, h * a0, h * a1, h * a2


@compiled_primitive
def motion_subspace_times(x, o, a0, a1, a2, h):
    """S x = (x a; (x h) a)."""
    w = x[o]
    v = w * h
    return w * a0, w * a1, w * a2, v * a0, v * a1, v * a2


@compiled_primitive
def motion_subspace_transpose_times(F, k, c, a0, a1, a2, h):
    """Sᵀ f = a · (n + h f), (n; f) = F[k]."""
    return (a0 * (F[k, 0] + h * F[k, 3]) + a1 * (F[k, 1] + h * F[k, 4])
            + a2 * (F[k, 2] + h * F[k, 5]))
