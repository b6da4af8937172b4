"""Algebraic identities of spatial vectors (Featherstone 2008, ch. 2), checked with hypothesis."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kanedyn.spatial import (
    Transform,
    axis_angle,
    crf,
    crm,
    cross_force,
    cross_motion,
    inertia_parameters,
    matrix_to_quat,
    quat_exp,
    quat_log,
    quat_multiply,
    quat_to_matrix,
    rotational_inertia_is_physical,
    rotx,
    roty,
    rotz,
    skew,
    so3_exp,
    spatial_inertia,
    transform_inertia,
)

finite = st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False)
vec3 = arrays(np.float64, 3, elements=finite)
vec6 = arrays(np.float64, 6, elements=finite)
quat = arrays(np.float64, 4, elements=finite).filter(lambda q: np.linalg.norm(q) > 0.1).map(
    lambda q: q / np.linalg.norm(q)
)


@st.composite
def transforms(draw):
    R = quat_to_matrix(draw(quat))
    return Transform.from_pose(R, draw(vec3))


@st.composite
def inertias(draw):
    m = draw(st.floats(0.1, 5.0))
    R = quat_to_matrix(draw(quat))
    a, b = draw(st.floats(0.01, 1.0)), draw(st.floats(0.01, 1.0))
    c = draw(st.floats(abs(a - b) + 1e-3, a + b))  # triangle inequality holds
    return spatial_inertia(m, draw(vec3), R @ np.diag([a, b, c]) @ R.T)


@settings(max_examples=60, deadline=None)
@given(transforms())
def test_inverse_composes_to_identity(X):
    assert np.allclose((X.inverse() @ X).matrix(), np.eye(6), atol=1e-12)
    assert np.allclose(X.inverse().matrix() @ X.matrix(), np.eye(6), atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(transforms(), transforms(), vec6)
def test_composition_matches_matrix_product(X1, X2, m):
    assert np.allclose((X1 @ X2).matrix(), X1.matrix() @ X2.matrix(), atol=1e-12)
    assert np.allclose(X1.apply_motion(m), X1.matrix() @ m, atol=1e-12)
    assert np.allclose(X1.inverse_apply_motion(m), np.linalg.solve(X1.matrix(), m), atol=1e-10)


@settings(max_examples=60, deadline=None)
@given(transforms(), vec6)
def test_force_transform_is_inverse_transpose(X, f):
    assert np.allclose(X.force_matrix(), np.linalg.inv(X.matrix()).T, atol=1e-12)
    assert np.allclose(X.apply_force(f), X.force_matrix() @ f, atol=1e-12)
    assert np.allclose(X.transpose_apply_force(f), X.matrix().T @ f, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(vec6, vec6, transforms())
def test_power_is_invariant(v, f, X):
    # the scalar product of a motion and a force does not depend on coordinates
    assert np.isclose(X.apply_motion(v) @ X.apply_force(f), v @ f, atol=1e-10)


@settings(max_examples=60, deadline=None)
@given(vec6, vec6)
def test_crf_is_minus_crm_transpose(v, m):
    assert np.allclose(crf(v), -crm(v).T)
    assert np.allclose(crm(v) @ m, cross_motion(v, m))
    assert np.allclose(crf(v) @ m, cross_force(v, m))
    assert np.allclose(crm(v) @ v, 0.0, atol=1e-12)  # v × v = 0


@settings(max_examples=60, deadline=None)
@given(vec6, vec6, transforms())
def test_cross_products_are_covariant(v, f, X):
    # (X v) ×* (X* f) = X* (v ×* f)  and  (X v) × (X m) = X (v × m)
    Xm, Xf = X.matrix(), X.force_matrix()
    assert np.allclose(crf(Xm @ v) @ (Xf @ f), Xf @ (crf(v) @ f), atol=1e-9)
    assert np.allclose(crm(Xm @ v) @ (Xm @ f), Xm @ (crm(v) @ f), atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(inertias(), transforms(), vec6)
def test_inertia_transform_preserves_kinetic_energy(I_A, X, v_A):
    # the same motion has the same kinetic energy in either frame
    I_B = transform_inertia(X.matrix(), I_A)
    v_B = X.apply_motion(v_A)
    assert np.isclose(0.5 * v_B @ I_B @ v_B, 0.5 * v_A @ I_A @ v_A, rtol=1e-9, atol=1e-9)
    # momentum is a force vector: h_B = X* h_A
    assert np.allclose(I_B @ v_B, X.apply_force(I_A @ v_A), atol=1e-8)


@settings(max_examples=60, deadline=None)
@given(vec3, vec3, vec3, vec3)
def test_origin_change_invariance_of_spatial_velocity(w, v_P, P, Q):
    """One rigid motion written about two origins is one spatial vector.

    A body rotating with ω whose point P moves with v_P has at point Q the
    velocity v_Q = v_P + ω × (Q − P) (the classical rigid-body field). The
    Plücker vector about Q must be the shift of the one about P.
    """
    about_P = np.concatenate([w, v_P])
    about_Q = np.concatenate([w, v_P + np.cross(w, Q - P)])
    shift = Transform(np.eye(3), Q - P)  # Q-origin coordinates from P-origin coordinates
    assert np.allclose(shift.apply_motion(about_P), about_Q, atol=1e-12)


def test_spatial_inertia_parameters_round_trip_and_textbook_form():
    m, c, Ic = 2.0, np.array([0.1, -0.2, 0.3]), np.diag([0.3, 0.4, 0.5])
    I = spatial_inertia(m, c, Ic)
    m2, c2, Ic2 = inertia_parameters(I)
    assert m2 == m and np.allclose(c2, c) and np.allclose(Ic2, Ic)
    # about the origin the rotational part obeys the parallel-axis theorem
    assert np.allclose(I[:3, :3], Ic + m * (c @ c * np.eye(3) - np.outer(c, c)))


@settings(max_examples=40, deadline=None)
@given(inertias(), inertias(), vec6)
def test_sum_of_inertias_is_sum_of_energies(I1, I2, v):
    # two bodies rigidly joined: inertias add (in common coordinates)
    assert np.isclose(v @ (I1 + I2) @ v, v @ I1 @ v + v @ I2 @ v)


def test_rotations_about_axes():
    t = 0.7
    for R, axis in [(rotx(t), [1, 0, 0]), (roty(t), [0, 1, 0]), (rotz(t), [0, 0, 1])]:
        assert np.allclose(R, axis_angle(axis, t))
        assert np.allclose(R @ R.T, np.eye(3)) and np.isclose(np.linalg.det(R), 1.0)
    # active rotation: rotating x by 90° about z gives y
    assert np.allclose(rotz(np.pi / 2) @ [1, 0, 0], [0, 1, 0], atol=1e-15)


@settings(max_examples=80, deadline=None)
@given(quat, quat)
def test_quaternion_products_and_matrices(p, q):
    assert np.allclose(quat_to_matrix(quat_multiply(p, q)), quat_to_matrix(p) @ quat_to_matrix(q))
    r = matrix_to_quat(quat_to_matrix(q))
    assert np.allclose(r, q, atol=1e-9) or np.allclose(r, -q, atol=1e-9)  # same rotation
    assert r[0] >= -1e-15 and np.isclose(np.linalg.norm(r), 1.0)


@settings(max_examples=80, deadline=None)
@given(vec3)
def test_quaternion_exp_log(w):
    if np.linalg.norm(w) >= np.pi:
        w = w / np.linalg.norm(w) * 3.0
    assert np.allclose(quat_to_matrix(quat_exp(w)), so3_exp(w), atol=1e-12)
    assert np.allclose(quat_log(quat_exp(w)), w, atol=1e-9)
    assert np.allclose(skew(w) @ [1.0, 2.0, 3.0], np.cross(w, [1.0, 2.0, 3.0]))


def test_quaternion_exp_small_angle_series():
    w = np.array([1e-9, -2e-9, 3e-9])
    assert np.allclose(quat_exp(w), [1.0, *(w / 2)], atol=1e-18)
    assert np.allclose(quat_log(quat_exp(w)), w, rtol=1e-9)


def test_physical_rotational_inertia():
    assert rotational_inertia_is_physical(np.zeros((3, 3)))[0]  # a point mass is valid
    assert rotational_inertia_is_physical(np.diag([1.0, 1.0, 2.0]))[0]  # a thin disk: equality
    ok, why = rotational_inertia_is_physical(np.diag([1.0, 1.0, 2.5]))
    assert not ok and "triangle" in why
    ok, why = rotational_inertia_is_physical(np.diag([1.0, -1.0, 1.0]))
    assert not ok and "semidefinite" in why
