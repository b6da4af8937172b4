"""simulate_batch by method: N runs batched against a loop of N single kd.simulate calls,
and against MuJoCo's rollout (its threads) and a loop of mj_step.

The 7-link chain of ``bench/sim_vs_mujoco.py`` (``pendulum_chain(7, planar=False,
radius=0.05)``: unit rods, hinges alternating y and x,
gravity), N random states (angles ±1, speeds ±0.5), dt = 1e-3 for ``--t`` seconds.
For each batched method (``kanedyn.sim.batch.METHODS``: rk4, midpoint, gauss4, verlet, avf,
itoh_abe (forward and symmetric), energy_momentum, time_stepping with exact Stribeck friction
on every joint and a sinusoidal root torque, time_stepping with LuGre laws and Karnopp
bands on alternate joints, and the event-driven stickslip with the exact friction)
the time per run-step of ``kd.simulate_batch`` (prange over the cores) and of N calls of
``kd.simulate`` (the same compiled loop, one run at a time); for MuJoCo its RK4 and
implicitfast by ``mujoco.rollout`` (nthread = the cores) and by a loop of ``mj_step``.
Best of ``--repeat`` after a warm-up, the variants interleaved. Batched runs are checked
equal to the single runs.

    .venv/bin/python bench/batch_methods.py              # N = 256, 0.2 s
    .venv/bin/python bench/batch_methods.py --n 64 --t 0.05 --repeat 2

``--ball``: instead, the methods whose batches run the chart loops on ball joints (avf,
itoh_abe forward and symmetric: ``avf_chart_compiled``; energy_momentum: its projection
variant, ``_gauss_loop``'s tangent midpoint and energy projection) and, for reference,
midpoint's tangent form, on a 3-link chain of ball joints (``pendulum_chain(3,
planar=False, joint="spherical", radius=0.05)``, nv = 9), N random states (each link
turned by a rotation vector of norm ≤ 0.8, body rates ±1 rad/s): the batch against N
sequential ``kd.simulate`` calls, the runs checked bit-equal, and the batch's CPU time per
wall time (≈ the number of its threads that ran at once; below 1 when other processes hold
the cores); no MuJoCo part. Run it with
``KANEDYN_FIRST_CALLS=compile`` (the warm-up then compiles the loops in the process
instead of timing Python steps while a compiler process works):

    KANEDYN_FIRST_CALLS=compile .venv/bin/python bench/batch_methods.py --ball --n 32 --t 0.1
"""

from __future__ import annotations

import argparse
import os
import time

import mujoco
import numpy as np
from mujoco import rollout
from sim_vs_mujoco import mjcf_chain

import kanedyn as kd

#: (label, method, options); the LuGre/Karnopp run is time_stepping with laws by joints=
METHODS = (("rk4", "rk4", {}), ("midpoint", "midpoint", {}), ("gauss4", "gauss4", {}),
           ("verlet", "verlet", {}), ("avf", "avf", {}), ("itoh_abe", "itoh_abe", {}),
           ("itoh_abe symmetric", "itoh_abe", {"variant": "symmetric"}),
           ("energy_momentum", "energy_momentum", {}),
           ("time_stepping", "time_stepping", {}),
           ("time_stepping LuGre/Karnopp", "time_stepping", {"joints": "lugre_karnopp"}),
           ("stickslip (event-driven)", "stickslip", {}))


def friction_forces(model):
    """time_stepping's elements: exact Stribeck friction on every joint (the box LCP) and
    a sinusoidal torque at the root, as bench/friction.py."""
    law = kd.friction.Stribeck(Fc=2.0, Fs=3.0, vs=0.05, delta=2.0, Fv=0.1)
    return ([kd.forces.JointFriction(j, law) for j in model.joint_names]
            + [kd.forces.SinusoidalTorque(model.joint_names[0], 1.0, 1.0)])


def lugre_karnopp(model):
    """time_stepping's joints=: LuGre laws (σ0 1e4, σ1 50) and Karnopp bands (1e-3 rad/s)
    around the exact law of :func:`friction_forces`, on alternate joints."""
    law = kd.friction.Stribeck(Fc=2.0, Fs=3.0, vs=0.05, delta=2.0, Fv=0.1)
    lugre = kd.friction.LuGre(sigma0=1e4, sigma1=50.0, Fc=2.0, Fs=3.0, vs=0.05, sigma2=0.1)
    return {j: lugre if i % 2 == 0 else kd.friction.Karnopp(law, 1e-3)
            for i, j in enumerate(model.joint_names)}


#: (label, method, options) of ``--ball``
BALL_METHODS = (("midpoint (tangent form)", "midpoint", {}), ("avf", "avf", {}),
                ("itoh_abe", "itoh_abe", {}),
                ("itoh_abe symmetric", "itoh_abe", {"variant": "symmetric"}),
                ("energy_momentum (projection)", "energy_momentum", {}))


def ball_chain(n: int):
    """The 3-link ball-joint chain and n random states (rotation vectors of norm ≤ 0.8 per
    link applied to the neutral quaternions, body rates uniform in ±1 rad/s)."""
    model = kd.models.pendulum_chain(3, planar=False, joint="spherical", radius=0.05)
    rng = np.random.default_rng(0)
    q0 = kd.neutral(model)
    Q0 = np.array([kd.integrate_configuration(model, q0, rng.uniform(-0.46, 0.46, model.nv),
                                              1.0) for _ in range(n)])
    return model, Q0, rng.uniform(-1.0, 1.0, (n, model.nv))


