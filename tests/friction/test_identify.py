"""Identification: recovery of known parameters from noisy synthetic data, coverage of
the reported confidence intervals, low-speed sampling density, asymmetric laws,
RNEA-compensated joint data, and bad data."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import FrictionError, friction

TRUTH = friction.Stribeck(Fc=1.0, Fs=1.5, vs=0.02, delta=2.0, Fv=0.3)
TRUE = {"Fc": 1.0, "Fs": 1.5, "vs": 0.02, "delta": 2.0, "Fv": 0.3}


def speeds(n=40, lo=1e-3, hi=1.0, log=True):
    s = np.geomspace(lo, hi, n) if log else np.linspace(lo, hi, n)
    return np.concatenate([s, -s])


@pytest.mark.parametrize("sigma", [0.005, 0.02, 0.05])
def test_confidence_intervals_cover_the_truth(sigma):
    """Over 30 independent noise draws each 95 % interval should hold the truth ~95 % of
    the time; with 30 draws a true coverage of 95 % gives >= 24 hits with probability
    > 0.999 (binomial), so a wrong covariance (off by √2 or more) fails."""
    v = speeds()
    rng = np.random.default_rng(1234)
    hits = dict.fromkeys(TRUE, 0)
    errs = []
    for _ in range(30):
        F = TRUTH(v) + sigma * rng.normal(size=v.size)
        r = friction.fit(v, F, model="stribeck")
        for n, x in TRUE.items():
            lo, hi = r.ci[n]
            hits[n] += lo <= x <= hi
        errs.append(abs(r.params["Fs"] - 1.5) / r.stderr["Fs"])
        assert r.law.discontinuous and isinstance(r.law, friction.Stribeck)
    assert min(hits.values()) >= 24, hits
    assert np.median(errs) < 1.5                   # |error| / stderr ~ half-normal, median 0.67


def test_stderr_grows_linearly_with_noise():
    v = speeds()
    z = np.random.default_rng(7).normal(size=v.size)
    se = [friction.fit(v, TRUTH(v) + s * z, model="gaussian").stderr["Fs"] for s in (0.01, 0.04)]
    assert se[1] / se[0] == pytest.approx(4.0, rel=0.15)


def test_low_speed_sampling_density_decides_the_stribeck_parameters():
    """40 samples per side at the same noise; k of them below 2 vs (log-spaced in
    [1e-3, 0.04]), the rest in [0.05, 1]. The Stribeck parameters are only as good as
    the low-speed samples: their standard errors fall with k, that of vs more than
    twofold from k = 2 to 5 (the bench prints the full table)."""
    se = {}
    for k in (2, 5, 10, 20):
        s = np.r_[np.geomspace(1e-3, 0.04, k), np.geomspace(0.05, 1.0, 40 - k)]
        v = np.r_[s, -s]
        noise = 0.02 * np.random.default_rng(1).normal(size=v.size)
        se[k] = friction.fit(v, TRUTH(v) + noise, model="gaussian").stderr
    for n in ("vs", "Fs"):
        assert se[2][n] > se[5][n] > se[10][n] > se[20][n]
        assert se[5][n] > 1.6 * se[20][n]
    assert se[2]["vs"] > 2 * se[5]["vs"]


def test_robust_loss_resists_outliers():
    v = speeds()
    rng = np.random.default_rng(11)
    F = TRUTH(v) + 0.01 * rng.normal(size=v.size)
    F[::9] += 3.0                                    # 10 % gross outliers
    robust = friction.fit(v, F, model="gaussian", loss="soft_l1")
    plain = friction.fit(v, F, model="gaussian", loss="linear")
    err = lambda r: max(abs(r.params[n] - TRUE[n]) / TRUE[n] for n in ("Fc", "Fs", "Fv"))
    assert err(robust) < 0.05 < err(plain)


def test_asymmetric_fit_recovers_both_sides():
    pos = friction.gaussian(1.0, 1.5, 0.02, 0.3)
    neg = friction.gaussian(0.7, 1.2, 0.03, 0.2)
    law = friction.Asymmetric(pos, neg)
    v = speeds(50)
    F = law(v) + 0.01 * np.random.default_rng(5).normal(size=v.size)
    r = friction.fit(v, F, model="gaussian", asymmetric=True)
    truth = {"Fc_pos": 1.0, "Fs_pos": 1.5, "vs_pos": 0.02, "Fv_pos": 0.3,
             "Fc_neg": 0.7, "Fs_neg": 1.2, "vs_neg": 0.03, "Fv_neg": 0.2}
    for n, x in truth.items():
        assert abs(r.params[n] - x) < 4 * r.stderr[n], (n, r.params[n], x, r.stderr[n])
    assert isinstance(r.law, friction.Asymmetric)
    assert "Fc_neg" in r.report() and r.cov.shape == (8, 8)


def test_joint_data_compensated_through_rnea():
    """τ = M a + h + F(v) on joint 2 of a double pendulum, at random states: the fit on
    τ - RNEA must recover F, while fitting raw τ could not (gravity is O(10) N m)."""
    model = kd.models.pendulum_chain(2)
    rng = np.random.default_rng(2)
    N = 200
    q = rng.uniform(-1, 1, (N, 2))
    s = np.geomspace(1e-3, 1.0, N // 2)
    v = np.column_stack([rng.uniform(-1, 1, N), np.concatenate([s, -s])])
    a = rng.uniform(-2, 2, (N, 2))
    tau = np.asarray(kd.rnea(model, q, v, a))
    tau[:, 1] += TRUTH(v[:, 1]) + 0.005 * rng.normal(size=N)
    r = friction.fit_joint(model, q, v, a, tau, "joint2", model="stribeck")
    for n, x in TRUE.items():
        assert abs(r.params[n] - x) < 4 * r.stderr[n], (n, r.params[n], x)
    assert r.stderr["Fs"] < 0.01


def test_fit_through_the_dynamics_from_a_free_trajectory():
    """A pendulum driven by a sinusoidal torque, with exact stick–slip friction; the fit
    sees only (t, q, v, τ) sampled every 2 ms — no constant-velocity runs."""
    model = kd.models.pendulum_chain(1)
    law = friction.Stribeck(0.3, 0.45, 0.05, 2.0, 0.2)
    drive = lambda t, q, v: np.array([4.0 * np.sin(2 * np.pi * 0.7 * t)])
    tr = friction.simulate(model, [0.0], [0.0], 6.0, {"joint1": law}, tau=drive, dt_out=2e-3,
                           rtol=1e-11, atol=1e-13)
    tau = np.array([drive(t, None, None) for t in tr.t])
    r = friction.fit_trajectory(model, tr.t, tr.q, tr.v, tau, "joint1", model="gaussian",
                                window=7, polyorder=3)
    truth = {"Fc": 0.3, "Fs": 0.45, "vs": 0.05, "Fv": 0.2}
    for n, x in truth.items():
        assert r.params[n] == pytest.approx(x, rel=0.03), (n, r.params[n])


def test_report_and_plot(tmp_path):
    v = speeds()
    r = friction.fit(v, TRUTH(v) + 0.01 * np.random.default_rng(0).normal(size=v.size))
    text = r.report()
    for n in TRUE:
        assert n in text
    assert "95% interval" in text and "rms" in text
    assert r.residuals.shape == v.shape and r.rms == pytest.approx(0.01, rel=0.3)
    p = r.plot(str(tmp_path / "fit.png"))
    assert (tmp_path / "fit.png").stat().st_size > 1000 and p.endswith("fit.png")


@pytest.mark.parametrize("v, F, match", [
    (np.zeros(20), np.ones(20), "all velocities are zero"),
    (np.linspace(0.01, 1, 20), np.ones(20), "only 0 samples at negative speed"),
    (-np.linspace(0.01, 1, 20), -np.ones(20), "only 0 samples at positive speed"),
    (np.array([0.1, -0.1, 0.2, -0.2]), np.array([1.0, -1.0, 1.1, -1.1]), "too few"),
    (np.array([0.1, -0.1]), np.array([1.0]), "v has 2 samples but F has 1"),
    (np.array([0.1, np.nan, -0.1, 0.2]), np.ones(4), "NaN"),
])
def test_bad_data_raise_friction_error(v, F, match):
    with pytest.raises(FrictionError, match=match):
        friction.fit(v, F)


def test_one_sided_asymmetric_and_bad_options():
    v = speeds()
    F = TRUTH(v)
    with pytest.raises(FrictionError, match="model 'magic' unknown"):
        friction.fit(v, F, model="magic")
    with pytest.raises(FrictionError, match="loss"):
        friction.fit(v, F, loss="l7")
    with pytest.raises(FrictionError, match="samples at negative speed"):
        friction.fit(np.r_[v[:40], -0.1, -0.2], np.r_[F[:40], -1, -1], asymmetric=True)


def test_fit_that_does_not_converge_raises_and_returns_nothing():
    v = speeds()
    F = TRUTH(v) + 0.01 * np.random.default_rng(0).normal(size=v.size)
    with pytest.raises(FrictionError, match="did not converge"):
        friction.fit(v, F, model="stribeck", max_nfev=1,
                     p0={"Fc": 5.0, "Fs": 9.0, "vs": 0.5, "delta": 0.5, "Fv": 0.0})


@pytest.mark.parametrize("model, law, truth", [
    ("exponential", friction.exponential(1.0, 1.6, 0.03, 0.2),
     {"Fc": 1.0, "Fs": 1.6, "vs": 0.03, "Fv": 0.2}),
    ("rational", friction.RationalStribeck(1.0, 1.6, 0.03, 2.0, 0.2),
     {"Fc": 1.0, "Fs": 1.6, "vs": 0.03, "Fv": 0.2}),
    ("coulomb_viscous", friction.Stribeck(0.8, 0.8, 1.0, 2.0, 0.5), {"Fc": 0.8, "Fv": 0.5}),
])
def test_each_model_recovers_its_own_law(model, law, truth):
    v = speeds(30)
    F = law(v) + 0.01 * np.random.default_rng(9).normal(size=v.size)
    r = friction.fit(v, F, model=model)
    assert set(r.params) == set(truth)
    for n, x in truth.items():
        assert abs(r.params[n] - x) < 4 * r.stderr[n], (n, r.params[n], x, r.stderr[n])
    np.testing.assert_allclose(r.law(v), law(v), atol=0.02)
