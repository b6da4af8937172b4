"""kd.load_mjcf against MuJoCo itself: M(q) (mj_fullM), bias forces (qfrc_bias), joint
order, body masses and inertias, frame poses, at random states, for MJCF files written
here in the shapes of the public model collections and for gymnasium's assets.

Speeds are mapped where the conventions differ: a MuJoCo free joint's qvel is
(ṗ in world axes, ω in body axes), kanedyn's v = (ω, Rᵀṗ). With v_kd = T v_mj, the
kinetic energy gives M_mj = Tᵀ M_kd T, and the power balance τ_mj = Tᵀ τ_kd with
v̇_kd = T v̇_mj + Ṫ v_mj gives qfrc_bias = Tᵀ rnea(q, v_kd, a = Ṫ v_mj)
(Ṫ v_mj = (0, −ω × Rᵀṗ) on a free joint's rows).
"""

from __future__ import annotations

import glob
import os
import warnings

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.model.mjcf import parse_mjcf

mujoco = pytest.importorskip("mujoco")


@pytest.fixture(autouse=True, scope="module")
def _mujoco_warnings_kept_out_of_the_checkout():
    """MuJoCo's default warning handler appends to MUJOCO_LOG.TXT in the working directory
    (the checkout, under pytest); its warnings (e.g. settotalmass deprecated) are dropped."""
    old = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(lambda msg: None)
    yield
    mujoco.set_mju_user_warning(old)

# MuJoCo sums in another order and diagonalises body inertias by Jacobi sweeps; 1e-9
# relative is far above both round-off levels (~1e-14) and far below any modelling slip
RTOL = 1e-9
# MuJoCo stores a mesh's vertices in float32 after moving them to the mesh's centre of mass
# and principal axes (ε = 6e-8 per coordinate, rounded twice), so the mass properties it
# derives from a mesh are good to ~1e-7 relative; a model with meshes is held to 1e-6
RTOL_MESH = 1e-6


def _load(path: str | None = None, xml: str | None = None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kd.KanedynWarning)
        robot = parse_mjcf(path, string=xml)
    mj = mujoco.MjModel.from_xml_path(path) if path else mujoco.MjModel.from_xml_string(xml)
    mj.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    return robot, mj


def _random_state(mj, rng):
    qpos = np.zeros(mj.nq)
    for j in range(mj.njnt):
        a, t = mj.jnt_qposadr[j], mj.jnt_type[j]
        if t == mujoco.mjtJoint.mjJNT_FREE:
            quat = rng.normal(size=4)
            qpos[a:a + 7] = np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat)])
        elif t == mujoco.mjtJoint.mjJNT_BALL:
            quat = rng.normal(size=4)
            qpos[a:a + 4] = quat / np.linalg.norm(quat)
        else:
            qpos[a] = rng.uniform(-1.5, 1.5)
    return qpos, rng.normal(size=mj.nv)


def _speed_map(mj, qpos, qvel):
    """(T, Ṫ v_mj) with v_kd = T v_mj."""
    T = np.eye(mj.nv)
    Tdv = np.zeros(mj.nv)
    for j in range(mj.njnt):
        if mj.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE:
            continue
        a, d = mj.jnt_qposadr[j], mj.jnt_dofadr[j]
        R = np.zeros(9)
        mujoco.mju_quat2Mat(R, qpos[a + 3:a + 7])
        R = R.reshape(3, 3)
        blk = np.zeros((6, 6))
        blk[:3, 3:] = np.eye(3)
        blk[3:, :3] = R.T
        T[d:d + 6, d:d + 6] = blk
        w, vb = qvel[d + 3:d + 6], R.T @ qvel[d:d + 3]
        Tdv[d + 3:d + 6] = -np.cross(w, vb)
    return T, Tdv


def _full_M(mj, d):
    M = np.zeros((mj.nv, mj.nv))
    try:
        mujoco.mj_fullM(mj, d, M)  # MuJoCo >= 3.4: (model, data, dst)
    except TypeError:
        mujoco.mj_fullM(mj, M, d.qM)  # earlier: (model, dst, qM)
    return M


def _rel(a, b, floor=1e-300):
    return np.abs(a - b).max() / max(np.abs(b).max(), floor)


def check_against_mujoco(robot, mj, n_states=4, seed=0, rtol=RTOL):
    model = robot.model
    assert model.nq == mj.nq and model.nv == mj.nv
    # MuJoCo leaves unnamed joints unnamed; kanedyn names them <body>_joint<k>
    assert all(m in ("", k) for k, m in zip(model.joint_names,
                                            [mj.joint(j).name for j in range(mj.njnt)],
                                            strict=True))
    off = mj.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_GRAVITY
    np.testing.assert_allclose(model.gravity, 0.0 if off else mj.opt.gravity, rtol=0,
                               atol=1e-15)
    # armature: each kanedyn joint carries MuJoCo's dof_armature
    for j, name in enumerate(model.joint_names):
        joint = model.bodies[model.joint_index(name)].joint
        d0, nd = mj.jnt_dofadr[j], joint.nv
        np.testing.assert_allclose(mj.dof_armature[d0:d0 + nd], joint.armature, rtol=0,
                                   atol=1e-15)
    # reference configuration: MuJoCo's qpos0 (kanedyn's q is qpos; q and -q are the same
    # rotation, and the two may pick different signs)
    q0 = robot.qpos0.copy()
    for j in range(mj.njnt):
        a = mj.jnt_qposadr[j] + (3 if mj.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE else 0)
        if int(mj.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_FREE),
                                   int(mujoco.mjtJoint.mjJNT_BALL)) and \
                q0[a:a + 4] @ mj.qpos0[a:a + 4] < 0:
            q0[a:a + 4] *= -1
    np.testing.assert_allclose(q0, mj.qpos0, rtol=0, atol=1e-12)
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(seed)
    for _ in range(n_states):
        qpos, qvel = _random_state(mj, rng)
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(mj, d)
        M_mj = _full_M(mj, d)
        T, Tdv = _speed_map(mj, qpos, qvel)
        M_kd = kd.crba(model, qpos)
        assert _rel(T.T @ M_kd @ T, M_mj) <= rtol
        tau = kd.rnea(model, qpos, T @ qvel, Tdv)
        # the bias forces' natural size is |M| |v|² (where they vanish, e.g. a planar
        # model whose gravity no joint feels, only round-off is left to compare)
        floor = np.abs(M_mj).max() * np.abs(qvel).max() ** 2
        assert _rel(T.T @ tau, d.qfrc_bias, floor) <= rtol
        # every MuJoCo body's frame is a frame (or body) of the model, at MuJoCo's pose
        for b, name in enumerate(robot.bodies, 1):  # (unnamed bodies get a name here)
            R, p = kd.frame_placement(model, qpos, name)
            np.testing.assert_allclose(p, d.xpos[b], rtol=0, atol=1e-10)
            np.testing.assert_allclose(R, d.xmat[b].reshape(3, 3), rtol=0, atol=1e-10)


