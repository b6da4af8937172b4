"""kanedyn.constraints: constrained systems, DAE formulations, consistent initial values.

See docs/constraints.md. ``problems`` holds the test problems (pendulum, slider–crank,
four-bar, Andrews' squeezer, car axis) with their published reference solutions.
"""

from . import problems
from .formulations import DAE, FORMULATIONS, baumgarte_parameters, formulate, index1_ode
from .system import ConstrainedMechanics, DescriptorSystem

__all__ = [
    "DAE",
    "FORMULATIONS",
    "ConstrainedMechanics",
    "DescriptorSystem",
    "baumgarte_parameters",
    "formulate",
    "index1_ode",
    "problems",
]
