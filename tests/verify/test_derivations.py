"""The checklist's own derivations against textbook formulas and the public algorithms."""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.verify import static_gravity_torques
from kanedyn.verify.lagrange import lagrange_terms
from kanedyn.verify.momentum import conserved_screws

G = 9.81


def test_static_torque_of_a_point_pendulum_is_m_g_l_sin():
    m, L = 1.7, 0.9
    model = kd.models.pendulum_chain(1, length=L, mass=m, point_mass=True)
    for th in (-2.0, -0.3, 0.0, 0.7, 2.9):
        expected = m * G * L * np.sin(th)  # holding torque about +y
        q = np.array([th])
        assert static_gravity_torques(model, q)[0] == pytest.approx(expected, abs=1e-12)
        assert kd.gravity_torques(model, q)[0] == pytest.approx(expected, abs=1e-12)


def test_static_torques_of_a_double_point_pendulum():
    """g1 = (m1+m2) g L1 sin θ1 + m2 g L2 sin(θ1+θ2), g2 = m2 g L2 sin(θ1+θ2)."""
    m1, m2, L1, L2 = 1.0, 2.5, 0.7, 1.1
    model = kd.models.pendulum_chain(2, length=[L1, L2], mass=[m1, m2], point_mass=True)
    rng = np.random.default_rng(3)
    for th1, th2 in rng.uniform(-3, 3, (5, 2)):
        g2 = m2 * G * L2 * np.sin(th1 + th2)
        g1 = (m1 + m2) * G * L1 * np.sin(th1) + g2
        np.testing.assert_allclose(static_gravity_torques(model, np.array([th1, th2])), [g1, g2],
                                   atol=1e-12)


@pytest.mark.parametrize("model", [
    kd.models.pendulum_chain(4, planar=False),
    kd.models.pendulum_chain(3, planar=False, joint="spherical"),
    kd.models.random_tree(6, seed=4, floating_base=True),
    kd.models.random_tree(6, seed=5),
], ids=lambda m: m.name)
def test_hand_static_torques_equal_gravity_torques_on_random_states(model):
    rng = np.random.default_rng(11)
    for _ in range(4):
        q = kd.random_configuration(model, rng)
        np.testing.assert_allclose(static_gravity_torques(model, q),
                                   kd.gravity_torques(model, q), atol=1e-10, rtol=1e-10)


def test_static_torques_flip_with_gravity():
    model = kd.models.pendulum_chain(3, planar=False)
    q = kd.random_configuration(model, 0)
    up = model.with_gravity((0.0, 0.0, 9.81))
    np.testing.assert_allclose(static_gravity_torques(up, q), -static_gravity_torques(model, q),
                               atol=1e-12)


@pytest.mark.parametrize("engine", ["sympy", "symengine"])
def test_lagrange_mass_matrix_of_the_double_pendulum_is_the_textbook_one(engine):
    """Point masses: M11 = (m1+m2)L1² + m2L2² + 2m2L1L2 cos θ2, M12 = m2L2² + m2L1L2 cos θ2,
    M22 = m2L2², h = Coriolis + gravity (e.g. Spong et al., Robot Modeling and Control)."""
    m1, m2, L1, L2 = 1.3, 0.8, 1.0, 0.6
    model = kd.models.pendulum_chain(2, length=[L1, L2], mass=[m1, m2], point_mass=True)
    if engine == "symengine":
        pytest.importorskip("symengine")
    fM, fh = lagrange_terms(model, engine)
    rng = np.random.default_rng(0)
    for (t1, t2), (w1, w2) in zip(rng.uniform(-3, 3, (4, 2)), rng.normal(size=(4, 2)),
                                  strict=True):
        c2, s2 = np.cos(t2), np.sin(t2)
        M = np.array([[(m1 + m2) * L1**2 + m2 * L2**2 + 2 * m2 * L1 * L2 * c2,
                       m2 * L2**2 + m2 * L1 * L2 * c2],
                      [m2 * L2**2 + m2 * L1 * L2 * c2, m2 * L2**2]])
        hc = m2 * L1 * L2 * s2 * np.array([-(2 * w1 * w2 + w2**2), w1**2])
        g2 = m2 * G * L2 * np.sin(t1 + t2)
        h = hc + np.array([(m1 + m2) * G * L1 * np.sin(t1) + g2, g2])
        np.testing.assert_allclose(fM([t1, t2]), M, atol=1e-12)
        np.testing.assert_allclose(fh([t1, t2], [w1, w2]), h, atol=1e-12)


