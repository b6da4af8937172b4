"""The ``kanedyn`` command line (also ``python -m kanedyn``).

Exit status: 0 success, 1 the checked property failed (``verify``), 2 bad
usage or input (one line naming the problem; ``--debug`` shows the traceback),
130 interrupted by Ctrl-C (``simulate`` first writes the results computed so far).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import kanedyn as kd  # the command line is the package's top: it uses the public API

from ._files import write_atomic

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """Bad input on the command line: reported in one line with exit status 2."""


# --- shared pieces -------------------------------------------------------------------

def _out_folder(path: str | Path) -> Path:
    out = Path(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".kanedyn_write_test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"cannot write to output folder {str(out)!r}: {e.strerror}") from None
    return out


def _parse_value(text: str):
    """A command-line value as TOML would read it (numbers, true/false, strings)."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def load_model_spec(spec: str):
    """A model from the command line: a URDF file, a scenario file, a shipped robot name,
    or a builder with arguments, ``pendulum_chain:n=3,planar=false``."""
    from kanedyn.scenario import build_model, load_scenario

    p = Path(spec)
    if spec.endswith(".urdf"):
        if not p.exists():
            raise UsageError(f"URDF file {spec!r} does not exist")
        return kd.load_urdf(p)
    if spec.endswith(".xml"):
        if not p.exists():
            raise UsageError(f"MJCF file {spec!r} does not exist")
        return kd.load_mjcf(p)
    if spec.endswith(".toml"):
        return build_model(load_scenario(p))
    name, _, args = spec.partition(":")
    builders = ("pendulum_chain", "random_tree", "free_body")
    if name in builders:
        kwargs = {}
        for item in filter(None, args.split(",")):
            key, eq, val = item.partition("=")
            if not eq:
                raise UsageError(f"model argument {item!r} must be key=value")
            kwargs[key.strip()] = _parse_value(val)
        try:
            return getattr(kd.models, name)(**kwargs)
        except TypeError as e:
            raise UsageError(f"model {name}: {e}") from None
    try:
        return kd.models.robot(spec)
    except kd.KanedynError:
        raise UsageError(
            f"unknown model {spec!r}: give a .urdf, .xml (MJCF) or .toml file, a builder "
            f"({', '.join(builders)}, e.g. pendulum_chain:n=3), or a shipped robot"
        ) from None


def write_results(out: Path, model, runs: dict, summary: dict, checks=None,
                  animate: str | None = None, report: bool = True, plots: bool = True,
                  formats=("npz", "csv"), visuals=None, wall_times=None) -> list[Path]:
    """Trajectories (``formats``) and summary.json of one or more runs, then the plots,
    report.html and animation by :func:`kanedyn.viz.write_run_outputs` (``visuals`` drawn
    in its 3D view, ``wall_times`` ``{label: s}`` in its runs table)."""
    from kanedyn import viz

    bad = [f for f in formats if f not in ("npz", "csv")]
    if bad:
        raise UsageError(f"[output] formats: unknown {bad}; valid: npz, csv")
    written = []
    for label, traj in runs.items():
        for ext in formats:
            written.append(traj.save(out / f"trajectory_{label}.{ext}"))
    text = json.dumps(summary, indent=2, default=str)
    written.append(write_atomic(out / "summary.json", lambda tmp: Path(tmp).write_text(text)))
    first = next(iter(runs.values()))
    stats = getattr(first, "stats", {})
    residuals = {label: stats[key] for label, key in
                 (("g(q)", "residual_g"), ("G v", "residual_Gv"), ("G v̇ + ġ v", "residual_acc"))
                 if key in stats} or None
    if report:
        # the report's runs table shows the per-run rows; its details keep the rest
        details = {k: v for k, v in summary.items() if k != "runs"}
        files = viz.write_run_outputs(out, model, runs, summary=details, verify=checks,
                                      residuals=residuals, animation=animate, visuals=visuals,
                                      wall_times=wall_times)
        written += list(files.values())
    elif not plots:
        if animate:
            written.append(viz.animate(model, first, out / animate))
    else:
        written += [viz.plot_states(first, out / "states.png", names=model.joint_names),
                    viz.plot_energy_figure(viz.energy_figure_data(runs),
                                           out / "energy_error.png"),
                    viz.plot_energy_budget(first, out / "energy_budget.png")]
        if residuals:
            written.append(viz.plot_constraint_residuals(first, out / "residuals.png",
                                                         residuals=residuals))
    return written


