"""Results as pandas tables: a trajectory's frame holds its arrays under named columns, a
constrained one also its residuals; a sweep read back from disk is the table it returned.

The values are checked against what they must be independently of the conversion: the
energy against ``kd.kinetic_energy + kd.potential_energy`` of the state, the pendulum's
residuals against the rod length computed from the coordinates, the sweep's initial
energies against the closed form of two point masses at rest.
"""

from __future__ import annotations

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.constraints import problems
from kanedyn.sim.sweep import SweepError

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def chain_traj():
    model = kd.models.pendulum_chain(2)
    return model, kd.simulate(model, [0.8, -0.3], [0.0, 0.5], 0.2, method="rk4", dt=1e-2)


def test_trajectory_frame_columns_equal_the_arrays(chain_traj):
    model, traj = chain_traj
    df = traj.to_pandas()
    assert df.index.name == "t" and np.array_equal(df.index.to_numpy(), traj.t)
    assert list(df.columns[:6]) == ["q:joint1", "q:joint2", "v:joint1", "v:joint2",
                                    "vdot:joint1", "vdot:joint2"]
    assert np.array_equal(df[["q:joint1", "q:joint2"]].to_numpy(), traj.q)
    assert np.array_equal(df[["v:joint1", "v:joint2"]].to_numpy(), traj.v)
    assert np.array_equal(df[["vdot:joint1", "vdot:joint2"]].to_numpy(), traj.vdot)
    for name in ("energy", "work_nc", "budget"):
        assert np.array_equal(df[name].to_numpy(), getattr(traj, name)), name
    assert np.array_equal(df[["L_x", "L_y", "L_z", "P_x", "P_y", "P_z"]].to_numpy(),
                          traj.momentum)
    # the energy column is the energy of the state in that row
    E = [kd.kinetic_energy(model, q, v) + kd.potential_energy(model, q)
         for q, v in zip(df[["q:joint1", "q:joint2"]].to_numpy(),
                         df[["v:joint1", "v:joint2"]].to_numpy(), strict=True)]
    assert np.allclose(df["energy"], E, rtol=1e-13, atol=1e-13)
    # and v̇ is the forward dynamics of the row's state (no forces)
    row = df.iloc[7]
    qa, va = row[["q:joint1", "q:joint2"]].to_numpy(float), row[["v:joint1", "v:joint2"]]
    assert np.allclose(row[["vdot:joint1", "vdot:joint2"]].to_numpy(float),
                       kd.aba(model, qa, va.to_numpy(float), np.zeros(2)), rtol=1e-12)


def test_multi_coordinate_joints_are_named_by_index():
    model = kd.models.free_body()
    traj = kd.simulate(model, kd.neutral(model), [0.1, 0.2, 0.3, 0.0, 0.0, 0.0], 0.05,
                       method="rk4", dt=1e-2)
    df = traj.to_pandas()
    joint = model.joint_names[0]
    assert [c for c in df.columns if c.startswith("q:")] == [f"q:{joint}.{k}" for k in range(7)]
    assert [c for c in df.columns if c.startswith("v:")] == [f"v:{joint}.{k}" for k in range(6)]
    assert np.array_equal(df[[f"q:{joint}.{k}" for k in range(7)]].to_numpy(), traj.q)


def test_a_loaded_trajectory_gives_the_same_numbers(chain_traj, tmp_path):
    _, traj = chain_traj
    back = kd.Trajectory.load(traj.save(tmp_path / "run.npz")).to_pandas()
    # no system after loading: the coordinates are named by index, the values are the same
    assert list(back.columns[:2]) == ["q:0", "q:1"]
    assert np.array_equal(back.to_numpy(), traj.to_pandas().to_numpy())


def test_constrained_trajectory_has_its_residuals():
    prob = problems.pendulum(t_final=0.3)
    traj = kd.simulate(prob.system, prob.q0, prob.v0, prob.t_final, method="radau5",
                       formulation="index3", rtol=1e-8, atol=1e-8, dt=0.05)
    df = traj.to_pandas()
    x, y = df["q:0"].to_numpy(), df["q:1"].to_numpy()
    vx, vy = df["v:0"].to_numpy(), df["v:1"].to_numpy()
    # g = (x² + y² − L²)/2 with L = 1, its time derivative x vx + y vy
    assert np.allclose(df["g:rod length"], 0.5 * (x * x + y * y - 1.0), rtol=0, atol=1e-15)
    assert np.allclose(df["Gv:rod length"], x * vx + y * vy, rtol=0, atol=1e-14)
    assert "acc:rod length" in df.columns
    # the index-3 solution keeps the constraint itself to the solver's tolerance
    assert np.abs(df["g:rod length"]).max() < 1e-7


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    distributed = pytest.importorskip("distributed")
    scenario = {
        "model": {"builder": "pendulum_chain", "n": 2, "point_mass": True},
        "initial": {"q": [0.3, 0.0]},
        "integrator": {"method": "rk4", "dt": 1e-3},
        "run": {"t_final": 0.1},
    }
    out = tmp_path_factory.mktemp("sweep") / "out"
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1,
                            dashboard_address=":0") as client:
        res = kd.sweep(scenario, {"model.length": [0.5, 1.0, 2.0]}, out=out,
                       scheduler=client, progress=False)
    return res


def test_sweep_frame_read_back_equals_the_returned_one(swept):
    df = swept.to_pandas()
    assert df.index.name == "run_id" and list(df.index) == [0, 1, 2]
    assert swept.df is swept.df  # made once
    pd.testing.assert_frame_equal(kd.read_sweep(swept.path), df)
    # the same table as pandas' own Parquet reader gives for the parts
    parts = sorted(swept.path.glob("part-*.parquet"))
    raw = pd.concat([pd.read_parquet(p) for p in parts]).set_index("run_id").sort_index()
    pd.testing.assert_frame_equal(raw[df.columns], df, check_dtype=False)
    # the columns are the rows' values, and those are physics
    assert list(df["status"]) == ["ok"] * 3
    L = df["param:model.length"].to_numpy()
    assert np.array_equal(L, [0.5, 1.0, 2.0])
    assert np.allclose(df["energy_initial"], -9.81 * L * 3 * np.cos(0.3), rtol=1e-12)
    assert df["energy_initial"].tolist() == swept.column("energy_initial")


def test_read_sweep_of_a_folder_that_is_no_sweep(tmp_path):
    with pytest.raises(SweepError, match="not a sweep's results folder"):
        kd.read_sweep(tmp_path)


def test_trajectory_shows_itself_in_a_notebook(chain_traj):
    _, traj = chain_traj
    page = traj._repr_html_()
    assert page.count("data:image/png;base64,") == 1
    assert "rk4" in page and f"{len(traj)}" in page
    import base64
    import re

    png = base64.b64decode(re.search(r"base64,([A-Za-z0-9+/=]+)", page).group(1))
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []  # the figure was closed, not left for the notebook


def test_a_models_trajectory_shows_its_3d_view_in_a_notebook(chain_traj):
    """The 3D view is one self-contained frame below the plots; a trajectory read back
    from a file knows no Model, so it shows the plots alone."""
    _, traj = chain_traj
    page = traj._repr_html_()
    assert page.count("<iframe srcdoc=") == 1
    assert page.index("data:image/png") < page.index("<iframe")
    import html
    import re

    inner = html.unescape(re.search(r'srcdoc="([^"]*)"', page).group(1))
    assert "id='status'" in inner and "THREE" in inner
    loaded = kd.Trajectory(traj.t, traj.q, traj.v, traj.energy, {}, "rk4")
    assert "<iframe" not in loaded._repr_html_()
