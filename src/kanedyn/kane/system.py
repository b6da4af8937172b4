"""Kane's method for general mechanisms (not necessarily a joint tree).

The method, in the notation of Kane & Levinson, *Dynamics: Theory and
Applications* (1985), Ch. 2–6:

1. generalized coordinates q (n_q) and freely chosen generalized speeds u
   (n), tied by kinematic differential equations ``u = Y(q, t) q̇ + Z(q, t)``
   (given as expressions that vanish; any form linear in q̇ and u, e.g. the
   quaternion form ``q̇ = W(q) u``), solved for q̇;
2. every velocity is affine in u: ``v = Σ_r v_r u_r + v_t``,
   ``ω = Σ_r ω_r u_r + ω_t``; the *partial velocities* v_r, ω_r are the
   coefficients (Ch. 2, partial velocities);
3. generalized active forces ``F_r = Σ (v_r · R + ω_r · T)`` and generalized
   inertia forces ``F_r* = Σ (v_r · R* + ω_r · T*)`` with ``R* = −m a``,
   ``T* = −α · I − ω × I · ω`` (Ch. 4);
4. nonholonomic constraints ``u_dep = A u_ind + B`` (Ch. 2, motion
   constraints): the p = n − m equations ``F̃_r + F̃_r* = 0`` with
   ``F̃_r = F_r + Σ_s F_s A_sr`` (Ch. 6, nonholonomic systems);
5. auxiliary generalized speeds ("bringing non-contributing
   forces into evidence"): a fictitious speed along a reaction; its equation
   ``F_a + F_a* = 0``, with the auxiliary speed set to zero afterwards, gives
   the reaction in q, u, u̇ without solving for all multipliers.

``F_r + F_r* = 0`` is collected as ``M(q, t) u̇ = forcing(q, u, t, inputs)``
and returned as an :class:`~kanedyn.kane.eom.EquationsOfMotion` whose q, u, u̇,
inputs and reactions are plain SymPy symbols (a dynamic symbol ``q1(t)`` becomes
``Symbol("q1")``, its ``u1'(t)`` becomes ``Symbol("u1_dot")``), ready for
lambdify or code generation.

Kinematics (frames, points, angular velocities) are built by the user with
:mod:`sympy.physics.vector`; the derivation is ours and does not call
``sympy.physics.mechanics.KanesMethod``.

This module holds the data, :class:`KaneSystem`, whose ``derive`` runs the pipeline;
the steps are pure functions of it, one module each (all re-exported here):

- :mod:`~kanedyn.kane.kinematics` — steps 1, 2 and the constraints' checks:
  :func:`kinematics`, :func:`partial_velocities`;
- :mod:`~kanedyn.kane.generalized_forces` — step 3 as whole expressions:
  :func:`generalized_active_forces`, :func:`generalized_inertia_forces`,
  :func:`kinetic_energy`;
- :mod:`~kanedyn.kane.equations` — steps 3–5 through intermediates, the derivation
  itself: :func:`kanes_equations`, :func:`udot_symbol`; and :func:`index3_equations`,
  the equations of all speeds with the configuration constraints kept beside them;
- ``_sympy_tools`` — the SymPy utilities they share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import sympy as sp
from sympy.physics.vector import ReferenceFrame

from ..errors import SymbolicError
from ._sympy_tools import _is_dynamicsymbol, _name
from .eom import EquationsOfMotion
from .equations import index3_equations, kanes_equations, udot_symbol
from .generalized_forces import (
    generalized_active_forces,
    generalized_inertia_forces,
    kinetic_energy,
)
from .kinematics import Kinematics, kinematics, partial_velocities
from .loads import Particle, RigidBody

__all__ = [
    "KaneSystem",
    "Kinematics",
    "generalized_active_forces",
    "generalized_inertia_forces",
    "index3_equations",
    "kanes_equations",
    "kinematics",
    "kinetic_energy",
    "partial_velocities",
    "udot_symbol",
]


@dataclass(frozen=True)
class KaneSystem:
    """Description of a mechanism for Kane's method (never changed by the algorithms).

    Parameters
    ----------
    frame : the Newtonian reference frame N.
    q : generalized coordinates, ``dynamicsymbols`` (independent and dependent).
    u : generalized speeds (independent and dependent), ``dynamicsymbols``. There may
        be more speeds than coordinates: a speed that appears in no kinematic
        differential equation is the rate of an ignorable (cyclic) coordinate left
        out, as the wheel angles of a bicycle (Kane & Levinson 1985; SymPy's
        ``KanesMethod`` takes them alike); it must appear in some velocity.
    kinematic_equations : n_q expressions that vanish, linear in q̇ and u,
        e.g. ``u1 - q1.diff()`` or ``q0.diff() - (-q1*u1 - ...)/2``.
    bodies : :class:`RigidBody` and :class:`Particle` objects.
    loads : :class:`Force`, :class:`Torque` or tuples ``(Point, Vector)``,
        ``(ReferenceFrame, Vector)``.
    u_dependent, velocity_constraints : m dependent speeds (a subset of u)
        and m nonholonomic constraint expressions that vanish, linear in u.
    q_dependent, configuration_constraints : l dependent coordinates (a subset of q)
        and l holonomic constraints ``g(q) = 0`` that fix them (the front wheel of a
        bicycle touching the ground fixes the rear frame's pitch). They do not enter
        the dynamic equations — their time derivatives must be among the velocity
        constraints, as in SymPy's ``KanesMethod`` — but linearisation eliminates the
        dependent coordinates with them, and consistent initial values solve them;
        the result carries them (``eom.configuration_constraints``).
    u_auxiliary, reactions : auxiliary speeds (``dynamicsymbols``, not in u)
        that appear in velocities only, and as many unknown reaction
        magnitudes (symbols) that appear in the loads only.
    inputs : specified quantities in the loads (symbols or dynamicsymbols):
        torques, thrusts, control inputs.
    parameters : {symbol: value}; other free symbols become parameters with
        value None.
    potential_energy : V(q) of the loads that are not inputs or reactions (gravity,
        springs). The result's energy is K + V; without V it is K when every load
        is an input or a reaction, and unknown (None) otherwise.
    quaternions : pairs ``(q_indices, u_indices)`` of unit quaternions and the
        body angular velocities that drive them, passed on to the result.
    generalized_forces : add inputs ``tau0 … tau{p-1}``, generalized forces
        added to the p dynamic equations (after the other inputs). With no other
        input, the compiled result then takes ``tau`` of length ``nv`` as a
        Model does, which is what ``kd.simulate`` and force elements pass.
    """

    frame: ReferenceFrame
    q: Sequence
    u: Sequence
    kinematic_equations: Sequence
    bodies: Sequence
    loads: Sequence = ()
    u_dependent: Sequence = ()
    velocity_constraints: Sequence = ()
    q_dependent: Sequence = ()
    configuration_constraints: Sequence = ()
    u_auxiliary: Sequence = ()
    reactions: Sequence = ()
    inputs: Sequence = ()
    parameters: Mapping = field(default_factory=dict)
    potential_energy: sp.Expr | None = None
    quaternions: Sequence = ()
    generalized_forces: bool = False
    name: str = "system"

    def __post_init__(self) -> None:
        if not isinstance(self.frame, ReferenceFrame):
            raise SymbolicError("frame must be a sympy.physics.vector ReferenceFrame")
        for kind, group in (
            ("coordinate", self.q),
            ("speed", self.u),
            ("auxiliary speed", self.u_auxiliary),
        ):
            for s in group:
                if not _is_dynamicsymbol(s):
                    raise SymbolicError(
                        f"{kind} {s!r} must be a dynamicsymbol, a function of t "
                        "(sympy.physics.vector.dynamicsymbols)"
                    )
        names = [_name(s) for s in (*self.q, *self.u, *self.u_auxiliary)]
        for s in set(names):
            if names.count(s) > 1:
                raise SymbolicError(f"{s!r} is declared more than once among q, u, u_auxiliary")
        if not self.u:
            raise SymbolicError("a system needs at least one generalized speed")
        for s in self.u_dependent:
            if s not in self.u:
                raise SymbolicError(f"dependent speed {s!r} is not one of the speeds u")
        for s in self.q_dependent:
            if s not in self.q:
                raise SymbolicError(f"dependent coordinate {s!r} is not one of the coordinates q")
        ncc, nqd = len(self.configuration_constraints), len(self.q_dependent)
        if ncc > len(self.q):
            raise SymbolicError(
                f"{ncc} configuration constraints for {len(self.q)} coordinates: more "
                "constraints than coordinates leave none free")
        if ncc != nqd:
            raise SymbolicError(
                f"{ncc} configuration constraints but {nqd} dependent coordinates: name one "
                "dependent coordinate (q_dependent) per constraint")
        if len(self.reactions) != len(self.u_auxiliary):
            raise SymbolicError(
                f"{len(self.u_auxiliary)} auxiliary speeds but {len(self.reactions)} "
                "reactions: give one unknown reaction per auxiliary speed"
            )
        for b in self.bodies:
            if not isinstance(b, RigidBody | Particle):
                raise SymbolicError(f"{b!r} is neither a RigidBody nor a Particle")

    def derive(self, *, simplify: bool = False) -> EquationsOfMotion:
        """Kane's equations of this system; see :func:`kanes_equations`."""
        return kanes_equations(self, simplify=simplify)
