"""The energy–momentum method conserves by its structure, not by a projection.

- ``variant="lie"`` (single free body): the Lie–midpoint / Cayley scheme keeps E and [L; P]
  to roundoff, the attitude moves by a unit quaternion, and it is second order; with gravity
  it keeps E and the vertical component of L.
- ``variant="gonzalez"`` (additive chains): Gonzalez's discrete gradient with the cyclic
  directions left out of the correction keeps E and the momentum conjugate to a cyclic
  coordinate (a turntable joint about the gravity axis) to roundoff; with Gonzalez's own
  direction w = Δz (``cyclic=()``) the same momentum drifts — the control.
"""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.errors import SolverError
from kanedyn.integrators import get_method
from kanedyn.integrators.base import Problem
from kanedyn.model.joints import Revolute
from kanedyn.sim.system import ModelSystem


def rel(x, scale):
    return float(np.abs(x - x[0]).max() / scale)


def manifold_error(model, tr, ref):
    dq = kd.difference(model, ref.q[-1], tr.q[-1])
    return float(np.sqrt(np.sum(dq**2) + np.sum((tr.v[-1] - ref.v[-1]) ** 2)))


def order_study(model, q0, v0, dts, **kw):
    ref = kd.simulate(model, q0, v0, 1.0, method="dopri5", rtol=1e-13, atol=1e-14)
    errs = [manifold_error(model, kd.simulate(model, q0, v0, 1.0, method="energy_momentum",
                                              dt=dt, **kw), ref) for dt in dts]
    return np.log2(np.array(errs[:-1]) / np.array(errs[1:])), errs


def method_of(model, q0, v0, **kw):
    cls, _ = get_method("energy_momentum")
    return cls(Problem(ModelSystem(model), np.asarray(q0, float), np.asarray(v0, float), 1.0,
                       dt=0.01), **kw)


# ----------------------------------------------------------------------- free body
@pytest.fixture(scope="module")
def tumbling():
    """Asymmetric body, centre of mass off the frame origin, full inertia tensor. The centre
    of mass drifts slowly (0.04 m/s): L about the origin contains x_c × P, whose roundoff
    grows with the lever arm |x_c|, and a fast drift would measure that rather than the
    scheme (L about the centre of mass is kept to roundoff either way)."""
    I = np.array([[0.2, 0.01, 0.02], [0.01, 0.3, -0.03], [0.02, -0.03, 0.25]])
    c = np.array([0.1, -0.05, 0.2])
    m = kd.models.free_body(mass=1.5, inertia=I, com=c, gravity=(0, 0, 0))
    q0 = kd.neutral(m)
    q0[:3] = (0.3, -0.2, 0.1)
    w0 = np.array([1.0, 2.0, -0.5])
    v0 = np.concatenate([w0, -np.cross(w0, c) + (0.03, 0.01, 0.02)])  # v_c = (0.03, 0.01, 0.02)
    return m, q0, v0


def test_free_body_uses_the_lie_scheme(tumbling):
    m, q0, v0 = tumbling
    assert method_of(m, q0, v0).variant == "lie"
    assert method_of(kd.models.pendulum_chain(2), [0, 0], [0, 0]).variant == "gonzalez"
    ball = kd.models.pendulum_chain(2, planar=False, joint="spherical")
    assert method_of(ball, kd.neutral(ball), np.zeros(6)).variant == "projection"
    assert method_of(*floating_chain()).variant == "floating"


def test_lie_scheme_keeps_energy_and_spatial_momentum(tumbling):
    m, q0, v0 = tumbling
    tr = kd.simulate(m, q0, v0, 20.0, method="energy_momentum", dt=0.01)
    assert rel(tr.energy, tr.energy[0]) <= 1e-12
    h = tr.momentum
    assert rel(h[:, :3], np.linalg.norm(h[0, :3])) <= 1e-12
    assert rel(h[:, 3:], np.linalg.norm(h[0, 3:])) <= 1e-12
    np.testing.assert_allclose(kd.spatial_momentum(m, tr.q[-1], tr.v[-1]), h[0], atol=1e-12)
    assert np.abs(np.linalg.norm(tr.q[:, 3:7], axis=1) - 1).max() < 4e-16
    # not a quiet run: the body axes turn through large angles
    assert np.ptp(tr.v[:, 0]) > 0.5


