"""Constant external wrenches inside the compiled loops (forces/kernel.py's wrench rows).

The rows' τ = Jᵀ f against ExternalWrench.generalized_force (kd.jacobian's own columns)
on trees of every joint type, bodies and a frame that is not a body, local and world
wrenches; then every fixed-step method's compiled loop on an additive 3D chain against
its Python steps (``compiled=False``) with two wrenches and a damper, the discrete
gradients' energy budget with the wrenches doing work, and a wrench given as a Python
function, which has no row: the Python steps, the same run."""

import warnings

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics.flat import flatten
from kanedyn.errors import KanedynWarning
from kanedyn.forces import ExternalWrench, JointDamper, JointFriction
from kanedyn.forces.kernel import force_rows, has_forces, wrench_forces_add
from kanedyn.integrators import discrete_gradient_compiled as dgc
from kanedyn.integrators import gauss_compiled, verlet_compiled
from kanedyn.sim import batch, rk4_manifold
from kanedyn.sim.system import ModelSystem

F_LOCAL = np.array([0.1, -0.2, 0.3, 1.0, -0.5, 0.7])
F_WORLD = np.array([0.0, 0.4, -0.1, -0.3, 0.2, 0.9])


def with_tool(model, body: str):
    """The model with a frame "tool" fixed to ``body`` at a turned, shifted placement."""
    c, s = np.cos(0.7), np.sin(0.7)
    R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return model.add_frame("tool", body, (R, np.array([0.1, -0.3, 0.25])))


@pytest.mark.parametrize("floating", [False, True])
def test_wrench_rows_give_the_elements_joint_forces(floating):
    """τ of the rows equals J(q)ᵀ f of the element (kd.jacobian, the frame's own Jacobian
    for the tool frame) at random configurations, for a local and a world wrench on each
    body and on the tool frame, to 1e-13 of |J||f|; a wrench on the world has no row."""
    model = with_tool(kd.models.random_tree(6, seed=5, floating_base=floating), "body3")
    data, system = flatten(model).data, ModelSystem(model)
    rng = np.random.default_rng(1)
    targets = [*model.body_names, "tool"]
    for _ in range(3):
        q = kd.random_configuration(model, rng)
        for name in targets:
            for frame, f in (("local", F_LOCAL), ("world", F_WORLD)):
                el = ExternalWrench(name, f, frame=frame).bind(system)
                P, why = force_rows(model, [el], wrenches=True)
                assert why is None and P.shape == (model.nv + 1, P.shape[1]) and has_forces(P)
                tau_nc, tau = np.zeros(model.nv), np.zeros(model.nv)
                assert wrench_forces_add(data, P, q, tau_nc, tau) == 0
                ref = el.generalized_force(0.0, q, np.zeros(model.nv))
                scale = np.abs(kd.jacobian(model, q, name, frame=frame)).max() * np.abs(f).max()
                np.testing.assert_allclose(tau_nc, ref, rtol=0, atol=1e-13 * scale)
                np.testing.assert_array_equal(tau, tau_nc)
    P, why = force_rows(model, [ExternalWrench(model.root_name, F_LOCAL).bind(system)],
                        wrenches=True)
    assert why is None and P.shape[0] == model.nv


def test_wrench_rows_only_where_asked():
    """Without ``wrenches=True`` (a loop that does not evaluate them) a wrench has no row and
    the reason names it; a wrench given as a function never has one."""
    model = kd.models.pendulum_chain(3, planar=False)
    system = ModelSystem(model)
    el = ExternalWrench("link2", F_LOCAL).bind(system)
    P, why = force_rows(model, [el])
    assert P is None and "ExternalWrench on 'link2' has no compiled form" in why
    fn = ExternalWrench("link2", lambda t, q, v: F_LOCAL).bind(system)
    P, why = force_rows(model, [fn], wrenches=True)
    assert P is None and "(a Python function)" in why


