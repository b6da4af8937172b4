"""simulate() refuses what it would get wrong, and an interrupted run keeps its results."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.cli import main
from kanedyn.constraints import problems


@pytest.mark.parametrize("method", ["itoh_abe", "verlet", "midpoint", "gauss4"])
def test_hamiltonian_methods_refuse_constrained_systems(method):
    p = problems.pendulum()
    with pytest.raises(kd.SolverError, match="ignore the constraints"):
        kd.simulate(p.system, p.q0, p.v0, 0.1, method=method, dt=1e-3, progress=False)


@pytest.mark.parametrize("method", ["avf", "energy_momentum"])
def test_constrained_energy_methods_refuse_a_system_without_hamiltonian_terms(method):
    """avf and energy_momentum take a ConstrainedSystem (constrained_energy_momentum);
    a DAE given only as M, f, g has no Hamiltonian to keep, and says what to use."""
    p = problems.pendulum()
    with pytest.raises(kd.SolverError, match="no 'hamiltonian_terms' — use radau5 or ida"):
        kd.simulate(p.system, p.q0, p.v0, 0.1, method=method, dt=1e-3, progress=False)


def test_rk4_on_a_constrained_system_keeps_the_constraint():
    p = problems.pendulum()
    traj = kd.simulate(p.system, p.q0, p.v0, 0.5, method="rk4", dt=1e-3, progress=False)
    g = np.array([p.system.constraint(t, q) for t, q in zip(traj.t, traj.q, strict=True)])
    assert np.abs(g).max() < 1e-9  # index-1 drift from RK4's local error only


class _Stop:
    """A torque that presses Ctrl-C once the run has passed t_stop."""

    def __init__(self, t_stop):
        self.t_stop, self.pressed = t_stop, False

    def __call__(self, t, q, v):
        if t > self.t_stop and not self.pressed:
            self.pressed = True
            raise KeyboardInterrupt
        return [0.0]


def test_interrupted_run_returns_what_it_computed():
    model = kd.models.pendulum_chain(2)
    force = kd.forces.JointTorque(_Stop(0.05), "joint1")
    traj = kd.simulate(model, [0.3, 0.0], [0.0, 0.0], 1.0, method="rk4", dt=1e-3,
                       forces=[force], progress=False)
    assert traj.interrupted and 0.04 < traj.t[-1] < 0.06
    ref = kd.simulate(model, [0.3, 0.0], [0.0, 0.0], traj.t[-1], method="rk4", dt=1e-3,
                      progress=False)
    assert np.allclose(traj.q[-1], ref.q[-1], atol=1e-12)


def test_cli_interrupt_writes_results_and_says_so(tmp_path, monkeypatch, capsys):
    from kanedyn.forces.joint import JointDamper

    calls = {"n": 0}
    real = JointDamper.generalized_force

    def pressed(self, t, q, v):
        calls["n"] += 1
        if calls["n"] == 200:  # one press of Ctrl-C, in the middle of the run
            raise KeyboardInterrupt
        return real(self, t, q, v)

    monkeypatch.setattr(JointDamper, "generalized_force", pressed)
    # the Python steps, which call the damper above: the compiled RK4 loop evaluates its
    # dampers itself (and, like any compiled loop, takes Ctrl-C only once it is done)
    import sys

    monkeypatch.setattr(sys.modules["kanedyn.sim.simulate"], "run_rk4", lambda *args: None)
    sc = tmp_path / "s.toml"
    sc.write_text('[model]\nbuilder = "pendulum_chain"\nn = 2\n[initial]\nq = [0.3, 0.0]\n'
                  '[[forces]]\ntype = "damper"\njoint = "joint1"\ndamping = 0.1\n'
                  '[integrator]\nmethod = "rk4"\ndt = 1e-3\n[run]\nt_final = 5.0\n'
                  '[output]\nreport = false\n')
    out = tmp_path / "o"
    assert main(["simulate", str(sc), "--out", str(out), "--no-progress"]) == 130
    said = capsys.readouterr()
    assert "interrupted" in said.out
    traj = kd.Trajectory.load(out / "trajectory_rk4.npz")
    assert 0.0 < traj.t[-1] < 0.1 and len(traj.t) > 10


def test_nonholonomic_system_through_simulate():
    """The rolling disk (5 coordinates, 3 speeds) by kd.simulate equals a direct
    integration of q̇ = W(q) u, u̇ = M⁻¹ forcing; chart-based methods refuse it, naming
    the methods that take it."""
    from scipy.integrate import solve_ivp

    from kanedyn.kane import classic

    system, _ = classic.rolling_disk()
    fast = system.derive().compile(backend="numpy", parameters={"m": 2.0, "g": 9.81, "R": 0.5})
    q0, v0 = np.array([0.0, 0.3, 0.0, 0.0, 0.0]), np.array([1.0, 0.2, 6.0])
    ref = solve_ivp(lambda t, x: np.r_[fast.q_dot(x[:5], x[5:]),
                                       fast.forward_dynamics(x[:5], x[5:])],
                    (0, 1), np.r_[q0, v0], method="DOP853", rtol=1e-12, atol=1e-12).y[:, -1]
    traj = kd.simulate(fast, q0, v0, 1.0, method="DOP853", rtol=1e-11, atol=1e-11,
                       progress=False)
    assert np.allclose(np.r_[traj.q[-1], traj.v[-1]], ref, atol=1e-9)
    assert traj.relative_energy_error().max() < 1e-9  # rolling without slip does no work
    with pytest.raises(kd.SolverError, match="eliminated constraints .* method 'verlet' "
                                             "cannot .* use one of rk4, avf, RK45"):
        kd.simulate(fast, q0, v0, 0.1, method="verlet", dt=1e-3, progress=False)
