"""The compiled midpoint, gauss4 and Störmer–Verlet loops (integrators/gauss_compiled.py,
verlet_compiled.py): the Python methods' steps, their orders, their invariants, their
failures."""

import importlib

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.model.joints import Free, Prismatic, Revolute, Spherical

# the module (kanedyn.sim exports its function under the same name)
simulate_module = importlib.import_module("kanedyn.sim.simulate")

METHODS = [("midpoint", None), ("gauss4", None), ("verlet", None), ("midpoint", "energy")]


def _refuse(*args, **kwargs):
    raise AssertionError("the compiled loop handed the run to the Python steps")


@pytest.fixture
def compiled_only(monkeypatch):
    """kd.simulate with the compiled loop and no fall-back: the Python step loop raises."""
    monkeypatch.setattr(simulate_module, "run_fixed", _refuse)


def cart_double_pendulum(gravity=(0.0, 0.0, -9.81)):
    """A cart on x (prismatic) carrying two hinged rods about y: planar, additive."""
    b = kd.ModelBuilder("cart_pendulum", gravity=gravity)
    rod = np.diag([1.0 / 12.0, 1.0 / 12.0, 1e-3])
    b.add_body("cart", None, Prismatic("x", axis=(1, 0, 0)), None, 2.0, (0, 0, 0),
               np.eye(3) * 0.1)
    b.add_body("rod1", "cart", Revolute("j1", axis=(0, 1, 0)), None, 1.0, (0, 0, -0.5), rod)
    b.add_body("rod2", "rod1", Revolute("j2", axis=(0, 1, 0)), (np.eye(3), (0, 0, -1.0)), 0.5,
               (0, 0, -0.5), rod)
    return b.build()


def chain7():
    return (kd.models.pendulum_chain(7, planar=False), np.linspace(0.3, -0.4, 7),
            np.linspace(-1.0, 1.0, 7))


@pytest.mark.parametrize("method,project", METHODS)
@pytest.mark.parametrize("case", ["chain7", "cart"])
def test_compiled_equals_python_step_for_step(method, project, case, monkeypatch):
    """250 steps (the last one shortened), every one kept: the compiled loop and the
    Python method solve the same equations; with them solved far below the default
    tolerance (stage equations to 1e-14, Verlet's two equations to their roundoff floor)
    the two trajectories agree to 1e-12 relative (the difference of two Newton stops and
    of roundoff, against a motion of O(1))."""
    if case == "chain7":
        m, q0, v0 = chain7()
    else:
        m, q0, v0 = cart_double_pendulum(), np.array([0.1, 0.8, -0.5]), np.array([0.5, 0.0, 2.0])
    kw = {"tol": 1e-14 if method != "verlet" else 1e-16}
    ref = kd.simulate(m, q0, v0, 0.2495, method=method, dt=1e-3, project=project,
                      compiled=False, **kw)
    monkeypatch.setattr(simulate_module, "run_fixed", _refuse)  # no fall-back below
    tr = kd.simulate(m, q0, v0, 0.2495, method=method, dt=1e-3, project=project, **kw)
    assert len(tr) == len(ref) == 251 and tr.t[-1] == ref.t[-1] == 0.2495
    assert tr.method == ref.method
    assert np.abs(tr.q - ref.q).max() <= 1e-12 * np.abs(ref.q).max()
    assert np.abs(tr.v - ref.v).max() <= 1e-12 * np.abs(ref.v).max()
    assert np.ptp(ref.v, axis=0).max() > 0.5  # the chain really moves
    # the matrix is kept across steps: a few iterations per step, not one per unknown
    assert 1.5 <= tr.stats["newton_iterations"].mean() <= 8


def floating_chain():
    """A free-floating base (free joint) carrying a hinged rod and a ball-jointed rod."""
    b = kd.ModelBuilder("floating", gravity=(0.0, 0.0, -9.81))
    rod = np.diag([1.0 / 12.0, 1.0 / 12.0, 1e-2])
    b.add_body("base", None, Free("root"), None, 2.0, (0.1, 0, 0), np.diag([0.2, 0.3, 0.4]))
    b.add_body("l1", "base", Revolute("r1", axis=(0, 1, 0)), None, 1.0, (0, 0, -0.5), rod)
    b.add_body("l2", "l1", Spherical("b2"), (np.eye(3), (0, 0, -1.0)), 0.5, (0, 0, -0.5), rod)
    m = b.build()
    return m, kd.random_configuration(m, np.random.default_rng(2)), \
        np.array([0.5, -1.0, 2.0, 0.3, 0.1, -0.2, 1.5, 0.2, -0.3, 0.4])


