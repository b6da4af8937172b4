"""The verification checklist: catch a model with a sign error before it integrates
quietly to a wrong answer.

``checklist(model_or_system)`` samples states, runs every check that applies
and returns a :class:`~kanedyn.verify.result.VerifyReport` (``print(report)``
shows the pass/fail table with the figure behind every line). The lines:

====================================  ================================================
``mass_matrix_symmetric``             M(q) = M(q)ᵀ
``mass_matrix_positive_definite``     λ_min(M(q)) > 0
``inverse_forward``                   τ = RNEA(q, v, ABA(q, v, τ))  (system: M a + h = τ)
``crba_vs_rnea``                      columns of CRBA = slope of RNEA in a
``energy_conservation``               E = T + V constant along force-free motion
``power_balance``                     d/dt(½vᵀMv + V) = vᵀτ along driven motion
``momentum_conservation``             ξ·h constant for the symmetries of the tree
``kane``                              compiled Kane equations = CRBA, ABA
``lagrange``                          symbolic Euler–Lagrange = CRBA, RNEA
``static_hand``                       g(q) = hand computation from positions
``static_potential``                  g(q) = ∂V/∂q
``static_symmetry``                   g = 0 where the load hangs on a joint's gravity line
``dissipation``                       damping ≥ 0, dampers dissipate, springs = −∇V
====================================  ================================================
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ModelError
from . import consistency, dissipation, energy, kane_check, lagrange, mass_matrix, momentum, static
from .result import CheckResult, VerifyReport
from .subject import as_subject

#: every check, in the order of the table
CHECKS = (
    "mass_matrix_symmetric",
    "mass_matrix_positive_definite",
    "inverse_forward",
    "crba_vs_rnea",
    "energy_conservation",
    "power_balance",
    "momentum_conservation",
    "kane",
    "lagrange",
    "static_hand",
    "static_potential",
    "static_symmetry",
    "dissipation",
)

_NEEDS_TRAJECTORY = {"energy_conservation", "momentum_conservation"}


def checklist(model_or_system, n_samples: int = 5, seed: int | None = 0,
              checks: Sequence[str] | None = None, *, t_final: float = 0.5,
              n_runs: int = 1, forces: Sequence = (), q0=None,
              symbolic_max_dof: int | None = None, symbolic_engine: str | None = None,
              kane_max_dof: int = kane_check.KANE_MAX_DOF) -> VerifyReport:
    """Run the verification checklist on a Model or a system (DESIGN.md protocol).

    Parameters
    ----------
    model_or_system : a :class:`kanedyn.Model`, or any object with ``nq, nv,
        mass_matrix, nonlinear_effects, forward_dynamics, energy, q_dot,
        integrate_configuration``; checks that need the tree are then skipped.
    n_samples : random states (q on the manifold, v ~ N(0, 1), τ ~ N(0, 1)) at which
        the pointwise checks are evaluated.
    seed : seed of those states (the run is reproducible).
    checks : names from :data:`CHECKS` to run (default: all).
    t_final, n_runs : length and number of the force-free runs of the energy and
        momentum checks.
    forces : force elements whose signs the ``dissipation`` line checks.
    q0 : base configuration for a system (random states move away from it).
    symbolic_max_dof : largest model the symbolic Lagrange derivation takes (None: 7 dof
        with SymEngine installed, 3 with SymPy alone).
    symbolic_engine : "sympy" or "symengine" for the Lagrange line (None: SymEngine if it
        is installed, else SymPy).
    kane_max_dof : largest model given to ``kane.derive(model).compile()``.

    Returns a :class:`VerifyReport`; ``report.passed`` is False iff a line failed.
    A check that raises (a NaN refused by the dynamics, a singular matrix in a
    user's system, a failed integration) fails with the exception as its detail.
    """
    wanted = list(CHECKS) if checks is None else list(checks)
    if symbolic_engine not in (None, "sympy", "symengine"):
        raise ModelError(f"symbolic_engine must be 'sympy' or 'symengine', got {symbolic_engine!r}")
    unknown = [c for c in wanted if c not in CHECKS]
    if unknown:
        raise ModelError(f"unknown check(s) {unknown}; the checks are {list(CHECKS)}")
    if int(n_samples) < 1:
        raise ModelError(f"n_samples must be at least 1, got {n_samples}")
    if not t_final > 0:
        raise ModelError(f"t_final must be positive, got {t_final}")
    subject = as_subject(model_or_system, q0)
    rng = np.random.default_rng(seed)
    states = [subject.random_state(rng) for _ in range(int(n_samples))]
    Q = np.array([s[0] for s in states])
    V = np.array([s[1] for s in states])
    TAU = rng.normal(size=(int(n_samples), subject.nv))

    trajectories, traj_error = [], None
    if _NEEDS_TRAJECTORY & set(wanted):
        try:
            for k in range(int(n_runs)):
                trajectories.append(energy.integrate_free_motion(subject, Q[k % len(Q)],
                                                                 V[k % len(Q)], t_final))
        except Exception as exc:  # noqa: BLE001 — a broken system must fail the line, not crash
            traj_error = f"{type(exc).__name__}: {exc}"

    def run(name: str) -> CheckResult:
        if name in _NEEDS_TRAJECTORY and traj_error is not None:
            return CheckResult(name, False, None, None, f"the free motion failed: {traj_error}",
                               name)
        table = {
            "mass_matrix_symmetric": lambda: mass_matrix.mass_matrix_symmetric(subject, Q),
            "mass_matrix_positive_definite":
                lambda: mass_matrix.mass_matrix_positive_definite(subject, Q),
            "inverse_forward": lambda: consistency.inverse_forward(subject, Q, V, TAU),
            "crba_vs_rnea": lambda: consistency.crba_vs_rnea(subject, Q, V),
            "energy_conservation": lambda: energy.energy_conservation(subject, trajectories),
            "power_balance": lambda: energy.power_balance(subject, Q, V, TAU),
            "momentum_conservation": lambda: momentum.momentum_conservation(subject,
                                                                            trajectories),
            "kane": lambda: kane_check.kane_vs_recursive(subject, Q, V, TAU, kane_max_dof),
            "lagrange": lambda: lagrange.lagrange_vs_recursive(subject, Q, V,
                                                               symbolic_max_dof,
                                                               symbolic_engine),
            "static_hand": lambda: static.static_by_hand(subject, Q),
            "static_potential": lambda: static.static_virtual_work(subject, Q),
            "static_symmetry": lambda: static.static_symmetry(subject),
            "dissipation": lambda: dissipation.dissipation(subject, Q, V, list(forces)),
        }
        try:
            return table[name]()
        except Exception as exc:  # noqa: BLE001 — e.g. LinAlgError from a singular user M
            return CheckResult(name, False, None, None, f"raised {type(exc).__name__}: {exc}",
                               name)

    results = [run(name) for name in CHECKS if name in wanted]
    settings = {"n_samples": int(n_samples), "seed": seed, "t_final": float(t_final),
                "n_runs": int(n_runs), "symbolic_max_dof": symbolic_max_dof,
                "kane_max_dof": int(kane_max_dof)}
    return VerifyReport(subject.name, results, settings)
