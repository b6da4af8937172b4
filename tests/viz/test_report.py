"""report.html: self-contained, correct geometry, and alive in headless Chromium."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest
from matplotlib.image import imread

import kanedyn as kd
from kanedyn.verify import checklist
from kanedyn.viz import animation_frames, plot_energy_error, plot_states, write_report


def test_animation_frames_put_the_links_where_the_angles_say():
    """Planar double pendulum, lengths L1, L2: body 2's origin is the tip of link 1,
    (−L1 sin θ1, 0, −L1 cos θ1); link 2's centre of mass is L2/2 further along θ1 + θ2."""
    L1, L2 = 0.7, 1.3
    model = kd.models.pendulum_chain(2, length=[L1, L2])
    t = np.linspace(0.0, 1.0, 11)
    Q = np.column_stack([0.4 * t, -0.9 * t])
    D = animation_frames(model, t, Q)
    assert len(D["t"]) == 11 and D["parents"] == [-1, 0] and D["roots"] == [0]
    for f, (a, b) in enumerate(Q):
        np.testing.assert_allclose(D["origins"][f][0], [0, 0, 0], atol=1e-14)
        np.testing.assert_allclose(D["origins"][f][1], [-L1 * np.sin(a), 0, -L1 * np.cos(a)],
                                   atol=1e-14)
        tip = np.array(D["origins"][f][1])
        np.testing.assert_allclose(D["coms"][f][1],
                                   tip + 0.5 * L2 * np.array([-np.sin(a + b), 0, -np.cos(a + b)]),
                                   atol=1e-14)
    lo, hi = np.array(D["bounds"])
    assert np.all(lo <= np.min(D["coms"], axis=(0, 1))) and np.all(hi >= np.max(D["origins"],
                                                                                 axis=(0, 1)))


def test_a_floating_base_has_no_anchor():
    model = kd.models.free_body(com=(0.1, 0.0, 0.0))
    q = np.array([kd.random_configuration(model, k) for k in range(3)])
    D = animation_frames(model, np.arange(3.0), q)
    assert D["roots"] == [] and D["anchors"] == []
    for f in range(3):
        np.testing.assert_allclose(D["origins"][f][0], q[f, :3], atol=1e-14)  # its position
        R = kd.spatial.quat_to_matrix(q[f, 3:])
        np.testing.assert_allclose(D["coms"][f][0], q[f, :3] + R @ [0.1, 0, 0], atol=1e-14)


def test_animation_frames_resample_and_refuse_bad_input():
    model = kd.models.pendulum_chain(2)
    t = np.linspace(0.0, 2.0, 1001)
    Q = np.zeros((1001, 2))
    D = animation_frames(model, t, Q, max_frames=50)
    assert len(D["t"]) == 50 and D["t"][0] == 0.0 and D["t"][-1] == 2.0
    assert np.all(np.diff(D["t"]) > 0)
    with pytest.raises(kd.StateError, match="3 columns"):
        animation_frames(model, t[:4], np.zeros((4, 3)))
    with pytest.raises(kd.StateError, match="NaN"):
        animation_frames(model, t[:2], np.array([[0.0, np.nan], [0.0, 0.0]]))


@pytest.fixture(scope="module")
def report_file(chain_run, tmp_path_factory):
    model, traj = chain_run
    out = tmp_path_factory.mktemp("report")
    plots = [plot_states(traj, out / "states.png"), plot_energy_error(traj, out / "energy.png")]
    summary = {"title": "double pendulum <test>", "model": model.name, "duration": 1.0,
               "verify": checklist(model, n_samples=2, checks=["mass_matrix_symmetric",
                                                                "static_hand"])}
    path = write_report(out / "report.html", summary, plots,
                        animation_frames(model, traj.t, traj.q))
    return path, plots


