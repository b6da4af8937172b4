"""Generated code (numpy, numba, C) against the symbolic equations and the numeric core."""

from __future__ import annotations

import dataclasses
import functools
import shutil
import subprocess

import numpy as np
import pytest
import sympy as sp

import kanedyn as kd
from kanedyn import CompilerError, SolverError, StateError, SymbolicError, kane
from kanedyn.kane import codegen

RTOL = 1e-10
HAVE_CC = shutil.which("cc") is not None
BACKENDS = ["numpy", "numba", pytest.param("c", marks=pytest.mark.skipif(
    not HAVE_CC, reason="no C compiler"))]


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("KANEDYN_CACHE", str(tmp_path_factory.getbasetemp() / "kanedyn_cache"))


def rel(a, b) -> float:
    return float(np.abs(np.asarray(a) - b).max() / max(np.abs(b).max(), 1e-300))


@functools.cache
def tree():
    """A floating base carrying a body on a ball joint, random placements and inertias:
    two quaternions, dense numbers. (Small, because numba's compile time grows with the
    size of the generated code; tests/kane/test_tree.py covers every joint type.)"""
    m = kd.models.random_tree(2, seed=7, floating_base=True)
    assert [b.joint.kind for b in m.bodies] == ["free", "spherical"]
    return m, kane.derive(m)


@functools.cache
def compiled(backend):
    return tree()[1].compile(backend)


def symbolic_values(eom, q, v, tau):
    """M and forcing by substituting into the intermediates (no generated code)."""
    env = {s: sp.Float(float(x)) for s, x in zip(eom.q, q, strict=True)}
    env.update({s: sp.Float(float(x)) for s, x in zip(eom.u, v, strict=True)})
    env.update({s: sp.Float(float(x)) for s, x in zip(eom.inputs, tau, strict=True)})
    for s, e in eom.intermediates:
        env[s] = sp.Float(float(e.xreplace(env)))
    return (np.array(eom.mass_matrix.xreplace(env), dtype=float),
            np.array(eom.forcing.xreplace(env), dtype=float).ravel())


@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_equals_numeric_core(backend):
    model, eom = tree()
    sysc = compiled(backend)
    assert (sysc.nq, sysc.nv) == (model.nq, model.nv)
    rng = np.random.default_rng(1)
    q, v, tau = kd.random_configuration(model, rng), rng.normal(size=model.nv), \
        rng.normal(size=model.nv)
    assert rel(sysc.mass_matrix(q), kd.crba(model, q)) < RTOL
    assert rel(sysc.forcing(q, v, tau), tau - kd.nonlinear_effects(model, q, v)) < RTOL
    assert rel(sysc.nonlinear_effects(q, v), kd.nonlinear_effects(model, q, v)) < RTOL
    assert rel(sysc.gravity_torques(q), kd.gravity_torques(model, q)) < RTOL
    # the Cholesky solve against the articulated-body algorithm: the difference is bounded
    # by the conditioning of M, so compare the residual of M a = forcing instead
    a = sysc.forward_dynamics(q, v, tau)
    M = kd.crba(model, q)
    assert rel(M @ a, tau - kd.nonlinear_effects(model, q, v)) < RTOL
    assert rel(a, kd.aba(model, q, v, tau)) < 1e-8
    assert rel(sysc.q_dot(q, v), kd.q_dot(model, q, v)) < RTOL
    T, V = kd.kinetic_energy(model, q, v), kd.potential_energy(model, q)
    assert sysc.kinetic_energy(q, v) == pytest.approx(T, rel=RTOL)
    assert sysc.potential_energy(q) == pytest.approx(V, rel=RTOL, abs=1e-12)
    assert sysc.energy(q, v) == pytest.approx(T + V, rel=RTOL, abs=1e-12)


