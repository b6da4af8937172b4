"""The event-driven stick–slip run on kanedyn's DOPRI5: the compiled loop
(sim/stickslip_compiled.py) against its Python reference (sim/stickslip_events.py) step
for step, the reference against the solve_ivp path, and the compiled loop against closed
forms (Coulomb oscillator, block on a belt, break-away under a sinusoidal load), zero creep
of a held arm and the energy budget."""

import math

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import friction
from kanedyn.forces import (
    ExternalWrench,
    JointDamper,
    JointFriction,
    JointSpring,
    SinusoidalTorque,
)
from kanedyn.model.joints import Free, Prismatic, Revolute


def slider(m: float = 1.0) -> kd.Model:
    b = kd.ModelBuilder("slider", gravity=(0.0, 0.0, 0.0))
    b.add_body("block", None, Prismatic("x", axis=(1.0, 0.0, 0.0)), mass=m,
               inertia=np.eye(3) * 0.01)
    return b.build()


def arm():
    """The 7-link arm of bench/friction.py: held at q0 by Fs = 1.2 |g(q0)| + 0.3, loaded
    by 0.5 Fs sin(2π t + 0.7 k) (it sticks and slips)."""
    model = kd.models.pendulum_chain(7, planar=False, length=0.3, mass=1.0, radius=0.1)
    names = model.joint_names
    q0 = np.linspace(0.9, 0.3, 7)
    Fs = 1.2 * np.abs(kd.gravity_torques(model, q0)) + 0.3
    loads = [SinusoidalTorque(j, 0.5 * f, 1.0, phase=0.7 * k)
             for k, (j, f) in enumerate(zip(names, Fs, strict=True))]
    held = [JointFriction(j, friction.Stribeck(0.7 * f, f, 0.05, 2.0, 0.05))
            for j, f in zip(names, Fs, strict=True)]
    return model, q0, loads, held


def assert_same_run(a, b, tol=1e-12, tol_t=1e-12):
    """Two runs step for step: the same samples, states and switches to round-off (a the
    compiled loop's, b the reference's)."""
    assert a.stats["compiled"] is True and b.stats["compiled"] is False
    assert a.stats["steps"] == b.stats["steps"]
    assert a.t.size == b.t.size
    np.testing.assert_allclose(a.t, b.t, rtol=0, atol=tol_t)
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=tol)
    np.testing.assert_allclose(a.v, b.v, rtol=0, atol=tol)
    np.testing.assert_array_equal(a.friction.mode, b.friction.mode)
    np.testing.assert_allclose(a.friction.force, b.friction.force, rtol=0, atol=10 * tol)
    np.testing.assert_allclose(a.energy, b.energy, rtol=0, atol=tol)
    np.testing.assert_allclose(a.work_nc, b.work_nc, rtol=0, atol=tol)
    sa, sb = a.friction.switches, b.friction.switches
    assert [(s.joint, s.kind, s.direction) for s in sa] == \
        [(s.joint, s.kind, s.direction) for s in sb]
    np.testing.assert_allclose([s.t for s in sa], [s.t for s in sb], rtol=0, atol=tol)


