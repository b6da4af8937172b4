"""URDF <visual> read into VisualGeometry: bodies, placements, meshes, colours, paths, warnings.

Placements are checked against Pinocchio's own URDF geometry loader (world poses of
every visual at random configurations) and against the URDF's numbers composed by hand.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.model.urdf import rpy_matrix
from kanedyn.model.visuals import (
    DEFAULT_RGBA,
    VisualGeometry,
    load_urdf_visuals,
    read_mesh,
    resolve_mesh_path,
)
from kanedyn.spatial import Transform

ERD = (Path(np.__file__).resolve().parents[1] / "cmeel.prefix" / "share" / "example-robot-data")


def _world_pose(model, q, v: VisualGeometry):
    """(R, p) of a visual in the world: its body's pose composed with its placement."""
    R_g, p_g = v.placement.rotation, v.placement.translation
    if v.body < 0:
        return R_g, p_g
    kin = kd.forward_kinematics(model, q)
    return kin.R[v.body] @ R_g, kin.p[v.body] + kin.R[v.body] @ p_g


def _visuals(urdf, model, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # the mesh robot's files are all there
        return load_urdf_visuals(urdf, model, **kw)


def test_visuals_go_to_their_bodies_with_their_shapes_and_colours(mesh_robot):
    urdf, model = mesh_robot
    vis = _visuals(urdf, model)
    assert [v.kind for v in vis] == ["box", "cylinder", "mesh", "mesh"]
    box, cyl, fore, ball = vis
    assert box.body == -1                               # the base link is the world
    assert cyl.body == model.body_index("upper") and fore.body == model.body_index("fore")
    assert ball.body == model.body_index("fore")        # 'tool' is merged into 'fore'
    assert box.size == (0.3, 0.3, 0.1) and cyl.size == (0.04, 0.4)
    assert box.rgba == (0.9, 0.05, 0.05, 1.0)           # a named material of the robot
    assert cyl.rgba == (0.6, 0.65, 0.7, 1.0)            # an inline one
    # the STL: a 0.06 x 0.06 x 0.2 box, scaled 1.5 along z; found next to the URDF
    assert fore.source == str(urdf.parent / "meshes" / "fore.stl")
    np.testing.assert_allclose(np.ptp(fore.vertices, axis=0), [0.06, 0.06, 0.3], rtol=1e-6)
    # the OBJ (package://): a unit icosphere of 5120 triangles, scaled by 0.06
    assert "meshbot_description/meshes/ball.obj" in ball.source and len(ball.faces) == 5120
    np.testing.assert_allclose(np.linalg.norm(ball.vertices, axis=1), 0.06, rtol=1e-6)


def test_placements_compose_the_urdf_origins(mesh_robot):
    """The ball's world pose, by hand: fore's pose, then tool's fixed joint origin, then
    the visual's origin — each ``R = rpy_matrix(rpy)``, ``p = xyz`` from the file."""
    urdf, model = mesh_robot
    ball = _visuals(urdf, model)[3]
    rng = np.random.default_rng(1)
    for _ in range(3):
        q = rng.uniform(-2, 2, model.nq)
        kin = kd.forward_kinematics(model, q)
        i = model.body_index("fore")
        R_t = kin.R[i] @ rpy_matrix([0, 0.5, 0])
        p_t = kin.p[i] + kin.R[i] @ [0, 0, 0.3]
        R, p = _world_pose(model, q, ball)
        np.testing.assert_allclose(R, R_t, atol=1e-14)
        np.testing.assert_allclose(p, p_t + R_t @ [0, 0, 0.05], atol=1e-14)


def test_placements_agree_with_pinocchio(mesh_robot, tmp_path):
    pin = pytest.importorskip("pinocchio")
    urdf, model = mesh_robot
    # pinocchio takes a relative mesh path from the working folder, not from the URDF's
    for_pin = tmp_path / "meshbot.urdf"
    for_pin.write_text(urdf.read_text().replace('"meshes/fore.stl"',
                                                f'"{urdf.parent / "meshes" / "fore.stl"}"'))
    pm = pin.buildModelFromUrdf(str(for_pin))
    gm = pin.buildGeomFromUrdf(pm, str(for_pin), pin.GeometryType.VISUAL,
                               package_dirs=[str(urdf.parents[2])])
    _compare_with_pinocchio(pin, model, pm, gm, _visuals(urdf, model), floating=False)


def _link_of(v: VisualGeometry) -> str:
    return re.search(r"<link name='([^']+)'>", v.name).group(1)


def _compare_with_pinocchio(pin, model, pm, gm, vis, floating: bool, n: int = 3):
    """World poses of every visual at random q, ours against pinocchio's oMg; joints are
    matched by name (the two order a tree's branches differently)."""
    pd, gd = pm.createData(), gm.createData()
    ours: dict[str, list] = {}
    for v in vis:
        ours.setdefault(_link_of(v), []).append(v)
    rng = np.random.default_rng(0)
    for _ in range(n):
        q = kd.random_configuration(model, int(rng.integers(1 << 30)))
        qp = np.zeros(pm.nq)
        for j in range(1, pm.njoints):
            name, iq = pm.names[j], pm.joints[j].idx_q
            b = model.bodies[model.joint_index(name)]
            if floating and b.joint.kind == "free":
                x = q[b.iq]
                qp[iq:iq + 7] = np.r_[x[:3], x[4:7], x[3]]       # (x, y, z, w) in pinocchio
            else:
                qp[iq] = q[b.iq][0]
        pin.forwardKinematics(pm, pd, qp)
        pin.updateGeometryPlacements(pm, pd, gm, gd)
        count: dict[str, int] = {}
        for k, go in enumerate(gm.geometryObjects):
            link = pm.frames[go.parentFrame].name
            v = ours[link][count.get(link, 0)]
            count[link] = count.get(link, 0) + 1
            R, p = _world_pose(model, q, v)
            np.testing.assert_allclose(R, gd.oMg[k].rotation, atol=1e-12, err_msg=go.name)
            np.testing.assert_allclose(p, gd.oMg[k].translation, atol=1e-12, err_msg=go.name)
            if v.kind == "mesh":
                np.testing.assert_allclose(v.size, go.meshScale, err_msg=go.name)
        assert sum(count.values()) == len(vis)


@pytest.mark.skipif(not (ERD / "robots" / "talos_data").is_dir(),
                    reason="example-robot-data is not installed (not in the test extra)")
def test_a_real_humanoid_talos_agrees_with_pinocchio():
    """Talos (example-robot-data): 52 visuals of STL meshes (mirrored ones among them),
    boxes and cylinders, package:// paths found by walking up to the package folder."""
    pin = pytest.importorskip("pinocchio")
    urdf = ERD / "robots" / "talos_data" / "robots" / "talos_reduced.urdf"
    model = kd.load_urdf(urdf, floating_base=True)
    vis = _visuals(urdf, model)
    pm = pin.buildModelFromUrdf(str(urdf), pin.JointModelFreeFlyer())
    gm = pin.buildGeomFromUrdf(pm, str(urdf), pin.GeometryType.VISUAL,
                               package_dirs=[str(ERD.parent)])
    assert len(vis) == gm.ngeoms == 52
    _compare_with_pinocchio(pin, model, pm, gm, vis, floating=True, n=2)
    mirrored = [v for v in vis if v.kind == "mesh" and np.prod(v.size) < 0]
    assert mirrored, "talos_reduced has mirrored arm meshes (scale 1 -1 1)"
    for v in mirrored[:2]:   # the faces were turned over, so the normals still point out
        import trimesh
        assert trimesh.Trimesh(v.vertices, v.faces, process=False).volume > 0


def test_package_paths_and_ros_package_path(mesh_robot, tmp_path, monkeypatch):
    urdf, model = mesh_robot
    pkg = urdf.parents[1]
    # a copy of the URDF away from its package: package:// is found only through a path
    lone = tmp_path / "lone.urdf"
    lone.write_text(urdf.read_text())
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "fore.stl").write_bytes((pkg / "meshes" / "fore.stl").read_bytes())
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    with pytest.warns(kd.KanedynWarning, match="package://meshbot_description/meshes/ball.obj"):
        vis = load_urdf_visuals(lone, model)
    assert [v.kind for v in vis] == ["box", "cylinder", "mesh"]    # the ball fell back
    for given in ([pkg.parent], str(pkg.parent), [pkg]):          # a folder holding it, itself
        assert len(_visuals(lone, model, package_paths=given)) == 4
    monkeypatch.setenv("ROS_PACKAGE_PATH", f"/nonexistent:{pkg.parent}")
    assert len(_visuals(lone, model)) == 4
    assert resolve_mesh_path("package://nope/x.stl", tmp_path, [pkg.parent]) is None
    assert resolve_mesh_path(f"file://{pkg}/meshes/ball.obj") == pkg / "meshes" / "ball.obj"


