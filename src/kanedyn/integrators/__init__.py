"""kanedyn.integrators — every method behind ``kd.simulate(..., method=name)``.

Built in (one file per family; each docstring gives the order and what is conserved):

- ``rk4`` — explicit Runge–Kutta, order 4, conserves nothing (rk4.py; for Models
  kd.simulate runs a compiled loop: kanedyn.sim.batch.rk4_run, built on the stages of
  rk4_compiled.py, for additive coordinates, kanedyn.sim.rk4_manifold for ball, free,
  planar joints and armature);
- ``dopri5`` — adaptive Dormand–Prince 5(4) with dense output (dopri5.py);
- ``RK45``, ``RK23``, ``DOP853``, ``Radau``, ``BDF``, ``LSODA`` — SciPy's solvers
  (scipy_ivp.py);
- ``verlet`` — Störmer–Verlet / generalized leapfrog, order 2, symplectic (verlet.py; on
  ball, free and planar joints its variational form on the charts of chart.py);
- ``midpoint``, ``gauss4`` — Gauss–Legendre, orders 2 and 4, symplectic in canonical
  coordinates (gauss.py);
- ``avf`` (order 2), ``itoh_abe`` (order 1; ``variant="symmetric"`` order 2) — discrete
  gradients, exact energy (discrete_gradient.py; on ball, free and planar joints in the
  local canonical coordinates of chart.py; compiled for plain models in
  discrete_gradient_compiled.py, with energy_momentum's Gonzalez variant);
- ``energy_momentum`` — order 2, exact energy and momentum by construction: Lie–midpoint
  (Cayley) for a free body, Gonzalez's discrete gradient for additive chains (cyclic
  momenta kept); midpoint + projection for the other systems (energy_momentum.py;
  onto the energy alone on ball and free joints, the compiled tangent midpoint + energy
  projection loop of gauss_compiled.py).

A constrained system (capability ``handles_constraints``) asked for ``energy_momentum`` or
``avf`` is integrated by constrained_energy_momentum.py (``CONSTRAINED_METHODS``): exact
energy, exact g(q) = 0 and G v = 0 per step, order 2; ``kd.simulate`` refuses the other
fixed-step methods but ``rk4`` for it.

A system with eliminated constraints (capability ``eliminated_constraints``: a compiled
Kane system with velocity or configuration constraints) is integrated by the methods of
eliminated.py instead — ``rk4``, ``avf`` and SciPy's ``RK45``, ``RK23``, ``DOP853`` on
(q, u) with the dependent coordinates projected after every step; ``kd.simulate``
refuses the others for it. With configuration constraints only (every dependent speed
the rate of one), ``energy_momentum`` and ``avf`` run the constrained step above on its
index-3 form (kane_index3.py: ``kane.index3_equations``, all speeds, g kept) — exact
energy and exact g(q) = 0.

``project="energy"`` (or a tuple with ``"momentum"``, ``"angular_momentum"``,
``"linear_momentum"``) wraps any fixed-step method in a projection
(projection.py); onto the energy (E₀ + W_nc with force elements) rk4 and midpoint/gauss4
also project in their compiled loops.

Registering a method
--------------------
``register_method(name, fn_or_class, kind)``:

- ``kind="fixed"``: a subclass of :class:`~kanedyn.integrators.base.FixedStepMethod`;
  ``simulate`` builds it as ``cls(problem, **options)`` and drives it with
  :func:`~kanedyn.integrators.base.run_fixed` (a ``dt`` is required).
- ``kind="adaptive"`` or ``"dae"``: a callable ``fn(problem, **options) ->
  Solution``. The :class:`~kanedyn.integrators.base.Problem` carries the system
  (any object of the DESIGN.md protocol, e.g. a constrained system), q0, v0,
  t0, t_final, ``dt`` (the output spacing, or None) and the force callables.

``kd.simulate(system, q0, v0, t_final, method=name, **options)`` forwards
every keyword it does not know itself (``formulation=``, ``rtol=``, ``atol=``,
...) to the method, which validates them and raises a SolverError for the
ones it does not take. "radau5" and "ida" are looked up lazily in
``kanedyn.integrators.radau`` / ``kanedyn.integrators.ida``: those modules
register themselves on import.
"""

from __future__ import annotations

import importlib

from ..errors import SolverError
from .base import FixedStepMethod, Problem, Solution, run_fixed
from .discrete_gradient import AVF, ItohAbe
from .dopri5 import dopri5
from .energy_momentum import EnergyMomentum
from .gauss import Gauss4, Midpoint
from .projection import Projected
from .rk4 import RK4
from .scipy_ivp import SCIPY_METHODS, scipy_method
from .verlet import Verlet

KINDS = ("fixed", "adaptive", "dae")
_REGISTRY: dict[str, tuple[object, str]] = {}
#: methods provided by modules that register themselves when imported
_LAZY = {"radau5": "kanedyn.integrators.radau", "ida": "kanedyn.integrators.ida"}


def register_method(name: str, fn_or_class, kind: str = "fixed") -> None:
    """Make ``method=name`` available to :func:`kanedyn.simulate` (see module doc)."""
    if kind not in KINDS:
        raise SolverError(f"register_method: kind must be one of {KINDS}, got {kind!r}")
    if not isinstance(name, str) or not name:
        raise SolverError(f"register_method: name must be a non-empty string, got {name!r}")
    if kind == "fixed" and not (isinstance(fn_or_class, type)
                                and issubclass(fn_or_class, FixedStepMethod)):
        raise SolverError(f"register_method({name!r}): a fixed-step method must be a "
                          "FixedStepMethod subclass")
    if kind != "fixed" and not callable(fn_or_class):
        raise SolverError(f"register_method({name!r}): {fn_or_class!r} is not callable")
    _REGISTRY[name] = (fn_or_class, kind)


def available_methods() -> list[str]:
    """Names accepted by ``simulate(method=...)`` (lazily registered ones included)."""
    return sorted(set(_REGISTRY) | set(_LAZY))


def get_method(name: str) -> tuple[object, str]:
    """(fn_or_class, kind) registered under ``name``; unknown names list the available ones."""
    if name not in _REGISTRY and name in _LAZY:
        try:
            importlib.import_module(_LAZY[name])
        except ImportError as e:
            raise SolverError(f"method {name!r} is not available: {e}") from None
        if name not in _REGISTRY:
            raise SolverError(f"method {name!r}: module {_LAZY[name]} did not register it "
                              f"(it should call register_method({name!r}, fn, kind='dae'))")
    if name not in _REGISTRY:
        raise SolverError(f"unknown method {name!r}; available: {', '.join(available_methods())}")
    return _REGISTRY[name]


for _cls in (RK4, Verlet, Midpoint, Gauss4, AVF, ItohAbe, EnergyMomentum):
    register_method(_cls.name, _cls, "fixed")
register_method("dopri5", dopri5, "adaptive")
for _n in SCIPY_METHODS:
    register_method(_n, scipy_method(_n), "adaptive")

__all__ = [
    "AVF",
    "EnergyMomentum",
    "FixedStepMethod",
    "Gauss4",
    "ItohAbe",
    "Midpoint",
    "Problem",
    "Projected",
    "RK4",
    "Solution",
    "Verlet",
    "available_methods",
    "dopri5",
    "get_method",
    "register_method",
    "run_fixed",
]
