"""Nonholonomic and configuration-constrained compiled Kane systems through ``kd.simulate``
(:mod:`kanedyn.integrators.eliminated`): the rolling disk (5 coordinates, 3 independent
speeds, 2 velocity constraints) and the Whipple bicycle of the benchmark (4 coordinates,
3 independent speeds, 3 velocity constraints, the front contact's configuration
constraint fixing the pitch).

References independent of the integration: the disk's steady turn from Newton–Euler
written here by hand (a closed form); the disk's contact constraints evaluated from the
KaneSystem's own vectors by SymPy; the bicycle's linearisation (``kane.linearize``, whose
benchmark matrices tests/kane/test_bicycle.py checks against the published ones) integrated
exactly by the matrix exponential."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from scipy.linalg import expm
from scipy.optimize import brentq

import kanedyn as kd
from kanedyn import kane
from kanedyn.kane import classic

DISK = {"m": 0.5, "g": 9.81, "R": 0.3}
RR = classic.BENCHMARK_BICYCLE["rR"]


@pytest.fixture(scope="module")
def disk():
    system, info = classic.rolling_disk()
    return system.derive().compile("numba", parameters=DISK), info


@pytest.fixture(scope="module")
def bicycle():
    system, info = classic.whipple_bicycle(parameters="benchmark")
    eom = system.derive()
    return eom.compile("numba"), eom, info


def _steady_spin(theta: float, yaw_rate: float) -> float:
    """The spin u3 (about the axle, relative to the leaning frame L) of a thin uniform
    disk in steady turning at lean θ and yaw rate Ω, by Newton–Euler about the mass
    centre G: in L components z = (0, sin θ, cos θ), ω = (0, w, Ω cos θ) with
    w = Ω sin θ + u3, H_G = (0, C w, A Ω cos θ), constant in the turning frame, so
    dH_G/dt = Ω z × H_G = Ω (A Ω sin θ cos θ − C w cos θ) L.x; G = contact + R L.z
    with the contact at rest gives v_G = R w L.x and a_G = Ω z × v_G; the ground force
    F = m a_G + m g z acts at −R L.z from G, whose moment's x component is R F_y.
    Equating: A Ω² sin θ cos θ − (C + m R²) Ω w cos θ = m g R sin θ."""
    m, g, R = DISK["m"], DISK["g"], DISK["R"]
    A, C = m * R**2 / 4, m * R**2 / 2
    c, s = np.cos(theta), np.sin(theta)
    w = (A * yaw_rate**2 * s * c - m * g * R * s) / ((C + m * R**2) * yaw_rate * c)
    return w - yaw_rate * s


@pytest.mark.parametrize("method,options", [("RK45", {"rtol": 1e-11, "atol": 1e-12}),
                                            ("rk4", {"dt": 4e-3}), ("avf", {"dt": 4e-3})])
def test_rolling_disk_steady_turn(disk, method, options):
    """Started on the steady turn of the hand derivation, the disk keeps its lean, yaw
    rate and spin, and its contact point closes its circle after one turn 2π/Ω."""
    cs, _ = disk
    theta, yaw = 0.3, 2.0
    spin = _steady_spin(theta, yaw)
    period = 2 * np.pi / yaw
    opts = dict(options)
    dt = opts.pop("dt", period / 40)
    traj = kd.simulate(cs, [0, theta, 0, 0, 0], [yaw, 0, spin], period, method=method,
                       dt=dt, progress=False, **opts)
    tol = 1e-8 if method == "RK45" else 1e-5
    np.testing.assert_allclose(traj.q[:, 1], theta, atol=tol)
    np.testing.assert_allclose(traj.v, np.tile([yaw, 0, spin], (len(traj), 1)), atol=tol)
    assert abs(traj.t[-1] - period) < 1e-12
    radius = np.abs(traj.q[:, 3:5] - traj.q[0, 3:5]).max() / 2   # the circle's size
    assert radius > 0.05
    np.testing.assert_allclose(traj.q[-1, 3:5], traj.q[0, 3:5], atol=tol * 10 * radius)
    np.testing.assert_allclose(traj.q[-1, 0], traj.q[0, 0] + yaw * period, atol=tol)


def test_rolling_disk_constraints_and_energy(disk):
    """The contact's velocity (the KaneSystem's own vectors, evaluated here by SymPy
    from the recorded states and dependent speeds) vanishes to round-off, and avf
    keeps the energy to its Newton tolerance (rolling without slip does no work)."""
    cs, info = disk
    q0, v0 = [0.0, 0.4, 0.0, 0.0, 0.0], [1.5, -0.8, 7.0]
    traj = kd.simulate(cs, q0, v0, 2.0, method="avf", dt=5e-3, progress=False)
    assert traj.relative_energy_error().max() < 1e-12
    q, u = info["q"], info["u"]
    kde = {qi.diff(): ui for qi, ui in zip(q, u, strict=True)}
    vals = {info[k]: DISK[k] for k in DISK}
    cons = sp.lambdify([*q, *u], [c.xreplace(kde).xreplace(vals) for c in info["constraints"]])
    ud = traj.stats["dependent_speeds"]
    assert ud.shape == (len(traj), 2) and traj.stats["residual_Gv"].shape == (len(traj), 2)
    res = np.array([cons(*qk, *uk, *dk) for qk, uk, dk in zip(traj.q, traj.v, ud, strict=True)])
    scale = DISK["R"] * np.abs(traj.v).max()
    assert np.abs(res).max() < 1e-13 * scale
    assert np.abs(traj.stats["residual_Gv"]).max() < 1e-13 * scale
    assert traj.stats["residual_g"].shape == (len(traj), 0)   # no configuration constraint
    # the contact point moves as q̇ = W(q) [u; u_dep]: its recorded path is the
    # integral of the dependent speeds (trapezoidal rule, second order in dt)
    path = traj.q[0, 3:5] + np.concatenate(
        [[[0, 0]], np.cumsum(0.5 * (ud[1:] + ud[:-1]) * np.diff(traj.t)[:, None], axis=0)])
    np.testing.assert_allclose(traj.q[:, 3:5], path, atol=1e-3)


def _upright(cs, v: float, lean_rate: float):
    return np.zeros(4), np.array([lean_rate, 0.0, -v / RR])


def _linear_lean(eom, v: float, lean_rate: float, t: np.ndarray) -> tuple[np.ndarray, float]:
    """Lean φ(t) of the linearised bicycle about upright rolling at v (state
    [q1, q2, q4, u2, u4, u5], kane.linearize) by the matrix exponential, and the largest
    real part of its eigenvalues (the yaw and the forward speed give zero ones)."""
    op = {**eom.parameters, **{sp.Symbol(n): 0 for n in ("q1", "q2", "q3", "q4", "u2", "u4")},
          sp.Symbol("u5"): -v / RR}
    A, _B = kane.linearize(eom, op)
    A = np.array(A, dtype=float)
    x0 = np.zeros(6)
    x0[3] = lean_rate
    lean = np.array([(expm(A * tk) @ x0)[1] for tk in t])
    ev = np.linalg.eigvals(A)
    return lean, float(ev[np.abs(ev) > 1e-8].real.max())


@pytest.mark.parametrize("v,stable", [(5.0, True), (2.0, False)])
def test_bicycle_upright_rolling_stable_at_5_unstable_at_2(bicycle, v, stable):
    """Above the weave speed (4.29 m/s, below the capsize speed 6.02 m/s) a small lean
    perturbation decays; at 2 m/s it grows — as the eigenvalues of the linearisation
    say, and along the linearisation's own solution."""
    cs, eom, _ = bicycle
    eps, tf = 1e-8, 4.0  # small enough to stay linear at 2 m/s (growth ~ 7e3 in 4 s)
    q0, v0 = _upright(cs, v, eps)
    traj = kd.simulate(cs, q0, v0, tf, method="RK45", dt=0.02, rtol=1e-10, atol=1e-16,
                       progress=False)
    lean_lin, growth = _linear_lean(eom, v, eps, traj.t)
    assert (growth < -0.1) if stable else (growth > 0.1), growth
    lean = traj.q[:, 1]
    first, last = np.abs(lean[traj.t <= 1.0]).max(), np.abs(lean[traj.t >= tf - 1.0]).max()
    assert (last < 0.5 * first) if stable else (last > 2 * first), (first, last)
    # small motion follows the linearisation (the difference is second order in eps)
    amp = np.abs(lean_lin).max()
    np.testing.assert_allclose(lean, lean_lin, atol=2e-3 * amp)
    assert np.abs(traj.stats["residual_g"]).max() <= 1e-10
    assert np.abs(traj.stats["residual_Gv"]).max() <= 1e-12 * (1 + v)


