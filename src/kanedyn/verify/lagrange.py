"""Check (f, second half): the recursive algorithms against Lagrange's equations in SymPy.

For a small model whose speeds are the derivatives of its coordinates
(revolute, prismatic and helical joints: v = q̇) the Lagrangian is built
symbolically from the model data alone — body poses as products of the joint
transforms, ``T = Σ ½ m_i |ċ_i|² + ½ ω_iᵀ I_c,i ω_i`` with
``[ω_i]× = R_iᵀ Ṙ_i`` and c_i the centre of mass, ``V = −Σ m_i gᵀ c_i`` —
and Euler–Lagrange gives

    M_L(q) = ∂²L/∂q̇²,   h_L(q, q̇) = (∂²L/∂q̇∂q) q̇ − ∂L/∂q,

with ``M_L q̈ + h_L = τ``. No spatial algebra, no recursion: an independent
derivation of ``kd.crba`` and ``kd.nonlinear_effects``.
"""

from __future__ import annotations

import numpy as np

from .. import dynamics as dyn
from ..model import Model
from ..spatial import inertia_parameters
from .result import CheckResult, skipped

#: relative error allowed between the lambdified Lagrange terms and the recursive ones
LAGRANGE_TOL = 1e-9
#: largest model (degrees of freedom) derived symbolically
LAGRANGE_MAX_DOF = 4

_KINDS = ("revolute", "prismatic", "helical")


def _rotation(axis, angle):
    """Rodrigues: ``R = 1 + sin θ [a]× + (1 − cos θ) [a]×²``."""
    import sympy as sp

    a = sp.Matrix(axis)
    K = sp.Matrix([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return sp.eye(3) + sp.sin(angle) * K + (1 - sp.cos(angle)) * K * K


def _joint_pose(joint, qj):
    import sympy as sp

    a = sp.Matrix(joint.axis)
    if joint.kind == "revolute":
        return _rotation(joint.axis, qj), sp.zeros(3, 1)
    if joint.kind == "prismatic":
        return sp.eye(3), qj * a
    return _rotation(joint.axis, qj), joint.pitch * qj * a  # helical


def lagrangian(model: Model):
    """(q, q̇, L) of the model as SymPy expressions; raises ValueError if v ≠ q̇ for some joint."""
    import sympy as sp  # imported here: `import kanedyn.verify` should not pay for SymPy

    bad = [b.joint.name for b in model.bodies if b.joint.kind not in _KINDS]
    if bad:
        raise ValueError(f"joints {bad} have speeds that are not coordinate rates")
    n = model.nv
    q = sp.symbols(f"q0:{n}")
    qd = sp.symbols(f"qd0:{n}")
    R, p = [None] * model.nb, [None] * model.nb
    T, V = sp.Integer(0), sp.Integer(0)
    g = sp.Matrix(model.gravity)
    for b in model.bodies:
        qj = q[b.iq.start]
        Rj, pj = _joint_pose(b.joint, qj)
        Rt, pt = sp.Matrix(b.placement.rotation), sp.Matrix(b.placement.translation)
        Rp, pp = (sp.eye(3), sp.zeros(3, 1)) if b.parent < 0 else (R[b.parent], p[b.parent])
        R[b.index] = Rp * Rt * Rj
        p[b.index] = pp + Rp * (pt + Rt * pj)
        m, c, Ic = inertia_parameters(b.inertia)
        ci = p[b.index] + R[b.index] * sp.Matrix(c)
        cdot = ci.jacobian(q) * sp.Matrix(qd)
        Rdot = sum((R[b.index].diff(qk) * qdk for qk, qdk in zip(q, qd, strict=True)),
                   sp.zeros(3, 3))
        W = R[b.index].T * Rdot  # [ω]× in body axes
        w = sp.Matrix([W[2, 1], W[0, 2], W[1, 0]])
        T += sp.Rational(1, 2) * m * (cdot.T * cdot)[0] + sp.Rational(1, 2) * (
            w.T * sp.Matrix(Ic) * w)[0]
        V += -m * (g.T * ci)[0]
    return q, qd, T - V


def lagrange_terms(model: Model):
    """Numeric functions ``M_L(q)`` and ``h_L(q, q̇)`` from Euler–Lagrange on :func:`lagrangian`."""
    import sympy as sp

    q, qd, L = lagrangian(model)
    dLdqd = sp.Matrix([L.diff(x) for x in qd])
    M = dLdqd.jacobian(qd)
    h = dLdqd.jacobian(q) * sp.Matrix(qd) - sp.Matrix([L.diff(x) for x in q])
    fM = sp.lambdify([q], M, "numpy", cse=True)
    fh = sp.lambdify([q, qd], h, "numpy", cse=True)
    return (lambda x: np.asarray(fM(tuple(x)), dtype=float),
            lambda x, y: np.asarray(fh(tuple(x), tuple(y)), dtype=float).reshape(-1))


def lagrange_vs_recursive(subject, Q, V, max_dof: int = LAGRANGE_MAX_DOF) -> CheckResult:
    """max relative difference of (CRBA, RNEA(q, v, 0)) from (M_L, h_L) at the samples."""
    name, title = "lagrange", "Lagrange (SymPy) vs recursive"
    model = subject.model
    if model is None:
        return skipped(name, title, "needs a Model (the Lagrangian is built from the tree)")
    if model.nq != model.nv:
        return skipped(name, title, f"nq = {model.nq} != nv = {model.nv} (quaternions)")
    if model.nv > max_dof:
        return skipped(name, title, f"{model.nv} dof > {max_dof}: symbolic derivation too large")
    try:
        fM, fh = lagrange_terms(model)
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
                       f"M = d2L/dqd2 and h = (d2L/dqd dq) qd - dL/dq, {len(Q)} states", title)
