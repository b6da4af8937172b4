"""Static (memoryless) friction laws F(v) and their derivatives ∂F/∂v.

Sign convention: ``law(v)`` is the friction force *in the sense of the formula*,
with the sign of v, e.g. for the general Stribeck law

    F(v) = [Fc + (Fs - Fc) exp(-(|v|/vs)^δ)] sgn(v) + Fv v

(Armstrong-Hélouvry, Dupont & Canudas de Wit, Automatica 30(7), 1994, eq. 5).
The generalized force a friction element applies to its joint is ``-F(v)``.

Every law is written as ``F(v) = g(|v|) σ(v) + Fv v`` with g the *Stribeck
curve* (g(0) = Fs, g(∞) = Fc) and σ the sign function or a smooth substitute
(see :mod:`kanedyn.friction.smoothing`). All functions accept scalars or
arrays and broadcast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import FrictionError
from .smoothing import Smoothing, make_smoothing


def _finite(name: str, x: float, law: str) -> float:
    try:
        x = float(x)
    except (TypeError, ValueError) as exc:
        raise FrictionError(f"{law}: {name}={x!r} is not a number") from exc
    if not math.isfinite(x):
        raise FrictionError(f"{law}: {name}={x} is not finite")
    return x


def _nonneg(name: str, x: float, law: str) -> float:
    x = _finite(name, x, law)
    if x < 0.0:
        raise FrictionError(f"{law}: {name}={x} is negative; friction levels must be >= 0")
    return x


def _positive(name: str, x: float, law: str) -> float:
    x = _finite(name, x, law)
    if x <= 0.0:
        raise FrictionError(f"{law}: {name}={x} must be > 0")
    return x


def _check_smoothing(sm, law: str) -> None:
    if sm is not None and not isinstance(sm, Smoothing):
        raise FrictionError(f"{law}: smoothing={sm!r} must be None or a Smoothing; "
                            "use law.smoothed(kind, eps)")


def _levels(Fc: float, Fs: float, law: str) -> tuple[float, float]:
    Fc, Fs = _nonneg("Fc", Fc, law), _nonneg("Fs", Fs, law)
    if Fs < Fc:
        raise FrictionError(
            f"{law}: static level Fs={Fs} is below the Coulomb level Fc={Fc}; "
            "this model describes a curve that falls from Fs to Fc (Fs >= Fc)"
        )
    return Fc, Fs


def _check_curve_parameters(law) -> None:
    """Validate (and store as floats) Fc ≤ Fs, vs > 0, δ > 0, Fv ≥ 0 and the smoothing of
    a law with a Stribeck-type curve; errors name the law and the parameter."""
    name = type(law).__name__
    Fc, Fs = _levels(law.Fc, law.Fs, name)
    object.__setattr__(law, "Fc", Fc)
    object.__setattr__(law, "Fs", Fs)
    object.__setattr__(law, "vs", _positive("vs", law.vs, name))
    object.__setattr__(law, "delta", _positive("delta", law.delta, name))
    object.__setattr__(law, "Fv", _nonneg("Fv", law.Fv, name))
    _check_smoothing(law.smoothing, name)


class FrictionLaw:
    """Base class: ``F(v) = g(|v|) σ(v) + Fv v``.

    Subclasses define :meth:`curve` g(s) and :meth:`curve_derivative` g'(s)
    for s = |v| >= 0, and the attributes ``Fc``, ``Fs``, ``Fv``, ``smoothing``.
    """

    Fc: float
    Fs: float
    Fv: float
    smoothing: Smoothing | None

    #: True for laws that jump at v = 0 (exact sgn); exact stick–slip applies to these
    @property
    def discontinuous(self) -> bool:
        return self.smoothing is None

    @property
    def static_level(self) -> float:
        """Largest force the contact holds without sliding (g(0) = Fs)."""
        return self.Fs

    def curve(self, s: NDArray) -> NDArray:
        raise NotImplementedError

    def curve_derivative(self, s: NDArray) -> NDArray:
        raise NotImplementedError

    def sign(self, v: NDArray) -> NDArray:
        return np.sign(v) if self.smoothing is None else self.smoothing(v)

    def __call__(self, v: ArrayLike) -> NDArray | float:
        v = np.asarray(v, dtype=float)
        out = self.curve(np.abs(v)) * self.sign(v) + self.Fv * v
        return out if out.ndim else float(out)

    def derivative(self, v: ArrayLike) -> NDArray | float:
        """∂F/∂v = g'(|v|) sgn(v) σ(v) + g(|v|) σ'(v) + Fv.

        For an exact (unsmoothed) law the Dirac jump at v = 0 is left out: the
        value at v = 0 is the limit from either side when they agree.
        """
        v = np.asarray(v, dtype=float)
        s = np.abs(v)
        sg = np.sign(v)
        if self.smoothing is None:
            slope = np.where(s > 0.0, self.curve_derivative(np.where(s > 0, s, 1.0)), 0.0)
            out = slope + self.Fv
        else:
            sig = self.smoothing(v)
            # g'(s) sgn σ → 0 as v → 0 for every δ > 0 (σ ~ v/ε), so v = 0 contributes 0
            gp = np.where(s > 0.0, self.curve_derivative(np.where(s > 0, s, 1.0)), 0.0)
            out = gp * sg * sig + self.curve(s) * self.smoothing.derivative(v) + self.Fv
        return out if out.ndim else float(out)

    def smoothed(self, kind: str = "tanh", eps: float = 1e-3) -> FrictionLaw:
        """The same law with sgn(v) replaced by a smooth function of width ``eps``."""
        return replace(self, smoothing=make_smoothing(kind, eps))

    def exact(self) -> FrictionLaw:
        """The same law with the exact sign function."""
        return replace(self, smoothing=None)

    def direction(self, d: int) -> FrictionLaw:
        """The law that acts for motion in direction d (symmetric laws: itself)."""
        return self


@dataclass(frozen=True)
class Stribeck(FrictionLaw):
    """General Stribeck law ``g(s) = Fc + (Fs - Fc) exp(-(s/vs)^δ)``.

    δ = 1 is the exponential form of Bo & Pavelescu (1982), δ = 2 the Gaussian
    form of Armstrong-Hélouvry (1991); δ in 0.5..2 covers measured curves.
    """

    Fc: float
    Fs: float
    vs: float
    delta: float = 2.0
    Fv: float = 0.0
    smoothing: Smoothing | None = None

    def __post_init__(self):
        _check_curve_parameters(self)

    def curve(self, s):
        return self.Fc + (self.Fs - self.Fc) * np.exp(-((s / self.vs) ** self.delta))

    def curve_derivative(self, s):
        x = s / self.vs
        return -(self.Fs - self.Fc) * self.delta / self.vs * x ** (self.delta - 1.0) * np.exp(
            -(x**self.delta))

    @classmethod
    def from_breakaway(cls, F_brk: float, v_brk: float, Fc: float, Fv: float = 0.0,
                       smoothing: Smoothing | None = None) -> Stribeck:
        """From Simscape's breakaway parameters (see :class:`SimscapeFriction`)."""
        return SimscapeFriction(F_brk, v_brk, Fc, Fv).to_stribeck(smoothing=smoothing)

    def to_breakaway(self) -> SimscapeFriction:
        """The Simscape block with the same breakaway and Coulomb levels and Stribeck
        velocity (only the Gaussian shape δ = 2 has a counterpart)."""
        return SimscapeFriction.from_stribeck(self)


