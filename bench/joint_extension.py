"""What a joint type pays for being called through its entry table (kernels/joint_extension.py).

    .venv/bin/python bench/joint_extension.py [--bodies 7]

A chain of revolute joints about random (non-coordinate) axes, built twice: with the
built-in ``Revolute`` (its primitives inlined into the kernels) and with a subclass
whose ``compiled_code`` is no built-in code and whose primitives are the revolute
module's (the kernels then call the same arithmetic through C entry points). Per call of
``kd.rnea``, ``kd.crba``, ``kd.aba`` from Python, µs: the best of many short samples,
alternating the two models (a shared machine's load hits both alike), and the load.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

import numpy as np

import kanedyn as kd
from kanedyn.model import ModelBuilder, Revolute
from kanedyn.model.joints import register_joint_type, revolute


@register_joint_type
@dataclass(frozen=True)
class RoutedRevolute(Revolute):
    """Revolute, called through its entry table."""

    kind = "routed_revolute"
    compiled_code = "ROUTED_REVOLUTE"
    compiled_primitives = revolute


def chain(cls, n: int) -> kd.Model:
    rng = np.random.default_rng(0)
    b, parent = ModelBuilder("chain"), None
    for i in range(n):
        a = rng.normal(size=3)
        b.add_body(f"l{i}", parent, cls(f"j{i}", axis=tuple(a / np.linalg.norm(a))),
                   (np.eye(3), (0.0, 0.0, -0.3 if parent else 0.0)), 1.0, (0.0, 0.0, -0.15),
                   np.diag([0.02, 0.02, 0.01]))
        parent = f"l{i}"
    return b.build()


def best_time(f, args, samples: int = 300, calls: int = 200) -> float:
    best = np.inf
    for _ in range(samples):
        t = time.perf_counter()
        for _ in range(calls):
            f(*args)
        best = min(best, (time.perf_counter() - t) / calls)
    return best * 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bodies", type=int, default=7)
    n = p.parse_args().bodies
    inline, routed = chain(Revolute, n), chain(RoutedRevolute, n)
    rng = np.random.default_rng(1)
    q, v, a = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
    calls = {"rnea": (kd.rnea, (q, v, a)), "crba": (kd.crba, (q,)), "aba": (kd.aba, (q, v, a))}
    print(f"chain of {n} revolute joints about random axes; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'':6}{'inline µs':>11}{'entry table µs':>16}{'extra per joint, ns':>22}")
    for name, (f, args) in calls.items():
        np.testing.assert_array_equal(f(routed, *args), f(inline, *args))
        t_in, t_rt = best_time(f, (inline, *args)), best_time(f, (routed, *args))
        print(f"{name:6}{t_in:11.2f}{t_rt:16.2f}{(t_rt - t_in) / n * 1e3:22.0f}")


if __name__ == "__main__":
    main()
