"""Identification of friction laws from (velocity, force) data.

The estimate is the nonlinear least-squares fit

    p̂ = argmin Σ ρ(r_i(p)²),   r_i = F_i - F(v_i; p)

solved by ``scipy.optimize.least_squares`` (trust-region reflective, box
bounds keep the levels >= 0, Fs >= Fc, vs > 0) with a robust loss ρ
("soft_l1" by default) against outliers. The robust scale is set from the
data: a first plain fit gives residuals whose MAD estimates the noise σ̂, and
the robust fit then uses ``f_scale = 2 σ̂`` so that ordinary noise stays in the
quadratic zone and only outliers are down-weighted.

Uncertainty is the Gauss–Newton covariance at the solution,
Cov = s² (JᵀJ)⁻¹ with J = ∂F/∂p (analytic) and s² = Σ r²/(n - p)
(Seber & Wild, *Nonlinear Regression*, 1989, §2.1), and confidence intervals
p̂ ± t_{n-p, 1-α/2} σ_p. Samples with v = 0 exactly are dropped (a stuck
joint's friction is any value in [-Fs, Fs]; it does not lie on the curve);
their number is reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..dynamics import rnea
from ..errors import FrictionError
from ._joints import ModelSpeeds, joint_speed_index
from .laws import Asymmetric, FrictionLaw, RationalStribeck, Stribeck

#: parameter names of each model for one direction
MODELS: dict[str, tuple[str, ...]] = {
    "stribeck": ("Fc", "Fs", "vs", "delta", "Fv"),
    "gaussian": ("Fc", "Fs", "vs", "Fv"),
    "exponential": ("Fc", "Fs", "vs", "Fv"),
    "rational": ("Fc", "Fs", "vs", "Fv"),
    "coulomb_viscous": ("Fc", "Fv"),
}
LOSSES = ("linear", "soft_l1", "huber", "cauchy", "arctan")


def _law(model: str, p: dict[str, float]) -> FrictionLaw:
    if model == "coulomb_viscous":
        return Stribeck(p["Fc"], p["Fc"], 1.0, 2.0, p["Fv"])
    if model == "rational":
        return RationalStribeck(p["Fc"], p["Fs"], p["vs"], 2.0, p["Fv"])
    delta = {"gaussian": 2.0, "exponential": 1.0}.get(model, p.get("delta"))
    return Stribeck(p["Fc"], p["Fs"], p["vs"], delta, p["Fv"])


def curve_and_jacobian(model: str, p: dict[str, float], s: NDArray) -> tuple[NDArray, NDArray]:
    """(F·sgn v, ∂(F·sgn v)/∂p) as functions of s = |v| for one direction (analytic)."""
    names = MODELS[model]
    J = np.empty((s.size, len(names)))
    Fc, Fv = p["Fc"], p["Fv"]
    if model == "coulomb_viscous":
        J[:, 0], J[:, 1] = 1.0, s
        return Fc + Fv * s, J
    Fs, vs = p["Fs"], p["vs"]
    x = s / vs
    if model == "rational":
        e = 1.0 / (1.0 + x * x)
        de_dvs = 2.0 * x * x / vs * e * e
        de_ddelta = None
    else:
        delta = {"gaussian": 2.0, "exponential": 1.0}.get(model, p.get("delta"))
        xd = x**delta
        e = np.exp(-xd)
        de_dvs = e * delta * xd / vs
        with np.errstate(divide="ignore", invalid="ignore"):
            de_ddelta = np.where(x > 0, -e * xd * np.log(np.where(x > 0, x, 1.0)), 0.0)
    f = Fc + (Fs - Fc) * e + Fv * s
    cols = {"Fc": 1.0 - e, "Fs": e, "vs": (Fs - Fc) * de_dvs, "Fv": s}
    if de_ddelta is not None:
        cols["delta"] = (Fs - Fc) * de_ddelta
    for k, n in enumerate(names):
        J[:, k] = cols[n]
    return f, J


def _line_lad(x: NDArray, y: NDArray) -> tuple[float, float]:
    """Slope and intercept of a line through (x, y) robust to outliers: Theil–Sen
    (median of pairwise slopes; Sen, JASA 63, 1968)."""
    i, j = np.triu_indices(x.size, 1)
    dx = x[j] - x[i]
    ok = dx != 0
    slope = float(np.median((y[j] - y[i])[ok] / dx[ok]))
    return slope, float(np.median(y - slope * x))


def _initial_guess(model: str, s: NDArray, f: NDArray) -> dict[str, float]:
    """Guesses from one side's data: Fc, Fv from a line through the fast half, Fs from
    the slowest samples, vs where the excess over the line has fallen to 1/e."""
    order = np.argsort(s)
    s, f = s[order], f[order]
    fast = s >= np.median(s)
    if np.ptp(s[fast]) > 0:
        Fv, Fc = _line_lad(s[fast], f[fast])
    else:
        Fv, Fc = 0.0, float(np.mean(f[fast]))
    Fv, Fc = max(float(Fv), 0.0), max(float(Fc), 0.0)
    p = {"Fc": Fc, "Fv": Fv}
    if model == "coulomb_viscous":
        return p
    nslow = max(3, s.size // 10)
    Fs = max(float(np.median(f[:nslow])), Fc)  # median: one outlier must not set Fs
    excess = f - (Fc + Fv * s)
    target = (Fs - Fc) / math.e
    below = np.nonzero(excess < target)[0]
    vs = float(s[below[0]]) if below.size and Fs > Fc else float(np.median(s)) / 4.0
    p.update(Fs=Fs, vs=max(vs, float(s[s > 0].min())))
    if model == "stribeck":
        p["delta"] = 1.5
    return p


@dataclass
class FitResult:
    """The estimate and its uncertainty. ``params`` etc. are dicts keyed by name
    (suffix ``_pos`` / ``_neg`` for an asymmetric fit)."""

    model: str
    loss: str
    params: dict[str, float]
    stderr: dict[str, float]
    ci: dict[str, tuple[float, float]]
    cov: NDArray
    names: list[str]
    law: FrictionLaw
    v: NDArray
    F: NDArray
    residuals: NDArray
    confidence: float
    nfev: int
    dropped: int = 0
    f_scale: float = 1.0
    notes: list[str] = field(default_factory=list)

    @property
    def rms(self) -> float:
        return float(np.sqrt(np.mean(self.residuals**2)))

    def report(self) -> str:
        """Plain-text table of estimates, standard errors, intervals and residuals."""
        lvl = int(round(100 * self.confidence))
        lines = [
            f"friction fit: model={self.model!r}, loss={self.loss!r}"
            + ("" if self.loss == "linear" else f" (f_scale={self.f_scale:.3g})") + ", "
            f"{self.residuals.size} samples"
            + (f", {self.dropped} at v = 0 dropped" if self.dropped else ""),
            f"{'param':>10} {'estimate':>13} {'std err':>11} {f'{lvl}% interval':>29}",
        ]
        for n in self.names:
            lo, hi = self.ci[n]
            lines.append(f"{n:>10} {self.params[n]:13.6g} {self.stderr[n]:11.3g} "
                         f"[{lo:13.6g}, {hi:13.6g}]")
        r = self.residuals
        lines.append(f"residuals: rms {self.rms:.4g}, max |r| {np.max(np.abs(r)):.4g}, "
                     f"mean {np.mean(r):.3g}; function evaluations {self.nfev}")
        lines += [f"note: {t}" for t in self.notes]
        return "\n".join(lines)

    def plot(self, path: str) -> str:
        """Data and fitted curve (top) and residuals (bottom), written to ``path``."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        vv = np.linspace(self.v.min(), self.v.max(), 2000)
        vv = vv[vv != 0]
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(7, 6), sharex=True,
                                     gridspec_kw={"height_ratios": [3, 1]})
        a1.plot(self.v, self.F, ".", ms=3, alpha=0.6, label="data")
        a1.plot(vv, self.law(vv), "-", lw=1.5, label=f"fit ({self.model})")
        a1.set_ylabel("friction force / torque")
        a1.legend()
        a1.grid(alpha=0.3)
        a2.plot(self.v, self.residuals, ".", ms=3)
        a2.axhline(0.0, color="k", lw=0.8)
        a2.set_xlabel("velocity")
        a2.set_ylabel("residual")
        a2.grid(alpha=0.3)
        fig.tight_layout()
        tmp = f"{path}.tmp.png"
        fig.savefig(tmp, dpi=120)
        plt.close(fig)
        import os

        os.replace(tmp, path)  # nothing half-written is left at `path`
        return path


