"""The classic examples of Kane's method for general systems, each against an
independent check: Euler's equations, a hand reduction of the gyrostat
equations with momentum conservation, the rolling disk against SymPy's
KanesMethod, a Newton–Euler steady turn and Routh's stability bound, a pin
reaction against Newton–Euler, and a Stewart platform against hand statics and
energy conservation."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp
from sympy.physics import mechanics as me
from sympy.physics.vector import Point, ReferenceFrame, dynamicsymbols

from kanedyn import SymbolicError, kane
from kanedyn.kane import classic


def _plain(x):
    return sp.Symbol(x.func.__name__) if hasattr(x, "func") and x.args == (dynamicsymbols._t,) \
        else x


def _numeric(eom, values, extra=()):
    """lambdify M, forcing and q̇ in (q, u, inputs) with parameter values folded in."""
    args = [*eom.q, *eom.u, *eom.inputs, *extra]
    vals = {_plain(k): v for k, v in values.items()}

    def fn(expr):
        return sp.lambdify(args, sp.Matrix(expr).xreplace(vals), modules="numpy", cse=True)

    M, f, qd = fn(eom.mass_matrix), fn(eom.forcing), fn(eom.qdot)
    nq, nu = len(eom.q), len(eom.u)

    def rhs(x, r=()):
        a = (*x[:nq], *x[nq:nq + nu], *r)
        ud = np.linalg.solve(np.asarray(M(*a), float), np.asarray(f(*a), float).ravel())
        return np.concatenate([np.asarray(qd(*a), float).ravel(), ud])

    return rhs, M, f, qd


def _random_unit_quaternion(rng):
    e = rng.normal(size=4)
    return e / np.linalg.norm(e)


# ----------------------------------------------------------------------------- free rigid body


@pytest.fixture(scope="module")
def free_body():
    system, info = classic.free_rigid_body()
    return system, info, system.derive().expanded()


def test_free_rigid_body_gives_euler_equations_exactly(free_body):
    """I ω̇ + ω × I ω = T with the full (non-principal) central inertia, m v̇ = F,
    as exact symbolic identities; the quaternion kinematics stay separate."""
    _system, info, eom = free_body
    I11, I22, I33, I12, I23, I31 = info["I"]
    Ic = sp.Matrix([[I11, I12, I31], [I12, I22, I23], [I31, I23, I33]])
    w = sp.Matrix(eom.u[:3])
    T = sp.Matrix([sp.Symbol(f"T{i}") for i in (1, 2, 3)])
    F = sp.Matrix([sp.Symbol(f"F{i}") for i in (1, 2, 3)])
    m = info["m"]
    M_expected = sp.diag(Ic, m * sp.eye(3))
    f_expected = (T - w.cross(Ic * w)).col_join(F)
    assert sp.simplify(eom.mass_matrix - M_expected) == sp.zeros(6, 6)
    assert sp.simplify(eom.forcing - f_expected) == sp.zeros(6, 1)
    e0, e1, e2, e3 = eom.q[:4]
    ev, wv = sp.Matrix([e1, e2, e3]), w
    qdot_expected = sp.Matrix([-ev.dot(wv) / 2]).col_join((e0 * wv + ev.cross(wv)) / 2)
    assert sp.simplify(eom.qdot[:4, 0] - qdot_expected) == sp.zeros(4, 1)
    assert eom.qdot[4:, 0] == sp.Matrix(eom.u[3:])
    assert eom.quaternions == [((0, 1, 2, 3), (0, 1, 2))]
    assert eom.mass_matrix.free_symbols.isdisjoint(set(eom.q))


def test_quaternion_kinematics_match_the_orientation(free_body):
    """The kde must agree with the DCM that orientnew builds: SymPy's angular
    velocity of that orientation, in q̇, with our q̇(q, ω) put in, gives back ω
    on unit quaternions."""
    system, info, _eom = free_body
    N, q = info["N"], info["q"]
    B2 = N.orientnew("B2", "Quaternion", q[:4])        # angular velocity from q̇
    w_from_qdot = [B2.ang_vel_in(N).dot(e) for e in (B2.x, B2.y, B2.z)]
    sol = kane.kinematics(system).qdot
    rng = np.random.default_rng(4)
    for _ in range(3):
        e = _random_unit_quaternion(rng)
        w = rng.normal(size=3)
        rule = {q[i].diff(): sol[i] for i in range(4)}
        vals = {**{q[i]: e[i] for i in range(4)}, **{info["u"][i]: w[i] for i in range(3)}}
        got = [float(x.xreplace(rule).xreplace(vals)) for x in w_from_qdot]
        np.testing.assert_allclose(got, w, atol=1e-12)


# ----------------------------------------------------------------------------- reaction wheel


@pytest.fixture(scope="module")
def spacecraft():
    system, info = classic.spacecraft_reaction_wheel()
    return system, info, system.derive().expanded()


def test_reaction_wheel_reduces_to_the_gyrostat_equations(spacecraft):
    """Hand reduction (Kane & Levinson 1985, symmetric rotor): with
    I_tot = I_bus + diag(K, K, J) and h = I_tot ω + J u_w e3,
    I_tot ω̇ + J u̇_w e3 = −ω × h   and   J (ω̇3 + u̇_w) = T_m,
    i.e. the wheel equation J u̇_w = T_m − J ω̇3: the transverse moment K and the
    wheel angle drop out (axisymmetry)."""
    _system, info, eom = spacecraft
    J, K = info["J"], info["K"]
    I_tot = info["I_bus"] + sp.diag(K, K, J)
    w = sp.Matrix(eom.u[:3])
    uw = eom.u[3]
    e3 = sp.Matrix([0, 0, 1])
    h = I_tot * w + J * uw * e3
    M_hand = I_tot.row_join(J * e3).col_join((J * e3.T).row_join(sp.Matrix([[J]])))
    f_hand = (-w.cross(h)).col_join(sp.Matrix([sp.Symbol("Tm")]))
    assert sp.simplify(eom.mass_matrix - M_hand) == sp.zeros(4, 4)
    assert sp.simplify(eom.forcing - f_hand) == sp.zeros(4, 1)


def test_reaction_wheel_conserves_angular_momentum(spacecraft):
    """Integrating with a motor torque T_m(t) that spins the wheel up: the total
    angular momentum about the mass centre, in inertial axes, stays constant,
    while the kinetic energy changes at the rate T_m u_w (internal work)."""
    _system, info, eom = spacecraft
    vals = {"I11": 3.0, "I22": 4.0, "I33": 5.0, "I12": 0.3, "J": 0.2, "K": 0.12,
            "m_B": 100.0, "m_W": 2.0}
    vals = {sp.Symbol(k, positive=True): v for k, v in vals.items()}
    rhs, *_ = _numeric(eom, vals)
    J, K = 0.2, 0.12
    I_tot = np.array([[3.0 + K, 0.3, 0], [0.3, 4.0 + K, 0], [0, 0, 5.0 + J]])
    N, B = info["N"], info["B"]
    dcm = sp.lambdify(eom.q[:4], N.dcm(B).xreplace({a: _plain(a) for a in info["q"][:4]}))

    def Tm(t):
        return 0.3 * np.sin(2.0 * t) + 0.2

    def H(x):
        e = x[:4] / np.linalg.norm(x[:4])
        w, uw = x[5:8], x[8]
        return np.asarray(dcm(*e), float) @ (I_tot @ w + J * uw * np.array([0, 0, 1.0]))

    x0 = np.array([1.0, 0, 0, 0, 0, 0.1, -0.2, 0.3, 0.0])
    sol = solve_ivp(lambda t, x: rhs(x, (Tm(t),)), (0, 3.0), x0, method="DOP853",
                    rtol=1e-11, atol=1e-12, dense_output=True)
    assert sol.success
    H0 = H(x0)
    drift = max(np.linalg.norm(H(x) - H0) for x in sol.y.T) / np.linalg.norm(H0)
    assert drift < 1e-8
    assert abs(sol.y[8, -1]) > 0.5                  # the wheel did spin up
    # the motor torque is an input, so E = K (no potential): it changes by the motor's work
    assert eom.potential_energy == 0 and eom.energy == eom.kinetic_energy
    # kinetic energy from the kinematics, and its rate T_m u_w
    Kexpr = kane.kinetic_energy(_system)
    rule = {d: _plain(d) for d in (*info["q"], *info["u"])}
    Kf = sp.lambdify([*eom.q, *eom.u], Kexpr.xreplace(rule).xreplace(vals))
    for t in (0.5, 1.5, 2.5):
        dt = 1e-4
        Kp, Km = Kf(*sol.sol(t + dt)), Kf(*sol.sol(t - dt))
        x = sol.sol(t)
        assert (Kp - Km) / (2 * dt) == pytest.approx(Tm(t) * x[8], rel=1e-5)


# ----------------------------------------------------------------------------- rolling disk


@pytest.fixture(scope="module")
def disk():
    system, info = classic.rolling_disk()
    eom = system.derive().expanded()
    q, u = info["q"], info["u"]
    kde_map = {qi.diff(): ui for qi, ui in zip(q, u, strict=True)}
    km = me.KanesMethod(
        info["N"], q_ind=q, u_ind=u[:3], u_dependent=u[3:],
        kd_eqs=[ui - qi.diff() for qi, ui in zip(q, u, strict=True)],
        velocity_constraints=[c.xreplace(kde_map) for c in info["constraints"]],
    )
    m, R = info["m"], info["R"]
    body = me.RigidBody("disk", info["Dc"], info["D"], m,
                        (me.inertia(info["L"], m * R**2 / 4, m * R**2 / 2, m * R**2 / 4),
                         info["Dc"]))
    km.kanes_equations([body], [(info["Dc"], -m * info["g"] * info["N"].z)])
    return system, info, eom, km


DISK = {"m": 0.5, "g": 9.81, "R": 0.3}


def _disk_values(info):
    return {info["m"]: DISK["m"], info["g"]: DISK["g"], info["R"]: DISK["R"]}


def test_rolling_disk_has_three_equations(disk):
    _system, info, eom, _km = disk
    assert len(eom.q) == 5 and len(eom.u) == 3
    assert eom.mass_matrix.shape == (3, 3) and eom.forcing.shape == (3, 1)
    assert set(map(str, eom.dependent_speeds)) == {"u4", "u5"}
    for e in (*eom.mass_matrix, *eom.forcing, *eom.qdot):
        assert not e.has(sp.Symbol("u4")) and not e.has(sp.Symbol("u5"))


def test_rolling_disk_equals_sympy_kanes_method(disk):
    """Numerically equal accelerations u̇1..u̇3 at random states. SymPy's equations
    are in all five speeds, so its u4, u5 come from solving the constraints
    numerically."""
    _system, info, eom, km = disk
    vals = _disk_values(info)
    q, u = info["q"], info["u"]
    rng = np.random.default_rng(5)
    kde_map = {qi.diff(): ui for qi, ui in zip(q, u, strict=True)}
    cons = sp.Matrix([c.xreplace(kde_map) for c in info["constraints"]])
    for _ in range(4):
        qv, uv = rng.uniform(-1.2, 1.2, 5), rng.uniform(-2, 2, 3)
        base = {**vals, **dict(zip(q, qv, strict=True)), **dict(zip(u[:3], uv, strict=True))}
        c = cons.xreplace(base)
        lin = c.jacobian(u[3:])
        dep = np.linalg.solve(np.array(lin, float), -np.array(c.xreplace(
            {u[3]: 0, u[4]: 0}), float)).ravel()
        full = {**base, u[3]: dep[0], u[4]: dep[1]}
        plain = {_plain(k): v for k, v in full.items()}
        M = np.array(eom.mass_matrix.xreplace(plain), float)
        f = np.array(eom.forcing.xreplace(plain), float)
        # SymPy's mass_matrix/forcing are the 5x5 system in all u̇ (dynamic rows and
        # the differentiated constraints): compare the independent accelerations
        Ms = np.array(km.mass_matrix.xreplace(full), float)
        fs = np.array(km.forcing.xreplace(full), float).ravel()
        np.testing.assert_allclose(np.linalg.solve(M, f).ravel(), np.linalg.solve(Ms, fs)[:3],
                                   rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(M, M.T, atol=1e-15)
        # our eliminated dependent speeds equal SymPy's constraint solution
        ours = [float(eom.dependent_speeds[sp.Symbol(n)].xreplace(plain)) for n in ("u4", "u5")]
        np.testing.assert_allclose(ours, dep, atol=1e-12)


def test_rolling_disk_equals_sympy_lagranges_method(disk):
    """Lagrange with multipliers (SymPy's LagrangesMethod, nonholonomic
    constraints in q̇, L = T − V written independently of our kinematics code)
    gives the same q̈1..q̈3 as our u̇ (u = q̇ here) at random consistent states."""
    _system, info, eom, _km = disk
    q, m, R, g = info["q"], info["m"], info["R"], info["g"]
    body = me.RigidBody("disk", info["Dc"], info["D"], m,
                        (me.inertia(info["L"], m * R**2 / 4, m * R**2 / 2, m * R**2 / 4),
                         info["Dc"]))
    body.potential_energy = m * g * R * sp.cos(q[1])
    lm = me.LagrangesMethod(me.Lagrangian(info["N"], body), q,
                            nonhol_coneqs=info["constraints"], frame=info["N"])
    lm.form_lagranges_equations()
    vals = _disk_values(info)
    qd = [qi.diff() for qi in q]
    rhs, *_ = _numeric(eom, vals)
    rng = np.random.default_rng(10)
    for _ in range(3):
        qv, ud = rng.uniform(-1.2, 1.2, 5), rng.uniform(-2, 2, 3)
        st = {**vals, **dict(zip(q, qv, strict=True)), **dict(zip(qd[:3], ud, strict=True))}
        a = sp.symbols("a4 a5")        # q̇4, q̇5 as plain unknowns (xreplace is top-down)
        c = sp.Matrix(info["constraints"]).xreplace(dict(zip(qd[3:], a, strict=True)))
        c = c.xreplace(st)
        dep = np.linalg.solve(np.array(c.jacobian(a), float),
                              -np.array(c.xreplace({a[0]: 0, a[1]: 0}), float)).ravel()
        st |= {qd[3]: dep[0], qd[4]: dep[1]}
        Mf = np.array(lm.mass_matrix_full.xreplace(st), float)
        ff = np.array(lm.forcing_full.xreplace(st), float).ravel()
        qdd = np.linalg.solve(Mf, ff)[5:10]
        np.testing.assert_allclose(rhs(np.r_[qv, ud])[5:], qdd[:3], rtol=1e-10, atol=1e-10)


def _steady_turn_residual(theta, psid, phid, m, g, R, A_, C_):
    """Newton–Euler for the disk in steady turning (yaw 0 at this instant, lean θ,
    yaw rate ψ̇, spin φ̇ about the axle L.y): dH_G/dt − r_GC × F, zero on a
    steady motion. All in N components."""
    z = np.array([0, 0, 1.0])
    Lx = np.array([1.0, 0, 0])
    Ly = np.array([0, np.cos(theta), np.sin(theta)])
    Lz = np.array([0, -np.sin(theta), np.cos(theta)])
    w = psid * z + phid * Ly
    H = A_ * (w @ Lx) * Lx + C_ * (w @ Ly) * Ly + A_ * (w @ Lz) * Lz
    vG = np.cross(w, R * Lz)                  # the contact point is at rest
    aG = np.cross(psid * z, vG)               # v_G is constant in the turning frame
    F = m * aG + m * g * z                    # contact force
    return np.cross(psid * z, H) - np.cross(-R * Lz, F)   # H constant in the turning frame


def test_rolling_disk_steady_turn_matches_newton_euler(disk):
    """Steady turning at lean θ and yaw rate ψ̇: the spin rate φ̇ that the
    Newton–Euler equations of the disk require (computed here by hand, in
    numpy) makes all three of our u̇ vanish. Straight upright rolling is steady
    at any spin."""
    _system, info, eom, _km = disk
    m, g, R = DISK["m"], DISK["g"], DISK["R"]
    A_, C_ = m * R**2 / 4, m * R**2 / 2
    _rhs, M, f, _qd = _numeric(eom, _disk_values(info))
    for theta, psid in ((0.3, 2.0), (-0.5, 4.0), (0.8, -3.0)):
        def residual(phid, theta=theta, psid=psid):
            return _steady_turn_residual(theta, psid, phid, m, g, R, A_, C_)

        e0, e1 = residual(0.0), residual(1.0) - residual(0.0)
        phid = -(e1 @ e0) / (e1 @ e1)
        assert np.linalg.norm(residual(phid)) < 1e-10 * (1 + np.linalg.norm(e0))
        x = (0.0, theta, 0.0, 0.0, 0.0, psid, 0.0, phid)
        ud = np.linalg.solve(np.asarray(M(*x), float), np.asarray(f(*x), float).ravel())
        np.testing.assert_allclose(ud, 0, atol=1e-10)
        # a different spin at the same lean and yaw rate is not steady
        x = (0.0, theta, 0.0, 0.0, 0.0, psid, 0.0, phid + 1.0)
        ud = np.linalg.solve(np.asarray(M(*x), float), np.asarray(f(*x), float).ravel())
        assert np.max(np.abs(ud)) > 1e-2
    for spin in (-5.0, 0.5, 7.0):
        x = (0.3, 0.0, 1.0, 0.2, -0.4, 0.0, 0.0, spin)
        ud = np.linalg.solve(np.asarray(M(*x), float), np.asarray(f(*x), float).ravel())
        np.testing.assert_allclose(ud, 0, atol=1e-12)


def test_upright_rolling_bound_for_a_hoop():
    """The general axisymmetric bound Ω² > A m g R / (C (C + m R²)) (A diametral, C
    axial moment) also holds for a thin hoop, A = mR²/2, C = mR²: Ω² > g/(4R)."""
    system, info = classic.rolling_disk(axial=1, diametral=sp.Rational(1, 2))
    eom = system.derive().expanded()
    crit = np.sqrt(DISK["g"] / (4 * DISK["R"]))
    for factor, stable in ((0.999, False), (1.001, True)):
        growth = np.max(np.linalg.eigvals(_disk_linearization(eom, info, factor * crit)).real)
        assert (growth < 1e-6) if stable else (growth > 1e-3), (factor, growth)


def _disk_linearization(eom, info, spin):
    q, u = info["q"], info["u"]
    op = {**{qi: 0 for qi in q}, u[0]: 0, u[1]: 0, u[2]: spin}
    A, _B = kane.linearize(eom, op)
    return np.array(A.xreplace({_plain(k): v for k, v in _disk_values(info).items()}), float)


def test_rolling_disk_linearization_equals_sympy(disk):
    _system, info, eom, km = disk
    q, u = info["q"], info["u"]
    spin = 3.0
    A = _disk_linearization(eom, info, spin)
    # the operating point for SymPy: all q, u (dependent ones from the constraint), q̇, u̇
    R = DISK["R"]
    # rolling along N.x: the centre moves at R Ω (u4 = q̇4 = R Ω)
    op = {**{qi: 0 for qi in q}, u[0]: 0, u[1]: 0, u[2]: spin, u[3]: R * spin, u[4]: 0}
    op.update({qi.diff(): op[ui] for qi, ui in zip(q, u, strict=True)})
    op.update({ui.diff(): 0 for ui in u})
    As, _Bs, _r = km.linearize(op_point=op, A_and_B=True)
    As = np.array(As.xreplace(_disk_values(info)), float)
    np.testing.assert_allclose(A, As, atol=1e-10)
    # the same operating point with SymPy's dependent speeds (consistent) is accepted;
    # an inconsistent one is an error naming the speed
    A2, _ = kane.linearize(eom, {k: v for k, v in op.items() if not isinstance(k, sp.Derivative)}
                           | {info["R"]: R})
    np.testing.assert_allclose(np.array(A2.xreplace(_disk_values(info)), float), A, atol=1e-12)
    with pytest.raises(SymbolicError, match="u4 = 1.0.*constraints imply"):
        kane.linearize(eom, {**{qi: 0 for qi in q}, u[2]: spin, u[3]: 1.0, info["R"]: R})


def test_upright_rolling_stable_iff_spin_above_routh_bound(disk):
    """A uniform thin disk rolling upright is stable iff its spin Ω satisfies
    Ω² > g / (3R) (Routh, *Advanced Part of a Treatise on the Dynamics of a
    System of Rigid Bodies*, art. 244; K. T. McDonald, "The rolling motion of a
    disk on a horizontal plane", arXiv:physics/0008227). For a general
    axisymmetric wheel the bound reads Ω² > A m g R / (C (C + m R²)), A and C
    the diametral and axial moments, which gives g/(3R) for A = mR²/4,
    C = mR²/2 (the hoop is checked below). Checked on the eigenvalues of our
    linearization a tenth of a percent on either side of the bound."""
    _system, info, eom, _km = disk
    g, R = DISK["g"], DISK["R"]
    crit = np.sqrt(g / (3 * R))
    for factor, stable in ((0.5, False), (0.999, False), (1.001, True), (3.0, True)):
        ev = np.linalg.eigvals(_disk_linearization(eom, info, factor * crit))
        growth = np.max(ev.real)
        if stable:
            assert growth < 1e-6, (factor, ev)
        else:
            assert growth > 1e-3, (factor, ev)


def test_rolling_disk_contact_force_through_auxiliary_speeds():
    """Nonholonomic and auxiliary together: the contact force from auxiliary
    speeds equals Newton's F = m a_G + m g e_z, with a_G the second derivative of
    the centre's position computed here directly and the dependent u4, u5, u̇4,
    u̇5 solved numerically from the constraints and their time derivative, at
    random (q, u, u̇) — the identity holds for any u̇ compatible with rolling."""
    system, info = classic.rolling_disk(contact_forces=True)
    eom = system.derive().expanded()
    assert set(eom.auxiliary) == {"Fx", "Fy", "Fz"} and len(eom.u) == 3
    q, u, N, t = info["q"], info["u"], info["N"], dynamicsymbols._t
    vals = _disk_values(info)
    rG = (q[3] * N.x + q[4] * N.y + info["R"] * info["L"].z).to_matrix(N)
    to_u = {qi.diff(t, 2): ui.diff(t) for qi, ui in zip(q, u, strict=True)}
    to_u |= {qi.diff(t): ui for qi, ui in zip(q, u, strict=True)}
    aG = rG.diff(t, 2).xreplace(to_u)
    cons = sp.Matrix([c.xreplace(to_u) for c in info["constraints"]])
    cons = cons.xreplace({ua: 0 for ua in info["ua"]})
    a4, a5 = sp.symbols("a4 a5")             # u̇4, u̇5 as plain unknowns
    dcons = cons.diff(t).xreplace(to_u).xreplace({u[3].diff(t): a4, u[4].diff(t): a5})
    rng = np.random.default_rng(9)
    m, g = DISK["m"], DISK["g"]
    for _ in range(4):
        st = {**vals, **dict(zip(q, rng.uniform(-1, 1, 5), strict=True)),
              **dict(zip(u[:3], rng.uniform(-2, 2, 3), strict=True)),
              **dict(zip([x.diff(t) for x in u[:3]], rng.uniform(-3, 3, 3), strict=True))}
        c = cons.xreplace(st)
        dep = np.linalg.solve(np.array(c.jacobian(u[3:]), float),
                              -np.array(c.xreplace({u[3]: 0, u[4]: 0}), float)).ravel()
        st |= {u[3]: dep[0], u[4]: dep[1]}
        dc = dcons.xreplace(st)
        ddep = np.linalg.solve(np.array(dc.jacobian([a4, a5]), float),
                               -np.array(dc.xreplace({a4: 0, a5: 0}), float)).ravel()
        st |= {u[3].diff(t): ddep[0], u[4].diff(t): ddep[1]}
        newton = m * np.array(aG.xreplace(st), float).ravel() + np.array([0, 0, m * g])
        plain = {**{_plain(k): v for k, v in st.items() if not isinstance(k, sp.Derivative)},
                 **{kane.udot_symbol(k.expr): v for k, v in st.items()
                    if isinstance(k, sp.Derivative)}}
        ours = [float(eom.auxiliary[n].xreplace(plain)) for n in ("Fx", "Fy", "Fz")]
        np.testing.assert_allclose(ours, newton, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- pin reaction


def test_pin_reaction_through_auxiliary_speeds_equals_newton_euler():
    """Rod of mass m, length l, on a pin, gravity g along N.x (θ from the down
    vertical). Newton for the mass centre, a_G = −(l/2) θ̇² A.x + (l/2) θ̈ A.y:
    the pin force on the rod is
    R1 (along the rod)  = −m (g cos θ + (l/2) θ̇²),
    R2 (across the rod) =  m (g sin θ + (l/2) θ̈),
    equal to our auxiliary-speed expressions at random (θ, θ̇, θ̈); on the motion,
    θ̈ = −3g/(2l) sin θ, which gives R2 = m g sin θ / 4."""
    system, info = classic.pendulum_pin_reaction()
    eom = system.derive().expanded()
    m, l, g = info["m"], info["l"], info["g"]
    th, w, wd = sp.Symbol("q1"), sp.Symbol("u1"), kane.udot_symbol(info["u1"])
    R1 = -m * (g * sp.cos(th) + l / 2 * w**2)
    R2 = m * (g * sp.sin(th) + l / 2 * wd)
    assert set(eom.auxiliary) == {"R1", "R2"}
    rng = np.random.default_rng(6)
    vals = {m: 1.7, l: 0.8, g: 9.81}
    for _ in range(5):
        s = {th: rng.uniform(-3, 3), w: rng.uniform(-4, 4), wd: rng.uniform(-10, 10), **vals}
        assert float(eom.auxiliary["R1"].xreplace(s)) == pytest.approx(float(R1.xreplace(s)),
                                                                       rel=1e-12)
        assert float(eom.auxiliary["R2"].xreplace(s)) == pytest.approx(float(R2.xreplace(s)),
                                                                       rel=1e-12)
    # the true equation is the pendulum's, and the reactions stay out of it
    assert sp.simplify(eom.forcing[0] / eom.mass_matrix[0, 0] + 3 * g / (2 * l) * sp.sin(th)) == 0
    on_motion = eom.auxiliary["R2"].xreplace({wd: eom.forcing[0] / eom.mass_matrix[0, 0]})
    assert sp.simplify(on_motion - m * g * sp.sin(th) / 4) == 0


def test_reaction_that_does_work_is_rejected():
    """A 'reaction' applied at the mass centre does work in the true speed u1."""
    system, info = classic.pendulum_pin_reaction()
    from dataclasses import replace
    bad = replace(system, loads=[(info["G"], info["m"] * info["g"] * info["N"].x),
                                 (info["G"], info["R1"] * info["A"].x
                                  + info["R2"] * info["A"].y)])
    with pytest.raises(SymbolicError, match="R2 contributes to the equation of speed u1"):
        bad.derive()


# ----------------------------------------------------------------------------- Stewart platform


STEWART = {"M": 12.0, "Ixx": 0.9, "Iyy": 1.1, "Izz": 1.6, "g": 9.81, "k": 4000.0, "l0": 1.1}


@pytest.fixture(scope="module")
def stewart():
    system, info = classic.stewart_platform()
    eom = system.derive().expanded()
    vals = {sp.Symbol(k, positive=True): v for k, v in STEWART.items()}
    return system, info, eom, vals


def _pose(rng=None):
    # a tilted, shifted pose (unit quaternion, position)
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    ang = 0.15
    e = np.concatenate([[np.cos(ang / 2)], np.sin(ang / 2) * axis])
    return np.concatenate([e, [0.05, -0.04, 1.0]])


def _rotation(e):
    w, x, y, z = e
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def test_stewart_platform_is_an_ode_in_the_twist(stewart):
    _system, _info, eom, vals = stewart
    assert len(eom.q) == 7 and len(eom.u) == 6 and eom.dependent_speeds == {}
    _rhs, M, _f, _qd = _numeric(eom, vals)
    Mn = np.asarray(M(*_pose(), *np.zeros(6), *np.zeros(6)), float)
    np.testing.assert_allclose(Mn, np.diag([0.9, 1.1, 1.6, 12.0, 12.0, 12.0]), atol=1e-12)


def test_stewart_platform_statics_balance_gravity(stewart):
    """At a static pose the actuator forces that make u̇ = 0 (from our forcing,
    linear in f) equal those of a hand statics computation in numpy:
    Σ t_i n_i = M g e_z and Σ (R p_i) × t_i n_i = 0, t_i = f_i − k(ℓ_i − ℓ0)."""
    _system, info, eom, vals = stewart
    _rhs, _M, f, _qd = _numeric(eom, vals)
    x = _pose()
    f0 = np.asarray(f(*x, *np.zeros(6), *np.zeros(6)), float).ravel()
    Jf = np.column_stack([np.asarray(f(*x, *np.zeros(6), *np.eye(6)[i]), float).ravel() - f0
                          for i in range(6)])
    f_kane = np.linalg.solve(Jf, -f0)
    Rm = _rotation(x[:4])
    G = x[4:]
    cols, spring = [], np.zeros(6)
    for i in range(6):
        r = Rm @ info["platform"][i]
        d = G + r - info["base"][i]
        ell = np.linalg.norm(d)
        n = d / ell
        cols.append(np.concatenate([np.cross(r, n), n]))
        spring[i] = -STEWART["k"] * (ell - STEWART["l0"])
    W = np.column_stack(cols)                  # wrench about G per unit leg tension
    t = np.linalg.solve(W, np.array([0, 0, 0, 0, 0, STEWART["M"] * STEWART["g"]]))
    np.testing.assert_allclose(f_kane, t - spring, rtol=1e-9)
    assert np.all(np.abs(t) > 1.0)             # every leg carries load


def test_stewart_platform_conserves_energy_unactuated(stewart):
    """With the actuators off (f = 0) the platform bounces on the leg springs
    under gravity; the energy (kinetic + gravity + springs) stays constant."""
    _system, _info, eom, vals = stewart
    rhs, *_ = _numeric(eom, vals)
    E = sp.lambdify([*eom.q, *eom.u], eom.energy.xreplace(vals), cse=True)
    x0 = np.concatenate([_pose(), [0.4, -0.3, 0.2, 0.1, 0.05, -0.2]])
    sol = solve_ivp(lambda t, x: rhs(x, np.zeros(6)), (0, 0.4), x0, method="DOP853",
                    rtol=1e-11, atol=1e-12)
    assert sol.success
    energies = np.array([E(*x) for x in sol.y.T])
    assert np.ptp(energies) < 1e-8 * abs(energies[0])
    assert np.ptp(sol.y[6]) > 1e-2            # it did move


# ----------------------------------------------------------------------------- compiled


def test_general_systems_compile_to_the_system_protocol(disk, spacecraft, stewart):
    """eom.compile() of the general systems: forward dynamics, q̇ and energy equal
    the symbolic equations evaluated directly."""
    _s, info, eom, _km = disk
    rhs, *_ = _numeric(eom, _disk_values(info))
    rng = np.random.default_rng(8)
    for backend in ("numpy", "numba"):
        fast = eom.compile(backend=backend, parameters={"m": DISK["m"], "g": DISK["g"],
                                                        "R": DISK["R"]})
        assert (fast.nq, fast.nv) == (5, 3)
        for _ in range(3):
            q, v = rng.uniform(-1, 1, 5), rng.uniform(-2, 2, 3)
            x = rhs(np.concatenate([q, v]))
            np.testing.assert_allclose(fast.forward_dynamics(q, v, np.zeros(0)), x[5:],
                                       rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(fast.q_dot(q, v), x[:5], rtol=1e-12, atol=1e-14)
            E = eom.energy.xreplace({**{_plain(k): val for k, val in _disk_values(info).items()},
                                     **dict(zip(eom.q, q, strict=True)),
                                     **dict(zip(eom.u, v, strict=True))})
            assert fast.energy(q, v) == pytest.approx(float(E), rel=1e-12)

    _s, _info, eom, = spacecraft
    values = {"I11": 3.0, "I22": 4.0, "I33": 5.0, "I12": 0.3, "J": 0.2, "K": 0.12}
    fast = eom.compile(backend="numba", parameters=values)
    rhs, *_ = _numeric(eom, {sp.Symbol(k, positive=True): v for k, v in values.items()})
    q = np.concatenate([_random_unit_quaternion(rng), [0.4]])
    v = rng.normal(size=4)
    np.testing.assert_allclose(fast.forward_dynamics(q, v, np.array([0.7])),
                               rhs(np.concatenate([q, v]), (0.7,))[5:], rtol=1e-10)
    # one step on the manifold keeps the quaternion unit
    q1 = fast.integrate_configuration(q, v, 0.05)
    assert np.linalg.norm(q1[:4]) == pytest.approx(1.0, abs=1e-12)

    _s, _info, eom, vals = stewart
    fast = eom.compile(backend="numpy", parameters=STEWART)
    x = np.concatenate([_pose(), [0.4, -0.3, 0.2, 0.1, 0.05, -0.2]])
    rhs, *_ = _numeric(eom, vals)
    tau = rng.normal(size=6) * 50
    np.testing.assert_allclose(fast.forward_dynamics(x[:7], x[7:], tau), rhs(x, tau)[7:],
                               rtol=1e-9, atol=1e-9)


def test_generalized_forces_make_a_general_system_simulate_like_a_model():
    """With generalized_forces=True a general system takes τ of length nv, as a
    Model does: τ enters F̃_r directly (rolling disk, p = 3), and kd.simulate
    runs the compiled pin-reaction pendulum (a holonomic system: kd.simulate's
    integrators step q in a chart of dimension nv, which a nonholonomic system
    does not have) with its energy kept by the AVF discrete gradient."""
    import kanedyn as kd

    system, _info = classic.rolling_disk()
    from dataclasses import replace
    eom = replace(system, generalized_forces=True).derive().expanded()
    assert [str(s) for s in eom.inputs] == ["tau0", "tau1", "tau2"]
    assert sp.diff(eom.forcing, sp.Symbol("tau1")) == sp.Matrix([0, 1, 0])

    system, info = classic.pendulum_pin_reaction()
    eom = replace(system, generalized_forces=True).derive().expanded()
    fast = eom.compile(backend="numpy", parameters={"m": 1.2, "l": 0.7, "g": 9.81})
    assert (fast.nq, fast.nv, fast.ninputs) == (1, 1, 1)
    traj = kd.simulate(fast, np.array([2.0]), np.array([0.0]), 2.0, method="avf", dt=0.01)
    E = np.array([fast.energy(q, v) for q, v in zip(traj.q, traj.v, strict=True)])
    assert np.ptp(E) < 1e-8 * abs(E[0])
    assert np.min(traj.q[:, 0]) < -1.9                # it swung through to the other side


# ----------------------------------------------------------------------------- against the core


def test_ball_joint_chain_as_a_general_system_equals_crba_and_rnea():
    """A two-link chain on ball joints written by hand as a general system
    (quaternion per joint, relative body angular velocity as speeds) against
    the numeric core on ``kd.models.pendulum_chain(2, planar=False,
    joint="spherical", length=(0.8, 0.6), mass=(1.5, 0.9))``: M equals CRBA
    and forcing equals −RNEA(q, v, 0) at random states (1e-10)."""
    import kanedyn as kd
    from kanedyn.model.builders import rod_inertia

    L, mass = (0.8, 0.6), (1.5, 0.9)
    model = kd.models.pendulum_chain(2, planar=False, joint="spherical", length=L, mass=mass)
    e = [dynamicsymbols("a0:4"), dynamicsymbols("b0:4")]
    w = [dynamicsymbols("wa1:4"), dynamicsymbols("wb1:4")]
    N = ReferenceFrame("N")
    parent, frames = N, []
    for i in range(2):
        F = parent.orientnew(f"L{i}", "Quaternion", e[i])
        F.set_ang_vel(parent, w[i][0] * F.x + w[i][1] * F.y + w[i][2] * F.z)
        frames.append(F)
        parent = F
    O = Point("O")
    O.set_vel(N, 0)
    G1 = O.locatenew("G1", -L[0] / 2 * frames[0].z)
    J2 = O.locatenew("J2", -L[0] * frames[0].z)
    G2 = J2.locatenew("G2", -L[1] / 2 * frames[1].z)
    G1.v2pt_theory(O, N, frames[0])
    J2.v2pt_theory(O, N, frames[0])
    G2.v2pt_theory(J2, N, frames[1])
    radius = 0.05                                   # the builder's default for ball joints
    bodies = []
    for i, G in enumerate((G1, G2)):
        Ic = rod_inertia(mass[i], L[i], radius * L[i])
        bodies.append(kane.RigidBody(f"link{i + 1}", G, frames[i], mass[i],
                                     kane.inertia(frames[i], *np.diag(Ic))))
    loads = [(G1, -9.81 * mass[0] * N.z), (G2, -9.81 * mass[1] * N.z)]
    kde = classic.quaternion_kinematics(e[0], w[0]) + classic.quaternion_kinematics(e[1], w[1])
    system = kane.KaneSystem(N, [*e[0], *e[1]], [*w[0], *w[1]], kde, bodies, loads,
                             quaternions=[((0, 1, 2, 3), (0, 1, 2)), ((4, 5, 6, 7), (3, 4, 5))])
    eom = system.derive().expanded()
    _rhs, M, f, qd = _numeric(eom, {})
    rng = np.random.default_rng(12)
    for _ in range(3):
        q = np.concatenate([_random_unit_quaternion(rng), _random_unit_quaternion(rng)])
        v = rng.normal(size=6)
        np.testing.assert_allclose(np.asarray(M(*q, *v), float), kd.crba(model, q),
                                   rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(f(*q, *v), float).ravel(),
                                   -kd.rnea(model, q, v, np.zeros(6)), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(np.asarray(qd(*q, *v), float).ravel(), kd.q_dot(model, q, v),
                                   rtol=1e-12, atol=1e-14)


def test_chart_jacobian_of_a_compiled_system_is_the_chart_derivative(spacecraft, stewart):
    """CompiledSystem.chart_jacobian (closed form: W(q)⁺ ∂(q0 ⊕ ξ)/∂ξ with the quaternion
    rows by SO(3)'s right Jacobian) against central differences of the chart itself:
    W(q) J ξ̇ must be the rate of q0 ⊕ ξ along ξ̇. The Stewart platform's position rows are
    coupled to its quaternion (ṙ from the body twist), the reaction wheel's angle is not;
    at ξ = 0 the chart Jacobian is the identity."""
    rng = np.random.default_rng(11)
    _s, _info, eom = spacecraft
    wheel = eom.compile(backend="numpy", parameters={"I11": 3.0, "I22": 4.0, "I33": 5.0,
                                                     "I12": 0.3, "J": 0.2, "K": 0.12})
    _s, _info, eom, _vals = stewart
    platform = eom.compile(backend="numpy", parameters=STEWART)
    cases = [(wheel, np.concatenate([_random_unit_quaternion(rng), [0.4]])),
             (platform, _pose())]
    for fast, q0 in cases:
        n = fast.nv
        np.testing.assert_allclose(fast.chart_jacobian(q0, np.zeros(n)), np.eye(n),
                                   atol=1e-14)
        xi = 0.4 * rng.normal(size=n)
        J = fast.chart_jacobian(q0, xi)
        q = fast.integrate_configuration(q0, xi, 1.0)
        W = np.column_stack([fast.q_dot(q, e) for e in np.eye(n)])
        eps = 1e-6
        D = np.column_stack([(fast.integrate_configuration(q0, xi + eps * e, 1.0)
                              - fast.integrate_configuration(q0, xi - eps * e, 1.0)) / (2 * eps)
                             for e in np.eye(n)])
        np.testing.assert_allclose(W @ J, D, atol=1e-9)