def check_bodies(robot, mj, rtol=RTOL):
    """Per MuJoCo body: mass, centre of mass, and the full rotational inertia tensor
    (MuJoCo keeps principal moments with their axes, body_iquat)."""
    names = [mj.body(b).name for b in range(1, mj.nbody)]
    assert [n for n in robot.bodies if n in names] == [n for n in names if n]
    assert len(robot.bodies) == len(names)
    scale = max(mj.body_mass.max(), 1e-300)
    for b, mb in enumerate(robot.bodies.values(), 1):
        assert abs(mb.mass - mj.body_mass[b]) <= rtol * scale
        if mj.body_mass[b] == 0:
            continue
        np.testing.assert_allclose(mb.com, mj.body_ipos[b], rtol=0, atol=rtol)  # (~1 m models)
        R = np.zeros(9)
        mujoco.mju_quat2Mat(R, mj.body_iquat[b])
        R = R.reshape(3, 3)
        I_mj = R @ np.diag(mj.body_inertia[b]) @ R.T
        assert np.abs(mb.inertia - I_mj).max() <= rtol * max(np.abs(I_mj).max(), 1e-300) \
            + 1e-12 * np.abs(mj.body_inertia).max()
        np.testing.assert_allclose(mb.pos, mj.body_pos[b], rtol=0, atol=1e-12)


# --------------------------------------------------------------------------------------
# Files in the shapes of the public collections
# --------------------------------------------------------------------------------------

QUADRUPED = """
<mujoco model="quadruped">
  <compiler angle="degree"/>
  <option gravity="0 0 -9.8" timestep="0.005"/>
  <default>
    <joint damping="0.5" armature="0.01" limited="true"/>
    <geom type="capsule" density="500" rgba=".8 .6 .4 1"/>
    <default class="hip">
      <joint type="hinge" axis="0 0 1" range="-40 40" stiffness="2" springref="5"/>
      <default class="knee">
        <joint axis="1 -1 0" range="30 100" frictionloss="0.1"/>
        <geom size="0.04" density="800"/>
      </default>
    </default>
  </default>
  <worldbody>
    <light pos="0 0 3"/>
    <geom name="floor" type="plane" size="10 10 .1"/>
    <body name="torso" pos="0 0 0.75" euler="5 -10 20">
      <freejoint name="root"/>
      <geom type="sphere" size="0.25"/>
      <geom type="box" size="0.3 0.1 0.05" pos="0 0 0.1" euler="0 0 30"/>
      <site name="imu" pos="0 0 0.1"/>
      <camera name="track" pos="0 -3 1"/>
      <body name="front_left" pos="0.2 0.2 0" childclass="hip">
        <joint name="hip_fl" pos="0.02 0 0"/>
        <joint name="hip_fl_y" axis="0 1 0" pos="0.02 0 0.01" range="-30 30"/>
        <geom fromto="0 0 0 0.2 0.2 0" size="0.08"/>
        <body name="shin_fl" pos="0.2 0.2 0">
          <joint name="knee_fl" class="knee" pos="0 0 0.03"/>
          <geom class="knee" fromto="0 0 0 0.3 0.3 -0.1"/>
        </body>
      </body>
      <body name="front_right" pos="0.2 -0.2 0" childclass="hip">
        <joint name="hip_fr" axis="0 0 -1"/>
        <geom fromto="0 0 0 0.2 -0.2 0" size="0.08" type="cylinder"/>
        <body name="shin_fr" pos="0.2 -0.2 0">
          <joint name="knee_fr" class="knee" axis="-1 -1 0" ref="10"/>
          <geom class="knee" fromto="0 0 0 0.3 -0.3 -0.1"/>
          <body name="foot_fr" pos="0.3 -0.3 -0.1">
            <geom type="sphere" size="0.05" mass="0.2"/>
          </body>
        </body>
      </body>
      <body name="back" pos="-0.3 0 0" quat="0.9 0 0 0.1">
        <joint name="tail" type="ball" pos="0 0 0.02" damping="0.1"/>
        <geom type="ellipsoid" size="0.1 0.05 0.03" pos="-0.05 0 0"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="m_hip_fl" joint="hip_fl" gear="40" ctrlrange="-1 1"/>
    <motor joint="knee_fl" gear="30"/>
    <position joint="knee_fr" kp="10"/>
  </actuator>
  <sensor><jointpos joint="hip_fl"/></sensor>
</mujoco>
"""

