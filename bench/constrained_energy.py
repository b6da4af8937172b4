"""Constrained energy–momentum (issue 19) against the other ways of integrating a closed
loop: cost per step, energy drift and constraint violation over a run.

Mechanisms (constraints/mechanisms.py): the planar four-bar (crank at 60°, 2 rad/s,
gravity), the spatial RSSR linkage (a ball joint in the tree, a ball-joint cut) and a 6-6
Stewart platform (a free platform on six UPS legs, 24 speeds, 18 rows; run over T/5 at
2 dt: its steps cost ≈ 8x a four-bar step).
Methods, side by side in one process on the same consistent start:

- ``energy_momentum`` — this method (integrators/constrained_energy_momentum.py), dt fixed;
- radau5 on the index-3 DAE, rtol = atol = 1e-8 (kanedyn's Radau IIA);
- IDA (SUNDIALS, scikit-sundae) on the GGL form, rtol = atol = 1e-8;
- the index-1 ODE with Baumgarte stabilisation (α = β = 1/(10 dt)) stepped by RK4, dt fixed;
- MuJoCo (3 and later) with ``<equality connect>`` (soft constraint), its default solref
  (0.02, 1) and the tightest it accepts, (2 dt, 1); Euler integrator at dt (four-bar and
  Stewart platform: :func:`stewart_mjcf` writes the latter, each ball joint a connect of
  two sites; :func:`stewart_mjcf_check` compares its M and E at the start with kanedyn's).

Figures per method: CPU time per step (process time; for the adaptive solvers the run's
time over its accepted steps, and the run's total; for MuJoCo the mj_step calls alone, the
figures read in a second identical run), max |E − E0| / |E0| over the run, max |g| (for
MuJoCo the largest coordinate of the distance between the connected points).

Run: PYTHONPATH=src .venv/bin/python bench/constrained_energy.py [--T 10] [--dt 1e-3]
     [--quick] [--mechanisms four-bar,rssr,stewart]  (--quick: T = 1 s)
     --mechanisms floating-rssr: the RSSR on a free frame without gravity, with
     energy_momentum momenta=True beside the others, and every run's |ΔL|, |ΔP|
     --forces: the four-bar with a damper, a spring and a periodic motor (force
     elements with compiled rows), energy_momentum compiled over T against its Python
     steps over T/10: cost per step and the budget |E − E0 − W_nc|; with
     --mechanisms rssr,stewart (default four-bar only) the RSSR (a damper on its ball
     joint, a spring, a periodic motor, smoothed friction, a constant wrench) and the
     Stewart platform (the same on its free joint and legs; T/5 at 2 dt) too
     --friction: exact stick–slip friction in the step (four-bar over T, Stewart platform
     over T/5), its cost per step against the runs without friction
     --mujoco-convergence: MuJoCo's Stewart platform at 2 dt and 2 dt/10 over T/5, its
     drift and its path against energy_momentum's (mujoco_stewart_convergence)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import kanedyn as kd
from kanedyn.constraints import (
    baumgarte_parameters,
    consistent_initial_values,
    index1_ode,
)
from kanedyn.constraints.mechanisms import (
    four_bar_configuration,
    four_bar_system,
    rssr_guess,
    rssr_system,
    stewart_configuration,
    stewart_system,
)
from kanedyn.spatial import quat_to_matrix


def four_bar():
    s = four_bar_system()
    q0 = four_bar_configuration(np.pi / 3)
    cs = consistent_initial_values(s, q0, np.array([2.0, 0.0, 0.0]))
    return s, cs.q, cs.v


def rssr():
    s = rssr_system()
    cs = consistent_initial_values(s, rssr_guess(s), np.array([4.0, 0.0, 0.0, 0.5, 0.0]))
    return s, cs.q, cs.v


def stewart():
    s = stewart_system()
    q = stewart_configuration(s, (0.05, -0.02, 0.03))
    v = np.zeros(s.nv)
    v[:6] = [0.3, -0.2, 0.5, 0.1, 0.05, -0.1]  # the platform's body twist
    cs = consistent_initial_values(s, q, v)
    return s, cs.q, cs.v


def floating_rssr():
    """The RSSR loop on a free-floating frame, no gravity (momenta conserved)."""
    s = rssr_system(gravity=0.0, floating=True)
    v = np.zeros(s.nv)
    v[:6] = [0.3, -0.2, 0.5, 0.1, 0.2, -0.1]
    v[6], v[9] = 4.0, 0.5
    cs = consistent_initial_values(s, rssr_guess(s), v)
    s.bench_momenta = True
    return s, cs.q, cs.v


def figures(s, t, q, v, cpu, steps):
    E = np.array([s.energy(a, b) for a, b in zip(q, v, strict=True)])
    g = np.array([np.abs(s.constraint(0.0, a)).max() for a in q])
    out = dict(cpu=cpu, steps=steps, per_step=cpu / max(steps, 1),
               dE=float(np.abs(E - E[0]).max() / abs(E[0])), g=float(g.max()))
    if getattr(s, "bench_momenta", False):  # total [L; P] drift of a free-floating chain
        LP = np.array([s.momentum(a, b) for a, b in zip(q, v, strict=True)])
        out["dL"] = float(np.abs(LP[:, :3] - LP[0, :3]).max())
        out["dP"] = float(np.abs(LP[:, 3:] - LP[0, 3:]).max())
    return out


def run_em(s, q0, v0, T, dt, **options):
    c = time.process_time()
    tr = kd.simulate(s, q0, v0, T, method="energy_momentum", dt=dt, **options)
    cpu = time.process_time() - c
    out = figures(s, tr.t, tr.q, tr.v, cpu, len(tr.t) - 1)
    out["Gv"] = float(np.abs(tr.stats["residual_Gv"]).max())
    out["newton"] = float(tr.stats["newton_iterations"].mean())
    return out


def run_dae(s, q0, v0, T, method, formulation, tol=1e-8):
    c = time.process_time()
    tr = kd.simulate(s, q0, v0, T, method=method, formulation=formulation, rtol=tol,
                     atol=tol)
    cpu = time.process_time() - c
    steps = int(tr.stats["naccpt"][-1]) if "naccpt" in tr.stats else len(tr.t) - 1
    return figures(s, tr.t, tr.q, tr.v, cpu, steps)


def run_baumgarte_rk4(s, q0, v0, T, dt):
    a, b = baumgarte_parameters(dt)
    f = index1_ode(s, a, b)
    n = int(round(T / dt))
    y = np.r_[q0, v0]
    Y = [y]
    c = time.process_time()
    for k in range(n):
        t = k * dt
        k1 = f(t, y)
        k2 = f(t + dt / 2, y + dt / 2 * k1)
        k3 = f(t + dt / 2, y + dt / 2 * k2)
        k4 = f(t + dt, y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        Y.append(y)
    cpu = time.process_time() - c
    Y = np.array(Y)
    return figures(s, None, Y[:, :s.nq], Y[:, s.nq:], cpu, n)


MJCF = """<mujoco model="four_bar">
  <option timestep="{dt}" gravity="0 -9.81 0"><flag energy="enable"/></option>
  <worldbody>
    <body name="crank" euler="0 0 {t1}">
      <joint name="crank_pin" type="hinge" axis="0 0 1"/>
      <inertial pos="0.1 0 0" mass="1" diaginertia="1e-9 0.0033333 0.0033333"/>
      <body name="coupler" pos="0.2 0 0" euler="0 0 {t2}">
        <joint name="coupler_pin" type="hinge" axis="0 0 1"/>
        <inertial pos="0.25 0 0" mass="2" diaginertia="1e-9 0.0416667 0.0416667"/>
      </body>
    </body>
    <body name="rocker" pos="0.45 0 0" euler="0 0 {t3}">
      <joint name="rocker_pin" type="hinge" axis="0 0 1"/>
      <inertial pos="0.2 0 0" mass="1.5" diaginertia="1e-9 0.02 0.02"/>
    </body>
  </worldbody>
  <equality>
    <connect body1="coupler" body2="rocker" anchor="0.5 0 0" solref="{solref}"/>
  </equality>
