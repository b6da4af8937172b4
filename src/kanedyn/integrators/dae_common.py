"""What the DAE methods (radau5, ida) share when ``kd.simulate`` calls them.

``kd.simulate`` hands a DAE method an :class:`~kanedyn.integrators.base.Problem`; this
module turns its system and forces into a constrained system with the force elements
added to the applied forces, finds consistent initial values, and packs the result in a
:class:`~kanedyn.integrators.base.Solution` whose ``stats`` carry the constraint residuals
at every output time: ``residual_g`` (g), ``residual_Gv`` (G v + g_t, and A v − b),
``residual_acc`` (C v̇ − γ), and the multipliers ``lam`` — each an (N, m) array.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..constraints.consistent import consistent_initial_values
from ..constraints.system import ConstrainedMechanics, DescriptorSystem
from ..errors import SolverError


class WithForces(ConstrainedMechanics):
    """A constrained system with the problem's force elements added to f."""

    def __init__(self, base: ConstrainedMechanics, problem):
        self.base, self.problem = base, problem
        for k in ("nq", "nv", "nc", "nn", "constraint_names", "rheonomic", "name"):
            setattr(self, k, getattr(base, k))

    def __getattr__(self, name):  # reactions, model, geometry, ... of the base system
        return getattr(self.base, name)

    def mass_matrix(self, q):
        return self.base.mass_matrix(q)

    def applied_forces(self, t, q, v):
        f = np.array(self.base.applied_forces(t, q, v), dtype=float)
        Q = np.asarray(q, dtype=float).reshape(-1, self.nq)
        V = np.broadcast_to(np.asarray(v, dtype=float), f.shape).reshape(-1, self.nv)
        T = np.broadcast_to(np.asarray(t, dtype=float), f.shape[:-1]).reshape(-1)
        tau = np.array([self.problem.tau(ti, qi, vi) for ti, qi, vi in zip(T, Q, V, strict=True)])
        return f + tau.reshape(f.shape)

    def q_dot(self, q, v):
        return self.base.q_dot(q, v)

    def integrate_configuration(self, q, v, dt):
        return self.base.integrate_configuration(q, v, dt)

    def constraint(self, t, q):
        return self.base.constraint(t, q)

    def constraint_matrix(self, t, q):
        return self.base.constraint_matrix(t, q)

    def velocity_constraint(self, t, q, v):
        return self.base.velocity_constraint(t, q, v)

    def gamma(self, t, q, v):
        return self.base.gamma(t, q, v)

    def potential_energy(self, q):
        return self.base.potential_energy(q)


def as_constrained(problem, method: str) -> ConstrainedMechanics:
    """The problem's system as a constrained system (an unconstrained one gets m = 0)."""
    s = problem.system
    if not getattr(s, "handles_constraints", False):
        base = s
        if base.nq != base.nv:
            raise SolverError(f"{method}: an unconstrained system with nq != nv needs a "
                              "constrained-system wrapper (kanedyn.constraints.ConstrainedSystem)")
        s = DescriptorSystem(
            base.nq, base.nv, lambda q: _batched(base.mass_matrix, q, base.nv, base.nv),
            lambda t, q, v: -_batched2(base.nonlinear_effects, q, v, base.nv),
            potential=lambda q: _batched(_potential(base), q),
            name=getattr(base, "name", type(base).__name__))
    if problem.tau_cons is not None or problem.tau_nc is not None:
        s = WithForces(s, problem)
    return s


def _potential(system):
    """V(q) of a plain system, as energy(q, 0)."""
    return lambda q: system.energy(q, np.zeros(system.nv))


def _batched(f, q, *shape):
    q = np.asarray(q, dtype=float)
    Q = np.array(q.reshape(-1, q.shape[-1]))
    return np.array([f(x) for x in Q]).reshape(q.shape[:-1] + shape)


