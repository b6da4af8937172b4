"""The energy budget E(t) − E(0) − W_nc(t) with damping, actuation and springs."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.forces import ExternalWrench, JointDamper, JointSpring, JointTorque


def chain_forces():
    return [JointDamper("joint1", 0.4), JointDamper("joint2", 0.2), JointDamper("joint3", 0.3),
            JointTorque(lambda t, q, v: np.array([1.5 * np.sin(2.0 * t)]), "joint1"),
            JointSpring("joint3", 5.0, rest=0.2)]


@pytest.fixture(scope="module")
def chain():
    return kd.models.pendulum_chain(3, planar=True), np.array([0.8, -0.3, 0.5]), np.zeros(3)


@pytest.mark.parametrize("method,project", [("avf", None), ("itoh_abe", None),
                                            ("rk4", "energy"), ("energy_momentum", None)])
def test_budget_closes_to_roundoff(chain, method, project):
    m, q0, v0 = chain
    tr = kd.simulate(m, q0, v0, 1.5, method=method, dt=2e-3, forces=chain_forces(),
                     project=project)
    W = tr.work_nc
    assert np.abs(W).max() > 0.5  # damping and the motor do real work
    scale = max(abs(tr.energy[0]), np.abs(W).max())
    assert np.abs(tr.budget).max() <= 1e-10 * scale


def test_work_is_the_physical_work(chain):
    """W_nc recorded by AVF against an independent quadrature of vᵀτ_nc along a fine RK4
    run (the same forces evaluated from the trajectory, trapezoidal rule)."""
    m, q0, v0 = chain
    fine = kd.simulate(m, q0, v0, 1.5, method="rk4", dt=5e-4, forces=chain_forces())
    avf = kd.simulate(m, q0, v0, 1.5, method="avf", dt=2e-3, forces=chain_forces())
    nc = [f.bind(kd.ModelSystem(m)) for f in chain_forces() if not f.conservative]
    P = np.array([sum(v @ f.generalized_force(t, q, v) for f in nc)
                  for t, q, v in zip(fine.t, fine.q, fine.v, strict=True)])
    W_ref = np.concatenate([[0.0], np.cumsum(0.5 * (P[1:] + P[:-1]) * np.diff(fine.t))])
    assert avf.work_nc[-1] == pytest.approx(W_ref[-1], rel=1e-4)
    assert fine.work_nc[-1] == pytest.approx(W_ref[-1], rel=1e-6)


def test_rk4_budget_at_its_own_accuracy(chain):
    m, q0, v0 = chain
    budgets = []
    for dt in (4e-3, 2e-3):
        tr = kd.simulate(m, q0, v0, 3.0, method="rk4", dt=dt, forces=chain_forces())
        budgets.append(np.abs(tr.budget).max())
    assert budgets[1] < 1e-7
    assert budgets[0] / budgets[1] > 12  # closes at the method's order, not by construction


def test_spring_potential_is_in_the_energy(chain):
    m, q0, v0 = chain
    k, rest = 5.0, 0.2
    tr = kd.simulate(m, q0, v0, 1.0, method="avf", dt=2e-3,
                     forces=[JointSpring("joint3", k, rest=rest)])
    assert np.all(tr.work_nc == 0.0)
    E = tr.energy
    assert np.abs(E - E[0]).max() <= 1e-12 * abs(E[0])
    s = kd.ModelSystem(m)
    expected = s.energy(tr.q[-1], tr.v[-1]) + 0.5 * k * (tr.q[-1, 2] - rest) ** 2
    assert E[-1] == pytest.approx(expected, rel=1e-14)


def test_external_wrench_does_work_and_budget_closes():
    m = kd.models.pendulum_chain(2, planar=False)
    push = ExternalWrench("link2", lambda t, q, v: np.array([0, 0, 0, 2.0 * np.cos(t), 0, 0]))
    tr = kd.simulate(m, [0.2, 0.1], [0.0, 0.0], 2.0, method="avf", dt=2e-3, forces=[push])
    assert np.abs(tr.work_nc).max() > 0.1
    assert np.abs(tr.budget).max() <= 1e-10 * max(abs(tr.energy[0]), np.abs(tr.work_nc).max())


def test_damping_dissipates():
    m = kd.models.pendulum_chain(2)
    tr = kd.simulate(m, [1.0, 0.0], [0, 0], 3.0, method="avf", dt=5e-3,
                     forces=[JointDamper("joint1", 0.5), JointDamper("joint2", 0.5)])
    assert np.all(np.diff(tr.work_nc) <= 1e-15)  # a damper only removes energy
    assert np.all(np.diff(tr.energy) <= 1e-12)
