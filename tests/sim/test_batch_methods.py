"""Every batched method of ``simulate_batch`` gives, run by run, the bits of the single-run
``kd.simulate`` with that method; a run that stops is reported alone, the others kept;
a method refuses, naming it, what its compiled loop cannot take."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.errors import DivergenceError, KanedynError
from kanedyn.sim.batch import METHODS, STOPPED, simulate_batch

CHAIN = kd.models.pendulum_chain(3, planar=False)
# a free base with ball and revolute joints: the tangent form of midpoint and gauss4
BALLS = kd.models.random_tree(3, seed=2, floating_base=True,
                              joint_types=("spherical", "revolute"))


def _states(model, n, seed):
    rng = np.random.default_rng(seed)
    Q0 = np.array([kd.random_configuration(model, seed + k) for k in range(n)])
    return Q0, 0.5 * rng.normal(size=(n, model.nv))


def _single(model, q0, v0, method, **kw):
    return kd.simulate(model, q0, v0, 0.3, method=method, dt=0.01, progress=False, **kw)


@pytest.mark.parametrize("method", ["midpoint", "gauss4", "verlet"])
def test_batched_runs_equal_single_runs(method):
    Q0, V0 = _states(CHAIN, 5, 0)
    b = simulate_batch(CHAIN, Q0, V0, 0.3, method=method, dt=0.01, save_every=3)
    assert b.method == method and b.q.shape == (5, 11, 3) and np.isclose(b.t[-1], 0.3)
    for k in range(5):
        s = _single(CHAIN, Q0[k], V0[k], method, save_every=3)
        assert np.allclose(b.q[k], s.q, rtol=0, atol=1e-13)
        assert np.allclose(b.v[k], s.v, rtol=0, atol=1e-13)
        assert np.allclose(b.energy[k], s.energy, rtol=0, atol=1e-11)
    assert np.all(b.work_nc == 0)
    # symplectic / symmetric: the energy error stays small and bounded
    assert np.abs(b.budget).max() < 1e-2


@pytest.mark.parametrize("method", ["midpoint", "gauss4", "verlet"])
def test_ball_and_free_joints_by_the_tangent_form(method):
    Q0, V0 = _states(BALLS, 4, 10)
    b = simulate_batch(BALLS, Q0, V0, 0.3, method=method, dt=0.01)
    for k in range(4):
        s = _single(BALLS, Q0[k], V0[k], method)
        assert np.allclose(b.q[k], s.q, rtol=0, atol=1e-13)
        assert np.allclose(b.v[k], s.v, rtol=0, atol=1e-13)
    quat = b.q[:, :, 3:7]  # the free joint's quaternion stays unit
    assert np.allclose(np.linalg.norm(quat, axis=-1), 1, atol=1e-12)


def test_verlet_on_planar_joints_with_a_damper_per_run():
    """verlet's variational step on a planar base with a hinge, a damper on the planar
    joint (all three speeds) at its constant per run: each run equals the single
    kd.simulate run (q, v, energy, W_nc)."""
    tree = kd.models.random_tree(3, seed=7, joint_types=("planar", "revolute"))
    Q0, V0 = _states(tree, 2, 5)
    name = next(b.joint.name for b in tree.bodies if b.joint.kind == "planar")
    c = np.array([0.1, 0.4])
    b = simulate_batch(tree, Q0, V0, 0.3, method="verlet", dt=0.01,
                       forces=[kd.forces.JointDamper(name, 0.2)], params={f"damping:{name}": c})
    for k in range(2):
        s = _single(tree, Q0[k], V0[k], "verlet", forces=[kd.forces.JointDamper(name, c[k])])
        assert np.allclose(b.q[k], s.q, rtol=0, atol=1e-13)
        assert np.allclose(b.v[k], s.v, rtol=0, atol=1e-13)
        assert np.allclose(b.energy[k], s.energy, rtol=0, atol=1e-11)
        assert np.allclose(b.work_nc[k], s.work_nc, rtol=0, atol=1e-13)
    assert np.all(b.work_nc[:, -1] < 0)


def _chain_forces(c=0.3):
    from kanedyn import friction

    law = friction.Stribeck(Fc=0.05, Fs=0.08, vs=0.05, delta=2.0, Fv=0.01).smoothed("tanh", 1e-2)
    return [kd.forces.JointDamper("joint1", c), kd.forces.JointSpring("joint2", 3.0, 0.2),
            kd.forces.JointFriction("joint3", law),
            kd.forces.SinusoidalTorque("joint2", 0.4, 2.0, phase=0.3)]


@pytest.mark.parametrize("method", ["midpoint", "gauss4", "verlet"])
def test_batched_runs_with_forces_equal_single_runs(method):
    """A damper (its constant per run), a spring, smoothed friction, a sinusoidal torque:
    each run equals the single kd.simulate run with those elements — q, v, energy
    (springs included) and W_nc."""
    Q0, V0 = _states(CHAIN, 3, 4)
    c = np.array([0.1, 0.3, 0.9])
    b = simulate_batch(CHAIN, Q0, V0, 0.3, method=method, dt=0.01, forces=_chain_forces(),
                       params={"damping:joint1": c}, save_every=2)
    for k in range(3):
        s = _single(CHAIN, Q0[k], V0[k], method, forces=_chain_forces(c[k]), save_every=2)
        assert np.allclose(b.q[k], s.q, rtol=0, atol=1e-13)
        assert np.allclose(b.v[k], s.v, rtol=0, atol=1e-13)
        assert np.allclose(b.energy[k], s.energy, rtol=0, atol=1e-11)
        assert np.allclose(b.work_nc[k], s.work_nc, rtol=0, atol=1e-13)
    assert np.all(b.work_nc[:, -1] < -1e-3)  # the dampers and friction took energy


def test_batched_tangent_form_with_forces_equals_single_runs():
    """A free base, a ball joint, then a hinge (whose coordinate is q[11], its speed v[9]),
    a damper on every joint and a spring on the hinge: gauss4's tangent form per run
    equals the single runs."""
    tree = kd.models.random_tree(3, seed=8, floating_base=True,
                                 joint_types=("spherical", "revolute"))
    assert [b.joint.kind for b in tree.bodies] == ["free", "spherical", "revolute"]
    Q0, V0 = _states(tree, 2, 11)
    forces = ([kd.forces.JointDamper(b.joint.name, 0.2) for b in tree.bodies]
              + [kd.forces.JointSpring(tree.bodies[2].joint.name, 2.0, 0.1)])
    b = simulate_batch(tree, Q0, V0, 0.3, method="gauss4", dt=0.01, forces=forces)
    for k in range(2):
        s = _single(tree, Q0[k], V0[k], "gauss4", forces=forces)
        assert np.allclose(b.q[k], s.q, rtol=0, atol=1e-13)
        assert np.allclose(b.v[k], s.v, rtol=0, atol=1e-13)
        assert np.allclose(b.energy[k], s.energy, rtol=0, atol=1e-11)
        assert np.allclose(b.work_nc[k], s.work_nc, rtol=0, atol=1e-13)


def test_per_run_masses():
    Q0, V0 = _states(CHAIN, 3, 5)
    masses = np.array([0.5, 1.0, 2.0])
    b = simulate_batch(CHAIN, Q0, V0, 0.3, method="gauss4", dt=0.01,
                       params={"mass:link2": masses})
    for k in range(3):
        model = kd.models.pendulum_chain(3, planar=False, mass=[1.0, masses[k], 1.0])
        s = _single(model, Q0[k], V0[k], "gauss4")
        assert np.allclose(b.q[k], s.q, rtol=0, atol=1e-10)


@pytest.mark.parametrize("method", ["rk4", "verlet"])
def test_a_stopped_run_is_reported_alone(method):
    Q0, V0 = _states(CHAIN, 3, 1)
    V0[1] = 1e8 if method == "verlet" else 1e160  # no Newton step / a non-finite state
    with pytest.raises(DivergenceError, match=r"1 of 3 runs stopped.*run 1 at t = ") as e:
        simulate_batch(CHAIN, Q0, V0, 0.3, method=method, dt=0.01)
    assert list(e.value.failures) == [1]
    t, why = e.value.failures[1]
    assert 0 < t <= 0.3 and why in STOPPED.values()
    r = e.value.result
    assert np.isnan(r.q[1, -1]).all() and np.isfinite(r.q[[0, 2]]).all()
    s = _single(CHAIN, Q0[2], V0[2], method)
    assert np.allclose(r.q[2], s.q, rtol=0, atol=1e-13)


def test_refusals_name_the_combination_and_the_way_out():
    from kanedyn.model.joints import Revolute

    b = kd.ModelBuilder("rotor")
    b.add_body("arm", None, Revolute("j", axis=(0, 1, 0), armature=0.1), None, 1.0,
               (0.2, 0, 0), np.eye(3) * 0.01)
    rotor = b.build()
    Q0, V0 = _states(rotor, 2, 0)
    with pytest.raises(KanedynError, match=r"'midpoint'.*rotor armature.*method='rk4'"):
        simulate_batch(rotor, Q0, V0, 0.1, method="midpoint", dt=0.01)
    # (ball, free and planar joints go to the chart loops and the tangent midpoint:
    # tests/integrators/test_chart_methods.py; rotor armature to none of them)
    with pytest.raises(KanedynError, match=r"'energy_momentum'.*rotor armature.*'rk4'"):
        simulate_batch(rotor, Q0, V0, 0.1, method="energy_momentum", dt=0.01)
    Q0, V0 = _states(CHAIN, 2, 0)
    with pytest.raises(KanedynError, match=r"'gauss4'.*JointTorque.*no compiled form"):
        simulate_batch(CHAIN, Q0, V0, 0.1, method="gauss4", dt=0.01,
                       forces=[kd.forces.JointTorque(lambda t, q, v: [0.1], ["joint1"])])
    with pytest.raises(KanedynError, match="batched methods: rk4, midpoint, gauss4, verlet, "
                                           "avf, itoh_abe, energy_momentum, time_stepping, "
                                           "stickslip"):
        simulate_batch(CHAIN, Q0, V0, 0.1, method="radau5", dt=0.01)
    assert set(METHODS) == {"rk4", "midpoint", "gauss4", "verlet", "avf", "itoh_abe",
                            "energy_momentum", "time_stepping", "stickslip"}


PLANAR4 = kd.models.pendulum_chain(4, planar=True)


def _friction(Fs2=3.0):
    from kanedyn import friction

    law = friction.Stribeck(Fc=2.0, Fs=3.0, vs=0.05, delta=2.0, Fv=0.1)  # exact: sgn
    law2 = friction.Stribeck(Fc=2.0, Fs=Fs2, vs=0.05, delta=2.0, Fv=0.1)
    return [kd.forces.JointFriction("joint1", law), kd.forces.JointFriction("joint2", law2),
            kd.forces.JointFriction("joint3", law2), kd.forces.JointFriction("joint4", law),
            kd.forces.SinusoidalTorque("joint1", 1.0, 1.0), kd.forces.JointDamper("joint2", 0.1)]


def test_time_stepping_with_exact_friction_per_run_levels():
    """Exact stick–slip (box LCP) with per-run breakaway levels Fs of joints 2 and 3: each
    run is the single kd.simulate run with those laws, stick flags included, and several
    joints stick at once."""
    rng = np.random.default_rng(0)
    Q0, V0 = rng.uniform(-1, 1, (4, 4)), 0.3 * rng.normal(size=(4, 4))
    Fs = np.array([3.0, 5.0, 8.0, 20.0])
    b = simulate_batch(PLANAR4, Q0, V0, 0.5, method="time_stepping", dt=1e-3,
                       forces=_friction(), params={"Fs:joint2": Fs, "Fs:joint3": Fs},
                       save_every=10)
    assert b.q.shape == (4, 51, 4) and b.stuck.shape == (4, 51, 4)
    for k in range(4):
        s = kd.simulate(PLANAR4, Q0[k], V0[k], 0.5, method="time_stepping", dt=1e-3,
                        forces=_friction(Fs[k]))
        assert np.allclose(b.q[k], s.q[::10], rtol=0, atol=1e-13)
        assert np.allclose(b.v[k], s.v[::10], rtol=0, atol=1e-13)
        assert np.allclose(b.energy[k], s.energy[::10], rtol=0, atol=1e-12)
        assert np.allclose(b.work_nc[k], s.work_nc[::10], rtol=0, atol=1e-12)
        assert (b.stuck[k] == s.friction.stuck[::10]).all()
    assert b.stuck.sum(axis=-1).max() >= 2  # several joints stuck at the same time
    assert b.stuck[1, -1, 2:].all()  # the high-Fs run ends with joints 3 and 4 stuck
    with pytest.raises(KanedynError, match="time_stepping.*spherical joint.*'rk4'"):
        ball = kd.models.pendulum_chain(2, planar=False, joint="spherical")
        simulate_batch(ball, np.tile(kd.neutral(ball), (2, 1)), np.zeros((2, 6)), 0.1,
                       method="time_stepping", dt=1e-3)
    with pytest.raises(KanedynError, match="needs JointFriction"):
        simulate_batch(PLANAR4, Q0, V0, 0.1, method="time_stepping", dt=1e-3)
    with pytest.raises(KanedynError, match="joint 'joint9' has no JointFriction|joint9"):
        simulate_batch(PLANAR4, Q0, V0, 0.1, method="time_stepping", dt=1e-3,
                       forces=_friction(), params={"Fs:joint9": Fs})


# --- the discrete gradients (avf, itoh_abe, energy_momentum) and friction treatments ---

def _elements(k=2.0, c=0.3, Fs=1.5):
    """Springs, dampers, a sinusoidal torque and smoothed Stribeck friction: every row of
    forces/kernel.py, which the discrete-gradient loop takes."""
    from kanedyn import friction

    law = friction.Stribeck(Fc=1.0, Fs=Fs, vs=0.1, delta=2.0, Fv=0.05,
                            smoothing=friction.Smoothing("tanh", 0.05))
    return [kd.forces.JointSpring("joint1", k, 0.2), kd.forces.JointDamper("joint2", c),
            kd.forces.SinusoidalTorque("joint3", 0.5, 1.0),
            kd.forces.JointFriction("joint2", law)]


@pytest.mark.parametrize(("method", "options"), [
    ("avf", {}), ("itoh_abe", {}), ("itoh_abe", {"variant": "symmetric"}),
    ("energy_momentum", {}), ("energy_momentum", {"cyclic": ["joint1"]})])
def test_discrete_gradients_with_forces_and_per_run_parameters(method, options):
    """3 runs x 50 steps with springs, a damper, a torque and smoothed friction, stiffness,
    damping and Fs set per run: each run is the single kd.simulate run with those
    elements (its own compiled loop; the energy by another kernel), and the budget
    E − E₀ − W_nc closes (exact energy methods)."""
    Q0, V0 = _states(CHAIN, 3, 3)
    k, c, Fs = np.array([1.0, 2.0, 4.0]), np.array([0.1, 0.3, 0.0]), np.array([1.2, 1.5, 2.0])
    b = simulate_batch(CHAIN, Q0, V0, 0.05, method=method, dt=1e-3, forces=_elements(),
                       params={"stiffness:joint1": k, "damping:joint2": c, "Fs:joint2": Fs},
                       save_every=5, **options)
    assert b.method == method and b.q.shape == (3, 11, 3)
    for r in range(3):
        s = kd.simulate(CHAIN, Q0[r], V0[r], 0.05, method=method, dt=1e-3, save_every=5,
                        forces=_elements(k[r], c[r], Fs[r]), progress=False, **options)
        assert np.allclose(b.q[r], s.q, rtol=0, atol=1e-12)
        assert np.allclose(b.v[r], s.v, rtol=0, atol=1e-12)
        assert np.allclose(b.work_nc[r], s.work_nc, rtol=0, atol=1e-12)
        assert np.allclose(b.energy[r], s.energy, rtol=0, atol=1e-12)
    assert np.all(b.work_nc[:, -1] < 0)  # the damper and the friction take energy out
    assert np.abs(b.budget).max() < 1e-11


def test_avf_batch_equals_the_python_reference():
    """An independent reference: the Python AVF steps (compiled=False) to Newton's
    tolerance."""
    Q0, V0 = _states(CHAIN, 2, 4)
    b = simulate_batch(CHAIN, Q0, V0, 0.02, method="avf", dt=1e-3, forces=_elements())
    for r in range(2):
        s = kd.simulate(CHAIN, Q0[r], V0[r], 0.02, method="avf", dt=1e-3, compiled=False,
                        forces=_elements(), progress=False)
        assert np.allclose(b.q[r], s.q, rtol=0, atol=1e-12)
        assert np.allclose(b.v[r], s.v, rtol=0, atol=1e-11)


@pytest.mark.parametrize("method", ["avf", "itoh_abe", "energy_momentum"])
def test_a_stopped_discrete_gradient_run_is_reported_alone(method):
    Q0, V0 = _states(CHAIN, 3, 1)
    V0[1] = 1e8  # no Newton step converges (or the kernel refuses the state)
    with pytest.raises(DivergenceError, match=r"1 of 3 runs stopped.*run 1 at t = ") as e:
        simulate_batch(CHAIN, Q0, V0, 0.05, method=method, dt=0.01)
    assert list(e.value.failures) == [1] and e.value.failures[1][1] in STOPPED.values()
    r = e.value.result
    assert np.isnan(r.q[1, -1]).all() and np.isfinite(r.q[[0, 2]]).all()
    s = kd.simulate(CHAIN, Q0[2], V0[2], 0.05, method=method, dt=0.01, progress=False)
    assert np.allclose(r.q[2], s.q, rtol=0, atol=1e-13)


def test_time_stepping_with_lugre_and_karnopp_per_run():
    """LuGre (bristle stiffness σ0 per run) and a Karnopp band (its width per run, on a
    moving surface) beside an exact law, given by joints= as to kd.simulate: each run is
    the single run, stick flags included."""
    from kanedyn import friction

    exact = friction.Stribeck(Fc=1.0, Fs=1.5, vs=0.05, delta=2.0, Fv=0.1)
    s0, band = np.array([1e4, 2e4, 5e3]), np.array([1e-3, 2e-3, 5e-4])

    def laws(r):
        return {"joint1": friction.LuGre(sigma0=s0[r], sigma1=50.0, Fc=1.0, Fs=1.5, vs=0.05,
                                         sigma2=0.1),
                "joint2": friction.Karnopp(exact, band[r])}

    rng = np.random.default_rng(2)
    Q0, V0 = rng.uniform(-1, 1, (3, 4)), 0.3 * rng.normal(size=(3, 4))
    others = [kd.forces.JointFriction("joint3", exact), kd.forces.JointDamper("joint1", 0.1)]
    b = simulate_batch(PLANAR4, Q0, V0, 0.05, method="time_stepping", dt=1e-3, joints=laws(0),
                       forces=others, surface_velocity={"joint2": 0.01},
                       params={"sigma0:joint1": s0, "band:joint2": band})
    for r in range(3):
        s = kd.simulate(PLANAR4, Q0[r], V0[r], 0.05, method="time_stepping", dt=1e-3,
                        joints=laws(r), forces=others, surface_velocity={"joint2": 0.01})
        assert np.allclose(b.q[r], s.q, rtol=0, atol=1e-13)
        assert np.allclose(b.v[r], s.v, rtol=0, atol=1e-13)
        assert np.allclose(b.energy[r], s.energy, rtol=0, atol=1e-12)
        assert np.allclose(b.work_nc[r], s.work_nc, rtol=0, atol=1e-12)
        assert (b.stuck[r] == s.friction.stuck).all()
    with pytest.raises(KanedynError, match=r"'sigma0:joint3'.*exact.*Fc, Fs"):
        simulate_batch(PLANAR4, Q0, V0, 0.01, method="time_stepping", dt=1e-3,
                       joints=laws(0), forces=others, params={"sigma0:joint3": s0})
    with pytest.raises(KanedynError, match=r"joint 'joint1' has two friction laws"):
        simulate_batch(PLANAR4, Q0, V0, 0.01, method="time_stepping", dt=1e-3,
                       joints=laws(0), forces=[kd.forces.JointFriction("joint1", exact)])


def test_a_method_refuses_what_its_loop_cannot_take_naming_it():
    from kanedyn import friction

    Q0, V0 = _states(CHAIN, 2, 0)
    exact = friction.Stribeck(Fc=1.0, Fs=1.5, vs=0.05, delta=2.0, Fv=0.1)
    with pytest.raises(KanedynError, match=r"'avf' cannot take JointFriction on 'joint2'.*"
                                           r"discontinuous.*'time_stepping'"):
        simulate_batch(CHAIN, Q0, V0, 0.1, method="avf", dt=0.01,
                       forces=[kd.forces.JointFriction("joint2", exact)])
    # midpoint, gauss4, verlet take the force rows; an exact law, or a spring on a ball
    # joint (no one coordinate), they refuse naming the element
    with pytest.raises(KanedynError, match=r"'verlet' cannot take JointFriction on 'joint2'.*"
                                           r"discontinuous.*'time_stepping'"):
        simulate_batch(CHAIN, Q0, V0, 0.1, method="verlet", dt=0.01,
                       forces=[kd.forces.JointFriction("joint2", exact)])
    Qb, Vb = _states(BALLS, 2, 0)
    with pytest.raises(KanedynError, match=r"'gauss4'.*JointSpring on 'joint1'.*3 speeds.*"
                                           r"1-DOF"):
        simulate_batch(BALLS, Qb, Vb, 0.1, method="gauss4", dt=0.01,
                       forces=[kd.forces.JointSpring("joint1", 1.0)])
    with pytest.raises(KanedynError, match=r"'energy_momentum'.*JointTorque.*no compiled form"):
        simulate_batch(CHAIN, Q0, V0, 0.1, method="energy_momentum", dt=0.01,
                       forces=[kd.forces.JointTorque(lambda t, q, v: -q)])
    with pytest.raises(KanedynError, match=r"'itoh_abe' takes no option\(s\) nodes; its "
                                           r"options: tol, maxiter, variant"):
        simulate_batch(CHAIN, Q0, V0, 0.1, method="itoh_abe", dt=0.01, nodes=4)
    # (energy_momentum's variant="projection" on an additive chain runs, as kd.simulate's:
    # tests/integrators/test_energy_momentum.py)


def test_event_driven_stick_slip_per_run_levels():
    """method="stickslip": exact Stribeck friction on every joint of the planar arm, the
    levels Fs per run; each run the samples of the single kd.simulate(method="stickslip")
    with that run's laws (the same compiled loop, the modes at t = 0 resolved in it rather
    than in Python: the same rule), stuck flags included; the weak runs slide, the strong
    ones stay stuck, at v = 0 exactly."""
    from kanedyn import friction

    names = PLANAR4.joint_names
    q0 = np.array([[0.3, -0.2, 0.4, 0.1]] * 3)
    v0 = np.zeros((3, 4))
    v0[0] = [0.4, 0.0, -0.3, 0.0]  # joints 2 and 4 start at rest: resolved at t = 0
    law = friction.Stribeck(Fc=0.6, Fs=1.0, vs=0.05, delta=2.0, Fv=0.05)
    levels = np.array([0.5, 4.0, 60.0])
    b = simulate_batch(PLANAR4, q0, v0, 0.3, method="stickslip", dt=0.01,
                       forces=[kd.forces.JointFriction(j, law) for j in names],
                       params={f"Fs:{names[1]}": levels, f"Fc:{names[1]}": 0.6 * levels})
    for k, Fs in enumerate(levels):
        lk = friction.Stribeck(Fc=0.6 * Fs, Fs=Fs, vs=0.05, delta=2.0, Fv=0.05)
        fs = [kd.forces.JointFriction(j, lk if j == names[1] else law) for j in names]
        s = kd.simulate(PLANAR4, q0[k], v0[k], 0.3, method="stickslip", dt=0.01, forces=fs)
        np.testing.assert_array_equal(b.stuck[k], s.friction.stuck)
        np.testing.assert_allclose(b.q[k], s.q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(b.v[k], s.v, rtol=0, atol=1e-12)
        np.testing.assert_allclose(b.energy[k], s.energy, rtol=0, atol=1e-12)
        np.testing.assert_allclose(b.work_nc[k], s.work_nc, rtol=0, atol=1e-12)
    assert b.stuck[2, :, 1].all() and not b.stuck[0, :, 1].any()  # held / sliding
    held = b.stuck[:, :, 1]
    assert np.all(b.v[:, :, 1][held] == 0.0)  # a stuck joint does not move at all
    with pytest.raises(KanedynError, match=r"'stickslip' batches exact Stribeck.*"
                                           r"use method='time_stepping'"):
        simulate_batch(PLANAR4, q0, v0, 0.1, method="stickslip", dt=0.01,
                       forces=[kd.forces.JointFriction(names[0], law.smoothed("tanh", 1e-2))])
    with pytest.raises(KanedynError, match=r"stick_step=0.0 must be > 0"):  # kd.simulate's
        simulate_batch(PLANAR4, q0, v0, 0.1, method="stickslip", dt=0.01, stick_step=0.0,
                       forces=[kd.forces.JointFriction(names[0], law)])


@pytest.mark.parametrize(("tree", "method"), [("chain", "rk4"), ("chain", "avf"),
                                              ("chain", "verlet"), ("balls", "gauss4"),
                                              ("balls", "verlet")])
def test_batched_runs_with_wrenches_equal_single_runs(tree, method, wrench_chain):
    """Constant wrenches (local, world, on a frame that is not a body) in every batched loop
    (their rows' τ = Jᵀf at each run's q): each run the bits of kd.simulate's to 1e-13."""
    from kanedyn.forces import ExternalWrench

    c = wrench_chain
    model = c.model if tree == "chain" else c.with_tool(BALLS, "body1")
    fs = (c.elements() if tree == "chain" else
          [ExternalWrench("body2", c.f_local), ExternalWrench("tool", c.f_world, frame="world")])
    Q0, V0 = _states(model, 3, 6)
    b = simulate_batch(model, Q0, V0, 0.1, method=method, dt=2e-3, forces=fs)
    for k in range(3):
        s = kd.simulate(model, Q0[k], V0[k], 0.1, method=method, dt=2e-3, forces=fs)
        np.testing.assert_allclose(b.q[k], s.q, rtol=0, atol=1e-13)
        np.testing.assert_allclose(b.work_nc[k], s.work_nc, rtol=0, atol=1e-13)
    assert np.all(np.abs(b.work_nc[:, -1]) > 1e-3)


