"""Measured data through the parallel filter (kanedyn.identify.fit's ``lowpass``,
``every``, ``segments``, ``v_min``): synthetic experiments with a hidden truth sampled at
1 kHz, the measured torque low-passed as ``identify.prepare`` does.

Low-passing τ smears every Coulomb jump over the filter's impulse response, while a
friction column evaluated at the filtered speed switches sharply: an equation error that
is not noise. With the friction columns passed through the same filter (Gautier 1997's
parallel filtering) the filtered equation holds: on noise-free data the estimates are
the truth up to the filter's effect on the smooth inertial columns (their content lies
two decades below the cut-off: |H|² = 1 - 1e-8 there), and with noise the 95 %
intervals hold the truth as often as they claim, where the unfiltered columns miss it.
A truth whose friction is smoothed near rest (tanh, as a simulation's) is no sliding
law there: its equations within ``v_min`` of rest are left out.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import friction
from kanedyn import identify as ki
from kanedyn.friction.smoothing import Smoothing

from .test_fit import NOISE, NOMINAL, fourier_trajectory, perturbed, true_values

RATE, CUTOFF = 1000.0, 20.0
EVERY = int(RATE / (2 * CUTOFF))  # one sample per half cut-off period


def measured(seed, noise=NOISE, eps=None, noise_q=0.0, duration=8.0):
    """The truth, its laws and (t, q, τ) at RATE: rnea of the perturbed arm + Stribeck
    (tanh-smoothed at ``eps`` if given) + white noise; q exact or with encoder noise."""
    rng = np.random.default_rng(seed)
    truth = perturbed(NOMINAL, rng)
    n = NOMINAL.nv
    laws = [friction.Stribeck(Fc, Fc + dF, vs, delta, Fv) for Fc, dF, vs, delta, Fv in zip(
        rng.uniform(1, 2, n), rng.uniform(0.5, 1.0, n), rng.uniform(0.05, 0.15, n),
        rng.uniform(1.0, 2.5, n), rng.uniform(0.5, 1.5, n), strict=True)]
    q, v, a = fourier_trajectory(n, rng, duration=duration, rate=RATE)
    acting = laws if eps is None else [dataclasses.replace(law, smoothing=Smoothing("tanh", eps))
                                       for law in laws]
    tau = (kd.rnea(truth, q, v, a) + np.column_stack([acting[j](v[:, j]) for j in range(n)])
           + rng.normal(size=q.shape) * noise)
    t = np.arange(q.shape[0]) / RATE
    return truth, laws, t, q + rng.normal(size=q.shape) * noise_q, v, a, tau


def quiet_fit(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kd.KanedynWarning)
        return ki.fit(*args, **kw)


def test_parallel_filter_makes_the_filtered_equation_exact():
    truth, laws, t, q, v, a, tau = measured(0, noise=0.0)
    lp = ki.Lowpass(CUTOFF, RATE)
    tau_f = lp(tau)
    res = quiet_fit(NOMINAL, q, v, a, tau_f, "stribeck", lowpass=lp, every=EVERY)
    true = true_values(res, truth, laws)
    err = np.abs(res.estimate - true) / np.maximum(np.abs(true), 1e-3)
    # the equations at one sample in EVERY, one cut-off period in from the ends
    assert res.rows[0] == lp.period and np.all(np.diff(res.rows) == EVERY)
    # the sharp columns on the same rows: the smeared jumps are an error of the model
    plain = quiet_fit(NOMINAL, q[res.rows], v[res.rows], a[res.rows], tau_f[res.rows],
                      "stribeck")
    err_plain = np.abs(plain.estimate - true) / np.maximum(np.abs(true), 1e-3)
    assert err.max() < 1e-4, (res.names[int(np.argmax(err))], err.max())
    assert err_plain.max() > 1e-2 and err_plain.max() > 1000 * err.max()


def test_segments_are_filtered_apart():
    """Two experiments concatenated: filtered across the joint they would mix the end of
    one with the start of the other; ``segments`` filters each on its own."""
    *_, t1, q1, v1, a1, tau1 = measured(1, noise=0.0, duration=4.0)
    truth, laws, t2, q2, v2, a2, tau2 = measured(1, noise=0.0, duration=4.0)
    rng = np.random.default_rng(5)
    q2, v2, a2 = fourier_trajectory(3, rng, duration=4.0, rate=RATE)
    tau2 = kd.rnea(truth, q2, v2, a2) + np.column_stack([laws[j](v2[:, j]) for j in range(3)])
    lp = ki.Lowpass(CUTOFF, RATE)
    cat = [np.vstack(p) for p in ((q1, q2), (v1, v2), (a1, a2), (lp(tau1), lp(tau2)))]
    res = quiet_fit(NOMINAL, *cat, "stribeck", lowpass=lp, every=EVERY,
                    segments=[t1.size, t2.size])
    err = np.abs(res.estimate - true_values(res, truth, laws))
    assert err.max() < 1e-4 * np.abs(res.estimate).max()
    assert not np.any((res.rows > t1.size - lp.period) & (res.rows < t1.size + lp.period))
    with pytest.raises(kd.IdentificationError, match="adding up to the 8000 samples"):
        ki.fit(NOMINAL, *cat, lowpass=lp, segments=[4000, 3999])
    with pytest.raises(kd.IdentificationError, match="segment 1 has 50 samples"):
        ki.fit(NOMINAL, *cat, lowpass=lp, segments=[7950, 50])
    with pytest.raises(kd.IdentificationError, match="every=0"):
        ki.fit(NOMINAL, *cat, every=0)
    with pytest.raises(kd.IdentificationError, match="identify.Lowpass"):
        ki.fit(NOMINAL, *cat, lowpass=25.0)
    with pytest.raises(kd.IdentificationError, match="Nyquist"):
        ki.Lowpass(600.0, RATE)


def coverage(seeds, eps=None, **options):
    """The share of parameters whose 95 % interval holds the truth, over experiments
    measured the whole way: q with encoder noise (2 µrad), τ with noise, prepare's
    zero-phase filter and differences; and the last fit."""
    inside = []
    for seed in seeds:
        truth, laws, t, q, v, a, tau = measured(seed, eps=eps, noise_q=2e-6)
        tp, qp, vp, ap, taup = ki.prepare(t, q, tau, cutoff=CUTOFF)
        res = quiet_fit(NOMINAL, qp, vp, ap, taup, "stribeck", **options)
        true = true_values(res, truth, laws)
        inside.append((res.interval[:, 0] <= true) & (true <= res.interval[:, 1]))
    return np.mean(inside), res


def test_measured_data_intervals_hold_the_truth_90_to_99_percent():
    """The issue's criterion on measured data (10 experiments, 300 intervals; 0.91
    measured): with the parallel filter the intervals hold, without it (every EVERY-th
    sample of prepare's output, sharp friction columns) they miss."""
    lp = ki.Lowpass(CUTOFF, RATE)
    rate, res = coverage(range(10), lowpass=lp, every=EVERY)
    assert 0.90 <= rate <= 0.99, rate
    assert np.all(res.equations)
    rate_plain, _ = coverage(range(3), every=EVERY)
    assert rate_plain < 0.7, rate_plain


def test_equations_near_rest_are_left_out():
    """A truth whose friction is tanh-smoothed near rest (0.01 rad/s, as a simulation's;
    presliding on a real joint): the sliding law is wrong there, and with the parallel
    filter the error spreads over the filter's reach. v_min = 0.03 rad/s leaves those
    equations out (measured: 0.63 of the intervals hold the truth without, 0.88 with,
    over 10 experiments; here 5)."""
    lp = ki.Lowpass(CUTOFF, RATE)
    without, _ = coverage(range(5), eps=1e-2, lowpass=lp, every=EVERY)
    rate, res = coverage(range(5), eps=1e-2, lowpass=lp, every=EVERY, v_min=0.03)
    assert without < 0.75 and rate >= 0.85, (without, rate)
    # left out: the equations of a joint within one cut-off period of |v| < v_min
    assert 0 < np.count_nonzero(~res.equations) < 0.3 * res.equations.size
    assert not np.any(res.equations & (np.abs(res.v) < 0.03))
    assert "equations near rest left out" in res.report()


def test_v_min_refused_when_it_leaves_too_little():
    *_, t, q, v, a, tau = measured(2, duration=2.0)
    with pytest.raises(kd.IdentificationError, match="equations are left"):
        ki.fit(NOMINAL, q, v, a, tau, "stribeck", v_min=10.0)
    with pytest.raises(kd.IdentificationError, match="v_min=-1"):
        ki.fit(NOMINAL, q, v, a, tau, v_min=-1.0)