@pytest.mark.parametrize("gravity", [(0, 0, 0), (0, 0, -9.81)])
def test_compiled_lie_loop_equals_the_python_step(gravity):
    """The lie variant's compiled loop (integrators/lie_cayley_compiled.py) against its
    Python step (compiled=False), step for step over 300 steps with a shortened last one:
    the same arithmetic in another order, so round-off apart; the same Newton counts."""
    I = np.array([[0.2, 0.01, 0.02], [0.01, 0.3, -0.03], [0.02, -0.03, 0.25]])
    m = kd.models.free_body(mass=1.5, inertia=I, com=(0.1, -0.05, 0.2), gravity=gravity)
    q0 = kd.neutral(m)
    q0[:3] = (0.3, -0.2, 0.1)
    v0 = np.array([1.0, 2.0, -0.5, 0.3, 0.1, 2.0])
    a = kd.simulate(m, q0, v0, 2.995, method="energy_momentum", dt=0.01)
    b = kd.simulate(m, q0, v0, 2.995, method="energy_momentum", dt=0.01, compiled=False)
    assert a.stats["newton_iterations"].dtype == np.int32  # the compiled loop's record
    assert len(a) == len(b) == 301 and a.t[-1] == pytest.approx(2.995, abs=1e-15)
    np.testing.assert_allclose(a.q, b.q, rtol=1e-13, atol=1e-13)  # (|x| grows to 22 m)
    np.testing.assert_allclose(a.v, b.v, rtol=1e-13, atol=1e-12)
    np.testing.assert_array_equal(a.stats["newton_iterations"],
                                  np.asarray(b.stats["newton_iterations"]))
    scale = float(np.abs(kd.kinetic_energy(m, a.q, a.v)).max())  # (as the test above)
    assert rel(a.energy, scale) <= 1e-12
    assert np.ptp(a.v[:, 0]) > 0.5  # the body tumbles


def test_lie_scheme_is_not_a_projection_in_disguise(tumbling):
    """Control: the implicit midpoint rule in tangent coordinates (same order, symmetric,
    unprojected) on the same run has a truncation-level momentum error, so the roundoff
    figure above is the structure of the scheme."""
    m, q0, v0 = tumbling
    tr = kd.simulate(m, q0, v0, 5.0, method="midpoint", dt=0.01)
    h = tr.momentum
    assert rel(h[:, :3], np.linalg.norm(h[0, :3])) > 1e-9


def test_lie_scheme_with_gravity_keeps_energy_and_vertical_angular_momentum():
    """A tossed body: E and L_z (g along −z) are kept; L_x, L_y change by the torque of
    gravity about the origin, as they must (checked against the exact x_c × P rate)."""
    I = np.array([[0.2, 0.01, 0.02], [0.01, 0.3, -0.03], [0.02, -0.03, 0.25]])
    m = kd.models.free_body(mass=1.5, inertia=I, com=(0.1, -0.05, 0.2))
    v0 = np.array([1.0, 2.0, -0.5, 0.3, 0.1, 2.0])
    tr = kd.simulate(m, kd.neutral(m), v0, 3.0, method="energy_momentum", dt=0.01)
    E, h = tr.energy, tr.momentum
    scale = float(np.abs(kd.kinetic_energy(m, tr.q, tr.v)).max())
    assert rel(E, scale) <= 1e-12
    assert rel(h[:, 2], np.abs(h[:, :3]).max()) <= 1e-12
    assert abs(h[-1, 0] - h[0, 0]) > 1.0  # gravity's torque about the origin acts


def test_lie_scheme_is_second_order(tumbling):
    m, q0, v0 = tumbling
    p, errs = order_study(m, q0, v0, (0.05, 0.025, 0.0125))
    assert np.all(np.abs(p - 2) < 0.1), (p, errs)


def test_intermediate_axis_flip_with_the_lie_scheme():
    """Principal inertia (0.1, 0.2, 0.3), spin 2 rad/s about the intermediate axis: the
    linearised growth rate is 2·√((0.2−0.1)(0.3−0.2)/(0.1·0.3)) = 1.15 /s; from a 0.5 %
    disturbance the first reversal comes after ≈ ln(200)/1.15 ≈ 4.6 s, then they repeat."""
    m = kd.models.free_body(mass=2.0, inertia=(0.1, 0.2, 0.3), gravity=(0, 0, 0))
    v0 = np.array([0.01, 2.0, 0.01, 0.0, 0.0, 0.0])
    tr = kd.simulate(m, kd.neutral(m), v0, 30.0, method="energy_momentum", dt=0.01)
    wy = tr.v[:, 1]
    assert wy.min() < -1.99  # a full reversal, not a wobble
    t_flip = tr.t[np.argmax(wy < 0)]
    assert 3.0 < t_flip < 8.0
    flips = tr.t[np.nonzero(np.diff(np.sign(wy)))[0]]
    assert flips.size >= 3  # it flips back and forth with a steady period
    assert np.ptp(np.diff(flips)) < 0.05 * np.diff(flips).mean()
    assert rel(tr.energy, tr.energy[0]) <= 1e-12
    assert rel(tr.momentum[:, :3], 0.4) <= 1e-12


def test_lie_variant_refuses_what_it_cannot_do(tumbling):
    m, q0, v0 = tumbling
    with pytest.raises(SolverError, match="single body"):
        kd.simulate(kd.models.pendulum_chain(2), [0, 0], [0, 0], 0.1,
                    method="energy_momentum", dt=0.01, variant="lie")
    with pytest.raises(SolverError, match="variant"):
        kd.simulate(m, q0, v0, 0.1, method="energy_momentum", dt=0.01, variant="simo")
    with pytest.raises(SolverError, match="projection"):
        kd.simulate(m, q0, v0, 0.1, method="energy_momentum", dt=0.01, momentum=())


