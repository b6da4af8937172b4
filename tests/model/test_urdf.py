"""URDF loading: what the files say ends up in the Model.

Expected values are worked out here independently of the loader: rotations
from scipy's Euler angles (URDF rpy = extrinsic x-y-z), composite inertias by
the parallel-axis theorem, poses by chaining 4x4 homogeneous transforms, and
the same arm built by hand with ModelBuilder.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import kanedyn as kd
from kanedyn.model import ModelBuilder, Prismatic, Revolute
from kanedyn.model.urdf import parse_urdf, rpy_matrix
from kanedyn.spatial import inertia_parameters

DATA = Path(__file__).resolve().parent.parent / "data" / "urdf"
ARM2 = DATA / "arm2.urdf"


def R_rpy(rpy):
    return Rotation.from_euler("xyz", rpy).as_matrix()  # extrinsic: Rz(y) Ry(p) Rx(r)


def H(R=None, p=(0, 0, 0)):
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = np.eye(3) if R is None else R, p
    return T


def H_joint(axis, q, kind="revolute"):
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    if kind == "revolute":
        return H(Rotation.from_rotvec(q * a).as_matrix())
    return H(p=q * a)


def inertia_of(I_com, m, c):
    """Rotational inertia about the origin: I_c + m (|c|² 1 - c cᵀ) (parallel axes)."""
    c = np.asarray(c, float)
    return I_com + m * (c @ c * np.eye(3) - np.outer(c, c))


# ---------------------------------------------------------------------------------------
# What the arm2 file says
# ---------------------------------------------------------------------------------------

def test_rpy_is_fixed_axis_roll_pitch_yaw():
    for rpy in [(0.1, 0.2, 0.3), (-1.0, 0.5, 2.5), (np.pi / 2, 0, 0)]:
        np.testing.assert_allclose(rpy_matrix(rpy), R_rpy(rpy), atol=1e-15)


def test_arm2_topology_limits_dynamics():
    model = kd.load_urdf(ARM2)
    assert model.joint_names == ["shoulder", "elbow", "finger_joint", "finger_mimic_joint"]
    assert (model.nq, model.nv) == (4, 4)
    # the base (fixed base) is the world; flange and camera are merged; sensor kept
    assert model.body_names == ["link1", "link2", "finger", "finger_mimic"]
    assert {"flange", "camera_link"} <= set(model.frames)
    assert model.frames["flange"].body == model.body_index("link2")
    sh = model.bodies[model.joint_index("shoulder")].joint
    assert isinstance(sh, Revolute) and not sh.continuous
    assert (sh.limits.lower, sh.limits.upper, sh.limits.effort, sh.limits.velocity) == \
        (-1.5, 2.0, 80.0, 2.5)
    assert (sh.damping, sh.friction) == (0.7, 0.3)
    el = model.bodies[model.joint_index("elbow")].joint
    assert el.continuous and el.limits.lower is None and el.limits.effort == 40.0
    assert (el.damping, el.friction) == (0.2, 0.0)  # friction absent -> 0
    np.testing.assert_allclose(el.axis, np.array([1, 0, 1]) / np.sqrt(2))
    fj = model.bodies[model.joint_index("finger_mimic_joint")].joint
    assert isinstance(fj, Prismatic) and fj.axis == (0.0, -1.0, 0.0)
    # mass: everything but the world-fixed base; links without <inertial> weigh nothing
    assert model.total_mass == pytest.approx(2.0 + 1.5 + 0.4 + 0.05 + 0.05, rel=1e-14)
    assert kd.load_urdf(ARM2, floating_base=True).total_mass == pytest.approx(
        5.0 + 2.0 + 1.5 + 0.4 + 0.05 + 0.05, rel=1e-14)


def test_mimic_recorded_not_enforced():
    robot = parse_urdf(ARM2)
    assert set(robot.mimic) == {"finger_mimic_joint"}
    mm = robot.mimic["finger_mimic_joint"]
    assert (mm.joint, mm.multiplier, mm.offset) == ("finger_joint", 1.0, 0.001)
    assert robot.world_links == ["base_link"]
    assert robot.total_mass == pytest.approx(9.0)


def test_rotated_inertial_origin():
    """link1's inertia is given in axes turned by rpy = (0.3, -0.4, 0.5)."""
    model = kd.load_urdf(ARM2)
    m, c, Ic = inertia_parameters(model.bodies[model.body_index("link1")].inertia)
    R = R_rpy((0.3, -0.4, 0.5))
    I_given = np.array([[0.04, 0.001, -0.002], [0.001, 0.05, 0.003], [-0.002, 0.003, 0.02]])
    assert m == pytest.approx(2.0)
    np.testing.assert_allclose(c, [0.02, 0.01, 0.2], atol=1e-14)
    np.testing.assert_allclose(Ic, R @ I_given @ R.T, atol=1e-14)
    # the principal moments do not depend on the axes they are written in
    np.testing.assert_allclose(np.linalg.eigvalsh(Ic), np.linalg.eigvalsh(I_given), atol=1e-14)


