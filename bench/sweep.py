"""Batch throughput: 1,000 short simulations of a 7-link chain, four ways, in one run.

    .venv/bin/python bench/sweep.py [--runs 1000] [--steps 100]

1. sequential: ``kd.simulate(method="rk4")`` once per run (timed on a subset,
   reported as runs per second), with a damper (the generic step loop) and
   without force elements (kd.simulate's compiled RK4 loop);
2. in-process batched: ``kd.simulate_batch`` over all runs at once;
3. ``kd.sweep`` on a local Dask cluster with 1 and 2 worker processes
   (each run is a scenario run; its per-run overhead is the wall time beyond
   the runs' own compute time, divided by the number of runs);
4. the scaling of the batched path with N.

Targets (issue 8): batched ≥ 10× the sequential throughput; Dask overhead per
run < 5 ms.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np

import kanedyn as kd

SCENARIO = {
    "model": {"builder": "pendulum_chain", "n": 7, "planar": False},
    "initial": {"q": "random", "v": "zero", "seed": 0},
    "forces": [{"type": "damper", "joint": "joint1", "damping": 0.1}],
    "integrator": {"method": "rk4", "dt": 1e-3},
    "run": {"t_final": 0.1},
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--sequential-sample", type=int, default=50)
    args = ap.parse_args()
    n, steps, dt = args.runs, args.steps, 1e-3
    t_final = steps * dt
    SCENARIO["run"]["t_final"] = t_final
    model = kd.models.pendulum_chain(7, planar=False)
    rng = np.random.default_rng(0)
    Q0 = rng.uniform(-1, 1, (n, 7))
    V0 = np.zeros((n, 7))
    forces = [kd.forces.JointDamper("joint1", 0.1)]
    print(f"{n} runs of a 7-link 3D chain, RK4, {steps} steps of dt = {dt:g} s each; "
          f"{os.cpu_count()} cores")

    # warm-up: compile or load the kernels once
    kd.simulate(model, Q0[0], V0[0], 2 * dt, method="rk4", dt=dt, forces=forces, progress=False)
    kd.simulate_batch(model, Q0[:2], V0[:2], 2 * dt, dt=dt, forces=forces)

    m = min(args.sequential_sample, n)
    t0 = time.perf_counter()
    for k in range(m):
        kd.simulate(model, Q0[k], V0[k], t_final, method="rk4", dt=dt, forces=forces,
                    progress=False)
    seq = m / (time.perf_counter() - t0)
    print(f"sequential kd.simulate     {seq:10.1f} runs/s   (timed on {m} runs)")
    # without force elements kd.simulate takes its compiled RK4 loop: the fastest single run
    kd.simulate(model, Q0[0], V0[0], 2 * dt, method="rk4", dt=dt, progress=False)
    t0 = time.perf_counter()
    for k in range(m):
        kd.simulate(model, Q0[k], V0[k], t_final, method="rk4", dt=dt, progress=False)
    seq_c = m / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    kd.simulate_batch(model, Q0, V0, t_final, dt=dt)
    bat_c = n / (time.perf_counter() - t0)
    print(f"  no forces: sequential (compiled loop) {seq_c:8.1f} runs/s, batched "
          f"{bat_c:8.1f} runs/s, ratio {bat_c / seq_c:5.1f}x")

    t0 = time.perf_counter()
    b = kd.simulate_batch(model, Q0, V0, t_final, dt=dt, forces=forces)
    bat = n / (time.perf_counter() - t0)
    print(f"batched kd.simulate_batch  {bat:10.1f} runs/s   ratio to sequential "
          f"{bat / seq:6.1f}x (target >= 10x)")
    ref = kd.simulate(model, Q0[3], V0[3], t_final, method="rk4", dt=dt, forces=forces,
                      progress=False)
    print(f"  run 3 batched vs single: max |Δq| = {np.abs(b.q[3, -1] - ref.q[-1]).max():.1e}")

    from distributed import Client, LocalCluster

    for workers in (1, 2):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=":0")
        client = Client(cluster)
        out = tempfile.mkdtemp(prefix="kd_sweep_")
        try:
            client.run(lambda: kd.simulate(model, Q0[0], V0[0], 2 * dt, method="rk4", dt=dt,
                                           progress=False))  # warm the workers
            t0 = time.perf_counter()
            res = kd.sweep(SCENARIO, {"initial.seed": list(range(n))}, out=out,
                           scheduler=client, progress=False)
            wall = time.perf_counter() - t0
        finally:
            client.close()
            cluster.close()
            shutil.rmtree(out, ignore_errors=True)
        busy = sum(r["wall_time"] for r in res.rows)
        overhead = (wall * workers - busy) / n
        print(f"dask sweep, {workers} worker(s)   {n / wall:10.1f} runs/s   overhead per run "
              f"{1e3 * overhead:.2f} ms (target < 5 ms), {len(res.failed)} failed")

    print("batched scaling with N:")
    for N in (10, 100, 1000, 10000):
        Q = rng.uniform(-1, 1, (N, 7))
        V = np.zeros((N, 7))
        t0 = time.perf_counter()
        kd.simulate_batch(model, Q, V, t_final, dt=dt, forces=forces, save_every=steps)
        el = time.perf_counter() - t0
        print(f"  N = {N:6d}: {el:8.3f} s, {N / el:10.1f} runs/s, "
              f"{1e6 * el / (N * steps):6.2f} µs per run-step")


if __name__ == "__main__":
    main()