def test_projection_variant_stays_reachable(tumbling):
    m, q0, v0 = tumbling
    tr = kd.simulate(m, q0, v0, 2.0, method="energy_momentum", dt=0.01, variant="projection")
    assert rel(tr.energy, tr.energy[0]) <= 1e-12
    assert rel(tr.momentum[:, :3], np.linalg.norm(tr.momentum[0, :3])) <= 1e-12


# --------------------------------------------------------------------------- chains
def turntable_chain():
    """A yaw joint about the gravity axis at the root, then two swinging links: q_yaw is
    cyclic, its conjugate momentum p_yaw = (M v)_0 = L_z is a first integral."""
    b = kd.ModelBuilder("turntable_chain")
    b.add_body("base", None, Revolute("yaw", axis=(0, 0, 1)), None, 1.0, (0.2, 0, 0),
               np.diag([0.05, 0.06, 0.04]))
    b.add_body("l1", "base", Revolute("j1", axis=(0, 1, 0)), (np.eye(3), (0.3, 0, 0)), 1.0,
               (0, 0, -0.5), np.diag([0.08, 0.08, 0.01]))
    b.add_body("l2", "l1", Revolute("j2", axis=(1, 0, 0)), (np.eye(3), (0, 0, -1.0)), 0.7,
               (0, 0, -0.4), np.diag([0.05, 0.05, 0.01]))
    return b.build()


@pytest.fixture(scope="module")
def turntable():
    m = turntable_chain()
    return m, np.array([0.2, 1.0, -0.6]), np.array([1.5, 0.0, 2.0])


def conjugate_yaw_momentum(m, tr):
    return np.array([(kd.crba(m, q) @ v)[0] for q, v in zip(tr.q, tr.v, strict=True)])


def test_auto_cyclic_finds_the_turntable_joint(turntable):
    m, q0, v0 = turntable
    assert method_of(m, q0, v0).cyclic == (0,)
    assert method_of(kd.models.pendulum_chain(3), np.zeros(3), np.zeros(3)).cyclic == ()
    assert method_of(m.with_gravity((0, 0, 0)), q0, v0).cyclic == (0, 1, 2)[:1]
    assert method_of(m, q0, v0, cyclic=("yaw", "j2")).cyclic == (0, 2)
    with pytest.raises(SolverError, match="cyclic"):
        method_of(m, q0, v0, cyclic=("elbow",))


def test_gonzalez_keeps_energy_and_cyclic_momentum_1e4_steps(turntable):
    m, q0, v0 = turntable
    tr = kd.simulate(m, q0, v0, 10.0, method="energy_momentum", dt=1e-3)
    assert len(tr) == 10_001
    p = conjugate_yaw_momentum(m, tr)
    assert rel(tr.energy, abs(tr.energy[0])) <= 1e-12
    assert rel(p, abs(p[0])) <= 1e-12
    assert rel(tr.momentum[:, 2], abs(tr.momentum[0, 2])) <= 1e-12  # the same, as L_z
    assert np.ptp(tr.q[:, 0]) > 1.0 and np.ptp(tr.q[:, 1]) > 0.5  # it turns and swings


def test_gonzalez_with_the_full_correction_loses_the_cyclic_momentum(turntable):
    """Control: w = Δz (Gonzalez 1996 as stated, cyclic=()) still keeps E exactly but puts
    c·Δq_yaw into ∇̄_yaw H, so p_yaw drifts at truncation level."""
    m, q0, v0 = turntable
    tr = kd.simulate(m, q0, v0, 2.0, method="energy_momentum", dt=1e-3, cyclic=())
    p = conjugate_yaw_momentum(m, tr)
    assert rel(tr.energy, abs(tr.energy[0])) <= 1e-12
    assert rel(p, abs(p[0])) > 1e-9


def test_gonzalez_is_second_order(turntable):
    m, q0, v0 = turntable
    p, errs = order_study(m, q0, v0, (0.025, 0.0125, 0.00625))
    assert np.all(np.abs(p - 2) < 0.2), (p, errs)


# ------------------------------------------------------------------ free-floating chain
def floating_chain():
    """A free base with a two-link arm, no gravity: E and the spatial momentum [L; P] are
    first integrals (joint torques between the bodies are internal and keep [L; P])."""
    b = kd.ModelBuilder("floating", gravity=(0, 0, 0))
    b.add_body("base", None, kd.model.joints.Free("root"), None, 3.0, (0.05, -0.02, 0.1),
               np.diag([0.2, 0.3, 0.25]))
    b.add_body("arm1", "base", Revolute("j1", axis=(0, 0, 1)), (np.eye(3), (0.3, 0, 0)), 1.0,
               (0.25, 0, 0), np.diag([0.01, 0.05, 0.05]))
    b.add_body("arm2", "arm1", Revolute("j2", axis=(0, 1, 0)), (np.eye(3), (0.5, 0, 0)), 0.6,
               (0.2, 0, 0.05), np.diag([0.01, 0.03, 0.03]))
    m = b.build()
    q0 = kd.neutral(m)
    q0[:3] = (0.2, -0.1, 0.3)
    q0[7:] = (0.4, -0.7)
    return m, q0, np.array([0.3, -0.5, 0.8, 0.1, 0.2, -0.1, 1.5, -2.0])


