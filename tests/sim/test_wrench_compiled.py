"""Constant external wrenches inside the compiled loops (forces/kernel.py's wrench rows).

The rows' τ = Jᵀ f against ExternalWrench.generalized_force (kd.jacobian's own columns)
on trees of every joint type, bodies and a frame that is not a body, local and world
wrenches; then every fixed-step method's compiled loop on an additive 3D chain against
its Python steps (``compiled=False``) with two wrenches and a damper, the discrete
gradients' energy budget with the wrenches doing work, and a wrench given as a Python
function, which has no row: the Python steps, the same run. (The loops' own test files
hold the rest: Kane trees, time-stepping, event-driven stick–slip, batches, the
constrained and the floating energy–momentum loops.)"""

import warnings

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics.flat import flatten
from kanedyn.errors import KanedynWarning
from kanedyn.forces import ExternalWrench, JointDamper
from kanedyn.forces.kernel import force_rows, has_forces, wrench_forces_add
from kanedyn.integrators import discrete_gradient_compiled as dgc
from kanedyn.integrators import gauss_compiled, verlet_compiled
from kanedyn.sim import batch, rk4_manifold
from kanedyn.sim.system import ModelSystem


@pytest.mark.parametrize("floating", [False, True])
def test_wrench_rows_give_the_elements_joint_forces(floating, wrench_chain):
    """τ of the rows equals J(q)ᵀ f of the element (kd.jacobian, the frame's own Jacobian
    for the tool frame) at random configurations, for a local and a world wrench on each
    body and on the tool frame, to 1e-13 of |J||f|; a wrench on the world has no row."""
    c = wrench_chain
    model = c.with_tool(kd.models.random_tree(6, seed=5, floating_base=floating), "body3")
    data, system = flatten(model).data, ModelSystem(model)
    rng = np.random.default_rng(1)
    targets = [*model.body_names, "tool"]
    for _ in range(3):
        q = kd.random_configuration(model, rng)
        for name in targets:
            for frame, f in (("local", c.f_local), ("world", c.f_world)):
                el = ExternalWrench(name, f, frame=frame).bind(system)
                P, why = force_rows(model, [el], wrenches=True)
                assert why is None and P.shape == (model.nv + 1, P.shape[1]) and has_forces(P)
                tau_nc, tau = np.zeros(model.nv), np.zeros(model.nv)
                assert wrench_forces_add(data, P, q, tau_nc, tau) == 0
                ref = el.generalized_force(0.0, q, np.zeros(model.nv))
                scale = np.abs(kd.jacobian(model, q, name, frame=frame)).max() * np.abs(f).max()
                np.testing.assert_allclose(tau_nc, ref, rtol=0, atol=1e-13 * scale)
                np.testing.assert_array_equal(tau, tau_nc)
    P, why = force_rows(model, [ExternalWrench(model.root_name, c.f_local).bind(system)],
                        wrenches=True)
    assert why is None and P.shape[0] == model.nv


def test_wrench_rows_only_where_asked(wrench_chain):
    """Without ``wrenches=True`` (a loop that does not evaluate them) a wrench has no row and
    the reason names it; a wrench given as a function never has one."""
    model = kd.models.pendulum_chain(3, planar=False)
    system = ModelSystem(model)
    f = wrench_chain.f_local
    el = ExternalWrench("link2", f).bind(system)
    P, why = force_rows(model, [el])
    assert P is None and "ExternalWrench on 'link2' has no compiled form" in why
    fn = ExternalWrench("link2", lambda t, q, v: f).bind(system)
    P, why = force_rows(model, [fn], wrenches=True)
    assert P is None and "(a Python function)" in why


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
def test_compiled_loops_with_wrenches_equal_the_python_steps(method, loop_runs, wrench_chain):
    """Each compiled loop against its Python steps over 150 steps: RK4 to round-off, the
    implicit methods to 1e-10 (their Newton iterations differ: the Python steps take the
    wrench's ∂τ/∂q by differences, the loops leave it out of their matrices, so each
    stops at another point within its tolerance); W_nc likewise, and the wrenches work."""
    c = wrench_chain
    fast = kd.simulate(c.model, c.q0, c.v0, 0.15, method=method, dt=1e-3, forces=c.elements())
    ref = kd.simulate(c.model, c.q0, c.v0, 0.15, method=method, dt=1e-3, forces=c.elements(),
                      compiled=False)
    assert loop_runs and None not in loop_runs  # a compiled loop ran the whole run
    tol = 1e-13 if method == "rk4" else 1e-10
    np.testing.assert_allclose(fast.q, ref.q, rtol=0, atol=tol)
    np.testing.assert_allclose(fast.v, ref.v, rtol=0, atol=10 * tol)
    np.testing.assert_allclose(fast.work_nc, ref.work_nc, rtol=0, atol=tol)
    assert abs(ref.work_nc[-1]) > 1e-2


