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
:mod:`sympy.physics.vector`; the derivation below is ours and does not call
``sympy.physics.mechanics.KanesMethod``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.physics.vector import Point, ReferenceFrame, Vector, dynamicsymbols

from ..errors import SymbolicError
from .eom import EquationsOfMotion
from .intermediates import Recorder, apply_adjugate, random_evaluate, solve_by_adjugate
from .loads import Force, Particle, RigidBody, as_load

t = dynamicsymbols._t

__all__ = [
    "KaneSystem",
    "Kinematics",
    "generalized_active_forces",
    "generalized_inertia_forces",
    "kanes_equations",
    "kinematics",
    "kinetic_energy",
    "partial_velocities",
    "udot_symbol",
]


def udot_symbol(u) -> sp.Symbol:
    """The plain symbol that stands for u̇ in the results (``u1`` → ``u1_dot``)."""
    return sp.Symbol(f"{_name(u)}_dot")


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


@dataclass
class Kinematics:
    """Velocities, partial velocities and accelerations of a :class:`KaneSystem`.

    All expressions are in q, u, t (dynamicsymbols); accelerations also in u̇.
    ``speeds`` is u followed by the auxiliary speeds; the partial velocities are
    indexed like it. Velocities and accelerations are those with the auxiliary
    speeds set to zero.
    """

    qdot: sp.Matrix                      # q̇ = qdot(q, u, t), all speeds u
    qdot_map: dict                       # {q_i'(t): qdot_i}
    speeds: list
    #: per body/particle: (v, ω or None, [v_r], [ω_r] or None, a, α or None)
    bodies: list
    #: per load: (partials [v_r] or [ω_r], the load)
    loads: list
    #: velocity constraints C_dep u_dep + C_ind u_ind + D = 0 (q̇ eliminated)
    constraints: list = field(default_factory=list)
    C_dep: sp.Matrix | None = None
    C_ind: sp.Matrix | None = None
    D: sp.Matrix | None = None


# ----------------------------------------------------------------------------- helpers


def _is_dynamicsymbol(s) -> bool:
    return isinstance(s, AppliedUndef) and s.args == (t,)


def _name(s) -> str:
    return s.func.__name__ if isinstance(s, AppliedUndef) else str(s)


def _leaves(exprs, types=(sp.Symbol, AppliedUndef, sp.Derivative)) -> set:
    """The subexpressions of ``exprs`` of ``types`` (not entered), each distinct
    subexpression visited once (``atoms`` walks every occurrence of a shared one)."""
    out: set = set()
    seen: set = set()
    stack = [sp.sympify(e) for e in exprs]
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        if isinstance(e, types):
            out.add(e)
        else:
            stack.extend(e.args)
    return out


def _free_dynamicsymbols(expr) -> set:
    return _leaves([expr], AppliedUndef)


def _vector_free_dynamicsymbols(vec: Vector) -> set:
    return _leaves([x for measures, _frame in vec.args for x in measures], AppliedUndef)


def _vector_map(vec: Vector, fn) -> Vector:
    """Apply ``fn`` to every measure number of ``vec`` (kept in its frames)."""
    return Vector([(measures.applyfunc(fn), frame) for measures, frame in vec.args])


def _xreplace_shared(e, rule: Mapping, memo: dict):
    """``e.xreplace(rule)`` visiting each distinct subexpression once.

    The measure numbers of sympy.physics.vector are trees in which one subexpression
    (a leg's length, a normalised direction) recurs many times; ``xreplace`` walks every
    occurrence, this walks the distinct ones (``memo``: node → result, shared by all
    the expressions replaced with the same rule)."""
    hit = rule.get(e)
    if hit is not None:
        return hit
    if not e.args:
        return e
    hit = memo.get(e)
    if hit is None:
        args = [_xreplace_shared(a, rule, memo) for a in e.args]
        hit = e.func(*args) if any(a is not b for a, b in zip(args, e.args, strict=True)) \
            else e
        memo[e] = hit
    return hit


def _vector_xreplace(vec: Vector, rule: dict) -> Vector:
    """Exact-node replacement on the measure numbers. ``subs`` is far slower and
    is not needed: q̇ and u̇ appear as ``Derivative(q(t), t)`` nodes."""
    memo: dict = {}
    return _vector_map(vec, lambda e: _xreplace_shared(e, rule, memo))


#: math functions for the float evaluation of sampled expressions
_FLOAT_FUNCTIONS = {sp.sin: math.sin, sp.cos: math.cos, sp.tan: math.tan, sp.exp: math.exp,
                    sp.log: math.log, sp.asin: math.asin, sp.acos: math.acos,
                    sp.atan: math.atan, sp.sinh: math.sinh, sp.cosh: math.cosh,
                    sp.tanh: math.tanh, sp.Abs: abs, sp.atan2: math.atan2}


def _float_value(e, values: Mapping, memo: dict) -> float:
    """``e`` at ``values`` ({symbol, q(t) or q'(t): float}) in floats, each distinct
    subexpression once. Outside the real domain (a negative base to a fractional
    power, a division by zero) it raises ValueError or ZeroDivisionError."""
    hit = values.get(e)              # a symbol, q(t) or a derivative q'(t) (not entered)
    if hit is not None:
        return hit
    hit = memo.get(e)
    if hit is not None:
        return hit
    if e.is_Number:
        x = float(e)
    elif e.is_Add:
        x = math.fsum(_float_value(a, values, memo) for a in e.args)
    elif e.is_Mul:
        x = 1.0
        for a in e.args:
            x *= _float_value(a, values, memo)
    elif e.is_Pow:
        x = math.pow(_float_value(e.base, values, memo), _float_value(e.exp, values, memo))
    elif e.func in _FLOAT_FUNCTIONS:
        x = _FLOAT_FUNCTIONS[e.func](*[_float_value(a, values, memo) for a in e.args])
    elif e.is_NumberSymbol:
        x = float(e)
    else:                            # anything else: SymPy's own evaluation of this node
        sub = {a: _float_value(a, values, memo) for a in e.args}
        x = complex(e.xreplace(sub).evalf())
        if x.imag != 0:
            raise ValueError("complex value")
        x = x.real
    memo[e] = x
    return x


