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

The energy methods need every load in V: at construction, Lagrange's equations
``forcing = ∂T/∂q − (∂(M u)/∂q) u − ∂V/∂q`` are checked at random states (∂(M u)/∂q by
central differences of the generated M); a load outside V (a damper, a motor) is a
ConstraintError.
"""

from __future__ import annotations

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
    from one). ``check``: verify at random states that every load is in the potential
    energy (module doc).
    """

    rheonomic = False
    nn = 0
    chart_is_additive = True
    has_nonconservative_forces = False

    def __init__(self, compiled, check: bool = True, seed: int = 19):
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
        if check:
            self.check_conservative(seed)

    # ---- the primitives of ConstrainedMechanics ----------------------------------------
    def mass_matrix(self, q: ArrayLike) -> NDArray:
        return self.kane.mass_matrix(q)

    def applied_forces(self, t, q: ArrayLike, v: ArrayLike) -> NDArray:
        return self.kane.forcing(q, v, None, float(np.ravel(t)[0]))

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
        return np.zeros(self.nv)

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

    def check_conservative(self, seed: int = 19, samples: int = 2) -> None:
        """Lagrange's equations with this V at random states: forcing(q, u) =
        ∂T/∂q − (∂(M u)/∂q) u − ∂V/∂q (∂(M u)/∂q u by central differences, relative
        1e-6). A ConstraintError names the speed whose equation holds more than V."""
        rng = np.random.default_rng(seed)
        n = self.nv
        for _ in range(samples):
            q = rng.uniform(-1.0, 1.0, n)
            u = rng.uniform(-1.0, 1.0, n)
            dT, dV = self.hamiltonian_terms(q, u)
            e = 1e-6
            Mdot_u = (self.mass_matrix(q + e * u) - self.mass_matrix(q - e * u)) @ u / (2 * e)
            lagrange = dT - Mdot_u - dV
            f = self.applied_forces(0.0, q, u)
            scale = 1.0 + max(float(np.abs(f).max()), float(np.abs(lagrange).max()))
            off = np.abs(f - lagrange)
            if off.max() > 1e-6 * scale:
                k = int(np.argmax(off))
                raise ConstraintError(
                    f"{self.name}: the equations hold forces that are not in the potential "
                    f"energy (the equation of speed {self.speed_names[k]} differs from "
                    f"Lagrange's with V by {off[k]:.3g}): a damper, a motor or an input, or a "
                    "potential_energy that misses a load. The energy methods conserve T + V "
                    "and take conservative loads only; give the potential of every load, or "
                    "use rk4 or RK45")
