"""Coordinate projection after each step: back onto g = 0, then onto C v = 0.

Both projections are minimum-distance in the mass metric (Hairer, Lubich & Wanner,
*Geometric Numerical Integration*, 2nd ed., sec. IV.4): the position by
Gauss–Newton (:func:`~kanedyn.constraints.consistent.project_position`), the velocity
exactly. :func:`projected` wraps any one-step map ``step(t, q, v, h) -> (q, v)`` (the
integrators' fixed-step methods included); :func:`implicit_midpoint_step` is a plain
implicit midpoint rule on the index-1 ODE for tests and examples.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ..errors import SolverError
from .consistent import project_position, project_velocity
from .system import ConstrainedMechanics


def project(system: ConstrainedMechanics, q: NDArray, v: NDArray, t: float = 0.0,
            tol: float = 1e-12) -> tuple[NDArray, NDArray]:
    """(q, v) moved to the nearest consistent state (positions first, then speeds)."""
    q1, _ = project_position(system, q, t, tol)
    return q1, project_velocity(system, q1, v, t)


def projected(system: ConstrainedMechanics, step: Callable, tol: float = 1e-12) -> Callable:
    """``step`` followed by :func:`project` — same signature ``(t, q, v, h) -> (q, v)``."""
    def step_and_project(t, q, v, h):
        q1, v1 = step(t, q, v, h)[:2]
        return project(system, q1, v1, t + h, tol)

    return step_and_project


def implicit_midpoint_step(system: ConstrainedMechanics, tol: float = 1e-13,
                           max_iter: int = 30) -> Callable:
    """The implicit midpoint rule on ``q' = v, v' = v̇(q, v)`` (nq = nv),
    ``y1 = y0 + h F((y0 + y1)/2)``, by simplified Newton (forward-difference Jacobian)."""
    if system.nq != system.nv:
        raise SolverError(f"implicit_midpoint_step: {system.name} has nq != nv")
    n = system.nq

    def F(t, y):
        q, v = y[:n], y[n:]
        return np.concatenate([v, system.forward_dynamics(q, v, t=t)])

    def step(t, q, v, h):
        y0 = np.concatenate([q, v])
        y = y0 + h * F(t, y0)
        # simplified Newton: the iteration matrix 1 − h/2 ∂F/∂y once per step
        fm = F(t + h / 2, 0.5 * (y0 + y))
        J = np.eye(2 * n)
        for k in range(2 * n):
            e = np.zeros(2 * n)
            d = 1e-7 * max(1.0, abs(y[k]))
            e[k] = d
            J[:, k] -= h * (F(t + h / 2, 0.5 * (y0 + y + e)) - fm) / d
        for _ in range(max_iter):
            r = y - y0 - h * F(t + h / 2, 0.5 * (y0 + y))
            dy = np.linalg.solve(J, -r)
            y = y + dy
            if np.max(np.abs(dy)) <= tol * max(1.0, np.max(np.abs(y))):
                return y[:n], y[n:]
        raise SolverError(f"implicit midpoint: Newton did not converge at t = {t:.6g}, "
                          f"h = {h:.3g}")

    return step


def integrate_fixed(step: Callable, q0: NDArray, v0: NDArray, t_final: float, h: float,
                    t0: float = 0.0) -> tuple[NDArray, NDArray, NDArray]:
    """Drive a one-step map at fixed h; returns (t, Q, V)."""
    n = int(round((t_final - t0) / h))
    ts, Q, V = [t0], [np.array(q0, float)], [np.array(v0, float)]
    q, v = Q[0], V[0]
    for k in range(n):
        q, v = step(t0 + k * h, q, v, h)
        ts.append(t0 + (k + 1) * h)
        Q.append(q)
        V.append(v)
    return np.array(ts), np.array(Q), np.array(V)
