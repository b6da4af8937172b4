"""The 6-6 Stewart platform with massive UPS legs (``kane.classic.stewart_platform(
legs="massive")``): each leg a cylinder and a piston whose velocities are expressed
through the platform twist, so Kane's method gives an ODE in the 6 twist speeds with no
leg coordinate and no constraint equation. Checked against a hand statics computation
(Newton–Euler on each leg and the platform, in numpy) and by energy conservation on the
leg springs."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

from kanedyn.kane import classic
from kanedyn.kane.intermediates import program

VALUES = dict(M=12.0, Ixx=0.9, Iyy=1.1, Izz=1.6, g=9.81, k=800.0, l0=1.05,
              m_c=1.5, d_c=0.3, J_c=0.002, K_c=0.05, m_p=0.8, d_p=0.25, J_p=0.001, K_p=0.02)


@pytest.fixture(scope="module")
def stewart():
    system, info = classic.stewart_platform(legs="massive")
    eom = system.derive()
    vals = {s: VALUES[s.name] for s in eom.parameters}
    outs = [*eom.mass_matrix, *eom.forcing, *eom.qdot, eom.energy]
    run = program(eom.intermediates, outs)

    def evaluate(q, u, f):
        x = {**vals, **dict(zip(eom.q, q, strict=True)), **dict(zip(eom.u, u, strict=True)),
             **dict(zip(eom.inputs, f, strict=True))}
        y = run(x)
        return y[:36].reshape(6, 6), y[36:42], y[42:49], y[49]

    return system, info, eom, evaluate


def _pose():
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


def test_massive_legs_give_an_ode_in_the_twist(stewart):
    system, _info, eom, evaluate = stewart
    assert len(eom.q) == 7 and len(eom.u) == 6
    assert eom.dependent_speeds == {} and not system.velocity_constraints
    assert len(system.bodies) == 13                       # platform, 6 cylinders, 6 pistons
    M, *_ = evaluate(_pose(), np.zeros(6), np.zeros(6))
    np.testing.assert_allclose(M, M.T, atol=1e-12)
    # the legs add inertia: M exceeds the platform's own diag(I, M 1)
    assert np.all(np.linalg.eigvalsh(M - np.diag([0.9, 1.1, 1.6, 12.0, 12.0, 12.0])) > 1e-3)


def test_massive_legs_statics_equal_a_hand_computation(stewart):
    """The actuator forces that hold a tilted pose (forcing = 0 at u = 0, linear in f)
    equal Newton–Euler by hand: each leg's moment balance about its base joint fixes the
    transverse force at the platform joint, k_i g_⊥ with
    k_i = (d_c m_c + (ℓ_i − d_p) m_p)/ℓ_i, the piston's axial balance the axial one,
    t_i + m_p g·n_i; then the platform's wrench balance gives the tensions t_i and
    f_i = t_i + k (ℓ_i − ℓ0)."""
    _system, info, _eom, evaluate = stewart
    x = _pose()
    _M, f0, _qd, _E = evaluate(x, np.zeros(6), np.zeros(6))
    J = np.column_stack([evaluate(x, np.zeros(6), np.eye(6)[i])[1] - f0 for i in range(6)])
    f_kane = np.linalg.solve(J, -f0)

    v = VALUES
    gvec = np.array([0.0, 0.0, -v["g"]])
    Rm, G = _rotation(x[:4]), x[4:]
    cols, rest, ells = [], np.zeros(6), []
    for i in range(6):
        r = Rm @ info["platform"][i]
        d = G + r - info["base"][i]
        ell = np.linalg.norm(d)
        n = d / ell
        ells.append(ell)
        k_i = (v["d_c"] * v["m_c"] + (ell - v["d_p"]) * v["m_p"]) / ell
        c = v["m_p"] * (gvec @ n) * n + k_i * (gvec - (gvec @ n) * n)   # F_i = t_i n + c
        cols.append(np.concatenate([np.cross(r, n), n]))
        rest += np.concatenate([np.cross(r, c), c])
    rest += np.concatenate([np.zeros(3), v["M"] * gvec])
    t = np.linalg.solve(np.column_stack(cols), -rest)
    f_hand = t + v["k"] * (np.array(ells) - v["l0"])
    np.testing.assert_allclose(f_kane, f_hand, rtol=1e-9)
    assert np.all(np.abs(t) > 1.0)


def test_massive_legs_conserve_energy_on_the_springs(stewart):
    """Unactuated (f = 0), the platform and its legs bounce on the leg springs under
    gravity: kinetic energy of all 13 bodies + gravity + springs stays constant."""
    _system, _info, _eom, evaluate = stewart
    zero = np.zeros(6)

    def rhs(_t, y):
        M, f, qd, _E = evaluate(y[:7], y[7:], zero)
        return np.concatenate([qd, np.linalg.solve(M, f)])

    y0 = np.concatenate([_pose(), [0.4, -0.3, 0.2, 0.1, 0.05, -0.2]])
    sol = solve_ivp(rhs, (0, 0.25), y0, method="DOP853", rtol=1e-11, atol=1e-12)
    assert sol.success
    E = np.array([evaluate(y[:7], y[7:], zero)[3] for y in sol.y.T])
    assert np.ptp(E) < 1e-8 * abs(E[0])
    assert np.ptp(sol.y[6]) > 1e-2


def test_legs_argument_is_checked():
    from kanedyn import SymbolicError

    with pytest.raises(SymbolicError, match="legs must be"):
        classic.stewart_platform(legs="heavy")
    assert sp.Symbol("m_c", positive=True) not in classic.stewart_platform()[0].parameters


def _newton_euler_accelerations(info, x, u, f):
    """u̇ of the massive-leg platform by the principle of virtual power, in numpy from the
    geometry (not from the Kane derivation): each body's velocity (v, ω in N) as written
    in the model — ṗ_i = v_G + R ω × r_i, ℓ̇ = n·ṗ, ṅ = (ṗ − ℓ̇ n)/ℓ, ω_i = n × ṗ/ℓ,
    v_c = d_c ṅ, v_p = ṗ − d_p ṅ — its Jacobian J = ∂(v, ω)/∂u (exact: v is linear in
    u), its acceleration at u̇ = 0 as the derivative along q̇ = W(q) u (a fourth-order
    central difference), then Σ Jᵀ(F − m a) + J_ωᵀ(T − I α − ω × I ω) = 0 solved for u̇.
    SymPy's KanesMethod does not finish this system in a test's budget (over 5 minutes
    for the platform and one leg with numeric parameters), hence the hand computation."""
    v = VALUES
    gz = np.array([0.0, 0.0, -v["g"]])

    def bodies(x, u):
        """[(mass, inertia in N, v, ω, force, torque)] at the state (x, u)"""
        e, G = x[:4], x[4:]
        Rm = _rotation(e)
        wN, vG = Rm @ u[:3], u[3:]
        out = [(v["M"], Rm @ np.diag([v["Ixx"], v["Iyy"], v["Izz"]]) @ Rm.T, vG, wN,
                v["M"] * gz, np.zeros(3))]
        for i in range(6):
            r = Rm @ info["platform"][i]
            d = G + r - info["base"][i]
            ell = np.linalg.norm(d)
            n = d / ell
            pdot = vG + np.cross(wN, r)
            ndot = (pdot - (n @ pdot) * n) / ell
            w_leg = np.cross(n, pdot) / ell
            axial = (f[i] - v["k"] * (ell - v["l0"])) * n
            for m, J, K, vel, push in ((v["m_c"], v["J_c"], v["K_c"], v["d_c"] * ndot, -axial),
                                       (v["m_p"], v["J_p"], v["K_p"], pdot - v["d_p"] * ndot,
                                        axial)):
                inertia = K * (np.eye(3) - np.outer(n, n)) + J * np.outer(n, n)
                out.append((m, inertia, vel, w_leg, m * gz + push, np.zeros(3)))
        return out

    def xdot(x, u):
        e, w = x[:4], u[:3]
        de = 0.5 * np.array([-(e[1:] @ w), *(e[0] * w + np.cross(e[1:], w))])
        return np.concatenate([de, u[3:]])

    now = bodies(x, u)
    J = [[np.zeros((3, 6)), np.zeros((3, 6))] for _ in now]
    for k in range(6):
        col = bodies(x, np.eye(6)[k])
        for b, (*_mi, vel, w, _F, _T) in enumerate(col):
            J[b][0][:, k], J[b][1][:, k] = vel, w
    h, qd = 1e-3, xdot(x, u)
    along = [bodies(x + s * h * qd, u) for s in (2, 1, -1, -2)]
    M, rhs = np.zeros((6, 6)), np.zeros(6)
    for b, (m, inertia, _v, w, F, T) in enumerate(now):
        a0, al0 = ((-along[0][b][j] + 8 * along[1][b][j] - 8 * along[2][b][j]
                    + along[3][b][j]) / (12 * h) for j in (2, 3))
        Jv, Jw = J[b]
        M += m * Jv.T @ Jv + Jw.T @ inertia @ Jw
        rhs += Jv.T @ (F - m * a0) + Jw.T @ (T - inertia @ al0 - np.cross(w, inertia @ w))
    return np.linalg.solve(M, rhs)


def _moving_states(seed: int, n: int = 3):
    """``n`` states (pose near the reference, twist, leg forces) at random."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = _pose()
        x[4:] += rng.uniform(-0.05, 0.05, 3)
        yield x, rng.uniform(-1, 1, 6), rng.uniform(-200, 200, 6)


