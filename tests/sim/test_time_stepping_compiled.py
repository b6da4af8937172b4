"""The compiled time-stepping with exact joint friction: its box LCP against an enumeration
of stick sets and against the event-driven simulation's mode enumeration, the compiled run
against the Python reference step for step, and seven joints held at once until an
analytic break-away time."""

import itertools

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import friction
from kanedyn.forces import JointDamper, JointSpring, SinusoidalTorque
from kanedyn.sim.stickslip import _Problem
from kanedyn.sim.time_stepping import time_stepping
from kanedyn.sim.time_stepping_compiled import box_lcp


def enumerate_blcp(W, w, c):
    """The box LCP by trying every assignment (stuck, at +c, at −c): the consistent one
    (an independent oracle, exponential in the size)."""
    n = len(w)
    found = []
    for combo in itertools.product((0, 1, -1), repeat=n):
        F = [i for i in range(n) if combo[i] == 0]
        lam = np.array([combo[i] * c[i] for i in range(n)], float)
        if F:
            B = [i for i in range(n) if combo[i] != 0]
            lam[F] = np.linalg.solve(W[np.ix_(F, F)], -(w[F] + W[np.ix_(F, B)] @ lam[B]))
        u = w + W @ lam
        ok = all(abs(lam[i]) <= c[i] * (1 + 1e-12) if combo[i] == 0
                 else combo[i] * u[i] <= 1e-12 * np.abs(w).max() for i in range(n))
        if ok:
            found.append((np.array(combo), lam))
    return found


def test_box_lcp_equals_the_enumeration_of_stick_sets():
    """On the Delassus matrices dt M⁻¹ of a 4-link 3D arm (strongly coupled) and random
    loads and levels, the active-set solution is the one consistent assignment."""
    rng = np.random.default_rng(3)
    model = kd.models.pendulum_chain(4, planar=False, length=0.3, radius=0.05)
    seen = set()
    for _ in range(60):
        W = 1e-3 * np.linalg.inv(kd.crba(model, rng.uniform(-2, 2, 4)))
        w = 1e-3 * rng.normal(size=4) * 10.0
        c = rng.uniform(0.05, 2.0, 4)
        (combo, ref), = enumerate_blcp(W, w, c)  # unique: W is positive definite
        lam, state = rng.normal(size=4), rng.integers(-1, 2, 4)  # any warm start
        assert box_lcp(W, w, c, lam, state) > 0
        np.testing.assert_array_equal(state, combo)
        np.testing.assert_allclose(lam, ref, rtol=1e-10, atol=1e-14 * c.max())
        seen.add(tuple(combo != 0))
    assert len(seen) > 5  # stuck and sliding joints in many patterns


def test_box_lcp_meets_the_complementarity_conditions_beyond_enumeration():
    """Up to 20 joints (beyond any enumeration), ill-conditioned W (cond 1e6), zero levels
    and zero loads: the solution satisfies the conditions that define it — stuck joints
    (|λ| < c) at zero slip, the others sliding against λ = ±c — to round-off."""
    rng = np.random.default_rng(1)
    for trial in range(300):
        n = int(rng.integers(5, 21))
        if trial % 3 == 0:
            U, _ = np.linalg.qr(rng.normal(size=(n, n)))
            W = U @ np.diag(np.geomspace(1.0, 1e-6, n)) @ U.T
        else:
            A = rng.normal(size=(n, n))
            W = A @ A.T + 1e-3 * np.eye(n)
        w = rng.normal(size=n) * (trial % 17 != 0)
        c = rng.uniform(0.0, 2.0, n) * (rng.random(n) > 0.1)
        lam, state = rng.normal(size=n), rng.integers(-1, 2, n)
        assert box_lcp(W, w, c, lam, state) > 0
        u = w + W @ lam
        scale = np.abs(w).max() + (np.abs(W) @ c).max() + 1e-300
        stuck = state == 0
        assert np.all(np.abs(lam) <= c)
        assert np.abs(u[stuck]).max(initial=0.0) <= 1e-14 * scale
        np.testing.assert_array_equal(lam[~stuck], state[~stuck] * c[~stuck])
        assert (u * state)[~stuck].max(initial=0.0) <= 1e-14 * scale


