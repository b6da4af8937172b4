"""Gauss–Legendre collocation: implicit midpoint (order 2) and the 2-stage Gauss method (order 4).

Symplectic and symmetric (Hairer, Lubich & Wanner, *Geometric Numerical
Integration*, 2006, II.1.3 and VI.4). They are applied

- in canonical coordinates ``z = (q, p)``, ``p = M(q) v``, when the chart is
  additive (revolute/prismatic/helical joints): ``q̇ = ∂H/∂p = v``,
  ``ṗ = −∂H/∂q + τ = ∂T/∂q − g(q) + τ``. Being symplectic there, the energy
  error stays bounded, without drift, over exponentially long times
  (backward error analysis, HLW IX.8), and quadratic invariants (angular
  momentum of a free system) are kept exactly;
- in tangent coordinates ``z = (ξ, v)``, ``q = q_n ⊕ ξ``, ``ξ̇ = J(ξ)⁻¹ v``, when
  the system has ball or free joints. Still symmetric, of the same order,
  and quaternions stay unit (exponential map), but no longer symplectic.

Stages by simplified Newton: the matrix ``I − h A ⊗ ∂f/∂z`` with the
kinematic part of ∂f/∂z only (cheap; contraction ≈ (hω)² for the fastest
frequency ω), refreshed by finite differences if the iteration contracts
slowly. ``W_nc`` by the method's own quadrature ``h Σ b_i vᵢᵀ τ_nc,i``.
"""

from __future__ import annotations

import numpy as np

from .base import FixedStepMethod, chart_is_additive, chart_jacobian, newton

_R3 = np.sqrt(3.0)
TABLEAUX = {
    1: (np.array([[0.5]]), np.array([1.0]), np.array([0.5])),
    2: (np.array([[0.25, 0.25 - _R3 / 6], [0.25 + _R3 / 6, 0.25]]),
        np.array([0.5, 0.5]), np.array([0.5 - _R3 / 6, 0.5 + _R3 / 6])),
}


class GaussLegendre(FixedStepMethod):
    """s-stage Gauss–Legendre collocation (order 2s)."""

    stages = 1
    # the stage equations to 1e-12 relative: far below the truncation error, and above
    # the residual's roundoff floor (≈ 1e-14 |Z|), which a tighter bar would chase
    options = {"tol": 1e-12, "maxiter": 30}

    def __init__(self, problem, **options):
        super().__init__(problem, **options)
        self.A, self.b, self.c = TABLEAUX[self.stages]
        self.d = self.b @ np.linalg.inv(self.A)  # z1 = z0 + Σ d_i Z_i, no extra evaluation
        self.canonical = chart_is_additive(self.system)
        self.nv = self.system.nv
        self._reuse: dict = {}

    # z = (x, y): (q, p) in canonical form, (ξ, v) in tangent form
    def _f(self, t, q0, z):
        p, s, n = self.problem, self.system, self.nv
        x, y = z[:n], z[n:]
        if self.canonical:
            q = q0 + x
            dHdq, _, v = p.hamiltonian_gradient(q, y)
            tnc = p.tau_nc(t, q, v) if p.has_nc else None
            ydot = -dHdq if tnc is None else tnc - dHdq
            return np.concatenate([v, ydot]), (0.0 if tnc is None else float(v @ tnc))
        q = s.integrate_configuration(q0, x, 1.0)
        v = y
        tnc = p.tau_nc(t, q, v) if p.has_nc else None
        a = s.forward_dynamics(q, v, p.tau(t, q, v))
        J = chart_jacobian(s, q0, x)
        xdot = v if J is None else np.linalg.solve(J, v)
        return np.concatenate([xdot, a]), (0.0 if tnc is None else float(v @ tnc))

    def step(self, t, q, v, h):
        n, st = self.nv, self.stages
        y0 = self.system.mass_matrix(q) @ v if self.canonical else v
        z0 = np.concatenate([np.zeros(n), y0])
        f0, _ = self._f(t, q, z0)
        cache = {}

        def residual(Zflat):
            Z = Zflat.reshape(st, 2 * n)
            F = np.empty_like(Z)
            P = np.empty(st)
            for i in range(st):
                F[i], P[i] = self._f(t + self.c[i] * h, q, z0 + Z[i])
            cache["P"] = P
            return (Z - h * self.A @ F).ravel()

        # the kinematic part of ∂f/∂z: ∂ẋ/∂y = M⁻¹ (canonical) or 1
        K = np.linalg.inv(self.system.mass_matrix(q)) if self.canonical else np.eye(n)
        Jf = np.zeros((2 * n, 2 * n))
        Jf[:n, n:] = K
        Jm = np.eye(2 * n * st) - h * np.kron(self.A, Jf)
        Z0 = np.outer(self.c * h, f0).ravel()
        if self._reuse.get("h") != h:
            self._reuse = {"h": h}
        Z, it = newton(residual, Z0, Jm, tol=self.opts["tol"], maxiter=self.opts["maxiter"],
                       reuse=self._reuse)
        self.newton_iterations += it
        Z = Z.reshape(st, 2 * n)
        z1 = z0 + self.d @ Z
        dw = h * float(self.b @ cache["P"])
        x1, y1 = z1[:n], z1[n:]
        if self.canonical:
            q1 = q + x1
            v1 = np.linalg.solve(self.system.mass_matrix(q1), y1)
        else:
            q1 = self.system.integrate_configuration(q, x1, 1.0)
            v1 = y1
        return q1, v1, dw


class Midpoint(GaussLegendre):
    """Implicit midpoint rule (1-stage Gauss): order 2, symplectic, symmetric."""

    name = "midpoint"
    order = 2
    stages = 1


class Gauss4(GaussLegendre):
    """2-stage Gauss–Legendre: order 4, symplectic, symmetric."""

    name = "gauss4"
    order = 4
    stages = 2
