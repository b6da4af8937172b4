"""Störmer–Verlet (generalized leapfrog) for the non-separable H(x, p) = ½ pᵀA(x)p + V(x).

    p_{n+½} = p_n − h/2 ∂H/∂x(x_n, p_{n+½})                  (implicit in p_{n+½})
    x_{n+1} = x_n + h/2 [∂H/∂p(x_n, p_{n+½}) + ∂H/∂p(x_{n+1}, p_{n+½})]   (implicit in x_{n+1})
    p_{n+1} = p_{n+½} − h/2 ∂H/∂x(x_{n+1}, p_{n+½})          (explicit)

(Hairer, Lubich & Wanner 2006, eq. VI.3.4.) Order 2, symplectic and
symmetric: the energy error stays bounded without drift; angular momentum
of a free system is kept exactly. Non-conservative forces enter each half kick,
``+ h/2 τ_nc``; their work by the trapezoidal rule of the two kicks.

Coordinates. With additive joints only (revolute, prismatic, helical) x = q and p = M v,
``∂H/∂q|_p = −∂T/∂q|_v + g(q) − τ_springs``, the scheme above.

Ball, free and planar joints. Re-centring a chart at every step would break symplecticity
(the chart then depends on the point being mapped), so there the method is the variational
form of Störmer–Verlet (Marsden & West, *Acta Numerica* 10, 2001, §2.6; on Lie groups as in
Bou-Rabee & Marsden, *Found. Comput. Math.* 9, 2009): the discrete Lagrangian

    L_d(q_0, q_1) = h/2 L(q_0, x/h) + h/2 L(q_1, W(x)/h),    q_1 = φ_{q_0}(x),

(L = ½ vᵀ M v − V, x the coordinates of q_1 in the chart of :mod:`.chart` centred on q_0,
W(x) = J(x) x the end velocity of the chart curve) is one function of the pair (q_0, q_1),
so its discrete Euler–Lagrange map is symplectic whatever chart writes it down; with
μ = M v, G = ∂L/∂q|_v = ∂T/∂q − g + τ_springs and ``g_v = ½ M_0 x/h + ½ ∂Wᵀ M_1 W/h``:

    μ_n + h/2 G(q_n, x/h) + Kᵀ g_v + h/2 τ_nc(t_n, q_n, x/h) = 0        (solved for x)
    μ_{n+1} = J(x)⁻ᵀ g_v + h/2 G(q_{n+1}, W/h) + h/2 τ_nc(t_{n+1}, q_{n+1}, W/h)

(K = ∂x/∂q_0 at fixed q_1, discrete Lagrange–d'Alembert forcing). For additive joints with
a constant mass matrix it is the same map as the scheme above. Order 2, symmetric; the
quaternion moves by the exponential map. A compiled Kane tree with quaternions (or speeds
other than q̇) takes its chart's W, ∂W/∂x and K from its generated ∂q̇/∂q
(``chart.SystemChart``; the Python steps); any other protocol-only system with quaternions
(no chart structure) is refused.

``compiled=True`` (default): additive coordinates on a plain Model whose force elements (if
any) all have compiled rows (:func:`.rk4_compiled.applicable` with ``forces=True``) run in
the compiled loop of :mod:`.verlet_compiled` (the
same equations and tolerance, tested step for step against this class, which takes the run
back when an iteration there fails or contracts slowly); a Model's tree with ball, free or
planar joints among revolute, prismatic and helical ones, without rotor armature, whose
force elements all have rows (:func:`.verlet_compiled.chart_applicable`), runs
:meth:`_variational_step` in that module's ``run_chart`` loop (the same equations, Newton
matrix −M_0/h, difference Jacobians kept while h stays, tolerance and stopping rule). A
compiled Kane system (numba backend, q̇ = u, no force elements) runs the leapfrog in the loop
of :mod:`.kane_compiled`, which takes this class's arithmetic as it is (its Newton with the
identity, its central differences of T); one with quaternions (``ChartCompiledSystem``)
runs :meth:`_variational_step` with ``chart.SystemChart`` in the loop of
``kane_compiled.run_verlet_chart`` (the same equations and Newton, the chart's derivative
by its generated ∂q̇/∂q; tested step for step against this class).
"""

from __future__ import annotations

import numpy as np

from ..errors import SolverError
from .base import (
    FixedStepMethod,
    chart_is_additive,
    gravity_torques,
    kinetic_energy_gradient,
    newton,
    solve_spd,
)
from .chart import canonical_coordinates, make_chart


