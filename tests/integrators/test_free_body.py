"""A torque-free asymmetric rigid body on a free joint (no gravity): the energy–momentum
method keeps E and the spatial momentum [L; P] to roundoff, and the body spinning near its
intermediate axis flips (the tennis-racket / Dzhanibekov effect)."""

import numpy as np
import pytest

import kanedyn as kd


@pytest.fixture(scope="module")
def spin():
    m = kd.models.free_body(mass=2.0, inertia=(0.1, 0.2, 0.3), gravity=(0, 0, 0))
    q0 = kd.neutral(m)
    q0[:3] = (0.3, -0.2, 0.1)
    v0 = np.array([0.01, 2.0, 0.01, 0.05, 0.0, -0.02])  # near the intermediate (y) axis
    tr = kd.simulate(m, q0, v0, 12.0, method="energy_momentum", dt=0.01)
    return m, tr


def test_energy_and_momentum_to_roundoff(spin):
    m, tr = spin
    E = tr.energy
    assert np.abs(E - E[0]).max() / E[0] <= 1e-12
    h = tr.momentum
    L = np.linalg.norm(h[0, :3])
    assert np.abs(h[:, :3] - h[0, :3]).max() / L <= 1e-12
    assert np.abs(h[:, 3:] - h[0, 3:]).max() / np.linalg.norm(h[0, 3:]) <= 1e-12
    # the momentum is the kernel's; check the end point with the public reference too
    np.testing.assert_allclose(kd.spatial_momentum(m, tr.q[-1], tr.v[-1]), h[0], atol=1e-12)


def test_quaternion_stays_unit(spin):
    _, tr = spin
    assert np.abs(np.linalg.norm(tr.q[:, 3:7], axis=1) - 1).max() < 1e-14


def test_intermediate_axis_flip(spin):
    """ω_y in body axes starts at +2 rad/s and reverses: linearised growth rate
    ω_y √((I2−I1)(I3−I2)/(I1 I3)) = 1.15 /s, so the first flip comes after ≈ 5 s."""
    _, tr = spin
    wy = tr.v[:, 1]
    assert wy[0] == pytest.approx(2.0)
    assert wy.min() < -1.9  # a full reversal, not a wobble
    t_flip = tr.t[np.argmax(wy < 0)]
    assert 3.0 < t_flip < 8.0


def test_plain_midpoint_keeps_energy_but_not_spatial_angular_momentum():
    """Control. The midpoint rule in tangent coordinates keeps T (a quadratic invariant of
    the Euler equations, which do not involve q) but lets the world angular momentum
    L = R I ω drift at truncation level: the structure of the energy–momentum step (R'π' =
    Rπ by the Cayley update) is what the test above measures."""
    m = kd.models.free_body(mass=2.0, inertia=(0.1, 0.2, 0.3), gravity=(0, 0, 0))
    tr = kd.simulate(m, kd.neutral(m), [0.01, 2.0, 0.01, 0, 0, 0], 6.0, method="midpoint",
                     dt=0.01)
    assert np.abs(tr.energy - tr.energy[0]).max() / tr.energy[0] < 1e-10  # (to Newton tol)
    h = tr.momentum
    assert np.abs(h[:, :3] - h[0, :3]).max() / np.linalg.norm(h[0, :3]) > 1e-7


@pytest.mark.parametrize("method", ["rk4", "gauss4"])
def test_projection_onto_energy_and_momentum_together(method):
    """project=("energy", "momentum") around a method that keeps neither exactly."""
    m = kd.models.free_body(mass=2.0, inertia=(0.1, 0.2, 0.3), gravity=(0, 0, 0))
    v0 = np.array([0.3, 2.0, -0.5, 0.05, 0.1, -0.02])
    tr = kd.simulate(m, kd.neutral(m), v0, 2.0, method=method, dt=0.02,
                     project=("energy", "momentum"))
    plain = kd.simulate(m, kd.neutral(m), v0, 2.0, method=method, dt=0.02)
    h, hp = tr.momentum, plain.momentum
    assert np.abs(tr.energy - tr.energy[0]).max() / tr.energy[0] <= 1e-13
    assert np.abs(h - h[0]).max() / np.linalg.norm(h[0]) <= 1e-13
    assert np.abs(hp - hp[0]).max() / np.linalg.norm(hp[0]) > 1e-9  # the control drifts


