"""Projection onto invariants, wrapped around any fixed-step method.

After the base step gives z̃ = (q̃, ṽ), the state is moved along the gradients
of the invariants G = (E − E_target, L − L₀, P − P₀, ...) evaluated at z̃:

    z = z̃ + ∇G(z̃)ᵀ λ,    G(z) = 0,

solved for λ by simplified Newton with the matrix ``∇G ∇Gᵀ`` (Hairer,
Lubich & Wanner 2006, IV.4, "standard projection"; for energy alone a scalar
Newton along ∇H). Coordinates are tangent: ``q = q̃ ⊕ δ``, so quaternions move
by the exponential map and ``∇_δ E = ∂T/∂q + g`` is exact at δ = 0.

The energy target is ``E₀ + W_nc(t)``, with W_nc from the base method's own
quadrature, so with damping and actuation the projected run satisfies the
budget ``E − E₀ − W_nc = 0`` to roundoff; its physical accuracy is then that
of W_nc. Momentum targets are the initial values and make sense only when
the system conserves them (no gravity or base, no external forces): a momentum
asked of a system whose momentum changes is refused (:func:`check_conserved`),
since projecting onto it would hold a changing quantity fixed and return a
wrong motion without any sign of it.
The projection keeps the order of the base method (HLW IV.4.1).
"""

from __future__ import annotations

import numpy as np

from ..errors import SolverError
from .base import FixedStepMethod, NewtonFailure, momentum

INVARIANTS = {
    "energy": 1,
    "momentum": 6,  # spatial momentum [L; P], world coordinates
    "angular_momentum": 3,
    "linear_momentum": 3,
}
_ROWS = {"momentum": slice(0, 6), "angular_momentum": slice(0, 3),
         "linear_momentum": slice(3, 6)}


def parse_invariants(project) -> tuple[str, ...]:
    names = (project,) if isinstance(project, str) else tuple(project)
    for n in names:
        if n not in INVARIANTS:
            raise SolverError(f"project: unknown invariant {n!r}; choose from {list(INVARIANTS)}")
    if len(set(names)) != len(names) or not names:
        raise SolverError(f"project: give each invariant once, got {names!r}")
    return names


def momentum_rate(problem, q: np.ndarray, v: np.ndarray, t: float) -> tuple:
    """(ḣ, scale) at (t, q, v): the rate of the spatial momentum h = A(q) v along the
    motion, ``ḣ = (∂(A v)/∂q) q̇ + A(q) v̇`` with v̇ the problem's forward dynamics (force
    elements included), the first term by central differences along q ⊕ ε v, the second
    exact (h is linear in v); ``scale`` the larger of the two terms' sizes, which cancel
    to round-off where the momentum is conserved."""
    s = problem.system
    a = problem.acceleration(t, q, v)
    eps = 1e-6 / (1.0 + float(np.abs(v).max()))
    kin = (momentum(s, s.integrate_configuration(q, v, eps), v)
           - momentum(s, s.integrate_configuration(q, v, -eps), v)) / (2.0 * eps)
    dyn = momentum(s, q, a)
    return kin + dyn, max(float(np.abs(kin).max()), float(np.abs(dyn).max()))


def check_conserved(problem, invariants: tuple[str, ...]) -> None:
    """SolverError where a momentum among ``invariants`` is not conserved by the problem:
    its rate (:func:`momentum_rate`) at the start (t0, q0, v0), and at (t0, q0, v0 + w)
    for a fixed w ≠ 0, is not zero to 1e-6 of its terms. A conserved momentum has ḣ = 0
    at every state (internal forces, loop-closure reactions among them, come in opposite
    pairs); a base tied to the world, gravity or an external force element give ḣ ≠ 0
    (the second state catches a start at rest in an equilibrium, where ḣ = 0 there)."""
    names = [n for n in invariants if n != "energy"]
    if not names:
        return
    q0, v0, t0 = problem.q0, problem.v0, problem.t0
    w = 0.1 * (1.0 + float(np.abs(v0).max())) * np.cos(1.0 + np.arange(v0.size))
    for k, v in ((1, v0), (2, v0 + w)):
        rate, scale = momentum_rate(problem, q0, v, t0)
        for n in names:
            r = rate[_ROWS[n]]
            if float(np.abs(r).max()) > 1e-6 * scale:
                with np.printoptions(precision=3):
                    raise SolverError(
                        f"project: {n!r} is not conserved by this system — its rate at "
                        f"t = {t0:g} (v = {'v0' if k == 1 else 'v0 + w'}) is {r}, not 0 (a "
                        "joint that ties the tree to the world, gravity, or an external "
                        "force element changes it); projecting onto it would hold a "
                        "changing quantity fixed. Project onto 'energy' alone, or onto the "
                        "momenta of a free-floating system without gravity")