def ball_main(a) -> None:
    """``--ball``: the batch against N sequential kd.simulate calls, same runs, bit-equal."""
    dt, N = 1e-3, a.n
    steps = int(round(a.t / dt))
    model, Q0, V0 = ball_chain(N)
    print(f"3-link ball chain (nv = {model.nv}), N = {N} runs x {steps} steps, dt = {dt}; "
          f"cores {os.cpu_count()}, numba threads {kd_threads()}, "
          f"KANEDYN_FIRST_CALLS={os.environ.get('KANEDYN_FIRST_CALLS', '')!r}, "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"{'method':>30} {'batched µs/run-step':>20} {'loop µs/run-step':>17} {'ratio':>6}"
          f" {'batch cpu/wall':>15}")
    for label, m, opts in BALL_METHODS:
        if a.methods and label not in a.methods.split(","):
            continue

        def batch(m=m, opts=opts):
            return kd.simulate_batch(model, Q0, V0, a.t, method=m, dt=dt, **opts)

        def loop(m=m, opts=opts):
            return [kd.simulate(model, Q0[k], V0[k], a.t, method=m, dt=dt, progress=False,
                                **opts) for k in range(N)]

        batch(), loop()  # warm-up (compilation)
        c0 = time.process_time()
        tb, b = best(batch, a.repeat)
        cpu = (time.process_time() - c0) / a.repeat  # the process's CPU time per batch
        tl, s = best(loop, a.repeat)
        err = max(np.abs(b.q[k] - s[k].q).max() for k in range(N))
        assert err == 0.0, (m, err)  # the same loop with the same arguments: the same bits
        us = 1e6 / (N * steps)
        # cpu/wall: ≈ 2 when the batch's 2 threads run at once, < 1 on a saturated machine
        print(f"{label:>30} {tb * us:20.2f} {tl * us:17.2f} {tl / tb:6.1f} {cpu / tb:15.2f}")
    print(f"load after: {os.getloadavg()[0]:.2f}")


def kd_threads() -> int:
    from numba import get_num_threads

    return get_num_threads()


def best(fn, repeat):
    out, t_best = None, np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        t_best = min(t_best, time.perf_counter() - t)
    return t_best, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--t", type=float, default=0.2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--methods", default=None, help="comma-separated labels (default all)")
    ap.add_argument("--ball", action="store_true",
                    help="avf, itoh_abe, energy_momentum on a ball-joint chain (module doc)")
    a = ap.parse_args()
    if a.ball:
        ball_main(a)
        return
    dt, N = 1e-3, a.n
    steps = int(round(a.t / dt))
    model = kd.models.pendulum_chain(7, planar=False, radius=0.05)  # as the MJCF
    rng = np.random.default_rng(0)
    Q0, V0 = rng.uniform(-1, 1, (N, 7)), rng.uniform(-0.5, 0.5, (N, 7))
    print(f"7-link chain, N = {N} runs x {steps} steps, dt = {dt}; cores {os.cpu_count()}, "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"{'method':>28} {'batched µs/run-step':>20} {'loop µs/run-step':>17} {'ratio':>6}")
    for label, m, opts in METHODS:
        if a.methods and label not in a.methods.split(","):
            continue
        fs = ()
        if opts.get("joints") == "lugre_karnopp":
            opts = {"joints": lugre_karnopp(model)}
            fs = [kd.forces.SinusoidalTorque(model.joint_names[0], 1.0, 1.0)]
        elif m in ("time_stepping", "stickslip"):
            fs = friction_forces(model)

        def batch(m=m, fs=fs, opts=opts):
            return kd.simulate_batch(model, Q0, V0, a.t, method=m, dt=dt, forces=fs, **opts)

        def loop(m=m, fs=fs, opts=opts):
            kw = {**opts} if m in ("time_stepping", "stickslip") else {"progress": False,
                                                                         **opts}
            return [kd.simulate(model, Q0[k], V0[k], a.t, method=m, dt=dt, forces=fs, **kw)
                    for k in range(N)]

        batch(), loop()  # warm-up (compilation)
        tb, b = best(batch, a.repeat)
        tl, s = best(loop, a.repeat)
        err = max(np.abs(b.q[k] - s[k].q).max() for k in range(N))
        assert err < 1e-12, (m, err)
        us = 1e6 / (N * steps)
        print(f"{label:>28} {tb * us:20.2f} {tl * us:17.2f} {tl / tb:6.1f}")
    for integ in ("RK4", "implicitfast"):
        mm = mujoco.MjModel.from_xml_string(mjcf_chain(7, integ, dt))
        d = mujoco.MjData(mm)
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        size = mujoco.mj_stateSize(mm, spec)
        x0 = np.empty((N, size))
        for k in range(N):
            mujoco.mj_resetData(mm, d)
            d.qpos[:], d.qvel[:] = Q0[k], V0[k]
            mujoco.mj_getState(mm, d, x0[k], spec)
        datas = [mujoco.MjData(mm) for _ in range(os.cpu_count())]

        def roll(mm=mm, datas=datas, x0=x0):
            return rollout.rollout(mm, datas, x0, nstep=steps)

        def step_loop(mm=mm, d=d):
            for k in range(N):
                mujoco.mj_resetData(mm, d)
                d.qpos[:], d.qvel[:] = Q0[k], V0[k]
                for _ in range(steps):
                    mujoco.mj_step(mm, d)

        roll(), step_loop()
        tb, _ = best(roll, a.repeat)
        tl, _ = best(step_loop, a.repeat)
        us = 1e6 / (N * steps)
        print(f"{'MuJoCo ' + integ:>28} {tb * us:20.2f} {tl * us:17.2f} {tl / tb:6.1f}"
              "   (rollout / mj_step loop)")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
