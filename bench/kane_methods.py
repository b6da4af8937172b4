"""Störmer–Verlet, midpoint, gauss4, AVF, energy–momentum (Gonzalez) and Itoh–Abe (both
orders) on a compiled Kane system: the compiled loops of ``integrators/kane_compiled.py``
against the Python steps of ``integrators/verlet.py``, ``gauss.py``,
``discrete_gradient.py`` and ``energy_momentum.py`` (their references, ``compiled=False``)
and the RK4 generated with the equations, side by side.

The system: kanedyn's 3D pendulum chain of ``--links`` links (hinges, q̇ = u) through
``kanedyn.kane.tree.derive``, compiled by numba. dt = 1e-3 over ``--T`` s (the Python steps
over a tenth of it), warm, best of 3; µs per step, the largest |q − q_python| at the end of
the Python run, and the energy error max |E − E0| / |E0| of each run. ``--forces``: with a
spring on the first joint, a damper and a smoothed Stribeck friction on every joint (force
rows: the loops take them), the error is that of the energy budget E − E0 − W_nc, and rk4
runs kane_compiled's loop (the generated one has no force elements). ``--project``: rk4,
midpoint and gauss4 with ``project="energy"`` (kane_compiled's RK4 and Gauss loops).
``--em-projection``: energy_momentum's ``variant="projection"`` (midpoint in the tangent
form, then the projection onto E0 + W_nc) on the Kane tree (kane_compiled's chart loop,
its chart q0 + ξ) and on the Model itself (gauss_compiled's tangent loop).
``--system ball_elbow``: instead of the chain, ``kd.models.ball_elbow`` (a ball shoulder
and a hinged elbow: a quaternion, q̇ ≠ u), whose methods run kane_compiled's loops in the
quaternions' chart — rk4 (with ``--forces`` or ``--project``), midpoint, gauss4, avf,
verlet and itoh_abe —; its elements: the spring and the friction on the 1-DOF joints alone (the
elbow), a damper on every joint (the shoulder's three speeds too).

    PYTHONPATH=src .venv/bin/python bench/kane_methods.py [--links 7] [--T 2] [--forces]
        [--project | --em-projection] [--system chain|ball_elbow]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np

import kanedyn as kd
from kanedyn.kane import tree


def best(f, repeat: int = 3):
    out, t = None, np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        t = min(t, time.perf_counter() - t0)
    return out, t


#: a new process, a chain not seen before (other lengths: another generated module): the
#: generated functions' first calls, then the first Verlet run, whose loop is cached once
#: for every system
FIRST = """
import time, numpy as np, kanedyn as kd
from kanedyn.kane import tree
model = kd.models.pendulum_chain(5, planar=False, length=0.1 + 0.9 * np.random.rand())
s = tree.derive(model).compile(backend="numba")
q0, v0 = np.full(5, 0.2), np.zeros(5)
t = time.perf_counter(); s.mass_matrix(q0); s.forcing(q0, v0); s.energy(q0, v0)
tg = time.perf_counter() - t
t = time.perf_counter(); kd.simulate(s, q0, v0, 0.01, method="verlet", dt=1e-3)
print(f"new process, new 5-link chain: the generated functions' first calls {tg:.2f} s, "
      f"then the first verlet run {time.perf_counter() - t:.2f} s")
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--links", type=int, default=7)
    ap.add_argument("--T", type=float, default=2.0)
    ap.add_argument("--forces", action="store_true")
    ap.add_argument("--project", action="store_true")
    ap.add_argument("--em-projection", action="store_true")
    ap.add_argument("--system", choices=("chain", "ball_elbow"), default="chain")
    a = ap.parse_args()
    with open("/proc/loadavg") as f:
        print("load before:", f.read().strip())
    quaternion = a.system == "ball_elbow"
    if quaternion:
        model, label = kd.models.ball_elbow(), "ball_elbow (a quaternion and a hinge)"
    else:
        model, label = kd.models.pendulum_chain(a.links, planar=False), f"{a.links}-link 3D chain"
    t0 = time.perf_counter()
    system = tree.derive(model).compile(backend="numba")
    print(f"{label}: derived and compiled in {time.perf_counter() - t0:.1f} s")
    rng = np.random.default_rng(0)
    if quaternion:  # a swinging, twisting arm
        q0, v0 = np.array([0.9, 0.2, -0.3, 0.1, 0.4]), np.array([0.5, -1.0, 0.8, 2.0])
        q0[:4] /= np.linalg.norm(q0[:4])
    else:
        q0, v0 = rng.uniform(-0.5, 0.5, model.nq), rng.normal(0.0, 0.5, model.nv)
    dt = 1e-3
    runs = {"rk4, generated loop": (a.T, {"method": "rk4"})}
    if a.forces:
        from kanedyn.forces import JointDamper, JointFriction, JointSpring
        from kanedyn.friction.laws import Stribeck

        law = Stribeck(0.05, 0.08, 0.1).smoothed("tanh", 0.02)
        joints = [b.joint.name for b in model.bodies]
        one = [b.joint.name for b in model.bodies if b.joint.nv == 1]  # (springs, friction)
        forces = ([JointSpring(one[0], 5.0)] + [JointDamper(j, 0.05) for j in joints]
                  + [JointFriction(j, law) for j in one])
        runs = {"rk4, compiled loop": (a.T, {"method": "rk4", "forces": forces}),
                "rk4, Python steps": (a.T / 10, {"method": "rk4", "forces": forces,
                                                 "compiled": False})}
    methods = ("verlet", "midpoint", "gauss4", "avf", "energy_momentum", "itoh_abe",
               "itoh_abe symmetric")
    if quaternion:  # the methods with a loop in the quaternions' chart
        methods = ("midpoint", "gauss4", "avf", "verlet", "itoh_abe")
    if a.project:  # rk4, midpoint and gauss4, each step projected onto E0 + W_nc
        runs = {}
        methods = ("rk4+project", "midpoint+project", "gauss4+project")
    if a.em_projection:  # energy_momentum's projection variant, on the tree and the Model
        runs, methods = {}, ()
        for on, target in (("Kane tree", system), ("Model", model)):
            kw = {"method": "energy_momentum", "variant": "projection", "target": target}
            if a.forces:
                kw["forces"] = forces
            runs[f"em projection ({on}), compiled loop"] = (a.T, kw)
            runs[f"em projection ({on}), Python steps"] = (a.T / 10, kw | {"compiled": False})
    for m in methods:
        kw = {"method": m.split()[0]} | ({"variant": "symmetric"} if " " in m else {})
        if m.endswith("+project"):
            kw = {"method": m.split("+")[0], "project": "energy"}
        if a.forces:
            kw["forces"] = forces
        runs[f"{m}, compiled loop"] = (a.T, kw)
        runs[f"{m}, Python steps"] = (a.T / 10, kw | {"compiled": False})
    rows = {}
    for name, (T, kw) in runs.items():
        on = kw.pop("target", system)
        kd.simulate(on, q0, v0, 10 * dt, dt=dt, **kw)  # compile / warm
        tr, t = best(lambda T=T, kw=kw, on=on: kd.simulate(on, q0, v0, T, dt=dt, **kw))
        runs[name] = (T, kw | {"target": on})
        E = tr.energy
        err = np.abs(tr.budget if a.forces else E - E[0]).max() / abs(E[0])
        rows[name] = (tr, t / round(T / dt) * 1e6, err)
    what = "energy budget error" if a.forces else "energy error"
    print(f"\n| run (dt = {dt}) | µs/step | {what} | compiled ÷ Python steps | "
          f"max |Δq| compiled − Python ({a.T / 10:g} s) |")
    print("|---|---:|---:|---:|---:|")
    for name, (_, us, err) in rows.items():
        m = name.split(",")[0]
        ratio = dq = ""
        if name.endswith("compiled loop"):
            py = rows[f"{m}, Python steps"]
            ratio = f"{us / py[1]:.3f}"
            kw = dict(runs[name][1])
            short = kd.simulate(kw.pop("target"), q0, v0, a.T / 10, dt=dt, **kw)
            dq = f"{np.abs(short.q - py[0].q).max():.1e}"
        print(f"| {name} | {us:.1f} | {err:.1e} | {ratio} | {dq} |")
    print(subprocess.run([sys.executable, "-c", FIRST], capture_output=True, text=True,
                         check=True).stdout.strip())
    with open("/proc/loadavg") as f:
        print("load after:", f.read().strip())


if __name__ == "__main__":
    main()
