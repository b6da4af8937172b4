"""The compiled RK4 and AVF loops take the same steps as the Python methods."""

import numpy as np
import pytest

import kanedyn as kd

# the compiled loop must really run: its fallback warns, and a warning fails these tests
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


@pytest.mark.parametrize("project", [None, "energy"])
def test_compiled_equals_python(project):
    m = kd.models.pendulum_chain(5, planar=False)
    q0, v0 = np.linspace(0.4, -0.3, 5), np.linspace(-1, 1, 5)
    a = kd.simulate(m, q0, v0, 0.3, method="rk4", dt=1e-3, project=project)
    b = kd.simulate(m, q0, v0, 0.3, method="rk4", dt=1e-3, project=project, compiled=False)
    np.testing.assert_allclose(a.t, b.t, atol=1e-15)
    np.testing.assert_allclose(a.q, b.q, atol=1e-13)
    np.testing.assert_allclose(a.v, b.v, atol=1e-12)
    if project:
        assert a.relative_energy_error().max() <= 1e-14


def test_compiled_uneven_last_step_and_save_every():
    m = kd.models.pendulum_chain(2)
    a = kd.simulate(m, [1.0, 0.0], [0, 0], 0.1005, method="rk4", dt=0.01, save_every=3)
    b = kd.simulate(m, [1.0, 0.0], [0, 0], 0.1005, method="rk4", dt=0.01, save_every=3,
                    compiled=False)
    np.testing.assert_allclose(a.t, b.t, atol=1e-15)
    assert a.t[-1] == 0.1005
    np.testing.assert_allclose(a.q, b.q, atol=1e-14)


def test_compiled_divergence_is_reported():
    m = kd.models.pendulum_chain(2)
    with pytest.raises(kd.DivergenceError, match="t = "):
        kd.simulate(m, [3.0, 0.0], [50.0, -80.0], 100.0, method="rk4", dt=0.5, blowup=10.0)


def test_compiled_avf_equals_python_avf():
    m = kd.models.pendulum_chain(4, planar=False)
    q0, v0 = np.linspace(0.6, -0.3, 4), np.linspace(-1, 1, 4)
    a = kd.simulate(m, q0, v0, 0.3, method="avf", dt=1e-3)
    b = kd.simulate(m, q0, v0, 0.3, method="avf", dt=1e-3, compiled=False)
    np.testing.assert_allclose(a.q, b.q, atol=1e-13)
    np.testing.assert_allclose(a.v, b.v, atol=1e-12)
    assert a.relative_energy_error().max() <= 1e-13
    assert a.stats["newton_iterations"].min() >= 1


def test_compiled_avf_hands_failures_to_the_python_method():
    """maxiter=1 cannot converge: the compiled loop gives up and the Python AVF reports
    the Newton failure with step, time and residual."""
    m = kd.models.pendulum_chain(2)
    with pytest.raises(kd.SolverError, match="avf: Newton failed at step 0"):
        kd.simulate(m, [1.0, 0.0], [0.0, 1.0], 0.1, method="avf", dt=1e-2, maxiter=1)


def _rk4_refuse(*args, **kwargs):
    raise AssertionError("the compiled RK4 loop handed the run to the Python steps")


@pytest.mark.parametrize("tree", ["chain", "ball"])
def test_compiled_projection_with_force_rows_equals_python(tree, monkeypatch, chain_forces,
                                                           ball_chain):
    """rk4 + project="energy" with springs, dampers, smoothed Stribeck friction, constant
    and sinusoidal torques (a chain: rk4_run; a ball chain: the manifold loop): the
    compiled run projects onto E₀ + W_nc (springs' potential in E) and equals the Python
    reference step for step — q, v, W_nc and the budget — and the budget closes."""
    import importlib

    from kanedyn import friction

    if tree == "chain":
        m, q0, v0, forces = chain_forces
    else:
        m, q0, v0 = ball_chain
        law = friction.Stribeck(Fc=0.05, Fs=0.08, vs=0.05, delta=2.0,
                                Fv=0.01).smoothed("tanh", 1e-2)
        forces = [kd.forces.JointDamper("b1", 0.2), kd.forces.JointDamper("b2", 0.1),
                  kd.forces.JointSpring("r3", 4.0, 0.3), kd.forces.JointFriction("r3", law),
                  kd.forces.SinusoidalTorque("r3", 0.5, 3.0, phase=0.2)]
    kw = {"method": "rk4", "dt": 2e-3, "t0": 0.1, "project": "energy", "forces": forces}
    ref = kd.simulate(m, q0, v0, 0.2995, compiled=False, **kw)
    monkeypatch.setattr(importlib.import_module("kanedyn.sim.simulate"), "run_fixed",
                        _rk4_refuse)
    tr = kd.simulate(m, q0, v0, 0.2995, **kw)
    assert len(tr) == len(ref) == 101 and tr.method == ref.method
    assert np.abs(tr.q - ref.q).max() <= 1e-12 * np.abs(ref.q).max()
    assert np.abs(tr.v - ref.v).max() <= 1e-12 * np.abs(ref.v).max()
    scale = np.abs(ref.energy).max()
    assert np.abs(tr.work_nc - ref.work_nc).max() <= 1e-13 * scale
    assert abs(ref.work_nc[-1]) > 1e-3 * scale  # the forces did work
    assert np.abs(tr.budget - ref.budget).max() <= 1e-13 * scale
    assert np.abs(tr.budget).max() <= 1e-13 * scale


def test_rk4_loops_have_one_signature(chain_forces, ball_chain):
    """With and without forces, projected or not, single runs and a batch: one numba
    specialisation per RK4 loop (forces and project are runtime flags, P always an array)."""
    from kanedyn.sim.batch import rk4_run
    from kanedyn.sim.rk4_manifold import rk4_manifold_run

    m, q0, v0, forces = chain_forces
    for f in (None, forces):
        for p in (None, "energy"):
            kd.simulate(m, q0, v0, 0.01, method="rk4", dt=2e-3, forces=f, project=p)
    kd.simulate_batch(m, np.tile(q0, (2, 1)), np.tile(v0, (2, 1)), 0.01, method="rk4",
                      dt=2e-3, forces=forces)
    mb, qb, vb = ball_chain
    for f in (None, [kd.forces.JointDamper("b1", 0.2)]):
        kd.simulate(mb, qb, vb, 0.01, method="rk4", dt=2e-3, forces=f, project="energy")
    assert len(rk4_run.signatures) == 1
    assert len(rk4_manifold_run.signatures) == 1
