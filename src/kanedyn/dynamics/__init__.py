"""Numeric algorithms on a Model: kinematics, RNEA, CRBA, ABA, Jacobians, energy, momentum."""

from .aba import aba
from .centroidal import centroidal_momentum, centroidal_momentum_bias, centroidal_momentum_matrix
from .crba import crba
from .data import Data
from .derivatives import aba_derivatives, kinetic_energy_gradient_derivative, rnea_derivatives
from .energy import kinetic_energy, potential_energy, spatial_momentum
from .frames import (
    frame_acceleration,
    frame_jacobian,
    frame_jacobian_time_variation,
    frame_velocity,
)
from .jacobian import jacobian
from .joint_wrenches import joint_wrenches
from .kinematics import Kinematics, center_of_mass, forward_kinematics, frame_placement
from .rnea import gravity_torques, nonlinear_effects, rnea

__all__ = [
    "Data",
    "Kinematics",
    "aba",
    "aba_derivatives",
    "center_of_mass",
    "centroidal_momentum",
    "centroidal_momentum_bias",
    "centroidal_momentum_matrix",
    "joint_wrenches",
    "crba",
    "forward_kinematics",
    "frame_placement",
    "frame_acceleration",
    "frame_jacobian",
    "frame_jacobian_time_variation",
    "frame_velocity",
    "gravity_torques",
    "jacobian",
    "kinetic_energy",
    "kinetic_energy_gradient_derivative",
    "nonlinear_effects",
    "potential_energy",
    "rnea",
    "rnea_derivatives",
    "spatial_momentum",
]
