"""Kane's method from a Model (kanedyn.kane.derive) against SymPy's KanesMethod, side by side.

First the general derivation (``kane.KaneSystem``): the Whipple bicycle benchmark
derived and linearised against SymPy's KanesMethod on the same kinematics, and the
massive-leg Stewart platform derived and compiled. Then, for the planar point-mass
n-link pendulum and a 3D chain of rods, in one process:
derivation time, operation count of (mass_matrix, forcing) — expanded and after
common-subexpression elimination — and the time to evaluate M and forcing once
(kanedyn's numba-compiled code against ``sympy.lambdify(..., cse=True)`` of SymPy's
result). Then the 30-link 3D chain (derive + compile) and the generated forward
dynamics against the numeric core's ABA.

Run:  .venv/bin/python bench/kane_vs_sympy.py [--nmax-sympy 10] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import tempfile
import time
import timeit

import numpy as np
import sympy as sp
import sympy.physics.mechanics as me
from sympy.core.cache import clear_cache

import kanedyn as kd
from kanedyn import kane


def sympy_planar_point_mass(n: int, L: float = 1.0, m: float = 1.0, g: float = 9.81):
    """The point-mass n-link pendulum in the xz-plane, relative joint angles about y (the
    geometry of ``kd.models.pendulum_chain(n, point_mass=True)``), by KanesMethod with
    symbolic lengths, masses and gravity."""
    q = me.dynamicsymbols(f"q0:{n}")
    u = me.dynamicsymbols(f"u0:{n}")
    ls = sp.symbols(f"l0:{n}")
    ms = sp.symbols(f"m0:{n}")
    gs = sp.Symbol("g")
    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)
    frame, point, particles, loads = N, O, [], []
    for i in range(n):
        A = frame.orientnew(f"A{i}", "Axis", [q[i], frame.y])
        A.set_ang_vel(frame, u[i] * frame.y)
        P = point.locatenew(f"P{i}", -ls[i] * A.z)
        P.v2pt_theory(point, N, A)
        particles.append(me.Particle(f"pa{i}", P, ms[i]))
        loads.append((P, -ms[i] * gs * N.z))
        frame, point = A, P
    kdes = [q[i].diff() - u[i] for i in range(n)]
    km = me.KanesMethod(N, q_ind=q, u_ind=u, kd_eqs=kdes)
    km.kanes_equations(particles, loads)
    values = {gs: g, **{x: L for x in ls}, **{x: m for x in ms}}
    return km, q, u, values


def sympy_3d_chain(n: int, L: float = 1.0, m: float = 1.0, g: float = 9.81):
    """A 3D chain of thin uniform rods, revolute axes alternating y, x, y, ... in the parent
    frame (``kd.models.pendulum_chain(n, planar=False)``), by KanesMethod."""
    q = me.dynamicsymbols(f"q0:{n}")
    u = me.dynamicsymbols(f"u0:{n}")
    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)
    frame, joint, bodies, loads = N, O, [], []
    I = m * L**2 / 12
    for i in range(n):
        ax = frame.y if i % 2 == 0 else frame.x
        A = frame.orientnew(f"A{i}", "Axis", [q[i], ax])
        A.set_ang_vel(frame, u[i] * ax)
        if i > 0:
            J = joint.locatenew(f"J{i}", -L * frame.z)
            J.v2pt_theory(joint, N, frame)
        else:
            J = joint
        G = J.locatenew(f"G{i}", -L / 2 * A.z)
        G.v2pt_theory(J, N, A)
        bodies.append(me.RigidBody(f"B{i}", G, A, m, (me.inertia(A, I, I, 0), G)))
        loads.append((G, -m * g * N.z))
        frame, joint = A, J
    kdes = [q[i].diff() - u[i] for i in range(n)]
    km = me.KanesMethod(N, q_ind=q, u_ind=u, kd_eqs=kdes)
    km.kanes_equations(bodies, loads)
    return km, q, u, {}


def count(exprs) -> int:
    return int(sum(sp.count_ops(e) for e in exprs))


def cse_count(exprs) -> int:
    repl, red = sp.cse(exprs)
    return count([e for _, e in repl]) + count(red)


def best(fn, number: int) -> float:
    """Best of 5 runs of ``number`` calls, seconds per call."""
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def sympy_side(builder, n, count_expanded=True):
    clear_cache()
    gc.collect()  # the previous size's expressions must not be collected inside the timing
    t0 = time.perf_counter()
    km, q, u, values = builder(n)
    M, F = km.mass_matrix, km.forcing
    t_derive = time.perf_counter() - t0
    exprs = list(M) + list(F)
    ops = count(exprs) if count_expanded else None
    # as the issue measures it: symbolic parameters, cse over (mass_matrix, forcing)
    ops_cse = cse_count(exprs)
    # evaluation: numbers substituted, dynamicsymbols replaced by plain symbols
    qs, us = sp.symbols(f"q0:{n}"), sp.symbols(f"u0:{n}")
    rep = dict(zip(q, qs, strict=True)) | dict(zip(u, us, strict=True)) | values
    f = sp.lambdify([qs, us], [M.xreplace(rep), F.xreplace(rep)], cse=True)
    return t_derive, ops, ops_cse, f


def kanedyn_side(model, backend="numba"):
    clear_cache()
    gc.collect()
    t0 = time.perf_counter()
    eom = kane.derive(model, parameters="symbolic")
    t_derive = time.perf_counter() - t0
    ops_cse = eom.operation_count()  # parameters folded, as compiled
    t0 = time.perf_counter()
    fast = eom.compile(backend)
    q = kd.neutral(model)
    fast.forward_dynamics(q, np.zeros(model.nv))  # numba compiles at the first call
    t_compile = time.perf_counter() - t0
    return eom, fast, t_derive, ops_cse, t_compile


def planar_table(nmax_sympy: int, nmax: int) -> None:
    print("\n== planar point-mass n-link pendulum: derivation and operation counts ==")
    print(f"{'n':>3} {'kd derive s':>11} {'sympy s':>9} {'ratio':>7} | {'kd ops(cse)':>11} "
          f"{'kd sym ops':>10} {'sympy ops':>10} {'sympy cse':>9} | "
          f"{'kd eval us':>10} {'lambdify us':>11} {'ratio':>6}")
    rng = np.random.default_rng(0)
    for n in range(2, nmax + 1):
        model = kd.models.pendulum_chain(n, point_mass=True)
        eom, fast, t_kd, ops_kd, _ = kanedyn_side(model)
        ops_sym = lower_count_symbolic(eom)
        q, v = rng.uniform(-np.pi, np.pi, n), rng.normal(size=n)
        tau = np.zeros(n)
        M0, F0 = kd.crba(model, q), -kd.nonlinear_effects(model, q, v)
        M1, F1 = fast.dynamics(q, v, tau)
        assert np.allclose(M1, M0, rtol=1e-10, atol=1e-12) and np.allclose(F1, F0, atol=1e-10)
        # M and forcing together (as lambdify returns them), through the public wrapper
        t_fast = best(lambda f=fast, q=q, v=v, tau=tau: f.dynamics(q, v, tau), 2000)
        row = f"{n:>3} {t_kd:>11.3f} "
        if n <= nmax_sympy:
            t_sp, ops_sp, cse_sp, f = sympy_side(sympy_planar_point_mass, n)
            Ms, Fs = f(q, v)
            assert np.allclose(np.array(Ms, float), M0, atol=1e-9)
            assert np.allclose(np.array(Fs, float).ravel(), F0, atol=1e-9)
            t_lam = best(lambda f=f, q=q, v=v: f(q, v), 500)
            row += (f"{t_sp:>9.2f} {t_sp / t_kd:>7.1f} | {ops_kd:>11} {ops_sym:>10} "
                    f"{ops_sp:>10} {cse_sp:>9} | {t_fast * 1e6:>10.2f} {t_lam * 1e6:>11.1f} "
                    f"{t_lam / t_fast:>6.1f}")
        else:
            row += (f"{'-':>9} {'-':>7} | {ops_kd:>11} {ops_sym:>10} {'-':>10} {'-':>9} | "
                    f"{t_fast * 1e6:>10.2f} {'-':>11} {'-':>6}")
        print(row, flush=True)


def lower_count_symbolic(eom) -> int:
    """Operations after CSE with the parameters kept as symbols (like SymPy's count)."""
    from kanedyn.kane.codegen import lower

    return lower(eom, fold=False).operation_count(("mass_matrix", "forcing"))


def chain3d_table(nmax_sympy: int) -> None:
    print("\n== 3D chain of rods (axes y, x, y, ...): derivation, ops, evaluation ==")
    print(f"{'n':>3} {'kd derive s':>11} {'sympy s':>9} {'ratio':>7} | {'kd ops(cse)':>11} "
          f"{'sympy cse':>9} | {'kd eval us':>10} {'lambdify us':>11} {'ratio':>6}")
    rng = np.random.default_rng(1)
    for n in range(2, nmax_sympy + 1):
        model = kd.models.pendulum_chain(n, planar=False)
        eom, fast, t_kd, ops_kd, _ = kanedyn_side(model)
        t_sp, _, cse_sp, f = sympy_side(sympy_3d_chain, n, count_expanded=False)
        q, v, tau = rng.uniform(-np.pi, np.pi, n), rng.normal(size=n), np.zeros(n)
        Ms, Fs = f(q, v)
        assert np.allclose(np.array(Ms, float), kd.crba(model, q), atol=1e-9)
        assert np.allclose(np.array(Fs, float).ravel(), -kd.nonlinear_effects(model, q, v),
                           atol=1e-9)
        t_fast = best(lambda f=fast, q=q, v=v, tau=tau: f.dynamics(q, v, tau), 2000)
        t_lam = best(lambda f=f, q=q, v=v: f(q, v), 200)
        print(f"{n:>3} {t_kd:>11.3f} {t_sp:>9.2f} {t_sp / t_kd:>7.1f} | {ops_kd:>11} "
              f"{cse_sp:>9} | {t_fast * 1e6:>10.2f} {t_lam * 1e6:>11.1f} "
              f"{t_lam / t_fast:>6.1f}", flush=True)


def big_chain(n: int) -> None:
    print(f"\n== {n}-link 3D chain: derive and compile (target < 60 s) ==")
    model = kd.models.pendulum_chain(n, planar=False)
    for backend in ("numba", "c"):
        clear_cache()
        t0 = time.perf_counter()
        eom = kane.derive(model)
        t1 = time.perf_counter()
        fast = eom.compile(backend)
        fast.forward_dynamics(kd.neutral(model), np.zeros(model.nv))
        t2 = time.perf_counter()
        print(f"{backend:>6}: derive {t1 - t0:.2f} s + compile {t2 - t1:.2f} s = "
              f"{t2 - t0:.2f} s; {len(eom.intermediates)} intermediates, "
              f"{fast.counts['dynamics']} ops in (M, forcing) after CSE", flush=True)


def forward_dynamics_vs_aba(models) -> None:
    print("\n== generated forward dynamics (Cholesky) against kd.aba, one state ==")
    print(f"{'model':<34} {'nv':>3} {'numba us':>9} {'c us':>8} {'kd.aba us':>10} "
          f"{'aba/numba':>9} {'rel. diff':>10}")
    rng = np.random.default_rng(2)
    for model in models:
        eom = kane.derive(model)
        fn, fc = eom.compile("numba"), eom.compile("c")
        q = kd.random_configuration(model, rng)
        v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        a0 = kd.aba(model, q, v, tau)
        diff = max(np.abs(fn.forward_dynamics(q, v, tau) - a0).max(),
                   np.abs(fc.forward_dynamics(q, v, tau) - a0).max()) / np.abs(a0).max()
        tn = best(lambda f=fn, q=q, v=v, tau=tau: f.forward_dynamics(q, v, tau), 2000)
        tc = best(lambda f=fc, q=q, v=v, tau=tau: f.forward_dynamics(q, v, tau), 2000)
        ta = best(lambda m=model, q=q, v=v, tau=tau: kd.aba(m, q, v, tau), 200)
        print(f"{model.name:<34} {model.nv:>3} {tn * 1e6:>9.2f} {tc * 1e6:>8.2f} "
              f"{ta * 1e6:>10.1f} {ta / tn:>9.1f} {diff:>10.1e}", flush=True)


def bicycle_table(sympy_linearize: bool = True) -> None:
    """The Whipple bicycle (``kane.classic.whipple_bicycle``) derived and linearised by
    kanedyn's general Kane derivation and by SymPy's KanesMethod on the same kinematics;
    operations of (M, forcing) after CSE; compiled forward dynamics against SymPy's
    ``lambdify(cse=True)`` of its own result."""
    from kanedyn.kane import classic

    print("\n== Whipple bicycle (benchmark parameters): general Kane derivation vs KanesMethod ==")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    clear_cache()
    gc.collect()
    t0 = time.perf_counter()
    system, info = classic.whipple_bicycle()
    eom = system.derive()
    t_derive = time.perf_counter() - t0
    op = {**eom.parameters, **{sp.Symbol(n): 0 for n in ("q1", "q2", "q3", "q4", "u2", "u4")},
          sp.Symbol("u5"): -5.0 / 0.3}
    t0 = time.perf_counter()
    A, _B = kane.linearize(eom, op)
    t_lin = time.perf_counter() - t0
    # counted alike on both sides: sympy.count_ops over the CSE'd replacements and the
    # reduced M and forcing, once with the parameters folded (numbers, as compiled) and
    # once with them kept as symbols
    ops_kd = eom.operation_count()
    ops_kd_sym = lower_count_symbolic(eom)
    t0 = time.perf_counter()
    fast = eom.compile("c")
    qs, us = np.array([0.0, 0.1, 0.0, 0.05]), np.array([0.2, -0.1, -5.0 / 0.3])
    fast.forward_dynamics(qs, us)
    t_compile = time.perf_counter() - t0
    t_fd = best(lambda: fast.forward_dynamics(qs, us), 2000)
    print(f"kanedyn: derive {t_derive:.2f} s, linearise {t_lin:.2f} s, ops(M, forcing, cse) "
          f"{ops_kd} folded / {ops_kd_sym} symbolic, compile (C) {t_compile:.2f} s, forward "
          f"dynamics {t_fd * 1e6:.2f} us")

    q, u = info["q"], info["u"]
    clear_cache()
    gc.collect()
    t0 = time.perf_counter()
    bodies = [me.RigidBody(b.name, b.masscenter, b.frame, b.mass, (b.inertia, b.masscenter))
              for b in system.bodies]
    km = me.KanesMethod(system.frame, q_ind=[q[0], q[1], q[3]], q_dependent=[q[2]],
                        configuration_constraints=list(system.configuration_constraints),
                        u_ind=[u[1], u[3], u[4]], u_dependent=[u[0], u[2], u[5]],
                        velocity_constraints=list(system.velocity_constraints),
                        kd_eqs=list(system.kinematic_equations), constraint_solver="CRAMER")
    km.kanes_equations(bodies, list(system.loads))
    t_sderive = time.perf_counter() - t0
    ops_s_sym = cse_count(list(km.mass_matrix) + list(km.forcing))
    par = {info["parameters"][k]: v for k, v in classic.BENCHMARK_BICYCLE.items()}
    ops_s = cse_count([e.xreplace(par) for e in (*km.mass_matrix, *km.forcing)])
    plain = {x: sp.Symbol(x.func.__name__) for x in (*q, *u)}
    args = [plain[x] for x in (*q, *u)]
    f = sp.lambdify(args, [km.mass_matrix.xreplace(par).xreplace(plain),
                           km.forcing.xreplace(par).xreplace(plain)], cse=True)
    xs = [*qs, 0.0, 0.2, 0.0, -0.1, -5.0 / 0.3, 0.0]

    def sympy_fd():
        Ms, Fs = f(*xs)
        return np.linalg.solve(Ms, Fs)

    t_sfd = best(sympy_fd, 200)
    print(f"SymPy:   derive {t_sderive:.2f} s, ops(M, forcing, cse) {ops_s} folded / "
          f"{ops_s_sym} symbolic, "
          f"lambdify(cse) M, forcing + solve {t_sfd * 1e6:.1f} us")
    if sympy_linearize:
        t0 = time.perf_counter()
        sop = {x: 0 for x in q} | {u[0]: 0, u[1]: 0, u[2]: 0, u[3]: 0, u[4]: -5.0 / 0.3,
                                   u[5]: -5.0 / 0.35} | {x.diff(): 0 for x in u}
        km.linearize(op_point=sop, A_and_B=True, linear_solver="CRAMER")
        t_slin = time.perf_counter() - t0
        print(f"SymPy:   linearise {t_slin:.1f} s; derive + linearise ratio "
              f"{(t_sderive + t_slin) / (t_derive + t_lin):.1f}x")
    print(f"ratios: derive {t_sderive / t_derive:.2f}x, forward dynamics {t_sfd / t_fd:.0f}x, "
          f"ops {ops_kd} vs {ops_s} folded, {ops_kd_sym} vs {ops_s_sym} symbolic")


def cpu_seconds() -> float:
    """Process time of this process and its finished children (the C compiler): less
    sensitive than wall time to other work on the machine."""
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def stewart_massive() -> None:
    """The massive-leg Stewart platform (13 bodies, 6 speeds): derived and compiled."""
    from kanedyn.kane import classic

    print("\n== Stewart platform with massive legs: derive + compile ==")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    vals = dict(M=12.0, Ixx=0.9, Iyy=1.1, Izz=1.6, g=9.81, k=800.0, l0=1.05, m_c=1.5,
                d_c=0.3, J_c=0.002, K_c=0.05, m_p=0.8, d_p=0.25, J_p=0.001, K_p=0.02)
    clear_cache()
    gc.collect()
    t0, c0 = time.perf_counter(), cpu_seconds()
    system, _info = classic.stewart_platform(legs="massive")
    eom = system.derive()
    t_derive, c_derive = time.perf_counter() - t0, cpu_seconds() - c0
    x = np.array([1.0, 0, 0, 0, 0, 0, 1.0])
    for backend in ("numpy", "c", "numba"):
        t0, c0 = time.perf_counter(), cpu_seconds()
        fast = eom.compile(backend, parameters=vals)
        fast.forward_dynamics(x, np.zeros(6), np.zeros(6))
        t_c, c_c = time.perf_counter() - t0, cpu_seconds() - c0
        t_fd = best(lambda fast=fast: fast.forward_dynamics(x, np.zeros(6), np.zeros(6)), 200)
        print(f"derive {t_derive:.2f} s + compile ({backend}) {t_c:.2f} s = "
              f"{t_derive + t_c:.2f} s (CPU {c_derive:.2f} + {c_c:.2f} = {c_derive + c_c:.2f} s); "
              f"{len(eom.intermediates)} intermediates, "
              f"ops(dynamics) {fast.counts['dynamics']}, forward dynamics {t_fd * 1e6:.1f} us")
    stewart_compile_stages(eom, vals)
    stewart_numba_first_calls(eom, vals)


def stewart_numba_first_calls(eom, vals) -> None:
    """The numba backend function by function: the CPU time of each first call (numba's
    compile of it and of what it calls, in a fresh cache) and, compiled, the time of a call
    through the API and of the bare generated function (best of repeated runs)."""
    old = os.environ["KANEDYN_CACHE"]
    os.environ["KANEDYN_CACHE"] = tempfile.mkdtemp(prefix="kanedyn_bench_numba_")
    for name in [m for m in sys.modules if m.startswith("kanedyn_gen_numba_")]:
        del sys.modules[name]  # imported again from the fresh cache: new, uncompiled functions
    try:
        c0 = cpu_seconds()
        fast = eom.compile("numba", parameters=vals)
        lowering = cpu_seconds() - c0
        x = np.array([1.0, 0, 0, 0, 0, 0, 1.0])
        u, tau = np.array([0.1, -0.2, 0.05, 0.3, 0.0, -0.1]), np.zeros(6)
        k, M, F, ud, w = fast._k, np.empty(36), np.empty(6), np.empty(6), np.empty(36)
        api = {"forward_dynamics": lambda: fast.forward_dynamics(x, u, tau),
               "mass_matrix": lambda: fast.mass_matrix(x),
               "forcing": lambda: fast.forcing(x, u, tau)}
        bare = {"forward_dynamics": lambda: k["forward_dynamics"](x, u, tau, 0.0, ud, w),
                "mass_matrix": lambda: k["mass_matrix"](x, 0.0, M),
                "forcing": lambda: k["forcing"](x, u, tau, 0.0, F)}
        first = {}
        for name, f in api.items():
            c0 = cpu_seconds()
            f()
            first[name] = cpu_seconds() - c0
    finally:
        os.environ["KANEDYN_CACHE"] = old
    print(f"numba: lower + print {lowering:.2f} CPU s; first call (CPU s) "
          + ", ".join(f"{n} {t:.2f}" for n, t in first.items())
          + "; run (us, API / bare) " + ", ".join(
              f"{n} {best(api[n], 2000) * 1e6:.2f} / {best(bare[n], 2000) * 1e6:.2f}"
              for n in api))


def stewart_compile_stages(eom, vals) -> None:
    """Where the C compile's time goes, stage by stage (CPU s), built again in a fresh
    cache (and under a prefix, so that it is another library) so that the compiler runs."""
    from kanedyn.kane.codegen import build, c_declarations, c_source, lower
    from kanedyn.kane.codegen.printers import operation_counts

    old = os.environ["KANEDYN_CACHE"]
    os.environ["KANEDYN_CACHE"] = tempfile.mkdtemp(prefix="kanedyn_bench_stages_")
    try:
        stages, c0 = [], cpu_seconds()

        def lap(name):
            nonlocal c0
            c1 = cpu_seconds()
            stages.append(f"{name} {c1 - c0:.2f}")
            c0 = c1

        low = lower(eom, vals)
        lap("lower")
        operation_counts(low)
        lap("operation counts")
        src = c_source(low, prefix="stages_")
        lap("print C")
        build.load_c(src, c_declarations("stages_"))
        lap(f"cffi + {' '.join(build.C_FLAGS)}")
    finally:
        os.environ["KANEDYN_CACHE"] = old
    print(f"C compile by stage (CPU s): {', '.join(stages)}; {src.count(chr(10))} lines")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nmax-sympy", type=int, default=10)
    ap.add_argument("--nmax", type=int, default=14)
    ap.add_argument("--nmax-sympy-3d", type=int, default=5)
    ap.add_argument("--big", type=int, default=30)
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--fd-only", action="store_true",
                    help="only the forward dynamics against kd.aba")
    ap.add_argument("--bicycle-only", action="store_true",
                    help="only the Whipple bicycle against KanesMethod")
    ap.add_argument("--stewart-only", action="store_true",
                    help="only the massive-leg Stewart platform's derive + compile")
    ap.add_argument("--no-sympy-linearize", action="store_true",
                    help="skip SymPy's bicycle linearisation (about 2 minutes)")
    args = ap.parse_args()
    if args.quick:
        args.nmax_sympy, args.nmax, args.nmax_sympy_3d, args.big = 4, 5, 3, 6
    os.environ.setdefault("KANEDYN_CACHE", tempfile.mkdtemp(prefix="kanedyn_bench_"))
    print(f"sympy {sp.__version__}, numpy {np.__version__}, kanedyn {kd.__version__}; "
          f"code cache {os.environ['KANEDYN_CACHE']}")
    if args.stewart_only:
        stewart_massive()
        return
    if args.bicycle_only:
        bicycle_table(not args.no_sympy_linearize)
        stewart_massive()
        return
    if not args.fd_only:
        bicycle_table(not (args.quick or args.no_sympy_linearize))
        stewart_massive()
        planar_table(args.nmax_sympy, args.nmax)
        chain3d_table(args.nmax_sympy_3d)
        big_chain(args.big)
    models = [
        kd.models.pendulum_chain(7, planar=False),
        kd.models.pendulum_chain(4, planar=False, joint="spherical"),
        kd.models.random_tree(6, seed=1, floating_base=True),
    ]
    if not args.quick:  # a large floating tree, where O(n) ABA should win over O(n³) Cholesky
        from importlib import resources

        urdf = resources.files("kanedyn") / "data" / "robots" / "humanoid.urdf"
        models.append(kd.load_urdf(str(urdf), floating_base=True))
    forward_dynamics_vs_aba(models)


if __name__ == "__main__":
    main()
