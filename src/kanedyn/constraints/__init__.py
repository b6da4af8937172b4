"""kanedyn.constraints: constrained systems, DAE formulations, consistent initial values.

See docs/constraints.md. ``problems`` holds the test problems (pendulum, slider–crank,
four-bar, Andrews' squeezer, car axis) with their published reference solutions.
"""

from . import problems
from .consistent import (
    ConsistentState,
    consistent_initial_values,
    project_position,
    project_velocity,
)
from .formulations import DAE, FORMULATIONS, baumgarte_parameters, formulate, index1_ode
from .kane_system import KaneConstrainedSystem
from .loops import LoopClosure, UserConstraint, VelocityConstraint, loop_closure_from_spec
from .mjcf import mjcf_loops, mjcf_system
from .model_system import ConstrainedSystem
from .system import ConstrainedMechanics, DescriptorSystem

__all__ = [
    "mjcf_loops",
    "mjcf_system",
    "ConsistentState",
    "ConstrainedSystem",
    "LoopClosure",
    "UserConstraint",
    "VelocityConstraint",
    "consistent_initial_values",
    "project_position",
    "project_velocity",
    "DAE",
    "FORMULATIONS",
    "ConstrainedMechanics",
    "DescriptorSystem",
    "KaneConstrainedSystem",
    "baumgarte_parameters",
    "formulate",
    "index1_ode",
    "loop_closure_from_spec",
    "problems",
]