</mujoco>"""


def run_mujoco(start, gap, T, dt):
    """MuJoCo's run from ``start()`` (a fresh (MjModel, MjData) at the bench's start) over
    T: CPU time of the mj_step calls alone, then max |ΔE|/E0 (``d.energy``: potential +
    kinetic) and max ``gap(m, d)`` over the states 0..n from a second, identical run.

    mj_step computes the energy and the positions of the state it starts from, so the
    figures read after step k are state k's; state n's come from one mj_forward."""
    import mujoco

    n = int(round(T / dt))
    m, d = start()
    c = time.process_time()
    for _ in range(n):
        mujoco.mj_step(m, d)
    cpu = time.process_time() - c
    m, d = start()
    E, g = np.empty(n + 1), np.empty(n + 1)
    for k in range(n + 1):
        if k < n:
            mujoco.mj_step(m, d)
        else:
            mujoco.mj_forward(m, d)
        E[k] = d.energy[0] + d.energy[1]
        g[k] = gap(m, d)
    return dict(cpu=cpu, steps=n, per_step=cpu / n,
                dE=float(np.abs(E - E[0]).max() / abs(E[0])), g=float(g.max()))


def run_mujoco_four_bar(s, q0, v0, T, dt, solref):
    """The four-bar in MuJoCo, built so that qpos = 0 is kanedyn's q0 (the body frames
    turned by q0): then qvel = v0, and the connect's anchor is consistent at the start."""
    import mujoco

    # MuJoCo reads euler= in degrees (its default angle unit)
    xml = MJCF.format(dt=dt, t1=np.degrees(q0[0]), t2=np.degrees(q0[1]),
                      t3=np.degrees(q0[2]), solref=f"{solref[0]} {solref[1]}")

    def start():
        m = mujoco.MjModel.from_xml_string(xml)
        d = mujoco.MjData(m)
        d.qvel[:] = v0
        mujoco.mj_forward(m, d)
        return m, d

    tip_c, tip_r = np.array([0.5, 0, 0]), np.array([0.4, 0, 0])

    def gap(m, d):  # the largest coordinate of the coupler's tip − the rocker's
        cb, rb = m.body("coupler").id, m.body("rocker").id
        pc = d.xpos[cb] + d.xmat[cb].reshape(3, 3) @ tip_c
        pr = d.xpos[rb] + d.xmat[rb].reshape(3, 3) @ tip_r
        return np.abs(pc - pr).max()

    return run_mujoco(start, gap, T, dt)


