"""Kinematics of a :class:`~kanedyn.kane.system.KaneSystem` (Kane & Levinson,
*Dynamics: Theory and Applications*, 1985, Ch. 2).

1. the kinematic differential equations ``K_q̇ q̇ + K_u u + k = 0`` (any form linear
   in q̇ and u) solved for q̇, with ``Y = ∂(kde)/∂q̇`` nonsingular and the speeds
   independent (checked at a random point);
2. every velocity, with q̇ eliminated, affine in the speeds: ``v = Σ_r v_r u_r + v_t``;
   the *partial velocities* v_r, ω_r are the coefficients (the auxiliary speeds get
   theirs too, and are then set to zero);
3. the motion constraints ``C_dep u_dep + C_ind u_ind + D = 0`` split and checked
   (``C_dep`` nonsingular); they are solved in :func:`~kanedyn.kane.equations.kanes_equations`;
   the configuration constraints ``g(q) = 0`` checked (``∂g/∂q_dep`` nonsingular).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import sympy as sp
from sympy.physics.vector import Point, ReferenceFrame, Vector

from ..errors import SymbolicError
from ._sympy_tools import (
    _free_dynamicsymbols,
    _leaves,
    _linear_coefficients,
    _name,
    _Sampler,
    _vector_free_dynamicsymbols,
    _vector_xreplace,
    t,
)
from .loads import Force, RigidBody, as_load

if TYPE_CHECKING:
    from .system import KaneSystem

__all__ = ["Kinematics", "kinematics", "partial_velocities"]


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
