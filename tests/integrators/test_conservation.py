"""Conservation laws the methods must keep: exact energy for the discrete gradients and the
projection, bounded energy error for the symplectic methods, an O(dt⁴) drift for RK4."""

import numpy as np
import pytest

import kanedyn as kd


def energy_error(traj):
    E = traj.energy
    return np.abs(E - E[0]) / abs(E[0])


@pytest.fixture(scope="module")
def double_pendulum():
    # point masses, so E(0) is far from 0 and the motion is chaotic at this amplitude
    return kd.models.pendulum_chain(2, planar=True), np.array([1.2, -0.6]), np.array([0.0, 1.5])


@pytest.mark.parametrize("method,project", [("avf", None), ("itoh_abe", None),
                                            ("rk4", "energy")])
def test_exact_energy_double_pendulum_1e4_steps(double_pendulum, method, project):
    m, q0, v0 = double_pendulum
    tr = kd.simulate(m, q0, v0, 10.0, method=method, dt=1e-3, project=project)
    assert len(tr) == 10_001
    assert energy_error(tr).max() <= 1e-12
    # the motion itself is not trivial: the pendulum swings through a large angle
    assert np.ptp(tr.q[:, 0]) > 1.0


@pytest.mark.parametrize("method,project,steps", [
    ("avf", None, 10_000), ("rk4", "energy", 10_000),
    # (Itoh–Abe ran in Python at ≈ 2.5 ms/step, 400 steps here; compiled since issue 17)
    ("itoh_abe", None, 10_000),
])
def test_exact_energy_seven_link_3d_chain(method, project, steps):
    m = kd.models.pendulum_chain(7, planar=False)
    q0 = np.linspace(0.3, -0.4, 7)
    v0 = np.linspace(-1.0, 1.0, 7)
    tr = kd.simulate(m, q0, v0, steps * 1e-3, method=method, dt=1e-3, project=project)
    assert len(tr) == steps + 1
    assert energy_error(tr).max() <= 1e-12


def test_avf_is_not_trivially_exact():
    """Control: the same run with the plain midpoint rule has a truncation-level error,
    so the 1e-12 above is the method, not a quiet system."""
    m = kd.models.pendulum_chain(7, planar=False)
    tr = kd.simulate(m, np.linspace(0.3, -0.4, 7), np.linspace(-1.0, 1.0, 7), 0.4,
                     method="midpoint", dt=1e-3)
    assert energy_error(tr).max() > 1e-9


@pytest.mark.parametrize("method", ["verlet", "midpoint"])
def test_symplectic_energy_error_bounded_without_drift(method):
    """Single pendulum, 10⁵ steps of 0.04 s (≈ 1,700 periods of 2.35 s): the energy error
    oscillates at O(dt²) and does not grow — its late maximum equals its early one, and
    a linear fit through it has a negligible slope."""
    m = kd.models.pendulum_chain(1)
    tr = kd.simulate(m, [2.0], [0.0], 4000.0, method=method, dt=0.04, save_every=10)
    assert round((tr.t[-1] - tr.t[0]) / 0.04) == 100_000
    E = tr.energy
    e = (E - E[0]) / abs(E[0])
    n = e.size
    early, late = np.abs(e[: n // 10]).max(), np.abs(e[-n // 10:]).max()
    assert 1e-6 < late < 5e-2  # O(dt²) with a large amplitude, not roundoff
    assert late < 1.2 * early
    slope = np.polyfit(tr.t, e, 1)[0]
    assert abs(slope * tr.t[-1]) < 0.05 * np.abs(e).max()


def test_rk4_energy_drift_is_visible_monotone_and_of_the_expected_order():
    """RK4 is not symplectic: on the pendulum its energy drifts — down, roughly linearly
    in time. Its rate is set by the stability function on the imaginary axis,
    |R(iy)|² = 1 − y⁶/72 + O(y⁸) (y = hω): an energy loss of O(h⁶) per step, so
    O(t h⁵) over a fixed time — one order more than the O(h⁴) error of the solution
    itself (measured in test_convergence). Halving dt divides the drift by ≈ 2⁵."""
    m = kd.models.pendulum_chain(1)
    drift = []
    for dt in (0.04, 0.02):
        tr = kd.simulate(m, [2.0], [0.0], 80.0, method="rk4", dt=dt)
        e = tr.energy - tr.energy[0]
        n = e.size
        drift.append(e[-1])
        assert e[-1] < 0  # RK4 dissipates on an oscillator (|R(iy)| < 1)
        assert 1.6 < e[-1] / e[n // 2] < 2.4  # linear growth, not oscillation
        assert abs(e[-1]) > 1e3 * np.finfo(float).eps * abs(tr.energy[0])  # visible
    order = np.log2(drift[0] / drift[1])
    assert 4.7 < order < 5.3


def test_avf_on_a_quadratic_hamiltonian_is_the_cayley_map():
    """H = p²/2m + k x²/2 (a slider on a spring, no gravity): AVF with one node is exact
    for quadratic H and equals the midpoint rule, whose step is the Cayley transform
    z₁ = (1 − hA/2)⁻¹(1 + hA/2) z₀ of ż = A z — an independent closed form."""
    b = kd.ModelBuilder("slider", gravity=(0, 0, 0))
    b.add_body("cart", None, kd.model.joints.Prismatic("x", axis=(1, 0, 0)), None, 2.0,
               (0, 0, 0), np.eye(3) * 0.1)
    m = b.build()
    k, h = 3.0, 0.1
    tr = kd.simulate(m, [0.7], [0.2], 2.0, method="avf", dt=h, nodes=1,
                     forces=[kd.forces.JointSpring("x", k)])
    A = np.array([[0.0, 1.0], [-k / 2.0, 0.0]])  # (x, v)
    C = np.linalg.solve(np.eye(2) - 0.5 * h * A, np.eye(2) + 0.5 * h * A)
    z = np.array([0.7, 0.2])
    for _ in range(20):
        z = C @ z
    np.testing.assert_allclose([tr.q[-1, 0], tr.v[-1, 0]], z, atol=1e-14)
