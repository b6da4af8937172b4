"""Robot identification: the inertial parameters and the joint friction of a robot,
together, from measured trajectories (issue 20).

- :func:`joint_torque_regressor` (also ``kd.joint_torque_regressor``): τ = Y(q, v, a) π,
  π the ten standard parameters of every body (:func:`standard_parameters`);
"""

from .regressor import (
    PARAMETERS,
    joint_torque_regressor,
    joint_torque_regressor_reference,
    parameter_names,
    standard_parameters,
)

__all__ = [
    "PARAMETERS",
    "joint_torque_regressor",
    "joint_torque_regressor_reference",
    "parameter_names",
    "standard_parameters",
]