def test_floating_chain_keeps_energy_and_spatial_momentum():
    m, q0, v0 = floating_chain()
    assert method_of(m, q0, v0).variant == "floating"
    tr = kd.simulate(m, q0, v0, 1.5, method="energy_momentum", dt=1e-3)
    h = tr.momentum
    assert rel(tr.energy, tr.energy[0]) <= 1e-12
    assert rel(h, np.linalg.norm(h[0])) <= 1e-12
    assert np.abs(np.linalg.norm(tr.q[:, 3:7], axis=1) - 1).max() < 4e-16
    assert np.ptp(tr.q[:, 7:], axis=0).min() > 0.5  # the arm moves a lot


def test_floating_chain_with_an_internal_torque():
    """A motor at j1 does work (the budget closes) but exerts no net wrench ([L; P] kept)."""
    m, q0, v0 = floating_chain()
    motor = kd.forces.JointTorque(lambda t, q, v: [np.sin(5 * t)], "j1")
    tr = kd.simulate(m, q0, v0, 0.5, method="energy_momentum", dt=1e-3, forces=[motor])
    h = tr.momentum
    assert np.abs(tr.work_nc).max() > 0.1
    assert np.abs(tr.budget).max() / tr.energy[0] <= 1e-12
    assert rel(h, np.linalg.norm(h[0])) <= 1e-12


def test_floating_chain_with_constant_wrenches_in_the_compiled_loop(monkeypatch):
    """The floating variant's compiled loop with a local wrench on a limb, a world couple on
    the base and a damper (τ on every speed, the base's included, with the base where the
    step starts, as the reference): its Python steps to 1e-10, and the budget at round-off
    while the wrenches work."""
    from kanedyn.forces import ExternalWrench, JointDamper
    from kanedyn.integrators import floating_cayley_compiled as fcc

    m, q0, v0 = floating_chain()
    fs = [ExternalWrench("arm2", [0.1, -0.2, 0.3, 1.0, -0.5, 0.7]),
          ExternalWrench("base", [0.1, -0.2, 0.3, 0.0, 0.0, 0.0], frame="world"),
          JointDamper("j1", 0.1)]
    ran = []
    real = fcc.run
    monkeypatch.setattr(fcc, "run", lambda *a: ran.append(real(*a)) or ran[-1])
    a = kd.simulate(m, q0, v0, 0.2, method="energy_momentum", variant="floating", dt=1e-3,
                    forces=fs)
    assert ran and ran[-1] is not None  # the compiled loop took the run
    b = kd.simulate(m, q0, v0, 0.2, method="energy_momentum", variant="floating", dt=1e-3,
                    forces=fs, compiled=False)
    assert np.abs(a.q - b.q).max() <= 1e-10
    scale = max(np.abs(b.energy).max(), np.abs(b.work_nc).max())
    assert np.abs(a.work_nc - b.work_nc).max() <= 1e-10 * scale
    assert abs(a.work_nc[-1]) > 1e-2 * scale
    assert np.abs(a.budget).max() <= 1e-10 * scale


def test_floating_chain_is_second_order():
    m, q0, v0 = floating_chain()
    p, errs = order_study(m, q0, v0, (0.02, 0.01, 0.005))
    assert np.all(np.abs(p - 2) < 0.1), (p, errs)


@pytest.mark.parametrize("with_forces", [False, True])
def test_compiled_floating_loop_equals_the_python_step(with_forces, monkeypatch):
    """The floating variant's compiled loop (integrators/floating_cayley_compiled.py)
    against its Python steps (compiled=False): the same states to round-off, with and
    without force elements on the arm (a damper, a spring, a periodic motor); [L; P] kept
    and the budget closed either way. A damper on the base's speeds has no row the loop
    takes: the Python steps run it."""
    from kanedyn.integrators import floating_cayley_compiled as fcc

    m, q0, v0 = floating_chain()
    forces = ([kd.forces.JointDamper("j1", 0.3), kd.forces.JointSpring("j2", 2.0, 0.1),
               kd.forces.SinusoidalTorque("j1", 0.5, 1.0)] if with_forces else None)
    runs = [kd.simulate(m, q0, v0, 0.3, method="energy_momentum", dt=1e-3, forces=forces,
                        compiled=c) for c in (True, False)]
    a, b = runs
    assert np.abs(a.q - b.q).max() <= 1e-12
    assert np.abs(a.v - b.v).max() <= 1e-11
    assert np.abs(a.work_nc - b.work_nc).max() <= 1e-13
    assert np.abs(a.budget).max() <= 1e-12 * np.abs(a.energy).max()
    assert rel(a.momentum, np.linalg.norm(a.momentum[0])) <= 1e-12
    # which loop runs: the compiled one for the arm's rows, the Python steps for a base damper
    calls = []
    real = fcc.floating_run
    monkeypatch.setattr(fcc, "floating_run", lambda *args: calls.append(1) or real(*args))
    kd.simulate(m, q0, v0, 0.01, method="energy_momentum", dt=1e-3, forces=forces)
    assert calls == [1]
    kd.simulate(m, q0, v0, 0.01, method="energy_momentum", dt=1e-3,
                forces=[kd.forces.JointDamper("root", 0.1)])
    assert calls == [1]