def test_lagrange_terms_match_crba_and_rnea_with_prismatic_and_helical_joints():
    pytest.importorskip("symengine", reason="SymPy alone needs about a minute for this tree")
    model = kd.models.random_tree(4, seed=8, joint_types=("revolute", "prismatic", "helical"))
    kinds = {b.joint.kind for b in model.bodies}
    assert len(kinds) >= 2
    fM, fh = lagrange_terms(model, "symengine")
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, v = kd.random_configuration(model, rng), rng.normal(size=model.nv)
        np.testing.assert_allclose(fM(q), kd.crba(model, q), atol=1e-10)
        np.testing.assert_allclose(fh(q, v), kd.nonlinear_effects(model, q, v), atol=1e-10)


def test_conserved_screws():
    none, why = conserved_screws(kd.models.pendulum_chain(2))
    assert none.shape == (6, 0) and "no symmetry" in why
    # a hinge about z through (0.2, 0.5, 0): rotation about that vertical line
    b = kd.ModelBuilder("post")
    b.add_body("arm", None, kd.model.joints.Revolute("post", axis=(0, 0, 1)),
               (np.eye(3), (0.2, 0.5, 0.0)), 1.0, (0.4, 0, 0), np.diag([0.01, 0.05, 0.05]))
    xi, why = conserved_screws(b.build())
    assert xi.shape == (6, 1) and "vertical" in why
    xi = xi[:, 0] * np.sign(xi[2, 0])
    # the screw of a rotation about axis a through p: [a; p × a]
    a, p = np.array([0, 0, 1.0]), np.array([0.2, 0.5, 0.0])
    expected = np.concatenate([a, np.cross(p, a)])
    np.testing.assert_allclose(xi, expected / np.linalg.norm(expected), atol=1e-12)


@pytest.mark.parametrize("joint, placement, n_conserved, words", [
    ("planar", None, 3, "vertical axis and 2 linear"),            # horizontal plane
    ("planar", "vertical", 1, "1 linear momentum"),                 # xz-plane: only x
    ("prismatic", None, 1, "1 linear momentum"),                    # a horizontal slide
    ("spherical", None, 1, "angular momentum about the vertical"),  # a ball at (0, 0, 1)
])
def test_symmetries_of_root_joints_and_their_momenta(joint, placement, n_conserved, words):
    from kanedyn.model.joints import Planar, Prismatic, Revolute, Spherical
    from kanedyn.spatial import rotx
    from kanedyn.verify import checklist

    jt = {"planar": Planar("base"), "prismatic": Prismatic("base", axis=(1, 0, 0)),
          "spherical": Spherical("base")}[joint]
    pl = {None: (np.eye(3), (0.0, 0.0, 1.0)), "vertical": (rotx(np.pi / 2), (0.0, 0.0, 0.0))}
    b = kd.ModelBuilder("root_" + joint)
    b.add_body("a", None, jt, pl[placement], 1.0, (0.2, 0.1, 0), np.diag([0.1, 0.2, 0.25]))
    b.add_body("c", "a", Revolute("h", axis=(0, 1, 0)), (np.eye(3), (0.3, 0, 0)), 0.5,
               (0, 0, -0.3), np.diag([0.02, 0.02, 0.01]))
    model = b.build()
    xi, why = conserved_screws(model)
    assert xi.shape[1] == n_conserved and words in why
    line = checklist(model, n_samples=1, checks=["momentum_conservation"])[
        "momentum_conservation"]
    assert line.passed is True, line.detail


def test_lagrange_terms_take_the_rotor_inertia_of_an_mjcf_arm():
    """The MJCF example arm has armature on its three hinges: Lagrange's M (½ J q̇² per
    rotor in T) equals CRBA's, which adds J to the diagonal, and differs from the M of
    the bare bodies by exactly diag(J)."""
    path = Path(__file__).resolve().parents[2] / "examples" / "mjcf_arm.xml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kd.KanedynWarning)  # the skipped collision geoms
        model = kd.load_mjcf(path)
    assert model.armature.min() > 0
    bare = replace(model, bodies=tuple(replace(b, joint=replace(b.joint, armature=0.0))
                                       for b in model.bodies))
    fM, fh = lagrange_terms(model, "symengine")
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, v = rng.uniform(-1, 1, model.nq), rng.uniform(-1, 1, model.nv)
        M = kd.crba(model, q)
        np.testing.assert_allclose(fM(q), M, rtol=1e-10, atol=1e-12 * np.abs(M).max())
        np.testing.assert_allclose(fh(q, v), kd.nonlinear_effects(model, q, v), rtol=1e-9,
                                   atol=1e-10)
        np.testing.assert_allclose(kd.crba(bare, q), M - np.diag(model.armature),
                                   rtol=0, atol=1e-14 * np.abs(M).max())
