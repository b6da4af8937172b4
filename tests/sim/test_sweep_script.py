"""``kd.sweep`` from a plain script — no ``if __name__ == "__main__":`` guard, as a first
script is written — gives its rows, not screens of Dask tracebacks.

With worker processes made by ``multiprocessing`` (spawn), each worker re-imports the
script and runs its top level again; kanedyn's local cluster starts its workers as fresh
interpreters instead. The script runs in a subprocess with a time limit, and its rows are
checked against the closed form of the energy at rest of two unit point masses on a
planar chain of links of length L: V = −m g L (2 cos q₁ + cos(q₁ + q₂)).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.scenario import parse_scenario, run_summary

pytest.importorskip("distributed")

SCENARIO = {
    "model": {"builder": "pendulum_chain", "n": 2, "point_mass": True},
    "initial": {"q": [0.3, 0.0]},
    "integrator": {"method": "rk4", "dt": 1e-3},
    "run": {"t_final": 0.2},
}

SCRIPT = f"""\
import kanedyn as kd

scenario = {SCENARIO!r}
res = kd.sweep(scenario, {{"model.length": [0.5, 1.0]}}, out="plain_out", progress=False)
print("started", flush=True)
for r in res.rows:
    print(r["run_id"], r["param:model.length"], r["status"], repr(r["energy_initial"]))
"""


def test_a_script_without_a_main_guard_gets_its_rows(tmp_path):
    run_summary(parse_scenario(SCENARIO))  # compiled here: the workers load the cache
    script = tmp_path / "first_sweep.py"
    script.write_text(textwrap.dedent(SCRIPT))
    src = str(Path(kd.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [src, *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    # the top level ran once: a worker that re-ran the script would print "started" too
    assert lines.count("started") == 1, proc.stdout
    rows = [line.split() for line in lines if line != "started"]
    assert [(r[0], r[1], r[2]) for r in rows] == [("0", "0.5", "ok"), ("1", "1.0", "ok")]
    for r in rows:
        L = float(r[1])
        assert np.isclose(float(r[3]), -9.81 * L * 3 * np.cos(0.3), rtol=1e-12)


def test_a_sweep_in_a_notebook_kernel_gets_its_rows(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    run_summary(parse_scenario(SCENARIO))
    src = str(Path(kd.__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [src, *filter(None, [os.environ.get("PYTHONPATH")])]))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        SCRIPT.replace('print("started", flush=True)\n', ""))])
    nbclient.NotebookClient(nb, timeout=240, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    out = "".join(o.get("text", "") for o in nb.cells[0].outputs if o.output_type == "stream"
                  and o.name == "stdout")
    rows = [line.split() for line in out.splitlines()]
    assert [(r[0], r[1], r[2]) for r in rows] == [("0", "0.5", "ok"), ("1", "1.0", "ok")], out
    for r in rows:
        assert np.isclose(float(r[3]), -9.81 * float(r[1]) * 3 * np.cos(0.3), rtol=1e-12)
