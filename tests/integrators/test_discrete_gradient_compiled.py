"""The compiled discrete-gradient loop (integrators/discrete_gradient_compiled.py) takes the
steps of its Python references: avf, itoh_abe (forward and symmetric), energy_momentum's
Gonzalez variant; it keeps E, the symmetric Itoh–Abe gradient is a symmetric discrete
gradient, and failures are reported by the Python method."""

import warnings

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.integrators.base import Problem
from kanedyn.integrators.chart import canonical_coordinates
from kanedyn.integrators.discrete_gradient import ItohAbe
from kanedyn.model.joints import Prismatic, Revolute
from kanedyn.sim.system import ModelSystem

# the compiled loop must really run: its fallback warns, and a warning fails these tests
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

METHODS = [("avf", {}), ("itoh_abe", {}), ("itoh_abe", {"variant": "symmetric"}),
           ("energy_momentum", {})]


def slider_chain(armature: float = 0.0):
    """A planar chain in the x–z plane: hinge (y), a telescoping prismatic joint along the
    link, hinge (y); ``armature``: the hinges' rotor inertia."""
    b = kd.ModelBuilder("slider_chain")
    b.add_body("l1", None, Revolute("j1", axis=(0, 1, 0), armature=armature), None, 1.0,
               (0, 0, -0.5), np.diag([0.09, 0.09, 0.01]))
    b.add_body("sleeve", "l1", Prismatic("d", axis=(0, 0, 1)), (np.eye(3), (0, 0, -1.0)),
               0.6, (0, 0, -0.2), np.diag([0.02, 0.02, 0.005]))
    b.add_body("l2", "sleeve", Revolute("j2", axis=(0, 1, 0), armature=armature),
               (np.eye(3), (0, 0, -0.4)), 0.8, (0, 0, -0.4), np.diag([0.05, 0.05, 0.01]))
    return b.build()


def chain7():
    m = kd.models.pendulum_chain(7, planar=False, radius=0.05)
    return m, 0.5 * np.cos(np.arange(7)), np.linspace(-1.0, 1.0, 7)


def slider():
    return slider_chain(), np.array([0.7, 0.1, -0.5]), np.array([0.5, 0.8, -1.2])


def compiled_ran(tr) -> bool:
    return "newton_matrices" in tr.stats


@pytest.mark.parametrize("case", [chain7, slider])
@pytest.mark.parametrize("method,kw", METHODS)
def test_compiled_equals_python_step_for_step(case, method, kw):
    """250 steps, every state compared. avf and Gonzalez solve smooth equations to 1e-15 of
    the increment: the two agree to round-off growth. Itoh–Abe's quotients
    [H(..) − H(..)]/Δq_i carry the noise eps|H|/|Δq_i| ≈ 1e-13 (|Δq| ≈ 1e-3): the two
    solvers stop at different points within it, and differ by about that. Either
    tolerance is five orders below the methods' own error per step (≈ h³ ≈ 1e-9 in q,
    h² in v for the first-order Itoh–Abe), so another discrete gradient would fail."""
    m, q0, v0 = case()
    a = kd.simulate(m, q0, v0, 0.25, method=method, dt=1e-3, **kw)
    b = kd.simulate(m, q0, v0, 0.25, method=method, dt=1e-3, compiled=False, **kw)
    assert compiled_ran(a) and not compiled_ran(b)
    assert len(a) == 251
    noisy = method == "itoh_abe"
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-10 if noisy else 1e-13)
    np.testing.assert_allclose(a.v, b.v, rtol=0, atol=1e-9 if noisy else 1e-12)
    assert np.ptp(a.q, axis=0).min() > 1e-3  # every joint moves


@pytest.mark.parametrize("method,kw", METHODS)
def test_compiled_energy_over_1000_steps(method, kw):
    m, q0, v0 = chain7()
    tr = kd.simulate(m, q0, v0, 1.0, method=method, dt=1e-3, **kw)
    assert compiled_ran(tr)
    assert tr.relative_energy_error().max() <= 1e-12
    assert np.ptp(tr.v) > 0.1  # it moves


@pytest.mark.parametrize("variant,order,dts", [("forward", 1, (0.02, 0.01, 0.005)),
                                               ("symmetric", 2, (0.05, 0.025, 0.0125))])