def test_fixed_link_merged_by_parallel_axes():
    """link2 carries the flange (fixed, offset and turned): the composite body's mass,
    centre of mass and inertia about its centre of mass, by hand."""
    model = kd.load_urdf(ARM2)
    m, c, Ic = inertia_parameters(model.bodies[model.body_index("link2")].inertia)
    m2, c2, I2 = 1.5, np.array([0.15, 0, 0]), np.diag([0.002, 0.03, 0.03])
    Rf, pf = R_rpy((0, np.pi / 2, 0)), np.array([0.3, 0, 0])
    m3, c3, I3 = 0.4, pf + Rf @ [0, 0.01, 0.02], Rf @ np.diag([0.001, 0.002, 0.0025]) @ Rf.T
    mt = m2 + m3
    ct = (m2 * c2 + m3 * c3) / mt
    It = inertia_of(I2, m2, c2 - ct) + inertia_of(I3, m3, c3 - ct)
    assert m == pytest.approx(mt, rel=1e-14)
    np.testing.assert_allclose(c, ct, atol=1e-14)
    np.testing.assert_allclose(Ic, It, atol=1e-14)


def test_link_poses_by_homogeneous_transforms():
    """Every link's pose (moving bodies and merged frames) against a chain of 4x4s."""
    model = kd.load_urdf(ARM2)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q1, q2, q3, q4 = q = rng.uniform(-1, 1, 4)
        T1 = H(R_rpy((0.1, 0.2, 0.3)), (0.1, -0.05, 0.5)) @ H_joint((0, 1, 0), q1)
        T2 = T1 @ H(R_rpy((0, 0, 1.0)), (0, 0.03, 0.4)) @ H_joint((1, 0, 1), q2)
        Tf = T2 @ H(R_rpy((0, np.pi / 2, 0)), (0.3, 0, 0))
        Tc = Tf @ H(R_rpy((0, 0, np.pi)), (0, 0, 0.05))
        T3 = Tf @ H(p=(0, 0, 0.08)) @ H_joint((0, 1, 0), q3, "prismatic")
        T4 = Tf @ H(p=(0, 0, 0.08)) @ H_joint((0, -1, 0), q4, "prismatic")
        for name, T in [("link1", T1), ("link2", T2), ("flange", Tf), ("camera_link", Tc),
                        ("finger", T3), ("finger_mimic", T4)]:
            R, p = kd.frame_placement(model, q, name)
            np.testing.assert_allclose(R, T[:3, :3], atol=1e-13, err_msg=name)
            np.testing.assert_allclose(p, T[:3, 3], atol=1e-13, err_msg=name)


def _arm2_by_hand(floating=False):
    """arm2 built with ModelBuilder from the numbers in the file, no URDF involved."""
    b = ModelBuilder("arm2_by_hand")
    root = None
    if floating:
        root = b.add_body("base_link", None, kd.model.Free("root_joint"), None, 5.0,
                          (0, 0, 0.05), np.eye(3) * 0.1)
    R1 = R_rpy((0.3, -0.4, 0.5))
    I1 = np.array([[0.04, 0.001, -0.002], [0.001, 0.05, 0.003], [-0.002, 0.003, 0.02]])
    b.add_body("link1", root, Revolute("shoulder", axis=(0, 1, 0)),
               (R_rpy((0.1, 0.2, 0.3)), (0.1, -0.05, 0.5)), 2.0, (0.02, 0.01, 0.2),
               R1 @ I1 @ R1.T)
    b.add_body("link2", "link1", Revolute("elbow", axis=(1, 0, 1)),
               (R_rpy((0, 0, 1.0)), (0, 0.03, 0.4)), 1.5, (0.15, 0, 0),
               np.diag([0.002, 0.03, 0.03]))
    b.add_body("flange", "link2", None, (R_rpy((0, np.pi / 2, 0)), (0.3, 0, 0)), 0.4,
               (0, 0.01, 0.02), np.diag([0.001, 0.002, 0.0025]))
    for name, axis in (("finger", (0, 1, 0)), ("finger_mimic", (0, -1, 0))):
        b.add_body(name, "flange", Prismatic(f"{name}_joint", axis=axis),
                   (np.eye(3), (0, 0, 0.08)), 0.05, (0, 0, 0), np.eye(3) * 1e-5)
    return b.build()


