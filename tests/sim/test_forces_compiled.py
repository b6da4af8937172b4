"""Force elements inside the compiled RK4 and AVF loops: each loop equals its Python
method step for step with springs, dampers, smoothed Stribeck friction and constant and
sinusoidal torques; AVF's energy budget closes to round-off with friction on; a torque
given as a Python function takes the Python steps and gives the same run."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import friction
from kanedyn.forces import JointDamper, JointFriction, JointSpring, JointTorque, SinusoidalTorque
from kanedyn.integrators import avf_compiled

MODEL = kd.models.pendulum_chain(5, planar=False, length=0.3, mass=1.0, radius=0.1)
NAMES = MODEL.joint_names
Q0, V0 = np.linspace(0.9, 0.3, 5), np.array([0.5, -0.2, 0.0, 0.1, 0.3])
LAW = friction.Stribeck(Fc=0.05, Fs=0.08, vs=0.05, delta=2.0, Fv=0.01).smoothed("tanh", 1e-2)


@pytest.fixture
def avf_loop_runs(monkeypatch):
    """The runs that the compiled AVF loop finished (a spy on avf_compiled.run)."""
    done = []
    real = avf_compiled.run

    def spy(*args):
        sol = real(*args)
        done.append(sol is not None)
        return sol

    monkeypatch.setattr(avf_compiled, "run", spy)
    return done


def elements(torque_as_function: bool = False):
    tau = np.array([0.3, -0.2])
    torque = (JointTorque(lambda t, q, v: tau, [NAMES[0], NAMES[3]]) if torque_as_function
              else JointTorque(tau, [NAMES[0], NAMES[3]]))
    return ([JointFriction(j, LAW) for j in NAMES]
            + [JointSpring(NAMES[1], 3.0, 0.2), JointDamper(NAMES[2], 0.05), torque,
               SinusoidalTorque(NAMES[4], 0.4, 2.0, phase=0.3, offset=0.05)])


@pytest.mark.parametrize("method", ["avf", "rk4"])
def test_compiled_loop_with_forces_equals_the_python_method(method, avf_loop_runs):
    """Both loops, with every element that has a compiled form, against the Python steps
    (``compiled=False``) at every step: AVF to its Newton tolerance (1e-15 relative
    increments), RK4 to round-off."""
    fast = kd.simulate(MODEL, Q0, V0, 0.2, method=method, dt=2e-3, forces=elements())
    ref = kd.simulate(MODEL, Q0, V0, 0.2, method=method, dt=2e-3, forces=elements(),
                      compiled=False)
    assert avf_loop_runs == ([True] if method == "avf" else [])  # the compiled loop ran
    np.testing.assert_allclose(fast.q, ref.q, rtol=0, atol=1e-13)
    np.testing.assert_allclose(fast.v, ref.v, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast.work_nc, ref.work_nc, rtol=0, atol=1e-13)
    np.testing.assert_allclose(fast.energy, ref.energy, rtol=1e-13)


def test_avf_budget_closes_with_friction_in_the_compiled_loop(avf_loop_runs):
    """E − E₀ − W_nc at round-off over 1000 steps: W_nc is the exact energy change of each
    AVF step with the forces (h v̄ᵀ τ_nc), friction taking out far more than that."""
    tr = kd.simulate(MODEL, Q0, V0, 2.0, method="avf", dt=2e-3, forces=elements())
    assert avf_loop_runs == [True]
    scale = np.abs(tr.energy).max()
    assert abs(tr.work_nc[-1]) > 1e-3 * scale  # friction and torques did work
    assert np.abs(tr.budget).max() <= 1e-10 * scale


def test_a_torque_function_takes_the_python_steps_and_the_same_run(avf_loop_runs):
    """A JointTorque given as a function has no compiled form: kd.simulate runs the Python
    AVF, whose run equals the compiled one with the same torque given as constants."""
    fn = kd.simulate(MODEL, Q0, V0, 0.1, method="avf", dt=2e-3,
                     forces=elements(torque_as_function=True))
    assert avf_loop_runs == []
    const = kd.simulate(MODEL, Q0, V0, 0.1, method="avf", dt=2e-3, forces=elements())
    assert avf_loop_runs == [True]
    np.testing.assert_allclose(fn.q, const.q, rtol=0, atol=1e-13)


def test_bad_torque_input():
    with pytest.raises(kd.ModelError, match="constant numbers"):
        JointTorque("abc")
    with pytest.raises(kd.ModelError, match="frequency = nan"):
        SinusoidalTorque(NAMES[0], 1.0, float("nan"))
    with pytest.raises(kd.StateError, match=r"shape \(1,\), expected \(2,\)"):
        kd.simulate(MODEL, Q0, V0, 0.01, method="rk4", dt=2e-3, compiled=False,
                    forces=[JointTorque([1.0], [NAMES[0], NAMES[1]])])
