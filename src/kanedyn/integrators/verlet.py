"""Störmer–Verlet (generalized leapfrog) for the non-separable H(q, p) = ½ pᵀM(q)⁻¹p + V(q).

    p_{n+½} = p_n − h/2 ∂H/∂q(q_n, p_{n+½})                  (implicit in p_{n+½})
    q_{n+1} = q_n + h/2 [∂H/∂p(q_n, p_{n+½}) + ∂H/∂p(q_{n+1}, p_{n+½})]   (implicit in q_{n+1})
    p_{n+1} = p_{n+½} − h/2 ∂H/∂q(q_{n+1}, p_{n+½})          (explicit)

(Hairer, Lubich & Wanner 2006, eq. VI.3.4.) Order 2, symplectic and
symmetric: the energy error stays bounded without drift; angular momentum
of a free system is kept exactly. ``∂H/∂q|_p = −∂T/∂q|_v + g(q) − τ_springs``.
Non-conservative forces enter each half kick, ``+ h/2 τ_nc``; their work by
the trapezoidal rule of the two kicks.

Canonical coordinates need an additive chart (revolute, prismatic, helical
joints); for ball and free joints use midpoint, gauss4, energy_momentum or a
projection instead.
"""

from __future__ import annotations

import numpy as np

from ..errors import SolverError
from .base import FixedStepMethod, chart_is_additive, newton


class Verlet(FixedStepMethod):
    """Generalized leapfrog (Störmer–Verlet), order 2, two small implicit solves per step."""

    name = "verlet"
    order = 2
    options = {"tol": 1e-14, "maxiter": 50}

    def __init__(self, problem, **options):
        super().__init__(problem, **options)
        if not chart_is_additive(self.system):
            raise SolverError(
                "verlet works in canonical coordinates (q, p) and needs joints whose "
                "configuration adds (revolute, prismatic, helical); this system has ball, "
                "free or planar joints — use 'midpoint', 'gauss4', 'energy_momentum' or "
                "project='energy'")

    def _kick(self, t, q, p):
        """(−∂H/∂q + τ_nc, v, vᵀτ_nc) at (q, p)."""
        P = self.problem
        dHdq, _, v = P.hamiltonian_gradient(q, p)
        if not P.has_nc:
            return -dHdq, v, 0.0
        tnc = P.tau_nc(t, q, v)
        return tnc - dHdq, v, float(v @ tnc)

    def step(self, t, q, v, h):
        tol, mi = self.opts["tol"], self.opts["maxiter"]
        M0 = self.system.mass_matrix(q)
        p0 = M0 @ v
        n = v.size
        eye = np.eye(n)

        def r_half(ph):
            return ph - p0 - 0.5 * h * self._kick(t, q, ph)[0]

        ph, i1 = newton(r_half, p0, eye, tol=tol, maxiter=mi)
        ka, va, wa = self._kick(t, q, ph)

        def r_pos(x):
            vb = np.linalg.solve(self.system.mass_matrix(x), ph)
            return x - q - 0.5 * h * (va + vb)

        q1, i2 = newton(r_pos, q + h * va, eye, tol=tol, maxiter=mi)
        kb, vb, wb = self._kick(t + h, q1, ph)
        p1 = ph + 0.5 * h * kb
        self.newton_iterations += i1 + i2
        v1 = np.linalg.solve(self.system.mass_matrix(q1), p1)
        return q1, v1, 0.5 * h * (wa + wb)
