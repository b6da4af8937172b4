"""Trajectory: derived arrays, save/load (npz, csv) written atomically, plot, progress bar."""

import io
import os

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.errors import KanedynError
from kanedyn.forces import JointDamper
from kanedyn.sim import progress as progress_mod
from kanedyn.sim.trajectory import Trajectory


@pytest.fixture(scope="module")
def traj():
    m = kd.models.pendulum_chain(2)
    return m, kd.simulate(m, [0.7, -0.2], [0.0, 0.4], 0.5, method="avf", dt=0.01,
                          forces=[JointDamper("joint2", 0.3)])


def test_fields(traj):
    m, tr = traj
    n = len(tr)
    assert n == 51 and tr.t[-1] == pytest.approx(0.5)
    assert tr.q.shape == (n, 2) and tr.v.shape == (n, 2) and tr.vdot.shape == (n, 2)
    np.testing.assert_allclose(tr.vdot[7], kd.aba(m, tr.q[7], tr.v[7],
                                                   [0.0, -0.3 * tr.v[7, 1]]), atol=1e-12)
    assert tr.energy[3] == pytest.approx(kd.kinetic_energy(m, tr.q[3], tr.v[3])
                                         + kd.potential_energy(m, tr.q[3]), rel=1e-13)
    assert tr.momentum.shape == (n, 6)
    assert tr.stats["newton_iterations"].shape == (n - 1,)
    assert tr.stats["newton_iterations"].min() >= 1
    assert tr.work_nc[-1] < 0  # the damper took energy out


def test_vdot_is_the_derivative_of_v(traj):
    _, tr = traj
    dv = np.gradient(tr.v, tr.t, axis=0)
    # central differences at dt = 0.01: O(dt² v⃛) ≈ 1e-2 here
    np.testing.assert_allclose(dv[5:-5], tr.vdot[5:-5], atol=3e-2)


def test_adaptive_stats():
    m = kd.models.pendulum_chain(2)
    tr = kd.simulate(m, [2.5, 0.0], [0, 0], 2.0, method="dopri5", first_step=0.5)
    assert tr.stats["rejected_steps"].sum() >= 1  # the large first step is rejected
    assert len(tr) == tr.stats["accepted_steps"][0] + 1


@pytest.mark.parametrize("ext", [".npz", ".csv"])
def test_save_load_roundtrip(traj, tmp_path, ext):
    _, tr = traj
    path = tr.save(tmp_path / f"run{ext}")
    back = Trajectory.load(path)
    for k in ("t", "q", "v", "vdot", "energy", "work_nc", "budget"):
        np.testing.assert_array_equal(getattr(back, k), getattr(tr, k), err_msg=k)
    assert back.method == "avf"
    if ext == ".npz":
        np.testing.assert_array_equal(back.stats["newton_iterations"],
                                      tr.stats["newton_iterations"])
        np.testing.assert_array_equal(back.momentum, tr.momentum)
    assert os.listdir(tmp_path) == [f"run{ext}"]  # no temporary file left


def test_save_is_atomic(traj, tmp_path, monkeypatch):
    _, tr = traj
    path = tmp_path / "run.npz"
    tr.save(path)
    before = path.read_bytes()

    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", broken)
    with pytest.raises(OSError, match="disk full"):
        tr.save(path)
    assert path.read_bytes() == before  # the old file is intact
    assert os.listdir(tmp_path) == ["run.npz"]


def test_bad_file_names(traj, tmp_path):
    _, tr = traj
    with pytest.raises(KanedynError, match="npz or .csv"):
        tr.save(tmp_path / "run.txt")
    with pytest.raises(KanedynError, match="npz or .csv"):
        Trajectory.load(tmp_path / "run.txt")


def test_plot_writes_a_png(traj, tmp_path):
    _, tr = traj
    fig = tr.plot(tmp_path / "run.png")
    data = (tmp_path / "run.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert fig.axes[2].get_yscale() == "log"
    assert os.listdir(tmp_path) == ["run.png"]


def test_progress_bar(monkeypatch):
    buf = io.StringIO()
    bar = progress_mod.ProgressBar(0.0, 2.0, "simulate[rk4]")
    bar.stream = buf
    bar.start -= 5.0  # as if the run had been going for 5 s
    bar.last -= 5.0
    bar(1.0)
    bar.close()
    out = buf.getvalue()
    assert "simulate[rk4]" in out and "50.0%" in out and out.endswith("\n")
    # off when stderr is not a terminal (as under pytest), on or off when asked
    assert progress_mod.wants_progress(None) is False
    assert progress_mod.wants_progress(True) is True


def test_save_every(traj):
    m, _ = traj
    tr = kd.simulate(m, [0.7, -0.2], [0.0, 0.4], 0.5, method="rk4", dt=0.01, save_every=10)
    np.testing.assert_allclose(tr.t, np.linspace(0, 0.5, 6), atol=1e-12)
    full = kd.simulate(m, [0.7, -0.2], [0.0, 0.4], 0.5, method="rk4", dt=0.01)
    np.testing.assert_array_equal(tr.q, full.q[::10])
