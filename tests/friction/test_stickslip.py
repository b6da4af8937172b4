"""Exact stick–slip against closed-form results: the block on an incline, the Coulomb
oscillator, the mass on a moving belt; smoothed creep against its derived scaling;
the energy budget."""

import math

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import FrictionError, friction
from kanedyn.model.joints import Prismatic

G = 9.81


def incline(theta: float, m: float = 1.0) -> kd.Model:
    """A block on a slide inclined by theta (joint axis up the slope)."""
    b = kd.ModelBuilder("incline")
    b.add_body("block", None, Prismatic("slide", axis=(math.cos(theta), 0.0, math.sin(theta))),
               mass=m, inertia=np.eye(3) * 0.01)
    return b.build()


def slider(m: float = 1.0) -> kd.Model:
    b = kd.ModelBuilder("slider", gravity=(0.0, 0.0, 0.0))
    b.add_body("block", None, Prismatic("x", axis=(1.0, 0.0, 0.0)), mass=m,
               inertia=np.eye(3) * 0.01)
    return b.build()


MU_S, MU_K = 0.5, 0.4


def incline_law(theta):
    N = G * math.cos(theta)
    return friction.Stribeck(MU_K * N, MU_S * N, 0.01, 2.0, 0.0)


@pytest.mark.parametrize("ratio", [0.95, 0.999])
def test_block_below_static_coefficient_stays_exactly_put_for_10_s(ratio):
    theta = math.atan(ratio * MU_S)                 # tan θ below μs (and above μk)
    tr = friction.simulate(incline(theta), [0.0], [0.0], 10.0, {"slide": incline_law(theta)})
    assert tr.t[-1] == pytest.approx(10.0)
    assert np.max(np.abs(tr.v)) <= 1e-12 and np.max(np.abs(tr.q)) <= 1e-12
    assert np.all(tr.v == 0.0) and np.all(tr.q == 0.0)          # not a bit of creep
    assert [s.kind for s in tr.friction.switches] == ["stick"]
    # the holding force is the slope component of gravity, m g sin θ, pushing up the slope
    np.testing.assert_allclose(tr.friction.force[:, 0], G * math.sin(theta), rtol=1e-12)


@pytest.mark.parametrize("ratio", [1.05, 1.001])
def test_block_above_static_coefficient_slides_between_the_coulomb_bounds(ratio):
    theta = math.atan(ratio * MU_S)
    tr = friction.simulate(incline(theta), [0.0], [0.0], 2.0, {"slide": incline_law(theta)})
    assert tr.friction.switches[0].kind == "slip" and tr.friction.switches[0].direction == -1
    assert tr.friction.switches[0].t == 0.0 and len(tr.friction.switches) == 1
    # friction lies between μk N and μs N, so the slide is bounded by constant-acceleration runs
    a_min = G * (math.sin(theta) - MU_S * math.cos(theta))
    a_max = G * (math.sin(theta) - MU_K * math.cos(theta))
    d = -tr.q[-1, 0]
    assert 0.5 * a_min * 4.0 < d < 0.5 * a_max * 4.0
    assert np.max(np.abs(tr.budget)) < 1e-8


def test_coulomb_oscillator_matches_closed_form():
    """m ẍ + k x = -Fc sgn ẋ from rest at X0: each half period π√(m/k) the amplitude
    drops by 2Fc/k; the mass stops for good at the first turning point with
    k|x| <= Fs. With Fs = 1.3 Fc it stops at x2 = X0 - 4Fc/k at t = 2π (with Fs = Fc it
    would go on), so the breakaway level and the switch times are both tested."""
    m, k, Fc, Fs, X0 = 1.0, 1.0, 1.0, 1.3, 5.2
    law = friction.Stribeck(Fc, Fs, 1e-9, 2.0, 0.0)       # Fs only right at v = 0
    tr = friction.simulate(slider(m), [X0], [0.0], 9.0, {"x": law},
                           tau=lambda t, q, v: -k * q)
    kinds = [(s.kind, s.direction) for s in tr.friction.switches]
    assert kinds == [("slip", -1), ("reverse", 1), ("stick", 0)]
    T = math.pi * math.sqrt(m / k)
    np.testing.assert_allclose([s.t for s in tr.friction.switches], [0.0, T, 2 * T], atol=1e-7)
    x_stop = X0 - 4 * Fc / k
    assert tr.q[-1, 0] == pytest.approx(x_stop, abs=1e-7)
    after = tr.t > 2 * T + 1e-6
    assert np.all(tr.v[after] == 0.0) and np.ptp(tr.q[after]) == 0.0
    # dissipated heat = Fc × path length = Fc (|X0 - x1| + |x1 - x2|)
    x1 = -(X0 - 2 * Fc / k)
    assert tr.friction.dissipated[-1] == pytest.approx(Fc * ((X0 - x1) + (x_stop - x1)), rel=1e-6)
    assert np.max(np.abs(tr.budget)) < 1e-8


