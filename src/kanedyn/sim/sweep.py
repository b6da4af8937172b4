"""Parameter sweeps of a scenario on a Dask cluster (a local one by default).

``sweep(scenario, over={...})`` expands the sweep into runs (a grid, random
or Latin-hypercube samples, reproducible from a seed), runs each through
:func:`kanedyn.scenario.run_summary` on Dask workers, and writes one row per
run to a folder of Parquet files as results arrive — so an interrupted sweep keeps
what finished and resumes by skipping the runs already done. A run that fails
is recorded with its error; it does not stop the sweep.

Parameters are dotted paths into the scenario: ``"model.length"``,
``"integrator.dt"``, ``"initial.seed"``, ``"forces.0.damping"`` (the first
[[forces]] table).

The TOML scenario layer (:mod:`kanedyn.scenario`, above ``sim`` in DESIGN.md's order,
which names sweeps as one of its two users) is imported inside the functions that read
a scenario, so that ``import kanedyn`` does not load it (nor ``tomllib``).
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import itertools
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._files import write_atomic
from .._optional import pandas
from ..errors import KanedynError
from ..model import builders

if TYPE_CHECKING:
    import pandas as pd

    from ..scenario import Scenario


class SweepError(KanedynError):
    """A sweep is ill-posed or its cluster cannot be reached."""


SAMPLERS = ("grid", "random", "lhs")


# --- expanding a sweep into runs --------------------------------------------------

def _check_path(sc: Scenario, path: str) -> None:
    from ..scenario import SCHEMA  # the scenario layer: see the module doc

    parts = path.split(".")
    table = parts[0]
    if table not in SCHEMA:
        raise SweepError(f"unknown parameter {path!r}: no table [{table}]; "
                         f"tables are {', '.join(SCHEMA)}")
    if table in ("forces", "constraints"):
        items = sc.data.get(table, [])
        if len(parts) != 3 or not parts[1].isdigit() or int(parts[1]) >= len(items):
            raise SweepError(f"unknown parameter {path!r}: write {table}.<index>.<key> with "
                             f"index < {len(items)} (the scenario's [[{table}]] tables)")
        key, present = parts[2], items[int(parts[1])]
    else:
        if len(parts) != 2:
            raise SweepError(f"unknown parameter {path!r}: write <table>.<key>")
        key, present = parts[1], sc.data.get(table, {})
    spec = SCHEMA[table]
    if key in spec and key != "*" or key in present:
        return
    if table == "model" and "builder" in present:
        fn = getattr(builders, present["builder"])
        params = [p for p in inspect.signature(fn).parameters if p != "name"]
        if key in params:
            return
        raise SweepError(f"unknown parameter {path!r}: {present['builder']} takes "
                         f"{', '.join(params)}")
    valid = sorted({k for k in spec if k != "*"} | set(present))
    raise SweepError(f"unknown parameter {path!r}; valid keys of [{table}]: {', '.join(valid)}")


def expand(over: dict[str, Any], samples: int | None = None, sampler: str = "grid",
           seed: int = 0) -> list[dict[str, Any]]:
    """The runs of a sweep, as a list of {path: value}.

    ``sampler="grid"``: ``over`` maps each path to a list of values; every
    combination is a run. ``"random"`` and ``"lhs"``: ``over`` maps each path
    to ``(low, high)`` and ``samples`` runs are drawn uniformly or by Latin
    hypercube (scipy.stats.qmc), reproducibly from ``seed``.
    """
    if not over:
        raise SweepError("the sweep is empty: 'over' names no parameter")
    if sampler not in SAMPLERS:
        raise SweepError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")
    keys = list(over)
    if sampler == "grid":
        values = []
        for k in keys:
            vals = over[k]
            if not isinstance(vals, (list, tuple)) or len(vals) == 0:
                raise SweepError(f"grid sweep: {k!r} needs a non-empty list of values")
            values.append(list(vals))
        runs = [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]
        if samples is not None:
            raise SweepError("grid sweep: 'samples' is only for random and lhs sampling")
        return runs
    if samples is None or samples < 1:
        raise SweepError(f"{sampler} sweep: give samples ≥ 1")
    bounds = []
    for k in keys:
        b = over[k]
        if not (isinstance(b, (list, tuple)) and len(b) == 2 and b[0] < b[1]):
            raise SweepError(f"{sampler} sweep: {k!r} needs (low, high) with low < high")
        bounds.append((float(b[0]), float(b[1])))
    lo, hi = np.array(bounds).T
    if sampler == "random":
        u = np.random.default_rng(seed).random((samples, len(keys)))
    else:
        from scipy.stats import qmc

        u = qmc.LatinHypercube(d=len(keys), seed=seed).random(samples)
    x = lo + u * (hi - lo)
    return [dict(zip(keys, map(float, row), strict=True)) for row in x]


def apply(data: dict, params: dict[str, Any]) -> dict:
    """A copy of a scenario dict with the dotted-path parameters set."""
    out = copy.deepcopy(data)
    for path, value in params.items():
        parts = path.split(".")
        node = out.setdefault(parts[0], [] if parts[0] in ("forces", "constraints") else {})
        if isinstance(node, list):
            node = node[int(parts[1])]
            parts = parts[1:]
        node[parts[1]] = value
    return out


# --- running ------------------------------------------------------------------------

def run_one(run_id: int, data: dict, base: str, params: dict,
            trajectory_dir: str | None = None) -> dict:
    """One run of a sweep, on a worker: never raises, records failures. With
    ``trajectory_dir`` the run's trajectory is saved there as ``run-<id>.npz``."""
    from ..scenario import parse_scenario, run, run_summary, summarize

    t0 = time.perf_counter()
    row = {"run_id": run_id, **{f"param:{k}": v for k, v in params.items()}}
    try:
        sc = parse_scenario(apply(data, params), base)
        if trajectory_dir is None:
            row.update(run_summary(sc))
        else:
            _, traj = run(sc, progress=False)
            row.update(summarize(traj))
            row["trajectory"] = str(traj.save(Path(trajectory_dir) / f"run-{run_id:08d}.npz"))
        row["status"], row["error"] = "ok", ""
    except Exception as e:  # a failed run is data, not the end of the sweep
        row["status"], row["error"] = "failed", f"{type(e).__name__}: {e}"
    row["wall_time"] = time.perf_counter() - t0
    return row


