"""Physics of the recursive algorithms, through the public API (which runs the fast path).

Each check compares two independent routes to the same quantity.
"""

import numpy as np
import pytest

import kanedyn as kd

TREES = [(6, 1, False), (7, 2, True), (9, 3, True), (5, 4, False)]


def _state(model, seed):
    rng = np.random.default_rng(seed)
    return (kd.random_configuration(model, rng), rng.normal(size=model.nv),
            rng.normal(size=model.nv), rng.normal(size=(model.nb, 6)))


def _tree_id(p):
    return f"tree{p[0]}-seed{p[1]}-{'float' if p[2] else 'fixed'}"


@pytest.fixture(params=TREES, ids=_tree_id)
def tree(request):
    n, seed, fb = request.param
    return kd.models.random_tree(n, seed=seed, floating_base=fb)


def test_every_joint_type_is_exercised():
    kinds = set()
    for n, seed, fb in TREES:
        kinds |= {b.joint.kind for b in kd.models.random_tree(n, seed, fb).bodies}
    assert kinds >= {"revolute", "prismatic", "helical", "spherical", "planar", "free"}


def test_rnea_inverts_aba(tree):
    q, v, tau, f = _state(tree, 0)
    assert np.allclose(kd.rnea(tree, q, v, kd.aba(tree, q, v, tau)), tau, atol=1e-10)
    a = kd.aba(tree, q, v, tau, f_ext=f)
    assert np.allclose(kd.rnea(tree, q, v, a, f_ext=f), tau, atol=1e-10)


def test_crba_is_rnea_columns_without_gravity_and_velocity(tree):
    q, _, _, _ = _state(tree, 1)
    M = kd.crba(tree, q)
    free = tree.with_gravity((0.0, 0.0, 0.0))
    cols = np.column_stack([kd.rnea(free, q, np.zeros(tree.nv), e) for e in np.eye(tree.nv)])
    assert np.allclose(M, cols, atol=1e-11)
    assert np.allclose(M, M.T, atol=1e-13)
    assert np.linalg.eigvalsh(M).min() > 0.0


def test_nonlinear_effects_and_equation_of_motion(tree):
    q, v, tau, _ = _state(tree, 2)
    h = kd.nonlinear_effects(tree, q, v)
    assert np.allclose(h, kd.rnea(tree, q, v, np.zeros(tree.nv)))
    M = kd.crba(tree, q)
    assert np.allclose(M @ kd.aba(tree, q, v, tau) + h, tau, atol=1e-10)
    assert np.allclose(kd.gravity_torques(tree, q), kd.rnea(tree, q, 0 * v, 0 * v))


def test_external_forces_enter_through_body_jacobians(tree):
    # τ(f_ext) = τ(0) − Σ_i J_iᵀ f_i, with J_i the Jacobian in body i's own coordinates
    q, v, a, f = _state(tree, 3)
    expected = kd.rnea(tree, q, v, a)
    for i in range(tree.nb):
        expected = expected - kd.jacobian(tree, q, i, frame="local").T @ f[i]
    assert np.allclose(kd.rnea(tree, q, v, a, f_ext=f), expected, atol=1e-10)


def test_kinetic_energy_is_the_mass_matrix_form(tree):
    q, v, _, _ = _state(tree, 4)
    assert np.isclose(kd.kinetic_energy(tree, q, v), 0.5 * v @ kd.crba(tree, q) @ v, rtol=1e-12)


def _along_motion(model, q, v, a, h):
    """States a time ±h along the motion (second order: the h²/2 a terms cancel)."""
    qp, qm = kd.integrate_configuration(model, q, v, h), kd.integrate_configuration(model, q, v, -h)
    return (qp, v + h * a), (qm, v - h * a)


