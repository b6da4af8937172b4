"""kd.simulate on a compiled Kane system whose generalized speeds are not the coordinate
rates (u freely chosen, the point of Kane's method): the integrators must step q̇ = W(q) u,
not q̇ = u. Checked against SciPy's solve_ivp on the system's own q̇ and u̇ — an integration
that shares nothing with kd.simulate's charts."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp
from sympy.physics.vector import Point, ReferenceFrame, dynamicsymbols

import kanedyn as kd
from kanedyn.kane import KaneSystem
from kanedyn.kane.loads import RigidBody, inertia


@pytest.fixture(scope="module")
def pendulum_in_two_theta_dot():
    """A rod on a pin (mass 1, length 1, gravity 9.81 along N.x) with the speed u = 2 q̇:
    ω = u/2, kinematic equation u − 2 q̇ = 0."""
    q, u = dynamicsymbols("q u")
    m, length, g = 1.0, 1.0, 9.81
    N = ReferenceFrame("N")
    A = N.orientnew("A", "Axis", [q, N.z])
    A.set_ang_vel(N, u / 2 * N.z)
    O = Point("O")
    O.set_vel(N, 0)
    G = O.locatenew("G", length / 2 * A.x)
    G.v2pt_theory(O, N, A)
    rod = RigidBody("rod", G, A, m, inertia(A, 0, m * length**2 / 12, m * length**2 / 12))
    system = KaneSystem(N, [q], [u], [u - 2 * q.diff()], [rod], [(G, m * g * N.x)],
                        potential_energy=-m * g * length / 2 * sp.cos(q), name="two_theta_dot")
    return system.derive().compile(backend="numpy")


def test_speeds_other_than_the_rates_are_integrated_through_the_kinematic_equations(
        pendulum_in_two_theta_dot):
    fast = pendulum_in_two_theta_dot
    assert not fast.chart_is_additive
    q0, u0 = np.array([0.5]), np.array([0.3])

    def rhs(_t, y):
        return np.concatenate([fast.q_dot(y[:1], y[1:]), fast.forward_dynamics(y[:1], y[1:])])

    ref = solve_ivp(rhs, (0.0, 1.0), np.r_[q0, u0], rtol=1e-12, atol=1e-12)
    tr = kd.simulate(fast, q0, u0, 1.0, method="rk4", dt=1e-3)
    # RK4 at dt = 1e-3 on a pendulum of ω ≈ 4 rad/s: global error ~ (ω dt)⁴ ≈ 3e-11
    np.testing.assert_allclose(tr.q[-1], ref.y[:1, -1], atol=1e-9)
    np.testing.assert_allclose(tr.v[-1], ref.y[1:, -1], atol=1e-9)
    em = kd.simulate(fast, q0, u0, 1.0, method="energy_momentum", dt=1e-3)
    # second order: (ω dt)² ≈ 2e-5 over a second, far below the 0.7 rad the wrong
    # chart (q̇ = u) was off by
    np.testing.assert_allclose(em.q[-1], ref.y[:1, -1], atol=1e-5)
    assert np.abs(em.energy - em.energy[0]).max() <= 1e-12 * abs(em.energy).max()
    # avf steps in the chart q0 + q̇(q0, ξ) = q0 + ξ/2 too (a ChartCompiledSystem: D from
    # the generated ∂q̇/∂q, here 0 as W = ½ is constant, so J = 1): the energy to Newton's
    # tolerance, second order ((ω dt)² ≈ 2e-5 over the 0.05 s)
    avf = kd.simulate(fast, q0, u0, 0.05, method="avf", dt=1e-3)
    np.testing.assert_allclose(avf.q[-1], solve_ivp(rhs, (0.0, 0.05), np.r_[q0, u0], rtol=1e-12,
                                                    atol=1e-12).y[:1, -1], atol=1e-5)
    assert np.abs(avf.energy - avf.energy[0]).max() <= 1e-12 * abs(avf.energy).max()


def test_generated_rk4_loop_equals_the_python_steps():
    """kd.simulate(method="rk4") on a numba-compiled Kane system runs the loop generated
    with its equations (``compiled_rk4``); it equals RK4's Python steps (compiled=False,
    the reference) to round-off — here with a quaternion group moved by its body rates and
    a wheel angle whose rate is its speed (the chart's two kinds of rows)."""
    from kanedyn.kane import classic

    s, _ = classic.spacecraft_reaction_wheel()
    fast = s.derive().compile(backend="numba", parameters={
        "I11": 3.0, "I22": 4.0, "I33": 5.0, "I12": 0.3, "J": 0.2, "K": 0.12})
    assert fast.compiled_rk4 is not None
    q0 = np.array([0.9, 0.1, -0.3, 0.2, 0.4])
    q0[:4] /= np.linalg.norm(q0[:4])
    u0 = np.array([0.3, -0.2, 0.5, 20.0])
    a = kd.simulate(fast, q0, u0, 0.2, method="rk4", dt=1e-3, save_every=7)
    b = kd.simulate(fast, q0, u0, 0.2, method="rk4", dt=1e-3, save_every=7, compiled=False)
    np.testing.assert_array_equal(a.t, b.t)
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-13)
    np.testing.assert_allclose(a.v, b.v, rtol=0, atol=1e-12)
    assert abs(a.energy[-1] - a.energy[0]) <= 1e-12 * abs(a.energy[0])