def test_complementarity_agrees_with_the_event_driven_enumeration():
    """At rest, one step of the velocity-level problem is the acceleration-level one times
    dt: the stick set and the holding forces of the time-stepping equal those that the
    event-driven simulation's enumeration (up to 4 joints) picks."""
    rng = np.random.default_rng(7)
    model = kd.models.pendulum_chain(4, planar=False, length=0.3, radius=0.05)
    names = model.joint_names
    patterns = set()
    for _ in range(12):
        q0 = rng.uniform(-1.2, 1.2, 4)
        Fs = rng.uniform(0.3, 3.0, 4)
        joints = {j: friction.Stribeck(0.8 * f, f, 0.05, 2.0, 0.1) for j, f in
                  zip(names, Fs, strict=True)}
        pb = _Problem(model, joints, None, [], None)
        y = np.r_[q0, np.zeros(4), np.zeros(3)]
        mode = np.zeros(4, int)
        pb.resolve(0.0, y, mode, [], candidates=list(range(4)))
        _, _, tf_event, _ = pb.evaluate(0.0, y, mode)
        st = time_stepping(model, q0, np.zeros(4), 1e-4, 1e-4, joints)
        stuck = st.friction.stuck[1]
        np.testing.assert_array_equal(stuck, mode == 0)
        moving = ~stuck
        np.testing.assert_array_equal(np.sign(st.v[1][moving]), mode[moving])
        np.testing.assert_allclose(st.friction.force[1], tf_event, rtol=1e-9)
        patterns.add(tuple(stuck))
    assert len(patterns) >= 3


def _arm(gravity=(0.0, 0.0, -9.81)):
    return kd.models.pendulum_chain(7, planar=False, length=0.3, mass=1.0, radius=0.1,
                                    gravity=gravity)


def test_compiled_run_equals_the_python_reference_step_for_step():
    """A 7-link arm under gravity, exact Stribeck friction on five joints, smoothed laws on
    two, a spring, a damper and periodic torques: the compiled loop and the Python steps
    agree to round-off at every step (the same BLCP solver, warm starts and stick sets)."""
    model = _arm()
    names = model.joint_names
    q0, v0 = np.linspace(0.9, 0.3, 7), np.zeros(7)
    Fs = 1.2 * np.abs(kd.gravity_torques(model, q0)) + 0.3  # holds the arm, nearly
    laws = [friction.Stribeck(0.7 * f, f, 0.05, 2.0, 0.05) for f in Fs]
    joints = {j: (law if k < 5 else law.smoothed("tanh", 1e-2))
              for k, (j, law) in enumerate(zip(names, laws, strict=True))}
    forces = ([SinusoidalTorque(j, 0.5 * f, 3.0, phase=0.7 * k)
               for k, (j, f) in enumerate(zip(names, Fs, strict=True))]
              + [JointSpring(names[2], 4.0, 0.3), JointDamper(names[4], 0.05)])
    fast = time_stepping(model, q0, v0, 0.3, 1e-3, joints, forces=forces)
    ref = time_stepping(model, q0, v0, 0.3, 1e-3, joints, forces=forces, compiled=False)
    np.testing.assert_array_equal(fast.friction.stuck, ref.friction.stuck)
    switches = np.abs(np.diff(fast.friction.stuck[:, :5].astype(int), axis=0)).sum(axis=0)
    assert switches.sum() >= 8 and (switches > 0).sum() >= 3  # stick–slip on most
    np.testing.assert_allclose(fast.q, ref.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast.v, ref.v, rtol=0, atol=1e-11)
    np.testing.assert_allclose(fast.friction.force, ref.friction.force, rtol=0, atol=1e-11)
    for a, b in ((fast.energy, ref.energy), (fast.work_nc, ref.work_nc),
                 (fast.friction.dissipated, ref.friction.dissipated)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-11 * np.abs(b).max())