class _Sampler:
    """Random numeric values for every symbol of an expression, to test
    generic rank (singular Y, dependent constraints) without symbolic
    determinants, which swell."""

    def __init__(self, seed: int = 20261201) -> None:
        self.rng = np.random.default_rng(seed)
        self.values: dict = {}

    def evaluate(self, matrix: sp.Matrix) -> np.ndarray:
        atoms = _leaves(matrix)
        for low, high in ((0.3, 1.3), (0.05, 0.6), (0.01, 0.1), (0.001, 0.01)):
            for a in sorted(atoms, key=str):
                if a not in self.values:
                    self.values[a] = float(self.rng.uniform(low, high))
            # in floats, each distinct subexpression once (a derivative q'(t) is looked up
            # as a whole, so q(t) inside it is not replaced first)
            memo: dict = {}
            try:
                out = np.array([_float_value(e, self.values, memo) for e in matrix],
                               dtype=float).reshape(matrix.shape)
            except (TypeError, ValueError, ZeroDivisionError, OverflowError):
                out = None                        # complex or infinite: outside the domain
            if out is not None and np.all(np.isfinite(out)):
                return out
            # e.g. sqrt(1 − q²) or acos(q): draw again, nearer the origin
            self.values = {}
        raise SymbolicError(
            "cannot evaluate an expression at random real points to check its rank or "
            f"linearity (complex or infinite everywhere tried): {sp.sstr(matrix)[:200]}"
        )


def _linear_coefficients(exprs: Sequence, variables: Sequence, what: str, label: str):
    """``exprs = K · variables + rest``; error naming ``what`` if not linear."""
    exprs = sp.Matrix(list(exprs))
    dummies = [sp.Dummy(_name(v)) for v in variables]
    to_dummy = dict(zip(variables, dummies, strict=True))
    e = exprs.xreplace(to_dummy)
    K = e.jacobian(dummies)
    for i in range(K.rows):
        bad = [v for v, d in zip(variables, dummies, strict=True) if K[i, :].has(d)]
        if bad:
            raise SymbolicError(
                f"{what} {i} ({sp.sstr(exprs[i])}) is not linear in {label}: "
                f"its coefficients contain {', '.join(map(str, bad))}"
            )
    rest = e.xreplace({d: 0 for d in dummies})
    back = {d: v for v, d in to_dummy.items()}
    return K.xreplace(back), rest.xreplace(back)


# ----------------------------------------------------------------------------- kinematics


def _solve_kinematic_equations(system: KaneSystem, sampler: _Sampler) -> sp.Matrix:
    """Solve ``K_q̇ q̇ + K_u u + k = 0`` for q̇ (Kane & Levinson Ch. 2, generalized speeds)."""
    q, u = list(system.q), list(system.u)
    kde = list(system.kinematic_equations)
    if len(kde) != len(q):
        raise SymbolicError(
            f"{len(kde)} kinematic differential equations for {len(q)} coordinates "
            f"({', '.join(map(_name, q))}): give exactly one per coordinate"
        )
    qd = [qi.diff(t) for qi in q]
    for i, e in enumerate(kde):
        stray = {f for f in _free_dynamicsymbols(e) if f not in q and f not in u}
        if stray:
            raise SymbolicError(
                f"kinematic differential equation {i} contains "
                f"{', '.join(sorted(map(_name, stray)))}, which are neither coordinates nor speeds"
            )
    K_qd, rest = _linear_coefficients(kde, qd, "kinematic differential equation", "q̇")
    K_u, k0 = _linear_coefficients(rest, u, "kinematic differential equation", "the speeds u")
    Y = np.atleast_2d(sampler.evaluate(K_qd))
    if np.linalg.matrix_rank(Y) < len(q):
        null = np.linalg.svd(Y)[2][-1]
        involved = [_name(q[j]) for j in np.flatnonzero(np.abs(null) > 1e-8)]
        raise SymbolicError(
            "the kinematic differential equations do not determine q̇: Y = ∂(kde)/∂q̇ is "
            f"singular (the rates of {', '.join(involved)} are not independent, so the "
            "speeds are not independent)"
        )
    # the speeds that appear must be independent (∂(kde)/∂u of full column rank on
    # them: n_u of them for quaternion kinematics, n_q for q̇ = u); a speed in none is
    # the rate of an ignorable coordinate left out (checked in kinematics: it must
    # appear in some velocity)
    missing = [uj for j, uj in enumerate(u) if all(K_u[i, j] == 0 for i in range(K_u.rows))]
    present = [j for j, uj in enumerate(u) if uj not in missing]
    rank = np.linalg.matrix_rank(np.atleast_2d(sampler.evaluate(K_u[:, present])))
    if rank < len(present):
        raise SymbolicError(
            "the speeds are not independent: ∂(kde)/∂u has rank "
            f"{rank} < {len(present)} speeds"
        )
    return K_qd.LUsolve(-(K_u * sp.Matrix(u) + k0)), missing


def _point_velocity(point: Point, N: ReferenceFrame, owner: str) -> Vector:
    try:
        return point.vel(N)
    except ValueError as exc:
        raise SymbolicError(f"velocity of point {point.name} ({owner}) in {N.name}: {exc}") from exc


