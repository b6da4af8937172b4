"""The batched in-process path agrees with single runs of the Python reference RK4, per-run
parameters act as independently built models do, and a single compiled run is the batch
of one."""

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
                        progress=False, save_every=10, compiled=False)  # the reference
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
                        forces=[kd.forces.JointDamper("joint1", damping[k])], compiled=False)
        assert np.allclose(b.q[k, -1], s.q[-1], atol=1e-12)
        assert np.allclose(b.energy[k], s.energy, atol=1e-11)


def test_a_single_run_is_the_batch_of_one(monkeypatch):
    """kd.simulate's rk4 with joint springs, dampers and smoothed friction runs the batch's
    compiled loop (not the Python steps, as before issue 16), gives each batched run's
    bits — an uneven last step and a kept last sample included — and the Python reference
    RK4 to round-off, step for step."""
    from kanedyn.sim import batch

    rng = np.random.default_rng(1)
    Q0, V0 = rng.uniform(-1, 1, (3, 4)), rng.normal(size=(3, 4))
    t_final = 0.1005  # 101 steps of 1e-3, the last one 0.5e-3; samples every 7th and the last
    b = simulate_batch(CHAIN, Q0, V0, t_final, dt=1e-3, forces=_forces(), save_every=7)
    assert b.q.shape == (3, 16, 4) and b.t[-1] == t_final and b.t[-2] == 0.098
    ran = []
    one = batch._run_one
    monkeypatch.setattr(batch, "_run_one", lambda *a: ran.append(a[-1]) or one(*a))
    for k in range(3):
        s = kd.simulate(CHAIN, Q0[k], V0[k], t_final, method="rk4", dt=1e-3, forces=_forces(),
                        progress=False, save_every=7)
        np.testing.assert_array_equal(s.t, b.t)
        np.testing.assert_array_equal(s.q, b.q[k])
        np.testing.assert_array_equal(s.v, b.v[k])
        np.testing.assert_array_equal(s.work_nc, b.work_nc[k])
        r = kd.simulate(CHAIN, Q0[k], V0[k], t_final, method="rk4", dt=1e-3, forces=_forces(),
                        progress=False, save_every=7, compiled=False)
        np.testing.assert_array_equal(r.t, s.t)
        np.testing.assert_allclose(r.q, s.q, rtol=0, atol=1e-13)
        np.testing.assert_allclose(r.v, s.v, rtol=0, atol=1e-12)
        np.testing.assert_allclose(r.work_nc, s.work_nc, rtol=0, atol=1e-13)
    assert ran == ["rk4"] * 3  # the compiled loop, three times; compiled=False never
    assert np.abs(s.work_nc[-1]) > 1e-3  # (the forces did work)


def test_single_runs_the_loop_does_not_take_use_the_python_steps(monkeypatch):
    """Force elements without a compiled form take the Python steps (the energy projection
    with compiled force rows, onto E₀ + W_nc, is the loop's: test_rk4_compiled.py)."""
    from kanedyn.sim import batch

    monkeypatch.setattr(batch, "_run_one", lambda *a: pytest.fail("compiled loop taken"))
    q0, v0 = np.array([0.3, -0.2, 0.1, 0.4]), np.zeros(4)
    push = kd.forces.JointTorque(lambda t, q, v: [0.1], ["joint2"])
    a = kd.simulate(CHAIN, q0, v0, 0.02, method="rk4", dt=1e-3, forces=[push], progress=False)
    assert abs(a.work_nc[-1]) > 0.0
    kd.simulate(CHAIN, q0, v0, 0.02, method="rk4", dt=1e-3, forces=[push], project="energy",
                progress=False)


def test_bad_input():
    Q = np.zeros((2, 4))
    with pytest.raises(kd.StateError, match="unknown parameter 'length:joint1'"):
        simulate_batch(CHAIN, Q, Q, 0.1, dt=1e-3, params={"length:joint1": [1.0, 2.0]})
    with pytest.raises(kd.StateError, match="2 finite numbers"):
        simulate_batch(CHAIN, Q, Q, 0.1, dt=1e-3, params={"mass:link1": [1.0]})
    with pytest.raises(kd.StateError, match="no JointFriction"):
        simulate_batch(CHAIN, Q, Q, 0.1, dt=1e-3, params={"Fc:joint1": [1.0, 2.0]})
    with pytest.raises(kd.KanedynError, match="batched methods: rk4"):
        simulate_batch(CHAIN, Q, Q, 0.1, dt=1e-3, method="dopri5")
    with pytest.raises(kd.KanedynError, match="'stickslip' needs JointFriction"):
        simulate_batch(CHAIN, Q, Q, 0.1, dt=1e-3, method="stickslip")
    with pytest.raises(kd.StateError, match="Q0: joint 'root': quaternion"):
        simulate_batch(kd.models.free_body(), np.zeros((1, 7)), np.zeros((1, 6)), 0.1, dt=1e-3)
    with pytest.raises(kd.KanedynError, match="no compiled form"):
        simulate_batch(CHAIN, Q, Q, 0.1, dt=1e-3,
                       forces=[kd.forces.JointTorque(lambda t, q, v: [0.0], "joint1")])
    with pytest.raises(kd.DivergenceError, match="run 1 at t"):
        simulate_batch(CHAIN, Q, np.array([[0.0] * 4, [1e200] * 4]), 0.01, dt=1e-3)