@pytest.mark.parametrize("method", ["midpoint", "gauss4"])
def test_midpoint_gauss4_on_planar_joints_with_a_damper_per_run(method):
    """midpoint and gauss4 in the tangent form on a planar base with a hinge (the planar
    joint by the SE(2) exponential), a damper on the planar joint at its constant per run:
    each run equals the single kd.simulate run (q, v, energy, W_nc)."""
    tree = kd.models.random_tree(3, seed=7, joint_types=("planar", "revolute"))
    Q0, V0 = _states(tree, 2, 5)
    name = next(b.joint.name for b in tree.bodies if b.joint.kind == "planar")
    c = np.array([0.1, 0.4])
    b = simulate_batch(tree, Q0, V0, 0.3, method=method, dt=0.01,
                       forces=[kd.forces.JointDamper(name, 0.2)], params={f"damping:{name}": c})
    for k in range(2):
        s = _single(tree, Q0[k], V0[k], method, forces=[kd.forces.JointDamper(name, c[k])])
        assert np.allclose(b.q[k], s.q, rtol=0, atol=1e-13)
        assert np.allclose(b.v[k], s.v, rtol=0, atol=1e-13)
        assert np.allclose(b.energy[k], s.energy, rtol=0, atol=1e-11)
        assert np.allclose(b.work_nc[k], s.work_nc, rtol=0, atol=1e-13)
    assert np.all(b.work_nc[:, -1] < 0)
    assert np.ptp(b.q[:, :, 2]) > 0.05  # the planar joint turns


