"""Kane's equations of a joint tree, derived recursively from a :class:`~kanedyn.Model`.

The generalized speeds are the Model's: ``u`` = the joint velocities ``v`` in
child coordinates (body angular velocity for spherical and free joints), so
the kinematic differential equations are ``q̇ = W(q) u`` from each joint's
kinematic map.

Kane's equations ``F_r + F_r* = 0`` (Kane & Levinson 1985, ch. 6) are written
with spatial vectors (Featherstone 2008, ch. 2): body i has the spatial
velocity ``V_i = [ω_i; v_i]`` in its own coordinates, affine in u, and the
spatial partial velocity of body i with respect to ``u_r`` is the coefficient
``V_i,r = ∂V_i/∂u_r``. With the spatial inertia ``I_i``, the spatial
acceleration ``A_i = Σ_r V_i,r u̇_r + A_i°`` and the inertia force
``f_i* = -(I_i A_i + V_i ×* I_i V_i)``, Kane's generalized inertia force is
``F_r* = Σ_i V_i,r · f_i*``; joint inputs τ_r and gravity are the generalized
active forces. Collecting the coefficients of u̇ gives

    M(q) u̇ = forcing(q, u, τ),   M_rs = Σ_i V_i,rᵀ I_i V_i,s,
    forcing_r = τ_r - Σ_i V_i,rᵀ (I_i A_i° + V_i ×* I_i V_i).

Gravity enters as a fictitious acceleration -g of the base, which makes
``-Σ V_i,r · I_i A_i°`` contain the gravitational active force
``Σ V_i,r · m_i g``.

Two ways of forming the sums over bodies are offered:

``method="recursive"`` (default)
    In a tree, ``V_i,r = i_X_k S_k`` for r a speed of joint k on the path to
    body i, so ``Σ_i V_i,rᵀ f_i = S_kᵀ Σ_{i ∈ subtree(k)} i_X_kᵀ f_i``: the sums
    collapse into one backward accumulation of forces and of composite
    inertias — the recursive form of Kane's method of Rosenthal & Sherman
    (1986), O(n) for the forcing and O(n²) for M (Featherstone 2008, Tables
    5.1 and 6.2 compute the same sums numerically).
``method="explicit"``
    The partial velocities ``V_i,r`` are built as the recursion goes
    (``V_i,· = i_X_p V_p,· + S_i`` on the columns of joint i) and the sums are
    taken term by term, as in the textbook. O(n³); kept as an independent
    check of the recursive form.

Nothing swells: every per-body quantity (rotation, velocity, acceleration,
force, composite inertia) is expanded locally and bound to a symbol kept in
``eom.intermediates`` (in evaluation order), so the final expressions are
short sums of products of intermediates. Each joint angle θ enters only
through the symbols ``sin_θ``, ``cos_θ``, with ``cos² = 1 - sin²`` applied
locally so that rotation products cancel. (The momentum ``I_i V_i`` is the
one quantity left unbound, inside ``V_i ×* I_i V_i``, so that ``ω × I ω`` and
its kin cancel when the body's force is expanded.)
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..errors import SymbolicError
from ..model import Model
from ..spatial import inertia_parameters
from .eom import EquationsOfMotion

__all__ = ["derive"]

_AXES = "xyz"
_ZERO = sp.S.Zero


def _num(x: float) -> sp.Expr:
    """A model number as SymPy constant; integers stay exact so that 0 and 1 vanish."""
    x = float(x)
    if x == round(x) and abs(x) < 1e15:
        return sp.Integer(int(round(x)))
    return sp.Float(x)


class _Recorder:
    """Binds expressions to symbols, in evaluation order, so that they never swell.

    Identical expressions get one symbol (hash-consing), numbers and bare
    symbols are never bound, and each expression is expanded with
    ``cos(θ)² → 1 - sin(θ)²`` before it is bound (the local simplification).
    """

    def __init__(self) -> None:
        self.intermediates: list[tuple[sp.Symbol, sp.Expr]] = []
        self._seen: dict[sp.Expr, sp.Symbol] = {}
        self.pythagoras: dict[sp.Expr, sp.Expr] = {}
        self._names: set[str] = set()

    def __call__(self, expr, name: str) -> sp.Expr:
        expr = sp.expand(sp.sympify(expr))
        if self.pythagoras:
            replaced = expr.xreplace(self.pythagoras)  # one walk; the same object if no hit
            if replaced is not expr:
                expr = sp.expand(replaced)
        if expr.is_Number or expr.is_Symbol:
            return expr
        if expr.is_Mul and len(expr.args) == 2 and expr.args[0].is_Number \
                and expr.args[1].is_Symbol:
            return expr  # c*x is no cheaper bound to a symbol
        hit = self._seen.get(expr)
        if hit is not None:
            return hit
        hit = self._seen.get(-expr)
        if hit is not None:
            return -hit
        while name in self._names:  # a symbol must never stand for two expressions
            name += "_"
        self._names.add(name)
        s = sp.Symbol(name)
        self._seen[expr] = s
        self.intermediates.append((s, expr))
        return s

    def vec(self, v, name: str) -> list:
        return [self(x, f"{name}_{_AXES[k]}") for k, x in enumerate(v)]

    def mat(self, A, name: str) -> list:
        return [[self(A[r][c], f"{name}_{_AXES[r]}{_AXES[c]}") for c in range(3)]
                for r in range(3)]


# --- 3-vector algebra on lists of SymPy expressions -------------------------------------------
# Products with a structural zero are skipped before SymPy sees them: most entries of the
# rotations and subspaces are zero, and SymPy's own handling of 0*x is what costs time.
def _z(x) -> bool:
    return x is _ZERO or (type(x) is int and x == 0)


def _psum(*pairs):
    """``Σ a b`` over the pairs, zero factors skipped."""
    return sp.Add(*[a * b for a, b in pairs if not (_z(a) or _z(b))])


def _add(a, b):
    return [x if _z(y) else (y if _z(x) else x + y) for x, y in zip(a, b, strict=True)]


def _sub(a, b):
    return [x if _z(y) else (-y if _z(x) else x - y) for x, y in zip(a, b, strict=True)]


def _scale(s, a):
    return [_ZERO if _z(x) or _z(s) else s * x for x in a]


def _cross(a, b):
    return [_psum((a[1], b[2]), (-a[2], b[1])), _psum((a[2], b[0]), (-a[0], b[2])),
            _psum((a[0], b[1]), (-a[1], b[0]))]


def _dot(a, b):
    return _psum((a[0], b[0]), (a[1], b[1]), (a[2], b[2]))


def _matvec(A, x):
    return [_psum((A[r][0], x[0]), (A[r][1], x[1]), (A[r][2], x[2])) for r in range(3)]


def _matTvec(A, x):
    return [_psum((A[0][c], x[0]), (A[1][c], x[1]), (A[2][c], x[2])) for c in range(3)]


def _matmul(A, B):
    return [[_psum(*((A[r][k], B[k][c]) for k in range(3))) for c in range(3)] for r in range(3)]


def _transpose(A):
    return [[A[c][r] for c in range(3)] for r in range(3)]


# --- spatial algebra in (E, r) form, Featherstone 2008 sec. 2.8 -------------------------------
def _apply_motion(E, r, m):
    """``X m`` for X = plucker(E, r): ``[E ω; E (v - r × ω)]``."""
    w, v = m
    return _matvec(E, w), _matvec(E, _sub(v, _cross(r, w)))


def _transpose_apply_force(E, r, f):
    """``Xᵀ f``: a force from child to parent coordinates, ``[Eᵀ n + r × Eᵀ f; Eᵀ f]``."""
    n, fl = f
    fp = _matTvec(E, fl)
    return _add(_matTvec(E, n), _cross(r, fp)), fp


def _crm(V, m):
    """``V ×m``: ``[ω × m_ω; ω × m_v + v × m_ω]``."""
    w, v = V
    return _cross(w, m[0]), _add(_cross(w, m[1]), _cross(v, m[0]))


def _crf(V, f):
    """``V ×* f``: ``[ω × n + v × f; ω × f]``."""
    w, v = V
    return _add(_cross(w, f[0]), _cross(v, f[1])), _cross(w, f[1])


class _RigidInertia:
    """A spatial inertia held as (m, h = m c, Ī about the frame origin): ``I = [Ī, h×; -h×, m]``.

    Sums and changes of frame of rigid-body inertias are again of this form,
    so composite inertias never need the full 6x6 product ``Xᵀ I X``.
    """

    def __init__(self, m, h, Ibar):
        self.m, self.h, self.Ibar = m, h, Ibar

    def apply(self, V):
        """``I V = [Ī ω + h × v; m v - h × ω]``."""
        w, v = V
        return _add(_matvec(self.Ibar, w), _cross(self.h, v)), _sub(_scale(self.m, v),
                                                                     _cross(self.h, w))

    def to_parent(self, E, r):
        """``Xᵀ I X`` for X = plucker(E, r) (this body's inertia seen from the parent):
        ``h' = Eᵀh + m r``, ``Ī' = Eᵀ Ī E + m(r·r 1 - r rᵀ) + 2(r·h_y)1 - r h_yᵀ - h_y rᵀ``
        with ``h_y = Eᵀ h``."""
        hy = _matTvec(E, self.h)
        EtI = _matmul(_transpose(E), self.Ibar)
        rot = _matmul(EtI, E)
        rr, rh = _dot(r, r), _dot(r, hy)
        Ibar = [[rot[a][b] - self.m * r[a] * r[b] - r[a] * hy[b] - hy[a] * r[b]
                 + ((self.m * rr + 2 * rh) if a == b else 0) for b in range(3)] for a in range(3)]
        return _RigidInertia(self.m, _add(hy, _scale(self.m, r)), Ibar)

    def __add__(self, other):
        return _RigidInertia(self.m + other.m, _add(self.h, other.h),
                             [[self.Ibar[a][b] + other.Ibar[a][b] for b in range(3)]
                              for a in range(3)])

    def bind(self, rec: _Recorder, name: str):
        Ibar = [[None] * 3 for _ in range(3)]
        for a in range(3):
            for b in range(a, 3):
                Ibar[a][b] = Ibar[b][a] = rec(self.Ibar[a][b], f"{name}_{_AXES[a]}{_AXES[b]}")
        return _RigidInertia(rec(self.m, f"{name}_m"), rec.vec(self.h, f"{name}_h"), Ibar)


# --- joints ---------------------------------------------------------------------------------
class _JointOps:
    """The symbolic toolbox a joint's ``symbolic_model`` uses (model/joints/base.py): sin
    and cos of a coordinate bound once as intermediates (with ``cos² = 1 - sin²`` for the
    simplifier), exact numbers, a matrix bound as intermediates."""

    half = sp.Rational(1, 2)
    number = staticmethod(_num)

    def __init__(self, rec: _Recorder, name: str) -> None:
        self.rec, self.name = rec, name

    def sincos(self, x):
        s = self.rec(sp.sin(x), f"sin_{x}")
        c = self.rec(sp.cos(x), f"cos_{x}")
        self.rec.pythagoras[c**2] = 1 - s**2
        return s, c

    def matrix(self, R, tag: str):
        return self.rec.mat(R, f"{tag}{self.name}")


def _joint(joint, qj, uj, rec: _Recorder, name: str):
    """Symbolic joint model: pose (R, p) of child in joint frame, kinematic equations
    q̇_j = W(q_j) u_j (the joint type's ``symbolic_model``), and the motion subspace S
    (numeric, constant in child coordinates)."""
    S = np.asarray(joint.motion_subspace(), dtype=float)
    try:
        R, p, qdot = joint.symbolic_model(list(qj), list(uj), _JointOps(rec, name))
    except NotImplementedError:
        raise SymbolicError(
            f"joint {joint.name!r}: kane.derive has no symbolic model of a {joint.kind!r} "
            f"joint (its type defines no symbolic_model)") from None
    return R, p, qdot, S


def _subspace_motion(S, uj):
    """``S u_j`` as (ω, v) lists (S numeric)."""
    col = [sum(_num(S[k, c]) * uj[c] for c in range(S.shape[1])) for k in range(6)]
    return col[:3], col[3:]


def _subspace_T_force(S, f):
    """``Sᵀ f`` for a spatial force f = (n, f_lin)."""
    flat = list(f[0]) + list(f[1])
    return [sum(_num(S[k, c]) * flat[k] for k in range(6)) for c in range(S.shape[1])]


# --- parameters -----------------------------------------------------------------------------
class _Parameters:
    """Model numbers as constants ("numeric") or as symbols with their values ("symbolic").

    Only nonzero numbers become symbols: a zero in the model (a centre of mass
    on an axis, a placement along one axis) is structure, not a parameter.
    Placement rotations, joint axes and screw pitches always stay numeric.
    """

    def __init__(self, symbolic: bool) -> None:
        self.symbolic = symbolic
        self.values: dict[sp.Symbol, float] = {}

    def __call__(self, x: float, name: str) -> sp.Expr:
        if not self.symbolic or float(x) == 0.0:
            return _num(x)
        s = sp.Symbol(name)
        if s in self.values:
            raise SymbolicError(f"parameter name {name!r} is used twice (rename a body)")
        self.values[s] = float(x)
        return s


def _body_inertia(body, par: _Parameters) -> _RigidInertia:
    m, c, Ic = inertia_parameters(body.inertia)
    if not par.symbolic:
        I6 = body.inertia
        return _RigidInertia(_num(I6[5, 5]), [_num(m * x) for x in c],
                             [[_num(I6[a, b]) for b in range(3)] for a in range(3)])
    n = body.name
    ms = par(m, f"m_{n}")
    cs = [par(c[k], f"c_{n}_{_AXES[k]}") for k in range(3)]
    Ics = [[None] * 3 for _ in range(3)]
    for a in range(3):
        for b in range(a, 3):
            Ics[a][b] = Ics[b][a] = par(Ic[a, b], f"I_{n}_{_AXES[a]}{_AXES[b]}")
    # Ī = Ic + m c× c×ᵀ = Ic + m (c·c 1 - c cᵀ)
    cc = _dot(cs, cs)
    Ibar = [[Ics[a][b] + ms * ((cc if a == b else 0) - cs[a] * cs[b]) for b in range(3)]
            for a in range(3)]
    return _RigidInertia(ms, _scale(ms, cs), Ibar)


# --- the derivation -------------------------------------------------------------------------
def derive(model: Model, parameters: str = "numeric", method: str = "recursive",
           energy: bool = True) -> EquationsOfMotion:
    """Kane's equations ``q̇ = W(q) u``, ``M(q) u̇ = forcing(q, u, τ)`` of a tree Model.

    Parameters
    ----------
    model : any Model of the numeric core (all joint types; quaternion
        coordinates with body angular velocity speeds for spherical and free
        joints).
    parameters : ``"numeric"`` folds the model's numbers into the
        expressions; ``"symbolic"`` makes every nonzero mass, centre-of-mass
        coordinate, rotational inertia entry, placement offset and gravity
        component a symbol, listed with its value in ``eom.parameters``.
    method : ``"recursive"`` (backward accumulation of the sums over bodies,
        the default) or ``"explicit"`` (partial velocities formed and summed
        term by term, O(n³)); see the module docstring.
    energy : also build ``T``, ``V`` and ``T + V`` (``eom.energy``).

    The symbols are ``q0 … q{nq-1}``, ``u0 … u{nv-1}`` (positions in the
    Model's q and v) and the inputs ``tau0 … tau{nv-1}``, the generalized
    active forces of the joint actuators. Joint damping and friction are not
    part of these equations; they are force elements (:mod:`kanedyn.forces`).
    """
    if not isinstance(model, Model):
        raise SymbolicError(f"kane.derive needs a kanedyn Model, got {type(model).__name__}")
    if parameters not in ("numeric", "symbolic"):
        raise SymbolicError(f"parameters must be 'numeric' or 'symbolic', got {parameters!r}")
    if method not in ("recursive", "explicit"):
        raise SymbolicError(f"method must be 'recursive' or 'explicit', got {method!r}")
    rotors = [b.joint.name for b in model.bodies if b.joint.armature != 0.0]
    if rotors:
        raise SymbolicError(
            f"kane.derive does not take armature (rotor inertia) yet; joints {rotors} of "
            f"{model.name!r} have some. Use the numeric algorithms (kd.aba, kd.crba, "
            "kd.simulate), which honour it, or a model without armature")
    q = list(sp.symbols(f"q0:{model.nq}"))
    u = list(sp.symbols(f"u0:{model.nv}"))
    tau = list(sp.symbols(f"tau0:{model.nv}"))
    par = _Parameters(parameters == "symbolic")
    rec = _Recorder()
    gravity = [par(model.gravity[k], f"g_{_AXES[k]}") for k in range(3)]

    nb, nv = model.nb, model.nv
    E, r, V, A0, S, inertia, qdot = ([None] * nb for _ in range(7))
    g_body, height = [None] * nb, [None] * nb  # gravity in body axes, g · (body origin)
    quaternions = []
    # forward pass, parent before child: joint transforms, velocities, bias accelerations
    for b in model.bodies:
        i, p, n = b.index, b.parent, f"{b.index}"
        qj, uj = q[b.iq], u[b.iv]
        RJ, pJ, qd, S[i] = _joint(b.joint, qj, uj, rec, n)
        qdot[i] = qd
        if b.joint.quaternion is not None:  # its q slice, and the speeds that turn it
            qs = b.joint.quaternion
            turning = [c for c in range(b.joint.nv) if np.any(S[i][:3, c])]
            quaternions.append((list(range(b.iq.start + qs.start, b.iq.start + qs.stop)),
                                [b.iv.start + c for c in turning]))
        # X_up = X_J X_tree: E = R_Jᵀ E_tree, r = r_tree + E_treeᵀ p_J
        Et = [[_num(x) for x in row] for row in b.placement.E]
        rt = [par(b.placement.r[k], f"r_{b.name}_{_AXES[k]}") for k in range(3)]
        E[i] = rec.mat(_matmul(_transpose(RJ), Et), f"E{n}")
        r[i] = rec.vec(_add(rt, _matTvec(Et, pJ)), f"r{n}")
        vJ = _subspace_motion(S[i], uj)
        if p < 0:
            V[i] = vJ
            a = _apply_motion(E[i], r[i], ([0, 0, 0], _scale(-1, gravity)))
            g_body[i] = rec.vec(_matvec(E[i], gravity), f"g{n}")
            height[i] = rec(_dot(gravity, r[i]), f"G{n}")
        else:
            wv = _apply_motion(E[i], r[i], V[p])
            V[i] = (rec.vec(_add(wv[0], vJ[0]), f"w{n}"), rec.vec(_add(wv[1], vJ[1]), f"v{n}"))
            a = _apply_motion(E[i], r[i], A0[p])
            c = _crm(V[i], vJ)
            a = (_add(a[0], c[0]), _add(a[1], c[1]))
            g_body[i] = rec.vec(_matvec(E[i], g_body[p]), f"g{n}")
            height[i] = rec(height[p] + _dot(g_body[p], r[i]), f"G{n}")
        A0[i] = (rec.vec(a[0], f"alpha{n}"), rec.vec(a[1], f"acc{n}"))
        inertia[i] = _body_inertia(b, par)

    # body forces with u̇ = 0: f_i = I_i A°_i + V_i ×* I_i V_i (minus Kane's inertia force)
    momentum, force = [None] * nb, [None] * nb
    for b in model.bodies:
        i, n = b.index, f"{b.index}"
        # the momentum I V stays unbound inside V ×* I V, so that terms such as
        # ω × (I ω) cancel when the body's force is expanded
        momentum[i] = inertia[i].apply(V[i])
        IA = inertia[i].apply(A0[i])
        vf = _crf(V[i], momentum[i])
        force[i] = (_add(IA[0], vf[0]), _add(IA[1], vf[1]))

    M = sp.zeros(nv, nv)
    forcing = sp.zeros(nv, 1)
    if method == "recursive":
        _recursive_sums(model, E, r, S, inertia, force, rec, M, forcing)
    else:
        _explicit_sums(model, E, r, S, inertia, force, rec, M, forcing)
    for k in range(nv):
        forcing[k] = tau[k] - forcing[k]

    qdot_all = sp.Matrix([x for b in model.bodies for x in qdot[b.index]])
    T = V_pot = None
    if energy:
        # T = ½ Σ V_i · I_i V_i;  V = -Σ m_i g · (p_i + R_i c_i) = -Σ (m_i G_i + g_i · h_i)
        T = sp.Rational(1, 2) * sum(_dot(V[i][0], momentum[i][0]) + _dot(V[i][1], momentum[i][1])
                                    for i in range(nb))
        V_pot = -sum(inertia[i].m * height[i] + _dot(g_body[i], inertia[i].h) for i in range(nb))
        T, V_pot = sp.expand(T), sp.expand(V_pot)
    eom = EquationsOfMotion(
        q=q, u=u, qdot=qdot_all, mass_matrix=M, forcing=forcing, inputs=tau,
        parameters=dict(par.values), energy=None if T is None else T + V_pot,
        quaternions=quaternions, intermediates=rec.intermediates,
        name=f"kane_{model.name}", kinetic_energy=T, potential_energy=V_pot,
        source_model=model,
    )
    return eom


def _recursive_sums(model, E, r, S, inertia, force, rec, M, forcing) -> None:
    """Backward pass: ``forcing_k = S_kᵀ Σ_{i∈subtree(k)} i_X_kᵀ f_i`` and
    ``M`` from composite inertias, ``M_kl = S_kᵀ I^c_k k_X_l S_l`` for l on the path to k."""
    nb = model.nb
    f = [list(x) for x in force]
    Ic = list(inertia)
    for i in reversed(range(nb)):
        b = model.bodies[i]
        n = f"{i}"
        f[i] = (rec.vec(f[i][0], f"fc{n}_n"), rec.vec(f[i][1], f"fc{n}_f"))
        for k, x in zip(range(b.iv.start, b.iv.stop), _subspace_T_force(S[i], f[i]), strict=True):
            forcing[k] = rec(x, f"Fr{k}")
        Ic[i] = Ic[i].bind(rec, f"Ic{n}")
        if b.parent >= 0:
            p = b.parent
            fp = _transpose_apply_force(E[i], r[i], f[i])
            f[p] = (_add(f[p][0], fp[0]), _add(f[p][1], fp[1]))
            Ic[p] = Ic[p] + Ic[i].to_parent(E[i], r[i])
    for b in model.bodies:
        i = b.index
        cols = range(b.iv.start, b.iv.stop)
        # F = I^c_i S_i, one spatial force per speed of joint i, carried towards the root
        F = []
        for c, k in enumerate(cols):
            Sc = ([_num(x) for x in S[i][:3, c]], [_num(x) for x in S[i][3:, c]])
            Fk = Ic[i].apply(Sc)
            F.append((rec.vec(Fk[0], f"F{k}_{i}_n"), rec.vec(Fk[1], f"F{k}_{i}_f")))
        j = i
        while True:
            bj = model.bodies[j]
            for c, k in enumerate(cols):
                rows = range(bj.iv.start, bj.iv.stop)
                for l, x in zip(rows, _subspace_T_force(S[j], F[c]), strict=True):
                    M[l, k] = M[k, l] = rec(x, f"M{l}_{k}")
            if bj.parent < 0:
                break
            F = [_transpose_apply_force(E[j], r[j], Fk) for Fk in F]
            F = [(rec.vec(Fk[0], f"F{k}_{bj.parent}_n"), rec.vec(Fk[1], f"F{k}_{bj.parent}_f"))
                 for k, Fk in zip(cols, F, strict=True)]
            j = bj.parent


def _explicit_sums(model, E, r, S, inertia, force, rec, M, forcing) -> None:
    """Partial velocities ``V_i,r`` formed explicitly, then ``M = Σ_i V_iᵀ I_i V_i``,
    ``forcing = Σ_i V_iᵀ f_i``."""
    nv = model.nv
    partial = [None] * model.nb  # partial[i][r] = (ω_r, v_r) of body i, or None if zero
    for b in model.bodies:
        i, p = b.index, b.parent
        cols = [None] * nv
        if p >= 0:
            for k in range(nv):
                if partial[p][k] is not None:
                    w, v = _apply_motion(E[i], r[i], partial[p][k])
                    cols[k] = (rec.vec(w, f"Vw{i}_{k}"), rec.vec(v, f"Vv{i}_{k}"))
        for c, k in enumerate(range(b.iv.start, b.iv.stop)):
            cols[k] = ([_num(x) for x in S[i][:3, c]], [_num(x) for x in S[i][3:, c]])
        partial[i] = cols
    for b in model.bodies:
        i = b.index
        live = [k for k in range(nv) if partial[i][k] is not None]
        IV = {k: inertia[i].apply(partial[i][k]) for k in live}
        for k in live:
            wk, vk = partial[i][k]
            forcing[k] += _dot(wk, force[i][0]) + _dot(vk, force[i][1])
            for l in live:
                if l <= k:
                    M[k, l] += _dot(wk, IV[l][0]) + _dot(vk, IV[l][1])
    for k in range(nv):
        forcing[k] = rec(forcing[k], f"Fr{k}")
        for l in range(k + 1):
            M[k, l] = M[l, k] = rec(M[k, l], f"M{k}_{l}")