MODEL = with_tool(kd.models.pendulum_chain(4, planar=False, length=0.3, mass=1.0,
                                           radius=0.05), "link3")
Q0, V0 = np.linspace(0.3, -0.2, 4), np.linspace(-0.5, 0.4, 4)


def elements(as_function: bool = False):
    local = (lambda t, q, v: F_LOCAL) if as_function else F_LOCAL
    return [ExternalWrench("link3", local), ExternalWrench("link4", F_WORLD, frame="world"),
            ExternalWrench("tool", 0.5 * F_WORLD), JointDamper(MODEL.joint_names[1], 0.1)]


@pytest.fixture
def loop_runs(monkeypatch):
    """The compiled loops that finished a run (spies on each loop's entry)."""
    done = []

    def spy(module, name):
        real = getattr(module, name)

        def counted(*args, **kw):
            out = real(*args, **kw)
            done.append(name if out is not None else None)
            return out

        monkeypatch.setattr(module, name, counted)

    for module, name in ((dgc, "run"), (gauss_compiled, "run"), (verlet_compiled, "run"),
                         (verlet_compiled, "run_chart"), (batch, "rk4_run"),
                         (rk4_manifold, "run_one")):
        spy(module, name)
    return done


@pytest.mark.parametrize("method", ["rk4", "midpoint", "gauss4", "verlet", "avf",
                                    "energy_momentum", "itoh_abe"])
def test_compiled_loops_with_wrenches_equal_the_python_steps(method, loop_runs):
    """Each compiled loop against its Python steps over 150 steps: RK4 to round-off, the
    implicit methods to 1e-10 (their Newton iterations differ: the Python steps take the
    wrench's ∂τ/∂q by differences, the loops leave it out of their matrices, so each
    stops at another point within its tolerance); W_nc likewise, and the wrenches work."""
    fast = kd.simulate(MODEL, Q0, V0, 0.15, method=method, dt=1e-3, forces=elements())
    ref = kd.simulate(MODEL, Q0, V0, 0.15, method=method, dt=1e-3, forces=elements(),
                      compiled=False)
    assert loop_runs and None not in loop_runs  # a compiled loop ran the whole run
    tol = 1e-13 if method == "rk4" else 1e-10
    np.testing.assert_allclose(fast.q, ref.q, rtol=0, atol=tol)
    np.testing.assert_allclose(fast.v, ref.v, rtol=0, atol=10 * tol)
    np.testing.assert_allclose(fast.work_nc, ref.work_nc, rtol=0, atol=tol)
    assert abs(ref.work_nc[-1]) > 1e-2


@pytest.mark.parametrize("method", ["avf", "energy_momentum", "itoh_abe"])
def test_discrete_gradient_budget_closes_with_wrenches(method, loop_runs):
    """E − E₀ − W_nc ≤ 1e-10 of the energy scale over 1 s while the wrenches and the damper
    change the energy by far more (W_nc is each step's h v̄ᵀ τ_nc, the exact energy change
    of a discrete-gradient step)."""
    tr = kd.simulate(MODEL, Q0, V0, 1.0, method=method, dt=2e-3, forces=elements())
    assert loop_runs == ["run"]
    scale = np.abs(tr.energy).max()
    assert abs(tr.work_nc[-1]) > 1e-3 * scale  # 1e7 times the bar on the budget
    assert np.abs(tr.budget).max() <= 1e-10 * scale


