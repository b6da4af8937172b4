"""The compiled variational Störmer–Verlet loop on ball, free and planar joints
(integrators/verlet_compiled.py, ``run_chart``) and the chart pieces it takes from
constraints/system_kernel.py: against the Python chart (integrators/chart.py) and the Python
step (``Verlet._variational_step``, ``compiled=False``), step for step."""

import importlib

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.model.joints import Free, Planar, Revolute, Spherical

simulate_module = importlib.import_module("kanedyn.sim.simulate")


def _refuse(*args, **kwargs):
    raise AssertionError("the compiled loop handed the run to the Python steps")


ROD = np.diag([1.0 / 12.0, 1.0 / 12.0, 1e-2])
BELOW = (np.eye(3), (0, 0, -1.0))


def floating_tree(gravity=(0.0, 0.0, 0.0)):
    """A free base carrying a hinged rod (with a ball-jointed rod below it) and a second
    ball-jointed rod: 13 speeds."""
    b = kd.ModelBuilder("floating_tree", gravity=gravity)
    b.add_body("base", None, Free("root"), None, 2.0, (0.1, 0, 0), np.diag([0.2, 0.3, 0.4]))
    b.add_body("l1", "base", Revolute("r1", axis=(0, 1, 0)), None, 1.0, (0, 0, -0.5), ROD)
    b.add_body("l2", "l1", Spherical("b2"), BELOW, 0.5, (0, 0, -0.5), ROD)
    b.add_body("l3", "base", Spherical("b3"), (np.eye(3), (0.3, 0, 0.2)), 0.7, (0.2, 0, 0),
               ROD)
    m = b.build()
    v0 = np.array([0.5, -1.0, 2.0, 0.3, 0.1, -0.2, 1.5, 0.2, -0.3, 0.4, 1.0, -0.5, 0.7])
    return m, kd.random_configuration(m, np.random.default_rng(2)), v0


def planar_tree():
    """A planar base (x, y, θ about z) with a hinge about z and a ball-jointed rod below."""
    b = kd.ModelBuilder("planar_tree", gravity=(0.0, 0.0, -9.81))
    b.add_body("base", None, Planar("p"), None, 2.0, (0.1, 0.05, 0), np.diag([0.2, 0.3, 0.4]))
    b.add_body("l1", "base", Revolute("r1", axis=(0, 0, 1)), (np.eye(3), (0.3, 0, 0)), 1.0,
               (0.5, 0, 0), ROD)
    b.add_body("l2", "l1", Spherical("b2"), (np.eye(3), (1.0, 0, 0)), 0.5, (0, 0, -0.5), ROD)
    m = b.build()
    v0 = np.array([0.5, -1.0, 2.0, 0.3, 0.1, -0.2, 1.5])
    return m, kd.random_configuration(m, np.random.default_rng(3)), v0