@pytest.mark.parametrize("compiled", [True, False])
def test_itoh_abe_orders(variant, order, dts, compiled):
    """Step halving against dopri5 at rtol 1e-13 (slider chain, 0.5 s): order 1 for the
    coordinate-increment gradient, 2 for its symmetrised form (McLachlan, Quispel &
    Robidoux 1999), compiled and Python alike."""
    m, q0, v0 = slider()
    ref = kd.simulate(m, q0, v0, 0.5, method="dopri5", rtol=1e-13, atol=1e-14)
    errs = []
    for dt in dts:
        tr = kd.simulate(m, q0, v0, 0.5, method="itoh_abe", dt=dt, variant=variant,
                         compiled=compiled)
        errs.append(np.linalg.norm(np.concatenate([tr.q[-1] - ref.q[-1],
                                                   tr.v[-1] - ref.v[-1]])))
    p = np.log2(errs[-2] / errs[-1])
    assert abs(p - order) < 0.3, (p, errs)


def test_symmetric_itoh_abe_is_a_symmetric_discrete_gradient():
    """For z, z' (slider chain, increments of a dt = 1e-2 step): ∇̄H(z, z')·(z' − z) =
    H(z') − H(z) (a discrete gradient), ∇̄H(z, z') = ∇̄H(z', z) (symmetric: the reverse
    path from z is the forward path from z'), and the forward gradient alone is not
    symmetric (its asymmetry is O(|Δz|), ≈ 1e-2 here)."""
    m, q, v = slider()
    P = Problem(ModelSystem(m), q, v, 1.0, 1e-2)
    sym = ItohAbe(P, variant="symmetric")
    fwd = ItohAbe(P)
    M = kd.crba(m, q)
    p = M @ v
    dq, dp = np.array([4e-3, 6e-3, -9e-3]), np.array([0.02, -0.03, 0.05])
    C, C1 = canonical_coordinates(P, None, q), canonical_coordinates(P, None, q + dq)
    H0, H1 = C.energy(np.zeros(3), p), C1.energy(np.zeros(3), p + dp)
    g = np.concatenate(sym.discrete_gradient(C, p, dq, dp))
    g_back = np.concatenate(sym.discrete_gradient(C1, p + dp, -dq, -dp))
    assert abs(g @ np.concatenate([dq, dp]) - (H1 - H0)) <= 1e-13 * abs(H0)
    np.testing.assert_allclose(g, g_back, rtol=0, atol=1e-9 * np.abs(g).max())
    f = np.concatenate(fwd.discrete_gradient(C, p, dq, dp))
    f_back = np.concatenate(fwd.discrete_gradient(C1, p + dp, -dq, -dp))
    assert np.abs(f - f_back).max() > 1e-4 * np.abs(f).max()
    np.testing.assert_allclose(0.5 * (f + f_back), g, rtol=0, atol=1e-9 * np.abs(g).max())


def test_compiled_gonzalez_keeps_the_cyclic_momentum():
    """A yaw hinge about the gravity axis at the root: p_yaw = (M v)_0 is a first integral,
    which Gonzalez's gradient with the cyclic direction left out keeps exactly."""
    b = kd.ModelBuilder("turntable")
    b.add_body("base", None, Revolute("yaw", axis=(0, 0, 1)), None, 1.0, (0.2, 0, 0),
               np.diag([0.05, 0.06, 0.04]))
    b.add_body("l1", "base", Revolute("j1", axis=(0, 1, 0)), (np.eye(3), (0.3, 0, 0)), 1.0,
               (0, 0, -0.5), np.diag([0.08, 0.08, 0.01]))
    m = b.build()
    q0, v0 = np.array([0.2, 1.0]), np.array([1.5, 2.0])
    tr = kd.simulate(m, q0, v0, 2.0, method="energy_momentum", dt=1e-3)
    assert compiled_ran(tr)
    pyaw = np.array([(kd.crba(m, q) @ v)[0] for q, v in zip(tr.q, tr.v, strict=True)])
    assert np.abs(pyaw - pyaw[0]).max() <= 1e-12 * abs(pyaw[0])
    assert tr.relative_energy_error().max() <= 1e-12
    assert np.ptp(tr.v[:, 0]) > 0.1  # the yaw rate itself changes as the arm swings


