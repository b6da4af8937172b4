"""6D spatial vector algebra in Plücker coordinates (Featherstone 2008, ch. 2).

Conventions (see DESIGN.md): motion vectors ``[ω; v_O]``, force vectors
``[n_O; f]``, angular part first. ``X = B_X_A = [E 0; -E r× E]`` maps motion
vectors from A to B coordinates, with ``E`` the rotation from A to B
coordinates and ``r`` the position of B's origin in A coordinates. Forces map
with ``X* = X^-T``. Quaternions are unit and scalar-first ``(w, x, y, z)``.
"""

from .algebra import crf, crm, cross_force, cross_motion, skew, unskew
from .inertia import (
    INERTIA_ROUNDING,
    clip_rotational_inertia,
    inertia_parameters,
    rotational_inertia_defect,
    rotational_inertia_is_physical,
    spatial_inertia,
    transform_inertia,
)
from .rotation import (
    axis_angle,
    matrix_to_quat,
    quat_conjugate,
    quat_exp,
    quat_log,
    quat_multiply,
    quat_normalize,
    quat_to_matrix,
    rotx,
    roty,
    rotz,
    so3_exp,
    so3_log,
)
from .transform import Transform, plucker, plucker_force, rot, xlt

__all__ = [
    "Transform",
    "axis_angle",
    "crf",
    "crm",
    "cross_force",
    "cross_motion",
    "INERTIA_ROUNDING",
    "clip_rotational_inertia",
    "inertia_parameters",
    "rotational_inertia_defect",
    "matrix_to_quat",
    "plucker",
    "plucker_force",
    "quat_conjugate",
    "quat_exp",
    "quat_log",
    "quat_multiply",
    "quat_normalize",
    "quat_to_matrix",
    "rot",
    "rotational_inertia_is_physical",
    "rotx",
    "roty",
    "rotz",
    "skew",
    "so3_exp",
    "so3_log",
    "spatial_inertia",
    "transform_inertia",
    "unskew",
    "xlt",
]
