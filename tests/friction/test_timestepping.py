"""Fixed-step treatments of v = 0: per-step complementarity sticks exactly, Karnopp keeps
the speed it entered its band with, smoothing creeps at the derived speed, and all
agree with the closed-form Coulomb oscillator to O(dt)."""

import math

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import FrictionError, friction
from kanedyn.model.joints import Prismatic


def slider() -> kd.Model:
    b = kd.ModelBuilder("slider", gravity=(0.0, 0.0, 0.0))
    b.add_body("block", None, Prismatic("x", axis=(1.0, 0.0, 0.0)), mass=1.0,
               inertia=np.eye(3) * 0.01)
    return b.build()


class Slider1:
    """The same slider as a hand-written protocol system (M = 1, h = 0): cheaper steps."""

    nq = nv = 1
    model = None

    def mass_matrix(self, q):
        return np.ones((1, 1))

    def nonlinear_effects(self, q, v):
        return np.zeros(1)

    def forward_dynamics(self, q, v, tau):
        return np.asarray(tau, float)

    def energy(self, q, v):
        return 0.5 * float(v[0]) ** 2

    def q_dot(self, q, v):
        return np.asarray(v, float)

    def integrate_configuration(self, q, v, dt):
        return q + dt * np.asarray(v)


COULOMB = friction.Stribeck(2.0, 2.0, 1e-2, 2.0, 0.0)
LOAD = lambda t, q, v: np.array([1.5])


def test_per_step_complementarity_holds_exactly_below_the_friction_level():
    st = friction.time_stepping(slider(), [0.0], [0.0], 10.0, 1e-2, {"x": COULOMB}, tau=LOAD)
    assert np.all(st.v == 0.0) and np.all(st.q == 0.0) and np.all(st.friction.stuck)
    np.testing.assert_allclose(st.friction.force[1:, 0], -1.5, rtol=1e-12)   # holds the load


def test_per_step_complementarity_slides_above_it():
    push = lambda t, q, v: np.array([2.5])
    st = friction.time_stepping(slider(), [0.0], [0.0], 1.0, 1e-3, {"x": COULOMB}, tau=push)
    # net force 0.5 N on 1 kg: v(1) = 0.5 exactly for semi-implicit Euler
    assert st.v[-1, 0] == pytest.approx(0.5, rel=1e-12)
    assert not st.friction.stuck[-1, 0]


def test_coulomb_oscillator_stops_where_the_closed_form_says():
    """As in the event-driven test: from rest at 5.2 with k = 1, Fc = 1, Fs = 1.3 the mass
    turns at -3.2 and stops at 1.2 at t = 2π; first-order time stepping gets there to O(dt)."""
    law = friction.Stribeck(1.0, 1.3, 1e-9, 2.0, 0.0)
    spring = lambda t, q, v: -q
    st = friction.time_stepping(Slider1(), [5.2], [0.0], 7.0, 1e-3, {0: law}, tau=spring)
    assert st.q[-1, 0] == pytest.approx(1.2, abs=5e-3)
    # at the reversal at t = π the velocity passes 0 inside one step, which the step
    # resolves as stuck for that step; the final stick is the one that lasts
    moving = np.nonzero(~st.friction.stuck[:, 0])[0]
    final_stick = st.t[moving[-1] + 1]
    assert final_stick == pytest.approx(2 * math.pi, abs=5e-3)
    assert np.count_nonzero(st.friction.stuck[(st.t > 0.1) & (st.t < 6.0), 0]) <= 2
    after = st.t > 2 * math.pi + 0.01
    assert np.all(st.v[after] == 0.0)