ARM = """
<mujoco model="arm7">
  <compiler angle="radian" eulerseq="zyx" autolimits="true"/>
  <option gravity="0.5 0 -9.81"/>
  <default>
    <joint armature="0.1" damping="1"/>
    <default class="big"><joint armature="0.25"/></default>
  </default>
  <worldbody>
    <body name="base" pos="0 0 0.1">
      <geom type="cylinder" size="0.1 0.05"/>
      <body name="link1" pos="0 0 0.1" euler="0.1 0.2 0.3">
        <inertial pos="0.01 0.02 0.1" mass="3.2" diaginertia="0.03 0.025 0.01"
                  quat="0.9 0.1 0.3 -0.2"/>
        <joint name="j1" class="big" range="-2.9 2.9"/>
        <body name="link2" pos="0 0 0.2" axisangle="1 0 0 1.5707963">
          <inertial pos="0 -0.05 0.02" mass="2.5"
                    fullinertia="0.02 0.021 0.008 0.001 -0.002 0.0005"/>
          <joint name="j2" class="big" axis="0 0 1" range="-1.7 1.7"/>
          <body name="link3" pos="0 -0.3 0" xyaxes="1 0 0 0 0 -1">
            <inertial pos="0.03 0 0.05" mass="1.9" diaginertia="0.012 0.01 0.006"
                      euler="0.3 -0.2 0.1"/>
            <joint name="j3" pos="0 0 -0.05" ref="0.3"/>
            <body name="link4" pos="0.08 0 0.1" zaxis="1 1 0">
              <inertial pos="0 0.04 0" mass="1.4" diaginertia="0.008 0.007 0.004"/>
              <joint name="j4" axis="0 1 1"/>
              <body name="link5" pos="0 0.1 0.05">
                <inertial pos="0 0 0.08" mass="1.1" diaginertia="0.006 0.006 0.002"/>
                <joint name="slide5" type="slide" axis="0 0 1" range="-0.1 0.1" ref="0.02"/>
                <joint name="j5" axis="0 0 1" pos="0 0 0.02"/>
                <body name="link6" pos="0 0 0.2" quat="0.7 0.7 0 0">
                  <inertial pos="0 0 0" mass="0.8" diaginertia="0.002 0.002 0.001"/>
                  <joint name="j6"/>
                  <body name="link7" pos="0 0 0.08">
                    <inertial pos="0 0 0.02" mass="0.4" diaginertia="0.0005 0.0005 0.0003"/>
                    <joint name="j7" axis="0 0 1"/>
                    <body name="tool" pos="0 0 0.1">
                      <geom type="box" size="0.02 0.03 0.01" density="2000"/>
                    </body>
                  </body>
                </body>
              </body>
            </body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""

HAND_MAIN = """
<mujoco model="hand">
  <compiler angle="degree" meshdir="assets"/>
  <include file="hand_defaults.xml"/>
  <asset>
    <mesh name="palm_mesh" file="palm.obj"/>
    <mesh name="thumb_mesh" file="thumb.stl" scale="1 1.2 0.8"/>
  </asset>
  <worldbody>
    <body name="forearm" pos="0 0 0.5" axisangle="0 1 0 20">
      <geom type="box" size="0.03 0.03 0.1" pos="0 0 -0.1"/>
      <body name="palm" pos="0 0 0.02" childclass="finger">
        <joint name="wrist" type="ball" class="wrist" pos="0 0 -0.01"/>
        <geom type="mesh" mesh="palm_mesh" density="1100" pos="0 0 0.02" euler="0 0 15"/>
        <frame pos="0.03 0 0.09" euler="0 -10 0">
          <body name="index_1">
            <joint name="index_abd" axis="1 0 0" range="-20 20"/>
            <joint name="index_flex" pos="0 0 0.005"/>
            <geom fromto="0 0 0 0 0 0.04"/>
            <body name="index_2" pos="0 0 0.045">
              <joint name="index_mid"/>
              <geom fromto="0 0 0 0 0 0.03" size="0.007"/>
            </body>
          </body>
        </frame>
        <body name="middle_1" pos="0 0 0.095">
          <joint name="middle_flex"/>
          <geom fromto="0 0 0 0 0 0.045"/>
          <geom type="cylinder" fromto="0 0 0.045 0 0.005 0.07" size="0.006" group="3"/>
        </body>
        <body name="thumb_1" pos="-0.03 0 0.02" xyaxes="0 1 0 -1 0 0">
          <joint name="thumb_base" type="ball" class="wrist"/>
          <geom type="mesh" mesh="thumb_mesh"/>
          <body name="thumb_2" pos="0 0 0.04">
            <joint name="thumb_flex" axis="1 0 0"/>
            <geom type="ellipsoid" size="0.008 0.01 0.02" pos="0 0 0.02"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <equality>
    <connect name="tendon_like" body1="index_2" body2="middle_1" anchor="0 0 0.03"/>
  </equality>
  <tendon><fixed name="t"><joint joint="index_mid" coef="1"/></fixed></tendon>
</mujoco>
"""

HAND_DEFAULTS = """
<mujoco>
  <default>
    <geom density="1000"/>
    <default class="finger">
      <joint type="hinge" axis="0 1 0" damping="0.05" armature="0.001" range="0 90"/>
      <geom type="capsule" size="0.008"/>
      <default class="wrist"><joint damping="0.5" armature="0.005"/></default>
    </default>
  </default>