def test_a_missing_mesh_warns_once_naming_the_file(mesh_robot, tmp_path):
    urdf, model = mesh_robot
    text = urdf.read_text().replace("meshes/fore.stl", "meshes/gone.stl")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vis = load_urdf_visuals(urdf.parent / "x.urdf", model, string=text)
    msgs = [str(w.message) for w in caught if issubclass(w.category, kd.KanedynWarning)]
    assert len(msgs) == 1 and "meshes/gone.stl" in msgs[0] and "skeleton" in msgs[0]
    assert model.body_index("fore") in {v.body for v in vis}      # the ball is still there
    assert [v.kind for v in vis] == ["box", "cylinder", "mesh"]


def test_an_unreadable_mesh_warns_naming_the_file(mesh_robot, tmp_path):
    urdf, model = mesh_robot
    bad = tmp_path / "meshes" / "broken.stl"
    bad.parent.mkdir()
    bad.write_bytes(b"solid nothing\nthis is not an STL file\n")
    text = urdf.read_text().replace("meshes/fore.stl", "meshes/broken.stl")
    with pytest.warns(kd.KanedynWarning, match="broken.stl"):
        vis = load_urdf_visuals(tmp_path / "x.urdf", model, string=text,
                                package_paths=[urdf.parents[2]])
    assert len(vis) == 3
    with pytest.raises(kd.KanedynError, match="broken.stl"):
        read_mesh(bad)