@pytest.mark.parametrize("method,dt", [("avf", 1e-2), ("rk4", 5e-3)])
def test_bicycle_constraints_held_and_energy(bicycle, method, dt):
    """A large lean and steer at 4 m/s: the front contact stays on the ground (g ≤ 1e-10,
    and ġ = ∂g/∂q q̇ by central differences vanishes), the velocity constraints hold to
    round-off, and avf conserves the energy (to 1e-12; the projection onto g = 0 is
    followed by the exact rescale of the speeds); rk4 to its accuracy."""
    cs, _, _ = bicycle
    q0 = cs.consistent_configuration([0.0, 0.15, 0.0, -0.2])
    assert abs(q0[2]) > 1e-4                      # the pitch had to change
    v0 = [0.3, 0.5, -4.0 / RR]
    traj = kd.simulate(cs, q0, v0, 2.0, method=method, dt=dt, progress=False)
    assert np.abs(traj.stats["residual_g"]).max() <= 1e-10
    scale = 1 + np.abs(traj.v).max() * RR
    assert np.abs(traj.stats["residual_Gv"]).max() <= 1e-12 * scale
    for qk, uk in zip(traj.q[::20], traj.v[::20], strict=True):
        qd = cs.q_dot(qk, uk)
        e = 1e-6
        gd = (cs.constraint_residuals(qk + e * qd, uk)[0]
              - cs.constraint_residuals(qk - e * qd, uk)[0]) / (2 * e)
        assert abs(gd[0]) < 1e-8 * scale
    err = traj.relative_energy_error().max()
    assert err < (1e-12 if method == "avf" else 1e-6), err
    assert np.abs(traj.q[:, 1]).max() > 0.1    # it did move


