"""verlet, avf and itoh_abe on ball, free and planar joints (local canonical charts).

- The chart pieces against finite differences: J(x) against the configuration map, its
  derivative D, the end velocity W = J x, the start sensitivity K, and ∂H/∂x, ∂H/∂p.
- avf and itoh_abe keep E to roundoff on a chain with a ball joint and on a free body
  (with gravity and an offset centre of mass), quaternions at unit norm; the budget closes
  with damping and a torque.
- verlet (variational form) keeps a bounded energy error without drift on a spherical
  pendulum, and the spatial momentum of a free body exactly (discrete Noether).
- Measured orders: 2, 2, 1.
- The compiled loops of avf and itoh_abe in the chart (integrators/avf_chart_compiled.py)
  against their Python steps, with and without force rows; their fallback and state guard.
"""

import importlib

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.errors import SolverError
from kanedyn.forces import (
    ExternalWrench,
    JointDamper,
    JointSpring,
    JointTorque,
    SinusoidalTorque,
)
from kanedyn.integrators.base import Problem
from kanedyn.integrators.chart import ChartHamiltonian, ModelChart
from kanedyn.model.joints import Free, Planar, Revolute, Spherical
from kanedyn.sim.system import ModelSystem

simulate_module = importlib.import_module("kanedyn.sim.simulate")


def _refuse(*args, **kwargs):
    raise AssertionError("the compiled loop handed the run to the Python steps")


def rel_energy_error(model, tr):
    """|E − E₀| relative to max(|E₀|, max T) (a falling body's E₀ can be near zero)."""
    E = tr.energy
    scale = max(abs(E[0]), float(np.max(kd.kinetic_energy(model, tr.q, tr.v))))
    return float(np.abs(E - E[0]).max() / scale)


def ball_elbow():
    """A ball-jointed upper arm and a hinged forearm (thick rods: M well conditioned)."""
    m = kd.models.ball_elbow()
    q0 = kd.neutral(m)
    q0[:4] = kd.integrate_configuration(m, q0, np.array([0.9, -0.4, 0.2, 0.0]), 1.0)[:4]
    q0[4] = 0.7
    return m, q0, np.array([0.3, 1.2, 2.0, -1.0])


def tossed_body(gravity=(0.0, 0.0, -9.81)):
    I = np.array([[0.2, 0.01, 0.02], [0.01, 0.3, -0.03], [0.02, -0.03, 0.25]])
    m = kd.models.free_body(mass=1.5, inertia=I, com=(0.1, -0.05, 0.2), gravity=gravity)
    return m, kd.neutral(m), np.array([1.0, 2.0, -0.5, 0.3, 0.1, 2.0])


def _free_ball_hinge_builder(name):
    """A free base, a ball-jointed body below it and a hinged one below that (bodies
    "base", "a", "c"): free_ball_hinge, and the start of the mixed tree."""
    b = kd.ModelBuilder(name)
    b.add_body("base", None, Free("f"), None, 2.0, (0.1, 0.2, -0.1), np.diag([0.2, 0.3, 0.25]))
    b.add_body("a", "base", Spherical("s"), (np.eye(3), (0, 0, -0.5)), 1.0, (0, 0, -0.3),
               np.diag([0.05, 0.06, 0.02]))
    b.add_body("c", "a", Revolute("r", axis=(1, 0, 0)), (np.eye(3), (0, 0, -0.6)), 0.5,
               (0, 0, -0.2), np.diag([0.02, 0.02, 0.01]))
    return b


# --------------------------------------------------------------------- the chart itself
@pytest.fixture(scope="module")
def mixed():
    """Every curved joint kind in one tree: free root, ball, hinge, planar."""
    b = _free_ball_hinge_builder("mixed")
    b.add_body("d", "c", Planar("p"), (np.eye(3), (0, 0, -0.4)), 0.4, (0.1, 0, 0),
               np.diag([0.01, 0.02, 0.03]))
    m = b.build()
    return m, ModelSystem(m), kd.random_configuration(m, np.random.default_rng(1))


@pytest.mark.parametrize("size", [1e-3, 0.4, 1.5])
def test_chart_pieces_against_differences(mixed, size):
    m, s, qn = mixed
    ch, nv = ModelChart(s), m.nv
    rng = np.random.default_rng(int(size * 1000))
    x, w, d = rng.normal(size=nv) * size, rng.normal(size=nv), rng.normal(size=nv)
    e = 1e-6
    # v = J(x) ẋ along the chart: q_dot(q, J d) is the derivative of φ(x + εd)
    J = ch.jacobian(qn, x)
    dq = (ch.point(qn, x + e * d) - ch.point(qn, x - e * d)) / (2 * e)
    np.testing.assert_allclose(kd.q_dot(m, ch.point(qn, x), J @ d), dq, atol=1e-8)
    dJ = (ch.jacobian(qn, x + e * d) - ch.jacobian(qn, x - e * d)) @ w / (2 * e)
    np.testing.assert_allclose(ch.derivative(qn, x, w) @ d, dJ, atol=1e-8)
    W, DW = ch.end_velocity(qn, x)
    np.testing.assert_allclose(W, J @ x, atol=1e-15)
    dW = (ch.end_velocity(qn, x + e * d)[0] - ch.end_velocity(qn, x - e * d)[0]) / (2 * e)
    np.testing.assert_allclose(DW @ d, dW, atol=1e-8)


