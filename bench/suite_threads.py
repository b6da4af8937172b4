"""The test suite's BLAS threads: one test file run with numpy's default BLAS threads and
with one (``OPENBLAS_NUM_THREADS=1``, what ``make test`` sets), while a second process keeps
the other core busy — as the suite's second worker does on a 2-core machine.

    .venv/bin/python bench/suite_threads.py [--test tests/examples/test_identify_arm.py]
                                            [--rounds 2]

Prints the wall and CPU seconds of each run, alternating the two settings. The numba cache
is the suite's own (``.venv/numba-test-cache``, -O1): run ``make test`` once before, so that
what is timed is the test's work, not compilation.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUSY = "while True:\n    pass\n"


def run(test: str, blas_one: bool) -> tuple[float, float]:
    """(wall, CPU) seconds of ``pytest -q test`` beside a busy process."""
    env = dict(os.environ, NUMBA_OPT="1",
               NUMBA_CACHE_DIR=str(ROOT / ".venv" / "numba-test-cache"))
    env.pop("OPENBLAS_NUM_THREADS", None)
    if blas_one:
        env["OPENBLAS_NUM_THREADS"] = "1"
    busy = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              test], cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        busy.kill()
        busy.wait()
    if out.returncode != 0:
        raise SystemExit(f"{test} failed:\n{out.stdout[-2000:]}")
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--test", default="tests/examples/test_identify_arm.py")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    print(f"{args.test}, beside a busy core; load average {os.getloadavg()[0]:.2f}")
    print(f"{'BLAS threads':>14s} {'wall s':>8s} {'CPU s':>8s}")
    for _ in range(args.rounds):
        for one in (False, True):
            wall, cpu = run(args.test, one)
            print(f"{'1' if one else 'default':>14s} {wall:8.2f} {cpu:8.2f}")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
