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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.physics.vector import Point, ReferenceFrame, Vector, dynamicsymbols

from ..errors import SymbolicError
from .eom import EquationsOfMotion
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
    q : generalized coordinates, ``dynamicsymbols``.
    u : generalized speeds (independent and dependent), ``dynamicsymbols``.
    kinematic_equations : n_q expressions that vanish, linear in q̇ and u,
        e.g. ``u1 - q1.diff()`` or ``q0.diff() - (-q1*u1 - ...)/2``.
    bodies : :class:`RigidBody` and :class:`Particle` objects.
    loads : :class:`Force`, :class:`Torque` or tuples ``(Point, Vector)``,
        ``(ReferenceFrame, Vector)``.
    u_dependent, velocity_constraints : m dependent speeds (a subset of u)
        and m nonholonomic constraint expressions that vanish, linear in u.
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
    A: sp.Matrix | None = None           # u_dep = A u_ind + B
    B: sp.Matrix | None = None
    u_dep_map: dict = field(default_factory=dict)      # {u_dep: A u_ind + B}
    udot_dep_map: dict = field(default_factory=dict)   # {u_dep': expression}


# ----------------------------------------------------------------------------- helpers


def _is_dynamicsymbol(s) -> bool:
    return isinstance(s, AppliedUndef) and s.args == (t,)


def _name(s) -> str:
    return s.func.__name__ if isinstance(s, AppliedUndef) else str(s)


def _free_dynamicsymbols(expr) -> set:
    return {f for f in sp.sympify(expr).atoms(AppliedUndef)}


def _vector_free_dynamicsymbols(vec: Vector) -> set:
    out: set = set()
    for measures, _frame in vec.args:
        out |= _free_dynamicsymbols(measures)
    return out


def _vector_map(vec: Vector, fn) -> Vector:
    """Apply ``fn`` to every measure number of ``vec`` (kept in its frames)."""
    return Vector([(measures.applyfunc(fn), frame) for measures, frame in vec.args])


def _vector_xreplace(vec: Vector, rule: dict) -> Vector:
    """Exact-node replacement on the measure numbers. ``subs`` is far slower and
    is not needed: q̇ and u̇ appear as ``Derivative(q(t), t)`` nodes."""
    return _vector_map(vec, lambda e: e.xreplace(rule))


class _Sampler:
    """Random numeric values for every symbol of an expression, to test
    generic rank (singular Y, dependent constraints) without symbolic
    determinants, which swell."""

    def __init__(self, seed: int = 20261201) -> None:
        self.rng = np.random.default_rng(seed)
        self.values: dict = {}

    def evaluate(self, matrix: sp.Matrix) -> np.ndarray:
        atoms = set()
        for e in matrix:
            atoms |= {a for a in e.atoms(sp.Symbol, AppliedUndef, sp.Derivative)}
        for low, high in ((0.3, 1.3), (0.05, 0.6), (0.01, 0.1), (0.001, 0.01)):
            for a in sorted(atoms, key=str):
                if a not in self.values:
                    self.values[a] = float(self.rng.uniform(low, high))
            # derivatives first, so that q(t) inside q'(t) is not replaced first
            derivs = {k: v for k, v in self.values.items() if isinstance(k, sp.Derivative)}
            rest = {k: v for k, v in self.values.items() if not isinstance(k, sp.Derivative)}
            try:
                out = np.array(matrix.xreplace(derivs).xreplace(rest).evalf(), dtype=float)
            except (TypeError, ValueError):       # complex or symbolic: outside the domain
                out = None
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
    for j, uj in enumerate(u):
        if all(K_u[i, j] == 0 for i in range(K_u.rows)):
            raise SymbolicError(
                f"speed {_name(uj)} has no kinematic differential equation: it appears in none "
                "of them (auxiliary speeds go in u_auxiliary)"
            )
    Wu = np.atleast_2d(sampler.evaluate(K_u))
    if np.linalg.matrix_rank(Wu) < len(u):
        raise SymbolicError(
            "the speeds are not independent: ∂(kde)/∂u has rank "
            f"{np.linalg.matrix_rank(Wu)} < {len(u)} speeds"
        )
    return K_qd.LUsolve(-(K_u * sp.Matrix(u) + k0))


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
    for measures, _frame in residual.args:
        if np.max(np.abs(sampler.evaluate(measures))) > 1e-9 * (1 + _scale(vec, sampler)):
            bad = [s for s in speeds if any(
                sp.diff(m, s).has(*speeds) for m, _f in vec.args)]
            raise SymbolicError(
                f"{owner} is not affine in the generalized speeds"
                + (f": ∂/∂{_name(bad[0])} still contains a speed" if bad else "")
                + f" ({', '.join(map(_name, bad or speeds))})"
            )
    return parts