def exponential(Fc: float, Fs: float, vs: float, Fv: float = 0.0) -> Stribeck:
    """Exponential Stribeck curve, δ = 1 (Bo & Pavelescu, Wear 82, 1982)."""
    return Stribeck(Fc, Fs, vs, 1.0, Fv)


def gaussian(Fc: float, Fs: float, vs: float, Fv: float = 0.0) -> Stribeck:
    """Gaussian Stribeck curve, δ = 2 (Armstrong-Hélouvry, Control of Machines with
    Friction, 1991)."""
    return Stribeck(Fc, Fs, vs, 2.0, Fv)


@dataclass(frozen=True)
class RationalStribeck(FrictionLaw):
    """Rational (Lorentzian) transition ``g(s) = Fc + (Fs - Fc) / (1 + (s/vs)^δ)``.

    δ = 2 is the form of Hess & Soom (J. Tribology 112, 1990). It decays
    algebraically, so it reaches Fc more slowly than the exponential forms.
    """

    Fc: float
    Fs: float
    vs: float
    delta: float = 2.0
    Fv: float = 0.0
    smoothing: Smoothing | None = None

    def __post_init__(self):
        _check_curve_parameters(self)

    def curve(self, s):
        return self.Fc + (self.Fs - self.Fc) / (1.0 + (s / self.vs) ** self.delta)

    def curve_derivative(self, s):
        x = s / self.vs
        xd = x**self.delta
        return -(self.Fs - self.Fc) * self.delta / self.vs * x ** (self.delta - 1.0) / (
            1.0 + xd) ** 2