def test_compiled_equals_reference_on_the_arm_step_for_step():
    """Sampled on a grid (dense output) the two agree to round-off. At the accepted steps
    themselves the step sizes may differ by ~1e-9 relative: the error estimate is a
    difference of stage rates (cancellation), and 0.9 en^-1/5 carries its round-off into
    h, so there the times agree to ~1e-12 and the speeds to |v̇| times that."""
    model, q0, loads, held = arm()
    opts = dict(method="stickslip", forces=loads + held, rtol=1e-8, atol=1e-10,
                stick_step=2e-3)
    grid = [kd.simulate(model, q0, np.zeros(7), 0.2, dt=1e-3, compiled=c, **opts)
            for c in (True, False)]
    assert len(grid[0].friction.switches) >= 5            # it sticks and slips
    assert {s.kind for s in grid[0].friction.switches} >= {"stick", "slip"}
    assert_same_run(*grid)
    steps = [kd.simulate(model, q0, np.zeros(7), 0.2, compiled=c, **opts) for c in (True, False)]
    assert steps[0].t.size > 100
    assert_same_run(*steps, tol=1e-10, tol_t=1e-11)
    # the energy budget over 2 s of sticking and slipping (in this test: one compilation
    # of the loop serves both checks)
    tr = kd.simulate(model, q0, np.zeros(7), 2.0, method="stickslip", forces=loads + held,
                     rtol=1e-10, atol=1e-12)
    assert len(tr.friction.switches) > 20
    fr = tr.friction
    assert fr.dissipated[-1] > 0 and np.all(np.diff(fr.dissipated) >= -1e-12)
    assert np.max(np.abs(tr.budget)) < 1e-8 * (1 + np.max(np.abs(tr.energy)))


def test_compiled_equals_reference_on_a_belt_with_dense_output():
    law = friction.Stribeck(1.0, 1.5, 0.05, 2.0, 0.5)
    forces = [JointSpring("x", 1.0), JointFriction("x", law, surface_velocity=0.1)]
    runs = [kd.simulate(slider(), [0.0], [0.0], 25.0, method="stickslip", dt=0.05,
                        forces=forces, compiled=c, rtol=1e-9, atol=1e-11) for c in (True, False)]
    assert sum(s.kind == "stick" for s in runs[0].friction.switches) >= 2
    assert runs[0].t.size == int(round(25.0 / 0.05)) + 1
    assert_same_run(*runs)


def test_out_of_scope_cases_keep_the_solve_ivp_path():
    """A tau= function (or ivp_method=) runs the segments by solve_ivp, as before."""
    law = friction.Stribeck(1.0, 1.3, 0.01, 2.0, 0.0)
    via_tau = kd.simulate(slider(), [1.0], [0.0], 0.5, method="stickslip",
                          forces=[JointFriction("x", law)], tau=lambda t, q, v: -q)
    via_ivp = kd.simulate(slider(), [1.0], [0.0], 0.5, method="stickslip",
                          forces=[JointFriction("x", law), JointSpring("x", 1.0)],
                          ivp_method="DOP853")
    compiled = kd.simulate(slider(), [1.0], [0.0], 0.5, method="stickslip",
                           forces=[JointFriction("x", law), JointSpring("x", 1.0)])
    assert "compiled" not in via_tau.stats and "compiled" not in via_ivp.stats
    assert compiled.stats["compiled"] is True


def test_reference_matches_the_solve_ivp_path():
    """Two integrators (DOPRI5 here, scipy's DOP853 there) on the same modes and rules:
    the switches agree to the tolerance, and so do the states on the output grid."""
    model = kd.models.pendulum_chain(2)
    laws = {"joint1": friction.Stribeck(2.0, 3.0, 0.05, 2.0, 0.1),
            "joint2": friction.Stribeck(0.5, 0.8, 0.05, 2.0, 0.05)}
    forces = [JointFriction(j, law) for j, law in laws.items()]
    opts = dict(method="stickslip", forces=forces, dt=0.01, rtol=1e-11, atol=1e-13)
    ref = kd.simulate(model, [1.2, -0.4], [0.0, 0.0], 3.0, compiled=False, **opts)
    ivp = kd.simulate(model, [1.2, -0.4], [0.0, 0.0], 3.0, ivp_method="DOP853", **opts)
    sr, si = ref.friction.switches, ivp.friction.switches
    assert len(sr) >= 4
    assert [(s.joint, s.kind, s.direction) for s in sr] == \
        [(s.joint, s.kind, s.direction) for s in si]
    np.testing.assert_allclose([s.t for s in sr], [s.t for s in si], rtol=0, atol=1e-7)
    np.testing.assert_allclose(ref.q, ivp.q, rtol=0, atol=1e-7)
    np.testing.assert_allclose(ref.v, ivp.v, rtol=0, atol=1e-6)


