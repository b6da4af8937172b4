"""Constant external wrenches inside the compiled loops (forces/kernel.py's wrench rows).

The rows' τ = Jᵀ f against ExternalWrench.generalized_force (kd.jacobian's own columns)
on trees of every joint type, bodies and a frame that is not a body, local and world
wrenches; then every fixed-step method's compiled loop on an additive 3D chain against
its Python steps (``compiled=False``) with two wrenches and a damper, the discrete
gradients' energy budget with the wrenches doing work, and a wrench given as a Python
function, which has no row: the Python steps, the same run."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics.flat import flatten
from kanedyn.forces import ExternalWrench, JointDamper
from kanedyn.forces.kernel import force_rows, has_forces, wrench_forces_add
from kanedyn.integrators import discrete_gradient_compiled as dgc
from kanedyn.integrators import gauss_compiled, verlet_compiled
from kanedyn.sim import batch
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
                         (batch, "rk4_run")):
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
    """A wrench given as a function has no row: no loop runs, and the Python steps give the
    run of the same wrench given as constants in the compiled loop."""
    fn = kd.simulate(MODEL, Q0, V0, 0.1, method="avf", dt=2e-3,
                     forces=elements(as_function=True))
    assert loop_runs == []
    const = kd.simulate(MODEL, Q0, V0, 0.1, method="avf", dt=2e-3, forces=elements())
    assert loop_runs == ["run"]
    np.testing.assert_allclose(fn.q, const.q, rtol=0, atol=1e-10)


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
