"""Check (f, second half): the recursive algorithms against Lagrange's equations, derived
symbolically.

For a small model whose speeds are the derivatives of its coordinates
(revolute, prismatic and helical joints, any type with v = q̇ and a
``symbolic_model``) the Lagrangian is built symbolically from the model data
alone — body poses as products of the joint transforms (each type's
``symbolic_model``), ``T = Σ ½ m_i |ċ_i|² + ½ ω_iᵀ I_c,i ω_i`` with
``[ω_i]× = R_iᵀ Ṙ_i`` and c_i the centre of mass, plus ``½ J_j q̇_j²`` for a
joint's rotor inertia (armature) J_j, ``V = −Σ m_i gᵀ c_i`` —
and Euler–Lagrange gives

    M_L(q) = ∂²L/∂q̇²,   h_L(q, q̇) = (∂²L/∂q̇∂q) q̇ − ∂L/∂q,

with ``M_L q̈ + h_L = τ``. No spatial algebra, no recursion: an independent
derivation of ``kd.crba`` and ``kd.nonlinear_effects``.

The algebra is done by SymEngine when it is installed (the ``fast`` and
``test`` extras; a 3-dof tree takes 0.02 s to differentiate and 0.3 s to
lambdify) and by SymPy otherwise (the same expressions, 100x slower: 10-70 s
for a 3-dof tree with skew axes), so the default size limit is kept small.
"""

from __future__ import annotations

import numpy as np

from .. import dynamics as dyn
from ..model import Model
from ..spatial import inertia_parameters
from .result import CheckResult, skipped

#: relative error allowed between the lambdified Lagrange terms and the recursive ones
LAGRANGE_TOL = 1e-9
#: largest model (degrees of freedom) derived by default, by engine: SymEngine takes ~1 s at
#: 6 dof (19 s for the 9-dof panda arm), SymPy ~3 s at 3 dof and a minute at 4 with skew axes
LAGRANGE_MAX_DOF = {"symengine": 7, "sympy": 3}


def _engine(name: str | None):
    """The symbolic engine module: SymEngine if available (or asked for), else SymPy."""
    if name in (None, "symengine"):
        try:
            import symengine

            return "symengine", symengine
        except ImportError:
            if name == "symengine":
                raise
    import sympy

    return "sympy", sympy


# 3-vectors and 3x3 matrices as nested lists, so the same code runs on either engine
def _mm(A, B):
    return [[sum(A[i][k] * B[k][j] for k in range(3)) for j in range(3)] for i in range(3)]


def _mv(A, x):
    return [sum(A[i][k] * x[k] for k in range(3)) for i in range(3)]


def _tr(A):
    return [[A[j][i] for j in range(3)] for i in range(3)]


def _add(x, y):
    return [a + b for a, b in zip(x, y, strict=True)]


class _JointOps:
    """The symbolic toolbox of a joint's ``symbolic_model`` (model/joints/base.py) on
    the chosen engine: plain sin and cos, floats, no binding."""

    half = 0.5

    def __init__(self, sym) -> None:
        self.sym = sym

    def sincos(self, x):
        return self.sym.sin(x), self.sym.cos(x)

    @staticmethod
    def number(x: float) -> float:
        return float(x)

    @staticmethod
    def matrix(R, tag: str):
        return R


def _coordinate_rates(joint) -> bool:
    """v_j = q̇_j: no quaternion, nq = nv and W(q) = 1 (checked at a random q_j)."""
    if joint.quaternion is not None or joint.nq != joint.nv:
        return False
    qj = joint.random_configuration(np.random.default_rng(0))
    return bool(np.array_equal(joint.kinematic_map(qj), np.eye(joint.nv)))


