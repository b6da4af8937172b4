"""Force elements: generalized forces τ(t, q, v) that a simulation adds to the equations.

A force element contributes joint-space forces to ``M v̇ + h = τ``. The
energy budget of a trajectory, ``E(t) - E(0) - W_nc(t)``, needs to know which
elements are conservative (their potential is part of E) and which do work
``W_nc = ∫ vᵀ τ_nc dt``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


class ForceElement:
    """Base class of every force element.

    Subclasses implement :meth:`generalized_force`. A conservative element
    also implements :meth:`potential` (and is then part of the energy, not of
    the non-conservative work). Implicit integrators use :meth:`jacobians`
    when it is available.
    """

    #: True if the element derives from a potential V(q) (springs)
    conservative: bool = False
    #: True if the element can only take energy out (vᵀτ ≤ 0: dampers, friction);
    #: the verification checklist holds it to that
    dissipative: bool = False
    #: True if the force is discontinuous in v (dry friction without smoothing);
    #: methods that cannot handle that refuse the element with a clear error
    discontinuous: bool = False

    def bind(self, system) -> ForceElement:
        """Resolve names (joints, bodies) against a system; returns a bound element.

        The default returns self; elements that refer to joints by name override it.
        """
        return self

    def generalized_force(self, t: float, q: NDArray, v: NDArray) -> NDArray:
        """τ (nv,) this element applies at (t, q, v)."""
        raise NotImplementedError

    def potential(self, q: NDArray) -> float:
        """Potential energy of a conservative element."""
        if self.conservative:
            raise NotImplementedError
        return 0.0

    def jacobians(self, t: float, q: NDArray, v: NDArray) -> tuple[NDArray, NDArray] | None:
        """(∂τ/∂q as nv x nv in the tangent space, ∂τ/∂v), or None if not provided."""
        return None

    def power(self, t: float, q: NDArray, v: NDArray) -> float:
        """Mechanical power ``vᵀ τ`` this element feeds into the system."""
        return float(np.dot(v, self.generalized_force(t, q, v)))
