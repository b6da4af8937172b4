"""Discrete gradient methods: the average vector field (AVF) and Itoh–Abe schemes.

For ``ż = S ∇H(z)`` with S skew (here canonical, ``z = (q, p)``,
``S = [[0, 1], [−1, 0]]``), a discrete gradient ``∇̄H(z, z')`` is any map with
``H(z') − H(z) = ∇̄H · (z' − z)``; the step ``z' = z + h S ∇̄H(z, z')`` then
conserves H exactly, because ``∇̄Hᵀ S ∇̄H = 0`` (McLachlan, Quispel &
Robidoux, *Phil. Trans. R. Soc. A* 357, 1999).

- ``avf``: ``∇̄H = ∫₀¹ ∇H(z + ξ(z' − z)) dξ`` (Quispel & McLaren 2008), the
  integral by ``nodes``-point Gauss–Legendre quadrature (exact for polynomial
  H of degree ≤ 2·nodes; for the trigonometric H of a chain the quadrature
  error is ``O(|z' − z|^{2·nodes})`` relative: below 1e-12 on the 7-link chain at
  dt = 1e-3 with the default 3 nodes, but 1.6e-7 on a fast double pendulum at
  dt = 1e-2, where ``nodes=5`` brings it to 1e-12 — raise ``nodes`` for large
  steps on fast motion). Order 2, symmetric. ``∇H = (−∂T/∂q|_v + g(q) − τ_springs, v)``.
- ``itoh_abe``: the coordinate-increment discrete gradient
  ``∇̄H_i = [H(z'₁..z'ᵢ, zᵢ₊₁..) − H(z'₁..z'ᵢ₋₁, zᵢ..)] / (z'ᵢ − zᵢ)`` (Itoh &
  Abe, *J. Comput. Phys.* 76, 1988): derivative-free, nv + 1 energy
  evaluations per residual (the p-increments in closed form, T being
  quadratic in p); order 1 (not symmetric).

Both conserve E = T + V_gravity + V_springs to roundoff (avf up to its quadrature
error, above). With non-conservative
forces, ``p' = p − h ∇̄_qH + h τ_nc(t + h/2, q̄, v̄)`` with ``v̄ = ∇̄_pH``; then
``E' − E = h v̄ᵀ τ_nc`` exactly, which is the increment of W_nc recorded, so the
budget ``E − E₀ − W_nc`` stays at roundoff.

Controlled dissipation (``dissipation=α ≥ 0``): the step becomes
``z' = z + h (S − D) ∇̄H`` with ``D = [[0, 0], [0, α h K₊]]``, K₊ the positive
semidefinite part of the stiffness ``∂²V/∂q²`` at the start of the step
(gravity and springs, by differences of ∂V/∂q). Then exactly

    E' − E = h v̄ᵀ τ_nc − α h² v̄ᵀ K₊ v̄  ≤  h v̄ᵀ τ_nc,

a numerical stiffness-proportional (Rayleigh) damping whose coefficient
β = αh vanishes with the step: a mode of frequency ω gets the damping ratio
``ζ = α h ω / 2`` and its energy decays like ``exp(−α h ω² t)``. Slow modes
(hω ≪ 1) keep their energy to ``O(α h ω² t)``; a stiff mode with hω ≳ 1/α is
gone within a few steps. The method stays order 1 in the dissipative term
(order 2 when α = 0). The energy removed is numerical, not physical work,
and shows in the budget.

Canonical coordinates need an additive chart (revolute, prismatic, helical
joints); for ball and free joints use ``project="energy"`` or
``energy_momentum``, which move quaternions by the exponential map.
"""

from __future__ import annotations

import numpy as np

from ..errors import SolverError
from .base import FixedStepMethod, chart_is_additive, newton, solve_spd


