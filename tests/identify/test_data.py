"""Identification data from measurements (kanedyn.identify.data): q̇, q̈ from sampled
q through the zero-phase filter match the exact derivatives of a Fourier trajectory;
a fit on such data recovers the parameters; a CSV round trip; bad data refused by name."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import identify as ki

ARM = kd.models.elbow_arm()


def fourier(t):
    """Two harmonics of 0.2 Hz per joint, and their exact derivatives."""
    w = 2 * np.pi * 0.2 * np.array([1.0, 2.0])
    A = np.array([[0.5, 0.2], [-0.3, 0.25], [0.4, -0.2]])
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    return s @ (A / w).T, c @ A.T, -s @ (A * w).T


def test_derivatives_through_the_zero_phase_filter():
    t = np.arange(0.0, 10.0, 1e-3)
    q, v, a = fourier(t)
    tau = kd.rnea(ARM, q, v, a)
    rng = np.random.default_rng(0)
    tp, qp, vp, ap, taup = ki.prepare(t, q + rng.normal(0, 1e-5, q.shape), tau, cutoff=5.0)
    keep = (t >= tp[0] - 1e-12) & (t <= tp[-1] + 1e-12)
    assert np.array_equal(tp, t[keep]) and tp.size == t.size - 2 * 200
    np.testing.assert_allclose(qp, q[keep], atol=1e-4)
    np.testing.assert_allclose(vp, v[keep], atol=2e-3)  # rad/s, of speeds up to 0.7
    np.testing.assert_allclose(ap, a[keep], atol=2e-2)  # rad/s², of accelerations up to 1.4
    np.testing.assert_allclose(taup, tau[keep], atol=1e-3 * np.abs(tau).max())


def test_a_fit_on_filtered_measurements():
    t = np.arange(0.0, 20.0, 1e-3)
    q, v, a = fourier(t)
    rng = np.random.default_rng(1)
    tau = kd.rnea(ARM, q, v, a) + rng.normal(0, 0.05, q.shape)
    tp, qp, vp, ap, taup = ki.prepare(t, q + rng.normal(0, 1e-5, q.shape), tau, cutoff=5.0)
    # one sample per 1/(2 cut-off) = 0.1 s: the filtered noise is correlated over that
    # much, and the fit's covariance takes its samples as independent (Gautier's
    # parallel decimation)
    k = slice(None, None, 100)
    res = ki.fit(ARM, qp[k], vp[k], ap[k], taup[k], friction="none")
    true = res.base.of(ki.standard_parameters(ARM))
    assert np.max(np.abs(res.estimate - true) / res.stderr) < 4


def test_csv_round_trip_and_bad_files(tmp_path):
    t = np.arange(0.0, 1.0, 0.01)
    q, v, a = fourier(t)
    tau = kd.rnea(ARM, q, v, a)
    path = tmp_path / "run.csv"
    names = ARM.joint_names
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t"] + [f"q_{n}" for n in names] + [f"tau_{n}" for n in names])
        for k in range(t.size):
            w.writerow([repr(float(x)) for x in (t[k], *q[k], *tau[k])])
    t2, q2, tau2 = ki.read_csv(str(path), ARM)
    assert np.array_equal(t2, t) and np.array_equal(q2, q) and np.array_equal(tau2, tau)
    other = tmp_path / "other.csv"
    other.write_text("t,q_j1,q_j2,q_j3,q_wrist,tau_j1,tau_j2,tau_j3\n0,0,0,0,0,0,0,0\n")
    with pytest.raises(kd.IdentificationError, match=r"\['q_wrist'\] name no joint"):
        ki.read_csv(str(other), ARM)
    short = tmp_path / "short.csv"
    short.write_text("t,q_j1,q_j2,q_j3,tau_j1,tau_j2\n0,0,0,0,0,0\n")
    with pytest.raises(kd.IdentificationError, match=r"\['tau_j3'\] are missing"):
        ki.read_csv(str(short), ARM)


def test_bad_measurements_are_named():
    t = np.arange(0.0, 2.0, 1e-3)
    q, v, a = fourier(t)
    tau = np.zeros_like(q)
    back = t.copy()
    back[500] = back[498]
    with pytest.raises(kd.IdentificationError, match="not increasing at row 500"):
        ki.prepare(back, q, tau, cutoff=5.0)
    uneven = t.copy()
    uneven[700:] += 5e-4
    with pytest.raises(kd.IdentificationError, match="not uniform"):
        ki.prepare(uneven, q, tau, cutoff=5.0)
    with pytest.raises(kd.IdentificationError, match="Nyquist"):
        ki.prepare(t, q, tau, cutoff=600.0)
    nan = q.copy()
    nan[[3, 9]] = np.nan
    with pytest.raises(kd.IdentificationError, match=r"rows \[3, 9\]"):
        ki.prepare(t, nan, tau, cutoff=5.0)
    with pytest.raises(kd.IdentificationError, match="2000, 2000, 1999 samples"):
        ki.prepare(t, q, tau[:-1], cutoff=5.0)