def test_karnopp_keeps_the_speed_it_entered_the_band_with():
    """Karnopp's band holds v̇ = 0, not v = 0: decelerating by 2 m/s² from 0.05 m/s in
    steps of 2e-3 m/s, the slider enters the 1e-2 band at 0.05 - 20·0.002 and drifts."""
    st = friction.time_stepping(slider(), [0.0], [0.05], 1.0, 1e-3,
                                {"x": friction.Karnopp(COULOMB, 1e-2)})
    entry = st.v[21, 0]
    assert entry == pytest.approx(0.05 - 21 * 2e-3, abs=1e-12) or entry < 1e-2
    assert np.all(st.v[25:, 0] == st.v[-1, 0])               # constant from then on
    assert 0.0 < st.v[-1, 0] < 1e-2
    # the same start with per-step complementarity ends at rest
    ex = friction.time_stepping(slider(), [0.0], [0.05], 1.0, 1e-3, {"x": COULOMB})
    assert ex.v[-1, 0] == 0.0


@pytest.mark.parametrize("kind", ["tanh", "sqrt"])
def test_smoothed_creep_in_time_stepping(kind):
    eps = 1e-3
    r = 1.5 / 2.0
    expect = eps * (math.atanh(r) if kind == "tanh" else r / math.sqrt(1 - r * r))
    st = friction.time_stepping(Slider1(), [0.0], [0.0], 1.0, 1e-3,
                                {0: COULOMB.smoothed(kind, eps)}, tau=LOAD)
    assert st.v[-1, 0] == pytest.approx(expect, rel=1e-6)


def test_time_stepping_bad_input():
    with pytest.raises(FrictionError, match="dt=0.0"):
        friction.time_stepping(slider(), [0.0], [0.0], 1.0, 0.0, {"x": COULOMB})
    with pytest.raises(FrictionError, match="band=0.0"):
        friction.Karnopp(COULOMB, 0.0)
    with pytest.raises(FrictionError, match="no friction joints"):
        friction.time_stepping(slider(), [0.0], [0.0], 1.0, 1e-3, {})


def test_kd_simulate_time_stepping_is_the_same_run():
    """kd.simulate(method="time_stepping") with the law as a JointFriction element is
    friction.time_stepping's run, bit for bit, in one kd.Trajectory; other force elements
    (a spring) are applied forces of the step, their potential part of the energy."""
    from kanedyn.forces import JointFriction, JointSpring

    push = lambda t, q, v: np.array([2.5])
    st = friction.time_stepping(slider(), [0.0], [0.0], 0.2, 1e-3, {"x": COULOMB}, tau=push)
    via = kd.simulate(slider(), [0.0], [0.0], 0.2, method="time_stepping", dt=1e-3,
                      forces=[JointFriction("x", COULOMB)], tau=push)
    assert isinstance(st, kd.Trajectory) and via.method == "time_stepping"
    np.testing.assert_array_equal(via.v, st.v)
    np.testing.assert_array_equal(via.friction.force, st.friction.force)
    # works are taken with v⁺, so per step E⁺ − E − W = ½(v⁺² − v²) − (v⁺ − v) v⁺
    # = −½ (v⁺ − v)² (M = 1): the budget of the first-order step, summed
    np.testing.assert_allclose(st.budget[1:], -0.5 * np.cumsum(np.diff(st.v[:, 0]) ** 2),
                               rtol=1e-9, atol=1e-15)
    # the heat: the block slides against −2 N at the speed it has after each step
    np.testing.assert_allclose(st.friction.dissipated[-1],
                               2.0 * 1e-3 * np.sum(st.v[1:, 0]), rtol=1e-12)
    # other force elements go to the step as applied forces, their potential into E
    spring = JointSpring("x", 30.0)
    st = friction.time_stepping(slider(), [0.0], [0.0], 0.2, 1e-3, {"x": COULOMB}, tau=push,
                                forces=[spring])
    via = kd.simulate(slider(), [0.0], [0.0], 0.2, method="time_stepping", dt=1e-3,
                      forces=[JointFriction("x", COULOMB), spring], tau=push)
    np.testing.assert_array_equal(via.q, st.q)
    np.testing.assert_allclose(st.energy, 0.5 * st.v[:, 0] ** 2 + 15.0 * st.q[:, 0] ** 2,
                               rtol=1e-14)
