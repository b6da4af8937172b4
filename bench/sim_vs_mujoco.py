"""Simulation against MuJoCo: cost per step and energy drift of every method, side by side.

A 7- and a 20-link 3D hinge chain (``kd.models.pendulum_chain(n, planar=False,
radius=0.05)``: unit rods of 1 kg, axes alternating y, x) and the same chain in
MuJoCo from an MJCF string (explicit inertials, contacts and every passive
force off), dt = 1e-3 for 10 s from the same initial state. MuJoCo runs its
RK4 and its semi-implicit Euler. Energy drift = max |E(t) − E(0)| / |E(0)|.
MuJoCo and our compiled loops (rk4, rk4+proj, midpoint (+proj), gauss4, verlet, avf,
itoh_abe, itoh_abe2 — the symmetric variant —, energy_momentum): best of 3 runs after a
warm-up; the other methods: one run after a warm-up.

Then a work–precision diagram on the 7-link chain (1 s, several dt): error of
q, v at t = 1 s against a tight reference (our dopri5 at rtol 1e-13), against
the CPU time of the run, for every method and for MuJoCo — written to
``bench/sim_vs_mujoco.png``.

    .venv/bin/python bench/sim_vs_mujoco.py            # the full run (a few minutes)
    .venv/bin/python bench/sim_vs_mujoco.py --quick    # 1 s instead of 10 s
    .venv/bin/python bench/sim_vs_mujoco.py --no-diagram --methods avf,itoh_abe2
                                                       # only these rows (labels as printed)
    .venv/bin/python bench/sim_vs_mujoco.py --no-diagram --forces 0.1
                                                       # a damper on every joint

``--couple N``: a constant couple of N N·m about the world y axis on the chain's last link,
an :class:`~kanedyn.forces.ExternalWrench` ``[0, N, 0, 0, 0, 0]`` in world coordinates (its
compiled wrench row) in ours, ``xfrc_applied`` in MuJoCo's (the budget column as for
``--forces``); the rk4 row is followed by its final q against MuJoCo RK4's (the same
torques Jᵀf?) and by how far the couple moved it. ``--python``: a last column, the Python
steps' µs a step (``compiled=False``, 1 s of the run at most) and the compiled loop's
share of it.

``--forces c``: a :class:`~kanedyn.forces.JointDamper` of c N·m·s/rad on every joint of our
chain (every method takes it by its compiled force row), ``damping="c"`` on every joint of
MuJoCo's (its damper flag on); the last column is then our energy budget
max |E − E₀ − W_nc| / |E₀| (MuJoCo's energy is not conserved and records no W_nc: "—").
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
               radius: float = RADIUS, joint_attrs=None, damper: bool = False) -> str:
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
            '<flag contact="disable" energy="enable" spring="disable" '
            f'damper="{"enable" if damper else "disable"}" '
            'actuation="disable"/>'
            f'</option><worldbody>{body}</worldbody></mujoco>')


def mujoco_run(n, integrator, q0, v0, dt, t_final, repeat=1, damping=0.0, couple=0.0):
    """(s/step — best of ``repeat`` runs after a warm-up —, energies, final qpos, qvel);
    ``damping`` > 0: that joint damping on every joint; ``couple``: a couple about the
    world y axis on the last body (``xfrc_applied``)."""
    attrs = [f'damping="{damping}"'] * n if damping > 0 else None
    model = mujoco.MjModel.from_xml_string(mjcf_chain(n, integrator, dt, joint_attrs=attrs,
                                                      damper=damping > 0))
    data = mujoco.MjData(model)
    steps = int(round(t_final / dt))
    for _ in range(100):  # warm-up
        mujoco.mj_step(model, data)
    best = np.inf
    for _ in range(repeat):
        mujoco.mj_resetData(model, data)
        data.qpos[:] = q0
        data.qvel[:] = v0
        data.xfrc_applied[n, 4] = couple  # (body 0 is the world)
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
           ("verlet", {}), ("avf", {}), ("itoh_abe", {}), ("itoh_abe", {"variant": "symmetric"}),
           ("energy_momentum", {}), ("midpoint", {"project": "energy"})]


#: the methods that run in a compiled loop on these chains
COMPILED = ("rk4", "midpoint", "gauss4", "verlet", "avf", "itoh_abe", "energy_momentum")


def label(method, kw):
    return (method + ("+proj" if kw.get("project") else "")
            + ("2" if kw.get("variant") == "symmetric" else ""))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1 s runs instead of 10 s")
    ap.add_argument("--no-diagram", action="store_true")
    ap.add_argument("--methods", default=None,
                    help="comma-separated labels of the rows to run (e.g. midpoint,rk4+proj); "
                         "default all")
    ap.add_argument("--links", default="7,20", help="chain lengths, comma-separated")
    ap.add_argument("--forces", type=float, default=0.0, metavar="C",
                    help="a damper of C N·m·s/rad on every joint (MuJoCo: damping=C)")
    ap.add_argument("--couple", type=float, default=0.0, metavar="N",
                    help="a couple of N N·m about world y on the last link (MuJoCo: "
                         "xfrc_applied)")
    ap.add_argument("--python", action="store_true",
                    help="also time the Python steps (compiled=False, 1 s at most)")
    args = ap.parse_args()
    c, couple = args.forces, args.couple
    methods = METHODS
    if args.methods:
        wanted = args.methods.split(",")
        unknown = set(wanted) - {label(m, kw) for m, kw in METHODS}
        if unknown:
            ap.error(f"unknown method label(s) {sorted(unknown)}")
        methods = [(m, kw) for m, kw in METHODS if label(m, kw) in wanted]
    t_final = 1.0 if args.quick else 10.0
    dt = 1e-3
    print(f"kanedyn {kd.__version__}, MuJoCo {mujoco.__version__}; dt = {dt}, {t_final} s"
          + (f"; a damper of {c} N·m·s/rad on every joint" if c > 0 else "")
          + (f"; a couple of {couple} N·m about world y on the last link" if couple else "")
          + "\n")
    for n in (int(k) for k in args.links.split(",")):
        model = kd.models.pendulum_chain(n, planar=False, radius=RADIUS)
        elements = [kd.forces.JointDamper(j, c) for j in model.joint_names] if c > 0 else []
        if couple:
            elements.append(kd.forces.ExternalWrench(f"link{n}", [0.0, couple, 0.0, 0.0, 0.0,
                                                                  0.0], frame="world"))
        extra = {"forces": elements} if elements else {}
        q0 = 0.5 * np.cos(np.arange(n))  # a bent chain, released from rest
        v0 = np.zeros(n)
        E0 = kd.kinetic_energy(model, q0, v0) + kd.potential_energy(model, q0)
        mj, mj_q = {}, {}
        for integ in ("RK4", "Euler"):
            us, E, mj_q[integ], _ = mujoco_run(n, integ, q0, v0, dt, t_final, repeat=3,
                                               damping=c, couple=couple)
            assert abs(E[0] - E0) < 1e-9 * abs(E0), (E[0], E0)  # same model, same energy
            mj[integ] = (us, np.abs(E - E[0]).max() / abs(E[0]))
        print(f"{n}-link chain, E(0) = {E0:.6g} J (equal in both)")
        forced = c > 0 or couple != 0.0
        last = "budget" if forced else "energy drift"
        print(f"  {'method':22s} {'µs/step':>9s} {'x MuJoCo RK4':>13s} {last:>13s}"
              + (f" {'Python µs':>10s} {'÷ Python':>9s}" if args.python else ""))
        for integ, (us, drift) in mj.items():
            shown = f"{'—':>13s}" if forced else f"{drift:13.2e}"
            print(f"  {'MuJoCo ' + integ:22s} {us * 1e6:9.2f} {us / mj['RK4'][0]:13.2f} "
                  f"{shown}")
        for method, kw in methods:
            # the compiled loops (rk4, midpoint, gauss4, verlet, the discrete gradients):
            # best of 3, as MuJoCo; the Python ones once
            rep = 3 if method in COMPILED else 1
            us, tr = ours(model, method, q0, v0, dt, t_final, repeat=rep, **kw, **extra)
            drift = (np.abs(tr.budget).max() if forced
                     else np.abs(tr.energy - tr.energy[0]).max()) / abs(tr.energy[0])
            py = ""
            if args.python:
                ps, _ = ours(model, method, q0, v0, dt, min(t_final, 1.0), compiled=False,
                             **kw, **extra)
                py = f" {ps * 1e6:10.1f} {us / ps:9.3f}"
            print(f"  {label(method, kw):22s} {us * 1e6:9.2f} {us / mj['RK4'][0]:13.2f} "
                  f"{drift:13.2e}{py}", flush=True)
            if couple and label(method, kw) == "rk4":  # the same physics as MuJoCo's?
                free = kd.simulate(model, q0, v0, t_final, method="rk4", dt=dt)
                print(f"    rk4's final q against MuJoCo RK4's (xfrc_applied): "
                      f"{np.abs(tr.q[-1] - mj_q['RK4']).max():.1e}; the couple moved it "
                      f"{np.abs(tr.q[-1] - free.q[-1]).max():.2f} rad")
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
