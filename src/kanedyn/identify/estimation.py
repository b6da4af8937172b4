"""The joint fit: base inertial parameters and joint friction together, with their
uncertainty (Khalil & Dombre 2002, ch. 12; Gautier 1997; Swevers et al. 2007).

The measured joint forces of N samples are, per joint j and sample k,

    τ_kj - J_r,j a_kj = Y_b(q_k, v_k, a_k)[j] π_b + F_j(v_kj; φ_j) + ε_kj

(the rotor inertia J_r of the model taken as known), with friction

- ``"viscous+coulomb"``: ``F_j = F_c sgn v + F_v v`` — linear in (F_c, F_v);
- ``"stribeck"``: ``F_j = sgn v [F_c + (F_s - F_c) exp(-|v/v_s|^δ)] + F_v v`` (the law
  :class:`kanedyn.friction.Stribeck`), linear in (F_c, F_s, F_v) for given (v_s, δ);
- ``"none"``.

Friction acts on every one-speed joint (revolute, prismatic, helical; the joints of
``friction_joints`` when given). The linear parameters x = (π_b, F_c, F_s, F_v, ...)
come from linear least squares; the Stribeck pairs θ = (v_s, δ) of every joint by
**variable projection** (Golub & Pereyra 1973): ``scipy.optimize.least_squares``
minimises the residual of the linear problem solved inside, ``r(θ) = (1 - P(θ)) W τ``
(P the projection on the weighted design's columns), with Kaufman's Jacobian
``-(1 - P) ∂(D x)/∂θ`` (Kaufman 1975), so the inertial part stays linear.

**Weights** (Gautier 1997's two steps, repeated until they settle): a first unweighted
fit gives each joint's residuals, ``σ̂_j² = ‖r_j‖² / (N - p/n)`` (n the joints'
equations, p the parameters); the rows of joint j are then weighted by 1/σ̂_j and the
fit repeated, σ̂ re-estimated from its residuals, until σ̂ changes by 2 % or less (at
most four weighted steps: the unweighted residuals of a quiet joint carry some of a
noisy joint's noise through the shared parameters).
A base parameter whose standard error exceeds the model's largest parameter
of its kind (mass, first moment or rotational inertia, the kind of its leading standard
parameter) is reported as weakly excited (a warning), as is a parameter nearly dependent
on the others.
**Uncertainty**: the Gauss–Newton covariance of all parameters at the solution,
``Cov = s² (JᵀJ)⁻¹``, J the Jacobian of the weighted residual in (x, θ), s² the
weighted residual variance ‖r‖²/(M - p), M = N n; intervals ``± t_{M-p} σ_p``
(Seber & Wild 1989, §2.1). The condition number reported is that of the stacked base
regressor Y_b (Gautier & Khalil 1992's excitation criterion).

Bad input raises :class:`~kanedyn.errors.IdentificationError` and returns nothing:
inputs of different lengths or widths, NaN/infinite rows (named), fewer equations than
parameters, and data that do not excite some parameter (the rank deficiency, named by
parameter); a parameter excited only weakly gives a :class:`~kanedyn.errors.KanedynWarning`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray

from ..errors import IdentificationError, KanedynWarning
from ..friction.identify import curve_and_jacobian
from ..friction.laws import Asymmetric, Stribeck
from ..model import Model
from .base import BaseParameters, base_parameters
from .data import Lowpass
from .regressor import joint_torque_regressor, standard_parameters

#: the parameters per joint of each friction model, as (linear, nonlinear)
FRICTION = {"none": ((), ()), "viscous+coulomb": (("Fc", "Fv"), ()),
            "stribeck": (("Fc", "Fs", "Fv"), ("vs", "delta"))}
#: a pivot of the column-normalised design at or below this (relative to the largest)
#: is a rank deficiency; at or below WEAK a parameter is reported as nearly dependent
RANK_RTOL = 1e-9
WEAK = 1e-6
#: a base parameter whose standard error exceeds this multiple of the largest standard
#: parameter of its kind in the model is reported as weakly excited
WEAK_FRACTION = 1.0
#: the box of the Stribeck pair: δ in [DELTA_MIN, DELTA_MAX], v_s in
#: [VS_MIN, 1] times the joint's largest |v|
DELTA_MIN, DELTA_MAX, VS_MIN = 0.2, 5.0, 1e-3


def friction_names(kind: str, asymmetric: bool = False) -> tuple[tuple[str, ...],
                                                                   tuple[str, ...]]:
    """(linear, nonlinear) parameter names of one joint's friction: those of
    :data:`FRICTION`, the levels F_c (and F_s) split into ``_pos`` (v > 0) and ``_neg``
    (v < 0) when ``asymmetric`` (F_v, v_s and δ shared by both directions)."""
    lin, nonlin = FRICTION[kind]
    if asymmetric:
        lin = tuple(f"{n}_{side}" for n in lin if n != "Fv" for side in ("pos", "neg")) + (
            ("Fv",) if "Fv" in lin else ())
    return lin, nonlin


def friction_columns(kind: str, v: NDArray, theta: tuple = (),
                     levels: tuple | None = None,
                     asymmetric: bool = False) -> tuple[NDArray, NDArray]:
    """The friction of one joint as ``C @ (linear parameters)`` at speeds v: ``(C,
    dC)``, C (N, nlin) and, for Stribeck, ``dC`` (N, 2) = ∂F/∂(v_s, δ) at the linear
    parameters ``levels`` (in the order of :func:`friction_names`;
    friction.identify.curve_and_jacobian). ``asymmetric``: the levels of each direction
    apply on its side only, F = F_pos(|v|) for v > 0, -F_neg(|v|) for v < 0."""
    v = np.asarray(v, dtype=float)
    lin, _ = friction_names(kind, asymmetric)
    if kind == "viscous+coulomb":
        if asymmetric:
            return (np.column_stack([(v > 0).astype(float), -(v < 0).astype(float), v]),
                    np.empty((v.size, 0)))
        return np.column_stack([np.sign(v), v]), np.empty((v.size, 0))
    vs, delta = theta
    lv = np.zeros(len(lin)) if levels is None else np.asarray(levels, dtype=float)
    if not asymmetric:
        sides = ((np.sign(v), np.ones(v.size, bool), (0, 1, 2)),)
    else:  # columns Fc_pos, Fc_neg, Fs_pos, Fs_neg, Fv
        sides = ((1.0, v > 0, (0, 2, 4)), (-1.0, v < 0, (1, 3, 4)))
    C, dC = np.zeros((v.size, len(lin))), np.zeros((v.size, 2))
    for sign, m, (ic, i_s, iv) in sides:
        _, J = curve_and_jacobian("stribeck", {"Fc": lv[ic], "Fs": lv[i_s], "vs": vs,
                                               "delta": delta, "Fv": lv[iv]}, np.abs(v[m]))
        # columns of J: Fc, Fs, vs, delta, Fv for one direction; times the sign of v
        J = J * (sign[m, None] if np.ndim(sign) else sign)
        C[m, ic], C[m, i_s], C[m, iv] = J[:, 0], J[:, 1], J[:, 4]
        dC[m] = J[:, 2:4]
    return C, dC


@dataclass
class Identification:
    """The result of :func:`fit`: the base inertial parameters and the friction
    parameters, with their uncertainty.

    ``names`` / ``estimate`` / ``stderr`` / ``interval`` (p × 2, at ``confidence``) /
    ``cov``: every parameter, the base parameters first (in words, ``base.names``), then
    the friction parameters ``"<joint>.<Fc|Fs|Fv|vs|delta>"`` (``Fc_pos``, ``Fc_neg``,
    ... when ``asymmetric``); ``sigma``: the noise level estimated per speed (the
    weights were 1/σ̂); ``condition_number`` of the stacked base regressor;
    ``residuals`` (rows × nv, unweighted); ``notes``: the warnings of the fit; ``rows``:
    the samples the equations were written at (all, or those kept after the parallel
    filter's ends and the decimation); ``lowpass``: the parallel filter, if any;
    ``equations`` (rows × nv): which equations the fit used (``v_min`` leaves out those
    of a joint near rest; their residuals are reported all the same); ``v``: the speeds
    at ``rows``."""

    model: Model
    base: BaseParameters
    friction: str
    friction_joints: list[str]
    friction_speeds: NDArray
    names: list[str]
    estimate: NDArray
    stderr: NDArray
    interval: NDArray
    cov: NDArray
    confidence: float
    sigma: NDArray
    condition_number: float
    residuals: NDArray
    dof: int
    nfev: int
    notes: list[str] = field(default_factory=list)
    asymmetric: bool = False
    rows: NDArray | None = None
    lowpass: Lowpass | None = None
    equations: NDArray | None = None
    v: NDArray | None = None

    @property
    def params(self) -> dict[str, float]:
        return dict(zip(self.names, map(float, self.estimate), strict=True))

    @property
    def base_estimate(self) -> NDArray:
        """π_b, the estimated base parameters (``base.names``)."""
        return self.estimate[:self.base.rank]

    def friction_parameters(self, joint: str) -> dict[str, float]:
        """The friction parameters of one joint, by name."""
        lin, nonlin = friction_names(self.friction, self.asymmetric)
        p = self.params
        return {n: p[f"{joint}.{n}"] for n in lin + nonlin}

    def friction_torque(self, joint: str, v: ArrayLike) -> NDArray:
        """The identified friction of a joint at speeds v (its sign that of v)."""
        lin, nonlin = friction_names(self.friction, self.asymmetric)
        p = self.friction_parameters(joint)
        C, _ = friction_columns(self.friction, np.atleast_1d(np.asarray(v, dtype=float)),
                                tuple(p[n] for n in nonlin), asymmetric=self.asymmetric)
        return C @ np.array([p[n] for n in lin])

    def friction_law(self, joint: str) -> Stribeck | Asymmetric:
        """The identified friction of a joint as a :class:`kanedyn.friction.Stribeck`
        law (viscous + Coulomb: F_s = F_c), or a :class:`kanedyn.friction.Asymmetric`
        of two when ``asymmetric``; raises FrictionError when the estimate is not a
        physical law (a level below zero, F_s < F_c)."""
        p = self.friction_parameters(joint)

        def law(side):
            Fc = p["Fc" + side]
            if self.friction == "viscous+coulomb":
                return Stribeck(Fc, Fc, 1.0, 2.0, p["Fv"])
            return Stribeck(Fc, p["Fs" + side], p["vs"], p["delta"], p["Fv"])

        return Asymmetric(law("_pos"), law("_neg")) if self.asymmetric else law("")

    def predict(self, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> NDArray:
        """The joint forces the identified model gives: ``Y_b π_b + F(v) + J_r a``
        (one state or a batch)."""
        Y = joint_torque_regressor(self.model, q, v, a)
        V = np.atleast_2d(np.asarray(v, dtype=float))
        A = np.atleast_2d(np.asarray(a, dtype=float))
        tau = np.atleast_2d(self.base.regressor(Y) @ self.base_estimate) + self.model.armature * A
        for joint, j in zip(self.friction_joints, self.friction_speeds, strict=True):
            tau[:, j] += self.friction_torque(joint, V[:, j])
        return tau if Y.ndim == 3 else tau[0]

    def consistent(self, regularization: float = 1e-3) -> ConsistentEstimate:
        """Physically consistent parameters near this estimate (:func:`consistent`); the
        unconstrained estimate stays as it is."""
        return consistent(self, regularization)

    def validate(self, t: ArrayLike, q: ArrayLike, v: ArrayLike, a: ArrayLike,
                 tau: ArrayLike, **options):
        """The errors of this identification on held-out data
        (:func:`kanedyn.identify.validate`, whose options it takes)."""
        from .validation import validate

        return validate(self, t, q, v, a, tau, **options)

    def plot_friction(self, path, **options) -> str:
        """The identified friction curves with their bands, to a PNG
        (:func:`kanedyn.identify.plot_friction`, whose options it takes)."""
        from .report import plot_friction

        return plot_friction(self, path, **options)

    def report(self) -> str:
        """A plain-text table of the estimates and their intervals."""
        lvl = int(round(100 * self.confidence))
        left_out = 0 if self.equations is None else int(self.equations.size
                                                         - np.count_nonzero(self.equations))
        lines = [f"identification: {self.base.rank} base parameters, friction "
                 f"{self.friction!r} on {len(self.friction_joints)} joints"
                 + (" (asymmetric levels)" if self.asymmetric else "")
                 + f", {self.residuals.shape[0]} samples"
                 + (f" (parallel low-pass {self.lowpass.cutoff:g} Hz)" if self.lowpass else "")
                 + (f", {left_out} equations near rest left out" if left_out else "")
                 + f", condition number {self.condition_number:.4g}",
                 f"{'estimate':>13} {'std err':>11} {f'{lvl}% interval':>29}  parameter"]
        for n, x, s, (lo, hi) in zip(self.names, self.estimate, self.stderr, self.interval,
                                     strict=True):
            lines.append(f"{x:13.6g} {s:11.3g} [{lo:13.6g}, {hi:13.6g}]  {n}")
        lines.append("noise per speed: " + ", ".join(
            f"{n} {s:.3g}" for n, s in zip(_speed_names(self.model), self.sigma, strict=True)))
        lines += [f"note: {t}" for t in self.notes]
        return "\n".join(lines)


def _speed_names(model: Model) -> list[str]:
    return [b.joint.name if b.joint.nv == 1 else f"{b.joint.name}[{c}]"
            for b in model.bodies for c in range(b.joint.nv)]


def _data(model: Model, q, v, a, tau) -> tuple[NDArray, ...]:
    arrays = []
    for x, name, width in ((q, "q", model.nq), (v, "v", model.nv), (a, "a", model.nv),
                           (tau, "tau", model.nv)):
        X = np.asarray(x, dtype=float)
        if X.ndim == 1 and width == 1:
            X = X[:, None]
        if X.ndim != 2 or X.shape[1] != width:
            raise IdentificationError(f"fit: {name} must be (samples, {width}); got shape "
                                      f"{X.shape}")
        arrays.append(X)
    lengths = [X.shape[0] for X in arrays]
    if len(set(lengths)) > 1:
        raise IdentificationError(f"fit: q, v, a, tau have {lengths[0]}, {lengths[1]}, "
                                  f"{lengths[2]}, {lengths[3]} samples; they must match")
    bad = ~np.all(np.isfinite(np.hstack(arrays)), axis=1)
    if np.any(bad):
        rows = np.flatnonzero(bad)
        which = [n for n, X in zip(("q", "v", "a", "tau"), arrays, strict=True)
                 if not np.all(np.isfinite(X[rows]))]
        raise IdentificationError(
            f"fit: {rows.size} rows have NaN or infinity (in {', '.join(which)}): rows "
            f"{rows[:10].tolist()}{' ...' if rows.size > 10 else ''}; drop or repair them")
    return tuple(arrays)


def _friction_speeds(model: Model, joints) -> tuple[list[str], NDArray]:
    if joints is None:
        chosen = [b for b in model.bodies if b.joint.nv == 1]
    else:
        chosen = []
        for name in joints:
            try:
                b = model.bodies[model.joint_index(name)]
            except Exception as exc:
                raise IdentificationError(f"fit: friction joint {name!r} is not a joint of "
                                          f"the model ({model.joint_names})") from exc
            if b.joint.nv != 1:
                raise IdentificationError(f"fit: joint {name!r} has {b.joint.nv} speeds; "
                                          "friction is fitted on one-speed joints")
            chosen.append(b)
    return [b.joint.name for b in chosen], np.array([b.iv.start for b in chosen], dtype=int)


def fit(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike, tau: ArrayLike,
        friction: str = "viscous+coulomb", *, friction_joints=None,
        base: BaseParameters | None = None, confidence: float = 0.95,
        weighted: bool = True, max_nfev: int = 200, asymmetric: bool = False,
        lowpass: Lowpass | None = None, every: int = 1,
        segments: ArrayLike | None = None, v_min: float = 0.0) -> Identification:
    """Identify the base inertial parameters and the joint friction of ``model`` from
    samples (rows) of q (N × nq), v, a and the measured joint forces tau (N × nv); the
    method, the weights and the uncertainty are in the module doc.

    ``friction``: ``"viscous+coulomb"``, ``"stribeck"`` or ``"none"``;
    ``asymmetric``: separate Coulomb (and static) levels for v > 0 and v < 0;
    ``friction_joints``: the joints with friction (default: every one-speed joint);
    ``base``: the base parameters to identify (default :func:`base_parameters` of the
    model); ``weighted=False`` skips the second, weighted step.

    ``lowpass``: the filter τ went through (:class:`Lowpass`, as
    :func:`~kanedyn.identify.prepare` applies it); the friction columns of the design
    are passed through it too (parallel filtering, module doc), which needs the samples
    in time order on a uniform grid at ``lowpass.rate``: several experiments
    concatenated are told apart by ``segments`` (their numbers of samples). ``every``:
    the equations are written at one sample in ``every`` (of each segment, one cut-off
    period in from its ends when filtered): with a low-pass, ``rate / (2 cutoff)``
    makes the filtered noise of the samples kept nearly independent, as the intervals
    assume. ``v_min``: a friction joint's equation is left out at a sample where its
    |v| < v_min, or was within the parallel filter's reach (one cut-off period either
    side): near rest friction is in the stick or presliding regime, which no sliding law
    of v describes (module doc)."""
    if friction not in FRICTION:
        raise IdentificationError(f"fit: friction {friction!r} unknown; choose one of "
                                  f"{sorted(FRICTION)}")
    if not 0.0 < confidence < 1.0:
        raise IdentificationError(f"fit: confidence={confidence} must lie in (0, 1)")
    if asymmetric and friction == "none":
        raise IdentificationError("fit: asymmetric=True needs a friction model with levels "
                                  "(viscous+coulomb or stribeck)")
    Q, V, A, T = _data(model, q, v, a, tau)
    nv = V.shape[1]
    rows, filt = _rows(V.shape[0], lowpass, every, segments)
    N = rows.size
    base = base if base is not None else base_parameters(model)
    joints, speeds = _friction_speeds(model, friction_joints if friction != "none" else ())
    lin, nonlin = friction_names(friction, asymmetric)
    names = list(base.names) + [f"{j}.{n}" for j in joints for n in lin + nonlin]
    p = len(names)
    if N * nv <= p:
        raise IdentificationError(f"fit: {N} samples give {N * nv} equations, too few for "
                                  f"{p} parameters ({base.rank} base, {p - base.rank} "
                                  "friction); record more samples")
    if asymmetric:
        for joint, j in zip(joints, speeds, strict=True):
            for side, m in (("positive", V[rows, j] > 0), ("negative", V[rows, j] < 0)):
                if not np.any(m):
                    raise IdentificationError(
                        f"fit: joint {joint!r} never moves at {side} speed; its "
                        f"{side} friction levels (asymmetric=True) are not excited")
    use = _sliding(V, rows, speeds, v_min, lowpass)  # 1 for the equations written, else 0
    if np.count_nonzero(use) <= p:
        raise IdentificationError(
            f"fit: {np.count_nonzero(use)} equations are left (v_min={v_min} leaves out "
            f"{use.size - np.count_nonzero(use)} of {use.size}), too few for {p} parameters")
    Yb = base.regressor(joint_torque_regressor(model, Q[rows], V[rows], A[rows]))  # (N, nv, r)
    # rows joint-major: the N equations of speed 0, then of speed 1, ...
    Yrows = np.transpose(Yb, (1, 0, 2)).reshape(nv * N, base.rank)
    target = (T - model.armature * A)[rows].T.reshape(nv * N)
    problem = _Problem(friction, asymmetric, Yrows, V, rows, filt, speeds, nv, base.rank,
                       len(lin), len(nonlin))
    theta_lo, theta_hi, theta0 = problem.box()
    notes = _check_excitation(problem, theta0, names, use)
    w = use.copy()
    theta, x, nfev = problem.solve(target, w, theta0, theta_lo, theta_hi, max_nfev)
    r = problem.residual(target, x, theta)
    sigma = _noise(r, use, nv, p)
    if weighted:
        # weights 1/σ̂_j from the unweighted residuals, then re-estimated from the
        # weighted fit's until they settle (two or three steps: the first is Gautier's)
        floor = 1e-12 * max(1.0, float(np.max(np.abs(T))))
        for _ in range(4):
            w = use * np.repeat(1.0 / np.maximum(sigma, floor), N)
            theta, x, more = problem.solve(target, w, theta, theta_lo, theta_hi, max_nfev,
                                           search=False)
            nfev += more
            r = problem.residual(target, x, theta)
            previous, sigma = sigma, _noise(r, use, nv, p)
            if np.all(np.abs(sigma - previous) <= 0.02 * previous):
                break
    rw = w * r
    dof = int(np.count_nonzero(use)) - p
    s2 = float(rw @ rw) / dof
    Jw = w[:, None] * problem.jacobian(x, theta)
    JtJ = Jw.T @ Jw
    inv = np.linalg.pinv(JtJ, hermitian=True)
    if lowpass is None:
        cov = s2 * inv
    else:  # the filtered noise is correlated: the sandwich with its known correlation
        cov = s2 * inv @ _correlated(Jw.reshape(nv, N, -1), rows, lowpass) @ inv
    position = np.argsort(problem.order())  # column of (x, θ) -> position in names
    at_bound = [names[position[problem.nx + k]] for k in range(theta.size)
                if np.isclose(theta[k], theta_lo[k], rtol=1e-6)
                or np.isclose(theta[k], theta_hi[k], rtol=1e-6)]
    if at_bound:
        notes.append(f"at a bound of its box (interval not meaningful): {at_bound}")
    est = problem.ordered(x, theta)
    order = problem.order()
    cov = cov[np.ix_(order, order)]
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    # a base parameter not resolved even to the size its kind (mass, first moment,
    # rotational inertia: the kind of its leading standard parameter) has in the model
    pi = np.abs(standard_parameters(model)).reshape(-1, 10)
    kind = np.array([0, 1, 1, 1, 2, 2, 2, 2, 2, 2])
    size = np.array([pi[:, kind == c].max() for c in range(3)])
    ref = WEAK_FRACTION * size[kind[base.independent % 10]]
    weak = [names[k] for k in range(base.rank) if ref[k] > 0 and se[k] > ref[k]]
    if weak:
        notes.append("weakly excited (standard error above the model's largest "
                     f"parameter of its kind): {weak}")
    for t in notes:
        warnings.warn(f"identify.fit: {t}", KanedynWarning, stacklevel=2)
    from scipy import stats  # here: importing scipy.stats costs 0.5 s at kanedyn's import

    tq = float(stats.t.ppf(0.5 + confidence / 2.0, dof))
    return Identification(
        model, base, friction, joints, speeds, names, est, se,
        np.column_stack([est - tq * se, est + tq * se]), cov, confidence, sigma,
        float(np.linalg.cond(Yrows)), r.reshape(nv, N).T.copy(), dof, nfev, notes,
        asymmetric, rows, lowpass, use.reshape(nv, N).T > 0, V[rows].copy())


def _rows(n: int, lowpass: Lowpass | None, every: int, segments) -> tuple[NDArray, object]:
    """The samples the equations are written at, and the parallel filter (None, or a
    function filtering the columns of an (n, k) array segment by segment)."""
    if int(every) != every or every < 1:
        raise IdentificationError(f"fit: every={every} must be a positive whole number")
    lengths = np.array([n] if segments is None else segments).ravel()
    if (lengths.size == 0 or np.any(lengths != np.round(lengths)) or np.any(lengths < 1)
            or int(lengths.sum()) != n):
        raise IdentificationError(f"fit: segments {lengths.tolist()} must be positive numbers "
                                  f"of samples adding up to the {n} samples given")
    if lowpass is not None and not isinstance(lowpass, Lowpass):
        raise IdentificationError(f"fit: lowpass must be an identify.Lowpass; got {lowpass!r}")
    ends = np.concatenate([[0], np.cumsum(lengths.astype(int))])
    edge = lowpass.period if lowpass is not None else 0
    rows = []
    for k, (s, e) in enumerate(zip(ends[:-1], ends[1:], strict=True)):
        if e - s <= 2 * edge:
            raise IdentificationError(
                f"fit: segment {k} has {e - s} samples, too few for the parallel filter's "
                f"ends ({edge} samples, one cut-off period, dropped at each)")
        rows.append(np.arange(s + edge, e - edge, int(every)))
    if lowpass is None:
        return np.concatenate(rows), None

    def filt(X):
        out = np.empty_like(X)
        for s, e in zip(ends[:-1], ends[1:], strict=True):
            out[s:e] = lowpass(X[s:e])
        return out

    return np.concatenate(rows), filt


def _correlated(Jw: NDArray, rows: NDArray, lowpass: Lowpass) -> NDArray:
    """Σ_k Σ_l ρ(|s_k - s_l|) J_kᵀ J_l over the equations of each speed (Jw: speed ×
    equation × parameter, s the samples of the equations): the middle of the covariance
    ``(JᵀJ)⁻¹ Jᵀ R J (JᵀJ)⁻¹`` of a least-squares fit whose noise has the correlation R
    = ρ of white noise through the parallel filter (Seber & Wild 1989, §6.1); the
    equations of different speeds are independent (their noise is)."""
    rho = lowpass.correlation()
    B = np.einsum("jkp,jkq->pq", Jw, Jw)
    for lag in range(1, rows.size):
        d = rows[lag:] - rows[:-lag]
        near = d < rho.size  # within a segment and the correlation's reach
        if not np.any(near):
            break
        coef = np.where(near, rho[np.minimum(d, rho.size - 1)], 0.0)
        C = np.einsum("jkp,k,jkq->pq", Jw[:, :-lag], coef, Jw[:, lag:])
        B += C + C.T
    return B


def _noise(r: NDArray, use: NDArray, nv: int, p: int) -> NDArray:
    """σ̂_j² = ‖r_j‖² / (N_j - p/n): each speed's residual variance over its N_j
    equations written (``use``), the degrees of freedom shared evenly among the speeds."""
    n = np.count_nonzero(use.reshape(nv, -1), axis=1)
    return np.sqrt(np.sum((use * r).reshape(nv, -1) ** 2, axis=1) / np.maximum(n - p / nv, 1))


def _sliding(V: NDArray, rows: NDArray, speeds: NDArray, v_min: float,
             lowpass: Lowpass | None) -> NDArray:
    """(nv N,) joint-major: 1.0 for the equations written, 0.0 for those of a friction
    joint at the samples of ``rows`` where its |v| < v_min within the filter's reach."""
    if not (np.isfinite(v_min) and v_min >= 0.0):
        raise IdentificationError(f"fit: v_min={v_min} must be finite and >= 0")
    use = np.ones((V.shape[1], rows.size))
    if v_min == 0.0:
        return use.ravel()
    reach = np.ones(2 * (lowpass.period if lowpass is not None else 0) + 1)
    for j in speeds:
        slow = np.convolve(np.abs(V[:, j]) < v_min, reach, mode="same") > 0
        use[j, slow[rows]] = 0.0
    return use.ravel()


