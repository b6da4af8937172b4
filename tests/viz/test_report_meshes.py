"""report.html with a mesh-bearing robot, in headless Chromium: WebGL draws the meshes,
the triangle count is the decimated one, a drag turns the view, the slider moves the robot."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

import kanedyn as kd
from kanedyn.model.visuals import load_urdf_visuals
from kanedyn.viz import animation_frames, decimate, trajectory_view_html, write_report
from kanedyn.viz.scene import triangulate

BUDGET = 1500   # below the ball's 5120 triangles, so decimation has work to do


def _dom(dom: str) -> dict:
    out = {}
    for key in ("status", "frame", "errors", "selftest", "renderer", "triangles",
                "drawn-triangles"):
        m = re.search(rf'id="{key}">([^<]*)<', dom)
        out[key] = None if m is None else m.group(1)
    return out


@pytest.fixture(scope="module")
def pages(mesh_robot, mesh_run, tmp_path_factory):
    """The same run written twice: with the robot's visuals and without (skeleton only)."""
    urdf, model = mesh_robot
    vis = load_urdf_visuals(urdf, model)
    frames = animation_frames(model, mesh_run.t, mesh_run.q)
    out = tmp_path_factory.mktemp("meshes")
    with_meshes = write_report(out / "meshes.html", {"model": model.name}, [], frames,
                               visuals=vis, max_triangles=BUDGET)
    skeleton = write_report(out / "skeleton.html", {"model": model.name}, [], frames)
    return with_meshes, skeleton, vis, frames


def test_the_page_draws_the_decimated_meshes_in_webgl(pages, browser):
    path, _, vis, _ = pages
    dom = _dom(browser.dump_dom(path.as_uri(), 1500))
    assert dom["errors"] == "", dom["errors"]
    assert dom["status"] == "ok" and dom["renderer"] == "webgl"
    kept = decimate(vis, BUDGET)
    expected = sum(len(triangulate(v)[1]) for v in kept)
    assert expected < sum(len(triangulate(v)[1]) for v in vis)        # decimation happened
    assert int(dom["triangles"]) == expected
    # WebGL drew them all (and the skeleton's balls and sticks of no body: all have visuals)
    assert int(dom["drawn-triangles"]) >= expected


def test_the_meshes_show_in_the_screenshot(pages, browser, tmp_path):
    """The base's box is signal red (0.9, 0.05, 0.05): its pixels are there with the
    meshes and not in the skeleton drawing, and the two pictures differ."""
    meshes, skeleton, _, _ = pages
    shots = []
    for page in (meshes, skeleton):
        png = tmp_path / f"{page.stem}.png"
        browser.screenshot(page.as_uri(), str(png), budget_ms=800, size="800,800")
        shots.append((imread(png)[..., :3] * 255).astype(int))
    red = [np.sum((s[..., 0] > 150) & (s[..., 1] < 60) & (s[..., 2] < 60)) for s in shots]
    assert red[0] > 2000 and red[1] == 0, red
    differ = np.mean(np.any(np.abs(shots[0] - shots[1]) > 30, axis=-1))
    assert differ > 0.03, differ


def test_drag_wheel_and_slider_act_on_the_view(pages, browser, mesh_robot, mesh_run):
    path, _, vis, frames = pages
    _, model = mesh_robot
    dom = _dom(browser.dump_dom(path.as_uri() + "#selftest", 1500))
    assert dom["errors"] == "", dom["errors"]
    st = json.loads(dom["selftest"])
    # a drag to the right and down turns the camera about the vertical and tilts it
    assert abs(st["after"][0] - st["before"][0]) > 0.1
    assert abs(st["after"][1] - st["before"][1]) > 0.05
    d0, d1, d2 = st["distance"]
    assert d1 == pytest.approx(d0, rel=1e-9) and d2 < 0.95 * d1       # the wheel zooms in
    # the slider puts the last body where the data says, at each of two frames, and its
    # first visual (the STL) where forward kinematics carries it: p_b + R_b p_g
    body, frames_at = st["slider"]["body"], st["slider"]["frames"]
    assert body == model.nb - 1 and vis[2].body == body
    seen = []
    for f, p, pv in zip(frames_at, st["slider"]["positions"], st["slider"]["visuals"],
                        strict=True):
        np.testing.assert_allclose(p, frames["origins"][f][body], atol=1e-4)
        kin = kd.forward_kinematics(model, mesh_run.q[f])   # the frames are the run's samples
        np.testing.assert_allclose(pv, kin.p[body] + kin.R[body] @ vis[2].placement.translation,
                                   atol=1e-4)
        seen.append(pv)
    assert np.linalg.norm(np.subtract(*seen)) > 0.05
    assert int(dom["frame"]) > 20                        # and it plays on afterwards


def test_the_notebook_view_is_one_self_contained_frame(mesh_robot, mesh_run, browser,
                                                       tmp_path):
    urdf, model = mesh_robot
    fragment = trajectory_view_html(mesh_run, model, load_urdf_visuals(urdf, model))
    # a simulated trajectory knows its model
    traj = kd.simulate(model, np.array([0.3, 0.5]), np.zeros(2), 0.1, method="rk4", dt=0.01,
                       progress=False)
    assert "srcdoc" in trajectory_view_html(traj)
    with pytest.raises(kd.KanedynError, match="pass model="):
        trajectory_view_html(mesh_run)
    assert fragment.startswith("<iframe srcdoc=") and "<script" not in fragment  # escaped
    page = tmp_path / "cell.html"
    page.write_text(f"<html><body>{fragment}{fragment}</body></html>")   # two cells
    import html
    inner = html.unescape(re.search(r'srcdoc="([^"]*)"', fragment).group(1))
    (tmp_path / "inner.html").write_text(inner)
    dom = _dom(browser.dump_dom((tmp_path / "inner.html").as_uri(), 1000))
    assert dom["errors"] == "" and dom["status"] == "ok" and int(dom["triangles"]) > 5000


