"""Friction benchmark: identification accuracy and time, stuck-joint creep side by side
with MuJoCo's frictionloss, the cost per step of each treatment of v = 0, and a 7-DOF arm
with friction on every joint against MuJoCo (and the demo's AVF run against its RK4 run).

Run: .venv/bin/python bench/friction.py [--quick] [--arm-only | --events | --ball-elbow]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

import kanedyn as kd
from kanedyn import friction
from kanedyn.model.joints import Prismatic

sys.path.insert(0, str(Path(__file__).parent))  # for sim_vs_mujoco's MJCF chain

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
    # the same runs compiled: the load as a SinusoidalTorque element instead of tau=
    drive_el = kd.forces.SinusoidalTorque("x", 2.0, 1.0)
    for name, L in (("exact, compiled", law), ("Karnopp 1e-3, compiled",
                                               friction.Karnopp(law, 1e-3)),
                    ("tanh eps=1e-3, compiled", law.smoothed("tanh", 1e-3))):
        run = lambda L=L: friction.time_stepping(slider(), [0.0], [0.0], T1, DT, {"x": L},
                                                 forces=[drive_el])
        run()
        t0 = time.perf_counter()
        run()
        us = (time.perf_counter() - t0) / steps * 1e6
        print(f"{name:<22} {'':>21} {'':>8} {us:16.1f} {us / mj_us:8.2f}")
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
    print("\n-- event-driven, the load as a SinusoidalTorque element (the compiled loop's "
          f"case), the same {T1:g} s; load average {open('/proc/loadavg').read().split()[:3]} --")
    event_rows(slider(), [0.0], [drive_el, kd.forces.JointFriction("x", law)],
               [(T1, EVENT_WAYS)], mj_us)


# --- event-driven stick-slip: the compiled loop, its Python reference, solve_ivp ---------
def best_of(run, repeat: int):
    """(seconds of the best of ``repeat`` calls of ``run`` after a warm-up call, the
    warm-up's result)."""
    out = run()
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return best, out


def step_columns(el: float, tr) -> tuple[str, str]:
    """The µs a step and the number of steps of an event-driven run that took ``el`` s,
    as table columns (blank where the run reports no step count)."""
    steps = tr.stats.get("steps")
    if not steps:
        return f"{'':>8}", f"{'':>6}"
    return f"{1e6 * el / steps[0]:8.2f}", f"{steps[0]:6d}"


def timed_events(model, q0, forces, T1, rtol, atol, repeat, **kw):
    """(seconds of the best of ``repeat`` runs, trajectory) of one event-driven run."""
    return best_of(lambda: kd.simulate(model, q0, np.zeros(model.nv), T1, method="stickslip",
                                       forces=forces, rtol=rtol, atol=atol, **kw), repeat)


def event_rows(model, q0, forces, windows, mj_us, rtol=1e-8, atol=1e-10,
               stick_step=1e-2) -> None:
    """The event-driven run three ways (kd.simulate(method="stickslip"): the compiled
    DOPRI5 loop, compiled=False its Python reference, ivp_method="DOP853" the solve_ivp
    path) over each window T (s), against MuJoCo's mj_step at dt = DT (mj_us a step): ms
    per simulated second, µs per accepted DOPRI5 step, and the ratios. ``stick_step`` is
    given (the default T/1000 would make the step count of a stuck phase, and so the cost
    per simulated second, depend on the window): 1e-2 s is 1/100 of the 1 Hz loads'
    period, so a break-away is not stepped over."""
    mj_per_s = mj_us / DT * 1e-3  # MuJoCo, ms per simulated second
    print(f"{'event-driven (rtol ' + format(rtol, 'g') + ')':<34} {'T s':>5} "
          f"{'ms/sim s':>9} {'/MuJoCo':>8} {'us/step':>8} {'steps':>6} {'switches':>9} "
          f"{'/compiled':>9}")
    for T1, ways in windows:
        base = None
        for name, kw, repeat in ways:
            el, tr = timed_events(model, q0, forces, T1, rtol, atol, repeat,
                                  stick_step=stick_step, **kw)
            ms = 1e3 * el / T1
            base = ms if base is None else base
            us, n = step_columns(el, tr)
            print(f"{name:<34} {T1:5.2f} {ms:9.2f} {ms / mj_per_s:8.1f} {us} {n} "
                  f"{len(tr.friction.switches):9d} {ms / base:9.1f}")
    print(f"{'MuJoCo mj_step (frictionloss)':<34} {'':>5} {mj_per_s:9.2f} {1.0:8.1f} "
          f"{mj_us:8.2f} (dt = {DT:g} s); stick_step = {stick_step:g} s")


EVENT_WAYS = (("compiled DOPRI5 loop", {}, 3),
              ("Python reference (compiled=False)", {"compiled": False}, 1),
              ("solve_ivp DOP853 (ivp_method=)", {"ivp_method": "DOP853"}, 1))


# --- event-driven stick-slip on a tree with a ball joint ----------------------------
def ball_elbow_events(repeat: int = 3) -> None:
    """kd.models.ball_elbow, exact Stribeck friction (Fc 0.5, Fs 0.8, vs 0.05, Fv 0.1) on its
    hinge (the elbow), the shoulder (a quaternion) swinging: the event-driven run three
    ways — the compiled loop (ball, free and planar joints since h46), its Python reference
    (compiled=False) and the solve_ivp DOP853 segments (ivp_method=, what this case ran
    before) — without load (it sticks, slips once and sticks again) and with a spring and
    a 2 Hz shaker on the elbow (tests/sim/test_stickslip_compiled.py's case without its
    damper and wrench)."""
    model = kd.models.ball_elbow()
    law = friction.Stribeck(Fc=0.5, Fs=0.8, vs=0.05, Fv=0.1)
    cases = [("gravity only, 1 s", [math.cos(0.1), math.sin(0.1), 0, 0, 0.0],
              [0.0, 3.0, 0.0, 0.0], [], 1.0),
             ("spring + shaker, 0.8 s", [math.cos(0.15), math.sin(0.15), 0, 0, 0.0],
              [0.5, 2.0, 0.3, 0.0], [kd.forces.JointSpring("elbow", 2.0),
                                     kd.forces.SinusoidalTorque("elbow", 0.9, 2.0)], 0.8)]
    print("\n== event-driven stick-slip on kd.models.ball_elbow, exact friction on the elbow "
          f"(rtol 1e-10, atol 1e-12, stick_step T/1000); load average "
          f"{open('/proc/loadavg').read().split()[:3]} ==")
    print(f"{'case':<24} {'way':<34} {'ms':>9} {'us/step':>8} {'steps':>6} {'switches':>9} "
          f"{'/compiled':>9}")
    for label, q0, v0, forces, T1 in cases:
        base = None
        for name, kw, rep in EVENT_WAYS:
            el, tr = best_of(lambda kw=kw, q0=q0, v0=v0, forces=forces, T1=T1: kd.simulate(
                model, np.array(q0), np.array(v0), T1, method="stickslip",
                joints={"elbow": law}, forces=forces, **kw), rep if rep == 1 else repeat)
            base = el if base is None else base
            us, n = step_columns(el, tr)
            print(f"{label:<24} {name:<34} {1e3 * el:9.2f} {us} {n} "
                  f"{len(tr.friction.switches):9d} {el / base:9.1f}")
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")


# --- 4. a 7-DOF arm, friction on every joint -------------------------------------
ARM = dict(n=7, length=0.3, mass=1.0, radius=0.1)   # the demo's arm (cli.demo_arm)


def arm_model() -> kd.Model:
    return kd.models.pendulum_chain(ARM["n"], planar=False, length=ARM["length"],
                                    mass=ARM["mass"], radius=ARM["radius"])


def mjcf_arm(levels, dt: float) -> str:
    """The arm of :func:`arm_model` in MJCF (bench/sim_vs_mujoco.py's chain: hinges about
    y, x, y, ..., solid cylinders, no damping, no armature, contacts off), semi-implicit
    Euler, ``frictionloss`` the joints' levels."""
    from sim_vs_mujoco import mjcf_chain

    xml = mjcf_chain(ARM["n"], "Euler", dt, length=ARM["length"], radius=ARM["radius"],
                     joint_attrs=[f'frictionloss="{f:.17g}"' for f in levels])
    return xml.replace('energy="enable"', 'energy="disable"')  # not computed in mj_step


def arm(steps: int, repeat: int = 3) -> None:
    import mujoco

    model = arm_model()
    names = model.joint_names
    q0 = np.linspace(0.9, 0.3, ARM["n"])
    Fs = 1.2 * np.abs(kd.gravity_torques(model, q0)) + 0.3   # holds the arm at rest
    amp, f_hz, ph = 0.5 * Fs, 1.0, 0.7 * np.arange(ARM["n"])  # the periodic load
    T1 = steps * DT
    print(f"\n== 7-DOF arm (the demo's: 0.3 m links of 1 kg, hinges y/x alternating), friction "
          f"on every joint, Fs = 1.2 |g(q0)| + 0.3 = {np.array2string(Fs, precision=2)} N m; "
          f"load: gravity + 0.5 Fs sin(2π t + 0.7 k); {steps} steps of {DT:g} s from rest ==")
    mj = mujoco.MjModel.from_xml_string(mjcf_arm(Fs, DT))
    d = mujoco.MjData(mj)
    d.qpos[:] = q0
    mujoco.mj_forward(mj, d)
    M = np.zeros((mj.nv, mj.nv))
    mujoco.mj_fullM(mj, d, M)  # (MuJoCo 4 signature)
    print(f"same arm: max |M_mujoco − M_kanedyn| = {np.abs(M - kd.crba(model, q0)).max():.1e}")
    loads = np.array([amp * np.sin(2 * np.pi * f_hz * n * DT + ph) for n in range(steps)])

    def mujoco_run():
        mujoco.mj_resetData(mj, d)
        d.qpos[:] = q0
        t0 = time.perf_counter()
        for n in range(steps):
            d.qfrc_applied[:] = loads[n]
            mujoco.mj_step(mj, d)
        return time.perf_counter() - t0

    mujoco_run()
    mj_us = min(mujoco_run() for _ in range(repeat)) / steps * 1e6
    torques = [kd.forces.SinusoidalTorque(j, a, f_hz, phase=p)
               for j, a, p in zip(names, amp, ph, strict=True)]
    stribeck = [friction.Stribeck(0.7 * f, f, 0.05, 2.0, 0.05) for f in Fs]
    treatments = [("exact stick-slip (complementarity)", stribeck),
                  ("smoothed tanh eps=1e-3 (lin. implicit)",
                   [law.smoothed("tanh", 1e-3) for law in stribeck]),
                  ("LuGre sigma0=1e5, sigma1=300 (same curve)",
                   [friction.LuGre(1e5, 300.0, law.Fc, law.Fs, law.vs, law.delta, law.Fv)
                    for law in stribeck])]
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}")
    print(f"{'kanedyn time_stepping':<42} {'us/step':>8} {'/mj_step':>9} "
          f"{'stuck %':>8} {'switches':>9}")
    for name, laws in treatments:
        best, tr = best_of(lambda laws=laws: kd.simulate(
            model, q0, np.zeros(ARM["n"]), T1, method="time_stepping", dt=DT,
            joints=dict(zip(names, laws, strict=True)), forces=torques), repeat)
        us = best / steps * 1e6
        st = tr.friction.stuck
        print(f"{name:<42} {us:8.2f} {us / mj_us:9.2f} {100 * st.mean():8.1f} "
              f"{int(np.abs(np.diff(st.astype(int), axis=0)).sum()):9d}")
    print(f"{'MuJoCo mj_step, frictionloss = Fs':<42} {mj_us:8.2f} {1.0:9.2f}")
    # event-driven (exact switch times, no step dt): the compiled loop over the whole
    # T1, and the three ways side by side over a window the Python ones finish in
    Tw = min(T1, 0.5)
    print(f"\nevent-driven exact stick-slip, same load; {T1:g} s (compiled) and the first "
          f"{Tw:g} s (all three):")
    exact_el = [kd.forces.JointFriction(j, law) for j, law in zip(names, stribeck, strict=True)]
    event_rows(model, q0, torques + exact_el, [(T1, EVENT_WAYS[:1]), (Tw, EVENT_WAYS)], mj_us)
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")
    # creep: gravity only, every joint held (|g| < Fs): how far does each drift in 10 s?
    Th = 10.0
    exact = [kd.forces.JointFriction(j, law) for j, law in zip(names, stribeck, strict=True)]
    tr = kd.simulate(model, q0, np.zeros(ARM["n"]), Th, method="time_stepping", dt=DT,
                     forces=exact)
    mujoco.mj_resetData(mj, d)
    d.qpos[:] = q0
    mujoco.mj_step(mj, d, nstep=int(round(Th / DT)))
    print(f"creep, gravity only (every joint held), {Th:g} s: kanedyn exact max |q − q0| = "
          f"{np.abs(tr.q[-1] - q0).max():.1e} rad (all stuck: {bool(tr.friction.stuck.all())}); "
          f"MuJoCo frictionloss {np.abs(d.qpos - q0).max():.1e} rad "
          f"(joint speeds {np.abs(d.qvel).max():.1e} rad/s)")