def coulomb_oscillator_turning_points(X0, m, k, Fc, Fs):
    """m ẍ + k x = −Fc sgn ẋ from rest at X0: each half period the mass swings about
    ±Fc/k to the mirror point, |x| dropping by 2Fc/k; it stays at the first turning point
    where k|x| <= Fs. [(t, x)] of the turning points, the last the stop."""
    T2 = math.pi * math.sqrt(m / k)
    out, x, t = [], X0, 0.0
    while abs(k * x) > Fs:
        c = math.copysign(Fc / k, x)          # the centre of this half swing
        x, t = 2 * c - x, t + T2
        out.append((t, x))
    return out


def test_coulomb_oscillator_against_its_piecewise_harmonic_solution():
    m, k, Fc, Fs, X0 = 1.0, 1.0, 1.0, 1.3, 5.2
    law = friction.Stribeck(Fc, Fs, 1e-9, 2.0, 0.0)       # Coulomb (Fs only at v = 0)
    tr = kd.simulate(slider(m), [X0], [0.0], 9.0, method="stickslip", dt=0.01,
                     forces=[JointSpring("x", k), JointFriction("x", law)])
    turns = coulomb_oscillator_turning_points(X0, m, k, Fc, Fs)
    sw = tr.friction.switches
    assert [(s.kind, s.direction) for s in sw] == [("slip", -1), ("reverse", 1), ("stick", 0)]
    np.testing.assert_allclose([s.t for s in sw[1:]], [t for t, _ in turns], atol=1e-8)
    # x(t) = c + (x_turn − c) cos ω(t − t_turn) on each swing
    w = math.sqrt(k / m)
    x_ref = np.empty_like(tr.t)
    t_prev, x_prev = 0.0, X0
    for i, t in enumerate(tr.t):
        for tt, xx in turns:
            if t >= tt:
                t_prev, x_prev = tt, xx
        if t >= turns[-1][0]:
            x_ref[i] = turns[-1][1]
            continue
        c = math.copysign(Fc / k, x_prev)
        x_ref[i] = c + (x_prev - c) * math.cos(w * (t - t_prev))
    np.testing.assert_allclose(tr.q[:, 0], x_ref, rtol=0, atol=1e-8)
    assert tr.q[-1, 0] == turns[-1][1] or abs(tr.q[-1, 0] - turns[-1][1]) < 1e-8
    assert np.max(np.abs(tr.budget)) < 1e-8


def test_block_on_a_belt_against_its_closed_form_cycle():
    """m ẍ + k x = −F(ẋ − vb), Coulomb friction Fc < Fs, from x = 0 moving with the belt:
    it rides the belt until k x = Fs (t1 = Fs/(k vb)), then slides with friction +Fc,
    x = Fc/k + (Fs − Fc)/k cos θ + vb/ω sin θ (θ = ω(t − t1)), and sticks again when
    ẋ = vb, at tan(θ/2) = −(Fs − Fc) ω/(k vb); then rides until k x = Fs again.

    The exact law is a Stribeck curve of tiny vs: at the break-away the net force is 0 and
    w grows as −k vb t²/2, so the friction stays near Fs for ~√(2 vs/(k vb)) (2e-7 s at
    vs = 1e-14), which shifts the re-stick position by O((Fs − Fc) √(vs/(k vb))) against
    the closed form's jump to Fc: measured 5e-9 here (1.6e-6 at vs = 1e-9), so 1e-7."""
    m, k, Fc, Fs, vb = 1.0, 1.0, 1.0, 1.5, 0.5
    w = math.sqrt(k / m)
    law = friction.Stribeck(Fc, Fs, 1e-14, 2.0, 0.0)
    tr = kd.simulate(slider(m), [0.0], [vb], 12.0, method="stickslip",
                     forces=[JointSpring("x", k), JointFriction("x", law, surface_velocity=vb)])
    t1 = Fs / (k * vb)
    th = 2 * math.pi - 2 * math.atan((Fs - Fc) * w / (k * vb))
    x_s = Fc / k + (Fs - Fc) / k * math.cos(th) + vb / w * math.sin(th)
    t2 = t1 + th / w
    t3 = t2 + (Fs / k - x_s) / vb
    sw = tr.friction.switches
    assert [(s.kind, s.direction) for s in sw] == [("stick", 0), ("slip", -1), ("stick", 0),
                                                   ("slip", -1)]
    np.testing.assert_allclose([s.t for s in sw], [0.0, t1, t2, t3], atol=1e-7)
    i2 = np.searchsorted(tr.t, sw[2].t)                 # the state at the re-stick
    assert tr.q[i2, 0] == pytest.approx(x_s, abs=1e-7)
    stuck = tr.friction.mode[:, 0] == 0
    np.testing.assert_array_equal(tr.v[stuck, 0], vb)    # riding the belt, exactly


