"""Loop closures on Models: Jacobians, γ, reactions against Newton–Euler, rank errors."""

import numpy as np
import pytest
import sympy as sp

import kanedyn as kd
from kanedyn import ConstraintError
from kanedyn.constraints import (
    ConstrainedSystem,
    LoopClosure,
    UserConstraint,
    VelocityConstraint,
    formulate,
    loop_closure_from_spec,
    problems,
)
from kanedyn.constraints.mechanisms import four_bar_configuration, four_bar_system
from kanedyn.integrators.radau import radau5
from kanedyn.model import ModelBuilder
from kanedyn.model.joints import Planar
from kanedyn.spatial import axis_angle


def e(th):
    return np.array([np.cos(th), np.sin(th)])


def eperp(th):
    return np.array([-np.sin(th), np.cos(th)])


def cross2(r, f):
    return r[0] * f[1] - r[1] * f[0]


def four_bar_newton_euler(theta1, omega1, tau1, l1, l2, l3, l0, m, g):
    """Pin forces and angular accelerations of the four-bar from the Newton–Euler equations
    of its three links and the loop's acceleration equation — nothing from kanedyn.

    Unknowns x = (F_O, F_B, F_P, F_D, α1, α2, α3): F_O ground on crank, F_B coupler on
    crank, F_P rocker on coupler, F_D ground on rocker."""
    q = four_bar_configuration(theta1, l1, l2, l3, l0)
    t1, t2, t3 = q[0], q[0] + q[1], q[2]
    # velocities: l1 ω1 e⊥1 + l2 ω2 e⊥2 = l3 ω3 e⊥3
    w2, w3 = np.linalg.solve(np.column_stack([l2 * eperp(t2), -l3 * eperp(t3)]),
                             -l1 * omega1 * eperp(t1))
    w1 = omega1
    I = [mi * li ** 2 / 12 for mi, li in zip(m, (l1, l2, l3), strict=True)]
    grav = np.array([0.0, -g])
    O, D = np.zeros(2), np.array([l0, 0.0])
    B = l1 * e(t1)
    P = B + l2 * e(t2)
    G1, G2, G3 = l1 / 2 * e(t1), B + l2 / 2 * e(t2), D + l3 / 2 * e(t3)

    def residual(x):
        FO, FB, FP, FD = x[0:2], x[2:4], x[4:6], x[6:8]
        a1, a2, a3 = x[8:11]
        aB = l1 * (a1 * eperp(t1) - w1 ** 2 * e(t1))
        aG1 = l1 / 2 * (a1 * eperp(t1) - w1 ** 2 * e(t1))
        aG2 = aB + l2 / 2 * (a2 * eperp(t2) - w2 ** 2 * e(t2))
        aG3 = l3 / 2 * (a3 * eperp(t3) - w3 ** 2 * e(t3))
        aP_rocker = l3 * (a3 * eperp(t3) - w3 ** 2 * e(t3))
        aP_coupler = aB + l2 * (a2 * eperp(t2) - w2 ** 2 * e(t2))
        return np.concatenate([
            m[0] * aG1 - FO - FB - m[0] * grav,
            [I[0] * a1 - cross2(O - G1, FO) - cross2(B - G1, FB) - tau1],
            m[1] * aG2 + FB - FP - m[1] * grav,
            [I[1] * a2 - cross2(B - G2, -FB) - cross2(P - G2, FP)],
            m[2] * aG3 - FD + FP - m[2] * grav,
            [I[2] * a3 - cross2(D - G3, FD) - cross2(P - G3, -FP)],
            aP_coupler - aP_rocker,
        ])

    r0 = residual(np.zeros(11))
    A = np.column_stack([residual(np.eye(11)[k]) - r0 for k in range(11)])
    x = np.linalg.solve(A, -r0)
    return q, np.array([w1, w2 - w1, w3]), x


