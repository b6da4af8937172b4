"""Exact stick–slip friction in the constrained energy–momentum step (issue 19 with the
friction issue's exact laws; integrators/constrained_friction.py).

Checked against independent derivations: a held mechanism's friction torques against the
principle of virtual work (the potential's slope along the four-bar's one-coordinate path,
by differences of four_bar_configuration; on the Stewart platform Nᵀ(τ_f − g(q)) = 0 with
N the null space of the loop Jacobian and g(q) from kd.rnea), the break-away time of a
ramped motor against that static balance, a sliding joint against the same run with the
law given as a smoothed force element (equal forces while |v| ≫ ε), and the energy budget
against the recorded work. Python steps (≈ 1–5 ms a step), 100–600 steps a run.
"""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.constraints.mechanisms import (
    four_bar_configuration,
    four_bar_problem,
    stewart_configuration,
    stewart_system,
)
from kanedyn.errors import FrictionError
from kanedyn.forces import JointDamper, JointFriction, JointTorque
from kanedyn.friction import Stribeck


def budget(tr) -> float:
    """max |E − E0 − W_nc| / max |E|."""
    E = tr.energy
    return float(np.abs(E - E[0] - tr.work_nc).max() / np.abs(E).max())


def slope_of_potential(system, theta: float, e: float = 1e-6) -> float:
    """dV/dθ1 along the four-bar's one-coordinate path (central differences)."""
    def V(th):
        return system.energy(four_bar_configuration(th), np.zeros(3))
    return (V(theta + e) - V(theta - e)) / (2 * e)


@pytest.mark.parametrize("method", ["energy_momentum", "avf"])
def test_four_bar_comes_to_rest_and_is_held_by_the_static_torque(method):
    prob = four_bar_problem(omega1=4.0)
    s = prob.system
    law = Stribeck(Fc=2.0, Fs=2.5, vs=0.05, Fv=0.01)
    tr = kd.simulate(s, prob.q0, prob.v0, 0.5, method=method, dt=1e-3,
                     forces=[JointFriction("crank_pin", law), JointDamper("rocker_pin", 0.05)])
    fr = tr.friction
    held = fr.stuck[:, 0]
    k = int(np.argmax(held))
    assert 0 < k and held[k:].all() and not held[:k].any()  # slides, stops, stays
    # held: still to the last bit (the whole mechanism: one joint locks a four-bar)
    assert np.all(tr.v[k:] == 0.0) and np.all(tr.q[k:] == tr.q[k])
    assert budget(tr) <= 1e-10
    assert np.abs(tr.stats["residual_g"]).max() <= 1e-12
    assert np.abs(tr.stats["residual_Gv"]).max() <= 1e-12
    # the friction's work is dissipation, and the budget's friction share is recorded
    assert np.all(np.diff(fr.work) <= 1e-15) and fr.work[-1] < 0
    # holding torque = dV/dθ1 (virtual work), within the static level
    th = tr.q[-1, 0]
    assert np.allclose(tr.q[-1], four_bar_configuration(th), atol=1e-12)
    tau_hold = slope_of_potential(s, th)
    assert abs(fr.force[-1, 0] - tau_hold) <= 1e-7 * max(1.0, abs(tau_hold))
    assert abs(fr.force[-1, 0]) < law.Fs


def test_held_joint_breaks_away_when_the_motor_passes_the_static_level():
    prob = four_bar_problem()
    s = prob.system
    th0 = np.pi / 3
    q0 = four_bar_configuration(th0)
    law = Stribeck(Fc=1.5, Fs=2.5, vs=0.05)
    a = 8.0  # N m/s, the motor's ramp on the crank
    h = 1e-3
    tr = kd.simulate(s, q0, np.zeros(3), 0.6, method="energy_momentum", dt=h,
                     forces=[JointFriction("crank_pin", law),
                             JointTorque(lambda t, q, v: [a * t], joints="crank_pin")])
    held = tr.friction.stuck[:, 0]
    # static balance along the path, the motor taken at the step's midpoint as the step
    # does: held while |dV/dθ1 − a (t_n + h/2)| ≤ Fs; the first step past it slides
    dV = slope_of_potential(s, th0)
    t_mid = tr.t[:-1] + 0.5 * h
    predicted = int(np.argmax(np.abs(dV - a * t_mid) > law.Fs))
    assert 0 < predicted < len(t_mid) - 20
    released = int(np.argmin(held[1:]))  # the first step that ends sliding
    assert released == predicted
    assert np.all(tr.v[:released + 1] == 0.0)
    # while held the friction torque is the static one; then the crank turns the way the
    # motor pushes (a > 0 past dV + Fs: forward)
    n = released
    assert np.allclose(tr.friction.force[1:n + 1, 0], dV - a * t_mid[:n], atol=1e-7)
    assert np.all(tr.v[released + 1:, 0] > 0)
    assert budget(tr) <= 1e-10