@pytest.mark.parametrize("method,project", [("midpoint", None), ("gauss4", None),
                                            ("midpoint", "energy")])
@pytest.mark.parametrize("case", ["ball", "floating"])
def test_compiled_tangent_form_equals_python(method, project, case, monkeypatch, ball_chain):
    """Ball and free joints: the same 250 steps in tangent coordinates (q = q0 ⊕ ξ, the
    quaternions moved by the exponential map, the free joint by the SE(3) exponential), to
    1e-12 relative; the quaternions stay unit."""
    m, q0, v0 = ball_chain if case == "ball" else floating_chain()
    kw = {"method": method, "dt": 1e-3, "project": project, "tol": 1e-14}
    ref = kd.simulate(m, q0, v0, 0.25, compiled=False, **kw)
    monkeypatch.setattr(simulate_module, "run_fixed", _refuse)
    tr = kd.simulate(m, q0, v0, 0.25, **kw)
    assert len(tr) == len(ref) == 251 and tr.method == ref.method
    assert np.abs(tr.q - ref.q).max() <= 1e-12 * np.abs(ref.q).max()
    assert np.abs(tr.v - ref.v).max() <= 1e-12 * np.abs(ref.v).max()
    quaternions = (0, 4) if case == "ball" else (3, 8)
    for a in quaternions:
        np.testing.assert_allclose(np.linalg.norm(tr.q[:, a:a + 4], axis=1), 1.0, atol=1e-14)
    assert np.ptp(ref.v, axis=0).max() > 1.0


@pytest.mark.parametrize("method,order", [("midpoint", 2), ("gauss4", 4)])
def test_tangent_form_convergence_order(method, order, compiled_only, ball_chain):
    """The ball chain at t = 0.3 s against a gauss4 run at dt/16 (the reference's own error
    is 16⁴ times below the coarsest gauss4 run's): slope of the error = the order."""
    m, q0, v0 = ball_chain
    ref = kd.simulate(m, q0, v0, 0.3, method="gauss4", dt=0.3 / 480)
    dts = (0.3 / 30, 0.3 / 60, 0.3 / 120) if order == 4 else (0.3 / 60, 0.3 / 120, 0.3 / 240)
    err = []
    for dt in dts:
        tr = kd.simulate(m, q0, v0, 0.3, method=method, dt=dt)
        err.append(max(np.abs(tr.q[-1] - ref.q[-1]).max(), np.abs(tr.v[-1] - ref.v[-1]).max()))
    slope = np.polyfit(np.log(dts), np.log(err), 1)[0]
    assert abs(slope - order) <= 0.25, (err, slope)


@pytest.mark.parametrize("method", ["gauss4", "verlet"])
def test_save_every_and_start_time_as_python(method, monkeypatch):
    """t0 > 0, a shortened last step, every 7th step kept: the samples of run_fixed."""
    m, q0, v0 = chain7()
    args = (m, q0, v0, 1.1 + 0.0996)
    kw = {"method": method, "dt": 2e-3, "t0": 1.1, "save_every": 7}
    ref = kd.simulate(*args, compiled=False, **kw)
    monkeypatch.setattr(simulate_module, "run_fixed", _refuse)
    tr = kd.simulate(*args, **kw)
    assert len(tr) == len(ref) == 9  # t0, 7 every 7th of 50 steps, the last
    np.testing.assert_array_equal(tr.t, ref.t)
    assert np.abs(tr.q - ref.q).max() <= 1e-11 * np.abs(ref.q).max()


