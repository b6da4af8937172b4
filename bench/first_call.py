"""First-call times in a new process (issue 17): import, first single-state and batched
rnea / crba / aba, first ``kd.simulate(method="avf")`` — with an empty numba cache, or
with the cache the install step built.

Each measurement runs in a fresh subprocess (so nothing compiled by this process counts)
on the 7-link 3D chain of ``bench/sim_vs_mujoco.py`` (``kd.models.pendulum_chain(7,
planar=False, radius=0.05)``). Phases, in this order, each timed on the wall clock and on
the process's CPU clock (user + system of all its threads; the machine is shared, and
numba's compilation is single-threaded, so CPU ≈ wall on a quiet machine):

1. ``import kanedyn`` and building the model;
2. the first ``kd.rnea``, ``kd.crba``, ``kd.aba`` of one state each (the C front end's
   path, which readies the single-state kernels and their C entry points);
3. the first batched ``kd.rnea``, ``kd.crba``, ``kd.aba`` (16 states);
4. the first ``kd.simulate(model, q0, v0, 1.0, method="avf", dt=1e-3)`` (``--method rk4``:
   that method instead, in the same row);
5. with ``--frames`` (before 4): the first frame functions of the last body — placement,
   velocity, acceleration, Jacobian, its time variation — and a batch of 16 velocities.

Caches:

- ``--cache empty`` (default): ``NUMBA_CACHE_DIR`` is a new empty temporary directory.
  numba then puts (and looks for) every index and object file there and never in the
  ``__pycache__`` folders beside the sources (its user-provided locator comes before the
  in-tree one, and kanedyn's keyed locator delegates to numba's order). The script
  checks both: that the index files appeared in the temporary directory, and that no
  ``.nbi``/``.nbc`` file under the package's source tree was created or changed.
- ``--cache installed``: the environment as it is (no ``NUMBA_CACHE_DIR`` unless the
  caller set one): the caches ``python -m kanedyn precompile`` — run by the Makefile's
  install step, and by a wheel's build (``build_backend/kanedyn_build.py``) — filled. Run
  it after ``make .venv/.installed`` on a clean clone, or with the Python of a new
  environment into which ``pip install <clone>`` installed the wheel.

``--avf-first`` runs phase 4 right after phase 1 (the simulation then compiles what it
shares with the others too). ``--repeat k`` runs the subprocess k times (a fresh empty
directory each time for ``empty``). Printed: a table per run, the load average before and
after, the children's CPU time from ``resource.getrusage(RUSAGE_CHILDREN)``, and for
``installed`` how many index files beside the sources the run wrote (0: nothing compiled).

Run: ``.venv/bin/python bench/first_call.py [--cache empty|installed] [--repeat k]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: what the child process runs; prints one JSON line of {phase: [wall s, cpu s]}
CHILD = r"""
import json, sys, time
t_wall, t_cpu = time.perf_counter(), time.process_time()
out = {}
def mark(name):
    global t_wall, t_cpu
    w, c = time.perf_counter(), time.process_time()
    out[name] = [w - t_wall, c - t_cpu]
    t_wall, t_cpu = w, c

import numpy as np
import kanedyn as kd
model = kd.models.pendulum_chain(7, planar=False, radius=0.05)
mark("import kanedyn + model")
METHOD = sys.argv[1]
def avf():
    traj = kd.simulate(model, 0.5 * np.cos(np.arange(7)), np.zeros(7), 1.0, method=METHOD,
                       dt=1e-3)
    assert len(traj.t) == 1001
    mark("first simulate avf")
if "avf-first" in sys.argv[2:]:
    avf()
q, v, a = 0.5 * np.cos(np.arange(7)), 0.1 * np.arange(7.0), np.ones(7)
tau = kd.rnea(model, q, v, a)
M = kd.crba(model, q)
qdd = kd.aba(model, q, v, tau)
mark("first rnea, crba, aba")
# (checks that call no other kernel: ABA inverts RNEA; M is symmetric, positive definite)
assert np.allclose(qdd, a) and np.allclose(M, M.T) and np.all(np.linalg.eigvalsh(M) > 0)
Q = np.tile(q, (16, 1)); V = np.tile(v, (16, 1)); A = np.tile(a, (16, 1))
T = kd.rnea(model, Q, V, A); kd.crba(model, Q); kd.aba(model, Q, V, T)
mark("first batched rnea, crba, aba")
if "frames" in sys.argv[2:]:
    f = model.bodies[-1].name
    kd.frame_placement(model, q, f); kd.frame_velocity(model, q, v, f, "world")
    kd.frame_acceleration(model, q, v, a, f, "local_world_aligned")
    kd.frame_jacobian(model, q, f, "world"); kd.frame_jacobian_time_variation(model, q, v, f)
    kd.frame_velocity(model, Q, V, f)
    mark("first frame functions")
if "avf-first" not in sys.argv[2:]:
    avf()
