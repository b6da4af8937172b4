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
  quadratic in p); order 1 (not symmetric). ``variant="symmetric"``: the mean of that
  gradient and the one of the reverse coordinate order, ``½[∇̄H(z, z') + ∇̄H(z', z)]``, a
  symmetric discrete gradient, hence order 2 (McLachlan, Quispel & Robidoux 1999).

On a plain Model with additive joints, whose force elements all have compiled rows
(:mod:`kanedyn.forces.kernel`: springs, dampers, smoothed Stribeck friction, constant and
sinusoidal torques), both run in the compiled loop of :mod:`.discrete_gradient_compiled`;
with ball, free and planar joints in those of :mod:`.avf_chart_compiled`, these
steps in the chart (``compiled=False``: these Python steps).

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

Coordinates. With additive joints only (revolute, prismatic, helical) z = (q, p). With
ball, free or planar joints the step is taken in the local canonical chart of
:mod:`.chart` centred on q_n: ``z = (x, p_x)``, ``q = φ_n(x)`` (quaternions move by the
exponential map), ``p_x = J(x)ᵀ M v``, re-centred every step. H is E in any chart, so both
discrete gradients stay exact; non-conservative forces enter as ``J(x̄)ᵀ τ_nc`` (power
``(J x̄̇)ᵀ τ_nc``), so the budget still closes. ``avf`` needs ∂H/∂x, hence the chart's
D(x, w) (given for Models, and for compiled Kane trees from their generated ∂q̇/∂q:
``chart.SystemChart``; any other protocol-only system with quaternions is refused), Itoh–Abe
only energy values (any system of the protocol). ``dissipation`` is for additive
coordinates only.
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import SolverError
from .base import ITOH_ABE_FLOOR, FixedStepMethod, chart_is_additive, newton
from .chart import ModelChart, canonical_coordinates, make_chart

#: Newton's relative tolerance of AVF and Gonzalez's energy–momentum step (AVF.options)
NEWTON_TOL = 1e-14