@pytest.mark.parametrize("tree", ["ball_elbow", "free_hinge"])
def test_event_driven_stick_slip_on_ball_and_free_joints(tree):
    """method="stickslip" on trees with a quaternion (nq > nv): exact friction on the
    hinge, the level Fs per run; each run the samples of the single kd.simulate with that
    run's law, to 1e-12 (the same compiled loop), stuck flags included; the strong run
    holds the hinge at v = 0 exactly while the ball (or free) joint moves."""
    from kanedyn import friction

    if tree == "ball_elbow":
        model = kd.models.ball_elbow()
        q0 = np.array([np.cos(0.2), np.sin(0.2), 0.0, 0.0, 0.3])
        v0 = np.array([[0.0, 0.5, 0.2, 0.4], [0.3, -0.2, 0.0, 0.0], [0.1, 0.1, 0.1, 0.0]])
    else:  # a free base with a hinged arm, in the air under gravity
        b = kd.ModelBuilder("free_hinge")
        b.add_body("base", None, kd.model.Free("float"), None, 2.0, (0, 0, 0),
                   np.diag([0.02, 0.03, 0.04]))
        b.add_body("arm", "base", kd.model.Revolute("hinge", axis=(0, 1, 0)),
                   (np.eye(3), (0.2, 0, 0)), 0.5, (0.15, 0, 0), np.diag([0.001, 0.004, 0.004]))
        model = b.build()
        q0 = np.r_[np.cos(0.1), 0.0, np.sin(0.1), 0.0, 0.0, 0.0, 1.0, 0.2]
        v0 = np.array([[0.0, 0.0, 0.0, 0.2, 0.4, -0.1, 0.5],
                       [0.3, -0.2, 0.1, 0.0, 0.0, 0.0, 0.0],
                       [0.0, 0.6, 0.0, 0.1, 0.0, 0.0, 0.0]])
    joint = model.joint_names[-1]
    law = friction.Stribeck(Fc=0.6, Fs=1.0, vs=0.05, delta=2.0, Fv=0.05)
    levels = np.array([0.01, 0.5, 50.0])
    Q0 = np.tile(q0, (3, 1))
    b = simulate_batch(model, Q0, v0, 0.2, method="stickslip", dt=0.01,
                       forces=[kd.forces.JointFriction(joint, law)],
                       params={f"Fs:{joint}": levels, f"Fc:{joint}": 0.6 * levels})
    assert b.q.shape == (3, 21, model.nq) and b.v.shape == (3, 21, model.nv)
    for k, Fs in enumerate(levels):
        lk = friction.Stribeck(Fc=0.6 * Fs, Fs=Fs, vs=0.05, delta=2.0, Fv=0.05)
        s = kd.simulate(model, Q0[k], v0[k], 0.2, method="stickslip", dt=0.01,
                        forces=[kd.forces.JointFriction(joint, lk)])
        np.testing.assert_array_equal(b.stuck[k], s.friction.stuck)
        np.testing.assert_allclose(b.q[k], s.q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(b.v[k], s.v, rtol=0, atol=1e-12)
        np.testing.assert_allclose(b.energy[k], s.energy, rtol=0, atol=1e-12)
        np.testing.assert_allclose(b.work_nc[k], s.work_nc, rtol=0, atol=1e-12)
    held = b.stuck[:, :, 0]
    # held by the strong law; the weak one slides (in free fall the hinge's load is small
    # enough for it to stick later on)
    assert held[2].all() and not held[0, :10].any()
    assert np.all(b.v[:, :, -1][held] == 0.0)
    assert np.ptp(b.q[2, :, :4], axis=0).max() > 1e-3  # the quaternion moves meanwhile
    with pytest.raises(KanedynError, match=r"friction acts on one coordinate; joint "
                                           fr"'{model.joint_names[0]}'"):
        simulate_batch(model, Q0, v0, 0.1, method="stickslip", dt=0.01,
                       forces=[kd.forces.JointFriction(model.joint_names[0], law)])