from kanedyn.dynamics import kernels
out["_cache_dir"] = kernels.ready("rnea_f")._cache._cache_path
print(json.dumps(out))
"""

PHASES = ("import kanedyn + model", "first rnea, crba, aba", "first batched rnea, crba, aba",
          "first simulate avf", "first frame functions")
#: the issue's targets, seconds: import + first calls, first batched calls, first avf
TARGETS = {"import + first rnea, crba, aba": 3.0, "first batched rnea, crba, aba": 10.0,
           "first simulate avf": 5.0}


def package_caches() -> dict[str, float]:
    """numba's cache files beside the package's sources: path -> mtime."""
    import kanedyn

    root = Path(kanedyn.__file__).parent
    return {str(p): p.stat().st_mtime for p in root.rglob("__pycache__/*.nb[ic]")}


#: the child's kanedyn.dynamics.first_calls mode (--first-calls; not the caller's: `make
#: bench` sets "compile" for the other scripts)
FIRST_CALLS = ["reference"]


def run_once(cache: str, avf_first: bool, method: str = "avf",
             frames: bool = False) -> tuple[dict, float]:
    """One child process: its phases, and its CPU time from getrusage (user + system)."""
    env = dict(os.environ, KANEDYN_FIRST_CALLS=FIRST_CALLS[0])
    tmp = None
    if cache == "empty":
        tmp = tempfile.TemporaryDirectory(prefix="kd_first_call_")
        env["NUMBA_CACHE_DIR"] = tmp.name
    before = package_caches()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        r = subprocess.run([sys.executable, "-c", CHILD, method] + ["avf-first"] * avf_first
                           + ["frames"] * frames, env=env,
                           capture_output=True, text=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if r.returncode:
            raise SystemExit(f"the child process failed:\n{r.stderr}")
        res = json.loads(r.stdout.strip().splitlines()[-1])
        if tmp is not None:
            n_index = len(list(Path(tmp.name).rglob("*.nbi")))
            if n_index == 0 or not res["_cache_dir"].startswith(tmp.name):
                raise SystemExit(f"numba did not cache into NUMBA_CACHE_DIR={tmp.name} "
                                 f"(rnea_f's cache: {res['_cache_dir']})")
            after = package_caches()
            changed = [p for p, t in after.items() if before.get(p) != t]
            if changed:
                raise SystemExit(f"the run wrote numba caches beside the sources: {changed[:3]}")
            res["_index_files"] = n_index
        elif "NUMBA_CACHE_DIR" not in env:  # the caches beside the sources: what was compiled
            after = package_caches()
            res["_written"] = sum(before.get(p) != t for p, t in after.items()
                                  if p.endswith(".nbi"))
    finally:
        if tmp is not None:
            tmp.cleanup()
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return res, cpu


def report(res: dict, cpu: float, method: str = "avf") -> None:
    print(f"  {'phase':34s} {'wall s':>8s} {'CPU s':>8s}")
    for p in (k for k in res if k in PHASES):  # in the order they ran
        w, c = res[p]
        print(f"  {p.replace('avf', method):34s} {w:8.2f} {c:8.2f}")
    total = sum(res[p][0] for p in PHASES if p in res)
    print(f"  {'total':34s} {total:8.2f} {cpu:8.2f}  (CPU: getrusage of the child)")
    first = res[PHASES[0]][0] + res[PHASES[1]][0]
    for name, got in (("import + first rnea, crba, aba", first),
                      ("first batched rnea, crba, aba", res[PHASES[2]][0]),
                      ("first simulate avf", res[PHASES[3]][0])):
        if name == "first simulate avf" and method != "avf":
            continue  # (the target is avf's)
        t = TARGETS[name]
        print(f"  target {name:32s} <= {t:4.1f} s: {got:7.2f} s "
              f"{'met' if got <= t else 'NOT met'}")
    if "_written" in res:
        print(f"  ({res['_written']} numba index files beside the sources written or rewritten "
              "by the run: 0 means everything was loaded, nothing compiled)")
    if "_index_files" in res:
        print(f"  ({res['_index_files']} numba index files written to the empty NUMBA_CACHE_DIR, "
              "none beside the sources)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", choices=("empty", "installed"), default="empty")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--avf-first", action="store_true",
                    help="run kd.simulate(method='avf') right after the import, before rnea")
    ap.add_argument("--frames", action="store_true",
                    help="a phase of first frame-function calls (placement, velocity, "
                         "acceleration, Jacobian, its time variation; a batch of 16 "
                         "velocities) after the batched calls")
    ap.add_argument("--method", default="avf",
                    help="the method of the 'first simulate' phase (default avf, the target's; "
                         "its row keeps the name 'first simulate avf')")
    ap.add_argument("--first-calls", choices=("reference", "compile"), default="reference",
                    help="KANEDYN_FIRST_CALLS of the child: reference (the default of "
                         "kanedyn) answers a first call by the reference while its kernel "
                         "compiles; compile waits for it")
    args = ap.parse_args()
    FIRST_CALLS[0] = args.first_calls
    import numba

    print(f"python {sys.version.split()[0]}, numba {numba.__version__}, {os.cpu_count()} CPUs; "
          f"first calls: {args.first_calls}, first simulate: {args.method}; cache: {args.cache}"
          + (f" (NUMBA_CACHE_DIR={os.environ['NUMBA_CACHE_DIR']})"
             if args.cache == "installed" and "NUMBA_CACHE_DIR" in os.environ else ""))
    for k in range(args.repeat):
        la0 = os.getloadavg()
        t0 = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        res, cpu = run_once(args.cache, args.avf_first, args.method, args.frames)
        la1 = os.getloadavg()
        print(f"run {k + 1} at {t0}: load average {la0[0]:.2f} {la0[1]:.2f} {la0[2]:.2f} before, "
              f"{la1[0]:.2f} {la1[1]:.2f} {la1[2]:.2f} after")
        report(res, cpu, args.method)


if __name__ == "__main__":
    main()