def free_ball():
    """A free base, a ball joint and a hinge below it, no gravity (the projection variant
    with momentum rows)."""
    from kanedyn.model.joints import Free, Spherical

    b = kd.ModelBuilder("free_ball", gravity=(0.0, 0.0, 0.0))
    rod = np.diag([1.0 / 12.0, 1.0 / 12.0, 1e-2])
    below = (np.eye(3), (0, 0, -1.0))
    b.add_body("base", None, Free("root"), None, 2.0, (0.05, 0, 0.1), np.diag([0.2, 0.3, 0.25]))
    b.add_body("l2", "base", Spherical("b2"), below, 1.0, (0, 0, -0.5), rod)
    b.add_body("l3", "l2", Revolute("r3", axis=(0, 1, 0)), below, 0.5, (0, 0, -0.5), rod)
    m = b.build()
    q0 = kd.random_configuration(m, np.random.default_rng(1))
    return m, q0, np.array([0.3, -0.5, 0.8, 0.1, 0.2, -0.1, 0.5, -1.0, 2.0, 1.5])


def test_projection_variant_with_momentum_rows_runs_compiled(monkeypatch):
    """A free base with a ball joint and a hinge below it, no gravity: the projection
    variant keeps E and [L; P] (momentum="auto"); its compiled loop (tangent midpoint +
    ``gauss_compiled.project_standard``) equals its Python steps and keeps both to
    round-off; midpoint with project=("energy", "angular_momentum") takes the same loop."""
    from kanedyn.integrators import gauss_compiled

    m, q0, v0 = free_ball()
    assert method_of(m, q0, v0).invariants == ("energy", "momentum")
    ran = []  # what the compiled loop returned: a Solution, or None (the Python steps)
    real = gauss_compiled.run
    monkeypatch.setattr(gauss_compiled, "run",
                        lambda *args, **kw: ran.append(real(*args, **kw)) or ran[-1])
    a, p = (kd.simulate(m, q0, v0, 0.2, method="energy_momentum", dt=1e-3, compiled=c)
            for c in (True, False))
    assert len(ran) == 1 and ran[0] is not None
    assert np.abs(a.q - p.q).max() <= 1e-12 and np.abs(a.v - p.v).max() <= 1e-11
    for tr in (a, p):
        assert rel(tr.energy, tr.energy[0]) <= 1e-13
        assert rel(tr.momentum, np.linalg.norm(tr.momentum[0])) <= 1e-13
    tr = kd.simulate(m, q0, v0, 0.2, method="midpoint", dt=1e-3,
                     project=("energy", "angular_momentum"))
    L = tr.momentum[:, :3]
    assert np.abs(L - L[0]).max() <= 1e-13 * np.linalg.norm(L[0])
    assert len(ran) == 2 and ran[1] is not None
    assert gauss_compiled.momentum_rows(("momentum", "energy")) is None  # the Python steps


def test_floating_variant_needs_zero_gravity():
    m, q0, v0 = floating_chain()
    assert method_of(m.with_gravity((0, 0, -9.81)), q0, v0).variant == "projection"
    with pytest.raises(SolverError, match="gravity"):
        method_of(m.with_gravity((0, 0, -9.81)), q0, v0, variant="floating")


# ------------------------------------------------------- projection variant, compiled