def _fingerprint(data: dict, runs: list[dict]) -> str:
    blob = json.dumps({"scenario": data, "runs": runs}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass
class SweepResult:
    """The rows of a sweep (one dict per run, ordered by run_id) and where they are."""

    rows: list[dict]
    path: Path

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.rows if r["status"] != "ok"]

    def column(self, name: str) -> list:
        return [r.get(name) for r in self.rows]

    def to_pandas(self) -> pd.DataFrame:
        """The rows as a pandas DataFrame indexed by ``run_id``, a column per key
        (``param:<path>``, ``status``, ``error``, ``wall_time`` and the run's summary;
        ``final_q`` and ``final_v`` as the JSON text the Parquet files hold). The same
        table as :func:`read_sweep` of :attr:`path`. Needs pandas."""
        return _frame(self.rows, "SweepResult.to_pandas")

    @property
    def df(self) -> pd.DataFrame:
        """:meth:`to_pandas`, made once and kept."""
        if self._df is None:
            self._df = self.to_pandas()
        return self._df

    _df: Any = field(default=None, init=False, repr=False, compare=False)


def _frame(rows: list[dict], what: str) -> pd.DataFrame:
    pd = pandas(what)
    df = pd.DataFrame.from_records(rows)
    if df.empty:
        return df
    return df.set_index("run_id").sort_index()


