"""Smooth substitutes σ(v) for sgn(v), and what their width ε costs.

    tanh:  σ(v) = tanh(v/ε),          σ'(0) = 1/ε
    sqrt:  σ(v) = v / √(v² + ε²),     σ'(0) = 1/ε

ε is the trade between accuracy and stiffness. A joint held by a load f
below the static level no longer sticks: it creeps at the speed where the
smoothed friction balances the load, g(|v|) σ(v) ≈ Fs σ(v) = f for |v| ≪ vs,

    tanh:  v_creep = ε artanh(f/Fs)
    sqrt:  v_creep = ε (f/Fs) / √(1 - (f/Fs)²)

— linear in ε. Near v = 0 the friction acts as a viscous damper of
coefficient Fs/ε, so an explicit integrator needs dt ≲ 2 m ε / Fs (m the
effective inertia of the joint): halving the creep halves the stable step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import FrictionError

KINDS = ("tanh", "sqrt")


@dataclass(frozen=True)
class Smoothing:
    """A smooth sign function of width ``eps`` (kind "tanh" or "sqrt")."""

    kind: str
    eps: float

    def __post_init__(self):
        if self.kind not in KINDS:
            raise FrictionError(f"smoothing kind {self.kind!r} unknown; choose one of {KINDS}")
        e = float(self.eps)
        if not math.isfinite(e) or e <= 0.0:
            raise FrictionError(f"smoothing width eps={self.eps} must be finite and > 0")
        object.__setattr__(self, "eps", e)

    def __call__(self, v: ArrayLike) -> NDArray:
        v = np.asarray(v, dtype=float)
        if self.kind == "tanh":
            return np.tanh(v / self.eps)
        return v / np.sqrt(v * v + self.eps**2)

    def derivative(self, v: ArrayLike) -> NDArray:
        v = np.asarray(v, dtype=float)
        if self.kind == "tanh":
            return (1.0 - np.tanh(v / self.eps) ** 2) / self.eps
        return self.eps**2 / (v * v + self.eps**2) ** 1.5

    def inverse(self, r: ArrayLike) -> NDArray:
        """The v with σ(v) = r, |r| < 1 (used for the creep speed)."""
        r = np.asarray(r, dtype=float)
        if np.any(np.abs(r) >= 1.0):
            raise FrictionError(f"σ(v) = {r} has no solution: |r| must be < 1")
        if self.kind == "tanh":
            return self.eps * np.arctanh(r)
        return self.eps * r / np.sqrt(1.0 - r * r)


def make_smoothing(kind: str | Smoothing | None, eps: float | None = None) -> Smoothing | None:
    """A :class:`Smoothing` from a kind and width; None means the exact sgn."""
    if kind is None or isinstance(kind, Smoothing):
        return kind
    if eps is None:
        raise FrictionError(f"smoothing {kind!r} needs a width eps > 0")
    return Smoothing(kind, eps)


def creep_velocity(law, load: float) -> float:
    """Steady creep speed of a joint under a constant ``load`` with a smoothed law:
    the root v of F(v) = load (F increasing on [0, v] for a holding load below Fs).

    Solved by bisection on the law itself, so the Stribeck decay and the
    viscous term are included; :class:`Smoothing` documents the |v| ≪ vs limit.
    """
    if law.smoothing is None:
        raise FrictionError("an exact (unsmoothed) law does not creep")
    load = float(load)
    sgn = 1.0 if load >= 0 else -1.0
    f = abs(load)
    if f >= law.static_level:
        raise FrictionError(f"load {load} is not below the static level {law.static_level}")
    lo, hi = 0.0, law.smoothing.eps
    while sgn * law(sgn * hi) < f:
        hi *= 2.0
        if hi > 1e12:
            raise FrictionError("no creep equilibrium found")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if sgn * law(sgn * mid) < f:
            lo = mid
        else:
            hi = mid
    return sgn * 0.5 * (lo + hi)