def test_held_arm_does_not_creep_at_all():
    """Gravity only, every joint held (|g(q0)| < Fs): no joint moves, to the last bit."""
    model, q0, _, held = arm()
    tr = kd.simulate(model, q0, np.zeros(7), 5.0, method="stickslip", forces=held)
    assert tr.friction.stuck.all()
    assert np.all(tr.v == 0.0) and np.all(tr.q == q0)
    # the held forces balance gravity: M v̇ + h = τ_f with v̇ = 0, v = 0, h = g(q0)
    np.testing.assert_allclose(tr.friction.force[-1], kd.gravity_torques(model, q0),
                               rtol=1e-12, atol=1e-12)


def test_breakaway_when_a_sinusoidal_load_passes_Fs():
    """A held slider under τ = A sin(ω t) (a ramp at first) breaks away when τ reaches
    Fs, at t* = asin(Fs/A)/ω; the held force is exactly −τ until then."""
    A, om, Fs = 2.0, 1.0, 1.5
    law = friction.Stribeck(1.0, Fs, 0.01, 2.0, 0.0)
    tr = kd.simulate(slider(), [0.0], [0.0], 1.5, method="stickslip",
                     forces=[SinusoidalTorque("x", A, om / (2 * math.pi)),
                             JointFriction("x", law)])
    sw = tr.friction.switches
    assert [(s.kind, s.direction) for s in sw] == [("stick", 0), ("slip", 1)]
    assert sw[1].t == pytest.approx(math.asin(Fs / A) / om, abs=1e-10)
    before = tr.t < sw[1].t
    np.testing.assert_allclose(tr.friction.force[before, 0], -A * np.sin(om * tr.t[before]),
                               rtol=0, atol=1e-12)
    assert np.all(tr.q[before] == 0.0) and tr.v[-1, 0] > 0




def test_compiled_run_with_wrenches_equals_the_python_reference(monkeypatch, wrench_chain):
    """Exact Stribeck friction on two joints beside constant wrenches (their rows at each
    stage's q) and a damper: the compiled run against stickslip_events' Python reference —
    the same switches, the samples to 1e-9."""
    from kanedyn.sim import stickslip_compiled as ssc

    c = wrench_chain
    runs = []
    real = ssc.stickslip_run
    monkeypatch.setattr(ssc, "stickslip_run", lambda *a: runs.append(1) or real(*a))
    names = c.model.joint_names
    fs = [*c.elements(), JointFriction(names[0], friction.Stribeck(0.3, 0.5, 0.05, 2.0, 0.02)),
          JointFriction(names[2], friction.Stribeck(0.2, 0.3, 0.05, 2.0, 0.02))]
    fast = kd.simulate(c.model, c.q0, c.v0, 0.3, method="stickslip", dt=1e-2, forces=fs)
    assert runs == [1]
    ref = kd.simulate(c.model, c.q0, c.v0, 0.3, method="stickslip", dt=1e-2, forces=fs,
                      compiled=False)
    assert [(s.joint, s.kind) for s in fast.friction.switches] == \
        [(s.joint, s.kind) for s in ref.friction.switches]
    assert fast.friction.stuck.any()
    np.testing.assert_allclose(fast.q, ref.q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.work_nc, ref.work_nc, rtol=0, atol=1e-9)