class Verlet(FixedStepMethod):
    """Generalized leapfrog (Störmer–Verlet), order 2, two small implicit solves per step."""

    name = "verlet"
    order = 2
    options = {"tol": 1e-14, "maxiter": 50, "compiled": True}

    def __init__(self, problem, **options):
        super().__init__(problem, **options)
        self.chart = None
        self._reuse: tuple[dict, dict] = ({}, {})
        if not chart_is_additive(self.system):
            self.chart = make_chart(self.system)
            if not self.chart.has_derivative:
                raise SolverError(
                    "verlet on a curved chart (ball, free or planar joints, quaternions, or "
                    "speeds u other than q̇) needs the derivative of the chart Jacobian, "
                    "which is known for a Model's joints and for a compiled Kane tree "
                    "(generated from its kinematic equations), but not for this "
                    "protocol-only system; use 'midpoint', 'gauss4', 'itoh_abe', "
                    "'energy_momentum' or project='energy'")

    def compiled_run(self, project):
        """The Solution by a compiled loop of :mod:`.verlet_compiled` — the leapfrog on
        additive coordinates (``run``), the variational step on ball, free and planar
        joints (``run_chart``) —, or None when none applies (a force element without a
        compiled row, rotor armature, a protocol-only system, a projection,
        ``compiled=False``) or the loop hands back."""
        from . import kane_compiled, rk4_compiled, verlet_compiled

        if not self.opts["compiled"] or project is not None:
            return None
        if self.chart is None and kane_compiled.applicable(self.problem):
            run = kane_compiled.run_verlet  # a compiled Kane system's generated functions
        elif self.chart is None:
            if not rk4_compiled.applicable(self.problem, forces=True):
                return None
            run = verlet_compiled.run
        elif verlet_compiled.chart_applicable(self.problem):
            run = verlet_compiled.run_chart
        elif kane_compiled.avf_chart_applicable(self.problem):
            run = kane_compiled.run_verlet_chart  # a compiled Kane tree with quaternions
        else:
            return None
        return rk4_compiled.compiled_or_none("verlet", run, self.problem, self.opts["tol"],
                                             self.opts["maxiter"])

    def _kick(self, C, t, x, p):
        """(−∂H/∂x + τ_nc, ẋ, vᵀτ_nc) at (x, p) (additive coordinates)."""
        P = self.problem
        dHdx, xdot, q, v, _ = C.gradient(x, p)
        if not P.has_nc:
            return -dHdx, xdot, 0.0
        tnc = P.tau_nc(t, q, v)
        return tnc - dHdx, xdot, float(v @ tnc)

    def step(self, t, q, v, h):
        if self.chart is not None:
            return self._variational_step(t, q, v, h)
        tol, mi = self.opts["tol"], self.opts["maxiter"]
        C = canonical_coordinates(self.problem, None, q)
        p0 = self.system.mass_matrix(q) @ v
        n = v.size
        eye = np.eye(n)
        x0 = np.zeros(n)

        def r_half(ph):
            return ph - p0 - 0.5 * h * self._kick(C, t, x0, ph)[0]

        ph, i1 = newton(r_half, p0, eye, tol=tol, maxiter=mi)
        ka, va, wa = self._kick(C, t, x0, ph)

        def r_pos(x):
            return x - 0.5 * h * (va + C.velocity(x, ph))

        x1, i2 = newton(r_pos, h * va, eye, tol=tol, maxiter=mi)
        kb, vb, wb = self._kick(C, t + h, x1, ph)
        p1 = ph + 0.5 * h * kb
        self.newton_iterations += i1 + i2
        q1, v1, _ = C.state(x1, p1)
        return q1, v1, 0.5 * h * (wa + wb)

    def _G(self, q, v):
        """∂L/∂q at fixed body velocity v: ∂T/∂q − ∂V/∂q (springs included)."""
        P, s = self.problem, self.system
        dT, dV = s.hamiltonian_terms(q, v) if hasattr(s, "hamiltonian_terms") else (
            kinetic_energy_gradient(s, q, v), gravity_torques(s, q))
        if P.tau_cons is not None:
            dV = dV - P.tau_cons(q)
        return dT - dV

    def _variational_step(self, t, q, v, h):
        P, s, ch = self.problem, self.system, self.chart
        M0 = s.mass_matrix(q)
        mu = M0 @ v
        cache = {}

        def parts(x):
            q1 = ch.point(q, x)
            W, DW = ch.end_velocity(q, x)
            M1 = s.mass_matrix(q1)
            gv = 0.5 * (M0 @ x) / h + 0.5 * DW.T @ (M1 @ W) / h
            return q1, W, gv

        def residual(x):
            q1, W, gv = parts(x)
            r = mu + 0.5 * h * self._G(q, x / h) + ch.start_sensitivity(q, x).T @ gv
            if P.has_nc:
                r += 0.5 * h * P.tau_nc(t, q, x / h)
            cache["x"] = x
            return r

        if self._reuse[0].get("h") != h:
            self._reuse = ({"h": h}, {})
        x, it = newton(residual, h * v, -M0 / h, tol=self.opts["tol"],
                       maxiter=self.opts["maxiter"], reuse=self._reuse[0])
        self.newton_iterations += it
        q1, W, gv = parts(x)
        v1d = W / h
        mu1 = np.linalg.solve(ch.jacobian(q, x).T, gv) + 0.5 * h * self._G(q1, v1d)
        dw = 0.0
        if P.has_nc:
            ta, tb = P.tau_nc(t, q, x / h), P.tau_nc(t + h, q1, v1d)
            mu1 += 0.5 * h * tb
            dw = 0.5 * h * (float((x / h) @ ta) + float(v1d @ tb))
        return q1, solve_spd(s.mass_matrix(q1), mu1), dw
