"""The Lie-group maths of kanedyn.spatial.lie against independent derivations: the matrix
exponential (scipy's expm of the 4x4 twist), exp∘log identities, finite-difference
Jacobians, and the small-angle series against the closed forms in 120-digit arithmetic
on both sides of each switch."""

import mpmath as mp
import numpy as np
import pytest
from scipy.linalg import expm

from kanedyn.spatial import quat_multiply, quat_normalize, quat_to_matrix, skew
from kanedyn.spatial.lie import (
    quat_difference,
    quat_exp,
    quat_rate_matrix,
    quat_times_exp,
    se2_coefficients,
    se3_exp,
    se3_log,
    se3_right_jacobian,
    so3_coefficients,
    so3_exp,
    so3_exp_matrix,
    so3_left_jacobian,
    so3_log,
    so3_right_jacobian,
    so3_right_jacobian_derivative,
)

RNG = np.random.default_rng(7)
#: rotation vectors from tiny to near π, in random directions
ANGLES = (0.0, 1e-12, 1e-7, 1e-4, 0.19, 0.21, 0.999, 1.001, 2.0, 3.0)


def vectors(angles=ANGLES):
    out = []
    for th in angles:
        d = RNG.normal(size=3)
        out.append(th * d / np.linalg.norm(d))
    return out


def twist_matrix(xi):
    """The 4x4 matrix of a body twist, whose expm is the pose [[R, p], [0, 1]]."""
    T = np.zeros((4, 4))
    T[:3, :3] = skew(xi[:3])
    T[:3, 3] = xi[3:]
    return T


