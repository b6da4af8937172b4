"""midpoint and gauss4: the closed-form Newton matrix (jacobian="auto") against the
difference-based one (jacobian="differences"), side by side in one run.

Per case and method: residual evaluations per step, Newton iterations per step and
wall time per step, the two modes alternated in rounds and the best of the rounds
kept (the machine is shared); the ratio auto/differences is printed. Not a test.

    .venv/bin/python bench/newton_jacobians.py [--rounds 3] [--t-final 0.5] [--threads N]

BLAS runs on one thread unless --threads is given: on this shared 2-core machine a
threaded BLAS makes the dense 38x38 products of the humanoid's Newton matrix 3-10x
slower and erratic (measured), which says nothing about either Jacobian.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

if "--threads" not in sys.argv:  # before numpy loads its BLAS
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402

import kanedyn as kd  # noqa: E402
from kanedyn.forces import ForceSet, JointDamper, JointSpring  # noqa: E402
from kanedyn.integrators.base import Problem, run_fixed  # noqa: E402
from kanedyn.integrators.gauss import Gauss4, Midpoint  # noqa: E402
from kanedyn.sim.system import ModelSystem  # noqa: E402


def cases():
    c7 = kd.models.pendulum_chain(7)
    return [
        ("chain7", c7, [], 1e-2),
        ("chain7+spring+damper", c7, [JointSpring("joint3", 500.0), JointDamper("joint2", 2.0)],
         1e-2),
        ("chain20", kd.models.pendulum_chain(20), [], 1e-3),
        ("ball3", kd.models.pendulum_chain(3, planar=False, joint="spherical"), [], 1e-2),
        ("humanoid (floating)", kd.load_robot("humanoid", floating_base=True), [], 5e-3),
    ]


def problem(model, forces, dt, t_final):
    s = ModelSystem(model)
    fs = ForceSet(s, forces)
    rng = np.random.default_rng(0)
    q0 = kd.integrate_configuration(model, kd.neutral(model), 0.3 * rng.normal(size=model.nv),
                                    1.0)
    return Problem(system=s, q0=q0, v0=rng.normal(size=model.nv), t_final=t_final, dt=dt,
                   tau_cons=fs.tau_conservative if fs.conservative else None,
                   tau_nc=fs.tau_nonconservative if fs.nonconservative else None,
                   potential=fs.potential if fs.conservative else None,
                   force_jacobians=fs.jacobians)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--t-final", type=float, default=0.5)
    ap.add_argument("--threads", type=int, default=None, help="leave BLAS threading as is")
    args = ap.parse_args()
    print("load:", open("/proc/loadavg").read().strip(),
          "| BLAS threads:", os.environ.get("OPENBLAS_NUM_THREADS", "default"))
    print(f"{'case':22s} {'method':8s} {'res/step d':>10s} {'res/step a':>10s} "
          f"{'it/step d':>9s} {'it/step a':>9s} {'us/step d':>10s} {'us/step a':>10s} "
          f"{'time a/d':>8s} {'max|dq|':>8s}")
    for name, model, forces, dt in cases():
        tf = args.t_final if model.nv < 20 else min(args.t_final, 0.1)
        for cls in (Midpoint, Gauss4):
            best = {"differences": np.inf, "auto": np.inf}
            info = {}
            for mode in ("differences", "auto"):  # warm-up: compile, caches
                pr = problem(model, forces, dt, 2 * dt)
                run_fixed(cls(pr, jacobian=mode), pr)
            for _ in range(args.rounds):
                for mode in ("differences", "auto"):
                    pr = problem(model, forces, dt, tf)
                    meth = cls(pr, jacobian=mode)
                    t0 = time.perf_counter()
                    sol = run_fixed(meth, pr)
                    el = time.perf_counter() - t0
                    ns = len(sol.t) - 1
                    best[mode] = min(best[mode], el / ns)
                    info[mode] = (meth.residual_evaluations / ns,
                                  float(sol.stats["newton_iterations"].mean()), sol)
            d, a = info["differences"], info["auto"]
            dq = float(np.abs(a[2].q - d[2].q).max())
            print(f"{name:22s} {cls.name:8s} {d[0]:10.2f} {a[0]:10.2f} {d[1]:9.2f} {a[1]:9.2f} "
                  f"{best['differences'] * 1e6:10.0f} {best['auto'] * 1e6:10.0f} "
                  f"{best['auto'] / best['differences']:8.2f} {dq:8.1e}")
    print("load:", open("/proc/loadavg").read().strip())


if __name__ == "__main__":
    main()
