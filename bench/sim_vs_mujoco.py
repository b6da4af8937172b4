"""Simulation against MuJoCo: cost per step and energy drift of every method, side by side.

A 7- and a 20-link 3D hinge chain (``kd.models.pendulum_chain(n, planar=False,
radius=0.05)``: unit rods of 1 kg, axes alternating y, x) and the same chain in
MuJoCo from an MJCF string (explicit inertials, contacts and every passive
force off), dt = 1e-3 for 10 s from the same initial state. MuJoCo runs its
RK4 and its semi-implicit Euler. Energy drift = max |E(t) − E(0)| / |E(0)|.
MuJoCo and our compiled rk4, rk4+proj, midpoint (+proj), gauss4, verlet: best of 3
runs after a warm-up; the other methods: one run after a warm-up.

Then a work–precision diagram on the 7-link chain (1 s, several dt): error of
q, v at t = 1 s against a tight reference (our dopri5 at rtol 1e-13), against
the CPU time of the run, for every method and for MuJoCo — written to
``bench/sim_vs_mujoco.png``.

    .venv/bin/python bench/sim_vs_mujoco.py            # the full run (a few minutes)
    .venv/bin/python bench/sim_vs_mujoco.py --quick    # 1 s instead of 10 s
    .venv/bin/python bench/sim_vs_mujoco.py --methods midpoint,gauss4,verlet,midpoint+proj
                                                       # only these rows (labels as printed)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import mujoco
import numpy as np

import kanedyn as kd

RADIUS = 0.05


def mjcf_chain(n: int, integrator: str, dt: float, length: float = 1.0,
               radius: float = RADIUS, joint_attrs=None) -> str:
    """The chain of pendulum_chain(n, planar=False, length, radius) in MJCF (its radius
    relative to the length); ``joint_attrs[i]``: more attributes of joint i."""
    m, L, r = 1.0, length, radius * length
    across = m * (3 * r * r + L * L) / 12.0
    along = 0.5 * m * r * r
    body = ""
    for i in reversed(range(n)):
        axis = "0 1 0" if i % 2 == 0 else "1 0 0"
        pos = "0 0 0" if i == 0 else f"0 0 {-L}"
        body = (f'<body name="link{i + 1}" pos="{pos}">'
                f'<joint name="joint{i + 1}" type="hinge" axis="{axis}" pos="0 0 0"'
                f'{" " + joint_attrs[i] if joint_attrs else ""}/>'
                f'<inertial pos="0 0 {-L / 2}" mass="{m}" '
                f'diaginertia="{across} {across} {along}"/>'
                f'<geom type="capsule" fromto="0 0 0 0 0 {-L}" size="{r}" contype="0" '
                f'conaffinity="0" mass="0"/>{body}</body>')
    return (f'<mujoco><option timestep="{dt}" integrator="{integrator}" gravity="0 0 -9.81">'
            '<flag contact="disable" energy="enable" spring="disable" damper="disable" '
            'actuation="disable"/>'
            f'</option><worldbody>{body}</worldbody></mujoco>')


def mujoco_run(n, integrator, q0, v0, dt, t_final, repeat=1):
    """(s/step — best of ``repeat`` runs after a warm-up —, energies, final qpos, qvel)."""
    model = mujoco.MjModel.from_xml_string(mjcf_chain(n, integrator, dt))
    data = mujoco.MjData(model)
    steps = int(round(t_final / dt))
    for _ in range(100):  # warm-up
        mujoco.mj_step(model, data)
    best = np.inf
    for _ in range(repeat):
        mujoco.mj_resetData(model, data)
        data.qpos[:] = q0
        data.qvel[:] = v0
        mujoco.mj_forward(model, data)
        E = [data.energy[0] + data.energy[1]]
        t = time.perf_counter()
        for _ in range(steps):
            mujoco.mj_step(model, data)
            E.append(data.energy[0] + data.energy[1])
        best = min(best, time.perf_counter() - t)
    el = best
    # mj_step computes energy at the start of the step: one forward for the last state
    mujoco.mj_forward(model, data)
    E[-1] = data.energy[0] + data.energy[1]
    return el / steps, np.array(E), data.qpos.copy(), data.qvel.copy()


def ours(model, method, q0, v0, dt, t_final, repeat=1, **kw):
    """(s/step — best of ``repeat`` runs after a warm-up —, Trajectory)."""
    kd.simulate(model, q0, v0, 5 * dt, method=method, dt=dt, **kw)  # compile / warm up
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        tr = kd.simulate(model, q0, v0, t_final, method=method, dt=dt, progress=False, **kw)
        best = min(best, time.perf_counter() - t)
    return best / (len(tr) - 1), tr


METHODS = [("rk4", {}), ("rk4", {"project": "energy"}), ("midpoint", {}), ("gauss4", {}),
           ("verlet", {}), ("avf", {}), ("itoh_abe", {}), ("energy_momentum", {}),
           ("midpoint", {"project": "energy"})]


def label(method, kw):
    return method + ("+proj" if kw.get("project") else "")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1 s runs instead of 10 s")
    ap.add_argument("--no-diagram", action="store_true")
    ap.add_argument("--methods", default=None,
                    help="comma-separated labels of the rows to run (e.g. midpoint,rk4+proj); "
                         "default all")
    ap.add_argument("--links", default="7,20", help="chain lengths, comma-separated")
    args = ap.parse_args()
    methods = METHODS
    if args.methods:
        wanted = args.methods.split(",")
        unknown = set(wanted) - {label(m, kw) for m, kw in METHODS}
        if unknown:
            ap.error(f"unknown method label(s) {sorted(unknown)}")
        methods = [(m, kw) for m, kw in METHODS if label(m, kw) in wanted]
    t_final = 1.0 if args.quick else 10.0
    dt = 1e-3
    print(f"kanedyn {kd.__version__}, MuJoCo {mujoco.__version__}; dt = {dt}, {t_final} s\n")
    for n in (int(k) for k in args.links.split(",")):
        model = kd.models.pendulum_chain(n, planar=False, radius=RADIUS)
        q0 = 0.5 * np.cos(np.arange(n))  # a bent chain, released from rest
        v0 = np.zeros(n)
        E0 = kd.kinetic_energy(model, q0, v0) + kd.potential_energy(model, q0)
        mj = {}
        for integ in ("RK4", "Euler"):
            us, E, _, _ = mujoco_run(n, integ, q0, v0, dt, t_final, repeat=3)
            assert abs(E[0] - E0) < 1e-9 * abs(E0), (E[0], E0)  # same model, same energy
            mj[integ] = (us, np.abs(E - E[0]).max() / abs(E[0]))
        print(f"{n}-link chain, E(0) = {E0:.6g} J (equal in both)")
        print(f"  {'method':22s} {'µs/step':>9s} {'x MuJoCo RK4':>13s} {'energy drift':>13s}")
        for integ, (us, drift) in mj.items():
            print(f"  {'MuJoCo ' + integ:22s} {us * 1e6:9.2f} {us / mj['RK4'][0]:13.2f} "
                  f"{drift:13.2e}")
        for method, kw in methods:
            if n == 20 and method == "itoh_abe" and not args.quick:
                # nv + 1 energy evaluations per Newton iteration: ≈ 20 ms/step, minutes for
                # 10⁴ steps; the --quick run measures it over 1 s
                print(f"  {'itoh_abe':22s}   (not run for 10 s at 20 links; see --quick)")
                continue
            # the compiled loops: best of 3, as MuJoCo; the Python ones once
            rep = 3 if method in ("rk4", "midpoint", "gauss4", "verlet") else 1
            us, tr = ours(model, method, q0, v0, dt, t_final, repeat=rep, **kw)
            drift = np.abs(tr.energy - tr.energy[0]).max() / abs(tr.energy[0])
            print(f"  {label(method, kw):22s} {us * 1e6:9.2f} {us / mj['RK4'][0]:13.2f} "
                  f"{drift:13.2e}", flush=True)
        print()
    if not args.no_diagram:
        work_precision(Path(__file__).with_suffix(".png"), methods)


def work_precision(path: Path, methods=METHODS) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n, T = 7, 1.0
    model = kd.models.pendulum_chain(n, planar=False, radius=RADIUS)
    q0, v0 = 0.5 * np.cos(np.arange(n)), np.zeros(n)
    ref = kd.simulate(model, q0, v0, T, method="dopri5", rtol=1e-13, atol=1e-14)

    def err(q, v):
        return float(np.sqrt(np.sum((q - ref.q[-1]) ** 2) + np.sum((v - ref.v[-1]) ** 2)))

    dts = [8e-3, 4e-3, 2e-3, 1e-3, 5e-4]
    fig, ax = plt.subplots(figsize=(7, 5))
    print("work–precision (7 links, t = 1 s): CPU seconds, error of (q, v) at 1 s")
    for method, kw in methods:
        pts = []
        for dt in dts:
            us, tr = ours(model, method, q0, v0, dt, T, **kw)
            pts.append((us * (len(tr) - 1), err(tr.q[-1], tr.v[-1])))
        pts = np.array(pts)
        ax.loglog(pts[:, 0], pts[:, 1], "o-", label=label(method, kw))
        print(f"  {label(method, kw):18s} " + "  ".join(f"{c:.2e}s:{e:.1e}" for c, e in pts))
    for tol in ([1e-5, 1e-7, 1e-9, 1e-11],):
        pts = []
        for r in tol:
            t = time.perf_counter()
            tr = kd.simulate(model, q0, v0, T, method="dopri5", rtol=r, atol=r * 1e-2)
            pts.append((time.perf_counter() - t, err(tr.q[-1], tr.v[-1])))
        pts = np.array(pts)
        ax.loglog(pts[:, 0], pts[:, 1], "s--", label="dopri5 (rtol 1e-5..1e-11)")
    for integ in ("RK4", "Euler"):
        pts = []
        for dt in dts:
            us, _, q, v = mujoco_run(n, integ, q0, v0, dt, T)
            pts.append((us * round(T / dt), err(q, v)))
        pts = np.array(pts)
        ax.loglog(pts[:, 0], pts[:, 1], "k^:" if integ == "RK4" else "kv:",
                  label=f"MuJoCo {integ}")
        print(f"  {'MuJoCo ' + integ:18s} " + "  ".join(f"{c:.2e}s:{e:.1e}" for c, e in pts))
    ax.set_xlabel("CPU time for 1 s of simulation [s]")
    ax.set_ylabel("error of (q, v) at t = 1 s")
    ax.set_title("7-link 3D chain, dt = 8e-3 … 5e-4")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nwork–precision diagram: {path}")


if __name__ == "__main__":
    main()
