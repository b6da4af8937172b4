"""Measured orders of convergence, by step halving against a tight reference solution.

Reference: our adaptive Dormand–Prince at rtol = 1e-13, checked against SciPy's DOP853.
The error is the distance at t_final in (q, v), on the manifold for quaternions.
"""

import numpy as np
import pytest

import kanedyn as kd

T_FINAL = 1.0


def error(model, tr, ref):
    dq = kd.difference(model, ref.q[-1], tr.q[-1])
    return float(np.sqrt(np.sum(dq**2) + np.sum((tr.v[-1] - ref.v[-1]) ** 2)))


@pytest.fixture(scope="module")
def planar():
    m = kd.models.pendulum_chain(2, planar=True)
    q0, v0 = np.array([1.0, -0.5]), np.array([0.3, 1.0])
    ref = kd.simulate(m, q0, v0, T_FINAL, method="dopri5", rtol=1e-13, atol=1e-14)
    ref2 = kd.simulate(m, q0, v0, T_FINAL, method="DOP853", rtol=1e-13, atol=1e-14)
    assert error(m, ref2, ref) < 1e-11
    return m, q0, v0, ref


@pytest.fixture(scope="module")
def ball():
    """Two links on ball joints: quaternions in q, body angular velocities in v."""
    m = kd.models.pendulum_chain(2, planar=False, joint="spherical")
    rng = np.random.default_rng(5)
    q0 = kd.random_configuration(m, rng)
    v0 = rng.normal(size=m.nv)
    ref = kd.simulate(m, q0, v0, T_FINAL, method="dopri5", rtol=1e-13, atol=1e-14)
    return m, q0, v0, ref


def measured_order(case, method, dts, **kw):
    m, q0, v0, ref = case
    errs = [error(m, kd.simulate(m, q0, v0, T_FINAL, method=method, dt=dt, **kw), ref)
            for dt in dts]
    return np.log2(errs[-2] / errs[-1]), errs


@pytest.mark.parametrize("method,order,dts,kw", [
    ("rk4", 4, (0.1, 0.05, 0.025), {}),
    ("midpoint", 2, (0.05, 0.025, 0.0125), {}),
    ("gauss4", 4, (0.1, 0.05, 0.025), {}),
    ("verlet", 2, (0.05, 0.025, 0.0125), {}),
    ("avf", 2, (0.05, 0.025, 0.0125), {}),
    ("itoh_abe", 1, (0.02, 0.01, 0.005), {}),
    ("itoh_abe", 2, (0.05, 0.025, 0.0125), {"variant": "symmetric"}),
    ("energy_momentum", 2, (0.05, 0.025, 0.0125), {}),
    ("rk4", 4, (0.1, 0.05, 0.025), {"project": "energy"}),
    ("midpoint", 2, (0.05, 0.025, 0.0125), {"project": "energy"}),
])
def test_order_planar_chain(planar, method, order, dts, kw):
    p, errs = measured_order(planar, method, dts, **kw)
    assert abs(p - order) < 0.35, (p, errs)
    assert errs[-1] > 1e-11  # the study is above the reference's own error


@pytest.mark.parametrize("method,order,dts", [
    ("rk4", 4, (0.1, 0.05, 0.025)),
    ("midpoint", 2, (0.05, 0.025, 0.0125)),
    ("gauss4", 4, (0.1, 0.05, 0.025)),
    ("energy_momentum", 2, (0.05, 0.025, 0.0125)),
])
def test_order_ball_joint_chain(ball, method, order, dts):
    p, errs = measured_order(ball, method, dts)
    assert abs(p - order) < 0.35, (p, errs)


def test_dopri5_is_fifth_order_with_fixed_steps(planar):
    """With the controller switched off (every step accepted, h fixed), DOPRI5 is order 5."""
    m, q0, v0, ref = planar
    errs = []
    for h in (0.01, 0.005):
        tr = kd.simulate(m, q0, v0, T_FINAL, method="dopri5", rtol=1e10, atol=1e10,
                         first_step=h, max_step=h)
        errs.append(error(m, tr, ref))
    # pre-asymptotic at larger h (6.4 at h = 0.04 → 0.02, 5.5 at 0.02 → 0.01)
    assert abs(np.log2(errs[0] / errs[1]) - 5) < 0.5, errs


@pytest.mark.parametrize("method", ["dopri5", "RK45", "DOP853", "Radau", "BDF", "LSODA"])
def test_adaptive_methods_converge_with_tolerance(planar, method):
    m, q0, v0, ref = planar
    errs = [error(m, kd.simulate(m, q0, v0, T_FINAL, method=method, rtol=r, atol=r * 1e-2), ref)
            for r in (1e-5, 1e-8)]
    assert errs[1] < errs[0] / 30
    assert errs[1] < 1e-5


def test_dense_output_matches_the_solution(planar):
    """dopri5 sampled every 0.01 by dense output agrees with the reference at those times
    (4th-order interpolant: to the tolerance of the run)."""
    m, q0, v0, _ = planar
    tr = kd.simulate(m, q0, v0, 0.5, method="dopri5", dt=0.01, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tr.t, np.linspace(0, 0.5, 51), atol=1e-12)
    fine = kd.simulate(m, q0, v0, 0.5, method="gauss4", dt=0.001)
    np.testing.assert_allclose(tr.q, fine.q[::10], atol=1e-8)
