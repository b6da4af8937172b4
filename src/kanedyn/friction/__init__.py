"""Joint friction: Stribeck laws and their variants, smoothing, LuGre, exact stick–slip,
identification from data and feed-forward compensation.

>>> from kanedyn import friction
>>> law = friction.Stribeck(Fc=1.0, Fs=1.5, vs=0.01, delta=2.0, Fv=0.1)
>>> round(law(0.02), 6) == round(1.0 + 0.5 * 2.718281828459045 ** -4 + 0.002, 6)
True
"""

from .compensation import feedforward_torque, friction_feedforward
from .identify import (
    MODELS,
    FitResult,
    fit,
    fit_joint,
    fit_trajectory,
    joint_friction_samples,
)
from .laws import (
    Asymmetric,
    FrictionLaw,
    RationalStribeck,
    SimscapeFriction,
    Stribeck,
    TanhStribeck,
    exponential,
    gaussian,
)
from .lugre import LuGre
from .smoothing import Smoothing, creep_velocity, make_smoothing
from .stickslip import FrictionTrajectory, Switch, simulate
from .timestepping import Karnopp, SteppedTrajectory, time_stepping

__all__ = [
    "Asymmetric",
    "FitResult",
    "FrictionLaw",
    "Karnopp",
    "FrictionTrajectory",
    "LuGre",
    "MODELS",
    "RationalStribeck",
    "SimscapeFriction",
    "Smoothing",
    "SteppedTrajectory",
    "Stribeck",
    "Switch",
    "TanhStribeck",
    "creep_velocity",
    "exponential",
    "feedforward_torque",
    "fit",
    "fit_joint",
    "fit_trajectory",
    "friction_feedforward",
    "joint_friction_samples",
    "gaussian",
    "make_smoothing",
    "simulate",
    "time_stepping",
]
