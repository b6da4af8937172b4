"""The compiled form of the smoothed Stribeck law (numba), for compiled loops.

:class:`~kanedyn.friction.laws.Stribeck` (numpy) is the reference; this module is
its one compiled form, called by every compiled loop that evaluates a friction
force (the force rows of :mod:`kanedyn.forces.kernel` in the RK4, batch and AVF loops,
and the time-stepping of :mod:`kanedyn.sim.time_stepping_compiled`), so the law and its
smoothing are written once in compiled code:

    F(v) = [Fc + (Fs - Fc) exp(-(|v|/vs)^δ)] σ(v) + Fv v

(Armstrong-Hélouvry, Dupont & Canudas de Wit, Automatica 30(7), 1994, eq. 5),
with σ the smooth sign of :mod:`kanedyn.friction.smoothing`:
σ(v) = tanh(v/ε) (``SMOOTH_TANH``) or v / √(v² + ε²) (``SMOOTH_SQRT``), and its
derivative ∂F/∂v (for linearly implicit steps and Newton matrices). The exact law
(σ = sgn) has its curve g here (:func:`stribeck_curve`), the level of a sliding joint in
the time-stepping's complementarity problem, which handles v = 0 itself.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..errors import FrictionError

# No compile key here (dynamics/_compiled.py): these kernels compile in nothing from
# another file, so numba's own digest of this file keeps their cache true; a module that
# compiles them in (sim/batch.py) keys its cache with this file's source.

#: codes of the smooth sign functions, in the order of ``smoothing.KINDS``
SMOOTH_TANH, SMOOTH_SQRT = 0, 1
SMOOTHING_CODES = {"tanh": SMOOTH_TANH, "sqrt": SMOOTH_SQRT}


@njit(cache=True, _nrt=False)
def smooth_sign(v: float, eps: float, kind: int) -> float:
    """σ(v) of width ε: tanh(v/ε) or v / √(v² + ε²) (``kind`` a ``SMOOTH_*`` code)."""
    if kind == SMOOTH_TANH:
        return np.tanh(v / eps)
    return v / np.sqrt(v * v + eps * eps)


@njit(cache=True, _nrt=False)
def stribeck_force(v: float, Fc: float, Fs: float, vs: float, delta: float, Fv: float,
                   eps: float, kind: int) -> float:
    """F(v) of the smoothed Stribeck law, in the sense of the formula (the force on the
    joint is -F(v)); the parameters as in :class:`~kanedyn.friction.laws.Stribeck`."""
    curve = Fc + (Fs - Fc) * np.exp(-(abs(v) / vs) ** delta)
    return curve * smooth_sign(v, eps, kind) + Fv * v


def stribeck_parameters(law) -> tuple[float, float, float, float, float, float, int]:
    """(Fc, Fs, vs, δ, Fv, ε, smoothing code) of a smoothed
    :class:`~kanedyn.friction.laws.Stribeck` law, the arguments of :func:`stribeck_force`
    after v; a law of another type or an unsmoothed one has no compiled form here."""
    from .laws import Stribeck

    if type(law) is not Stribeck:
        raise FrictionError(f"{law!r} has no compiled form: only a smoothed Stribeck law has "
                            "(its subclasses and the other laws are evaluated in numpy)")
    sm = law.smoothing
    if sm is None:
        raise FrictionError(f"{law!r} is exact (sgn): only a smoothed law has a compiled form; "
                            "use law.smoothed(kind, eps)")
    if sm.kind not in SMOOTHING_CODES:
        raise FrictionError(f"smoothing {sm.kind!r} of {law!r} has no compiled form "
                            f"(one of {tuple(SMOOTHING_CODES)})")
    return (law.Fc, law.Fs, law.vs, law.delta, law.Fv, sm.eps, SMOOTHING_CODES[sm.kind])


@njit(cache=True, _nrt=False)
def smooth_sign_derivative(v: float, eps: float, kind: int) -> float:
    """σ'(v): (1 − tanh²(v/ε)) / ε or ε² / (v² + ε²)^{3/2}."""
    if kind == SMOOTH_TANH:
        th = np.tanh(v / eps)
        return (1.0 - th * th) / eps
    return eps * eps / (v * v + eps * eps) ** 1.5


@njit(cache=True, _nrt=False)
def stribeck_curve(s: float, Fc: float, Fs: float, vs: float, delta: float) -> float:
    """g(s) = Fc + (Fs − Fc) exp(−(s/vs)^δ), the level of the law at the speed s ≥ 0."""
    return Fc + (Fs - Fc) * np.exp(-((s / vs) ** delta))


@njit(cache=True, _nrt=False)
def stribeck_derivative(v: float, Fc: float, Fs: float, vs: float, delta: float, Fv: float,
                        eps: float, kind: int) -> float:
    """∂F/∂v of :func:`stribeck_force`: g'(|v|) sgn(v) σ(v) + g(|v|) σ'(v) + Fv, with
    g'(s) = −(Fs − Fc) δ/vs (s/vs)^{δ−1} exp(−(s/vs)^δ) (0 at v = 0, as
    :meth:`~kanedyn.friction.laws.FrictionLaw.derivative`)."""
    s = abs(v)
    out = stribeck_curve(s, Fc, Fs, vs, delta) * smooth_sign_derivative(v, eps, kind) + Fv
    if s > 0.0:
        x = s / vs
        gp = -(Fs - Fc) * delta / vs * x ** (delta - 1.0) * np.exp(-(x ** delta))
        out += gp * np.sign(v) * smooth_sign(v, eps, kind)
    return out
