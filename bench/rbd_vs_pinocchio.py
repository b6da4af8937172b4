"""RNEA, CRBA and ABA: kanedyn against Pinocchio, side by side in one process.

    .venv/bin/python bench/rbd_vs_pinocchio.py [--quick] [--no-compile] [--centroidal]
                                               [--frames-only]

Loads the robot descriptions shipped in ``kanedyn/data/robots`` into both
libraries (``kd.load_urdf`` and ``pin.buildModelFromUrdf``, a free-flyer root
for the floating-base cases), checks that both give the same τ, M and q̈ to
1e-9 on random states, then times each call from Python, interleaving the two
libraries so that machine load hits both alike, and prints µs per call and the
ratio kanedyn / Pinocchio (≤ 1 means kanedyn is no slower). Then a batch of
10,000 states: one batched kanedyn call against a Python loop over Pinocchio.
Last, in subprocesses, the first-call compile time with a cold numba cache
and the load time with a warm one. The frame rows (issue 14; alone with
``--frames-only``): the Jacobian and the classical acceleration of each robot's
end frame (a merged fixed link such as the panda's TCP), see ``frame_calls``.

Conventions mapped between the two: Pinocchio's free flyer has
q = (p, quaternion x, y, z, w) and v = (v_O, ω); kanedyn's free joint has
q = (p, quaternion w, x, y, z) and v = (ω, v_O) — both in body coordinates.
Joints are matched by name. Pinocchio's CRBA fills the upper triangle only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import timeit

import numpy as np
import pinocchio as pin

import kanedyn as kd
from kanedyn.model.urdf import robot_path

CASES = [("panda", False), ("ur5", False), ("humanoid", False), ("humanoid", True),
         ("quadruped", False), ("quadruped", True), ("chain20", False)]


class Pair:
    """One robot in both libraries, with the index maps between their q and v."""

    def __init__(self, name: str, floating: bool):
        path = str(robot_path(name))
        self.name = f"{name}{' (floating)' if floating else ''}"
        self.kd = kd.load_urdf(path, floating_base=floating)
        if floating:
            self.pin = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        else:
            self.pin = pin.buildModelFromUrdf(path)
        self.data = self.pin.createData()
        m, pm = self.kd, self.pin
        assert (m.nq, m.nv) == (pm.nq, pm.nv), (m.nq, m.nv, pm.nq, pm.nv)
        # q_pin = q_kd[pq], v_pin = v_kd[pv]
        pq = np.empty(m.nq, dtype=int)
        pv = np.empty(m.nv, dtype=int)
        for b in m.bodies:
            name_j = b.joint.name
            jid = pm.getJointId(name_j) if name_j != "root_joint" else 1
            jp = pm.joints[jid]
            iq, iv = b.iq.start, b.iv.start
            if b.joint.kind == "free":
                pq[jp.idx_q:jp.idx_q + 7] = iq + np.array([0, 1, 2, 4, 5, 6, 3])
                pv[jp.idx_v:jp.idx_v + 6] = iv + np.array([3, 4, 5, 0, 1, 2])
            else:
                assert jp.nq == b.joint.nq and jp.nv == b.joint.nv, name_j
                pq[jp.idx_q:jp.idx_q + jp.nq] = np.arange(iq, iq + b.joint.nq)
                pv[jp.idx_v:jp.idx_v + jp.nv] = np.arange(iv, iv + b.joint.nv)
        self.pq, self.pv = pq, pv

    def random_state(self, rng):
        q = kd.random_configuration(self.kd, rng)
        v, a = rng.normal(size=(2, self.kd.nv))
        return q, v, a

    def to_pin(self, q, v, a):
        return q[self.pq].copy(), v[self.pv].copy(), a[self.pv].copy()

    def from_pin_v(self, x):
        out = np.empty_like(x)
        out[self.pv] = x
        return out

    def from_pin_M(self, M):
        M = np.triu(M) + np.triu(M, 1).T
        out = np.empty_like(M)
        out[np.ix_(self.pv, self.pv)] = M
        return out


def check(pair: Pair, rng, n: int = 5) -> float:
    """Largest relative difference of τ, M, q̈ between the two libraries."""
    worst = 0.0
    m, pm, d = pair.kd, pair.pin, pair.data
    for _ in range(n):
        q, v, a = pair.random_state(rng)
        qp, vp, ap = pair.to_pin(q, v, a)
        tau = kd.rnea(m, q, v, a)
        tau_p = pair.from_pin_v(pin.rnea(pm, d, qp, vp, ap))
        M = kd.crba(m, q)
        M_p = pair.from_pin_M(pin.crba(pm, d, qp).copy())
        qdd = kd.aba(m, q, v, tau)
        qdd_p = pair.from_pin_v(pin.aba(pm, d, qp, vp, tau[pair.pv]))
        for x, y in ((tau, tau_p), (M, M_p), (qdd, qdd_p), (qdd, a)):
            worst = max(worst, float(np.abs(x - y).max() / max(1.0, np.abs(y).max())))
    return worst


def per_call(f, number: int, repeat: int) -> float:
    """Best-of-``repeat`` time per call in µs (the minimum is the least disturbed)."""
    return min(timeit.repeat(f, number=number, repeat=repeat)) / number * 1e6


def time_pair(pair: Pair, rng, number: int, repeat: int) -> dict:
    m, pm, d = pair.kd, pair.pin, pair.data
    q, v, a = pair.random_state(rng)
    qp, vp, ap = pair.to_pin(q, v, a)
    kd.rnea(m, q, v, a), kd.crba(m, q), kd.aba(m, q, v, a)  # compile / load outside timing
    calls = {
        "RNEA": (lambda: kd.rnea(m, q, v, a), lambda: pin.rnea(pm, d, qp, vp, ap)),
        "CRBA": (lambda: kd.crba(m, q), lambda: pin.crba(pm, d, qp)),
        "ABA": (lambda: kd.aba(m, q, v, a), lambda: pin.aba(pm, d, qp, vp, ap)),
    }
    out = {}
    for algo, (fk, fp) in calls.items():
        tk, tp = [], []
        for _ in range(repeat):  # interleave: load on the machine hits both alike
            tk.append(per_call(fk, number, 1))
            tp.append(per_call(fp, number, 1))
        out[algo] = (min(tk), min(tp))
    return out


def breakdown(pair: Pair, rng, number: int, repeat: int) -> list[tuple[str, float]]:
    """Where the time of one kd.rnea call goes: the public call (the C fast path of
    _fastcall.c), with out=, the Python wrapper behind it (what runs without the C
    extension, or with KANEDYN_NO_C=1), the bare compiled entry point that wrapper
    ends in (no numba dispatcher), the same kernel through numba's dispatcher, and an
    empty compiled function of the same signature called both ways (the cost of
    passing five arrays)."""
    from numba import njit

    from kanedyn.dynamics import kernels
    from kanedyn.dynamics._dispatch import K
    from kanedyn.dynamics.flat import flatten

    @njit(kernels.SIGNATURES["rnea_f"], _nrt=False)
    def empty(buf, q, v, a, tau):
        return 0

    empty_entry = empty.overloads[empty.signatures[0]].entry_point
    m, pm, d = pair.kd, pair.pin, pair.data
    q, v, a = pair.random_state(rng)
    qp, vp, ap = pair.to_pin(q, v, a)
    try:  # the buffer the kernels write into: the calling thread's Data's
        from kanedyn.dynamics.data import data_of

        buf = data_of(m, None).buf
    except ImportError:  # (a tree from before the Model / Data split)
        buf = flatten(m).buf
    tau = np.empty(m.nv)
    entry, disp = K.rnea_f, kernels.ready("rnea_f")
    wrapper = getattr(kd.rnea, "__wrapped__", kd.rnea)
    rows = [("kd.rnea(model, q, v, a)", lambda: kd.rnea(m, q, v, a)),
            ("kd.rnea(..., out=tau)", lambda: kd.rnea(m, q, v, a, out=tau)),
            ("Python wrapper (kd.rnea.__wrapped__)", lambda: wrapper(m, q, v, a)),
            ("entry point rnea_f(buf, q, v, a, tau)", lambda: entry(buf, q, v, a, tau)),
            ("the same through numba's dispatcher", lambda: disp(buf, q, v, a, tau)),
            ("empty function, entry point", lambda: empty_entry(buf, q, v, a, tau)),
            ("empty function, dispatcher", lambda: empty(buf, q, v, a, tau)),
            ("pin.rnea(model, data, q, v, a)", lambda: pin.rnea(pm, d, qp, vp, ap))]
    best = {name: np.inf for name, _ in rows}
    for _ in range(repeat):
        for name, f in rows:
            best[name] = min(best[name], per_call(f, number, 1))
    return list(best.items())


def batched(pair: Pair, rng, N: int, repeat: int = 5) -> dict:
    m, pm, d = pair.kd, pair.pin, pair.data
    Q = np.array([kd.random_configuration(m, rng) for _ in range(N)])
    V, A = rng.normal(size=(2, N, m.nv))
    Qp, Vp, Ap = Q[:, pair.pq].copy(), V[:, pair.pv].copy(), A[:, pair.pv].copy()
    kd.rnea(m, Q[:2], V[:2], A[:2]), kd.crba(m, Q[:2]), kd.aba(m, Q[:2], V[:2], A[:2])
    out = {}
    jobs = {
        "RNEA": (lambda: kd.rnea(m, Q, V, A),
                 lambda: [pin.rnea(pm, d, Qp[k], Vp[k], Ap[k]).copy() for k in range(N)]),
        "CRBA": (lambda: kd.crba(m, Q),
                 lambda: [pin.crba(pm, d, Qp[k]).copy() for k in range(N)]),
        "ABA": (lambda: kd.aba(m, Q, V, A),
                lambda: [pin.aba(pm, d, Qp[k], Vp[k], Ap[k]).copy() for k in range(N)]),
    }
    import numba

    nt = numba.get_num_threads()
    for algo, (fk, fp) in jobs.items():
        tk = tp = t1 = np.inf
        # one untimed full-size run of each first: the first touch of a batch's worth
        # of memory in a process (and, in a VM, of pages the host has taken back)
        # costs several times the arithmetic, for both libraries
        fk(), fp()
        for _ in range(repeat):  # interleaved, best of each
            tk = min(tk, timeit.timeit(fk, number=1))
            tp = min(tp, timeit.timeit(fp, number=1))
            numba.set_num_threads(1)
            t1 = min(t1, timeit.timeit(fk, number=1))
            numba.set_num_threads(nt)
        out[algo] = (N / tk, N / tp, N / t1)
    return out


# --- frames (issue 14): frame Jacobian and classical acceleration ----------------------

def end_frame(pair: Pair) -> str:
    """The robot's end-effector-like frame: its last merged fixed link on a moving body
    (a TCP, a sensor), else its last body; a frame both libraries know by name."""
    m = pair.kd
    merged = [n for n, f in m.frames.items()
              if f.body >= 0 and n not in m.body_names and pair.pin.existFrame(n)]
    return merged[-1] if merged else m.body_names[-1]


def frame_calls(pair: Pair, q, v, a, name: str) -> dict:
    """Per call, both sides in LOCAL_WORLD_ALIGNED about the frame's origin. Jacobian:
    ``kd.frame_jacobian`` (6 x nv array) against ``pin.computeJointJacobians(q)`` then
    ``pin.getFrameJacobian`` (6 x nv array). Classical acceleration: ``kd.frame_acceleration``
    (6-vector) against ``pin.forwardKinematics(q, v, a)`` then
    ``pin.getFrameClassicalAcceleration`` (a pin.Motion, not converted to an array)."""
    m, pm, d = pair.kd, pair.pin, pair.data
    qp, vp, ap = pair.to_pin(q, v, a)
    fid, LWA = pm.getFrameId(name), pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    lwa = "local_world_aligned"

    def pin_jac():
        pin.computeJointJacobians(pm, d, qp)
        return pin.getFrameJacobian(pm, d, fid, LWA)

    def pin_acc():
        pin.forwardKinematics(pm, d, qp, vp, ap)
        return pin.getFrameClassicalAcceleration(pm, d, fid, LWA)

    return {"frame J": (lambda: kd.frame_jacobian(m, q, name, lwa), pin_jac),
            "frame acc": (lambda: kd.frame_acceleration(m, q, v, a, name, lwa), pin_acc)}


def frame_check(pair: Pair, rng, n: int = 5) -> float:
    """Largest relative difference of the frame Jacobian and classical acceleration."""
    name, worst = end_frame(pair), 0.0
    for _ in range(n):
        q, v, a = pair.random_state(rng)
        calls = frame_calls(pair, q, v, a, name)
        J, Jp = calls["frame J"][0](), calls["frame J"][1]()
        Jp = np.concatenate([Jp[3:], Jp[:3]])  # pin rows [v; ω]
        acc, accp = calls["frame acc"][0](), calls["frame acc"][1]()
        accp = np.concatenate([accp.angular, accp.linear])
        for x, y in ((J[:, pair.pv], Jp), (acc, accp)):
            worst = max(worst, float(np.abs(x - y).max() / max(1.0, np.abs(y).max())))
    return worst


def time_frames(pair: Pair, rng, number: int, repeat: int) -> dict:
    q, v, a = pair.random_state(rng)
    calls = frame_calls(pair, q, v, a, end_frame(pair))
    out = {}
    for algo, (fk, fp) in calls.items():
        fk(), fk(), fp()  # compile / load and fill the frame's cache outside timing
        tk, tp = [], []
        for _ in range(repeat):  # interleaved, as time_pair
            tk.append(per_call(fk, number, 1))
            tp.append(per_call(fp, number, 1))
        out[algo] = (min(tk), min(tp))
    return out


def batched_frames(pair: Pair, rng, N: int, repeat: int = 5) -> dict:
    """One batched kanedyn call on N states against a Python loop of the two Pinocchio
    calls of :func:`frame_calls` per state (results kept)."""
    import numba

    m, pm, d = pair.kd, pair.pin, pair.data
    name, lwa = end_frame(pair), "local_world_aligned"
    fid, LWA = pm.getFrameId(name), pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    Q = np.array([kd.random_configuration(m, rng) for _ in range(N)])
    V, A = rng.normal(size=(2, N, m.nv))
    Qp, Vp, Ap = Q[:, pair.pq].copy(), V[:, pair.pv].copy(), A[:, pair.pv].copy()

    def pin_jac():
        out = []
        for k in range(N):
            pin.computeJointJacobians(pm, d, Qp[k])
            out.append(pin.getFrameJacobian(pm, d, fid, LWA))
        return out

    def pin_acc():
        out = []
        for k in range(N):
            pin.forwardKinematics(pm, d, Qp[k], Vp[k], Ap[k])
            out.append(pin.getFrameClassicalAcceleration(pm, d, fid, LWA))
        return out

    jobs = {"frame J": (lambda: kd.frame_jacobian(m, Q, name, lwa), pin_jac),
            "frame acc": (lambda: kd.frame_acceleration(m, Q, V, A, name, lwa), pin_acc)}
    nt = numba.get_num_threads()
    out = {}
    for algo, (fk, fp) in jobs.items():
        fk(), fp()  # first touch, compile (as batched)
        tk = tp = t1 = np.inf
        for _ in range(repeat):
            tk = min(tk, timeit.timeit(fk, number=1))
            tp = min(tp, timeit.timeit(fp, number=1))
            numba.set_num_threads(1)
            t1 = min(t1, timeit.timeit(fk, number=1))
            numba.set_num_threads(nt)
        out[algo] = (N / tk, N / tp, N / t1)
    return out


def frames_section(pairs: list[Pair], rng, number: int, repeat: int, N: int) -> None:
    import numba

    print("\nframes (issue 14), LOCAL_WORLD_ALIGNED, frame about its own origin:")
    for p in pairs:
        err = frame_check(p, rng)
        print(f"  {p.name:22s} {end_frame(p):18s} agreement {err:.1e}  "
              f"{'ok' if err < 1e-9 else 'FAIL'}")
        if err >= 1e-9:
            raise SystemExit(f"{p.name}: frame quantities disagree ({err:.2e})")
    print(f"  per call from Python, µs (best of {repeat} x {number}; ratio = kanedyn/pin); "
          "pin: computeJointJacobians + getFrameJacobian, forwardKinematics(q, v, a) + "
          "getFrameClassicalAcceleration")
    for p in pairs:
        t = time_frames(p, rng, number, repeat)
        cells = [f"{a} {t[a][0]:6.2f} {t[a][1]:6.2f} {t[a][0] / t[a][1]:5.2f}" for a in t]
        print(f"  {p.name:22s} {p.kd.nv:3d} | " + " | ".join(cells))
    nt = numba.get_num_threads()
    print(f"  batched over {N} states, million states per second: kanedyn ({nt} threads, "
          "and 1) vs a Python loop over Pinocchio")
    for p in pairs:
        b = batched_frames(p, rng, N)
        cells = [f"{a} {b[a][0] / 1e6:5.2f} ({b[a][2] / 1e6:4.2f}) vs {b[a][1] / 1e6:4.2f} "
                 f"= {b[a][0] / b[a][1]:4.1f}x" for a in b]
        print(f"  {p.name:22s} " + " | ".join(cells))


COMPILE_SCRIPT = textwrap.dedent("""
    import time
    t0 = time.perf_counter()
    import numpy as np
    import kanedyn as kd
    from kanedyn.model.urdf import robot_path
    m = kd.load_urdf(str(robot_path("panda")))
    q, v = kd.neutral(m), np.zeros(m.nv)
    t1 = time.perf_counter()
    kd.rnea(m, q, v, v); kd.crba(m, q); kd.aba(m, q, v, v)
    t2 = time.perf_counter()
    Q, V = np.tile(q, (4, 1)), np.zeros((4, m.nv))
    kd.rnea(m, Q, V, V); kd.crba(m, Q); kd.aba(m, Q, V, V)
    t3 = time.perf_counter()
    print(t1 - t0, t2 - t1, t3 - t2)
