"""ModelSystem: its kernels against the public reference functions, and ∂T/∂q and the chart
Jacobian against independent derivations (finite differences, Lagrange's equations)."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.sim.system import ModelSystem, kinetic_energy_gradient_reference

MODELS = [
    lambda: kd.models.pendulum_chain(3, planar=False),
    lambda: kd.models.pendulum_chain(3, planar=False, joint="spherical"),
    lambda: kd.models.free_body(),
    lambda: kd.models.random_tree(7, seed=1, floating_base=True),
    lambda: kd.models.random_tree(7, seed=4, floating_base=False),
]


@pytest.fixture(params=range(len(MODELS)))
def case(request):
    m = MODELS[request.param]()
    rng = np.random.default_rng(request.param)
    return m, ModelSystem(m), kd.random_configuration(m, rng), rng.normal(size=m.nv)


def test_kernel_matches_public_energies_and_momentum(case):
    m, s, q, v = case
    assert s.kinetic_energy(q, v) == pytest.approx(kd.kinetic_energy(m, q, v), rel=1e-13)
    assert s.potential_energy(q) == pytest.approx(kd.potential_energy(m, q), rel=1e-13, abs=1e-13)
    np.testing.assert_allclose(s.momentum(q, v), kd.spatial_momentum(m, q, v), atol=1e-12)
    np.testing.assert_allclose(s.gravity_torques(q), kd.gravity_torques(m, q), atol=1e-12)
    # T = ½ vᵀ M v with M from CRBA
    assert s.kinetic_energy(q, v) == pytest.approx(0.5 * v @ kd.crba(m, q) @ v, rel=1e-12)


def test_integrate_configuration_matches_public(case):
    m, s, q, v = case
    for dt in (1e-3, 0.8):
        np.testing.assert_allclose(s.integrate_configuration(q, v, dt),
                                   kd.integrate_configuration(m, q, v, dt), atol=1e-14)


def test_kinetic_energy_gradient_against_finite_differences(case):
    m, s, q, v = case
    dT = s.kinetic_energy_gradient(q, v)
    np.testing.assert_allclose(dT, kinetic_energy_gradient_reference(m, q, v), atol=1e-12)
    eps = 1e-5
    fd = np.empty(m.nv)
    for k in range(m.nv):
        e = np.zeros(m.nv)
        e[k] = eps
        fd[k] = (kd.kinetic_energy(m, kd.integrate_configuration(m, q, e, 1.0), v)
                 - kd.kinetic_energy(m, kd.integrate_configuration(m, q, -e, 1.0), v)) / (2 * eps)
    np.testing.assert_allclose(dT, fd, rtol=1e-7, atol=1e-8 * (1 + np.abs(fd).max()))


def test_lagrange_equations_close_with_the_gradient():
    """For joint coordinates, d/dt(M v) = ∂T/∂q − g + τ along the motion (Lagrange).

    d/dt(M v) = M v̇ + Ṁ v with v̇ from ABA and Ṁ v by central differences of CRBA
    along q̇ = v: an independent check of the sign and factor of ∂T/∂q.
    """
    m = kd.models.pendulum_chain(4, planar=False)
    s = ModelSystem(m)
    rng = np.random.default_rng(3)
    q, v, tau = rng.normal(size=4), rng.normal(size=4), rng.normal(size=4)
    a = kd.aba(m, q, v, tau)
    eps = 1e-6
    Mdot_v = (kd.crba(m, q + eps * v) - kd.crba(m, q - eps * v)) @ v / (2 * eps)
    lhs = kd.crba(m, q) @ a + Mdot_v
    rhs = s.kinetic_energy_gradient(q, v) - kd.gravity_torques(m, q) + tau
    np.testing.assert_allclose(lhs, rhs, atol=1e-7)


def test_chart_jacobian_against_finite_differences(case):
    m, s, q, v = case
    rng = np.random.default_rng(7)
    xi, xid = 0.4 * rng.normal(size=m.nv), rng.normal(size=m.nv)
    J = s.chart_jacobian(q, xi)
    eps = 1e-6
    q1 = s.integrate_configuration(q, xi, 1.0)
    qa = s.integrate_configuration(q, xi + eps * xid, 1.0)
    qb = s.integrate_configuration(q, xi - eps * xid, 1.0)
    # body speeds of the chart curve at ξ: the manifold difference seen from q1
    fd = (kd.difference(m, q1, qa) - kd.difference(m, q1, qb)) / (2 * eps)
    np.testing.assert_allclose(J @ xid, fd, atol=1e-8)
    if s.chart_is_additive:
        np.testing.assert_array_equal(J, np.eye(m.nv))


def test_model_is_wrapped_and_protocol_objects_pass_through():
    m = kd.models.pendulum_chain(2)
    s = kd.sim.as_system(m)
    assert isinstance(s, ModelSystem) and s.model is m
    assert kd.sim.as_system(s) is s


class ProtocolOnly:
    """Exactly the DESIGN.md protocol, nothing more (like a compiled Kane system)."""

    def __init__(self, model):
        s = kd.ModelSystem(model)
        self.nq, self.nv = model.nq, model.nv
        for name in ("mass_matrix", "nonlinear_effects", "forward_dynamics", "energy", "q_dot",
                     "integrate_configuration"):
            setattr(self, name, getattr(s, name))


@pytest.mark.parametrize("method", ["rk4", "avf", "midpoint", "dopri5"])
def test_protocol_only_system_planar(method):
    """The fallbacks (∂T/∂q and g by differences) give the ModelSystem's trajectory."""
    m = kd.models.pendulum_chain(2)
    a = kd.simulate(ProtocolOnly(m), [1.0, 0.5], [0, 0], 0.5, method=method, dt=1e-2)
    # (the Model's Python steps: the compiled loops are tested against them elsewhere,
    # and compiling them for this file costs its worker a minute on a cold cache)
    off = {} if method == "dopri5" else {"compiled": False}
    b = kd.simulate(m, [1.0, 0.5], [0, 0], 0.5, method=method, dt=1e-2, **off)
    np.testing.assert_allclose(a.q, b.q, atol=1e-8)


