"""SciPy's ``solve_ivp`` methods ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA") by name.

The solver classes of :mod:`scipy.integrate` are stepped one step at a time
on ``y = (ξ, v, w)``: ``q = q_c ⊕ ξ`` in the tangent chart of a centre
configuration q_c, ``ξ̇ = J(ξ)⁻¹ v``, ``v̇`` from ``forward_dynamics``, and
``ẇ = vᵀ τ_nc``. For additive coordinates the chart is global; with ball or
free joints the solver is restarted on a new centre whenever ``|ξ|`` exceeds
0.5 rad, so quaternions only ever move by the exponential map. Orders and
properties are SciPy's (RK45: 5(4); DOP853: 8(5,3); Radau: 5, L-stable;
BDF: 1–5, variable order; LSODA: Adams/BDF switching); none conserves energy
exactly. Options (``rtol``, ``atol``, ``first_step``, ``max_step``, and for the
implicit ones ``jac``) go to the SciPy class, which validates them.
"""

from __future__ import annotations

import inspect

import numpy as np

from ..errors import SolverError
from .base import Problem, Solution, chart_is_additive, chart_jacobian, check_state, is_nonholonomic

SCIPY_METHODS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")


def scipy_method(name: str):
    """The kanedyn method that runs ``scipy.integrate.<name>``."""

    def run(problem: Problem, **options) -> Solution:
        # (scipy.integrate imported here, on use: it is ~1 s of `import kanedyn`)
        import scipy.integrate as si

        return _run(getattr(si, name), name, problem, **options)

    run.__name__ = f"scipy_{name}"
    run.__doc__ = f"scipy.integrate.{name}, stepped in tangent coordinates."
    return run


def check_options(cls, name: str, options: dict, extra: set = frozenset()) -> None:
    """SciPy only warns about options a solver ignores; here they are errors (``extra``:
    the caller's own options, listed among those it takes)."""
    known = set(inspect.signature(cls.__init__).parameters) - {
        "self", "fun", "t0", "y0", "t_bound", "vectorized", "extraneous"}
    unknown = set(options) - known
    if unknown:
        raise SolverError(f"method {name!r} does not take option(s) {sorted(unknown)}; it takes "
                          f"{sorted(known | set(extra))}")


def make_solver(cls, name: str, f, t: float, y, t_bound: float, options: dict,
                first: float | None = None):
    """``cls(f, t, y, t_bound, **options)``, started with step ``first`` unless the options
    give one (a restart keeps the step size); SciPy's own errors as SolverErrors."""
    opts = dict(options)
    if first is not None and "first_step" not in options:
        opts["first_step"] = first
    try:
        return cls(f, t, y, t_bound, **opts)
    except (TypeError, ValueError) as e:
        raise SolverError(f"method {name!r}: {e}") from None


def advance(solver, name: str, n: int, hint: str) -> None:
    """One step of a SciPy solver; its failure a SolverError with the time, the steps
    taken and ``hint``."""
    msg = solver.step()
    if solver.status == "failed":
        raise SolverError(f"method {name!r} failed at t = {solver.t:.6g} after {n} steps: "
                          f"{msg}; {hint}")


def _run(cls, name: str, problem: Problem, recentre: float = 0.5, **options) -> Solution:
    check_options(cls, name, options, {"recentre"})
    P, s = problem, problem.system
    nv = s.nv
    # a nonholonomic system integrates q itself (q̇ = W(q) v), in nq unknowns
    direct = is_nonholonomic(s)
    additive = direct or chart_is_additive(s)
    nx = s.nq if direct else nv
    centre = {"q": np.array(P.q0, float)}

    def f(t, y):
        xi, v = y[:nx], y[nx:nx + nv]
        q0 = centre["q"]
        q = q0 + xi if additive else s.integrate_configuration(q0, xi, 1.0)
        a = s.forward_dynamics(q, v, P.tau(t, q, v))
        out = np.empty(nx + nv + 1)
        if direct:
            out[:nx] = s.q_dot(q, v)
        else:
            J = None if additive else chart_jacobian(s, q0, xi)
            out[:nx] = v if J is None else np.linalg.solve(J, v)
        out[nx:nx + nv] = a
        out[-1] = P.power_nc(t, q, v)
        return out

    def to_q(y):
        q0 = centre["q"]
        return q0 + y[:nx] if additive else s.integrate_configuration(q0, y[:nx], 1.0)

    def make(t, y, first=None):
        return make_solver(cls, name, f, t, y, P.t_final, options, first)

    y = np.concatenate([np.zeros(nx), np.array(P.v0, float), [0.0]])
    solver = make(P.t0, y)
    Ts, Qs, Vs, Ws, nfev = [P.t0], [centre["q"].copy()], [y[nx:nx + nv].copy()], [0.0], []
    grid = None
    if P.dt is not None:
        grid = P.t0 + P.dt * np.arange(1, int(np.floor((P.t_final - P.t0) / P.dt + 1e-9)) + 1)
        gi = 0
    vmax0 = float(np.abs(P.v0).max()) if nv else 0.0
    n, last_nfev = 0, 0
    while solver.status == "running" and P.t_final > P.t0:
        advance(solver, name, n, "loosen rtol/atol or try a stiff method (Radau, BDF)")
        n += 1
        y1 = solver.y
        q1 = to_q(y1)
        check_state(P, name, n, solver.t, q1, y1[nx:nx + nv], vmax0)
        if grid is not None:
            dense = solver.dense_output()
            while gi < grid.size and grid[gi] <= solver.t + 1e-12 * max(1.0, abs(solver.t)):
                yd = dense(grid[gi])
                Ts.append(grid[gi])
                Qs.append(to_q(yd))
                Vs.append(yd[nx:nx + nv].copy())
                Ws.append(yd[-1])
                gi += 1
        else:
            Ts.append(solver.t)
            Qs.append(q1)
            Vs.append(y1[nx:nx + nv].copy())
            Ws.append(y1[-1])
        nfev.append(solver.nfev - last_nfev)
        last_nfev = solver.nfev
        if P.progress is not None:
            P.progress(solver.t)
        if not additive and solver.status == "running" and np.abs(y1[:nx]).max() > recentre:
            centre["q"] = q1
            y = np.concatenate([np.zeros(nx), y1[nx:]])
            last_nfev = 0
            solver = make(solver.t, y, first=solver.step_size)
    if grid is not None and Ts[-1] < solver.t:
        Ts.append(solver.t)
        Qs.append(to_q(solver.y))
        Vs.append(solver.y[nx:nx + nv].copy())
        Ws.append(solver.y[-1])
    return Solution(np.array(Ts), np.array(Qs), np.array(Vs), np.array(Ws),
                    {"function_evaluations": np.array(nfev, dtype=np.int64)}, name)