def _xyz(p) -> str:
    return " ".join(f"{float(x):.17g}" for x in p)


def stewart_mjcf(s, dt: float, solref: tuple[float, float]) -> str:
    """MJCF of the Stewart platform ``s`` (a ``stewart_system``: the geometry read from
    ``s.geometry``, every body's mass, centre of mass and inertia and the gravity from
    ``s.model``): the platform on a free joint, then per leg a yoke on a hinge about x
    at the base point B, the cylinder on a hinge about y, the piston on a slide along the
    cylinder's z with its frame at the leg's tip — kanedyn's bodies, joints and q order.
    Each ball joint is a ``<connect>`` of two sites, the piston's tip and the platform
    point P: MuJoCo holds the sites together (softly, ``solref``) whatever qpos0 is, so
    the bench's start is set in qpos (:func:`stewart_mujoco_state`)."""
    g = s.geometry
    inertial = {b.name: _mjcf_inertial(b.inertia) for b in s.model.bodies}
    legs = "".join(f"""
    <body name="yoke{k}" pos="{_xyz(B)}">
      <joint name="u{k}_x" type="hinge" axis="1 0 0"/>
      {inertial[f"yoke{k}"]}
      <body name="cylinder{k}">
        <joint name="u{k}_y" type="hinge" axis="0 1 0"/>
        {inertial[f"cylinder{k}"]}
        <body name="piston{k}">
          <joint name="p{k}" type="slide" axis="0 0 1"/>
          {inertial[f"piston{k}"]}
          <site name="tip{k}"/>
        </body>
      </body>
    </body>""" for k, B in enumerate(g["base"]))
    sites = "".join(f'\n      <site name="P{k}" pos="{_xyz(P)}"/>'
                    for k, P in enumerate(g["platform"]))
    balls = "".join(f'\n    <connect name="ball{k}" site1="tip{k}" site2="P{k}" '
                    f'solref="{solref[0]!r} {solref[1]!r}"/>' for k in range(6))
    return f"""<mujoco model="stewart">
  <option timestep="{dt!r}" gravity="{_xyz(s.model.gravity)}"><flag energy="enable"/></option>
  <worldbody>
    <body name="platform" pos="0 0 {float(g['height']):.17g}">
      <freejoint name="platform_free"/>
      {inertial["platform"]}{sites}
    </body>{legs}
  </worldbody>
  <equality>{balls}
  </equality>
</mujoco>"""