@pytest.mark.filterwarnings("error::RuntimeWarning")  # the compiled loop's fallback warns
@pytest.mark.parametrize("with_forces", [False, True])
def test_projection_variant_energy_only_runs_the_compiled_tangent_midpoint(with_forces,
                                                                            monkeypatch,
                                                                            ball_chain):
    """On a ball-joint chain under gravity (invariants: the energy alone) the projection
    variant is the compiled tangent midpoint + project="energy" loop, equal step for step
    to its Python steps (compiled=False) — with and without force elements (dampers on the
    balls, a spring, smoothed friction and a sinusoid on the hinge); the budget closes."""
    import importlib

    from kanedyn import friction

    m, q0, v0 = ball_chain
    forces = None
    if with_forces:
        law = friction.Stribeck(Fc=0.05, Fs=0.08, vs=0.05, delta=2.0,
                                Fv=0.01).smoothed("tanh", 1e-2)
        forces = [kd.forces.JointDamper("b1", 0.2), kd.forces.JointDamper("b2", 0.1),
                  kd.forces.JointSpring("r3", 4.0, 0.3), kd.forces.JointFriction("r3", law),
                  kd.forces.SinusoidalTorque("r3", 0.5, 3.0, phase=0.2)]
    kw = {"method": "energy_momentum", "dt": 1e-3, "tol": 1e-14, "forces": forces}
    assert method_of(m, q0, v0).variant == "projection"
    ref = kd.simulate(m, q0, v0, 0.08, compiled=False, **kw)

    def refuse(*a, **k):
        raise AssertionError("the compiled loop handed the run to the Python steps")

    monkeypatch.setattr(importlib.import_module("kanedyn.sim.simulate"), "run_fixed", refuse)
    tr = kd.simulate(m, q0, v0, 0.08, **kw)
    assert len(tr) == len(ref) == 81 and tr.method == ref.method == "energy_momentum"
    assert np.abs(tr.q - ref.q).max() <= 1e-12 * np.abs(ref.q).max()
    assert np.abs(tr.v - ref.v).max() <= 1e-12 * np.abs(ref.v).max()
    scale = np.abs(ref.energy).max()
    assert np.abs(tr.work_nc - ref.work_nc).max() <= 1e-13 * scale
    assert np.abs(tr.budget).max() <= 1e-13 * scale
    if with_forces:
        assert abs(ref.work_nc[-1]) > 1e-3 * scale


def _additive_chain(with_forces):
    """A 3-D pendulum chain (hinges about y, x, y) without forces; a tree of a screw, a
    hinge and two sliders with a damper, a spring, smoothed friction and a constant torque
    (every kind of additive joint, every force row the loop reads; the spring's potential
    in E): states that swing every joint."""
    from kanedyn import friction

    rng = np.random.default_rng(5)
    if not with_forces:
        m = kd.models.pendulum_chain(3, planar=False)
        return m, rng.uniform(-0.8, 0.8, m.nq), rng.normal(0.0, 1.0, m.nv), None, None
    m = kd.models.random_tree(4, seed=2, joint_types=("revolute", "prismatic", "helical"))
    assert [b.joint.kind for b in m.bodies] == ["helical", "revolute", "prismatic",
                                                "prismatic"]
    law = friction.Stribeck(Fc=0.05, Fs=0.08, vs=0.05, delta=2.0,
                            Fv=0.01).smoothed("tanh", 1e-2)
    forces = [kd.forces.JointDamper("joint0", 0.2), kd.forces.JointSpring("joint2", 4.0, 0.1),
              kd.forces.JointFriction("joint1", law),
              kd.forces.JointTorque([0.3], "joint3")]
    return (m, rng.uniform(-0.5, 0.5, m.nq), rng.normal(0.0, 0.8, m.nv), forces,
            (m.bodies[2].iq.start, 4.0, 0.1))


@pytest.mark.filterwarnings("error::RuntimeWarning")  # the compiled loop's fallback warns
@pytest.mark.parametrize("with_forces", [False, True])
def test_projection_variant_on_an_additive_chain_runs_the_compiled_tangent_midpoint(
        with_forces, monkeypatch):
    """On a chain whose joints all add (revolute, prismatic, helical) the projection variant
    is still midpoint in the tangent form (``_TangentMidpoint``: z = (ξ, v), q = q0 + ξ),
    then the projection onto E₀ + W_nc: _gauss_loop's tangent form computes the same (its
    chart q0 + ξ and ξ̇ = v on those joints), so it runs there, no Python step taken, equal
    step for step to the Python steps (compiled=False); and the budget E − E₀ − W_nc, by
    the Model's own energy functions and the spring's ½ k (q − q_rest)², closes to the
    projection's bar."""
    from kanedyn.integrators.energy_momentum import EnergyMomentum

    m, q0, v0, forces, spring = _additive_chain(with_forces)
    kw = {"method": "energy_momentum", "variant": "projection", "dt": 1e-3, "tol": 1e-14,
          "forces": forces}
    steps = []
    real = EnergyMomentum.step
    monkeypatch.setattr(EnergyMomentum, "step",
                        lambda self, *a: steps.append(1) or real(self, *a))
    ref = kd.simulate(m, q0, v0, 0.1, compiled=False, **kw)
    assert len(steps) == 100  # (the detector sees the Python steps)
    steps.clear()
    tr = kd.simulate(m, q0, v0, 0.1, **kw)
    assert steps == [] and "python_steps" not in tr.stats
    assert len(tr) == len(ref) == 101 and tr.method == ref.method
    # the same stage equations and projection; the predictor (extrapolated stages against
    # c h f(z0): 300 Newton updates against 400) and BLAS's ulps move Newton's stopping
    # point (tol 1e-14 of the step): measured 1.2e-15 in q, 2.4e-15 in v; 1e-12 is far
    # below the method's error
    assert np.abs(tr.q - ref.q).max() <= 1e-12 * (1.0 + np.abs(ref.q).max())
    assert np.abs(tr.v - ref.v).max() <= 1e-12 * (1.0 + np.abs(ref.v).max())
    E = np.array([kd.kinetic_energy(m, q, v) + kd.potential_energy(m, q)
                  for q, v in zip(tr.q, tr.v, strict=True)])
    if spring is not None:
        i, k, rest = spring
        E += 0.5 * k * (tr.q[:, i] - rest) ** 2
        assert abs(ref.work_nc[-1]) > 1e-2  # the forces do work (−0.048 of E₀ = −31)
    np.testing.assert_allclose(tr.work_nc, ref.work_nc, rtol=0, atol=1e-13 * np.abs(E).max())
    # each step projected to 4e-15 (1 + |E₀|): the budget closes to round-off (measured
    # 1.4e-14, 2.9e-14 of |E₀| = 34, 31)
    assert np.abs(E - E[0] - tr.work_nc).max() <= 1e-12 * (1.0 + abs(E[0]))


