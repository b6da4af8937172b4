"""RK4 on every joint type: the compiled manifold loop against the Python steps and MuJoCo.

Per-step cost of ``kd.simulate(model, ..., method="rk4")`` (the compiled loop of
``kanedyn.sim.rk4_manifold``), with and without the energy projection, against the
Python step loop it replaces (``compiled=False``) and, on models MJCF can state, against
MuJoCo's RK4 on the same model (explicit inertials, contacts and passive forces off; the
energies at t = 0 are checked equal, so the models are the same):

- a 7-link ball-joint chain of capsules (``pendulum_chain(7, planar=False,
  joint="spherical")``: unit rods of 1 kg, radius 0.05), and a 20-link one;
- a free-floating chain of capsules: a free root body and 6 hinge children (axes
  alternating y, x), under gravity;
- the floating-base humanoid, ``kd.load_robot("humanoid", floating_base=True)`` (nv = 38;
  MuJoCo not run: its URDF has no free joint to give MuJoCo).

Then ``kd.simulate_batch`` of N states (in prange over the cores) against N single
compiled runs by ``kd.simulate``, interleaved, on the 7-link ball chain and the humanoid.

dt = 1e-3; our compiled runs and MuJoCo: best of 5 after a warm-up, interleaved (each
round runs every variant once); the Python steps: one 0.05 s run after a warm-up.

With ``--em`` instead: ``method="energy_momentum"`` on the two ball chains (its
``"projection"`` variant onto the energy alone — gravity acts —, which runs in the compiled
tangent midpoint + energy projection loop of ``integrators/gauss_compiled.py``), without
and with a ``JointDamper`` of 0.1 on every joint (then the projection's target is E₀ +
W_nc), against its Python steps (``compiled=False``) and MuJoCo's RK4 (no damping), and
beside it rk4 + ``project="energy"`` with the same dampers (the manifold loop); then the
variant onto E and [L; P] on a free root with six ball-jointed rods, no gravity, compiled
against its Python steps, and rk4 + project=("energy", "momentum") on it.

With ``--verlet`` instead: ``method="verlet"`` on ball and free joints — the variational
step in the joints' charts, compiled (``verlet_compiled.run_chart``) — against its Python
steps (``compiled=False``) and MuJoCo's RK4 on the 7-link ball chain, the free chain and
a free root rod with six ball-jointed rods (gravity on), with the mean Newton iterations
per step and the largest relative energy error of the compiled run, and how many
difference Jacobians (``base.fd_jacobian``, n residuals each) the Python steps form per
step, which the compiled loop's Newton policy repeats. (The 20-link ball
chain is left out: at dt = 1e-3 the variational step's Newton iteration, started with the
matrix −M/h, fails there in both loops.)

    .venv/bin/python bench/rk4_manifold.py            # 1 s runs (about a minute)
    .venv/bin/python bench/rk4_manifold.py --quick    # 0.2 s runs
    .venv/bin/python bench/rk4_manifold.py --em       # the energy_momentum table
    .venv/bin/python bench/rk4_manifold.py --verlet   # the verlet table
"""

from __future__ import annotations

import argparse
import time

import mujoco
import numpy as np

import kanedyn as kd
from kanedyn.model import ModelBuilder
from kanedyn.model.builders import rod_inertia
from kanedyn.model.joints import Free, Revolute, Spherical

RADIUS = 0.05


def free_chain(n: int, child=None, gravity=(0.0, 0.0, -9.81)) -> kd.Model:
    """A free root rod and n − 1 children (unit rods of 1 kg; hinges about y, x, y, ...,
    or the joints ``child(i)`` makes)."""
    b = ModelBuilder(f"free_chain_{n}", gravity=gravity)
    parent = None
    for i in range(n):
        jt = Free("root") if i == 0 else child(i) if child is not None else Revolute(
            f"joint{i + 1}", axis=(0, 1, 0) if i % 2 == 0 else (1, 0, 0))
        placement = (np.eye(3), (0.0, 0.0, -1.0 if i > 0 else 0.0))
        parent = b.add_body(f"link{i + 1}", parent, jt, placement, 1.0, (0.0, 0.0, -0.5),
                            rod_inertia(1.0, 1.0, RADIUS))
    return b.build()


