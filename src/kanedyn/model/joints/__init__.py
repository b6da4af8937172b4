"""Joint types, one module each: revolute, prismatic, helical, planar, spherical, free
(and fixed, which ModelBuilder merges away). :mod:`.base` holds the Joint base class,
what it declares, and the registry :data:`JOINT_TYPES` (:func:`register_joint_type`).
"""

from .base import (
    JOINT_TYPES,
    QUAT_TOL,
    Joint,
    JointLimits,
    register_joint_type,
)
from .fixed import Fixed
from .free import Free
from .helical import Helical
from .planar import Planar
from .prismatic import Prismatic
from .revolute import Revolute
from .spherical import Spherical

__all__ = [
    "JOINT_TYPES", "QUAT_TOL", "Fixed", "Free", "Helical", "Joint", "JointLimits", "Planar",
    "Prismatic", "Revolute", "Spherical", "register_joint_type",
]