def test_compiled_chart_pieces_equal_the_python_chart():
    """chart_point, J(x)⁻ᵀy, W = J(x)x, (∂W/∂x)ᵀy and Kᵀy of system_kernel against
    ModelChart (the joints' chart_* methods) on a free base with a ball, a hinge and a
    planar joint, at |x| ~ 1, 1e-3 and 1e-9 (the series branches of the SO(3)
    coefficients)."""
    from kanedyn.constraints import system_kernel as sk
    from kanedyn.dynamics.flat import flatten
    from kanedyn.integrators.chart import make_chart
    from kanedyn.sim.system import ModelSystem

    b = kd.ModelBuilder("mixed", gravity=(0, 0, -9.81))
    b.add_body("base", None, Free("root"), None, 2.0, (0.1, 0, 0), np.diag([0.2, 0.3, 0.4]))
    b.add_body("l1", "base", Spherical("b1"), None, 1.0, (0, 0, -0.5), ROD)
    b.add_body("l2", "l1", Revolute("r2", axis=(0, 1, 0)), BELOW, 0.5, (0, 0, -0.5), ROD)
    b.add_body("l3", "l2", Planar("p3"), BELOW, 0.5, (0, 0, -0.5), ROD)
    m = b.build()
    chart, data = make_chart(ModelSystem(m)), flatten(m).data
    rng = np.random.default_rng(0)
    for scale in (1.0, 1e-3, 1e-9):
        q, x, y = kd.random_configuration(m, rng), scale * rng.normal(size=m.nv), \
            rng.normal(size=m.nv)
        qc, W, a, k, s = (np.empty(m.nq), np.empty(m.nv), np.empty(m.nv), np.empty(m.nv),
                          np.empty(m.nv))
        Jb = np.zeros((data.shape[0] - 1, 18))
        sk.chart_point(data, q, x, qc)
        sk.chart_blocks(data, x, Jb)
        sk.chart_end_velocity(data, Jb, x, W)
        sk.chart_end_velocity_t_times(data, Jb, x, W, y, a)
        sk.chart_start_sensitivity_t_times(data, Jb, x, y, k)
        sk.chart_jt_solve(data, Jb, y, s)
        W_ref, DW = chart.end_velocity(q, x)
        np.testing.assert_allclose(qc, chart.point(q, x), rtol=0, atol=1e-15)
        np.testing.assert_allclose(W, W_ref, rtol=0, atol=1e-15 * scale)
        np.testing.assert_allclose(a, DW.T @ y, rtol=0, atol=1e-14)
        np.testing.assert_allclose(k, chart.start_sensitivity(q, x).T @ y, rtol=0, atol=1e-14)
        np.testing.assert_allclose(s, np.linalg.solve(chart.jacobian(q, x).T, y), rtol=0,
                                   atol=1e-14)


def _both(m, q0, v0, tf, monkeypatch, **kw):
    """(Python steps, compiled loop) of the same run; the compiled one may not hand back."""
    ref = kd.simulate(m, q0, v0, tf, method="verlet", compiled=False, **kw)
    with monkeypatch.context() as mp:
        mp.setattr(simulate_module, "run_fixed", _refuse)
        tr = kd.simulate(m, q0, v0, tf, method="verlet", **kw)
    assert len(tr) == len(ref) and tr.method == ref.method == "verlet"
    return ref, tr


@pytest.mark.parametrize("case", ["ball_chain", "planar"])
def test_compiled_equals_python_step_for_step(case, monkeypatch, ball_chain):
    """(a) two ball joints and a hinge under gravity, and a planar base with a hinge and a
    ball joint: 250 steps (the last shortened), every one kept, with both Newton iterations
    driven to their round-off floor (tol 1e-16): q and v agree to 1e-12 relative, the
    quaternions stay unit."""
    m, q0, v0 = ball_chain if case == "ball_chain" else planar_tree()
    ref, tr = _both(m, q0, v0, 0.2495, monkeypatch, dt=1e-3, tol=1e-16)
    assert len(tr) == 251 and tr.t[-1] == ref.t[-1] == 0.2495
    assert np.abs(tr.q - ref.q).max() <= 1e-12 * np.abs(ref.q).max()
    assert np.abs(tr.v - ref.v).max() <= 1e-12 * np.abs(ref.v).max()
    assert np.ptp(ref.v, axis=0).max() > 0.5  # it moves
    if case == "ball_chain":
        for a in (0, 4):
            np.testing.assert_allclose(np.linalg.norm(tr.q[:, a:a + 4], axis=1), 1.0,
                                       atol=1e-14)
    assert 1.0 <= tr.stats["newton_iterations"].mean() <= 8