@pytest.mark.parametrize("floating", [False, True])
def test_arm2_dynamics_equal_hand_built_model(floating):
    model = kd.load_urdf(ARM2, floating_base=floating)
    hand = _arm2_by_hand(floating)
    assert model.joint_names == [
        j if j != "finger_mimic_joint" else j for j in hand.joint_names]
    rng = np.random.default_rng(11)
    for _ in range(3):
        q = kd.random_configuration(model, rng)
        v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
        np.testing.assert_allclose(kd.crba(model, q), kd.crba(hand, q), atol=1e-12)
        np.testing.assert_allclose(kd.rnea(model, q, v, a), kd.rnea(hand, q, v, a), atol=1e-11)


def test_string_equals_file():
    text = ARM2.read_text()
    a, b = kd.load_urdf(ARM2), kd.load_urdf_string(text)
    c = kd.load_urdf(string=text)
    q = kd.random_configuration(a, 0)
    np.testing.assert_array_equal(kd.crba(a, q), kd.crba(b, q))
    np.testing.assert_array_equal(kd.crba(a, q), kd.crba(c, q))


# ---------------------------------------------------------------------------------------
# Order, world roots, floating and planar joints
# ---------------------------------------------------------------------------------------

def test_joint_order_depth_first_document_order():
    model = kd.load_urdf(DATA / "tree_order.urdf")
    assert model.joint_names == ["zeta", "zeta_child", "beta_after_fixed", "alpha", "mid",
                                 "mid_a"]
    # parents come before children, and each body's parent is its URDF parent link
    parents = {b.name: (model.bodies[b.parent].name if b.parent >= 0 else None)
               for b in model.bodies}
    assert parents == {"l_zeta": None, "l_zeta_child": "l_zeta", "l_beta": "l_zeta",
                       "l_alpha": None, "l_mid": "l_alpha", "l_mid_a": "l_mid"}


def test_world_root_fixed_base():
    model = kd.load_urdf(DATA / "world_root.urdf")
    assert model.joint_names == ["swing", "payload_joint"]
    assert model.bodies[1].joint.kind == "free"  # URDF 'floating' joint
    assert model.total_mass == pytest.approx(1.5)  # base and table belong to the world
    # swing's axis passes through world (0.5, 0, 1) + Rz(0.5) (0, 0, 0.2)
    R, p = kd.frame_placement(model, kd.neutral(model), "arm")
    np.testing.assert_allclose(p, [0.5, 0, 1.2], atol=1e-15)
    np.testing.assert_allclose(R, R_rpy((0, 0, 0.5)), atol=1e-15)
    R, p = kd.frame_placement(model, kd.neutral(model), "payload")
    np.testing.assert_allclose(p, [0.5, 0, 0.7], atol=1e-15)


def test_world_root_floating_base_moves_the_real_base():
    model = kd.load_urdf(DATA / "world_root.urdf", floating_base=True)
    assert model.joint_names == ["root_joint", "swing", "payload_joint"]
    assert model.body_names[0] == "base"
    assert model.total_mass == pytest.approx(14.5)
    q = kd.neutral(model)
    quat = Rotation.from_euler("xyz", [0.2, -0.1, 0.4]).as_quat()  # x, y, z, w
    q[:7] = [1.0, 2.0, 3.0, quat[3], quat[0], quat[1], quat[2]]
    R, p = kd.frame_placement(model, q, "base")
    np.testing.assert_allclose(p, [1, 2, 3], atol=1e-15)
    np.testing.assert_allclose(R, Rotation.from_quat(quat).as_matrix(), atol=1e-15)
    R, p = kd.frame_placement(model, q, "table")
    np.testing.assert_allclose(p, np.array([1, 2, 3]) + R @ [1, 0, 0], atol=1e-15)