def _print_table(rows: list[tuple[str, str]]) -> None:
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"  {k:<{w}}  {v}")


# --- commands --------------------------------------------------------------------------

def cmd_simulate(args) -> int:
    from kanedyn.scenario import load_scenario, model_visuals, run, summarize

    sc = load_scenario(args.scenario)
    out = _out_folder(args.out or sc.get("output", "folder") or "out")
    progress = False if args.no_progress else sc.get("run", "progress")
    t0 = time.perf_counter()
    model, traj = run(sc, progress=progress)
    summary = {"title": f"kanedyn simulate {Path(args.scenario).name}",
               "scenario": str(args.scenario), "model": repr(model),
               "method": sc.get("integrator", "method"), **summarize(traj),
               "wall_time_s": round(time.perf_counter() - t0, 3)}
    if getattr(traj, "interrupted", False):
        summary["interrupted"] = True
    plots = sc.get("output", "plots", True)
    report = sc.get("output", "report", True) and plots
    method = sc.get("integrator", "method")
    written = write_results(out, model, {method: traj}, summary,
                            animate=args.animate or sc.get("output", "animate"),
                            report=report, plots=plots,
                            formats=sc.get("output", "formats", ("npz", "csv")),
                            visuals=model_visuals(sc, model) if report else None,
                            wall_times={method: summary["wall_time_s"]})
    _print_table([(k, str(v)) for k, v in summary.items() if k not in ("final_q", "final_v")])
    print(f"wrote {len(written)} files to {out}/: {', '.join(Path(w).name for w in written)}")
    if summary.get("interrupted"):
        print(f"interrupted at t = {summary['t_final']:g} s: the files above hold the run up "
              "to there and are complete")
        return EXIT_INTERRUPTED
    return EXIT_OK


def cmd_verify(args) -> int:
    from kanedyn.verify import checklist

    model = load_model_spec(args.model)
    report = checklist(model, n_samples=args.samples, seed=args.seed)
    print(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_dict(), indent=2, default=str))
    return EXIT_OK if report.passed else EXIT_FAILED


def cmd_derive(args) -> int:
    from kanedyn import kane

    model = load_model_spec(args.model)
    t0 = time.perf_counter()
    eom = kane.derive(model, parameters=args.parameters)
    elapsed = time.perf_counter() - t0
    ops = eom.operation_count()
    print(f"{model}: Kane's equations derived in {elapsed:.2f} s, {ops} operations "
          "in M and forcing after common-subexpression elimination")
    if args.latex:
        Path(args.latex).write_text(eom.to_latex())
        print(f"LaTeX: {args.latex}")
    if args.c:
        eom.to_c(args.c)
        print(f"C source: {args.c}")
    if args.python:
        from kanedyn.kane.codegen import lower, python_source

        Path(args.python).write_text(python_source(lower(eom), "numpy"))
        print(f"Python source: {args.python}")
    if not (args.latex or args.c or args.python):
        print(eom.to_latex(max_terms=20))
    return EXIT_OK


def cmd_identify_friction(args) -> int:
    from kanedyn import friction

    path = Path(args.data)
    if not path.exists():
        raise UsageError(f"data file {str(path)!r} does not exist")
    try:
        data = np.genfromtxt(path, delimiter=",", names=True)
    except ValueError as e:
        raise UsageError(f"{path}: cannot read as CSV with a header line: {e}") from None
    names = data.dtype.names or ()
    for col in (args.velocity_column, args.force_column):
        if col not in names:
            raise UsageError(f"{path}: no column {col!r}; columns are {', '.join(names)}")
    fit = friction.fit(data[args.velocity_column], data[args.force_column], model=args.model,
                       asymmetric=args.asymmetric)
    print(fit.report())
    if args.plot:
        fit.plot(args.plot)
        print(f"plot: {args.plot}")
    return EXIT_OK


