"""The 3D scene: primitives as triangles, decimation to a budget, the packed data."""

from __future__ import annotations

import base64

import numpy as np
import pytest
import trimesh

import kanedyn as kd
from kanedyn.model.visuals import VisualGeometry, load_urdf_visuals
from kanedyn.spatial import Transform
from kanedyn.viz import animation_frames, decimate, scene_data
from kanedyn.viz.scene import SECTIONS, triangulate

X = Transform.identity()


@pytest.mark.parametrize("kind, size, volume", [
    ("box", (0.3, 0.2, 0.1), 0.3 * 0.2 * 0.1),
    # a prism on the regular SECTIONS-gon inscribed in the circle: area (n/2) r² sin(2π/n)
    ("cylinder", (0.1, 0.5), SECTIONS / 2 * 0.1 ** 2 * np.sin(2 * np.pi / SECTIONS) * 0.5),
])
def test_primitives_are_closed_solids_of_their_size(kind, size, volume):
    V, F = triangulate(VisualGeometry(0, X, kind, size))
    m = trimesh.Trimesh(V, F, process=False)
    assert m.is_watertight
    assert m.volume == pytest.approx(volume, rel=1e-12)
    half = np.array([size[0] / 2, size[1] / 2, size[2] / 2]) if kind == "box" else np.array(
        [size[0], size[0], size[1] / 2])
    np.testing.assert_allclose(V.max(axis=0), half, rtol=1e-12)   # centred on the origin


@pytest.mark.parametrize("kind, size, semi", [
    ("sphere", (0.2,), (0.2, 0.2, 0.2)),
    ("ellipsoid", (0.3, 0.2, 0.1), (0.3, 0.2, 0.1)),
    ("capsule", (0.1, 0.4), (0.1, 0.1, 0.3)),      # half length 0.2 plus the cap 0.1
])
def test_round_primitives_reach_their_extent(kind, size, semi):
    V, F = triangulate(VisualGeometry(0, X, kind, size))
    assert trimesh.Trimesh(V, F, process=False).is_watertight
    np.testing.assert_allclose(np.abs(V).max(axis=0), semi, rtol=1e-9)


def test_decimation_keeps_the_budget_the_shape_and_the_sharing():
    ball = trimesh.creation.icosphere(subdivisions=5, radius=0.1)       # 20480 triangles
    V, F = np.asarray(ball.vertices), np.asarray(ball.faces)
    a = VisualGeometry(0, X, "mesh", (1, 1, 1), vertices=V, faces=F)
    b = VisualGeometry(1, Transform.from_pose(np.eye(3), [0, 0, 1]), "mesh", (1, 1, 1),
                       vertices=a.vertices, faces=a.faces)             # the same mesh again
    box = VisualGeometry(1, X, "box", (1, 1, 1))
    out = decimate([a, b, box], max_triangles=2000)
    assert out[2] is box
    assert out[0].vertices is out[1].vertices and out[0].faces is out[1].faces
    n = len(out[0].faces)
    assert 1500 <= n <= 2000, n
    # still the ball: every kept vertex within 2 % of its radius of the sphere
    r = np.linalg.norm(out[0].vertices, axis=1)
    np.testing.assert_allclose(r, 0.1, rtol=0.02)
    assert decimate([a], max_triangles=30000)[0] is a                   # within budget: as is
    with pytest.raises(kd.KanedynError, match="max_triangles"):
        decimate([a], 0)


def _decode(m):
    V = np.frombuffer(base64.b64decode(m["v"]), "<f4").reshape(-1, 3)
    F = np.frombuffer(base64.b64decode(m["f"]), "<u2" if m["width"] == 2 else "<u4")
    return V, F.reshape(-1, 3)


def test_scene_data_packs_each_mesh_once_and_bounds_every_frame(mesh_robot, mesh_run):
    urdf, model = mesh_robot
    vis = load_urdf_visuals(urdf, model)
    frames = animation_frames(model, mesh_run.t, mesh_run.q)
    S = scene_data(vis, frames, model.nb)
    assert len(S["instances"]) == 4 and len(S["meshes"]) == 4
    assert S["bodies"] == [0, 1]
    assert S["triangles"] == sum(len(triangulate(v)[1]) for v in vis)
    for v, inst in zip(vis, S["instances"], strict=True):
        V, F = _decode(S["meshes"][inst["mesh"]])
        V0, F0 = triangulate(v)
        np.testing.assert_allclose(V, V0, rtol=1e-6, atol=1e-7)        # float32
        np.testing.assert_array_equal(F, F0)
        assert inst["body"] == v.body and inst["rgba"] == list(v.rgba)
        np.testing.assert_allclose(kd.spatial.quat_to_matrix(inst["q"]), v.placement.rotation,
                                   atol=1e-12)
    # every vertex at every frame, moved by forward kinematics, is inside the bounds
    lo, hi = np.array(S["bounds"])
    for k in range(0, len(mesh_run.t), 10):
        kin = kd.forward_kinematics(model, mesh_run.q[k])
        for v in vis:
            V, _ = triangulate(v)
            P = V @ v.placement.rotation.T + v.placement.translation
            if v.body >= 0:
                P = P @ kin.R[v.body].T + kin.p[v.body]
            assert np.all(P >= lo - 1e-12) and np.all(P <= hi + 1e-12)
    with pytest.raises(kd.KanedynError, match="body 5 is not a body"):
        scene_data([VisualGeometry(5, X, "box", (1, 1, 1))], frames, model.nb)


def test_decimation_welds_seams_first():
    """A sphere as a triangle soup (every triangle its own three vertices, as STL files and
    Collada seams give them): decimated, it is still a closed surface, not torn apart."""
    soup = trimesh.creation.icosphere(subdivisions=4, radius=0.1)
    soup.unmerge_vertices()
    assert len(soup.vertices) == 3 * len(soup.faces) and not soup.is_watertight
    v = VisualGeometry(0, X, "mesh", (1, 1, 1), vertices=soup.vertices, faces=soup.faces)
    out = decimate([v], max_triangles=1000)[0]
    m = trimesh.Trimesh(out.vertices, out.faces, process=False)
    assert 800 <= len(out.faces) <= 1000 and m.is_watertight
    np.testing.assert_allclose(m.volume, 4 / 3 * np.pi * 0.1 ** 3, rtol=0.05)