def _check_excitation(problem: _Problem, theta0: NDArray, names: list[str],
                      use: NDArray) -> list[str]:
    """IdentificationError naming the parameters the data do not excite (a rank
    deficiency of the column-normalised design, by QR with column pivoting); the notes
    naming those excited only weakly."""
    D = problem.design(theta0)[0][use > 0]
    norms = np.linalg.norm(D, axis=0)
    order = np.argsort(problem.order())  # column of (x, θ) -> position in names
    dead = [names[order[k]] for k in np.flatnonzero(norms == 0.0)]
    if dead:
        raise IdentificationError(f"fit: the data do not excite {dead} (their regressor "
                                  "columns are zero); move those joints, or leave the "
                                  "parameters out (friction_joints=...)")
    _, R, perm = scipy.linalg.qr(D / norms, mode="economic", pivoting=True)
    d = np.abs(np.diag(R)) / abs(R[0, 0])
    deficient = [names[order[perm[k]]] for k in np.flatnonzero(d <= RANK_RTOL)]
    if deficient:
        raise IdentificationError(
            f"fit: the data do not excite every parameter: the design has rank "
            f"{int(np.count_nonzero(d > RANK_RTOL))} of {d.size}; {deficient} are "
            "combinations of the others on these data — excite the robot more richly")
    weak = [names[order[perm[k]]] for k in np.flatnonzero(d <= WEAK)]
    return [f"nearly combinations of the others on these data (wide intervals): {weak}"
            ] if weak else []