def cmd_identify(args) -> int:
    """Base inertial parameters and joint friction of a model from a CSV of t, q, τ
    (kanedyn.identify: read_csv, prepare, fit); the table and, with --json, the result."""
    from kanedyn import identify

    if not Path(args.data).exists():
        raise UsageError(f"data file {args.data!r} does not exist")
    model = load_model_spec(args.model)
    t, q, tau = identify.read_csv(args.data, model)
    tp, qp, vp, ap, taup = identify.prepare(t, q, tau, cutoff=args.cutoff)
    if args.every is not None and args.every < 1:
        raise UsageError(f"--every {args.every} must be a positive number of samples")
    # filtered noise is correlated over ~1/(2 cut-off): by default one sample per that
    # interval, so that the intervals take nearly independent samples; τ was low-passed,
    # so the fit passes its friction columns through the same filter (docs/identify.md)
    h = float(np.mean(np.diff(tp)))
    every = args.every or max(1, int(1.0 / (2.0 * args.cutoff * h)))
    result = identify.fit(model, qp, vp, ap, taup, friction=args.friction,
                          confidence=args.confidence, asymmetric=args.asymmetric,
                          lowpass=identify.Lowpass(args.cutoff, 1.0 / h), every=every,
                          v_min=args.v_min)
    print(result.report())
    if args.plot:
        files = identify.report(result, args.plot, data=(tp, qp, vp, ap, taup))
        print(f"report: {', '.join(files.values())}")
    if args.json:
        out = {"model": args.model, "data": str(args.data), "friction": result.friction,
               "cutoff_hz": args.cutoff, "every": every, "samples": int(result.rows.size),
               "asymmetric": result.asymmetric, "v_min": args.v_min,
               "condition_number": result.condition_number,
               "confidence": result.confidence, "base_rank": result.base.rank,
               "parameters": [{"name": n, "estimate": float(x), "stderr": float(e),
                               "interval": [float(lo), float(hi)]}
                              for n, x, e, (lo, hi) in zip(result.names, result.estimate,
                                                           result.stderr, result.interval,
                                                           strict=True)],
               "noise": dict(zip(model.joint_names, map(float, result.sigma), strict=True)),
               "notes": list(result.notes)}
        text = json.dumps(out, indent=2)
        write_atomic(Path(args.json), lambda tmp: Path(tmp).write_text(text))
        print(f"JSON: {args.json}")
    return EXIT_OK


def cmd_bench(args) -> int:
    bench = Path(__file__).resolve().parents[2] / "bench"
    scripts = sorted(bench.glob("*.py")) if bench.is_dir() else []
    if args.name:
        scripts = [s for s in scripts if s.stem == args.name]
    if not scripts:
        raise UsageError(f"no benchmark {args.name or ''} found in {bench} (the benchmarks "
                         "live in the source checkout, not in an installed package)")
    for s in scripts:
        print(f"== {s.name}", flush=True)
        rc = subprocess.call([sys.executable, str(s)])
        if rc:
            return EXIT_FAILED
    return EXIT_OK


def cmd_sweep(args) -> int:
    over = {}
    for item in args.over:
        key, eq, vals = item.partition("=")
        if not eq:
            raise UsageError(f"--over {item!r}: write key=v1,v2,... or key=low:high")
        if args.sampler == "grid":
            over[key] = [_parse_value(v) for v in vals.split(",")]
        else:
            lo, colon, hi = vals.partition(":")
            if not colon:
                raise UsageError(f"--over {item!r}: {args.sampler} sampling needs key=low:high")
            over[key] = (float(lo), float(hi))
    res = kd.sweep(args.scenario, over, samples=args.samples, sampler=args.sampler,
                   seed=args.seed, out=args.out, scheduler=args.scheduler,
                   progress=not args.no_progress, trajectories=args.trajectories)
    print(f"{len(res.rows)} runs, {len(res.failed)} failed; results in {res.path}/")
    for r in res.failed[:5]:
        print(f"  run {r['run_id']}: {r['error']}")
    return EXIT_OK


def _timing(fn, budget: float = 0.2, block: int = 200) -> float:
    """µs per call of ``fn``: the best block of ``block`` calls within ``budget`` seconds
    (a clock read per call would cost about as much as a small robot's call)."""
    fn()
    best, t_end = float("inf"), time.perf_counter() + budget
    while time.perf_counter() < t_end:
        t0 = time.perf_counter()
        for _ in range(block):
            fn()
        best = min(best, time.perf_counter() - t0)
    return 1e6 * best / block