""")


def compile_times() -> tuple[list[float], list[float]]:
    """(cold, warm) seconds: [import + load, first single-state calls, first batched calls]."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        res = []
        for _ in range(2):
            r = subprocess.run([sys.executable, "-c", COMPILE_SCRIPT], env=env, check=True,
                               capture_output=True, text=True)
            res.append([float(x) for x in r.stdout.split()])
    return res[0], res[1]

def centroidal_pair(p: Pair, rng, number: int, repeat: int, N: int) -> tuple:
    """A_G of one robot: (worst relative difference, µs per call kd and pin, states per
    second batched: kd on all threads, kd on one, the Pinocchio loop)."""
    import numba

    swap = np.array([3, 4, 5, 0, 1, 2])  # Pinocchio's Ag: linear rows first
    m, pm, d = p.kd, p.pin, p.data
    worst = 0.0
    for _ in range(5):
        q, v, _ = p.random_state(rng)
        qp, vp, _ = p.to_pin(q, v, v)
        A = kd.centroidal_momentum_matrix(m, q)[swap][:, p.pv]
        Ap = pin.ccrba(pm, d, qp, vp)
        worst = max(worst, float(np.abs(A - Ap).max() / max(1.0, np.abs(Ap).max())))
    if worst >= 1e-9:
        raise SystemExit(f"{p.name}: A_G of kanedyn and Pinocchio disagree ({worst:.2e})")
    tk = tp = np.inf
    for _ in range(repeat):  # interleaved, best of each
        tk = min(tk, per_call(lambda: kd.centroidal_momentum_matrix(m, q), number, 1))
        tp = min(tp, per_call(lambda: pin.ccrba(pm, d, qp, vp), number, 1))
    Q = np.array([kd.random_configuration(m, rng) for _ in range(N)])
    V = rng.normal(size=(N, m.nv))
    Qp, Vp = Q[:, p.pq].copy(), V[:, p.pv].copy()

    def fk():
        return kd.centroidal_momentum_matrix(m, Q)

    def fp():
        return [pin.ccrba(pm, d, Qp[k], Vp[k]).copy() for k in range(N)]

    fk(), fp()  # the first touch of a batch's memory, untimed (see batched())
    nt = numba.get_num_threads()
    bk = bp = b1 = np.inf
    for _ in range(5):
        bk = min(bk, timeit.timeit(fk, number=1))
        bp = min(bp, timeit.timeit(fp, number=1))
        numba.set_num_threads(1)
        b1 = min(b1, timeit.timeit(fk, number=1))
        numba.set_num_threads(nt)
    return worst, tk, tp, N / bk, N / b1, N / bp


