"""A cold compile at the suite's levels: the first midpoint run on the ball elbow (the
gauss loop, gauss_compiled.py, with everything it calls) in a new process on an empty
numba cache, at

- ``NUMBA_OPT=1`` (the suite's setting up to stop 42),
- ``NUMBA_OPT=1 KANEDYN_CODEGEN_OPT=0`` (``make test`` since: machine code at level 0),
- ``NUMBA_OPT=0 KANEDYN_CODEGEN_OPT=0`` (no inlining either),

then the same process's second run of 2000 steps (the compiled code's speed).

    .venv/bin/python bench/compile_levels.py [--method midpoint]

Prints, per setting, the first call's seconds, the seconds numba spent in LLVM (its
``numba:llvm_lock`` events, summed over every function compiled) and the 2000 steps'.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys, time
import numpy as np
from numba.core import event
llvm = [0.0]
class L(event.Listener):
    def on_start(self, ev): self.t = time.perf_counter()
    def on_end(self, ev): llvm[0] += time.perf_counter() - self.t
event.register("numba:llvm_lock", L())
import kanedyn as kd
m = kd.models.ball_elbow()
q0 = kd.neutral(m); q0[4] = 0.4
v0 = np.array([0.5, -1.0, 0.8, 2.0])
t = time.perf_counter()
kd.simulate(m, q0, v0, 0.01, method=sys.argv[1], dt=1e-3)
first = time.perf_counter() - t
t = time.perf_counter()
kd.simulate(m, q0, v0, 2.0, method=sys.argv[1], dt=1e-3)
print(json.dumps([first, llvm[0], time.perf_counter() - t]))
"""

SETTINGS = [("NUMBA_OPT=1", {"NUMBA_OPT": "1"}),
            ("NUMBA_OPT=1 KANEDYN_CODEGEN_OPT=0", {"NUMBA_OPT": "1", "KANEDYN_CODEGEN_OPT": "0"}),
            ("NUMBA_OPT=0 KANEDYN_CODEGEN_OPT=0", {"NUMBA_OPT": "0", "KANEDYN_CODEGEN_OPT": "0"})]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--method", default="midpoint")
    args = ap.parse_args()
    print("| setting | first call s | in LLVM s | 2000 steps ms |\n|---|---:|---:|---:|")
    for name, extra in SETTINGS:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, **extra, NUMBA_CACHE_DIR=cache, KANEDYN_FIRST_CALLS="compile",
                       OPENBLAS_NUM_THREADS="1", PYTHONWARNINGS="ignore")
            env.setdefault("PYTHONPATH", str(ROOT / "src"))
            out = subprocess.run([sys.executable, "-c", CHILD, args.method], env=env,
                                 capture_output=True, text=True, check=True)
            first, llvm, run = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"| {name} | {first:.1f} | {llvm:.1f} | {1e3 * run:.1f} |", flush=True)


if __name__ == "__main__":
    main()