@pytest.mark.parametrize("method,order", [("midpoint", 2), ("verlet", 2), ("gauss4", 4)])
def test_convergence_order(method, order, compiled_only):
    """Error at t = 0.4 s of a 3D 3-link chain against dopri5 at rtol 1e-13: halving dt
    divides it by 2^order (the fitted slope within ±0.25)."""
    m = kd.models.pendulum_chain(3, planar=False)
    q0, v0 = np.array([0.6, -0.4, 0.9]), np.array([0.5, 1.0, -1.0])
    ref = kd.simulate(m, q0, v0, 0.4, method="dopri5", rtol=1e-13, atol=1e-14)
    dts = (0.04, 0.02, 0.01) if order == 4 else (0.02, 0.01, 0.005)
    err = []
    for dt in dts:
        tr = kd.simulate(m, q0, v0, 0.4, method=method, dt=dt)
        err.append(max(np.abs(tr.q[-1] - ref.q[-1]).max(), np.abs(tr.v[-1] - ref.v[-1]).max()))
    slope = np.polyfit(np.log(dts), np.log(err), 1)[0]
    assert abs(slope - order) <= 0.25, (err, slope)
    assert err[-1] > 1e-11  # above the reference's own error


def test_projected_midpoint_keeps_energy_to_roundoff(compiled_only):
    """midpoint + project="energy", 2000 steps of the 7-link chain: E constant to 1e-12
    relative; the unprojected midpoint run (control) is off by far more."""
    m, q0, v0 = chain7()
    tr = kd.simulate(m, q0, v0, 2.0, method="midpoint", dt=1e-3, project="energy")
    E = tr.energy
    assert np.abs(E - E[0]).max() <= 1e-12 * abs(E[0])
    plain = kd.simulate(m, q0, v0, 2.0, method="midpoint", dt=1e-3)
    assert np.abs(plain.energy - E[0]).max() > 1e-9 * abs(E[0])


def floating_planar_chain():
    """A two-link chain free in the xy plane (slides x, y, turns about z), no gravity:
    additive coordinates, and its angular momentum about the world origin,
    L_z = p_θ1 + x P_y − y P_x, is quadratic in (q, p)."""
    b = kd.ModelBuilder("planar_free", gravity=(0.0, 0.0, 0.0))
    b.add_body("sx", None, Prismatic("x", axis=(1, 0, 0)), None, 0.0)
    b.add_body("sy", "sx", Prismatic("y", axis=(0, 1, 0)), None, 0.0)
    rod = np.diag([1e-3, 1.0 / 12.0, 1.0 / 12.0])
    b.add_body("l1", "sy", Revolute("th1", axis=(0, 0, 1)), None, 1.0, (0.5, 0, 0), rod)
    b.add_body("l2", "l1", Revolute("th2", axis=(0, 0, 1)), (np.eye(3), (1.0, 0, 0)), 1.5,
               (0.5, 0, 0), rod)
    return b.build()


@pytest.mark.parametrize("method", ["gauss4", "midpoint", "verlet"])
def test_quadratic_invariant_angular_momentum(method, compiled_only):
    """Gauss collocation (and Störmer–Verlet, for bilinear qᵀDp) keeps every quadratic
    invariant (Hairer, Lubich & Wanner 2006, IV.2.1, VI.4): L_z of the free planar chain
    stays at its initial value to roundoff over 300 large steps, while RK4 (control)
    loses it at the truncation level."""
    m = floating_planar_chain()
    q0, v0 = np.array([0.3, -0.2, 0.4, 1.0]), np.array([0.5, -0.3, 2.0, -4.0])

    def Lz(tr):
        return kd.spatial_momentum(m, tr.q, tr.v)[:, 2]  # batched over the samples

    tr = kd.simulate(m, q0, v0, 3.0, method=method, dt=0.01, tol=1e-14)
    L = Lz(tr)
    assert abs(L[0]) > 1.0 and np.ptp(tr.q[:, 3]) > 1.0
    assert np.abs(L - L[0]).max() <= 1e-12 * abs(L[0])
    rk = Lz(kd.simulate(m, q0, v0, 3.0, method="rk4", dt=0.01))
    assert np.abs(rk - rk[0]).max() > 1e-9 * abs(L[0])


def test_newton_failure_names_step_time_residual_method():
    """maxiter=1 cannot converge: the compiled loop gives the run back to the Python
    method, whose report names the method, the step, the time and the residual."""
    m, q0, v0 = chain7()
    for method in ("midpoint", "gauss4", "verlet"):
        with pytest.raises(kd.SolverError) as e:
            kd.simulate(m, q0, v0, 0.1, method=method, dt=1e-3, maxiter=1)
        msg = str(e.value)
        for part in (method, "Newton failed at step 0", "t = 0", "residual"):
            assert part in msg, msg


