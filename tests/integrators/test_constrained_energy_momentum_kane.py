"""Constrained energy–momentum on a compiled Kane system with configuration constraints
(issue 19, integrators/kane_index3.py): the four-bar of ``kane.classic.four_bar`` (three
coordinates, the loop closure's two rows, one independent speed), through its index-3 form.

Independent references: the same four-bar as a Model cut at a pin
(constraints.mechanisms.four_bar_system, the recursive algorithms and the compiled loop
rows), whose run by the same method the tests of test_constrained_energy_momentum.py check
against the crank's Lagrange equation. Runs are 300 steps (Python steps, ≈ 2 ms each).
"""

from dataclasses import replace

import numpy as np
import pytest
import sympy as sp
from sympy.physics.vector import dynamicsymbols

import kanedyn as kd
from kanedyn import kane
from kanedyn.constraints import KaneConstrainedSystem, consistent_initial_values
from kanedyn.constraints.mechanisms import four_bar_configuration, four_bar_system
from kanedyn.errors import ConstraintError, SolverError, SymbolicError
from kanedyn.forces import JointDamper, JointTorque, SinusoidalTorque
from kanedyn.kane import classic


@pytest.fixture(scope="module")
def four_bar():
    system, info = classic.four_bar()
    values = {str(k): v for k, v in info["values"].items()}
    cs = system.derive().compile("numba", parameters=values)
    model = four_bar_system()
    start = consistent_initial_values(model, four_bar_configuration(np.pi / 3),
                                      np.array([2.0, 0.0, 0.0]))
    return system, info, cs, model, start


def test_index3_form_equals_the_model(four_bar):
    """M, forcing, g, ∂g/∂q, γ, ∂T/∂q, ∂V/∂q and E of the generated index-3 form equal the
    Model-based system's (crba, RNEA, the loop rows, the energy kernel) at random states."""
    _, _, cs, model, _ = four_bar
    k = KaneConstrainedSystem(cs)
    assert (k.nq, k.nv, k.nc, k.independent, k.dependent) == (3, 3, 2, [0], [1, 2])
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, v = rng.uniform(-2, 2, 3), rng.uniform(-2, 2, 3)
        pairs = [(k.mass_matrix(q), model.mass_matrix(q)),
                 (k.applied_forces(0.0, q, v), model.applied_forces(0.0, q, v)),
                 (k.constraint(0.0, q), model.constraint(0.0, q)),
                 (k.constraint_matrix(0.0, q), model.constraint_matrix(0.0, q)),
                 (k.gamma(0.0, q, v), model.gamma(0.0, q, v)),
                 *zip(k.hamiltonian_terms(q, v), model.hamiltonian_terms(q, v), strict=True),
                 (k.energy(q, v), model.energy(q, v))]
        for a, b in pairs:
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    # the numpy backend's index-3 form (a batch of states) gives the same terms
    system, info = four_bar[:2]
    values = {str(k): v for k, v in info["values"].items()}
    k_np = kane.index3_equations(system).compile("numpy", parameters=values)
    Q, V = rng.uniform(-2, 2, (4, 3)), rng.uniform(-2, 2, (4, 3))
    for a, b in zip((*k_np.hamiltonian_terms(Q, V), *k_np.constraint_rows(Q, V)),
                    (*k.kane.hamiltonian_terms(Q, V), *k.kane.constraint_rows(Q, V)),
                    strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)


@pytest.mark.parametrize("method", ["energy_momentum", "avf"])
def test_four_bar_exact_energy_and_constraints_as_the_model(four_bar, method):
    """300 steps: the relative energy error and |g|, |G u| stay at round-off at every
    step, and the trajectory is the Model-based four-bar's by the same method (to
    1e-10: the same equations, evaluated in another order)."""
    _, _, cs, model, start = four_bar
    tr = kd.simulate(cs, start.q, start.v[:1], 0.3, method=method, dt=1e-3, progress=False)
    assert tr.v.shape == (301, 1) and tr.stats["speeds"].shape == (301, 3)
    assert str(tr.stats["form"]) == "index3"
    E = tr.energy
    assert np.abs(E - E[0]).max() / abs(E[0]) <= 1e-12
    assert np.abs(tr.stats["residual_g"]).max() <= 1e-12
    assert np.abs(tr.stats["residual_Gv"]).max() <= 1e-12
    # the eliminated system's own residuals at the recorded states: g, and the velocity
    # constraints at the integrator's dependent speeds
    g, _ = cs.constraint_residuals(tr.q, tr.v)
    assert np.abs(g).max() <= 1e-12
    np.testing.assert_allclose(tr.stats["dependent_speeds"], cs.dependent_speeds(tr.q, tr.v),
                               rtol=0, atol=1e-12)
    # the Model's Python steps (the compiled loop's are the same to round-off)
    ref = kd.simulate(model, start.q, start.v, 0.3, method=method, dt=1e-3, progress=False,
                      compiled=False)
    np.testing.assert_allclose(tr.q, ref.q, rtol=0, atol=1e-10)
    np.testing.assert_allclose(tr.stats["speeds"], ref.v, rtol=0, atol=1e-9)
    np.testing.assert_allclose(tr.stats["lam"], ref.stats["lam"], rtol=0, atol=1e-8)
    assert abs(tr.q[-1, 0] - tr.q[0, 0]) > 0.2   # the crank turned