def test_power_balance(tree):
    # d/dt (T + V) = vᵀτ along the motion that ABA produces
    q, v, tau, _ = _state(tree, 5)
    a = kd.aba(tree, q, v, tau)
    h = 1e-5
    (qp, vp), (qm, vm) = _along_motion(tree, q, v, a, h)
    E = lambda x, y: kd.kinetic_energy(tree, x, y) + kd.potential_energy(tree, x)
    dEdt = (E(qp, vp) - E(qm, vm)) / (2 * h)
    assert dEdt == pytest.approx(v @ tau, rel=1e-6, abs=1e-7)


def test_free_body_keeps_spatial_momentum():
    body = kd.models.free_body(2.0, (0.1, 0.25, 0.3), com=(0.05, -0.02, 0.1), gravity=(0, 0, 0))
    q, v, _, _ = _state(body, 6)
    a = kd.aba(body, q, v, np.zeros(6))
    h = 1e-5
    (qp, vp), (qm, vm) = _along_motion(body, q, v, a, h)
    dh = (kd.spatial_momentum(body, qp, vp) - kd.spatial_momentum(body, qm, vm)) / (2 * h)
    scale = np.abs(kd.spatial_momentum(body, q, v)).max()
    assert np.abs(dh).max() < 1e-7 * scale
    # and gravity changes only the linear momentum, at rate m g
    heavy = kd.models.free_body(2.0, (0.1, 0.25, 0.3))
    L0 = kd.spatial_momentum(heavy, q, np.zeros(6))
    a = kd.aba(heavy, q, np.zeros(6), np.zeros(6))
    (qp, vp), (qm, vm) = _along_motion(heavy, q, np.zeros(6), a, h)
    dh = (kd.spatial_momentum(heavy, qp, vp) - kd.spatial_momentum(heavy, qm, vm)) / (2 * h)
    com = kd.center_of_mass(heavy, q)
    # about the world origin the gravity torque is c × m g
    mg = 2.0 * heavy.gravity
    assert np.allclose(dh, np.concatenate([np.cross(com, mg), mg]), atol=1e-6)
    assert np.allclose(L0, 0.0)


def test_point_mass_pendulum():
    g, l = 9.81, 0.7
    model = kd.models.pendulum_chain(1, point_mass=True, length=l)
    for th in (-2.0, 0.3, 1.2):
        expected = -(g / l) * np.sin(th)
        assert kd.aba(model, [th], [0.4], [0.0])[0] == pytest.approx(expected, rel=1e-12)


def test_double_pendulum_of_rods_matches_lagrange():
    """Uniform rods: M and h of the planar double pendulum, from Lagrange's equations by hand.

    With θ1 absolute and θ2 relative (joint) angles,
    M11 = (m1/3 + m2) l1² + m2 l2²/3 + m2 l1 l2 cos θ2,
    M12 = m2 l2²/3 + m2 l1 l2 cos θ2 / 2,  M22 = m2 l2²/3,
    h1 = -m2 l1 l2 sin θ2 (θ̇1 θ̇2 + θ̇2²/2) + (m1/2 + m2) g l1 sin θ1 + m2 g l2/2 sin(θ1+θ2),
    h2 = m2 l1 l2 sin θ2 θ̇1²/2 + m2 g l2/2 sin(θ1+θ2).
    """
    m1, m2, l1, l2, g = 1.3, 0.7, 0.9, 0.6, 9.81
    model = kd.models.pendulum_chain(2, mass=[m1, m2], length=[l1, l2])
    t1, t2, w1, w2 = 0.4, -1.1, 0.8, -0.3
    c2, s2 = np.cos(t2), np.sin(t2)
    M = np.array([[(m1 / 3 + m2) * l1**2 + m2 * l2**2 / 3 + m2 * l1 * l2 * c2,
                   m2 * l2**2 / 3 + m2 * l1 * l2 * c2 / 2],
                  [m2 * l2**2 / 3 + m2 * l1 * l2 * c2 / 2, m2 * l2**2 / 3]])
    h = np.array([
        -m2 * l1 * l2 * s2 * (w1 * w2 + w2**2 / 2) + (m1 / 2 + m2) * g * l1 * np.sin(t1)
        + m2 * g * l2 / 2 * np.sin(t1 + t2),
        m2 * l1 * l2 * s2 * w1**2 / 2 + m2 * g * l2 / 2 * np.sin(t1 + t2),
    ])
    assert np.allclose(kd.crba(model, [t1, t2]), M, rtol=1e-12)
    assert np.allclose(kd.nonlinear_effects(model, [t1, t2], [w1, w2]), h, rtol=1e-12)
    # potential energy: zero at the pivot height, rods hanging down
    V = -(m1 * l1 / 2 * np.cos(t1) + m2 * (l1 * np.cos(t1) + l2 / 2 * np.cos(t1 + t2))) * g
    assert kd.potential_energy(model, [t1, t2]) == pytest.approx(V, rel=1e-12)