class _DiscreteGradient(FixedStepMethod):
    # tol relative to the step's increment: energy is exact only once the
    # discrete-gradient equation holds to roundoff
    options = {"tol": 1e-15, "maxiter": 30, "dissipation": 0.0}
    #: whether the method needs ∂H/∂x (and so the chart's derivative D)
    needs_gradient = True

    def __init__(self, problem, **options):
        super().__init__(problem, **options)
        a = float(self.opts["dissipation"])
        if not np.isfinite(a) or a < 0:
            raise SolverError(f"{self.name}: dissipation must be ≥ 0, got {a}")
        self.alpha = a
        self.additive = chart_is_additive(self.system)
        self.chart = None
        if not self.additive:
            self.chart = make_chart(self.system)
            if self.needs_gradient and not self.chart.has_derivative:
                raise SolverError(
                    f"{self.name} on a curved chart (ball, free or planar joints, "
                    "quaternions, or speeds u other than q̇) needs the derivative of the "
                    "chart Jacobian, which is known for a Model's joints and for a "
                    "compiled Kane tree (generated from its kinematic equations), but not "
                    "for this protocol-only system; use 'itoh_abe' (energy values only), "
                    "'energy_momentum' or project='energy'")
            if a > 0.0:
                raise SolverError(f"{self.name}: dissipation= needs joints whose configuration "
                                  "adds (revolute, prismatic, helical); this system has ball, "
                                  "free or planar joints")
        self._last = None
        self._reuse: dict = {}
        self._carry = None

    def coordinates(self, q):
        """The canonical variables centred on q (module doc)."""
        return canonical_coordinates(self.problem, self.chart, q)

    #: the relative update below which a Newton iteration that no longer contracts is
    #: taken as converged (the residual is at its roundoff floor)
    stagnation = 1e-9
    #: a stall above ``floor`` |x| with the kinematic matrix is not taken as roundoff
    #: (:func:`.base.newton`); 0: every stall below ``stagnation`` is
    floor = 0.0

    def discrete_gradient(self, C, p0, dx, dp):
        """(∇̄_xH, ∇̄_pH) for the segment from (0, p0) to (dx, p0 + dp) in coordinates C."""
        raise NotImplementedError

    def polish(self, C, p0, d, h, t, K):
        """A last correction of the Newton solution (identity here)."""
        return d

    def forcing(self, C, t, dx, xdot):
        """(generalized non-conservative force in x, its power) at the midpoint of the step:
        ``J(x̄)ᵀ τ_nc(t, q(x̄), J(x̄) ẋ̄)``, J = 1 for additive coordinates."""
        P = self.problem
        if self.additive:
            tau = P.tau_nc(t, C.qn + 0.5 * dx, xdot)
            return tau, float(xdot @ tau)
        xm = 0.5 * dx
        q = self.chart.point(C.qn, xm)
        J = self.chart.jacobian(C.qn, xm)
        v = J @ xdot
        tau = P.tau_nc(t, q, v)
        return J.T @ tau, float(v @ tau)

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
        C = self.coordinates(q)
        M0 = s.mass_matrix(q)
        p0 = M0 @ v  # J(0) = 1: the chart momentum at its centre is M v
        c = self._carry
        if c is not None and np.array_equal(c[0], q) and np.array_equal(c[1], v):
            # the previous step ended here: take its momentum J⁻ᵀp as it was before the
            # solve for v, rather than M(M⁻¹ ·), whose rounding is biased by about an ulp
            # of E per step (seen as a 4e-12 drift over 10⁴ steps of a tumbling body)
            p0 = c[2]
        a = self.alpha
        K = self._stiffness(q) if a > 0.0 else None

        def residual(d):
            dq, dp = d[:n], d[n:]
            gq, gp = self.discrete_gradient(C, p0, dq, dp)
            rp = dp + h * gq
            if P.has_nc:
                rp -= h * self.forcing(C, t + 0.5 * h, dq, gp)[0]
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
        # in a chart the simplified matrix misses the gyroscopic coupling, and Newton
        # refreshes it by differences: keep that matrix for the following steps
        if self.additive:
            reuse = None
        else:
            if self._reuse.get("h") != h:
                self._reuse = {"h": h}
            reuse = self._reuse
        d, it = newton(residual, d0, Jm, tol=self.opts["tol"], maxiter=self.opts["maxiter"],
                       stagnation=self.stagnation, reuse=reuse, floor=self.floor)
        d = self.polish(C, p0, d, h, t, K)
        self._last = (h, d)
        self.newton_iterations += it
        dq, dp = d[:n], d[n:]
        q1, v1, J1 = C.state(dq, p0 + dp)
        p1 = p0 + dp
        self._carry = (q1, v1, p1 if J1 is None else np.linalg.solve(J1.T, p1))
        dw = 0.0
        if P.has_nc:
            dw = h * self.forcing(C, t + 0.5 * h, dq, dq / h)[1]  # ẋ̄ = ∇̄_pH = Δx/h
        return q1, v1, dw


class AVF(_DiscreteGradient):
    """Average vector field method: exact energy, order 2, symmetric.

    ``compiled=True`` (default): a plain Model with additive coordinates, force elements
    that have a compiled form (springs, dampers, smoothed Stribeck friction, constant and
    sinusoidal torques: :mod:`kanedyn.forces.kernel`) and no dissipation runs in the
    compiled loop of :mod:`.discrete_gradient_compiled` (same steps to Newton's tolerance;
    it hands back to this Python method if Newton does not settle); with ball, free and
    planar joints in :mod:`.avf_chart_compiled`'s. A compiled Kane system (numba) runs in
    :mod:`.kane_compiled`'s loops: additive coordinates, or quaternions
    (``run_avf_chart``: these steps in the chart's canonical coordinates with
    ``chart.SystemChart``, ∂H/∂x by the generated ∂q̇/∂q and ∂T/∂q); both with force
    elements that have rows.
    """

    name = "avf"
    order = 2
    # tol 1e-14 (not the 1e-15 of Itoh–Abe): Newton's residual r moves the energy by
    # ∇̄H·r ≈ tol |Δz| |∇H| ≈ tol h ω H a step, 1e-14 h ω H, far below the 1e-12 the
    # drift is held to over 10⁴ steps; the drifts of docs/benchmarks.md did not change
    options = {**_DiscreteGradient.options, "tol": NEWTON_TOL, "nodes": 3, "compiled": True}

    def compiled_run(self, project):
        """The Solution by the compiled loop, or None when it does not apply."""
        from . import discrete_gradient_compiled as dgc

        return compiled_discrete_gradient(self, project, dgc.AVF, nodes=int(self.opts["nodes"]))

    def __init__(self, problem, **options):
        super().__init__(problem, **options)
        k = int(self.opts["nodes"])
        if k < 1:
            raise SolverError(f"avf: nodes must be ≥ 1, got {k}")
        x, w = np.polynomial.legendre.leggauss(k)
        self.xi, self.w = 0.5 * (x + 1.0), 0.5 * w

    def discrete_gradient(self, C, p0, dq, dp):
        gq = np.zeros_like(dq)
        gp = np.zeros_like(dp)
        for s, w in zip(self.xi, self.w, strict=True):
            a, b = C.gradient(s * dq, p0 + s * dp)[:2]
            gq += w * a
            gp += w * b
        return gq, gp