def test_compiled_run_with_armature_equals_the_python_reference():
    """Rotor inertias (armature) enter M and the energy (½ Σ J v²) in both loops alike."""
    from kanedyn.model.joints import Revolute

    b = kd.ModelBuilder("geared", gravity=(0.0, 0.0, -9.81))
    parent = None
    for k in range(3):
        parent = b.add_body(f"link{k}", parent,
                            Revolute(f"j{k}", axis=(0.0, 1.0, 0.0) if k % 2 == 0 else
                                     (1.0, 0.0, 0.0), armature=0.05 * (k + 1)),
                            placement=(np.eye(3), (0.0, 0.0, 0.0 if k == 0 else -0.3)),
                            mass=1.0, com=(0.0, 0.0, -0.15),
                            inertia=np.diag([0.008, 0.008, 0.001]))
    model = b.build()
    assert model.armature.any()
    joints = {f"j{k}": friction.Stribeck(1.0, 1.5, 0.05, 2.0, 0.1) for k in range(3)}
    forces = [SinusoidalTorque("j0", 4.0, 2.0), SinusoidalTorque("j2", 1.0, 3.0, phase=1.0)]
    q0 = np.array([0.6, -0.3, 0.4])
    fast = time_stepping(model, q0, np.zeros(3), 0.5, 1e-3, joints, forces=forces)
    ref = time_stepping(model, q0, np.zeros(3), 0.5, 1e-3, joints, forces=forces,
                        compiled=False)
    np.testing.assert_array_equal(fast.friction.stuck, ref.friction.stuck)
    assert 0 < fast.friction.stuck.mean() < 1
    np.testing.assert_allclose(fast.v, ref.v, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast.energy, ref.energy, rtol=0,
                               atol=1e-13 * np.abs(ref.energy).max())


def test_compiled_karnopp_equals_the_python_reference():
    """Karnopp bands (half-width 0.05 rad/s) on all seven joints: inside the band the
    clipped holding force of the band joints together, outside it the exact law, in the
    compiled loop as in the Python steps. (A band much narrower than the speed change one
    step of friction makes, dt Fs/m, chatters across it, and the chatter amplifies
    round-off ~1.4x a step; this band does not.)"""
    model = _arm()
    names = model.joint_names
    q0, v0 = np.linspace(0.9, 0.3, 7), np.zeros(7)
    Fs = 1.2 * np.abs(kd.gravity_torques(model, q0)) + 0.3
    joints = {j: friction.Karnopp(friction.Stribeck(0.7 * f, f, 0.05, 2.0, 0.05), 0.05)
              for j, f in zip(names, Fs, strict=True)}
    forces = [SinusoidalTorque(j, 0.5 * f, 3.0, phase=0.7 * k)
              for k, (j, f) in enumerate(zip(names, Fs, strict=True))]
    fast = time_stepping(model, q0, v0, 0.3, 1e-3, joints, forces=forces)
    ref = time_stepping(model, q0, v0, 0.3, 1e-3, joints, forces=forces, compiled=False)
    inside = np.abs(fast.v[:-1]) < 0.05
    assert 0.2 < inside.mean() < 0.9 and inside.any(axis=0).all()  # in and out, each joint
    np.testing.assert_allclose(fast.v, ref.v, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast.friction.force, ref.friction.force, rtol=0, atol=1e-11)


def _slider():
    from kanedyn.model.joints import Prismatic

    b = kd.ModelBuilder("slider", gravity=(0.0, 0.0, 0.0))
    b.add_body("block", None, Prismatic("x", axis=(1.0, 0.0, 0.0)), mass=1.0,
               inertia=np.eye(3) * 0.01)
    return b.build()


LUGRE = friction.LuGre(sigma0=1e5, sigma1=300.0, Fc=1.0, Fs=1.5, vs=0.01, delta=2.0,
                       sigma2=0.4)


def test_lugre_time_stepping_converges_to_the_event_driven_run():
    """A 1 kg slider under a constant 0.8 N (below Fc): LuGre's pre-sliding. The step
    (backward Euler in z) converges at first order to the event-driven run (LSODA, tight
    tolerances) — halving dt halves the error — and comes to rest where the bristles hold
    the load, z = F/σ0, exactly (at rest F = σ0 z)."""
    model, F = _slider(), 0.8
    load = [kd.forces.JointTorque([F], "x")]
    ev = kd.simulate(model, [0.0], [0.0], 0.05, method="stickslip", joints={"x": LUGRE},
                     forces=load, rtol=1e-10, atol=1e-14, dt=1e-3)
    err = []
    for dt in (4e-5, 2e-5):
        tr = kd.simulate(model, [0.0], [0.0], 0.05, method="time_stepping", dt=dt,
                         joints={"x": LUGRE}, forces=load)
        err.append(np.interp(0.01, tr.t, tr.q[:, 0]) - np.interp(0.01, ev.t, ev.q[:, 0]))
    assert 1.8 < err[0] / err[1] < 2.2 and abs(err[1]) < 3e-3 * abs(ev.q[-1, 0])
    rest = kd.simulate(model, [0.0], [0.0], 0.5, method="time_stepping", dt=1e-4,
                       joints={"x": LUGRE}, forces=load)
    assert abs(rest.v[-1, 0]) < 1e-15
    np.testing.assert_allclose(rest.friction.z[-1, 0], F / LUGRE.sigma0, rtol=1e-9)
    np.testing.assert_allclose(rest.friction.force[-1, 0], -F, rtol=1e-9)


