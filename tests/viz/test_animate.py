"""animate(): a GIF with one image per frame; mp4 needs ffmpeg and says so."""

from __future__ import annotations

import shutil

import pytest
from PIL import Image

import kanedyn as kd
from kanedyn.viz import animate


def test_gif_has_the_frames(chain_run, tmp_path):
    model, traj = chain_run
    path = animate(model, traj, tmp_path / "swing.gif", max_frames=6, dpi=40)
    with Image.open(path) as im:
        assert im.format == "GIF" and im.n_frames == 6
        first = im.convert("RGB").tobytes()
        im.seek(5)
        assert im.convert("RGB").tobytes() != first   # the pendulum moved


def test_mp4_without_ffmpeg_is_a_clear_error(chain_run, tmp_path, monkeypatch):
    model, traj = chain_run
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(kd.KanedynError, match="needs ffmpeg"):
        animate(model, (traj.t, traj.q), tmp_path / "swing.mp4")
    with pytest.raises(kd.KanedynError, match=".gif or .mp4"):
        animate(model, traj, tmp_path / "swing.avi")
    assert not list(tmp_path.iterdir())
