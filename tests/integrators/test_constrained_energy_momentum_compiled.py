"""The compiled constrained energy–momentum loop against its Python reference, step for step
(integrators/constrained_energy_momentum_compiled.py)."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.constraints import ConstrainedSystem, LoopClosure, consistent_initial_values
from kanedyn.constraints.mechanisms import (
    four_bar_configuration,
    four_bar_system,
    rssr_guess,
    rssr_system,
    stewart_configuration,
    stewart_system,
)
from kanedyn.errors import SolverError
from kanedyn.integrators import constrained_energy_momentum_compiled as cemc
from kanedyn.model.joints import Revolute


@pytest.fixture(scope="module")
def four_bar():
    s = four_bar_system()
    cs = consistent_initial_values(s, four_bar_configuration(np.pi / 3), np.array([2.0, 0, 0]))
    return s, cs.q, cs.v


@pytest.mark.parametrize("method", ["energy_momentum", "avf"])
def test_compiled_steps_agree_with_the_python_steps(method, four_bar):
    s, q0, v0 = four_bar
    a = kd.simulate(s, q0, v0, 0.05, method=method, dt=1e-3)            # 50 steps, compiled
    b = kd.simulate(s, q0, v0, 0.05, method=method, dt=1e-3, compiled=False)
    assert len(a.t) == len(b.t) == 51
    # both solve the same equations to Newton's tolerance (1e-14 relative); what differs is
    # the round-off of the evaluations (sums in another order, Cholesky for LAPACK's
    # inverse), carried over 50 steps: q, v to 1e-12, λ to 1e-10 of its size
    assert np.abs(a.q - b.q).max() < 1e-12
    assert np.abs(a.v - b.v).max() < 1e-12
    assert np.abs(a.stats["lam"] - b.stats["lam"]).max() < 1e-10 * np.abs(b.stats["lam"]).max()
    assert np.abs(a.stats["residual_g"] - b.stats["residual_g"]).max() < 1e-14
    # the same Newton iterations, but where a stopping test falls within round-off
    assert np.mean(a.stats["newton_iterations"] == b.stats["newton_iterations"]) > 0.8
    E = s.energy(a.q, a.v)
    assert np.abs(E - E[0]).max() <= 1e-12 * abs(E[0])
    assert np.abs(a.stats["residual_g"]).max() <= 1e-12
    assert np.abs(a.stats["residual_Gv"]).max() <= 1e-12


def test_compiled_steps_with_force_rows_agree_and_close_the_budget(four_bar, monkeypatch):
    """A damper, a spring, a periodic motor and smoothed friction on the four-bar's pins
    (each with a compiled row): the compiled loop takes them — the springs in H, τ_nc at
    (t + h/2, q + Δq/2, Δq/h) in the momentum equation, W_nc = Σ Δq·τ_nc — and equals
    the Python steps step for step, W_nc included; E − E0 − W_nc closes to round-off."""
    from kanedyn import friction
    from kanedyn.forces import JointDamper, JointFriction, JointSpring, SinusoidalTorque

    s, q0, v0 = four_bar
    law = friction.Stribeck(Fc=0.05, Fs=0.08, vs=0.05, delta=2.0, Fv=0.01).smoothed("tanh", 1e-2)
    forces = [JointDamper("rocker_pin", 0.3), JointSpring("crank_pin", 2.0, 1.0),
              SinusoidalTorque("crank_pin", 0.8, 0.5, phase=0.3),
              JointFriction("coupler_pin", law)]
    ran = []
    real = cemc.run
    monkeypatch.setattr(cemc, "run", lambda m: ran.append(real(m)) or ran[-1])
    a = kd.simulate(s, q0, v0, 0.2, method="energy_momentum", dt=1e-3, forces=forces)
    assert ran and ran[-1] is not None  # the compiled loop took the run
    b = kd.simulate(s, q0, v0, 0.2, method="energy_momentum", dt=1e-3, forces=forces,
                    compiled=False)
    assert len(a.t) == len(b.t) == 201
    assert np.abs(a.q - b.q).max() < 1e-12
    assert np.abs(a.v - b.v).max() < 1e-11
    scale = max(np.abs(b.energy).max(), np.abs(b.work_nc).max())
    assert np.abs(a.work_nc - b.work_nc).max() < 1e-12 * scale
    assert np.abs(a.work_nc[-1]) > 1e-3 * scale  # the forces did work (0.04 J of 10)
    assert np.abs(a.budget).max() <= 1e-12 * scale
    assert np.abs(a.stats["residual_g"]).max() <= 1e-12


def _rssr():
    s = rssr_system()
    cs = consistent_initial_values(s, rssr_guess(s), np.array([4.0, 0.0, 0.0, 0.5, 0.0]))
    return s, cs.q, cs.v, 0.05, 1e-3


def _floating_rssr():
    s = rssr_system(gravity=0.0, floating=True)
    v = np.zeros(s.nv)
    v[:6] = [0.3, -0.2, 0.5, 0.1, 0.2, -0.1]
    v[6], v[9] = 4.0, 0.5
    cs = consistent_initial_values(s, rssr_guess(s), v)
    return s, cs.q, cs.v, 0.03, 1e-3


def _stewart():
    s = stewart_system()
    v = np.zeros(s.nv)
    v[:6] = [0.3, -0.2, 0.5, 0.1, 0.05, -0.1]
    cs = consistent_initial_values(s, stewart_configuration(s, (0.05, -0.02, 0.03)), v)
    return s, cs.q, cs.v, 0.04, 2e-3


@pytest.mark.parametrize("method", ["energy_momentum", "avf"])
@pytest.mark.parametrize("build", [_rssr, _floating_rssr, _stewart],
                         ids=["rssr-ball", "floating-rssr-free-ball", "stewart-free"])
def test_compiled_steps_agree_with_the_python_steps_on_ball_and_free_joints(method, build):
    """Ball and free joints in the compiled loop, in their charts (q_n ⊗ exp(x),
    system_kernel's chart functions): the spatial RSSR (a ball joint in the tree, a
    ball-joint cut), the same on a free-floating frame, and the Stewart platform (a free
    platform, 24 speeds, 18 rows), 20-50 steps, against the Python steps."""
    s, q0, v0, T, dt = build()
    a = kd.simulate(s, q0, v0, T, method=method, dt=dt)
    b = kd.simulate(s, q0, v0, T, method=method, dt=dt, compiled=False)
    n = int(round(T / dt))
    assert len(a.t) == len(b.t) == n + 1
    vs = np.abs(b.v).max()
    # round-off of the evaluations carried over the run (and through Newton's stopping
    # tests, where the iteration counts may differ: the step's result does not depend on
    # them), as on the four-bar
    assert np.abs(a.q - b.q).max() < 1e-12
    assert np.abs(a.v - b.v).max() < 1e-12 * vs
    assert np.abs(a.stats["lam"] - b.stats["lam"]).max() < 1e-10 * np.abs(b.stats["lam"]).max()
    # the quaternions stay unit, moved by the exponential map
    starts = [b.iq.start + (3 if b.joint.kind == "free" else 0) for b in s.model.bodies
              if b.joint.kind in ("spherical", "free")]
    norms = np.array([np.linalg.norm(a.q[:, k:k + 4], axis=1) for k in starts])
    assert np.abs(norms - 1.0).max() < 1e-14
    E = s.energy(a.q, a.v)
    assert np.abs(E - E[0]).max() <= 1e-12 * abs(E[0])
    assert np.abs(a.stats["residual_g"]).max() <= 1e-12
    assert np.abs(a.stats["residual_Gv"]).max() <= 1e-12


def _chart_forces(name):
    """Force elements with compiled rows on a ball- or free-joint tree: a damper on every
    speed of the ball (resp. free) joint, a spring and a periodic torque on 1-DOF joints
    (the Stewart's prismatic p0 has q index 9, speed 8: the rows read q per speed),
    smoothed Stribeck friction, and a constant local wrench on a body."""
    from kanedyn import friction
    from kanedyn.forces import (
        ExternalWrench,
        JointDamper,
        JointFriction,
        JointSpring,
        SinusoidalTorque,
    )

    law = friction.Stribeck(Fc=0.05, Fs=0.08, vs=0.05, delta=2.0, Fv=0.01).smoothed("tanh",
                                                                                   1e-2)
    if name == "rssr-ball":
        return [JointDamper("ball_a", 0.05), JointSpring("crank_pin", 2.0, 0.5),
                SinusoidalTorque("rocker_pin", 0.8, 5.0, phase=0.3),
                JointFriction("crank_pin", law),
                ExternalWrench("coupler", [0.0, 0.05, 0.1, 0.5, -0.4, 0.2])]
    return [JointDamper("platform_free", 2.0), JointSpring("p0", 50.0, 0.0),
            SinusoidalTorque("p1", 5.0, 3.0, phase=0.3), JointFriction("u2_x", law),
            ExternalWrench("platform", [0.5, 0.0, 1.0, 5.0, -10.0, 20.0])]


@pytest.mark.parametrize("method", ["energy_momentum", "avf"])
@pytest.mark.parametrize("name", ["rssr-ball", "stewart-free"])
def test_force_rows_on_ball_and_free_joints_run_in_the_loop(method, name, monkeypatch):
    """Force rows on trees with ball and free joints, in their charts: the springs in H
    (q read per speed), F = J(x̄)ᵀ τ_nc(t + h/2, φ(x̄), J(x̄) Δx/h) in the momentum rows and
    W_nc = Σ Δx·F, as the Python steps' ``_equations``; the compiled loop takes the run and
    equals the Python steps step for step (W_nc included), the budget E − E₀ − W_nc closes
    at round-off while the forces do work, and the quaternions stay unit."""
    s, q0, v0, T, dt = _rssr() if name == "rssr-ball" else _stewart()
    fs = _chart_forces(name)
    ran = []
    real = cemc.run
    monkeypatch.setattr(cemc, "run", lambda m: ran.append(real(m)) or ran[-1])
    a = kd.simulate(s, q0, v0, T, method=method, dt=dt, forces=fs)
    assert ran and ran[-1] is not None  # the compiled loop took the run
    b = kd.simulate(s, q0, v0, T, method=method, dt=dt, forces=fs, compiled=False)
    assert len(a.t) == len(b.t) == int(round(T / dt)) + 1
    # the same Newton matrices (the damping slopes at v0 in both), so the same rebuilds:
    # what differs is the round-off of the evaluations
    assert np.abs(a.q - b.q).max() < 1e-11
    assert np.abs(a.v - b.v).max() < 1e-11 * np.abs(b.v).max()
    scale = max(np.abs(b.energy).max(), np.abs(b.work_nc).max())
    assert np.abs(a.work_nc - b.work_nc).max() < 1e-11 * scale
    assert abs(a.work_nc[-1]) > 1e-3 * scale  # the forces did work
    assert np.abs(a.budget).max() <= 1e-11 * scale
    assert np.abs(a.stats["residual_g"]).max() <= 1e-12
    starts = [b.iq.start + (3 if b.joint.kind == "free" else 0) for b in s.model.bodies
              if b.joint.kind in ("spherical", "free")]
    norms = np.array([np.linalg.norm(a.q[:, k:k + 4], axis=1) for k in starts])
    assert np.abs(norms - 1.0).max() < 1e-14


#: the RSSR with the forces of _chart_forces("rssr-ball") 75 steps before its crank comes to
#: rest (t = 3.605 s of bench/constrained_energy.py --forces, dt = 1e-3, a state of that run):
#: (t0, q, v)
_RSSR_BEFORE_REST = (
    3.605,
    [0.43640812207992863, 0.8783086302235623, 0.06439876509248212, -0.4736462439165842,
     0.009272796400485206, -1.5900724636704724],
    [-2.510424442845252e-05, 0.0015386059668487167, 4.123266172205977e-06,
     2.1588380426368163e-05, 1.0503819715679261e-06])


@pytest.mark.parametrize("t0, T", [(3.605, 0.1), (0.0, 0.01)],
                         ids=["crank-comes-to-rest", "other-motor-phase"])
def test_a_crank_coming_to_rest_under_friction_is_stepped_through(t0, T, monkeypatch):
    """Where the mechanism comes to rest (|Δz| ~ 1e-6) the corrections of the discrete
    gradients carry the round-off of ΔH and Δg divided by |Δz| (~1e-12) into the residual;
    measured against the small |Δx| and |p| the updates stall near 1e-6, on either side as
    round-off falls. Before the stall rule took a residual at that floor (residual_floor),
    the compiled loop failed at t = 3.685 s here (the crank's speed changes sign at
    3.686 s) and both failed at the first step with the motor at another phase (t0 = 0).
    Both now take every step; their energy budgets close at round-off and g = 0, G v = 0
    hold; they agree to what the floor leaves of a step at rest."""
    s = _rssr()[0]
    _, q0, v0 = _RSSR_BEFORE_REST
    fs = _chart_forces("rssr-ball")
    ran = []
    real = cemc.run
    monkeypatch.setattr(cemc, "run", lambda m: ran.append(real(m)) or ran[-1])
    kw = dict(method="energy_momentum", dt=1e-3, forces=fs, initialize=False, t0=t0)
    a = kd.simulate(s, q0, v0, t0 + T, **kw)
    assert ran and ran[-1] is not None  # the compiled loop took the run
    b = kd.simulate(s, q0, v0, t0 + T, compiled=False, **kw)
    n = int(round(T / 1e-3))
    assert len(a.t) == len(b.t) == n + 1
    if T > 0.05:  # the crank's speed changes sign once, near t = 3.686 s
        assert np.count_nonzero(np.diff(np.sign(b.v[:, 0]))) == 1
    scale = max(np.abs(b.energy).max(), np.abs(b.work_nc).max())
    for tr in (a, b):
        assert np.abs(tr.budget).max() <= 1e-12 * scale
        assert np.abs(tr.stats["residual_g"]).max() <= 1e-12
        assert np.abs(tr.stats["residual_Gv"]).max() <= 1e-12
    assert np.abs(a.work_nc - b.work_nc).max() < 1e-11 * scale
    # at rest a step is fixed only to the floor of its residual, h δ/|Δz| ≈ 1e-12 in Δx and
    # 2 δ/|Δz| ≈ 4e-9 in v (δ ≈ 2e-15, the round-off of ΔH; |Δz| ≈ 1e-6): what the two
    # differ by over 100 steps (2.4e-11 and 4.6e-9 measured), away from rest 1e-11
    assert np.abs(a.q - b.q).max() < 1e-10
    assert np.abs(a.v - b.v).max() < 2e-8


def test_the_loop_applies_only_where_it_can(four_bar):
    from kanedyn.integrators.base import Problem
    from kanedyn.integrators.constrained_energy_momentum import ConstrainedEnergyMomentum

    s, q0, v0 = four_bar
    m = ConstrainedEnergyMomentum(Problem(s, q0.copy(), v0.copy(), 0.01, dt=1e-3))
    assert cemc.applicable(m) is not None
    m = ConstrainedEnergyMomentum(Problem(s, q0.copy(), v0.copy(), 0.01, dt=1e-3),
                                  compiled=False)
    assert cemc.applicable(m) is None
    m = ConstrainedEnergyMomentum(Problem(s, q0.copy(), v0.copy(), 0.01, dt=1e-3,
                                          tau_nc=lambda t, q, v: -0.1 * v))
    assert cemc.applicable(m) is None
    # a ball joint: its chart compiled; radau5's loop (q + h v) still has no compiled form
    r, q0, v0, _, _ = _rssr()
    assert r.compiled_form() is None and r.compiled_chart_form() is not None
    m = ConstrainedEnergyMomentum(Problem(r, q0.copy(), v0.copy(), 0.01, dt=1e-3))
    assert cemc.applicable(m) is not None
    m = ConstrainedEnergyMomentum(Problem(r, q0.copy(), v0.copy(), 0.01, dt=1e-3),
                                  compiled=False)
    assert cemc.applicable(m) is None
    # force elements on a ball-joint tree: taken with their rows, refused without
    from kanedyn.forces.kernel import empty_rows

    def tau(t, q, v):
        return -0.1 * v

    m = ConstrainedEnergyMomentum(Problem(r, q0.copy(), v0.copy(), 0.01, dt=1e-3, tau_nc=tau,
                                          force_rows=empty_rows(r.nv)))
    assert cemc.applicable(m) is not None
    m = ConstrainedEnergyMomentum(Problem(r, q0.copy(), v0.copy(), 0.01, dt=1e-3, tau_nc=tau))
    assert cemc.applicable(m) is None


def test_newton_failure_names_step_time_and_residual(four_bar):
    s, q0, v0 = four_bar
    messages = []
    for compiled in (True, False):
        with pytest.raises(SolverError, match=r"Newton failed at step 0 \(t = 0, h = 0\.2\)"
                                              r".*residual .* in .*Reduce dt") as e:
            kd.simulate(s, q0, 20 * v0, 0.4, method="energy_momentum", dt=0.2, maxiter=2,
                        compiled=compiled)
        messages.append(str(e.value))
    assert messages[0] == messages[1]  # the compiled loop reports as the Python step does


def test_full_turns_through_the_near_dead_points_are_taken():
    """The four-bar's crank turning at 4 rad/s passes configurations where G M⁻¹ Gᵀ is
    ill-conditioned: Newton's updates stall near 1e-12 with the step's energy defect at
    ~70 ε (1 + |H|) (t ≈ 4.02 s); the stall rule (STALL_DEFECT) takes that step instead
    of stopping the run (it stopped before)."""
    from kanedyn.constraints.mechanisms import four_bar_problem

    prob = four_bar_problem(omega1=4.0)
    tr = kd.simulate(prob.system, prob.q0, prob.v0, 4.1, method="energy_momentum", dt=1e-3)
    E = tr.energy
    assert np.abs(E - E[0]).max() <= 1e-12 * np.abs(E).max()
    assert np.abs(tr.stats["residual_g"]).max() <= 1e-12
    assert tr.q[-1, 0] - tr.q[0, 0] > 2 * np.pi  # full turns of the crank


def two_arms_gripping(kind: str):
    """A 3-hinge arm carrying an object (on a 4th hinge) and a second arm of hinges
    gripping it by a loop closure of ``kind`` ("weld": 7 hinges, 6 rows; "revolute": 6
    hinges, 5 rows); the grip frame is where the second arm's tip is at the start."""
    from kanedyn.dynamics.reference import body_placements

    b = kd.ModelBuilder("two_arms", gravity=(0, 0, -9.81))
    inertia = np.diag([0.01, 0.01, 0.002])
    parent = None
    for k, axis in enumerate([(0, 1, 0), (1, 0, 0), (0, 1, 0)]):
        b.add_body(f"a{k}", parent, Revolute(f"ja{k}", axis=axis),
                   (np.eye(3), (0, 0, 0.3) if parent else (0, 0, 0)), 1.0, (0, 0, 0.15),
                   inertia)
        parent = f"a{k}"
    b.add_body("obj", parent, Revolute("jo", axis=(0, 0, 1)), (np.eye(3), (0, 0, 0.3)), 2.0,
               (0.1, 0, 0), np.diag([0.02, 0.03, 0.02]))
    parent = None
    axes = [(0, 1, 0), (1, 0, 0), (0, 0, 1)] * 3
    for k in range(7 if kind == "weld" else 6):
        b.add_body(f"b{k}", parent, Revolute(f"jb{k}", axis=axes[k]),
                   (np.eye(3), (0.2, 0, 0.15) if parent else (0.3, 0, 0)), 0.5, (0, 0, 0.1),
                   0.5 * inertia)
        parent = f"b{k}"
    m = b.build()
    q = np.zeros(m.nq)
    q[:4] = [0.2, -0.1, 0.3, 0.1]
    R, p = body_placements(m, q)
    io, ib = m.body_index("obj"), m.body_index(parent)
    grip = (R[io].T @ R[ib], tuple(R[io].T @ (p[ib] - p[io])))
    s = ConstrainedSystem(m, [LoopClosure(parent, "obj", kind, frame_b=grip, name="grip")])
    v = np.zeros(s.nv)
    v[:3] = [1.0, -0.5, 0.8]
    start = consistent_initial_values(s, q, v)
    return s, start.q, start.v


@pytest.mark.parametrize("kind", ["weld", "revolute"])
def test_two_arms_gripping_one_object_by_a_weld_or_a_revolute_closure(kind):
    """Loop closures of kind weld (6 rows) and revolute (5): E, g and G v kept over 0.6 s.
    Both runs stopped at t ≈ 0.484 s before SETTLE (a fresh Newton matrix judged on its
    second update, from a predicted λ far off), though the iteration then contracts."""
    s, q0, v0 = two_arms_gripping(kind)
    tr = kd.simulate(s, q0, v0, 0.6, method="energy_momentum", dt=1e-3)
    E = tr.energy
    assert np.abs(E - E[0]).max() <= 1e-12 * np.abs(E).max()
    assert np.abs(tr.stats["residual_g"]).max() <= 1e-12
    assert np.abs(tr.stats["residual_Gv"]).max() <= 1e-10
    assert np.ptp(tr.q, axis=0).max() > 0.5  # the mechanism moves


def test_one_compiled_specialisation():
    """The loop runs on one numba specialisation whatever the joints (C arrays, the same
    argument types): a ball joint adds none."""
    assert len(cemc.cem_run.signatures) <= 1


def test_the_slow_step_rule_is_the_references():
    """Both rebuild the Newton matrix (and the base ∂γ/∂x with it) after the same steps:
    a step's result depends on it, and the rule must not hang on round-off."""
    from kanedyn.integrators.constrained_energy_momentum import SLOW

    assert (cemc.SLOW_LEVEL, cemc.SLOW_ITERATIONS) == SLOW


def test_newton_failure_on_a_ball_joint_loop_reads_as_the_python_steps():
    s, q0, v0, _, _ = _rssr()
    messages = []
    for compiled in (True, False):
        with pytest.raises(SolverError, match=r"Newton failed at step 0 \(t = 0, h = 0\.02\)"
                                              r".*residual .* in .*Reduce dt") as e:
            kd.simulate(s, q0, v0, 0.1, method="energy_momentum", dt=0.02, maxiter=2,
                        compiled=compiled)
        messages.append(str(e.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("build", [_rssr, _floating_rssr, _stewart],
                         ids=["ball", "free-and-ball", "free"])
def test_compiled_charts_equal_the_model_chart(build):
    """system_kernel's charts against integrators/chart.py's ModelChart (the joints' own
    chart_* methods): φ_n(x), Jᵀy, J y, J⁻¹y, J⁻ᵀy and Dᵀy, from x near 0 to |x| = O(1)."""
    from kanedyn.constraints import system_kernel as sk
    from kanedyn.dynamics.flat import flatten
    from kanedyn.integrators.chart import make_chart

    s, q0, _, _, _ = build()
    data = flatten(s.model).data
    chart = make_chart(s)
    rng = np.random.default_rng(7)
    for scale in (1e-9, 0.3, 2.0):
        x, w, y = (rng.normal(size=s.nv) * scale, rng.normal(size=s.nv),
                   rng.normal(size=s.nv))
        q = np.empty(s.nq)
        sk.chart_point(data, q0, x, q)
        np.testing.assert_allclose(q, chart.point(q0, x), rtol=0, atol=1e-15)
        Jb = np.zeros((data.shape[0] - 1, 18))
        sk.chart_blocks(data, x, Jb)
        J, D = chart.jacobian(q0, x), chart.derivative(q0, x, w)
        out = np.empty(s.nv)
        for fn, expected in ((sk.chart_jt_times, J.T @ y), (sk.chart_j_times, J @ y),
                             (sk.chart_j_solve,
                                                             np.linalg.solve(J, y)),
                             (sk.chart_jt_solve, np.linalg.solve(J.T, y))):
            fn(data, Jb, y, out)
            np.testing.assert_allclose(out, expected, rtol=0, atol=1e-14)
        out[:] = 1.0
        sk.chart_derivative_t_sub(data, Jb, x, w, y, out)
        np.testing.assert_allclose(out, 1.0 - D.T @ y, rtol=0, atol=1e-14)
        # J z and Jᵀ y of the compiled blocks are each other's transposes: yᵀ(J z) = (Jᵀy)ᵀz
        Jz, Jty = np.empty(s.nv), np.empty(s.nv)
        sk.chart_j_times(data, Jb, w, Jz)
        sk.chart_jt_times(data, Jb, y, Jty)
        assert abs(y @ Jz - Jty @ w) <= 1e-14 * np.abs(y).sum() * np.abs(Jz).sum()


def test_a_constant_wrench_runs_in_the_loop(four_bar, monkeypatch):
    """A constant local wrench on the coupler and a damper: the compiled loop (the wrench's
    row, τ = Jᵀf of the tree at q + Δq/2) against the Python steps to 1e-11, W_nc with it,
    and the budget E − E₀ − W_nc at round-off while the wrench does work."""
    from kanedyn.forces import ExternalWrench, JointDamper

    s, q0, v0 = four_bar
    fs = [ExternalWrench("coupler", [0.0, 0.0, 0.3, 0.5, -0.4, 0.0]),
          JointDamper("rocker_pin", 0.2)]
    ran = []
    real = cemc.run
    monkeypatch.setattr(cemc, "run", lambda m: ran.append(real(m)) or ran[-1])
    a = kd.simulate(s, q0, v0, 0.2, method="energy_momentum", dt=1e-3, forces=fs)
    assert ran and ran[-1] is not None  # the compiled loop took the run
    b = kd.simulate(s, q0, v0, 0.2, method="energy_momentum", dt=1e-3, forces=fs,
                    compiled=False)
    assert np.abs(a.q - b.q).max() < 1e-11
    scale = max(np.abs(b.energy).max(), np.abs(b.work_nc).max())
    assert np.abs(a.work_nc - b.work_nc).max() < 1e-11 * scale
    assert abs(a.work_nc[-1]) > 1e-3 * scale
    assert np.abs(a.budget).max() <= 1e-11 * scale


def _plate_rocker():
    """A plate on a planar joint in the vertical x–y plane (gravity −y) whose point
    (0.3, 0) is pinned to the tip of a rocker hinged at (0.6, 0) (a point closure on x, y):
    4 speeds, 2 rows, the plate turning in its chart (issue 17)."""
    from kanedyn.model.joints import Planar

    b = kd.ModelBuilder("plate_rocker", gravity=(0.0, -9.81, 0.0))
    b.add_body("plate", None, Planar("plane"), None, 2.0, (0.2, 0.05, 0.0),
               np.diag([0.02, 0.03, 0.05]))
    b.add_body("rocker", None, Revolute("pin", axis=(0, 0, 1)), (np.eye(3), (0.6, 0.0, 0.0)),
               1.0, (0.2, 0.0, 0.0), np.diag([0.001, 0.013, 0.013]))
    loop = LoopClosure("rocker", "plate", "point", frame_a=(np.eye(3), (0.4, 0.0, 0.0)),
                       frame_b=(np.eye(3), (0.3, 0.0, 0.0)), axes=(0, 1), name="plate pin")
    s = ConstrainedSystem(b.build(), [loop], name="plate_rocker")
    a, th = 0.8, 0.3  # rocker angle, plate angle: the plate's point on the rocker's tip
    p = np.array([0.6 + 0.4 * np.cos(a) - 0.3 * np.cos(th), 0.4 * np.sin(a) - 0.3 * np.sin(th)])
    cs = consistent_initial_values(s, np.array([p[0], p[1], th, a]),
                                   np.array([0.3, -0.2, 2.0, 1.5]))
    return s, cs.q, cs.v


@pytest.mark.parametrize("method", ["energy_momentum", "avf"])
def test_compiled_steps_agree_with_the_python_steps_on_a_planar_joint(method, monkeypatch):
    """A planar joint in the compiled loop (compiled_chart_form takes it: system_kernel's
    charts know its block, diag(R(−ψ), 1), and D's ψ column), 200 steps against the Python
    steps in the joint's own chart (ModelChart). Measured: q to 8e-15, v to 3e-14 and λ to
    4e-13 relative; held to the bounds of the ball- and free-joint test above."""
    s, q0, v0 = _plate_rocker()
    assert s.compiled_form() is None and s.compiled_chart_form() is not None
    ran = []
    real = cemc.run
    monkeypatch.setattr(cemc, "run", lambda m: ran.append(real(m)) or ran[-1])
    a = kd.simulate(s, q0, v0, 0.2, method=method, dt=1e-3)
    assert ran and ran[-1] is not None  # the compiled loop took the run
    b = kd.simulate(s, q0, v0, 0.2, method=method, dt=1e-3, compiled=False)
    assert len(a.t) == len(b.t) == 201
    assert np.ptp(b.q[:, 2]) > 0.3  # the plate turns: its chart is not additive
    assert np.abs(a.q - b.q).max() < 1e-12
    assert np.abs(a.v - b.v).max() < 1e-12 * np.abs(b.v).max()
    assert np.abs(a.stats["lam"] - b.stats["lam"]).max() < 1e-10 * np.abs(b.stats["lam"]).max()
    E = s.energy(a.q, a.v)
    assert np.abs(E - E[0]).max() <= 1e-12 * np.abs(E).max()
    assert np.abs(a.stats["residual_g"]).max() <= 1e-12
    assert np.abs(a.stats["residual_Gv"]).max() <= 1e-12
