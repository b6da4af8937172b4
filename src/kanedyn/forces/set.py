"""A set of bound force elements, summed: τ = τ_cons(q) + τ_nc(t, q, v)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from ..errors import DivergenceError, ModelError
from .base import ForceElement


class ForceSet:
    """Force elements bound to one system, split into conservative and non-conservative.

    Conservative elements (springs) contribute their potential to the energy E;
    the others do the work ``W_nc = ∫ vᵀ τ_nc dt`` of the energy budget.
    """

    def __init__(self, system, elements: Iterable[ForceElement] | None = None):
        els = list(elements or [])
        for e in els:
            if not isinstance(e, ForceElement):
                raise ModelError(f"forces must be ForceElement instances; got {e!r}")
        bound = [e.bind(system) for e in els]
        self.nv = system.nv
        self.elements = bound
        self.conservative = [e for e in bound if e.conservative]
        self.nonconservative = [e for e in bound if not e.conservative]
        self.discontinuous = any(e.discontinuous for e in bound)

    def __bool__(self) -> bool:
        return bool(self.elements)

    def tau_conservative(self, q: NDArray) -> NDArray:
        """Σ of the conservative forces, ``−∂V_springs/∂q``."""
        tau = np.zeros(self.nv)
        for e in self.conservative:
            tau += e.generalized_force(0.0, q, None)
        if not np.all(np.isfinite(tau)):
            _non_finite(self.conservative, None, q, None, tau)
        return tau

    def tau_nonconservative(self, t: float, q: NDArray, v: NDArray) -> NDArray:
        tau = np.zeros(self.nv)
        for e in self.nonconservative:
            tau += e.generalized_force(t, q, v)
        if not np.all(np.isfinite(tau)):
            _non_finite(self.nonconservative, t, q, v, tau)
        return tau

    def tau(self, t: float, q: NDArray, v: NDArray) -> NDArray:
        return self.tau_conservative(q) + self.tau_nonconservative(t, q, v)

    def potential(self, q: NDArray) -> float:
        return float(sum(e.potential(q) for e in self.conservative))

    def jacobians(self, t: float, q: NDArray, v: NDArray) -> tuple[NDArray, NDArray] | None:
        """(∂τ/∂q in the tangent space, ∂τ/∂v) of the sum, or None as soon as one element
        gives no closed form (implicit methods then fall back to differences)."""
        dq = np.zeros((self.nv, self.nv))
        dv = np.zeros((self.nv, self.nv))
        for e in self.elements:
            jac = e.jacobians(t, q, v)
            if jac is None:
                return None
            dq += jac[0]
            dv += jac[1]
        return dq, dv


def _non_finite(elements, t, q, v, tau):
    names = [type(e).__name__ for e in elements
             if not np.all(np.isfinite(e.generalized_force(t if t is not None else 0.0, q, v)))]
    when = "" if t is None else f" at t = {t:.6g}"
    raise DivergenceError(
        f"force element(s) {names} returned a NaN or infinite τ = {tau}{when}, "
        f"q = {np.array2string(np.asarray(q), precision=4)}"
        + ("" if v is None else f", v = {np.array2string(np.asarray(v), precision=4)}"))
