"""Dormand–Prince 5(4) with step-size control and dense output (our own implementation).

Order 5 (error estimate of order 4, local extrapolation), FSAL, 6 new
dynamics evaluations per accepted step; the 4th-order continuous extension of
Shampine/Hairer gives dense output (Hairer, Nørsett & Wanner, *Solving ODEs
I*, 2nd ed., II.4–II.6, and their code DOPRI5). Conserves nothing exactly:
the energy error follows the tolerance.

Each step works in the tangent chart of the configuration at its start,
``y = (ξ, v, w)`` with ``q = q_n ⊕ ξ``, ``ξ̇ = J(ξ)⁻¹ v`` and ``ẇ = vᵀ τ_nc`` (the
non-conservative work), so quaternions move only by the exponential map.

Options: ``rtol`` (1e-6), ``atol`` (1e-9), ``first_step`` (automatic),
``max_step`` (∞), ``max_steps`` (10⁶). With ``dt`` given, the trajectory is
sampled every dt by dense output; without it, at every accepted step.
"""

from __future__ import annotations

import numpy as np

from ..errors import SolverError
from .base import Problem, Solution, chart_is_additive, chart_jacobian, check_state

# Butcher tableau (Dormand & Prince 1980)
C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])
A = [
    [],
    [1 / 5],
    [3 / 40, 9 / 40],
    [44 / 45, -56 / 15, 32 / 9],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
    [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84],
]
B = np.array([35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0])
# b - b̂ (5th minus 4th order weights)
E = np.array([71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40])
# dense output (Hairer's DOPRI5 contd5)
D = np.array([-12715105075 / 11282082432, 0.0, 87487479700 / 32700410799,
              -10690763975 / 1880347072, 701980252875 / 199316789632,
              -1453857185 / 822651844, 69997945 / 29380423])

OPTIONS = {"rtol": 1e-6, "atol": 1e-9, "first_step": None, "max_step": np.inf,
           "max_steps": 1_000_000}