def _relative_coupler_speed(system, info):
    """The four-bar with u2 the coupler's absolute rate: q̇2 = u2 − u1, not u2."""
    q, u = info["q"], info["u"]
    qdot = {q[0].diff(): u[0], q[1].diff(): u[1] - u[0], q[2].diff(): u[2]}
    kde = [u[0] - q[0].diff(), u[1] - q[0].diff() - q[1].diff(), u[2] - q[2].diff()]
    rates = [c.diff(dynamicsymbols._t).xreplace(qdot) for c in info["closure"]]
    return replace(system, kinematic_equations=kde, velocity_constraints=rates)


def test_what_the_index3_form_needs(four_bar):
    """q̇ ≠ u, no potential energy, a V that is not the loads' potential, an input without
    its values, forces=: each a clear error naming what is missing; avf keeps the
    eliminated form where the index-3 one cannot be had."""
    system, info, _, _, start = four_bar
    values = {str(k): v for k, v in info["values"].items()}
    relative = _relative_coupler_speed(system, info)
    with pytest.raises(SymbolicError, match=r"needs the kinematic equations q̇ = u .* "
                                            r"q̇ of q2 is -u1 \+ u2, not u2"):
        kane.index3_equations(relative)
    with pytest.raises(SymbolicError, match=r"potential energy separately.*potential_energy=V"):
        kane.index3_equations(replace(system, potential_energy=None))
    # through kd.simulate (numpy backend: nothing to compile)
    cs = relative.derive().compile("numpy", parameters=values)
    u0 = [start.v[0], start.v[0] + start.v[1]]   # u1, u2 = absolute coupler rate
    with pytest.raises(SolverError, match="energy_momentum.* index-3 form, which cannot be "
                                          "formed: .*q̇ = u"):
        kd.simulate(cs, start.q, u0[:1], 0.01, method="energy_momentum", dt=1e-3,
                    progress=False)
    tr = kd.simulate(cs, start.q, u0[:1], 0.01, method="avf", dt=1e-3, progress=False)
    assert str(tr.stats["form"]) == "eliminated"
    assert np.abs(tr.energy - tr.energy[0]).max() <= 1e-12 * abs(tr.energy[0])
    # a potential_energy that is not the potential of the loads (twice gravity's): the
    # check of Lagrange's equations with T, V and F_nc names a speed
    V = system.potential_energy
    cs = replace(system, potential_energy=2 * V).derive().compile("numpy", parameters=values)
    with pytest.raises(ConstraintError, match=r"not Lagrange's with its T, V and the "
                                              r"non-conservative loads .* speed u\d .*"
                                              r"potential_energy is not the potential of "
                                              r"the loads in q alone"):
        kd.simulate(cs, start.q, start.v[:1], 0.01, method="energy_momentum", dt=1e-3,
                    progress=False)
    # a constant torque on the crank is a load in q alone: conservative, so its potential
    # −tm q1 belongs in V; without it, the crank's equation is named
    tm = sp.Symbol("tm")
    cs = replace(system, loads=[*system.loads, (info["A"], tm * info["N"].z)]).derive() \
        .compile("numpy", parameters={**values, "tm": 0.5})
    with pytest.raises(ConstraintError, match=r"speed u1 differs by 0.5\b"):
        KaneConstrainedSystem(cs)
    # an input (a specified torque on the crank) whose values this path is not given
    T1 = sp.Symbol("T1")
    driven = replace(system, loads=[*system.loads, (info["A"], T1 * info["N"].z)],
                     inputs=[T1])
    cs = driven.derive().compile("numpy", parameters=values)
    with pytest.raises(ConstraintError, match="inputs T1 are specified quantities .* inputs="):
        kd.simulate(cs, start.q, start.v[:1], 0.01, method="energy_momentum", dt=1e-3,
                    progress=False)
    # given as inputs=, they are F_nc: the crank's equation gains T1
    k = KaneConstrainedSystem(cs, inputs=lambda t, q, u: [0.7])
    assert k.has_nonconservative_forces
    q, u = np.array([0.3, -0.2, 0.9]), np.array([0.5, -1.0, 0.2])
    np.testing.assert_allclose(k.nonconservative_forces(0.0, q, u), [0.7, 0.0, 0.0],
                               rtol=0, atol=1e-14)
    _, _, cs, model, _ = four_bar
    with pytest.raises(SolverError, match="force elements .* not taken"):
        kd.simulate(cs, start.q, start.v[:1], 0.01, method="energy_momentum", dt=1e-3,
                    forces=[JointTorque([0.1])], progress=False)