class _SmoothLaw(FrictionLaw):
    """A law whose own form is continuous through v = 0 (no sgn in it to smooth):
    ``smoothing`` is ``"intrinsic"``, it is never ``discontinuous`` (so exact stick–slip
    refuses it) and :meth:`smoothed` is an error."""

    smoothing = "intrinsic"  # type: ignore[assignment]
    #: what makes it smooth, for the error of :meth:`smoothed`
    _smooth_by = ""

    @property
    def discontinuous(self) -> bool:
        return False

    def smoothed(self, kind="tanh", eps=1e-3):
        raise FrictionError(f"{type(self).__name__} is smooth by construction{self._smooth_by}")


@dataclass(frozen=True)
class TanhStribeck(_SmoothLaw):
    """Continuously differentiable tanh model of Makkar, Dixon, Sawyer & Hu (IEEE TAC 50(10),
    2005, eq. 2):

        F(v) = γ1 (tanh(γ2 v) - tanh(γ3 v)) + γ4 tanh(γ5 v) + γ6 v,   γ2 > γ3.

    The first term is the Stribeck hump, γ4 the Coulomb level, γ6 the viscous
    coefficient. It is smooth by construction (F(0) = 0), so it has no
    stiction: ``discontinuous`` is False and exact stick–slip refuses it.
    """

    gamma1: float
    gamma2: float
    gamma3: float
    gamma4: float
    gamma5: float
    gamma6: float = 0.0

    def __post_init__(self):
        for k in ("gamma1", "gamma4", "gamma6"):
            object.__setattr__(self, k, _nonneg(k, getattr(self, k), "TanhStribeck"))
        for k in ("gamma2", "gamma3", "gamma5"):
            object.__setattr__(self, k, _positive(k, getattr(self, k), "TanhStribeck"))
        if self.gamma2 <= self.gamma3:
            raise FrictionError(
                f"TanhStribeck: gamma2={self.gamma2} must exceed gamma3={self.gamma3} "
                "(the Stribeck hump γ1(tanh γ2 v - tanh γ3 v) must be positive for v > 0)"
            )

    @property
    def Fc(self) -> float:  # type: ignore[override]
        return self.gamma4

    @property
    def Fv(self) -> float:  # type: ignore[override]
        return self.gamma6

    @property
    def Fs(self) -> float:  # type: ignore[override]
        """Peak of the static curve (found numerically on a fine log grid)."""
        s = np.geomspace(1e-6, 1e2, 4001) / min(self.gamma3, self.gamma5)
        return float(np.max(self(s) - self.gamma6 * s))

    def __call__(self, v):
        v = np.asarray(v, dtype=float)
        out = (self.gamma1 * (np.tanh(self.gamma2 * v) - np.tanh(self.gamma3 * v))
               + self.gamma4 * np.tanh(self.gamma5 * v) + self.gamma6 * v)
        return out if out.ndim else float(out)

    def derivative(self, v):
        v = np.asarray(v, dtype=float)
        sech2 = lambda x: 1.0 - np.tanh(x) ** 2
        out = (self.gamma1 * (self.gamma2 * sech2(self.gamma2 * v)
                              - self.gamma3 * sech2(self.gamma3 * v))
               + self.gamma4 * self.gamma5 * sech2(self.gamma5 * v) + self.gamma6)
        return out if out.ndim else float(out)

    _smooth_by = "; it has no sgn to smooth"

    def exact(self):
        raise FrictionError("TanhStribeck has no exact (discontinuous) counterpart")


