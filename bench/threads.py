"""Single-state calls from a pool of Python threads, each with its own ``kd.Data``.

    .venv/bin/python bench/threads.py [--calls N] [--threads 1,2,4]

The compiled kernels run without the GIL (nogil), and each thread's scratch space is
its own Data, so threads calling rnea / crba / aba on independent states can overlap.
What is left serial is the Python around each call (the wrapper, the allocation of the
result), so the gain grows with the model: for each model and thread count, prints the
wall time of ``calls`` calls shared out among the threads, the calls per second, and
the speed-up against one thread. The load of the machine is printed with it (a shared
machine's other work takes cores away).

Also times, in one thread, the release of the GIL around a kernel call: the same call
with and without ``data=`` (with it, the Python wrapper calls the nogil entry point;
without it, the C front end, which releases the GIL only for models of at least
``RELEASE_GIL_NB`` bodies, _fastcall.c).
"""

from __future__ import annotations

import argparse
import os
import threading
import time

import numpy as np

import kanedyn as kd


def _models():
    return [("panda (nb 9)", kd.load_robot("panda")),
            ("tree30 floating (nb 30)", kd.models.random_tree(30, 1, floating_base=True)),
            ("tree100 (nb 100)", kd.models.random_tree(100, 2))]


def _states(model, n, seed):
    rng = np.random.default_rng(seed)
    q = np.array([kd.random_configuration(model, rng) for _ in range(n)])
    return q, rng.standard_normal((n, model.nv)), rng.standard_normal((n, model.nv))


def _run(model, algorithm, n_threads, calls):
    per = calls // n_threads
    states = [_states(model, min(per, 64), k) for k in range(n_threads)]
    start = threading.Barrier(n_threads + 1)
    done = threading.Barrier(n_threads + 1)

    def work(k):
        q, v, a = states[k]
        m = q.shape[0]
        d = kd.Data(model)
        algorithm(model, q[0], v[0], a[0], d)  # (warm)
        start.wait()
        for i in range(per):
            j = i % m
            algorithm(model, q[j], v[j], a[j], d)
        done.wait()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    done.wait()
    wall = time.perf_counter() - t0
    for t in threads:
        t.join()
    return wall, per * n_threads


ALGORITHMS = {
    "rnea": lambda m, q, v, a, d: kd.rnea(m, q, v, a, data=d),
    "crba": lambda m, q, v, a, d: kd.crba(m, q, data=d),
    "aba": lambda m, q, v, a, d: kd.aba(m, q, v, a, data=d),
}


def _per_call(f, reps=20000):
    best = np.inf
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            f()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=40000, help="calls per model and algorithm")
    ap.add_argument("--threads", default="1,2,4", help="thread counts, comma-separated")
    args = ap.parse_args()
    counts = [int(x) for x in args.threads.split(",")]
    print(f"cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    for name, model in _models():
        for alg, f in ALGORITHMS.items():
            base = None
            row = []
            for n in counts:
                wall, calls = _run(model, f, n, args.calls)
                rate = calls / wall
                base = base or rate
                row.append(f"{n} thr {rate / 1e3:7.1f} k/s x{rate / base:4.2f}")
            print(f"{name:26s} {alg:5s} " + " | ".join(row))
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("\none thread, µs per call: C front end (no data=) | Python wrapper with data=")
    for name, model in _models():
        q, v, a = (x[0] for x in _states(model, 1, 0))
        d = kd.Data(model)
        c = _per_call(lambda: kd.rnea(model, q, v, a))  # noqa: B023
        p = _per_call(lambda: kd.rnea(model, q, v, a, data=d))  # noqa: B023
        print(f"{name:26s} rnea {c:6.3f} | {p:6.3f}")


if __name__ == "__main__":
    main()
