"""The multibody model: joints, bodies, tree topology, builders and the URDF loader."""

from .configuration import difference, integrate_configuration, neutral, q_dot, random_configuration
from .joints import (
    JOINT_TYPES,
    Fixed,
    Free,
    Helical,
    Joint,
    JointLimits,
    Planar,
    Prismatic,
    Revolute,
    Spherical,
)
from .mjcf import load_mjcf, parse_mjcf
from .model import Body, Frame, Model, ModelBuilder
from .urdf import load_robot, load_urdf, load_urdf_string, parse_urdf, robot_path
from .visuals import VisualGeometry, load_urdf_visuals

__all__ = [
    "JOINT_TYPES",
    "Body",
    "Fixed",
    "Frame",
    "Free",
    "Helical",
    "Joint",
    "JointLimits",
    "Model",
    "ModelBuilder",
    "Planar",
    "Prismatic",
    "Revolute",
    "Spherical",
    "difference",
    "load_mjcf",
    "parse_mjcf",
    "load_robot",
    "load_urdf",
    "load_urdf_string",
    "parse_urdf",
    "robot_path",
    "integrate_configuration",
    "neutral",
    "q_dot",
    "random_configuration",
    "VisualGeometry",
    "load_urdf_visuals",
]