@pytest.mark.parametrize("old, new, message", [
    ('<box size="0.3 0.3 0.1"/>', '<box size="0.3 -0.3 0.1"/>', r"line 7.*must be positive"),
    ('<cylinder radius="0.04" length="0.4"/>', '<cylinder radius="0.04"/>',
     r"missing required attribute 'length'"),
    ('<geometry><box size="0.3 0.3 0.1"/></geometry>', "", r"line 4.*needs a <geometry>"),
    ('scale="1 1 1.5"', 'scale="1 0 1.5"', r"must be non-zero"),
    ('<color rgba="0.9 0.05 0.05 1"/>', '<color rgba="2 0 0 1"/>', r"\[0, 1\]"),
])
def test_bad_visual_elements_name_their_line(mesh_robot, old, new, message):
    urdf, model = mesh_robot
    text = urdf.read_text()
    assert old in text
    with pytest.raises(kd.URDFError, match=message):
        load_urdf_visuals(urdf.parent, model, string=text.replace(old, new))


def test_visuals_need_the_model_of_their_urdf(mesh_robot):
    urdf, _ = mesh_robot
    with pytest.raises(kd.KanedynError, match="link 'base' is not a frame of model"):
        load_urdf_visuals(urdf, kd.models.pendulum_chain(2))


def test_the_record_refuses_what_is_not_a_shape():
    X = Transform.identity()
    VisualGeometry(0, X, "capsule", (0.1, 0.5))
    VisualGeometry(0, X, "mesh", (1, -1, 1), vertices=np.eye(3), faces=[[0, 1, 2]])
    for kind, size, kw, msg in [
        ("cone", (1,), {}, "not one of"),
        ("box", (1, 1), {}, "needs 3 positive"),
        ("sphere", (-1,), {}, "positive"),
        ("mesh", (1, 1, 1), {"vertices": np.eye(3), "faces": [[0, 1, 3]]}, "indexing the 3"),
        ("mesh", (1, 1, 1), {"vertices": [[np.nan, 0, 0]], "faces": [[0, 0, 0]]}, "finite"),
        ("box", (1, 1, 1), {"vertices": np.eye(3)}, "takes no vertices"),
    ]:
        with pytest.raises(kd.KanedynError, match=msg):
            VisualGeometry(0, X, kind, size, DEFAULT_RGBA, **kw)
    with pytest.raises(kd.KanedynError, match="rgba"):
        VisualGeometry(0, X, "sphere", (1,), (1, 0, 0))