def test_floating_tree_keeps_angular_momentum(monkeypatch):
    """(b) a free base with hinge and ball children, no gravity: step for step as the
    Python steps (q, v to 1e-12), and [L; P] constant to round-off over 400 steps (L_d is
    invariant under rigid motions of the world: discrete Noether); RK4 (control) does not
    keep L at that level."""
    m, q0, v0 = floating_tree()
    ref, tr = _both(m, q0, v0, 0.4, monkeypatch, dt=1e-3, tol=1e-16)
    assert np.abs(tr.q - ref.q).max() <= 1e-12 * np.abs(ref.q).max()
    assert np.abs(tr.v - ref.v).max() <= 1e-12 * np.abs(ref.v).max()
    h = kd.spatial_momentum(m, tr.q, tr.v)
    scale = np.linalg.norm(h[0])
    assert np.abs(h - h[0]).max() <= 1e-13 * scale
    rk = kd.spatial_momentum(m, *(lambda r: (r.q, r.v))(
        kd.simulate(m, q0, v0, 0.4, method="rk4", dt=1e-2)))
    assert np.abs(rk - rk[0]).max() > 1e-10 * scale


def test_compiled_with_a_damper_equals_python(monkeypatch, ball_chain):
    """(c) a damper on the hinge of the ball chain and one on a ball joint (all its three
    speeds), a spring on the hinge, t0 > 0: q, v to 1e-12, W_nc (the trapezoid of the two
    kicks' τ_nc) and the budget E − E₀ − W_nc to 1e-13 of the energy scale."""
    m, q0, v0 = ball_chain
    forces = [kd.forces.JointDamper("r3", 0.3), kd.forces.JointDamper("b1", 0.1),
              kd.forces.JointSpring("r3", 4.0, 0.3)]
    ref, tr = _both(m, q0, v0, 0.3, monkeypatch, dt=2e-3, t0=0.1, tol=1e-16, forces=forces)
    assert len(tr) == 101
    assert np.abs(tr.q - ref.q).max() <= 1e-12 * np.abs(ref.q).max()
    assert np.abs(tr.v - ref.v).max() <= 1e-12 * np.abs(ref.v).max()
    scale = np.abs(ref.energy).max()
    assert abs(ref.work_nc[-1]) > 1e-2 * scale  # the dampers did work
    assert np.abs(tr.work_nc - ref.work_nc).max() <= 1e-13 * scale
    assert np.abs(tr.budget - ref.budget).max() <= 1e-13 * scale


def test_failed_newton_hands_back_to_the_python_step(ball_chain):
    """maxiter=1 cannot converge: the compiled loop gives the run back, and the Python
    variational step reports the failure (method, step, time, residual)."""
    m, q0, v0 = ball_chain
    calls = []
    run_fixed = simulate_module.run_fixed

    def counting(*args, **kwargs):
        calls.append(1)
        return run_fixed(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(simulate_module, "run_fixed", counting)
        with pytest.raises(kd.SolverError) as e:
            kd.simulate(m, q0, v0, 0.1, method="verlet", dt=1e-3, maxiter=1)
    assert calls == [1]
    for part in ("verlet", "Newton failed at step 0", "t = 0", "residual"):
        assert part in str(e.value), str(e.value)


def test_one_compiled_signature(ball_chain):
    """With and without force rows, ball and free joints, single runs and a batch: one
    numba specialisation."""
    from kanedyn.integrators.verlet_compiled import _variational_loop

    m, q0, v0 = ball_chain
    kd.simulate(m, q0, v0, 0.01, method="verlet", dt=2e-3)
    kd.simulate_batch(m, np.tile(q0, (2, 1)), np.tile(v0, (2, 1)), 0.01, method="verlet",
                      dt=2e-3)
    kd.simulate(m, q0, v0, 0.01, method="verlet", dt=2e-3,
                forces=[kd.forces.JointDamper("r3", 0.3)])
    kd.simulate(*floating_tree(), 0.01, method="verlet", dt=2e-3)
    assert len(_variational_loop.signatures) == 1


def test_a_cold_loop_takes_the_python_steps(cold_loop_check, ball_chain):
    """kanedyn.dynamics.first_calls: on a cold cache the variational Verlet run takes its
    Python steps while a compiler process compiles the loop (tests/conftest.py's
    cold_loop_check)."""
    from kanedyn.integrators import verlet_compiled

    cold_loop_check("verlet", *ball_chain, verlet_compiled._variational_loop,
                    "first_run_chart")
