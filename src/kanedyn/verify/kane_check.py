"""Check (f, first half): Kane's equations against the recursive algorithms.

``kanedyn.kane.derive(model)`` gives ``M(q) u̇ = forcing(q, u, τ)``; compiled,
it is a system with the protocol of DESIGN.md. At the sampled states its
mass matrix must equal ``kd.crba`` and its forward dynamics ``kd.aba`` (for a
tree model Kane's generalized speeds are the model's v, so the two agree
term by term). Skipped, with the reason, while ``kane.derive`` is not
available or cannot take the model.
"""

from __future__ import annotations

import numpy as np

from .. import dynamics as dyn
from ..errors import SymbolicError
from .result import CheckResult, skipped

#: relative error allowed between compiled Kane equations and CRBA/ABA
KANE_TOL = 1e-9
#: largest model (degrees of freedom) derived symbolically by default: derive + compile take
#: 0.2 s at 3 dof, 1 s at 7, 4 s at 12, 11 s at 9 for the panda arm (its meshes' inertias)
KANE_MAX_DOF = 8


def kane_vs_recursive(subject, Q, V, TAU, max_dof: int = KANE_MAX_DOF) -> CheckResult:
    name, title = "kane", "Kane vs recursive"
    model = subject.model
    if model is None:
        return skipped(name, title, "needs a Model (Kane's equations are derived from the tree)")
    try:
        from ..kane import derive
    except ImportError:
        return skipped(name, title, "not available: kanedyn.kane.derive does not exist yet")
    if model.nv > max_dof:
        return skipped(name, title, f"{model.nv} dof > {max_dof}: symbolic derivation too large")
    try:
        system = derive(model).compile()
    except (SymbolicError, NotImplementedError) as exc:
        return skipped(name, title, f"kane.derive cannot take this model: {exc}")
    worst = 0.0
    for q, v, tau in zip(Q, V, TAU, strict=True):
        M, Mk = dyn.crba(model, q), np.asarray(system.mass_matrix(q), dtype=float)
        a, ak = dyn.aba(model, q, v, tau), np.asarray(system.forward_dynamics(q, v, tau), float)
        r = max(float(np.abs(M - Mk).max()) / max(float(np.abs(M).max()), 1e-300),
                float(np.abs(a - ak).max()) / max(float(np.abs(a).max()), 1e-300))
        worst = max(worst, r if np.isfinite(r) else np.inf)
    return CheckResult(name, worst <= KANE_TOL, worst, KANE_TOL,
                       f"compiled Kane M and forward dynamics vs CRBA and ABA, {len(Q)} states",
                       title)