class _DiscreteGradient(FixedStepMethod):
    # tol relative to the step's increment: energy is exact only once the
    # discrete-gradient equation holds to roundoff
    options = {"tol": 1e-15, "maxiter": 30, "dissipation": 0.0}

    def __init__(self, problem, **options):
        super().__init__(problem, **options)
        if not chart_is_additive(self.system):
            raise SolverError(
                f"{self.name} works in canonical coordinates (q, p) and needs joints whose "
                "configuration adds (revolute, prismatic, helical); for ball, free or planar "
                "joints use project='energy' (around any method) or 'energy_momentum'")
        a = float(self.opts["dissipation"])
        if not np.isfinite(a) or a < 0:
            raise SolverError(f"{self.name}: dissipation must be ≥ 0, got {a}")
        self.alpha = a
        self._last = None

    #: the relative update below which a Newton iteration that no longer contracts is
    #: taken as converged (the residual is at its roundoff floor)
    stagnation = 1e-9

    def discrete_gradient(self, q0, p0, dq, dp):
        """(∇̄_qH, ∇̄_pH) for the segment from (q0, p0) to (q0 + dq, p0 + dp)."""
        raise NotImplementedError

    def polish(self, q, p0, d, h, t, K):
        """A last correction of the Newton solution (identity here)."""
        return d

    def _stiffness(self, q):
        """K₊: the PSD part of ∂²V/∂q² (central differences of ∂V/∂q = g − τ_springs)."""
        P, n = self.problem, self.system.nv
        zero = np.zeros(n)
        K = np.empty((n, n))
        for k in range(n):
            e = np.zeros(n)
            e[k] = 1e-6 * (1.0 + abs(q[k]))
            K[:, k] = (P.hamiltonian_gradient(q + e, zero)[0]
                       - P.hamiltonian_gradient(q - e, zero)[0]) / (2 * e[k])
        w, U = np.linalg.eigh(0.5 * (K + K.T))
        return (U * np.maximum(w, 0.0)) @ U.T

    def step(self, t, q, v, h):
        P, s, n = self.problem, self.system, self.system.nv
        M0 = s.mass_matrix(q)
        p0 = M0 @ v
        a = self.alpha
        K = self._stiffness(q) if a > 0.0 else None

        def residual(d):
            dq, dp = d[:n], d[n:]
            gq, gp = self.discrete_gradient(q, p0, dq, dp)
            rp = dp + h * gq
            if P.has_nc:
                rp -= h * P.tau_nc(t + 0.5 * h, q + 0.5 * dq, gp)
            if K is not None:
                rp += (a * h * h) * (K @ gp)
            return np.concatenate([dq - h * gp, rp])

        Jm = np.eye(2 * n)
        Jm[:n, n:] = -0.5 * h * np.linalg.inv(M0)
        if K is not None:
            Jm[n:, n:] += 0.5 * a * h * h * K @ np.linalg.inv(M0)
        # predictor: the previous increment (smooth motion), else an Euler step
        last = self._last
        d0 = last if last is not None and last[0] == h else None
        d0 = np.concatenate([h * v, np.zeros(n)]) if d0 is None else d0[1]
        d, it = newton(residual, d0, Jm, tol=self.opts["tol"], maxiter=self.opts["maxiter"],
                       stagnation=self.stagnation)
        d = self.polish(q, p0, d, h, t, K)
        self._last = (h, d)
        self.newton_iterations += it
        dq, dp = d[:n], d[n:]
        q1, p1 = q + dq, p0 + dp
        v1 = solve_spd(s.mass_matrix(q1), p1)
        dw = 0.0
        if P.has_nc:
            vbar = dq / h  # = ∇̄_pH at the solution
            dw = h * float(vbar @ P.tau_nc(t + 0.5 * h, q + 0.5 * dq, vbar))
        return q1, v1, dw


class AVF(_DiscreteGradient):
    """Average vector field method: exact energy, order 2, symmetric.

    ``compiled=True`` (default): a plain Model with additive coordinates, no force
    elements and no dissipation runs in the compiled loop of :mod:`.avf_compiled`
    (same steps; it hands back to this Python method if Newton does not settle).
    """

    name = "avf"
    order = 2
    options = {**_DiscreteGradient.options, "nodes": 3, "compiled": True}

    def compiled_run(self, project):
        """The Solution by the compiled loop, or None when it does not apply."""
        from . import avf_compiled, rk4_compiled

        if (not self.opts["compiled"] or project is not None or self.alpha > 0.0
                or not rk4_compiled.applicable(self.problem)):
            return None
        import warnings

        from numba.core.errors import NumbaError

        try:
            return avf_compiled.run(self.problem, self.opts["tol"], self.opts["maxiter"],
                                    int(self.opts["nodes"]))
        except NumbaError as e:  # the kernels changed under us: the Python loop still works
            warnings.warn(f"avf: compiled loop unavailable ({type(e).__name__}); using the "
                          "Python step loop", RuntimeWarning, stacklevel=3)
            return None

    def __init__(self, problem, **options):
        super().__init__(problem, **options)
        k = int(self.opts["nodes"])
        if k < 1:
            raise SolverError(f"avf: nodes must be ≥ 1, got {k}")
        x, w = np.polynomial.legendre.leggauss(k)
        self.xi, self.w = 0.5 * (x + 1.0), 0.5 * w

    def discrete_gradient(self, q0, p0, dq, dp):
        gq = np.zeros_like(dq)
        gp = np.zeros_like(dp)
        for s, w in zip(self.xi, self.w, strict=True):
            a, b, _ = self.problem.hamiltonian_gradient(q0 + s * dq, p0 + s * dp)
            gq += w * a
            gp += w * b
        return gq, gp


