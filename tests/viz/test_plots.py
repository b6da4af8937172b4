"""Plots: valid, non-blank PNGs from arrays or trajectory-like objects; bad input refused."""

from __future__ import annotations

import os

import numpy as np
import pytest
from matplotlib.image import imread

import kanedyn as kd
from kanedyn._files import write_atomic
from kanedyn.viz import (
    plot_constraint_residuals,
    plot_energy_budget,
    plot_energy_error,
    plot_states,
)


def _check_png(path):
    with open(path, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    img = imread(path)
    assert img.ndim == 3 and img.shape[0] > 200 and img.shape[1] > 300
    colours = np.unique((img[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 20  # curves, text and axes, not a blank canvas
    # nothing half-written left beside it
    assert not [f for f in os.listdir(os.path.dirname(path)) if f.endswith(".tmp")
                or f.startswith(".")]


def test_every_plot_from_a_trajectory_object(chain_run, tmp_path):
    model, traj = chain_run
    paths = [
        plot_states(traj, tmp_path / "states.png", names=model.joint_names),
        plot_energy_error(traj, tmp_path / "energy_error.png"),
        plot_energy_budget(traj, tmp_path / "energy_budget.png"),
    ]
    for p in paths:
        _check_png(p)


def test_plots_from_arrays_and_several_runs(chain_run, tmp_path):
    _, traj = chain_run
    t, E = traj.t, traj.energy
    _check_png(plot_states(t=t, q=traj.q, path=tmp_path / "q_only.png"))
    _check_png(plot_energy_error({"tight": (t, E), "sloppy": (t, E * (1 + 1e-4 * t))},
                                 tmp_path / "err.png"))
    _check_png(plot_energy_budget(t=t, energy=E, work_nc=-0.1 * t, path=tmp_path / "b.png"))
    res = {"position": 1e-12 * np.abs(traj.q), "velocity": np.zeros_like(traj.v)}
    _check_png(plot_constraint_residuals(t=t, residuals=res, path=tmp_path / "res.png"))


def test_bad_input_is_refused_by_name(chain_run, tmp_path):
    _, traj = chain_run
    with pytest.raises(kd.KanedynError, match="'energy' contains NaN"):
        bad = traj.energy.copy()
        bad[3] = np.nan
        plot_energy_budget(t=traj.t, energy=bad, path=tmp_path / "x.png")
    with pytest.raises(kd.KanedynError, match="'q' has 5 samples but t has 61"):
        plot_states(t=traj.t, q=traj.q[:5], path=tmp_path / "x.png")
    with pytest.raises(kd.KanedynError, match="no constraint residuals"):
        plot_constraint_residuals(traj, tmp_path / "x.png")
    with pytest.raises(kd.KanedynError, match="does not exist"):
        plot_states(traj, tmp_path / "missing" / "x.png")
    assert not list(tmp_path.iterdir())


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    target = tmp_path / "kept.txt"
    target.write_text("old")

    def broken(tmp):
        with open(tmp, "w") as fh:
            fh.write("half")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        write_atomic(target, broken)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["kept.txt"]