@pytest.mark.parametrize("method,kw", METHODS)
def test_newton_failure_is_reported_with_step_time_residual(method, kw):
    """maxiter=1 cannot converge: the compiled loop gives up, the Python method reports."""
    m = kd.models.pendulum_chain(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(kd.SolverError,
                           match=rf"{method}: Newton failed at step 0 \(t = 0.*residual"):
            kd.simulate(m, [1.0, 0.0], [0.0, 1.0], 0.1, method=method, dt=1e-2, maxiter=1,
                        **kw)


@pytest.mark.parametrize("method,kw", METHODS)
def test_blow_up_stops_with_time_and_state(method, kw):
    m = kd.models.pendulum_chain(2)
    with pytest.raises(kd.DivergenceError, match=rf"{method}: .*t = .*q = .*v = "):
        kd.simulate(m, [1.0, 0.0], [0.0, 1.0], 5.0, method=method, dt=1e-2, blowup=1e-3,
                    **kw)


@pytest.mark.parametrize("method,kw", METHODS)
def test_compiled_uneven_last_step_and_save_every(method, kw):
    """t_final = 0.1005 (a last step of 5e-4, where the loop drops its extrapolation
    history and rebuilds its matrix) and every third state kept: the Python samples."""
    m, q0, v0 = slider()
    a = kd.simulate(m, q0, v0, 0.1005, method=method, dt=1e-3, save_every=3, **kw)
    b = kd.simulate(m, q0, v0, 0.1005, method=method, dt=1e-3, save_every=3,
                    compiled=False, **kw)
    assert compiled_ran(a)
    np.testing.assert_array_equal(a.t, b.t)
    assert a.t[-1] == pytest.approx(0.1005, abs=1e-15) and len(a) == 35
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-11)
    np.testing.assert_allclose(a.v, b.v, rtol=0, atol=1e-10)


@pytest.mark.parametrize("method,kw", METHODS)
def test_compiled_with_force_rows_equals_python_step_for_step(method, kw, chain_forces):
    """With force elements (the chain_forces fixture) the compiled loop takes every one of
    them by its row and equals the Python reference at every step (tolerances as without
    forces), W_nc included; the budget E − E₀ − W_nc closes to round-off."""
    m, q0, v0, forces = chain_forces
    a = kd.simulate(m, q0, v0, 0.3, method=method, dt=2e-3, forces=forces, **kw)
    b = kd.simulate(m, q0, v0, 0.3, method=method, dt=2e-3, forces=forces, compiled=False,
                    **kw)
    assert compiled_ran(a) and not compiled_ran(b)
    noisy = method == "itoh_abe"
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-10 if noisy else 1e-13)
    np.testing.assert_allclose(a.v, b.v, rtol=0, atol=1e-9 if noisy else 1e-12)
    np.testing.assert_allclose(a.work_nc, b.work_nc, rtol=0, atol=1e-10 if noisy else 1e-13)
    np.testing.assert_allclose(a.energy, b.energy, rtol=1e-10 if noisy else 1e-13)
    scale = np.abs(a.energy).max()
    assert abs(a.work_nc[-1]) > 1e-3 * scale  # the forces did work
    assert np.abs(a.budget).max() <= 1e-11 * scale