def test_start_sensitivity_against_differences(mixed):
    """K: move the chart's centre by ε along a body velocity d, keep the point φ(x)."""
    m, s, qn = mixed
    ch, nv = ModelChart(s), m.nv
    rng = np.random.default_rng(7)
    x, d = 0.4 * rng.normal(size=nv), rng.normal(size=nv)
    q1 = ch.point(qn, x)

    def coords(center):  # φ_center⁻¹(q1) by Newton on the manifold difference
        y = x.copy()
        for _ in range(20):
            r = kd.difference(m, q1, ch.point(center, y))
            D = np.column_stack([kd.difference(m, q1, ch.point(center, y + 1e-7 * ek)) - r
                                 for ek in np.eye(nv)]) / 1e-7
            y = y - np.linalg.solve(D, r)
        return y

    e = 1e-5
    fd = (coords(s.integrate_configuration(qn, d, e))
          - coords(s.integrate_configuration(qn, d, -e))) / (2 * e)
    np.testing.assert_allclose(ch.start_sensitivity(qn, x) @ d, fd, atol=1e-7)


def test_chart_hamiltonian_gradient_against_differences(mixed):
    """∂H/∂x, ∂H/∂p of H(x, p) = E(φ(x), M⁻¹J⁻ᵀp) by 4th-order central differences."""
    m, s, qn = mixed
    H = ChartHamiltonian(Problem(s, qn, np.zeros(m.nv), 1.0, dt=0.01), ModelChart(s), qn)
    rng = np.random.default_rng(3)
    x, p = 0.3 * rng.normal(size=m.nv), rng.normal(size=m.nv)
    gx, gp = H.gradient(x, p)[:2]
    e = 1e-4

    def d4(f, z, k):
        ek = np.eye(z.size)[k] * e
        return (-f(z + 2 * ek) + 8 * f(z + ek) - 8 * f(z - ek) + f(z - 2 * ek)) / (12 * e)

    fx = [d4(lambda y: H.energy(y, p), x, k) for k in range(m.nv)]
    fp = [d4(lambda y: H.energy(x, y), p, k) for k in range(m.nv)]
    np.testing.assert_allclose(gx, fx, atol=1e-8 * np.abs(gx).max())
    np.testing.assert_allclose(gp, fp, atol=1e-8 * np.abs(gp).max())


# ------------------------------------------------------------ exact energy, 10⁴ steps
def test_avf_exact_energy_ball_chain_1e4_steps():
    m, q0, v0 = ball_elbow()
    tr = kd.simulate(m, q0, v0, 10.0, method="avf", dt=1e-3)
    assert len(tr) == 10_001
    assert rel_energy_error(m, tr) <= 1e-12
    assert np.abs(np.linalg.norm(tr.q[:, :4], axis=1) - 1).max() < 1e-15
    assert np.ptp(tr.q[:, 4]) > 1.0  # the elbow swings through a large angle


def test_avf_exact_energy_free_body_1e4_steps():
    """Torque-free tumbling (offset centre of mass, full inertia tensor). With gravity the
    same 10 s is a 490 m fall at up to 98 m/s, T and V grow to 7 kJ and the roundoff of
    their sum reaches 1.0e-12 of that (measured): the exactness shown here is the method's,
    that figure the arithmetic's."""
    m, q0, v0 = tossed_body(gravity=(0, 0, 0))
    tr = kd.simulate(m, q0, v0, 10.0, method="avf", dt=1e-3)
    assert len(tr) == 10_001
    assert rel_energy_error(m, tr) <= 1e-12
    assert np.abs(np.linalg.norm(tr.q[:, 3:7], axis=1) - 1).max() < 1e-15


def free_ball_hinge():
    """A free base, a ball joint and a hinge in one tree (the compiled AVF loop's joints)."""
    m = _free_ball_hinge_builder("free_ball_hinge").build()
    q0 = kd.random_configuration(m, np.random.default_rng(3))
    return m, q0, np.array([0.5, -1.0, 0.8, 0.3, 0.2, -0.4, 1.5, -0.7, 0.9, 2.0])


@pytest.mark.parametrize("case", [ball_elbow, tossed_body, free_ball_hinge])
def test_compiled_avf_in_the_chart_equals_the_python_steps(case, monkeypatch):
    """The compiled loop of avf on ball and free joints (integrators/avf_chart_compiled.py;
    the Python steps refused) against ``compiled=False`` over 200 steps, the last shortened.
    The two differ in round-off only: LAPACK's solves against the loop's 3x3 adjugates and
    LU, BLAS's sums against its loops, each an ulp or so a step, and Newton stopping at
    1e-14 |Δz| where the iterates differ by that; over 200 steps of motion that is ≈ 1e-15
    in q and 3e-14 in v (measured, |v| ≈ 3): held to 1e-13 and 1e-12 relative (the additive
    avf loop's 1e-13, test_discrete_gradient_compiled.py). The same Newton iterations,
    unit quaternions, and E to 1e-12."""
    m, q0, v0 = case()
    ref = kd.simulate(m, q0, v0, 0.1995, method="avf", dt=1e-3, compiled=False)
    with monkeypatch.context() as mp:
        mp.setattr(simulate_module, "run_fixed", _refuse)
        tr = kd.simulate(m, q0, v0, 0.1995, method="avf", dt=1e-3)
    assert len(tr) == len(ref) == 201 and tr.t[-1] == ref.t[-1] == 0.1995
    assert np.abs(tr.q - ref.q).max() <= 1e-13 * np.abs(ref.q).max()
    assert np.abs(tr.v - ref.v).max() <= 1e-12 * np.abs(ref.v).max()
    assert np.ptp(ref.q, axis=0).max() > 0.1  # it moves
    it, it_ref = tr.stats["newton_iterations"], ref.stats["newton_iterations"]
    assert abs(int(it.sum()) - int(it_ref.sum())) <= 0.02 * it_ref.sum()
    for b in m.bodies:
        if b.joint.kind in ("spherical", "free"):
            a = b.iq.start + (3 if b.joint.kind == "free" else 0)
            assert np.abs(np.linalg.norm(tr.q[:, a:a + 4], axis=1) - 1).max() < 1e-15
    assert rel_energy_error(m, tr) <= 1e-12


