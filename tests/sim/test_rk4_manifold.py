"""The compiled RK4 loop on the configuration manifold (sim/rk4_manifold.py): ball, free and
planar joints and armature take the same steps as the Python reference RK4 (chart stages,
the energy projection), quaternions stay unit, the energy error converges at order 4, and
simulate_batch on such models is N single runs."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.model import ModelBuilder
from kanedyn.model.builders import rod_inertia
from kanedyn.model.joints import Revolute, Spherical
from kanedyn.sim import rk4_manifold
from kanedyn.sim.batch import simulate_batch

# the compiled loop must really run: its fallback warns, and a warning fails these tests
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

BALL = kd.models.pendulum_chain(3, planar=False, joint="spherical")
FLOATING = kd.models.random_tree(4, seed=3, floating_base=True, joint_types=("revolute",))
PLANAR = kd.models.random_tree(4, seed=7, joint_types=("planar", "revolute"))


def _armature_chain():
    """A ball joint with a rotor and two revolute joints with rotors (armature 0.05–0.2)."""
    b = ModelBuilder("armature_chain")
    b.add_body("l1", None, Spherical("j1", armature=0.05), (np.eye(3), np.zeros(3)), 1.0,
               (0.0, 0.0, -0.4), rod_inertia(1.0, 0.8, 0.05))
    b.add_body("l2", "l1", Revolute("j2", axis=(0, 1, 0), armature=0.2),
               (np.eye(3), (0.0, 0.0, -0.8)), 0.7, (0.0, 0.0, -0.3), rod_inertia(0.7, 0.6))
    b.add_body("l3", "l2", Revolute("j3", axis=(1, 0, 0), armature=0.1),
               (np.eye(3), (0.0, 0.0, -0.6)), 0.5, (0.0, 0.0, -0.25), rod_inertia(0.5, 0.5))
    return b.build()


ARMATURE = _armature_chain()
DRIFTING = FLOATING.with_gravity((0.0, 0.0, 0.0))  # [L; P] conserved


def _start(model, seed):
    rng = np.random.default_rng(seed)
    return kd.random_configuration(model, rng), rng.normal(size=model.nv)


def _compiled_runs(monkeypatch):
    """Record each run of the manifold loop kd.simulate takes."""
    from kanedyn.sim import batch

    ran = []
    one = rk4_manifold.run_one
    monkeypatch.setattr(rk4_manifold, "run_one", lambda *a: ran.append(a[4]) or one(*a))
    monkeypatch.setattr(batch, "_run_one", lambda *a: pytest.fail("additive loop taken"))
    return ran


@pytest.mark.parametrize("model, project", [(BALL, None), (FLOATING, None), (PLANAR, None),
                                            (ARMATURE, None), (FLOATING, "energy"),
                                            (ARMATURE, "energy"),
                                            (DRIFTING, ("energy", "momentum"))],
                         ids=["ball", "floating", "planar", "armature", "floating+proj",
                              "armature+proj", "no gravity+proj E, [L; P]"])
def test_compiled_equals_the_python_reference(model, project, monkeypatch):
    """200 steps: the compiled loop and RK4's Python steps (chart stages q_n ⊕ ξ with
    ξ̇ = J(ξ)⁻¹ v, by the joints' own numpy maps) agree to round-off; with the projection
    the energy (rotors' ½ Σ J v² included) is kept to round-off."""
    ran = _compiled_runs(monkeypatch)
    q0, v0 = _start(model, 1)
    a = kd.simulate(model, q0, v0, 0.2, method="rk4", dt=1e-3, project=project, progress=False)
    b = kd.simulate(model, q0, v0, 0.2, method="rk4", dt=1e-3, project=project, progress=False,
                    compiled=False)
    assert len(ran) == 1 and a.q.shape == (201, model.nq)
    np.testing.assert_array_equal(a.t, b.t)
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.v, b.v, rtol=0, atol=1e-12 * np.abs(b.v).max())
    if project:
        assert a.relative_energy_error().max() <= 1e-14
    if project == ("energy", "momentum"):  # gauss_compiled.project_standard's seven rows
        h = a.momentum
        assert np.abs(h - h[0]).max() <= 1e-13 * np.abs(h[0]).max()