def test_floating_base_adds_free_root():
    fixed = kd.load_urdf(DATA / "tree_order.urdf")
    model = kd.load_urdf(DATA / "tree_order.urdf", floating_base=True)
    assert (model.nq, model.nv) == (fixed.nq + 7, fixed.nv + 6)
    assert model.bodies[0].joint.kind == "free" and model.bodies[0].name == "root"
    # a free root carries the whole robot: its 3x3 linear block of M is total mass x 1
    M = kd.crba(model, kd.random_configuration(model, 5))
    np.testing.assert_allclose(M[3:6, 3:6], model.total_mass * np.eye(3), atol=1e-12)


def test_planar_joint_puts_link_where_urdf_does():
    """URDF planar: child = origin · (translation in the plane normal to axis) ·
    (rotation about axis by θ). Checked without the loader's choice of in-plane axes."""
    model = kd.load_urdf(DATA / "planar.urdf")
    assert model.joint_names == ["slide_yz", "hinge", "slide_xy"]
    Ro, po = R_rpy((0.2, 0.1, -0.3)), np.array([0.1, 0.2, 0.3])
    n = np.array([1.0, 0, 0])
    rng = np.random.default_rng(2)
    for _ in range(4):
        q = rng.uniform(-1.5, 1.5, model.nq)
        x, y, th = q[:3]
        R, p = kd.frame_placement(model, q, "puck")
        np.testing.assert_allclose(R, Ro @ Rotation.from_rotvec(th * n).as_matrix(), atol=1e-14)
        d = Ro.T @ (p - po)  # the displacement, in the joint frame
        assert abs(d @ n) < 1e-14
        assert np.linalg.norm(d) == pytest.approx(np.hypot(x, y), abs=1e-14)
        # the hinge hangs off the puck's URDF frame
        Rh, ph = kd.frame_placement(model, q, "flap")
        Th = H(R, p) @ H(p=(0, 0.1, 0)) @ H_joint((0, 0, 1), q[3])
        np.testing.assert_allclose(Rh, Th[:3, :3], atol=1e-14)
        np.testing.assert_allclose(ph, Th[:3, 3], atol=1e-14)
        # axis z: the joint frame's own xy-plane, q = (x, y, θ) directly
        R, p = kd.frame_placement(model, q, "sled")
        np.testing.assert_allclose(p, [q[4], q[5], -1.0], atol=1e-14)
        np.testing.assert_allclose(R, Rotation.from_rotvec([0, 0, q[6]]).as_matrix(),
                                   atol=1e-14)
    # the puck's inertia (rotated inertial frame) survives the plane alignment
    puck = model.bodies[model.body_index("puck")]
    m, c, Ic = inertia_parameters(puck.inertia)
    X = model.frames["puck"].placement  # puck_X_body, a pure rotation
    assert m == pytest.approx(2.0)
    np.testing.assert_allclose(X.translation, 0.0, atol=1e-15)
    Rp = X.rotation  # the puck's axes in body coordinates
    np.testing.assert_allclose(Rp @ [0.05, 0.02, 0.01], c, atol=1e-14)
    Ri = R_rpy((0.1, 0, 0))
    np.testing.assert_allclose(Rp @ Ri @ np.diag([0.01, 0.02, 0.025]) @ Ri.T @ Rp.T, Ic,
                               atol=1e-14)


def test_point_mass_and_meshes_need_no_files():
    xml = """<robot name="p">
      <link name="base"/>
      <joint name="j" type="continuous"><parent link="base"/><child link="bob"/>
        <axis xyz="0 1 0"/></joint>
      <link name="bob">
        <visual><geometry><mesh filename="package://nowhere/bob.stl"/></geometry></visual>
        <inertial><origin xyz="0 0 -1"/><mass value="1"/>
          <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial>
      </link></robot>"""
    model = kd.load_urdf_string(xml)
    # the textbook pendulum: θ̈ = -(g/l) sin θ
    th = 0.7
    acc = kd.aba(model, [th], [0.0], [0.0])
    assert acc[0] == pytest.approx(-9.81 * np.sin(th), rel=1e-13)


