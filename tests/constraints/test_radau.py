"""Radau IIA itself: stiff accuracy, dense output, the transformation, plain ODE use."""

import numpy as np

import kanedyn as kd
from kanedyn.integrators import radau


def test_transformation_diagonalises_the_inverse_radau_matrix():
    Lam = radau.TI @ np.linalg.inv(radau.A) @ radau.T
    expect = np.array([[radau.GAMMA, 0, 0], [0, radau.ALPHA, radau.BETA],
                       [0, -radau.BETA, radau.ALPHA]])
    np.testing.assert_allclose(Lam, expect, atol=1e-12)
    # Hairer & Wanner II, IV.8: γ̂ = 3.6378..., α ± iβ = 2.6811 ± 3.0504i
    assert abs(radau.GAMMA - 3.637834252744496) < 1e-12
    assert abs(radau.ALPHA - 2.681082873627752) < 1e-12
    assert abs(radau.BETA - 3.050430199247411) < 1e-12


def test_prothero_robinson_stiff_accuracy_and_dense_output():
    """y' = λ (y − φ(t)) + φ'(t), λ = −1e6, exact y = φ = sin t. Stiffly accurate: the
    steps are as long as the smooth φ allows and the step values stay on φ. The dense
    output (the collocation cubic) is only as good as the step is short — the step
    control does not see it, as in RADAU5 — so it is checked with max_step = 0.1."""
    lam = -1e6

    def f(t, y):
        t = np.asarray(t, dtype=float).reshape(-1, 1) if np.ndim(t) else t
        return lam * (y - np.sin(t)) + np.cos(t)

    res = radau.radau5(f, (0.0, 10.0), [0.0], rtol=1e-8, atol=1e-8)
    assert res.stats["naccpt"] <= 30  # measured 10
    np.testing.assert_allclose(res.y[:, 0], np.sin(res.t), atol=5e-6)  # measured 7e-7
    t_eval = np.linspace(0, 10, 1001)
    res = radau.radau5(f, (0.0, 10.0), [0.0], rtol=1e-8, atol=1e-8, t_eval=t_eval,
                       max_step=0.1)
    np.testing.assert_allclose(res.y[:, 0], np.sin(t_eval), atol=1e-7)  # measured 9e-9


def test_radau5_on_an_unconstrained_model_through_simulate():
    model = kd.models.pendulum_chain(2)
    q0, v0 = np.array([0.5, -0.3]), np.array([0.0, 1.0])
    traj = kd.simulate(model, q0, v0, 1.0, method="radau5", rtol=1e-10, atol=1e-10)
    ref = kd.simulate(model, q0, v0, 1.0, method="rk4", dt=1e-3)
    np.testing.assert_allclose(traj.q[-1], ref.q[-1], atol=1e-8)
    E = traj.energy
    assert np.max(np.abs(E - E[0])) < 1e-7
