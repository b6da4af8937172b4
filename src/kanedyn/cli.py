"""The ``kanedyn`` command line."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def _demo(args: argparse.Namespace) -> int:
    import kanedyn as kd

    model = kd.models.pendulum_chain(7, planar=False)
    rng = np.random.default_rng(0)
    q = kd.random_configuration(model, rng, scale=0.5)
    v = rng.normal(size=model.nv)
    tau = np.zeros(model.nv)
    np.set_printoptions(precision=4, suppress=True, linewidth=120)
    print(model)
    print("joints:", ", ".join(model.joint_names))
    print("\nq =", q)
    print("v =", v)
    M = kd.crba(model, q)
    print("\nM(q) =\n", M, sep="")
    print("\nforward dynamics v̇ = ABA(q, v, 0) =", kd.aba(model, q, v, tau))
    T, V = kd.kinetic_energy(model, q, v), kd.potential_energy(model, q)
    print(f"\nkinetic energy T = {T:.6f} J, potential energy V = {V:.6f} J, total {T + V:.6f} J")
    print("\ntiming per call (one state, from Python):")
    a = kd.aba(model, q, v, tau)
    for name, fn in [("rnea", lambda: kd.rnea(model, q, v, a)),
                     ("crba", lambda: kd.crba(model, q)),
                     ("aba", lambda: kd.aba(model, q, v, tau))]:
        fn()
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < 0.2:
            fn()
            n += 1
        print(f"  {name:5s} {1e6 * (time.perf_counter() - t0) / n:9.2f} µs")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kanedyn", description="Rigid multibody dynamics.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="run the built-in demonstration",
                       description="Run the built-in demonstration. "
                                   "Example: kanedyn demo --out out/")
    p.add_argument("--out", default="demo_output", help="output folder")
    p.set_defaults(func=_demo)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