def test_four_bar_reactions_agree_with_newton_euler():
    geom = dict(l1=0.2, l2=0.5, l3=0.4, l0=0.45)
    m, g, tau1 = (1.0, 2.0, 1.5), 9.81, 0.7
    sys = four_bar_system(**geom, m=m, gravity=g, tau=lambda t, q, v: np.array([tau1, 0, 0]))
    for theta1, omega1 in [(np.pi / 3, 2.0), (2.0, -3.5), (-0.4, 0.0)]:
        q, v, x = four_bar_newton_euler(theta1, omega1, tau1, **geom, m=m, g=g)
        assert np.max(np.abs(sys.constraint(0, q))) < 1e-14
        assert np.max(np.abs(sys.velocity_constraint(0, q, v))) < 1e-13
        vdot, lam = sys.accelerations(q, v)
        a1, a2, a3 = x[8:11]
        np.testing.assert_allclose(vdot, [a1, a2 - a1, a3], rtol=1e-10, atol=1e-10)
        F = sys.reactions(q, v)["coupler–rocker pin"]["force"]
        np.testing.assert_allclose(F[:2], x[4:6], rtol=1e-10, atol=1e-10)
        assert F[2] == 0.0


def test_redundant_loop_rows_are_named():
    """A 3D pin on a planar four-bar: the z row can never be violated — rank 2 of 3."""
    sys = four_bar_system()
    q = four_bar_configuration(1.0)
    bad = ConstrainedSystem(sys.model, [LoopClosure(
        "rocker", "coupler", "point", frame_a=(np.eye(3), (0.4, 0, 0)),
        frame_b=(np.eye(3), (0.5, 0, 0)), name="pin")])
    with pytest.raises(ConstraintError, match=r"rank 2; rows \[2\] \(pin: point z\)"):
        bad.check_constraints(q)
    rev = ConstrainedSystem(sys.model, [LoopClosure(
        "rocker", "coupler", "revolute", frame_a=(np.eye(3), (0.4, 0, 0)),
        frame_b=(np.eye(3), (0.5, 0, 0)), name="pin")])
    with pytest.raises(ConstraintError, match=r"5 rows of C have rank 2"):
        rev.check_constraints(q)


@pytest.mark.parametrize("kind", ["point", "revolute", "weld"])
def test_loop_jacobian_and_gamma_match_differentiation(kind):
    """G v = dg/dt and γ = −d(Gv)/dt|_{v̇=0}, by central differences along a motion of a
    3D tree (revolute joints about random axes)."""
    model = kd.models.random_tree(4, seed=3, joint_types=("revolute",))
    rng = np.random.default_rng(0)
    Ra = axis_angle(rng.normal(size=3), 0.7)
    lc = LoopClosure(1, 3, kind, frame_a=(Ra, (0.1, -0.2, 0.3)),
                     frame_b=(np.eye(3), (0.2, 0.1, 0.0)), name="cut")
    sys = ConstrainedSystem(model, [lc])
    q, v = rng.normal(size=4), rng.normal(size=4)
    h = 1e-6
    G = sys.constraint_matrix(0, q)
    dg = (sys.constraint(0, q + h * v) - sys.constraint(0, q - h * v)) / (2 * h)
    np.testing.assert_allclose(G @ v, dg, atol=1e-8)
    dGv = (sys.constraint_matrix(0, q + h * v) - sys.constraint_matrix(0, q - h * v)) @ v / (2 * h)
    np.testing.assert_allclose(sys.gamma(0, q, v), -dGv, atol=1e-7)


def test_user_constraint_from_sympy_equals_loop_closure():
    """The tip of a 2-link chain held on the vertical line x = c: once as sympy g(q), once
    as a point loop closure along x. g, G and γ must coincide (two derivations of γ)."""
    model = kd.models.pendulum_chain(2, length=(1.0, 0.8))
    q1, q2 = sp.symbols("q1 q2")
    c = 0.3
    # R_y(θ) maps (0, 0, −L) to (−L sin θ, 0, −L cos θ)
    x_tip = -1.0 * sp.sin(q1) - 0.8 * sp.sin(q1 + q2)
    user = UserConstraint.from_sympy([x_tip - c], [q1, q2], name="line")
    loop = LoopClosure(None, "link2", "point", frame_a=(np.eye(3), (c, 0, 0)),
                       frame_b=(np.eye(3), (0, 0, -0.8)), axes=(0,), name="line")
    su, sl = ConstrainedSystem(model, [user]), ConstrainedSystem(model, [loop])
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, v = rng.normal(size=2), rng.normal(size=2)
        np.testing.assert_allclose(su.constraint(0, q), sl.constraint(0, q), atol=1e-14)
        np.testing.assert_allclose(su.constraint_matrix(0, q), sl.constraint_matrix(0, q),
                                   atol=1e-14)
        np.testing.assert_allclose(su.gamma(0, q, v), sl.gamma(0, q, v), atol=1e-12)


