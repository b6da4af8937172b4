"""A compiled Kane system with configuration constraints, as a constrained system in
index-3 form.

Kane's method eliminates the dependent speeds of a system with configuration constraints
g(q) = 0 (:mod:`kanedyn.kane.equations`, step 4): its compiled equations
``M̃(q) u̇ = f̃(q, u)`` are in the independent speeds only, and ``kd.simulate`` keeps g by
projection (:mod:`kanedyn.integrators.eliminated`). The *index-3 form*
(:func:`kanedyn.kane.index3_equations`) is the same KaneSystem derived without that
elimination — all speeds, u = q̇ — with g kept beside the equations:

    M(q) u̇ = forcing(q, u) − Gᵀλ,    q̇ = u,    g(q) = 0,    G = ∂g/∂q.

:class:`KaneConstrainedSystem` presents it as a :class:`~.system.ConstrainedMechanics`
(the protocol of :class:`~.model_system.ConstrainedSystem`): M, forcing, g, G and
γ = −Ġ u from the generated code, and the Hamiltonian terms (∂T/∂q at fixed u, ∂V/∂q)
that the constrained energy–momentum methods read
(:mod:`kanedyn.integrators.constrained_energy_momentum`), the symbolic derivatives of the
Kane system's T and V, generated too. So those methods run on it unchanged.

Loads outside V enter through their work. The loads whose vectors depend on the speeds,
the time or the inputs (a damper, a motor, a controller) are the non-conservative ones:
their Kane generalized active forces F_r, plus the generalized forces τ, are generated as
F_nc(q, u, τ, t) (:func:`kanedyn.kane.index3_equations`, ``nonconservative_forces``), which
the energy–momentum step takes at its midpoint so that E − E0 − W_nc closes to round-off.
Every other load (a function of q alone: gravity, springs, a constant torque) is taken as
conservative: its −∂V/∂q must be in ``potential_energy``. At construction, Lagrange's
equations with F_nc,

    forcing = ∂T/∂q − (∂(M u)/∂q) u − ∂V/∂q + F_nc,

are checked at random states (∂(M u)/∂q by central differences of the generated M); where
they fail — a V that is not the potential of the loads in q alone, or such a load without a
potential (a follower force), or a load that mixes gravity with a damper — a
ConstraintError names the speed. Inputs (specified quantities) need their values:
``inputs=`` a function (t, q, u) → τ; a system with inputs is refused without it (and so by
``kd.simulate``, which takes no force elements on this path).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConstraintError
from .system import ConstrainedMechanics


class KaneConstrainedSystem(ConstrainedMechanics):
    """The index-3 form of a compiled Kane system with configuration constraints.

    ``compiled``: a compiled Kane system — the eliminated one of
    ``KaneSystem.derive().compile()`` (its ``index3_form()`` is taken) or an index-3 one
    (``kane.index3_equations(system).compile()``). The speeds are all of the KaneSystem's
    u, in its order (``speed_names``); ``independent`` and ``dependent`` are the indices
    of the eliminated system's independent and dependent speeds among them (when built
    from one). ``check``: verify Lagrange's equations with T, V and F_nc at random states
    (module doc). ``inputs(t, q, u)``: the values of the system's inputs (specified
    quantities), needed when it has any. ``has_nonconservative_forces``: F_nc is not
    identically zero (some load is outside V); the energy methods then close E − E0 − W_nc.
    """

    rheonomic = False
    nn = 0
    chart_is_additive = True

    def __init__(self, compiled, check: bool = True, seed: int = 19,
                 inputs: Callable | None = None):
        reduced = None if getattr(compiled, "index3", False) else compiled
        self.kane = compiled.index3_form()
        self.reduced = reduced
        k = self.kane
        self.nq = self.nv = int(k.nq)
        self.nc = int(k.n_configuration_constraints)
        self.name = reduced.name if reduced is not None else k.name
        self.constraint_names = [f"g{i}" for i in range(self.nc)]
        self.speed_names = list(k.speed_names)
        self.coordinate_names = list(k.coordinate_names)
        self.parameters = dict(k.parameters)
        if reduced is not None:
            pos = {nm: i for i, nm in enumerate(self.speed_names)}
            self.independent = [pos[nm] for nm in reduced.speed_names]
            self.dependent = [pos[nm] for nm in reduced.dependent_speed_names]
        else:
            self.independent, self.dependent = list(range(self.nv)), []
        self._zeros = np.zeros(self.nv)
        names = list(getattr(k, "input_names", [f"tau{i}" for i in range(k.ninputs)]))
        if k.ninputs and inputs is None:
            raise ConstraintError(
                f"{self.name}: its inputs {', '.join(names)} are specified quantities whose "
                "values the index-3 form is not given (kd.simulate takes no force elements "
                "on this path): give KaneConstrainedSystem(compiled, inputs=lambda t, q, u: "
                "...), or write them as loads in q, u, t (a damper, a motor torque) or as "
                "parameters")
        self.inputs = inputs if k.ninputs else None
        self.has_nonconservative_forces = bool(k.has_nonconservative_forces)
        if check:
            self.check_lagrange(seed)

    # ---- the primitives of ConstrainedMechanics ----------------------------------------
    def mass_matrix(self, q: ArrayLike) -> NDArray:
        return self.kane.mass_matrix(q)

    def _tau(self, t: float, q, v):
        """The inputs' values at (t, q, u), None without inputs."""
        if self.inputs is None:
            return None
        tau = np.asarray(self.inputs(t, q, v), dtype=float).reshape(-1)
        if tau.size != self.kane.ninputs:
            raise ConstraintError(f"{self.name}: inputs(t, q, u) gave {tau.size} values for "
                                  f"{self.kane.ninputs} inputs")
        return tau

    def applied_forces(self, t, q: ArrayLike, v: ArrayLike) -> NDArray:
        t = float(np.ravel(t)[0])
        return self.kane.forcing(q, v, self._tau(t, q, v), t)

    def constraint(self, t, q: ArrayLike) -> NDArray:
        return self.kane.constraint_residuals(q, self._zeros)[0]

    def constraint_matrix(self, t, q: ArrayLike) -> NDArray:
        return self.kane.constraint_rows(q, self._zeros)[0]

    def gamma(self, t, q: ArrayLike, v: ArrayLike) -> NDArray:
        return self.kane.constraint_rows(q, v)[1]

    def potential_energy(self, q: ArrayLike):
        return self.kane.potential_energy(q)

    def kinetic_energy(self, q: ArrayLike, v: ArrayLike):
        return self.kane.kinetic_energy(q, v)

    def energy(self, q: ArrayLike, v: ArrayLike):
        return self.kane.energy(q, v)

    # ---- what the constrained energy–momentum methods read -----------------------------
    def hamiltonian_terms(self, q: ArrayLike, v: ArrayLike) -> tuple[NDArray, NDArray]:
        """(∂T/∂q at fixed u, ∂V/∂q): the generated derivatives of T and V."""
        return self.kane.hamiltonian_terms(q, v)

    def nonconservative_forces(self, t, q: ArrayLike, v: ArrayLike) -> NDArray:
        """F_nc: Kane's generalized active forces of the loads outside V (dampers, motors,
        inputs) and the generalized forces τ, generated; their power u·F_nc is the rate of
        W_nc."""
        t = float(np.ravel(t)[0])
        return self.kane.nonconservative_forces(q, v, self._tau(t, q, v), t)

    # ---- the map to and from the eliminated system's speeds ----------------------------
    def all_speeds(self, q: ArrayLike, u: ArrayLike) -> NDArray:
        """All speeds (this system's order) from the eliminated system's independent
        speeds u at q, the dependent ones from its velocity constraints."""
        v = np.zeros(self.nv)
        u = np.asarray(u, dtype=float)
        v[self.independent] = u
        if self.dependent:
            v[self.dependent] = self.reduced.dependent_speeds(q, u)
        return v

    def check_lagrange(self, seed: int = 19, samples: int = 2) -> None:
        """Lagrange's equations with T, V and F_nc at random states:
        forcing(q, u) = ∂T/∂q − (∂(M u)/∂q) u − ∂V/∂q + F_nc(q, u) (∂(M u)/∂q u by central
        differences, relative 1e-6). A ConstraintError names the speed whose equation
        differs: the loads in q alone are not −∂V/∂q (a wrong potential_energy, a load
        without a potential, a load mixing gravity and a damper)."""
        rng = np.random.default_rng(seed)
        n = self.nv
        for _ in range(samples):
            q = rng.uniform(-1.0, 1.0, n)
            u = rng.uniform(-1.0, 1.0, n)
            t = float(rng.uniform(0.0, 1.0))
            dT, dV = self.kane.hamiltonian_terms(q, u, t)
            e = 1e-6
            Mdot_u = (self.mass_matrix(q + e * u) - self.mass_matrix(q - e * u)) @ u / (2 * e)
            Fnc = self.nonconservative_forces(t, q, u)
            lagrange = dT - Mdot_u - dV + Fnc
            f = self.applied_forces(t, q, u)
            scale = 1.0 + max(float(np.abs(f).max()), float(np.abs(lagrange).max()))
            off = np.abs(f - lagrange)
            if off.max() > 1e-6 * scale:
                k = int(np.argmax(off))
                raise ConstraintError(
                    f"{self.name}: the equations are not Lagrange's with its T, V and the "
                    f"non-conservative loads F_nc (the equation of speed "
                    f"{self.speed_names[k]} differs by {off[k]:.3g}): the potential_energy is "
                    "not the potential of the loads in q alone (gravity, springs, constant "
                    "torques), which the energy methods take as conservative; loads in the "
                    "speeds, the time or the inputs (dampers, motors) enter through their "
                    "work. Give V of exactly the loads in q alone, write a damper or a motor "
                    "as a load of its own, or use rk4 or RK45")

    #: the name of :meth:`check_lagrange` when only conservative loads were taken
    check_conservative = check_lagrange