class _Problem:
    """The stacked design of one data set: ``D(θ) x`` with x = (π_b, the friction
    levels joint by joint), the Stribeck pairs θ joint by joint; the equations at the
    samples ``rows`` of the speeds V, the friction columns computed at every sample and
    passed through the parallel filter ``filt`` (when given) before they are picked."""

    def __init__(self, kind, asymmetric, Yrows, V, rows, filt, speeds, nv, r, nlin, nnon):
        self.kind, self.asymmetric, self.Yrows, self.V, self.speeds = (kind, asymmetric,
                                                                       Yrows, V, speeds)
        self.rows, self.filt = rows, filt
        self.N, self.nv, self.r, self.nlin, self.nnon = rows.size, nv, r, nlin, nnon
        self.nlin_total = nlin * speeds.size
        self.nx = r + self.nlin_total

    def box(self):
        vmax = np.array([np.max(np.abs(self.V[:, j])) for j in self.speeds])
        if self.nnon == 0:
            e = np.empty(0)
            return e, e, e
        lo = np.column_stack([VS_MIN * vmax, np.full(vmax.size, DELTA_MIN)]).ravel()
        hi = np.column_stack([vmax, np.full(vmax.size, DELTA_MAX)]).ravel()
        return lo, hi, np.column_stack([0.1 * vmax, np.full(vmax.size, 2.0)]).ravel()

    def friction_design(self, theta, levels=None):
        """(C (nv N × friction levels), G (nv N × θ.size) = ∂(C levels)/∂θ, or None
        without the levels): the friction part of the design, joint by joint."""
        C = np.zeros((self.nv * self.N, self.nlin_total))
        G = np.zeros((self.nv * self.N, theta.size)) if levels is not None else None
        for k, j in enumerate(self.speeds):
            rows = slice(j * self.N, (j + 1) * self.N)
            cols = slice(k * self.nlin, (k + 1) * self.nlin)
            th = tuple(theta[2 * k:2 * k + 2]) if self.nnon else ()
            Ck, dC = friction_columns(self.kind, self.V[:, j], th,
                                      tuple(levels[cols]) if levels is not None else None,
                                      self.asymmetric)
            if self.filt is not None:  # the filter τ went through (linear: columnwise)
                both = self.filt(np.hstack([Ck, dC]) if G is not None else Ck)
                Ck, dC = both[:, :self.nlin], both[:, self.nlin:]
            C[rows, cols] = Ck[self.rows]
            if G is not None and self.nnon:
                G[rows, 2 * k:2 * k + 2] = dC[self.rows]
        return C, G

    def design(self, theta, x=None):
        """(D (nv N × nx) = [Y_b, C], G = ∂(D x)/∂θ at x, or None without x)."""
        C, G = self.friction_design(theta, None if x is None else x[self.r:])
        return np.hstack([self.Yrows, C]), G

    def linear(self, target, w, theta):
        D, _ = self.design(theta)
        x, *_ = scipy.linalg.lstsq(w[:, None] * D, w * target, lapack_driver="gelsy",
                                   check_finite=False)
        return x

    def residual(self, target, x, theta):
        return target - self.design(theta)[0] @ x

    def jacobian(self, x, theta):
        """∂(D(θ) x)/∂(x, θ): the columns the covariance takes (the residual's, negated)."""
        D, G = self.design(theta, x)
        return np.hstack([D, G])

    def solve(self, target, w, theta0, lo, hi, max_nfev, search=True):
        """(θ, x, evaluations): variable projection over θ (module doc); x alone when
        the friction is linear. ``search``: first pick v_s on a grid (:meth:`_start`);
        off for the weighted steps, which start from the previous step's θ."""
        from scipy.optimize import least_squares  # (here: ~1 s of `import kanedyn` at top)
        if theta0.size == 0:
            return theta0, self.linear(target, w, theta0), 1
        # the inertial columns are the same at every θ: project them out once (Q1), so
        # that an evaluation solves only for the few friction levels, by the normal
        # equations of the projected, column-scaled friction columns (a small Cholesky
        # factor; a LAPACK QR of the tall matrix at every evaluation costs more on a
        # loaded machine than the whole rest)
        Yw = w[:, None] * self.Yrows
        Q1, R1 = np.linalg.qr(Yw)
        tw = w * target
        t1 = tw - Q1 @ (Q1.T @ tw)
        cache = {}

        def projected(th):
            key = th.tobytes()
            if key not in cache:
                cache.clear()
                Cw = w[:, None] * self.friction_design(th)[0]
                Ct = Cw - Q1 @ (Q1.T @ Cw)
                scale = np.linalg.norm(Ct, axis=0)
                Cs = Ct / scale
                factor = scipy.linalg.cho_factor(Cs.T @ Cs, check_finite=False)
                levels = scipy.linalg.cho_solve(factor, Cs.T @ t1, check_finite=False) / scale
                pi_b = scipy.linalg.solve_triangular(R1, Q1.T @ (tw - Cw @ levels),
                                                     check_finite=False)
                cache[key] = (np.concatenate([pi_b, levels]), Cs, factor, t1 - Ct @ levels)
            return cache[key]

        def fun(th):
            return projected(th)[3]

        def jac(th):  # Kaufman: -(1 - P) ∂(W D x)/∂θ, P the projection on [Y_b, C]
            x, Cs, factor, _ = projected(th)
            G = w[:, None] * self.friction_design(th, x[self.r:])[1]
            G = G - Q1 @ (Q1.T @ G)
            return -(G - Cs @ scipy.linalg.cho_solve(factor, Cs.T @ G, check_finite=False))

        if search:
            theta0 = self._start(fun, theta0, lo, hi)
        # (tr_solver="lsmr": the trust-region steps from products with the Jacobian, not
        # an SVD of the tall Jacobian at every iteration)
        sol = least_squares(fun, theta0, jac=jac, bounds=(lo, hi), method="trf",
                            x_scale="jac", tr_solver="lsmr", max_nfev=max_nfev)
        if sol.status <= 0 or not np.all(np.isfinite(sol.x)):
            raise IdentificationError(
                f"fit: the Stribeck parameters did not converge ({sol.message}; {sol.nfev} "
                "evaluations); no parameters returned — excite the joints at low speed too")
        return sol.x, projected(sol.x)[0], int(sol.nfev)

    def _start(self, fun, theta, lo, hi):
        """A start for v_s: per joint, the best of a logarithmic grid in its box (δ = 2,
        the other joints held), so the descent starts in the right basin."""
        theta = np.clip(theta.copy(), lo, hi)
        for k in range(self.speeds.size):
            grid = np.geomspace(lo[2 * k] * 10, hi[2 * k] * 0.5, 10)
            costs = []
            for vs in grid:
                theta[2 * k] = vs
                costs.append(float(np.sum(fun(theta) ** 2)))
            theta[2 * k] = grid[int(np.argmin(costs))]
        return theta

    def ordered(self, x, theta):
        """The estimates in the order of the names: π_b, then per joint its levels and
        its pair."""
        return np.concatenate([x, theta])[self.order()]

    def order(self):
        """Index into (x, θ) of each name's entry."""
        idx = list(range(self.r))
        for k in range(self.speeds.size):
            idx += [self.r + k * self.nlin + c for c in range(self.nlin)]
            idx += [self.nx + 2 * k + c for c in range(self.nnon)]
        return np.array(idx, dtype=int)


