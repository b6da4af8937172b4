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

from dataclasses import dataclass, field

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

    @property
    def nq(self) -> int:
        return len(self.q)

    @property
    def nu(self) -> int:
        return len(self.u)
