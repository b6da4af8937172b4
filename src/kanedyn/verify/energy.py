"""Checks (c) and (d): energy conservation and the power balance.

(c) With no applied forces and no damping, ``E = T + V`` is a constant of
the motion. The motion comes from the forward dynamics (ABA for a Model),
integrated by a tight adaptive Runge–Kutta method (scipy's DOP853, order 8)
with ``q̇ = W(q) v`` on the manifold; E is evaluated by
``kd.kinetic_energy + kd.potential_energy`` (for a system, its ``energy``),
which sum over bodies and never touch the equations of motion. A sign error
or a wrong inertia anywhere in the equations makes E drift by a fraction of
the energy exchanged; the integrator's own error is ~1e-9 of it.

(d) Along the motion driven by a random torque τ, the equations
``M v̇ + C v + g = τ`` with ``g = ∂V/∂q`` and ``Ṁ − 2C`` skew imply
``d/dt(½ vᵀ M v + V) = vᵀ τ`` (the skew symmetry of ``Ṁ − 2C`` that every
Lagrangian mechanical system has). Here T is built from the system's own mass matrix and V from the
energy at rest, so this line tests that the bias forces belong to that mass
matrix (Coriolis terms and gravity), whatever inertia it was built from. The
derivative is a central difference along the tangent of the motion,
``q(±h) = q ∘ exp(±h v)``, ``v(±h) = v ± h v̇``, exact to O(h²).
"""

from __future__ import annotations

import numpy as np

from ..errors import SolverError
from .result import CheckResult
from .subject import Subject

#: relative energy drift allowed over the integration; DOP853 at rtol 1e-11 measures
#: 1e-12..1e-10 on chains, arms and floating trees, a sign error is of order 1
ENERGY_TOL = 1e-6
#: relative power-balance residual allowed; measured 1e-9..1e-8 (the O(h²) difference
#: error, rounding ~1e-10) on 40 states of 7-link chains, ball chains, panda, floating trees
POWER_TOL = 1e-6


def integrate_free_motion(subject: Subject, q0, v0, t_final: float, n_out: int = 101,
                          rtol: float = 1e-11, tau=None):
    """Integrate ``q̇ = W(q) v, v̇ = FD(q, v, τ)`` with DOP853; returns t, Q, V.

    Quaternions are carried in the ambient coordinates: the exact flow of
    ``q̇ = ½ q ⊗ ω`` keeps |q| = 1, so the integrator's error is all that moves
    it off, and each output is normalised.
    """
    from scipy.integrate import solve_ivp  # (here: ~1 s of `import kanedyn` at top)
    nq = subject.nq
    tau = np.zeros(subject.nv) if tau is None else np.asarray(tau, dtype=float)

    def rhs(_t, y):
        q, v = subject.normalize(y[:nq]), y[nq:]
        return np.concatenate([subject.q_dot(q, v), subject.forward_dynamics(q, v, tau)])

    y0 = np.concatenate([q0, v0])
    t_eval = np.linspace(0.0, t_final, n_out)
    sol = solve_ivp(rhs, (0.0, t_final), y0, method="DOP853", t_eval=t_eval, rtol=rtol,
                    atol=rtol * max(1.0, float(np.abs(y0).max())))
    if sol.status != 0 or not np.all(np.isfinite(sol.y)):
        raise SolverError(f"verification integrator failed at t = {sol.t[-1] if sol.t.size else 0}"
                          f": {sol.message}")
    Q = np.array([subject.normalize(y) for y in sol.y[:nq].T])
    return sol.t, Q, np.ascontiguousarray(sol.y[nq:].T)


def energy_conservation(subject: Subject, trajectories) -> CheckResult:
    """max over trajectories of ``max_t |E(t) − E(0)| / (max_t T + max_t |V − V(0)|)``.

    The denominator is the energy the motion moves between kinetic and
    potential form, so the figure is scale-free and a zero total energy is no
    trouble.
    """
    worst, span = 0.0, 0.0
    for t, Q, V in trajectories:
        T = np.array([subject.energy(q, v) - subject.potential(q)
                      for q, v in zip(Q, V, strict=True)])
        P = np.array([subject.potential(q) for q in Q])
        E = T + P
        scale = max(float(T.max()) + float(np.abs(P - P[0]).max()), 1e-300)
        worst = max(worst, float(np.abs(E - E[0]).max()) / scale)
        span = float(t[-1])
    return CheckResult(
        "energy_conservation", worst <= ENERGY_TOL, worst, ENERGY_TOL,
        f"max |E(t)-E(0)| / energy exchanged, {len(trajectories)} runs of {span:g} s "
        "(DOP853 rtol 1e-11, tau = 0, no damping)", "total energy conserved")


def power_balance(subject: Subject, Q, V, TAU, h0: float = 3e-5) -> CheckResult:
    """max relative residual of ``d/dt(½vᵀMv + V) − vᵀτ`` at the sampled states.

    dE/dt is the derivative of E along the motion's tangent, the curve
    ``s ↦ (q ∘ exp(s v), v + s v̇)``, by a central difference; its O(s²) error
    grows with |v̇||v|, so the step shrinks as ``h0 / sqrt(max(1, |v|², |v̇|·|v|))``.
    """

    def E(q, v):
        return 0.5 * v @ subject.mass_matrix(q) @ v + subject.potential(q)

    worst, hmin = 0.0, h0
    for q, v, tau in zip(Q, V, TAU, strict=True):
        a = subject.forward_dynamics(q, v, tau)
        nv_, na = float(np.abs(v).max()), float(np.abs(a).max())
        h = h0 / np.sqrt(max(1.0, nv_ * nv_, na * max(1.0, nv_)))
        hmin = min(hmin, h)
        qp = subject.integrate_configuration(q, v, h)
        qm = subject.integrate_configuration(q, v, -h)
        dE = (E(qp, v + h * a) - E(qm, v - h * a)) / (2 * h)
        dV = (subject.potential(qp) - subject.potential(qm)) / (2 * h)
        power = float(v @ tau)
        # scale: the largest single power flow (input, kinetic, potential)
        scale = max(abs(power), abs(dE - dV), abs(dV), 1e-300)
        r = abs(dE - power) / scale
        worst = max(worst, r if np.isfinite(r) else np.inf)
    return CheckResult(
        "power_balance", worst <= POWER_TOL, worst, POWER_TOL,
        f"|d/dt(1/2 v^T M v + V) - v^T tau| / largest power flow, central difference "
        f"(h down to {hmin:.2g} s), {len(Q)} states, random tau", "power balance dE/dt = v^T tau")
