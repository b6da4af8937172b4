"""The batched kernels' lane blocks against the per-state kernels they replaced.

``kd.rnea``, ``kd.crba`` and ``kd.aba`` on a batch run eight states at once in vector
lanes (``kernels.rnea_lanes``, ``crba_lanes``, ``aba_lanes``). This script times them
against the per-state kernels (``rnea_core``, ``crba_core``, ``aba_core`` in a
parallel loop over tasks of 32 states, as the batched kernels were before), both
writing into a reused output array (so that the figures are the kernels' time, not
the fresh result's page faults), in one process, alternating, best of 15, on 1
and on all threads. It checks that both give the same bits first.

Run: ``.venv/bin/python bench/batch_lanes.py``
"""

from __future__ import annotations

import os
import time

import numba
import numpy as np
from numba import njit, prange

import kanedyn as kd
from kanedyn.dynamics import kernels as K
from kanedyn.dynamics.flat import flatten
from kanedyn.model.urdf import robot_path

CASES = [("panda", False), ("ur5", False), ("humanoid", False), ("humanoid", True),
         ("quadruped", False), ("quadruped", True), ("chain20", False)]
N = 10000


@njit(cache=True, parallel=True)
def rnea_per_state(data, Q, V, A, out):
    N, nb = Q.shape[0], data.shape[0] - 1
    for t in prange((N + 31) // 32):
        X = np.empty((nb, 12))
        w = np.empty((3 * nb + 2, 6))
        for k in range(32 * t, min(N, 32 * t + 32)):
            K.rnea_core(data, Q[k], V[k], A[k], data, True, True, False, out[k], X, w)


@njit(cache=True, parallel=True)
def crba_per_state(data, Q, out):
    N, nb = Q.shape[0], data.shape[0] - 1
    for t in prange((N + 31) // 32):
        X, P, F, A = np.empty((nb, 12)), np.empty((nb, 13)), np.empty((2, 6)), np.empty(3 * nb)
        for k in range(32 * t, min(N, 32 * t + 32)):
            K.crba_core(data, Q[k], out[k], X, P, F, A)


@njit(cache=True, parallel=True)
def aba_per_state(data, Q, V, T, out):
    N, nb, nv = Q.shape[0], data.shape[0] - 1, out.shape[1]
    for t in prange((N + 31) // 32):
        X, X0, S0 = np.empty((nb, 12)), np.empty((nb, 12)), np.empty((nv, 6))
        w, IA = np.empty((3 * nb + 8, 6)), np.empty((nb, 21))
        LW, y = np.empty((12 * nb, 6)), np.empty(nv)
        for k in range(32 * t, min(N, 32 * t + 32)):
            K.aba_core(data, Q[k], V[k], T[k], data, False, out[k], X, X0, S0, w, IA, LW, y)


def compare(name: str, floating: bool, rng, nt: int) -> dict:
    m = kd.load_urdf(str(robot_path(name)), floating_base=floating)
    d = flatten(m).data
    Q = np.array([kd.random_configuration(m, rng) for _ in range(N)])
    V, A = rng.normal(size=(2, N, m.nv))
    o1, o2 = np.empty((N, m.nv)), np.empty((N, m.nv))
    M1, M2 = np.empty((N, m.nv, m.nv)), np.empty((N, m.nv, m.nv))
    jobs = {
        "RNEA": (lambda: rnea_per_state(d, Q, V, A, o1), lambda: kd.rnea(m, Q, V, A, out=o2),
                 o1, o2),
        "CRBA": (lambda: crba_per_state(d, Q, M1), lambda: kd.crba(m, Q, out=M2), M1, M2),
        "ABA": (lambda: aba_per_state(d, Q, V, A, o1), lambda: kd.aba(m, Q, V, A, out=o2),
                o1, o2),
    }
    out = {}
    for algo, (old, new, r_old, r_new) in jobs.items():
        old(), new()
        if not np.array_equal(r_old, r_new):
            raise SystemExit(f"{name} {algo}: lanes and per-state kernels differ")
        cells = []
        for threads in (1, nt):
            numba.set_num_threads(threads)
            best = [np.inf, np.inf]
            for _ in range(15):
                for j, f in enumerate((old, new)):
                    t0 = time.perf_counter()
                    f()
                    best[j] = min(best[j], time.perf_counter() - t0)
            cells.append(f"{best[0] / N * 1e6:9.2f} {best[1] / N * 1e6:6.2f} "
                         f"{best[0] / best[1]:5.2f}")
        numba.set_num_threads(nt)
        out[algo] = cells
    return out


def main() -> None:
    nt = numba.get_num_threads()
    rng = np.random.default_rng(0)
    print(f"kanedyn {kd.__version__}, numba {numba.__version__}, {os.cpu_count()} cores; "
          f"µs per state over {N} states into a reused out=, best of 15; "
          f"1 thread | {nt} threads")
    print("load average at start: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    print(f"  {'robot':22s} {'algo':5s} {'per state':>9s} {'lanes':>6s} {'x':>5s} | "
          f"{'per state':>9s} {'lanes':>6s} {'x':>5s}")
    for name, floating in CASES:
        for algo, cells in compare(name, floating, rng, nt).items():
            label = f"{name}{' (floating)' if floating else ''}"
            print(f"  {label:22s} {algo:5s} " + " | ".join(cells))
    print("load average at end: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