def _check_data(v, F) -> tuple[NDArray, NDArray, int]:
    v = np.asarray(v, dtype=float).ravel()
    F = np.asarray(F, dtype=float).ravel()
    if v.shape != F.shape:
        raise FrictionError(f"fit: v has {v.size} samples but F has {F.size}")
    if not (np.all(np.isfinite(v)) and np.all(np.isfinite(F))):
        raise FrictionError("fit: the data contain NaN or infinity")
    if v.size and np.all(v == 0.0):
        raise FrictionError("fit: all velocities are zero; friction cannot be identified "
                            "from a joint at rest")
    keep = v != 0.0
    return v[keep], F[keep], int(np.count_nonzero(~keep))


def fit(v: ArrayLike, F: ArrayLike, model: str = "stribeck", loss: str = "soft_l1",
        asymmetric: bool = False, confidence: float = 0.95, f_scale: float | None = None,
        p0: dict[str, float] | None = None, max_nfev: int = 2000) -> FitResult:
    """Fit a friction law to samples (v_i, F_i), F the friction force (sign of v).

    ``model``: one of :data:`MODELS`. ``asymmetric=True`` fits separate
    parameters for v > 0 (suffix ``_pos``) and v < 0 (``_neg``). ``p0``
    overrides the automatic initial guess. Raises
    :class:`~kanedyn.errors.FrictionError` on bad data or when the solver does
    not converge (no parameters are returned then).
    """
    if model not in MODELS:
        raise FrictionError(f"fit: model {model!r} unknown; choose one of {sorted(MODELS)}")
    if loss not in LOSSES:
        raise FrictionError(f"fit: loss {loss!r} unknown; choose one of {LOSSES}")
    if not 0.0 < confidence < 1.0:
        raise FrictionError(f"fit: confidence={confidence} must lie in (0, 1)")
    v, F, dropped = _check_data(v, F)
    base = MODELS[model]
    sides = (1, -1) if asymmetric else (0,)
    npar = len(base) * len(sides)
    pos, neg = v > 0, v < 0
    for name, m in (("positive", pos), ("negative", neg)):
        need = len(base) + 1 if asymmetric else 2
        if np.count_nonzero(m) < need:
            raise FrictionError(
                f"fit: only {np.count_nonzero(m)} samples at {name} speed; need at least "
                f"{need} on each side (a one-sided experiment cannot tell friction from a "
                "torque offset)"
            )
    if v.size < npar + 2:
        raise FrictionError(f"fit: {v.size} samples are too few for {npar} parameters")
    names = [n if s == 0 else f"{n}_{'pos' if s > 0 else 'neg'}" for s in sides for n in base]

    s_abs, sg = np.abs(v), np.sign(v)
    masks = [np.ones(v.size, bool)] if not asymmetric else [pos, neg]
    # theta per side: (Fc, dF = Fs - Fc, vs, delta, Fv) so that box bounds give Fs >= Fc
    guess: dict[str, float] = {}
    for s, m in zip(sides, masks, strict=True):
        g = _initial_guess(model, s_abs[m], F[m] * sg[m])
        for n in base:
            guess[n if s == 0 else f"{n}_{'pos' if s > 0 else 'neg'}"] = g[n]
    if p0:
        unknown = set(p0) - set(names)
        if unknown:
            raise FrictionError(f"fit: p0 names {sorted(unknown)} not in {names}")
        guess.update({k: float(x) for k, x in p0.items()})

    def to_theta(p):
        th = []
        for n in names:
            b = n.split("_")[0]
            if b == "Fs":
                th.append(p[n] - p[n.replace("Fs", "Fc")])
            else:
                th.append(p[n])
        return np.array(th)

    def to_params(th):
        p = dict(zip(names, th, strict=True))
        for n in names:
            if n.split("_")[0] == "Fs":
                p[n] = th[names.index(n)] + p[n.replace("Fs", "Fc")]
        return p

    smin = float(s_abs.min())
    lo = np.array([{"vs": smin * 1e-3, "delta": 0.2}.get(n.split("_")[0], 0.0) for n in names])
    hi = np.array([{"delta": 5.0}.get(n.split("_")[0], np.inf) for n in names])
    theta0 = np.clip(to_theta(guess), lo + 1e-12 * (1 + np.abs(lo)), hi - 1e-9)

    def sides_eval(p):
        f = np.empty(v.size)
        J = np.zeros((v.size, npar))
        for k, (s, m) in enumerate(zip(sides, masks, strict=True)):
            sub = {n: p[n if s == 0 else f"{n}_{'pos' if s > 0 else 'neg'}"] for n in base}
            fk, Jk = curve_and_jacobian(model, sub, s_abs[m])
            f[m] = fk * sg[m]
            J[np.ix_(m, range(k * len(base), (k + 1) * len(base)))] = Jk * sg[m][:, None]
        return f, J

    def resid(th):
        return F - sides_eval(to_params(th))[0]

    def jac_theta(th):
        p = to_params(th)
        _, J = sides_eval(p)
        # chain rule for Fs = Fc + dF: ∂/∂Fc|θ = ∂/∂Fc + ∂/∂Fs, ∂/∂dF = ∂/∂Fs
        Jt = J.copy()
        for i, n in enumerate(names):
            if n.split("_")[0] == "Fs":
                Jt[:, names.index(n.replace("Fs", "Fc"))] += J[:, i]
        return -Jt

    notes = []
    def robust_scale(r):
        mad = float(np.median(np.abs(r - np.median(r))))
        return max(2.0 * 1.4826 * mad, 1e-12 * max(1.0, float(np.max(np.abs(F)))))

    from scipy.optimize import least_squares  # (here: ~1 s of `import kanedyn` at top)

    try:
        if loss == "linear":
            first = sol = least_squares(resid, theta0, jac=jac_theta, bounds=(lo, hi),
                                        method="trf", x_scale="jac", max_nfev=max_nfev)
            scale = 1.0 if f_scale is None else f_scale
        else:
            # stage 1 with the scale of the residuals at the guess, stage 2 with 2 σ̂
            # (σ̂ from the MAD of stage 1): outliers never get a quadratic pull
            scale = robust_scale(resid(theta0)) if f_scale is None else f_scale
            first = least_squares(resid, theta0, jac=jac_theta, bounds=(lo, hi), method="trf",
                                  x_scale="jac", loss=loss, f_scale=scale, max_nfev=max_nfev)
            if f_scale is None:
                scale = robust_scale(first.fun)
            sol = least_squares(resid, first.x, jac=jac_theta, bounds=(lo, hi), method="trf",
                                x_scale="jac", loss=loss, f_scale=scale, max_nfev=max_nfev)
    except (ValueError, np.linalg.LinAlgError) as exc:
        raise FrictionError(f"fit: the solver failed: {exc}") from exc
    if first.status <= 0:
        sol = first
    if sol.status <= 0 or not np.all(np.isfinite(sol.x)):
        raise FrictionError(
            f"fit: least_squares did not converge ({sol.message}; {sol.nfev} evaluations); "
            "no parameters returned — try p0=..., another model or more data"
        )
    params = to_params(sol.x)
    r = F - sides_eval(params)[0]
    _, J = sides_eval(params)
    dof = v.size - npar
    s2 = float(r @ r) / dof
    try:
        cov = s2 * np.linalg.inv(J.T @ J)
        if not np.all(np.isfinite(cov)) or np.any(np.diag(cov) < 0):
            raise np.linalg.LinAlgError
    except np.linalg.LinAlgError:
        cov = np.full((npar, npar), np.inf)
        notes.append("JᵀJ is singular: some parameters are not identifiable from these data")
    at_bound = [n for n, x, a, b in zip(names, sol.x, lo, hi, strict=True)
                if np.isclose(x, a, rtol=0, atol=1e-9 * (1 + abs(a))) or np.isclose(x, b)]
    if at_bound:
        notes.append(f"at a bound (interval not meaningful): {at_bound}")
    se = np.sqrt(np.diag(cov))
    from scipy import stats  # here: importing scipy.stats costs 0.5 s at kanedyn's import

    tq = float(stats.t.ppf(0.5 + confidence / 2.0, dof))
    stderr = dict(zip(names, map(float, se), strict=True))
    ci = {n: (params[n] - tq * stderr[n], params[n] + tq * stderr[n]) for n in names}
    if asymmetric:
        sub = lambda s: {n: params[f"{n}_{s}"] for n in base}
        law: FrictionLaw = Asymmetric(_law(model, sub("pos")), _law(model, sub("neg")))
    else:
        law = _law(model, params)
    return FitResult(model, loss, {n: float(x) for n, x in params.items()}, stderr, ci, cov,
                     names, law, v, F, r, confidence, int(first.nfev + sol.nfev), dropped,
                     float(scale), notes)


