"""Constrained dynamics: formulations, drift, Radau IIA against published references."""

import numpy as np
import pytest

from kanedyn import ConstraintError, KanedynWarning, SolverError
from kanedyn.constraints import (
    DescriptorSystem,
    consistent_initial_values,
    formulate,
    problems,
)
from kanedyn.constraints.projection import implicit_midpoint_step, integrate_fixed, projected
from kanedyn.integrators.radau import radau5


def run(prob, formulation, tol, t_final=None, **kw):
    dae = formulate(prob.system, formulation, **kw)
    y0 = dae.initial_state(prob.q0, prob.v0, prob.t0)
    r = radau5(dae.rhs, (prob.t0, t_final or prob.t_final), y0, dae.mass, dae.index,
               rtol=tol, atol=tol, jac=dae.jacobian)
    return dae, r


# ---------------------------------------------------------------- Andrews' squeezer
@pytest.mark.parametrize("formulation", ["index3", "ggl"])
def test_andrews_radau_reaches_published_reference(formulation):
    """Mazzia & Magherini's reference at t = 0.03; ≥ 6 digits at rtol = atol = 1e-8."""
    prob = problems.andrews()
    dae, r = run(prob, formulation, 1e-8)
    q = r.y[-1, dae.slices["q"]]
    assert r.t[-1] == pytest.approx(0.03)
    assert prob.mescd(q, rtol=1e-8, atol=1e-8) >= 6.0


@pytest.mark.parametrize("tol", [1e-6, 1e-9])
def test_andrews_index3_positions_track_the_tolerance(tol):
    """Unreduced index-3 form, no hints: the positions' mixed error at t = 0.03 stays
    within 10·tol of the published reference (measured 2.3·tol at 1e-6, 0.65·tol at
    1e-9; with RADAU5's tolerance map it was ~100·tol)."""
    prob = problems.andrews()
    dae, r = run(prob, "index3", tol)
    assert prob.mescd(r.y[-1, dae.slices["q"]], rtol=tol, atol=tol) >= -np.log10(tol) - 1.0


def test_andrews_index3_below_the_internal_floor_does_not_collapse():
    """rtol below INDEX3_RTOL_FLOOR is held at the floor instead of collapsing the step
    (it did at 1e-11 and 1e-12): same run as at the floor, still ≥ 8 digits."""
    from kanedyn.integrators.radau import INDEX3_RTOL_FLOOR

    prob = problems.andrews()
    with pytest.warns(KanedynWarning, match="below the floor"):
        dae, r = run(prob, "index3", 1e-12)
    _, r_floor = run(prob, "index3", INDEX3_RTOL_FLOOR)
    np.testing.assert_array_equal(r.y[-1], r_floor.y[-1])
    assert prob.mescd(r.y[-1, dae.slices["q"]], rtol=1e-12, atol=1e-12) >= 8.0


def test_andrews_consistent_start_from_perturbed_guess():
    """Holding the crank angle β (the driving coordinate) at its published value, the other
    six angles, v̇ and λ come back to the test set's consistent initial values."""
    prob = problems.andrews()
    rng = np.random.default_rng(1)
    guess = prob.q0 + np.r_[0.0, rng.uniform(-0.02, 0.02, 6)]
    cs = consistent_initial_values(prob.system, guess, np.full(7, 0.1), fixed=[0])
    assert np.max(np.abs(cs.q - problems.ANDREWS_Q0)) < 1e-12
    assert cs.residuals["Gv"] < 1e-12  # v projected onto the 1-dim motion of the mechanism
    cs0 = consistent_initial_values(prob.system, guess, None, fixed=[0])
    np.testing.assert_allclose(cs0.vdot, problems.ANDREWS_A0, rtol=0, atol=1e-7)
    np.testing.assert_allclose(cs0.lam, problems.ANDREWS_LAM0, rtol=0, atol=1e-9)
    assert cs0.residuals["g"] < 1e-14 and cs0.residuals["acc"] < 1e-6


# ---------------------------------------------------------------- pendulum drift
def biased_pendulum(eps):
    """The Cartesian pendulum whose acceleration constraint carries a constant bias ε:
    C v̇ = γ + ε, so the index-1 solution has g̈ = ε exactly."""
    base = problems.pendulum().system
    return DescriptorSystem(
        2, 2, base.mass_matrix, base.applied_forces, base.constraint, base.constraint_matrix,
        nc=1, gamma=lambda t, q, v: base.gamma(t, q, v) + eps, name="biased pendulum")