def _scale(vec: Vector, sampler: _Sampler) -> float:
    return max((float(np.max(np.abs(sampler.evaluate(m)))) for m, _f in vec.args), default=0.0)


def _check_kinematic_symbols(vec: Vector, allowed: set, owner: str) -> None:
    stray = {f for f in _vector_free_dynamicsymbols(vec) if f not in allowed}
    if stray:
        raise SymbolicError(
            f"{owner} depends on {', '.join(sorted(map(_name, stray)))}, which are neither "
            "coordinates nor speeds"
        )
    derivs = [d for m, _f in vec.args for d in m.atoms(sp.Derivative)]
    if derivs:
        raise SymbolicError(
            f"{owner} contains {sp.sstr(derivs[0])} after the kinematic differential equations "
            "were substituted: express velocities through q, q̇ and u only"
        )


def kinematics(system: KaneSystem) -> Kinematics:
    """q̇(q, u), velocities, partial velocities and accelerations of every body.

    Partial velocities (Kane & Levinson Ch. 2, partial velocities): with q̇ eliminated,
    ``v = Σ_r v_r u_r + v_t``; ``v_r`` is the coefficient of ``u_r``. The
    auxiliary speeds get partial velocities too, and are then set to zero
    (together with their derivatives) before accelerations are formed.
    """
    sampler = _Sampler()
    N = system.frame
    qdot = _solve_kinematic_equations(system, sampler)
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
            bodies.append((v, w, v_r, w_r, derivative(v), derivative(w)))
        else:
            v, v_r = velocity(_point_velocity(b.point, N, b.name),
                              f"velocity of particle {b.name!r}")
            bodies.append((v, None, v_r, None, derivative(v), None))

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

    kin = Kinematics(qdot=qdot, qdot_map=qdot_map, speeds=speeds, bodies=bodies, loads=loads)
    if system.velocity_constraints or system.u_dependent:
        _eliminate_dependent_speeds(system, kin, sampler)
    return kin


