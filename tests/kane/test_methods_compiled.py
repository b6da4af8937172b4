"""kd.simulate(method="verlet", "midpoint", "gauss4", "avf", "energy_momentum" or
"itoh_abe") on a compiled Kane system runs the compiled loops of
integrators/kane_compiled.py (one loop per method for every system, the generated functions
passed in as first-class functions), which must equal the Python steps of
integrators/verlet.py, gauss.py, discrete_gradient.py and energy_momentum.py (their readable
references) step for step."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.integrators import kane_compiled
from kanedyn.kane import tree


@pytest.fixture(scope="module")
def branched():
    """A branched tree of hinge, slider and screw joints (additive coordinates: q̇ = u),
    its Kane equations compiled by numba; a state that swings every joint."""
    model = kd.models.random_tree(4, seed=2, joint_types=("revolute", "prismatic", "helical"))
    system = tree.derive(model).compile(backend="numba")
    rng = np.random.default_rng(3)
    return model, system, rng.uniform(-0.8, 0.8, model.nq), rng.normal(0.0, 0.8, model.nv)


@pytest.mark.parametrize("method", ["verlet", "midpoint", "gauss4", "avf", "energy_momentum",
                                    "itoh_abe", "itoh_abe symmetric"])
def test_compiled_loops_equal_the_python_steps(branched, monkeypatch, method):
    model, system, q0, v0 = branched
    assert system.chart_is_additive and system.ninputs > 0
    runs = []

    def counted(*args):
        runs.append(1)
        return run(*args)

    method, *variant = method.split()
    options = {"variant": variant[0]} if variant else {}
    entry = {"verlet": "run_verlet", "avf": "run_avf", "energy_momentum": "run_gonzalez",
             "itoh_abe": "run_itoh_abe"}.get(method, "run_gauss")
    run = getattr(kane_compiled, entry)
    monkeypatch.setattr(kane_compiled, entry, counted)
    fast = kd.simulate(system, q0, v0, 0.3, method=method, dt=2e-3, **options)
    assert runs == [1] and fast.stats["newton_iterations"].size == 150  # the loop's run
    ref = kd.simulate(system, q0, v0, 0.3, method=method, dt=2e-3, compiled=False, **options)
    # the same arithmetic in the same order (bit for bit here); M v, LU solves and M⁻¹ by
    # numba's BLAS and LAPACK against numpy's may differ by ulps, which Newton's stopping
    # point (tol 1e-12 to 1e-14 of the step) can carry: 1.5e-11 after 200 steps of gauss4
    # on a 7-link chain (bench/kane_methods.py); 1e-10 is far below any method error
    _close_steps(fast, ref, 1e-10)
    # and it is the model's motion: the energy error of these symplectic methods stays
    # O(h²) (midpoint, verlet) or O(h⁴) (gauss4), bounded; the discrete gradients keep it
    # (AVF to the round-off of its central differences of T)
    E = np.array([kd.kinetic_energy(model, q, v) + kd.potential_energy(model, q)
                  for q, v in zip(fast.q, fast.v, strict=True)])
    exact = method in ("avf", "energy_momentum", "itoh_abe")
    assert np.abs(E - E[0]).max() <= (1e-11 if exact else 1e-3) * (1.0 + abs(E[0]))


def test_where_the_loop_does_not_apply_the_python_steps_run(branched):
    model, system, q0, v0 = branched
    numpy_system = tree.derive(model).compile(backend="numpy")
    tr = kd.simulate(numpy_system, q0, v0, 0.01, method="verlet", dt=2e-3)
    fast = kd.simulate(system, q0, v0, 0.01, method="verlet", dt=2e-3)
    np.testing.assert_allclose(tr.q, fast.q, rtol=0, atol=1e-12)
    bare = SimpleNamespace(tau_cons=None, tau_nc=None, potential=None, progress=None)
    assert kane_compiled.applicable(SimpleNamespace(**vars(bare), system=system))
    assert not kane_compiled.applicable(SimpleNamespace(**vars(bare), system=numpy_system))


def _loops_run(m) -> list:
    """The names of the loops of kane_compiled that run from here on, in order:
    ``_compiled_loop`` wrapped by ``m`` (pytest's monkeypatch, or one of its contexts)."""
    calls = []
    real = kane_compiled._compiled_loop
    m.setattr(kane_compiled, "_compiled_loop",
              lambda f, sig: calls.append(f.__name__) or real(f, sig))
    return calls


def _close_steps(fast, ref, tol: float, work_abs: float | None = None,
                 work_rel: float | None = None) -> float:
    """A compiled run ``fast`` against its Python steps ``ref``: q and v within tol · scale,
    W_nc within ``work_abs`` or ``work_rel`` · scale where given, the same Newton
    iterations step for step; scale = 1 + max|q| + max|v| of ref, returned."""
    scale = 1.0 + np.abs(ref.q).max() + np.abs(ref.v).max()
    assert np.abs(fast.q - ref.q).max() <= tol * scale
    assert np.abs(fast.v - ref.v).max() <= tol * scale
    if work_abs is not None or work_rel is not None:
        atol = work_abs if work_abs is not None else work_rel * scale
        np.testing.assert_allclose(fast.work_nc, ref.work_nc, rtol=0, atol=atol)
    np.testing.assert_array_equal(fast.stats["newton_iterations"],
                                  ref.stats["newton_iterations"])
    return scale


def _elements(model, friction: bool) -> list:
    """A spring, a damper, a sinusoidal and a constant torque on the tree's joints (by the
    Model's joint names: the Kane tree binds them through its ``source_model``), and a
    smoothed Stribeck friction where ``friction``."""
    from kanedyn.forces import (
        JointDamper,
        JointFriction,
        JointSpring,
        JointTorque,
        SinusoidalTorque,
    )
    from kanedyn.friction.laws import Stribeck

    j = [b.joint.name for b in model.bodies]
    out = [JointSpring(j[0], 3.0, 0.2), JointDamper(j[1], 0.3),
           SinusoidalTorque(j[2], 0.5, 1.5, 0.1),
           JointTorque(np.full(model.nv, 0.05))]
    if friction:
        out.append(JointFriction(j[3], Stribeck(0.2, 0.3, 0.1).smoothed("tanh", 0.02)))
    return out


@pytest.mark.parametrize("method", ["rk4", "verlet", "midpoint", "gauss4", "avf",
                                    "energy_momentum", "itoh_abe", "itoh_abe symmetric"])
def test_compiled_loops_with_force_elements_equal_the_python_steps(branched, monkeypatch,
                                                                  method):
    """Springs, dampers, torques and friction enter each loop where its Python reference
    puts them (module doc of kane_compiled; rk4: the generated forward dynamics with τ as
    its inputs): the same steps, the same W_nc, and for the discrete gradients the energy
    budget E(t) − E(0) = W_nc(t) closed."""
    model, system, q0, v0 = branched
    method, *variant = method.split()
    options = {"variant": variant[0]} if variant else {}
    calls = _loops_run(monkeypatch)
    for friction in (False, True):
        forces = _elements(model, friction)
        fast = kd.simulate(system, q0, v0, 0.3, method=method, dt=2e-3, forces=forces,
                           **options)
        ref = kd.simulate(system, q0, v0, 0.3, method=method, dt=2e-3, forces=forces,
                          compiled=False, **options)
        scale = 1.0 + np.abs(ref.q).max() + np.abs(ref.v).max()
        if not friction:
            # the same arithmetic in the same order as the references: bit for bit (W_nc
            # but for the order of its power sums vᵀτ; a torque's offset and a constant
            # torque on one joint would be summed in another order too: none here)
            np.testing.assert_array_equal(fast.q, ref.q)
            np.testing.assert_array_equal(fast.v, ref.v)
            np.testing.assert_array_equal(fast.stats["newton_iterations"],
                                          ref.stats["newton_iterations"])
        else:
            # the compiled Stribeck law rounds differently from the element's (both tested
            # against each other to round-off in tests/forces), which Newton's stopping
            # point carries: 1e-11 here; 1e-10 is far below any method error
            assert np.abs(fast.q - ref.q).max() <= 1e-10 * scale
            assert np.abs(fast.v - ref.v).max() <= 1e-10 * scale
        assert abs(ref.work_nc[-1]) > 1e-3  # the forces do work: a test of its placement
        np.testing.assert_allclose(fast.work_nc, ref.work_nc, rtol=0, atol=1e-12)
        if method in ("avf", "energy_momentum", "itoh_abe"):
            k, rest = 3.0, 0.2  # the spring's potential is part of E
            E = np.array([kd.kinetic_energy(model, q, v) + kd.potential_energy(model, q)
                          + 0.5 * k * (q[0] - rest) ** 2
                          for q, v in zip(fast.q, fast.v, strict=True)])
            budget = E - E[0] - fast.work_nc
            assert np.abs(budget).max() <= 1e-10 * (1.0 + abs(E[0]))
    loop = {"rk4": "_rk4_loop", "verlet": "_verlet_loop", "midpoint": "_gauss_loop",
            "gauss4": "_gauss_loop"}.get(method, "_dg_loop")
    assert calls == [loop, loop]  # both runs in kane_compiled's loop


def test_joint_elements_bind_to_a_kane_tree_by_its_models_joints(branched):
    """A Kane tree derived from a Model keeps it (``source_model``): a JointDamper on a
    named joint acts on that joint's speed, as on the Model itself, and the run is the
    Model's (the Kane equations are the Model's, to round-off); equations whose speeds are
    not the Model's have none."""
    from kanedyn.forces import JointDamper

    model, system, q0, v0 = branched
    assert system.source_model is model
    name = model.bodies[2].joint.name
    kane = kd.simulate(system, q0, v0, 0.1, method="midpoint", dt=2e-3,
                       forces=[JointDamper(name, 0.7)])
    ref = kd.simulate(model, q0, v0, 0.1, method="midpoint", dt=2e-3,
                      forces=[JointDamper(name, 0.7)], compiled=False)
    np.testing.assert_allclose(kane.q, ref.q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(kane.work_nc, ref.work_nc, rtol=0, atol=1e-11)
    assert ref.work_nc[-1] < -1e-4  # the damper took energy out of that joint


def test_an_element_without_rows_takes_the_python_steps(branched, monkeypatch):
    """A torque given as a Python function has no compiled form: the loop does not apply,
    and the Python steps run it (the same motion as the constant torque's rows)."""
    from kanedyn.forces import JointTorque

    model, system, q0, v0 = branched
    calls = []
    monkeypatch.setattr(kane_compiled, "_run", lambda *a, **k: calls.append(1))
    tau = np.linspace(-0.2, 0.3, model.nv)
    by_function = kd.simulate(system, q0, v0, 0.05, method="avf", dt=2e-3,
                              forces=[JointTorque(lambda t, q, v: tau)])
    assert calls == []
    monkeypatch.undo()
    by_rows = kd.simulate(system, q0, v0, 0.05, method="avf", dt=2e-3,
                          forces=[JointTorque(tau)])
    np.testing.assert_allclose(by_function.q, by_rows.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(by_function.work_nc, by_rows.work_nc, rtol=0, atol=1e-14)


@pytest.mark.parametrize("method", ["rk4", "midpoint", "gauss4"])
@pytest.mark.parametrize("friction", [False, True])
def test_the_energy_projection_equals_the_python_steps(branched, monkeypatch, friction,
                                                       method):
    """rk4, midpoint and gauss4 + ``project="energy"`` (projection.Projected's scalar
    Newton onto E₀ + W_nc) in kane_compiled's loops, with force elements and without: the
    Python steps' states and iterations (the method's + the projection's), and the energy
    budget closed to round-off."""
    model, system, q0, v0 = branched
    calls = _loops_run(monkeypatch)
    for forces in ([], _elements(model, friction)):
        fast = kd.simulate(system, q0, v0, 0.3, method=method, dt=2e-3, forces=forces,
                           project="energy")
        ref = kd.simulate(system, q0, v0, 0.3, method=method, dt=2e-3, forces=forces,
                          project="energy", compiled=False)
        assert fast.method == ref.method == f"{method}+project('energy',)"
        scale = 1.0 + np.abs(ref.q).max() + np.abs(ref.v).max()
        # ∇E·∇E and M v by numba's loops and BLAS against numpy's: ulps, which the
        # projection's stopping point carries; 1e-10 is far below the method's error
        assert np.abs(fast.q - ref.q).max() <= 1e-10 * scale
        assert np.abs(fast.v - ref.v).max() <= 1e-10 * scale
        np.testing.assert_allclose(fast.work_nc, ref.work_nc, rtol=0, atol=1e-12)
        assert fast.stats["newton_iterations"].min() >= 1  # every step projected
        np.testing.assert_array_equal(fast.stats["newton_iterations"],
                                      ref.stats["newton_iterations"])
        # the projection's target: E − E₀ − W_nc at its bar, 4e-15 (1 + |E₀|) a step (the
        # Model's energy functions here: 2e-14 measured)
        k, rest = (3.0, 0.2) if forces else (0.0, 0.0)
        E = np.array([kd.kinetic_energy(model, q, v) + kd.potential_energy(model, q)
                      + 0.5 * k * (q[0] - rest) ** 2
                      for q, v in zip(fast.q, fast.v, strict=True)])
        assert np.abs(E - E[0] - fast.work_nc).max() <= 1e-12 * (1.0 + abs(E[0]))
    loop = "_rk4_loop" if method == "rk4" else "_gauss_loop"
    assert calls == [loop, loop]


def test_projection_variant_on_additive_coordinates_runs_the_chart_loop(branched,
                                                                        monkeypatch):
    """energy_momentum's ``"projection"`` variant on additive coordinates (q̇ = u) is still
    midpoint in gauss.py's tangent form (``_TangentMidpoint``: z = (ξ, v), ξ̇ = J⁻¹v with
    chart_jacobian None, the identity), then projection.py's projection onto E₀ + W_nc:
    _gauss_chart_loop computes the same with the generated chart (q0 + ξ, J = 1 exactly),
    so it runs there — no Python step taken —, with force elements (a spring, a damper,
    torques, smoothed friction) and without: the Python steps' states, W_nc and
    iterations, and the budget E − E₀ − W_nc by the Model's energy functions closed."""
    from kanedyn.integrators.energy_momentum import EnergyMomentum

    model, system, q0, v0 = branched
    assert system.chart_is_additive and system.compiled_chart is not None
    calls, steps = _loops_run(monkeypatch), []
    real_step = EnergyMomentum.step
    monkeypatch.setattr(EnergyMomentum, "step",
                        lambda self, *a: steps.append(1) or real_step(self, *a))
    kw = {"method": "energy_momentum", "variant": "projection", "dt": 2e-3}
    for forces in ([], _elements(model, True)):
        fast = kd.simulate(system, q0, v0, 0.2, forces=forces, **kw)
        assert steps == [] and fast.stats["newton_iterations"].size == 100
        ref = kd.simulate(system, q0, v0, 0.2, forces=forces, compiled=False, **kw)
        assert len(steps) == 100  # (the detector sees the Python steps)
        steps.clear()
        assert fast.method == ref.method == "energy_momentum"
        # the reference's arithmetic in the generated functions: bit for bit here, with
        # the forces too (measured; W_nc 1.4e-17 apart, its power sums in another order);
        # the compiled Stribeck law may round otherwise elsewhere, which Newton's stopping
        # point would carry: 1e-10 is far below the method's error
        _close_steps(fast, ref, 1e-10, work_abs=1e-12)
        k, rest = (3.0, 0.2) if forces else (0.0, 0.0)
        if forces:
            assert abs(ref.work_nc[-1]) > 1e-3  # the forces do work
        E = np.array([kd.kinetic_energy(model, q, v) + kd.potential_energy(model, q)
                      + 0.5 * k * (q[0] - rest) ** 2
                      for q, v in zip(fast.q, fast.v, strict=True)])
        # each step projected to 4e-15 (1 + |E₀|): the budget closes to round-off
        # (measured 1.4e-14, 1.8e-14 of |E₀| = 23, 21; W_nc −0.08)
        assert np.abs(E - E[0] - fast.work_nc).max() <= 1e-12 * (1.0 + abs(E[0]))
    assert calls == ["_gauss_chart_loop", "_gauss_chart_loop"]


@pytest.mark.parametrize("method", ["time_stepping", "stickslip"])
def test_exact_friction_binds_to_a_kane_tree_by_joint_name(method):
    """Exact stick–slip friction (a complementarity solve per step, or events) names its
    joint; on a Kane tree the name resolves through ``source_model`` and the motion is
    the Model's own (same equations, to the event location's tolerance)."""
    from kanedyn import friction

    model = kd.models.pendulum_chain(2)
    system = tree.derive(model).compile(backend="numba")
    law = friction.Stribeck(Fc=0.2, Fs=0.3, vs=0.05, delta=2.0, Fv=0.01)
    forces = [kd.forces.JointFriction(model.joint_names[0], law)]
    q0, v0 = [0.4, -0.3], [0.0, 0.0]
    kane = kd.simulate(system, q0, v0, 0.2, method=method, dt=1e-3, forces=forces)
    # the Model's readable reference loop (its compiled loop is tested against it in
    # tests/sim/, and compiling it here again would cost this file's worker ~20 s)
    ref = kd.simulate(model, q0, v0, 0.2, method=method, dt=1e-3, forces=forces,
                      compiled=False)
    # (stickslip: its segments end at events located to rtol; 4e-11 measured)
    np.testing.assert_allclose(kane.q, ref.q, rtol=0, atol=1e-9)
    assert np.abs(ref.work_nc[-1]) > 1e-6  # the friction acted
    np.testing.assert_allclose(kane.work_nc, ref.work_nc, rtol=0, atol=1e-9)


@pytest.mark.parametrize("method", ["rk4", "avf"])
def test_a_shipped_robot_with_joint_elements_moves_as_its_model(method):
    """The Panda of its shipped URDF: Kane's equations of the tree, compiled, with a damper
    on every joint and a spring on the shoulder bound by the URDF's joint names, in the
    compiled loop, against the Model's own algorithms (ABA, CRBA, its energy) in the
    method's Python steps: the same motion and work (measured: 1e-16 rk4, 7e-12 avf)."""
    from kanedyn.model.urdf import robot_path

    model = kd.load_urdf(robot_path("panda"))
    system = tree.derive(model).compile(backend="numba")
    joints = model.joint_names
    forces = ([kd.forces.JointDamper(j, 0.5) for j in joints]
              + [kd.forces.JointSpring(joints[1], 20.0, 0.1)])
    q0, v0 = kd.neutral(model) + 0.2, np.zeros(model.nv)
    kane = kd.simulate(system, q0, v0, 0.1, method=method, dt=1e-3, forces=forces)
    ref = kd.simulate(model, q0, v0, 0.1, method=method, dt=1e-3, forces=forces,
                      compiled=False)
    np.testing.assert_allclose(kane.q, ref.q, rtol=0, atol=1e-10)
    assert ref.work_nc[-1] < -0.1  # the dampers took energy out
    np.testing.assert_allclose(kane.work_nc, ref.work_nc, rtol=0, atol=1e-10)


@pytest.mark.parametrize("method", ["rk4", "verlet", "midpoint", "avf"])
def test_constant_wrenches_run_in_the_loops(branched, method, monkeypatch):
    """Constant ExternalWrenches (local on a body, world on another) and a damper bind to the
    Kane tree through its source Model and run in kane_compiled's loops (their rows' τ =
    Jᵀf from the source Model's kinematics at the tree's q): the Python steps' run
    (compiled=False) to 1e-10, and the Model's own compiled run likewise (other equations
    of the same motion); the wrenches do work."""
    from kanedyn.forces import ExternalWrench, JointDamper

    model, system, q0, v0 = branched
    fs = [ExternalWrench("body3", [0.1, -0.2, 0.3, 1.0, -0.5, 0.7]),
          ExternalWrench("body1", [0.0, 0.4, -0.1, -0.3, 0.2, 0.9], frame="world"),
          JointDamper(model.bodies[2].joint.name, 0.2)]
    calls = []
    real = kane_compiled._run
    monkeypatch.setattr(kane_compiled, "_run",
                        lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    fast = kd.simulate(system, q0, v0, 0.1, method=method, dt=1e-3, forces=fs)
    assert calls  # a loop of kane_compiled ran it
    ref = kd.simulate(system, q0, v0, 0.1, method=method, dt=1e-3, forces=fs, compiled=False)
    own = kd.simulate(model, q0, v0, 0.1, method=method, dt=1e-3, forces=fs)
    for other in (ref, own):
        np.testing.assert_allclose(fast.q, other.q, rtol=0, atol=1e-10)
        np.testing.assert_allclose(fast.work_nc, other.work_nc, rtol=0, atol=1e-10)
    assert abs(ref.work_nc[-1]) > 1e-3


@pytest.fixture(scope="module")
def spacecraft():
    """The spacecraft with a reaction wheel (``classic.spacecraft_reaction_wheel``: a
    quaternion moved by its body rates and a wheel angle whose rate is its speed, nq 5,
    nv 4), compiled by numba with test_simulate_speeds' parameters (the same generated
    module, so numba's cache of it), a tumbling state with a fast wheel."""
    from kanedyn.kane import classic

    s, _ = classic.spacecraft_reaction_wheel()
    system = s.derive().compile(backend="numba", parameters={
        "I11": 3.0, "I22": 4.0, "I33": 5.0, "I12": 0.3, "J": 0.2, "K": 0.12})
    q0 = np.array([0.9, 0.1, -0.3, 0.2, 0.4])
    q0[:4] /= np.linalg.norm(q0[:4])
    return system, q0, np.array([0.3, -1.2, 0.5, 20.0])


@pytest.mark.parametrize("method", ["midpoint", "gauss4", "energy_momentum",
                                    "gauss4 energy", "rk4 energy"])
def test_compiled_loops_in_the_quaternion_chart_equal_the_python_steps(spacecraft,
                                                                      monkeypatch, method):
    """midpoint and gauss4 on a Kane system with a quaternion (q ⊕ ξ not additive) run
    kane_compiled's loop in gauss.py's tangent coordinates (ξ, v), the chart by the
    generated ``chart_point`` and ``chart_jacobian``; energy_momentum (its
    ``"projection"`` variant here: that midpoint, then projection.py's projection onto E₀)
    and ``project="energy"`` the same loop with the projection in the chart (rk4 +
    ``project="energy"``: kane_compiled's RK4 loop in rk4.py's chart, the spacecraft's one
    input, its motor, zero): the Python steps' states and iterations, the quaternion of
    unit norm (it moves by the exponential map), and the energy of the torque-free
    spacecraft kept."""
    system, q0, u0 = spacecraft
    assert not system.chart_is_additive and system.compiled_chart is not None
    method, *project = method.split()
    options = {"project": project[0]} if project else {}
    calls = _loops_run(monkeypatch)
    fast = kd.simulate(system, q0, u0, 0.2, method=method, dt=1e-3, **options)
    loop = "_rk4_loop" if method == "rk4" else "_gauss_chart_loop"
    assert calls == [loop] and fast.stats["newton_iterations"].size == 200
    ref = kd.simulate(system, q0, u0, 0.2, method=method, dt=1e-3, compiled=False,
                      **options)
    assert fast.method == ref.method
    # the same arithmetic in the same order, the chart's by generated code that computes
    # CompiledSystem.integrate_configuration and chart_jacobian's expressions (bit for
    # bit at a point); the quaternion product rounds apart by an ulp (2.2e-16 measured),
    # which Newton's stopping point (tol 1e-12 of the step) could carry: 1e-11 is far
    # below the methods' error
    _close_steps(fast, ref, 1e-11)
    assert np.abs(np.linalg.norm(fast.q[:, :4], axis=1) - 1.0).max() <= 1e-14
    # M is constant here and the speeds' equations (Euler's, bus and wheel) do not depend
    # on the attitude: E = ½ vᵀM v is a quadratic invariant of them, which Gauss
    # collocation keeps exactly (HLW IV.2.1): to round-off (measured 9e-16, 1.7e-15), and
    # the projection to its bar 4e-15 (1 + |E₀|)
    E = np.array([system.energy(q, v) for q, v in zip(fast.q, fast.v, strict=True)])
    assert np.abs(E - E[0]).max() <= 1e-13 * abs(E[0])


def _norm_in_order(x, *args, **kwargs):
    """np.linalg.norm of a 3- or 4-vector as the generated ``chart_point`` takes it, the
    root of the squares summed in order (numpy's takes BLAS's ddot, which may round an ulp
    apart); any other call as numpy's."""
    x = np.asarray(x)
    if args or kwargs or x.ndim != 1 or x.size not in (3, 4):
        return _NUMPY_NORM(x, *args, **kwargs)
    s = 0.0
    for e in x.tolist():
        s += e * e
    return float(np.sqrt(s))


_NUMPY_NORM = np.linalg.norm


@pytest.mark.parametrize("variant", ["forward", "symmetric"])
def test_itoh_abe_in_the_quaternion_chart_equals_the_python_steps(spacecraft, monkeypatch,
                                                                  variant):
    """itoh_abe (both variants) on a Kane system with a quaternion runs kane_compiled's
    loop in chart.py's canonical coordinates (x, p), q = q_n ⊕ x, H by the generated
    chart functions: the Python steps' states and Newton iterations bit for bit where both
    take a quaternion's norm alike, to round-off with numpy's own; the quaternion of unit
    norm, and the energy conserved to Newton's stop."""
    system, q0, u0 = spacecraft
    calls = _loops_run(monkeypatch)
    fast = kd.simulate(system, q0, u0, 0.1, method="itoh_abe", dt=1e-3, variant=variant)
    assert calls == ["_itoh_abe_chart_loop"] and fast.stats["newton_iterations"].size == 100
    it = fast.stats["newton_iterations"]
    # the same arithmetic in the same order: with the generated chart_point's quaternion
    # norm (a sum in order) in the Python steps too, the same bits and iterations
    with monkeypatch.context() as m:
        m.setattr(np.linalg, "norm", _norm_in_order)
        same = kd.simulate(system, q0, u0, 0.1, method="itoh_abe", dt=1e-3, variant=variant,
                           compiled=False)
    np.testing.assert_array_equal(fast.q, same.q)
    np.testing.assert_array_equal(fast.v, same.v)
    np.testing.assert_array_equal(it, same.stats["newton_iterations"])
    if variant == "forward":
        # numpy's norm (BLAS's ddot) rounds an ulp apart at some points (from step 83
        # here); Itoh–Abe's quotients divide an ulp of H by Δx_i ≥ 1e-5 (≈ 1e-10 in ∇̄_xH)
        # and Newton's stop (stagnation 1e-6) carries it: measured 4.4e-16 in q, 4e-14 in v
        # (|v| 20) after 100 steps (8e-13 after 200); 1e-11 (1 + |q| + |v|) is far below
        # the method's error (order 1: ≈ h² |v̈| a step); the iterations part where a stop
        # moves by one (339 against 336)
        ref = kd.simulate(system, q0, u0, 0.1, method="itoh_abe", dt=1e-3, compiled=False)
        scale = 1.0 + np.abs(ref.q).max() + np.abs(ref.v).max()
        assert np.abs(fast.q - ref.q).max() <= 1e-11 * scale
        assert np.abs(fast.v - ref.v).max() <= 1e-11 * scale
        it_ref = ref.stats["newton_iterations"]
        np.testing.assert_array_equal(it[:70], it_ref[:70])
        assert abs(int(it.sum()) - int(it_ref.sum())) <= 0.05 * it_ref.sum()
    assert np.abs(np.linalg.norm(fast.q[:, :4], axis=1) - 1.0).max() <= 1e-14
    # Itoh–Abe conserves H = E exactly up to Newton's stop and the polish's last change:
    # measured 3e-13 (forward) and 4e-14 (symmetric) of E₀ = 45.6 over 100 steps
    E = np.array([system.energy(q, v) for q, v in zip(fast.q, fast.v, strict=True)])
    assert np.abs(E - E[0]).max() <= 2e-14 * abs(E[0])


@pytest.mark.parametrize("method", ["itoh_abe", "midpoint"])
def test_chart_loops_hand_a_singular_chart_to_the_python_steps(spacecraft, monkeypatch,
                                                               method):
    """numba's LU raises LinAlgError on a singular J(x) (|x| = 2π, where the chart ends),
    where the Python step's NaN lets Newton restart: run_itoh_abe_chart and
    run_gauss_chart then return None and the Python steps run the whole way (their
    states exactly)."""
    system, q0, u0 = spacecraft

    def singular(*args):
        raise np.linalg.LinAlgError("Matrix is singular to machine precision.")

    ref = kd.simulate(system, q0, u0, 0.005, method=method, dt=1e-3, compiled=False)
    monkeypatch.setattr(kane_compiled, "_run", singular)
    tr = kd.simulate(system, q0, u0, 0.005, method=method, dt=1e-3)
    np.testing.assert_array_equal(tr.q, ref.q)
    np.testing.assert_array_equal(tr.v, ref.v)


@pytest.fixture(scope="module")
def wheeled_base():
    """A free base carrying a wheel on a hinge (``random_tree(2, floating_base=True)``, a
    quaternion: nq 8, nv 7), Kane's equations of its tree compiled by numba, and force
    elements with rows, bound through its ``source_model``: a spring and a damper on the
    hinge, a damper on the base's six speeds, a constant torque on every speed and a
    constant wrench on the wheel; a tumbling state with a spinning wheel."""
    from kanedyn.forces import ExternalWrench, JointDamper, JointSpring, JointTorque

    model = kd.models.random_tree(2, seed=7, floating_base=True, joint_types=("revolute",))
    assert [b.joint.kind for b in model.bodies] == ["free", "revolute"]
    system = tree.derive(model).compile(backend="numba")
    base, hinge = (b.joint.name for b in model.bodies)
    forces = [JointSpring(hinge, 3.0, 0.2), JointDamper(hinge, 0.3), JointDamper(base, 0.1),
              JointTorque(np.linspace(-0.2, 0.3, model.nv)),
              ExternalWrench(model.bodies[1].name, [0.1, -0.2, 0.3, 0.5, -0.4, 0.6])]
    q0 = np.array([0.1, -0.2, 0.3, 0.9, 0.1, -0.3, 0.2, 0.5])  # (p, quaternion), angle
    q0[3:7] /= np.linalg.norm(q0[3:7])
    v0 = np.array([0.3, -1.2, 0.5, 0.1, 0.0, -0.2, 8.0])
    return model, system, forces, q0, v0


@pytest.mark.parametrize("method", ["midpoint", "gauss4 energy", "energy_momentum",
                                    "itoh_abe", "itoh_abe symmetric", "rk4", "rk4 energy"])
def test_chart_loops_with_force_elements_equal_the_python_steps(wheeled_base, monkeypatch,
                                                               method):
    """Force elements with rows on a Kane tree with a quaternion run in kane_compiled's
    chart loops (gauss.py's tangent stages with τ = τ_nc + τ_springs as the forward
    dynamics' inputs, W_nc = h Σ b_i v_iᵀτ_nc,i; rk4.py's stages likewise, W_nc by them;
    the projection onto E₀ + W_nc;
    Itoh–Abe's momentum equation with J(x̄)ᵀτ_nc at the chart's midpoint and the springs in
    H): the Python steps' states, W_nc and iterations to round-off; the loops get no other
    specialisation; where the method keeps the energy budget, E − E₀ − W_nc by the Model's
    own energy functions closes to round-off (RK4 alone: to its O(h⁴) drift)."""
    model, system, forces, q0, v0 = wheeled_base
    method, *rest = method.split()
    options = ({"project": "energy"} if rest == ["energy"]
               else {"variant": rest[0]} if rest else {})
    calls = _loops_run(monkeypatch)
    # (Itoh–Abe's Python steps take 24–36 ms a step here, twice that under load: 10 of
    # them)
    T = 0.01 if method == "itoh_abe" else 0.05
    fast = kd.simulate(system, q0, v0, T, method=method, dt=1e-3, forces=forces, **options)
    loop = {"itoh_abe": "_itoh_abe_chart_loop", "rk4": "_rk4_loop"}.get(method,
                                                                       "_gauss_chart_loop")
    assert calls == [loop] and "python_steps" not in fast.stats
    ref = kd.simulate(system, q0, v0, T, method=method, dt=1e-3, forces=forces,
                      compiled=False, **options)
    assert fast.method == ref.method
    # the reference's equations in the generated functions and the rows; τ summed, J ẋ̄
    # and Jᵀτ taken in another order than numpy's (ulps), which Newton's stopping point
    # carries (measured: 3e-16 in q, 2e-15 in v for the Gauss stages, 2e-13 in v for
    # Itoh–Abe, whose quotients of H carry an ulp of H over Δx ≥ 1e-5): 1e-11
    # (1 + |q| + |v|) is far below the methods' error
    scale = 1.0 + np.abs(ref.q).max() + np.abs(ref.v).max()
    assert np.abs(fast.q - ref.q).max() <= 1e-11 * scale
    assert np.abs(fast.v - ref.v).max() <= 1e-11 * scale
    assert abs(ref.work_nc[-1]) > 1e-3  # the forces do work: a test of its placement
    np.testing.assert_allclose(fast.work_nc, ref.work_nc, rtol=0, atol=1e-11 * scale)
    it, it_ref = fast.stats["newton_iterations"], ref.stats["newton_iterations"]
    if method == "itoh_abe":
        # Newton's stagnation stop moves by an iteration where those ulps reach it
        # (measured 55 against 58, 56 against 51 over the 10 steps)
        assert abs(int(it.sum()) - int(it_ref.sum())) <= 0.15 * it_ref.sum()
    else:
        np.testing.assert_array_equal(it, it_ref)
    assert np.abs(np.linalg.norm(fast.q[:, 3:7], axis=1) - 1.0).max() <= 1e-14
    # one signature per loop, with force rows and without
    assert len(kane_compiled._LOOPS[getattr(kane_compiled, loop)].signatures) == 1
    if method != "midpoint":
        # Itoh–Abe: ΔE = h v̄ᵀτ_nc exactly to Newton's stop; the projection: E₀ + W_nc to
        # its bar 4e-15 (1 + |E₀|) a step (measured 1e-14 to 3e-14 of E₀ = 5; W_nc −0.7
        # over 0.05 s, −0.18 over 0.01 s; midpoint's own budget is O(h²): 1e-6); RK4 alone
        # keeps it to its O(h⁴) drift (measured 6.6e-11)
        k, rest_angle = 3.0, 0.2
        E = np.array([kd.kinetic_energy(model, q, v) + kd.potential_energy(model, q)
                      + 0.5 * k * (q[7] - rest_angle) ** 2
                      for q, v in zip(fast.q, fast.v, strict=True)])
        bar = 1e-10 if method == "rk4" and not options else 1e-12
        assert np.abs(E - E[0] - fast.work_nc).max() <= bar * (1.0 + abs(E[0]))


def test_chart_loops_take_only_elements_with_rows(spacecraft, wheeled_base):
    """chart_applicable: force elements in the chart loops only with rows of the Model the
    tree was derived from; a Python function (no rows) or a system without a Model (the
    classic spacecraft: its elements have no rows) goes to the Python steps."""
    _, system, _, _, _ = wheeled_base
    bare = dict(tau_cons=None, tau_nc=None, potential=None, progress=None, force_rows=None)
    forced = dict(bare, tau_nc=lambda t, q, v: -v)
    rows = np.zeros((system.nv, 16))
    for s in (spacecraft[0], system):
        assert kane_compiled.chart_applicable(SimpleNamespace(**bare, system=s))
        assert not kane_compiled.chart_applicable(SimpleNamespace(**forced, system=s))
    assert kane_compiled.chart_applicable(SimpleNamespace(**dict(forced, force_rows=rows),
                                                          system=system))
    assert not kane_compiled.chart_applicable(
        SimpleNamespace(**dict(forced, force_rows=rows), system=spacecraft[0]))


@pytest.fixture(scope="module")
def ball_elbow():
    """kd.models.ball_elbow (an arm on a ball joint, a forearm on a hinge: nq 5, nv 4),
    Kane's equations of its tree compiled by numba, and force elements with rows bound by
    the Model's joint names: a damper on the shoulder's three speeds, a spring and a damper
    on the elbow, a constant torque on every speed; a swinging, twisting state."""
    from kanedyn.forces import JointDamper, JointSpring, JointTorque

    model = kd.models.ball_elbow()
    system = tree.derive(model).compile(backend="numba")
    forces = [JointDamper("shoulder", 0.2), JointSpring("elbow", 3.0, 0.2),
              JointDamper("elbow", 0.3), JointTorque(np.linspace(-0.2, 0.3, model.nv))]
    q0 = np.array([0.9, 0.2, -0.3, 0.1, 0.4])  # (quaternion, elbow angle)
    q0[:4] /= np.linalg.norm(q0[:4])
    return model, system, forces, q0, np.array([0.5, -1.0, 0.8, 2.0])


@pytest.mark.parametrize("case", ["project", "forces", "forces project"])
def test_rk4_in_the_quaternion_chart_equals_the_python_steps(ball_elbow, monkeypatch, case):
    """rk4 with ``project="energy"`` or with force elements that have rows (or both) on a
    Kane tree with a quaternion runs kane_compiled's RK4 loop in rk4.py's chart (the stages
    at q_n ⊕ ξ with ξ̇ = J(ξ)⁻¹ v by the generated chart functions, q_{n+1} = q_n ⊕ ξ, the
    projection in the chart of the step's end), no Python step: the Python steps' states,
    W_nc and projection iterations — bit for bit where both take a quaternion's norm
    alike —; the quaternion of unit norm; and the energy
    budget E − E₀ − W_nc by the Model's own energy functions closed: to round-off with the
    projection, to RK4's O(h⁴) without it."""
    from kanedyn.integrators.rk4 import RK4

    model, system, forces, q0, v0 = ball_elbow
    assert not system.chart_is_additive and system.compiled_rk4 is not None
    options = {"forces": forces if "forces" in case else [],
               "project": "energy" if "project" in case else None}
    with monkeypatch.context() as m:
        calls = _loops_run(m)

        def python_step(*args):
            raise AssertionError("a Python RK4 stage ran")

        m.setattr(RK4, "_f", python_step)  # the detector: no Python step
        fast = kd.simulate(system, q0, v0, 0.15, method="rk4", dt=1e-3, **options)
    assert calls == ["_rk4_loop"] and "python_steps" not in fast.stats
    ref = kd.simulate(system, q0, v0, 0.15, method="rk4", dt=1e-3, compiled=False,
                      **options)
    assert fast.method == ref.method
    # rk4.py's arithmetic in the same order; numpy's quaternion norm (BLAS's ddot) and the
    # generated chart_point's (a sum in order) round an ulp apart at some points: measured
    # 3e-16 in q, 9e-16 in v over 150 steps; 1e-13 (1 + |q| + |v|) is round-off
    _close_steps(fast, ref, 1e-13, work_rel=1e-14)
    if case != "forces project":
        # with the generated chart_point's norm in the Python steps too: the same bits
        # (with the projection and all four elements an ulp apart: the rows sum the τ of a
        # damper and the torque on one speed in another order than the Python steps' sum
        # over the elements, which the projection's stop carries; each element alone gives
        # the same bits, measured)
        with monkeypatch.context() as m:
            m.setattr(np.linalg, "norm", _norm_in_order)
            same = kd.simulate(system, q0, v0, 0.15, method="rk4", dt=1e-3, compiled=False,
                               **options)
        np.testing.assert_array_equal(fast.q, same.q)
        np.testing.assert_array_equal(fast.v, same.v)
        np.testing.assert_array_equal(fast.work_nc, same.work_nc)
    assert np.abs(np.linalg.norm(fast.q[:, :4], axis=1) - 1.0).max() <= 1e-14
    k, rest = (3.0, 0.2) if options["forces"] else (0.0, 0.0)
    E = np.array([kd.kinetic_energy(model, q, v) + kd.potential_energy(model, q)
                  + 0.5 * k * (q[4] - rest) ** 2 for q, v in zip(fast.q, fast.v, strict=True)])
    budget = np.abs(E - E[0] - fast.work_nc).max()
    if options["forces"]:
        assert abs(fast.work_nc[-1]) > 1e-2  # the forces do work: a test of its placement
    if options["project"]:
        assert fast.stats["newton_iterations"].min() >= 1  # every step projected
        # the projection's target E₀ + W_nc, to its bar 4e-15 (1 + |E₀|) a step
        assert budget <= 1e-12 * (1.0 + abs(E[0]))
    else:
        # RK4 alone: E − E₀ − W_nc drifts like C t h⁴ (measured 3.9e-11 of E₀ = −11.5
        # over 150 steps; a misplaced force or W_nc stage: 1e-2)
        assert budget <= 1e-10 * (1.0 + abs(E[0]))
    assert len(kane_compiled._LOOPS[kane_compiled._rk4_loop].signatures) == 1


# --- avf and verlet in the chart of a Kane tree (chart.SystemChart) ---------------------------
@pytest.fixture(scope="module")
def planar_cart():
    """A cart on a planar joint with a hinged pole (``kd.models.planar_cart``), its Kane
    equations compiled by numba."""
    model = kd.models.planar_cart()
    return model, tree.derive(model).compile(backend="numba")


@pytest.fixture(scope="module")
def ball_elbow_start(ball_elbow):
    """The Kane ball-elbow of the fixture above (nq 5, nv 4: a quaternion) from
    test_chart_methods' start."""
    m, system = ball_elbow[:2]
    q0 = kd.neutral(m)
    q0[:4] = kd.integrate_configuration(m, q0, np.array([0.9, -0.4, 0.2, 0.0]), 1.0)[:4]
    q0[4] = 0.7
    return m, system, q0, np.array([0.3, 1.2, 2.0, -1.0])


@pytest.mark.parametrize("size", [1e-3, 0.4, 1.5])
def test_the_chart_derivatives_of_a_kane_tree(ball_elbow_start, wheeled_base, planar_cart,
                                              spacecraft, size):
    """make_chart gives a Kane tree with a curved chart D(q0, x, w) (D δ = d/dε J(x + εδ) w),
    the end velocity (J x, J + D(x, x)) and the start sensitivity K from the generated
    ∂q̇/∂q. D against central differences of the generated chart_jacobian (step 1e-6:
    truncation 1e-12 |∂³J|, roundoff 1e-16 |J| / 1e-6 = 1e-10; measured ≤ 5e-10), also on
    the classic spacecraft (a quaternion and a wheel, no Model behind it); on the ball,
    free and planar trees every piece, and ∂T/∂q in the tangent space, against their
    Model's own (the joints' closed forms, ModelChart; the Kane chart is the joints' chart:
    q0 ⊗ exp(x) on a quaternion, the Euler step p_n + R_n ρ on the free and planar
    positions): measured ≤ 2e-15."""
    from kanedyn.integrators.chart import ModelChart, SystemChart, make_chart
    from kanedyn.sim.system import ModelSystem

    rng = np.random.default_rng(int(1000 * size))
    trees = [ball_elbow_start[:2], wheeled_base[:2], planar_cart]
    for s, q0 in [(s, kd.random_configuration(m, rng)) for m, s in trees] + [spacecraft[:2]]:
        ch = make_chart(s)
        assert isinstance(ch, SystemChart) and ch.has_derivative
        x, w, d = rng.normal(size=(3, s.nv))
        x *= size
        e = 1e-6
        dJ = (s.chart_jacobian(q0, x + e * d) - s.chart_jacobian(q0, x - e * d)) @ w / (2 * e)
        np.testing.assert_allclose(ch.derivative(q0, x, w) @ d, dJ, rtol=0, atol=1e-8)
    for model, system in trees:
        ms = ModelSystem(model)
        ch, mc = make_chart(system), ModelChart(ms)
        q0 = kd.random_configuration(model, rng)
        x, w, v = rng.normal(size=(3, model.nv))
        x *= size
        for a, b in ((ch.point(q0, x), mc.point(q0, x)),
                     (ch.jacobian(q0, x), mc.jacobian(q0, x)),
                     (ch.derivative(q0, x, w), mc.derivative(q0, x, w)),
                     *zip(ch.end_velocity(q0, x), mc.end_velocity(q0, x), strict=True),
                     (ch.start_sensitivity(q0, x), mc.start_sensitivity(q0, x)),
                     *zip(system.hamiltonian_terms(q0, v), ms.hamiltonian_terms(q0, v),
                          strict=True)):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-14 * (1.0 + np.abs(b).max()))


def _model_energy(model, tr):
    """E = T + V by the Model's own algorithms at the trajectory's (q, v)."""
    return kd.kinetic_energy(model, tr.q, tr.v) + kd.potential_energy(model, tr.q)


def test_avf_on_a_kane_tree_with_a_quaternion(ball_elbow_start):
    """avf on the Kane ball-elbow (a quaternion; kane_compiled's chart loop, whose
    reference is its Python steps in the chart of chart.SystemChart: the test below)
    conserves the energy, taken by the Model's own algorithms at the
    same (q, v), to Newton's tolerance: measured 3e-14 over 200 steps (E₀ = −8.3). It
    is avf on the Model (its Python steps, which its compiled loop equals:
    tests/integrators/test_chart_methods.py): the same equations in the same chart (the
    joints' own), so the runs differ by the rounding of two evaluations of M, forcing and
    ∂T/∂q, carried by Newton (measured 2e-15 in q, 5e-14 in v; the method's error is
    h² ≈ 1e-6), with the same Newton iterations."""
    model, system, q0, v0 = ball_elbow_start
    kane = kd.simulate(system, q0, v0, 0.2, method="avf", dt=1e-3)
    E = _model_energy(model, kane)
    scale = max(abs(E[0]), float(kd.kinetic_energy(model, kane.q, kane.v).max()))
    assert np.abs(E - E[0]).max() <= 1e-12 * scale
    ref = kd.simulate(model, q0, v0, 0.2, method="avf", dt=1e-3, compiled=False)
    vmax = 1.0 + np.abs(ref.v).max()
    assert np.abs(kane.q - ref.q).max() <= 1e-12 * vmax
    assert np.abs(kane.v - ref.v).max() <= 1e-12 * vmax
    assert kane.stats["newton_iterations"].sum() == ref.stats["newton_iterations"].sum()


def test_verlet_on_a_kane_tree_with_a_quaternion(ball_elbow_start):
    """Störmer–Verlet on the Kane ball-elbow (its variational step in the chart, W, ∂W/∂x
    and K of chart.SystemChart): order 2, the energy error 4x smaller at half the step
    (measured 1.26e-5 and 3.14e-6 at h = 2e-3, 1e-3 over 0.2 s: 4.00); and the Model's
    verlet (its Python steps) to the rounding of the two evaluations, as for avf (measured
    3e-15 in q, 1e-13 in v)."""
    model, system, q0, v0 = ball_elbow_start
    err = []
    for dt in (2e-3, 1e-3):
        kane = kd.simulate(system, q0, v0, 0.2, method="verlet", dt=dt)
        E = _model_energy(model, kane)
        err.append(np.abs(E - E[0]).max())
    assert 3.6 <= err[0] / err[1] <= 4.4
    ref = kd.simulate(model, q0, v0, 0.2, method="verlet", dt=1e-3, compiled=False)
    vmax = 1.0 + np.abs(ref.v).max()
    assert np.abs(kane.q - ref.q).max() <= 1e-12 * vmax
    assert np.abs(kane.v - ref.v).max() <= 1e-12 * vmax


@pytest.mark.parametrize("forces", [False, True], ids=["free", "forces"])
@pytest.mark.parametrize("method", ["avf", "verlet"])
def test_avf_and_verlet_in_the_quaternion_chart_run_compiled(ball_elbow, ball_elbow_start,
                                                             monkeypatch, method, forces):
    """avf and verlet on the Kane ball-elbow (a quaternion) run kane_compiled's chart loops
    (_avf_chart_loop: ∂H/∂x in closed form from the generated _rates, ∂q̇/∂q and ∂T/∂q,
    D(x, w) as CompiledSystem.chart_derivative's; _verlet_chart_loop: the variational
    step with the end velocity J x, ∂W/∂x = J + D(x, x) and the start sensitivity K), no
    Python step: the Python steps (discrete_gradient.py's AVF and verlet.py's
    _variational_step with chart.SystemChart) to round-off, with the same Newton
    iterations, with and without the force elements (a damper on the ball, a spring and
    a damper on the elbow, a torque on every speed: the springs in H, τ_nc where the
    references put it, W_nc); avf keeps the energy by the Model's own algorithms to
    Newton's tolerance, and with the forces the budget E − E₀ − W_nc; verlet to its O(h²)
    error; one signature per loop."""
    from kanedyn.integrators.discrete_gradient import AVF
    from kanedyn.integrators.verlet import Verlet

    model, system, q0, v0 = ball_elbow_start
    elements = ball_elbow[2] if forces else []
    loop = f"_{method}_chart_loop"
    with monkeypatch.context() as m:
        calls = _loops_run(m)

        def python_step(*args):
            raise AssertionError(f"a Python {method} step ran")

        # the detector: no Python step
        m.setattr(*((AVF, "step") if method == "avf" else (Verlet, "_variational_step")),
                  python_step)
        fast = kd.simulate(system, q0, v0, 0.1, method=method, dt=1e-3, forces=elements)
    assert calls == [loop] and "python_steps" not in fast.stats
    assert fast.stats["newton_iterations"].size == 100
    ref = kd.simulate(system, q0, v0, 0.1, method=method, dt=1e-3, forces=elements,
                      compiled=False)
    assert fast.method == ref.method
    # the references' arithmetic in the generated functions; numba's products and norms
    # round apart from numpy's by ulps (J w, Wᵀ(Φ w), the quaternion's norm), which
    # Newton's stopping point (tol 1e-14 of the step) carries: measured over 200 steps
    # 4e-16 in q and 7e-14 in v (avf; 2e-15, 4e-14 with the forces), 1.2e-15 and 8e-14
    # (verlet; 8e-16, 4e-14 with the forces); the methods' error is h² ≈ 1e-6
    _close_steps(fast, ref, 1e-12, work_rel=1e-12)
    assert np.abs(np.linalg.norm(fast.q[:, :4], axis=1) - 1.0).max() <= 1e-14
    k, rest = (3.0, 0.2) if forces else (0.0, 0.0)
    E = _model_energy(model, fast) + 0.5 * k * (fast.q[:, 4] - rest) ** 2
    if forces:
        assert abs(fast.work_nc[-1]) > 0.1  # the forces do work (−0.33): a test of its placement
    else:
        assert not fast.work_nc.any()
    budget = np.abs(E - E[0] - fast.work_nc).max()
    # avf keeps E (+ W_nc) to Newton's stop and the quadrature's error (3 nodes):
    # measured 3e-14 (3.5e-14 with the forces) of E₀ = −8.3 over 200 steps; verlet to
    # its O(h²) error, 3e-6 (9e-6); a misplaced force or W_nc: of the order of W_nc, 0.3
    bar = 1e-12 if method == "avf" else 1e-4
    assert budget <= bar * (1.0 + abs(E[0]))
    assert len(kane_compiled._LOOPS[getattr(kane_compiled, loop)].signatures) == 1