</mujoco>
"""


def _convex_points(rng, n=14):
    """Vertices and outward triangles of the convex hull of random points (a closed,
    convex, unsymmetric mesh: every MuJoCo mesh-inertia mode agrees on it)."""
    from scipy.spatial import ConvexHull

    pts = rng.normal(size=(n, 3)) * np.array([0.02, 0.03, 0.015]) + np.array([0.0, 0.01, 0.0])
    pts = pts.astype(np.float32).astype(float)  # MuJoCo keeps mesh vertices in float32
    hull = ConvexHull(pts)
    faces = []
    c = pts.mean(axis=0)
    for s in hull.simplices:
        a, b, d = pts[s]
        if np.dot(np.cross(b - a, d - a), a - c) < 0:
            s = s[[0, 2, 1]]
        faces.append(s)
    used = np.unique(np.array(faces))
    remap = {int(o): i for i, o in enumerate(used)}
    return pts[used], np.array([[remap[int(i)] for i in f] for f in faces])


def write_hand(folder):
    import trimesh

    rng = np.random.default_rng(5)
    os.makedirs(os.path.join(folder, "assets"), exist_ok=True)
    v, f = _convex_points(rng)
    with open(os.path.join(folder, "assets", "palm.obj"), "w") as fh:
        fh.writelines(f"v {x:.9f} {y:.9f} {z:.9f}\n" for x, y, z in v * 2.0)
        fh.writelines(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in f)
    v, f = _convex_points(rng)
    trimesh.Trimesh(v, f, process=False).export(os.path.join(folder, "assets", "thumb.stl"))
    with open(os.path.join(folder, "hand_defaults.xml"), "w") as fh:
        fh.write(HAND_DEFAULTS)
    path = os.path.join(folder, "hand.xml")
    with open(path, "w") as fh:
        fh.write(HAND_MAIN)
    return path


@pytest.mark.parametrize("xml", [QUADRUPED, ARM], ids=["quadruped", "arm"])
def test_written_models_against_mujoco(xml):
    robot, mj = _load(xml=xml)
    check_bodies(robot, mj)
    check_against_mujoco(robot, mj)


def test_hand_with_include_meshes_frames_and_ball_joints(tmp_path):
    pytest.importorskip("trimesh")
    path = write_hand(str(tmp_path))
    robot, mj = _load(path=path)
    assert robot.bodies["palm"].inertia_from == "geoms"
    check_bodies(robot, mj, rtol=RTOL_MESH)
    check_against_mujoco(robot, mj, rtol=RTOL_MESH)


def _gym_assets() -> list[str]:
    import importlib.util

    spec = importlib.util.find_spec("gymnasium")
    if spec is None:
        return []
    folder = os.path.join(os.path.dirname(spec.origin), "envs", "mujoco", "assets")
    return sorted(glob.glob(os.path.join(folder, "*.xml")))


GYM = _gym_assets()


@pytest.mark.skipif(not GYM, reason="gymnasium's MuJoCo assets are not installed")
@pytest.mark.parametrize("path", GYM, ids=[os.path.basename(p) for p in GYM])
def test_gymnasium_assets_against_mujoco(path):
    robot, mj = _load(path=path)
    check_bodies(robot, mj)
    check_against_mujoco(robot, mj, n_states=3)


# --------------------------------------------------------------------------------------
# Geom-derived inertia, one primitive at a time
# --------------------------------------------------------------------------------------

GEOMS = {
    "sphere": '<geom type="sphere" size="0.07" pos="0.1 0 0.02"/>',
    "box": '<geom type="box" size="0.1 0.05 0.02" pos="0.03 0.01 0" euler="10 20 30"/>',
    "box_fromto": '<geom type="box" size="0.03 0.01" fromto="0 0 0 0.1 0.2 0.05"/>',
    "capsule": '<geom type="capsule" size="0.04 0.1" quat="0.8 0.2 0.1 0.3"/>',
    "capsule_fromto": '<geom type="capsule" size="0.04" fromto="0 0 0 0.1 -0.2 0.3"/>',
    "cylinder": '<geom type="cylinder" size="0.05 0.12" pos="0 0.1 0" axisangle="1 1 0 40"/>',
    "cylinder_fromto": '<geom type="cylinder" size="0.03" fromto="0 0 0 0 0 -0.3" mass="2"/>',
    "ellipsoid": '<geom type="ellipsoid" size="0.05 0.08 0.12" xyaxes="0 1 0 -1 0 1"/>',
    "ellipsoid_fromto": '<geom type="ellipsoid" size="0.02 0.04" fromto="0 0 0 0.2 0 0"/>',
    "two_geoms": '<geom type="sphere" size="0.05" density="3000"/>'
                 '<geom type="box" size="0.05 0.05 0.2" pos="0 0 0.25" zaxis="0 1 1"/>',
}


@pytest.mark.parametrize("name", list(GEOMS))
def test_geom_inertia_equals_mujoco(name):
    xml = f"""<mujoco><worldbody><body name="b" pos="0 0 1"><joint type="ball"/>
      {GEOMS[name]}</body></worldbody></mujoco>"""
    robot, mj = _load(xml=xml)
    assert robot.bodies["b"].inertia_from == "geoms"
    check_bodies(robot, mj)


@pytest.mark.parametrize("fmt", ["stl", "obj", "inline"])
def test_mesh_inertia_equals_mujoco(tmp_path, fmt):
    trimesh = pytest.importorskip("trimesh")
    v, f = _convex_points(np.random.default_rng(3))
    if fmt == "stl":
        trimesh.Trimesh(v, f, process=False).export(str(tmp_path / "m.stl"))
        asset = '<mesh name="m" file="m.stl" scale="2 1 1.5"/>'
    elif fmt == "obj":
        with open(tmp_path / "m.obj", "w") as fh:
            fh.writelines(f"v {x:.12g} {y:.12g} {z:.12g}\n" for x, y, z in v)
            fh.writelines(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in f)
        asset = '<mesh name="m" file="m.obj" inertia="exact"/>'
    else:
        asset = ('<mesh name="m" vertex="' + " ".join(f"{x:.12g}" for x in v.ravel())
                 + '" face="' + " ".join(str(i) for i in f.ravel()) + '"/>')
    xml = f"""<mujoco><asset>{asset}</asset><worldbody><body name="b">
      <freejoint/><geom type="mesh" mesh="m" pos="0.1 0 0" euler="30 0 60" density="700"/>
      </body></worldbody></mujoco>"""
    path = tmp_path / "mesh.xml"
    path.write_text(xml)
    robot, mj = _load(path=str(path))
    check_bodies(robot, mj, rtol=RTOL_MESH)
    check_against_mujoco(robot, mj, n_states=2, rtol=RTOL_MESH)


def test_inertiafromgeom_true_overrides_inertial_and_false_ignores_geoms():
    body = """<body name="b"><joint type="ball"/>
      <inertial pos="0 0 0.1" mass="3" diaginertia="0.1 0.2 0.25"/>
      <geom type="box" size="0.1 0.2 0.3"/></body>"""
    for flag, source in (("true", "geoms"), ("false", "inertial"), ("auto", "inertial")):
        xml = f"""<mujoco><compiler inertiafromgeom="{flag}"/>
          <worldbody>{body}</worldbody></mujoco>"""
        robot, mj = _load(xml=xml)
        assert robot.bodies["b"].inertia_from == source
        check_bodies(robot, mj)


def test_settotalmass_and_euler_sequences():
    for seq in ("xyz", "XYZ", "zyx", "ZxY"):
        xml = f"""<mujoco><compiler eulerseq="{seq}" settotalmass="7"/><worldbody>
          <body name="a" euler="20 -35 50"><joint type="ball"/>
            <geom type="box" size="0.1 0.2 0.3" euler="10 60 -20"/>
            <body name="c" pos="0.2 0 0" euler="-30 10 80"><joint axis="1 0 0"/>
              <geom type="capsule" size="0.02 0.1" euler="5 5 5"/></body>
          </body></worldbody></mujoco>"""
        robot, mj = _load(xml=xml)
        check_bodies(robot, mj)
        check_against_mujoco(robot, mj, n_states=2)


# --------------------------------------------------------------------------------------
# Passive forces and equalities
# --------------------------------------------------------------------------------------

def test_passive_forces_equal_mujoco_qfrc_passive():
    """mjcf_forces' springs and dampers against MuJoCo's qfrc_passive (spring + damper;
    frictionloss is a constraint force in MuJoCo, not passive, and is checked apart)."""
    from kanedyn.forces import mjcf_forces

    robot, mj = _load(xml=QUADRUPED)
    system = kd.ModelSystem(robot.model)
    elements = [f.bind(system) for f in mjcf_forces(robot)]
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(2)
    for _ in range(3):
        qpos, qvel = _random_state(mj, rng)
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(mj, d)
        T, _ = _speed_map(mj, qpos, qvel)
        tau = sum(f.generalized_force(0.0, qpos, T @ qvel) for f in elements
                  if not isinstance(f, kd.forces.JointFriction))
        assert _rel(T.T @ tau, d.qfrc_passive) <= RTOL
    fric = [f for f in elements if isinstance(f, kd.forces.JointFriction)]
    assert sorted(f.joint for f in fric) == ["knee_fl", "knee_fr"]
    for f in fric:  # Coulomb level = MuJoCo's dof_frictionloss, sign against the motion
        i = mj.joint(f.joint).dofadr[0]
        v = np.zeros(mj.nv)
        v[i] = 0.3
        assert abs(-f.generalized_force(0.0, qpos, v)[i] - mj.dof_frictionloss[i]) < 1e-6
    exact = [f for f in mjcf_forces(robot, frictionloss="exact")
             if isinstance(f, kd.forces.JointFriction)]
    assert all(f.discontinuous for f in exact) and not any(f.discontinuous for f in fric)


EQUALITIES = """
<mujoco model="closed">
  <compiler angle="radian"/>
  <worldbody>
    <body name="crank" pos="0 0 0">
      <joint name="a" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
      <body name="rod" pos="0.2 0 0">
        <joint name="b" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.5 0 0.3" size="0.02"/>
      </body>
    </body>
    <body name="rocker" pos="0.6 0 0">
      <joint name="c" axis="0 1 0" pos="0.1 0 0"/>
      <geom type="capsule" fromto="0.1 0 0 0.1 0 0.3" size="0.02"/>
    </body>
    <body name="slider" pos="0 1 0.2">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1"/>
    </body>
  </worldbody>
  <equality>
    <connect name="pin" body1="rod" body2="rocker" anchor="0.5 0 0.3"/>
    <weld name="glue" body1="slider" anchor="0.05 0 0"/>
  </equality>