def demo_arm(links: int = 7):
    """The demo mechanism: a 3D arm of ``links`` links hanging under gravity, each joint with
    Stribeck friction (sgn smoothed by tanh(v/ε), ε = 0.01 rad/s), and its force elements."""
    from kanedyn import friction

    model = kd.models.pendulum_chain(links, planar=False, length=0.3, mass=1.0, radius=0.1,
                                     name=f"arm{links}")
    law = friction.Stribeck(Fc=0.05, Fs=0.08, vs=0.05, delta=2.0, Fv=0.01).smoothed("tanh", 1e-2)
    forces = [kd.forces.JointFriction(j, law) for j in model.joint_names]
    return model, forces


def cmd_demo(args) -> int:
    from kanedyn.scenario import summarize
    from kanedyn.verify import checklist

    out = _out_folder(args.out)
    model, forces = demo_arm()
    np.set_printoptions(precision=4, suppress=True, linewidth=110)
    q0 = np.linspace(0.9, 0.3, model.nq)
    v0 = np.zeros(model.nv)
    print(f"{model}\njoints: {', '.join(model.joint_names)}; Stribeck friction on every joint")
    print("\nM(q0) =\n", kd.crba(model, q0), sep="")
    print("v̇ = ABA(q0, 0, 0) =", kd.aba(model, q0, v0, np.zeros(model.nv)))
    T, V = kd.kinetic_energy(model, q0, v0), kd.potential_energy(model, q0)
    print(f"T = {T:.4f} J, V = {V:.4f} J")
    tau = np.zeros(model.nv)
    a = kd.aba(model, q0, v0, tau)
    print("per call (µs): " + ", ".join(
        f"{n} {_timing(f):.2f}" for n, f in [("rnea", lambda: kd.rnea(model, q0, v0, a)),
                                             ("crba", lambda: kd.crba(model, q0)),
                                             ("aba", lambda: kd.aba(model, q0, v0, tau))]))

    runs, rows, walls = {}, [], {}
    for method in ("avf", "rk4"):
        t0 = time.perf_counter()
        # no progress bar: a bar makes kd.simulate take the Python steps, and the compiled
        # loops (friction included) finish these runs before a bar would show (1 s)
        traj = kd.simulate(model, q0, v0, args.t_final, method=method, dt=args.dt,
                           forces=forces, progress=False)
        wall = time.perf_counter() - t0
        runs[method], walls[method] = traj, wall
        s = summarize(traj)
        rows.append({"method": method, "steps": len(traj.t) - 1, "wall_time_s": round(wall, 3),
                     "energy_lost_J": s["energy_initial"] - s["energy_final"],
                     "budget_error_rel": s["max_budget_error"]})
    report = checklist(model, n_samples=3, seed=0, forces=forces)
    summary = {"title": "kanedyn demo: 7-link arm with Stribeck joint friction",
               "model": repr(model), "t_final_s": args.t_final, "dt_s": args.dt,
               "runs": rows, "checklist_passed": report.passed}
    written = write_results(out, model, runs, summary, checks=report, wall_times=walls)
    print("\n" + str(report))
    print("\nsimulation (energy lost to friction; the budget E − E0 − W_nc closes to the "
          "method's level):")
    from kanedyn.viz import run_table

    # the report's figure: max |E − E(0) − W_nc| / E_scale, one scale for both runs
    table = run_table(runs, walls)
    for r, t in zip(rows, table, strict=True):
        print(f"  {r['method']:4s} {r['steps']} steps in {r['wall_time_s']:.2f} s, energy lost "
              f"{r['energy_lost_J']:.4f} J, budget error {t[next(k for k in t if 'W_nc' in k)]}"
              " (of E_scale)")
    print(f"\nwrote {len(written)} files to {out}/: trajectories (npz, csv), plots, "
          f"summary.json, report.html")
    return EXIT_OK if report.passed else EXIT_FAILED


# --- precompile: numba's disk cache filled ahead of the first call ------------------

