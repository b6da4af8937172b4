"""Excitation design (kanedyn.identify.design): the optimised finite Fourier series
respects every limit at every instant (checked on a 1 kHz sampling, not the design's own
bounds) and has a lower condition number than its start (both recomputed here from the
trajectory and the regressor); its speeds and accelerations are the derivatives of its
positions; a designed trajectory determines the parameters better than the start.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import identify as ki

# the 3-DOF arm of the fit's tests (loaded by path: the tests run in importlib mode)
_spec = importlib.util.spec_from_file_location("identify_test_fit",
                                               Path(__file__).with_name("test_fit.py"))
_fit_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fit_tests)
NOMINAL = _fit_tests.NOMINAL

LIMITS = dict(q_limits=[(-2.5, 2.5), (-1.5, 1.0), (-2.0, 2.0)], v_limits=[2.0, 1.5, 2.0],
              a_limits=5.0)


@pytest.fixture(scope="module")
def design():
    return ki.excitation(NOMINAL, harmonics=3, samples=40, max_iter=30, **LIMITS)


def cond(model, q, v, a):
    bp = ki.base_parameters(model)
    W = bp.regressor(ki.joint_torque_regressor(model, q, v, a)).reshape(-1, bp.rank)
    return np.linalg.cond(W / np.linalg.norm(W, axis=0))  # the columns equilibrated


def test_the_design_respects_every_limit_and_lowers_the_condition_number(design):
    t, q, v, a = design.sample(1000.0)
    lo, hi = np.array(LIMITS["q_limits"]).T
    assert np.all(q >= lo) and np.all(q <= hi)
    assert np.all(np.abs(v) <= LIMITS["v_limits"])
    assert np.all(np.abs(a) <= LIMITS["a_limits"])
    # the condition number it reports, recomputed at its 40 samples of a period
    ts = np.arange(40) * design.period / 40
    assert np.isclose(cond(NOMINAL, *design.trajectory(ts)), design.condition_number,
                      rtol=1e-8)
    assert design.condition_number < 0.5 * design.initial_condition_number


def test_the_series_is_consistent(design):
    """q̇ and q̈ are the time derivatives of q (central differences, h = 1e-4 s), and the
    trajectory is periodic."""
    t = np.linspace(0.3, 9.0, 7)
    h = 1e-4
    qp, qm = design.trajectory(t + h)[0], design.trajectory(t - h)[0]
    q, v, a = design.trajectory(t)
    np.testing.assert_allclose((qp - qm) / (2 * h), v, atol=1e-6)
    np.testing.assert_allclose((qp - 2 * q + qm) / h**2, a, atol=1e-3)
    np.testing.assert_allclose(design.trajectory(t + design.period)[0], q, atol=1e-9)


def test_a_designed_trajectory_determines_the_parameters_better(design):
    """The same noise level on the design and on its start (a random series at half the
    limits, ``max_iter=0``): the median standard error of the base parameters is smaller
    on the design."""
    rng = np.random.default_rng(0)
    t, q, v, a = design.sample(100.0)
    tau = kd.rnea(NOMINAL, q, v, a) + rng.normal(size=q.shape) * 0.05
    good = ki.fit(NOMINAL, q, v, a, tau, friction="none")
    start = ki.excitation(NOMINAL, harmonics=3, samples=40, max_iter=0, **LIMITS)
    # (no iteration: the start, up to the finite-difference probes SLSQP evaluates)
    assert np.isclose(start.condition_number, start.initial_condition_number, rtol=1e-6)
    t, q, v, a = start.sample(100.0)
    tau = kd.rnea(NOMINAL, q, v, a) + rng.normal(size=q.shape) * 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the start may excite some parameters barely
        poor = ki.fit(NOMINAL, q, v, a, tau, friction="none")
    assert np.median(good.stderr / poor.stderr) < 0.7


def test_missing_limits_are_named():
    with pytest.raises(kd.IdentificationError, match="a_limits"):
        ki.excitation(NOMINAL, q_limits=LIMITS["q_limits"], v_limits=1.0)
    with pytest.raises(kd.IdentificationError, match="'j1' has no position limits"):
        ki.excitation(NOMINAL, v_limits=1.0, a_limits=1.0)
    with pytest.raises(kd.IdentificationError, match="one speed"):
        ki.excitation(kd.models.free_body(), a_limits=1.0)