def mjcf(kinds: list[str], dt: float) -> str:
    """The chain of unit capsule rods with the joints ``kinds`` (ball, free, hinge) in MJCF."""
    across = (3 * RADIUS**2 + 1.0) / 12.0
    along = 0.5 * RADIUS**2
    body = ""
    for i in reversed(range(len(kinds))):
        if kinds[i] == "free":
            joint = '<freejoint name="root"/>'
        else:
            axis = "0 1 0" if i % 2 == 0 else "1 0 0"
            joint = f'<joint name="joint{i + 1}" type="{kinds[i]}" axis="{axis}" pos="0 0 0"/>'
        pos = "0 0 0" if i == 0 else "0 0 -1"
        body = (f'<body name="link{i + 1}" pos="{pos}">{joint}'
                f'<inertial pos="0 0 -0.5" mass="1" diaginertia="{across} {across} {along}"/>'
                f'<geom type="capsule" fromto="0 0 0 0 0 -1" size="{RADIUS}" contype="0" '
                f'conaffinity="0" mass="0"/>{body}</body>')
    return (f'<mujoco><option timestep="{dt}" integrator="RK4" gravity="0 0 -9.81">'
            '<flag contact="disable" energy="enable" spring="disable" damper="disable" '
            'actuation="disable"/>'
            f'</option><worldbody>{body}</worldbody></mujoco>')


def mujoco_rk4(kinds, qpos, qvel, dt, t_final, E0):
    """A run of MuJoCo's RK4 from (qpos, qvel): a function returning its s/step (after a
    warm-up here; E(0) checked equal to E0)."""
    model = mujoco.MjModel.from_xml_string(mjcf(kinds, dt))
    data = mujoco.MjData(model)
    steps = int(round(t_final / dt))

    def run(n=steps) -> float:
        mujoco.mj_resetData(model, data)
        data.qpos[:], data.qvel[:] = qpos, qvel
        mujoco.mj_forward(model, data)
        E = data.energy[0] + data.energy[1]
        assert abs(E - E0) < 1e-9 * (1 + abs(E0)), (E, E0)  # the same model and state
        t = time.perf_counter()
        for _ in range(n):
            mujoco.mj_step(model, data)
        return (time.perf_counter() - t) / n

    run(100)
    return run


def ours(model, q0, v0, dt, t_final, method="rk4", **kw):
    """A run of kd.simulate(method=method): a function returning its s/step (compiled and
    warmed up here)."""
    kd.simulate(model, q0, v0, 5 * dt, method=method, dt=dt, progress=False, **kw)

    def run() -> float:
        t = time.perf_counter()
        tr = kd.simulate(model, q0, v0, t_final, method=method, dt=dt, progress=False, **kw)
        return (time.perf_counter() - t) / (len(tr) - 1)

    return run


def hanging_state(model, rng):
    """(q0, v0, E0): a chain near its rest pose (chart steps of 0.3 rad), speeds of 0.5."""
    q0 = kd.integrate_configuration(model, kd.neutral(model),
                                    0.3 * rng.normal(size=model.nv), 1.0)
    v0 = 0.5 * rng.normal(size=model.nv)
    return q0, v0, kd.kinetic_energy(model, q0, v0) + kd.potential_energy(model, q0)


