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
  the system has ball, free or planar joints. Still symmetric, of the same order,
  and quaternions stay unit (exponential map), but no longer symplectic.

Stages by Newton on ``Z_i − h Σ_j a_ij f(z0 + Z_j) = 0``, with the matrix
``1 − h [a_ij ∂f/∂z(z0 + Z_j)]``:

- ``jacobian="auto"`` (default) and a system that provides the derivatives of
  its dynamics (a :class:`~kanedyn.ModelSystem`: ``acceleration_jacobians``,
  ``canonical_jacobians``, ``chart_rate_jacobian``) with force elements that all
  have closed-form Jacobians (or none): ∂f/∂z in closed form (see :meth:`_jf`),
  computed at the first step and kept from step to step while the iteration
  contracts fast, recomputed (analytically) when it contracts slowly (ratio >
  0.25) or diverges;
- otherwise (``jacobian="differences"``, a compiled Kane system, a constrained
  system, a force without Jacobian): the kinematic part of ∂f/∂z only (cheap;
  contraction ≈ (hω)² for the fastest frequency ω), refreshed by forward
  differences of the residual (2 n s evaluations) if the iteration contracts slowly.

The solution is the same either way to the Newton tolerance; what differs is
the number of residual evaluations (``residual_evaluations``, counted).