class Projected(FixedStepMethod):
    """``base`` followed by an orthogonal projection onto the chosen invariants."""

    order = 0

    def __init__(self, base: FixedStepMethod, invariants, tol: float = 1e-15,
                 maxiter: int = 20):
        self.base = base
        self.problem, self.system = base.problem, base.system
        self.invariants = parse_invariants(invariants)
        self.name = f"{base.name}+project{self.invariants}"
        self.order = base.order
        self.tol, self.maxiter = tol, maxiter
        q0, v0 = self.problem.q0, self.problem.v0
        self.E0 = self.problem.energy(q0, v0)
        check_conserved(self.problem, self.invariants)
        self.h0 = momentum(self.system, q0, v0) if any(
            n != "energy" for n in self.invariants) else None
        self.W = 0.0
        self.newton_iterations = 0
        self._projection_iterations = 0

    def _G(self, q, v):
        out = []
        for n in self.invariants:
            if n == "energy":
                out.append([self.problem.energy(q, v) - (self.E0 + self.W)])
            else:
                r = _ROWS[n]
                out.append(momentum(self.system, q, v)[r] - self.h0[r])
        return np.concatenate(out)

    def _gradients(self, q, v):
        """∇G (k x 2nv) at (q, v) in tangent coordinates (δ, v)."""
        s, nv = self.system, self.system.nv
        rows = []
        for n in self.invariants:
            if n == "energy":
                dq, dv = self.problem.energy_gradient(q, v)
                rows.append(np.concatenate([dq, dv])[None, :])
                continue
            r = _ROWS[n]
            A = np.empty((r.stop - r.start, 2 * nv))
            for k in range(nv):  # h is linear in v: exact columns
                e = np.zeros(nv)
                e[k] = 1.0
                A[:, nv + k] = momentum(s, q, e)[r]
                eps = 1e-6
                e[k] = eps
                hp = momentum(s, s.integrate_configuration(q, e, 1.0), v)[r]
                hm = momentum(s, s.integrate_configuration(q, -e, 1.0), v)[r]
                A[:, k] = (hp - hm) / (2 * eps)
            rows.append(A)
        return np.vstack(rows)

    def _scale(self, G: np.ndarray, v: np.ndarray, D: np.ndarray) -> float:
        """The size against which |G| is judged: 1 + |E₀| + |T| + |E − T| at the step's
        end (q̃, ṽ) — the terms whose rounding E = T + V carries, T = ½ vᵀ(M v) with
        M v = ∂E/∂v, the energy's row of D — plus max |h₀| with momentum rows. A falling
        body's T and V grow apart while E stays near E₀: a bar on 1 + |E₀| alone fell
        below the rounding of T + V (a free body stopped at t = 3.5 s, |T| ≈ |V| ≈ 10³)."""
        scale = 1.0 + abs(self.E0)
        if "energy" in self.invariants:
            k = sum(INVARIANTS[n] for n in self.invariants[:self.invariants.index("energy")])
            nv = v.shape[0]
            T = 0.5 * float(v @ D[k, nv:])
            E = float(G[k]) + self.E0 + self.W
            scale += abs(T) + abs(E - T)
        if self.h0 is not None:
            scale += float(np.abs(self.h0).max())
        return scale

    def step(self, t, q, v, h):
        qt, vt, dw = self.base.step(t, q, v, h)
        self.W += dw
        s, nv = self.system, self.system.nv
        D = self._gradients(qt, vt)
        try:
            Ginv = np.linalg.inv(D @ D.T)
        except np.linalg.LinAlgError:
            raise NewtonFailure(float("nan"), 0, f"the gradients of {self.invariants} are "
                                "linearly dependent here; project onto fewer invariants") from None
        lam = np.zeros(D.shape[0])
        G = self._G(qt, vt)
        scale = self._scale(G, vt, D)
        for it in range(1, self.maxiter + 1):
            lam -= Ginv @ G
            dz = D.T @ lam
            q1 = s.integrate_configuration(qt, dz[:nv], 1.0)
            v1 = vt + dz[nv:]
            G = self._G(q1, v1)
            if float(np.abs(G).max()) <= self.tol * scale * 4:
                self._projection_iterations += it
                self.newton_iterations = self.base.newton_iterations + self._projection_iterations
                return q1, v1, dw
        # roundoff may keep |G| just above the bar: accept if it stagnated at roundoff
        if float(np.abs(G).max()) <= 1e-13 * scale:
            self._projection_iterations += self.maxiter
            self.newton_iterations = self.base.newton_iterations + self._projection_iterations
            return q1, v1, dw
        raise NewtonFailure(float(np.abs(G).max()), self.maxiter,
                            f"projection onto {self.invariants} did not converge")
