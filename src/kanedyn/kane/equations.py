"""Kane's equations ``F̃_r + F̃_r* = 0`` of a :class:`~kanedyn.kane.system.KaneSystem`
as ``M(q, t) u̇ = forcing(q, u, t, inputs)`` (Kane & Levinson, *Dynamics: Theory and
Applications*, 1985, Ch. 2–6), formed through intermediates
(:mod:`kanedyn.kane.intermediates`): :func:`kanes_equations` is the derivation, the
private functions after it are its parts — vectors expressed in a working frame
through bound direction cosines (:class:`_Express`), the inertia matrix in that
frame, dynamic symbols made plain (:class:`_Plain`: ``q1(t)`` → ``q1``,
``u1'(t)`` → ``u1_dot``), the check that reactions do no work, and the
:class:`~kanedyn.kane.eom.EquationsOfMotion` assembled with its parameters.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.physics.vector import ReferenceFrame, Vector

from ..errors import SymbolicError
from ._sympy_tools import (
    _name,
    _vector_free_dynamicsymbols,
    _vector_xreplace,
    _xreplace_shared,
    t,
)
from .eom import EquationsOfMotion
from .intermediates import Recorder, apply_adjugate, random_evaluate, solve_by_adjugate
from .kinematics import kinematics
from .loads import Force, RigidBody, as_load

if TYPE_CHECKING:
    from .system import KaneSystem

__all__ = ["index3_equations", "kanes_equations", "udot_symbol"]


def udot_symbol(u) -> sp.Symbol:
    """The plain symbol that stands for u̇ in the results (``u1`` → ``u1_dot``)."""
    return sp.Symbol(f"{_name(u)}_dot")


def kanes_equations(system: KaneSystem, *, simplify: bool = False,
                    nonconservative: bool = False) -> EquationsOfMotion:
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

    ``nonconservative=True`` (the index-3 form, :func:`index3_equations`) also keeps, in
    ``eom.nonconservative_forces``, the generalized active forces of the loads that depend
    on the speeds, the time or the inputs (dampers, motors, controllers), plus the
    generalized forces τ: ``F_nc,r = Σ_{such loads} v_r·F (ω_r·T) + τ_r`` for every true
    speed. Those loads are outside V; every other load (a function of q alone: gravity,
    springs) is taken as conservative, its −∂V/∂q in ``potential_energy``.
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
    F_nc = [sp.S.Zero] * ns                   # F_r of the non-conservative loads
    moving = ({plain.map.get(s, s) for s in (*system.u, *system.u_auxiliary)} | {sp.Symbol("t")}
              | {plain.map.get(s, s) for s in system.inputs})
    for li, (parts, load) in enumerate(kin.loads):
        W = _load_frame(load, parts)
        vec = [conv(x) for x in load.vector.to_matrix(W)] if load.vector.args else [_ZERO] * 3
        if reactions:
            coeff = [[sp.diff(x, R) for x in vec] for R in reactions]
            vec = [x.xreplace({R: 0 for R in reactions}) for x in vec]
        pr = [express(x, W, f"p{li}_{r}") for r, x in enumerate(parts)]
        nc_load = nonconservative and any(sp.sympify(x).free_symbols & moving for x in vec)
        vec = rec.vec(vec, f"load{li}")
        for r in range(ns):
            fr = _dot3(pr[r], vec)
            f_full[r] += fr
            if nc_load:
                F_nc[r] += fr
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
    Fnc = None
    if nonconservative:
        if dep:
            raise SymbolicError("nonconservative: the non-conservative forces are kept for "
                                "all speeds (the index-3 form), not reduced ones")
        Fnc = sp.Matrix([rec(F_nc[r], f"Fnc_{r}") for r in range(n)])
        if tau:
            Fnc += sp.Matrix(tau)

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
    eom.nonconservative_forces = Fnc
    if dep:  # the constraints as given, u_dep by its intermediate: their residual
        eom.velocity_constraints = [conv(c) for c in kin.constraints]
    if simplify:
        eom = eom.expanded()
        eom.mass_matrix = eom.mass_matrix.applyfunc(sp.simplify)
        eom.forcing = eom.forcing.applyfunc(sp.simplify)
        eom.auxiliary = {k: sp.simplify(v) for k, v in eom.auxiliary.items()}
    return eom


def index3_equations(system: KaneSystem, *, simplify: bool = False) -> EquationsOfMotion:
    """The index-3 form of a system with configuration constraints: Kane's equations of
    *all* its speeds, the constraints kept beside them rather than eliminated,

        M(q) u̇ = forcing(q, u) − Gᵀλ,    q̇ = u,    g(q) = 0,    G = ∂g/∂q,

    — the same KaneSystem derived without its dependent speeds and velocity constraints
    (``kanes_equations`` then forms ``F_r + F_r* = 0`` for every speed, before any
    reduction), with ``configuration_constraints`` = g and ``index3`` set, so that the
    compiled code adds ∂T/∂q at fixed u and ∂V/∂q (``hamiltonian_terms``), ∂g/∂q and
    γ = −(∂(G u)/∂q) u (``constraint_rows``): what the constrained energy–momentum
    methods take (:mod:`kanedyn.integrators.constrained_energy_momentum`, through
    :class:`kanedyn.constraints.KaneConstrainedSystem`).

    Needs holonomic constraints only (the velocity constraints are the rates of the
    configuration constraints: as many dependent speeds as dependent coordinates), the
    kinematic equations q̇ = u (each speed the rate of its coordinate, in the order of q),
    and the kinetic and potential energy separately (``potential_energy=`` of the loads);
    a SymbolicError names what is missing."""
    name = system.name
    if not system.configuration_constraints:
        raise SymbolicError(f"{name!r} has no configuration constraints: its equations have "
                            "no index-3 form to keep (derive() gives them as they are)")
    if len(system.u_dependent) != len(system.q_dependent):
        raise SymbolicError(
            f"{name!r} has {len(system.u_dependent)} dependent speeds but "
            f"{len(system.q_dependent)} configuration constraints: velocity constraints "
            "beyond the rates of g(q) = 0 are nonholonomic, which the index-3 form does "
            "not take (simulate the eliminated equations: rk4, avf, RK45)")
    eom = kanes_equations(replace(system, u_dependent=(), velocity_constraints=()),
                          simplify=simplify, nonconservative=True)
    if eom.nq != eom.nu or any(sp.expand(a - b) != 0
                               for a, b in zip(eom.qdot, eom.u, strict=True)):
        k = next((i for i, (a, b) in enumerate(zip(eom.qdot, eom.u, strict=False))
                  if sp.expand(a - b) != 0), min(eom.nq, eom.nu))
        what = (f"q̇ of {eom.q[k]} is {eom.qdot[k]}, not {eom.u[k]}" if k < min(eom.nq, eom.nu)
                else f"{eom.nq} coordinates but {eom.nu} speeds")
        raise SymbolicError(
            f"{name!r}: the index-3 form needs the kinematic equations q̇ = u (speed i the "
            f"rate of coordinate i, in the order of q); here {what}. Declare "
            "kinematic_equations u_i − q_i' (or simulate the eliminated equations: rk4, "
            "avf's eliminated form, RK45)")
    if eom.kinetic_energy is None or eom.potential_energy is None:
        raise SymbolicError(
            f"{name!r}: the index-3 form needs the kinetic and the potential energy "
            "separately, and the potential of the loads is unknown: give "
            "KaneSystem(potential_energy=V) with V(q) of every load that is not an input "
            "(gravity, springs)")
    return replace(eom, q_dependent=[], index3=True, name=f"{name} (index 3)")


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
    # the configuration constraints too: a parameter may appear in g only (a fixed pivot's
    # offset, which no velocity depends on)
    closure = [plain.conv(c) for c in system.configuration_constraints]
    for e in (*exprs, *(x for _s, x in rec.intermediates), *closure):
        free |= sp.sympify(e).free_symbols
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
        kane_system=system,
    )
