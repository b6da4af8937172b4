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
from kanedyn.forces import JointTorque
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
    """q̇ ≠ u, no potential energy, a load outside V, forces=: each a clear error naming
    what is missing; avf keeps the eliminated form where the index-3 one cannot be had."""
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
    # a damper on the crank in the loads, V of gravity only
    c = sp.Symbol("c")
    damped = replace(system, loads=[*system.loads,
                                    (info["A"], -c * info["u"][0] * info["N"].z)])
    cs = damped.derive().compile("numpy", parameters={**values, "c": 0.1})
    with pytest.raises(ConstraintError, match="not in the potential energy .* speed u1"):
        kd.simulate(cs, start.q, start.v[:1], 0.01, method="energy_momentum", dt=1e-3,
                    progress=False)
    _, _, cs, model, _ = four_bar
    with pytest.raises(SolverError, match="force elements .* not taken"):
        kd.simulate(cs, start.q, start.v[:1], 0.01, method="energy_momentum", dt=1e-3,
                    forces=[JointTorque([0.1])], progress=False)
