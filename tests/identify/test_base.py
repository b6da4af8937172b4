"""Base parameters (kanedyn.identify.base): Y_b π_b = Y π at states the set was not
computed from, the dimension is the rank of the stacked regressor, and for a planar
two-link arm the set spans the textbook's grouping (Khalil & Dombre 2002, §12.2),
whose equations of motion are derived here by hand from the arm's Lagrangian, written
in the grouped parameters (SymPy only differentiates it).
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import kanedyn as kd
from kanedyn import identify as ki
from kanedyn.model import Revolute

L1 = 0.7
G = 9.81


def close(x, y, rel=1e-10):
    np.testing.assert_allclose(x, y, rtol=0, atol=rel * max(1.0, np.abs(y).max()))


def arm2(gravity):
    """Two revolute joints about parallel z axes, the second at (l1, 0, 0) of link 1."""
    b = kd.ModelBuilder("arm2", gravity=gravity)
    b.add_body("link1", None, Revolute("j1", axis=(0, 0, 1)), None, 2.0, (0.3, 0.05, 0.01),
               np.diag([0.1, 0.2, 0.25]))
    b.add_body("link2", "link1", Revolute("j2", axis=(0, 0, 1)), (np.eye(3), (L1, 0, 0)),
               1.5, (0.25, -0.03, 0.02), np.diag([0.1, 0.15, 0.2]))
    return b.build()


def index(body, name):
    return 10 * body + ki.PARAMETERS.index(name)


def textbook_grouping(in_plane_gravity):
    """The rows of π ↦ θ: ZZ1R = ZZ1 + m2 l1², [MX1R = MX1 + l1 m2, MY1 when gravity
    acts in the plane of motion], ZZ2, MX2, MY2 (body 0 is link 1)."""
    rows = []

    def row(*terms):
        r = np.zeros(20)
        for c, b, n in terms:
            r[index(b, n)] += c
        rows.append(r)

    row((1, 0, "Izz"), (L1**2, 1, "m"))
    if in_plane_gravity:
        row((1, 0, "mcx"), (L1, 1, "m"))
        row((1, 0, "mcy"))
    row((1, 1, "Izz"))
    row((1, 1, "mcx"))
    row((1, 1, "mcy"))
    return np.array(rows)


def textbook_regressor(in_plane_gravity):
    """τ = Y_θ(q, q̇, q̈) θ from L = T - V (Lagrange's equations), T and V written by hand:

    T = ½ ZZ1R q̇₁² + ½ ZZ2 (q̇₁ + q̇₂)² + l₁ q̇₁ (q̇₁ + q̇₂)(MX2 cos q₂ - MY2 sin q₂)
    V = g (MX1R sin q₁ + MY1 cos q₁ + MX2 sin(q₁ + q₂) + MY2 cos(q₁ + q₂))  (g along -y)
    """
    t = sp.Symbol("t")
    q1, q2 = sp.Function("q1")(t), sp.Function("q2")(t)
    ZZ1R, MX1R, MY1, ZZ2, MX2, MY2 = th = sp.symbols("ZZ1R MX1R MY1 ZZ2 MX2 MY2")
    d1, d2 = q1.diff(t), q2.diff(t)
    T = (ZZ1R * d1**2 / 2 + ZZ2 * (d1 + d2)**2 / 2
         + L1 * d1 * (d1 + d2) * (MX2 * sp.cos(q2) - MY2 * sp.sin(q2)))
    V = G * (MX1R * sp.sin(q1) + MY1 * sp.cos(q1) + MX2 * sp.sin(q1 + q2)
             + MY2 * sp.cos(q1 + q2)) if in_plane_gravity else 0
    L = T - V
    tau = [sp.diff(L.diff(qi.diff(t)), t) - L.diff(qi) for qi in (q1, q2)]
    th = list(th) if in_plane_gravity else [ZZ1R, ZZ2, MX2, MY2]
    x = sp.symbols("x0:6")
    subs = {q1.diff(t, 2): x[4], q2.diff(t, 2): x[5], d1: x[2], d2: x[3], q1: x[0], q2: x[1]}
    Y = sp.Matrix([[sp.expand(ti).subs(subs).coeff(p) for p in th] for ti in tau])
    return sp.lambdify(x, Y, "numpy")


@pytest.mark.parametrize("in_plane", [True, False], ids=["gravity-in-plane", "vertical-axes"])
def test_planar_two_link_arm_is_the_textbooks(in_plane):
    model = arm2((0.0, -G, 0.0) if in_plane else (0.0, 0.0, -G))
    bp = ki.base_parameters(model)
    Gm = textbook_grouping(in_plane)
    assert bp.rank == Gm.shape[0] == (6 if in_plane else 4)
    # the same space of combinations: K's rows and the textbook's span each other
    assert np.linalg.matrix_rank(np.vstack([bp.K, Gm]), tol=1e-9) == bp.rank
    # and the textbook's equations, in its parameters, give the model's torques
    Yth = textbook_regressor(in_plane)
    theta = Gm @ ki.standard_parameters(model)
    rng = np.random.default_rng(0)
    for _ in range(5):
        q, v, a = rng.uniform(-3, 3, 2), rng.normal(size=2), rng.normal(size=2)
        close(np.asarray(Yth(*q, *v, *a), float) @ theta, kd.rnea(model, q, v, a))
    assert "link1.Izz + 0.49 link2.m" in bp.names
    assert ("link1.mcx + 0.7 link2.m" in bp.names) == in_plane
    assert "link1.m" in bp.unidentifiable and "link2.Ixx" in bp.unidentifiable


MODELS = [kd.load_robot("panda"), kd.models.pendulum_chain(3, planar=False),
          kd.models.random_tree(6, seed=3, floating_base=True,
                                joint_types=("revolute", "prismatic", "helical", "spherical",
                                             "planar")),
          kd.models.random_tree(6, seed=4)]


@pytest.mark.parametrize("model", MODELS, ids=[m.name for m in MODELS])
def test_base_regressor_gives_the_torques_and_the_dimension_is_the_rank(model):
    bp = ki.base_parameters(model)
    pi = ki.standard_parameters(model)
    rng = np.random.default_rng(99)  # states the base was not computed from
    Q = np.array([kd.random_configuration(model, rng) for _ in range(40)])
    V, A = rng.normal(size=(2, 40, model.nv))
    Y = ki.joint_torque_regressor(model, Q, V, A)
    close(np.einsum("kij,j->ki", bp.regressor(Y), bp.of(pi)),
          np.einsum("kij,j->ki", Y, pi))
    W = Y.reshape(-1, Y.shape[-1])
    assert bp.rank == np.linalg.matrix_rank(W) == np.linalg.matrix_rank(bp.regressor(W))
    assert bp.K.shape == (bp.rank, 10 * model.nb)
    assert len(bp.names) == bp.rank


def test_floating_base_identifies_every_body_mass_combination():
    """A floating base's torques and forces see the base's own ten parameters (its
    Newton–Euler equations), so none of them is unidentifiable."""
    model = kd.models.random_tree(4, seed=5, floating_base=True)
    bp = ki.base_parameters(model)
    assert not [n for n in bp.unidentifiable if n.startswith("body0.")]
    assert ki.base_parameters(model, seed=7).rank == bp.rank


def test_a_zero_regressor_is_refused():
    with pytest.raises(kd.IdentificationError, match="zero"):
        ki.base_parameters_of(np.zeros((5, 3)), ["a", "b", "c"])
    with pytest.raises(kd.IdentificationError, match="names"):
        ki.base_parameters_of(np.ones((5, 3)), ["a", "b"])