def test_index1_drift_grows_as_t_squared_and_baumgarte_bounds_it():
    from scipy.integrate import solve_ivp

    from kanedyn.constraints import index1_ode

    eps = 1e-6
    prob = problems.pendulum()
    sys_b = biased_pendulum(eps)
    t_eval = np.linspace(0.5, 4.0, 8)
    y0 = np.r_[prob.q0, prob.v0]
    sol = solve_ivp(index1_ode(sys_b), (0, 4.0), y0, "DOP853", t_eval=t_eval, rtol=1e-12,
                    atol=1e-14)
    g = sys_b.constraint(0, sol.y[:2].T)[:, 0]
    # g(0) = ġ(0) = 0 and g̈ = ε: g = ε t²/2 (to the integrator's accuracy)
    np.testing.assert_allclose(g, 0.5 * eps * t_eval ** 2, rtol=1e-4)
    beta = 5.0
    solb = solve_ivp(index1_ode(sys_b, alpha=beta, beta=beta), (0, 4.0), y0, "DOP853",
                     t_eval=np.linspace(0, 4, 200), rtol=1e-12, atol=1e-14)
    gb = sys_b.constraint(0, solb.y[:2].T)[:, 0]
    # critically damped g̈ + 2βġ + β²g = ε rises monotonically to ε/β², never beyond
    assert np.max(np.abs(gb)) <= 1.0001 * eps / beta ** 2
    assert abs(gb[-1] - eps / beta ** 2) < 0.01 * eps / beta ** 2


def test_ggl_and_projection_keep_constraint_at_tolerance():
    prob = problems.pendulum(t_final=5.0)
    dae, r = run(prob, "ggl", 1e-8)
    s = prob.system
    q, v = r.y[:, dae.slices["q"]], r.y[:, dae.slices["v"]]
    assert np.max(np.abs(s.constraint(0, q))) < 1e-9
    assert np.max(np.abs(s.velocity_constraint(0, q, v))) < 1e-8
    # index 1 without stabilisation drifts far beyond that at the same tolerance
    dae1, r1 = run(prob, "index1", 1e-8)
    g1 = np.abs(s.constraint(0, r1.y[:, :2])).max()
    assert g1 > 5 * np.abs(s.constraint(0, q)).max()  # measured: 8.7e-9 against 4.8e-10


def test_midpoint_with_projection_conserves_energy_and_constraint():
    """Implicit midpoint + projection onto g = 0 and Gv = 0: |g| at the projection's
    tolerance, the energy error bounded (O(h²), no drift) over 1000 steps (~7 periods)."""
    prob = problems.pendulum(t_final=10.0)
    s = prob.system
    step = projected(s, implicit_midpoint_step(s))
    _, Q, V = integrate_fixed(step, prob.q0, prob.v0, 10.0, 0.01)
    assert np.max(np.abs(s.constraint(0, Q))) < 1e-11
    assert np.max(np.abs(s.velocity_constraint(0, Q, V))) < 1e-11
    dE = np.abs(s.energy(Q, V) - s.energy(prob.q0, prob.v0))
    E_scale = 9.81 * (1 - np.cos(1.0))
    h = 0.01
    assert dE.max() < 5 * h ** 2 * E_scale  # measured 1.1 h² E_scale
    assert dE[-300:].max() <= 1.5 * dE[:300].max()  # no secular growth


def test_pendulum_all_formulations_agree_with_angle_ode():
    prob = problems.pendulum()
    for f in ("index3", "index2", "index1", "ggl"):
        dae, r = run(prob, f, 1e-8)
        q, v = r.y[-1, dae.slices["q"]], r.y[-1, dae.slices["v"]]
        assert prob.mescd(q, v, 1e-8, 1e-8) >= 5.5, f


def test_car_axis_ggl_against_test_set():
    prob = problems.car_axis()
    dae, r = run(prob, "ggl", 1e-8)
    q, v = r.y[-1, dae.slices["q"]], r.y[-1, dae.slices["v"]]
    assert prob.mescd(q, v, 1e-8, 1e-8) >= 5.5


# ---------------------------------------------------------------- bad input
def test_step_size_collapse_names_time_and_component():
    # y' = y², y(0) = 1 blows up at t = 1
    msg = r"collapsed to h = .* at t = (0\.99|1\.00)\d*; .*component 0 \(blowup, index 1\)"
    with pytest.raises(SolverError, match=msg):
        radau5(lambda t, y: y ** 2, (0.0, 2.0), [1.0], rtol=1e-6, atol=1e-6,
               names=["blowup"])


def test_unknown_formulation():
    with pytest.raises(ConstraintError, match="unknown formulation"):
        formulate(problems.pendulum().system, "index4")


def test_impossible_initial_state_names_the_level():
    prob = problems.pendulum()
    with pytest.raises(ConstraintError, match="position level"):
        consistent_initial_values(prob.system, np.zeros(2))  # G(0) = 0: no way back


def test_finite_difference_gamma_fallback_matches_exact():
    """Without an exact γ, DescriptorSystem differentiates c_v along the motion; on the
    Andrews and car-axis problems (car axis: rheonomic) it agrees with the exact γ."""
    rng = np.random.default_rng(2)
    for prob in (problems.andrews(), problems.car_axis()):
        s = prob.system
        fd = DescriptorSystem(s.nq, s.nv, s.mass_matrix, s.applied_forces, s.constraint,
                              lambda t, q, s=s: s.constraint_matrix(t, q)[..., : s.nc, :],
                              nc=s.nc, g_t=s._g_t)
        q = prob.q0 + 0.01 * rng.normal(size=s.nq)
        v = rng.normal(size=s.nv)
        exact = s.gamma(0.3, q, v)
        np.testing.assert_allclose(fd.gamma(0.3, q, v), exact,
                                   atol=1e-6 * max(1.0, np.abs(exact).max()))
