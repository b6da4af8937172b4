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
from kanedyn import SolverError
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
    with pytest.raises(SolverError, match="speeds u other than q̇"):
        kd.simulate(fast, q0, u0, 0.1, method="avf", dt=1e-3)
