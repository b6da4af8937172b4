"""The DAE methods through kd.simulate: options, recorded residuals, errors."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import SolverError
from kanedyn.constraints import problems


def test_simulate_radau5_andrews_as_in_design():
    prob = problems.andrews()
    traj = kd.simulate(prob.system, prob.q0, prob.v0, prob.t_final, method="radau5",
                       formulation="index3", rtol=1e-8, atol=1e-8)
    assert traj.t[-1] == pytest.approx(0.03)
    assert prob.mescd(traj.q[-1], rtol=1e-8, atol=1e-8) >= 6.0
    for k in ("residual_g", "residual_Gv", "residual_acc", "lam"):
        assert traj.stats[k].shape == (len(traj.t), 6)
    # index 3 enforces g at every step; its velocity residual is only O(tol/h)-small
    assert np.max(np.abs(traj.stats["residual_g"])) < 1e-8
    assert np.allclose(traj.stats["lam"][0], problems.ANDREWS_LAM0, atol=1e-9)


@pytest.mark.parametrize("formulation", ["index1", "ggl"])
def test_simulate_ida_andrews(formulation):
    prob = problems.andrews()
    traj = kd.simulate(prob.system, prob.q0, prob.v0, prob.t_final, method="ida",
                       formulation=formulation, rtol=1e-8, atol=1e-8, dt=0.003)
    assert np.allclose(traj.t, np.linspace(0, 0.03, 11))
    assert prob.mescd(traj.q[-1], rtol=1e-8, atol=1e-8) >= 6.0
    assert np.max(np.abs(traj.stats["residual_acc"])) < 1e-6 * np.abs(traj.stats["vdot"]).max()


def test_dae_methods_reject_unknown_options_and_forms():
    prob = problems.pendulum()
    with pytest.raises(SolverError, match="does not take option"):
        kd.simulate(prob.system, prob.q0, prob.v0, 0.1, method="radau5", tolerance=1e-6)
    with pytest.raises(SolverError, match="takes formulation"):
        kd.simulate(prob.system, prob.q0, prob.v0, 0.1, method="ida", formulation="index3")


def test_simulate_inconsistent_start_is_projected_or_refused():
    prob = problems.pendulum()
    q_bad = prob.q0 * 1.01
    with pytest.raises(SolverError, match="not consistent"):
        kd.simulate(prob.system, q_bad, prob.v0, 0.1, method="radau5", initialize=False)
    traj = kd.simulate(prob.system, q_bad, prob.v0, 0.1, method="radau5", rtol=1e-8,
                       atol=1e-8)
    assert abs(np.linalg.norm(traj.q[0]) - 1.0) < 1e-12


def test_constraint_projection_wraps_the_fixed_step_methods():
    """RK4 of kanedyn.integrators on the index-1 ODE drifts off g = 0; wrapped in
    ConstraintProjected it stays on g = 0 and Gv = 0 to the projection tolerance."""
    from kanedyn.integrators import RK4, Problem, run_fixed
    from kanedyn.integrators.dae_projection import ConstraintProjected

    prob = problems.pendulum()
    s = prob.system
    pr = Problem(system=s, q0=prob.q0, v0=prob.v0, t_final=5.0, dt=0.01)
    raw = run_fixed(RK4(pr), pr)
    proj = run_fixed(ConstraintProjected(RK4(pr)), pr)
    g_raw = np.abs(s.constraint(0, raw.q)).max()
    g_proj = np.abs(s.constraint(0, proj.q)).max()
    assert g_raw > 1e-7  # measured 6e-6: RK4's local errors accumulate in g
    assert g_proj < 1e-12
    assert np.abs(s.velocity_constraint(0, proj.q, proj.v)).max() < 1e-12
    dE = np.abs(s.energy(proj.q, proj.v) - s.energy(prob.q0, prob.v0))
    assert dE.max() < 1e-5  # RK4 at h = 0.01: O(h⁴) per unit time


def test_force_elements_enter_the_dae():
    """A constant horizontal push on the Cartesian pendulum, once as a force element passed
    to kd.simulate, once built into the system's f: the same trajectory."""
    from kanedyn.constraints import DescriptorSystem
    from kanedyn.forces.base import ForceElement

    class Push(ForceElement):
        def generalized_force(self, t, q, v):
            return np.array([2.0, 0.0])

    prob = problems.pendulum(t_final=1.0)
    base = prob.system
    pushed = DescriptorSystem(
        2, 2, base.mass_matrix, lambda t, q, v: base.applied_forces(t, q, v) + [2.0, 0.0],
        base.constraint, base.constraint_matrix, nc=1, gamma=base.gamma)
    a = kd.simulate(base, prob.q0, prob.v0, 1.0, method="radau5", forces=[Push()],
                    formulation="ggl", rtol=1e-9, atol=1e-9)
    b = kd.simulate(pushed, prob.q0, prob.v0, 1.0, method="radau5", formulation="ggl",
                    rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(a.q[-1], b.q[-1], atol=1e-12)
    free = kd.simulate(base, prob.q0, prob.v0, 1.0, method="radau5", formulation="ggl",
                       rtol=1e-9, atol=1e-9)
    assert np.max(np.abs(free.q[-1] - a.q[-1])) > 1e-2  # the push does something