def _partials(vec: Vector, speeds: list, owner: str, sampler: _Sampler) -> list:
    """v_r = ∂v/∂u_r (Kane & Levinson Ch. 2, partial velocities), error if v is not affine in u.

    For an affine v the coefficient of u_r is ``v(u_r = 1, others 0) − v(u = 0)``:
    an exact substitution, much cheaper than differentiating large kinematic
    expressions. Affinity is then confirmed by evaluating ``v − Σ v_r u_r − v_t``
    at a random point (generic: a non-affine v fails it with probability 1)."""
    zero = {s: 0 for s in speeds}
    v_t = _vector_xreplace(vec, zero)
    parts = []
    for s in speeds:
        parts.append(_vector_xreplace(vec, {**zero, s: 1}) - v_t)
    residual = vec - v_t - sum((p * s for p, s in zip(parts, speeds, strict=True)), Vector(0))
    if residual.args:
        # the residual's and the velocity's measures at one random point
        k = 3 * len(residual.args)
        out = np.abs(sampler.evaluate(sp.Matrix.vstack(*(m for m, _f in residual.args),
                                                       *(m for m, _f in vec.args))))
        if np.max(out[:k]) > 1e-9 * (1 + np.max(out[k:], initial=0.0)):
            bad = [s for s in speeds if any(
                sp.diff(m, s).has(*speeds) for m, _f in vec.args)]
            raise SymbolicError(
                f"{owner} is not affine in the generalized speeds"
                + (f": ∂/∂{_name(bad[0])} still contains a speed" if bad else "")
                + f" ({', '.join(map(_name, bad or speeds))})"
            )
    return parts


def _is_zero_vector(vec: Vector) -> bool:
    return all(sp.expand(x) == 0 for m, _f in vec.args for x in m)


def _check_kinematic_symbols(vec: Vector, allowed: set, owner: str) -> None:
    stray = {f for f in _vector_free_dynamicsymbols(vec) if f not in allowed}
    if stray:
        raise SymbolicError(
            f"{owner} depends on {', '.join(sorted(map(_name, stray)))}, which are neither "
            "coordinates nor speeds"
        )
    derivs = sorted(_leaves([x for m, _f in vec.args for x in m], sp.Derivative), key=str)
    if derivs:
        raise SymbolicError(
            f"{owner} contains {sp.sstr(derivs[0])} after the kinematic differential equations "
            "were substituted: express velocities through q, q̇ and u only"
        )


def kinematics(system: KaneSystem, accelerations: bool = True) -> Kinematics:
    """q̇(q, u), velocities, partial velocities and accelerations of every body.

    Partial velocities (Kane & Levinson Ch. 2, partial velocities): with q̇ eliminated,
    ``v = Σ_r v_r u_r + v_t``; ``v_r`` is the coefficient of ``u_r``. The
    auxiliary speeds get partial velocities too, and are then set to zero
    (together with their derivatives) before accelerations are formed.
    """
    sampler = _Sampler()
    N = system.frame
    qdot, ignorable = _solve_kinematic_equations(system, sampler)
    qdot_map = {qi.diff(t): e for qi, e in zip(system.q, qdot, strict=True)}
    speeds = list(system.u) + list(system.u_auxiliary)
    allowed = set(system.q) | set(speeds)
    aux_zero = {ua: 0 for ua in system.u_auxiliary}

    def velocity(vec: Vector, owner: str):
        vec = _vector_xreplace(vec, qdot_map)
        _check_kinematic_symbols(vec, allowed, owner)
        parts = _partials(vec, speeds, owner, sampler)
        vec = _vector_xreplace(vec, aux_zero)
        return vec, parts

    def derivative(vec: Vector) -> Vector:
        # dᴺ/dt, then q̇ eliminated again; u̇ stays as u'(t)
        return _vector_xreplace(vec.dt(N), qdot_map)

    bodies = []
    for b in system.bodies:
        if isinstance(b, RigidBody):
            v, v_r = velocity(_point_velocity(b.masscenter, N, b.name),
                              f"velocity of the mass centre of body {b.name!r}")
            w, w_r = velocity(b.frame.ang_vel_in(N), f"angular velocity of body {b.name!r}")
            bodies.append((v, w, v_r, w_r, *((derivative(v), derivative(w)) if accelerations
                                             else (None, None))))
        else:
            v, v_r = velocity(_point_velocity(b.point, N, b.name),
                              f"velocity of particle {b.name!r}")
            bodies.append((v, None, v_r, None, derivative(v) if accelerations else None, None))

    loads = []
    for raw in system.loads:
        load = as_load(raw)
        label = f" {load.name!r}" if load.name else ""
        if isinstance(load, Force):
            _v, parts = velocity(_point_velocity(load.point, N, f"force{label}"),
                                 f"velocity of point {load.point.name} (force{label})")
        else:
            _w, parts = velocity(load.frame.ang_vel_in(N),
                                 f"angular velocity of frame {load.frame.name} (torque{label})")
        loads.append((parts, load))

    # a speed in no kinematic equation is an ignorable coordinate's rate: it must
    # move something, or the mass matrix is singular
    for s in ignorable:
        k = speeds.index(s)
        if not any(not _is_zero_vector(b[2][k]) or (b[3] is not None
                                                     and not _is_zero_vector(b[3][k]))
                   for b in bodies):
            raise SymbolicError(
                f"speed {_name(s)} has no kinematic differential equation and appears in no "
                "velocity of a body: it is neither a coordinate's rate nor an ignorable "
                "coordinate's (auxiliary speeds go in u_auxiliary)"
            )
    kin = Kinematics(qdot=qdot, qdot_map=qdot_map, speeds=speeds, bodies=bodies, loads=loads)
    if system.velocity_constraints or system.u_dependent:
        _velocity_constraints(system, kin, sampler)
    if system.configuration_constraints:
        _configuration_constraints(system, sampler)
    return kin


