"""The report tells the truth about energy: with non-conservative forces its headline is the
budget error |E − E(0) − W_nc| of every method, |E − E(0)| only when nothing such acts."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.viz import energy_figure_data, run_table, write_run_outputs


@pytest.fixture(scope="module")
def damped_runs():
    """A double pendulum with a viscous damper on each joint (it loses most of its energy),
    run by the energy-conserving AVF method and by RK4."""
    model = kd.models.pendulum_chain(2)
    forces = [kd.forces.JointDamper(j, 0.4) for j in model.joint_names]
    runs = {m: kd.simulate(model, np.array([1.0, -0.5]), np.zeros(2), 1.0, method=m, dt=0.01,
                           forces=forces, progress=False) for m in ("avf", "rk4")}
    return model, runs


def _by_hand(traj, scale, nc: bool):
    E, W = np.asarray(traj.energy), np.asarray(traj.work_nc)
    return np.maximum(np.abs(E - E[0] - (W if nc else 0.0)) / scale, 1e-17)


def test_with_dissipation_every_method_is_shown_by_its_budget_error(damped_runs):
    _, runs = damped_runs
    D = energy_figure_data(runs)
    assert D["kind"] == "budget" and [s["label"] for s in D["series"]] == ["avf", "rk4"]
    E0 = [abs(r.energy[0]) for r in runs.values()]
    dE = [np.abs(r.energy - r.energy[0]).max() for r in runs.values()]
    assert D["scale"] == pytest.approx(max(E0 + dE), rel=1e-15)
    for s, traj in zip(D["series"], runs.values(), strict=True):
        ref = _by_hand(traj, D["scale"], nc=True)
        np.testing.assert_array_equal(s["t"], traj.t)          # 101 samples: all kept
        np.testing.assert_allclose(s["value"], ref, rtol=1e-12)
        assert s["max"] == pytest.approx(ref.max(), rel=1e-12)
    avf, rk4 = (s["max"] for s in D["series"])
    assert avf < 1e-12 < 1e-9 < rk4, (avf, rk4)             # the figure tells them apart
    # which |E − E(0)| cannot: both methods lose the same energy to the dampers
    lost = [np.abs(r.energy - r.energy[0]).max() / D["scale"] for r in runs.values()]
    assert lost[0] == pytest.approx(lost[1], rel=1e-3) and lost[0] > 0.1


def test_without_non_conservative_forces_it_is_the_energy_error():
    model = kd.models.pendulum_chain(2)
    runs = {m: kd.simulate(model, np.array([1.0, -0.5]), np.zeros(2), 0.5, method=m, dt=0.01,
                           progress=False) for m in ("verlet", "rk4")}
    D = energy_figure_data(runs)
    assert D["kind"] == "energy" and D["quantity"] == "|E - E(0)| / E_scale"
    for s, traj in zip(D["series"], runs.values(), strict=True):
        np.testing.assert_allclose(s["value"], _by_hand(traj, D["scale"], nc=False), rtol=1e-12)


def test_long_runs_keep_their_peaks():
    """Thinned to ``points`` per curve, the series still holds the run's largest error,
    at its own time."""
    t = np.linspace(0.0, 1.0, 10_001)
    E = 1.0 + 1e-9 * np.sin(40 * t) ** 2
    E[7777] += 3e-6                                    # one spike
    run = type("Run", (), {"t": t, "energy": E, "work_nc": np.zeros_like(t)})()
    s = energy_figure_data({"x": run}, points=500)["series"][0]
    assert len(s["t"]) == 500
    assert max(s["value"]) == s["max"] and s["t"][int(np.argmax(s["value"]))] == t[7777]


def test_the_report_embeds_one_series_per_method_and_a_runs_table(damped_runs, tmp_path):
    model, runs = damped_runs
    out = write_run_outputs(tmp_path / "run", model, runs, summary={"t_final_s": 1.0},
                            wall_times={"avf": 0.25, "rk4": 0.05})
    text = out["report"].read_text(encoding="utf-8")
    data = json.loads(re.search(r"id='energy-data'>(.*?)</script>", text, re.S).group(1))
    assert data == json.loads(json.dumps(energy_figure_data(runs)))     # what was plotted
    assert [s["label"] for s in data["series"]] == list(runs)
    # the runs come first, as a table of what a reader compares; the configuration is folded
    rows = run_table(runs, {"avf": 0.25, "rk4": 0.05})
    assert [r["method"] for r in rows] == ["avf", "rk4"]
    assert rows[0]["steps"] == 100 and rows[0]["wall time [s]"] == "0.25"
    assert rows[0]["max |g(q)|"] == "—"
    col = "max |E - E(0) - W_nc| / E_scale"
    assert float(rows[0][col]) < 1e-12 < float(rows[1][col])
    assert text.index("<h2>Runs</h2>") < text.index("<h2>Energy</h2>") < text.index(
        "<h2>Animation</h2>") < text.index("<details>") < text.index("t_final_s")
    assert f"<th>{col}</th>" in text.replace("&#x27;", "'")