def test_compiled_avf_in_the_chart_with_force_rows_equals_the_python_steps(monkeypatch):
    """With force elements that have compiled rows — dampers on the ball and free joints'
    speeds, a spring and a sinusoidal torque on the hinge, a constant world wrench on the
    forearm — from t0 = 0.1: the springs in ∂H/∂x, J(x̄)ᵀτ_nc at the chart midpoint, W_nc
    as the Python steps (round-off as above: 1e-13 in q and W_nc); the budget closes."""
    m, q0, v0 = ball_elbow()
    forces = [JointDamper("elbow", 0.3), JointDamper("shoulder", 0.2),
              JointSpring("elbow", 2.0, 0.1), SinusoidalTorque("elbow", 1.0, 3.0),
              ExternalWrench("fore", [0.1, 0.0, 0.2, 0.5, -0.3, 0.0], frame="world")]
    kw = dict(method="avf", dt=1e-3, t0=0.1, forces=forces)
    ref = kd.simulate(m, q0, v0, 0.2995, compiled=False, **kw)
    with monkeypatch.context() as mp:
        mp.setattr(simulate_module, "run_fixed", _refuse)
        tr = kd.simulate(m, q0, v0, 0.2995, **kw)
    assert len(tr) == len(ref) == 201
    assert np.abs(tr.q - ref.q).max() <= 1e-13 * np.abs(ref.q).max()
    assert np.abs(tr.v - ref.v).max() <= 1e-12 * np.abs(ref.v).max()
    assert np.abs(ref.work_nc).max() > 0.05  # the forces do work
    assert np.abs(tr.work_nc - ref.work_nc).max() <= 1e-13 * np.abs(ref.work_nc).max()
    scale = max(abs(tr.energy[0]), float(np.abs(tr.work_nc).max()))
    assert np.abs(tr.budget).max() / scale <= 1e-12


@pytest.mark.parametrize("case,variant", [(ball_elbow, "forward"), (tossed_body, "symmetric")])
def test_compiled_itoh_abe_in_the_chart_equals_the_python_steps(case, variant, monkeypatch):
    """itoh_abe's compiled loop in the chart (avf_chart_compiled._itoh_abe_chart_loop)
    against ``compiled=False`` over 100 steps. Its ∇̄_xH holds quotients of H over
    increments down to 1e-3, which carry eps |H| / 1e-3 ≈ 1e-13 relative of round-off, and
    Newton stops at a stall below 1e-6 |Δz|, where such noise decides the last iterate:
    the two runs differ by ≈ 1e-14 in q and 4e-13 in v (measured, |v| ≈ 2–3), held to
    1e-12 and 1e-10 relative (the additive Itoh–Abe loop's 1e-10,
    docs/simulation.md). E to 1e-12, unit quaternions."""
    m, q0, v0 = case()
    kw = dict(method="itoh_abe", variant=variant, dt=1e-3)
    ref = kd.simulate(m, q0, v0, 0.0995, compiled=False, **kw)
    with monkeypatch.context() as mp:
        mp.setattr(simulate_module, "run_fixed", _refuse)
        tr = kd.simulate(m, q0, v0, 0.0995, **kw)
    assert len(tr) == len(ref) == 101
    assert np.abs(tr.q - ref.q).max() <= 1e-12 * np.abs(ref.q).max()
    assert np.abs(tr.v - ref.v).max() <= 1e-10 * np.abs(ref.v).max()
    assert rel_energy_error(m, tr) <= 1e-12
    qi = slice(0, 4) if m.bodies[0].joint.kind == "spherical" else slice(3, 7)
    assert np.abs(np.linalg.norm(tr.q[:, qi], axis=1) - 1).max() < 1e-15


@pytest.mark.parametrize("method", ["avf", "itoh_abe"])
def test_a_chart_loop_that_fails_hands_the_run_to_the_python_steps(method):
    """A step far too large for the motion (dt = 0.05 at 10x the elbow's speeds): Newton
    diverges in the compiled loop (for Itoh–Abe through a singular J(x) of its iterate),
    the run falls back to the Python steps, and their error names the method and the
    step."""
    m, q0, v0 = ball_elbow()
    with pytest.raises(SolverError, match=f"{method}: Newton failed at step 0"):
        kd.simulate(m, q0, 10 * v0, 0.1, method=method, dt=0.05)