# ------------------------------------------------ non-conservative loads: F_nc = F_r + ∂V/∂q
@pytest.fixture(scope="module")
def damped_four_bar(four_bar):
    """The four-bar with a viscous damper −c u1 and a motor torque a cos(ω t) on the crank,
    as a load of the KaneSystem (in u and t: non-conservative; V stays gravity's)."""
    system, info, _, model, start = four_bar
    values = {str(k): v for k, v in info["values"].items()}
    c, a, w = sp.symbols("c a w")
    t = dynamicsymbols._t
    torque = (a * sp.cos(w * t) - c * info["u"][0]) * info["N"].z
    damped = replace(system, loads=[*system.loads, (info["A"], torque)])
    cs = damped.derive().compile("numba", parameters={**values, "c": 0.3, "a": 0.8, "w": 3.0})
    return cs, model, start


def test_damper_and_motor_through_their_work(damped_four_bar):
    """Issue 19: the damper and the motor enter the step through F_nc, their generalized
    active forces (generated; exactly (a cos ωt − c u1, 0, 0) here). 1000 steps: the
    budget E − E0 − W_nc ≤ 1e-10 |E0| and |g| ≤ 1e-12 at every step, the damper dissipates
    a noticeable part of E0; and the trajectory is the Model four-bar's with JointDamper and
    SinusoidalTorque on its crank pin, by the same method (independently derived
    equations), at t = 0.3."""
    cs, model, start = damped_four_bar
    k = KaneConstrainedSystem(cs)
    assert k.has_nonconservative_forces
    rng = np.random.default_rng(7)
    for t in (0.0, 0.4, 1.3):
        q, u = rng.uniform(-2, 2, 3), rng.uniform(-2, 2, 3)
        np.testing.assert_allclose(k.nonconservative_forces(t, q, u),
                                   [0.8 * np.cos(3.0 * t) - 0.3 * u[0], 0.0, 0.0],
                                   rtol=0, atol=1e-13)
    tr = kd.simulate(cs, start.q, start.v[:1], 1.0, method="energy_momentum", dt=1e-3,
                     progress=False)
    assert str(tr.stats["form"]) == "index3" and tr.q.shape == (1001, 3)
    E, W = tr.energy, tr.work_nc
    E0 = abs(E[0])
    assert np.abs(E - E[0] - W).max() <= 1e-10 * E0
    assert np.abs(tr.budget).max() <= 1e-10 * E0
    assert np.abs(tr.stats["residual_g"]).max() <= 1e-12
    assert np.abs(tr.stats["residual_Gv"]).max() <= 1e-12
    u1 = tr.v[:, 0]
    dissipated = 0.3 * float(np.sum(0.5 * (u1[1:] ** 2 + u1[:-1] ** 2)) * 1e-3)
    assert dissipated > 0.05 * E0
    ref = kd.simulate(model, start.q, start.v, 0.3, method="energy_momentum", dt=1e-3,
                      progress=False,
                      forces=[JointDamper("crank_pin", 0.3),
                              SinusoidalTorque("crank_pin", 0.8, 3.0 / (2 * np.pi),
                                               phase=np.pi / 2)])
    np.testing.assert_allclose(tr.q[:301], ref.q, rtol=0, atol=1e-10)
    np.testing.assert_allclose(tr.stats["speeds"][:301], ref.v, rtol=0, atol=1e-9)
    np.testing.assert_allclose(W[:301], ref.work_nc, rtol=0, atol=1e-10)


def test_conservative_kane_system_has_no_nonconservative_forces(four_bar):
    """Gravity only (a load in q alone, in V): F_nc is identically zero, and the step
    stays the conservative one."""
    _, _, cs, _, _ = four_bar
    k = KaneConstrainedSystem(cs)
    assert not k.has_nonconservative_forces
    q, u = np.array([0.3, -0.2, 0.9]), np.array([0.5, -1.0, 0.2])
    assert not np.any(k.nonconservative_forces(0.0, q, u))