@pytest.mark.parametrize("method", ["avf", "energy_momentum", "itoh_abe"])
def test_discrete_gradient_budget_closes_with_wrenches(method, loop_runs, wrench_chain):
    """E − E₀ − W_nc ≤ 1e-10 of the energy scale over 1 s while the wrenches and the damper
    change the energy by far more (W_nc is each step's h v̄ᵀ τ_nc, the exact energy change
    of a discrete-gradient step)."""
    c = wrench_chain
    tr = kd.simulate(c.model, c.q0, c.v0, 1.0, method=method, dt=2e-3, forces=c.elements())
    assert loop_runs == ["run"]
    scale = np.abs(tr.energy).max()
    assert abs(tr.work_nc[-1]) > 1e-3 * scale  # 1e7 times the bar on the budget
    assert np.abs(tr.budget).max() <= 1e-10 * scale


def test_a_wrench_function_takes_the_python_steps_and_the_same_run(loop_runs, wrench_chain):
    """A wrench given as a function has no row: no loop runs, the run says so (a warning
    and ``stats["python_steps"]``; not when compiled=False asks for the Python steps), and
    the Python steps give the run of the same wrench given as constants in the compiled
    loop."""
    c = wrench_chain
    with pytest.warns(KanedynWarning, match=r"simulate\[avf\]: ExternalWrench on 'link3' "
                      r"\(a Python function\) has no compiled form.*every step"):
        fn = kd.simulate(c.model, c.q0, c.v0, 0.1, method="avf", dt=2e-3,
                         forces=c.elements(as_function=True))
    assert loop_runs == []
    assert "has no compiled form" in fn.stats["python_steps"]
    const = kd.simulate(c.model, c.q0, c.v0, 0.1, method="avf", dt=2e-3, forces=c.elements())
    assert loop_runs == ["run"]
    np.testing.assert_allclose(fn.q, const.q, rtol=0, atol=1e-10)
    assert "python_steps" not in const.stats
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        asked = kd.simulate(c.model, c.q0, c.v0, 0.01, method="avf", dt=2e-3,
                            forces=c.elements(as_function=True), compiled=False)
    assert "python_steps" not in asked.stats


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


@pytest.mark.parametrize("method", ["rk4", "midpoint", "gauss4", "verlet"])
def test_floating_tree_loops_with_wrenches_equal_the_python_steps(method, loop_runs,
                                                                  wrench_chain):
    """On a floating tree with ball joints, wrenches on a body, the tool frame and the base:
    the compiled loops (rk4's manifold loop, the tangent form of midpoint and gauss4, the
    variational Verlet) against the Python steps, to 1e-10."""
    c = wrench_chain
    tree = c.with_tool(kd.models.random_tree(4, seed=7, floating_base=True,
                                             joint_types=("revolute", "spherical")), "body2")
    q0 = kd.random_configuration(tree, np.random.default_rng(2))
    v0 = np.random.default_rng(3).normal(0.0, 0.5, tree.nv)
    fs = [ExternalWrench("body3", c.f_local), ExternalWrench("tool", c.f_world, frame="world"),
          ExternalWrench("body0", 0.5 * c.f_local), JointDamper("joint1", 0.2)]
    fast = kd.simulate(tree, q0, v0, 0.1, method=method, dt=1e-3, forces=fs)
    assert loop_runs and None not in loop_runs  # a compiled loop ran the whole run
    ref = kd.simulate(tree, q0, v0, 0.1, method=method, dt=1e-3, forces=fs,
                      compiled=False)
    tol = 1e-12 if method == "rk4" else 1e-10
    np.testing.assert_allclose(fast.q, ref.q, rtol=0, atol=tol)
    np.testing.assert_allclose(fast.work_nc, ref.work_nc, rtol=0, atol=tol)
    assert abs(ref.work_nc[-1]) > 1e-3


@pytest.mark.parametrize("method", ["rk4", "avf"])
def test_a_tool_force_on_the_shipped_panda(method, loop_runs):
    """The Panda URDF as its package ships it: a 20 N push along the flange frame's own z
    axis (``panda_link8``, a merged fixed link, not a body) — the compiled loop against its
    Python steps, and its work against the power f · v_tool of the flange's own velocity
    (kd.frame_velocity, another kernel), integrated by the trapezoid over the samples: a
    force of the wrong frame, sign or point gives another work."""
    from kanedyn.model.urdf import robot_path

    panda = kd.load_urdf(str(robot_path("panda")))
    f = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 20.0])
    push = [ExternalWrench("panda_link8", f)]
    q0 = kd.neutral(panda)
    v0 = np.zeros(panda.nv)
    fast = kd.simulate(panda, q0, v0, 0.3, method=method, dt=1e-3, forces=push)
    assert loop_runs and None not in loop_runs
    ref = kd.simulate(panda, q0, v0, 0.3, method=method, dt=1e-3, forces=push,
                      compiled=False)
    np.testing.assert_allclose(fast.q, ref.q, rtol=0, atol=1e-12)
    power = np.array([f @ kd.frame_velocity(panda, q, v, "panda_link8")
                      for q, v in zip(fast.q, fast.v, strict=True)])
    work = np.concatenate([[0.0], np.cumsum(0.5 * (power[1:] + power[:-1]) * 1e-3)])
    assert abs(fast.work_nc[-1]) > 0.1
    np.testing.assert_allclose(fast.work_nc, work, rtol=0, atol=1e-4 * abs(work[-1]))