def test_batches_equal_single_states(tree):
    rng = np.random.default_rng(7)
    Q = np.array([kd.random_configuration(tree, rng) for _ in range(5)])
    V, T = rng.normal(size=(5, tree.nv)), rng.normal(size=(5, tree.nv))
    A = kd.aba(tree, Q, V, T)
    assert A.shape == (5, tree.nv)
    for k in range(5):
        assert np.allclose(A[k], kd.aba(tree, Q[k], V[k], T[k]), atol=1e-12)
        assert np.allclose(kd.crba(tree, Q)[k], kd.crba(tree, Q[k]), atol=1e-12)
        assert np.allclose(kd.rnea(tree, Q, V, A)[k], T[k], atol=1e-10)
    # one configuration broadcasts against many speeds
    assert np.allclose(kd.rnea(tree, Q[0], V, A)[1], kd.rnea(tree, Q[0], V[1], A[1]))


def test_jacobian_frames_agree_with_kinematics(tree):
    q, v, _, _ = _state(tree, 8)
    i = tree.nb - 1
    vel = kd.forward_kinematics(tree, q, v).velocity[i]
    assert np.allclose(kd.jacobian(tree, q, i) @ v, vel, atol=1e-12)
    # world-aligned lower rows are ṗ, the velocity of the body origin; check by finite difference
    h = 1e-6
    p = lambda x: kd.frame_placement(tree, x, i)[1]
    step = lambda dt: kd.integrate_configuration(tree, q, v, dt)
    pdot = (p(step(h)) - p(step(-h))) / (2 * h)
    J_lwa = kd.jacobian(tree, q, i, frame="local_world_aligned")
    assert np.allclose(J_lwa[3:] @ v, pdot, atol=1e-7)
    R = kd.frame_placement(tree, q, i)[0]
    assert np.allclose(J_lwa[:3] @ v, R @ vel[:3], atol=1e-12)
    # world: the velocity of the body point at the world origin, v_O = ṗ − ω × p
    J_w = kd.jacobian(tree, q, i, frame="world")
    w = R @ vel[:3]
    assert np.allclose(J_w[3:] @ v, pdot - np.cross(w, p(q)), atol=1e-7)


def test_wrong_sizes_and_bad_quaternions_are_errors():
    model = kd.models.random_tree(4, seed=2, floating_base=True)
    q = kd.neutral(model)
    with pytest.raises(kd.StateError, match="entries"):
        kd.crba(model, q[:-1])
    with pytest.raises(kd.StateError, match="v has"):
        kd.aba(model, q, np.zeros(model.nv + 1), np.zeros(model.nv))
    bad = q.copy()
    bad[3:7] = [2.0, 0.0, 0.0, 0.0]
    with pytest.raises(kd.StateError, match="quaternion"):
        kd.rnea(model, bad, np.zeros(model.nv), np.zeros(model.nv))
    with pytest.raises(kd.StateError, match="NaN"):
        kd.aba(model, q, np.full(model.nv, np.nan), np.zeros(model.nv))
    with pytest.raises(kd.StateError, match="f_ext"):
        kd.rnea(model, q, np.zeros(model.nv), np.zeros(model.nv), f_ext=np.zeros((2, 6)))
    assert isinstance(kd.StateError("x"), kd.KanedynError)