def _eliminate_dependent_speeds(system: KaneSystem, kin: Kinematics, sampler: _Sampler) -> None:
    """``C u + D = 0`` → ``u_dep = A u_ind + B`` and u̇_dep (Kane & Levinson Ch. 2,
    motion constraints)."""
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
    A = C_dep.LUsolve(-C_ind).applyfunc(sp.trigsimp)
    B = C_dep.LUsolve(-D).applyfunc(sp.trigsimp)
    u_dep = A * sp.Matrix(ind) + B
    kin.A, kin.B = A, B
    kin.u_dep_map = dict(zip(dep, u_dep, strict=True))
    # u̇_dep = d/dt (A u_ind + B), q̇ eliminated, then u_dep eliminated
    udot_dep = [sp.diff(e, t).xreplace(kin.qdot_map).xreplace(kin.u_dep_map) for e in u_dep]
    kin.udot_dep_map = {s.diff(t): e for s, e in zip(dep, udot_dep, strict=True)}


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

    With nonholonomic constraints ``u_dep = A u_ind + B`` the p = n − m
    equations are ``F̃_r + F̃_r* = 0`` for the independent speeds, with
    ``F̃_r = F_r + Σ_s F_s A_sr`` (Kane & Levinson Ch. 6, nonholonomic systems), and u_dep, u̇_dep
    eliminated. Auxiliary speeds give the reactions: ``F_a + F_a* = 0`` solved
    for the reaction symbols, returned in ``auxiliary`` as expressions in q, u
    and u̇ (``udot_symbol(u)``).

    ``simplify=True`` runs ``sympy.simplify`` on M, forcing and the reactions
    (for small systems: it can take long).
    """
    kin = kinematics(system)
    u = list(system.u)
    n = len(u)
    dep = list(system.u_dependent)
    ind = [s for s in u if s not in dep]
    ind_idx = [u.index(s) for s in ind]
    dep_idx = [u.index(s) for s in dep]

    F = generalized_active_forces(system, kin)
    Fs = generalized_inertia_forces(system, kin)
    _check_load_symbols(system, F)

    Fr, Frs = F[:n, 0], Fs[:n, 0]
    if dep:
        A = kin.A
        Fr = Fr.extract(ind_idx, [0]) + A.T * Fr.extract(dep_idx, [0])
        Frs = Frs.extract(ind_idx, [0]) + A.T * Frs.extract(dep_idx, [0])

    def reduce(expr):
        # u̇_dep first (its expression contains u_dep), then u_dep
        return expr.xreplace(kin.udot_dep_map).xreplace(kin.u_dep_map)

    Fr, Frs = Fr.applyfunc(reduce), Frs.applyfunc(reduce)
    Fr = _drop_reactions(system, Fr, ind)

    ud_ind = [s.diff(t) for s in ind]
    ud_zero = {d: 0 for d in ud_ind}
    M = -Frs.jacobian(ud_ind)
    if any(M.has(d) for d in ud_ind):
        raise SymbolicError("generalized inertia forces are not linear in u̇ (internal error)")
    forcing = Fr + Frs.xreplace(ud_zero)
    tau = sp.symbols(f"tau0:{len(ind)}") if system.generalized_forces else ()
    if tau:
        taken = {str(x) for x in forcing.free_symbols | M.free_symbols} & set(map(str, tau))
        if taken:
            raise SymbolicError(f"generalized_forces: the system already uses {sorted(taken)[0]}")
        forcing += sp.Matrix(tau)

    auxiliary = {}
    if system.u_auxiliary:
        auxiliary = _reactions(system, kin, F[n:, 0], Fs[n:, 0], reduce)

    qdot = kin.qdot.applyfunc(lambda e: e.xreplace(kin.u_dep_map)) if dep else kin.qdot
    # E = K + V, V the potential of the loads that are not inputs or reactions (which,
    # like joint torques of a Model, supply power from outside). Without a given V,
    # E is known only if every load is such a specified one.
    K = reduce(kinetic_energy(system, kin))
    V = sp.sympify(system.potential_energy) if system.potential_energy is not None else None
    if V is None and all(_is_specified(raw, system) for raw in system.loads):
        V = sp.S.Zero
    energy = K + V if V is not None else None

    if simplify:
        M = M.applyfunc(sp.simplify)
        forcing = forcing.applyfunc(sp.simplify)
        auxiliary = {k: sp.simplify(v) for k, v in auxiliary.items()}

    return _to_plain(system, kin, ind, qdot, M, forcing, auxiliary, (energy, K, V), list(tau))


def _is_specified(raw, system: KaneSystem) -> bool:
    """True if the load's vector is made of inputs or reactions (it vanishes with them)."""
    vec = as_load(raw).vector
    zero = {s: 0 for s in (*system.inputs, *system.reactions)}
    return bool(zero) and all(m.xreplace(zero) == sp.zeros(3, 1) for m, _f in vec.args)


def _check_load_symbols(system: KaneSystem, F: sp.Matrix) -> None:
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


def _drop_reactions(system: KaneSystem, Fr: sp.Matrix, ind: list) -> sp.Matrix:
    """Reactions must do no work in the true speeds. With nonholonomic constraints
    their terms cancel only after F̃_r = F_r + Σ F_s A_sr, often not visibly, so the
    coefficient is tested at a random point and the reaction then set to zero."""
    R = [r for r in system.reactions if Fr.has(r)]
    if not R:
        return Fr
    sampler = _Sampler(11)
    for r, s in enumerate(ind):
        coeff = sp.Matrix([sp.diff(Fr[r], x) for x in R])
        scale = 1 + float(np.max(np.abs(sampler.evaluate(sp.Matrix([Fr[r]])))))
        hit = [x for x, c in zip(R, np.abs(sampler.evaluate(coeff)).ravel(), strict=True)
               if c > 1e-9 * scale]
        if hit:
            raise SymbolicError(
                f"reaction {', '.join(map(_name, hit))} contributes to the equation of speed "
                f"{_name(s)}: a reaction exposed through an auxiliary speed must do no work "
                "in the true speeds (check its point and direction)"
            )
    return Fr.xreplace({x: 0 for x in R})