``compiled=True`` (default): a plain Model with additive joints whose force elements (if
any) all have compiled rows (springs, dampers, smoothed Stribeck friction, constant and
sinusoidal torques: :func:`.rk4_compiled.applicable` with ``forces=True``) — or with ball,
free and planar joints among them, in the tangent form
(:func:`.gauss_compiled.tangent_applicable`) — with ``jacobian="auto"``, no projection or
``project="energy"``, runs in the compiled loop of :mod:`.gauss_compiled`: the same
stage equations, matrix and tolerance, tested step for step against this class, which
stays the readable reference and takes the run back when Newton fails there.
``W_nc`` by the method's own quadrature ``h Σ b_i vᵢᵀ τ_nc,i``.
"""

from __future__ import annotations

import numpy as np

from ..errors import SolverError
from .base import FixedStepMethod, chart_is_additive, chart_jacobian, fd_jacobian, newton

_R3 = np.sqrt(3.0)
TABLEAUX = {
    1: (np.array([[0.5]]), np.array([1.0]), np.array([0.5])),
    2: (np.array([[0.25, 0.25 - _R3 / 6], [0.25 + _R3 / 6, 0.25]]),
        np.array([0.5, 0.5]), np.array([0.5 - _R3 / 6, 0.5 + _R3 / 6])),
}


#: a kept closed-form Newton matrix is evaluated afresh after a solve of more iterations
REFRESH_AFTER = 3


class GaussLegendre(FixedStepMethod):
    """s-stage Gauss–Legendre collocation (order 2s)."""

    stages = 1
    # the stage equations to 1e-12 relative: far below the truncation error, and above
    # the residual's roundoff floor (≈ 1e-14 |Z|), which a tighter bar would chase
    # jacobian: "auto" (closed form where the system provides it) or "differences"
    options = {"tol": 1e-12, "maxiter": 30, "jacobian": "auto", "compiled": True}

    def __init__(self, problem, **options):
        super().__init__(problem, **options)
        self.A, self.b, self.c = TABLEAUX[self.stages]
        self.d = self.b @ np.linalg.inv(self.A)  # z1 = z0 + Σ d_i Z_i, no extra evaluation
        self.canonical = chart_is_additive(self.system)
        self.nv = self.system.nv
        self._reuse: dict = {}
        mode = self.opts["jacobian"]
        if mode not in ("auto", "differences"):
            raise SolverError(f"{self.name}: jacobian={mode!r}; use 'auto' (closed form where "
                              "the system provides it) or 'differences'")
        self._mode = mode
        #: residual evaluations, those of difference Jacobians included
        self.residual_evaluations = 0
        #: closed-form Jacobians ∂f/∂z evaluated
        self.jacobian_evaluations = 0
        self._last_iterations = 0

    def compiled_run(self, project):
        """The Solution by the compiled loop of :mod:`.gauss_compiled`, or None when it does
        not apply (module doc) or hands the run back."""
        from . import gauss_compiled, kane_compiled, rk4_compiled
        from .projection import parse_invariants

        if (self.opts["compiled"] and self.canonical and kane_compiled.applicable(self.problem)
                and (project is None or parse_invariants(project) == ("energy",))):
            # a compiled Kane system: its generated functions in kane_compiled's loop (with
            # the energy projection where asked)
            return rk4_compiled.compiled_or_none(
                self.name, kane_compiled.run_gauss, self.problem, self.name, self.A, self.b,
                self.d, self.c, self.opts["tol"], self.opts["maxiter"], project is not None)
        if (self.opts["compiled"] and not self.canonical
                and (project is None or parse_invariants(project) == ("energy",))
                and kane_compiled.chart_applicable(self.problem)):
            # a compiled Kane system with quaternions: the tangent form's stages in
            # kane_compiled's loop, the chart by its generated functions (with the energy
            # projection where asked)
            name = self.name if project is None else f"{self.name}+project('energy',)"
            return rk4_compiled.compiled_or_none(
                self.name, kane_compiled.run_gauss_chart, self.problem, name, self.A,
                self.b, self.d, self.c, self.opts["tol"], self.opts["maxiter"],
                project is not None)
        invariants = ("energy",) if project is None else parse_invariants(project)
        if (not self.opts["compiled"] or self._mode != "auto"
                or gauss_compiled.momentum_rows(invariants) is None):
            return None
        tangent = not self.canonical
        if not (gauss_compiled.tangent_applicable(self.problem, planar=True) if tangent
                else rk4_compiled.applicable(self.problem, forces=True)):
            return None
        return rk4_compiled.compiled_or_none(
            self.name, gauss_compiled.run, self.problem, self.stages, self.opts["tol"],
            self.opts["maxiter"], REFRESH_AFTER, self.name, project is not None,
            gauss_compiled.PREDICTOR_STEPS, tangent, None, invariants)

    @property
    def analytic(self) -> bool:
        """True when the Newton matrix is in closed form (a subclass may switch the form
        after __init__, so this is read at use)."""
        need = "canonical_jacobians" if self.canonical else "acceleration_jacobians"
        return self._mode == "auto" and hasattr(self.system, need)

    def _force_jacobians(self, t, q, v):
        p = self.problem
        if p.force_jacobians is not None:
            return p.force_jacobians(t, q, v)
        if p.tau_cons is None and p.tau_nc is None:
            z = np.zeros((self.nv, self.nv))
            return z, z
        return None

    def _jf(self, t, q0, z):
        """∂f/∂z at z (2n x 2n) in closed form, or None when a force has no Jacobian.

        Canonical (z = (q, p), v = M⁻¹p, ṗ = P(q, v) = ∂L/∂q + τ): with
        ``(B, L_qq) = canonical_jacobians(q, v)`` and the force Jacobians ``(F_q, F_v)``,
        ``∂v/∂q = −M⁻¹B``, ``∂v/∂p = M⁻¹``, ``∂P/∂q|_v = L_qq + F_q``, ``∂P/∂v = Bᵀ + F_v``,
        and ``∂ṗ/∂(q, p) = ∂P/∂q|_v + ∂P/∂v ∂v/∂(q, p)`` (chain rule).
        Tangent (z = (ξ, v), q = q0 ⊕ ξ, ξ̇ = J(ξ)⁻¹v, v̇ = ABA): since
        ``q0 ⊕ (ξ + δ) = (q0 ⊕ ξ) ⊕ J(ξ) δ + O(δ²)``, ``∂v̇/∂ξ = A_q J(ξ)``, ``∂v̇/∂v = A_v``;
        ``∂ξ̇/∂v = J⁻¹`` and ``∂ξ̇/∂ξ`` from ``chart_rate_jacobian`` (exact at ξ = 0).
        """
        p, s, n = self.problem, self.system, self.nv
        x, y = z[:n], z[n:]
        Jf = np.empty((2 * n, 2 * n))
        if self.canonical:
            q = q0 + x
            M = s.mass_matrix(q)
            Minv = np.linalg.inv(M)
            v = Minv @ y
            F = self._force_jacobians(t, q, v)
            if F is None:
                return None
            B, Lqq = s.canonical_jacobians(q, v)
            dvdq = -Minv @ B
            Pv = B.T + F[1]
            Jf[:n, :n] = dvdq
            Jf[:n, n:] = Minv
            Jf[n:, :n] = Lqq + F[0] + Pv @ dvdq
            Jf[n:, n:] = Pv @ Minv
        else:
            q = s.integrate_configuration(q0, x, 1.0)
            v = y
            F = self._force_jacobians(t, q, v)
            if F is None:
                return None
            Aq, Av = s.acceleration_jacobians(q, v, p.tau(t, q, v), F[0], F[1])
            J = chart_jacobian(s, q0, x)
            rate = getattr(s, "chart_rate_jacobian", None)
            Jf[:n, :n] = 0.0 if rate is None else rate(v)
            Jf[:n, n:] = np.eye(n) if J is None else np.linalg.inv(J)
            Jf[n:, :n] = Aq if J is None else Aq @ J
            Jf[n:, n:] = Av
        self.jacobian_evaluations += 1
        return Jf

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
            self.residual_evaluations += 1
            Z = Zflat.reshape(st, 2 * n)
            F = np.empty_like(Z)
            P = np.empty(st)
            for i in range(st):
                F[i], P[i] = self._f(t + self.c[i] * h, q, z0 + Z[i])
            cache["P"] = P
            return (Z - h * self.A @ F).ravel()

        Z0 = np.outer(self.c * h, f0).ravel()
        if self._reuse.get("h") != h:
            self._reuse = {"h": h}
        if self.analytic:
            def jacobian(Zflat):
                Z = Zflat.reshape(st, 2 * n)
                Jm = np.eye(2 * n * st)
                for j in range(st):
                    Jf = self._jf(t + self.c[j] * h, q, z0 + Z[j])
                    if Jf is None:  # a force element without Jacobian: differences
                        return fd_jacobian(residual, Zflat, residual(Zflat))
                    for i in range(st):
                        Jm[2 * n * i:2 * n * (i + 1), 2 * n * j:2 * n * (j + 1)] -= \
                            h * self.A[i, j] * Jf
                return Jm

            # the closed-form matrix costs more than a residual (numpy, O(n·nv) per stage):
            # keep it from step to step, and evaluate it afresh when the last solve took
            # more than REFRESH_AFTER iterations (newton itself refreshes a slow solve)
            if "J" not in self._reuse or self._last_iterations > REFRESH_AFTER:
                self._reuse["J"] = jacobian(Z0)
            Jm = jacobian
        else:
            # the kinematic part of ∂f/∂z: ∂ẋ/∂y = M⁻¹ (canonical) or 1
            K = np.linalg.inv(self.system.mass_matrix(q)) if self.canonical else np.eye(n)
            Jf = np.zeros((2 * n, 2 * n))
            Jf[:n, n:] = K
            Jm = np.eye(2 * n * st) - h * np.kron(self.A, Jf)
        Z, it = newton(residual, Z0, Jm, tol=self.opts["tol"], maxiter=self.opts["maxiter"],
                       reuse=self._reuse)
        self._last_iterations = it
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