def dopri5(problem: Problem, **options) -> Solution:
    """Integrate ``problem`` by adaptive Dormand–Prince 5(4)."""
    unknown = set(options) - set(OPTIONS)
    if unknown:
        raise SolverError(f"method 'dopri5' does not take option(s) {sorted(unknown)}; "
                          f"it takes {sorted(OPTIONS)}")
    o = {**OPTIONS, **options}
    rtol, atol = float(o["rtol"]), float(o["atol"])
    if not (rtol > 0 and atol > 0):
        raise SolverError(f"dopri5: rtol and atol must be > 0, got {rtol}, {atol}")
    s, P = problem.system, problem
    nv = s.nv
    additive = chart_is_additive(s)

    def f(t, q0, y):
        xi, v = y[:nv], y[nv:2 * nv]
        q = q0 + xi if additive else s.integrate_configuration(q0, xi, 1.0)
        tau = P.tau(t, q, v)
        a = s.forward_dynamics(q, v, tau)
        J = None if additive else chart_jacobian(s, q0, xi)
        out = np.empty(2 * nv + 1)
        out[:nv] = v if J is None else np.linalg.solve(J, v)
        out[nv:2 * nv] = a
        out[-1] = P.power_nc(t, q, v)
        return out

    def to_q(q0, xi):
        return q0 + xi if additive else s.integrate_configuration(q0, xi, 1.0)

    t, tf = P.t0, P.t_final
    q = np.array(P.q0, float)
    y = np.concatenate([np.zeros(nv), np.array(P.v0, float), [0.0]])
    k1 = f(t, q, y)
    span = tf - t
    if o["first_step"] is not None:
        h = float(o["first_step"])
    else:  # Hairer's initial step heuristic (Solving ODEs I, II.4)
        sc = atol + rtol * np.abs(y)
        d0, d1 = np.sqrt(np.mean((y / sc) ** 2)), np.sqrt(np.mean((k1 / sc) ** 2))
        h = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
        h = min(h, span) if span > 0 else h
    h = min(h, float(o["max_step"]))
    Ts, Qs, Vs, Ws, rej = [t], [q.copy()], [y[nv:2 * nv].copy()], [0.0], []
    grid = None
    if P.dt is not None:
        grid = P.t0 + P.dt * np.arange(1, int(np.floor(span / P.dt + 1e-9)) + 1)
        grid = grid[grid < tf - 1e-12 * max(1.0, abs(tf))]
        gi = 0
    vmax0 = float(np.abs(P.v0).max()) if nv else 0.0
    n_acc, n_rej_here = 0, 0
    while t < tf and span > 0:
        if n_acc >= o["max_steps"]:
            raise SolverError(f"dopri5: {o['max_steps']} steps taken, t = {t:.6g} < {tf}; "
                              "raise max_steps or loosen rtol/atol")
        h = min(h, tf - t)
        if h <= 4 * np.finfo(float).eps * max(1.0, abs(tf)):
            break  # t_final reached up to rounding
        if h < 1e-14 * max(1.0, abs(t)):
            raise SolverError(
                f"dopri5: step size collapsed to {h:.3g} at t = {t:.6g} (step {n_acc}); "
                "the problem may be stiff (try method='Radau' or 'BDF') or singular")
        K = [k1]
        for i in range(1, 7):
            yi = y + h * sum(a * k for a, k in zip(A[i], K, strict=False))
            K.append(f(t + C[i] * h, q, yi))
        y1 = y + h * sum(b * k for b, k in zip(B, K, strict=True) if b != 0.0)
        err = h * sum(e * k for e, k in zip(E, K, strict=True) if e != 0.0)
        sc = atol + rtol * np.maximum(np.abs(y), np.abs(y1))
        en = float(np.sqrt(np.mean((err[:-1] / sc[:-1]) ** 2)))
        if not np.isfinite(en):
            en = np.inf
        fac = 0.9 * en ** -0.2 if en > 0 else 10.0
        if en <= 1.0:
            t1 = tf if h >= tf - t else t + h  # land on t_final exactly
            q1 = to_q(q, y1[:nv])
            check_state(P, "dopri5", n_acc + 1, t1, q1, y1[nv:2 * nv], vmax0)
            if grid is not None:  # dense output (4th order) on the sampling grid
                r2 = y1 - y
                r3 = h * K[0] - r2
                r4 = r2 - h * K[6] - r3
                r5 = h * sum(d * k for d, k in zip(D, K, strict=True) if d != 0.0)
                while gi < grid.size and grid[gi] <= t1:
                    th = (grid[gi] - t) / h
                    yd = y + th * (r2 + (1 - th) * (r3 + th * (r4 + (1 - th) * r5)))
                    Ts.append(grid[gi])
                    Qs.append(to_q(q, yd[:nv]))
                    Vs.append(yd[nv:2 * nv])
                    Ws.append(yd[-1])
                    rej.append(n_rej_here)
                    n_rej_here = 0
                    gi += 1
            else:
                Ts.append(t1)
                Qs.append(q1)
                Vs.append(y1[nv:2 * nv].copy())
                Ws.append(y1[-1])
                rej.append(n_rej_here)
                n_rej_here = 0
            # re-centre the chart at q1: ξ = 0, and ξ̇ = J(0)⁻¹ v = v (FSAL for v̇ and ẇ)
            k1 = K[6].copy()
            k1[:nv] = y1[nv:2 * nv]
            y = np.concatenate([np.zeros(nv), y1[nv:]])
            q, t = q1, t1
            n_acc += 1
            if P.progress is not None:
                P.progress(t)
            h = min(h * min(10.0, max(0.2, fac)), float(o["max_step"]))
        else:
            n_rej_here += 1
            h = h * max(0.2, fac)
    if grid is not None and t > Ts[-1]:
        Ts.append(t)
        Qs.append(q)
        Vs.append(y[nv:2 * nv].copy())
        Ws.append(y[-1])
        rej.append(n_rej_here)
    return Solution(np.array(Ts), np.array(Qs), np.array(Vs), np.array(Ws),
                    {"rejected_steps": np.array(rej, dtype=np.int32),
                     "accepted_steps": np.array([n_acc])}, "dopri5")
