"""Parameter sweeps on a Dask cluster: same results as sequential runs, robust to a lost
worker, resumable, and clear about bad input."""

import json
import os
import threading
import time

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.scenario import parse_scenario, run_summary
from kanedyn.sim.sweep import SweepError, apply, expand, read_results, sweep

distributed = pytest.importorskip("distributed")

SCENARIO = {
    "model": {"builder": "pendulum_chain", "n": 2, "planar": True},
    "initial": {"q": [0.8, -0.3], "v": [0.0, 0.0]},
    "forces": [{"type": "damper", "joint": "joint1", "damping": 0.1}],
    "integrator": {"method": "rk4", "dt": 2e-3},
    "run": {"t_final": 0.2},
}


@pytest.fixture(scope="module", autouse=True)
def warm_cache():
    # compile (or load) the numba kernels once here, so worker processes load them from
    # the on-disk cache instead of each compiling them again
    run_summary(parse_scenario(SCENARIO))


@pytest.fixture(scope="module")
def client(warm_cache):
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0")
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_sweep_equals_sequential_runs(client, tmp_path):
    over = {"model.length": [0.5, 1.0], "forces.0.damping": [0.0, 0.3], "integrator.dt": [2e-3]}
    res = sweep(SCENARIO, over, out=tmp_path / "s", scheduler=client, progress=False)
    assert len(res.rows) == 4 and not res.failed
    for row, params in zip(res.rows, expand(over), strict=True):
        seq = run_summary(parse_scenario(apply(SCENARIO, params)))
        assert row["param:model.length"] == params["model.length"]
        assert np.array_equal(np.array(json.loads(row["final_q"])), np.array(seq["final_q"]))
        assert row["max_budget_error"] == seq["max_budget_error"]
    # the run with no damping conserves energy to RK4's error, the damped ones lose energy
    by = {(r["param:model.length"], r["param:forces.0.damping"]): r for r in res.rows}
    assert by[(1.0, 0.0)]["energy_final"] == pytest.approx(by[(1.0, 0.0)]["energy_initial"],
                                                           rel=1e-8)
    assert by[(1.0, 0.3)]["energy_final"] < by[(1.0, 0.3)]["energy_initial"]


def test_samples_are_reproducible():
    over = {"model.length": (0.5, 1.5), "initial.seed": (0, 10)}
    a, b = expand(over, 8, "lhs", seed=3), expand(over, 8, "lhs", seed=3)
    assert a == b and a != expand(over, 8, "lhs", seed=4)
    lengths = sorted(r["model.length"] for r in a)
    # Latin hypercube: one sample in each of the 8 equal strata
    assert [int((x - 0.5) * 8) for x in lengths] == list(range(8))
    r = expand(over, 5, "random", seed=1)
    assert all(0.5 <= x["model.length"] <= 1.5 for x in r)


def test_failed_run_is_recorded_and_does_not_stop_the_sweep(client, tmp_path):
    over = {"integrator.method": ["rk4", "no_such_method", "midpoint"]}
    res = sweep(SCENARIO, over, out=tmp_path / "f", scheduler=client, progress=False)
    status = [r["status"] for r in res.rows]
    assert status == ["ok", "failed", "ok"]
    assert "no_such_method" in res.rows[1]["error"]


def test_resume_runs_only_the_missing_runs(client, tmp_path):
    from kanedyn.sim.sweep import _write_part

    out = tmp_path / "r"
    over = {"model.length": [0.4, 0.6, 0.8, 1.0, 1.2]}
    first = sweep(SCENARIO, over, out=out, scheduler=client, progress=False)
    # as if the sweep had been interrupted before runs 1 and 3 were written
    for p in out.glob("part-*.parquet"):
        p.unlink()
    _write_part(out, [r for r in first.rows if r["run_id"] not in (1, 3)])
    kept = {p.name for p in out.glob("part-*.parquet")}
    res = sweep(SCENARIO, over, out=out, scheduler=client, progress=False)
    assert [r["run_id"] for r in res.rows] == [0, 1, 2, 3, 4]
    import pyarrow.parquet as pq

    new = [p for p in out.glob("part-*.parquet") if p.name not in kept]
    rerun = sorted(i for p in new for i in pq.read_table(p).column("run_id").to_pylist())
    assert rerun == [1, 3]
    assert res.rows[1]["final_q"] == first.rows[1]["final_q"]


def test_a_killed_worker_loses_no_run(tmp_path):
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0")
    client = distributed.Client(cluster)
    out = tmp_path / "k"
    over = {"model.length": list(np.linspace(0.5, 1.5, 24))}
    sc = dict(SCENARIO, run={"t_final": 0.4})
    victim = list(client.run(os.getpid).values())[0]

    def kill_when_running():
        while not list(out.glob("part-*.parquet")):
            time.sleep(0.01)
        os.kill(victim, 9)

    killer = threading.Thread(target=kill_when_running, daemon=True)
    killer.start()
    try:
        res = sweep(sc, over, out=out, scheduler=client, progress=False, flush_every=0.0)
    finally:
        client.close()
        cluster.close()
    killer.join(timeout=5)
    ids = [r["run_id"] for r in read_results(out)]
    assert ids == list(range(24))  # every run present exactly once
    assert not res.failed


def test_bad_sweeps_are_clear_errors(tmp_path):
    with pytest.raises(SweepError, match="unknown parameter 'model.mas'.*takes n, planar"):
        sweep(SCENARIO, {"model.mas": [1.0]}, out=tmp_path / "a")
    with pytest.raises(SweepError, match="empty"):
        sweep(SCENARIO, {}, out=tmp_path / "b")
    with pytest.raises(SweepError, match=r"forces.<index>.<key> with index < 1"):
        sweep(SCENARIO, {"forces.3.damping": [1.0]}, out=tmp_path / "c")
    t0 = time.perf_counter()
    with pytest.raises(SweepError, match="no Dask scheduler answered at 'tcp://127.0.0.1:9'"):
        sweep(SCENARIO, {"model.length": [1.0]}, out=tmp_path / "d",
              scheduler="tcp://127.0.0.1:9", timeout=2.0)
    assert time.perf_counter() - t0 < 15.0


def test_results_folder_of_another_sweep_is_refused(client, tmp_path):
    out = tmp_path / "x"
    sweep(SCENARIO, {"model.length": [1.0]}, out=out, scheduler=client, progress=False)
    with pytest.raises(SweepError, match="different sweep"):
        sweep(SCENARIO, {"model.length": [2.0]}, out=out, scheduler=client)
    assert isinstance(SweepError("x"), kd.KanedynError)


def test_trajectories_are_saved_when_asked(client, tmp_path):
    out = tmp_path / "t"
    res = sweep(SCENARIO, {"model.length": [0.5, 1.0]}, out=out, scheduler=client,
                progress=False, trajectories=True)
    for row in res.rows:
        traj = kd.Trajectory.load(row["trajectory"])
        assert np.allclose(traj.q[-1], json.loads(row["final_q"]))