def test_quaternions_stay_unit_and_energy_error_is_fourth_order():
    """Quaternions move by the exponential map and are renormalised: unit to 1e-14 over
    2000 steps. The energy error (E by the public kd.kinetic_energy/potential_energy, an
    independent computation) falls 16-fold per halving of dt, RK4's order 4."""
    q0, v0 = _start(BALL, 2)
    v0 *= 0.5
    s = kd.simulate(BALL, q0, v0, 2.0, method="rk4", dt=1e-3, progress=False, save_every=10)
    norms = np.linalg.norm(s.q.reshape(len(s.t), 3, 4), axis=2)
    assert np.abs(norms - 1.0).max() <= 1e-14
    errors = []
    for dt in (0.004, 0.002, 0.001):
        s = kd.simulate(BALL, q0, v0, 0.5, method="rk4", dt=dt, progress=False)
        E = [kd.kinetic_energy(BALL, q, v) + kd.potential_energy(BALL, q)
             for q, v in zip(s.q, s.v, strict=True)]
        errors.append(np.abs(np.array(E) - E[0]).max())
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all((orders > 3.7) & (orders < 4.3)), orders


def test_batch_on_a_floating_tree_is_n_single_runs():
    """simulate_batch on a free-joint root with a damper on it (all six speeds), a damper,
    a spring, smoothed friction and a sinusoidal torque on revolute joints (whose
    coordinates sit one place after their speeds: the free joint has 7 coordinates and 6
    speeds), per-run damping
    of the free joint: each run gives the bits of kd.simulate with that damper (the same
    compiled loop), and the Python reference to round-off (the per-speed rows, the
    springs' coordinates, W_nc)."""
    rng = np.random.default_rng(4)
    N = 3
    Q0 = np.array([kd.random_configuration(FLOATING, rng) for _ in range(N)])
    V0 = rng.normal(size=(N, FLOATING.nv))
    c = np.array([0.0, 0.3, 1.1])
    law = kd.friction.Stribeck(Fc=0.05, Fs=0.08, vs=0.05, delta=2.0, Fv=0.01).smoothed(
        "tanh", 0.02)
    # a sinusoid at 7 Hz: its value at the stages' times (t + h/2, t + h) enters the step
    forces = [kd.forces.JointDamper("joint0", 0.0), kd.forces.JointDamper("joint2", 0.4),
              kd.forces.JointSpring("joint1", 30.0, 0.2), kd.forces.JointFriction("joint3", law),
              kd.forces.SinusoidalTorque("joint2", 0.8, 7.0, phase=0.3, offset=0.1)]
    b = simulate_batch(FLOATING, Q0, V0, 0.05, dt=1e-3, forces=forces, save_every=5,
                       params={"damping:joint0": c})
    assert b.q.shape == (N, 11, FLOATING.nq)
    for k in range(N):
        fk = [kd.forces.JointDamper("joint0", c[k]), *forces[1:]]
        s = kd.simulate(FLOATING, Q0[k], V0[k], 0.05, method="rk4", dt=1e-3, forces=fk,
                        progress=False, save_every=5)
        np.testing.assert_array_equal(s.q, b.q[k])
        np.testing.assert_array_equal(s.v, b.v[k])
        np.testing.assert_array_equal(s.work_nc, b.work_nc[k])
        r = kd.simulate(FLOATING, Q0[k], V0[k], 0.05, method="rk4", dt=1e-3, forces=fk,
                        progress=False, save_every=5, compiled=False)
        np.testing.assert_allclose(r.q, s.q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(r.work_nc, s.work_nc, rtol=0, atol=1e-12)
        np.testing.assert_allclose(r.energy, b.energy[k], rtol=1e-12)  # computed apart
    assert b.work_nc[0, -1] > b.work_nc[2, -1]  # more damping, more work done (< 0)
    assert np.abs(b.budget).max() < 1e-7 < np.abs(b.work_nc[2, -1])


def test_what_the_batch_cannot_take_is_refused_by_name():
    Q0 = np.tile(kd.neutral(BALL), (2, 1))
    V0 = np.zeros((2, BALL.nv))
    with pytest.raises(kd.KanedynError, match="JointSpring on 'joint2'.*3 speeds"):
        simulate_batch(BALL, Q0, V0, 0.01, dt=1e-3,
                       forces=[kd.forces.JointSpring("joint2", 1.0)])
    with pytest.raises(kd.StateError, match="'stiffness:joint1'.*spherical joint"):
        simulate_batch(BALL, Q0, V0, 0.01, dt=1e-3, params={"stiffness:joint1": [1.0, 2.0]})
    with pytest.raises(kd.KanedynError, match="JointTorque on .joint3. has no compiled form"):
        simulate_batch(BALL, Q0, V0, 0.01, dt=1e-3,
                       forces=[kd.forces.JointTorque(lambda t, q, v: [0.0], "joint3")])
    with pytest.raises(kd.StateError, match=r"\(N, 12\) and \(N, 9\)"):
        simulate_batch(BALL, Q0, Q0, 0.01, dt=1e-3)  # V0 of nq columns


@pytest.mark.parametrize("scale", [1e-3, 0.3, 2.0])  # the series (|ω_z| ≤ 1), the quadrature
def test_chart_rate_equals_the_joints_right_jacobians(scale):
    """ξ̇ = J(ξ)⁻¹ v of the compiled chart kernel (SO(3) closed form, Bernoulli series of
    ad, quadrature) against a solve with ModelSystem.chart_jacobian (the joints' own numpy
    closed form and quadrature) on a tree of every joint type with a free root."""
    from kanedyn.dynamics.flat import flatten
    from kanedyn.sim.chart_kernel import chart_rate_into

    m = kd.models.random_tree(8, seed=5, floating_base=True)
    assert {b.joint.kind for b in m.bodies} >= {"free", "spherical", "planar", "helical"}
    rng = np.random.default_rng(6)
    q0, xi, v = kd.random_configuration(m, rng), scale * rng.normal(size=m.nv), rng.normal(
        size=m.nv)
    ref = np.linalg.solve(kd.ModelSystem(m).chart_jacobian(q0, xi), v)
    d = flatten(m).data
    out = np.empty(m.nv)
    assert chart_rate_into(d, q0, xi, v, q0.copy(), np.empty((m.nb, 12)), np.empty((m.nb, 12)),
                           np.empty((4, 6, 6)), out) == 0
    np.testing.assert_allclose(out, ref, rtol=0, atol=2e-15 * np.abs(ref).max())
    assert np.abs(ref - v).max() > 10 * scale * 1e-2  # (J ≠ 1: the check has teeth)


def test_a_blow_up_is_reported_with_the_step_and_time():
    """A step far too long for the speeds: the compiled loop stops at the guard of
    run_fixed (speed beyond blowup (1 + max|v0|)) and names the step and the time."""
    q0, v0 = kd.neutral(BALL), np.full(BALL.nv, 20.0)
    with pytest.raises(kd.DivergenceError, match=r"rk4: .* at step \d+, t = "):
        kd.simulate(BALL, q0, v0, 50.0, method="rk4", dt=0.3, blowup=5.0, progress=False)


def test_a_cold_loop_takes_the_python_steps(cold_loop_check):
    """kanedyn.dynamics.first_calls: on a cold cache the manifold RK4 run takes its Python
    steps while a compiler process compiles the loop (tests/conftest.py's
    cold_loop_check)."""
    m = kd.models.random_tree(3, seed=2, joint_types=("spherical", "revolute"))
    q0, v0 = _start(m, 4)
    cold_loop_check("rk4", m, q0, v0, rk4_manifold.rk4_manifold_run, "first_run")