def test_bad_initial_states_and_methods(bicycle):
    cs, _, _ = bicycle
    q0, v0 = np.array([0.0, 0.1, 0.0, 0.2]), np.array([0.0, 0.0, -10.0])
    with pytest.raises(kd.StateError, match=r"violates configuration constraint 0 by "
                                            r"-?[0-9.e-]+ .*consistent_configuration"):
        kd.simulate(cs, q0, v0, 0.1, method="rk4", dt=1e-2, progress=False)
    q0 = cs.consistent_configuration(q0)
    ud = cs.dependent_speeds(q0, v0)
    traj = kd.simulate(cs, q0, np.r_[v0, ud], 0.02, method="rk4", dt=1e-2, progress=False)
    np.testing.assert_allclose(traj.v[0], v0)    # all speeds given, consistent: accepted
    bad = np.r_[v0, ud + [0.0, 0.01, 0.0]]
    with pytest.raises(kd.StateError, match="velocity constraints: dependent speed u3 .*"
                                            "off by -?0.01"):
        kd.simulate(cs, q0, bad, 0.1, method="rk4", dt=1e-2, progress=False)
    with pytest.raises(kd.SolverError, match="method 'verlet' cannot integrate it .* rk4, "
                                             "avf, RK45, RK23, DOP853"):
        kd.simulate(cs, q0, v0, 0.1, method="verlet", dt=1e-2, progress=False)
    with pytest.raises(kd.SolverError, match="project= does not apply"):
        kd.simulate(cs, q0, v0, 0.1, method="rk4", dt=1e-2, project="energy", progress=False)


def test_singular_configuration_jacobian_names_the_coordinate(bicycle):
    """Where the front contact's height is stationary in the pitch (∂g/∂q3 = 0), the
    dependent coordinate cannot be solved for: the error names q3."""
    cs, _, _ = bicycle
    def dg(pitch):
        return float(cs.configuration_jacobian([0.0, 0.0, pitch, 0.0])[0, 0])
    grid = np.linspace(-np.pi, np.pi, 73)
    vals = [dg(p) for p in grid]
    k = next(i for i in range(len(grid) - 1) if vals[i] * vals[i + 1] < 0)
    pitch = brentq(dg, grid[k], grid[k + 1], xtol=1e-15)
    with pytest.raises(kd.StateError, match="dependent coordinates q3 .* singular"):
        cs.consistent_configuration([0.0, 0.0, pitch, 0.0])