def _reactions(system, kin, Fa, Fas, reduce) -> dict:
    """Solve ``F_a + F_a* = 0`` (one per auxiliary speed) for the reactions."""
    eqs = (Fa + Fas).applyfunc(reduce)
    R = list(system.reactions)
    J, rest = _linear_coefficients(list(eqs), R, "auxiliary equation", "the reactions")
    sampler = _Sampler(7)
    if np.linalg.matrix_rank(np.atleast_2d(sampler.evaluate(J))) < len(R):
        raise SymbolicError(
            "the auxiliary equations do not determine the reactions "
            f"{', '.join(map(_name, R))}: each reaction must act along its auxiliary speed"
        )
    sol = J.LUsolve(-rest)
    return {_name(r): s for r, s in zip(R, sol, strict=True)}


def _to_plain(system, kin, ind, qdot, M, forcing, auxiliary, energies,
              tau: list) -> EquationsOfMotion:
    """Replace dynamicsymbols by plain symbols: q1(t) → q1, u1'(t) → u1_dot."""
    speeds = list(system.u)
    dyn_inputs = [s for s in system.inputs if isinstance(s, AppliedUndef)]
    dyn_reacts = [s for s in system.reactions if isinstance(s, AppliedUndef)]
    plain = {s: sp.Symbol(_name(s)) for s in (*system.q, *speeds, *dyn_inputs, *dyn_reacts)}
    derivs = {s.diff(t): udot_symbol(s) for s in speeds}

    def conv(e):
        return sp.sympify(e).xreplace(derivs).xreplace(plain)

    # a user symbol named like a coordinate, speed or u̇ would merge with it silently
    reserved = {str(x) for x in (*plain.values(), *derivs.values())}
    raw = [*M, *forcing, *qdot, *auxiliary.values(), *(e for e in energies if e is not None)]
    clash = sorted({str(x) for e in raw for x in sp.sympify(e).free_symbols} & reserved)
    if clash:
        raise SymbolicError(
            f"symbol {clash[0]} has the name of a coordinate, speed, input or u̇ of "
            f"{system.name!r}: rename it"
        )

    M, forcing, qdot = M.applyfunc(conv), forcing.applyfunc(conv), qdot.applyfunc(conv)
    auxiliary = {k: conv(v) for k, v in auxiliary.items()}
    energy, K, V = (conv(e) if e is not None else None for e in energies)
    leftover = set()
    for e in (*M, *forcing, *qdot, *auxiliary.values()):
        leftover |= e.atoms(AppliedUndef) | e.atoms(sp.Derivative)
    if leftover:
        raise SymbolicError(
            f"the equations still contain {', '.join(sorted(map(str, leftover)))}: declare "
            "them as coordinates, speeds or inputs"
        )

    q_syms = [plain[s] for s in system.q]
    u_syms = [plain[s] for s in ind]
    input_syms = [plain.get(s, s) for s in system.inputs] + tau
    taken = {str(s) for s in (*plain.values(), *derivs.values())}
    params = {}
    known = {sp.Symbol(_name(k)) if isinstance(k, AppliedUndef) else k: v
             for k, v in system.parameters.items()}
    exclude = set(q_syms) | {plain[s] for s in speeds} | set(input_syms) | set(derivs.values())
    exclude |= {sp.Symbol("t"), *plain.values()}
    free = set()
    for e in (*M, *forcing, *qdot, *auxiliary.values()):
        free |= e.free_symbols
    for e in (energy, K, V):
        if e is not None:
            free |= e.free_symbols
    for s in sorted(free - exclude, key=str):
        if str(s) in taken:
            raise SymbolicError(
                f"parameter {s} has the name of a coordinate, speed or input: rename it"
            )
        params[s] = known.get(s)
    for k, v in known.items():
        params.setdefault(k, v)

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
        dependent_speeds={plain[s]: conv(e) for s, e in kin.u_dep_map.items()},
        auxiliary=auxiliary,
        name=system.name,
        kinetic_energy=K,
        potential_energy=V,
    )
