"""The result of a Kane derivation: kinematic and dynamic differential equations.

Kane's equations separate into

* kinematic differential equations ``q̇ = W(q, t) u + w(q, t)``, and
* dynamic equations ``M(q, t) u̇ = forcing(q, u, t, inputs)``,

where ``forcing = -h(q, u, t) + (generalized active forces)``. An
:class:`EquationsOfMotion` holds both as SymPy matrices plus what is needed to
evaluate them: the symbols of q, u, the inputs (applied joint forces and other
specified quantities) and the parameters with their values.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import sympy as sp


@dataclass
class EquationsOfMotion:
    """``q̇ = qdot``, ``mass_matrix · u̇ = forcing``.

    Attributes
    ----------
    q, u : coordinates and generalized speeds (lists of SymPy symbols; the
        independent speeds only when there are nonholonomic constraints).
    qdot : Matrix (len(q) x 1), the right-hand side of the kinematic
        differential equations in terms of q, u, t.
    mass_matrix : Matrix (len(u) x len(u)).
    forcing : Matrix (len(u) x 1), in terms of q, u, t, inputs and parameters.
    inputs : symbols of specified quantities (joint torques, control inputs),
        given numerically at evaluation time as ``tau``.
    parameters : {symbol: value or None}; None must be supplied at compile time.
    t : the time symbol.
    energy : total mechanical energy as an expression, when the system has one.
    quaternions : index groups (into q) of unit quaternions (w, x, y, z) whose
        speeds are body angular velocities (indices into u), as pairs
        ``(q_indices, u_indices)``; integrators update them on SO(3).
    dependent_speeds : for nonholonomic systems, {u_dep symbol: expression in
        the independent speeds}, as eliminated.
    auxiliary : {name: expression in q, u, u̇} of reactions exposed through
        auxiliary generalized speeds.
    """

    q: list
    u: list
    qdot: sp.Matrix
    mass_matrix: sp.Matrix
    forcing: sp.Matrix
    inputs: list = field(default_factory=list)
    parameters: dict = field(default_factory=dict)
    t: sp.Symbol = field(default_factory=lambda: sp.Symbol("t"))
    energy: sp.Expr | None = None
    quaternions: list = field(default_factory=list)
    dependent_speeds: dict = field(default_factory=dict)
    auxiliary: dict = field(default_factory=dict)
    #: common subexpressions shared by the expressions above: [(symbol, expr), ...]
    #: in evaluation order (the derivation from a Model keeps them, so the
    #: expressions never swell)
    intermediates: list = field(default_factory=list)
    name: str = "kane"
    #: kinetic and potential energy separately, when known (their sum is ``energy``)
    kinetic_energy: sp.Expr | None = None
    potential_energy: sp.Expr | None = None
    #: dependent coordinates (a subset of q) and the holonomic constraints g(q) = 0 that
    #: fix them; used by linearisation (which eliminates them) and consistent initial
    #: values, not by M and forcing
    q_dependent: list = field(default_factory=list)
    configuration_constraints: list = field(default_factory=list)
    #: the velocity (nonholonomic) constraints as given, expressions that vanish, in q, the
    #: independent speeds, t and the intermediates (each dependent speed replaced by its
    #: intermediate of ``dependent_speeds``): evaluated they are the residual of the
    #: eliminated speeds, which ``kd.simulate`` records
    velocity_constraints: list = field(default_factory=list)
    #: the KaneSystem these equations were derived from (set by ``kanes_equations``; None
    #: for a tree's ``derive(model)``): what :func:`~kanedyn.kane.index3_equations`
    #: derives the index-3 form of a configuration-constrained system from
    kane_system: object | None = field(default=None, repr=False, compare=False)
    #: True for the index-3 form (:func:`~kanedyn.kane.index3_equations`): all speeds, the
    #: configuration constraints kept as g(q) = 0 beside the equations (not eliminated);
    #: the compiled code then adds ∂T/∂q, ∂V/∂q (``hamiltonian_terms``), ∂g/∂q and
    #: γ = −(∂(∂g/∂q u)/∂q) u (``constraint_rows``)
    index3: bool = False
    #: the index-3 form's non-conservative generalized forces F_nc (len(u) x 1, in q, u,
    #: inputs, t and the intermediates): Kane's F_r of the loads that depend on the speeds,
    #: the time or the inputs (dampers, motors), plus the generalized forces τ; the other
    #: loads are in V, so that forcing = ∂T/∂q − (∂(M u)/∂q) u − ∂V/∂q + F_nc. Compiled
    #: as ``nonconservative_forces``. None outside the index-3 form
    nonconservative_forces: sp.Matrix | None = None
    #: the Model a tree's equations were derived from (``kane.tree.derive``; None
    #: otherwise): its joints name the coordinates and speeds, which are the Model's, so
    #: that joint force elements (springs, dampers, friction) bind to the compiled system
    source_model: object | None = field(default=None, repr=False, compare=False)

    @property
    def nq(self) -> int:
        return len(self.q)

    @property
    def nu(self) -> int:
        return len(self.u)

    # --- working with the expressions ----------------------------------------------------
    def expanded(self) -> EquationsOfMotion:
        """The same equations with every intermediate substituted: plain expressions in q,
        u, inputs and parameters (for comparison with other derivations; can be large)."""
        env: dict = {}
        for s, e in self.intermediates:
            env[s] = sp.sympify(e).xreplace(env)

        def sub(x):
            return None if x is None else sp.sympify(x).xreplace(env)

        return replace(self, qdot=self.qdot.xreplace(env),
                       mass_matrix=self.mass_matrix.xreplace(env),
                       forcing=self.forcing.xreplace(env), energy=sub(self.energy),
                       kinetic_energy=sub(self.kinetic_energy),
                       potential_energy=sub(self.potential_energy),
                       auxiliary={k: sub(v) for k, v in self.auxiliary.items()},
                       dependent_speeds={k: sub(v) for k, v in self.dependent_speeds.items()},
                       velocity_constraints=[sub(c) for c in self.velocity_constraints],
                       nonconservative_forces=(
                           None if self.nonconservative_forces is None
                           else self.nonconservative_forces.xreplace(env)),
                       intermediates=[])

    def operation_count(self, which=("mass_matrix", "forcing"),
                        parameters: dict | None = None) -> int:
        """Arithmetic operations (``sympy.count_ops``) in the code that computes ``which``
        (any of "mass_matrix", "forcing", "qdot", "energy") after parameter folding and
        common-subexpression elimination, intermediates included."""
        from .codegen import operation_count

        return operation_count(self, tuple(which), parameters)

    def compile(self, backend: str = "numba", parameters: dict | None = None,
                cse: bool = True):
        """Generated code implementing the system protocol of DESIGN.md.

        ``backend``: "numpy" (vectorised over a batch axis), "numba" (scalar
        kernels, ``njit(cache=True)``) or "c" (C99 built through cffi with the
        system compiler). ``parameters``: values for parameters without one,
        or to override the stored ones (by symbol or name); all parameters are
        folded in as constants. See :class:`kanedyn.kane.codegen.CompiledSystem`.
        """
        from .codegen import compile_eom

        return compile_eom(self, backend, parameters, cse)

    def to_c(self, path: str | Path, parameters: dict | None = None, prefix: str = "") -> Path:
        """Write standalone C99 source (functions ``mass_matrix``, ``forcing``, ``dynamics``,
        ``qdot``, ``energy``, ``forward_dynamics`` on double arrays; operation counts in
        the header comment) to ``path``."""
        from .codegen import to_c

        return to_c(self, path, parameters, prefix)

    def to_latex(self, max_terms: int | None = None) -> str:
        """LaTeX of the intermediates (the first ``max_terms``), q̇ and M u̇ = forcing."""
        from .codegen import to_latex

        return to_latex(self, max_terms)