@pytest.mark.parametrize("method", ["avf", "itoh_abe"])
def test_a_chart_loop_reports_a_blow_up_as_the_python_steps(method):
    """The state guard of run_fixed in the chart loops: the tossed body falls until its
    speed exceeds blowup = 2 x (1 + max|v0|), at the same step and with the same message
    as the Python steps."""
    from kanedyn.errors import DivergenceError

    m, q0, v0 = tossed_body()
    said = []
    for compiled in (True, False):
        with pytest.raises(DivergenceError, match=f"{method}: blow-up at step") as e:
            kd.simulate(m, q0, v0, 2.0, method=method, dt=1e-2, blowup=2.0,
                        compiled=compiled)
        said.append(str(e.value).split(";")[0])
    assert said[0] == said[1]


def test_compiled_avf_in_the_chart_leaves_python_forces_to_python():
    """A force element without a compiled row (a Python function) cannot enter the loop:
    it takes the Python steps (applicable() says no); planar joints are taken (the
    compiled charts know them)."""
    from kanedyn.integrators import avf_chart_compiled as acc

    def problem(m, q0, v0, **kw):
        return Problem(system=ModelSystem(m), q0=q0, v0=v0, t_final=0.01, dt=1e-3, **kw)

    assert acc.applicable(problem(*ball_elbow()))
    assert not acc.applicable(problem(*ball_elbow(), tau_nc=lambda t, q, v: -0.3 * v))
    assert acc.applicable(problem(*planar_cart()))


def test_compiled_avf_in_the_chart_on_a_cold_cache_takes_the_python_steps(cold_loop_check):
    """kanedyn.dynamics.first_calls: on a cold cache the run takes its Python steps while a
    compiler process compiles the loop (tests/conftest.py's cold_loop_check); avf's loop and
    itoh_abe's."""
    from kanedyn.integrators import avf_chart_compiled

    cold_loop_check("avf", *ball_elbow(), avf_chart_compiled._avf_chart_loop, "first_run")
    cold_loop_check("itoh_abe", *ball_elbow(), avf_chart_compiled._itoh_abe_chart_loop,
                    "first_run_itoh_abe")


@pytest.mark.parametrize("case,steps", [
    # 2,000 steps (compiled, ≈ 0.1 ms a step; the Python steps cost 4–10 ms); the
    # 10⁴-step figures are in docs/simulation.md with their command
    (ball_elbow, 2000), (tossed_body, 1000)])
def test_itoh_abe_exact_energy_on_curved_joints(case, steps):
    m, q0, v0 = case()
    tr = kd.simulate(m, q0, v0, steps * 1e-3, method="itoh_abe", dt=1e-3)
    assert rel_energy_error(m, tr) <= 1e-12
    qi = slice(0, 4) if m.bodies[0].joint.kind == "spherical" else slice(3, 7)
    assert np.abs(np.linalg.norm(tr.q[:, qi], axis=1) - 1).max() < 1e-15


def test_exactness_is_not_a_quiet_system():
    """Control: midpoint in tangent coordinates on the same ball chain has a truncation-level
    energy error, so the roundoff figures above are the methods. (The Python steps: the
    compiled gauss loop is test_gauss_compiled.py's, which another worker compiles.)"""
    m, q0, v0 = ball_elbow()
    tr = kd.simulate(m, q0, v0, 1.0, method="midpoint", dt=1e-3, compiled=False)
    assert rel_energy_error(m, tr) > 1e-9


@pytest.mark.parametrize("method", ["avf", "itoh_abe"])
def test_budget_closes_on_a_ball_chain_with_damping_and_torque(method):
    m, q0, v0 = ball_elbow()
    forces = [JointDamper("elbow", 0.3), JointDamper("shoulder", 0.2),
              JointTorque(lambda t, q, v: [2.0 * np.sin(3 * t)], "elbow")]
    tr = kd.simulate(m, q0, v0, 0.5, method=method, dt=1e-3, forces=forces)
    assert np.abs(tr.work_nc).max() > 0.05  # the forces do work
    scale = max(abs(tr.energy[0]), float(np.abs(tr.work_nc).max()))
    assert np.abs(tr.budget).max() / scale <= 1e-10