def test_itoh_abe_through_a_friction_band_closes_the_budget():
    """``make demo``'s arm (smoothed Stribeck friction on its seven joints, tanh band ε =
    1e-2) from rest, 0.2 s at dt = 2e-3: joints pass through the band. Itoh–Abe's force
    acts at its own ∇̄_pH, which differs from the midpoint velocity by O(h v̇) ≫ ε, and
    Newton stalled there under matrices with the friction slope taken at the wrong
    velocity (compiled) or without it (the Python steps' kinematic matrix); such stalls
    were taken as roundoff up to 1e-6 of the step, and the budget E − E₀ − W_nc lost
    2.9e-9 (compiled) and 9.8e-10 (Python) of max|E|. Now a stall counts only below
    ITOH_ABE_FLOOR (1e-10) or once the matrix is refreshed: measured 1.4e-13 and 2.7e-14;
    the identity ΔH = ∇̄H·Δz of the discrete gradient leaves only Newton's stop (≤ 1e-10
    of the step, times |∇H| ≈ 10) a step."""
    from kanedyn.cli import demo_arm

    m, forces = demo_arm()
    q0, v0 = np.linspace(0.9, 0.3, 7), np.zeros(7)
    a = kd.simulate(m, q0, v0, 0.2, method="itoh_abe", dt=2e-3, forces=forces)
    b = kd.simulate(m, q0, v0, 0.2, method="itoh_abe", dt=2e-3, forces=forces,
                    compiled=False)
    assert compiled_ran(a) and not compiled_ran(b)
    scale = np.abs(a.energy).max()
    assert abs(a.work_nc[-1]) > 1e-2 * scale  # friction did work
    for run in (a, b):
        assert np.abs(run.budget).max() <= 1e-11 * scale
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-9)



def _kernel_case(case: str):
    """The models the kernel tests below take: the 7-link chain, a slider chain with
    armature, a branched tree of hinge, prismatic and helical joints."""
    if case == "chain7":
        return chain7()[0]
    if case == "slider_with_armature":
        return slider_chain(armature=0.07)
    return kd.models.random_tree(6, seed=3, joint_types=("revolute", "prismatic", "helical"))


@pytest.mark.parametrize("case", ["chain7", "slider_with_armature", "tree"])
def test_aba_forms_equal_the_crba_cholesky_reference(case):
    """hamiltonian_aba / gradient_aba (M⁻¹p by one ABA pass, V from its poses), which the
    residuals use, equal the readable reference hamiltonian / gradient (CRBA, Cholesky,
    kinematics pass) at random states, springs' rows included."""
    from kanedyn.dynamics.energy_kernel import energy_workspace
    from kanedyn.dynamics.flat import flatten
    from kanedyn.forces.kernel import empty_rows
    from kanedyn.integrators import discrete_gradient_compiled as dgc

    model = _kernel_case(case)
    data = flatten(model).data
    n, nb_ = model.nv, data.shape[0] - 1
    P = empty_rows(n)
    rng = np.random.default_rng(11)
    mw, ew, aw = dgc.mass_workspace(n, nb_), energy_workspace(nb_), dgc.aba_velocity_workspace(
        data, n)
    for _ in range(5):
        q, p = rng.uniform(-1.5, 1.5, n), rng.normal(size=n)
        v_ref, v = np.empty(n), np.empty(n)
        H_ref = dgc.hamiltonian(data, P, False, q, p, mw, v_ref, ew)
        H = dgc.hamiltonian_aba(data, P, False, q, p, aw, v)
        assert H == pytest.approx(H_ref, rel=1e-13, abs=1e-13)
        np.testing.assert_allclose(v, v_ref, rtol=1e-12, atol=1e-12)
        dT, dV, out = np.empty(n), np.empty(n), np.empty(8)  # out: [T, V, L, P]
        g_ref, g = np.empty(n), np.empty(n)
        assert dgc.gradient(data, P, False, q, p, mw, v_ref, ew, dT, dV, out, g_ref)
        assert dgc.gradient_aba(data, P, False, q, p, aw, v, ew, dT, dV, out, g)
        np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", ["chain7", "slider_with_armature", "tree"])