def precompile_tasks() -> list[str]:
    """What ``kanedyn precompile`` compiles: every kernel of the entry-point table
    (``kernel:<name>``: its batched and single-state kernels, for their one declared
    signature each), the C entry points of the C front end with the single-state kernel
    each calls (``c:<name>``), and first runs of the compiled loops (``run:<what>``), which
    specialise them for the argument types every call passes.

    Costliest first, so that the workers end together (cold, on the shared 2-core machine
    of docs/benchmarks.md: the batched RNEA, CRBA and ABA 37-111 s each, the lane kernels;
    ABA's single state with its C entry point 27-45 s; each first run 20-42 s; the rest
    0.1-40 s)."""
    from kanedyn.dynamics.kernels import ENTRIES

    big = ["kernel:aba_batch", "kernel:rnea_batch", "kernel:crba_batch", "c:aba"]
    batches, cs, singles = [], [], []
    for e in ENTRIES.values():
        batches.append(f"kernel:{e.batch}")
        # a C entry point readies its single-state kernel first: one task (the two in one
        # process, not compiled twice by two workers)
        cs += [f"c:{e.name}"] if e.c else []
        singles += ([] if e.c else [f"kernel:{e.single}"])
        singles += [f"kernel:{e.single_fext}"] if e.single_fext else []
    rest = [f"run:{r}" for r in _PRECOMPILE_RUNS] + batches + cs + singles
    return list(dict.fromkeys(big + rest))


def _chain():
    # the 7-link 3D chain of bench/sim_vs_mujoco.py and bench/first_call.py
    model = kd.models.pendulum_chain(7, planar=False, radius=0.05)
    return model, 0.5 * np.cos(np.arange(7)), np.zeros(7)


def _run_avf():
    model, q0, v0 = _chain()
    kd.simulate(model, q0, v0, 0.01, method="avf", dt=1e-3)


def _run_avf_chart():
    # avf and itoh_abe in the chart of ball and free joints (integrators/avf_chart_compiled.py)
    model = kd.models.pendulum_chain(2, planar=False, joint="spherical")
    for method in ("avf", "itoh_abe"):
        kd.simulate(model, kd.neutral(model), np.full(model.nv, 0.1), 0.01, method=method,
                    dt=1e-3, progress=False)


def _run_rk4():
    model, q0, v0 = _chain()
    kd.simulate(model, q0, v0, 0.01, method="rk4", dt=1e-3)


def _run_demo():
    # the demo's runs: both methods with Stribeck friction on every joint
    model, forces = demo_arm()
    for method in ("avf", "rk4"):
        kd.simulate(model, np.linspace(0.9, 0.3, model.nq), np.zeros(model.nv), 0.01,
                    method=method, dt=2e-3, forces=forces, progress=False)


def _run_time_stepping():
    # the compiled time-stepping with exact friction (bench/friction.py's arm, briefly)
    from kanedyn import friction

    model, q0, v0 = _chain()
    law = friction.Stribeck(Fc=2.0, Fs=3.0, vs=0.05, delta=2.0, Fv=0.1)
    forces = [kd.forces.JointFriction(j, law) for j in model.joint_names]
    forces += [kd.forces.SinusoidalTorque(model.joint_names[0], 1.0, 1.0)]
    kd.simulate(model, q0, v0, 0.01, method="time_stepping", dt=1e-3, forces=forces)


def _run_batch():
    model, q0, v0 = _chain()
    kd.simulate_batch(model, np.tile(q0, (4, 1)), np.tile(v0, (4, 1)), 0.01, dt=1e-3)


def _run_batch_implicit():
    # simulate_batch's compiled midpoint/gauss4 (canonical and tangent forms) and verlet
    model, q0, v0 = _chain()
    Q0, V0 = np.tile(q0, (2, 1)), np.tile(v0, (2, 1))
    for method in ("midpoint", "gauss4", "verlet"):
        kd.simulate_batch(model, Q0, V0, 0.01, method=method, dt=1e-3)
    ball = kd.models.pendulum_chain(2, planar=False, joint="spherical")
    Q0, V0 = np.tile(kd.neutral(ball), (2, 1)), np.full((2, ball.nv), 0.1)
    for method in ("midpoint", "gauss4"):  # the same njit loop for both tableaux
        kd.simulate_batch(ball, Q0, V0, 0.01, method=method, dt=1e-3)
    # the batched time-stepping with exact friction
    from kanedyn import friction

    law = friction.Stribeck(Fc=2.0, Fs=3.0, vs=0.05, delta=2.0, Fv=0.1)
    forces = [kd.forces.JointFriction(j, law) for j in model.joint_names]
    Q0, V0 = np.tile(q0, (2, 1)), np.tile(v0, (2, 1))
    kd.simulate_batch(model, Q0, V0, 0.01, method="time_stepping", dt=1e-3, forces=forces)


