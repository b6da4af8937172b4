"""Identification data from measurements: (t, q, τ) sampled at the robot's rate, from
arrays or a CSV file, with q̇ and q̈ from q.

Differentiating measured positions amplifies their noise by ω and ω², so q is first
low-passed by a Butterworth filter run forwards and backwards (``scipy.signal.filtfilt``:
zero phase, so the filtered signals are not delayed against each other; the ends padded
by odd extension over five periods of the cut-off, which keeps the value and slope
there, so the start-up transient is ~1e-10 of the signal one cut-off period in: measured
on a smooth trajectory, where Gustafsson's initial conditions left 1e-3), then
differentiated by central differences (second order;
one-sided at the ends). τ goes through the same filter, so that both sides of τ = Y π
see the same attenuation (Gautier 1997's parallel filtering). The cut-off is a parameter:
a few times the trajectory's highest harmonic, well below the noise. The filtered noise
is correlated over about 1/(2 cut-off); :func:`kanedyn.identify.fit` takes its samples
as independent, so give it one sample per 1/(2 cut-off) (decimate) for honest intervals.

A CSV file has a header row naming its columns: ``t``, then ``q_<joint>`` and
``tau_<joint>`` for every one-speed joint of the model (other columns are refused by
name, so that a file written for another robot is not read silently).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import IdentificationError
from ..model import Model


@dataclass(frozen=True)
class Lowpass:
    """The zero-phase low-pass of :func:`prepare`: a Butterworth filter of ``order`` at
    ``cutoff`` Hz for samples at ``rate`` Hz, run forwards and backwards
    (``scipy.signal.filtfilt``, gain |H(f)|² = 1 / (1 + (f/f_c)^(2 order)) twice over, no
    phase), the ends padded by odd extension over five cut-off periods (module doc).
    ``lowpass(x)`` filters x along its first axis. Given to :func:`kanedyn.identify.fit`
    as ``lowpass=``, it is the filter τ went through, and the fit passes its friction
    columns through it too (parallel filtering, see the fit's doc)."""

    cutoff: float
    rate: float
    order: int = 4

    def __post_init__(self):
        if not (np.isfinite(self.rate) and self.rate > 0):
            raise IdentificationError(f"Lowpass: rate={self.rate} Hz must be finite and > 0")
        if not 0.0 < self.cutoff < 0.5 * self.rate:
            raise IdentificationError(f"Lowpass: cutoff={self.cutoff} Hz must lie in (0, "
                                      f"{0.5 * self.rate:.6g}) (the Nyquist frequency of the "
                                      "samples)")
        if int(self.order) != self.order or self.order < 1:
            raise IdentificationError(f"Lowpass: order={self.order} must be a positive integer")

    @property
    def period(self) -> int:
        """One period of the cut-off, in samples: the reach of the start-up transients."""
        return max(1, int(round(self.rate / self.cutoff)))

    def correlation(self, tol: float = 1e-4) -> NDArray:
        """ρ(d), d = 0, 1, ... samples: the correlation of white noise after the filter
        (the normalised autocorrelation of its impulse response), to where |ρ| stays
        below ``tol``."""
        n = 40 * self.period
        impulse = np.zeros(2 * n + 1)
        impulse[n] = 1.0
        h = self(impulse)
        r = np.correlate(h, h, mode="full")[h.size - 1:]
        r = r / r[0]
        big = np.flatnonzero(np.abs(r) >= tol)
        return r[:big[-1] + 1]

    def __call__(self, x: ArrayLike) -> NDArray:
        from scipy.signal import butter, filtfilt

        x = np.asarray(x, dtype=float)
        b, a = butter(int(self.order), self.cutoff / (0.5 * self.rate))
        return filtfilt(b, a, x, axis=0, padlen=min(5 * self.period, x.shape[0] - 1))


def prepare(t: ArrayLike, q: ArrayLike, tau: ArrayLike, cutoff: float,
            order: int = 4, trim: int | None = None) -> tuple[NDArray, ...]:
    """``(t, q, v, a, tau)`` from samples of q and τ on a uniform time grid: q and τ
    low-passed at ``cutoff`` Hz (zero-phase Butterworth of ``order``), v and a central
    differences of the filtered q (module doc). ``trim`` samples are dropped at each end
    (default: one period of the cut-off), where the filter's start-up transients are."""
    t = np.asarray(t, dtype=float).ravel()
    q = np.atleast_2d(np.asarray(q, dtype=float).T).T
    tau = np.atleast_2d(np.asarray(tau, dtype=float).T).T
    if not (t.size == q.shape[0] == tau.shape[0]):
        raise IdentificationError(f"prepare: t, q, tau have {t.size}, {q.shape[0]}, "
                                  f"{tau.shape[0]} samples; they must match")
    bad = np.flatnonzero(~(np.isfinite(t) & np.all(np.isfinite(q), 1)
                           & np.all(np.isfinite(tau), 1)))
    if bad.size:
        raise IdentificationError(f"prepare: rows {bad[:10].tolist()}"
                                  f"{' ...' if bad.size > 10 else ''} have NaN or infinity")
    dt = np.diff(t)
    back = np.flatnonzero(dt <= 0)
    if back.size:
        k = int(back[0])
        raise IdentificationError(f"prepare: time is not increasing at row {k + 1} "
                                  f"(t = {t[k]:.9g} then {t[k + 1]:.9g})")
    h = float(np.mean(dt))
    if np.ptp(dt) > 1e-6 * h:
        raise IdentificationError(f"prepare: the time grid is not uniform (steps from "
                                  f"{dt.min():.6g} to {dt.max():.6g} s); resample it")
    nyquist = 0.5 / h
    if not 0.0 < cutoff < nyquist:
        raise IdentificationError(f"prepare: cutoff={cutoff} Hz must lie in (0, {nyquist:.6g})"
                                  " (the Nyquist frequency of the samples)")
    trim = int(round(1.0 / (cutoff * h))) if trim is None else int(trim)
    if t.size <= 2 * trim + 3 * (order + 1):
        raise IdentificationError(f"prepare: {t.size} samples are too few to filter and "
                                  f"trim {trim} at each end")
    lowpass = Lowpass(cutoff, 1.0 / h, order)
    qf, tf = lowpass(q), lowpass(tau)
    v = np.gradient(qf, h, axis=0)
    acc = np.gradient(v, h, axis=0)
    keep = slice(trim, t.size - trim)
    return t[keep], qf[keep], v[keep], acc[keep], tf[keep]


def read_csv(path: str, model: Model) -> tuple[NDArray, NDArray, NDArray]:
    """``(t, q, tau)`` of a CSV file (module doc) for ``model``, whose joints must all
    have one speed; IdentificationError naming unknown, missing or non-numeric columns."""
    if model.nq != model.nv or any(b.joint.nv != 1 for b in model.bodies):
        raise IdentificationError("read_csv: the model's joints must all have one speed")
    names = model.joint_names
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        raise IdentificationError(f"read_csv: {path} is empty")
    header = [h.strip() for h in rows[0]]
    wanted = ["t"] + [f"q_{n}" for n in names] + [f"tau_{n}" for n in names]
    unknown = [h for h in header if h not in wanted]
    if unknown:
        raise IdentificationError(f"read_csv: {path}: columns {unknown} name no joint of the "
                                  f"model (its joints: {names}; columns t, q_<joint>, "
                                  "tau_<joint>)")
    missing = [w for w in wanted if w not in header]
    if missing:
        raise IdentificationError(f"read_csv: {path}: columns {missing} are missing")
    try:
        data = np.array([[float(x) for x in r] for r in rows[1:] if r], dtype=float)
    except ValueError as exc:
        raise IdentificationError(f"read_csv: {path}: a value is not a number ({exc})") from exc
    if data.ndim != 2 or data.shape[1] != len(header):
        raise IdentificationError(f"read_csv: {path}: rows of different lengths")
    col = {h: k for k, h in enumerate(header)}
    t = data[:, col["t"]]
    q = data[:, [col[f"q_{n}"] for n in names]]
    tau = data[:, [col[f"tau_{n}"] for n in names]]
    return t, q, tau