def joint_friction_samples(model, q: ArrayLike, v: ArrayLike, a: ArrayLike, tau: ArrayLike,
                           joint) -> tuple[NDArray, NDArray]:
    """(v_j, F_j) with the rigid-body part removed through the model's inverse dynamics:

        F_j = τ_j - RNEA(q, v, a)_j

    (Featherstone 2008, Table 5.1): the measured joint torque minus the torque
    that inertia, Coriolis and gravity need leaves the friction torque.
    """
    q, v, a, tau = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, v, a, tau))
    if not (q.shape[0] == v.shape[0] == a.shape[0] == tau.shape[0]):
        raise FrictionError(
            f"joint data: q, v, a, tau have {q.shape[0]}, {v.shape[0]}, {a.shape[0]}, "
            f"{tau.shape[0]} samples; they must match"
        )
    j = joint_speed_index(ModelSpeeds(model), joint)
    rigid = np.atleast_2d(rnea(model, q, v, a))
    return v[:, j], tau[:, j] - rigid[:, j]


def fit_joint(model, q: ArrayLike, v: ArrayLike, a: ArrayLike, tau: ArrayLike, joint, /,
              **kwargs) -> FitResult:
    """Fit the friction of one joint of a robot from (q, v, a, τ) samples, with gravity
    and inertia compensated by RNEA (see :func:`joint_friction_samples`); other keyword
    arguments go to :func:`fit`."""
    vj, Fj = joint_friction_samples(model, q, v, a, tau, joint)
    return fit(vj, Fj, **kwargs)


