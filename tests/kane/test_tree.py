"""Kane's equations from a Model against independent derivations.

* the numeric core of the same Model (CRBA, RNEA, q̇ = W(q) v, energies), at random states;
* the definition of Kane's generalized inertia forces, M = Σ_i J_iᵀ I_i J_i, with the body
  Jacobians (partial velocities) from kd.jacobian;
* SymPy's KanesMethod and LagrangesMethod on a planar 3-link pendulum of rods written here;
* the textbook double pendulum, symbolically.

The symbolic result is evaluated by substituting the intermediates in order (plain SymPy,
no generated code), so these tests do not depend on kanedyn.kane.codegen.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import sympy as sp
import sympy.physics.mechanics as me

import kanedyn as kd
from kanedyn import SymbolicError, kane

RTOL = 1e-10


def evaluate(eom, q, u, tau=None, parameters=None):
    """M, forcing, q̇ and energy of the symbolic equations at one state, by substitution."""
    tau = np.zeros(len(eom.inputs)) if tau is None else tau
    env = {}
    for syms, vals in ((eom.q, q), (eom.u, u), (eom.inputs, tau)):
        env.update({s: sp.Float(float(x)) for s, x in zip(syms, vals, strict=True)})
    env.update({s: sp.Float(float(v)) for s, v in (parameters or eom.parameters).items()})
    for s, e in eom.intermediates:
        env[s] = sp.Float(float(sp.sympify(e).xreplace(env)))

    def num(m):
        return np.array(sp.Matrix(m).xreplace(env), dtype=float)

    E = None if eom.energy is None else float(sp.sympify(eom.energy).xreplace(env))
    return num(eom.mass_matrix), num(eom.forcing).ravel(), num(eom.qdot).ravel(), E


def rel(a, b) -> float:
    return float(np.abs(np.asarray(a) - b).max() / max(np.abs(b).max(), 1e-300))


def random_state(model, rng):
    return (kd.random_configuration(model, rng), rng.normal(size=model.nv),
            rng.normal(size=model.nv))


def all_joint_tree():
    """A floating-base random tree holding every joint type of the core."""
    kinds = {"revolute", "prismatic", "helical", "spherical", "planar"}
    for seed in range(100):
        m = kd.models.random_tree(7, seed=seed, floating_base=True)
        if kinds <= {b.joint.kind for b in m.bodies}:
            return m
    raise AssertionError("no seed gives every joint type")


@functools.cache
def model_and_eom(name):
    model = MODELS[name]()
    return model, kane.derive(model)


MODELS = {
    "planar3": lambda: kd.models.pendulum_chain(3),
    "planar_point3": lambda: kd.models.pendulum_chain(3, point_mass=True, length=[1.0, 0.7, 1.3],
                                                      mass=[1.0, 2.0, 0.5]),
    "chain3d_4": lambda: kd.models.pendulum_chain(4, planar=False),
    "ball2": lambda: kd.models.pendulum_chain(2, planar=False, joint="spherical"),
    "free_body": lambda: kd.models.free_body(2.0, (0.1, 0.2, 0.25), com=(0.1, -0.05, 0.02)),
    "tree_all_joints": all_joint_tree,
    "small_tree": lambda: kd.models.random_tree(4, seed=5, floating_base=True),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_mass_matrix_and_forcing_equal_crba_and_rnea(name):
    model, eom = model_and_eom(name)
    rng = np.random.default_rng(7)
    for _ in range(2):
        q, v, tau = random_state(model, rng)
        M, F, qd, E = evaluate(eom, q, v, tau)
        assert rel(M, kd.crba(model, q)) < RTOL
        assert rel(F, tau - kd.nonlinear_effects(model, q, v)) < RTOL
        assert rel(qd, kd.q_dot(model, q, v)) < RTOL
        E0 = kd.kinetic_energy(model, q, v) + kd.potential_energy(model, q)
        assert abs(E - E0) < RTOL * max(1.0, abs(E0))
        assert np.array_equal(M, M.T)


def test_mass_matrix_is_sum_of_partial_velocity_products():
    """Kane's definition M = Σ_i J_iᵀ I_i J_i, J_i (the spatial partial velocities of body i)
    from kd.jacobian, independent of the composite-inertia recursion."""
    model, eom = model_and_eom("tree_all_joints")
    q, v, _ = random_state(model, np.random.default_rng(3))
    M = sum(kd.jacobian(model, q, b.index, frame="local").T @ b.inertia
            @ kd.jacobian(model, q, b.index, frame="local") for b in model.bodies)
    assert rel(evaluate(eom, q, v)[0], M) < RTOL


@pytest.mark.parametrize("name", ["chain3d_4", "small_tree"])
def test_explicit_and_recursive_sums_agree(name):
    model = MODELS[name]()
    q, v, tau = random_state(model, np.random.default_rng(11))
    a = evaluate(model_and_eom(name)[1], q, v, tau)
    b = evaluate(kane.derive(model, method="explicit"), q, v, tau)
    assert rel(a[0], b[0]) < RTOL and rel(a[1], b[1]) < RTOL


def test_symbolic_parameters_carry_model_values_and_can_change():
    model = MODELS["planar_point3"]()
    eom = kane.derive(model, parameters="symbolic")
    names = {s.name: v for s, v in eom.parameters.items()}
    assert names["m_link2"] == pytest.approx(2.0) and names["g_z"] == pytest.approx(-9.81)
    assert names["r_link3_z"] == pytest.approx(-0.7)  # joint 3 sits at the tip of link 2
    q, v, tau = random_state(model, np.random.default_rng(5))
    M, F, _, _ = evaluate(eom, q, v, tau)
    assert rel(M, kd.crba(model, q)) < RTOL
    assert rel(F, tau - kd.nonlinear_effects(model, q, v)) < RTOL
    # the same equations with another mass of link 2 are those of the model with that mass
    other = kd.models.pendulum_chain(3, point_mass=True, length=[1.0, 0.7, 1.3],
                                     mass=[1.0, 3.5, 0.5])
    pars = {s: (3.5 if s.name == "m_link2" else val) for s, val in eom.parameters.items()}
    M2, F2, _, _ = evaluate(eom, q, v, tau, parameters=pars)
    assert rel(M2, kd.crba(other, q)) < RTOL
    assert rel(F2, tau - kd.nonlinear_effects(other, q, v)) < RTOL
    assert rel(M2, M) > 1e-3  # the mass matters


def test_quaternion_groups_and_symbols():
    model, eom = model_and_eom("tree_all_joints")
    expect = []
    for b in model.bodies:
        if b.joint.kind == "spherical":
            expect.append((list(range(b.iq.start, b.iq.stop)), list(range(b.iv.start,
                                                                          b.iv.stop))))
        elif b.joint.kind == "free":
            expect.append((list(range(b.iq.start + 3, b.iq.stop)),
                           list(range(b.iv.start, b.iv.start + 3))))
    assert eom.quaternions == expect and len(expect) >= 2
    assert [s.name for s in eom.q] == [f"q{k}" for k in range(model.nq)]
    assert [s.name for s in eom.inputs] == [f"tau{k}" for k in range(model.nv)]


def test_free_body_gives_euler_equations():
    """A free body with its COM at the origin and no gravity: forcing = -(ω × Iω, m ω × v)."""
    I = np.diag([0.1, 0.2, 0.25])
    model = kd.models.free_body(2.0, I, gravity=(0.0, 0.0, 0.0))
    eom = kane.derive(model)
    rng = np.random.default_rng(2)
    q, v, _ = random_state(model, rng)
    M, F, _, _ = evaluate(eom, q, v)
    w, vel = v[:3], v[3:]
    assert rel(M, np.diag([0.1, 0.2, 0.25, 2.0, 2.0, 2.0])) < RTOL
    assert rel(F, -np.concatenate([np.cross(w, I @ w), 2.0 * np.cross(w, vel)])) < RTOL


def test_expanded_double_pendulum_is_the_textbook_one():
    """Point-mass double pendulum, relative angles: M and gravity forces by hand."""
    eom = kane.derive(kd.models.pendulum_chain(2, point_mass=True), parameters="symbolic")
    ex = eom.expanded()
    assert ex.intermediates == []
    P = {s.name: s for s in eom.parameters}
    m1, m2, L1, L2, g = sp.symbols("m1 m2 L1 L2 g", positive=True)
    to_hand = {P["m_link1"]: m1, P["m_link2"]: m2, P["c_link1_z"]: -L1, P["r_link2_z"]: -L1,
               P["c_link2_z"]: -L2, P["g_z"]: -g}
    q1, q2 = eom.q
    M = ex.mass_matrix.xreplace(to_hand)
    c2 = sp.cos(q2)
    M_hand = sp.Matrix([[m1 * L1**2 + m2 * (L1**2 + L2**2 + 2 * L1 * L2 * c2),
                         m2 * (L2**2 + L1 * L2 * c2)],
                        [m2 * (L2**2 + L1 * L2 * c2), m2 * L2**2]])
    assert sp.simplify(M - M_hand) == sp.zeros(2, 2)
    # gravity: V = -m1 g L1 cos q1 - m2 g (L1 cos q1 + L2 cos(q1 + q2)), forcing(u=0) = -∂V/∂q
    V = -m1 * g * L1 * sp.cos(q1) - m2 * g * (L1 * sp.cos(q1) + L2 * sp.cos(q1 + q2))
    F0 = ex.forcing.xreplace(to_hand).xreplace({u: 0 for u in eom.u}) \
        .xreplace({t: 0 for t in eom.inputs})
    for k, qk in enumerate(eom.q):
        assert sp.simplify(F0[k] + sp.diff(V, qk)) == 0
    assert sp.simplify(ex.potential_energy.xreplace(to_hand) - V) == 0


def _sympy_rod_chain(n, L, m, g):
    """A planar chain of uniform thin rods (axis y, hanging along -z), in
    sympy.physics.mechanics: returns (KanesMethod, LagrangesMethod, q, u)."""
    q = me.dynamicsymbols(f"th0:{n}")
    u = me.dynamicsymbols(f"om0:{n}")
    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)
    frame, joint, bodies, loads = N, O, [], []
    for i in range(n):
        A = frame.orientnew(f"A{i}", "Axis", [q[i], frame.y])
        A.set_ang_vel(frame, u[i] * frame.y)
        G = joint.locatenew(f"G{i}", -L[i] / 2 * A.z)
        G.v2pt_theory(joint, N, A)
        nxt = joint.locatenew(f"J{i}", -L[i] * A.z)
        nxt.v2pt_theory(joint, N, A)
        I = m[i] * L[i] ** 2 / 12
        bodies.append(me.RigidBody(f"B{i}", G, A, m[i], (me.inertia(A, I, I, 0), G)))
        loads.append((G, -m[i] * g * N.z))
        frame, joint = A, nxt
    km = me.KanesMethod(N, q_ind=q, u_ind=u, kd_eqs=[q[i].diff() - u[i] for i in range(n)])
    km.kanes_equations(bodies, loads)
    for i, b in enumerate(bodies):
        b.potential_energy = m[i] * g * b.masscenter.pos_from(O).dot(N.z)
    # the same kinematics with q̇ in place of u, as LagrangesMethod needs
    frame, joint = N, O
    qd = [x.diff() for x in q]
    for i, b in enumerate(bodies):
        b.frame.set_ang_vel(frame, qd[i] * frame.y)
        b.masscenter.v2pt_theory(joint, N, b.frame)
        nxt = joint.locatenew(f"K{i}", -L[i] * b.frame.z)
        nxt.v2pt_theory(joint, N, b.frame)
        frame, joint = b.frame, nxt
    lm = me.LagrangesMethod(me.Lagrangian(N, *bodies), q)
    lm.form_lagranges_equations()
    return km, lm, q, u


def test_planar_rod_chain_equals_sympy_kanes_and_lagranges_method():
    n, L, m, g = 3, [1.0, 0.8, 1.2], [1.0, 1.5, 0.7], 9.81
    model = kd.models.pendulum_chain(n, length=L, mass=m)
    eom = kane.derive(model)
    km, lm, q, u = _sympy_rod_chain(n, L, m, g)
    qd = [x.diff() for x in q]
    rng = np.random.default_rng(17)
    for _ in range(2):
        qv, uv = rng.uniform(-np.pi, np.pi, n), rng.normal(size=n)
        M, F, _, _ = evaluate(eom, qv, uv)
        sub = dict(zip(q, qv, strict=True)) | dict(zip(u, uv, strict=True))
        Mk = np.array(km.mass_matrix.xreplace(sub), dtype=float)
        Fk = np.array(km.forcing.xreplace(sub), dtype=float).ravel()
        sub_l = dict(zip(q, qv, strict=True)) | dict(zip(qd, uv, strict=True))
        Ml = np.array(lm.mass_matrix.xreplace(sub_l), dtype=float)
        Fl = np.array(lm.forcing.xreplace(sub_l), dtype=float).ravel()
        assert rel(M, Mk) < RTOL and rel(F, Fk) < RTOL
        assert rel(M, Ml) < RTOL and rel(F, Fl) < RTOL


def _ur5():
    if not hasattr(kd, "load_urdf"):
        pytest.skip("kd.load_urdf is not there yet")
    from importlib import resources

    path = resources.files("kanedyn") / "data" / "robots" / "ur5.urdf"
    if not path.is_file():
        pytest.skip("ur5.urdf is not there yet")
    return kd.load_urdf(str(path))


def test_six_dof_arm_from_urdf():
    model = _ur5()
    assert model.nv == 6
    eom = kane.derive(model)
    rng = np.random.default_rng(23)
    q, v, tau = random_state(model, rng)
    M, F, qd, E = evaluate(eom, q, v, tau)
    assert rel(M, kd.crba(model, q)) < RTOL
    assert rel(F, tau - kd.nonlinear_effects(model, q, v)) < RTOL
    assert abs(E - kd.kinetic_energy(model, q, v) - kd.potential_energy(model, q)) < 1e-9


def test_bad_input():
    with pytest.raises(SymbolicError, match="parameters must be"):
        kane.derive(kd.models.pendulum_chain(1), parameters="sym")
    with pytest.raises(SymbolicError, match="method must be"):
        kane.derive(kd.models.pendulum_chain(1), method="lagrange")
    with pytest.raises(SymbolicError, match="needs a kanedyn Model"):
        kane.derive("robot.urdf")