def em_table(cases, dt: float, t_final: float, rng) -> None:
    """energy_momentum (projection variant, energy only) on the ball chains: compiled
    against its Python steps and MuJoCo's RK4, without and with a damper on every joint;
    rk4 + project="energy" with the dampers beside it (module doc)."""
    print(f"{'model':26s} {'forces':>7s} {'EM':>9s} {'EM Py':>9s} {'Py/EM':>7s} "
          f"{'rk4+proj':>9s} {'MuJoCo':>8s} {'EM/MJ':>7s} {'rk4p/MJ':>8s} {'budget':>9s}"
          "   (µs/step)")
    for name, model, kinds in cases:
        q0, v0, E0 = hanging_state(model, rng)
        for forces in (None, [kd.forces.JointDamper(j, 0.1) for j in model.joint_names]):
            kw = {"forces": forces}
            runs = [ours(model, q0, v0, dt, t_final, "energy_momentum", **kw),
                    ours(model, q0, v0, dt, t_final, project="energy", **kw),
                    mujoco_rk4(kinds, *mujoco_state(model, q0, v0), dt, t_final, E0)]
            em, rk4p, mj = best_of(runs, 5)
            py = ours(model, q0, v0, dt, min(t_final, 0.05), "energy_momentum",
                      compiled=False, **kw)()
            tr = kd.simulate(model, q0, v0, t_final, method="energy_momentum", dt=dt, **kw)
            budget = float(np.abs(tr.budget).max() / abs(tr.energy[0]))
            print(f"{name:26s} {'damper' if forces else 'none':>7s} {em * 1e6:9.2f} "
                  f"{py * 1e6:9.1f} {py / em:7.0f} {rk4p * 1e6:9.2f} {mj * 1e6:8.2f} "
                  f"{em / mj:7.2f} {rk4p / mj:8.2f} {budget:9.1e}", flush=True)


def batch_and_singles(model, Q0, V0, dt, t_final):
    """Two functions returning the wall time of ``kd.simulate_batch`` of the N states and
    of N ``kd.simulate`` runs of them (both compiled and warmed up here)."""
    kd.simulate_batch(model, Q0[:2], V0[:2], 5 * dt, dt=dt)
    kd.simulate(model, Q0[0], V0[0], 5 * dt, method="rk4", dt=dt, progress=False)

    def batch() -> float:
        t = time.perf_counter()
        kd.simulate_batch(model, Q0, V0, t_final, dt=dt)
        return time.perf_counter() - t

    def singles() -> float:
        t = time.perf_counter()
        for q0, v0 in zip(Q0, V0, strict=True):
            kd.simulate(model, q0, v0, t_final, method="rk4", dt=dt, progress=False)
        return time.perf_counter() - t

    return [batch, singles]


def best_of(runs, repeat: int) -> list[float]:
    """The best time of each run over ``repeat`` rounds, the runs interleaved in each round
    (so that a burst of load on the shared machine hits them alike)."""
    best = [np.inf] * len(runs)
    for _ in range(repeat):
        for i, run in enumerate(runs):
            best[i] = min(best[i], run())
    return best


def mujoco_state(model, q0, v0):
    """MuJoCo's (qpos, qvel) of our state: the same except a free joint's velocity, which
    MuJoCo gives as (world linear velocity of the origin, body angular velocity)."""
    qvel = np.array(v0, float)
    for b in model.bodies:
        if b.joint.kind == "free":
            w, vO = v0[b.iv][:3], v0[b.iv][3:]
            R = kd.spatial.quat_to_matrix(q0[b.iq][3:7])
            qvel[b.iv] = np.concatenate([R @ vO, w])
    return np.array(q0, float), qvel