@dataclass(frozen=True)
class SimscapeFriction(_SmoothLaw):
    """The friction law of Simscape's Translational/Rotational Friction blocks:

        F = √(2e) (F_brk - Fc) exp(-(v/v_St)²) v/v_St + Fc tanh(v/v_Coul) + f v,
        v_St = √2 v_brk,  v_Coul = v_brk / 10

    (MathWorks, Simscape reference, "Translational Friction",
    https://mathworks.com/help/simscape/ref/translationalfriction.html).
    The Stribeck term peaks at v = v_brk with value F_brk - Fc, so the force
    there is ≈ F_brk (+ f v_brk). The law is continuous through 0.

    Conversion to the general form keeps the levels and the Gaussian decay
    rate: Fs = F_brk, vs = v_St = √2 v_brk, δ = 2, Fv = f. The two curves
    then agree to within (F_brk - Fc)·|1 - √(2e) x| e^{-x²} (x = |v|/v_St) away
    from the Coulomb threshold, i.e. exponentially for |v| ≫ v_St; near zero
    the general form jumps to Fs while Simscape's rises continuously.
    """

    F_brk: float
    v_brk: float
    Fc: float
    f: float = 0.0

    def __post_init__(self):
        Fc, Fs = _levels(self.Fc, self.F_brk, "SimscapeFriction")
        object.__setattr__(self, "Fc", Fc)
        object.__setattr__(self, "F_brk", Fs)
        object.__setattr__(self, "v_brk", _positive("v_brk", self.v_brk, "SimscapeFriction"))
        object.__setattr__(self, "f", _nonneg("f", self.f, "SimscapeFriction"))

    @property
    def Fs(self) -> float:  # type: ignore[override]
        return self.F_brk

    @property
    def Fv(self) -> float:  # type: ignore[override]
        return self.f

    @property
    def v_st(self) -> float:
        return math.sqrt(2.0) * self.v_brk

    @property
    def v_coul(self) -> float:
        return self.v_brk / 10.0

    def __call__(self, v):
        v = np.asarray(v, dtype=float)
        x = v / self.v_st
        out = (math.sqrt(2.0 * math.e) * (self.F_brk - self.Fc) * np.exp(-x * x) * x
               + self.Fc * np.tanh(v / self.v_coul) + self.f * v)
        return out if out.ndim else float(out)

    def derivative(self, v):
        v = np.asarray(v, dtype=float)
        x = v / self.v_st
        out = (math.sqrt(2.0 * math.e) * (self.F_brk - self.Fc) * np.exp(-x * x)
               * (1.0 - 2.0 * x * x) / self.v_st
               + self.Fc / self.v_coul * (1.0 - np.tanh(v / self.v_coul) ** 2) + self.f)
        return out if out.ndim else float(out)

    def to_stribeck(self, smoothing: Smoothing | None = None) -> Stribeck:
        return Stribeck(self.Fc, self.F_brk, self.v_st, 2.0, self.f, smoothing)

    @classmethod
    def from_stribeck(cls, law: Stribeck) -> SimscapeFriction:
        if not isinstance(law, Stribeck) or law.delta != 2.0:
            raise FrictionError(
                f"only a Gaussian Stribeck law (delta = 2) maps to Simscape's breakaway form; "
                f"got {law!r}"
            )
        return cls(law.Fs, law.vs / math.sqrt(2.0), law.Fc, law.Fv)

    _smooth_by = " (tanh(v/v_Coul))"

    def exact(self):
        return self.to_stribeck()


@dataclass(frozen=True)
class Asymmetric(FrictionLaw):
    """Direction-dependent friction: ``positive`` acts for v > 0 and ``negative`` for
    v < 0 (both given with positive levels; the sign comes from v).

    Smoothing, if any, must be the same on both sides so that F is continuous
    through 0 (both sides then vanish there)."""

    positive: FrictionLaw
    negative: FrictionLaw

    def __post_init__(self):
        if not (isinstance(self.positive, FrictionLaw) and isinstance(self.negative, FrictionLaw)):
            raise FrictionError("Asymmetric: positive and negative must be friction laws")
        if self.positive.smoothing != self.negative.smoothing:
            raise FrictionError("Asymmetric: both sides need the same smoothing")

    @property
    def smoothing(self):  # type: ignore[override]
        return self.positive.smoothing

    @property
    def discontinuous(self) -> bool:
        return self.positive.discontinuous

    @property
    def Fc(self):  # type: ignore[override]
        return max(self.positive.Fc, self.negative.Fc)

    @property
    def Fs(self):  # type: ignore[override]
        return max(self.positive.Fs, self.negative.Fs)

    @property
    def Fv(self):  # type: ignore[override]
        return max(self.positive.Fv, self.negative.Fv)

    def direction(self, d: int) -> FrictionLaw:
        return self.positive if d > 0 else self.negative

    def __call__(self, v):
        v = np.asarray(v, dtype=float)
        out = np.where(v >= 0.0, self.positive(v), self.negative(v))
        return out if out.ndim else float(out)

    def derivative(self, v):
        v = np.asarray(v, dtype=float)
        out = np.where(v >= 0.0, self.positive.derivative(v), self.negative.derivative(v))
        return out if out.ndim else float(out)

    def smoothed(self, kind="tanh", eps=1e-3):
        return Asymmetric(self.positive.smoothed(kind, eps), self.negative.smoothed(kind, eps))

    def exact(self):
        return Asymmetric(self.positive.exact(), self.negative.exact())