def _velocity_constraints(system: KaneSystem, kin: Kinematics, sampler: _Sampler) -> None:
    """``C u + D = 0`` split as ``C_dep u_dep + C_ind u_ind + D = 0`` (Kane & Levinson
    Ch. 2, motion constraints), checked: as many constraints as dependent speeds, fewer
    than speeds, and C_dep nonsingular (at a random point). Not solved here: the
    derivation solves it with intermediates (:func:`kanes_equations`)."""
    u = list(system.u)
    n, m = len(u), len(system.velocity_constraints)
    if m >= n:
        raise SymbolicError(
            f"{m} velocity constraints for {n} speeds: more constraints than speeds leave "
            "no independent speed (p = n − m must be at least 1)"
        )
    if len(system.u_dependent) != m:
        raise SymbolicError(
            f"{m} velocity constraints but {len(system.u_dependent)} dependent speeds: "
            "name one dependent speed per constraint"
        )
    aux_zero = {ua: 0 for ua in system.u_auxiliary}
    cons = [sp.sympify(c).xreplace(kin.qdot_map).xreplace(aux_zero)
            for c in system.velocity_constraints]
    allowed = set(system.q) | set(u)
    for i, c in enumerate(cons):
        stray = {f for f in _free_dynamicsymbols(c) if f not in allowed}
        if stray:
            raise SymbolicError(
                f"velocity constraint {i} contains {', '.join(sorted(map(_name, stray)))}, "
                "which are neither coordinates nor speeds"
            )
    C, D = _linear_coefficients(cons, u, "velocity constraint", "the speeds u")
    dep = list(system.u_dependent)
    ind = [s for s in u if s not in dep]
    C_dep = C[:, [u.index(s) for s in dep]]
    C_ind = C[:, [u.index(s) for s in ind]]
    if np.linalg.matrix_rank(np.atleast_2d(sampler.evaluate(C_dep))) < m:
        raise SymbolicError(
            "the velocity constraints cannot be solved for the dependent speeds "
            f"{', '.join(map(_name, dep))}: ∂(constraints)/∂u_dep is singular (redundant "
            "constraints, or choose other dependent speeds)"
        )
    kin.constraints = cons
    kin.C_dep, kin.C_ind, kin.D = C_dep, C_ind, D


def _configuration_constraints(system: KaneSystem, sampler: _Sampler) -> None:
    """``g(q) = 0`` must be in q (and t) only, and ∂g/∂q_dep nonsingular (random point)."""
    g = sp.Matrix([sp.sympify(c) for c in system.configuration_constraints])
    for i, c in enumerate(g):
        stray = {f for f in _free_dynamicsymbols(c) if f not in set(system.q)}
        if stray or c.atoms(sp.Derivative):
            raise SymbolicError(
                f"configuration constraint {i} contains "
                f"{', '.join(sorted(map(_name, stray))) or 'a derivative'}: it must be a "
                "function of the coordinates only")
    qd = list(system.q_dependent)
    G = np.atleast_2d(sampler.evaluate(g.jacobian(qd)))
    if np.linalg.matrix_rank(G) < len(qd):
        null = np.linalg.svd(G)[2][-1]
        involved = [_name(qd[j]) for j in np.flatnonzero(np.abs(null) > 1e-8)] or qd
        raise SymbolicError(
            "the configuration constraints cannot be solved for the dependent coordinates "
            f"{', '.join(map(str, involved))}: ∂g/∂q_dep is singular (choose other "
            "dependent coordinates)")


def partial_velocities(system: KaneSystem, kin: Kinematics | None = None) -> list:
    """Partial velocities ``[(v_r list, ω_r list or None) per body]`` (Kane & Levinson
    Ch. 2, partial velocities), indexed by u followed by the auxiliary speeds."""
    kin = kin or kinematics(system)
    return [(b[2], b[3]) for b in kin.bodies]


# ----------------------------------------------------------------------------- generalized forces


def generalized_active_forces(system: KaneSystem, kin: Kinematics | None = None) -> sp.Matrix:
    """``F_r = Σ_loads (v_r · R + ω_r · T)`` (Kane & Levinson Ch. 4, generalized
    active forces), one per speed (u, then auxiliary); dependent speeds not yet
    eliminated."""
    kin = kin or kinematics(system)
    F = [sp.S.Zero] * len(kin.speeds)
    for parts, load in kin.loads:
        for r, pr in enumerate(parts):
            F[r] += pr.dot(load.vector)
    return sp.Matrix(F)


def generalized_inertia_forces(system: KaneSystem, kin: Kinematics | None = None) -> sp.Matrix:
    """``F_r* = Σ (v_r · (−m a) + ω_r · (−α · I − ω × I · ω))`` (Kane & Levinson
    Ch. 4, generalized inertia forces), I the central inertia dyadic; one per speed."""
    kin = kin or kinematics(system)
    Fs = [sp.S.Zero] * len(kin.speeds)
    for body, (_v, w, v_r, w_r, a, alpha) in zip(system.bodies, kin.bodies, strict=True):
        R_star = -body.mass * a
        T_star = None
        if w is not None and body.inertia != 0:
            T_star = -(body.inertia.dot(alpha) + w.cross(body.inertia.dot(w)))
        for r in range(len(kin.speeds)):
            Fs[r] += v_r[r].dot(R_star)
            if T_star is not None:
                Fs[r] += w_r[r].dot(T_star)
    return sp.Matrix(Fs)


def kinetic_energy(system: KaneSystem, kin: Kinematics | None = None) -> sp.Expr:
    """``K = Σ ½ m v·v + ½ ω·I·ω`` (auxiliary speeds zero, q̇ eliminated)."""
    kin = kin or kinematics(system)
    K = sp.S.Zero
    for body, (v, w, *_rest) in zip(system.bodies, kin.bodies, strict=True):
        K += body.mass * v.dot(v) / 2
        if w is not None and body.inertia != 0:
            K += w.dot(body.inertia.dot(w)) / 2
    return K


# ----------------------------------------------------------------------------- equations