@pytest.mark.parametrize("method", ["rk4", "midpoint"])
def test_protocol_only_system_with_quaternions(method):
    """Without chart_jacobian, J(ξ) comes from q_dot and integrate_configuration."""
    m = kd.models.pendulum_chain(2, planar=False, joint="spherical")
    rng = np.random.default_rng(0)
    q0, v0 = kd.random_configuration(m, rng), rng.normal(size=6)
    a = kd.simulate(ProtocolOnly(m), q0, v0, 0.3, method=method, dt=1e-2)
    b = kd.simulate(m, q0, v0, 0.3, method=method, dt=1e-2, compiled=False)  # (as above)
    np.testing.assert_allclose(a.q, b.q, atol=1e-8)


def test_capabilities_are_declared_not_guessed_from_the_class():
    """Integrators read what a system declares (sim/system.py's module doc), never its
    class name: a ModelSystem declares its charts, its compiled loop and its tree; a
    model with rotor inertia has no compiled loop (that loop's energy has no ½ J v²);
    a constrained system declares its constraints; an object that says nothing gets the
    protocol's fallbacks — and the same object declaring a Model's charts gets them."""
    from kanedyn.integrators.chart import ModelChart, ProtocolChart, make_chart
    from kanedyn.integrators.rk4_compiled import applicable

    model = kd.models.pendulum_chain(2)
    s = kd.ModelSystem(model)
    assert s.has_chart and s.tree_model is model and s.compiled_step is model
    assert [k for k, _, _ in s.chart_joints] == ["revolute", "revolute"]
    assert s.nonholonomic is False and not getattr(s, "handles_constraints", False)
    b = kd.ModelBuilder("rotor", gravity=(0.0, 0.0, 0.0))
    b.add_body("link", None, kd.model.joints.Revolute("j", armature=0.1), mass=1.0,
               inertia=np.eye(3))
    assert kd.ModelSystem(b.build()).compiled_step is None
    ball = kd.ModelSystem(kd.models.free_body())
    assert ball.compiled_step is None and isinstance(make_chart(ball), ModelChart)

    class Plain:  # the protocol and nothing more, but a class named like the real one
        nq = nv = 2

    Plain.__name__ = "ModelSystem"
    plain = Plain()
    assert isinstance(make_chart(plain), ProtocolChart)
    problem = type("P", (), dict(system=plain, tau_cons=None, tau_nc=None, progress=None))
    assert not applicable(problem)
    problem.system = s
    assert applicable(problem)
    from kanedyn.constraints.mechanisms import four_bar_system

    assert four_bar_system().handles_constraints


def test_energy_of_a_non_unit_quaternion_is_refused():
    """The energy kernel reads the joint transforms of the dynamics kernels, which check
    each quaternion's norm: a bad one is named, not turned into a non-rigid rotation."""
    m = kd.models.pendulum_chain(1, planar=False, joint="spherical")
    s = ModelSystem(m)
    q = np.array([1.1, 0.0, 0.0, 0.0])
    with pytest.raises(kd.StateError, match=r"quaternion .* has norm 1.1"):
        s.energy(q, np.zeros(3))