@pytest.mark.parametrize("method,project", METHODS)
def test_blowup_stops_with_time_and_state(method, project, compiled_only):
    """A speed beyond blowup x (1 + max|v0|) stops the compiled run with the message of
    the Python loop: the method, the step, the time, the state."""
    m, q0, v0 = chain7()
    with pytest.raises(kd.DivergenceError) as e:
        kd.simulate(m, q0, 0 * v0, 1.0, method=method, dt=1e-3, project=project,
                    blowup=1e-4)
    msg = str(e.value)
    name = method + ("+project('energy',)" if project else "")
    for part in (f"{name}: blow-up at step", "t = ", "q = [", "v = [", "raise blowup="):
        assert part in msg, msg


@pytest.mark.parametrize("method", ["midpoint", "gauss4", "verlet"])
def test_what_the_loops_do_not_take_goes_to_the_python_steps(method, ball_chain):
    """A force element without a compiled row (a torque given as a Python function), on
    the chain and (verlet, whose chart loop takes ball joints) on the ball chain: the
    Python method runs (run_fixed is called), with its own results, bit for bit."""
    m, q0, v0 = chain7()
    spring = [kd.forces.JointTorque(lambda t, q, v: [0.1], ["joint2"])]
    calls = []

    def counting(*args, **kwargs):
        calls.append(1)
        return run_fixed(*args, **kwargs)

    run_fixed = simulate_module.run_fixed
    cases = [(m, q0, v0, spring)]
    if method == "verlet":
        cases.append((*ball_chain, [kd.forces.JointTorque(lambda t, q, v: [0.1], ["r3"])]))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(simulate_module, "run_fixed", counting)
        for model, q, v, forces in cases:
            a = kd.simulate(model, q, v, 0.02, method=method, dt=1e-3, forces=forces)
            b = kd.simulate(model, q, v, 0.02, method=method, dt=1e-3, forces=forces,
                            compiled=False)
            np.testing.assert_array_equal(a.q, b.q)
    assert len(calls) == 2 * len(cases)


def test_compiled_se3_right_jacobian_equals_the_reference():
    """The compiled SE(3) right Jacobian (free joints' chart) against the numpy one of
    spatial.lie, and against its defining property v = J ξ̇ (differences of the SE(3)
    exponential, to 1e-7)."""
    from kanedyn.integrators.gauss_compiled import _GL_S, _GL_W, se3_right_jacobian
    from kanedyn.model.joints import Free
    from kanedyn.spatial.lie import se3_right_jacobian as reference

    rng = np.random.default_rng(3)
    for scale in (1.0, 1e-3, 1e-9):
        xi = scale * rng.normal(size=6)
        np.testing.assert_allclose(se3_right_jacobian(xi, _GL_S, _GL_W), reference(xi),
                                   rtol=0, atol=1e-15)
    # v = J(ξ) ξ̇: the body twist of the curve exp(ξ + t δ) at t = 0
    joint, q0 = Free("f"), np.array([0.0, 0, 0, 1, 0, 0, 0])
    xi, delta, eps = rng.normal(size=6), rng.normal(size=6), 1e-6
    qp, qm = joint.integrate(q0, xi + eps * delta, 1.0), joint.integrate(q0, xi - eps * delta, 1.0)
    twist = joint.difference(qm, qp) / (2 * eps)
    J = se3_right_jacobian(xi, _GL_S, _GL_W)
    np.testing.assert_allclose(J @ delta, twist, atol=1e-7)