def test_a_wrench_function_takes_the_python_steps_and_the_same_run(loop_runs):
    """A wrench given as a function has no row: no loop runs, the run says so (a warning
    and ``stats["python_steps"]``; not when compiled=False asks for the Python steps), and
    the Python steps give the run of the same wrench given as constants in the compiled
    loop."""
    with pytest.warns(KanedynWarning, match=r"simulate\[avf\]: ExternalWrench on 'link3' "
                      r"\(a Python function\) has no compiled form.*every step"):
        fn = kd.simulate(MODEL, Q0, V0, 0.1, method="avf", dt=2e-3,
                         forces=elements(as_function=True))
    assert loop_runs == []
    assert "has no compiled form" in fn.stats["python_steps"]
    const = kd.simulate(MODEL, Q0, V0, 0.1, method="avf", dt=2e-3, forces=elements())
    assert loop_runs == ["run"]
    np.testing.assert_allclose(fn.q, const.q, rtol=0, atol=1e-10)
    assert "python_steps" not in const.stats
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        asked = kd.simulate(MODEL, Q0, V0, 0.01, method="avf", dt=2e-3,
                            forces=elements(as_function=True), compiled=False)
    assert "python_steps" not in asked.stats


def test_time_stepping_with_wrenches_equals_the_python_reference(monkeypatch):
    """Exact Stribeck friction on two joints beside the wrenches: the compiled time-stepping
    loop (the wrenches' τ at each step's q) against its Python reference, with joints
    sticking and slipping."""
    from kanedyn import friction
    from kanedyn.sim import time_stepping_compiled as tsc
    from kanedyn.sim.time_stepping import time_stepping

    runs = []
    real = tsc.time_stepping_run
    monkeypatch.setattr(tsc, "time_stepping_run",
                        lambda *a: runs.append(1) or real(*a))
    names = MODEL.joint_names
    joints = {names[0]: friction.Stribeck(0.3, 0.5, 0.05, 2.0, 0.02),
              names[2]: friction.Stribeck(0.2, 0.3, 0.05, 2.0, 0.02)}
    fast = time_stepping(MODEL, Q0, V0, 0.3, 1e-3, joints, forces=elements())
    assert runs == [1]
    ref = time_stepping(MODEL, Q0, V0, 0.3, 1e-3, joints, forces=elements(), compiled=False)
    assert fast.friction.stuck.any() and not fast.friction.stuck.all()
    np.testing.assert_array_equal(fast.friction.stuck, ref.friction.stuck)
    np.testing.assert_allclose(fast.q, ref.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast.v, ref.v, rtol=0, atol=1e-11)
    np.testing.assert_allclose(fast.work_nc, ref.work_nc, rtol=0,
                               atol=1e-11 * np.abs(ref.work_nc).max())


@pytest.fixture(scope="module")
def kane_chain():
    """MODEL's Kane equations (kane.tree.derive), compiled by numba: the Model's q and v."""
    from kanedyn.kane import tree

    return tree.derive(MODEL).compile(backend="numba")


@pytest.mark.parametrize("method", ["rk4", "verlet", "midpoint", "avf", "itoh_abe"])
def test_kane_loops_with_wrenches_equal_the_python_steps(kane_chain, method, monkeypatch):
    """On the compiled Kane tree of MODEL the wrenches bind through its source Model and run
    in kane_compiled's loops: the Python steps' run (compiled=False) to 1e-10, and the
    Model's own compiled run likewise (other equations of the same motion)."""
    from kanedyn.integrators import kane_compiled

    calls = []
    real = kane_compiled._run
    monkeypatch.setattr(kane_compiled, "_run",
                        lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    fast = kd.simulate(kane_chain, Q0, V0, 0.15, method=method, dt=1e-3, forces=elements())
    assert calls  # a loop of kane_compiled ran it
    ref = kd.simulate(kane_chain, Q0, V0, 0.15, method=method, dt=1e-3, forces=elements(),
                      compiled=False)
    model = kd.simulate(MODEL, Q0, V0, 0.15, method=method, dt=1e-3, forces=elements())
    for other in (ref, model):
        np.testing.assert_allclose(fast.q, other.q, rtol=0, atol=1e-10)
        np.testing.assert_allclose(fast.work_nc, other.work_nc, rtol=0, atol=1e-10)
    assert abs(ref.work_nc[-1]) > 1e-2


def _rotation(axis, angle):
    """exp(angle [axis]×), axis a unit vector (Rodrigues)."""
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]],
                  [-axis[1], axis[0], 0.0]])
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