def _mjcf_inertial(I: np.ndarray) -> str:
    """``<inertial>`` of a body's spatial inertia about its frame's origin, I = [Ī + m c×c×ᵀ,
    m c×; m c×ᵀ, m 1] (Featherstone 2008, eq. 2.63): the mass, the centre of mass c and
    the rotational inertia Ī about it."""
    m = I[3, 3]
    c = np.array([I[2, 4], I[0, 5], I[1, 3]]) / m  # m c× = I[:3, 3:]
    cx = np.array([[0.0, -c[2], c[1]], [c[2], 0.0, -c[0]], [-c[1], c[0], 0.0]])
    Ic = I[:3, :3] - m * cx @ cx.T
    if not (Ic[0, 1] or Ic[0, 2] or Ic[1, 2]):  # (MuJoCo rotates a full one to its axes)
        return (f'<inertial pos="{_xyz(c)}" mass="{float(m)!r}" '
                f'diaginertia="{_xyz(np.diag(Ic))}"/>')
    full = _xyz((Ic[0, 0], Ic[1, 1], Ic[2, 2], Ic[0, 1], Ic[0, 2], Ic[1, 2]))
    return f'<inertial pos="{_xyz(c)}" mass="{float(m)!r}" fullinertia="{full}"/>'


def stewart_mujoco_state(s, q, v):
    """kanedyn's (q, v) of ``stewart_system()`` as MuJoCo's (qpos, qvel) of
    :func:`stewart_mjcf`, and T with v = T qvel. The free joint: kanedyn's q is the
    platform's displacement from its home, ``height`` above the base, and the quaternion
    (w, x, y, z); v = (ω, v_O) in platform axes. MuJoCo's qpos is the position in the world
    and the same quaternion; qvel = (ṗ in world axes, ω in body axes), ṗ = R v_O. The legs'
    hinge angles and slides are the same numbers."""
    R = quat_to_matrix(q[3:7])
    qpos = np.r_[q[:3] + (0.0, 0.0, s.geometry["height"]), q[3:]]
    T = np.eye(s.nv)
    T[:6, :6] = 0.0
    T[:3, 3:6] = np.eye(3)  # ω = qvel[3:6]
    T[3:6, :3] = R.T  # v_O = Rᵀ ṗ
    return qpos, np.linalg.solve(T, v), T


def _stewart_tips(m, d) -> np.ndarray:
    """Piston tip − platform point, per leg (6 × 3), world axes."""
    return np.array([d.site(f"tip{k}").xpos - d.site(f"P{k}").xpos for k in range(6)])


def stewart_mujoco(s, q0, v0, dt: float, solref: tuple[float, float]):
    """A fresh (MjModel, MjData) of :func:`stewart_mjcf` at kanedyn's start (q0, v0)."""
    import mujoco

    qpos, qvel, _ = stewart_mujoco_state(s, q0, v0)
    m = mujoco.MjModel.from_xml_string(stewart_mjcf(s, dt, solref))
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(m, d)
    return m, d