@pytest.mark.parametrize("method,project", METHODS)
def test_compiled_with_force_rows_equals_python_step_for_step(method, project, monkeypatch,
                                                              chain_forces):
    """Springs, dampers, smoothed Stribeck friction, constant and sinusoidal torques: the
    compiled loop takes each by its row and equals the Python method at every one of 150
    steps (a shortened last one, t0 > 0) — q, v, and W_nc (the reference's quadrature:
    Gauss's ``h Σ b_i v_iᵀτ_nc,i``, Verlet's trapezoid of its kicks) to round-off, so that
    the budget E − E₀ − W_nc is the Python run's (to round-off with the projection)."""
    m, q0, v0, forces = chain_forces
    kw = {"method": method, "dt": 2e-3, "t0": 0.1, "project": project, "forces": forces,
          "tol": 1e-14 if method != "verlet" else 1e-16}
    ref = kd.simulate(m, q0, v0, 0.3995, compiled=False, **kw)
    monkeypatch.setattr(simulate_module, "run_fixed", _refuse)  # no fall-back below
    tr = kd.simulate(m, q0, v0, 0.3995, **kw)
    assert len(tr) == len(ref) == 151 and tr.method == ref.method
    assert np.abs(tr.q - ref.q).max() <= 1e-12 * np.abs(ref.q).max()
    assert np.abs(tr.v - ref.v).max() <= 1e-12 * np.abs(ref.v).max()
    scale = np.abs(ref.energy).max()
    assert np.abs(tr.work_nc - ref.work_nc).max() <= 1e-13 * scale
    assert abs(ref.work_nc[-1]) > 1e-2 * scale  # the forces did work
    assert np.abs(tr.budget - ref.budget).max() <= 1e-13 * scale
    if project:
        assert np.abs(tr.budget).max() <= 1e-13 * scale
    assert 1.5 <= tr.stats["newton_iterations"].mean() <= 8


@pytest.mark.parametrize("method,project", [("midpoint", None), ("gauss4", None),
                                            ("midpoint", "energy")])
def test_compiled_tangent_form_with_forces_equals_python(method, project, monkeypatch, ball_chain):
    """The ball chain with dampers on its ball joints' speeds and a spring, friction and a
    sinusoidal torque on its hinge (whose coordinate follows two quaternions in q): the
    tangent form with the force rows, 100 steps, equals the Python method to round-off,
    W_nc included."""
    from kanedyn import friction

    m, q0, v0 = ball_chain
    law = friction.Stribeck(Fc=0.05, Fs=0.08, vs=0.05, delta=2.0, Fv=0.01).smoothed("tanh", 1e-2)
    forces = [kd.forces.JointDamper("b1", 0.2), kd.forces.JointDamper("b2", 0.1),
              kd.forces.JointSpring("r3", 4.0, 0.3), kd.forces.JointFriction("r3", law),
              kd.forces.SinusoidalTorque("r3", 0.5, 3.0, phase=0.2)]
    kw = {"method": method, "dt": 1e-3, "project": project, "tol": 1e-14, "forces": forces}
    ref = kd.simulate(m, q0, v0, 0.1, compiled=False, **kw)
    monkeypatch.setattr(simulate_module, "run_fixed", _refuse)
    tr = kd.simulate(m, q0, v0, 0.1, **kw)
    assert len(tr) == len(ref) == 101 and tr.method == ref.method
    assert np.abs(tr.q - ref.q).max() <= 1e-12 * np.abs(ref.q).max()
    assert np.abs(tr.v - ref.v).max() <= 1e-12 * np.abs(ref.v).max()
    scale = np.abs(ref.energy).max()
    assert np.abs(tr.work_nc - ref.work_nc).max() <= 1e-13 * scale
    assert abs(ref.work_nc[-1]) > 1e-3 * scale
    assert np.abs(tr.budget - ref.budget).max() <= 1e-13 * scale


def test_one_compiled_signature_per_loop(chain_forces):
    """With and without force rows, canonical and tangent, projected or not, single runs
    and batches: each loop has one numba specialisation (forces, tangent and project are
    runtime flags, P always an array), so that nothing compiles twice."""
    from kanedyn.integrators.gauss_compiled import _gauss_loop
    from kanedyn.integrators.verlet_compiled import _verlet_loop

    m, q0, v0, forces = chain_forces
    for method in ("midpoint", "verlet"):
        for f in (None, forces):
            kd.simulate(m, q0, v0, 0.01, method=method, dt=2e-3, forces=f)
    kd.simulate_batch(m, np.tile(q0, (2, 1)), np.tile(v0, (2, 1)), 0.01, method="gauss4",
                      dt=2e-3, forces=forces)
    assert len(_gauss_loop.signatures) == 1
    assert len(_verlet_loop.signatures) == 1


@pytest.mark.parametrize("method", ["midpoint", "verlet"])
def test_a_cold_loop_takes_the_python_steps(cold_loop_check, method):
    """kanedyn.dynamics.first_calls: on a cold cache the run takes its Python steps while
    a compiler process compiles the loop (tests/conftest.py, cold_loop_check)."""
    from kanedyn.integrators import gauss_compiled, verlet_compiled

    loop = gauss_compiled._gauss_loop if method == "midpoint" else verlet_compiled._verlet_loop
    cold_loop_check(method, *chain7(), loop, "first_run")