def test_kanedyn_simulate_draws_a_urdf_scenarios_meshes(mesh_robot, tmp_path, monkeypatch):
    """A scenario naming a URDF gets its visuals in report.html; a copy of the URDF away
    from its package finds the package:// mesh through [output] package_paths."""
    from kanedyn.cli import main

    urdf, _ = mesh_robot
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    lone = tmp_path / "robot"
    (lone / "meshes").mkdir(parents=True)
    (lone / "meshbot.urdf").write_text(urdf.read_text())
    (lone / "meshes" / "fore.stl").write_bytes((urdf.parent / "meshes" / "fore.stl").read_bytes())

    def scene_of(extra: str) -> dict:
        sc = tmp_path / "s.toml"
        sc.write_text('[model]\nurdf = "robot/meshbot.urdf"\n[initial]\nq = [0.3, 0.5]\n'
                      '[integrator]\nmethod = "rk4"\ndt = 0.01\n[run]\nt_final = 0.2\n'
                      f'[output]\nformats = ["npz"]\n{extra}')
        out = tmp_path / "out"
        assert main(["simulate", str(sc), "--out", str(out), "--no-progress"]) == 0
        text = (out / "report.html").read_text(encoding="utf-8")
        assert "<h2>Runs</h2>" in text
        return json.loads(re.search(r"id='scene-data'>(.*?)</script>", text, re.S).group(1))

    with pytest.warns(kd.KanedynWarning, match="ball.obj"):
        assert len(scene_of("")["instances"]) == 3
    pkgs = f'package_paths = ["{urdf.parents[2]}"]\n'
    assert [i["body"] for i in scene_of(pkgs)["instances"]] == [-1, 0, 1, 1]


def test_without_webgl_the_page_draws_the_skeleton_in_2d(pages, browser):
    path, _, _, frames = pages
    dom = _dom(browser.run(path.as_uri() + "#selftest", "--disable-webgl",
                           "--virtual-time-budget=1500", "--dump-dom"))
    assert dom["errors"] == "", dom["errors"]
    assert dom["status"] == "ok" and dom["renderer"] == "2d" and dom["triangles"] == "0"
    st = json.loads(dom["selftest"])
    assert st["after"] != st["before"] and st["distance"][2] < st["distance"][1]
    body, f1 = st["slider"]["body"], st["slider"]["frames"][1]
    np.testing.assert_allclose(st["slider"]["positions"][1], frames["origins"][f1][body])


def test_a_notebook_shows_a_urdf_robots_trajectory_with_its_meshes(mesh_robot, browser,
                                                                    tmp_path):
    """Trajectory._repr_html_ of a simulated URDF robot: the model knows its file
    (Model.source), so the inline view carries the same meshes as the report's (the
    same triangle count as with the visuals given explicitly); a model built in code
    knows no file and is drawn as a skeleton."""
    import html

    urdf, model = mesh_robot
    assert model.source == str(urdf.resolve())
    traj = kd.simulate(model, np.array([0.3, 0.5]), np.zeros(2), 0.1, method="rk4", dt=0.01,
                       progress=False)
    counts = {}
    for key, fragment in (("notebook", traj._repr_html_()),
                          ("explicit", trajectory_view_html(traj, model,
                                                            load_urdf_visuals(urdf, model)))):
        inner = html.unescape(re.search(r'srcdoc="([^"]*)"', fragment).group(1))
        (tmp_path / f"{key}.html").write_text(inner)
        dom = _dom(browser.dump_dom((tmp_path / f"{key}.html").as_uri(), 1000))
        assert dom["errors"] == "" and dom["status"] == "ok"
        counts[key] = int(dom["triangles"])
    assert counts["notebook"] == counts["explicit"] > 5000
    assert kd.models.pendulum_chain(2).source == ""


def test_an_mjcf_robot_is_drawn_with_its_geoms(browser, tmp_path):
    """The example MJCF arm (two capsules and a box): its trajectory's notebook view
    carries the geoms (the same triangles as with the file's visuals given), and its
    scenario hands them to the report."""
    import html
    import warnings

    from kanedyn.model.mjcf import parse_mjcf
    from kanedyn.scenario import load_scenario, model_visuals

    examples = Path(__file__).resolve().parents[2] / "examples"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kd.KanedynWarning)  # the skipped collision geoms
        robot = parse_mjcf(examples / "mjcf_arm.xml")
        model = robot.model
        assert [v.kind for v in robot.visuals] == ["capsule", "capsule", "box"]
        traj = kd.simulate(model, np.array([0.3, -0.4, 0.2]), np.zeros(3), 0.05,
                           method="rk4", dt=0.01, progress=False)
        counts = {}
        for key, fragment in (("notebook", traj._repr_html_()),
                              ("explicit", trajectory_view_html(traj, model, robot.visuals))):
            inner = html.unescape(re.search(r'srcdoc="([^"]*)"', fragment).group(1))
            (tmp_path / f"{key}.html").write_text(inner)
            dom = _dom(browser.dump_dom((tmp_path / f"{key}.html").as_uri(), 1000))
            assert dom["errors"] == "" and dom["status"] == "ok"
            counts[key] = int(dom["triangles"])
        assert counts["notebook"] == counts["explicit"] > 0
        sc = load_scenario(examples / "mjcf_arm.toml")
        assert len(model_visuals(sc, model)) == 3