def test_compiled_lugre_equals_the_python_reference():
    """LuGre on three joints of the arm beside exact laws on four: compiled = Python."""
    model = _arm()
    names = model.joint_names
    q0 = np.linspace(0.9, 0.3, 7)
    Fs = 1.2 * np.abs(kd.gravity_torques(model, q0)) + 0.3
    joints = {j: (friction.LuGre(1e4, 100.0, 0.7 * f, f, 0.05, 2.0, 0.05) if k < 3 else
                  friction.Stribeck(0.7 * f, f, 0.05, 2.0, 0.05))
              for k, (j, f) in enumerate(zip(names, Fs, strict=True))}
    forces = [SinusoidalTorque(j, 0.5 * f, 3.0, phase=0.7 * k)
              for k, (j, f) in enumerate(zip(names, Fs, strict=True))]
    fast = time_stepping(model, q0, np.zeros(7), 0.2, 1e-3, joints, forces=forces)
    ref = time_stepping(model, q0, np.zeros(7), 0.2, 1e-3, joints, forces=forces,
                        compiled=False)
    assert fast.friction.z.shape == (201, 3) and np.abs(fast.friction.z).max() > 0
    np.testing.assert_array_equal(fast.friction.stuck, ref.friction.stuck)
    np.testing.assert_allclose(fast.v, ref.v, rtol=0, atol=1e-11)
    np.testing.assert_allclose(fast.friction.z, ref.friction.z, rtol=0,
                               atol=1e-12 * np.abs(ref.friction.z).max())


def test_seven_joints_held_until_the_analytic_break_away():
    """No gravity, the arm at rest, the same torque A sin(ωt) on every joint, static levels
    Fs_k rising along the chain. While all joints are held the arm does not move, so each
    holding torque is exactly −τ (M v̇ = τ + λ with v̇ = 0): all seven stay at v = 0 until
    the first step whose torque exceeds the smallest Fs — t* = asin(Fs_0/A)/ω — and joint 0
    breaks free then, in the direction of its torque."""
    model = _arm(gravity=(0.0, 0.0, 0.0))
    names = model.joint_names
    Fs = 1.0 + 0.2 * np.arange(7)
    joints = {j: friction.Stribeck(0.7 * f, f, 0.05, 2.0, 0.01) for j, f in
              zip(names, Fs, strict=True)}
    A, f_hz, dt = 2.5, 0.5, 1e-3
    forces = [SinusoidalTorque(j, A, f_hz) for j in names]
    tr = kd.simulate(model, np.linspace(0.9, 0.3, 7), np.zeros(7), 0.3, method="time_stepping",
                     dt=dt, forces=[kd.forces.JointFriction(j, law) for j, law in joints.items()]
                     + forces)
    omega = 2 * np.pi * f_hz
    t_star = np.arcsin(Fs[0] / A) / omega                    # 0.1311 s
    n = np.arange(len(tr.t) - 1)                              # step n uses τ(n dt)
    n_star = int(n[A * np.sin(omega * n * dt) > Fs[0]][0])   # the first step past Fs_0
    assert abs(n_star * dt - t_star) <= dt
    held = slice(0, n_star + 1)                               # states before that step
    assert tr.friction.stuck[held].all()
    assert np.abs(tr.v[held]).max() <= 1e-12
    np.testing.assert_array_equal(tr.q[held], np.broadcast_to(tr.q[0], tr.q[held].shape))
    # the holding torques: −A sin(ω t) at every joint, below each Fs
    np.testing.assert_allclose(tr.friction.force[1:n_star + 1],
                               -A * np.sin(omega * n[:n_star, None] * dt)
                               * np.ones((1, 7)), rtol=1e-12, atol=1e-12)
    # the step past t*: joint 0 slides forwards (its torque is positive), held no more
    after = tr.friction.stuck[n_star + 1]
    assert not after[0] and tr.v[n_star + 1, 0] > 0.0
    assert abs(tr.friction.force[n_star + 1, 0] + Fs[0]) <= 1e-12


