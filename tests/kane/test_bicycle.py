"""The Whipple bicycle benchmark (Meijaard, Papadopoulos, Ruina & Schwab 2007, *Proc. R.
Soc. A* 463:1955): the linearised lean/steer equations

    M q̈ + v C₁ q̇ + (g K₀ + v² K₂) q = f,   q = (roll φ, steer δ),

of ``kane.classic.whipple_bicycle(parameters="benchmark")`` — derived by the general
Kane derivation with ignorable wheel angles, three nonholonomic constraints and the
configuration constraint of the front contact, and linearised by the chain rule
through the intermediates — against the matrices published in the paper (eq. 5.4, to
14 digits) and its weave and capsize speeds; and the nonlinear equations against
SymPy's ``KanesMethod`` on the same kinematics at random states."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from scipy.optimize import brentq
from sympy.physics import mechanics as me

from kanedyn import SymbolicError, kane
from kanedyn.kane import classic
from kanedyn.kane.intermediates import evaluate

# Meijaard et al. 2007, eq. (5.4) (the published values of the benchmark)
PUBLISHED = {
    "M": [[80.81722, 2.31941332208709], [2.31941332208709, 0.29784188199686]],
    "C1": [[0.0, 33.86641391492494], [-0.85035641456978, 1.68540397397560]],
    "K0": [[-80.95, -2.59951685249872], [-2.59951685249872, -0.80329488458618]],
    "K2": [[0.0, 76.59734589573222], [0.0, 2.65431523794604]],
}
# Meijaard et al. 2007, Table 2: the self-stable speed range
WEAVE_SPEED = 4.29238253634111
CAPSIZE_SPEED = 6.02426201538837
G = 9.81


@pytest.fixture(scope="module")
def bicycle():
    system, info = classic.whipple_bicycle(parameters="benchmark")
    return system, info, system.derive()


def _lean_steer(eom, v: float):
    """(M, −∂f/∂q, −∂f/∂u) of the lean and steer rows and columns at upright rolling
    at speed v (rear wheel rate u5 = −v/rR)."""
    op = {**eom.parameters, **{sp.Symbol(n): 0 for n in ("q1", "q2", "q3", "q4", "u2", "u4")},
          sp.Symbol("u5"): -v / classic.BENCHMARK_BICYCLE["rR"]}
    Mx, Ax, _Bx = kane.linearize(eom, op, A_and_B=False)
    # state [q1, q2, q4, u2, u4, u5]: lean q2, steer q4; their rates u2, u4
    Mx, Ax = np.array(Mx, float), np.array(Ax, float)
    rows, qcols, ucols = [3, 4], [1, 2], [3, 4]
    return Mx[np.ix_(rows, rows)], -Ax[np.ix_(rows, qcols)], -Ax[np.ix_(rows, ucols)]


@pytest.fixture(scope="module")
def benchmark_matrices(bicycle):
    _s, _i, eom = bicycle
    M, K_at0, _ = _lean_steer(eom, 0.0)
    _, K_at1, C_at1 = _lean_steer(eom, 1.0)
    return {"M": M, "K0": K_at0 / G, "K2": K_at1 - K_at0, "C1": C_at1}


@pytest.mark.parametrize("name", ["M", "C1", "K0", "K2"])
def test_linearised_lean_steer_equals_the_published_benchmark(benchmark_matrices, name):
    # the paper gives 14 decimals; what differs is round-off of the double evaluation
    np.testing.assert_allclose(benchmark_matrices[name], PUBLISHED[name], rtol=0, atol=1e-12)


def _eigenvalues(mats, v):
    M, C1, K0, K2 = (np.asarray(mats[k]) for k in ("M", "C1", "K0", "K2"))
    Mi = np.linalg.inv(M)
    A = np.block([[np.zeros((2, 2)), np.eye(2)], [-Mi @ (G * K0 + v**2 * K2), -Mi @ (v * C1)]])
    return np.linalg.eigvals(A)


def test_weave_and_capsize_speeds(benchmark_matrices):
    """The weave mode turns stable at v_w and the capsize mode unstable at v_c."""
    def weave(v):
        ev = _eigenvalues(benchmark_matrices, v)
        return max(e.real for e in ev if abs(e.imag) > 1e-9)

    def capsize(v):
        ev = _eigenvalues(benchmark_matrices, v)
        return max(e.real for e in ev if abs(e.imag) <= 1e-9)

    vw = brentq(weave, 4.0, 4.6, xtol=1e-13)
    vc = brentq(capsize, 5.5, 6.5, xtol=1e-13)
    assert abs(vw - WEAVE_SPEED) < 1e-6
    assert abs(vc - CAPSIZE_SPEED) < 1e-6
    # self-stable between them: every eigenvalue in the left half plane at 5 m/s, not at 2
    assert max(_eigenvalues(benchmark_matrices, 5.0).real) < 0
    assert max(_eigenvalues(benchmark_matrices, 2.0).real) > 0


def test_structure_of_the_equations(bicycle):
    system, _info, eom = bicycle
    assert len(system.q) == 4 and len(system.u) == 6          # wheel angles ignorable
    assert [str(x) for x in eom.u] == ["u2", "u4", "u5"]
    assert [str(x) for x in eom.q_dependent] == ["q3"]
    assert set(map(str, eom.dependent_speeds)) == {"u1", "u3", "u6"}
    assert eom.mass_matrix.shape == (3, 3)


def test_nonlinear_equations_equal_sympy_kanes_method(bicycle):
    """SymPy's KanesMethod on the same kinematics (its own partial velocities, constraint
    elimination and F_r + F_r*): equal independent accelerations at random states, off
    the upright and off the configuration manifold too (the equations hold for any q)."""
    system, info, eom = bicycle
    q, u = info["q"], info["u"]
    bodies = [me.RigidBody(b.name, b.masscenter, b.frame, b.mass, (b.inertia, b.masscenter))
              for b in system.bodies]
    km = me.KanesMethod(system.frame, q_ind=[q[0], q[1], q[3]], q_dependent=[q[2]],
                        configuration_constraints=list(system.configuration_constraints),
                        u_ind=[u[1], u[3], u[4]], u_dependent=[u[0], u[2], u[5]],
                        velocity_constraints=list(system.velocity_constraints),
                        kd_eqs=list(system.kinematic_equations), constraint_solver="CRAMER")
    km.kanes_equations(bodies, list(system.loads))
    values = {s: v for s, v in eom.parameters.items()}
    plain = {x: sp.Symbol(x.func.__name__) for x in (*q, *u)}
    par = {info["parameters"][k]: v for k, v in classic.BENCHMARK_BICYCLE.items()}
    args = [plain[x] for x in (*q, *u)]
    Ms = sp.lambdify(args, km.mass_matrix.xreplace(par).xreplace(plain), cse=True)
    fs = sp.lambdify(args, km.forcing.xreplace(par).xreplace(plain), cse=True)
    qdot = {x.diff(): ui for x, ui in zip(q, u[:4], strict=True)}
    cons = sp.Matrix(system.velocity_constraints).xreplace(qdot).xreplace(par).xreplace(plain)
    dep = [plain[u[0]], plain[u[2]], plain[u[5]]]
    Cd = sp.lambdify(args, cons.jacobian(dep))
    Cr = sp.lambdify(args, cons.xreplace({d: 0 for d in dep}))
    rng = np.random.default_rng(18)
    outs = [*eom.mass_matrix, *eom.forcing, *eom.dependent_speeds.values()]
    for _ in range(3):
        qv, uv = rng.uniform(-0.6, 0.6, 4), rng.uniform(-3, 3, 3)
        x = dict(zip([plain[qi] for qi in q], qv, strict=True))
        x.update(zip([plain[u[1]], plain[u[3]], plain[u[4]]], uv, strict=True))
        full = [x.get(a, 0.0) for a in args]
        ud = np.linalg.solve(np.array(Cd(*full), float), -np.array(Cr(*full), float).ravel())
        x.update(zip(dep, ud, strict=True))
        full = [x[a] for a in args]
        out = evaluate(eom.intermediates, outs, {**values, **x})
        M, f, ours_dep = out[:9].reshape(3, 3), out[9:12], out[12:]
        np.testing.assert_allclose(ours_dep, [x[d] for d in eom.dependent_speeds],
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(M, M.T, rtol=1e-13, atol=1e-13)
        sym = np.linalg.solve(np.array(Ms(*full), float), np.array(fs(*full), float).ravel())
        # SymPy's speeds: [u2, u4, u5, u1, u3, u6] (independent first)
        np.testing.assert_allclose(np.linalg.solve(M, f), sym[:3], rtol=1e-9, atol=1e-9)


def test_operating_point_off_the_configuration_constraint_is_rejected(bicycle):
    _s, _i, eom = bicycle
    op = {**eom.parameters, **{sp.Symbol(n): 0 for n in ("q1", "q2", "q4", "u2", "u4")},
          sp.Symbol("q3"): 0.01, sp.Symbol("u5"): -10.0}
    with pytest.raises(SymbolicError, match=r"violates the configuration constraints by"):
        kane.linearize(eom, op)