def _run_batch_dg():
    # simulate_batch's discrete gradients (the single-run loop per run for avf, itoh_abe and
    # energy_momentum, with and without force rows) and the time-stepping batch with LuGre
    # and Karnopp laws (the same driver as the exact friction's, other table rows)
    from kanedyn import friction

    model, q0, v0 = _chain()
    Q0, V0 = np.tile(q0, (2, 1)), np.tile(v0, (2, 1))
    damper = [kd.forces.JointDamper(model.joint_names[0], 0.1)]
    for forces in ((), damper):
        kd.simulate_batch(model, Q0, V0, 0.005, method="avf", dt=1e-3, forces=forces)
    law = friction.Stribeck(Fc=2.0, Fs=3.0, vs=0.05, delta=2.0, Fv=0.1)
    joints = {model.joint_names[0]: friction.LuGre(1e4, 50.0, 2.0, 3.0, 0.05),
              model.joint_names[1]: friction.Karnopp(law, 1e-3)}
    kd.simulate_batch(model, Q0, V0, 0.005, method="time_stepping", dt=1e-3, joints=joints)


def _run_radau():
    # the compiled radau5 loop for both kinds of compiled constrained system
    from kanedyn.constraints import problems

    for prob in (problems.andrews(), problems.four_bar()):
        kd.simulate(prob.system, prob.q0, prob.v0, 1e-4, method="radau5")


def _run_constrained_em():
    # the compiled constrained energy_momentum loop, both discrete gradients of H
    from kanedyn.constraints import problems

    prob = problems.four_bar()
    for method in ("energy_momentum", "avf"):
        kd.simulate(prob.system, prob.q0, prob.v0, 2e-3, method=method, dt=1e-3)


def _run_manifold():
    # the manifold RK4 loop (ball, free, planar joints, armature), alone and batched
    model = kd.models.pendulum_chain(2, planar=False, joint="spherical")
    q0, v0 = kd.neutral(model), np.full(model.nv, 0.1)
    for project in (None, "energy"):
        kd.simulate(model, q0, v0, 0.01, method="rk4", dt=1e-3, project=project,
                    progress=False)
    kd.simulate_batch(model, np.tile(q0, (2, 1)), np.tile(v0, (2, 1)), 0.01, dt=1e-3)


def _run_regressor():
    # the joint torque regressor's kernels: one state (its C entry point and regressor_f,
    # by the C front end and its Python wrapper) and a batch
    from kanedyn import identify
    from kanedyn.identify import regressor_kernel

    model, q0, v0 = _chain()
    regressor_kernel.c_address()
    identify.joint_torque_regressor(model, q0, v0, v0)
    identify.joint_torque_regressor(model, np.tile(q0, (2, 1)), np.tile(v0, (2, 1)),
                                    np.tile(v0, (2, 1)))


def _run_kane_loops():
    # the compiled Kane systems' loops (integrators/kane_compiled.py): one explicit
    # signature each, for every system, so no system is needed
    from kanedyn.integrators import kane_compiled

    kane_compiled.compile_loops()


_PRECOMPILE_RUNS = {"simulate avf": _run_avf, "simulate rk4": _run_rk4,
                    "simulate avf/itoh_abe (ball, free joints)": _run_avf_chart,
                    "demo (friction)": _run_demo, "time_stepping (friction)": _run_time_stepping,
                    "simulate_batch": _run_batch, "simulate radau5 (constrained)": _run_radau,
                    "simulate energy_momentum (constrained)": _run_constrained_em,
                    "rk4 on the manifold": _run_manifold,
                    "simulate_batch midpoint/gauss4/verlet/time_stepping": _run_batch_implicit,
                    "simulate_batch avf/itoh_abe/energy_momentum, LuGre/Karnopp": _run_batch_dg,
                    "joint torque regressor": _run_regressor,
                    "compiled Kane systems' loops": _run_kane_loops}