# ------------------------------------------------------------------------------ verlet
def test_verlet_spherical_pendulum_bounded_energy_without_drift():
    """10⁴ steps of 0.02 s (≈ 100 swings): the energy error oscillates at O(dt²) and
    does not grow; its late maximum equals its early one, a linear fit has no slope."""
    m = kd.models.pendulum_chain(1, planar=False, joint="spherical", radius=0.1)
    q0 = kd.integrate_configuration(m, kd.neutral(m), np.array([1.2, 0.3, 0.0]), 1.0)
    tr = kd.simulate(m, q0, [0.0, 1.5, 0.8], 200.0, method="verlet", dt=0.02, save_every=5)
    e = (tr.energy - tr.energy[0]) / abs(tr.energy[0])
    n = e.size
    early, late = np.abs(e[: n // 10]).max(), np.abs(e[-n // 10:]).max()
    assert 1e-5 < late < 1e-2
    assert late < 1.1 * early
    assert abs(np.polyfit(tr.t, e, 1)[0] * tr.t[-1]) < 0.01 * np.abs(e).max()
    assert np.abs(np.linalg.norm(tr.q, axis=1) - 1).max() < 1e-15


def test_verlet_keeps_the_momentum_of_a_free_body():
    """L_d is invariant under rigid motions of the world (no gravity): its discrete
    Euler–Lagrange map keeps [L; P] (discrete Noether), to the Newton tolerance."""
    m, q0, v0 = tossed_body(gravity=(0, 0, 0))
    tr = kd.simulate(m, q0, v0, 5.0, method="verlet", dt=0.01)
    h = tr.momentum
    # Newton stops at 1e-14 relative per step; 500 steps
    assert np.abs(h - h[0]).max() / np.linalg.norm(h[0]) <= 1e-11
    e = (tr.energy - tr.energy[0]) / tr.energy[0]
    assert 1e-8 < np.abs(e).max() < 1e-2  # not an energy-exact method
    # control: the (non-variational) midpoint rule in tangent coordinates drifts (its
    # Python steps: the compiled gauss loop is test_gauss_compiled.py's, and compiling it
    # here too, at the same time in the other worker, cost the suite ~20 s)
    mp = kd.simulate(m, q0, v0, 5.0, method="midpoint", dt=0.01, compiled=False).momentum
    assert np.abs(mp - mp[0]).max() / np.linalg.norm(mp[0]) > 1e-8


# ------------------------------------------------------------------------------ orders
@pytest.mark.parametrize("method,order,dts", [
    ("verlet", 2, (0.02, 0.01, 0.005)),
    ("avf", 2, (0.02, 0.01, 0.005)),
    ("itoh_abe", 1, (0.01, 0.005, 0.0025)),
])
@pytest.mark.parametrize("case", [ball_elbow, tossed_body])
def test_measured_order_on_curved_joints(method, order, dts, case):
    m, q0, v0 = case()
    ref = kd.simulate(m, q0, v0, 0.5, method="dopri5", rtol=1e-13, atol=1e-14)
    errs = []
    for dt in dts:
        tr = kd.simulate(m, q0, v0, 0.5, method=method, dt=dt)
        dq = kd.difference(m, ref.q[-1], tr.q[-1])
        errs.append(float(np.sqrt(np.sum(dq**2) + np.sum((tr.v[-1] - ref.v[-1]) ** 2))))
    p = np.log2(errs[-2] / errs[-1])
    assert abs(p - order) < 0.25, (p, errs)
    assert errs[-1] > 1e-9  # above the reference's own error


def planar_cart():
    """A body on a planar joint in a vertical plane (joint y along world z) with a hinged
    pole: the planar chart (position in the start's axes, angle) under gravity."""
    return kd.models.planar_cart(), np.array([0.1, 0.5, 0.3, 0.8]), np.array([1.0, 2.0, -1.5, 3.0])


@pytest.mark.parametrize("method", ["avf", "itoh_abe"])
def test_exact_energy_on_a_planar_joint(method):
    m, q0, v0 = planar_cart()
    tr = kd.simulate(m, q0, v0, 0.5, method=method, dt=1e-3)
    assert rel_energy_error(m, tr) <= 1e-12
    assert np.ptp(tr.q[:, 2]) > 0.5  # the cart turns


@pytest.mark.parametrize("method,order,dts", [
    ("verlet", 2, (0.02, 0.01, 0.005)), ("avf", 2, (0.02, 0.01, 0.005)),
    ("itoh_abe", 1, (0.01, 0.005, 0.0025))])
def test_measured_order_on_a_planar_joint(method, order, dts):
    m, q0, v0 = planar_cart()
    ref = kd.simulate(m, q0, v0, 0.5, method="dopri5", rtol=1e-13, atol=1e-14)
    errs = []
    for dt in dts:
        tr = kd.simulate(m, q0, v0, 0.5, method=method, dt=dt)
        dq = kd.difference(m, ref.q[-1], tr.q[-1])
        errs.append(float(np.sqrt(np.sum(dq**2) + np.sum((tr.v[-1] - ref.v[-1]) ** 2))))
    assert abs(np.log2(errs[-2] / errs[-1]) - order) < 0.25, errs


def test_itoh_abe_on_a_protocol_only_quaternion_system():
    """Without a model, Itoh–Abe takes the protocol's own chart (integrate_configuration
    and the fallback chart Jacobian by differences). H(x, p) is one function of the chart
    whatever J is used, but that J carries ≈ 1e-10 of differencing noise into Newton's
    residual, which shows in E at ≈ 5e-15 per step (1.1e-12 over 200 steps, as the
    system table of docs/simulation.md says: ≈ 1e-11 with the fallbacks)."""
    m, q0, v0 = tossed_body()
    inner = kd.ModelSystem(m)

    class Bare:
        nq, nv = inner.nq, inner.nv

        def __getattr__(self, name):
            if name in ("mass_matrix", "nonlinear_effects", "forward_dynamics", "energy",
                        "q_dot", "integrate_configuration", "momentum"):
                return getattr(inner, name)
            raise AttributeError(name)

    bare = kd.simulate(Bare(), q0, v0, 0.1, method="itoh_abe", dt=1e-3)
    ref = kd.simulate(m, q0, v0, 0.1, method="dopri5", rtol=1e-12, atol=1e-12)
    assert rel_energy_error(m, bare) <= 1e-11
    dq = kd.difference(m, ref.q[-1], bare.q[-1])
    assert np.abs(dq).max() < 1e-3  # first order at dt = 1e-3


def test_nan_max_keeps_a_nan():
    """The compiled Newton loops take |Δ|∞ by ``nan_max``: numba's max(size, nan) is size."""
    import numba as nb

    from kanedyn.integrators.base import nan_max

    @nb.njit
    def largest(x):
        s = 0.0
        for a in x:
            s = nan_max(s, abs(a))
        return s

    assert np.isnan(largest(np.array([1.0, np.nan, 2.0])))
    assert np.isnan(largest(np.array([np.nan, 3.0])))
    assert largest(np.array([1.0, -4.0, 2.0])) == 4.0


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_nan_newton_update_fails_the_step_as_in_the_python_steps():
    """The tossed body at 20× its speeds and dt = 0.05: Newton's update turns NaN at step 2.
    numba's max(size, nan) dropped the NaN, so the compiled variational Verlet loop took
    that update as converged and stopped a step later on a NaN state (a DivergenceError
    at step 3); now the non-finite update fails the solve, the loop hands the run to the
    Python steps, and both report the Newton failure at step 2."""
    m, q0, v0 = tossed_body()
    for compiled in (True, False):
        with pytest.raises(kd.SolverError, match=r"verlet: Newton failed at step 2 \(t = 0\.1"):
            kd.simulate(m, q0, 20 * v0, 2.0, method="verlet", dt=0.05, compiled=compiled)


# ------------------------------------------- the compiled charts' planar block (issue 17)
def _compiled_chart(data, x):
    """J(x)'s blocks of the compiled charts (system_kernel.chart_blocks)."""
    from kanedyn.constraints import system_kernel as sk

    Jb = np.zeros((data.shape[0] - 1, 18))
    sk.chart_blocks(data, x, Jb)
    return Jb


def _compiled_matrix(fn, data, Jb, n):
    """The matrix of ``y ↦ fn(data, Jb, y)``, column by column."""
    A, out = np.empty((n, n)), np.empty(n)
    for k, e in enumerate(np.eye(n)):
        fn(data, Jb, e, out)
        A[:, k] = out
    return A


@pytest.mark.parametrize("size", [1e-9, 0.4, 2.5])
def test_compiled_chart_functions_know_the_planar_joint(mixed, size):
    """system_kernel's chart_j_times, chart_jt_times, chart_j_solve and
    chart_derivative_t_sub on the mixed tree (free, ball, hinge, planar), ψ from ≈ 0 to
    2.5: J, Jᵀ and J⁻¹ against ModelChart's J (the joints' chart_jacobian), and D(x, w)ᵀy
    against a central difference of the compiled J itself, yᵀ (J(x + εe_k) − J(x − εe_k)) w
    / 2ε for each k (ε = 1e-6: truncation ε² ≈ 1e-12). The planar block is checked where it
    sits and the others stay as they were (every entry compared)."""
    from kanedyn.constraints import system_kernel as sk
    from kanedyn.dynamics.flat import flatten

    m, s, qn = mixed
    ch, nv, data = ModelChart(s), m.nv, flatten(m).data
    rng = np.random.default_rng(11)
    x, w, y = rng.normal(size=nv) * size, rng.normal(size=nv), rng.normal(size=nv)
    Jb = _compiled_chart(data, x)
    J = ch.jacobian(qn, x)
    assert np.abs(J[-3:-1, -3:-1] - np.eye(2)).max() > 1e-3 * min(size, 1)  # a turned block
    for fn, ref in ((sk.chart_j_times, J), (sk.chart_jt_times, J.T),
                    (sk.chart_j_solve, np.linalg.inv(J))):
        np.testing.assert_allclose(_compiled_matrix(fn, data, Jb, nv), ref, rtol=0, atol=1e-14)
    out = np.ones(nv)
    sk.chart_derivative_t_sub(data, Jb, x, w, y, out)
    e, Jw = 1e-6, np.empty(nv)
    diff = np.empty(nv)
    for k in range(nv):
        side = []
        for sgn in (1.0, -1.0):
            sk.chart_j_times(data, _compiled_chart(data, x + sgn * e * np.eye(nv)[k]), w, Jw)
            side.append(y @ Jw)
        diff[k] = (side[0] - side[1]) / (2 * e)
    np.testing.assert_allclose(1.0 - out, diff, rtol=0, atol=1e-8)
    np.testing.assert_allclose(1.0 - out, ch.derivative(qn, x, w).T @ y, rtol=0, atol=1e-14)
    assert abs(diff[-1]) > 1e-2  # the planar ψ row is not zero


@pytest.mark.parametrize("method,variant,T", [
    ("avf", None, 0.1995), ("itoh_abe", "forward", 0.0995), ("itoh_abe", "symmetric", 0.0995)])
def test_compiled_chart_loops_on_a_planar_joint_equal_the_python_steps(method, variant, T,
                                                                       monkeypatch):
    """avf and itoh_abe (both variants) on the planar cart with its hinged pole (a planar
    base turning ≈ 0.3 rad and carrying a pendulum) in the compiled chart loops
    (avf_chart_compiled; the Python steps refused) against ``compiled=False``, 200 resp. 100
    steps. Round-off only, as on ball and free joints (measured: avf 6e-16 in q and 2e-15
    in v, Itoh–Abe 2e-14 and 1e-13, relative): held to the same bounds as there, 1e-13 /
    1e-12 and 1e-12 / 1e-10. E = T + V from the Model's own kinetic and potential energy
    along the compiled run, to 1e-12."""
    m, q0, v0 = planar_cart()
    kw = dict(method=method, dt=1e-3) | ({"variant": variant} if variant else {})
    ref = kd.simulate(m, q0, v0, T, compiled=False, **kw)
    with monkeypatch.context() as mp:
        mp.setattr(simulate_module, "run_fixed", _refuse)
        tr = kd.simulate(m, q0, v0, T, **kw)
    n = int(round(T / 1e-3)) + 1
    assert len(tr) == len(ref) == n and tr.t[-1] == ref.t[-1] == T
    tq, tv = (1e-13, 1e-12) if method == "avf" else (1e-12, 1e-10)
    assert np.abs(tr.q - ref.q).max() <= tq * np.abs(ref.q).max()
    assert np.abs(tr.v - ref.v).max() <= tv * np.abs(ref.v).max()
    assert np.ptp(ref.q[:, 2]) > 0.1 * T / 0.2  # the cart turns: the chart is not additive
    E = kd.kinetic_energy(m, tr.q, tr.v) + kd.potential_energy(m, tr.q)
    assert np.abs(E - E[0]).max() <= 1e-12 * float(kd.kinetic_energy(m, tr.q, tr.v).max())


@pytest.mark.parametrize("method", ["avf", "itoh_abe"])
def test_compiled_chart_loops_on_a_planar_joint_with_force_rows(method, monkeypatch):
    """The planar cart with force elements that have compiled rows — a damper on the
    planar joint's three speeds, a spring and a sinusoidal torque on the hinge, a constant
    world wrench on the pole — from t0 = 0.1, 200 steps: J(x̄)ᵀτ_nc at the chart midpoint
    and W_nc as the Python steps (measured 1e-15 resp. 4e-14 relative; held to 1e-13 resp.
    1e-12), and the budget E − E₀ − W_nc closes to 1e-12."""
    m, q0, v0 = planar_cart()
    forces = [JointDamper("plane", 0.3), JointSpring("hinge", 2.0, 0.1),
              SinusoidalTorque("hinge", 1.0, 3.0),
              ExternalWrench("pole", [0.1, 0.0, 0.2, 0.5, -0.3, 0.0], frame="world")]
    kw = dict(method=method, dt=1e-3, t0=0.1, forces=forces)
    ref = kd.simulate(m, q0, v0, 0.2995, compiled=False, **kw)
    with monkeypatch.context() as mp:
        mp.setattr(simulate_module, "run_fixed", _refuse)
        tr = kd.simulate(m, q0, v0, 0.2995, **kw)
    assert len(tr) == len(ref) == 201
    tol = 1e-13 if method == "avf" else 1e-12
    assert np.abs(tr.q - ref.q).max() <= tol * np.abs(ref.q).max()
    assert np.abs(ref.work_nc).max() > 0.05  # the forces do work
    assert np.abs(tr.work_nc - ref.work_nc).max() <= tol * np.abs(ref.work_nc).max()
    scale = max(abs(tr.energy[0]), float(np.abs(tr.work_nc).max()))
    assert np.abs(tr.budget).max() / scale <= 1e-12


# ------------------------------------------------- kd.simulate_batch on the chart loops
# (here, beside the tests above that compile the chart loops and _gauss_loop's tangent form:
# the batch calls them with the argument types of kd.simulate's runs, so it compiles no
# specialisation of its own)
def _batch_states(m, q0, v0, n, seed):
    """n states about (q0, v0): q0 moved along random speeds on the manifold, v0 shifted."""
    rng = np.random.default_rng(seed)
    Q0 = np.array([kd.integrate_configuration(m, q0, 0.2 * rng.normal(size=m.nv), 1.0)
                   for _ in range(n)])
    return Q0, v0 + 0.3 * rng.normal(size=(n, m.nv))


@pytest.mark.parametrize("case,method,kw", [
    (ball_elbow, "avf", {}), (free_ball_hinge, "avf", {}),
    (ball_elbow, "itoh_abe", {}), (tossed_body, "itoh_abe", {"variant": "symmetric"}),
    (ball_elbow, "energy_momentum", {}),  # variant "auto": the projection variant here
    (free_ball_hinge, "energy_momentum", {"variant": "projection"})])
def test_batch_on_ball_and_free_joints_equals_kd_simulate_per_state(case, method, kw):
    """simulate_batch of avf, itoh_abe and energy_momentum on ball and free joints: each run
    is the single kd.simulate of its state to the bit — the same compiled loop
    (avf_chart_compiled's, or _gauss_loop's tangent midpoint + energy projection) with the
    same arguments (flat array, force rows, settings read from the stepper kd.simulate
    builds; t0 = 0). With a damper on the first joint's speeds (a per-run damping=, its
    kd.simulate the element with that value), a spring on a hinge where there is one, and
    a world wrench on the last body: W_nc the same bits too."""
    m, q0, v0 = case()
    Q0, V0 = _batch_states(m, q0, v0, 3, 11)
    first, last = m.joint_names[0], m.body_names[-1]
    c = np.array([0.1, 0.3, 0.5])
    wrench = ExternalWrench(last, [0.1, 0.0, 0.2, 0.5, -0.3, 0.0], frame="world")
    hinge = [JointSpring(b.joint.name, 2.0, 0.1) for b in m.bodies if b.joint.kind == "revolute"]
    forces = [JointDamper(first, 0.2), wrench, *hinge]
    b = kd.simulate_batch(m, Q0, V0, 0.0495, method=method, dt=1e-3, save_every=5,
                          forces=forces, params={f"damping:{first}": c}, **kw)
    assert b.q.shape == (3, 11, m.nq)
    for k in range(3):
        one = [JointDamper(first, c[k]), wrench, *hinge]
        s = kd.simulate(m, Q0[k], V0[k], 0.0495, method=method, dt=1e-3, save_every=5,
                        forces=one, **kw)
        assert np.array_equal(b.t, s.t)
        assert np.array_equal(b.q[k], s.q) and np.array_equal(b.v[k], s.v)
        assert np.array_equal(b.work_nc[k], s.work_nc)
        # the batch's energy (kinetic_energy's kernel) against kd.simulate's (another pass)
        np.testing.assert_allclose(b.energy[k], s.energy, rtol=1e-13, atol=1e-13)
    assert np.abs(b.work_nc[:, -1]).min() > 1e-4  # the forces do work
    assert np.ptp(b.q, axis=1).max() > 0.05  # it moves


@pytest.mark.parametrize("method,kw", [("avf", {}), ("itoh_abe", {"variant": "symmetric"}),
                                       ("energy_momentum", {})])
def test_a_batch_on_a_ball_chain_keeps_the_models_energy(method, kw):
    """Without forces, 500 steps of each of 3 runs: E = kd.kinetic_energy +
    kd.potential_energy of the batch's own samples (the Model's energy functions, not the
    loops' energy kernel) stays at its start to round-off (1e-12 relative, the single
    runs' bound above; energy_momentum to its projection's tolerance), quaternions unit."""
    m, q0, v0 = ball_elbow()
    Q0, V0 = _batch_states(m, q0, v0, 3, 5)
    b = kd.simulate_batch(m, Q0, V0, 0.5, method=method, dt=1e-3, save_every=10, **kw)
    for k in range(3):
        E = kd.kinetic_energy(m, b.q[k], b.v[k]) + kd.potential_energy(m, b.q[k])
        scale = max(abs(E[0]), float(np.max(kd.kinetic_energy(m, b.q[k], b.v[k]))))
        assert np.abs(E - E[0]).max() / scale <= 1e-12
        assert np.abs(np.linalg.norm(b.q[k, :, :4], axis=1) - 1).max() < 1e-15
    assert np.ptp(b.q[:, :, 4], axis=1).min() > 0.5  # the elbows swing


@pytest.mark.parametrize("method", ["avf", "itoh_abe"])
def test_a_batch_run_whose_newton_fails_is_reported_stopped(method):
    """Run 1 at 10x the elbow's speeds with dt = 0.05: Newton does not settle at its first
    step (avf's kept iteration fails; Itoh–Abe's iterate makes J(x) singular, numba's
    ZeroDivisionError), where kd.simulate hands the run to the Python steps, which fail
    there too. The batch reports run 1 stopped by Newton at t = 0.05 (NaN from there) in a
    DivergenceError, and keeps runs 0 and 2, the bits of kd.simulate."""
    from kanedyn.errors import DivergenceError

    m, q0, v0 = ball_elbow()
    Q0, V0 = np.tile(q0, (3, 1)), np.array([0.2 * v0, 10 * v0, 0.1 * v0])
    with pytest.raises(DivergenceError, match=r"1 of 3 runs stopped \(the Newton iteration "
                                              r"of a step did not converge\): run 1 at "
                                              r"t = 0.05") as e:
        kd.simulate_batch(m, Q0, V0, 0.1, method=method, dt=0.05)
    assert set(e.value.failures) == {1}
    b = e.value.result
    assert np.isnan(b.q[1, 1:]).all() and np.array_equal(b.q[1, 0], q0)
    for k in (0, 2):
        s = kd.simulate(m, Q0[k], V0[k], 0.1, method=method, dt=0.05)
        assert np.array_equal(b.q[k], s.q) and np.array_equal(b.v[k], s.v)
    with pytest.raises(SolverError, match=f"{method}: Newton failed at step 0"):
        kd.simulate(m, Q0[1], V0[1], 0.1, method=method, dt=0.05)


@pytest.mark.parametrize("method,kw", [("avf", {}), ("itoh_abe", {"variant": "symmetric"}),
                                       ("energy_momentum", {})])
def test_a_batch_on_a_planar_joint_equals_kd_simulate_per_state(method, kw):
    """The chart loops (avf, itoh_abe) and the tangent midpoint with the projection
    (energy_momentum's projection variant) know the planar joint: each run of a batch on the
    planar cart is its single kd.simulate to the bit (the same loop and arguments), with a
    per-run damper on the planar joint's three speeds doing work."""
    m, q0, v0 = planar_cart()
    Q0, V0 = _batch_states(m, q0, v0, 2, 7)
    c = np.array([0.2, 0.6])
    b = kd.simulate_batch(m, Q0, V0, 0.03, method=method, dt=1e-3, save_every=5,
                          forces=[JointDamper("plane", 0.1)], params={"damping:plane": c},
                          **kw)
    for k in range(2):
        s = kd.simulate(m, Q0[k], V0[k], 0.03, method=method, dt=1e-3, save_every=5,
                        forces=[JointDamper("plane", c[k])], **kw)
        assert np.array_equal(b.q[k], s.q) and np.array_equal(b.v[k], s.v)
        assert np.array_equal(b.work_nc[k], s.work_nc)
    assert np.abs(b.work_nc[:, -1]).min() > 1e-4  # the dampers do work

