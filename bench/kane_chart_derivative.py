"""The chart derivative of compiled Kane trees (ChartCompiledSystem): what generating
∂q̇/∂q and ∂T/∂q costs against the equations' own lowering, and a step of avf and verlet
(their Python steps in chart.SystemChart) on the Kane ball-elbow against the same steps on
the Model (docs/benchmarks.md, "Kane trees with a curved chart: avf and verlet").

    PYTHONPATH=src .venv/bin/python bench/kane_chart_derivative.py
"""

from __future__ import annotations

import time

import numpy as np

import kanedyn as kd
from kanedyn.kane import tree
from kanedyn.kane.codegen.lowering import lower
from kanedyn.kane.codegen.printers import operation_counts
from kanedyn.model.joints import Free, Planar, Revolute, Spherical


def curved() -> kd.Model:
    """A free root, a ball, a hinge and a planar joint."""
    b = kd.ModelBuilder("curved")
    b.add_body("base", None, Free("f"), None, 2.0, (0.1, 0.2, -0.1), np.diag([0.2, 0.3, 0.25]))
    b.add_body("a", "base", Spherical("s"), (np.eye(3), (0, 0, -0.5)), 1.0, (0, 0, -0.3),
               np.diag([0.05, 0.06, 0.02]))
    b.add_body("c", "a", Revolute("r", axis=(1, 0, 0)), (np.eye(3), (0, 0, -0.6)), 0.5,
               (0, 0, -0.2), np.diag([0.02, 0.02, 0.01]))
    b.add_body("d", "c", Planar("p"), (np.eye(3), (0, 0, -0.4)), 0.4, (0.1, 0, 0),
               np.diag([0.01, 0.02, 0.03]))
    return b.build()


def sizes() -> None:
    models = [kd.models.ball_elbow(), curved(),
              kd.models.random_tree(8, seed=1, floating_base=True,
                                    joint_types=("revolute", "spherical")),
              kd.models.random_tree(20, seed=2, floating_base=True,
                                    joint_types=("revolute",))]
    print("| tree | nq | nv | lowering | M, forcing ops | chart lowering | ∂q̇/∂q ops "
          "| ∂T/∂q ops |")
    print("|---|---|---|---|---|---|---|---|")
    for m in models:
        e = tree.derive(m)
        t0 = time.perf_counter()
        c0 = operation_counts(lower(e))
        t1 = time.perf_counter()
        c = operation_counts(lower(e, chart=True))
        t2 = time.perf_counter()
        print(f"| {m.name} | {m.nq} | {m.nv} | {t1 - t0:.2f} s | {c0['dynamics']} "
              f"| {t2 - t1:.2f} s | {c['qdot_jacobian']} | {c['kinetic_gradient']} |")


def steps() -> None:
    m = kd.models.ball_elbow()
    q0 = kd.neutral(m)
    q0[:4] = kd.integrate_configuration(m, q0, np.array([0.9, -0.4, 0.2, 0.0]), 1.0)[:4]
    q0[4] = 0.7
    v0 = np.array([0.3, 1.2, 2.0, -1.0])
    s = tree.derive(m).compile(backend="numba")
    kd.simulate(s, q0, v0, 0.004, method="avf", dt=1e-3)  # the chart functions built
    print("| method | Kane tree (Python steps) | Model (Python steps) | Model (compiled) |")
    print("|---|---|---|---|")
    for method in ("avf", "verlet"):
        row = []
        for system, kw in ((s, {}), (m, {"compiled": False}), (m, {})):
            kd.simulate(system, q0, v0, 0.004, method=method, dt=1e-3, **kw)
            t0 = time.perf_counter()
            kd.simulate(system, q0, v0, 0.2, method=method, dt=1e-3, **kw)
            row.append(f"{(time.perf_counter() - t0) / 200 * 1e3:.2f} ms")
        print(f"| {method} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    sizes()
    steps()