def _belt(Fs, t_final=40.0):
    law = friction.Stribeck(1.0, Fs, 0.05, 2.0, 0.5)
    return friction.simulate(slider(), [0.0], [0.0], t_final, {"x": law},
                             tau=lambda t, q, v: -1.0 * q, surface_velocity={"x": 0.1},
                             dt_out=0.02, rtol=1e-9, atol=1e-11)


def test_belt_stick_slip_limit_cycle_with_negative_stribeck_slope():
    """Steady sliding at the belt speed 0.1 has slope F'(w) = g'(0.1) + Fv
    = -0.5·2·0.1/0.05²·e⁻⁴ + 0.5 ≈ -0.23 < 0: negative damping, so the equilibrium
    is unstable and a stick–slip cycle grows; the block sticks to the belt every period."""
    tr = _belt(1.5)
    late = [s for s in tr.friction.switches if s.t > 15.0]
    assert sum(s.kind == "stick" for s in late) >= 2 and sum(s.kind == "slip" for s in late) >= 2
    w = tr.t > 20.0
    stuck = tr.friction.mode[w, 0] == 0
    np.testing.assert_array_equal(tr.v[w][stuck, 0], 0.1)       # stuck = moving with the belt
    assert np.ptp(tr.v[w, 0]) > 0.2                            # a large cycle, not a wobble
    # it breaks away where the spring reaches Fs: k x = Fs
    for s in late:
        if s.kind == "slip":
            i = np.searchsorted(tr.t, s.t)
            assert tr.q[i - 1, 0] == pytest.approx(1.5, rel=1e-3)
    assert np.max(np.abs(tr.budget)) < 1e-7


def test_belt_limit_cycle_disappears_when_Fs_equals_Fc():
    """With Fs = Fc the slope is +Fv = 0.5 > 0: damped, the block settles to steady
    sliding at x = (Fc + Fv·0.1)/k, v = 0, and never sticks again."""
    tr = _belt(1.0)
    assert all(s.t < 20.0 for s in tr.friction.switches)
    w = tr.t > 30.0
    assert np.max(np.abs(tr.v[w, 0])) < 1e-3
    assert np.max(np.abs(tr.q[w, 0] - (1.0 + 0.5 * 0.1))) < 1e-3
    assert np.all(tr.friction.mode[w, 0] == -1)           # sliding backward on the belt


@pytest.mark.parametrize("kind", ["tanh", "sqrt"])
def test_smoothed_creep_matches_derived_velocity_and_scales_with_eps(kind):
    """Smoothing lets the held block creep at the speed where Fs σ(v) = m g sin θ:
    v = ε artanh(r) (tanh) or ε r/√(1-r²) (sqrt), r = tan θ/μs: linear in ε."""
    theta = math.atan(0.8 * MU_S)
    r = math.tan(theta) / MU_S
    creep = {}
    for eps in (1e-4, 5e-5):
        law = incline_law(theta).smoothed(kind, eps)
        tr = friction.simulate(incline(theta), [0.0], [0.0], 0.5, {"slide": law},
                               rtol=1e-9, atol=1e-14)
        creep[eps] = -tr.v[-1, 0]
        expect = eps * (math.atanh(r) if kind == "tanh" else r / math.sqrt(1 - r * r))
        # g(v) = Fs (1 - O((v/vs)²)) with v/vs ~ 1e-2 shifts the root by ~1e-4 relative
        assert creep[eps] == pytest.approx(expect, rel=2e-3)
        assert tr.q[-1, 0] < -0.4 * creep[eps] * 0.5          # it really moved
    assert creep[1e-4] / creep[5e-5] == pytest.approx(2.0, rel=1e-3)