</mujoco>
"""


def test_equalities_are_loop_closures_satisfied_at_qpos0_and_match_mujoco():
    from kanedyn.constraints import mjcf_loops, mjcf_system

    robot, mj = _load(xml=EQUALITIES)
    system = mjcf_system(robot, drop_idle_rows=False)  # all rows, to compare with MuJoCo's
    assert isinstance(system, kd.constraints.ConstrainedSystem)
    assert [lc.name for lc in mjcf_loops(robot)] == ["pin", "glue"]
    assert [lc.kind for lc in mjcf_loops(robot)] == ["point", "weld"]
    assert np.abs(system.constraint(0.0, robot.qpos0)).max() < 1e-12
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(4)
    for _ in range(3):
        qpos, _v = _random_state(mj, rng)
        d.qpos[:] = qpos
        mujoco.mj_forward(mj, d)
        g = system.constraint(0.0, qpos)
        # MuJoCo's equality rows: connect = anchor1 - anchor2 in world (3 rows), weld's
        # first 3 rows the same for its anchor point (its 3 rotation rows use another form)
        efc = d.efc_pos[: d.ne]
        np.testing.assert_allclose(np.abs(g[:3]), np.abs(efc[:3]), atol=1e-12)
        np.testing.assert_allclose(np.abs(g[3:6]), np.abs(efc[3:6]), atol=1e-12)


def test_static_parents_unnamed_elements_frames_and_disabled_gravity():
    xml = """<mujoco><option><flag gravity="disable"/></option>
      <default><default class="c"><joint axis="1 0 0" damping="1"/>
        <geom type="box" size="0.05 0.1 0.2"/></default></default>
      <worldbody>
        <body pos="0 0 1" euler="0 0 45"><geom type="sphere" size="0.1"/>
          <body pos="0.1 0 0"><geom type="sphere" size="0.05"/></body></body>
          <body pos="0.2 0 0" euler="30 0 0"><freejoint/><geom type="sphere" size="0.05"/>
            <frame pos="0 0.1 0" euler="0 0 90" childclass="c">
              <body pos="0.1 0 0"><joint pos="0 0 0.05"/><geom/>
                <body pos="0 0 0.3"><joint type="slide" axis="0 0 1"/><joint axis="0 1 0"/>
                  <geom pos="0 0 0.1"/></body></body>
            </frame></body>
      </worldbody></mujoco>"""
    robot, mj = _load(xml=xml)
    assert not robot.model.gravity.any()
    check_bodies(robot, mj)
    check_against_mujoco(robot, mj)


@pytest.mark.parametrize("mode", ["", 'inertia="legacy"', 'inertia="convex"'])
def test_nonconvex_mesh_inertia_modes_equal_mujoco(tmp_path, mode):
    """An L-shaped solid made of two touching boxes (an unclosed-looking, doubly faced mesh):
    MuJoCo's default "legacy" sums unsigned tetrahedra, "convex" takes the hull; both differ
    from the true L, and kanedyn must give MuJoCo's numbers for each."""
    trimesh = pytest.importorskip("trimesh")
    a = trimesh.creation.box((1.0, 0.25, 0.25))
    a.apply_translation((0.5, 0.125, 0.0))
    b = trimesh.creation.box((0.25, 0.75, 0.25))
    b.apply_translation((0.125, 0.625, 0.0))
    trimesh.util.concatenate([a, b]).export(str(tmp_path / "L.stl"))
    (tmp_path / "L.xml").write_text(
        f"""<mujoco><asset><mesh name="L" file="L.stl" {mode}/></asset><worldbody>
        <body name="b"><freejoint/><geom type="mesh" mesh="L" density="1000"/></body>
        </worldbody></mujoco>""")
    robot, mj = _load(path=str(tmp_path / "L.xml"))
    check_bodies(robot, mj, rtol=RTOL_MESH)
    check_against_mujoco(robot, mj, n_states=2, rtol=RTOL_MESH)