# ------------------------------------------------ the tangent form on planar joints (issue 17)
def planar_cart():
    """A body on a planar joint in a vertical plane (joint y along world z) with a hinged
    pole (test_chart_methods.py's planar cart): the chart q0 ⊕ ξ is the SE(2) exponential."""
    return kd.models.planar_cart(), np.array([0.1, 0.5, 0.3, 0.8]), np.array([1.0, 2.0, -1.5, 3.0])


@pytest.mark.parametrize("psi", [2.5, -1.3, 0.49, -0.51, 1e-3, 1e-9, 0.0])
def test_compiled_se2_right_jacobian(psi):
    """The closed-form SE(2) right Jacobian of the loop against the Python joint's
    quadrature (``ModelSystem.chart_jacobian``, to 1e-15; both sides of the series switch
    at |ψ| = 0.5) and against its defining property v = J ξ̇: the body twist of ε ↦ q0 ⊕ (ξ
    + ε δ) by central differences of the joint's own exponential and logarithm (1e-8)."""
    from kanedyn.integrators.gauss_compiled import se2_right_jacobian
    from kanedyn.model.joints import Planar

    joint, q0 = Planar("p"), np.array([0.3, -0.2, 0.7])
    rng = np.random.default_rng(5)
    xi = np.array([*rng.normal(size=2), psi])
    J = se2_right_jacobian(*xi)
    np.testing.assert_allclose(J, joint.exponential_right_jacobian(q0, xi), rtol=0, atol=1e-15)
    delta, eps = rng.normal(size=3), 1e-6
    qp = joint.integrate(q0, xi + eps * delta, 1.0)
    qm = joint.integrate(q0, xi - eps * delta, 1.0)
    twist = joint.difference(qm, qp) / (2 * eps)
    np.testing.assert_allclose(J @ delta, twist, atol=1e-8)


PLANAR_METHODS = [("midpoint", None), ("gauss4", None), ("midpoint", "energy")]


@pytest.mark.parametrize("method,project", PLANAR_METHODS)
def test_compiled_tangent_form_on_a_planar_joint_equals_python(method, project, monkeypatch):
    """The planar cart, 200 steps: the tangent form with the planar joint's chart (SE(2)
    exponential, J(ξ)⁻¹v) equals the Python method (``compiled=False``) to 1e-12 relative
    (two Newton stops at tol 1e-14 and round-off), the cart turning by 0.3 rad; a kept
    matrix (few iterations a step)."""
    m, q0, v0 = planar_cart()
    kw = {"method": method, "dt": 1e-3, "project": project, "tol": 1e-14}
    ref = kd.simulate(m, q0, v0, 0.2, compiled=False, **kw)
    monkeypatch.setattr(simulate_module, "run_fixed", _refuse)
    tr = kd.simulate(m, q0, v0, 0.2, **kw)
    assert len(tr) == len(ref) == 201 and tr.method == ref.method
    assert np.abs(tr.q - ref.q).max() <= 1e-12 * np.abs(ref.q).max()
    assert np.abs(tr.v - ref.v).max() <= 1e-12 * np.abs(ref.v).max()
    assert np.ptp(ref.q[:, 2]) > 0.25  # the cart turns: the chart is not additive
    assert 1.5 <= tr.stats["newton_iterations"].mean() <= 3.5


