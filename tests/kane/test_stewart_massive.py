"""The 6-6 Stewart platform with massive UPS legs (``kane.classic.stewart_platform(
legs="massive")``): each leg a cylinder and a piston whose velocities are expressed
through the platform twist, so Kane's method gives an ODE in the 6 twist speeds with no
leg coordinate and no constraint equation. Checked against a hand statics computation
(Newton–Euler on each leg and the platform, in numpy) and by energy conservation on the
leg springs."""

from __future__ import annotations

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