def run_mujoco_stewart(s, q0, v0, T, dt, solref):
    """The Stewart platform in MuJoCo (:func:`stewart_mjcf`) from the bench's start."""
    return run_mujoco(lambda: stewart_mujoco(s, q0, v0, dt, solref),
                      lambda m, d: np.abs(_stewart_tips(m, d)).max(), T, dt)


def mujoco_stewart_convergence(T: float, dt: float) -> None:
    """MuJoCo's Stewart platform at dt and dt/10, solref default and (2 dt, 1), over T
    from the bench's start: max |ΔE|/E0, max gap, and the largest distance of its
    platform's path from energy_momentum's at dt (sampled at energy_momentum's steps) —
    is MuJoCo's drift its time step's or its soft constraint's, and does its motion
    converge on kanedyn's?"""
    import mujoco

    s, q0, v0 = stewart()
    tr = kd.simulate(s, q0, v0, T, method="energy_momentum", dt=dt)
    path = tr.q[:, :3] + (0.0, 0.0, s.geometry["height"])
    n0 = len(tr.t) - 1
    print("| MuJoCo dt | solref | max |ΔE|/E0 | max gap | max |p − p_em| | p_z at T (em "
          f"{path[-1, 2]:.4f}) |")
    for h in (dt, dt / 10):
        for solref in ((0.02, 1.0), (2 * h, 1.0)):
            m, d = stewart_mujoco(s, q0, v0, h, solref)
            n, every = int(round(T / h)), int(round(dt / h))
            E, g, P = [d.energy.sum()], [0.0], [d.qpos[:3].copy()]
            for k in range(n):
                mujoco.mj_step(m, d)  # d.energy, the sites: state k's
                E.append(d.energy.sum())
                g.append(np.abs(_stewart_tips(m, d)).max())
                if (k + 1) % every == 0:
                    P.append(d.qpos[:3].copy())
            E, P = np.array(E[1:]), np.array(P[:n0 + 1])
            print(f"| {h:g} | ({solref[0]:g}, {solref[1]:g}) | "
                  f"{np.abs(E - E[0]).max() / abs(E[0]):.1e} | {max(g):.1e} | "
                  f"{np.abs(P - path).max():.1e} | {P[-1, 2]:.4f} |")


def stewart_mjcf_check(s, q0, v0, dt) -> dict:
    """Is :func:`stewart_mjcf` the Stewart platform of ``s``? At the start (q0, v0): the
    largest difference of the mass matrix and the energy E = T + V of the MJCF loaded by
    kanedyn's loader (``parse_mjcf``, ``mjcf_system``) from ``s``'s, and of MuJoCo's
    (``mj_fullM``, ``d.energy``) from ``s``'s (M in MuJoCo's speeds: Tᵀ M T, v = T qvel),
    of MuJoCo's unconstrained accelerations (``qacc_smooth``: gravity and the velocity
    terms) from kanedyn's ABA on the tree (its platform's p̈ = R (v̇_O + ω × v_O)), and the
    largest coordinate of the six tip − point gaps in MuJoCo."""
    import mujoco

    from kanedyn.constraints import mjcf_system
    from kanedyn.model.mjcf import parse_mjcf

    xml = stewart_mjcf(s, dt, (0.02, 1.0))
    qpos, _, T = stewart_mujoco_state(s, q0, v0)
    M, E = kd.crba(s.model, q0), s.energy(q0, v0)
    # the loader's free joint: q = qpos, v = (ω, Rᵀ ṗ) as stewart_system's
    loaded = mjcf_system(parse_mjcf(string=xml, warn=False))
    m, d = stewart_mujoco(s, q0, v0, dt, (0.02, 1.0))
    Mm = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, Mm)
    a = kd.aba(s.model, q0, v0, np.zeros(s.nv))
    R = quat_to_matrix(q0[3:7])
    qacc = np.r_[R @ (a[3:6] + np.cross(v0[:3], v0[3:6])), a[:3], a[6:]]
    return dict(E0=E, maxM=float(np.abs(M).max()),
                loader_dM=float(np.abs(kd.crba(loaded.model, qpos) - M).max()),
                loader_dE=float(abs(loaded.energy(qpos, v0) - E)),
                loader_g=float(np.abs(loaded.constraint(0.0, qpos)).max()),
                mujoco_dM=float(np.abs(Mm - T.T @ M @ T).max()),
                mujoco_dE=float(abs(d.energy.sum() - E)),
                mujoco_dqacc=float(np.abs(d.qacc_smooth - qacc).max()),
                max_qacc=float(np.abs(qacc).max()),
                mujoco_g=float(np.abs(_stewart_tips(m, d)).max()))