def test_two_joint_pendulum_stuck_joints_do_not_move_and_budget_closes():
    model = kd.models.pendulum_chain(2)
    laws = {"joint1": friction.Stribeck(2.0, 3.0, 0.05, 2.0, 0.1),
            "joint2": friction.Stribeck(0.5, 0.8, 0.05, 2.0, 0.05)}
    tr = friction.simulate(model, [1.2, -0.4], [0.0, 0.0], 4.0, laws, dt_out=0.01)
    assert {s.kind for s in tr.friction.switches} >= {"stick", "slip"}
    for c, j in enumerate(tr.friction.joints):
        stuck = tr.friction.mode[:, c] == 0
        assert np.all(tr.v[stuck, j] == 0.0)
        assert np.all(np.abs(tr.friction.force[stuck, c]) <= laws[f"joint{j + 1}"].Fs * (1 + 1e-9))
    # every joint that starts sliding from rest moves the way its mode says
    for sw in tr.friction.switches:
        if sw.kind in ("slip", "reverse"):
            i = np.searchsorted(tr.t, sw.t, side="right")
            if i < tr.t.size:
                assert tr.v[i, sw.joint] * sw.direction > 0, sw
    assert np.all(np.diff(tr.friction.dissipated) >= -1e-12)
    assert np.max(np.abs(tr.budget)) < 1e-7


def test_simulate_bad_input():
    model = slider()
    law = friction.Stribeck(1.0, 1.5, 0.01)
    with pytest.raises(FrictionError, match="no friction joints"):
        friction.simulate(model, [0.0], [0.0], 1.0, {})
    with pytest.raises(kd.KanedynError, match="nope"):
        friction.simulate(model, [0.0], [0.0], 1.0, {"nope": law})
    with pytest.raises(FrictionError, match="not a friction law"):
        friction.simulate(model, [0.0], [0.0], 1.0, {"x": 1.0})
    with pytest.raises(FrictionError, match="Karnopp band.*time_stepping.*give Stribeck"):
        friction.simulate(model, [0.0], [0.0], 1.0, {"x": friction.Karnopp(law, 1e-3)})
    with pytest.raises(FrictionError, match="t_final"):
        friction.simulate(model, [0.0], [0.0], -1.0, {"x": law})
    with pytest.raises(kd.StateError, match="v0 has 2 entries"):
        friction.simulate(model, [0.0], [0.0, 1.0], 1.0, {"x": law})
    with pytest.raises(kd.StateError, match="q0 contains NaN"):
        friction.simulate(model, [np.nan], [0.0], 1.0, {"x": law})
    from kanedyn.forces import JointFriction

    with pytest.raises(FrictionError, match="exact friction goes in joints"):
        friction.simulate(model, [0.0], [0.0], 1.0, {"x": law},
                          forces=[JointFriction("x", law)])
    with pytest.raises(FrictionError, match="lacks"):
        friction.simulate(object(), [0.0], [0.0], 1.0, {0: law})


def test_result_is_a_sim_trajectory_whose_budget_is_the_friction_residual(tmp_path):
    """One trajectory type: friction.simulate gives a kd.Trajectory, whose W_nc is the
    friction's work plus the other work, so that its budget is E − E₀ − W_f − W_other; the
    same run by kd.simulate(method="stickslip") with the law as a JointFriction element
    has the same bits."""
    from kanedyn.forces import JointFriction

    theta = math.atan(1.05 * MU_S)
    tr = friction.simulate(incline(theta), [0.0], [0.0], 0.5, {"slide": incline_law(theta)},
                           dt_out=0.05)
    assert isinstance(tr, kd.Trajectory) and tr.method == "stickslip"
    f = tr.friction
    np.testing.assert_allclose(tr.budget, tr.energy - tr.energy[0] - f.work - f.other_work,
                               rtol=0, atol=1e-15)
    np.testing.assert_array_equal(tr.stats["switch_times"], f.switch_times())
    assert abs(tr.energy[-1] - tr.energy[0]) > 0.1      # it slid and lost height
    tr.save(tmp_path / "run.npz")
    assert (tmp_path / "run.npz").exists()
    via = kd.simulate(incline(theta), [0.0], [0.0], 0.5, method="stickslip", dt=0.05,
                      forces=[JointFriction("slide", incline_law(theta))])
    np.testing.assert_array_equal(via.q, tr.q)
    np.testing.assert_array_equal(via.friction.force, f.force)
    assert via.friction.switches == f.switches


