"""Validation by simulation (kanedyn.identify.validation) on synthetic data with a hidden
truth.

The fit sees torques of the perturbed 3-DOF arm of test_fit (``rnea`` + Stribeck +
noise) along a Fourier trajectory. The held-out data are a *simulation* of the truth,
written here independently of the module: ``kd.simulate`` of the perturbed arm with its
friction (tanh-smoothed, as the validation simulates) under a computed-torque law with
PD feedback along another Fourier trajectory; the "measured" torque is the law's output
at the samples plus noise, the accelerations those of ``kd.aba`` at the samples. What
must hold: the identified model's torque prediction error is the noise (RMS within 15 %
of σ), its simulated motion stays close to the measured one, and a model with every
body's parameters ×1.3 (masses ×1.3, same centres of mass) is clearly worse on both.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import identify as ki
from kanedyn.forces import JointFriction, JointTorque
from kanedyn.friction.smoothing import Smoothing

from .test_fit import NOISE, NOMINAL, experiment, fourier_trajectory

EPS = 1e-2  # the tanh width of the truth's friction, as validate's default


def held_out(truth, laws, seed, duration=2.0, dt=1e-3, every=5):
    rng = np.random.default_rng(seed)
    n = truth.nv
    t_d = np.arange(0.0, duration + 1e-9, dt)
    qd, vd, ad = fourier_trajectory(n, rng, duration=duration + dt, rate=1.0 / dt)
    ff = kd.rnea(truth, qd, vd, ad)  # the computed torque of the rigid bodies
    smooth = [dataclasses.replace(law, smoothing=Smoothing("tanh", EPS)) for law in laws]
    Kp, Kd = 50.0, 10.0

    def law(t, q, v):
        k = min(int(round(t / dt)), t_d.size - 1)
        fric = np.array([smooth[j](vd[k, j]) for j in range(n)])
        return ff[k] + fric + Kp * (qd[k] - q) + Kd * (vd[k] - v)

    # held constant over each step: rk4's stages see the sample's torque
    traj = kd.simulate(truth, qd[0], vd[0], duration, method="rk4", dt=dt,
                       forces=[JointTorque(law)] + [JointFriction(f"j{j + 1}", smooth[j])
                                                    for j in range(n)])
    idx = np.arange(0, traj.t.size, every)
    t, q, v = traj.t[idx], traj.q[idx], traj.v[idx]
    tau = np.array([law(tk, qk, vk) for tk, qk, vk in zip(t, q, v, strict=True)])
    fr = np.array([[smooth[j](vk[j]) for j in range(n)] for vk in v])
    a = np.array([kd.aba(truth, qk, vk, tk - fk) for qk, vk, tk, fk in
                  zip(q, v, tau, fr, strict=True)])
    return t, q, v, a, tau + rng.normal(size=tau.shape) * NOISE


@pytest.fixture(scope="module")
def case():
    truth, laws, q, v, a, tau = experiment(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = ki.fit(NOMINAL, q, v, a, tau, friction="stribeck")
    return truth, laws, res, held_out(truth, laws, 4)


def test_identified_model_predicts_the_held_out_torque_to_the_noise(case):
    truth, laws, res, data = case
    t, q, v, a, tau = data
    val = ki.validate(res, *data)
    # the prediction, independently: the truth's rigid bodies and exact friction laws
    exact = kd.rnea(truth, q, v, a) + np.column_stack([laws[j](v[:, j]) for j in range(3)])
    # away from v = 0 (where the truth's smoothed sign and the laws' sgn agree to 1e-4 Fs)
    moving = np.all(np.abs(v) > 5 * EPS, axis=1)
    assert moving.sum() > 0.7 * t.size
    err = np.sqrt(np.mean((val.tau_pred - tau)[moving] ** 2, axis=0))
    np.testing.assert_allclose(err, NOISE, rtol=0.15)
    assert np.all(np.sqrt(np.mean((val.tau_pred - exact)[moving] ** 2, axis=0)) < 0.3 * NOISE)
    # over all samples: no worse than the truth's own prediction by more than 5 %
    truth_val = ki.validate(res, *data, standard=ki.standard_parameters(truth))
    assert np.all(val.torque_rms < 1.05 * truth_val.torque_rms), (val.torque_rms,
                                                                    truth_val.torque_rms)
    np.testing.assert_allclose(val.torque_rms, np.sqrt(np.mean((val.tau_pred - tau) ** 2, 0)))
    np.testing.assert_allclose(val.torque_relative,
                               val.torque_rms / np.sqrt(np.mean(tau ** 2, axis=0)))
    np.testing.assert_allclose(val.noise, res.sigma)
    assert "j2" in val.report()


def test_identified_model_follows_the_held_out_motion_and_a_wrong_one_does_not(case):
    truth, laws, res, data = case
    val = res.validate(*data)
    assert np.all(val.q_rms < 0.05), val.q_rms
    np.testing.assert_allclose(val.q_sim[0], data[1][0])
    wrong = ki.validate(res, *data, standard=1.3 * ki.standard_parameters(truth))
    assert np.all(wrong.q_rms > 3 * val.q_rms), (wrong.q_rms, val.q_rms)
    assert np.all(wrong.torque_rms > 1.5 * val.torque_rms), (wrong.torque_rms, val.torque_rms)


def test_a_horizon_shortens_the_simulation_and_not_the_torque_errors(case):
    _, _, res, data = case
    t = data[0]
    full = res.validate(*data)
    horizon = 0.4 * (t[-1] - t[0])
    short = res.validate(*data, horizon=horizon)
    n = int(np.sum(t <= t[0] + horizon))
    assert 2 <= n < t.size and short.q_sim.shape == (n, full.q_sim.shape[1])
    # the same integration (same steps from the same start), only stopped earlier
    np.testing.assert_allclose(short.q_sim, full.q_sim[:n], rtol=0, atol=1e-12)
    np.testing.assert_allclose(short.q_rms, np.sqrt(np.mean((full.q_sim[:n] - data[1][:n]) ** 2,
                                                            axis=0)), rtol=1e-9)
    np.testing.assert_array_equal(short.torque_rms, full.torque_rms)
    for bad in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(kd.IdentificationError, match="horizon"):
            res.validate(*data, horizon=bad)


def test_validate_refuses_bad_input(case):
    _, _, res, (t, q, v, a, tau) = case
    with pytest.raises(kd.IdentificationError, match="t has"):
        ki.validate(res, t[:-1], q, v, a, tau)
    with pytest.raises(kd.IdentificationError, match="increase"):
        ki.validate(res, t[::-1], q, v, a, tau)
    with pytest.raises(kd.IdentificationError, match="samples"):
        ki.validate(res, t, q, v, a, tau[:-1])
    with pytest.raises(kd.IdentificationError, match="standard"):
        ki.validate(res, t, q, v, a, tau, standard=np.ones(7))