@pytest.mark.parametrize("x", vectors(), ids=[f"{t:g}" for t in ANGLES])
def test_so3_exp_against_expm_and_log_inverts_it(x):
    E = expm(skew(x))
    np.testing.assert_allclose(so3_exp(x), E, rtol=0, atol=2e-15)
    np.testing.assert_allclose(so3_exp_matrix(x), E, rtol=0, atol=2e-15)
    np.testing.assert_allclose(quat_to_matrix(quat_exp(x)), E, rtol=0, atol=2e-15)
    np.testing.assert_allclose(so3_log(E), x, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("xi", [np.concatenate([w, RNG.normal(size=3)]) for w in vectors()],
                         ids=[f"{t:g}" for t in ANGLES])
def test_se3_exp_is_the_matrix_exponential_of_the_twist_and_log_inverts_it(xi):
    R, p = se3_exp(xi)
    T = expm(twist_matrix(xi))
    np.testing.assert_allclose(R, T[:3, :3], rtol=0, atol=2e-15)
    np.testing.assert_allclose(p, T[:3, 3], rtol=0, atol=1e-14)
    np.testing.assert_allclose(se3_log(R, p), xi, rtol=1e-11, atol=1e-14)


def _fd(f, x, d, h=1e-6):
    return (f(x + h * d) - f(x - h * d)) / (2 * h)


@pytest.mark.parametrize("x", vectors((0.0, 1e-5, 0.5, 0.999, 1.001, 2.5)))
def test_so3_jacobians_against_finite_differences(x):
    """exp(x + εδ) = exp(x) exp(ε J_r δ) = exp(ε J_l δ) exp(x) to first order: the right
    and left Jacobians are the derivatives of log(exp(x)ᵀ exp(x + εδ)) and
    log(exp(x + εδ) exp(x)ᵀ); J_l(x) = J_r(x)ᵀ; D is the derivative of J_r(x) w."""
    E = so3_exp(x)
    w = RNG.normal(size=3)
    for d in np.eye(3):
        right = _fd(lambda y: so3_log(E.T @ so3_exp(y)), x, d)
        left = _fd(lambda y: so3_log(so3_exp(y) @ E.T), x, d)
        np.testing.assert_allclose(so3_right_jacobian(x) @ d, right, atol=1e-9)
        np.testing.assert_allclose(so3_left_jacobian(x) @ d, left, atol=1e-9)
        np.testing.assert_allclose(so3_right_jacobian_derivative(x, w) @ d,
                                   _fd(lambda y: so3_right_jacobian(y) @ w, x, d), atol=1e-9)
    np.testing.assert_allclose(so3_left_jacobian(x), so3_right_jacobian(x).T, atol=1e-15)


@pytest.mark.parametrize("scale", [0.0, 1e-7, 0.3, 1.2])
def test_se3_right_jacobian_against_finite_differences(scale):
    """exp(ξ + εδ) ≈ exp(ξ) exp(ε J_r δ) in SE(3), the poses composed as 4x4 matrices."""
    xi = scale * RNG.normal(size=6)
    T0inv = np.linalg.inv(expm(twist_matrix(xi)))

    def body(y):
        T = T0inv @ expm(twist_matrix(y))
        return se3_log(T[:3, :3], T[:3, 3])

    J = se3_right_jacobian(xi)
    for d in np.eye(6):
        np.testing.assert_allclose(J @ d, _fd(body, xi, d), atol=1e-9)


def _so3_coefficients_exact(th):
    """a, b, a'/θ, b'/θ from the closed forms in 120 digits (b'/θ cancels 10 log10(1/θ)
    of them), the limits at θ = 0."""
    with mp.workdps(120):
        t = mp.mpf(th)
        if t == 0:
            return [1 / 2, 1 / 6, -1 / 12, -1 / 60]
        a = (1 - mp.cos(t)) / t**2
        b = (t - mp.sin(t)) / t**3
        da = (t * mp.sin(t) - 2 * (1 - mp.cos(t))) / t**4
        db = (3 * mp.sin(t) - t * (2 + mp.cos(t))) / t**5
        return [float(c) for c in (a, b, da, db)]


@pytest.mark.parametrize("th", [0.0, 1e-10, 1e-4, 0.2, 0.7, 1.0 - 1e-12, 1.0, 1.0 + 1e-12,
                                1.5, 3.1])
def test_so3_series_agree_with_the_closed_forms_across_the_switch(th):
    """The series below θ = 1 and the closed forms above it are the same functions: both
    match the closed forms in 120-digit arithmetic, so there is no jump at the switch."""
    got = so3_coefficients(th)
    exact = _so3_coefficients_exact(th)
    # above the switch the closed forms are evaluated in doubles: ~1e-15 relative
    # cancellation remains in the derivatives; below it the series are at roundoff
    rtol = 1e-15 if th < 1.0 else 1e-13
    np.testing.assert_allclose(got, exact, rtol=rtol, atol=0)


@pytest.mark.parametrize("w", [0.0, 1e-12, 1e-9 * (1 - 1e-9), 1e-9 * (1 + 1e-9), 1e-3, 2.0])
def test_se2_series_agree_with_the_closed_forms(w):
    with mp.workdps(50):
        t = mp.mpf(w)
        exact = (1.0, 0.0) if w == 0 else (float(mp.sin(t) / t), float((1 - mp.cos(t)) / t))
    np.testing.assert_allclose(se2_coefficients(w), exact, rtol=1e-15, atol=1e-300)


@pytest.mark.parametrize("x", vectors((0.0, 1e-6, 0.99e-4, 1.01e-4, 0.7, 3.0)))
def test_quaternion_update_and_difference(x):
    """u ⊗ exp(x) of the compiled update is the Hamilton product with quat_exp (normalised),
    on both sides of its series switch; quat_difference inverts it; and the rate matrix G
    is the derivative of q ⊗ exp(εω) at ε = 0."""
    u = quat_normalize(RNG.normal(size=4))
    ref = quat_multiply(u, quat_exp(x))
    np.testing.assert_allclose(quat_times_exp(u, x), ref / np.linalg.norm(ref), atol=2e-16)
    np.testing.assert_allclose(quat_difference(u, quat_times_exp(u, x)), x, rtol=1e-9,
                               atol=1e-15)
    om = RNG.normal(size=3)
    fd = _fd(lambda e: quat_multiply(u, quat_exp(e * om)), 0.0, 1.0)
    np.testing.assert_allclose(quat_rate_matrix(u) @ om, fd, atol=1e-10)