def em_momentum_table(dt: float, t_final: float, rng) -> None:
    """energy_momentum's projection variant onto E and [L; P] (a free root rod with six
    ball-jointed rods below it, no gravity: momentum="auto" keeps both): the compiled
    tangent midpoint + project_standard loop against its Python steps."""
    model = free_chain(7, lambda i: Spherical(f"ball{i + 1}"), gravity=(0.0, 0.0, 0.0))
    q0, v0, _ = hanging_state(model, rng)
    em = best_of([ours(model, q0, v0, dt, t_final, "energy_momentum")], 5)[0]
    py = ours(model, q0, v0, dt, min(t_final, 0.05), "energy_momentum", compiled=False)()
    tr = kd.simulate(model, q0, v0, t_final, method="energy_momentum", dt=dt)
    dE = float(np.abs(tr.energy - tr.energy[0]).max() / tr.energy[0])
    dLP = float(np.abs(tr.momentum - tr.momentum[0]).max())
    print(f"free root + 6 ball rods, nv = {model.nv}, no gravity: energy_momentum "
          f"(projection onto E and [L; P]) {em * 1e6:.1f} µs/step compiled, {py * 1e6:.1f} "
          f"Python steps ({py / em:.0f}x); over {t_final} s max |ΔE|/E0 {dE:.1e}, "
          f"max |Δ[L; P]| {dLP:.1e}")
    kw = {"project": ("energy", "momentum")}
    rk = best_of([ours(model, q0, v0, dt, t_final, "rk4", **kw)], 5)[0]
    py = ours(model, q0, v0, dt, min(t_final, 0.05), "rk4", compiled=False, **kw)()
    tr = kd.simulate(model, q0, v0, t_final, method="rk4", dt=dt, **kw)
    dE = float(np.abs(tr.energy - tr.energy[0]).max() / tr.energy[0])
    dLP = float(np.abs(tr.momentum - tr.momentum[0]).max())
    print(f"the same, rk4 + project=(energy, momentum): {rk * 1e6:.1f} µs/step compiled, "
          f"{py * 1e6:.1f} Python steps ({py / rk:.0f}x); max |ΔE|/E0 {dE:.1e}, "
          f"max |Δ[L; P]| {dLP:.1e}")


def python_fd_per_step(model, q0, v0, dt) -> float:
    """Difference Jacobians (``base.fd_jacobian``) per step of 0.1 s of verlet's Python
    steps, counted by wrapping the function."""
    from kanedyn.integrators import base

    calls, fd = [0], base.fd_jacobian

    def counted(*args):
        calls[0] += 1
        return fd(*args)

    base.fd_jacobian = counted
    try:
        tr = kd.simulate(model, q0, v0, 0.1, method="verlet", dt=dt, compiled=False,
                         progress=False)
    finally:
        base.fd_jacobian = fd
    return calls[0] / (len(tr) - 1)