FOUR_BAR = """
<mujoco model="four_bar">
  <compiler angle="radian"/>
  <default><joint axis="0 1 0" damping="0.02"/><geom type="capsule" size="0.02"/></default>
  <worldbody>
    <body name="crank"><joint name="a"/><geom fromto="0 0 0 0.2 0 0"/>
      <body name="coupler" pos="0.2 0 0"><joint name="b"/><geom fromto="0 0 0 0.5 0 0.3"/>
      </body></body>
    <body name="rocker" pos="0.6 0 0"><joint name="c"/><geom fromto="0 0 0 0.1 0 0.3"/>
    </body>
  </worldbody>
  <equality><connect name="pin" body1="coupler" body2="rocker" anchor="0.5 0 0.3"/>
  </equality>
</mujoco>"""


def test_a_planar_four_bar_from_mjcf_simulates_as_a_dae():
    """The connect of a planar linkage keeps its two in-plane rows (the third has a zero
    Jacobian everywhere), and the closed chain runs as an index-3 DAE, staying on g = 0."""
    from kanedyn.constraints import mjcf_loops, mjcf_system
    from kanedyn.forces import mjcf_forces

    robot, _ = _load(xml=FOUR_BAR)
    assert mjcf_loops(robot)[0].axes == (0, 2)
    assert mjcf_loops(robot, drop_idle_rows=False)[0].axes == (0, 1, 2)
    system = mjcf_system(robot)
    traj = kd.simulate(system, robot.qpos0, np.zeros(3), 0.5, method="radau5",
                       formulation="index3", rtol=1e-8, atol=1e-8, dt=0.05,
                       forces=mjcf_forces(robot))
    assert np.abs(traj.q[-1] - robot.qpos0).max() > 1e-2  # it moved under gravity
    assert np.abs(traj.stats["residual_g"]).max() < 1e-7


def test_replicate_against_mujoco():
    xml = """<mujoco><compiler angle="degree"/><worldbody>
      <replicate count="12" offset="0.1 0 0.02" euler="0 0 30" sep="-">
        <body name="b" pos="0 0.5 1"><joint name="j" axis="1 0 0"/><geom size="0.05"/>
          <replicate count="2" offset="0 0.2 0">
            <body name="c"><joint name="k" type="ball"/>
              <geom type="box" size="0.02 0.03 0.04"/></body></replicate></body>
      </replicate></worldbody></mujoco>"""
    robot, mj = _load(xml=xml)
    assert list(robot.bodies)[:3] == ["b-00", "c0-00", "c1-00"]
    check_bodies(robot, mj)
    check_against_mujoco(robot, mj, n_states=2)


