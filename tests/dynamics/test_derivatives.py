"""Analytic RNEA/ABA derivatives against central differences along the chart and closed forms.

Tolerance of the difference checks: a central difference with step ε has a
truncation error ≈ ε²|f'''|/6 (≈ 1e-12 relative here) and a roundoff error ≈
1e-16 |τ| / ε ≈ 1e-10 relative to |τ|; over the ~nv² entries, the largest error
seen is ≈ 1e-8 of max|∂τ|. 1e-6 of max|∂τ| leaves room for that and still catches
any wrong term (a missing term is O(1) of the entries it touches).
"""

from __future__ import annotations

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics import kinetic_energy_gradient_derivative
from kanedyn.sim.system import kinetic_energy_gradient_reference

ALL_JOINTS = ("revolute", "prismatic", "helical", "spherical", "planar", "free")
EPS = 1e-6
RTOL = 1e-6


def _state(model, seed):
    rng = np.random.default_rng(seed)
    q = kd.integrate_configuration(model, kd.neutral(model), rng.normal(size=model.nv), 1.0)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def _fd_q(model, fn, q):
    """Central differences of fn along q ⊕ ε e_k (the chart of integrate_configuration)."""
    E = np.eye(model.nv)
    return np.column_stack([
        (fn(kd.integrate_configuration(model, q, E[k], EPS))
         - fn(kd.integrate_configuration(model, q, E[k], -EPS))) / (2 * EPS)
        for k in range(model.nv)])


def _fd_v(model, fn, v):
    E = np.eye(model.nv)
    return np.column_stack([(fn(v + EPS * E[k]) - fn(v - EPS * E[k])) / (2 * EPS)
                            for k in range(model.nv)])


def _close(A, B):
    scale = max(float(np.abs(B).max()), 1.0)
    assert np.abs(A - B).max() <= RTOL * scale, np.abs(A - B).max() / scale


MODELS = [
    pytest.param(lambda s=s: kd.models.random_tree(9, seed=s, joint_types=ALL_JOINTS),
                 id=f"tree{s}") for s in (0, 1, 2)
] + [
    pytest.param(lambda: kd.models.random_tree(7, seed=5, floating_base=True,
                                               joint_types=ALL_JOINTS), id="floating_tree"),
    pytest.param(lambda: kd.load_robot("humanoid", floating_base=True), id="humanoid"),
]


@pytest.mark.parametrize("make", MODELS)
def test_rnea_derivatives_match_central_differences(make):
    model = make()
    q, v, a = _state(model, 7)
    dq, dv = kd.rnea_derivatives(model, q, v, a)
    assert dq.shape == dv.shape == (model.nv, model.nv)
    _close(dq, _fd_q(model, lambda qq: kd.rnea(model, qq, v, a), q))
    _close(dv, _fd_v(model, lambda vv: kd.rnea(model, q, vv, a), v))


@pytest.mark.parametrize("make", MODELS)
def test_aba_derivatives_match_central_differences(make):
    model = make()
    q, v, tau = _state(model, 11)
    Aq, Av = kd.aba_derivatives(model, q, v, tau)
    _close(Aq, _fd_q(model, lambda qq: kd.aba(model, qq, v, tau), q))
    _close(Av, _fd_v(model, lambda vv: kd.aba(model, q, vv, tau), v))


@pytest.mark.parametrize("make", MODELS[:1] + MODELS[3:4])
def test_kinetic_energy_gradient_derivative(make):
    model = make()
    q, v, _ = _state(model, 3)
    D = kinetic_energy_gradient_derivative(model, q, v)
    _close(D, _fd_q(model, lambda qq: kinetic_energy_gradient_reference(model, qq, v), q))


def test_ball_pendulum_velocity_derivative_is_euler_gyroscopic_term():
    """One body on a ball joint at its origin: τ = I_O ω̇ + ω × I_O ω + gravity, so
    ∂τ/∂ω = ω× I_O − (I_O ω)× (Euler's equations)."""
    model = kd.models.pendulum_chain(1, planar=False, joint="spherical")
    I_O = model.bodies[0].inertia[:3, :3]
    q, w, a = _state(model, 2)
    _, dv = kd.rnea_derivatives(model, q, w, a)
    from kanedyn.spatial import skew

    np.testing.assert_allclose(dv, skew(w) @ I_O - skew(I_O @ w), rtol=0, atol=1e-13)


def _double(m1=1.3, m2=0.7, l1=0.9, l2=1.4):
    return kd.models.pendulum_chain(2, length=[l1, l2], mass=[m1, m2], point_mass=True), \
        (m1, m2, l1, l2)