def fit_trajectory(model, t: ArrayLike, q: ArrayLike, v: ArrayLike, tau: ArrayLike, joint, /,
                   window: int = 9, polyorder: int = 3, v_min: float = 0.0,
                   **kwargs) -> FitResult:
    """Fit friction from a free (non-constant-velocity) trajectory through the dynamics.

    The accelerations come from a Savitzky–Golay derivative of the sampled v
    (window ``window`` samples, degree ``polyorder``; Savitzky & Golay, Anal.
    Chem. 36, 1964), then F_j = τ_j - RNEA(q, v, a)_j is fitted as in
    :func:`fit_joint`. Samples with |v_j| <= v_min or a sign change of v_j,
    and those whose window touches one, are left out: while the joint is stuck
    the friction is only bounded by Fs, and a window across a stick–slip switch
    or a reversal (where the friction jumps by up to 2 Fs) smears the
    acceleration. The time grid must be uniform.
    """
    from scipy.signal import savgol_filter

    t = np.asarray(t, dtype=float).ravel()
    v = np.atleast_2d(np.asarray(v, dtype=float))
    if t.size != v.shape[0]:
        raise FrictionError(f"fit_trajectory: {t.size} times but {v.shape[0]} velocity samples")
    if t.size < window + 2:
        raise FrictionError(f"fit_trajectory: {t.size} samples are too few for window {window}")
    dt = np.diff(t)
    if np.any(dt <= 0) or np.ptp(dt) > 1e-6 * np.mean(dt):
        raise FrictionError("fit_trajectory: the time grid must be increasing and uniform")
    a = savgol_filter(v, window, polyorder, deriv=1, delta=float(np.mean(dt)), axis=0)
    j = joint_speed_index(ModelSpeeds(model), joint)
    slow = np.abs(v[:, j]) <= v_min
    # the friction jumps where v_j changes sign: v has a kink, a window across it smears a
    slow[1:] |= np.sign(v[1:, j]) != np.sign(v[:-1, j])
    near = np.convolve(slow.astype(float), np.ones(window), mode="same") > 0
    half = window // 2
    keep = ~near
    keep[:half] = keep[-half:] = False  # savgol edges are extrapolations
    if not np.any(keep):
        raise FrictionError("fit_trajectory: no sample is away from rest; nothing to fit")
    q = np.atleast_2d(np.asarray(q, dtype=float))
    tau = np.atleast_2d(np.asarray(tau, dtype=float))
    return fit_joint(model, q[keep], v[keep], a[keep], tau[keep], joint, **kwargs)