def test_backends_agree_with_each_other_and_the_symbolic_result():
    model, eom = tree()
    rng = np.random.default_rng(2)
    q, v, tau = kd.random_configuration(model, rng), rng.normal(size=model.nv), \
        rng.normal(size=model.nv)
    M0, F0 = symbolic_values(eom, q, v, tau)
    names = ["numpy", "numba"] + (["c"] if HAVE_CC else [])
    for b in names:
        M, F = compiled(b).dynamics(q, v, tau)
        assert rel(M, M0) < 1e-12 and rel(F, F0) < 1e-12, b
        assert np.array_equal(M, M.T)
    ref = compiled("numba")
    for b in names:
        s = compiled(b)
        assert np.allclose(s.forward_dynamics(q, v, tau), ref.forward_dynamics(q, v, tau),
                           rtol=1e-12, atol=1e-12)
        assert np.allclose(s.q_dot(q, v), ref.q_dot(q, v), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_batches_equal_single_states(backend):
    model, _ = tree()
    sysc = compiled(backend)
    rng = np.random.default_rng(3)
    Q = np.array([kd.random_configuration(model, rng) for _ in range(3)])
    V, T = rng.normal(size=(3, model.nv)), rng.normal(size=(3, model.nv))
    Mb, Fb = sysc.mass_matrix(Q), sysc.forcing(Q, V, T)
    Ab, Eb = sysc.forward_dynamics(Q, V, T), sysc.energy(Q, V)
    for k in range(3):
        assert np.allclose(Mb[k], sysc.mass_matrix(Q[k]), rtol=1e-14, atol=1e-14)
        assert np.allclose(Fb[k], sysc.forcing(Q[k], V[k], T[k]), rtol=1e-14, atol=1e-14)
        assert np.allclose(Ab[k], sysc.forward_dynamics(Q[k], V[k], T[k]), rtol=1e-12)
        assert Eb[k] == pytest.approx(sysc.energy(Q[k], V[k]), rel=1e-14)
    # one configuration with a batch of speeds
    Fm = sysc.forcing(Q[0], V, T)
    assert np.allclose(Fm[2], sysc.forcing(Q[0], V[2], T[2]), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_state_checks(backend):
    model, _ = tree()
    sysc = compiled(backend)
    q = kd.neutral(model)
    v = np.zeros(model.nv)
    with pytest.raises(StateError, match="shape"):
        sysc.mass_matrix(q[:-1])
    bad = q.copy()
    bad[0] = np.nan
    with pytest.raises(StateError, match="NaN"):
        sysc.forcing(bad, v)
    w = v.copy()
    w[2] = np.inf
    with pytest.raises(StateError, match="NaN"):
        sysc.forward_dynamics(q, w)
    far = q.copy()
    qi = sysc.quaternions[0][0]
    far[qi] *= 1.1
    with pytest.raises(StateError, match="quaternion of norm 1.1"):
        sysc.mass_matrix(far)
    # within the tolerance a quaternion is normalised, as the Model's joints do
    near = q.copy()
    near[qi] *= 1 + 5e-5
    assert rel(sysc.mass_matrix(near), kd.crba(model, near)) < RTOL


def test_integrate_configuration():
    model, eom = tree()
    sysc = compiled("numba")
    rng = np.random.default_rng(4)
    q, v, dt = kd.random_configuration(model, rng), rng.normal(size=model.nv), 0.01
    q1 = sysc.integrate_configuration(q, v, dt)
    exact = kd.integrate_configuration(model, q, v, dt)
    for qi, _ in sysc.quaternions:  # quaternions: the same exact flow as the Model's joints
        assert np.allclose(q1[qi], exact[qi], rtol=0, atol=1e-14)
        assert np.linalg.norm(q1[qi]) == pytest.approx(1.0, abs=1e-14)
    rest = [k for k in range(model.nq) if all(k not in g for g, _ in sysc.quaternions)]
    assert np.allclose(q1[rest], (q + dt * kd.q_dot(model, q, v))[rest], rtol=0, atol=1e-14)
    assert np.abs(q1[rest] - exact[rest]).max() < 10 * dt**2 * (1 + np.abs(v).max()) ** 2


def test_missing_and_unknown_parameters_are_named():
    model = kd.models.pendulum_chain(2, point_mass=True)
    eom = kane.derive(model, parameters="symbolic")
    m2 = next(s for s in eom.parameters if s.name == "m_link2")
    partial = dataclasses.replace(eom, parameters={**eom.parameters, m2: None})
    with pytest.raises(SymbolicError, match="m_link2 .*no value"):
        partial.compile("numpy")
    with pytest.raises(SymbolicError, match="'m_link9' is not a parameter"):
        eom.compile("numpy", parameters={"m_link9": 1.0})
    with pytest.raises(SymbolicError, match="m_link2 = nan is not finite"):
        eom.compile("numpy", parameters={"m_link2": float("nan")})
    # a value given at compile time, by name: the model with that mass
    heavy = partial.compile("numpy", parameters={"m_link2": 3.0})
    other = kd.models.pendulum_chain(2, point_mass=True, mass=[1.0, 3.0])
    q = np.array([0.3, -1.1])
    assert rel(heavy.mass_matrix(q), kd.crba(other, q)) < RTOL
    # a symbol that is neither a coordinate, speed, input nor parameter
    k = sp.Symbol("k_spring")
    stray = dataclasses.replace(eom, forcing=eom.forcing - sp.Matrix([k * eom.q[0], 0]))
    with pytest.raises(SymbolicError, match="k_spring"):
        stray.compile("numpy")


def test_no_c_compiler_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(codegen.build.shutil, "which", lambda *a, **k: None)
    eom = kane.derive(kd.models.pendulum_chain(1))
    with pytest.raises(CompilerError, match="C compiler"):
        eom.compile("c")
    with pytest.raises(SymbolicError, match="backend must be"):
        eom.compile("fortran")


def test_operation_counts_and_the_cse_reduce_the_work():
    eom = kane.derive(kd.models.pendulum_chain(4, planar=False))
    n_cse = eom.operation_count()
    ex = eom.expanded()
    n_expanded = sum(sp.count_ops(e) for e in list(ex.mass_matrix) + list(ex.forcing))
    assert 0 < n_cse < n_expanded / 5
    sysc = eom.compile("numpy")
    assert sysc.counts["dynamics"] == n_cse
    assert f"dynamics: {n_cse}" in sysc.source


def test_no_swell_against_the_published_sympy_count():
    """Issue 3: SymPy 1.14's KanesMethod on the planar point-mass 8-link pendulum gives
    1,299 operations in (mass_matrix, forcing) after cse; ours must not exceed it, with the
    parameters folded or kept as symbols."""
    from kanedyn.kane.codegen import lower

    eom = kane.derive(kd.models.pendulum_chain(8, point_mass=True), parameters="symbolic")
    assert eom.operation_count() <= 1299
    assert lower(eom, fold=False).operation_count() <= 1299


@pytest.mark.skipif(not HAVE_CC, reason="no C compiler")
def test_to_c_is_standalone(tmp_path):
    """The written C compiles with nothing but libm and gives the numeric core's numbers."""
    model = kd.models.pendulum_chain(2, planar=False, joint="spherical")
    eom = kane.derive(model)
    src = eom.to_c(tmp_path / "eom.c")
    text = src.read_text()
    assert "#include <Python.h>" not in text and "kanedyn" in text.split("*/")[0]
    assert f"dynamics: {eom.operation_count()}" in text
    q = kd.random_configuration(model, np.random.default_rng(5))
    v = np.linspace(-1, 1, model.nv)
    arr = lambda x: "{" + ", ".join(repr(float(t)) for t in x) + "}"
    main = tmp_path / "main.c"
    main.write_text(
        "#include <stdio.h>\n"
        "int mass_matrix(const double *q, double t, double *M);\n"
        "int forward_dynamics(const double *q, const double *u, const double *tau, double t,"
        " double *udot, double *work);\n"
        f"int main(void) {{ double q[] = {arr(q)}, u[] = {arr(v)}, tau[{model.nv}] = {{0}};\n"
        f"  double M[{model.nv ** 2}], a[{model.nv}], w[{model.nv ** 2}];\n"
        "  if (mass_matrix(q, 0.0, M) || forward_dynamics(q, u, tau, 0.0, a, w)) return 1;\n"
        f"  for (int i = 0; i < {model.nv ** 2}; ++i) printf(\"%.17g\\n\", M[i]);\n"
        f"  for (int i = 0; i < {model.nv}; ++i) printf(\"%.17g\\n\", a[i]);\n"
        "  return 0; }\n")
    exe = tmp_path / "eom"
    subprocess.run(["cc", "-O1", "-std=c99", "-o", str(exe), str(src), str(main), "-lm"],
                   check=True, capture_output=True)
    out = np.array(subprocess.run([str(exe)], check=True, capture_output=True,
                                  text=True).stdout.split(), dtype=float)
    M, a = out[: model.nv ** 2].reshape(model.nv, model.nv), out[model.nv ** 2:]
    assert rel(M, kd.crba(model, q)) < RTOL
    assert rel(kd.crba(model, q) @ a, -kd.nonlinear_effects(model, q, v)) < RTOL


@pytest.mark.skipif(not HAVE_CC, reason="no C compiler")
def test_c_segments_write_each_definition_once(monkeypatch):
    """The C printer writes every definition once, in segments that mass_matrix, forcing,
    dynamics and energy share. Cut into segments of three statements, so that nearly
    every value crosses a segment through the workspace, the library still gives the
    symbolic result's numbers, and mass_matrix and forcing the bits of dynamics."""
    import re

    model, eom = tree()
    low = codegen.lower(eom)
    src = codegen.c_source(low, max_statements=3)
    for s in low.definitions:  # a load from the workspace (= w[...]) is no definition
        name = codegen.printers._name(s)
        assert len(re.findall(rf"const double {name} = (?!w\[)", src)) == 1, name
    monkeypatch.setattr(codegen.printers, "C_SEGMENT_STATEMENTS", 3)
    sysc = eom.compile("c")
    assert sysc.source == src
    rng = np.random.default_rng(12)
    for _ in range(3):
        q, v, tau = kd.random_configuration(model, rng), rng.normal(size=model.nv), \
            rng.normal(size=model.nv)
        M0, F0 = symbolic_values(eom, q, v, tau)
        M, F = sysc.dynamics(q, v, tau)
        assert rel(M, M0) < 1e-12 and rel(F, F0) < 1e-12
        assert np.array_equal(M, sysc.mass_matrix(q))
        assert np.array_equal(F, sysc.forcing(q, v, tau))
        assert sysc.kinetic_energy(q, v) == pytest.approx(kd.kinetic_energy(model, q, v),
                                                          rel=RTOL)
        assert sysc.potential_energy(q) == pytest.approx(kd.potential_energy(model, q),
                                                         rel=RTOL, abs=1e-12)
        assert rel(sysc.forward_dynamics(q, v, tau), kd.aba(model, q, v, tau)) < 1e-8


def test_to_latex():
    eom = kane.derive(kd.models.pendulum_chain(1, point_mass=True), parameters="symbolic")
    tex = eom.to_latex()
    assert tex.startswith(r"\begin{aligned}") and tex.endswith(r"\end{aligned}")
    assert sp.latex(eom.mass_matrix) in tex and r"\sin{\left(q_{0} \right)}" in tex


def test_not_positive_definite_mass_matrix_is_a_solver_error():
    eom = kane.derive(kd.models.pendulum_chain(1, point_mass=True), parameters="symbolic")
    m = next(s for s in eom.parameters if s.name == "m_link1")
    for backend in ["numpy", "numba"]:
        sysc = eom.compile(backend, parameters={m: -1.0})
        with pytest.raises(SolverError, match="not positive definite"):
            sysc.forward_dynamics([0.2], [0.0])


def test_generated_source_does_not_depend_on_the_hash_seed():
    """The cache is keyed by a hash of the source, so the same equations must give the same
    source in every process."""
    import os
    import sys

    prog = ("import hashlib, kanedyn as kd\n"
            "from kanedyn import kane\n"
            "from kanedyn.kane.codegen import lower, c_source\n"
            "e = kane.derive(kd.models.random_tree(2, seed=7, floating_base=True))\n"
            "print(hashlib.sha256(c_source(lower(e)).encode()).hexdigest())\n")
    out = {subprocess.run([sys.executable, "-c", prog], check=True, capture_output=True,
                          text=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
           for seed in ("1", "2")}
    assert len(out) == 1


def test_urdf_arm_compiles():
    """The UR5 from URDF, generated numpy code: M against CRBA, forward dynamics against
    ABA, gravity torques against the core."""
    from importlib import resources

    if not hasattr(kd, "load_urdf"):
        pytest.skip("kd.load_urdf is not there yet")
    path = resources.files("kanedyn") / "data" / "robots" / "ur5.urdf"
    if not path.is_file():
        pytest.skip("ur5.urdf is not there yet")
    model = kd.load_urdf(str(path))
    sysc = kane.derive(model).compile("numpy")
    rng = np.random.default_rng(9)
    Q = np.array([kd.random_configuration(model, rng) for _ in range(4)])
    V, T = rng.normal(size=(4, model.nv)), rng.normal(size=(4, model.nv))
    assert rel(sysc.mass_matrix(Q), kd.crba(model, Q)) < RTOL
    assert rel(sysc.forward_dynamics(Q, V, T), kd.aba(model, Q, V, T)) < 1e-9
    assert rel(sysc.gravity_torques(Q), kd.gravity_torques(model, Q)) < RTOL


def test_compiled_system_simulates_like_the_model():
    """kd.simulate takes the compiled equations as it takes the Model (the system protocol):
    the same integrator gives the same trajectory."""
    if not hasattr(kd, "simulate"):
        pytest.skip("kd.simulate is not there yet")
    model = kd.models.pendulum_chain(2, planar=False, joint="spherical")
    sysc = kane.derive(model).compile("numpy")
    q0 = kd.random_configuration(model, np.random.default_rng(12))
    v0 = np.linspace(-0.5, 0.5, model.nv)
    a = kd.simulate(sysc, q0, v0, 0.05, method="rk4", dt=1e-3)
    # (the Model's Python RK4 steps: its compiled loop, rk4_manifold, has tests of its own)
    b = kd.simulate(model, q0, v0, 0.05, method="rk4", dt=1e-3, compiled=False)
    assert np.abs(a.q[-1] - b.q[-1]).max() < 1e-11
    assert np.abs(a.v[-1] - b.v[-1]).max() < 1e-10
    assert np.ptp(a.energy) < 1e-8  # rk4 at dt = 1e-3 over 50 steps


def test_numba_program_covers_every_kind_of_expression():
    """The numba backend emits its arithmetic as LLVM IR (codegen/numba_ir.py): sums with
    negative terms, rational and negative coefficients, integer powers up to high and
    negative exponents, square roots and their inverse, other powers, the LLVM unary
    functions, and functions numba compiles itself (atan2, tanh, sign, max) — all give the
    numbers of the numpy backend (SymPy's NumPy printer, an independent path) and of the
    equations substituted directly, on a bead whose force uses each of them and time."""
    from sympy.physics.vector import Point, ReferenceFrame, dynamicsymbols

    q1, u1 = dynamicsymbols("q1 u1")
    t = dynamicsymbols._t
    N = ReferenceFrame("N")
    O = Point("O")
    O.set_vel(N, 0)
    P = O.locatenew("P", q1 * N.x)
    P.set_vel(N, u1 * N.x)
    a, b = q1, u1
    force = (sp.Rational(3, 7) * a - 2.5 * b * a + a ** 7 - 1 / (1 + a ** 2) ** 3
             + sp.sqrt(2 + a ** 2) - 1 / sp.sqrt(3 + b ** 2) + (1 + a ** 2) ** sp.Rational(3, 2)
             + sp.sin(a) * sp.cos(b) + sp.exp(-a ** 2) + sp.log(2 + b ** 2) + sp.Abs(a - b)
             + sp.atan2(a, 1 + b ** 2) + sp.tanh(b) + sp.sign(a) * b + sp.Max(a, b)
             + sp.cos(3 * t) * a)
    system = kane.KaneSystem(N, [q1], [u1], [u1 - q1.diff()],
                             [kane.Particle("bead", P, sp.Integer(2))],
                             [(P, force * N.x)], name="bead")
    eom = system.derive()
    src = codegen.python_source(codegen.lower(eom), "numba")
    for kind in ("('pow',", "('py',", "('fn', 'sqrt'", "('fn', 'fabs'", "('div',", "('neg',",
                 "('sub',", "('arg', 3)"):
        assert kind in src, kind  # the test reaches every instruction it is about
    fast, ref = eom.compile("numba"), eom.compile("numpy")
    for q, u, tm in [(0.3, -0.7, 0.0), (-1.2, 0.4, 0.8), (2.0, 1.5, -2.1)]:
        x, v = np.array([q]), np.array([u])
        F = fast.forcing(x, v, np.zeros(0), t=tm)
        env = {eom.q[0]: sp.Float(q, 30), eom.u[0]: sp.Float(u, 30), eom.t: sp.Float(tm, 30)}
        for s, e in eom.intermediates:
            env[s] = e.xreplace(env).evalf(30)
        exact = float(eom.forcing[0].xreplace(env).evalf(30) / eom.mass_matrix[0].xreplace(env))
        assert rel(F, ref.forcing(x, v, np.zeros(0), t=tm)) < 1e-14
        assert F[0] / 2 == pytest.approx(exact, rel=1e-13)
        assert rel(fast.mass_matrix(x, t=tm), ref.mass_matrix(x, t=tm)) < 1e-15
        assert rel(fast.forward_dynamics(x, v, np.zeros(0), t=tm),
                   ref.forward_dynamics(x, v, np.zeros(0), t=tm)) < 1e-14


def test_gradients_through_the_definitions():
    """lowering.gradients (forward mode through a straight-line program, each derivative
    bound) equals SymPy's derivative of the expanded expressions."""
    from kanedyn.kane.codegen.lowering import gradients

    x, y, a, b, c = sp.symbols("x y a b c")
    defs = [(a, sp.sin(x) * y), (b, a**2 + sp.cos(y)), (c, sp.exp(b) * x)]
    new, (dc, db) = gradients(defs, [c + b, b], [x, y])
    full = {c: sp.exp(sp.sin(x)**2 * y**2 + sp.cos(y)) * x,
            b: sp.sin(x)**2 * y**2 + sp.cos(y)}
    env = {}
    for s, e in defs + new:
        env[s] = e.xreplace(env)
    for got, expr in ((dc, full[c] + full[b]), (db, full[b])):
        for g, v in zip(got, (x, y), strict=True):
            assert sp.simplify(sp.sympify(g).xreplace(env) - expr.diff(v)) == 0
    assert all(s.name.startswith("d_") for s, _ in new)