def test_sliding_joint_equals_the_smoothed_law_where_it_saturates():
    # Coulomb level (Fs = Fc, Fv = 0): the exact law's force −c sgn v and the smoothed
    # law's −c tanh(v̄/ε) agree to round-off while |v̄| ≫ ε, so do the two runs
    prob = four_bar_problem(omega1=4.0)
    law = Stribeck(Fc=0.4, Fs=0.4, vs=0.05)
    runs = [kd.simulate(prob.system, prob.q0, prob.v0, 0.1, method="energy_momentum",
                        dt=1e-3, forces=[JointFriction("crank_pin", x)])
            for x in (law, law.smoothed("tanh", 1e-6))]
    assert np.all(np.abs(runs[0].v[:, 0]) > 0.5)  # |v̄|/ε > 5e5: tanh = ±1 exactly
    assert np.abs(runs[0].q - runs[1].q).max() <= 1e-12
    assert np.abs(runs[0].v - runs[1].v).max() <= 1e-10
    assert np.abs(runs[0].work_nc - runs[1].work_nc).max() <= 1e-12
    assert not runs[0].friction.stuck.any()


def test_stewart_platform_held_by_six_legs_at_once_then_sliding():
    s = stewart_system()
    q0 = stewart_configuration(s, position=(0.05, 0.0, 0.0))
    legs = [f"p{k}" for k in range(6)]
    # strong friction: all six pistons held from rest, the platform still to the last bit
    law = Stribeck(Fc=32.0, Fs=40.0, vs=0.02, Fv=1.0)
    tr = kd.simulate(s, q0, np.zeros(s.nv), 0.1, method="energy_momentum", dt=2e-3,
                     forces=[JointFriction(j, law) for j in legs])
    assert tr.friction.stuck.all() and np.all(tr.v == 0.0) and np.all(tr.q == q0)
    # the six holding forces against virtual work: Nᵀ(τ_f − g(q)) = 0, N spanning the
    # loops' null space, g(q) the torques that hold the open tree at rest
    iv = [s.model.bodies[s.model.joint_index(j)].iv.start for j in legs]
    tau = np.zeros(s.nv)
    tau[iv] = tr.friction.force[-1]
    G = s.constraint_matrix(0.0, q0)[:s.nc]
    N = np.linalg.svd(G)[2][s.nc:].T
    g = kd.rnea(s.model, q0, np.zeros(s.nv), np.zeros(s.nv))
    assert np.abs(N.T @ (tau - g)).max() <= 1e-9 * np.abs(g).max()
    assert np.all(np.abs(tr.friction.force[-1]) < law.Fs)
    # weaker friction: held at the start, legs break away (some later than others) and
    # the platform sinks; held rows and sliding legs in the same Newton system
    law = Stribeck(Fc=20.0, Fs=25.0, vs=0.02, Fv=1.0)
    tr = kd.simulate(s, q0, np.zeros(s.nv), 0.2, method="energy_momentum", dt=2e-3,
                     forces=[JointFriction(j, law) for j in legs])
    frac = tr.friction.stuck.mean(axis=0)
    assert frac.min() < frac.max() < 1.0   # partial holds with a multi-DOF mechanism
    assert budget(tr) <= 1e-10
    assert np.abs(tr.stats["residual_g"]).max() <= 1e-12
    assert np.abs(tr.stats["residual_Gv"]).max() <= 1e-12
    assert tr.q[-1, s.model.bodies[0].iq.start + 2] < q0[s.model.bodies[0].iq.start + 2]


def test_exact_friction_against_a_moving_surface_is_refused():
    prob = four_bar_problem()
    law = Stribeck(Fc=1.0, Fs=1.5, vs=0.05)
    with pytest.raises(FrictionError, match="still surface"):
        kd.simulate(prob.system, prob.q0, prob.v0, 0.01, method="energy_momentum", dt=1e-3,
                    forces=[JointFriction("crank_pin", law, surface_velocity=0.1)])


def test_a_held_crank_with_a_ball_joint_in_the_loop():
    # the RSSR: a ball joint in the tree (the step in its chart); holding the crank leaves
    # the coupler's spin about its own axis free, so the held row and a moving mechanism
    # share the Newton system
    from kanedyn.constraints import consistent_initial_values
    from kanedyn.constraints.mechanisms import rssr_guess, rssr_system

    s = rssr_system()
    v = np.zeros(s.nv)
    v[0] = 4.0
    start = consistent_initial_values(s, rssr_guess(s), v)
    law = Stribeck(Fc=2.4, Fs=3.0, vs=0.05)
    tr = kd.simulate(s, start.q, start.v, 0.4, method="energy_momentum", dt=1e-3,
                     forces=[JointFriction("crank_pin", law)])
    held = tr.friction.stuck[:, 0]
    k = int(np.argmax(held))
    assert 0 < k and held[k:].all()
    assert np.all(tr.v[k:, 0] == 0.0) and np.all(tr.q[k:, 0] == tr.q[k, 0])
    assert budget(tr) <= 1e-10
    assert np.abs(tr.stats["residual_g"]).max() <= 1e-12
    assert np.all(np.abs(tr.friction.force[k:, 0]) <= law.Fs)
