"""Force elements applied in a simulation: springs, dampers, joint friction, actuators,
external wrenches.

Pass them to ``kd.simulate(..., forces=[...])``. Each is a
:class:`ForceElement`: ``generalized_force(t, q, v)`` gives its joint-space τ;
conservative ones (springs) also give ``potential(q)``, which is part of the
energy, while the others feed the non-conservative work of the energy budget.
Gravity is part of the model, not a force element.
"""

from .base import ForceElement
from .friction import JointFriction, urdf_friction
from .joint import JointDamper, JointSpring, JointTorque, SinusoidalTorque
from .mjcf import mjcf_forces
from .set import ForceSet
from .wrench import ExternalWrench

__all__ = ["ExternalWrench", "ForceElement", "ForceSet", "JointDamper", "JointFriction",
           "JointSpring", "JointTorque", "SinusoidalTorque", "mjcf_forces",
           "urdf_friction"]