# ------------------------------------- kd.simulate_batch of the lie and projection loops
# (here, where the tests above compile lie_run and _gauss_loop's tangent form with momentum
# rows: the batch calls them with kd.simulate's argument types)
def _states(m, q0, v0, n, seed):
    rng = np.random.default_rng(seed)
    Q0 = np.array([kd.integrate_configuration(m, q0, 0.5 * rng.normal(size=m.nv), 1.0)
                   for _ in range(n)])
    return Q0, v0 + 0.3 * rng.normal(size=(n, m.nv))


@pytest.mark.parametrize("gravity", [(0, 0, 0), (0, 0, -9.81)])
def test_batch_lie_runs_equal_kd_simulate_per_state(gravity):
    """simulate_batch of energy_momentum on a single free body runs the lie variant's
    compiled loop per state (what variant="auto" picks): each run kd.simulate's bits, 300
    steps with a shortened last one; E = kd.kinetic_energy + kd.potential_energy of the
    batch's samples kept to 1e-12. A per-run ``mass:body`` scales m and I_c: at twice the
    model's mass the same bits as kd.simulate of a body built with 2m and 2I_c (the scaling
    is exact), at 2/3 of it round-off from the inverse and I_c taken out of the spatial
    inertia (≈ 3e-14 in q, 1.2e-12 in v at |v| ≈ 30 m/s, measured): 1e-12 relative."""
    I = np.array([[0.2, 0.01, 0.02], [0.01, 0.3, -0.03], [0.02, -0.03, 0.25]])
    c = (0.1, -0.05, 0.2)
    m = kd.models.free_body(mass=1.5, inertia=I, com=c, gravity=gravity)
    Q0, V0 = _states(m, kd.neutral(m), np.array([1.0, 2.0, -0.5, 0.3, 0.1, 2.0]), 3, 4)
    b = kd.simulate_batch(m, Q0, V0, 2.995, method="energy_momentum", dt=0.01, save_every=7)
    for k in range(3):
        s = kd.simulate(m, Q0[k], V0[k], 2.995, method="energy_momentum", dt=0.01,
                        save_every=7)
        assert np.array_equal(b.t, s.t)
        assert np.array_equal(b.q[k], s.q) and np.array_equal(b.v[k], s.v)
        E = kd.kinetic_energy(m, b.q[k], b.v[k]) + kd.potential_energy(m, b.q[k])
        assert rel(E, float(np.abs(kd.kinetic_energy(m, b.q[k], b.v[k])).max())) <= 1e-12
    assert np.all(b.work_nc == 0.0)
    masses = np.array([1.5, 3.0, 1.0])
    b = kd.simulate_batch(m, Q0, V0, 2.995, method="energy_momentum", dt=0.01,
                          params={"mass:body": masses})
    for k, mk in enumerate(masses):
        one = kd.models.free_body(mass=mk, inertia=I * (mk / 1.5), com=c, gravity=gravity)
        s = kd.simulate(one, Q0[k], V0[k], 2.995, method="energy_momentum", dt=0.01)
        if k < 2:
            assert np.array_equal(b.q[k], s.q) and np.array_equal(b.v[k], s.v)
        assert np.abs(b.q[k] - s.q).max() <= 1e-12 * np.abs(s.q).max()
        assert np.abs(b.v[k] - s.v).max() <= 1e-12 * np.abs(s.v).max()