def lagrangian(model: Model, engine: str | None = None):
    """(q, q̇, L) of the model as symbolic expressions of the chosen engine.

    Raises ValueError if some joint's speeds are not coordinate rates (v ≠ q̇).
    """
    bad = [b.joint.name for b in model.bodies if not _coordinate_rates(b.joint)]
    if bad:
        raise ValueError(f"joints {bad} have speeds that are not coordinate rates")
    _, sym = _engine(engine)
    ops = _JointOps(sym)
    n = model.nv
    q = [sym.Symbol(f"q{i}") for i in range(n)]
    qd = [sym.Symbol(f"qd{i}") for i in range(n)]
    R, p = [None] * model.nb, [None] * model.nb
    T, V = 0, 0
    g = [float(x) for x in model.gravity]
    for b in model.bodies:
        try:
            Rj, pj, _ = b.joint.symbolic_model(q[b.iq], qd[b.iv], ops)
        except NotImplementedError:
            raise ValueError(f"joint {b.joint.name!r}: its type {b.joint.kind!r} has no "
                             f"symbolic model") from None
        Rt, pt = b.placement.rotation.tolist(), b.placement.translation.tolist()
        if b.parent < 0:
            Rp, pp = np.eye(3).tolist(), [0.0, 0.0, 0.0]
        else:
            Rp, pp = R[b.parent], p[b.parent]
        Ri = _mm(_mm(Rp, Rt), Rj)
        pi = _add(pp, _mv(Rp, _add(pt, _mv(Rt, pj))))
        R[b.index], p[b.index] = Ri, pi
        m, c, Ic = inertia_parameters(b.inertia)
        ci = _add(pi, _mv(Ri, c.tolist()))
        cdot = [sum(x.diff(qk) * qdk for qk, qdk in zip(q, qd, strict=True)) if
                hasattr(x, "diff") else 0 for x in ci]
        Rdot = [[sum(x.diff(qk) * qdk for qk, qdk in zip(q, qd, strict=True))
                 if hasattr(x, "diff") else 0 for x in row] for row in Ri]
        W = _mm(_tr(Ri), Rdot)  # [ω]× in body axes
        w = [W[2][1], W[0][2], W[1][0]]
        Iw = _mv(Ic.tolist(), w)
        T = T + 0.5 * m * sum(x * x for x in cdot) + 0.5 * sum(a * b_ for a, b_ in
                                                             zip(w, Iw, strict=True))
        V = V - m * sum(gk * ck for gk, ck in zip(g, ci, strict=True))
        # a rotor inertia (armature) at the joint: ½ J q̇², the diagonal of M it adds
        T = T + 0.5 * float(b.joint.armature) * sum(x * x for x in qd[b.iv])
    return q, qd, T - V


def lagrange_terms(model: Model, engine: str | None = None):
    """Numeric functions ``M_L(q)`` and ``h_L(q, q̇)`` from Euler–Lagrange on :func:`lagrangian`."""
    name, sym = _engine(engine)
    q, qd, L = lagrangian(model, name)
    n = len(q)
    dLdqd = [L.diff(x) for x in qd]
    M = [[dLdqd[i].diff(qd[j]) for j in range(n)] for i in range(n)]
    h = [sum(dLdqd[i].diff(q[k]) * qd[k] for k in range(n)) - L.diff(q[i]) for i in range(n)]
    if name == "symengine":
        fM = sym.Lambdify(q, [x for row in M for x in row], cse=True, backend="lambda")
        fh = sym.Lambdify(q + qd, h, cse=True, backend="lambda")
        return (lambda x: np.asarray(fM(np.asarray(x, float)), dtype=float).reshape(n, n),
                lambda x, y: np.asarray(fh(np.concatenate([np.asarray(x, float),
                                                           np.asarray(y, float)])),
                                        dtype=float).reshape(n))
    fM = sym.lambdify([q], sym.Matrix(M), "numpy", cse=True)
    fh = sym.lambdify([q, qd], sym.Matrix(h), "numpy", cse=True)
    return (lambda x: np.asarray(fM(tuple(x)), dtype=float).reshape(n, n),
            lambda x, y: np.asarray(fh(tuple(x), tuple(y)), dtype=float).reshape(n))


def lagrange_vs_recursive(subject, Q, V, max_dof: int | None = None,
                          engine: str | None = None) -> CheckResult:
    """max relative difference of (CRBA, RNEA(q, v, 0)) from (M_L, h_L) at the samples.

    ``max_dof`` None: :data:`LAGRANGE_MAX_DOF` of the engine in use.
    """
    name, title = "lagrange", "Lagrange (symbolic) vs recursive"
    if max_dof is None:
        max_dof = LAGRANGE_MAX_DOF[_engine(engine)[0]]
    model = subject.model
    if model is None:
        return skipped(name, title, "needs a Model (the Lagrangian is built from the tree)")
    if model.nq != model.nv:
        return skipped(name, title, f"nq = {model.nq} != nv = {model.nv} (quaternions)")
    if model.nv > max_dof:
        return skipped(name, title, f"{model.nv} dof > {max_dof}: symbolic derivation too large")
    try:
        fM, fh = lagrange_terms(model, engine)
    except ValueError as exc:
        return skipped(name, title, str(exc))
    worst = 0.0
    for q, v in zip(Q, V, strict=True):
        M, h = dyn.crba(model, q), dyn.nonlinear_effects(model, q, v)
        ML, hL = fM(q), fh(q, v)
        r = max(float(np.abs(M - ML).max()) / max(float(np.abs(M).max()), 1e-300),
                float(np.abs(h - hL).max()) / max(float(np.abs(h).max()), 1e-300))
        worst = max(worst, r if np.isfinite(r) else np.inf)
    return CheckResult(name, worst <= LAGRANGE_TOL, worst, LAGRANGE_TOL,
                       f"M = d2L/dqd2, h = (d2L/dqd dq) qd - dL/dq by {_engine(engine)[0]}, "
                       f"{len(Q)} states", title)