def _batched2(f, q, v, n):
    lead = np.broadcast_shapes(np.shape(q)[:-1], np.shape(v)[:-1])
    # copies: the fast kernels take writable contiguous float64 arrays only
    Q = np.array(np.broadcast_to(q, lead + (np.shape(q)[-1],)).reshape(-1, np.shape(q)[-1]))
    V = np.array(np.broadcast_to(v, lead + (n,)).reshape(-1, n))
    return np.array([f(x, y) for x, y in zip(Q, V, strict=True)]).reshape(lead + (n,))


def consistent_start(system, problem, initialize: bool):
    """(q0, v0) of the problem, made consistent if asked; else checked."""
    q0, v0, t0 = problem.q0, problem.v0, problem.t0
    if system.m == 0:
        return q0, v0
    if initialize:
        cs = consistent_initial_values(system, q0, v0, t=t0)
        return cs.q, cs.v
    g = np.max(np.abs(system.constraint(t0, q0))) if system.nc else 0.0
    cv = np.max(np.abs(system.velocity_constraint(t0, q0, v0)))
    if g > 1e-8 or cv > 1e-8:
        raise SolverError(f"initial state is not consistent: max|g| = {g:.3g}, max|Cv| = "
                          f"{cv:.3g}; pass initialize=True or use "
                          "kanedyn.constraints.consistent_initial_values")
    return q0, v0


def formulated(problem, method: str, formulation: str, alpha, beta, initialize: bool):
    """(system, DAE of the formulation, consistent q0, v0) of a simulate problem. Baumgarte's
    rule takes its time scale from the output spacing dt, or a hundredth of the run."""
    from ..constraints.formulations import formulate

    system = as_constrained(problem, method)
    scale_dt = problem.dt if problem.dt is not None else (problem.t_final - problem.t0) / 100
    kw = dict(alpha=alpha, beta=beta, dt=scale_dt) if formulation == "baumgarte" else {}
    dae = formulate(system, formulation, **kw)
    q0, v0 = consistent_start(system, problem, initialize)
    return system, dae, q0, v0


def compiled_form_of(system):
    """The system's compiled form, or None (also for a constrained system that does not
    derive from ConstrainedMechanics and offers none)."""
    get = getattr(system, "compiled_form", None)
    return get() if callable(get) else None


def solution(system, dae, t: NDArray, Y: NDArray, stats: dict, method: str, problem,
             compiled: bool = True):
    """A Solution with the constraint residuals of every output state (compiled when the
    system has a compiled form and ``compiled``:
    :func:`~kanedyn.constraints.system_kernel.residuals_batch`)."""
    from .base import Solution

    sp = dae.split(Y)
    q, v, a, lam = sp["q"], sp["v"], sp["a"], sp["lam"]
    form = compiled_form_of(system) if compiled and len(t) else None
    if form is not None:
        from ..constraints.system_kernel import residuals_batch

        N, nc = len(t), system.nc
        rg, rv, ra = np.empty((N, nc)), np.empty((N, nc)), np.empty((N, nc))
        status = residuals_batch(form.kind, form.params, form.data, np.ascontiguousarray(q),
                                 np.ascontiguousarray(v), np.ascontiguousarray(a), rg, rv, ra)
        if status:
            raise SolverError(f"{method}: the constraint kernels refused an output state "
                              f"(status {status})")
        res = {"residual_g": rg, "residual_Gv": rv, "residual_acc": ra}
    else:
        acc = (np.einsum("nij,nj->ni", system.constraint_matrix(t, q), a)
               - system.gamma(t, q, v))
        res = {"residual_g": system.constraint(t, q),
               "residual_Gv": system.velocity_constraint(t, q, v), "residual_acc": acc}
    res.update(lam=lam, vdot=a)
    if problem.tau_nc is not None:
        p = np.array([problem.power_nc(ti, qi, vi) for ti, qi, vi in zip(t, q, v, strict=True)])
        work = np.concatenate([[0.0], np.cumsum(0.5 * (p[1:] + p[:-1]) * np.diff(t))])
    else:
        work = np.zeros(len(t))
    st = {k: np.full(len(t), val) for k, val in stats.items()}
    st.update(res)
    return Solution(t, q, v, work, st, method)