def test_batch_projection_variant_with_momentum_rows_equals_kd_simulate():
    """On the free base with a ball joint and a hinge, no gravity, variant="auto" is the
    projection onto E and [L; P]: each batch run kd.simulate's bits (_gauss_loop with the
    momentum rows); E and [L; P] of the samples (the Model's functions) kept to 1e-13."""
    m, q0, v0 = free_ball()
    Q0, V0 = _states(m, q0, v0, 3, 2)
    b = kd.simulate_batch(m, Q0, V0, 0.2, method="energy_momentum", dt=1e-3, save_every=10)
    for k in range(3):
        s = kd.simulate(m, Q0[k], V0[k], 0.2, method="energy_momentum", dt=1e-3,
                        save_every=10)
        assert np.array_equal(b.q[k], s.q) and np.array_equal(b.v[k], s.v)
        E = kd.kinetic_energy(m, b.q[k], b.v[k]) + kd.potential_energy(m, b.q[k])
        h = kd.spatial_momentum(m, b.q[k], b.v[k])
        assert rel(E, E[0]) <= 1e-13
        assert rel(h, np.linalg.norm(h[0])) <= 1e-13


def test_batch_projection_variant_on_an_additive_chain_equals_kd_simulate():
    """variant="projection" asked for on the additive tree with force elements: each batch
    run kd.simulate's (_gauss_loop's tangent form with the energy projection), per-run
    damping included; the budget of the samples closed."""
    m, q0, v0, forces, (i, k, rest) = _additive_chain(True)
    Q0 = q0 + 0.2 * np.random.default_rng(6).normal(size=(3, m.nq))
    V0 = v0 + 0.3 * np.random.default_rng(7).normal(size=(3, m.nv))
    kw = {"method": "energy_momentum", "variant": "projection", "dt": 1e-3,
          "save_every": 10, "forces": forces}
    damping = np.array([0.2, 0.5, 1.0])
    b = kd.simulate_batch(m, Q0, V0, 0.1, params={"damping:joint0": damping}, **kw)
    for r in range(3):
        fr = [kd.forces.JointDamper("joint0", damping[r])] + forces[1:]
        s = kd.simulate(m, Q0[r], V0[r], 0.1, **(kw | {"forces": fr}))
        assert np.array_equal(b.q[r], s.q) and np.array_equal(b.v[r], s.v)
        np.testing.assert_allclose(b.work_nc[r], s.work_nc, rtol=0, atol=1e-15)
        E = (kd.kinetic_energy(m, b.q[r], b.v[r]) + kd.potential_energy(m, b.q[r])
             + 0.5 * k * (b.q[r][:, i] - rest) ** 2)
        assert np.abs(E - E[0] - b.work_nc[r]).max() <= 1e-12 * (1.0 + abs(E[0]))


@pytest.mark.parametrize("with_forces", [False, True])
def test_batch_floating_runs_equal_kd_simulate_per_state(with_forces):
    """On the floating chain variant="auto" is the floating scheme: each batch run is
    floating_run with kd.simulate's arguments, its bits (q, v, W_nc), 300 steps with a
    shortened last one — also with force rows on the arm (a damper set per run, a spring,
    a periodic motor, a wrench on a limb), where the budget E − E₀ − W_nc closes to
    1e-12 and [L; P] without forces. A damper on the base's speeds has no row the loop
    takes (kd.simulate runs the Python steps): refused before any step, naming the joint
    and variant='projection'."""
    from kanedyn.errors import KanedynError
    from kanedyn.forces import ExternalWrench, JointDamper, JointSpring, SinusoidalTorque

    m, q0, v0 = floating_chain()
    Q0, V0 = _states(m, q0, v0, 3, 3)
    c = np.array([0.1, 0.3, 0.6])
    rest = ([JointSpring("j2", 2.0, 0.1), SinusoidalTorque("j1", 0.5, 1.0),
             ExternalWrench("arm2", [0.1, -0.2, 0.3, 1.0, -0.5, 0.7])] if with_forces else [])
    kw = dict(method="energy_momentum", dt=1e-3, save_every=7)
    b = kd.simulate_batch(m, Q0, V0, 0.2995,
                          forces=[JointDamper("j1", 0.0), *rest] if with_forces else (),
                          params={"damping:j1": c} if with_forces else None, **kw)
    for k in range(3):
        one = [JointDamper("j1", c[k]), *rest] if with_forces else None
        s = kd.simulate(m, Q0[k], V0[k], 0.2995, forces=one, **kw)
        assert np.array_equal(b.q[k], s.q) and np.array_equal(b.v[k], s.v)
        assert np.array_equal(b.work_nc[k], s.work_nc)
        if with_forces:
            assert abs(b.work_nc[k, -1]) > 1e-3
            assert np.abs(b.budget[k]).max() <= 1e-12 * np.abs(b.energy[k]).max()
        else:
            h = kd.spatial_momentum(m, b.q[k], b.v[k])
            assert rel(h, np.linalg.norm(h[0])) <= 1e-12
    with pytest.raises(KanedynError, match=r"'floating' variant cannot take a force on the "
                                           r"free joint 'root'.*variant='projection'"):
        kd.simulate_batch(m, Q0, V0, 0.01, method="energy_momentum", dt=1e-3,
                          forces=[JointDamper("root", 0.1)])
