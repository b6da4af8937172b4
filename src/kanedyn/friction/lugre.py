"""The LuGre dynamic friction model (Canudas de Wit, Olsson, Åström & Lischinsky,
IEEE TAC 40(3), 1995, eqs. 2–5):

    ż = v - σ0 |v| z / g(v)
    F = σ0 z + σ1 ż + σ2 v

z is the mean bristle deflection, σ0 the bristle stiffness, σ1 the bristle
damping, σ2 the viscous coefficient and g the Stribeck curve
``Fc + (Fs - Fc) exp(-(|v|/vs)^δ)``. At constant v the bristle settles to
z_ss = g(v) sgn(v) / σ0, so the steady force is the static Stribeck law
g(v) sgn(v) + σ2 v. For small motions from rest (|z| ≪ g/σ0) ż ≈ v and the
contact is a spring of stiffness σ0 (pre-sliding displacement); a cyclic
motion traces a hysteresis loop in (v, F).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import FrictionError, SolverError
from .laws import Stribeck, _nonneg, _positive


@dataclass(frozen=True)
class LuGre:
    """LuGre parameters; ``curve`` is the Stribeck law g (its Fv is not used: σ2 is)."""

    sigma0: float
    sigma1: float
    Fc: float
    Fs: float
    vs: float
    delta: float = 2.0
    sigma2: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "sigma0", _positive("sigma0", self.sigma0, "LuGre"))
        object.__setattr__(self, "sigma1", _nonneg("sigma1", self.sigma1, "LuGre"))
        object.__setattr__(self, "sigma2", _nonneg("sigma2", self.sigma2, "LuGre"))
        if self.Fc <= 0.0:
            raise FrictionError(f"LuGre: Fc={self.Fc} must be > 0 (g(v) divides ż)")
        Stribeck(self.Fc, self.Fs, self.vs, self.delta)  # validates the curve

    @property
    def curve(self) -> Stribeck:
        return Stribeck(self.Fc, self.Fs, self.vs, self.delta, 0.0)

    #: LuGre is continuous: it has no jump at v = 0
    discontinuous = False

    @property
    def static_level(self) -> float:
        return self.Fs

    def g(self, v: ArrayLike) -> NDArray:
        return self.curve.curve(np.abs(np.asarray(v, dtype=float)))

    def z_dot(self, z: ArrayLike, v: ArrayLike) -> NDArray:
        v = np.asarray(v, dtype=float)
        return v - self.sigma0 * np.abs(v) * np.asarray(z, dtype=float) / self.g(v)

    def force(self, z: ArrayLike, v: ArrayLike) -> NDArray:
        v = np.asarray(v, dtype=float)
        return self.sigma0 * np.asarray(z) + self.sigma1 * self.z_dot(z, v) + self.sigma2 * v

    def steady_state(self, v: ArrayLike) -> NDArray:
        """Bristle deflection z_ss = g(v) sgn(v) / σ0 at constant v."""
        v = np.asarray(v, dtype=float)
        return self.g(v) * np.sign(v) / self.sigma0

    def static_curve(self, v: ArrayLike) -> NDArray:
        """Steady-state force, σ0 z_ss + σ2 v = g(v) sgn(v) + σ2 v (the Stribeck law)."""
        v = np.asarray(v, dtype=float)
        return self.sigma0 * self.steady_state(v) + self.sigma2 * v

    def jacobians(self, z: float, v: float) -> tuple[float, float, float, float]:
        """(∂ż/∂z, ∂ż/∂v, ∂F/∂z, ∂F/∂v) at (z, v); at v = 0 the one-sided slopes of
        |v| are averaged to 0."""
        z, v = float(z), float(v)
        g = float(self.g(v))
        gp = float(self.curve.curve_derivative(abs(v))) if v != 0.0 else 0.0
        s = float(np.sign(v))
        dzdz = -self.sigma0 * abs(v) / g
        # d/dv (|v| / g(|v|)) = s/g - |v| g' s / g²
        dzdv = 1.0 - self.sigma0 * z * (s / g - abs(v) * gp * s / g**2)
        return dzdz, dzdv, self.sigma0 + self.sigma1 * dzdz, self.sigma1 * dzdv + self.sigma2

    def response(self, t: ArrayLike, velocity, z0: float = 0.0, rtol: float = 1e-9,
                 atol: float = 1e-12) -> tuple[NDArray, NDArray]:
        """Bristle state and force along a prescribed motion ``velocity(t)``.

        Returns (z, F) at the times ``t``. The bristle equation is stiff
        (rate σ0 |v| / g), so it is integrated with an implicit method (Radau).
        """
        from scipy.integrate import solve_ivp  # (here: ~1 s of `import kanedyn` at top)
        t = np.asarray(t, dtype=float)
        if t.ndim != 1 or t.size < 2 or np.any(np.diff(t) <= 0):
            raise FrictionError("LuGre.response: t must be an increasing 1-D array")
        rhs = lambda tt, z: self.z_dot(z, velocity(tt))
        sol = solve_ivp(rhs, (t[0], t[-1]), [float(z0)], method="Radau", t_eval=t,
                        rtol=rtol, atol=atol,
                        jac=lambda tt, z: [[self.jacobians(z[0], velocity(tt))[0]]])
        if not sol.success:
            raise SolverError(f"LuGre.response: integration failed: {sol.message}")
        z = sol.y[0]
        v = np.array([velocity(tt) for tt in t])
        return z, self.force(z, v)