def test_knife_edge_follows_its_circle():
    """A planar body whose lateral velocity (child axes) is zero: with no in-plane forces
    it runs on a circle of radius u/ω; the multiplier is the centripetal force m u ω."""
    b = ModelBuilder("knife", gravity=(0, 0, -9.81))
    b.add_body("sled", None, Planar("plane"), None, 2.0, (0, 0, 0), np.diag([0.2, 0.2, 0.3]))
    model = b.build()
    nh = VelocityConstraint(lambda q: np.array([[0.0, 1.0, 0.0]]), 1,
                            gamma=lambda q, v: np.zeros(1), name="no side slip")
    sys = ConstrainedSystem(model, velocity_constraints=[nh])
    u, w, T = 1.5, 2.0, 1.0
    q0, v0 = np.array([0.0, 0.0, 0.3]), np.array([u, 0.0, w])
    dae = formulate(sys, "index3")
    assert list(dae.index[dae.slices["lam"]]) == [2]
    r = radau5(dae.rhs, (0, T), dae.initial_state(q0, v0), dae.mass, dae.index,
               rtol=1e-8, atol=1e-8, jac=dae.jacobian)
    th = 0.3 + w * T
    expect = [u / w * (np.sin(th) - np.sin(0.3)), -u / w * (np.cos(th) - np.cos(0.3)), th]
    np.testing.assert_allclose(r.y[-1, :3], expect, atol=1e-6)
    lam = sys.multipliers(q0, v0)
    assert abs(abs(lam[0]) - 2.0 * u * w) < 1e-10


def test_slider_crank_matches_one_coordinate_lagrange():
    prob = problems.slider_crank(t_final=0.3)
    dae = formulate(prob.system, "index3")
    r = radau5(dae.rhs, (0, 0.3), dae.initial_state(prob.q0, prob.v0), dae.mass, dae.index,
               rtol=1e-7, atol=1e-7, jac=dae.jacobian)
    assert prob.mescd(r.y[-1, :3], rtol=1e-7, atol=1e-7) >= 5.0


def test_four_bar_matches_one_coordinate_lagrange():
    """The DAE (GGL) against θ1's own Lagrange equation with closed-form kinematics."""
    prob = problems.four_bar(t_final=0.5)
    dae = formulate(prob.system, "ggl")
    r = radau5(dae.rhs, (0, 0.5), dae.initial_state(prob.q0, prob.v0), dae.mass, dae.index,
               rtol=1e-8, atol=1e-8, jac=dae.jacobian)
    assert prob.mescd(r.y[-1, :3], rtol=1e-8, atol=1e-8) >= 7.0  # measured 8.2


def test_loop_closure_from_a_scenario_table():
    lc = loop_closure_from_spec({"type": "point", "body_a": "rocker", "body_b": "coupler",
                                 "point_a": [0.4, 0, 0], "point_b": [0.5, 0, 0],
                                 "axes": [0, 1], "name": "pin"})
    sys = four_bar_system()
    spec_sys = ConstrainedSystem(sys.model, [lc])
    q = four_bar_configuration(0.8)
    np.testing.assert_allclose(spec_sys.constraint_matrix(0, q), sys.constraint_matrix(0, q))
    with pytest.raises(ConstraintError, match="unknown keys"):
        loop_closure_from_spec({"type": "weld", "body_a": "crank", "colour": "red"})
    with pytest.raises(ConstraintError, match="type 'hinge'"):
        loop_closure_from_spec({"type": "hinge"})
