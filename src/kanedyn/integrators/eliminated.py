"""Systems whose constraints are eliminated in their equations: nonholonomic and
configuration-constrained compiled Kane systems.

Such a system (capability ``eliminated_constraints``, :mod:`kanedyn.sim.system`) carries
n_q coordinates and only its p independent speeds u: the velocity constraints
``C(q) [u; u_dep] + D(q) = 0`` were solved for the dependent speeds in the derivation, so

    q̇ = W(q) [u; u_dep(q, u)],        M̃(q) u̇ = f̃(q, u)

(Kane & Levinson 1985, Ch. 2 and 6) is an ODE in y = (q, u) of dimension n_q + p, in
which the dependent speeds are evaluated from the constraints wherever q̇ is (every
stage of every method below). The velocity constraints then hold to round-off at every
state; what can drift is a configuration (holonomic) constraint ``g(q) = 0`` whose time
derivative is among the velocity constraints (the bicycle's front contact): along the
exact flow ġ = 0, a step leaves an O(h^{p+1}) residual. After every step the dependent
coordinates are solved from ``g(q) = 0`` by Newton from the step's value
(``system.consistent_configuration``), a projection onto the configuration manifold;
quaternions, if any, are renormalised.

Methods (:data:`ELIMINATED_METHODS`), each integrating y directly (no chart: q moves in
n_q dimensions, more than the p speeds):

- ``rk4``: classical Runge–Kutta of order 4 on y, then the projection;
- ``RK45``, ``RK23``, ``DOP853``: SciPy's explicit Runge–Kutta pairs stepped one step at a
  time; after each accepted step the projection, and the solver restarts from the
  projected state with the step size it had (an explicit pair keeps no other history);
  output at ``dt`` from each step's dense output, projected;
- ``avf``: the average-vector-field discrete gradient on y, written in the skew-gradient
  form of McLachlan, Quispel & Robidoux (*Phil. Trans. R. Soc. A* 357, 1999):
  any ODE ẏ = f(y) with a first integral H is ẏ = S(y)∇H with
  ``S = (f ∇Hᵀ − ∇H fᵀ)/|∇H|²`` skew. The step ``y' = y + h S̄ ∇̄H(y, y')`` with
  ∇̄H the AVF integral ``∫₀¹ ∇H(y + ξ(y' − y)) dξ`` (Gauss–Legendre, ``nodes`` points;
  ∇H by central differences), made an exact discrete gradient by Gonzalez's correction
  ``∇̄H += (H(y') − H(y) − ∇̄H·Δ) Δ/|Δ|²`` (Gonzalez 1996, *J. Nonlinear Sci.* 6), and
  S̄ built from f at the midpoint and ∇̄H, so ``S̄ ∇̄H = f(ȳ) − ∇̄H (f(ȳ)·∇̄H)/|∇̄H|²``.
  Then ``H(y') − H(y) = h ∇̄Hᵀ S̄ ∇̄H = 0``: the energy is conserved to the Newton
  tolerance; order 2, symmetric. For rolling without slip H = T + V is a first integral
  (the contact forces do no work). The projection onto g = 0 moves q by the drift and
  so the energy by as much; the speeds are then scaled by
  ``s = √((E₀ − V(q))/T(q, u))``, which restores E₀ exactly when T is quadratic in u
  (scleronomic constraints: u_dep = A(q) u, checked at the start). Conservative forces
  only (springs, gravity): a non-conservative one is refused.

A system with configuration constraints only (every dependent speed the rate of one)
asked for ``avf`` or ``energy_momentum`` is integrated on its index-3 form instead, with
exact energy and g(q) = 0 as equations of the step (:mod:`.kane_index3`); ``avf`` comes
here only where that form cannot be formed.

The Solution's ``stats`` carry, at every output time, the residuals as a DAE run records
them (:mod:`.dae_common`): ``residual_g`` (N, l), the configuration constraints g(q), and
``residual_Gv`` (N, m), the velocity constraints at the dependent speeds, together with
``dependent_speeds`` (N, m).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..errors import SolverError, StateError
from .base import FixedStepMethod, NewtonFailure, Problem, Solution, check_state, newton, run_fixed
from .scipy_ivp import advance, check_options, make_solver

#: the methods that take a system with eliminated constraints (fixed-step, adaptive)
FIXED_METHODS = ("rk4", "avf")
ADAPTIVE_METHODS = ("RK45", "RK23", "DOP853")
ELIMINATED_METHODS = FIXED_METHODS + ADAPTIVE_METHODS

#: |g(q0)| accepted at the start (then projected); beyond it q0 is refused
START_TOL = 1e-9


def _project(system, q: NDArray, error=SolverError) -> NDArray:
    """q on the configuration manifold: q_dep from g(q) = 0 (Newton from q), quaternions
    renormalised."""
    try:
        q = system.consistent_configuration(q)
    except StateError as e:
        raise error(str(e)) from None
    for qi, _ in getattr(system, "quaternions", ()):
        q[qi] /= np.linalg.norm(q[qi])
    return q


def consistent_start(system, q0: NDArray, v0) -> tuple[NDArray, NDArray]:
    """(q0, u0) of a run: q0 must satisfy the configuration constraints to
    :data:`START_TOL` (it is then projected); ``v0`` holds the p independent speeds, or all
    of them (independent, then ``system.dependent_speed_names``), whose dependent ones must
    satisfy the velocity constraints. A StateError says which constraint is violated and
    by how much."""
    v = np.asarray(v0, dtype=float)
    ndep = len(system.dependent_speed_names)
    nv = int(system.nv)
    if v.shape not in ((nv,), (nv + ndep,)):
        raise StateError(
            f"v0 must have shape ({nv},) (the independent speeds {system.speed_names}) or "
            f"({nv + ndep},) (then the dependent ones {system.dependent_speed_names}); "
            f"got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise StateError(f"v0 contains NaN or infinity: {v}")
    g = system.constraint_residuals(q0, np.zeros(nv))[0]
    if g.size and np.abs(g).max() > START_TOL:
        k = int(np.argmax(np.abs(g)))
        dep = [system.coordinate_names[i] for i in system.q_dependent]
        raise StateError(
            f"{system.name}: q0 violates configuration constraint {k} by {g[k]:.3g} "
            f"(tolerance {START_TOL:g}); solve the dependent coordinates {dep} with "
            "system.consistent_configuration(q0)")
    q0 = _project(system, q0, StateError)
    u = v[:nv].copy()
    if v.size > nv:
        want = system.dependent_speeds(q0, u)
        off = v[nv:] - want
        scale = 1.0 + float(np.abs(v).max())
        if np.abs(off).max() > 1e-9 * scale:
            k = int(np.argmax(np.abs(off)))
            raise StateError(
                f"{system.name}: v0 violates the velocity constraints: dependent speed "
                f"{system.dependent_speed_names[k]} = {v[nv + k]:.6g}, but the constraints "
                f"give {want[k]:.6g} (off by {off[k]:.3g}); pass the independent speeds "
                "only to have them computed")
    return q0, u


def _rates(problem: Problem, t: float, q: NDArray, u: NDArray) -> tuple[NDArray, NDArray, float]:
    """(q̇, u̇, ẇ): q̇ = W(q) [u; u_dep(q, u)] (the dependent speeds from the velocity
    constraints, inside the generated q̇), u̇ from the reduced dynamics."""
    s = problem.system
    return s.q_dot(q, u), problem.acceleration(t, q, u), problem.power_nc(t, q, u)


class EliminatedRK4(FixedStepMethod):
    """Classical RK4 on y = (q, u) (4 evaluations of q̇ and u̇ per step), W_nc as an
    extra state, then the projection onto g(q) = 0."""

    name = "rk4"
    order = 4

    def step(self, t, q, v, h):
        P = self.problem
        k1 = _rates(P, t, q, v)
        k2 = _rates(P, t + h / 2, q + 0.5 * h * k1[0], v + 0.5 * h * k1[1])
        k3 = _rates(P, t + h / 2, q + 0.5 * h * k2[0], v + 0.5 * h * k2[1])
        k4 = _rates(P, t + h, q + h * k3[0], v + h * k3[1])
        q1 = q + (h / 6) * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        v1 = v + (h / 6) * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        dw = (h / 6) * (k1[2] + 2 * k2[2] + 2 * k3[2] + k4[2])
        return _project(self.system, q1), v1, dw


class EliminatedAVF(FixedStepMethod):
    """The AVF discrete gradient in skew-gradient form on y = (q, u), exact energy (see the
    module doc). Options: ``nodes`` (Gauss–Legendre points of the AVF integral, 2),
    ``tol`` (Newton, relative to the step, 1e-13), ``maxiter`` (30)."""

    name = "avf"
    order = 2
    options = {"nodes": 2, "tol": 1e-13, "maxiter": 30}

    def __init__(self, problem: Problem, **options):
        super().__init__(problem, **options)
        s, P = self.system, problem
        if P.has_nc:
            raise SolverError(
                "avf on a system with eliminated constraints conserves the energy and "
                "takes conservative forces only; a non-conservative force element was given "
                f"(use one of {', '.join(m for m in ELIMINATED_METHODS if m != 'avf')})")
        nodes = int(self.opts["nodes"])
        if nodes < 1:
            raise SolverError(f"avf: nodes = {self.opts['nodes']} must be a positive integer")
        x, w = np.polynomial.legendre.leggauss(nodes)
        self._xi, self._w = (x + 1) / 2, w / 2
        self.nq = int(s.nq)
        self.E0 = P.energy(P.q0, P.v0)
        self._reuse: dict = {}
        self._rescale = bool(getattr(s, "q_dependent", None))
        if self._rescale and np.any(P.v0):
            # the rescale after the projection needs T(q, s u) = s² T(q, u)
            T1 = P.energy(P.q0, P.v0) - P.energy(P.q0, 0 * P.v0)
            T2 = P.energy(P.q0, 2 * P.v0) - P.energy(P.q0, 0 * P.v0)
            if abs(T2 - 4 * T1) > 1e-9 * (abs(T2) + 1e-300):
                raise SolverError(
                    f"avf: the kinetic energy of {s.name!r} is not quadratic in the speeds "
                    "(rheonomic constraints), so the energy cannot be restored after the "
                    "projection onto g(q) = 0; use rk4 or RK45")

    def _H(self, y: NDArray) -> float:
        return self.problem.energy(y[:self.nq], y[self.nq:])

    def _grad(self, y: NDArray) -> NDArray:
        """∇H by central differences (steps ∝ ε^{1/3}); its error only lowers the
        accuracy: the discrete gradient is made exact below."""
        g = np.empty(y.size)
        for i in range(y.size):
            e = 6e-6 * (1.0 + abs(y[i]))
            yp, ym = y.copy(), y.copy()
            yp[i] += e
            ym[i] -= e
            g[i] = (self._H(yp) - self._H(ym)) / (2 * e)
        return g

    def step(self, t, q, v, h):
        P, nq = self.problem, self.nq
        y0 = np.concatenate([q, v])
        H0 = self._H(y0)

        def residual(d):
            dg = sum(w * self._grad(y0 + x * d) for x, w in zip(self._xi, self._w, strict=True))
            dd = float(d @ d)
            if dd > 0:
                dg = dg + (self._H(y0 + d) - H0 - float(dg @ d)) / dd * d
            ym = y0 + d / 2
            qd, ud, _ = _rates(P, t + h / 2, ym[:nq], ym[nq:])
            f = np.concatenate([qd, ud])
            gg = float(dg @ dg)
            Sdg = f - dg * (float(f @ dg) / gg) if gg > 0 else f
            return d - h * Sdg

        qd, ud, _ = _rates(P, t, q, v)
        try:
            d, it = newton(residual, h * np.concatenate([qd, ud]), None,
                           tol=float(self.opts["tol"]), maxiter=int(self.opts["maxiter"]),
                           reuse=self._reuse)
        except NewtonFailure:
            self._reuse.clear()
            raise
        self.newton_iterations += it
        y1 = y0 + d
        q1 = y1[:nq]
        v1 = y1[nq:]
        if self._rescale:
            q1 = _project(self.system, q1)
            V = P.energy(q1, 0 * v1)
            T = P.energy(q1, v1) - V
            if T > 0 and self.E0 > V:
                v1 = v1 * np.sqrt((self.E0 - V) / T)
        return q1, v1, 0.0


_FIXED = {"rk4": EliminatedRK4, "avf": EliminatedAVF}


def _adaptive(problem: Problem, name: str, **options) -> Solution:
    """SciPy's explicit pair ``name`` on y = (q, u, w), projected after every step."""
    import scipy.integrate as si  # (here: ~1 s of `import kanedyn` at top)
    cls = getattr(si, name)
    check_options(cls, name, options)
    P, s = problem, problem.system
    nq, nv = int(s.nq), int(s.nv)

    def f(t, y):
        qd, ud, wd = _rates(P, t, y[:nq], y[nq:nq + nv])
        return np.concatenate([qd, ud, [wd]])

    def make(t, y, first=None):
        return make_solver(cls, name, f, t, y, P.t_final, options, first)

    def state(y):
        return _project(s, y[:nq]), y[nq:nq + nv].copy(), float(y[-1])

    y = np.concatenate([P.q0, P.v0, [0.0]])
    solver = make(P.t0, y)
    Ts, Qs, Vs, Ws, nfev = [P.t0], [np.array(P.q0)], [np.array(P.v0)], [0.0], []
    grid = None
    if P.dt is not None:
        grid = P.t0 + P.dt * np.arange(1, int(np.floor((P.t_final - P.t0) / P.dt + 1e-9)) + 1)
        gi = 0
    vmax0 = float(np.abs(P.v0).max()) if nv else 0.0
    n = 0
    while solver.status == "running" and P.t_final > P.t0:
        advance(solver, name, n, "loosen rtol/atol")
        n += 1
        q1, u1, w1 = state(solver.y)
        check_state(P, name, n, solver.t, q1, u1, vmax0)
        if grid is not None:
            dense = solver.dense_output()
            while gi < grid.size and grid[gi] <= solver.t + 1e-12 * max(1.0, abs(solver.t)):
                qd, ud, wd = state(dense(grid[gi]))
                Ts.append(grid[gi])
                Qs.append(qd)
                Vs.append(ud)
                Ws.append(wd)
                gi += 1
        else:
            Ts.append(solver.t)
            Qs.append(q1)
            Vs.append(u1)
            Ws.append(w1)
        nfev.append(solver.nfev)
        if P.progress is not None:
            P.progress(solver.t)
        if solver.status == "running":
            # restart from the projected state (an explicit pair keeps no other history)
            solver = make(solver.t, np.concatenate([q1, u1, [w1]]),
                          first=min(solver.step_size, P.t_final - solver.t))
    if grid is not None and Ts[-1] < solver.t:
        q1, u1, w1 = state(solver.y)
        Ts.append(solver.t)
        Qs.append(q1)
        Vs.append(u1)
        Ws.append(w1)
    return Solution(np.array(Ts), np.array(Qs), np.array(Vs), np.array(Ws),
                    {"function_evaluations": np.array(nfev, dtype=np.int64)}, name)


