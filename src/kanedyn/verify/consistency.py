"""Check (b): inverse dynamics, forward dynamics and the mass matrix describe one system.

For a Model the three recursive algorithms are compared pairwise
(Featherstone 2008, ch. 5–7):

* ``τ = RNEA(q, v, ABA(q, v, τ))`` for a random τ;
* the j-th column of ``CRBA(q)`` equals ``RNEA(q, v, e_j) − RNEA(q, v, 0)``
  (RNEA is affine in the acceleration with slope M).

For a protocol system only the first identity has a form: ``M a + h = τ``
with ``a = forward_dynamics(q, v, τ)``.
"""

from __future__ import annotations

import numpy as np

from .. import dynamics as dyn
from .result import CheckResult, skipped
from .subject import Subject

#: relative residual allowed: a few hundred roundings through O(n) recursions of 6x6 products
ALGEBRA_TOL = 1e-9


def _rel(err: np.ndarray, *terms: np.ndarray) -> float:
    scale = max(max(float(np.abs(t).max()) for t in terms), 1e-300)
    r = float(np.abs(err).max()) / scale
    return r if np.isfinite(r) else np.inf


def inverse_forward(subject: Subject, Q, V, TAU) -> CheckResult:
    """max relative residual of ``τ − ID(q, v, FD(q, v, τ))`` over the samples."""
    worst = 0.0
    for q, v, tau in zip(Q, V, TAU, strict=True):
        a = subject.forward_dynamics(q, v, tau)
        if subject.model is not None:
            back = dyn.rnea(subject.model, q, v, a)
            worst = max(worst, _rel(back - tau, tau, back))
        else:
            M, h = subject.mass_matrix(q), subject.nonlinear_effects(q, v)
            Ma = M @ a
            worst = max(worst, _rel(Ma + h - tau, tau, Ma, h))
    how = ("tau = RNEA(q, v, ABA(q, v, tau))" if subject.model is not None
           else "M(q) forward_dynamics(q, v, tau) + h(q, v) = tau")
    return CheckResult("inverse_forward", worst <= ALGEBRA_TOL, worst, ALGEBRA_TOL,
                       f"{how}, random tau, {len(Q)} states", "inverse vs forward dynamics")


def crba_vs_rnea(subject: Subject, Q, V) -> CheckResult:
    """max relative difference of CRBA's columns from RNEA's slope in the acceleration."""
    if subject.model is None:
        return skipped("crba_vs_rnea", "CRBA vs RNEA columns",
                       "needs a Model (a system exposes no inverse dynamics)")
    model, worst = subject.model, 0.0
    eye = np.eye(model.nv)
    for q, v in zip(Q, V, strict=True):
        M = dyn.crba(model, q)
        h = dyn.rnea(model, q, v, np.zeros(model.nv))
        cols = np.array([dyn.rnea(model, q, v, e) for e in eye]) - h
        # the difference of two RNEA calls carries rounding of the size of h
        worst = max(worst, _rel(cols.T - M, M, h))
    return CheckResult("crba_vs_rnea", worst <= ALGEBRA_TOL, worst, ALGEBRA_TOL,
                       f"M[:, j] = RNEA(q, v, e_j) - RNEA(q, v, 0), {len(Q)} states",
                       "CRBA vs RNEA columns")