def test_time_stepping_budget_is_the_first_order_defect():
    """Semi-implicit Euler does not conserve energy: the budget E − E₀ − W_nc of the
    time-stepping closes to O(dt) (halving dt halves it), with stick–slip on."""
    model = _arm()
    law = friction.Stribeck(0.6, 0.9, 0.05, 2.0, 0.02)
    forces = ([kd.forces.JointFriction(j, law) for j in model.joint_names]
              + [SinusoidalTorque(j, 3.0, 1.5, phase=k) for k, j in
                 enumerate(model.joint_names)])
    err = []
    for dt in (2e-3, 1e-3, 5e-4):
        tr = kd.simulate(model, np.linspace(0.9, 0.3, 7), np.zeros(7), 0.5,
                         method="time_stepping", dt=dt, forces=forces)
        err.append(np.abs(tr.budget).max())
    ratios = np.array(err[:-1]) / np.array(err[1:])
    assert np.all((ratios > 1.6) & (ratios < 2.5)), ratios


def test_bad_input_names_the_element_and_the_joint():
    model = _arm()
    law = friction.Stribeck(0.6, 0.9, 0.05)
    with pytest.raises(kd.FrictionError, match="two friction laws"):
        kd.simulate(model, np.zeros(7), np.zeros(7), 0.01, method="time_stepping", dt=1e-3,
                    forces=[kd.forces.JointFriction("joint1", law)],
                    joints={"joint1": law})
    with pytest.raises(kd.FrictionError, match="JointFriction.*discontinuous.*joints="):
        time_stepping(model, np.zeros(7), np.zeros(7), 0.01, 1e-3, {"joint2": law},
                      forces=[kd.forces.JointFriction("joint1", law)])
    with pytest.raises(kd.FrictionError, match="joint1.*not a friction law, a LuGre law or"):
        kd.simulate(model, np.zeros(7), np.zeros(7), 0.01, method="time_stepping", dt=1e-3,
                    joints={"joint1": 2.0})
    with pytest.raises(kd.SolverError, match="discontinuous.*stickslip.*time_stepping"):
        kd.simulate(model, np.zeros(7), np.zeros(7), 0.01, method="avf", dt=1e-3,
                    forces=[kd.forces.JointFriction("joint1", law)])


def test_compiled_run_with_wrenches_equals_the_python_reference(monkeypatch, wrench_chain):
    """Exact Stribeck friction on two joints beside constant wrenches (their rows' τ = Jᵀf at
    each step's q) and a damper: the compiled loop against the Python reference, joints
    sticking and slipping."""
    from kanedyn.sim import time_stepping_compiled as tsc

    c = wrench_chain
    runs = []
    real = tsc.time_stepping_run
    monkeypatch.setattr(tsc, "time_stepping_run", lambda *a: runs.append(1) or real(*a))
    names = c.model.joint_names
    joints = {names[0]: friction.Stribeck(0.3, 0.5, 0.05, 2.0, 0.02),
              names[2]: friction.Stribeck(0.2, 0.3, 0.05, 2.0, 0.02)}
    fast = time_stepping(c.model, c.q0, c.v0, 0.3, 1e-3, joints, forces=c.elements())
    assert runs == [1]
    ref = time_stepping(c.model, c.q0, c.v0, 0.3, 1e-3, joints, forces=c.elements(),
                        compiled=False)
    assert fast.friction.stuck.any() and not fast.friction.stuck.all()
    np.testing.assert_array_equal(fast.friction.stuck, ref.friction.stuck)
    np.testing.assert_allclose(fast.q, ref.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast.v, ref.v, rtol=0, atol=1e-11)
    np.testing.assert_allclose(fast.work_nc, ref.work_nc, rtol=0,
                               atol=1e-11 * np.abs(ref.work_nc).max())