def test_path_hamiltonian_equals_hamiltonian_aba_along_coordinate_paths(case):
    """Itoh–Abe's H along its coordinate paths by the backward pass alone
    (path_hamiltonian, then path_hamiltonian_moved: only the moved joint's body and its
    ancestors made anew, its children's rows carried rigidly) equals hamiltonian_aba (a
    whole ABA pass and the poses) at every point to round-off: the forward and reverse
    orders of the two paths, a central difference's back-and-forth, random orders; a
    branched tree with hinge, prismatic and helical joints, rotors, springs' rows. The
    crba form ½pᵀM⁻¹p + V checks the innovations sum Σ u²/D once more."""
    from kanedyn.dynamics.flat import flatten
    from kanedyn.forces.kernel import P_K, P_REST, empty_rows
    from kanedyn.integrators import discrete_gradient_compiled as dgc

    model = _kernel_case(case)
    data = flatten(model).data
    n = model.nv
    P = empty_rows(n)
    P[:, P_K], P[:, P_REST] = np.linspace(0.0, 3.0, n), 0.2
    rng = np.random.default_rng(5)
    aw, cw, v = dgc.aba_velocity_workspace(data, n), dgc.path_workspace(data), np.empty(n)
    assert cw[-1][0] == 1  # joints of one speed: the path kernel, not the fallback
    for trial in range(3):
        q, p = rng.uniform(-1.5, 1.5, n), rng.normal(size=n)
        H = dgc.path_hamiltonian(data, P, True, q, p, cw)
        M = kd.crba(model, q)
        springs = 0.5 * P[:, P_K] @ (q - 0.2) ** 2
        assert H == pytest.approx(0.5 * p @ np.linalg.solve(M, p) + kd.potential_energy(
            model, q) + springs, rel=1e-13, abs=1e-13)
        order = [list(range(n)), list(range(n))[::-1], list(rng.permutation(n))][trial]
        x = q.copy()
        for k in order:
            for step in (0.3, -0.6, 0.3 + rng.normal()):  # a central difference, then on
                x[k] += step
                Hm = dgc.path_hamiltonian_moved(data, P, True, x, p, k, cw)
                assert Hm == pytest.approx(dgc.hamiltonian_aba(data, P, True, x, p, aw, v),
                                           rel=1e-13, abs=1e-13)


def test_a_cold_loop_takes_the_python_steps(cold_loop_check):
    """kanedyn.dynamics.first_calls: on a cold cache avf's run takes its Python steps
    while a compiler process compiles the loop (tests/conftest.py, cold_loop_check)."""
    from kanedyn.integrators import discrete_gradient_compiled as dgc

    cold_loop_check("avf", *chain7(), dgc._dg_loop, "first_run")


def test_inverse_from_the_cholesky_factor_is_lapacks():
    """``inverse`` (M⁻¹ = L⁻ᵀL⁻¹ in place) against LAPACK's inverse of M, on SPD matrices
    of every size up to 25 and condition up to ~1e6: relative to ‖M⁻¹‖, the round-off of
    either (a few ε·cond)."""
    from kanedyn.integrators.base import cholesky
    from kanedyn.integrators.discrete_gradient_compiled import inverse

    rng = np.random.default_rng(5)
    for n in range(1, 26):
        Qm, _ = np.linalg.qr(rng.normal(size=(n, n)))
        cond = 10.0 ** rng.uniform(0, 6)
        M = (Qm * np.geomspace(1.0, cond, n)) @ Qm.T
        M = 0.5 * (M + M.T)
        L = np.zeros((n, n))
        assert cholesky(M, n, L)
        Minv = np.full((n, n), np.nan)  # (every entry written)
        inverse(L, Minv)
        ref = np.linalg.inv(M)
        assert np.array_equal(Minv, Minv.T)
        err = np.abs(Minv - ref).max() / np.abs(ref).max()
        assert err < 1e3 * np.finfo(float).eps * cond, (n, cond, err)


def test_forward_itoh_abe_iterates_on_the_configuration_alone():
    """Without force elements the forward Itoh–Abe's momentum equation is solved in each
    residual (Δp = −h ∇̄_qH(Δq)) and Newton iterates on Δq with the carried contraction:
    about one residual a step on the 7-link chain of bench/sim_vs_mujoco.py (1.09 over 10 s;
    two and a polish sweep before), E kept to round-off, and the steps those of the Python
    method (which solves both equations and polishes) to its Newton tolerance."""
    model = kd.models.pendulum_chain(7, planar=False, radius=0.05)
    q0, v0 = 0.5 * np.cos(np.arange(7)), np.zeros(7)
    tr = kd.simulate(model, q0, v0, 2.0, method="itoh_abe", dt=1e-3, progress=False)
    assert tr.stats["newton_iterations"].mean() < 1.3
    E = tr.energy
    assert np.abs(E - E[0]).max() < 1e-13 * abs(E[0])
    ref = kd.simulate(model, q0, v0, 0.05, method="itoh_abe", dt=1e-3, progress=False,
                      compiled=False)
    np.testing.assert_allclose(tr.q[:51], ref.q, rtol=0, atol=1e-10)