def test_double_pendulum_gravity_torque_derivative_by_hand():
    """V = −(m1+m2) g l1 cos θ1 − m2 g l2 cos(θ1+θ2) (relative angles, hanging at 0), so
    g = ∂V/∂θ and ∂g/∂θ is the Hessian of V, written out by hand."""
    model, (m1, m2, l1, l2) = _double()
    g = 9.81
    th = np.array([0.7, -1.1])
    dq, dv = kd.rnea_derivatives(model, th, np.zeros(2), np.zeros(2))
    c1, c12 = np.cos(th[0]), np.cos(th.sum())
    H = np.array([[(m1 + m2) * g * l1 * c1 + m2 * g * l2 * c12, m2 * g * l2 * c12],
                  [m2 * g * l2 * c12, m2 * g * l2 * c12]])
    np.testing.assert_allclose(dq, H, rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(dv, np.zeros((2, 2)))


def test_double_pendulum_velocity_derivative_by_hand():
    """Coriolis/centrifugal forces of the point-mass double pendulum,
    h₁ = −m2 l1 l2 sin θ2 (2 θ̇1 θ̇2 + θ̇2²), h₂ = m2 l1 l2 sin θ2 θ̇1², differentiated."""
    model, (m1, m2, l1, l2) = _double()
    th, w = np.array([0.4, 0.9]), np.array([1.7, -0.6])
    _, dv = kd.rnea_derivatives(model, th, w, np.zeros(2))
    k = m2 * l1 * l2 * np.sin(th[1])
    ref = np.array([[-2 * k * w[1], -2 * k * (w[0] + w[1])], [2 * k * w[0], 0.0]])
    np.testing.assert_allclose(dv, ref, rtol=1e-12, atol=1e-13)


def test_aba_derivative_is_minus_inverse_mass_times_rnea_derivative():
    model = kd.models.random_tree(6, seed=4, joint_types=ALL_JOINTS)
    q, v, tau = _state(model, 1)
    a = kd.aba(model, q, v, tau)
    dq, dv = kd.rnea_derivatives(model, q, v, a)
    Aq, Av = kd.aba_derivatives(model, q, v, tau)
    M = kd.crba(model, q)
    np.testing.assert_allclose(M @ Aq, -dq, atol=1e-10)
    np.testing.assert_allclose(M @ Av, -dv, atol=1e-10)


def test_batch_equals_loop():
    model = kd.models.random_tree(4, seed=2, joint_types=ALL_JOINTS)
    states = [_state(model, s) for s in range(3)]
    Q, V, A = (np.array(x) for x in zip(*states, strict=True))
    dq, dv = kd.rnea_derivatives(model, Q, V, A)
    for k, (q, v, a) in enumerate(states):
        d1, d2 = kd.rnea_derivatives(model, q, v, a)
        np.testing.assert_array_equal(dq[k], d1)
        np.testing.assert_array_equal(dv[k], d2)


def test_bad_input_names_the_argument():
    model = kd.models.pendulum_chain(2)
    with pytest.raises(kd.StateError, match="v must have shape"):
        kd.rnea_derivatives(model, np.zeros(2), np.zeros(3), np.zeros(2))
    with pytest.raises(kd.StateError, match="tau"):
        kd.aba_derivatives(model, np.zeros(2), np.zeros(2), [np.nan, 0.0])


@pytest.mark.parametrize("make", MODELS)
def test_compiled_pass_equals_numpy_reference(make):
    """The public functions run the numba pass; the numpy recursion is the definition."""
    from kanedyn.dynamics.derivatives import (
        kinetic_energy_gradient_derivative_reference,
        rnea_derivatives_reference,
    )

    model = make()
    q, v, a = _state(model, 13)
    for gravity in (True, False):
        fast = kd.rnea_derivatives(model, q, v, a, gravity=gravity)
        ref = rnea_derivatives_reference(model, q, v, a, gravity=gravity)
        for A, B in zip(fast, ref, strict=True):
            np.testing.assert_allclose(A, B, rtol=0, atol=1e-12 * max(1.0, np.abs(B).max()))
    np.testing.assert_allclose(kinetic_energy_gradient_derivative(model, q, v),
                               kinetic_energy_gradient_derivative_reference(model, q, v),
                               rtol=0, atol=1e-12 * max(1.0, np.abs(v).max() ** 2))


@pytest.mark.parametrize("make", MODELS)
def test_static_pass_equals_the_numpy_reference_at_zero_velocity(make):
    """rnea_tangent_static (the Newton matrices' ∂(M a + g)/∂q, velocity terms dropped) is
    ∂τ/∂q of the numpy recursion at v = 0, with gravity and without."""
    from kanedyn.dynamics.derivatives import rnea_derivatives_reference
    from kanedyn.dynamics.derivatives_kernel import rnea_tangent_static
    from kanedyn.dynamics.flat import flatten

    model = make()
    q, _, a = _state(model, 17)
    out = np.empty((model.nv, model.nv))
    for gravity in (True, False):
        assert rnea_tangent_static(flatten(model).data, gravity, q, a, out) == 0
        ref = rnea_derivatives_reference(model, q, np.zeros(model.nv), a, gravity=gravity)[0]
        assert np.abs(ref).max() > 1e-3  # a configuration dependence to check
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12 * max(1.0, np.abs(ref).max()))
