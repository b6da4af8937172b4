"""The compiled constrained energy–momentum loop against its Python reference, step for step
(integrators/constrained_energy_momentum_compiled.py)."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.constraints import consistent_initial_values
from kanedyn.constraints.mechanisms import four_bar_configuration, four_bar_system
from kanedyn.errors import SolverError
from kanedyn.integrators import constrained_energy_momentum_compiled as cemc


@pytest.fixture(scope="module")
def four_bar():
    s = four_bar_system()
    cs = consistent_initial_values(s, four_bar_configuration(np.pi / 3), np.array([2.0, 0, 0]))
    return s, cs.q, cs.v


@pytest.mark.parametrize("method", ["energy_momentum", "avf"])
def test_compiled_steps_agree_with_the_python_steps(method, four_bar):
    s, q0, v0 = four_bar
    a = kd.simulate(s, q0, v0, 0.05, method=method, dt=1e-3)            # 50 steps, compiled
    b = kd.simulate(s, q0, v0, 0.05, method=method, dt=1e-3, compiled=False)
    assert len(a.t) == len(b.t) == 51
    # both solve the same equations to Newton's tolerance (1e-14 relative); what differs is
    # the round-off of the evaluations (sums in another order, Cholesky for LAPACK's
    # inverse), carried over 50 steps: q, v to 1e-12, λ to 1e-10 of its size
    assert np.abs(a.q - b.q).max() < 1e-12
    assert np.abs(a.v - b.v).max() < 1e-12
    assert np.abs(a.stats["lam"] - b.stats["lam"]).max() < 1e-10 * np.abs(b.stats["lam"]).max()
    assert np.abs(a.stats["residual_g"] - b.stats["residual_g"]).max() < 1e-14
    # the same Newton iterations, but where a stopping test falls within round-off
    assert np.mean(a.stats["newton_iterations"] == b.stats["newton_iterations"]) > 0.8
    E = s.energy(a.q, a.v)
    assert np.abs(E - E[0]).max() <= 1e-12 * abs(E[0])
    assert np.abs(a.stats["residual_g"]).max() <= 1e-12
    assert np.abs(a.stats["residual_Gv"]).max() <= 1e-12


def test_the_loop_applies_only_where_it_can(four_bar):
    from kanedyn.integrators.base import Problem
    from kanedyn.integrators.constrained_energy_momentum import ConstrainedEnergyMomentum

    s, q0, v0 = four_bar
    m = ConstrainedEnergyMomentum(Problem(s, q0.copy(), v0.copy(), 0.01, dt=1e-3))
    assert cemc.applicable(m) is not None
    m = ConstrainedEnergyMomentum(Problem(s, q0.copy(), v0.copy(), 0.01, dt=1e-3),
                                  compiled=False)
    assert cemc.applicable(m) is None
    m = ConstrainedEnergyMomentum(Problem(s, q0.copy(), v0.copy(), 0.01, dt=1e-3,
                                          tau_nc=lambda t, q, v: -0.1 * v))
    assert cemc.applicable(m) is None


def test_newton_failure_names_step_time_and_residual(four_bar):
    s, q0, v0 = four_bar
    messages = []
    for compiled in (True, False):
        with pytest.raises(SolverError, match=r"Newton failed at step 0 \(t = 0, h = 0\.2\)"
                                              r".*residual .* in .*Reduce dt") as e:
            kd.simulate(s, q0, 20 * v0, 0.4, method="energy_momentum", dt=0.2, maxiter=2,
                        compiled=compiled)
        messages.append(str(e.value))
    assert messages[0] == messages[1]  # the compiled loop reports as the Python step does
