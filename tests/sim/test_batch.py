"""The batched in-process path agrees with single runs, and per-run parameters act as
independently built models do."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import friction
from kanedyn.sim.batch import simulate_batch

CHAIN = kd.models.pendulum_chain(4, planar=False)


def _forces():
    law = friction.Stribeck(Fc=0.05, Fs=0.08, vs=0.05, delta=2.0, Fv=0.01).smoothed("tanh", 0.02)
    return [kd.forces.JointDamper("joint1", 0.3), kd.forces.JointSpring("joint2", 2.0, 0.1),
            kd.forces.JointFriction("joint3", law)]


def test_batched_runs_equal_single_runs():
    rng = np.random.default_rng(0)
    Q0, V0 = rng.uniform(-1, 1, (6, 4)), rng.normal(size=(6, 4))
    b = simulate_batch(CHAIN, Q0, V0, 0.2, dt=1e-3, forces=_forces(), save_every=10)
    assert b.q.shape == (6, 21, 4) and np.allclose(b.t[-1], 0.2)
    for k in range(6):
        s = kd.simulate(CHAIN, Q0[k], V0[k], 0.2, method="rk4", dt=1e-3, forces=_forces(),
                        progress=False, save_every=10)
        assert np.allclose(b.q[k], s.q, rtol=0, atol=1e-12)
        assert np.allclose(b.v[k], s.v, rtol=0, atol=1e-11)
        assert np.allclose(b.work_nc[k], s.work_nc, atol=1e-12)
        assert np.allclose(b.energy[k], s.energy, atol=1e-11)  # computed independently
    # the energy budget closes to RK4's error although damping and friction act
    assert np.abs(b.budget).max() < 1e-8 < np.abs(b.energy[:, -1] - b.energy[:, 0]).max()


def test_per_run_parameters_act_like_rebuilt_models():
    q0, v0 = np.array([0.5, -0.2, 0.3, 0.1]), np.zeros(4)
    masses, damping = np.array([0.5, 1.0, 2.0]), np.array([0.0, 0.2, 0.7])
    b = simulate_batch(CHAIN, np.tile(q0, (3, 1)), np.tile(v0, (3, 1)), 0.1, dt=1e-3,
                       forces=[kd.forces.JointDamper("joint1", 0.0)],
                       params={"mass:link2": masses, "damping:joint1": damping})
    for k in range(3):
        # a uniform rod of another mass: the builder's own inertia, not a scaled copy
        model = kd.models.pendulum_chain(4, planar=False, mass=[1.0, masses[k], 1.0, 1.0])
        s = kd.simulate(model, q0, v0, 0.1, method="rk4", dt=1e-3, progress=False,
                        forces=[kd.forces.JointDamper("joint1", damping[k])])
        assert np.allclose(b.q[k, -1], s.q[-1], atol=1e-12)
        assert np.allclose(b.energy[k], s.energy, atol=1e-11)


def test_bad_input():
    Q = np.zeros((2, 4))
    with pytest.raises(kd.StateError, match="unknown parameter 'length:joint1'"):
        simulate_batch(CHAIN, Q, Q, 0.1, dt=1e-3, params={"length:joint1": [1.0, 2.0]})
    with pytest.raises(kd.StateError, match="2 finite numbers"):
        simulate_batch(CHAIN, Q, Q, 0.1, dt=1e-3, params={"mass:link1": [1.0]})
    with pytest.raises(kd.StateError, match="no JointFriction"):
        simulate_batch(CHAIN, Q, Q, 0.1, dt=1e-3, params={"Fc:joint1": [1.0, 2.0]})
    with pytest.raises(kd.KanedynError, match="batched methods: rk4"):
        simulate_batch(CHAIN, Q, Q, 0.1, dt=1e-3, method="avf")
    with pytest.raises(kd.KanedynError, match="not 1-DOF additive"):
        simulate_batch(kd.models.free_body(), np.zeros((1, 7)), np.zeros((1, 6)), 0.1, dt=1e-3)
    with pytest.raises(kd.KanedynError, match="no batched kernel"):
        simulate_batch(CHAIN, Q, Q, 0.1, dt=1e-3,
                       forces=[kd.forces.JointTorque(lambda t, q, v: [0.0], "joint1")])
    with pytest.raises(kd.DivergenceError, match="run 1 at t"):
        simulate_batch(CHAIN, Q, np.array([[0.0] * 4, [1e200] * 4]), 0.01, dt=1e-3)