def test_report_is_self_contained(report_file):
    path, plots = report_file
    # three.js names the XHTML namespace (an identifier, never fetched)
    text = path.read_text(encoding="utf-8").replace("http://www.w3.org/1999/xhtml", "")
    assert not re.search(r"(src|href)\s*=\s*['\"]?(https?:|//)", text)
    assert "<script src" not in text and "http://" not in text and "https://" not in text
    # the plots are the PNG files, byte for byte
    blobs = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", text)
    assert [base64.b64decode(b) for b in blobs] == [p.read_bytes() for p in plots]
    assert "double pendulum &lt;test&gt;" in text   # summary text is escaped
    assert "<td>static_hand</td>" in text and "class='pass'" in text  # the report's table
    data = json.loads(re.search(r"id='anim-data'>(.*?)</script>", text, re.S).group(1))
    assert len(data["origins"]) == 61 and data["parents"] == [-1, 0]


def _dom_fields(dom: str) -> dict:
    out = {}
    for key in ("status", "frame", "errors", "selftest"):
        m = re.search(rf'id="{key}">([^<]*)<', dom)
        out[key] = None if m is None else m.group(1)
    return out


def test_report_runs_in_headless_chromium(report_file, browser, tmp_path):
    path, _ = report_file
    url = path.as_uri()
    dom = _dom_fields(browser.dump_dom(url + "#selftest", 2000))
    assert dom["errors"] == "", dom["errors"]
    assert dom["status"] == "ok"
    # loading draws once and the self-test drag once; the rest is the animation playing
    # (about 60 frames in 1 s of the page's time at the data's time step)
    assert int(dom["frame"]) > 20
    drag = json.loads(dom["selftest"])
    assert drag["after"][0] != drag["before"][0] and drag["after"][1] != drag["before"][1]
    png = tmp_path / "shot.png"
    browser.screenshot(url, str(png))
    img = imread(png)
    colours = np.unique((img[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 50, "the screenshot is (nearly) blank"


def test_a_broken_page_reports_its_error(chain_run, browser, tmp_path):
    """The error capture can fail: frames with no points make the script throw."""
    model, traj = chain_run
    frames = animation_frames(model, traj.t, traj.q)
    frames["origins"] = []
    path = write_report(tmp_path / "broken.html", {"model": model.name}, [], frames)
    dom = _dom_fields(browser.dump_dom(path.as_uri(), 300))
    assert dom["status"] != "ok"
    assert "error" in dom["errors"]


def test_write_report_refuses_bad_input(tmp_path):
    with pytest.raises(kd.KanedynError, match="not a PNG"):
        bad = tmp_path / "x.png"
        bad.write_text("hello")
        write_report(tmp_path / "r.html", {}, [bad])
    with pytest.raises(kd.KanedynError, match="animation lacks"):
        write_report(tmp_path / "r.html", {}, [], {"t": [0.0]})
    with pytest.raises(kd.KanedynError, match="summary must be a dict"):
        write_report(tmp_path / "r.html", [("a", 1)])
    assert not (tmp_path / "r.html").exists()


def test_write_run_outputs_with_a_simulated_trajectory(tmp_path):
    """The whole set of a run's outputs, from kd.simulate's Trajectory."""
    from kanedyn.verify import checklist
    from kanedyn.viz import write_run_outputs

    model = kd.models.pendulum_chain(2)
    traj = kd.simulate(model, np.array([0.6, -0.3]), np.zeros(2), 0.3, method="rk4", dt=0.01)
    rep = checklist(model, n_samples=2, checks=["static_hand"])
    out = write_run_outputs(tmp_path / "run", model, {"rk4": traj}, summary={"steps": 30},
                            verify=rep)
    assert set(out) == {"states", "energy_error", "energy_budget", "report"}
    for p in out.values():
        assert p.exists() and p.parent == tmp_path / "run"
    text = out["report"].read_text(encoding="utf-8")
    assert "static_hand" in text and text.count("data:image/png;base64,") == 3
