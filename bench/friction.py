"""Friction benchmark: identification accuracy and time, stuck-joint creep side by side
with MuJoCo's frictionloss, and the cost per step of each treatment of v = 0.

Run: .venv/bin/python bench/friction.py [--quick]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import kanedyn as kd
from kanedyn import friction
from kanedyn.model.joints import Prismatic

TRUTH = friction.Stribeck(Fc=1.0, Fs=1.5, vs=0.02, delta=2.0, Fv=0.3)
TRUE = {"Fc": 1.0, "Fs": 1.5, "vs": 0.02, "delta": 2.0, "Fv": 0.3}


# --- 1. identification ------------------------------------------------------------
def identification(repeats: int) -> None:
    print("\n== identification: Stribeck (Fc=1, Fs=1.5, vs=0.02, delta=2, Fv=0.3), "
          "log-spaced speeds 1e-3..1 on both sides, soft_l1 loss ==")
    print(f"{'noise':>6} {'N/side':>6} {'ms/fit':>7} {'|dFs|/Fs':>9} {'|dvs|/vs':>9} "
          f"{'|dFc|/Fc':>9} {'coverage':>9}")
    rng = np.random.default_rng(0)
    for sigma in (0.005, 0.02, 0.05):
        for n in (10, 20, 40, 100):
            s = np.geomspace(1e-3, 1.0, n)
            v = np.r_[s, -s]
            times, eFs, evs, eFc, cover = [], [], [], [], []
            for _ in range(repeats):
                F = TRUTH(v) + sigma * rng.normal(size=v.size)
                t0 = time.perf_counter()
                try:
                    r = friction.fit(v, F, model="stribeck")
                except kd.FrictionError:
                    continue
                times.append(time.perf_counter() - t0)
                eFs.append(abs(r.params["Fs"] - 1.5) / 1.5)
                evs.append(abs(r.params["vs"] - 0.02) / 0.02)
                eFc.append(abs(r.params["Fc"] - 1.0) / 1.0)
                cover.append(np.mean([r.ci[k][0] <= x <= r.ci[k][1] for k, x in TRUE.items()]))
            print(f"{sigma:6.3f} {n:6d} {1e3 * np.median(times):7.2f} {np.median(eFs):9.2e} "
                  f"{np.median(evs):9.2e} {np.median(eFc):9.2e} {np.mean(cover):9.2f}")
    print("\n-- low-speed sampling density: 40 samples/side, k of them in [1e-3, 2 vs], "
          "noise 0.02, gaussian model --")
    print(f"{'k':>4} {'stderr vs':>10} {'stderr Fs':>10} {'|dvs|/vs':>9}")
    for k in (2, 3, 5, 10, 20, 30):
        se_vs, se_Fs, evs = [], [], []
        for _ in range(repeats):
            s = np.r_[np.geomspace(1e-3, 0.04, k), np.geomspace(0.05, 1.0, 40 - k)]
            v = np.r_[s, -s]
            r = friction.fit(v, TRUTH(v) + 0.02 * rng.normal(size=v.size), model="gaussian")
            se_vs.append(r.stderr["vs"])
            se_Fs.append(r.stderr["Fs"])
            evs.append(abs(r.params["vs"] - 0.02) / 0.02)
        print(f"{k:4d} {np.median(se_vs):10.2e} {np.median(se_Fs):10.2e} {np.median(evs):9.2e}")


# --- 2. creep of a held joint -----------------------------------------------------
FL, LOAD, T, DT = 2.0, 1.5, 10.0, 1e-3    # friction level N, constant load N, s, step


def slider() -> kd.Model:
    b = kd.ModelBuilder("slider", gravity=(0.0, 0.0, 0.0))
    b.add_body("block", None, Prismatic("x", axis=(1.0, 0.0, 0.0)), mass=1.0,
               inertia=np.eye(3) * 0.01)
    return b.build()


class Slider1:
    """The same 1-DOF slider as a hand-written protocol system (M = 1, h = 0), so that
    per-step costs measure the friction treatment, not the dynamics call."""

    nq = nv = 1

    def mass_matrix(self, q):
        return np.ones((1, 1))

    def nonlinear_effects(self, q, v):
        return np.zeros(1)

    def forward_dynamics(self, q, v, tau):
        return np.asarray(tau, float)

    def energy(self, q, v):
        return 0.5 * float(v[0]) ** 2

    def q_dot(self, q, v):
        return np.asarray(v, float)

    def integrate_configuration(self, q, v, dt):
        return q + dt * np.asarray(v)


def mujoco_slider(extra: str = "", T: float = T, dt: float = DT):
    import mujoco

    xml = f"""<mujoco><option timestep="{dt}" gravity="0 0 0"/>
      <worldbody><body><joint name="x" type="slide" axis="1 0 0" frictionloss="{FL}" {extra}/>
      <geom type="box" size=".1 .1 .1" mass="1"/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    n = int(round(T / dt))
    t0 = time.perf_counter()
    for _ in range(n):
        d.qfrc_applied[0] = LOAD
        mujoco.mj_step(m, d)
    return float(d.qpos[0]), float(d.qvel[0]), (time.perf_counter() - t0) / n