def kanes_equations(system: KaneSystem, *, simplify: bool = False) -> EquationsOfMotion:
    """Kane's equations ``F̃_r + F̃_r* = 0`` of ``system`` as ``M u̇ = forcing``.

    The derivation never forms a whole expression (see :mod:`kanedyn.kane.intermediates`):

    1. every vector a body or load needs — its partial velocities v_r, ω_r, its velocity,
       its acceleration with u̇ = 0, its central inertia — is expressed in one frame
       (the frame of its inertia dyadic, or of its load), expanded locally, and each
       component bound to a symbol of ``eom.intermediates``;
    2. for all n speeds (and the auxiliary ones), ``M_rs = Σ m v_r·v_s + ω_r·I·ω_s`` and
       ``f_r = F_r + Σ (v_r·(−m a°) + ω_r·(−I·α° − ω × I·ω))`` (Kane & Levinson Ch. 4:
       ``∂a/∂u̇_s = v_s``, ``∂α/∂u̇_s = ω_s``), each entry bound;
    3. nonholonomic constraints ``C_dep u_dep + C_ind u_ind + D = 0`` are solved by
       Cramer's rule on their bound coefficients, ``A = −adj(C_dep) C_ind / det``,
       ``B = −adj(C_dep) D / det``, and the dependent speeds become intermediates
       ``u_dep = A u_ind + B``; ``u̇_dep = A u̇_ind + b`` with ``b = −C_dep⁻¹ (Ċ u + Ḋ)``,
       the constraints' time derivative at u̇ = 0 (Ch. 2, motion constraints);
    4. with ``T = [1; A]`` (rows ordered as u): ``M̃ = Tᵀ M T`` and
       ``f̃ = Tᵀ (f − M b)``, i.e. ``F̃_r = F_r + Σ_s F_s A_sr`` (Ch. 6, nonholonomic
       systems) for the p = n − m independent speeds.

    Auxiliary speeds give the reactions: ``F_a + F_a* = 0`` solved for the reaction
    symbols, returned in ``auxiliary`` as expressions in q, u and u̇ (``udot_symbol(u)``)
    and the intermediates. ``eom.expanded()`` substitutes the intermediates (for
    comparison with other derivations); code generation and :func:`kane.linearize`
    work on them as they are. ``simplify=True`` expands and runs ``sympy.simplify``
    on M, forcing and the reactions (small systems only).
    """
    kin = kinematics(system, accelerations=False)
    _check_load_symbols(system)
    plain = _Plain(system)
    # a user symbol named like a coordinate, speed or u̇ would merge with it silently
    names = {str(x) for x in (*plain.map.values(), *plain.derivs.values())}
    clash = sorted(str(x) for x in plain.user_symbols if str(x) in names)
    if clash:
        raise SymbolicError(
            f"symbol {clash[0]} has the name of a coordinate, speed, input or u̇ of "
            f"{system.name!r}: rename it"
        )
    rec = Recorder(plain.reserved(system))
    for qi in system.q:          # local simplification of each expanded entry
        x = plain.map[qi]
        rec.pythagoras[sp.cos(x) ** 2] = 1 - sp.sin(x) ** 2
    u = list(system.u)
    n, na = len(u), len(system.u_auxiliary)
    dep = list(system.u_dependent)
    ind = [s for s in u if s not in dep]
    p = len(ind)
    conv = plain.conv

    # --- 3. the dependent speeds first: everything after may use them
    T = sp.zeros(n, p)                    # u = T u_ind (+ B on the dependent rows)
    for j, s in enumerate(ind):
        T[u.index(s), j] = 1
    dep_symbols = {}
    if dep:
        C_dep = kin.C_dep.applyfunc(lambda e: rec(conv(e), "C_dep"))
        C_ind = kin.C_ind.applyfunc(lambda e: rec(conv(e), "C_ind"))
        D = kin.D.applyfunc(lambda e: rec(conv(e), "C_rest"))
        rhs = (-C_ind).row_join(-D)
        sol, det, adj = solve_by_adjugate(C_dep, rhs, rec, "dep")
        A, B = sol[:, :p], sol[:, p]
        for k, s in enumerate(dep):
            sym = rec.fresh(f"{_name(s)}_dep")
            rec.define(sym, sum((A[k, j] * plain.symbol(ind[j]) for j in range(p)), B[k]))
            dep_symbols[s] = sym
            T[u.index(s), :] = A[k, :]
        plain.dependent = dep_symbols
    rates = {plain.map[qi]: rec(conv(e), f"{_name(qi)}_rate")
             for qi, e in zip(system.q, kin.qdot, strict=True)}
    rates[sp.Symbol("t")] = sp.S.One
    if dep:
        # u̇_dep at u̇_ind = 0: −C_dep⁻¹ (Ċ u + Ḋ), the constraints' rate with the speeds
        # held, solved with the same adjugate; seeded as the rate of the u_dep
        # intermediates, so the chain rule does not differentiate the solution A, B
        speeds_plain = [dep_symbols.get(x, plain.map[x]) for x in u]
        Cfull = sp.zeros(len(dep), n)
        for j, x in enumerate(u):
            Cfull[:, j] = C_dep[:, dep.index(x)] if x in dep else C_ind[:, ind.index(x)]
        e = [rec(sum((rec.rate(Cfull[i, j], rates) * speeds_plain[j] for j in range(n)),
                     rec.rate(D[i], rates)), "C_rate") for i in range(len(dep))]
        b = apply_adjugate(adj, det, -sp.Matrix(e), rec, "dep_rate")
        rec.seed_rates(rates, {dep_symbols[x]: b[k] for k, x in enumerate(dep)})

    # --- 1, 2. the bodies' and loads' contributions, all speeds (true and auxiliary)
    # accelerations with u̇_ind = 0 by the chain rule through the intermediates: q̇ from
    # the kinematic equations, u̇ = 0, ∂/∂t = 1; the dependent speeds are intermediates
    # whose rate at u̇_ind = 0 is the constraints' bias −C_dep⁻¹ (Ċ u + Ḋ) (seeded above)

    def acceleration(vel: list, W) -> list:
        """dᴺ/dt of a vector with components ``vel`` in W, u̇ = 0:
        ``dᵂ/dt vel + ω_W × vel``."""
        if W not in frame_rates:
            frame_rates[W] = _frame_rate(W, N, kin.qdot_map, express)
        wW = frame_rates[W]
        d = [rec.rate(x, rates) for x in vel]
        return _add3(d, _cross3(wW, vel)) if wW is not None else d

    N = system.frame
    frame_rates: dict = {}
    express = _Express(rec, conv)
    speeds = kin.speeds
    ns = len(speeds)
    M_full = [[sp.S.Zero] * n for _ in range(ns)]     # rows: all speeds; columns: true
    f_full = [sp.S.Zero] * ns
    K = sp.S.Zero
    for body, (v, w, v_r, w_r, _a, _alpha) in zip(system.bodies, kin.bodies, strict=True):
        # translation in the frame its velocity is mostly written in, rotation in the
        # frame of the inertia dyadic (where I is constant): each dot product is then
        # exact as written (no DCMᵀ DCM = 1 left to cancel, e.g. a quaternion's norm)
        Wt, W = _frame_of(v_r), _working_frame(body, v)
        tag = body.name
        vr = [express(x, Wt, f"v_{tag}_{r}") for r, x in enumerate(v_r)]
        vel = express(v, Wt, f"vel_{tag}")
        a0 = rec.vec(acceleration(vel, Wt), f"a_{tag}")
        m = conv(body.mass)
        f_in = _scale3(-m, a0)
        K += m * _dot3(vel, vel) / 2
        rot = w is not None and body.inertia != 0
        if rot:
            I3 = _inertia_matrix(body.inertia, W, conv, rec, f"I_{tag}")
            wr = [express(x, W, f"w_{tag}_{r}") for r, x in enumerate(w_r)]
            om = express(w, W, f"om_{tag}")
            al0 = rec.vec(acceleration(om, W), f"al_{tag}")
            Iw = rec.vec(_matvec3(I3, om), f"Iom_{tag}")
            t_in = [-x for x in _add3(_matvec3(I3, al0), _cross3(om, Iw))]
            t_in = rec.vec(t_in, f"T_{tag}")
            Iwr = [rec.vec(_matvec3(I3, x), f"Iw_{tag}_{s}") if s < n else None
                   for s, x in enumerate(wr)]
            K += _dot3(om, Iw) / 2
        for r in range(ns):
            f_full[r] += _dot3(vr[r], f_in)
            if rot:
                f_full[r] += _dot3(wr[r], t_in)
            for c in range(n):
                M_full[r][c] += m * _dot3(vr[r], vr[c])
                if rot:
                    M_full[r][c] += _dot3(wr[r], Iwr[c])

    reactions = [conv(x) for x in system.reactions]
    F_R = [[sp.S.Zero] * len(reactions) for _ in range(ns)]   # coefficients of reactions
    for li, (parts, load) in enumerate(kin.loads):
        W = _load_frame(load, parts)
        vec = [conv(x) for x in load.vector.to_matrix(W)] if load.vector.args else [_ZERO] * 3
        if reactions:
            coeff = [[sp.diff(x, R) for x in vec] for R in reactions]
            vec = [x.xreplace({R: 0 for R in reactions}) for x in vec]
        pr = [express(x, W, f"p{li}_{r}") for r, x in enumerate(parts)]
        vec = rec.vec(vec, f"load{li}")
        for r in range(ns):
            f_full[r] += _dot3(pr[r], vec)
            for k in range(len(reactions)):
                F_R[r][k] += _dot3(pr[r], coeff[k])
    for r in range(ns):
        f_full[r] = rec(f_full[r], f"f_{r}")
        for c in range(n):
            M_full[r][c] = M_full[c][r] if (r < n and c < r) else rec(M_full[r][c], f"Mf_{r}_{c}")
        F_R[r] = [rec(x, f"FR_{r}") for x in F_R[r]]

    # --- 4. reduction to the independent speeds
    Mf = sp.Matrix([M_full[r] for r in range(n)])
    ff = sp.Matrix(f_full[:n])
    if dep:
        MT = (Mf * T).applyfunc(lambda e: rec(e, "MT"))
        M = (T.T * MT).applyfunc(lambda e: rec(e, "M"))
        forcing = (T.T * ff).applyfunc(lambda e: rec(e, "forcing"))
    else:
        M, forcing = Mf, ff
    # reactions must do no work in the true speeds (after the reduction, where such terms
    # often cancel only numerically): test at a random point
    if reactions:
        FRt = (T.T * sp.Matrix([F_R[r] for r in range(n)])).applyfunc(lambda e: rec(e, "FRt"))
        _check_no_work(system, rec, FRt, forcing, ind, plain)

    ud_sym = sp.Matrix([udot_symbol(s) for s in ind])
    auxiliary = {}
    if na:
        udot_full = T * ud_sym            # the bias is in f (the accelerations hold it)
        Ma = sp.Matrix([M_full[r] for r in range(n, ns)])
        rest = sp.Matrix(f_full[n:]) - Ma * udot_full
        J = sp.Matrix([F_R[r] for r in range(n, ns)])
        if np.linalg.matrix_rank(np.atleast_2d(
                random_evaluate(rec.intermediates, list(J), plain.leaves(rec)).reshape(J.shape))
        ) < len(reactions):
            raise SymbolicError(
                "the auxiliary equations do not determine the reactions "
                f"{', '.join(map(_name, system.reactions))}: each reaction must act along its "
                "auxiliary speed")
        Rsol, _det, _adj = solve_by_adjugate(J, -rest, rec, "reaction")
        auxiliary = {_name(R): Rsol[k] for k, R in enumerate(system.reactions)}

    tau = list(sp.symbols(f"tau0:{p}")) if system.generalized_forces else []
    if tau:
        taken = {str(x) for x in plain.user_symbols} & set(map(str, tau))
        if taken:
            raise SymbolicError(f"generalized_forces: the system already uses {sorted(taken)[0]}")
        forcing += sp.Matrix(tau)

    qdot = kin.qdot.applyfunc(conv)
    # E = K + V, V the potential of the loads that are not inputs or reactions (which,
    # like joint torques of a Model, supply power from outside). Without a given V,
    # E is known only if every load is such a specified one.
    V = conv(system.potential_energy) if system.potential_energy is not None else None
    if V is None and all(_is_specified(raw, system) for raw in system.loads):
        V = sp.S.Zero
    K = rec(K, "kinetic_energy")
    energy = K + V if V is not None else None

    eom = _result(system, plain, rec, ind, qdot, M, forcing, auxiliary, (energy, K, V), tau,
                  dep_symbols)
    if dep:  # the constraints as given, u_dep by its intermediate: their residual
        eom.velocity_constraints = [conv(c) for c in kin.constraints]
    if simplify:
        eom = eom.expanded()
        eom.mass_matrix = eom.mass_matrix.applyfunc(sp.simplify)
        eom.forcing = eom.forcing.applyfunc(sp.simplify)
        eom.auxiliary = {k: sp.simplify(v) for k, v in eom.auxiliary.items()}
    return eom