def test_massive_legs_accelerations_equal_newton_euler(stewart):
    """The accelerations of the derived equations at moving, actuated states equal the
    independent virtual-power computation above (they agree to ~1e-13 relative; the
    finite-difference bias allows 1e-9, where a 1e-5 change of d_c gives 1e-6)."""
    _system, info, _eom, evaluate = stewart
    for x, u, f in _moving_states(18):
        M, F, _qd, _E = evaluate(x, u, f)
        ours = np.linalg.solve(M, F)
        ref = _newton_euler_accelerations(info, x, u, f)
        np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())


@pytest.mark.parametrize("backend", ["numpy", "numba", pytest.param("c", marks=pytest.mark.skipif(
    shutil.which("cc") is None, reason="no C compiler"))])
def test_compiled_code_equals_the_program_and_newton_euler(stewart, backend, tmp_path,
                                                          monkeypatch):
    """The generated code (every definition written once, in segments shared by
    mass_matrix, forcing, dynamics and energy, hundreds of values crossing segments through
    the workspace; numba: the definitions emitted as LLVM IR, codegen/numba_ir.py) gives
    the numbers of the symbolic program evaluated directly, and accelerations equal to
    the Newton–Euler computation."""
    monkeypatch.setenv("KANEDYN_CACHE", str(tmp_path))
    _system, info, eom, evaluate = stewart
    fast = eom.compile(backend, parameters=VALUES)
    for x, u, f in _moving_states(19):
        M, F, qd, E = evaluate(x, u, f)
        np.testing.assert_allclose(fast.mass_matrix(x), M, rtol=1e-12, atol=1e-12 * abs(M).max())
        np.testing.assert_allclose(fast.forcing(x, u, f), F, rtol=1e-12,
                                   atol=1e-12 * abs(F).max())
        Md, Fd = fast.dynamics(x, u, f)
        assert np.array_equal(Md, fast.mass_matrix(x)) and np.array_equal(Fd, fast.forcing(x, u, f))
        np.testing.assert_allclose(fast.q_dot(x, u), qd, rtol=1e-14, atol=1e-15)
        assert fast.energy(x, u) == pytest.approx(E, rel=1e-12)
        ref = _newton_euler_accelerations(info, x, u, f)
        np.testing.assert_allclose(fast.forward_dynamics(x, u, f), ref, rtol=1e-9,
                                   atol=1e-9 * np.abs(ref).max())