def test_stuck_joint_breaks_away_when_a_time_varying_load_reaches_Fs():
    """A stuck state does not move, so only the load's time dependence ends the phase:
    under 2 sin(2πt) N the block must break free at 2 sin(2πt) = Fs, i.e. at
    t = asin(Fs/2)/(2π), and (the next time it stops) at 1/2 + that for the reverse load."""
    law = friction.Stribeck(1.0, 1.5, 0.01, 2.0, 0.1)
    drive = lambda t, q, v: np.array([2.0 * math.sin(2 * math.pi * t)])
    tr = friction.simulate(slider(), [0.0], [0.0], 1.0, {"x": law}, tau=drive)
    slips = [s for s in tr.friction.switches if s.kind == "slip"]
    t1 = math.asin(0.75) / (2 * math.pi)
    assert slips[0].t == pytest.approx(t1, abs=1e-9) and slips[0].direction == 1
    assert slips[1].t == pytest.approx(0.5 + t1, abs=1e-9) and slips[1].direction == -1
    assert np.max(np.abs(tr.budget)) < 1e-8


def test_lugre_joint_in_simulation_presliding_and_sliding():
    """LuGre on a slider under a slow load ramp f(t) = 0.8 Fs t. For v > 0 with |v| ≪ vs
    (g ≈ Fs) the bristle obeys dz/dx = 1 - σ0 z/Fs, so z = (Fs/σ0)(1 - exp(-σ0 x/Fs)):
    the pre-sliding force σ0 z is a spring of stiffness σ0 for small x, softening
    towards breakaway, and quasi-statically σ0 z + σ1 ż balances the load. A load above
    Fs slides at the Coulomb level."""
    Fc, Fs, s0 = 1.0, 1.5, 1e5
    lg = friction.LuGre(sigma0=s0, sigma1=2 * math.sqrt(s0), Fc=Fc, Fs=Fs, vs=0.01)
    ramp = lambda t, q, v: np.array([0.8 * Fs * t])
    tr = friction.simulate(slider(), [0.0], [0.0], 1.0, {"x": lg}, tau=ramp, dt_out=0.01,
                           rtol=1e-10, atol=1e-15)
    x, z = tr.q[:, 0], tr.friction.z[:, 0]
    late = tr.t > 0.05
    np.testing.assert_allclose(z[late], (Fs / s0) * (1 - np.exp(-s0 * x[late] / Fs)),
                               rtol=1e-3)
    assert z[5] == pytest.approx(x[5], rel=0.02)                    # small load: z ≈ x
    f = 0.8 * Fs * tr.t
    np.testing.assert_allclose(-tr.friction.force[late, 0], f[late], rtol=1e-2)   # holds the load
    assert np.max(np.abs(tr.v[:, 0])) < 1e-2 * lg.vs               # never really sliding
    assert x[-1] > 1.5 * 0.8 * Fs / s0                              # softer than linear
    push = lambda t, q, v: np.array([2.0])
    tr2 = friction.simulate(slider(), [0.0], [0.0], 1.0, {"x": lg}, tau=push, rtol=1e-9,
                            atol=1e-14)
    assert tr2.vdot[-1, 0] == pytest.approx(2.0 - Fc, rel=1e-3)   # g(v) → Fc once sliding
    assert np.max(np.abs(tr2.budget)) < 1e-6


def test_kane_system_and_model_give_the_same_stick_slip():
    """The simulator only uses the system protocol: a compiled Kane system of the same
    pendulum reproduces the Model's switch times and final state."""
    from kanedyn import kane

    model = kd.models.pendulum_chain(1)
    fast = kane.derive(model).compile()
    law = friction.Stribeck(0.3, 0.45, 0.05, 2.0, 0.2)
    a = friction.simulate(model, [1.0], [0.0], 1.8, {"joint1": law})
    b = friction.simulate(fast, [1.0], [0.0], 1.8, {0: law})
    assert len(a.friction.switches) >= 3
    assert [s.kind for s in a.friction.switches] == [s.kind for s in b.friction.switches]
    np.testing.assert_allclose([s.t for s in a.friction.switches],
                               [s.t for s in b.friction.switches], atol=1e-8)
    np.testing.assert_allclose(a.q[-1], b.q[-1], atol=1e-8)