def read_sweep(path: str | os.PathLike) -> pd.DataFrame:
    """The results folder of a sweep (``out`` of :func:`sweep`, or ``kanedyn sweep
    --out``) as a pandas DataFrame indexed by ``run_id``: every row written so far, so
    also a sweep still running or interrupted. Needs pandas."""
    path = Path(path)
    if not (path / "sweep.json").is_file():
        raise SweepError(f"{str(path)!r} is not a sweep's results folder (no sweep.json)")
    return _frame(read_results(path), "read_sweep")


def read_results(path: str | Path) -> list[dict]:
    """All rows written so far to a sweep's results folder, by run_id."""
    import pyarrow.parquet as pq

    path = Path(path)
    rows = []
    for part in sorted(path.glob("part-*.parquet")):
        rows.extend(pq.read_table(part).to_pylist())
    rows.sort(key=lambda r: r["run_id"])
    return rows


def _write_part(path: Path, rows: list[dict]) -> None:
    """Write finished rows as one Parquet file, atomically (all the rows or none)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    keys = list(dict.fromkeys(k for r in rows for k in r))
    cells = {k: [json.dumps(r[k]) if isinstance(r.get(k), (list, dict)) else r.get(k)
                 for r in rows] for k in keys}
    name = f"part-{rows[0]['run_id']:08d}-{len(rows):05d}.parquet"
    write_atomic(path / name, lambda tmp: pq.write_table(pa.table(cells), tmp))


# seconds for the local workers to start and connect (about 2 s on an idle machine)
LOCAL_WORKER_TIMEOUT = 120.0


def _local_cluster(n: int):
    """A Dask cluster of ``n`` one-thread worker processes on this machine, and its client.

    The workers are fresh interpreters (``python -m dask spec``), not children made by
    ``multiprocessing``: a spawned child rebuilds its parent by re-importing the parent's
    ``__main__``, so a plain script that calls :func:`sweep` at its top level (no
    ``if __name__ == "__main__":``) would run again in every worker, start a cluster
    there and fail deep inside Dask. A fresh interpreter imports only what a task needs
    (:func:`run_one`), so a script works with or without the guard. Windows has no such
    subprocess cluster; there the workers are spawned and a script needs the guard.
    """
    from distributed import Client, LocalCluster

    if sys.platform == "win32":
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               dashboard_address=":0")
        return Client(cluster), cluster
    from distributed.deploy.subprocess import SubprocessCluster

    try:
        cluster = SubprocessCluster(n_workers=n, threads_per_worker=1,
                                    worker_class="distributed.Worker", dashboard_address=None)
    except RuntimeError as e:  # the scheduler process did not come up
        raise SweepError(f"the local Dask cluster did not start: {e}") from None
    client = Client(cluster)
    try:
        # the workers connect in their own time: a worker that cannot start (kanedyn not
        # importable by this interpreter, say) would otherwise leave the sweep waiting
        client.wait_for_workers(n, timeout=LOCAL_WORKER_TIMEOUT)
    except TimeoutError:
        client.close()
        cluster.close()
        raise SweepError(f"the local Dask workers did not start within "
                         f"{LOCAL_WORKER_TIMEOUT:g} s ({sys.executable} -m dask spec)") from None
    return client, cluster


def _client(scheduler, timeout: float):
    from distributed import Client

    if scheduler is None:
        return _local_cluster(os.cpu_count() or 1)
    if isinstance(scheduler, Client):
        return scheduler, None
    try:
        return Client(scheduler, timeout=timeout), None
    except (OSError, TimeoutError) as e:
        raise SweepError(f"no Dask scheduler answered at {scheduler!r} within {timeout:g} s "
                         f"({type(e).__name__}: {e})") from None


def sweep(scenario: str | Path | Scenario | dict, over: dict[str, Any],
          samples: int | None = None, sampler: str = "grid", seed: int = 0,
          out: str | Path = "sweep_results", scheduler=None, resume: bool = True,
          timeout: float = 10.0, progress: bool | None = None,
          flush_every: float = 0.5, trajectories: bool = False) -> SweepResult:
    """Run a scenario once per parameter set, on Dask, writing rows as they finish.

    ``scheduler``: None for a local cluster of worker processes sized to this
    machine's cores (fresh interpreters, so a script needs no ``__main__`` guard); an
    address ``"tcp://host:port"`` or a ``distributed.Client`` for an existing cluster
    (same results either way).
    ``out`` is a folder of Parquet files, one per run, plus ``sweep.json``;
    re-running the same sweep there skips the runs already done
    (``resume=True``); a folder holding a different sweep is an error. Finished
    rows are written at least every ``flush_every`` seconds, so an interruption
    loses at most that much finished work. ``trajectories=True`` also saves each
    run's trajectory as ``out/trajectories/run-<id>.npz`` (its path in the row).
    """
    from ..scenario import Scenario, load_scenario, parse_scenario

    sc = scenario if isinstance(scenario, Scenario) else (
        parse_scenario(scenario) if isinstance(scenario, dict) else load_scenario(scenario))
    for path in over:
        _check_path(sc, path)
    runs = expand(over, samples, sampler, seed)
    out = Path(out)
    fp = _fingerprint(sc.data, runs)
    manifest = out / "sweep.json"
    if manifest.exists():
        old = json.loads(manifest.read_text())
        if old.get("fingerprint") != fp:
            raise SweepError(f"{str(out)!r} holds the results of a different sweep; "
                             "choose another folder or delete it")
        if not resume:
            raise SweepError(f"{str(out)!r} already holds this sweep; pass resume=True")
    else:
        try:
            out.mkdir(parents=True, exist_ok=True)
            text = json.dumps({"fingerprint": fp, "over": over, "runs": len(runs),
                               "sampler": sampler, "seed": seed}, default=str)
            write_atomic(manifest, lambda tmp: Path(tmp).write_text(text))
        except OSError as e:
            raise SweepError(f"cannot write sweep results to {str(out)!r}: {e.strerror}") from None
    done = {r["run_id"] for r in read_results(out)}
    todo = [i for i in range(len(runs)) if i not in done]
    show = sys.stderr.isatty() if progress is None else progress
    if todo:
        from distributed import as_completed

        client, cluster = _client(scheduler, timeout)
        try:
            # the scenario travels with each task (a small dict): scattered data would be
            # lost with a killed worker, and the tasks with it
            tdir = None
            if trajectories:
                tdir = str((out / "trajectories").resolve())
                Path(tdir).mkdir(exist_ok=True)
            futures = client.map(run_one, todo, [sc.data] * len(todo),
                                 [str(sc.base)] * len(todo), [runs[i] for i in todo],
                                 [tdir] * len(todo), pure=False)
            n_ok = n_fail = 0
            t0 = last_flush = time.perf_counter()
            seen, pending = set(done), []
            # with_results gathers finished results in batches, not one round trip each
            for _, row in as_completed(futures, with_results=True):
                if row["run_id"] in seen:  # a rescheduled duplicate: keep the first
                    continue
                seen.add(row["run_id"])
                pending.append(row)
                n_ok += row["status"] == "ok"
                n_fail += row["status"] != "ok"
                now = time.perf_counter()
                # flush finished rows often enough that an interruption loses at most
                # flush_every seconds of work, rarely enough that writing costs little
                if now - last_flush >= flush_every or len(pending) >= 256:
                    _write_part(out, pending)
                    pending, last_flush = [], now
                if show:
                    rate = (n_ok + n_fail) / max(now - t0, 1e-9)
                    print(f"\rsweep: {n_ok + n_fail}/{len(todo)} runs, {n_fail} failed, "
                          f"{rate:.1f} runs/s", end="", file=sys.stderr, flush=True)
            if pending:
                _write_part(out, pending)
            if show:
                print(file=sys.stderr)
        finally:
            if cluster is not None:
                client.close()
                cluster.close()
    return SweepResult(read_results(out), out)