# --- 3-vectors as lists (components in one frame) -----------------------------------------
_ZERO = sp.S.Zero


def _dot3(a, b):
    return sp.Add(*[x * y for x, y in zip(a, b, strict=True) if x != 0 and y != 0])


def _add3(a, b):
    return [x + y for x, y in zip(a, b, strict=True)]


def _scale3(s, a):
    return [s * x for x in a]


def _cross3(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def _matvec3(I3, x):
    return [_dot3(I3[r], x) for r in range(3)]


class _Express:
    """Vectors expressed in a frame through bound direction cosines: the DCM from F to
    W is the product of the DCMs of the frames on the path between them, each product
    bound (memoised per pair), and each measure number is bound before it is rotated.
    A component is then a short sum over symbols, never a product of rotations
    multiplied out."""

    def __init__(self, rec: Recorder, conv) -> None:
        self.rec, self.conv = rec, conv
        self._dcm: dict = {}

    def dcm(self, W: ReferenceFrame, F: ReferenceFrame) -> sp.Matrix:
        """``[v]_W = dcm(W, F) [v]_F``."""
        key = (W, F)
        if key not in self._dcm:
            path = W._dict_list(F, 0)
            D = None
            for A, B in zip(path[:-1], path[1:], strict=True):
                step = sp.Matrix(3, 3, [self.rec(self.conv(e), f"R_{A}_{B}") for e in A.dcm(B)])
                D = step if D is None else sp.Matrix(
                    3, 3, [self.rec(e, f"R_{W}_{B}") for e in D * step])
            self._dcm[key] = D
        return self._dcm[key]

    def __call__(self, vec: Vector, W: ReferenceFrame, name: str) -> list:
        out = [_ZERO] * 3
        for measures, F in vec.args:
            m = sp.Matrix([self.rec(self.conv(x), f"{name}_{F}") for x in measures])
            if F != W:
                m = self.dcm(W, F) * m
            out = [x + y for x, y in zip(out, m, strict=True)]
        return self.rec.vec(out, name)


def _components(vec: Vector, W: ReferenceFrame, conv) -> list:
    """The components of ``vec`` along W's axes, plain symbols."""
    if not vec.args:
        return [_ZERO] * 3
    return [conv(x) for x in vec.to_matrix(W)]


def _working_frame(body, v: Vector) -> ReferenceFrame:
    """The frame a body's vectors are expressed in: where its inertia is constant (the
    first frame of its inertia dyadic), else its own frame, else its velocity's."""
    if isinstance(body, RigidBody):
        if body.inertia != 0 and body.inertia.args:
            return body.inertia.args[0][1].args[0][1]    # (coefficient, unit, unit)
        return body.frame
    return v.args[0][1] if v.args else ReferenceFrame("_unused")


def _frame_rate(W, N, qdot_map, express):
    """ω of W in N, components in W (bound), or None for N itself or a frame that is not
    connected (a placeholder)."""
    if W == N or W.name == "_unused":
        return None
    return express(_vector_xreplace(W.ang_vel_in(N), qdot_map), W, f"omega_{W.name}")


def _frame_of(vectors) -> ReferenceFrame:
    """The frame that most of ``vectors``' components are written in (first seen on a
    tie)."""
    count: dict = {}
    for vec in vectors:
        for _m, f in vec.args:
            count[f] = count.get(f, 0) + 1
    if not count:
        return ReferenceFrame("_unused")
    return max(count, key=count.get)


def _load_frame(load, parts) -> ReferenceFrame:
    """A load's vector and its partial velocities are dotted in the frame of the vector
    (its first component), else of the partials."""
    vec = load.vector
    if vec.args:
        return vec.args[0][1]
    return _frame_of(parts)


def _inertia_matrix(I, W, conv, rec, name) -> list:
    """The central inertia dyadic as a symmetric 3x3 matrix in W, entries bound."""
    Im = I.to_matrix(W)
    out = [[None] * 3 for _ in range(3)]
    for a in range(3):
        for b in range(a, 3):
            out[a][b] = out[b][a] = rec(conv(Im[a, b]), f"{name}_{'xyz'[a]}{'xyz'[b]}")
    return out


class _Plain:
    """Dynamic symbols → plain symbols (q1(t) → q1, u1'(t) → u1_dot); dependent speeds
    → their intermediates once they are defined."""

    def __init__(self, system: KaneSystem) -> None:
        speeds = list(system.u)
        self.dyn_inputs = [s for s in system.inputs if isinstance(s, AppliedUndef)]
        dyn_reacts = [s for s in system.reactions if isinstance(s, AppliedUndef)]
        self.map = {s: sp.Symbol(_name(s)) for s in (*system.q, *speeds, *self.dyn_inputs,
                                                     *dyn_reacts)}
        self.derivs = {s.diff(t): udot_symbol(s) for s in speeds}
        self.dependent: dict = {}
        self._rule: dict | None = None
        # the user's own symbols, to keep fresh intermediate names off them
        self.user_symbols: set = set()
        for raw in (*system.kinematic_equations, *system.velocity_constraints,
                    *system.configuration_constraints, *system.parameters,
                    *(b.mass for b in system.bodies), system.potential_energy or 0):
            self.user_symbols |= sp.sympify(raw).free_symbols
        for b in system.bodies:
            if isinstance(b, RigidBody) and b.inertia != 0:
                for m, _e1, _e2 in b.inertia.args:
                    self.user_symbols |= sp.sympify(m).free_symbols
        for raw in system.loads:
            for m, _f in as_load(raw).vector.args:
                self.user_symbols |= m.free_symbols
        self.user_symbols |= {s for s in (*system.inputs, *system.reactions)
                              if isinstance(s, sp.Symbol)}

    def symbol(self, s):
        return self.map[s]

    def reserved(self, system) -> set:
        return {str(x) for x in (*self.map.values(), *self.derivs.values(),
                                 *self.user_symbols)} | {"t"}

    def conv(self, e):
        # one pass, each distinct subexpression once, the memo kept across calls (the
        # measure numbers share their subtrees); u̇ nodes are matched whole before q(t)
        rule = {**self.derivs, **self.map, **self.dependent}
        if rule != self._rule:
            self._rule, self._memo = rule, {}
        return _xreplace_shared(sp.sympify(e), rule, self._memo)

    def leaves(self, rec: Recorder) -> set:
        defined = {s for s, _ in rec.intermediates}
        out = set()
        for _s, e in rec.intermediates:
            out |= e.free_symbols
        return out - defined


def _check_no_work(system, rec, FRt, forcing, ind, plain) -> None:
    """Reactions exposed through auxiliary speeds must do no work in the true speeds:
    their coefficients in F̃_r vanish (tested at a random point, relative to F̃_r)."""
    leaves = plain.leaves(rec)
    out = random_evaluate(rec.intermediates, [*FRt, *forcing], leaves, seed=11)
    vals = out[:len(FRt)].reshape(FRt.shape)
    for r, s in enumerate(ind):
        scale = 1 + abs(out[len(FRt) + r])
        hit = [R for k, R in enumerate(system.reactions) if abs(vals[r, k]) > 1e-9 * scale]
        if hit:
            raise SymbolicError(
                f"reaction {', '.join(map(_name, hit))} contributes to the equation of speed "
                f"{_name(s)}: a reaction exposed through an auxiliary speed must do no work "
                "in the true speeds (check its point and direction)"
            )


def _is_specified(raw, system: KaneSystem) -> bool:
    """True if the load's vector is made of inputs or reactions (it vanishes with them)."""
    vec = as_load(raw).vector
    zero = {s: 0 for s in (*system.inputs, *system.reactions)}
    return bool(zero) and all(m.xreplace(zero) == sp.zeros(3, 1) for m, _f in vec.args)


def _check_load_symbols(system: KaneSystem) -> None:
    allowed = set(system.q) | set(system.u) | set(system.u_auxiliary)
    allowed |= {r for r in (*system.reactions, *system.inputs) if isinstance(r, AppliedUndef)}
    for raw in system.loads:
        load = as_load(raw)
        stray = {f for f in _vector_free_dynamicsymbols(load.vector) if f not in allowed}
        if stray:
            where = load.point.name if isinstance(load, Force) else load.frame.name
            raise SymbolicError(
                f"the load on {where} contains {', '.join(sorted(map(_name, stray)))}: declare "
                "time-varying specified quantities in inputs (or reactions)"
            )


def _result(system, plain, rec, ind, qdot, M, forcing, auxiliary, energies, tau,
            dep_symbols) -> EquationsOfMotion:
    """The EquationsOfMotion in plain symbols, with the checks on leftover symbols."""
    exprs = [*M, *forcing, *qdot, *auxiliary.values(), *(e for e in energies if e is not None)]
    leftover = set()
    for e in (*exprs, *(x for _s, x in rec.intermediates)):
        leftover |= e.atoms(AppliedUndef) | e.atoms(sp.Derivative)
    if leftover:
        raise SymbolicError(
            f"the equations still contain {', '.join(sorted(map(str, leftover)))}: declare "
            "them as coordinates, speeds or inputs"
        )
    speeds = list(system.u)
    q_syms = [plain.map[s] for s in system.q]
    u_syms = [plain.map[s] for s in ind]
    input_syms = [plain.map.get(s, s) for s in system.inputs] + list(tau)
    reserved = {str(x) for x in (*plain.map.values(), *plain.derivs.values())}
    known = {sp.Symbol(_name(k)) if isinstance(k, AppliedUndef) else k: v
             for k, v in system.parameters.items()}
    defined = {s for s, _ in rec.intermediates}
    exclude = set(q_syms) | {plain.map[s] for s in speeds} | set(input_syms)
    exclude |= set(plain.derivs.values()) | {sp.Symbol("t"), *plain.map.values()} | defined
    free = set()
    for e in (*exprs, *(x for _s, x in rec.intermediates)):
        free |= e.free_symbols
    params = {}
    for s in sorted(free - exclude, key=str):
        if str(s) in reserved:
            raise SymbolicError(
                f"symbol {s} has the name of a coordinate, speed, input or u̇ of "
                f"{system.name!r}: rename it"
            )
        params[s] = known.get(s)
    for k, v in known.items():
        params.setdefault(k, v)
    energy, K, V = energies
    return EquationsOfMotion(
        q=q_syms,
        u=u_syms,
        qdot=qdot,
        mass_matrix=M,
        forcing=forcing,
        inputs=input_syms,
        parameters=params,
        t=sp.Symbol("t"),
        energy=energy,
        quaternions=[tuple(map(tuple, pair)) for pair in system.quaternions],
        dependent_speeds={plain.map[s]: sym for s, sym in dep_symbols.items()},
        auxiliary=auxiliary,
        intermediates=list(rec.intermediates),
        name=system.name,
        kinetic_energy=K,
        potential_energy=V,
        q_dependent=[plain.map[s] for s in system.q_dependent],
        configuration_constraints=[plain.conv(c) for c in system.configuration_constraints],
    )