def ball_elbow_case(t_final: float = 0.8):
    """kd.models.ball_elbow with exact Stribeck friction on its hinge (the elbow), a spring
    and a 2 Hz shaker on it, the shoulder (a quaternion) swinging with a damper on its
    three speeds, a constant wrench on the forearm: the elbow sticks and slips four times
    in 0.8 s."""
    model = kd.models.ball_elbow()
    law = friction.Stribeck(Fc=0.5, Fs=0.8, vs=0.05, Fv=0.1)
    q0 = np.array([math.cos(0.15), math.sin(0.15), 0.0, 0.0, 0.0])
    v0 = np.array([0.5, 2.0, 0.3, 0.0])
    forces = [JointSpring("elbow", 2.0), SinusoidalTorque("elbow", 0.9, 2.0),
              JointDamper("shoulder", 0.05), ExternalWrench("fore", [0.2, 0, 0, 0, 0.3, 0])]
    opts = dict(method="stickslip", joints={"elbow": law}, forces=forces)
    return model, q0, v0, t_final, opts


def stuck_runs(mode):
    """The [start, stop) sample ranges of each run of consecutive stuck samples."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mode == 0, [0]]).astype(int)))
    return list(zip(edges[::2], edges[1::2], strict=True))


def test_compiled_equals_reference_on_the_ball_elbow():
    """A tree with a ball joint (q̇ = ½ q ⊗ ω, integrated as the reference does, in q
    itself): the compiled loop against stickslip_events' Python reference, the same steps
    (the grid only samples their dense output), the same switches at the same times to
    1e-12, the samples to round-off (1e-11: the step sizes after a stuck phase carry the
    round-off of an error norm that is mostly round-off there, as on the arm). The held
    elbow does not creep, the budget E − E0 − W_friction − W_other closes with E
    = kd.kinetic_energy + kd.potential_energy + the spring's ½ k q², the quaternion stays
    unit to the tolerance."""
    model, q0, v0, T, opts = ball_elbow_case()
    grid = [kd.simulate(model, q0, v0, T, dt=1e-2, compiled=c, **opts) for c in (True, False)]
    assert_same_run(*grid, tol=1e-11)  # (measured: q 7e-14, speeds ~2 to 1.2e-12, E 1e-13)
    np.testing.assert_allclose([s.t for s in grid[0].friction.switches],
                               [s.t for s in grid[1].friction.switches], rtol=0, atol=1e-12)
    tr = grid[0]
    kinds = [s.kind for s in tr.friction.switches]
    assert kinds.count("stick") >= 4 and kinds.count("slip") >= 4
    runs = stuck_runs(tr.friction.mode[:, 0])
    assert len(runs) >= 4 and sum(b - a for a, b in runs) > 15
    for a, b in runs:                                   # held: v = 0 and q fixed, exactly
        assert np.all(tr.v[a:b, 3] == 0.0) and np.all(tr.q[a:b, 4] == tr.q[a, 4])
    E = (kd.kinetic_energy(model, tr.q, tr.v) + kd.potential_energy(model, tr.q)
         + 0.5 * 2.0 * tr.q[:, 4] ** 2)
    np.testing.assert_allclose(tr.energy, E, rtol=0, atol=1e-12)
    fr = tr.friction
    budget = E - E[0] - fr.work - fr.other_work
    assert np.max(np.abs(budget)) < 1e-8 * (1 + np.max(np.abs(E)))
    assert fr.dissipated[-1] > 0
    assert np.max(np.abs(np.linalg.norm(tr.q[:, :4], axis=1) - 1.0)) < 1e-10


def floating_hinge() -> kd.Model:
    """A free-floating base (no ground) with a link hinged to it about the base's z."""
    b = kd.ModelBuilder("floating_hinge")
    b.add_body("base", None, Free("root"), None, 2.0, (0, 0, 0), np.diag([0.05, 0.06, 0.07]))
    b.add_body("link", "base", Revolute("hinge", axis=(0, 0, 1)), (np.eye(3), (0.2, 0, 0)),
               0.5, (0.25, 0, 0), np.diag([0.002, 0.01, 0.01]))
    return b.build()