def precompile_one(task: str) -> tuple[str, float]:
    """Compile one task of :func:`precompile_tasks` (or load it from numba's disk cache):
    ``(task, seconds)``."""
    from kanedyn.dynamics import first_calls, kernels

    first_calls.set_mode("compile")  # (a first run waits for what it compiles)
    t0 = time.perf_counter()
    kind, _, name = task.partition(":")
    if kind == "kernel":
        kernels.load(name)
    elif kind == "c":
        kernels.c_address(kernels.ENTRIES[name])
    elif kind == "run":
        _PRECOMPILE_RUNS[name]()
    else:
        raise UsageError(f"unknown precompile task {task!r}")
    return task, time.perf_counter() - t0


def cmd_precompile(args) -> int:
    """Fill numba's on-disk cache with the kernels a first call needs, in ``--jobs``
    worker processes. The cache is numba's ordinary one, keyed as always
    (``dynamics/_compiled.py``): what a later process loads from it is exactly what it
    would have compiled, and an edit of a source drops the entries it affects."""
    import os
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from kanedyn.dynamics import kernels

    tasks = precompile_tasks()
    if args.only:
        tasks = [t for t in tasks if any(o in t for o in args.only)]
        if not tasks:
            raise UsageError(f"--only {' '.join(args.only)}: no such task; the tasks: "
                             f"{', '.join(precompile_tasks())}")
    jobs = max(1, min(args.jobs or os.cpu_count() or 1, len(tasks)))
    t0 = time.perf_counter()
    print(f"kanedyn precompile: {len(tasks)} tasks on {jobs} process(es)", flush=True)
    if jobs == 1:
        done = map(precompile_one, tasks)
    else:  # fresh interpreters (spawn): numba's compiler is not fork-safe once loaded
        pool = ProcessPoolExecutor(jobs, mp_context=get_context("spawn"))
        done = pool.map(precompile_one, tasks)
    try:
        for task, sec in done:
            print(f"  {task:40s} {sec:7.2f} s", flush=True)
    finally:
        if jobs > 1:
            pool.shutdown(cancel_futures=True)
    # (read off a dispatcher's cache, which exists before anything is compiled: a run
    # with --only compiles nothing more here)
    where = kernels.rnea.rnea_f._cache._cache_path
    print(f"done in {time.perf_counter() - t0:.1f} s; numba cache of the kernels: {where}")
    return EXIT_OK