def pseudo_inertia(pi: ArrayLike) -> NDArray:
    """The 4 × 4 pseudo-inertia ``J = [Σ, h; hᵀ, m]``, ``Σ = ½ tr(Ī) 1 - Ī``, of the ten
    standard parameters of a body: they are those of a physical rigid body (a mass
    distribution) exactly when J ⪰ 0 (Wensing, Kim & Slotine 2017, Theorem 1)."""
    m, hx, hy, hz, xx, xy, yy, xz, yz, zz = np.asarray(pi, dtype=float)
    Ib = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    J = np.empty((4, 4))
    J[:3, :3] = 0.5 * np.trace(Ib) * np.eye(3) - Ib
    J[:3, 3] = J[3, :3] = hx, hy, hz
    J[3, 3] = m
    return J


def _parameters_of_pseudo_inertia(J: NDArray) -> NDArray:
    """Inverse of :func:`pseudo_inertia`: Ī = tr(Σ) 1 - Σ."""
    S = J[:3, :3]
    Ib = np.trace(S) * np.eye(3) - S
    return np.array([J[3, 3], J[0, 3], J[1, 3], J[2, 3], Ib[0, 0], Ib[0, 1], Ib[1, 1],
                     Ib[0, 2], Ib[1, 2], Ib[2, 2]])


