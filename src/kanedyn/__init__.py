"""kanedyn: rigid multibody dynamics — spatial algebra, recursive algorithms, Kane's method,
constrained DAEs, energy-conserving integration and Stribeck friction.

>>> import kanedyn as kd
>>> model = kd.models.pendulum_chain(2)
>>> q, v = kd.neutral(model), [1.0, 0.0]
>>> M = kd.crba(model, q)
"""

# first: the code generation level must be set before numba makes its target machine
from . import _codegen  # noqa: F401  (isort: skip)
from . import constraints, forces, friction, identify, verify
from .dynamics import (
    Data,
    aba,
    aba_derivatives,
    center_of_mass,
    crba,
    forward_kinematics,
    frame_acceleration,
    frame_jacobian,
    frame_jacobian_time_variation,
    frame_placement,
    frame_velocity,
    gravity_torques,
    jacobian,
    kinetic_energy,
    nonlinear_effects,
    potential_energy,
    rnea,
    rnea_derivatives,
    spatial_momentum,
)
from .dynamics.centroidal import (
    centroidal_momentum,
    centroidal_momentum_bias,
    centroidal_momentum_matrix,
)
from .dynamics.joint_wrenches import joint_wrenches
from .errors import (
    CompilerError,
    ConstraintError,
    DivergenceError,
    FrictionError,
    IdentificationError,
    KanedynError,
    KanedynWarning,
    ModelError,
    ScenarioError,
    SolverError,
    StateError,
    SymbolicError,
    URDFError,
)
from .identify import joint_torque_regressor
from .model import (
    Model,
    ModelBuilder,
    difference,
    integrate_configuration,
    neutral,
    q_dot,
    random_configuration,
)
from .model import builders as models
from .model.mjcf import load_mjcf
from .model.urdf import load_robot, load_urdf, load_urdf_string
from .sim import ModelSystem, Trajectory, simulate
from .sim import stickslip as _stickslip
from .sim import time_stepping as _time_stepping
from .sim import trajectory as _trajectory
from .sim.batch import simulate_batch
from .sim.sweep import read_sweep, sweep

__version__ = "0.1.0"


def _trajectory_3d_view(traj) -> str | None:
    """The 3D view of a trajectory of a Model, for ``Trajectory._repr_html_`` (viz is
    imported on first display, so ``import kanedyn`` does not pay for it)."""
    model = getattr(getattr(traj, "system", None), "model", None)
    if not isinstance(model, Model):
        return None
    from .viz import trajectory_view_html

    return trajectory_view_html(traj, model)


_trajectory.HTML_VIEWS.append(_trajectory_3d_view)

# friction is a leaf (DESIGN.md: it never imports sim, not even in a function); its
# ``simulate`` and ``time_stepping`` are sim's stick–slip simulations under their older
# names, bound here, where both packages are known
friction.simulate = _stickslip.friction_simulate
friction.time_stepping = _time_stepping.time_stepping

__all__ = [
    "CompilerError",
    "Data",
    "ConstraintError",
    "DivergenceError",
    "FrictionError",
    "IdentificationError",
    "KanedynError",
    "KanedynWarning",
    "Model",
    "ModelBuilder",
    "ModelError",
    "ModelSystem",
    "ScenarioError",
    "SolverError",
    "StateError",
    "SymbolicError",
    "Trajectory",
    "URDFError",
    "aba",
    "aba_derivatives",
    "forces",
    "friction",
    "center_of_mass",
    "centroidal_momentum",
    "centroidal_momentum_bias",
    "centroidal_momentum_matrix",
    "joint_wrenches",
    "constraints",
    "crba",
    "difference",
    "forward_kinematics",
    "frame_placement",
    "frame_acceleration",
    "frame_jacobian",
    "frame_jacobian_time_variation",
    "frame_velocity",
    "gravity_torques",
    "identify",
    "integrate_configuration",
    "jacobian",
    "joint_torque_regressor",
    "kinetic_energy",
    "load_mjcf",
    "load_robot",
    "load_urdf",
    "load_urdf_string",
    "models",
    "neutral",
    "nonlinear_effects",
    "potential_energy",
    "q_dot",
    "random_configuration",
    "read_sweep",
    "rnea",
    "rnea_derivatives",
    "simulate",
    "simulate_batch",
    "spatial_momentum",
    "sweep",
    "verify",
]