@pytest.mark.parametrize("method", ["rk4", "midpoint", "gauss4"])
def test_a_thruster_and_a_couple_move_a_free_body_as_the_closed_form(method, monkeypatch):
    """A free body in zero gravity, at rest, turned: a constant force f through its centre
    of mass in its own axes (a thruster) moves it without turning it,
    p(t) = p₀ + ½ R₀ f t² / m; a constant world couple n on an isotropic body (I = c·1)
    turns it about n at θ(t) = ½ |n| t² / c, p fixed. Each method is exact on this
    motion (quadratic in t); the floating-base loops (rk4's manifold loop, the tangent form
    of midpoint and gauss4) run it, to 1e-10."""
    runs = []
    for module, name in ((rk4_manifold, "run_one"), (gauss_compiled, "run")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _r=real, **k: runs.append(1) or _r(*a, **k))
    m, c, T = 2.0, 0.3, 0.8
    body = kd.models.free_body(mass=m, inertia=(c, c, c), gravity=(0.0, 0.0, 0.0))
    q0 = kd.random_configuration(body, np.random.default_rng(4))
    R0, p0 = kd.frame_placement(body, q0, "body")
    f = np.array([0.4, -1.0, 0.7])
    tr = kd.simulate(body, q0, np.zeros(6), T, method=method, dt=1e-2,
                     forces=[ExternalWrench("body", [0.0, 0.0, 0.0, *f])])
    R, p = kd.frame_placement(body, tr.q[-1], "body")
    np.testing.assert_allclose(p, p0 + 0.5 * R0 @ f * T**2 / m, rtol=0, atol=1e-10)
    np.testing.assert_allclose(R, R0, rtol=0, atol=1e-10)
    n = np.array([0.3, 0.2, -0.6])
    tr = kd.simulate(body, q0, np.zeros(6), T, method=method, dt=1e-2,
                     forces=[ExternalWrench("body", [*n, 0.0, 0.0, 0.0], frame="world")])
    R, p = kd.frame_placement(body, tr.q[-1], "body")
    theta = 0.5 * np.linalg.norm(n) * T**2 / c
    np.testing.assert_allclose(R, _rotation(n / np.linalg.norm(n), theta) @ R0, rtol=0,
                               atol=1e-10)
    np.testing.assert_allclose(p, p0, rtol=0, atol=1e-12)
    assert len(runs) == 2  # both runs in a compiled loop
    np.testing.assert_allclose(tr.budget, 0.0, rtol=0, atol=1e-10 * abs(tr.energy).max())


FLOATING = with_tool(kd.models.random_tree(4, seed=7, floating_base=True,
                                           joint_types=("revolute", "spherical")), "body2")


@pytest.mark.parametrize("method", ["rk4", "midpoint", "gauss4", "verlet"])
def test_floating_tree_loops_with_wrenches_equal_the_python_steps(method, loop_runs):
    """On a floating tree with ball joints, wrenches on a body, the tool frame and the base:
    the compiled loops (rk4's manifold loop, the tangent form of midpoint and gauss4, the
    variational Verlet) against the Python steps, to 1e-10."""
    q0 = kd.random_configuration(FLOATING, np.random.default_rng(2))
    v0 = np.random.default_rng(3).normal(0.0, 0.5, FLOATING.nv)
    fs = [ExternalWrench("body3", F_LOCAL), ExternalWrench("tool", F_WORLD, frame="world"),
          ExternalWrench("body0", 0.5 * F_LOCAL), JointDamper("joint1", 0.2)]
    fast = kd.simulate(FLOATING, q0, v0, 0.1, method=method, dt=1e-3, forces=fs)
    assert loop_runs and None not in loop_runs  # a compiled loop ran the whole run
    ref = kd.simulate(FLOATING, q0, v0, 0.1, method=method, dt=1e-3, forces=fs,
                      compiled=False)
    tol = 1e-12 if method == "rk4" else 1e-10
    np.testing.assert_allclose(fast.q, ref.q, rtol=0, atol=tol)
    np.testing.assert_allclose(fast.work_nc, ref.work_nc, rtol=0, atol=tol)
    assert abs(ref.work_nc[-1]) > 1e-3