def centroidal_rows(pairs: list[Pair], rng, number: int, repeat: int, N: int) -> None:
    """The centroidal momentum matrix: ``kd.centroidal_momentum_matrix(model, q)`` against
    ``pin.ccrba(model, data, q, v)`` (which fills data.Ag, and data.hg besides)."""
    import numba

    print(f"\ncentroidal momentum matrix A_G, kd.centroidal_momentum_matrix vs pin.ccrba: "
          f"agreement; per call from Python, µs (best of {repeat} x {number}); batched over "
          f"{N} states, million states per second (kanedyn on {numba.get_num_threads()} "
          "threads, and on 1; Pinocchio a Python loop)")
    print(f"  {'robot':22s} {'nv':>3s} {'agree':>7s} | {'kd':>6s} {'pin':>6s} {'ratio':>6s} | "
          f"{'kd':>5s} {'(1)':>6s} {'pin':>5s} {'ratio':>6s}")
    for p in pairs:
        worst, tk, tp, bk, b1, bp = centroidal_pair(p, rng, number, repeat, N)
        print(f"  {p.name:22s} {p.kd.nv:3d} {worst:7.1e} | {tk:6.2f} {tp:6.2f} {tk / tp:6.2f} | "
              f"{bk / 1e6:5.2f} ({b1 / 1e6:4.2f}) {bp / 1e6:5.2f} {bk / bp:5.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, smaller batch")
    ap.add_argument("--no-compile", action="store_true", help="skip the compile-time runs")
    ap.add_argument("--centroidal", action="store_true",
                    help="only the centroidal momentum matrix rows")
    ap.add_argument("--frames-only", action="store_true",
                    help="only the frame rows (frame Jacobian, classical acceleration)")
    args = ap.parse_args()
    number, repeat, N = (2000, 5, 2000) if args.quick else (20000, 7, 10000)
    rng = np.random.default_rng(0)
    import numba

    print(f"kanedyn {kd.__version__}, pinocchio {pin.__version__}, numba {numba.__version__}, "
          f"numpy {np.__version__}, {os.cpu_count()} cores, {numba.get_num_threads()} threads")
    c_path = hasattr(kd.rnea, "__wrapped__")
    print("single-state calls: " + ("the C fast path of _fastcall.c" if c_path else
                                    "the Python wrappers (no C extension, or KANEDYN_NO_C=1)"))
    print("load average at start (1, 5, 15 min): {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    pairs = [Pair(n, f) for n, f in CASES]
    if args.centroidal:
        centroidal_rows(pairs, rng, number, repeat, N)
        return
    if args.frames_only:
        return frames_section(pairs, rng, number, repeat, N)
    print("\nagreement (max relative difference of tau, M, qdd; and ABA(RNEA(a)) = a):")
    for p in pairs:
        err = check(p, rng)
        print(f"  {p.name:22s} nv={p.kd.nv:3d}  {err:.1e}  {'ok' if err < 1e-9 else 'FAIL'}")
        if err >= 1e-9:
            raise SystemExit(f"{p.name}: kanedyn and Pinocchio disagree ({err:.2e})")

    print(f"\nper call from Python, µs (best of {repeat} x {number} calls; ratio = kanedyn/pin)")
    heads = " | ".join(f"{a:^22s}" for a in ("RNEA", "CRBA", "ABA"))
    print(f"  {'robot':22s} {'nv':>3s} | " + heads)
    print(f"  {'':22s} {'':3s} | " + " | ".join(f"{'kd':>6s} {'pin':>6s} {'ratio':>6s}  "
                                               for _ in range(3)))
    for p in pairs:
        t = time_pair(p, rng, number, repeat)
        cells = [f"{t[a][0]:6.2f} {t[a][1]:6.2f} {t[a][0] / t[a][1]:6.2f}  " for a in t]
        print(f"  {p.name:22s} {p.kd.nv:3d} | " + " | ".join(cells))

    print(f"\nwhere the time of one call goes ({pairs[0].name}, RNEA), µs:")
    for name, t in breakdown(pairs[0], rng, number, repeat):
        print(f"  {name:40s} {t:6.2f}")

    nt = numba.get_num_threads()
    print(f"\nbatched over {N} states, million states per second: kanedyn one call on {nt} "
          f"threads (and on 1), Pinocchio a Python loop; ratio = kanedyn ({nt}) / pin")
    for p in pairs:
        b = batched(p, rng, N)
        cells = [f"{a} {b[a][0] / 1e6:5.2f} ({b[a][2] / 1e6:4.2f}) vs {b[a][1] / 1e6:4.2f} "
                 f"= {b[a][0] / b[a][1]:4.1f}x" for a in b]
        print(f"  {p.name:22s} " + " | ".join(cells))
    print(f"  (numba threading layer: {numba.threading_layer()})")
    centroidal_rows(pairs, rng, number, repeat, N)
    frames_section(pairs, rng, number, repeat, N)

    if not args.no_compile:
        cold, warm = compile_times()
        print("\nnumba compilation (panda; subprocess, fresh NUMBA_CACHE_DIR), seconds:")
        print(f"  cold cache: import+load {cold[0]:.2f}, first rnea/crba/aba {cold[1]:.2f}, "
              f"first batched {cold[2]:.2f}")
        print(f"  warm cache: import+load {warm[0]:.2f}, first rnea/crba/aba {warm[1]:.2f}, "
              f"first batched {warm[2]:.2f}")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print("\nload average at end (1, 5, 15 min): {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    print(f"(total {time.perf_counter() - t0:.0f} s)")