#: name -> (builder, its MuJoCo run or None, T and dt as fractions of the command line's:
#: the Stewart platform's 24 speeds and 18 rows cost ≈ 8x a four-bar step in the compiled
#: loop and its radau5 and IDA runs are Python; kept at T/5, 2 dt to compare with the
#: earlier runs)
MECHANISMS = {"four-bar": (four_bar, run_mujoco_four_bar, 1.0, 1.0),
              "rssr": (rssr, None, 1.0, 1.0),
              "stewart": (stewart, run_mujoco_stewart, 0.2, 2.0),
              "floating-rssr": (floating_rssr, None, 1.0, 1.0)}


def run_all(s, q0, v0, T, dt, mujoco_run=None):
    """Every method on one mechanism, in turn; a failed run is a result too."""
    jobs = [("energy_momentum", run_em, (s, q0, v0, T, dt)),
            ("radau5 index3 (1e-8)", run_dae, (s, q0, v0, T, "radau5", "index3")),
            ("IDA GGL (1e-8)", run_dae, (s, q0, v0, T, "ida", "ggl")),
            ("index1+Baumgarte RK4", run_baumgarte_rk4, (s, q0, v0, T, dt))]
    if getattr(s, "bench_momenta", False):
        jobs.insert(1, ("energy_momentum momenta=True", run_em, (s, q0, v0, T, dt),
                        {"momenta": True}))
    if mujoco_run is not None:
        jobs += [("MuJoCo connect solref default", mujoco_run, (s, q0, v0, T, dt, (0.02, 1.0))),
                 ("MuJoCo connect solref (2dt, 1)", mujoco_run, (s, q0, v0, T, dt,
                                                                 (2 * dt, 1.0)))]
    rows = {}
    for label, fn, args, *kw in jobs:
        try:
            rows[label] = fn(*args, **(kw[0] if kw else {}))
        except Exception as e:
            rows[label] = {"error": f"{type(e).__name__}: {e}"[:100]}
    return rows


def table(name, rows, ref_label="radau5 index3 (1e-8)"):
    print(f"\n{name}")
    print(f"{'method':34s} {'steps':>7s} {'CPU s':>8s} {'µs/step':>10s} {'×radau5':>8s} "
          f"{'max|ΔE|/E0':>11s} {'max|g|':>9s}")
    ref = rows[ref_label]["per_step"]
    for label, r in rows.items():
        if "error" in r:
            print(f"{label:34s} failed: {r['error']}")
            continue
        print(f"{label:34s} {r['steps']:7d} {r['cpu']:8.2f} {1e6 * r['per_step']:10.1f} "
              f"{r['per_step'] / ref:8.2f} {r['dE']:11.2e} {r['g']:9.2e}"
              + (f"  |ΔL| {r['dL']:.2e} |ΔP| {r['dP']:.2e}" if "dL" in r else ""))


def timed_em(s, q0, v0, tf: float, dt: float, **options):
    """energy_momentum over tf after a 10-step warm-up (compilation): (the trajectory, µs a
    step)."""
    kd.simulate(s, q0, v0, 10 * dt, method="energy_momentum", dt=dt, **options)
    t0 = time.perf_counter()
    tr = kd.simulate(s, q0, v0, tf, method="energy_momentum", dt=dt, **options)
    return tr, (time.perf_counter() - t0) / (len(tr.t) - 1) * 1e6


