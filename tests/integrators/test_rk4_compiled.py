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
