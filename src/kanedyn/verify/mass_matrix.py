"""Check (a): the joint-space inertia matrix M(q) is symmetric and positive definite.

``T = ½ vᵀ M(q) v`` is a positive-definite quadratic form for any tree of
bodies with mass whose joints each move some inertia (Featherstone 2008,
§6.1), so at every sampled configuration M must equal Mᵀ to rounding and its
smallest eigenvalue must be positive.
"""

from __future__ import annotations

import numpy as np

from .result import CheckResult
from .subject import Subject

#: relative asymmetry allowed: CRBA fills both triangles from one product, so rounding only
SYMMETRY_TOL = 1e-12
#: smallest eigenvalue relative to the largest below which M counts as singular
CONDITION_TOL = 1e-12


def mass_matrix_symmetric(subject: Subject, Q: np.ndarray) -> CheckResult:
    """max_k ‖M(q_k) − M(q_k)ᵀ‖_max / ‖M(q_k)‖_max over the sampled configurations."""
    worst, where = 0.0, 0
    for k, q in enumerate(Q):
        M = subject.mass_matrix(q)
        rel = float(np.abs(M - M.T).max() / max(np.abs(M).max(), 1e-300))
        if not np.isfinite(rel):
            rel = np.inf
        if rel >= worst:
            worst, where = rel, k
    ok = worst <= SYMMETRY_TOL
    detail = f"max |M - M^T| / |M| over {len(Q)} configurations"
    if not ok:
        detail += f"; worst at sample {where}"
    return CheckResult("mass_matrix_symmetric", ok, worst, SYMMETRY_TOL, detail,
                       "M(q) symmetric")


def mass_matrix_positive_definite(subject: Subject, Q: np.ndarray) -> CheckResult:
    """min_k λ_min/λ_max of M(q_k) > CONDITION_TOL: positive, and not singular to rounding."""
    lo, ratio, where = np.inf, np.inf, 0
    for k, q in enumerate(Q):
        M = subject.mass_matrix(q)
        if not np.all(np.isfinite(M)):
            lo, ratio, where = np.nan, -np.inf, k
            break
        ev = np.linalg.eigvalsh(0.5 * (M + M.T))
        r = ev[0] / max(abs(ev[-1]), 1e-300)
        if r < ratio:
            lo, ratio, where = float(ev[0]), float(r), k
    ok = bool(ratio > CONDITION_TOL)
    detail = (f"min lambda_min/lambda_max over {len(Q)} configurations, must exceed the "
              f"tolerance (smallest eigenvalue {lo:.4g})")
    if not ok:
        detail += f"; at sample {where}"
    return CheckResult("mass_matrix_positive_definite", ok, ratio, CONDITION_TOL, detail,
                       "M(q) positive definite")