def force_elements(name: str) -> list:
    """The force elements of ``--forces`` on a mechanism (each with a compiled row)."""
    from kanedyn import friction
    from kanedyn.forces import (
        ExternalWrench,
        JointDamper,
        JointFriction,
        JointSpring,
        SinusoidalTorque,
    )

    if name == "four-bar":
        return [JointDamper("rocker_pin", 0.3), JointSpring("crank_pin", 2.0, 1.0),
                SinusoidalTorque("crank_pin", 0.8, 0.5, phase=0.3)]
    law = friction.Stribeck(Fc=0.05, Fs=0.08, vs=0.05, delta=2.0, Fv=0.01).smoothed("tanh",
                                                                                   1e-2)
    if name == "rssr":  # a damper on the ball joint's 3 speeds
        # (the crank comes to rest near t = 3.686 s: there Newton stalls at the round-off
        # floor of the residual, which the stall rule takes since residual_floor; before,
        # whether the run passed was decided by round-off)
        return [JointDamper("ball_a", 0.05), JointSpring("crank_pin", 2.0, 0.5),
                SinusoidalTorque("rocker_pin", 0.8, 5.0, phase=0.3),
                JointFriction("crank_pin", law),
                ExternalWrench("coupler", [0.0, 0.05, 0.1, 0.5, -0.4, 0.2])]
    if name == "stewart":  # a damper on the free joint's 6 speeds
        return [JointDamper("platform_free", 2.0), JointSpring("p0", 50.0, 0.0),
                SinusoidalTorque("p1", 5.0, 3.0, phase=0.3), JointFriction("u2_x", law),
                ExternalWrench("platform", [0.5, 0.0, 1.0, 5.0, -10.0, 20.0])]
    raise SystemExit(f"--forces: no force elements for {name!r} (four-bar, rssr, stewart)")


def forces_run(T: float, dt: float, names: list[str]) -> None:
    """Each mechanism with force elements: the compiled loop over T against the Python
    steps over T/10 (the Stewart platform over T/5 at 2 dt, as the other tables), and the
    compiled loop without the forces over T."""
    for name in names:
        build, _, fT, fdt = MECHANISMS[name]
        s, q0, v0 = build()
        F = force_elements(name)
        kinds = ", ".join(type(f).__name__ for f in F)
        print(f"\n{name}: {kinds}; dt = {fdt * dt:g}")
        for label, forces, compiled, tf in (("compiled", F, True, fT * T),
                                            ("python", F, False, fT * T / 10),
                                            ("compiled, no forces", None, True, fT * T)):
            tr, us = timed_em(s, q0, v0, tf, fdt * dt, forces=forces, compiled=compiled)
            if "python_steps" in tr.stats and compiled:
                print("  (the compiled loop did not take the run:", tr.stats["python_steps"], ")")
            scale = max(np.abs(tr.energy).max(), np.abs(tr.work_nc).max())
            print(f"{label:19s} {tf:g} s: {us:8.1f} us/step, "
                  f"budget {np.abs(tr.budget).max() / scale:.1e}, "
                  f"|W_nc(T)| {abs(tr.work_nc[-1]) / scale:.1e} of max(|E|, |W|), "
                  f"max|g| {np.abs(tr.stats['residual_g']).max():.1e}, Newton it./step "
                  f"{tr.stats['newton_iterations'].mean():.2f}")


