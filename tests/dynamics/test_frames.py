"""Frames: pose, velocity, acceleration, Jacobian and J̇ of any frame, about its own origin.

Oracles: Pinocchio 4.1 (``getFrameJacobian``, ``getFrameVelocity``,
``getFrameAcceleration``, ``getFrameClassicalAcceleration``,
``getFrameJacobianTimeVariation`` — an independent implementation with the same
definition of each reference frame), finite differences of the frame's pose on the
configuration manifold (``kd.integrate_configuration``), and the numpy reference of
:mod:`kanedyn.dynamics.frames_reference` for the compiled kernel.

Tolerances: Pinocchio and kanedyn agree to rounding (1e-10 relative to the largest
entry); a central difference with step h has truncation error ~h² times the third
derivative and rounding ~1e-16/h, so h = 1e-5 gives ~1e-9 on unit-size motions
(checked at 1e-7); the second difference with h = 1e-4 has ~1e-8 of each (checked
at 1e-5).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics import frames_reference as ref
from kanedyn.model.urdf import ROBOTS, robot_path
from kanedyn.spatial import Transform, inertia_parameters, quat_to_matrix, so3_log

REFS = ("local", "local_world_aligned", "world")


def _close(x, y, rtol):
    y = np.asarray(y)
    scale = max(1.0, float(np.abs(y).max()) if y.size else 1.0)
    np.testing.assert_allclose(x, y, rtol=0, atol=rtol * scale)


def _random_placement(rng):
    qr = rng.normal(size=4)
    return quat_to_matrix(qr / np.linalg.norm(qr)), rng.uniform(-0.4, 0.4, 3)


def _trees():
    """Random trees with every joint type, fixed and floating, each with a user frame on
    a random body (and one on that frame: placements compose)."""
    out = []
    for seed, floating in ((0, False), (1, True), (2, False), (3, True)):
        m = kd.models.random_tree(8, seed=seed, floating_base=floating,
                                  joint_types=("revolute", "prismatic", "helical",
                                               "spherical", "planar"))
        rng = np.random.default_rng(seed)
        m = m.add_frame("sensor", m.body_names[int(rng.integers(m.nb))], _random_placement(rng))
        m = m.add_frame("tip", "sensor", _random_placement(rng))
        out.append(m)
    return out


TREES = _trees()


# --------------------------------------------------------------------------------------
# Pinocchio
# --------------------------------------------------------------------------------------

pin = pytest.importorskip("pinocchio")
_here = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "_urdf_pinocchio", _here.parent / "model" / "test_urdf_pinocchio.py")
_up = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_up)  # its joint maps and random-tree URDFs


def _pin_of_tree(model):
    """The same tree in Pinocchio, joint by joint, with the frames of ``model``; and the
    maps q ↦ q_pin, v_pin = v[iv]."""
    pm = pin.Model()
    pieces, iv = [], []
    for b in model.bodies:
        j, X = b.joint, b.placement
        kind = j.kind
        if kind == "revolute":
            jm = pin.JointModelRevoluteUnaligned(np.asarray(j.axis, float))
        elif kind == "prismatic":
            jm = pin.JointModelPrismaticUnaligned(np.asarray(j.axis, float))
        elif kind == "helical":
            jm = pin.JointModelHelicalUnaligned(np.asarray(j.axis, float), float(j.pitch))
        elif kind == "spherical":
            jm = pin.JointModelSpherical()
        elif kind == "planar":
            jm = pin.JointModelPlanar()
        else:
            assert kind == "free"
            jm = pin.JointModelFreeFlyer()
        jid = pm.addJoint(b.parent + 1, jm, pin.SE3(X.rotation, X.translation), j.name)
        m, c, Ic = inertia_parameters(b.inertia)
        pm.appendBodyToJoint(jid, pin.Inertia(m, c, Ic), pin.SE3.Identity())
        q0, v0 = b.iq.start, b.iv.start
        if kind in ("revolute", "prismatic", "helical"):
            pieces.append(lambda q, q0=q0: q[[q0]])
            iv.append(v0)
        elif kind == "spherical":
            pieces.append(lambda q, q0=q0: q[[q0 + 1, q0 + 2, q0 + 3, q0]])
            iv += [v0, v0 + 1, v0 + 2]
        elif kind == "planar":
            pieces.append(lambda q, q0=q0: np.array([q[q0], q[q0 + 1], np.cos(q[q0 + 2]),
                                                     np.sin(q[q0 + 2])]))
            iv += [v0, v0 + 1, v0 + 2]
        else:
            pieces.append(lambda q, q0=q0: q[[q0, q0 + 1, q0 + 2, q0 + 4, q0 + 5, q0 + 6,
                                              q0 + 3]])
            iv += [v0 + 3, v0 + 4, v0 + 5, v0, v0 + 1, v0 + 2]
    for name, fr in model.frames.items():
        if fr.body >= 0 and fr.name not in model.body_names:
            pm.addFrame(pin.Frame(name, fr.body + 1, 0,
                                  pin.SE3(fr.placement.rotation, fr.placement.translation),
                                  pin.FrameType.OP_FRAME))
    for b in model.bodies:
        pm.addFrame(pin.Frame(b.name, b.index + 1, 0, pin.SE3.Identity(), pin.FrameType.BODY))
    return pm, (lambda q: np.concatenate([f(q) for f in pieces])), np.array(iv)


_PIN_REF = {"local": "LOCAL", "local_world_aligned": "LOCAL_WORLD_ALIGNED", "world": "WORLD"}


def _swap(x):
    """Pinocchio's [v; ω] rows as kanedyn's [ω; v]."""
    return np.concatenate([x[3:], x[:3]], axis=0)


def _compare_with_pinocchio(model, pm, to_pin_q, iv, names, seed, rtol=1e-10):
    pd = pm.createData()
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(2):
        q = kd.random_configuration(model, rng)
        v, a = rng.normal(size=(2, model.nv))
        qp, vp, ap = to_pin_q(q), v[iv], a[iv]
        pin.forwardKinematics(pm, pd, qp, vp, ap)
        pin.updateFramePlacements(pm, pd)
        pin.computeJointJacobians(pm, pd, qp)
        pin.computeJointJacobiansTimeVariation(pm, pd, qp, vp)
        for name in names:
            fid = pm.getFrameId(name)
            R, p = kd.frame_placement(model, q, name)
            _close(R, pd.oMf[fid].rotation, rtol)
            _close(p, pd.oMf[fid].translation, rtol)
            for r in REFS:
                rf = getattr(pin.ReferenceFrame, _PIN_REF[r])
                J = kd.frame_jacobian(model, q, name, r)[:, iv]
                _close(J, _swap(pin.getFrameJacobian(pm, pd, fid, rf)), rtol)
                dJ = kd.frame_jacobian_time_variation(model, q, v, name, r)[:, iv]
                dJp = _swap(pin.getFrameJacobianTimeVariation(pm, pd, fid, rf))
                _close(dJ, dJp, rtol)
                _close(dJ @ vp, dJp @ vp, rtol)  # J̇ v
                _close(kd.frame_velocity(model, q, v, name, r),
                       _swap(pin.getFrameVelocity(pm, pd, fid, rf).vector), rtol)
                _close(kd.frame_acceleration(model, q, v, a, name, r, classical=False),
                       _swap(pin.getFrameAcceleration(pm, pd, fid, rf).vector), rtol)
                _close(kd.frame_acceleration(model, q, v, a, name, r, classical=True),
                       _swap(pin.getFrameClassicalAcceleration(pm, pd, fid, rf).vector),
                       rtol)
                checked += 1
    assert checked >= 6 * len(names)


ROBOT_CASES = [(n, f) for n in ROBOTS for f in (False, True)]


@pytest.mark.parametrize("name, floating", ROBOT_CASES,
                         ids=[f"{n}-{'floating' if f else 'fixed'}" for n, f in ROBOT_CASES])
def test_shipped_robots_match_pinocchio(name, floating):
    path = str(robot_path(name))
    model = kd.load_urdf(path, floating_base=floating)
    pm = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating
          else pin.buildModelFromUrdf(path))
    to_pin_q, iv = _up._maps(model, pm)
    # every link on a moving body, merged fixed links (TCP, sensors) and bodies alike;
    # plus a user frame on the last body's TCP-like leaf
    names = [n for n, fr in model.frames.items() if fr.body >= 0 and pm.existFrame(n)]
    merged = [n for n in names if n not in model.body_names]
    assert merged or name == "chain20", "expected merged fixed links to test"
    _compare_with_pinocchio(model, pm, to_pin_q, iv, names[-12:], seed=len(name))


@pytest.mark.parametrize("k", range(len(TREES)))
def test_random_trees_every_joint_type_match_pinocchio(k):
    model = TREES[k]
    pm, to_pin_q, iv = _pin_of_tree(model)
    names = ["sensor", "tip", model.body_names[-1], model.body_names[0]]
    _compare_with_pinocchio(model, pm, to_pin_q, iv, names, seed=k)


@pytest.mark.parametrize("seed", range(4))
def test_random_urdf_trees_match_pinocchio(seed, tmp_path):
    xml = _up.random_urdf(seed)
    model = kd.load_urdf_string(xml, floating_base=bool(seed % 2))
    path = tmp_path / "random.urdf"
    path.write_text(xml)
    pm = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if seed % 2
          else pin.buildModelFromUrdf(str(path)))
    to_pin_q, iv = _up._maps(model, pm)
    names = [n for n, fr in model.frames.items() if fr.body >= 0 and pm.existFrame(n)]
    _compare_with_pinocchio(model, pm, to_pin_q, iv, names, seed=seed)


# --------------------------------------------------------------------------------------
# Independently of Pinocchio: finite differences on the manifold
# --------------------------------------------------------------------------------------

def _world_velocity_fd(model, q, v, name, h=1e-5):
    """(ω, ṗ) of the frame in world axes by central differences along q ⊕ t v."""
    qp = kd.integrate_configuration(model, q, v, h)
    qm = kd.integrate_configuration(model, q, v, -h)
    Rp, pp = kd.frame_placement(model, qp, name)
    Rm, pm_ = kd.frame_placement(model, qm, name)
    return np.concatenate([so3_log(Rp @ Rm.T) / (2 * h), (pp - pm_) / (2 * h)])


CASES_FD = [(m, n) for m in TREES for n in ("sensor", "tip")]
CASES_FD += [(kd.load_robot("panda"), "panda_hand_tcp"),
             (kd.load_robot("humanoid", floating_base=True), "rgbd_link")]


@pytest.mark.parametrize("model, name", CASES_FD, ids=[f"{m.name}-{n}" for m, n in CASES_FD])
def test_jacobian_times_v_is_the_derivative_of_the_pose(model, name):
    rng = np.random.default_rng(3)
    q = kd.random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    fd = _world_velocity_fd(model, q, v, name)
    J = kd.frame_jacobian(model, q, name, "local_world_aligned")
    _close(J @ v, fd, 1e-7)
    _close(kd.frame_velocity(model, q, v, name, "local_world_aligned"), fd, 1e-7)
    # local: the same motion in the frame's axes
    R, p = kd.frame_placement(model, q, name)
    JL = kd.frame_jacobian(model, q, name, "local")
    _close(JL @ v, np.concatenate([R.T @ fd[:3], R.T @ fd[3:]]), 1e-7)
    # world: ω and the velocity of the body point at the world origin, ṗ - ω × p
    JW = kd.frame_jacobian(model, q, name, "world")
    _close(JW @ v, np.concatenate([fd[:3], fd[3:] - np.cross(fd[:3], p)]), 1e-7)


@pytest.mark.parametrize("model, name", CASES_FD, ids=[f"{m.name}-{n}" for m, n in CASES_FD])
def test_time_variation_and_classical_acceleration_by_differences(model, name):
    rng = np.random.default_rng(4)
    q = kd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    h = 1e-5
    qp = kd.integrate_configuration(model, q, v, h)
    qm = kd.integrate_configuration(model, q, v, -h)
    for r in REFS:  # J̇ = d/dt J(q(t)) along q ⊕ t v
        dJ_fd = (kd.frame_jacobian(model, qp, name, r) - kd.frame_jacobian(model, qm, name, r))
        _close(kd.frame_jacobian_time_variation(model, q, v, name, r), dJ_fd / (2 * h), 1e-7)
    # the point's acceleration: second difference along q(t) = q ⊕ (t v + t²/2 a), whose
    # speeds are v + t a + O(t²) (the exponential map: ad_ξ ξ = 0)
    h = 1e-4
    p = [kd.frame_placement(model, kd.integrate_configuration(model, q, s * v + s * s / 2 * a,
                                                              1.0), name)[1]
         for s in (-h, 0.0, h)]
    pdd = (p[0] - 2 * p[1] + p[2]) / h**2
    acc = kd.frame_acceleration(model, q, v, a, name, "local_world_aligned", classical=True)
    _close(acc[3:], pdd, 1e-5)
    # ω̇ = J_ω a + J̇_ω v (both checked above); and J a + J̇ v is the acceleration the
    # module documents for each reference, from the forward pass (another code path)
    for r, classical in (("local", False), ("local_world_aligned", True), ("world", False)):
        J = kd.frame_jacobian(model, q, name, r)
        dJ = kd.frame_jacobian_time_variation(model, q, v, name, r)
        _close(J @ a + dJ @ v, kd.frame_acceleration(model, q, v, a, name, r, classical),
               1e-12)


# --------------------------------------------------------------------------------------
# The compiled kernel against the numpy reference; batches
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("k", range(len(TREES)))
def test_kernel_matches_reference_and_batches_give_the_same_bits(k):
    model = TREES[k]
    rng = np.random.default_rng(k)
    N = 5
    Q = np.array([kd.random_configuration(model, rng) for _ in range(N)])
    V, A = rng.normal(size=(2, N, model.nv))
    for name in ("sensor", "tip", model.body_names[-1], model.root_name):
        R, p = kd.frame_placement(model, Q, name)
        assert R.shape == (N, 3, 3) and p.shape == (N, 3)
        for r in REFS:
            J = kd.frame_jacobian(model, Q, name, r)
            dJ = kd.frame_jacobian_time_variation(model, Q, V, name, r)
            vel = kd.frame_velocity(model, Q, V, name, r)
            acc = kd.frame_acceleration(model, Q, V, A, name, r)
            sacc = kd.frame_acceleration(model, Q, V, A, name, r, classical=False)
            assert J.shape == dJ.shape == (N, 6, model.nv) and vel.shape == acc.shape == (N, 6)
            for i in range(N):
                q, v, a = Q[i], V[i], A[i]
                Rr, pr = ref.frame_placement(model, q, name)
                _close(R[i], Rr, 1e-12)
                _close(p[i], pr, 1e-12)
                _close(J[i], ref.frame_jacobian(model, q, name, r), 1e-12)
                _close(dJ[i], ref.frame_jacobian_time_variation(model, q, v, name, r), 1e-12)
                _close(vel[i], ref.frame_velocity(model, q, v, name, r), 1e-12)
                _close(acc[i], ref.frame_acceleration(model, q, v, a, name, r, True), 1e-12)
                _close(sacc[i], ref.frame_acceleration(model, q, v, a, name, r, False), 1e-12)
                # one state alone: the same bits as in the batch
                assert np.array_equal(kd.frame_jacobian(model, q, name, r), J[i])
                assert np.array_equal(kd.frame_jacobian_time_variation(model, q, v, name, r),
                                      dJ[i])
                assert np.array_equal(kd.frame_acceleration(model, q, v, a, name, r), acc[i])
    # a single q broadcasts against a batch of v
    vel = kd.frame_velocity(model, Q[0], V, "tip", "world")
    assert vel.shape == (N, 6)
    _close(vel[3], kd.frame_velocity(model, Q[0], V[3], "tip", "world"), 0)


def test_frame_on_the_world_is_still():
    model = kd.load_robot("panda")
    X = _random_placement(np.random.default_rng(5))
    model = model.add_frame("mark", model.root_name, X)  # the root link is the world
    assert model.frames["mark"].body == -1
    q = kd.random_configuration(model, 0)
    v = np.ones(model.nv)
    R, p = kd.frame_placement(model, q, "mark")
    _close(R, X[0], 1e-15)
    _close(p, X[1], 1e-15)
    R, p = kd.frame_placement(model, q, model.root_name)
    assert np.array_equal(R, np.eye(3)) and not p.any()
    for r in REFS:
        assert not kd.frame_jacobian(model, q, "mark", r).any()
        assert not kd.frame_velocity(model, q, v, "mark", r).any()
        assert not kd.frame_acceleration(model, q, v, v, "mark", r).any()
        assert not kd.frame_jacobian_time_variation(model, q, v, "mark", r).any()


# --------------------------------------------------------------------------------------
# The wrong-TCP regression (issue 14) and the audit of callers
# --------------------------------------------------------------------------------------

def test_regression_panda_tcp_jacobian_is_the_tcps():
    """kd.jacobian(model, q, "panda_hand_tcp", frame="local_world_aligned") returned the
    Jacobian of the body origin the TCP is merged into: its linear velocity was 58 % off
    a finite difference of kd.frame_placement."""
    model = kd.load_robot("panda")
    assert "panda_hand_tcp" in model.frames and "panda_hand_tcp" not in model.body_names
    rng = np.random.default_rng(14)
    q = kd.random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    fd = _world_velocity_fd(model, q, v, "panda_hand_tcp")
    J = kd.jacobian(model, q, "panda_hand_tcp", frame="local_world_aligned")
    _close(J @ v, fd, 1e-7)
    np.testing.assert_array_equal(
        J, kd.frame_jacobian(model, q, "panda_hand_tcp", "local_world_aligned"))
    # the body's own Jacobian is another point's: what used to be returned
    body = model.bodies[model.frames["panda_hand_tcp"].body].name
    Jb = kd.jacobian(model, q, body, frame="local_world_aligned")
    assert np.linalg.norm((Jb @ v - fd)[3:]) > 0.1 * np.linalg.norm(fd[3:])
    for r in REFS:  # every reference goes to the frame
        np.testing.assert_array_equal(kd.jacobian(model, q, "panda_hand_tcp", frame=r),
                                      kd.frame_jacobian(model, q, "panda_hand_tcp", r))


def test_external_wrench_on_a_frame_acts_at_the_frame():
    from kanedyn.forces import ExternalWrench

    model = kd.load_robot("panda")
    system = kd.ModelSystem(model)
    w = ExternalWrench("panda_hand_tcp", [0, 0, 0, 1.0, -2.0, 0.5], frame="local").bind(system)
    rng = np.random.default_rng(1)
    q, v = kd.random_configuration(model, rng), np.zeros(model.nv)
    J = kd.frame_jacobian(model, q, "panda_hand_tcp", "local")
    _close(w.generalized_force(0.0, q, v), J.T @ np.array([0, 0, 0, 1.0, -2.0, 0.5]), 1e-14)


# --------------------------------------------------------------------------------------
# Model.add_frame and bad input
# --------------------------------------------------------------------------------------

def test_add_frame_returns_a_new_model_and_composes():
    model = kd.load_robot("panda")
    X = (quat_to_matrix(np.array([0.9, 0.1, -0.3, 0.2]) / np.linalg.norm([0.9, 0.1, -0.3, 0.2])),
         np.array([0.01, 0.02, 0.1]))
    m2 = model.add_frame("camera", "panda_hand_tcp", X)
    assert "camera" in m2.frames and "camera" not in model.frames
    assert m2.bodies is model.bodies and m2.nq == model.nq
    q = kd.random_configuration(model, 2)
    Rt, pt = kd.frame_placement(model, q, "panda_hand_tcp")
    R, p = kd.frame_placement(m2, q, "camera")
    _close(R, Rt @ X[0], 1e-14)
    _close(p, pt + Rt @ X[1], 1e-14)
    # a Transform works as well as (R, p); the world as parent too
    m3 = m2.add_frame("cam2", "camera", Transform.from_pose(*X)).add_frame("mark", m2.root_name)
    R3, _ = kd.frame_placement(m3, q, "cam2")
    _close(R3, R @ X[0], 1e-14)
    assert m3.frames["mark"].body == -1


@pytest.mark.parametrize("parent, placement, match", [
    ("no_such_link", None, "parent 'no_such_link' does not exist"),
    (99, None, "parent body index 99"),
    ("panda_hand", (np.eye(3), [0.0, np.nan, 0.0]), "frame 'f': placement is not finite"),
    ("panda_hand", (2 * np.eye(3), [0.0, 0.0, 0.0]), "frame 'f'.*not a proper rotation"),
    ("panda_hand", "x", "frame 'f': placement must be"),
])
def test_add_frame_bad_input(parent, placement, match):
    model = kd.load_robot("panda")
    with pytest.raises(kd.ModelError, match=match):
        model.add_frame("f", parent, placement)


@pytest.mark.parametrize("name", ["panda_hand_tcp", "panda_link3", "panda_link0"])
def test_add_frame_duplicate_name(name):
    with pytest.raises(kd.ModelError, match=f"frame '{name}' already exists"):
        kd.load_robot("panda").add_frame(name, "panda_hand")


def test_unknown_frame_lists_frames_and_bodies():
    model = kd.load_robot("panda")
    q = kd.neutral(model)
    for f in (lambda: kd.frame_jacobian(model, q, "tcp"),
              lambda: kd.frame_placement(model, q, "tcp"),
              lambda: kd.jacobian(model, q, "tcp"),
              lambda: kd.frame_velocity(model, q, q[:model.nv], "tcp")):
        with pytest.raises(kd.ModelError, match="no frame or body named 'tcp'") as e:
            f()
        assert "panda_hand_tcp" in str(e.value) and "panda_link7" in str(e.value)
    with pytest.raises(kd.KanedynError, match="unknown reference 'body'"):
        kd.frame_jacobian(model, q, "panda_hand_tcp", "body")


def test_bad_states_name_the_input():
    model = kd.models.random_tree(4, seed=1, floating_base=True)
    q = kd.neutral(model)
    with pytest.raises(kd.StateError, match="q"):
        kd.frame_jacobian(model, q[:-1], "body2")
    with pytest.raises(kd.StateError, match="v"):
        kd.frame_velocity(model, q, np.zeros(model.nv + 1), "body2")
    bad = q.copy()
    bad[3:7] = [2.0, 0, 0, 0]
    with pytest.raises(kd.StateError, match="quaternion"):
        kd.frame_placement(model, bad, "body2")
    with pytest.raises(kd.StateError, match="not finite|NaN|nan"):
        kd.frame_velocity(model, q, np.full(model.nv, np.nan), "body2")


@pytest.mark.parametrize("kind", ["point", "weld"])
def test_loop_closure_on_a_frame_acts_at_the_frame(kind):
    """A loop closure named by frames is the closure at those frames: the same g, G and
    γ as one written on their bodies with the frames' placements composed by hand."""
    from kanedyn.constraints import ConstrainedSystem, LoopClosure

    base = kd.models.random_tree(4, seed=3, joint_types=("revolute",))
    rng = np.random.default_rng(0)
    Xa, Xb, Xc = (_random_placement(rng) for _ in range(3))
    model = base.add_frame("fa", "body1", Xa).add_frame("fb", "body3", Xb)
    on_frames = ConstrainedSystem(model, [LoopClosure("fa", "fb", kind, frame_a=Xc,
                                                      name="cut")])
    by_hand = ConstrainedSystem(model, [LoopClosure(
        1, 3, kind, frame_a=(Xa[0] @ Xc[0], Xa[1] + Xa[0] @ Xc[1]), frame_b=Xb, name="cut")])
    q, v = rng.normal(size=4), rng.normal(size=4)
    for f in ("constraint", "constraint_matrix"):
        a, b = getattr(on_frames, f)(0, q), getattr(by_hand, f)(0, q)
        _close(a, b, 1e-14)
    _close(on_frames.gamma(0, q, v), by_hand.gamma(0, q, v), 1e-14)
    # and not at the body origins
    at_origins = ConstrainedSystem(model, [LoopClosure(1, 3, kind, frame_a=Xc, name="cut")])
    assert np.abs(at_origins.constraint(0, q) - on_frames.constraint(0, q)).max() > 1e-3