@pytest.mark.parametrize(("model", "method"), [("chain", "rk4"), ("chain", "avf"),
                                               ("chain", "verlet"), ("floating", "rk4"),
                                               ("floating", "gauss4"),
                                               ("floating", "verlet")])
def test_batched_runs_with_wrenches_equal_single_runs(model, method):
    """simulate_batch with the wrenches: each run the bits of kd.simulate's (the same
    compiled loop per run) to 1e-13."""
    from kanedyn.sim.batch import simulate_batch

    tree = MODEL if model == "chain" else FLOATING
    fs = (elements() if model == "chain" else
          [ExternalWrench("body3", F_LOCAL), ExternalWrench("tool", F_WORLD, frame="world")])
    rng = np.random.default_rng(6)
    Q0 = np.array([kd.random_configuration(tree, rng) for _ in range(3)])
    V0 = 0.5 * rng.normal(size=(3, tree.nv))
    b = simulate_batch(tree, Q0, V0, 0.1, method=method, dt=2e-3, forces=fs)
    for k in range(3):
        s = kd.simulate(tree, Q0[k], V0[k], 0.1, method=method, dt=2e-3, forces=fs)
        np.testing.assert_allclose(b.q[k], s.q, rtol=0, atol=1e-13)
        np.testing.assert_allclose(b.work_nc[k], s.work_nc, rtol=0, atol=1e-13)
    assert np.all(np.abs(b.work_nc[:, -1]) > 1e-3)


def test_event_driven_stick_slip_with_wrenches_equals_the_python_reference(monkeypatch):
    """Exact Stribeck friction by the event-driven loop with the wrenches beside it: the
    compiled run (the wrench rows at each stage's q) against stickslip_events' Python
    reference — the same switches and the samples to 1e-9."""
    from kanedyn import friction
    from kanedyn.sim import stickslip_compiled as ssc

    runs = []
    real = ssc.stickslip_run
    monkeypatch.setattr(ssc, "stickslip_run", lambda *a: runs.append(1) or real(*a))
    names = MODEL.joint_names
    fs = [*elements(), JointFriction(names[0], friction.Stribeck(0.3, 0.5, 0.05, 2.0, 0.02)),
          JointFriction(names[2], friction.Stribeck(0.2, 0.3, 0.05, 2.0, 0.02))]
    fast = kd.simulate(MODEL, Q0, V0, 0.3, method="stickslip", dt=1e-2, forces=fs)
    assert runs == [1]
    ref = kd.simulate(MODEL, Q0, V0, 0.3, method="stickslip", dt=1e-2, forces=fs,
                      compiled=False)
    assert [(s.joint, s.kind) for s in fast.friction.switches] == \
        [(s.joint, s.kind) for s in ref.friction.switches]
    assert fast.friction.stuck.any()
    np.testing.assert_allclose(fast.q, ref.q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.work_nc, ref.work_nc, rtol=0, atol=1e-9)


