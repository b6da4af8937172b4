"""BDF (orders 1–5) through SUNDIALS IDA (scikit-sundae) for the index-1 and GGL forms.

IDA solves ``F(t, y, y') = D y' − rhs(t, y) = 0`` (Hindmarsh et al., "SUNDIALS: Suite of
nonlinear and differential/algebraic equation solvers", ACM TOMS 31, 2005). BDF codes
handle index 1; the GGL form is index 2, which IDA integrates when the index-2 variables
(a, λ, μ) are left out of the local error test (Brenan, Campbell & Petzold, *Numerical
Solution of IVPs in DAEs*, 1996) — done here by giving them a huge absolute
tolerance, IDA's equivalent of ``IDASetSuppressAlg``.

Consistent initial values: for the index-1 and Baumgarte forms IDA's own ``IDACalcIC``
(``calc_initcond="yp0"``) computes the algebraic a, λ and all of y' from (q0, v0) — the
index-1 structure is what it needs. It is seeded with a, λ of our index-1 solve
(``seed_initcond=False`` starts it from a = λ = 0, which works down to rtol ≈ 1e-10).
For GGL (index 2, where ``IDACalcIC`` does not apply) a, λ come from our index-1 solve
and μ = 0.
"""

from __future__ import annotations

import numpy as np

from ..errors import SolverError

_SIM_OPTIONS = ("formulation", "rtol", "atol", "alpha", "beta", "max_step", "max_steps",
                "initialize", "max_order", "seed_initcond")


def ida_method(problem, formulation: str = "index1", rtol: float = 1e-6, atol: float = 1e-6,
               alpha: float | None = None, beta: float | None = None,
               max_step: float | None = None, max_steps: int = 100_000,
               initialize: bool = True, max_order: int = 5, seed_initcond: bool = True,
               **unknown):
    """``kd.simulate(..., method="ida", formulation="index1" | "baumgarte" | "ggl")``."""
    try:
        from sksundae.ida import IDA
    except ImportError as e:  # the optional extra "dae"
        raise SolverError(
            f"method 'ida' needs scikit-sundae (pip install kanedyn[dae]): {e}") from None
    from .dae_common import formulated, solution

    if unknown:
        raise SolverError(f"method 'ida' does not take option(s) {sorted(unknown)}; it takes "
                          f"{sorted(_SIM_OPTIONS)}")
    if formulation not in ("index1", "baumgarte", "ggl"):
        raise SolverError(f"method 'ida' (BDF) takes formulation 'index1', 'baumgarte' or "
                          f"'ggl', not {formulation!r} (use radau5 for index 2 and 3)")
    system, dae, q0, v0 = formulated(problem, "ida", formulation, alpha, beta, initialize)
    Dm = dae.mass

    def resfn(t, y, yp, res):
        res[:] = Dm * yp - dae.rhs(t, y)

    def jacfn(t, y, yp, res, cj, JJ):
        # the same Jacobian radau5 gets: exact in a, λ, μ, differences in q, v
        JJ[:, :] = -dae.jacobian(t, y)
        JJ[np.arange(dae.n), np.arange(dae.n)] += cj * Dm

    nd = system.nq + system.nv
    alg = dae.algebraic
    atol_v = np.full(dae.n, float(atol))
    opts = dict(rtol=rtol, max_num_steps=max_steps, max_order=max_order, jacfn=jacfn)
    if formulation == "ggl":
        y0 = dae.initial_state(q0, v0, problem.t0)
        yp0 = np.zeros(dae.n)
        yp0[:nd] = dae.rhs(problem.t0, y0)[:nd]
        atol_v[dae.index >= 2] = 1e10  # out of the error test (index 2)
    else:
        # IDACalcIC corrects a, λ and y'; it starts from our index-1 solve, since from
        # a = λ = 0 its line search fails at tolerances below ~1e-10 on Andrews
        y0 = dae.initial_state(q0, v0, problem.t0) if seed_initcond else dae.pack(
            q0, v0, np.zeros(system.nv), np.zeros(system.m))
        yp0 = np.zeros(dae.n)
        opts.update(calc_initcond="yp0", algebraic_idx=alg,
                    calc_init_dt=0.01 * (problem.t_final - problem.t0))
    opts["atol"] = atol_v
    if max_step is not None:
        opts["max_step"] = max_step
    if problem.dt is not None:
        n = int(np.floor((problem.t_final - problem.t0) / problem.dt + 1e-9))
        tspan = problem.t0 + problem.dt * np.arange(n + 1)
        if tspan[-1] < problem.t_final - 1e-12 * max(1.0, abs(problem.t_final)):
            tspan = np.append(tspan, problem.t_final)
    else:
        tspan = np.array([problem.t0, problem.t_final])
    solver = IDA(resfn, **opts)
    sol = solver.solve(tspan, y0, yp0)
    if not sol.success:
        t_end = sol.t[-1] if len(sol.t) else problem.t0
        raise SolverError(f"ida ({formulation}): {sol.message} (stopped at t = {t_end:.10g} "
                          f"of {problem.t_final})")
    stats = {"nfev": getattr(sol, "nfev", 0), "njev": getattr(sol, "njev", 0)}
    return solution(system, dae, np.asarray(sol.t), np.asarray(sol.y), stats, "ida", problem)


def _register():
    from . import register_method

    register_method("ida", ida_method, "dae")


_register()
