"""Excitation design: a periodic trajectory that makes the base parameters well
determined, within the joints' limits (Swevers, Ganseman, Tükel, De Schutter & Van
Brussel 1997; Gautier & Khalil 1992).

Each joint follows a finite Fourier series of base pulsation ω_f = 2π / period,

    q_j(t) = q0_j + Σ_{l=1..H} a_jl/(ω_f l) sin(ω_f l t) - b_jl/(ω_f l) cos(ω_f l t)
    q̇_j(t) = Σ_l a_jl cos(ω_f l t) + b_jl sin(ω_f l t)
    q̈_j(t) = Σ_l ω_f l (b_jl cos(ω_f l t) - a_jl sin(ω_f l t))

periodic, so that several periods can be averaged and differentiated exactly. With
c_jl = √(a_jl² + b_jl²), every sample of the trajectory keeps |q_j - q0_j| ≤ Σ c_jl/(ω_f l),
|q̇_j| ≤ Σ c_jl and |q̈_j| ≤ Σ ω_f l c_jl; holding these bounds inside the limits holds
the limits at every instant, not only at the samples. The coefficients and q0 minimise
``log cond(W_b D⁻¹)``, W_b the base regressor stacked over ``samples`` instants of one
period and D its column norms (:func:`_log_condition`), by SLSQP with the bounds as
inequality constraints, from a random start scaled to half the limits; SLSQP's last
iterate is scaled back inside the bounds (its constraints hold to a tolerance only), and
the best feasible point met is returned.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import IdentificationError
from ..model import Model
from .base import BaseParameters, base_parameters
from .regressor import joint_torque_regressor


@dataclass(frozen=True)
class Excitation:
    """A designed trajectory: ``q0`` (nv), Fourier coefficients ``a``, ``b`` (nv × H) of
    the speeds, its ``period``; ``condition_number`` of the stacked base regressor, its
    columns scaled to unit norm, at the design's samples and ``initial_condition_number``
    at the start of the optimisation; ``limits`` the (q_lo, q_hi, v_max, a_max) per
    joint it respects."""

    q0: NDArray
    a: NDArray
    b: NDArray
    period: float
    condition_number: float
    initial_condition_number: float
    limits: NDArray
    iterations: int

    def trajectory(self, t: ArrayLike) -> tuple[NDArray, NDArray, NDArray]:
        """(q, q̇, q̈) at the times t (each len(t) × nv), from the series (module doc)."""
        return _series(self.q0, self.a, self.b, 2 * np.pi / self.period,
                       np.asarray(t, dtype=float))

    def sample(self, rate: float, periods: int = 1) -> tuple[NDArray, ...]:
        """(t, q, q̇, q̈) sampled at ``rate`` over ``periods`` periods."""
        t = np.arange(0.0, periods * self.period, 1.0 / rate)
        return (t, *self.trajectory(t))


def _series(q0, a, b, wf, t):
    harm = wf * np.arange(1, a.shape[1] + 1)  # ω_f l
    s, c = np.sin(np.outer(t, harm)), np.cos(np.outer(t, harm))  # (T, H)
    q = q0 + s @ (a / harm).T - c @ (b / harm).T
    v = c @ a.T + s @ b.T
    acc = c @ (b * harm).T - s @ (a * harm).T
    return q, v, acc


def _log_condition(W: NDArray) -> float:
    """log cond(W D⁻¹), D the column norms of W: the condition number of the regressor with
    its columns equilibrated (inf where a column or a direction is not excited).

    Unscaled, cond(W_b) depends on the units and the size of each parameter (a link's
    mass against a wrist's inertia in kg m²), and the design chases the column norms
    rather than the directions no column excites. Equilibrated, it is independent of
    any scaling of the base parameters, and among all diagonal scalings of the columns
    it is within √p of the smallest (van der Sluis 1969; Higham, *Accuracy and Stability of
    Numerical Algorithms*, 2nd ed., thm. 7.5)."""
    norms = np.linalg.norm(W, axis=0)
    if not np.all(norms > 0):
        return np.inf
    s = np.linalg.svd(W / norms, compute_uv=False)
    return float(np.log(s[0] / s[-1])) if s[-1] > 0 else np.inf


def _limits(model: Model, q_limits, v_limits, a_limits) -> NDArray:
    """(nv, 4): q_lo, q_hi, v_max, a_max per joint, the model's URDF limits where not
    given."""
    nv = model.nv
    out = np.empty((nv, 4))
    for j, b in enumerate(model.bodies):
        lim = b.joint.limits
        given = {"q": None if q_limits is None else np.asarray(q_limits, float)[j],
                 "v": None if v_limits is None else np.atleast_1d(np.asarray(v_limits, float)),
                 "a": None if a_limits is None else np.atleast_1d(np.asarray(a_limits, float))}
        if given["q"] is not None:
            out[j, :2] = given["q"]
        elif lim.lower is not None and lim.upper is not None:
            out[j, :2] = lim.lower, lim.upper
        else:
            raise IdentificationError(f"excitation: joint {b.joint.name!r} has no position "
                                      "limits; give q_limits=[(lo, hi), ...]")
        if given["v"] is not None:
            out[j, 2] = given["v"][j if given["v"].size > 1 else 0]
        elif lim.velocity is not None:
            out[j, 2] = lim.velocity
        else:
            raise IdentificationError(f"excitation: joint {b.joint.name!r} has no velocity "
                                      "limit; give v_limits=")
        if given["a"] is None:
            raise IdentificationError("excitation: give a_limits= (rad/s² or m/s² per joint, "
                                      "or one for all): a URDF has no acceleration limits")
        out[j, 3] = given["a"][j if given["a"].size > 1 else 0]
        if not (out[j, 0] < out[j, 1] and out[j, 2] > 0 and out[j, 3] > 0):
            raise IdentificationError(f"excitation: joint {b.joint.name!r}: limits "
                                      f"{out[j].tolist()} are empty")
    return out


def excitation(model: Model, *, period: float = 10.0, harmonics: int = 5,
               samples: int = 100, q_limits=None, v_limits=None, a_limits=None,
               base: BaseParameters | None = None, seed: int = 0,
               max_iter: int = 100) -> Excitation:
    """An optimised excitation trajectory (module doc) for a model whose joints are all
    one-speed with additive coordinates (revolute, prismatic, helical).

    ``q_limits`` ((lo, hi) per joint) and ``v_limits`` default to the model's joint
    limits (URDF); ``a_limits`` must be given (per joint, or one value)."""
    from scipy.optimize import minimize  # (here: ~1 s of `import kanedyn` at top)
    if model.nq != model.nv or any(b.joint.nv != 1 for b in model.bodies):
        raise IdentificationError("excitation: every joint must have one speed and an "
                                  "additive coordinate (revolute, prismatic, helical)")
    if harmonics < 1 or samples < 2 or period <= 0:
        raise IdentificationError(f"excitation: harmonics={harmonics}, samples={samples}, "
                                  f"period={period} must be positive (samples at least 2)")
    L = _limits(model, q_limits, v_limits, a_limits)
    base = base if base is not None else base_parameters(model)
    nv, H = model.nv, harmonics
    wf = 2 * np.pi / period
    harm = wf * np.arange(1, H + 1)
    t = np.arange(samples) * (period / samples)

    def unpack(x):
        return x[:nv], x[nv:nv + nv * H].reshape(nv, H), x[nv + nv * H:].reshape(nv, H)

    def constraints(x, eps=1e-12):
        """The bounds' slack (≥ 0 where they hold); ``eps`` smooths √ at zero for SLSQP's
        gradients, the feasibility checks use the exact bounds (eps = 0)."""
        q0, a, b = unpack(x)
        c = np.sqrt(a * a + b * b + eps)
        Qb, Vb, Ab = (c / harm).sum(1), c.sum(1), (c * harm).sum(1)
        return np.concatenate([q0 - Qb - L[:, 0], L[:, 1] - q0 - Qb, L[:, 2] - Vb,
                               L[:, 3] - Ab])

    best = {"f": np.inf, "x": None}

    def objective(x):
        q, v, acc = _series(*unpack(x), wf, t)
        f = _log_condition(base.regressor(joint_torque_regressor(model, q, v, acc))
                           .reshape(-1, base.rank))
        if f < best["f"] and np.all(constraints(x, 0.0) >= 0.0):
            best["f"], best["x"] = f, x.copy()
        return f

    rng = np.random.default_rng(seed)
    a0, b0 = rng.normal(size=(2, nv, H)) / np.arange(1, H + 1)
    q0 = L[:, :2].mean(1)
    c = np.sqrt(a0 * a0 + b0 * b0)
    room = np.min(np.column_stack([0.5 * (L[:, 1] - L[:, 0]) / (c / harm).sum(1),
                                   L[:, 2] / c.sum(1), L[:, 3] / (c * harm).sum(1)]), axis=1)
    x0 = np.concatenate([q0, (a0 * 0.5 * room[:, None]).ravel(),
                         (b0 * 0.5 * room[:, None]).ravel()])
    f0 = objective(x0)
    if not np.isfinite(f0):
        raise IdentificationError("excitation: the starting trajectory does not excite every "
                                  "base parameter; use more samples or harmonics")
    def feasible(x):
        """x with each joint's coefficients scaled down just enough (and q0 moved) that
        its bounds hold exactly: SLSQP's iterates may lie outside by its tolerance."""
        q0, a, b = (y.copy() for y in unpack(x))
        c = np.sqrt(a * a + b * b)
        Qb, Vb, Ab = (c / harm).sum(1), c.sum(1), (c * harm).sum(1)
        half = 0.5 * (L[:, 1] - L[:, 0])
        with np.errstate(divide="ignore"):
            s = np.minimum.reduce([np.ones(nv), half / Qb, L[:, 2] / Vb, L[:, 3] / Ab])
        s = s * (1.0 - 1e-12)
        a, b, Qb = a * s[:, None], b * s[:, None], Qb * s
        q0 = np.clip(q0, L[:, 0] + Qb, L[:, 1] - Qb)
        return np.concatenate([q0, a.ravel(), b.ravel()])

    sol = minimize(objective, x0, method="SLSQP", constraints=[{"type": "ineq",
                                                                "fun": constraints}],
                   options={"maxiter": max_iter, "ftol": 1e-6})
    objective(feasible(sol.x))  # the final point, made feasible, counts
    q0, a, b = unpack(best["x"])
    return Excitation(q0, a, b, float(period), float(np.exp(best["f"])), float(np.exp(f0)),
                      L, int(sol.nit))