def test_constrained_loop_with_a_wrench_equals_the_python_steps(monkeypatch):
    """A closed four-bar (a tree cut at a pin, the loop closure as constraints) with a
    constant local wrench on the coupler and a damper: the compiled constrained
    energy–momentum loop (the wrench row at q + Δq/2 of the tree) against its Python steps
    to 1e-11, W_nc with it, and the budget E − E₀ − W_nc at round-off while the wrench
    does work."""
    from kanedyn.constraints import consistent_initial_values
    from kanedyn.constraints.mechanisms import four_bar_configuration, four_bar_system
    from kanedyn.integrators import constrained_energy_momentum_compiled as cemc

    s = four_bar_system()
    cs = consistent_initial_values(s, four_bar_configuration(np.pi / 3), np.array([2.0, 0, 0]))
    fs = [ExternalWrench("coupler", [0.0, 0.0, 0.3, 0.5, -0.4, 0.0]),
          JointDamper("rocker_pin", 0.2)]
    ran = []
    real = cemc.run
    monkeypatch.setattr(cemc, "run", lambda m: ran.append(real(m)) or ran[-1])
    a = kd.simulate(s, cs.q, cs.v, 0.2, method="energy_momentum", dt=1e-3, forces=fs)
    assert ran and ran[-1] is not None  # the compiled loop took the run
    b = kd.simulate(s, cs.q, cs.v, 0.2, method="energy_momentum", dt=1e-3, forces=fs,
                    compiled=False)
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-11)
    scale = max(np.abs(b.energy).max(), np.abs(b.work_nc).max())
    np.testing.assert_allclose(a.work_nc, b.work_nc, rtol=0, atol=1e-11 * scale)
    assert abs(a.work_nc[-1]) > 1e-3 * scale
    assert np.abs(a.budget).max() <= 1e-11 * scale


def test_floating_energy_momentum_with_wrenches_equals_the_python_steps(monkeypatch):
    """energy_momentum's "floating" variant (a free base moved by the Cayley map, hinges
    below, no gravity) with a local wrench on a limb, a world couple on the base and a
    damper: the compiled loop (τ on every speed, the base's included, with the base where
    the step starts, as the reference) against its Python steps, and the budget at
    round-off while the wrenches work."""
    from kanedyn.integrators import floating_cayley_compiled as fcc
    from kanedyn.model.joints import Free, Revolute

    b = kd.ModelBuilder("floating", gravity=(0, 0, 0))  # (the free joint in the world frame)
    b.add_body("base", None, Free("root"), None, 3.0, (0.05, -0.02, 0.1),
               np.diag([0.2, 0.3, 0.25]))
    b.add_body("arm1", "base", Revolute("j1", axis=(0, 0, 1)), (np.eye(3), (0.3, 0, 0)), 1.0,
               (0.25, 0, 0), np.diag([0.01, 0.05, 0.05]))
    b.add_body("arm2", "arm1", Revolute("j2", axis=(0, 1, 0)), (np.eye(3), (0.5, 0, 0)), 0.6,
               (0.2, 0, 0.05), np.diag([0.01, 0.03, 0.03]))
    tree = b.build()
    q0 = kd.random_configuration(tree, np.random.default_rng(5))
    v0 = np.array([0.3, -0.5, 0.8, 0.1, 0.2, -0.1, 1.5, -2.0])
    fs = [ExternalWrench("arm2", F_LOCAL), ExternalWrench("base", [0.1, -0.2, 0.3, 0, 0, 0],
                                                          frame="world"),
          JointDamper("j1", 0.1)]
    ran = []
    real = fcc.run
    monkeypatch.setattr(fcc, "run", lambda *a: ran.append(real(*a)) or ran[-1])
    a = kd.simulate(tree, q0, v0, 0.2, method="energy_momentum", variant="floating",
                    dt=1e-3, forces=fs)
    assert ran and ran[-1] is not None  # the compiled loop took the run
    b = kd.simulate(tree, q0, v0, 0.2, method="energy_momentum", variant="floating",
                    dt=1e-3, forces=fs, compiled=False)
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-10)
    scale = max(np.abs(b.energy).max(), np.abs(b.work_nc).max())
    np.testing.assert_allclose(a.work_nc, b.work_nc, rtol=0, atol=1e-10 * scale)
    assert abs(a.work_nc[-1]) > 1e-2 * scale
    assert np.abs(a.budget).max() <= 1e-10 * scale