class ItohAbe(_DiscreteGradient):
    """Itoh–Abe coordinate-increment discrete gradient: exact energy, order 1,
    derivative-free (energy values only)."""

    name = "itoh_abe"
    order = 1

    def _H(self, q, p):
        v = solve_spd(self.system.mass_matrix(q), p)
        return self.problem.energy(q, v)

    # Newton settles at the roundoff floor of the energy differences, which is
    # higher than for AVF; polish() then makes the momentum equation exact
    stagnation = 1e-6

    def discrete_gradient(self, q0, p0, dq, dp):
        gq = self.configuration_part(q0, p0, dq)
        return gq, self.momentum_part(q0 + dq, p0, dp)

    def configuration_part(self, q0, p0, dq):
        """∇̄_qH: the increments of q one coordinate at a time, p = p0 held."""
        n = dq.size
        g = np.empty(n)
        q = q0.copy()
        H_prev = self._H(q, p0)
        for i in range(n):
            scale = 1.0 + abs(q0[i])
            if abs(dq[i]) > 1e-5 * scale:
                q[i] = q0[i] + dq[i]
                H_new = self._H(q, p0)
                g[i] = (H_new - H_prev) / dq[i]
            else:
                # a small increment: the quotient would be roundoff; the partial
                # derivative at the midpoint of the increment (central differences)
                # differs from it by O(dq³), below 1e-15 here
                e = 1e-5 * scale
                qm = q.copy()
                qm[i] = q0[i] + 0.5 * dq[i] + e
                Hp = self._H(qm, p0)
                qm[i] -= 2 * e
                g[i] = (Hp - self._H(qm, p0)) / (2 * e)
                q[i] = q0[i] + dq[i]
                H_new = self._H(q, p0)
            H_prev = H_new
        return g

    def momentum_part(self, q1, p0, dp):
        """∇̄_pH at q1: T = ½ pᵀM⁻¹p is quadratic in p, so each quotient is exactly
        (M⁻¹p)_i + ½ Δp_i (M⁻¹)_ii, without the cancellation of a difference."""
        n = dp.size
        Minv = np.linalg.inv(self.system.mass_matrix(q1))
        g = np.empty(n)
        p = p0.copy()
        for i in range(n):
            g[i] = Minv[i] @ p + 0.5 * dp[i] * Minv[i, i]
            p[i] += dp[i]
        return g

    def polish(self, q, p0, d, h, t, K):
        """Make the momentum equation hold exactly for the final Δq.

        ∇̄_qH depends on Δq alone (noisy at roundoff, from differences of H), ∇̄_pH
        smoothly on Δp. Solving ``Δp = −h ∇̄_qH(Δq) + h τ_nc − αh²K∇̄_pH`` for Δp by a
        few fixed-point sweeps leaves only the smooth q-equation's residual,
        O(h · Newton's last update), in ``E' − E``, instead of the noise.
        """
        P, n = self.problem, q.size
        dq, dp = d[:n], d[n:].copy()
        gq = self.configuration_part(q, p0, dq)
        for _ in range(4):
            gp = self.momentum_part(q + dq, p0, dp)
            new = -h * gq
            if P.has_nc:
                new += h * P.tau_nc(t + 0.5 * h, q + 0.5 * dq, gp)
            if K is not None:
                new -= (self.alpha * h * h) * (K @ gp)
            if np.array_equal(new, dp):
                break
            dp = new
        return np.concatenate([dq, dp])