@pytest.mark.parametrize(("make", "why"), [
    # a ball joint ties the elbow to the world, and gravity acts: ḣ = the base's reaction
    (lambda: kd.models.ball_elbow(), "fixed base"),
    # the same free body as above, with gravity: Ṗ = m g, L̇ = c × m g
    (lambda: kd.models.free_body(mass=2.0, inertia=(0.1, 0.2, 0.3)), "gravity"),
])
@pytest.mark.parametrize("method", ["rk4", "midpoint"])
def test_momentum_projection_refused_where_the_momentum_changes(make, why, method):
    """Projecting onto a momentum the system does not conserve would hold a changing
    quantity fixed: before the check, rk4 + project=("energy", "momentum") on the elbow
    returned a motion whose momentum stayed at its start while the free run's grew 4x in
    0.5 s. Now both loops (compiled and Python) are refused before the first step."""
    m = make()
    q0 = kd.integrate_configuration(m, kd.neutral(m), 0.3 * np.cos(np.arange(m.nv)), 1.0)
    v0 = 0.2 * np.sin(np.arange(m.nv) + 1.0)
    for compiled in (True, False):
        with pytest.raises(kd.SolverError, match="'momentum' is not conserved"):
            kd.simulate(m, q0, v0, 0.01, method=method, dt=1e-3, compiled=compiled,
                        project=("energy", "momentum"))
    # the free body's linear momentum changes (m g) but not its angular momentum about a
    # vertical axis; the component check refuses the whole 3-vector (L_x, L_y change)
    with pytest.raises(kd.SolverError, match="'angular_momentum' is not conserved"):
        kd.simulate(m, q0, v0, 0.01, method=method, dt=1e-3, project="angular_momentum")


def test_momentum_rate_vanishes_for_the_free_body_without_gravity():
    """The check's own measure: ḣ along the motion is zero to round-off for the torque-free
    body (so its projection is admitted, as the test above runs) and equals the resultant
    external wrench, [c × m g; m g] about the world origin, once gravity acts."""
    from kanedyn.integrators.base import Problem
    from kanedyn.integrators.projection import momentum_rate
    from kanedyn.sim.system import ModelSystem
    from kanedyn.spatial import quat_to_matrix

    v0 = np.array([0.3, 2.0, -0.5, 0.05, 0.1, -0.02])
    for g in ((0, 0, 0), (0, 0, -9.81)):
        m = kd.models.free_body(mass=2.0, inertia=(0.1, 0.2, 0.3), gravity=g)
        q0 = kd.neutral(m)
        q0[:3] = (0.3, -0.2, 0.1)
        rate, scale = momentum_rate(Problem(ModelSystem(m), q0, v0, 1.0), q0, v0, 0.0)
        c = q0[:3] + quat_to_matrix(q0[3:7]) @ m.bodies[0].com  # centre of mass, world
        mg = 2.0 * np.asarray(g, float)
        np.testing.assert_allclose(rate, np.r_[np.cross(c, mg), mg], rtol=0, atol=1e-8 * scale)
        assert scale > 0.1  # each term is of the order of |v|² m |c|: they cancel without gravity


@pytest.mark.parametrize(("method", "compiled"), [("rk4", True), ("midpoint", True),
                                                  ("rk4", False)])
def test_energy_projection_follows_a_falling_body(method, compiled):
    """A thrown body falls 70 m in 4 s: T and V grow to ±690 J apart while E stays at its
    start (2.6 J). The projection's bar was 4 tol (1 + |E₀|) ≈ 1.4e-14, below the
    rounding of T + V (ε 1.4e3 ≈ 3e-13): every run stopped before t = 4 s ("the energy
    projection did not converge"; at dt = 1e-3 near 3.5 s). It is now taken on the size of
    the terms, 1 + |E₀| + |T| + |E − T| at the state projected, so each step ends within
    4e-15 of that (1e-13 in the worst case the reference admits)."""
    m = kd.models.free_body()
    v0 = np.array([0.3, 2.0, -0.5, 0.5, 0.1, 2.0])
    tr = kd.simulate(m, kd.neutral(m), v0, 4.0, method=method, dt=2e-3, project="energy",
                     compiled=compiled)
    assert tr.t[-1] == pytest.approx(4.0)
    T = np.array([kd.kinetic_energy(m, q, v) for q, v in zip(tr.q, tr.v, strict=True)])
    V = np.array([kd.potential_energy(m, q) for q in tr.q])
    assert T.max() > 600 and V.min() < -600  # (the regime that failed)
    E = T + V
    size = 1.0 + abs(E[0]) + T + np.abs(V)
    assert np.all(np.abs(E - E[0]) <= 1e-13 * size)