@pytest.mark.parametrize("method,project", PLANAR_METHODS)
def test_compiled_tangent_form_on_a_planar_joint_with_force_rows(method, project, monkeypatch):
    """The planar cart with force rows — a damper on the planar joint's three speeds, a
    spring and a sinusoidal torque on the hinge, a constant world wrench on the pole —
    from t0 = 0.1, 150 steps: q, v and W_nc equal the Python method's to round-off, so the
    budget E − E₀ − W_nc is the Python run's (and closes with the projection)."""
    from kanedyn.forces import ExternalWrench, JointDamper, JointSpring, SinusoidalTorque

    m, q0, v0 = planar_cart()
    forces = [JointDamper("plane", 0.3), JointSpring("hinge", 2.0, 0.1),
              SinusoidalTorque("hinge", 1.0, 3.0),
              ExternalWrench("pole", [0.1, 0.0, 0.2, 0.5, -0.3, 0.0], frame="world")]
    kw = {"method": method, "dt": 1e-3, "t0": 0.1, "project": project, "tol": 1e-14,
          "forces": forces}
    ref = kd.simulate(m, q0, v0, 0.25, compiled=False, **kw)
    monkeypatch.setattr(simulate_module, "run_fixed", _refuse)
    tr = kd.simulate(m, q0, v0, 0.25, **kw)
    assert len(tr) == len(ref) == 151 and tr.method == ref.method
    assert np.abs(tr.q - ref.q).max() <= 1e-12 * np.abs(ref.q).max()
    assert np.abs(tr.v - ref.v).max() <= 1e-12 * np.abs(ref.v).max()
    scale = np.abs(ref.energy).max()
    assert abs(ref.work_nc[-1]) > 0.05  # the forces did work (E ≈ 20 J, mostly potential)
    assert np.abs(tr.work_nc - ref.work_nc).max() <= 1e-13 * scale
    assert np.abs(tr.budget - ref.budget).max() <= 1e-13 * scale
    if project:
        assert np.abs(tr.budget).max() <= 1e-12 * scale


def test_energy_momentum_projection_on_a_planar_joint_compiled(monkeypatch):
    """energy_momentum's ``"projection"`` variant (tangent midpoint + projection onto E₀)
    on the planar cart runs in the loop and equals its Python steps to 1e-12 relative; the
    energy from the Model's own functions stays at E₀ to 1e-12."""
    m, q0, v0 = planar_cart()
    kw = {"method": "energy_momentum", "variant": "projection", "dt": 1e-3}
    ref = kd.simulate(m, q0, v0, 0.2, compiled=False, **kw)
    monkeypatch.setattr(simulate_module, "run_fixed", _refuse)
    tr = kd.simulate(m, q0, v0, 0.2, **kw)
    assert len(tr) == len(ref) == 201 and tr.method == ref.method
    assert np.abs(tr.q - ref.q).max() <= 1e-12 * np.abs(ref.q).max()
    assert np.abs(tr.v - ref.v).max() <= 1e-12 * np.abs(ref.v).max()
    E = kd.kinetic_energy(m, tr.q, tr.v) + kd.potential_energy(m, tr.q)
    assert np.abs(E - E[0]).max() <= 1e-12 * abs(E[0])


@pytest.mark.parametrize("method,order", [("midpoint", 2), ("gauss4", 4)])
def test_energy_error_order_on_a_planar_joint(method, order, compiled_only):
    """An independent check of the planar chart: the energy of the Model's own functions
    (``kd.kinetic_energy + kd.potential_energy``) along 1 s of the planar cart drifts by
    the method's order — halving dt divides max |E − E₀| by 2^order (within 0.3 of the
    slope) —, and is small at dt = 0.01 (relative 1e-2 resp. 1e-5)."""
    m, q0, v0 = planar_cart()
    err = []
    for dt in (0.01, 0.005):
        tr = kd.simulate(m, q0, v0, 1.0, method=method, dt=dt)
        E = kd.kinetic_energy(m, tr.q, tr.v) + kd.potential_energy(m, tr.q)
        err.append(np.abs(E - E[0]).max() / abs(E[0]))
    assert abs(np.log2(err[0] / err[1]) - order) <= 0.3, err
    assert err[0] <= (1e-2 if order == 2 else 1e-5), err


def test_planar_runs_add_no_signature(chain_forces):
    """Planar runs (with and without force rows, projected) reuse the loop's one
    specialisation: the planar branch is taken at run time by the joint codes."""
    from kanedyn.forces import JointDamper
    from kanedyn.integrators.gauss_compiled import _gauss_loop

    m, q0, v0 = planar_cart()
    kd.simulate(m, q0, v0, 0.01, method="gauss4", dt=2e-3)
    kd.simulate(m, q0, v0, 0.01, method="midpoint", dt=2e-3, project="energy",
                forces=[JointDamper("plane", 0.3)])
    mc, qc, vc, forces = chain_forces
    kd.simulate(mc, qc, vc, 0.01, method="midpoint", dt=2e-3, forces=forces)
    assert len(_gauss_loop.signatures) == 1