# ---------------------------------------------------------------------------------------
# The shipped robots
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, nv_fixed", [("panda", 9), ("ur5", 6), ("humanoid", 32),
                                            ("quadruped", 12), ("chain20", 20)])
def test_shipped_robots(name, nv_fixed):
    model = kd.load_robot(name)
    floating = kd.load_robot(name, floating_base=True)
    assert model.nv == nv_fixed and floating.nv == nv_fixed + 6
    M = kd.crba(floating, kd.random_configuration(floating, 1))
    assert np.all(np.linalg.eigvalsh(M) > 0)
    np.testing.assert_allclose(M[3:6, 3:6], floating.total_mass * np.eye(3), atol=1e-10)


def test_panda_flange_pose_at_zero():
    """Franka's published zero pose: flange at (0.088, 0, 0.333 + 0.316 + 0.384 - 0.107)
    with its z-axis pointing down."""
    model = kd.load_robot("panda")
    R, p = kd.frame_placement(model, kd.neutral(model), "panda_link8")
    np.testing.assert_allclose(p, [0.088, 0, 0.926], atol=1e-12)
    np.testing.assert_allclose(R, np.diag([1.0, -1.0, -1.0]), atol=1e-12)
    assert parse_urdf(kd.model.urdf.robot_path("panda")).mimic["panda_finger_joint2"].joint \
        == "panda_finger_joint1"


def test_docs_example_runs_and_is_right(capsys):
    """docs/urdf.md's example: the hand's TCP is 0.1034 m below the flange (Franka)."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "urdf.md").read_text()
    code = doc.split("```python")[1].split("```")[0]
    ns: dict = {}
    exec(compile(code, "docs/urdf.md", "exec"), ns)
    np.testing.assert_allclose(ns["p"], [0.088, 0, 0.926 - 0.1034], atol=1e-12)
    assert (ns["legged"].nq, ns["legged"].nv, ns["humanoid"].nv) == (19, 18, 38)
    capsys.readouterr()


def test_gravity_argument():
    """Gravity torques are linear in g: none without gravity, sign flips with it."""
    q = np.array([0.3, -0.7, 0.02, 0.01])
    zero = np.zeros(4)
    down = kd.load_urdf(ARM2)
    assert np.abs(kd.rnea(down, q, zero, zero)).max() > 1.0
    np.testing.assert_allclose(kd.rnea(kd.load_urdf(ARM2, gravity=(0, 0, 0)), q, zero, zero),
                               0.0, atol=1e-15)
    np.testing.assert_allclose(kd.rnea(kd.load_urdf(ARM2, gravity=(0, 0, 9.81)), q, zero, zero),
                               -kd.rnea(down, q, zero, zero), atol=1e-13)


def test_xml_text_passed_as_path_gets_a_hint():
    with pytest.raises(kd.URDFError, match="pass string="):
        kd.load_urdf(ARM2.read_text())


def test_models_robot_is_load_robot():
    a, b = kd.models.robot("quadruped", floating_base=True), kd.load_robot("quadruped", True)
    assert a.joint_names == b.joint_names and a.nv == 18
    with pytest.raises(kd.ModelError, match="no robot description named 'atlas'"):
        kd.models.robot("atlas")


def test_shipped_files_are_what_the_generator_writes(tmp_path):
    """The .urdf files are generated; a hand edit that the generator does not make
    (or a generator change not rerun) shows up here."""
    import importlib.util

    from kanedyn.model.urdf import ROBOTS, robot_path

    gen_path = robot_path("panda").parent / "generate.py"
    spec = importlib.util.spec_from_file_location("kanedyn_robot_generator", gen_path)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    gen.OUT = tmp_path
    for make in gen.ROBOTS:
        make()
    assert sorted(p.stem for p in tmp_path.iterdir()) == sorted(ROBOTS)
    for name in ROBOTS:
        assert (tmp_path / f"{name}.urdf").read_text() == robot_path(name).read_text(), name


def test_parsed_description_of_world_root():
    robot = parse_urdf(DATA / "world_root.urdf")
    assert robot.root == "world"
    assert robot.world_links == ["world", "base", "table"]
    assert [j.name for j in robot.children["base"]] == ["base_to_table", "swing"]
    assert robot.parent_joint["payload"].type == "floating"
    assert robot.links["world"].inertial is None and robot.links["world"].mass == 0.0
