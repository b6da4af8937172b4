"""Joint friction: Stribeck laws and their variants, smoothing, LuGre, Karnopp's band,
identification from data and feed-forward compensation.

A leaf package (DESIGN.md): it imports spatial, model, dynamics and errors only. Running
a mechanism with friction is ``kd.simulate``'s job (methods ``"stickslip"`` and
``"time_stepping"``, :mod:`kanedyn.sim.stickslip`); ``friction.simulate`` and
``friction.time_stepping`` are those simulations under their older names, bound here by
the package's ``__init__`` (so that this package never imports ``sim``).

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
from .karnopp import Karnopp
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

__all__ = [
    "Asymmetric",
    "FitResult",
    "FrictionLaw",
    "Karnopp",
    "LuGre",
    "MODELS",
    "RationalStribeck",
    "SimscapeFriction",
    "Smoothing",
    "Stribeck",
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
]