def compiled_discrete_gradient(method, project, kind: int, **kw):
    """``method``'s whole run by :func:`.discrete_gradient_compiled.run` — on a compiled
    Kane system by :mod:`.kane_compiled`'s loop, its generated functions passed in; in the
    chart of ball, free and planar joints by :mod:`.avf_chart_compiled` (avf, itoh_abe); on
    a compiled Kane tree with quaternions by :mod:`.kane_compiled`'s chart loops (avf,
    itoh_abe) —,
    or None when the compiled loop does not apply (``compiled=False``, a projection,
    dissipation, a force element without a compiled row, armature:
    :func:`.rk4_compiled.applicable`, :func:`.avf_chart_compiled.applicable`) or gives
    up."""
    from . import discrete_gradient_compiled as dgc
    from . import kane_compiled, rk4_compiled

    if not method.opts["compiled"] or project is not None or method.alpha > 0.0:
        return None
    if method.additive and kane_compiled.applicable(method.problem):
        tol, maxiter = method.opts["tol"], method.opts["maxiter"]
        if kind == dgc.AVF:
            return rk4_compiled.compiled_or_none(method.name, kane_compiled.run_avf,
                                                 method.problem, method.xi, method.w, tol,
                                                 maxiter)
        return rk4_compiled.compiled_or_none(method.name, kane_compiled.run_itoh_abe,
                                             method.problem, kind == dgc.ITOH_ABE_SYMMETRIC,
                                             tol, maxiter, method.stagnation)
    if (kind == dgc.AVF and not method.additive
            and kane_compiled.avf_chart_applicable(method.problem)):
        # a compiled Kane system with quaternions: avf in the chart's canonical coordinates,
        # ∂H/∂x in closed form by the generated chart functions and ∂q̇/∂q, ∂T/∂q
        return rk4_compiled.compiled_or_none(method.name, kane_compiled.run_avf_chart,
                                             method.problem, method.xi, method.w,
                                             method.opts["tol"], method.opts["maxiter"])
    if (kind != dgc.AVF and not method.additive
            and kane_compiled.chart_applicable(method.problem)):
        # a compiled Kane system with quaternions: Itoh–Abe in the chart's canonical
        # coordinates, the chart by its generated functions
        return rk4_compiled.compiled_or_none(method.name, kane_compiled.run_itoh_abe_chart,
                                             method.problem, kind == dgc.ITOH_ABE_SYMMETRIC,
                                             method.opts["tol"], method.opts["maxiter"],
                                             method.stagnation)
    if not method.additive:
        from . import avf_chart_compiled

        if kind == dgc.GONZALEZ or not avf_chart_compiled.applicable(method.problem):
            return None
        if kind == dgc.AVF:
            return rk4_compiled.compiled_or_none(method.name, avf_chart_compiled.run,
                                                 method.problem, kw["nodes"],
                                                 method.opts["tol"], method.opts["maxiter"])
        return rk4_compiled.compiled_or_none(method.name, avf_chart_compiled.run_itoh_abe,
                                             method.problem, kind == dgc.ITOH_ABE_SYMMETRIC,
                                             method.opts["tol"], method.opts["maxiter"],
                                             method.stagnation, method.floor)
    if not rk4_compiled.applicable(method.problem, forces=True):
        return None
    run = functools.partial(dgc.run, stagnation=method.stagnation, **kw)
    return rk4_compiled.compiled_or_none(method.name, run, method.problem, method.name, kind,
                                         method.opts["tol"], method.opts["maxiter"])


