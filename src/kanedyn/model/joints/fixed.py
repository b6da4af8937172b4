"""The fixed joint: no motion.

It never reaches an algorithm: :meth:`kanedyn.model.ModelBuilder.build` merges a
body on a fixed joint into its parent (inertia and frames carried over, see
``kanedyn/model/model.py``), so a Model's bodies have nv ≥ 1 and no kernel or
packing knows the kind "fixed".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Joint, register_joint_type


@register_joint_type
@dataclass(frozen=True)
class Fixed(Joint):
    """No motion; merged into the parent body when a Model is built."""

    kind = "fixed"

    def pose(self, qj):
        return np.eye(3), np.zeros(3)

    def motion_subspace(self, qj=None):
        return np.zeros((6, 0))
