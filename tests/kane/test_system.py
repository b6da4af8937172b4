"""Kane's method for general systems: cross-derivation against SymPy's
KanesMethod and LagrangesMethod, linearization against SymPy, bad input.

The planar double pendulum (two uniform rods, a motor torque T at the first
pin) is derived three ways on the same kinematics. Our speeds are chosen
freely (u1 = q̇1, u2 = q̇1 + q̇2: absolute rate of the second rod), so that Y is
not the identity and the comparison with Lagrange (in q̈) goes through
q̈ = Y⁻¹ u̇.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from sympy.physics import mechanics as me
from sympy.physics.vector import Point, ReferenceFrame, dynamicsymbols

from kanedyn import SymbolicError, kane

q1, q2, u1, u2 = dynamicsymbols("q1 q2 u1 u2")
m1, m2, l1, l2, g = sp.symbols("m1 m2 l1 l2 g")
Tt = dynamicsymbols("T")        # the motor torque: a specified function of time
T = sp.Symbol("T")              # what it becomes in the results
VALUES = {m1: 1.3, m2: 0.7, l1: 0.9, l2: 1.1, g: 9.81}


def _double_pendulum():
    """Kinematics in q, q̇ (as orientnew gives them): shared by the three methods.
    q2 is the angle of rod 2 relative to rod 1; gravity along +N.x."""
    N = ReferenceFrame("N")
    A = N.orientnew("A", "Axis", [q1, N.z])
    B = A.orientnew("B", "Axis", [q2, A.z])
    O = Point("O")
    O.set_vel(N, 0)
    Ac = O.locatenew("Ac", l1 / 2 * A.x)
    P = O.locatenew("P", l1 * A.x)
    Bc = P.locatenew("Bc", l2 / 2 * B.x)
    for pt in (Ac, P, Bc):
        pt.set_vel(N, pt.pos_from(O).dt(N))
    IA = m1 * l1**2 / 12
    IB = m2 * l2**2 / 12
    return N, A, B, O, Ac, Bc, IA, IB


@pytest.fixture(scope="module")
def pendulum():
    N, A, B, O, Ac, Bc, IA, IB = _double_pendulum()
    bodies = [
        kane.RigidBody("rod1", Ac, A, m1, kane.inertia(A, 0, IA, IA)),
        kane.RigidBody("rod2", Bc, B, m2, kane.inertia(B, 0, IB, IB)),
    ]
    loads = [(Ac, m1 * g * N.x), (Bc, m2 * g * N.x), (A, Tt * N.z)]
    V = -m1 * g * Ac.pos_from(O).dot(N.x) - m2 * g * Bc.pos_from(O).dot(N.x)
    system = kane.KaneSystem(
        N, [q1, q2], [u1, u2], [u1 - q1.diff(), u2 - q1.diff() - q2.diff()],
        bodies, loads, inputs=[Tt], parameters=VALUES, potential_energy=V,
        name="double_pendulum",
    )
    eom = system.derive().expanded()

    sym_bodies = [
        me.RigidBody("rod1", Ac, A, m1, (me.inertia(A, 0, IA, IA), Ac)),
        me.RigidBody("rod2", Bc, B, m2, (me.inertia(B, 0, IB, IB), Bc)),
    ]
    km = me.KanesMethod(N, q_ind=[q1, q2], u_ind=[u1, u2],
                        kd_eqs=[u1 - q1.diff(), u2 - q1.diff() - q2.diff()])
    km.kanes_equations(sym_bodies, loads)

    sym_bodies[0].potential_energy = -m1 * g * Ac.pos_from(O).dot(N.x)
    sym_bodies[1].potential_energy = -m2 * g * Bc.pos_from(O).dot(N.x)
    L = me.Lagrangian(N, *sym_bodies)
    lm = me.LagrangesMethod(L, [q1, q2], forcelist=[(A, Tt * N.z)], frame=N)
    lm.form_lagranges_equations()
    return system, eom, km, lm


def _plain(expr):
    """SymPy's results are in dynamicsymbols; ours in plain symbols."""
    qd = [q1.diff(), q2.diff()]
    rep = {qd[0]: sp.Symbol("q1d"), qd[1]: sp.Symbol("q2d")}
    rep2 = {Tt: T, **{s: sp.Symbol(s.func.__name__) for s in (q1, q2, u1, u2)}}
    return sp.sympify(expr).xreplace(rep).xreplace(rep2)