def test_batch_mass_parameter_refuses_a_frame():
    model = kd.load_robot("panda")
    Q = np.tile(kd.neutral(model), (2, 1))
    with pytest.raises(kd.StateError, match="'panda_hand_tcp' is not a body; it is a frame "
                                            "on body 'panda_link7'"):
        kd.simulate_batch(model, Q, np.zeros_like(Q), 0.01, method="rk4", dt=0.01,
                          params={"mass:panda_hand_tcp": [1.0, 2.0]})


def test_copies_and_pickles_of_a_model_make_their_own_frame_cache():
    """The per-frame arrays (flat model, placement, workspace) cached on a Model are not
    carried by a deep copy or a pickle, which then build theirs."""
    import copy
    import pickle

    model = kd.load_robot("panda")
    q = kd.random_configuration(model, 6)
    J = kd.frame_jacobian(model, q, "panda_hand_tcp", "world")
    for other in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert not getattr(other, "_kd_frames", None)
        np.testing.assert_array_equal(kd.frame_jacobian(other, q, "panda_hand_tcp", "world"), J)
    # a model with another gravity or another frame is a new Model with its own cache
    m2 = model.add_frame("x", "panda_hand_tcp", (np.eye(3), [0.0, 0.0, 0.1]))
    assert not getattr(m2, "_kd_frames", None)
    R, p = kd.frame_placement(m2, q, "x")
    Rt, pt = kd.frame_placement(model, q, "panda_hand_tcp")
    _close(p, pt + 0.1 * Rt[:, 2], 1e-14)


def test_overflow_is_an_error_naming_the_state():
    model = kd.load_robot("panda")
    q = kd.neutral(model)
    with pytest.raises(kd.StateError, match="not finite for finite input —"):
        kd.frame_velocity(model, q, np.full(model.nv, 1e308), "panda_hand_tcp")
    Q, V = np.tile(q, (3, 1)), np.zeros((3, model.nv))
    V[1] = 1e308
    with pytest.raises(kd.StateError, match=r"\(state 1 of the batch\)"):
        kd.frame_jacobian_time_variation(model, Q, V, "panda_hand_tcp", "world")
