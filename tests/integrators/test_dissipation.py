"""Controlled dissipation: a stiff mode is damped out, the slow swing is kept, and the
energy decreases monotonically by exactly the documented amount."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.forces import JointSpring


@pytest.fixture(scope="module")
def runs():
    # joint 2 carries a stiff spring: a mode near 350 rad/s (hω ≈ 3.5 at dt = 0.01) on top
    # of the slow pendulum swing (≈ 3 rad/s)
    m = kd.models.pendulum_chain(2)
    spring = [JointSpring("joint2", 4e4)]
    kw = dict(method="avf", dt=0.01, forces=spring)
    return (kd.simulate(m, [0.6, 0.05], [0, 0], 4.0, **kw),
            kd.simulate(m, [0.6, 0.05], [0, 0], 4.0, dissipation=0.5, **kw))


def test_stiff_mode_damped_slow_motion_kept(runs):
    plain, damped = runs
    q2p, q2d = plain.q[:, 1], damped.q[:, 1]
    assert np.ptp(q2p[-50:]) > 0.9 * np.ptp(q2p[:50])  # undamped: the stiff mode persists
    assert np.ptp(q2d[-50:]) < 1e-3 * np.ptp(q2p[:50])  # damped: gone
    # the slow swing loses ≈ α h ω² t ≈ 0.5·0.01·9·4 ≈ 18 % of its energy, ≈ 9 % amplitude
    amp_p, amp_d = np.ptp(plain.q[-150:, 0]), np.ptp(damped.q[-150:, 0])
    assert 0.8 * amp_p < amp_d < amp_p


def test_energy_decreases_monotonically(runs):
    plain, damped = runs
    assert np.all(np.diff(damped.energy) < 0)
    assert np.abs(plain.budget).max() < 1e-7 * abs(plain.energy[0])  # (quadrature limited)


def test_dissipation_must_be_nonnegative():
    m = kd.models.pendulum_chain(1)
    with pytest.raises(kd.SolverError, match="dissipation"):
        kd.simulate(m, [0.1], [0.0], 0.1, method="avf", dt=0.01, dissipation=-1.0)