def verlet_table(cases, dt: float, t_final: float, rng) -> None:
    """verlet's variational step compiled against its Python steps and MuJoCo's RK4
    (module doc)."""
    print(f"{'model':26s} {'nv':>3s} {'verlet':>9s} {'Python':>9s} {'Py/comp':>8s} "
          f"{'MuJoCo':>8s} {'comp/MJ':>8s} {'Newton':>7s} {'FD/step':>8s} {'max|dE|/E0':>11s}"
          "   (µs/step)")
    for name, model, kinds in cases:
        q0, v0, E0 = hanging_state(model, rng)
        runs = [ours(model, q0, v0, dt, t_final, "verlet"),
                mujoco_rk4(kinds, *mujoco_state(model, q0, v0), dt, t_final, E0)]
        comp, mj = best_of(runs, 5)
        py = ours(model, q0, v0, dt, min(t_final, 0.05), "verlet", compiled=False)()
        fd_rate = python_fd_per_step(model, q0, v0, dt)
        tr = kd.simulate(model, q0, v0, t_final, method="verlet", dt=dt, progress=False)
        dE = float(np.abs(tr.energy - tr.energy[0]).max() / abs(tr.energy[0]))
        print(f"{name:26s} {model.nv:3d} {comp * 1e6:9.2f} {py * 1e6:9.1f} {py / comp:8.0f} "
              f"{mj * 1e6:8.2f} {comp / mj:8.2f} "
              f"{tr.stats['newton_iterations'].mean():7.2f} {fd_rate:8.2f} {dE:11.1e}",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="0.2 s runs instead of 1 s")
    ap.add_argument("--em", action="store_true",
                    help="only the energy_momentum table on the ball chains (module doc)")
    ap.add_argument("--verlet", action="store_true",
                    help="only the verlet table on ball and free joints (module doc)")
    args = ap.parse_args()
    t_final = 0.2 if args.quick else 1.0
    dt = 1e-3
    rng = np.random.default_rng(0)
    cases = [("ball chain, 7 links", kd.models.pendulum_chain(7, planar=False,
                                                             joint="spherical"), ["ball"] * 7),
             ("ball chain, 20 links", kd.models.pendulum_chain(20, planar=False,
                                                              joint="spherical"), ["ball"] * 20),
             ("free chain, 7 links", free_chain(7), ["free"] + ["hinge"] * 6),
             ("humanoid, floating base", kd.load_robot("humanoid", floating_base=True), None)]
    print(f"kanedyn {kd.__version__}, MuJoCo {mujoco.__version__}; dt = {dt}, {t_final} s; "
          f"load {open('/proc/loadavg').read().split()[:3]}\n")
    if args.verlet:
        balls = free_chain(7, lambda i: Spherical(f"ball{i + 1}"))
        verlet_table([cases[0], cases[2], ("free root + 6 ball rods", balls,
                                           ["free"] + ["ball"] * 6)], dt, t_final, rng)
        print(f"\nload {open('/proc/loadavg').read().split()[:3]}")
        return
    if args.em:
        em_table(cases[:2], dt, t_final, rng)
        em_momentum_table(dt, t_final, rng)
        print(f"\nload {open('/proc/loadavg').read().split()[:3]}")
        return
    print(f"{'model':26s} {'nv':>3s} {'compiled':>9s} {'+proj':>9s} {'Python':>9s} "
          f"{'Py/comp':>8s} {'MuJoCo':>8s} {'comp/MJ':>8s} {'proj/MJ':>8s}   (µs/step)")
    for name, model, kinds in cases:
        q0 = kd.random_configuration(model, rng, scale=0.5)
        if kinds is not None:  # the chains hang near their rest pose
            q0 = kd.integrate_configuration(model, kd.neutral(model),
                                            0.3 * rng.normal(size=model.nv), 1.0)
        v0 = 0.5 * rng.normal(size=model.nv)
        runs = [ours(model, q0, v0, dt, t_final), ours(model, q0, v0, dt, t_final,
                                                        project="energy")]
        if kinds is not None:
            E0 = kd.kinetic_energy(model, q0, v0) + kd.potential_energy(model, q0)
            runs.append(mujoco_rk4(kinds, *mujoco_state(model, q0, v0), dt, t_final, E0))
        comp, proj, *mj = best_of(runs, 5)
        py = ours(model, q0, v0, dt, min(t_final, 0.05), compiled=False)()
        line = (f"{name:26s} {model.nv:3d} {comp * 1e6:9.2f} {proj * 1e6:9.2f} "
                f"{py * 1e6:9.1f} {py / comp:8.0f}")
        if mj:
            line += f" {mj[0] * 1e6:8.2f} {comp / mj[0]:8.2f} {proj / mj[0]:8.2f}"
        print(line, flush=True)
    print("\nsimulate_batch of N states against N single compiled runs "
          f"({t_final} s, dt = {dt}; interleaved, best of 5)")
    for name, model, _ in (cases[0], cases[3]):
        N = 16
        Q0 = np.array([kd.random_configuration(model, rng, scale=0.3) for _ in range(N)])
        V0 = 0.3 * rng.normal(size=(N, model.nv))
        batch, singles = best_of(batch_and_singles(model, Q0, V0, dt, t_final), 5)
        steps = int(round(t_final / dt))
        print(f"  {name:26s} N = {N}: batch {batch / N / steps * 1e6:7.2f} µs/step per "
              f"state, single runs {singles / N / steps * 1e6:7.2f}: {singles / batch:.2f}x")
    print(f"\nload {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