def test_compiled_equals_reference_on_a_floating_base_and_a_planar_cart():
    """Exact friction on the hinge of a free-floating base (free joint, with a damper on
    all six of its speeds) and of kd.models.planar_cart (planar joint): compiled against
    the Python reference, the same switches, the grid samples to 1e-9 (on the floating
    base the step sequences part by round-off after the first stuck phase, one step in
    500: 1e-11 measured); the budget closes and the quaternion stays unit. The loop's q̇
    (configuration_kernel.qdot_into) equals the joints' kinematic maps
    (kd.q_dot) on these trees and the ball-elbow."""
    from kanedyn.dynamics.flat import flatten
    from kanedyn.sim.configuration_kernel import qdot_into

    model = floating_hinge()
    rng = np.random.default_rng(3)
    for m in (model, kd.models.planar_cart(), kd.models.ball_elbow()):  # the loop's q̇
        q, v = kd.random_configuration(m, rng), rng.normal(size=m.nv)
        out = np.empty(m.nq)
        qdot_into(flatten(m).data, q, v, out)
        np.testing.assert_allclose(out, kd.q_dot(m, q, v), rtol=0, atol=1e-15)
    law = friction.Stribeck(Fc=0.05, Fs=0.08, vs=0.05, Fv=0.01)
    q0 = np.array([0.0, 0.0, 1.0, math.cos(0.2), 0.0, math.sin(0.2), 0.0, 0.0])
    v0 = np.array([0.3, -0.2, 1.0, 0.1, 0.0, 0.5, 0.0])
    cart = kd.models.planar_cart()
    cases = [(model, q0, v0, "hinge", law, [SinusoidalTorque("hinge", 0.1, 2.0),
                                            JointDamper("root", 0.01)]),
             (cart, np.array([0.0, 0.0, 0.1, 0.3]), np.array([0.5, 2.0, 1.0, 0.0]), "hinge",
              friction.Stribeck(Fc=0.2, Fs=0.3, vs=0.05, Fv=0.05),
              [SinusoidalTorque("hinge", 0.4, 2.0)])]
    for m, q, v, joint, jl, forces in cases:
        a, b = [kd.simulate(m, q, v, 0.6, dt=1e-2, method="stickslip", joints={joint: jl},
                            forces=forces, compiled=c) for c in (True, False)]
        assert a.stats["compiled"] is True and b.stats["compiled"] is False
        sa, sb = a.friction.switches, b.friction.switches
        assert [(s.kind, s.direction) for s in sa] == [(s.kind, s.direction) for s in sb]
        assert [s.kind for s in sa].count("stick") >= 3
        np.testing.assert_allclose([s.t for s in sa], [s.t for s in sb], rtol=0, atol=1e-9)
        np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-9)
        np.testing.assert_allclose(a.v, b.v, rtol=0, atol=1e-9)
        np.testing.assert_allclose(a.work_nc, b.work_nc, rtol=0, atol=1e-9)
        held = a.friction.stuck[:, 0]
        assert np.all(a.v[held, -1] == 0.0)
        E = kd.kinetic_energy(m, a.q, a.v) + kd.potential_energy(m, a.q)
        np.testing.assert_allclose(a.energy, E, rtol=0, atol=1e-12)
        assert np.max(np.abs(E - E[0] - a.work_nc)) < 1e-8 * (1 + np.max(np.abs(E)))
        if m is model:
            assert np.max(np.abs(np.linalg.norm(a.q[:, 3:7], axis=1) - 1.0)) < 1e-10
