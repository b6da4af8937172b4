"""kanedyn's time per call of rnea, crba and aba on four robots, as JSON (no Pinocchio).

    PYTHONPATH=<checkout>/src .venv/bin/python bench/per_call.py

For before/after comparisons of small differences: run it from two checkouts
alternately (the robots are read from this checkout's bench data); each figure is the
best of 400 samples of 100 calls, µs, and the load average is printed with it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import kanedyn as kd

sys.path.insert(0, str(Path(__file__).parent))
from rbd_vs_pinocchio import robot_path  # noqa: E402

ROBOTS = (("humanoid", True), ("quadruped", True), ("ur5", False), ("panda", False))


def main() -> None:
    out = {}
    for name, floating in ROBOTS:
        m = kd.load_urdf(str(robot_path(name)), floating_base=floating)
        rng = np.random.default_rng(0)
        q = kd.random_configuration(m, rng)
        v, a = rng.normal(size=(2, m.nv))
        for alg, f, args in (("rnea", kd.rnea, (q, v, a)), ("crba", kd.crba, (q,)),
                             ("aba", kd.aba, (q, v, a))):
            f(m, *args)
            best = np.inf
            for _ in range(400):
                t = time.perf_counter()
                for _ in range(100):
                    f(m, *args)
                best = min(best, (time.perf_counter() - t) / 100)
            out[f"{name}{' (floating)' if floating else ''} {alg}"] = round(best * 1e6, 3)
    out["load"] = os.getloadavg()[0]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
