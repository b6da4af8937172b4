"""Robot identification: the inertial parameters and the joint friction of a robot,
together, from measured trajectories (issue 20).

- :func:`joint_torque_regressor` (also ``kd.joint_torque_regressor``): τ = Y(q, v, a) π,
  π the ten standard parameters of every body (:func:`standard_parameters`);
- :func:`base_parameters`: the identifiable combinations π_b = K π, named in words;
- :func:`fit`: base parameters and joint friction (viscous + Coulomb, or Stribeck by
  variable projection) together from (q, v, a, τ) samples, weighted by the joints' noise,
  with covariance, intervals and the condition number (an :class:`Identification`);
- :func:`prepare`, :func:`read_csv`: measured (t, q, τ), zero-phase filtered, with q̇, q̈
  from q;
- :func:`excitation`: a finite-Fourier-series trajectory within the joints' limits that
  minimises the condition number of the base regressor (an :class:`Excitation`);
- :func:`validate`: the torque prediction error and the output error of the identified
  model simulated on held-out data (a :class:`Validation`);
- :func:`report`, :func:`plot_torques`, :func:`plot_friction`: the report with its plots
  (measured against predicted torque, friction curves with their bands), as PNG files.
"""

from .base import BaseParameters, base_parameters, base_parameters_of
from .data import Lowpass, prepare, read_csv
from .design import Excitation, excitation
from .estimation import (
    FRICTION,
    ConsistentEstimate,
    Identification,
    consistent,
    fit,
    friction_columns,
    friction_names,
    pseudo_inertia,
)
from .regressor import (
    PARAMETERS,
    joint_torque_regressor,
    joint_torque_regressor_reference,
    parameter_names,
    standard_parameters,
)
from .report import friction_band, plot_friction, plot_torques, report
from .validation import Validation, identified_model, validate

__all__ = [
    "BaseParameters",
    "ConsistentEstimate",
    "Excitation",
    "FRICTION",
    "Identification",
    "Lowpass",
    "PARAMETERS",
    "Validation",
    "base_parameters",
    "base_parameters_of",
    "consistent",
    "excitation",
    "fit",
    "friction_band",
    "friction_columns",
    "friction_names",
    "identified_model",
    "joint_torque_regressor",
    "joint_torque_regressor_reference",
    "parameter_names",
    "plot_friction",
    "plot_torques",
    "prepare",
    "pseudo_inertia",
    "read_csv",
    "report",
    "standard_parameters",
    "validate",
]