def _states(n=5, seed=1):
    rng = np.random.default_rng(seed)
    return rng.uniform(-2, 2, size=(n, 5))       # q1, q2, u1, u2, T


def _num(expr, state):
    q1v, q2v, u1v, u2v, Tv = state
    sub = {sp.Symbol("q1"): q1v, sp.Symbol("q2"): q2v, sp.Symbol("u1"): u1v,
           sp.Symbol("u2"): u2v, T: Tv, **VALUES}
    return np.array(sp.Matrix(expr).xreplace(sub).evalf(), dtype=float)


def test_double_pendulum_equals_sympy_kanes_method(pendulum):
    _system, eom, km, _lm = pendulum
    assert [str(s) for s in eom.u] == ["u1", "u2"]
    for state in _states():
        M, f = _num(eom.mass_matrix, state), _num(eom.forcing, state)
        Ms, fs = _num(_plain(km.mass_matrix), state), _num(_plain(km.forcing), state)
        np.testing.assert_allclose(M, Ms, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(f, fs, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(M, M.T, atol=1e-14)
        assert np.all(np.linalg.eigvalsh(M) > 0)


def test_double_pendulum_equals_sympy_lagranges_method(pendulum):
    """q̈ from Lagrange (in q, q̇) equals Y⁻¹ M⁻¹ forcing from ours (u1 = q̇1, u2 = q̇1 + q̇2)."""
    _system, eom, _km, lm = pendulum
    Y = np.array([[1.0, 0.0], [1.0, 1.0]])
    qd_sym = [sp.Symbol("q1d"), sp.Symbol("q2d")]
    for state in _states(seed=2):
        u = state[2:4]
        udot = np.linalg.solve(_num(eom.mass_matrix, state), _num(eom.forcing, state)).ravel()
        qdd = np.linalg.solve(Y, udot)
        qd = np.linalg.solve(Y, u)
        sub = {qd_sym[0]: qd[0], qd_sym[1]: qd[1]}
        Ml = _num(_plain(lm.mass_matrix).xreplace(sub), state)
        fl = _num(_plain(lm.forcing).xreplace(sub), state).ravel()
        np.testing.assert_allclose(qdd, np.linalg.solve(Ml, fl), rtol=1e-11, atol=1e-11)


def test_double_pendulum_kinematics_and_energy(pendulum):
    """q̇ = Y⁻¹ u, and the energy is conserved by the unforced equations: dE/dt = T u1."""
    system, eom, _km, _lm = pendulum
    qs = [sp.Symbol("q1"), sp.Symbol("q2")]
    us = [sp.Symbol("u1"), sp.Symbol("u2")]
    assert sp.simplify(eom.qdot - sp.Matrix([us[0], us[1] - us[0]])) == sp.zeros(2, 1)
    # dE/dt along solutions = ∂E/∂q q̇ + ∂E/∂u u̇, with u̇ = M⁻¹ f
    E = eom.energy
    for state in _states(seed=3):
        qdot = _num(eom.qdot, state).ravel()
        udot = np.linalg.solve(_num(eom.mass_matrix, state), _num(eom.forcing, state)).ravel()
        dE = _num(sp.Matrix([E]).jacobian(qs), state) @ qdot
        dE += _num(sp.Matrix([E]).jacobian(us), state) @ udot
        # the motor torque acts on rod 1 relative to N: its power is T ω_A = T u1
        assert dE.item() == pytest.approx(state[4] * state[2], abs=1e-10)
    assert set(eom.parameters) == set(VALUES)
    assert eom.inputs == [T]


def test_generalized_forces_by_name(pendulum):
    """F_r by hand (Kane & Levinson Ch. 4): with u2 the absolute rate of rod 2,
    v_Bc = l1 u1 A.y + (l2/2) u2 B.y, so gravity on rod 2 enters F_1 through l1 A.y;
    the torque T on rod 1 only through ω_A = u1 N.z."""
    system, *_ = pendulum
    kin = kane.kinematics(system)
    F = kane.generalized_active_forces(system, kin)
    F1 = Tt - g * l1 * (m1 / 2 + m2) * sp.sin(q1)
    F2 = -m2 * g * l2 / 2 * sp.sin(q1 + q2)
    assert sp.simplify(F[0] - F1) == 0 and sp.simplify(F[1] - F2) == 0
    pv = kane.partial_velocities(system, kin)
    # rod 2's partial angular velocities: ∂ω_B/∂u1 = 0, ∂ω_B/∂u2 = N.z (absolute speed)
    _vr, wr = pv[1]
    N = system.frame
    assert sp.simplify(wr[0].dot(N.z)) == 0 and sp.simplify(wr[1].dot(N.z)) == 1
    Fs = kane.generalized_inertia_forces(system, kin)
    assert Fs.shape == (2, 1)


def test_linearize_equals_sympy(pendulum):
    """About the hanging equilibrium and about a moving state (u̇₀ ≠ 0, where the
    ∂M⁻¹ term matters), A and B agree with KanesMethod.linearize(A_and_B=True)."""
    _system, eom, km, _lm = pendulum
    for q0, uu, T0 in (((0.0, 0.0), (0.0, 0.0), 0.0), ((0.4, -0.7), (1.1, -0.3), 0.5)):
        op = {q1: q0[0], q2: q0[1], u1: uu[0], u2: uu[1], Tt: T0}
        A, B = kane.linearize(eom, op)
        # SymPy wants u̇ at the operating point: the solution of the equations there
        state = (*q0, *uu, T0)
        udot = np.linalg.solve(_num(eom.mass_matrix, state), _num(eom.forcing, state)).ravel()
        sym_op = {q1: q0[0], q2: q0[1], u1: uu[0], u2: uu[1], Tt: T0,
                  u1.diff(): udot[0], u2.diff(): udot[1],
                  q1.diff(): uu[0], q2.diff(): uu[1] - uu[0]}
        As, Bs, r = km.linearize(op_point=sym_op, A_and_B=True)
        assert list(r) == [Tt]
        An = np.array(A.subs(VALUES).evalf(), dtype=float)
        Asn = np.array(As.subs(VALUES).evalf(), dtype=float)
        np.testing.assert_allclose(An, Asn, rtol=1e-10, atol=1e-10)
        Bn = np.array(B.subs(VALUES).evalf(), dtype=float)
        Bsn = np.array(Bs.subs(VALUES).evalf(), dtype=float)
        np.testing.assert_allclose(Bn, Bsn, rtol=1e-10, atol=1e-10)
    # at the hanging equilibrium the rods oscillate: eigenvalues purely imaginary
    A0, _ = kane.linearize(eom, {q1: 0, q2: 0, u1: 0, u2: 0, Tt: 0})
    ev = np.linalg.eigvals(np.array(A0.subs(VALUES).evalf(), dtype=float))
    assert np.max(np.abs(ev.real)) < 1e-9 and np.min(np.abs(ev.imag)) > 1.0


def test_linearize_rejects_unknown_symbol(pendulum):
    _system, eom, *_ = pendulum
    with pytest.raises(SymbolicError, match="zeta"):
        kane.linearize(eom, {sp.Symbol("zeta"): 1.0})


# ----------------------------------------------------------------------------- bad input


def _one_particle(kde, q, u, vel=None, **kw):
    N = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(N, 0)
    P = O.locatenew("P", q[0] * N.x + (q[1] if len(q) > 1 else 0) * N.y)
    P.set_vel(N, vel if vel is not None else P.pos_from(O).dt(N))
    return kane.KaneSystem(N, q, u, kde, [kane.Particle("bead", P, 1)], [(P, -N.y)], **kw)


def test_singular_Y_is_rejected():
    # u1 = q̇1 + q̇2 and u2 = 2 q̇1 + 2 q̇2: Y singular, the speeds are not independent
    s = _one_particle([u1 - q1.diff() - q2.diff(), u2 - 2 * q1.diff() - 2 * q2.diff()],
                      [q1, q2], [u1, u2])
    with pytest.raises(SymbolicError, match=r"Y = .*singular.*q1, q2"):
        s.derive()


def test_more_constraints_than_speeds_is_rejected():
    s = _one_particle([u1 - q1.diff(), u2 - q2.diff()], [q1, q2], [u1, u2],
                      u_dependent=[u2, u1], velocity_constraints=[u1 - u2, u1 + u2])
    with pytest.raises(SymbolicError, match="more constraints than speeds"):
        s.derive()
    s = _one_particle([u1 - q1.diff(), u2 - q2.diff()], [q1, q2], [u1, u2],
                      u_dependent=[u2], velocity_constraints=[u1 - u2, u1 + u2, u1])
    with pytest.raises(SymbolicError, match="3 velocity constraints for 2 speeds"):
        s.derive()


def test_velocity_not_affine_in_u_names_the_body():
    N = ReferenceFrame("N")
    s = _one_particle([u1 - q1.diff()], [q1], [u1], vel=sp.sin(u1) * N.x)
    # N differs from the frame inside, but the velocity is what is checked
    with pytest.raises(SymbolicError, match=r"particle 'bead' is not affine.*u1"):
        s.derive()


def test_speed_without_kinematic_equation_is_rejected():
    s = _one_particle([u1 - q1.diff()], [q1], [u1, u2])
    with pytest.raises(SymbolicError, match="speed u2 has no kinematic differential equation"):
        s.derive()


def test_kde_count_and_dependent_constraint_errors():
    s = _one_particle([u1 - q1.diff()], [q1, q2], [u1, u2])
    with pytest.raises(SymbolicError, match="1 kinematic differential equations for 2"):
        s.derive()
    # the constraint does not involve the named dependent speed: cannot be solved for it
    s = _one_particle([u1 - q1.diff(), u2 - q2.diff()], [q1, q2], [u1, u2],
                      u_dependent=[u2], velocity_constraints=[u1])
    with pytest.raises(SymbolicError, match="cannot be solved for the dependent speeds u2"):
        s.derive()
    with pytest.raises(SymbolicError, match="not one of the speeds"):
        _one_particle([u1 - q1.diff()], [q1], [u1], u_dependent=[u2],
                      velocity_constraints=[u1])
    with pytest.raises(SymbolicError, match="must be a dynamicsymbol"):
        _one_particle([u1 - q1.diff()], [q1], [sp.Symbol("w")])


def test_kde_not_linear_in_qdot_is_rejected():
    s = _one_particle([u1 - q1.diff() ** 2], [q1], [u1])
    with pytest.raises(SymbolicError, match="not linear in q̇"):
        s.derive()


def test_undeclared_time_function_in_a_load_is_rejected():
    F = dynamicsymbols("F")
    N = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(N, 0)
    P = O.locatenew("P", q1 * N.x)
    P.set_vel(N, u1 * N.x)
    s = kane.KaneSystem(N, [q1], [u1], [u1 - q1.diff()], [kane.Particle("bead", P, 1)],
                        [(P, F * N.x)])
    with pytest.raises(SymbolicError, match=r"contains F.*declare"):
        s.derive()
    ok = kane.KaneSystem(N, [q1], [u1], [u1 - q1.diff()], [kane.Particle("bead", P, 1)],
                         [(P, F * N.x)], inputs=[F])
    eom = ok.derive().expanded()
    assert eom.inputs == [sp.Symbol("F")] and eom.forcing[0] == sp.Symbol("F")


def test_parameter_named_like_a_coordinate_is_rejected():
    N = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(N, 0)
    P = O.locatenew("P", q1 * N.x)
    P.set_vel(N, u1 * N.x)
    clash = sp.Symbol("u1")                      # a plain symbol, same name as the speed
    s = kane.KaneSystem(N, [q1], [u1], [u1 - q1.diff()], [kane.Particle("bead", P, 1)],
                        [(P, -clash * N.x)])
    with pytest.raises(SymbolicError, match="symbol u1 has the name of a coordinate"):
        s.derive()


def test_linearize_implicit_form_and_simplify(pendulum):
    """A_and_B=False gives (M_x, A_x, B_x) with M_x⁻¹ A_x = A and M_x⁻¹ B_x = B."""
    system, eom, _km, _lm = pendulum
    op = {q1: 0.3, q2: -0.2, u1: 0.5, u2: 0.1, Tt: 0.2}
    A, B = kane.linearize(eom, op)
    Mx, Ax, Bx = kane.linearize(eom, op, A_and_B=False)
    num = lambda X: np.array(X.xreplace(VALUES), float)  # noqa: E731
    np.testing.assert_allclose(np.linalg.solve(num(Mx), num(Ax)), num(A), atol=1e-12)
    np.testing.assert_allclose(np.linalg.solve(num(Mx), num(Bx)), num(B), atol=1e-12)
    # simplify=True changes the form, not the value
    eom_s = system.derive(simplify=True)
    for state in _states(n=2, seed=7):
        np.testing.assert_allclose(_num(eom_s.forcing, state), _num(eom.forcing, state),
                                   rtol=1e-12, atol=1e-12)


def test_drag_and_thruster_generalized_active_forces():
    """Loads of any origin: a thruster of thrust P fixed in a planar body, at a
    point offset d along the body's y axis and pointing along its x axis, and
    linear drag −c v on the mass centre. Speeds: body-frame velocity (v1, v2)
    and yaw rate w. By hand (Kane & Levinson Ch. 4): F = [P − c v1, −c v2, −d P]
    and, for mass m and yaw inertia J, the body-frame Newton–Euler
    m (v̇1 − w v2) = P − c v1, m (v̇2 + w v1) = −c v2, J ẇ = −d P."""
    x, y, th = dynamicsymbols("x y th")
    v1, v2, w = dynamicsymbols("v1 v2 w")
    P_, c, d, m, J = sp.symbols("P c d m J", positive=True)
    N = ReferenceFrame("N")
    B = N.orientnew("B", "Axis", [th, N.z])
    B.set_ang_vel(N, w * N.z)
    O = Point("O")
    O.set_vel(N, 0)
    G = O.locatenew("G", x * N.x + y * N.y)
    G.set_vel(N, v1 * B.x + v2 * B.y)
    T = G.locatenew("T", d * B.y)
    T.v2pt_theory(G, N, B)
    # body-frame speeds: [v1, v2] = Rᵀ [ẋ, ẏ], so the kde is linear in q̇ with Y = Rᵀ
    kde = [v1 - (sp.cos(th) * x.diff() + sp.sin(th) * y.diff()),
           v2 - (-sp.sin(th) * x.diff() + sp.cos(th) * y.diff()), w - th.diff()]
    s = kane.KaneSystem(N, [x, y, th], [v1, v2, w], kde,
                        [kane.RigidBody("craft", G, B, m, kane.inertia(B, 0, 0, J))],
                        [kane.Force(T, P_ * B.x, "thruster"), kane.Force(G, -c * G.vel(N), "drag")],
                        inputs=[P_])
    F = kane.generalized_active_forces(s)
    assert sp.simplify(F - sp.Matrix([P_ - c * v1, -c * v2, -d * P_])) == sp.zeros(3, 1)
    eom = s.derive().expanded()
    ps = {n: sp.Symbol(n) for n in ("v1", "v2", "w")}
    udot = eom.mass_matrix.LUsolve(eom.forcing)
    expected = sp.Matrix([(P_ - c * ps["v1"]) / m + ps["w"] * ps["v2"],
                          -c * ps["v2"] / m - ps["w"] * ps["v1"], -d * P_ / J])
    assert sp.simplify(udot - expected) == sp.zeros(3, 1)
    assert eom.inputs == [P_] and sp.Symbol("P", positive=True) not in eom.parameters
    # ẋ = cos θ v1 − sin θ v2: Y was inverted
    th_ = sp.Symbol("th")
    assert sp.simplify(eom.qdot[0] - (sp.cos(th_) * ps["v1"] - sp.sin(th_) * ps["v2"])) == 0


def test_rheonomic_speed_and_prescribed_rotation():
    """A bead on a hoop (radius R) spun at the prescribed rate Ω about the
    vertical, with the speed u = θ̇ + k t (Z(q, t) ≠ 0, time explicit in the
    kinematics). The classic result θ̈ = sin θ (Ω² cos θ − g/R) gives
    u̇ = θ̈ + k."""
    th, u = dynamicsymbols("th u")
    Om, R, g, m, k = sp.symbols("Omega R g m k", positive=True)
    t = dynamicsymbols._t
    N = ReferenceFrame("N")
    H = N.orientnew("H", "Axis", [Om * t, N.z])          # the hoop, driven
    A = H.orientnew("A", "Axis", [th, H.y])
    O = Point("O")
    O.set_vel(N, 0)
    P = O.locatenew("P", -R * A.z)                      # θ from the bottom
    P.set_vel(N, P.pos_from(O).dt(N))
    s = kane.KaneSystem(N, [th], [u], [u - th.diff() - k * t],
                        [kane.Particle("bead", P, m)], [(P, -m * g * N.z)])
    eom = s.derive().expanded()
    th_ = sp.Symbol("th")
    udot = eom.forcing[0] / eom.mass_matrix[0, 0]
    assert sp.simplify(udot - (sp.sin(th_) * (Om**2 * sp.cos(th_) - g / R) + k)) == 0
    assert sp.simplify(eom.qdot[0] - (sp.Symbol("u") - k * sp.Symbol("t"))) == 0


def test_kinematics_with_a_restricted_domain():
    """A bead on a circle of radius 0.2 located by its abscissa x: y = √(r² − x²)
    is complex for |x| > r, which the first random draws (x ≥ 0.3) always are, so
    the rank and affinity checks must draw again inside the domain.
    Lagrange by hand, T = ½ m ẋ² r²/(r² − x²): ẍ = −x ẋ²/(r² − x²)."""
    x, u = dynamicsymbols("x u")
    r = sp.Rational(1, 5)
    N = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(N, 0)
    P = O.locatenew("P", x * N.x + sp.sqrt(r**2 - x**2) * N.y)
    P.set_vel(N, P.pos_from(O).dt(N))
    eom = kane.KaneSystem(N, [x], [u], [u - x.diff()],
                          [kane.Particle("bead", P, 2)]).derive().expanded()
    xs, us = sp.Symbol("x"), sp.Symbol("u")
    udot = eom.forcing[0] / eom.mass_matrix[0, 0]
    assert sp.simplify(udot + xs * us**2 / (r**2 - xs**2)) == 0
    assert sp.simplify(eom.energy - us**2 * r**2 / (r**2 - xs**2)) == 0     # ½ m v², m = 2


def test_configuration_constraint_errors():
    kde = [u1 - q1.diff(), u2 - q2.diff()]
    with pytest.raises(SymbolicError, match="3 configuration constraints for 2 coordinates"):
        _one_particle(kde, [q1, q2], [u1, u2], q_dependent=[q2],
                      configuration_constraints=[q1, q2, q1 + q2])
    with pytest.raises(SymbolicError, match="1 configuration constraints but 0 dependent"):
        _one_particle(kde, [q1, q2], [u1, u2], configuration_constraints=[q1 - q2])
    with pytest.raises(SymbolicError, match="dependent coordinate .* not one of the coordinates"):
        _one_particle(kde, [q1, q2], [u1, u2], q_dependent=[u1],
                      configuration_constraints=[q1 - q2])
    # g = q1² − 1 does not involve q2: it cannot be solved for q2
    s = _one_particle(kde, [q1, q2], [u1, u2], q_dependent=[q2],
                      configuration_constraints=[q1**2 - 1],
                      u_dependent=[u1], velocity_constraints=[2 * q1 * u1])
    with pytest.raises(SymbolicError, match=r"cannot be solved for the dependent coordinates q2"):
        s.derive()


def test_ignorable_speed_and_configuration_constraint_on_a_small_system():
    """A bead on the line y = x (configuration constraint y − x = 0, dependent y), and a
    spinning wheel's rate w with no coordinate (its angle is ignorable): the equations
    are m ẍ·2 = −m g (gravity along −y) for the bead and a free spin, and linearisation
    eliminates y."""
    w = dynamicsymbols("w")
    N = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(N, 0)
    P = O.locatenew("P", q1 * N.x + q2 * N.y)
    P.set_vel(N, u1 * N.x + u2 * N.y)
    W = ReferenceFrame("W")
    W.set_ang_vel(N, w * N.z)
    mm, gg = sp.symbols("mm gg", positive=True)
    bodies = [kane.Particle("bead", P, mm),
              kane.RigidBody("wheel", O, W, 1, kane.inertia(N, 1, 1, 2))]
    s = kane.KaneSystem(N, [q1, q2], [u1, u2, w], [u1 - q1.diff(), u2 - q2.diff()], bodies,
                        [(P, -mm * gg * N.y)], u_dependent=[u2],
                        velocity_constraints=[u2 - u1], q_dependent=[q2],
                        configuration_constraints=[q2 - q1])
    eom = s.derive()
    ex = eom.expanded()
    assert [str(x) for x in eom.u] == ["u1", "w"]
    assert sp.simplify(ex.mass_matrix - sp.diag(2 * mm, 2)) == sp.zeros(2, 2)
    assert sp.simplify(ex.forcing - sp.Matrix([-mm * gg, 0])) == sp.zeros(2, 1)
    A, _B = kane.linearize(eom, {q1: 0.3, u1: 1.0, w: 2.0, mm: 1.0, gg: 9.81})
    # state [q1; u1, w]: q̇1 = u1, the rest constant
    assert A.shape == (3, 3)
    np.testing.assert_allclose(np.array(A, float), [[0, 1, 0], [0, 0, 0], [0, 0, 0]],
                               atol=1e-14)
    with pytest.raises(SymbolicError, match="violates the configuration constraints by 0.1"):
        kane.linearize(eom, {q1: 0.3, q2: 0.4, u1: 1.0, w: 2.0, mm: 1.0, gg: 9.81})