def creep() -> None:
    law = friction.Stribeck(FL, FL, 1e-2, 2.0, 0.0)       # Coulomb, like frictionloss
    load = lambda t, q, v: np.array([LOAD])
    print(f"\n== creep: 1 kg slider, friction level {FL} N, constant load {LOAD} N "
          f"(75 %), from rest, {T:g} s, dt = {DT:g} s ==")
    print(f"{'treatment':<34} {'v(10 s) m/s':>12} {'x(10 s) m':>12} {'expected v':>11}")
    rows = []
    tr = friction.simulate(slider(), [0.0], [0.0], T, {"x": law}, tau=load)
    rows.append(("kanedyn exact, event-driven", tr.v[-1, 0], tr.q[-1, 0], 0.0))
    for name, L, expect in [
        ("kanedyn exact, per-step LCP", law, 0.0),
        ("kanedyn Karnopp band 1e-3", friction.Karnopp(law, 1e-3), 0.0),
        ("kanedyn tanh eps=1e-3", law.smoothed("tanh", 1e-3), 1e-3 * math.atanh(LOAD / FL)),
        ("kanedyn tanh eps=1e-4", law.smoothed("tanh", 1e-4), 1e-4 * math.atanh(LOAD / FL)),
        ("kanedyn sqrt eps=1e-4", law.smoothed("sqrt", 1e-4),
         1e-4 * (LOAD / FL) / math.sqrt(1 - (LOAD / FL) ** 2)),
    ]:
        st = friction.time_stepping(slider(), [0.0], [0.0], T, DT, {"x": L}, tau=load)
        rows.append((name, st.v[-1, 0], st.q[-1, 0], expect))
    mj = {}
    for name, extra in (("MuJoCo frictionloss (default)", ""),
                        ("MuJoCo frictionloss solref 2e-3", 'solreffriction="0.002 1"')):
        x, v, _ = mujoco_slider(extra)
        mj[name] = (v, x)
        rows.append((name, v, x, float("nan")))
    for name, v, x, e in rows:
        print(f"{name:<34} {v:12.3e} {x:12.3e} {e:11.3e}")
    mv, mx = mj["MuJoCo frictionloss (default)"]
    print(f"MuJoCo default creeps {mx * 1e3:.2f} mm in 10 s; kanedyn exact: "
          f"{abs(rows[0][2]):.1e} m (event-driven), {abs(rows[1][2]):.1e} m (per step)")
    print("\n-- Karnopp after a slide: same slider, from v0 = 0.05 m/s, no load, 2 s --")
    for name, L in (("exact per-step", law), ("Karnopp band 1e-3", friction.Karnopp(law, 1e-3)),
                    ("Karnopp band 1e-2", friction.Karnopp(law, 1e-2))):
        st = friction.time_stepping(slider(), [0.0], [0.05], 2.0, DT, {"x": L})
        note = "  (the speed it entered the band with)" if "Karnopp" in name else ""
        print(f"{name:<20} v(2 s) = {st.v[-1, 0]:10.3e} m/s{note}")


# --- 3. cost per step -------------------------------------------------------------
def cost(steps: int) -> None:
    law = friction.Stribeck(1.0, 1.5, 0.01, 2.0, 0.1)
    drive = lambda t, q, v: np.array([2.0 * math.sin(2 * math.pi * t)])   # stick and slip
    T1 = steps * DT
    print(f"\n== cost per step, {steps} steps of {DT:g} s, sinusoidal load 2 sin(2πt) N "
          "(sticks and slips) ==")
    _, _, mj_per = mujoco_slider(T=T1)
    mj_us = mj_per * 1e6
    print(f"{'treatment':<22} {'us/step (M=1 system)':>21} {'/MuJoCo':>8} {'us/step (Model)':>16} "
          f"{'/MuJoCo':>8}")
    for name, L in (("exact, per-step LCP", law), ("Karnopp 1e-3", friction.Karnopp(law, 1e-3)),
                    ("tanh eps=1e-3", law.smoothed("tanh", 1e-3)),
                    ("sqrt eps=1e-3", law.smoothed("sqrt", 1e-3))):
        out = []
        for sysm in (Slider1(), slider()):
            key = 0 if isinstance(sysm, Slider1) else "x"
            t0 = time.perf_counter()
            friction.time_stepping(sysm, [0.0], [0.0], T1, DT, {key: L}, tau=drive)
            out.append((time.perf_counter() - t0) / steps * 1e6)
        print(f"{name:<22} {out[0]:21.1f} {out[0] / mj_us:8.0f} {out[1]:16.1f} "
              f"{out[1] / mj_us:8.0f}")
    print(f"MuJoCo mj_step (frictionloss, 1-DOF): {mj_us:.1f} us/step")
    for sysm, lab in ((Slider1(), "M=1 system"), (slider(), "Model")):
        key = 0 if isinstance(sysm, Slider1) else "x"
        t0 = time.perf_counter()
        tr = friction.simulate(sysm, [0.0], [0.0], T1, {key: law}, tau=drive, rtol=1e-8,
                               atol=1e-10)
        el = time.perf_counter() - t0
        print(f"event-driven exact ({lab}): {1e3 * el / T1:.0f} ms per simulated second "
              f"({(el / T1) / (mj_per / DT):.0f}x MuJoCo at dt={DT:g}), "
              f"{len(tr.friction.switches)} switches, {tr.t.size} steps")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repeats and steps")
    args = ap.parse_args()
    identification(5 if args.quick else 20)
    creep()
    cost(500 if args.quick else 2000)


if __name__ == "__main__":
    main()