def demo_ratio(repeat: int = 3) -> None:
    """`make demo`'s two runs (cli.demo_arm, its q0, dt = 2e-3, 3 s), without the progress
    bar: AVF with friction against RK4 with friction, per step."""
    from kanedyn.cli import demo_arm

    model, forces = demo_arm()
    q0, v0 = np.linspace(0.9, 0.3, model.nq), np.zeros(model.nv)
    out = {}
    for method in ("avf", "rk4"):
        kd.simulate(model, q0, v0, 0.02, method=method, dt=2e-3, forces=forces, progress=False)
        best = np.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            tr = kd.simulate(model, q0, v0, 3.0, method=method, dt=2e-3, forces=forces,
                             progress=False)
            best = min(best, time.perf_counter() - t0)
        out[method] = (best / 1500 * 1e6, np.abs(tr.budget).max() / np.abs(tr.energy).max())
    print(f"\n== make demo's runs (7-link arm, smoothed Stribeck on every joint, dt = 2e-3, "
          f"3 s; load {open('/proc/loadavg').read().split()[:3]}) ==")
    for method, (us, b) in out.items():
        print(f"{method:4s} {us:8.1f} us/step  budget max|E − E0 − W_nc|/max E = {b:.1e}")
    print(f"avf / rk4 = {out['avf'][0] / out['rk4'][0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repeats and steps")
    ap.add_argument("--arm-only", action="store_true", help="only the 7-DOF arm and the demo")
    ap.add_argument("--events", action="store_true",
                    help="only the cost per step and the arm (with the event-driven rows)")
    ap.add_argument("--ball-elbow", action="store_true",
                    help="only the event-driven runs on kd.models.ball_elbow")
    args = ap.parse_args()
    if args.ball_elbow:
        ball_elbow_events()
        return
    if args.events:
        cost(500 if args.quick else 2000)
        arm(1000 if args.quick else 4000)
        return
    if not args.arm_only:
        identification(5 if args.quick else 20)
        creep()
        cost(500 if args.quick else 2000)
    arm(1000 if args.quick else 4000)
    demo_ratio()


if __name__ == "__main__":
    main()