def test_a_collada_mesh_keeps_its_parts_colours_unit_and_up_axis(mesh_robot, tmp_path):
    """Two unit cubes of two materials, the blue one 3 along y, written by trimesh's
    Collada exporter (which says Y_UP), then declared in centimetres. The parts keep their
    colours, come out 1 cm wide, and Y_UP turns y into z ((x, y, z) -> (x, -z, y), the
    COLLADA 1.4 axes); declared Z_UP, the same file is read as it is."""
    import trimesh
    pytest.importorskip("collada")
    red, blue = trimesh.creation.box(extents=(1, 1, 1)), trimesh.creation.box(extents=(1, 1, 1))
    red.visual.face_colors = [255, 0, 0, 255]
    blue.apply_translation([0, 3, 0])
    blue.visual.face_colors = [0, 0, 255, 255]
    text = trimesh.exchange.dae.export_collada([red, blue]).decode()
    assert "<up_axis>Y_UP</up_axis>" in text
    text = text.replace("<asset>", '<asset><unit name="centimeter" meter="0.01"/>', 1)
    dae, zup = tmp_path / "two.dae", tmp_path / "two_z.dae"
    dae.write_text(text)
    zup.write_text(text.replace("Y_UP", "Z_UP"))
    parts = read_mesh(dae)
    assert [c for _, _, c in parts] == [(1.0, 0.0, 0.0, 1.0), (0.0, 0.0, 1.0, 1.0)]
    np.testing.assert_allclose(parts[0][0].min(axis=0), [-0.005] * 3, atol=1e-12)
    np.testing.assert_allclose(parts[1][0].max(axis=0), [0.005, 0.005, 0.035], atol=1e-12)
    np.testing.assert_allclose(read_mesh(zup)[1][0].max(axis=0), [0.005, 0.035, 0.005],
                               atol=1e-12)
    # in a URDF whose visual has its own colour, the two materials still win
    urdf, model = mesh_robot
    xml = urdf.read_text().replace('"meshes/fore.stl"', f'"{dae}"')
    vis = load_urdf_visuals(urdf.parent / "x.urdf", model, string=xml,
                            package_paths=[urdf.parents[2]])
    fore = [v for v in vis if v.source == str(dae)]
    assert [v.rgba for v in fore] == [(1.0, 0.0, 0.0, 1.0), (0.0, 0.0, 1.0, 1.0)]
    np.testing.assert_allclose(np.ptp(fore[0].vertices, axis=0), [0.01, 0.01, 0.015])


@pytest.mark.skipif(not (ERD / "robots" / "panda_description").is_dir(),
                    reason="example-robot-data is not installed (not in the test extra)")
def test_a_collada_robot_panda_agrees_with_pinocchio():
    pin = pytest.importorskip("pinocchio")
    urdf = ERD / "robots" / "panda_description" / "urdf" / "panda.urdf"
    model = kd.load_urdf(urdf)
    vis = _visuals(urdf, model)
    pm = pin.buildModelFromUrdf(str(urdf))
    gm = pin.buildGeomFromUrdf(pm, str(urdf), pin.GeometryType.VISUAL,
                               package_dirs=[str(ERD.parent)])
    # one VisualGeometry per material part; pinocchio has one object per <visual>
    firsts = [v for k, v in enumerate(vis) if k == 0 or v.name != vis[k - 1].name]
    assert len(firsts) == gm.ngeoms and len(vis) > gm.ngeoms
    _compare_with_pinocchio(pin, model, pm, gm, firsts, floating=False, n=2)