def friction_run(T: float, dt: float) -> None:
    """Exact stick–slip friction in the step (integrators/constrained_friction.py): the
    four-bar with Stribeck friction on the crank (it slides, stops, stays held) over T,
    the Stewart platform with friction on its six pistons (held, then legs break away)
    over T/5 at 2 dt; cost per step against the same run without friction (the Python
    steps, and the compiled loop), the held fraction, the budget and |g|."""
    from kanedyn.constraints.mechanisms import four_bar_problem
    from kanedyn.forces import JointFriction
    from kanedyn.friction import Stribeck

    prob = four_bar_problem(omega1=4.0)
    st = stewart_system()
    cases = [("four-bar", prob.system, prob.q0, prob.v0, T, dt,
              [JointFriction("crank_pin", Stribeck(Fc=2.0, Fs=2.5, vs=0.05, Fv=0.01))]),
             ("stewart", st, stewart_configuration(st, position=(0.05, 0.0, 0.0)),
              np.zeros(st.nv), T / 5, 2 * dt,
              [JointFriction(f"p{k}", Stribeck(Fc=20.0, Fs=25.0, vs=0.02, Fv=1.0))
               for k in range(6)])]
    for name, s, q0, v0, tf, h, F in cases:
        rows = []
        for label, forces, compiled in (("exact friction", F, False),
                                        ("no friction, python", None, False),
                                        ("no friction, compiled", None, True)):
            tr, us = timed_em(s, q0, v0, tf, h, forces=forces, compiled=compiled)
            held = tr.friction.stuck.mean() if tr.friction is not None else float("nan")
            rows.append((label, us, held, np.abs(tr.budget).max() / np.abs(tr.energy).max(),
                         np.abs(tr.stats["residual_g"]).max(),
                         float(tr.stats["newton_iterations"].mean())))
        print(f"\n{name}: T = {tf:g} s, dt = {h:g}")
        print("| run | us/step | x no friction (python) | held (joint-steps) | budget | max|g| "
              "| Newton it./step |")
        for label, us, held, b, g, it in rows:
            print(f"| {label} | {us:.0f} | {us / rows[1][1]:.2f} | {held:.2f} | {b:.1e} | "
                  f"{g:.1e} | {it:.2f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--T", type=float, default=10.0)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--forces", action="store_true", help="the four-bar with force elements")
    ap.add_argument("--friction", action="store_true",
                    help="exact stick–slip friction in the step (four-bar, Stewart)")
    ap.add_argument("--mujoco-convergence", action="store_true",
                    help="MuJoCo's Stewart platform at 2 dt and 2 dt/10 against energy_momentum")
    ap.add_argument("--mechanisms", default=None,
                    help="comma-separated: " + ", ".join(MECHANISMS)
                    + " (default four-bar,rssr,stewart; with --forces four-bar)")
    a = ap.parse_args()
    T = 1.0 if a.quick else a.T
    dt = a.dt
    with open("/proc/loadavg") as f:
        print("load before:", f.read().strip())
    print(f"T = {T} s, dt = {dt}")
    if a.forces:
        forces_run(T, dt, (a.mechanisms or "four-bar").split(","))
        with open("/proc/loadavg") as f:
            print("load after:", f.read().strip())
        return
    if a.friction:
        friction_run(T, dt)
        return
    if a.mujoco_convergence:
        mujoco_stewart_convergence(T / 5, 2 * dt)
        with open("/proc/loadavg") as f:
            print("load after:", f.read().strip())
        return
    for name in (a.mechanisms or "four-bar,rssr,stewart").split(","):
        build, mujoco_run, fT, fdt = MECHANISMS[name]
        print(f"\n{name}: T = {fT * T:g} s, dt = {fdt * dt:g}")
        s, q0, v0 = build()
        if name == "stewart":
            c = stewart_mjcf_check(s, q0, v0, fdt * dt)
            print(f"stewart_mjcf at the start (E0 {c['E0']:.6g}, max|M| {c['maxM']:g}): "
                  f"kanedyn's loader max|ΔM| {c['loader_dM']:.1e}, |ΔE| {c['loader_dE']:.1e}, "
                  f"|g| {c['loader_g']:.1e}; MuJoCo max|ΔM| {c['mujoco_dM']:.1e}, "
                  f"|ΔE| {c['mujoco_dE']:.1e}, max|Δqacc_smooth| {c['mujoco_dqacc']:.1e} "
                  f"(of {c['max_qacc']:.3g}), max gap {c['mujoco_g']:.1e}")
        rows = run_all(s, q0, v0, fT * T, fdt * dt, mujoco_run)
        table(name, rows)
        em = rows["energy_momentum"]
        if "Gv" in em:
            print(f"energy_momentum: max|G v| {em['Gv']:.2e}, Newton iterations per step "
                  f"{em['newton']:.2f}")
    with open("/proc/loadavg") as f:
        print("load after:", f.read().strip())


if __name__ == "__main__":
    main()