class ItohAbe(_DiscreteGradient):
    """Itoh–Abe coordinate-increment discrete gradient: exact energy, derivative-free
    (energy values only).

    ``variant="forward"`` (default): the coordinates moved in the order z_1..z_2n (q, then
    p): order 1. ``variant="symmetric"``: the mean of that discrete gradient and the one of
    the reverse order z_2n..z_1, ``½[∇̄H(z, z') + ∇̄H(z', z)]`` (the reverse path from z is
    the forward path from z' run backwards), a symmetric discrete gradient, so the method
    is symmetric and of order 2 (McLachlan, Quispel & Robidoux, *Phil. Trans. R. Soc. A*
    357, 1999, sec. 3; symmetrised coordinate increments). It costs two paths per
    residual. ``compiled=True`` (default): a plain Model with additive coordinates and force
    elements that have compiled rows (:mod:`kanedyn.forces.kernel`) runs in
    :mod:`.discrete_gradient_compiled`, one with ball, free and planar joints in
    :mod:`.avf_chart_compiled`; a compiled Kane system in :mod:`.kane_compiled`
    (additive coordinates, or quaternions: ``run_itoh_abe_chart``, these steps in the
    chart's canonical coordinates; both with force elements that have rows).
    """

    name = "itoh_abe"
    order = 1
    needs_gradient = False
    options = {**_DiscreteGradient.options, "variant": "forward", "compiled": True}
    VARIANTS = ("forward", "symmetric")

    def __init__(self, problem, **options):
        super().__init__(problem, **options)
        if self.opts["variant"] not in self.VARIANTS:
            raise SolverError(f"itoh_abe: variant must be one of {self.VARIANTS}, got "
                              f"{self.opts['variant']!r}")
        self.symmetric = self.opts["variant"] == "symmetric"
        self.order = 2 if self.symmetric else 1

    def compiled_run(self, project):
        """The Solution by the compiled loop, or None when it does not apply."""
        from . import discrete_gradient_compiled as dgc

        kind = dgc.ITOH_ABE_SYMMETRIC if self.symmetric else dgc.ITOH_ABE
        # (the predictor of degree 8, as AVF's: the quadratic one it had — lest a higher
        # degree amplify the noise of the differences of H — took 3.60 residuals a step on
        # the 20-link chain against 2.17, and drifted more, docs/benchmarks.md; an update
        # below 1e-10 leaves an error at that noise: 1e-9 let the 20-link chain drift by
        # 1.7e-12 over 10 s, 1e-10 by 2.7e-13)
        return compiled_discrete_gradient(self, project, kind, floor=self.floor)

    #: a stall of Newton above ``floor`` |d| is refreshed, not taken (.base.ITOH_ABE_FLOOR)
    floor = ITOH_ABE_FLOOR

    # Newton settles at the roundoff floor of the energy differences, which is
    # higher than for AVF; polish() then makes the momentum equation exact. In a chart the
    # x-equation's residual left by an early stop shows in E (≈ 1e-13 per step at 1e-6):
    # there the iteration goes on to 1e-9, still above that floor
    @property
    def stagnation(self):
        return 1e-6

    def discrete_gradient(self, C, p0, dq, dp):
        gq = self.configuration_part(C, p0, dq)
        gp = self.momentum_part(C, dq, p0, dp)
        if self.symmetric:  # the reverse path: p_n..p_1 at x = 0, then x_n..x_1 at p0 + Δp
            gq = 0.5 * (gq + self.configuration_part(C, p0 + dp, dq, reverse=True))
            gp = 0.5 * (gp + self.momentum_part(C, np.zeros_like(dq), p0, dp, reverse=True))
        return gq, gp

    #: Gauss–Legendre nodes on [0, 1], 2 points: the mean of ∂H/∂x_i over a small increment
    _GL2 = (0.5 - np.sqrt(3.0) / 6.0, 0.5 + np.sqrt(3.0) / 6.0)

    def configuration_part(self, C, p0, dq, reverse=False):
        """∇̄_xH: the increments of x one coordinate at a time (1..n, or n..1 if
        ``reverse``), p = p0 held.

        A quotient ``[H(.., x_i + Δx_i, ..) − H(..)]/Δx_i`` carries the roundoff of H
        divided by Δx_i. Below a switch the quotient is replaced by the mean of ∂H/∂x_i over
        the increment: by central differences of H (derivative-free, switch 1e-5, error
        O(Δx³)), or — in a Model's chart, where the stiff directions (a rod's spin) amplify
        that noise through M⁻¹ — by 2-point Gauss–Legendre on the analytic ∂H/∂x (switch
        1e-3, error O(Δx⁵ ∂⁵H) < 1e-16 relative, roundoff O(eps|H|Δx/ Δx)).
        """
        n = dq.size
        g = np.empty(n)
        x = np.zeros(n)
        # the additive chart's coordinates are q itself: scale the small-increment test
        # by |q| there as before; a chart's x starts at 0
        base = C.qn if self.additive else np.zeros(n)
        # (not on a compiled Kane tree's chart, which has D too: the compiled Itoh–Abe
        # loop of kane_compiled takes these differences of H, and this step is its reference)
        analytic = isinstance(self.chart, ModelChart)
        switch = 1e-3 if analytic else 1e-5
        H_prev = C.energy(x, p0)
        for i in (reversed(range(n)) if reverse else range(n)):
            scale = 1.0 + abs(base[i])
            if abs(dq[i]) > switch * scale:
                x[i] = dq[i]
                H_new = C.energy(x, p0)
                g[i] = (H_new - H_prev) / dq[i]
            elif analytic:
                xm = x.copy()
                gi = 0.0
                for s in self._GL2:
                    xm[i] = s * dq[i]
                    gi += 0.5 * C.gradient(xm, p0)[0][i]
                g[i] = gi
                x[i] = dq[i]
                H_new = C.energy(x, p0)
            else:
                # a small increment: the quotient would be roundoff; the partial
                # derivative at the midpoint of the increment (central differences)
                # differs from it by O(dq³), below 1e-15 here
                e = 1e-5 * scale
                xm = x.copy()
                xm[i] = 0.5 * dq[i] + e
                Hp = C.energy(xm, p0)
                xm[i] -= 2 * e
                g[i] = (Hp - C.energy(xm, p0)) / (2 * e)
                x[i] = dq[i]
                H_new = C.energy(x, p0)
            H_prev = H_new
        return g

    def momentum_part(self, C, dq, p0, dp, reverse=False):
        """∇̄_pH at x1 = Δx (1..n, or n..1 if ``reverse``): H is quadratic in p (matrix
        A = ∂²H/∂p², M⁻¹ for additive coordinates, J⁻¹M⁻¹J⁻ᵀ in a chart), so each quotient
        is exactly (A p)_i + ½ Δp_i A_ii, without the cancellation of a difference."""
        n = dp.size
        Minv = C.inverse_mass(dq)
        g = np.empty(n)
        p = p0.copy()
        for i in (reversed(range(n)) if reverse else range(n)):
            g[i] = Minv[i] @ p + 0.5 * dp[i] * Minv[i, i]
            p[i] += dp[i]
        return g

    def polish(self, C, p0, d, h, t, K):
        """Make the momentum equation hold exactly, and the x-equation to far below Newton's
        stopping point.

        ∇̄_xH depends on Δx alone (noisy at roundoff, from differences of H: ≈ eps|H|/Δx_i,
        1e-10 relative when an increment is near the 1e-5 switch below), ∇̄_pH smoothly on
        Δp, and Newton stops at that noise floor with a residual ``r`` that shows in
        ``E' − E = ∇̄H·r``. Two sweeps of the fixed point ``Δx = h ∇̄_pH(Δx, Δp)``, then
        ``Δp = −h ∇̄_xH(Δx) + h τ_nc − αh²K∇̄_pH`` (solved for Δp by a few sweeps; it
        contracts like O(h²ω²)), end with the p-equation exact and leave in the x-equation
        only h times the last change of Δp, O(h² · noise), instead of the noise.
        """
        P, n = self.problem, self.system.nv
        dq, dp = d[:n].copy(), d[n:].copy()
        # additive coordinates: one sweep (the x-equation's residual is at roundoff there);
        # a chart's stiff directions need the second
        # The symmetric variant's ∇̄_xH depends on Δp (its reverse path runs at p0 + Δp):
        # there one sweep of the p-equation, which leaves in it O(h ∂²H/∂q∂p) times
        # Newton's last error in Δp (the compiled loop does the same)
        for sweep in range(1 if self.additive else 2):
            if sweep:
                dq = h * self.discrete_gradient(C, p0, dq, dp)[1]
            gq_forward = self.configuration_part(C, p0, dq)
            for _ in range(1 if self.symmetric else 4):
                gq, gp = gq_forward, self.momentum_part(C, dq, p0, dp)
                if self.symmetric:
                    gq, gp = self.discrete_gradient(C, p0, dq, dp)
                new = -h * gq
                if P.has_nc:
                    new += h * self.forcing(C, t + 0.5 * h, dq, gp)[0]
                if K is not None:
                    new -= (self.alpha * h * h) * (K @ gp)
                if np.array_equal(new, dp):
                    break
                dp = new
        return np.concatenate([dq, dp])