def test_weld_between_two_bodies_with_relpose_matches_mujoco():
    xml = """<mujoco><worldbody>
      <body name="a" pos="0 0 1"><freejoint/><geom type="box" size="0.1 0.2 0.3"/></body>
      <body name="b" pos="0.5 0 1" euler="10 20 30"><joint type="ball"/>
        <geom type="capsule" size="0.05 0.2"/>
        <body name="c" pos="0 0 0.4"><joint axis="1 0 0"/><geom size="0.05"/></body></body>
      </worldbody>
      <equality>
        <weld name="w" body1="a" body2="c" anchor="0.1 0.2 -0.1"
              relpose="0.3 -0.1 0.2 0.9 0.1 -0.3 0.2"/>
        <connect name="p" body1="c" anchor="0 0.1 0"/>
      </equality></mujoco>"""
    from kanedyn.constraints import mjcf_system

    robot, mj = _load(xml=xml)
    system = mjcf_system(robot, drop_idle_rows=False)
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(7)
    for _ in range(3):
        qpos, _v = _random_state(mj, rng)
        d.qpos[:] = qpos
        mujoco.mj_forward(mj, d)
        g = system.constraint(0.0, qpos)
        efc = d.efc_pos[: d.ne]
        np.testing.assert_allclose(np.abs(g[:3]), np.abs(efc[:3]), atol=1e-12)  # weld point
        np.testing.assert_allclose(np.abs(g[6:9]), np.abs(efc[6:9]), atol=1e-12)  # connect
        # turn the free body a so that c's axes are a's turned by relpose's rotation: there
        # MuJoCo's weld rotation rows vanish, and so must kanedyn's
        R_c = d.xmat[mj.body("c").id].reshape(3, 3)
        R_rel = np.zeros(9)
        mujoco.mju_quat2Mat(R_rel, np.array([0.9, 0.1, -0.3, 0.2]) / np.linalg.norm(
            [0.9, 0.1, -0.3, 0.2]))
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, (R_c @ R_rel.reshape(3, 3).T).ravel())
        d.qpos[3:7] = qpos[3:7] = quat
        mujoco.mj_forward(mj, d)
        assert np.abs(d.efc_pos[3:6]).max() < 1e-12
        assert np.abs(system.constraint(0.0, qpos)[3:6]).max() < 1e-12
    # at the reference configuration the connect holds (the weld, with its relpose, not)
    assert np.abs(system.constraint(0.0, robot.qpos0)[6:9]).max() < 1e-12


def test_equalities_by_sites_match_mujoco():
    xml = """<mujoco><worldbody>
      <body name="a" pos="0 0 1"><freejoint/><geom type="box" size="0.1 0.2 0.3"/>
        <site name="sa" pos="0.1 0 0.2" euler="10 0 40"/></body>
      <body name="b" pos="0.5 0 1"><joint type="ball"/><geom type="capsule" size="0.05 0.2"/>
        <site name="sb" pos="0 0.1 -0.1" euler="0 30 0"/>
        <site name="sc" pos="0.05 0 0"/></body>
      <site name="sw" pos="1 1 1"/>
      </worldbody>
      <equality><weld site1="sa" site2="sb"/><connect site1="sc" site2="sw"/></equality>
      </mujoco>"""
    from kanedyn.constraints import mjcf_system

    robot, mj = _load(xml=xml)
    system = mjcf_system(robot, drop_idle_rows=False)
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(8)
    for _ in range(3):
        qpos, _v = _random_state(mj, rng)
        d.qpos[:] = qpos
        mujoco.mj_forward(mj, d)
        g, efc = system.constraint(0.0, qpos), d.efc_pos[: d.ne]
        np.testing.assert_allclose(np.abs(g[:3]), np.abs(efc[:3]), atol=1e-12)
        np.testing.assert_allclose(np.abs(g[6:9]), np.abs(efc[6:9]), atol=1e-12)
        # turn a until the two site frames are aligned: both rotation residuals vanish
        R_sa = np.zeros(9)
        mujoco.mju_quat2Mat(R_sa, mj.site("sa").quat)
        R_target = d.site_xmat[mj.site("sb").id].reshape(3, 3) @ R_sa.reshape(3, 3).T
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, R_target.ravel())
        d.qpos[3:7] = qpos[3:7] = quat
        mujoco.mj_forward(mj, d)
        assert np.abs(d.efc_pos[3:6]).max() < 1e-12
        assert np.abs(system.constraint(0.0, qpos)[3:6]).max() < 1e-12


ATTACH_CHILD = """<mujoco model="child">
  <compiler angle="radian"/>
  <default><joint damping="0.3" armature="0.01"/>
    <default class="k"><geom type="box" size="0.1 0.05 0.02"/></default></default>
  <worldbody>
    <body name="arm" pos="0 0 0.5"><joint name="j1" axis="0 1 0" range="-1 1"/>
      <geom size="0.05"/>
      <body name="fore" pos="0.3 0 0" euler="0 0.5 0"><joint name="j2"/><geom class="k"/>
        <site name="tip" pos="0.1 0 0"/></body></body>
    <body name="other"><joint name="o"/><geom size="0.1"/></body>
  </worldbody>
  <equality><connect body1="fore" body2="world" anchor="0.1 0 0"/></equality>
  <actuator><motor name="m2" joint="j2" gear="5"/><motor name="mo" joint="o"/></actuator>
</mujoco>"""

ATTACH_PARENT = """<mujoco model="parent">
  <compiler angle="degree"/>
  <asset><model name="c" file="child.xml"/></asset>
  <worldbody>
    <body name="base" pos="1 0 0"><joint name="j0"/><geom size="0.1"/>
      <frame pos="0 0 0.2" euler="0 0 30"><attach model="c" body="arm" prefix="left-"/></frame>
      <attach model="c" body="arm" prefix="right-"/>
    </body>
  </worldbody>
</mujoco>"""


def test_attach_against_mujoco(tmp_path):
    """<attach>: the subtree read with the child's own compiler (radians) and defaults,
    names prefixed, and the child's actuators and equalities on it copied along."""
    (tmp_path / "child.xml").write_text(ATTACH_CHILD)
    (tmp_path / "parent.xml").write_text(ATTACH_PARENT)
    robot, mj = _load(path=str(tmp_path / "parent.xml"))
    assert robot.model.joint_names == ["j0", "left-j1", "left-j2", "right-j1", "right-j2"]
    assert [a.name for a in robot.actuators] == ["left-m2", "right-m2"]
    assert [(e.body_a, e.body_b) for e in robot.equalities] == [("left-fore", None),
                                                                 ("right-fore", None)]
    check_bodies(robot, mj)
    check_against_mujoco(robot, mj)
    from kanedyn.constraints import mjcf_system

    system = mjcf_system(robot, drop_idle_rows=False)
    d = mujoco.MjData(mj)
    qpos, _v = _random_state(mj, np.random.default_rng(9))
    d.qpos[:] = qpos
    mujoco.mj_forward(mj, d)
    np.testing.assert_allclose(np.abs(system.constraint(0.0, qpos)), np.abs(d.efc_pos[:d.ne]),
                               atol=1e-12)