def check_method(system, method: str) -> None:
    """A SolverError naming the method and those that take ``system``, unless it is one."""
    if method not in ELIMINATED_METHODS:
        holonomic = len(system.dependent_speed_names) == len(system.q_dependent)
        extra = (" (and energy_momentum, on the index-3 form of a system with "
                 "configuration constraints only)") if holonomic else ""
        raise SolverError(
            f"simulate: {getattr(system, 'name', 'this system')!r} has eliminated constraints "
            f"({system.nq} coordinates, {system.nv} independent speeds, "
            f"{len(system.dependent_speed_names)} dependent speeds, "
            f"{len(system.q_dependent)} dependent coordinates); method {method!r} cannot "
            f"integrate it — use one of {', '.join(ELIMINATED_METHODS)}, which step "
            f"q̇ = W(q) u directly and project onto the configuration constraints{extra}")


def run_eliminated(problem: Problem, method: str, **options) -> Solution:
    """Integrate a system with eliminated constraints by ``method`` (one of
    :data:`ELIMINATED_METHODS`); the residuals of every output state in ``stats``."""
    s = problem.system
    check_method(s, method)
    if method in _FIXED:
        if problem.dt is None:
            raise StateError(f"simulate: method {method!r} is a fixed-step method; give dt")
        sol = run_fixed(_FIXED[method](problem, **options), problem)
    else:
        sol = _adaptive(problem, method, **options)
    if len(sol.t):
        rg, rv = s.constraint_residuals(sol.q, sol.v)
        sol.stats.update(residual_g=rg.reshape(len(sol.t), -1),
                         residual_Gv=rv.reshape(len(sol.t), -1),
                         dependent_speeds=s.dependent_speeds(sol.q, sol.v).reshape(
                             len(sol.t), -1))
    return sol
