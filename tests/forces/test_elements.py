"""Force elements against independent derivations: τ = −∂V/∂q for springs, τ = Jᵀf against
RNEA's f_ext for wrenches, Jacobians against finite differences."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.forces import ExternalWrench, ForceSet, JointDamper, JointSpring, JointTorque


@pytest.fixture(scope="module")
def chain():
    m = kd.models.pendulum_chain(3, planar=False)
    return m, kd.ModelSystem(m)


def test_spring_force_is_minus_gradient_of_its_potential(chain):
    m, s = chain
    sp = JointSpring("joint2", 7.0, rest=0.3).bind(s)
    q = np.array([0.1, -0.4, 0.9])
    eps = 1e-6
    e = np.array([0.0, eps, 0.0])
    dV = (sp.potential(q + e) - sp.potential(q - e)) / (2 * eps)
    tau = sp.generalized_force(0.0, q, np.zeros(3))
    assert tau[1] == pytest.approx(-dV, rel=1e-8)
    assert tau[0] == 0.0 and tau[2] == 0.0
    assert sp.potential(q) == pytest.approx(0.5 * 7.0 * 0.7**2)
    dq, dv = sp.jacobians(0.0, q, np.zeros(3))
    assert dq[1, 1] == -7.0 and not dv.any()


def test_damper_and_its_power(chain):
    m, s = chain
    d = JointDamper("joint3", 0.8).bind(s)
    v = np.array([1.0, 2.0, -3.0])
    np.testing.assert_allclose(d.generalized_force(0, np.zeros(3), v), [0, 0, 2.4], rtol=1e-15)
    assert d.power(0, np.zeros(3), v) == pytest.approx(-0.8 * 9.0)  # −c v² ≤ 0
    assert d.jacobians(0, np.zeros(3), v)[1][2, 2] == -0.8


def test_damper_reads_the_urdf_damping_when_not_given():
    b = kd.ModelBuilder("one")
    b.add_body("link", None, kd.model.joints.Revolute("hinge", damping=0.25), None, 1.0,
               (0, 0, -0.5), np.eye(3) * 0.1)
    m = b.build()
    d = JointDamper("hinge").bind(kd.ModelSystem(m))
    assert d.generalized_force(0, np.zeros(1), np.array([2.0]))[0] == pytest.approx(-0.5)


def test_joint_torque_selects_joints(chain):
    m, s = chain
    tq = JointTorque(lambda t, q, v: [t, 2 * t], ["joint3", "joint1"]).bind(s)
    np.testing.assert_array_equal(tq.generalized_force(2.0, np.zeros(3), np.zeros(3)),
                                  [4.0, 0.0, 2.0])


@pytest.mark.parametrize("frame", ["local", "world"])
def test_wrench_maps_like_rnea_f_ext(chain, frame):
    m, s = chain
    rng = np.random.default_rng(0)
    q = rng.normal(size=3)
    f = rng.normal(size=6)
    tau = ExternalWrench("link3", f, frame=frame).bind(s).generalized_force(0, q, np.zeros(3))
    if frame == "world":  # the same force in link-3 coordinates, moment about its origin
        R, p = kd.frame_placement(m, q, "link3")
        n_b = R.T @ (f[:3] - np.cross(p, f[3:]))
        fb = np.concatenate([n_b, R.T @ f[3:]])
    else:
        fb = f
    F = np.zeros((m.nb, 6))
    F[2] = fb
    expected = kd.gravity_torques(m, q) - kd.rnea(m, q, np.zeros(3), np.zeros(3), F)
    np.testing.assert_allclose(tau, expected, atol=1e-12)


def test_force_set_splits_conservative_and_not(chain):
    m, s = chain
    fs = ForceSet(s, [JointSpring("joint1", 2.0), JointDamper("joint2", 1.0)])
    q, v = np.array([0.5, 0, 0]), np.array([0, 1.0, 0])
    np.testing.assert_array_equal(fs.tau_conservative(q), [-1.0, 0, 0])
    np.testing.assert_array_equal(fs.tau_nonconservative(0, q, v), [0, -1.0, 0])
    np.testing.assert_array_equal(fs.tau(0, q, v), [-1.0, -1.0, 0])
    assert fs.potential(q) == pytest.approx(0.25)
