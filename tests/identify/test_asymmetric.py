"""Asymmetric friction levels (``identify.fit(..., asymmetric=True)``): the Coulomb and
static levels of each joint differ between positive and negative speeds (a gearbox
loaded one way, a cable, a seal), F_v and the Stribeck pair (v_s, δ) shared.

The hidden truth is the perturbed 3-DOF arm of test_fit with, on every joint, a
``friction.Asymmetric`` of two Stribeck laws whose levels differ by 20-40 %; the data
are ``rnea`` + friction + noise along Fourier trajectories. What must hold: the 95 %
intervals of the base and the direction-wise friction parameters hold the truth 90-99 %
of the time; a symmetric fit of the same data cannot explain them (its residual is many
times the noise); the identified law and the validation use the direction's levels.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import friction
from kanedyn import identify as ki

from .test_fit import NOISE, NOMINAL, fourier_trajectory, perturbed


def asymmetric_experiment(seed, duration=10.0):
    rng = np.random.default_rng(seed)
    truth = perturbed(NOMINAL, rng)
    laws = []
    for _ in range(NOMINAL.nv):
        Fc, dF, vs, delta, Fv = (rng.uniform(1, 2), rng.uniform(0.5, 1.0),
                                 rng.uniform(0.05, 0.15), rng.uniform(1.0, 2.5),
                                 rng.uniform(0.5, 1.5))
        k = rng.uniform(0.6, 0.8)  # the negative direction's levels, relative
        laws.append(friction.Asymmetric(friction.Stribeck(Fc, Fc + dF, vs, delta, Fv),
                                        friction.Stribeck(k * Fc, k * (Fc + dF), vs, delta,
                                                          Fv)))
    q, v, a = fourier_trajectory(NOMINAL.nv, rng, duration=duration)
    tau = (kd.rnea(truth, q, v, a) + np.column_stack([laws[j](v[:, j]) for j in range(3)])
           + rng.normal(size=q.shape) * NOISE)
    return truth, laws, q, v, a, tau


def truth_of(res, truth, laws):
    own = [[l.positive.Fc, l.negative.Fc, l.positive.Fs, l.negative.Fs, l.positive.Fv,
            l.positive.vs, l.positive.delta] for l in laws]
    return np.concatenate([res.base.of(ki.standard_parameters(truth))] + own)


def quiet_fit(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kd.KanedynWarning)  # a δ at its bound is noted
        return ki.fit(*args, **kw)


def test_asymmetric_levels_hold_the_truth_90_to_99_percent():
    inside = []
    for seed in range(12):
        truth, laws, q, v, a, tau = asymmetric_experiment(200 + seed)
        res = quiet_fit(NOMINAL, q, v, a, tau, "stribeck", asymmetric=True)
        true = truth_of(res, truth, laws)
        inside.append((res.interval[:, 0] <= true) & (true <= res.interval[:, 1]))
    assert res.names[res.base.rank:res.base.rank + 7] == [
        "j1.Fc_pos", "j1.Fc_neg", "j1.Fs_pos", "j1.Fs_neg", "j1.Fv", "j1.vs", "j1.delta"]
    assert 0.90 <= np.mean(inside) <= 0.99, np.mean(inside)
    # the noise per joint recovered: the model explains the data
    assert np.allclose(res.sigma, NOISE, rtol=0.15), res.sigma


def test_a_symmetric_fit_cannot_explain_asymmetric_friction():
    truth, laws, q, v, a, tau = asymmetric_experiment(7)
    asym = quiet_fit(NOMINAL, q, v, a, tau, "stribeck", asymmetric=True)
    sym = quiet_fit(NOMINAL, q, v, a, tau, "stribeck")
    # the half-difference of the levels is a torque offset of the direction; on the
    # horizontal axes j2, j3 the gravity columns stand in for part of it over the range
    # moved, on the vertical axis j1 nothing can
    assert sym.sigma[0] > 3 * asym.sigma[0] and np.all(sym.sigma > asym.sigma), (
        sym.sigma, asym.sigma)
    # the law of a joint is the pair, each direction with its own levels
    law = asym.friction_law("j2")
    assert isinstance(law, friction.Asymmetric)
    speeds = np.array([-1.0, -0.3, -0.05, 0.05, 0.3, 1.0])
    assert np.allclose(law(speeds), asym.friction_torque("j2", speeds), rtol=1e-12)
    # and near the truth's, within a few of the curve's own standard errors
    F, half = ki.friction_band(asym, "j2", speeds)
    assert np.all(np.abs(F - laws[1](speeds)) < 2.0 * half), (F, laws[1](speeds), half)
    # predicted torques on held-out data to the noise, the symmetric fit's far worse
    *_, q2, v2, a2, tau2 = asymmetric_experiment(7, duration=3.0)
    rms = [np.sqrt(np.mean((r.predict(q2, v2, a2) - tau2) ** 2, axis=0)) for r in (asym, sym)]
    assert np.all(rms[0] < 1.2 * NOISE) and rms[1][0] > 3 * NOISE[0], rms
    # validation by simulation applies the direction's levels (0.5 s of held-out data)
    t2 = np.arange(q2.shape[0]) * 0.01
    val = asym.validate(t2[:50], q2[:50], v2[:50], a2[:50], tau2[:50], dt=1e-3)
    assert np.all(val.torque_rms < 1.3 * NOISE), val.torque_rms


def test_a_direction_never_moved_is_named():
    truth, laws, q, v, a, tau = asymmetric_experiment(3)
    one_way = v.copy()
    one_way[:, 2] = np.abs(v[:, 2]) + 0.1  # j3 turns one way only
    with pytest.raises(kd.IdentificationError, match="'j3' never moves at negative speed"):
        ki.fit(NOMINAL, q, one_way, a, tau, "stribeck", asymmetric=True)
    with pytest.raises(kd.IdentificationError, match="asymmetric=True needs"):
        ki.fit(NOMINAL, q, v, a, tau, "none", asymmetric=True)
    # viscous + Coulomb, asymmetric: linear, F_c per direction
    res = quiet_fit(NOMINAL, q, v, a, tau, asymmetric=True)
    assert [n for n in res.names if n.startswith("j1.")] == ["j1.Fc_pos", "j1.Fc_neg", "j1.Fv"]
