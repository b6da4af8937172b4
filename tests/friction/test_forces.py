"""JointFriction as a force element: values, Jacobian, URDF <dynamics>, and running through
kd.simulate with the energy budget closing; exact laws refused there."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import FrictionError, friction
from kanedyn.forces import JointFriction, urdf_friction
from kanedyn.model.urdf import load_urdf_string

LAW = friction.Stribeck(0.3, 0.45, 0.05, 2.0, 0.2)

URDF = """<robot name="arm">
  <link name="base"/>
  <link name="l1"><inertial><mass value="1"/><origin xyz="0 0 -0.5"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l2"><inertial><mass value="1"/><origin xyz="0 0 -0.5"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="5"/>
    <dynamics friction="0.7" damping="0.05"/></joint>
  <joint name="j2" type="continuous"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0 -1"/><axis xyz="0 1 0"/></joint>
</robot>"""


def test_joint_friction_force_and_jacobian():
    model = kd.models.pendulum_chain(2)
    sys_ = kd.sim.ModelSystem(model)
    el = JointFriction("joint2", LAW.smoothed("sqrt", 1e-3), surface_velocity=0.1).bind(sys_)
    q, v = np.zeros(2), np.array([0.4, 0.13])
    tau = el.generalized_force(0.0, q, v)
    assert tau[0] == 0.0
    assert tau[1] == pytest.approx(-float(LAW.smoothed("sqrt", 1e-3)(0.03)), rel=1e-14)
    _, dv = el.jacobians(0.0, q, v)
    h = 1e-7
    fd = (el.generalized_force(0.0, q, v + [0, h]) - el.generalized_force(0.0, q, v - [0, h]))
    assert dv[1, 1] == pytest.approx(fd[1] / (2 * h), rel=1e-6)
    assert el.power(0.0, q, v) == pytest.approx(tau[1] * 0.13)
    assert el.dissipation(0.0, q, v) > 0.0
    assert not el.discontinuous and JointFriction("joint2", LAW).discontinuous


def test_joint_friction_bad_input():
    with pytest.raises(FrictionError, match="not a static friction law.*bristle state"):
        JointFriction("j", friction.LuGre(1e5, 1.0, 1.0, 1.5, 0.01))
    # a Karnopp band is told where it applies, not sent to LuGre's advice
    with pytest.raises(FrictionError, match="Karnopp's band.*method='time_stepping'"):
        JointFriction("j", friction.Karnopp(LAW, 1e-3))
    with pytest.raises(FrictionError, match="before bind"):
        JointFriction("j", LAW).generalized_force(0.0, np.zeros(1), np.zeros(1))
    with pytest.raises(kd.KanedynError, match="nope"):
        JointFriction("nope", LAW).bind(kd.sim.ModelSystem(kd.models.pendulum_chain(1)))


def test_urdf_dynamics_become_friction_elements():
    model = load_urdf_string(URDF)
    els = urdf_friction(model, smoothing="tanh", eps=1e-3)
    assert [e.joint for e in els] == ["j1"]                  # j2 has no <dynamics>
    law = els[0].law
    assert (law.Fc, law.Fs, law.Fv) == (0.7, 0.7, 0.05)
    assert law.smoothing == friction.Smoothing("tanh", 1e-3)
    assert urdf_friction(model)[0].discontinuous


def test_smoothed_friction_through_kd_simulate_closes_the_budget_and_agrees():
    """The same pendulum with smoothed friction, by kd.simulate (RK4, fixed step) and by
    friction.simulate (DOP853, adaptive, tight tolerances): RK4 converges to the Radau
    answer at fourth order, and in both the mechanical energy lost equals the friction's
    negative work."""
    model = kd.models.pendulum_chain(1)
    law = LAW.smoothed("tanh", 1e-2)
    ref = friction.simulate(model, [1.0], [0.0], 1.5, {"joint1": law}, method="DOP853",
                            rtol=1e-12, atol=1e-14)
    assert np.max(np.abs(ref.budget)) < 1e-8
    err = {}
    for dt in (1e-3, 5e-4):
        tr = kd.simulate(model, [1.0], [0.0], 1.5, method="rk4", dt=dt,
                         forces=[JointFriction("joint1", law)])
        loss = tr.energy[-1] - tr.energy[0]
        assert loss < -0.5                                    # friction took real energy
        assert np.max(np.abs(tr.budget)) < 1e-7 * abs(loss)
        assert tr.work_nc[-1] == pytest.approx(ref.friction.work[-1], rel=1e-6)
        err[dt] = abs(tr.q[-1, 0] - ref.q[-1, 0])
    assert err[1e-3] < 1e-6
    assert 10.0 < err[1e-3] / err[5e-4] < 25.0                # 2⁴ = 16


def test_kd_simulate_refuses_exact_friction():
    model = kd.models.pendulum_chain(1)
    with pytest.raises(kd.KanedynError, match="discontinuous"):
        kd.simulate(model, [1.0], [0.0], 0.1, method="rk4", dt=1e-3,
                    forces=[JointFriction("joint1", LAW)])


@pytest.mark.parametrize("method, dt, rel", [
    ("dopri5", None, 1e-5), ("verlet", 1e-3, 1e-4), ("midpoint", 1e-3, 1e-5),
    ("gauss4", 1e-3, 1e-9), ("avf", 1e-3, 1e-9), ("itoh_abe", 1e-3, 1e-9),
    ("energy_momentum", 1e-3, 1e-9),
])
def test_smoothed_friction_budget_closes_in_other_methods(method, dt, rel):
    """The friction's work enters W_nc in every method; the discrete-gradient methods
    close the budget to round-off, the others to their truncation error."""
    model = kd.models.pendulum_chain(1)
    tr = kd.simulate(model, [1.0], [0.0], 0.4, method=method, dt=dt,
                     forces=[JointFriction("joint1", LAW.smoothed("tanh", 1e-2))])
    loss = tr.energy[-1] - tr.energy[0]
    assert loss < -0.2
    assert np.max(np.abs(tr.budget)) < rel * abs(loss)


def test_urdf_friction_with_exact_stick_slip():
    """The URDF's Coulomb level on j1 holds the arm at a small angle while j2 (no
    friction) swings below it: j1's holding torque varies with j2's motion, and j1
    stays exactly still as long as it is within ±0.7 N m."""
    model = load_urdf_string(URDF)
    joints = {e.joint: e.law for e in urdf_friction(model)}
    tr = friction.simulate(model, [0.02, 0.1], [0.0, 0.0], 2.0, joints, dt_out=0.01)
    stuck = tr.friction.mode[:, 0] == 0
    assert stuck.mean() > 0.5
    assert np.all(tr.v[stuck, 0] == 0.0)
    assert np.all(np.abs(tr.friction.force[stuck, 0]) <= 0.7 + 1e-12)
    assert np.ptp(tr.q[:, 1]) > 0.15                          # j2 really swings
    assert {s.kind for s in tr.friction.switches} == {"stick", "slip"}   # and j1 sticks and slips
    assert np.max(np.abs(tr.budget)) < 1e-7
