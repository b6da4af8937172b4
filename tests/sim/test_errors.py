"""Bad input and failures: each is a KanedynError subclass whose message names the culprit."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import integrators
from kanedyn.errors import DivergenceError, ModelError, SolverError, StateError
from kanedyn.forces import ForceElement, JointDamper, JointSpring, JointTorque


@pytest.fixture(scope="module")
def pend():
    return kd.models.pendulum_chain(2)


def test_unknown_method_lists_the_available_ones(pend):
    with pytest.raises(SolverError) as e:
        kd.simulate(pend, [0, 0], [0, 0], 1.0, method="leapfrog", dt=0.01)
    msg = str(e.value)
    assert "leapfrog" in msg
    for name in ("rk4", "avf", "itoh_abe", "energy_momentum", "dopri5", "Radau"):
        assert name in msg


@pytest.mark.parametrize("kw,what", [
    ({"dt": 0.0}, "dt"), ({"dt": -1e-3}, "dt"), ({"dt": float("nan")}, "dt"),
    ({"t_final": -1.0, "dt": 0.01}, "t_final"), ({"t_final": np.inf, "dt": 0.01}, "t_final"),
    ({"q0": [0.0, 0.0, 0.0], "dt": 0.01}, "q0"), ({"v0": [0.0], "dt": 0.01}, "v0"),
    ({"q0": [np.nan, 0.0], "dt": 0.01}, "q0"), ({"save_every": 0, "dt": 0.01}, "save_every"),
    ({}, "dt"),  # a fixed-step method without dt
])
def test_bad_input(pend, kw, what):
    args = {"q0": [0.1, 0.0], "v0": [0.0, 0.0], "t_final": 1.0, "method": "rk4", **kw}
    with pytest.raises(StateError, match=what):
        kd.simulate(pend, **args)


def test_quaternion_off_the_manifold_is_refused():
    m = kd.models.free_body()
    q = kd.neutral(m)
    q[3:] = (1.0, 0.3, 0.0, 0.0)
    with pytest.raises(StateError, match="quaternion"):
        kd.simulate(m, q, np.zeros(6), 0.1, method="rk4", dt=0.01)


def test_unknown_option_is_refused_by_the_method(pend):
    with pytest.raises(SolverError, match="formulation"):
        kd.simulate(pend, [0.1, 0], [0, 0], 0.1, method="avf", dt=0.01, formulation="index3")
    with pytest.raises(SolverError, match="rtoll"):
        kd.simulate(pend, [0.1, 0], [0, 0], 0.1, method="dopri5", rtoll=1e-6)
    with pytest.raises(SolverError, match="RK45"):
        kd.simulate(pend, [0.1, 0], [0, 0], 0.1, method="RK45", bogus=1)


def test_options_reach_the_method(pend):
    loose = kd.simulate(pend, [1.0, 0], [0, 0], 1.0, method="dopri5", rtol=1e-3, atol=1e-3)
    tight = kd.simulate(pend, [1.0, 0], [0, 0], 1.0, method="dopri5", rtol=1e-10, atol=1e-10)
    assert len(tight) > 3 * len(loose)


def test_save_every_is_for_fixed_step_methods(pend):
    with pytest.raises(StateError, match="save_every"):
        kd.simulate(pend, [0.1, 0], [0, 0], 0.1, method="dopri5", save_every=5)


def test_project_needs_a_fixed_step_method_and_known_invariants(pend):
    with pytest.raises(SolverError, match="fixed-step"):
        kd.simulate(pend, [0.1, 0], [0, 0], 0.1, method="dopri5", project="energy")
    with pytest.raises(SolverError, match="enstrophy"):
        kd.simulate(pend, [0.1, 0], [0, 0], 0.1, method="rk4", dt=0.01, project="enstrophy")


def test_canonical_methods_refuse_quaternion_systems_without_a_chart():
    """verlet and avf on ball/free joints need the chart structure a Model's joints give;
    a protocol-only system with quaternions is refused with the alternatives named."""
    m = kd.models.free_body(gravity=(0, 0, 0))
    inner = kd.ModelSystem(m)

    class Bare:  # the protocol only: no model, no chart derivative
        nq, nv = inner.nq, inner.nv

        def __getattr__(self, name):
            if name in ("mass_matrix", "nonlinear_effects", "forward_dynamics", "energy",
                        "q_dot", "integrate_configuration"):
                return getattr(inner, name)
            raise AttributeError(name)

    for method in ("verlet", "avf"):
        with pytest.raises(SolverError, match="energy_momentum"):
            kd.simulate(Bare(), kd.neutral(m), np.ones(6), 0.1, method=method, dt=0.01)


def test_newton_failure_names_step_time_residual_method_and_remedy(pend):
    stiff = [JointSpring("joint1", 1e9), JointSpring("joint2", 1e9)]
    with pytest.raises(SolverError) as e:
        kd.simulate(pend, [0.5, -0.5], [0, 0], 1.0, method="midpoint", dt=0.1, forces=stiff,
                    maxiter=2)
    msg = str(e.value)
    for part in ("midpoint", "step 0", "t = 0", "residual", "Reduce dt"):
        assert part in msg, msg


def test_divergence_stops_the_run_with_time_and_state(pend):
    stiff = [JointSpring("joint1", 1e6)]
    with pytest.raises(DivergenceError) as e:
        kd.simulate(pend, [0.5, 0.0], [0, 0], 10.0, method="rk4", dt=0.05, forces=stiff)
    msg = str(e.value)
    assert "rk4" in msg and "t = " in msg and "q = " in msg and "v = " in msg


def test_nan_from_a_force_stops_the_run(pend):
    bad = JointTorque(lambda t, q, v: np.array([np.nan if t > 0.05 else 0.0, 0.0]))
    with pytest.raises(DivergenceError, match="NaN"):
        kd.simulate(pend, [0.5, 0.0], [0, 0], 1.0, method="rk4", dt=0.01, forces=[bad])


def test_force_element_errors(pend):
    with pytest.raises(ModelError, match="jointX"):
        kd.simulate(pend, [0, 0], [0, 0], 0.1, method="rk4", dt=0.01,
                    forces=[JointDamper("jointX", 1.0)])
    with pytest.raises(ModelError, match="stiffness"):
        JointSpring("joint1", -1.0)
    with pytest.raises(ModelError, match="ForceElement"):
        kd.simulate(pend, [0, 0], [0, 0], 0.1, method="rk4", dt=0.01, forces=[lambda t: 0])
    wrong = JointTorque(lambda t, q, v: np.zeros(3))
    with pytest.raises(StateError, match="shape"):
        kd.simulate(pend, [0, 0], [0, 0], 0.1, method="rk4", dt=0.01, forces=[wrong])


def test_discontinuous_force_is_refused(pend):
    class Coulomb(ForceElement):
        discontinuous = True

        def generalized_force(self, t, q, v):
            return -np.sign(v)

    with pytest.raises(SolverError, match="Coulomb"):
        kd.simulate(pend, [0, 0], [0, 0], 0.1, method="rk4", dt=0.01, forces=[Coulomb()])


def test_registry():
    with pytest.raises(SolverError, match="kind"):
        integrators.register_method("x", integrators.RK4, kind="magic")
    with pytest.raises(SolverError, match="FixedStepMethod"):
        integrators.register_method("x", lambda p: None, kind="fixed")

    calls = {}

    def constant(problem, answer=0.0):
        calls["answer"] = answer
        return integrators.Solution(np.array([problem.t0, problem.t_final]),
                                    np.array([problem.q0, problem.q0]),
                                    np.array([problem.v0, problem.v0]), np.zeros(2))

    integrators.register_method("_test_constant", constant, kind="dae")
    try:
        m = kd.models.pendulum_chain(1)
        tr = kd.simulate(m, [0.0], [0.0], 1.0, method="_test_constant", answer=42.0)
        assert calls["answer"] == 42.0 and tr.t[-1] == 1.0  # options are forwarded
        assert "_test_constant" in integrators.available_methods()
    finally:
        integrators._REGISTRY.pop("_test_constant")


def test_not_a_system():
    with pytest.raises(SolverError, match="not a system"):
        kd.simulate(object(), [0.0], [0.0], 1.0, method="rk4", dt=0.1)