# --- the parser ---------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="kanedyn", formatter_class=fmt,
                                     description="Rigid multibody dynamics from the command "
                                                 "line.\n\nExample: kanedyn demo --out out/")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name, func, help_, example):
        p = sub.add_parser(name, help=help_, formatter_class=fmt,
                           description=f"{help_}.\n\nExample:\n  {example}")
        p.set_defaults(func=func)
        return p

    p = add("simulate", cmd_simulate, "run a scenario file and write its results",
            "kanedyn simulate examples/double_pendulum.toml --out out/")
    p.add_argument("scenario", help="scenario file (TOML)")
    p.add_argument("--out", help="output folder (default: [output] folder, or out/)")
    p.add_argument("--animate", metavar="FILE", help="also write an animation (.gif or .mp4)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    p = add("verify", cmd_verify, "run the verification checklist on a model",
            "kanedyn verify pendulum_chain:n=3,planar=false")
    p.add_argument("model", help="a .urdf, .xml (MJCF) or .toml file, a shipped robot, or "
                   "builder:k=v,...")
    p.add_argument("--samples", type=int, default=5, help="random states per check")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON")

    p = add("derive", cmd_derive, "derive Kane's equations of a model",
            "kanedyn derive pendulum_chain:n=2 --latex eom.tex --c eom.c")
    p.add_argument("model", help="a .urdf, .xml (MJCF) or .toml file, a shipped robot, or "
                   "builder:k=v,...")
    p.add_argument("--parameters", choices=("numeric", "symbolic"), default="symbolic")
    p.add_argument("--latex", metavar="FILE", help="write the equations as LaTeX")
    p.add_argument("--c", metavar="FILE", help="write standalone C source")
    p.add_argument("--python", metavar="FILE", help="write NumPy source")

    p = add("identify-friction", cmd_identify_friction, "fit a Stribeck model to friction data",
            "kanedyn identify-friction data.csv --plot fit.png")
    p.add_argument("data", help="CSV with a header line and columns of speed and force")
    p.add_argument("--model", default="stribeck", help="friction model to fit")
    p.add_argument("--asymmetric", action="store_true", help="direction-dependent parameters")
    p.add_argument("--velocity-column", default="v")
    p.add_argument("--force-column", default="F")
    p.add_argument("--plot", metavar="FILE", help="write data against the fitted curve")

    p = add("identify", cmd_identify, "identify a robot's base inertial parameters and joint "
            "friction from a CSV of t, q_<joint>, tau_<joint>",
            "kanedyn identify panda data.csv --friction stribeck --json result.json")
    p.add_argument("model", help="a .urdf, .xml (MJCF) or .toml file, a shipped robot, or "
                   "builder:k=v,...")
    p.add_argument("data", help="CSV with columns t, q_<joint>, tau_<joint> (uniform t)")
    p.add_argument("--friction", default="viscous+coulomb",
                   choices=("none", "viscous+coulomb", "stribeck"))
    p.add_argument("--cutoff", type=float, default=10.0,
                   help="low-pass of q and tau before differentiation (Hz)")
    p.add_argument("--every", type=int, help="keep every k-th filtered sample (default: "
                   "one per half cut-off period)")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--asymmetric", action="store_true",
                   help="separate friction levels for positive and negative speeds")
    p.add_argument("--v-min", type=float, default=0.0, metavar="SPEED",
                   help="leave out a joint's equations where its |speed| < SPEED (near "
                   "rest: stick, presliding)")
    p.add_argument("--json", metavar="FILE", help="also write the result as JSON")
    p.add_argument("--plot", metavar="DIR", help="write the report with its plots into DIR "
                   "(friction curves with their bands, measured against predicted torque)")

    p = add("bench", cmd_bench, "run the side-by-side benchmarks (needs the bench extras)",
            "kanedyn bench rbd_vs_pinocchio")
    p.add_argument("name", nargs="?", help="one benchmark (file name without .py)")

    p = add("sweep", cmd_sweep, "run a scenario over a parameter sweep on Dask",
            "kanedyn sweep arm.toml --over model.length=0.5,1.0 --over integrator.dt=1e-3")
    p.add_argument("scenario")
    p.add_argument("--over", action="append", required=True, metavar="KEY=VALUES",
                   help="grid: key=v1,v2,...; random/lhs: key=low:high (repeatable)")
    p.add_argument("--sampler", choices=("grid", "random", "lhs"), default="grid")
    p.add_argument("--samples", type=int, help="number of runs (random, lhs)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scheduler", metavar="ADDRESS", help="tcp://host:port of a Dask cluster")
    p.add_argument("--out", default="sweep_results", help="results folder (Parquet)")
    p.add_argument("--trajectories", action="store_true",
                   help="also save each run's trajectory (out/trajectories/run-<id>.npz)")
    p.add_argument("--no-progress", action="store_true")

    p = add("demo", cmd_demo, "simulate, check and report on the built-in 7-link arm",
            "kanedyn demo --out demo_output")
    p.add_argument("--out", default="demo_output", help="output folder")
    p.add_argument("--t-final", type=float, default=3.0, help="simulated time (s)")
    p.add_argument("--dt", type=float, default=2e-3, help="step size (s)")
    p.add_argument("--no-progress", action="store_true",
                   help="(accepted; the demo's runs are compiled and show no bar)")

    p = add("precompile", cmd_precompile, "compile the kernels into numba's disk cache ahead "
            "of the first call (the install step of the Makefile runs it)",
            "kanedyn precompile --jobs 2")
    p.add_argument("--jobs", type=int, help="worker processes (default: the CPU count)")
    p.add_argument("--only", action="append", metavar="TEXT",
                   help="only the tasks whose name contains TEXT (repeatable)")
    return parser


def main(argv: list[str] | None = None) -> int:
    from kanedyn.errors import KanedynError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (KanedynError, UsageError) as e:
        if args.debug:
            raise
        print(f"kanedyn {args.command}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"kanedyn {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