def test_attach_inside_replicate_by_the_child_models_own_name(tmp_path):
    """An unnamed <asset><model> is known by its file's <mujoco model=...>; a <replicate>
    around an <attach> suffixes the attached names too (MuJoCo's 100_humanoids.xml)."""
    (tmp_path / "child.xml").write_text(ATTACH_CHILD)
    (tmp_path / "parent.xml").write_text("""<mujoco><asset><model file="child.xml"/></asset>
      <worldbody><replicate count="3" offset="0.5 0 0" euler="0 0 40" sep="-">
        <attach model="child" body="arm" prefix="a_"/></replicate></worldbody></mujoco>""")
    robot, mj = _load(path=str(tmp_path / "parent.xml"))
    assert robot.model.joint_names[:2] == ["a_j1-0", "a_j2-0"]
    assert [a.joint for a in robot.actuators] == ["a_j2-0", "a_j2-1", "a_j2-2"]
    check_bodies(robot, mj)
    check_against_mujoco(robot, mj)


# --------------------------------------------------------------------------------------
# Visual geometry: every visible geom where MuJoCo puts it
# --------------------------------------------------------------------------------------

_G = mujoco.mjtGeom
_NO_VOLUME = (int(_G.mjGEOM_PLANE), int(_G.mjGEOM_HFIELD), int(_G.mjGEOM_SDF))
_KIND = {int(_G.mjGEOM_BOX): "box", int(_G.mjGEOM_SPHERE): "sphere",
         int(_G.mjGEOM_CAPSULE): "capsule", int(_G.mjGEOM_CYLINDER): "cylinder",
         int(_G.mjGEOM_ELLIPSOID): "ellipsoid", int(_G.mjGEOM_MESH): "mesh"}


def check_visuals(robot, mj, n_states=2, seed=0):
    """robot.visuals against MuJoCo's visible geoms (groups 0-2, not transparent, not on
    the world), in MuJoCo's order, at random states: kind and size (MuJoCo's halves),
    world position (geom_xpos) and axes (geom_xmat; the symmetry axis alone for
    capsules and cylinders, up to its sign, none for spheres); a mesh by the bounding box of its
    vertices in the world (MuJoCo keeps them re-centred, as float32)."""
    geoms = [g for g in range(mj.ngeom) if mj.geom_bodyid[g] != 0
             and int(mj.geom_type[g]) not in _NO_VOLUME and mj.geom_group[g] <= 2
             and mj.geom_rgba[g, 3] > 0]
    assert len(robot.visuals) == len(geoms) > 0
    model = robot.model
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(seed)
    for _ in range(n_states):
        qpos, _ = _random_state(mj, rng)
        d.qpos[:] = qpos
        mujoco.mj_forward(mj, d)
        kin = kd.forward_kinematics(model, qpos)
        for vis, g in zip(robot.visuals, geoms, strict=True):
            kind = _KIND[int(mj.geom_type[g])]
            assert vis.kind == kind, vis.name
            # body -1: a body welded to the world (its geoms fixed there)
            Rb, pb = (kin.R[vis.body], kin.p[vis.body]) if vis.body >= 0 else \
                (np.eye(3), np.zeros(3))
            R = Rb @ vis.placement.rotation
            p = pb + Rb @ vis.placement.translation
            Rm, pm = d.geom_xmat[g].reshape(3, 3), d.geom_xpos[g]
            half = mj.geom_size[g]
            if kind == "mesh":
                k = mj.geom_dataid[g]
                Vm = mj.mesh_vert[mj.mesh_vertadr[k]:mj.mesh_vertadr[k] + mj.mesh_vertnum[k]]
                Wm = Vm.astype(float) @ Rm.T + pm
                W = np.asarray(vis.vertices) @ R.T + p
                scale = np.abs(Wm - pm).max()
                np.testing.assert_allclose(W.min(0), Wm.min(0), atol=1e-5 * scale)
                np.testing.assert_allclose(W.max(0), Wm.max(0), atol=1e-5 * scale)
                continue
            np.testing.assert_allclose(p, pm, atol=1e-10)
            if kind in ("capsule", "cylinder"):  # symmetric: the axis up to its sign
                np.testing.assert_allclose(abs(R[:, 2] @ Rm[:, 2]), 1.0, atol=1e-10)
                np.testing.assert_allclose(vis.size, (half[0], 2 * half[1]), rtol=1e-12)
            elif kind == "sphere":
                np.testing.assert_allclose(vis.size, half[:1], rtol=1e-12)
            else:
                np.testing.assert_allclose(R, Rm, atol=1e-10)
                np.testing.assert_allclose(vis.size, half * (2 if kind == "box" else 1),
                                           rtol=1e-12)
            np.testing.assert_allclose(vis.rgba, mj.geom_rgba[g], atol=1e-7)


def test_visuals_of_written_models_and_a_hand_with_meshes(tmp_path):
    pytest.importorskip("trimesh")
    for xml in (QUADRUPED, ARM):
        check_visuals(*_load(xml=xml))
    check_visuals(*_load(path=write_hand(str(tmp_path))))


@pytest.mark.skipif(not GYM, reason="gymnasium's MuJoCo assets are not installed")
def test_visuals_of_the_gymnasium_assets():
    for path in GYM:
        robot, mj = _load(path=path)
        if robot.visuals:  # (a file whose geoms are all on the world shows none)
            check_visuals(robot, mj, n_states=1)
