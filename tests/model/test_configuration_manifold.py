"""The kinematic map q̇ = W(q) v and integration on the configuration manifold."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.model import Free, ModelBuilder, Planar, Spherical


@pytest.fixture(params=[(6, 1, True), (8, 5, False), (7, 2, True)])
def tree(request):
    n, seed, fb = request.param
    return kd.models.random_tree(n, seed=seed, floating_base=fb)


def test_q_dot_is_the_derivative_of_integrate(tree):
    rng = np.random.default_rng(0)
    q, v = kd.random_configuration(tree, rng), rng.normal(size=tree.nv)
    h = 1e-6
    step = lambda dt: kd.integrate_configuration(tree, q, v, dt)
    fd = (step(h) - step(-h)) / (2 * h)
    assert np.allclose(kd.q_dot(tree, q, v), fd, atol=1e-8)


def test_difference_inverts_integrate(tree):
    rng = np.random.default_rng(1)
    q, v = kd.random_configuration(tree, rng), 0.3 * rng.normal(size=tree.nv)
    q1 = kd.integrate_configuration(tree, q, v, 1.0)
    assert np.allclose(kd.difference(tree, q, q1), v, atol=1e-10)


def test_integration_keeps_quaternions_unit():
    b = ModelBuilder("ball_and_free")
    b.add_body("a", None, Spherical("ball"), None, 1.0, (0, 0, -0.5), np.diag([0.1, 0.1, 0.05]))
    b.add_body("b", "a", Free("float"), None, 1.0, (0, 0, 0), np.diag([0.1, 0.2, 0.25]))
    model = b.build()
    rng = np.random.default_rng(2)
    q = kd.random_configuration(model, rng)
    for _ in range(200):
        q = kd.integrate_configuration(model, q, 5.0 * rng.normal(size=model.nv), 0.1)
    assert abs(np.linalg.norm(q[0:4]) - 1.0) < 1e-14
    assert abs(np.linalg.norm(q[7:11]) - 1.0) < 1e-14


def test_free_joint_flow_is_the_exact_screw_motion():
    # constant body twist = rotation about a fixed axis with drift along it (a screw):
    # after a full turn about z with body velocity (0, 0, vz) the body is back, shifted by 2π vz/ω
    model = kd.models.free_body()
    w, vz = 2.0, 0.3
    q = kd.integrate_configuration(model, kd.neutral(model), [0, 0, w, 0.5, 0.0, vz], 2 * np.pi / w)
    assert np.allclose(q[:3], [0, 0, 2 * np.pi / w * vz], atol=1e-12)
    assert np.allclose(np.abs(q[3]), 1.0, atol=1e-12)


def test_planar_joint_speeds_are_in_child_axes():
    b = ModelBuilder("slider")
    b.add_body("puck", None, Planar("plane"), None, 1.0, (0, 0, 0), np.diag([0.1, 0.1, 0.1]))
    model = b.build()
    q = np.array([1.0, 2.0, np.pi / 2])
    # moving along the child's x axis, which points along world y at θ = 90°
    assert np.allclose(kd.q_dot(model, q, [1.0, 0.0, 0.0]), [0.0, 1.0, 0.0], atol=1e-15)
    assert np.allclose(kd.jacobian(model, q, 0, "local") @ [1.0, 0, 0], [0, 0, 0, 1.0, 0, 0])


def test_neutral_configuration():
    model = kd.models.random_tree(6, seed=3, floating_base=True)
    q = kd.neutral(model)
    assert q.shape == (model.nq,)
    assert np.allclose(q[3:7], [1, 0, 0, 0])
