"""The revolute joint: rotation q about a unit axis of the joint frame.

X_J = rot(R(a, q))ᵀ-Plücker, S = (a; 0), W = 1, q ⊕ x = q + x. Compiled
primitives (below the class; see :mod:`.base`): code REVOLUTE in
:mod:`kanedyn.dynamics.layout`; an axis along a coordinate axis k packs
SIDX = AXIS_ID = k, for which the kernels of :mod:`kanedyn.dynamics.kernels.joint_rows`
take the sparse rotation shortcut.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...spatial import axis_angle
from .base import Joint, compiled_primitive, register_joint_type, unit_axis


def coordinate_axis(axis) -> int:
    """k when ``axis`` is the k-th unit vector exactly, else -1."""
    for k in range(3):
        if np.array_equal(np.asarray(axis, dtype=float), np.eye(3)[k]):
            return k
    return -1


def axis_rotation(a, c, s) -> list:
    """Rodrigues' formula ``R = c 1 + s [a]× + (1 - c) a aᵀ`` for a unit axis a and
    c = cos θ, s = sin θ, as nested lists of whatever numbers or symbols they are."""
    ax = [[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]]
    return [[(c if r == k else 0) + s * ax[r][k] + (1 - c) * a[r] * a[k] for k in range(3)]
            for r in range(3)]


@register_joint_type
@dataclass(frozen=True)
class Revolute(Joint):
    """Rotation by q about a unit axis of the joint frame (URDF revolute and continuous)."""

    axis: tuple = (0.0, 0.0, 1.0)
    continuous: bool = False
    nq = 1
    nv = 1
    kind = "revolute"
    compiled_code = "REVOLUTE"
    compiled_parameters = ("AXIS",)

    def __post_init__(self):
        object.__setattr__(self, "axis", tuple(unit_axis(self.axis, self.name)))

    def pose(self, qj):
        return axis_angle(self.axis, float(qj[0])), np.zeros(3)

    def symbolic_model(self, qj, uj, ops):
        s, c = ops.sincos(qj[0])
        zero = ops.number(0.0)
        return axis_rotation([ops.number(x) for x in self.axis], c, s), [zero] * 3, [uj[0]]

    def motion_subspace(self, qj=None):
        S = np.zeros((6, 1))
        S[:3, 0] = self.axis
        return S

    def pack(self, row, layout):
        super().pack(row, layout)
        row[layout.AXIS:layout.AXIS + 3] = self.axis
        k = coordinate_axis(self.axis)
        row[layout.SIDX] = k
        row[layout.AXIS_ID] = k


# URDF's "continuous" is a revolute joint without limits
register_joint_type(Revolute, "continuous")


# --- compiled primitives (a = (a0, a1, a2) the unit axis) ---------------------------

@compiled_primitive
def joint_pose(q, k, a0, a1, a2):
    """(0, R, p = 0) with R = c 1 + s a× + (1 - c) a aᵀ (Rodrigues), c, s of q[k]."""
    th = q[k]
    c = np.cos(th)
    s = np.sin(th)
    t = 1.0 - c
    return (0, c + t * a0 * a0, t * a0 * a1 - s * a2, t * a0 * a2 + s * a1,
            t * a0 * a1 + s * a2, c + t * a1 * a1, t * a1 * a2 - s * a0,
            t * a0 * a2 - s * a1, t * a1 * a2 + s * a0, c + t * a2 * a2, 0.0, 0.0, 0.0)


@compiled_primitive
def motion_subspace_column(c, a0, a1, a2):
    """S = (a; 0)."""
    return a0, a1, a2, 0.0, 0.0, 0.0


@compiled_primitive
def motion_subspace_times(x, o, a0, a1, a2):
    """S x = (x a; 0 a) (0 a, not 0: the bits of the kernels' branch, -0 where a_m < 0)."""
    w = x[o]
    return w * a0, w * a1, w * a2, 0.0 * a0, 0.0 * a1, 0.0 * a2


@compiled_primitive
def motion_subspace_transpose_times(F, k, c, a0, a1, a2):
    """Sᵀ f = a · n, f = (n; f) = F[k]."""
    return a0 * F[k, 0] + a1 * F[k, 1] + a2 * F[k, 2]