def _factor_jacobian(u: NDArray) -> NDArray:
    """∂π/∂u (10 x 10) of a body's parameters π = P(U Uᵀ), U upper triangular with the
    entries u (``np.triu_indices(4)`` order) and P :func:`_parameters_of_pseudo_inertia`
    (linear): column k is P(E_k Uᵀ + U E_kᵀ), E_k the unit matrix at entry k."""
    iu = np.triu_indices(4)
    U = np.zeros((4, 4))
    U[iu] = u
    out = np.empty((10, 10))
    for k, (a, b) in enumerate(zip(*iu, strict=True)):
        dJ = np.zeros((4, 4))
        dJ[a, :] += U[:, b]
        dJ[:, a] += U[:, b]
        out[:, k] = _parameters_of_pseudo_inertia(dJ)
    return out


@dataclass
class ConsistentEstimate:
    """Physically consistent parameters near an identification
    (:meth:`Identification.consistent`): ``standard`` (10 nb) with every body's
    pseudo-inertia ⪰ 0,
    ``base`` = K standard, ``min_eigenvalue`` of each body's pseudo-inertia, and the
    identification it came from (whose unconstrained estimate is unchanged)."""

    standard: NDArray
    base: NDArray
    min_eigenvalue: NDArray
    source: Identification

    def predict(self, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> NDArray:
        """The joint forces with the consistent base parameters and the identified friction."""
        src = self.source
        unconstrained = src.predict(q, v, a)
        Yb = src.base.regressor(joint_torque_regressor(src.model, q, v, a))
        return unconstrained + Yb @ (self.base - src.base_estimate)


def consistent(result: Identification, regularization: float = 1e-3) -> ConsistentEstimate:
    """The physically consistent standard parameters closest to the identified base
    parameters in the metric of their covariance (Wensing, Kim & Slotine 2017):

        min_π ‖L (K π - π̂_b)‖² + ρ Σ_i ‖(π_i - π_i,model) / s_i‖²,  J(π_i) ⪰ 0

    with Lᵀ L = Cov(π̂_b)⁻¹; the constraint is kept by writing each body's pseudo-inertia
    as J_i = U_i U_iᵀ (U_i upper triangular, ten numbers: as many as π_i), a nonlinear
    least-squares problem in U solved from the model's own parameters. The small term
    ρ (``regularization``) picks, among the π with the same K π, the one nearest the
    model's (s_i: the scale of body i's parameters), as the base parameters leave the
    rest undetermined."""
    from scipy.optimize import least_squares  # (here: ~1 s of `import kanedyn` at top)
    base, model = result.base, result.model
    r = base.rank
    C = result.cov[:r, :r]
    w, Vc = np.linalg.eigh(C)
    Lw = (Vc / np.sqrt(np.maximum(w, 1e-300 * w.max()))).T  # whitening: Lwᵀ Lw = C⁻¹
    pi0 = standard_parameters(model)
    nb = model.nb
    scale = np.maximum(np.abs(pi0).reshape(nb, 10).max(axis=1), 1e-12)
    iu = np.triu_indices(4)

    def standard(u):
        out = np.empty(10 * nb)
        for i in range(nb):
            U = np.zeros((4, 4))
            U[iu] = u[10 * i:10 * i + 10]
            out[10 * i:10 * i + 10] = _parameters_of_pseudo_inertia(U @ U.T)
        return out

    def residual(u):
        pi = standard(u)
        reg = (pi - pi0).reshape(nb, 10) / scale[:, None]
        return np.concatenate([Lw @ (base.K @ pi - result.base_estimate),
                               np.sqrt(regularization) * reg.ravel()])

    # ∂residual/∂u = [Lw K; √ρ D⁻¹] ∂π/∂u, with ∂π/∂u block diagonal: π_i is linear in
    # J_i = U_i U_iᵀ, and ∂J_i/∂u_k = E_k U_iᵀ + U_i E_kᵀ (E_k the unit matrix at the k-th
    # upper-triangular entry); exact, where finite differences cost 10 nb residuals a column
    A = np.vstack([Lw @ base.K, np.diag(np.sqrt(regularization) / np.repeat(scale, 10))])

    def jacobian(u):
        dpi = np.zeros((10 * nb, 10 * nb))
        for i in range(nb):
            dpi[10 * i:10 * i + 10, 10 * i:10 * i + 10] = _factor_jacobian(u[10 * i:10 * i + 10])
        return A @ dpi

    u0 = []
    for i in range(nb):  # U U ᵀ = J: the upper-triangular factor, by flipping a Cholesky
        J = pseudo_inertia(pi0[10 * i:10 * i + 10]) + 1e-9 * scale[i] * np.eye(4)
        P = np.eye(4)[::-1]
        Lc = np.linalg.cholesky(P @ J @ P)
        u0.append((P @ Lc @ P)[iu])
    sol = least_squares(residual, np.concatenate(u0), jac=jacobian, method="trf",
                        x_scale="jac", ftol=1e-14,
                        xtol=1e-14, gtol=1e-14, max_nfev=200 * nb)
    if not np.all(np.isfinite(sol.x)):
        raise IdentificationError("consistent: the projection did not converge; no "
                                  "parameters returned")
    pi = standard(sol.x)
    eig = np.array([np.linalg.eigvalsh(pseudo_inertia(pi[10 * i:10 * i + 10]))[0]
                    for i in range(nb)])
    return ConsistentEstimate(pi, base.K @ pi, eig, result)
