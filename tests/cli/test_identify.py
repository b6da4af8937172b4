"""kanedyn identify on a CSV of t, q, τ: what the command prints and writes is the
library's pipeline (read_csv, prepare, fit), and on synthetic data of a perturbed
UR5 (viscous friction, 30 s at 1 kHz) it recovers the truth within 4 standard errors."""

from __future__ import annotations

import json
import warnings

import numpy as np

import kanedyn as kd
from kanedyn import identify as ki
from kanedyn.cli import main

from ..identify.test_fit import fourier_trajectory, perturbed

NOMINAL = kd.load_robot("ur5")  # the command's "ur5": the shipped URDF
JOINTS = NOMINAL.joint_names
FV = np.array([0.8, 1.2, 0.5, 0.2, 0.2, 0.1])  # viscous only: τ has no jump to smear


def _csv(tmp_path, seed=5):
    rng = np.random.default_rng(seed)
    truth = perturbed(NOMINAL, rng)
    q, v, a = fourier_trajectory(6, rng, duration=30.0, rate=1000.0)
    tau = kd.rnea(truth, q, v, a) + FV * v + rng.normal(0.0, 0.05, q.shape)
    t = np.arange(q.shape[0]) * 1e-3
    path = tmp_path / "arm.csv"
    header = ",".join(["t"] + [f"q_{j}" for j in JOINTS] + [f"tau_{j}" for j in JOINTS])
    np.savetxt(path, np.column_stack([t, q, tau]), delimiter=",", header=header, comments="",
               fmt="%.12g")
    return path, truth


def test_identify_prints_and_writes_the_library_fit(tmp_path, capsys):
    path, truth = _csv(tmp_path)
    out_json = tmp_path / "result.json"
    assert main(["identify", "ur5", str(path), "--cutoff", "5", "--json",
                 str(out_json), "--plot", str(tmp_path / "report")]) == 0
    printed = capsys.readouterr().out
    # the same pipeline by hand: read, filter at 5 Hz, the friction columns through the
    # same filter, one sample per 0.1 s, fit
    t, q, tau = ki.read_csv(str(path), NOMINAL)
    tp, qp, vp, ap, taup = ki.prepare(t, q, tau, cutoff=5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = ki.fit(NOMINAL, qp, vp, ap, taup, lowpass=ki.Lowpass(5.0, 1000.0), every=100)
    data = json.loads(out_json.read_text())
    assert data["every"] == 100 and data["samples"] == ref.rows.size == tp[200:-200:100].size
    assert [p["name"] for p in data["parameters"]] == ref.names
    np.testing.assert_allclose([p["estimate"] for p in data["parameters"]], ref.estimate,
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose([p["interval"] for p in data["parameters"]], ref.interval,
                               rtol=1e-9, atol=1e-12)
    assert data["condition_number"] == ref.condition_number
    assert f"condition number {ref.condition_number:.4g}" in printed
    for name in ref.names:
        assert name in printed
    # the report: the table and two figures (their content: tests/identify/test_report.py)
    import matplotlib.image

    for name in ("friction.png", "torque.png"):
        image = matplotlib.image.imread(tmp_path / "report" / name)
        assert image.ndim == 3 and min(image.shape[:2]) > 300
    assert (tmp_path / "report" / "identification.txt").read_text().startswith(printed[:200])
    # the truth: base parameters and viscous levels within 4 standard errors, no Coulomb
    true = np.concatenate([ref.base.of(ki.standard_parameters(truth)),
                           np.column_stack([np.zeros(6), FV]).ravel()])
    z = np.abs(ref.estimate - true) / ref.stderr
    assert z.max() < 4.0, dict(zip(ref.names, z.round(1), strict=True))


def test_identify_bad_input_is_one_line(tmp_path, capsys):
    path, _ = _csv(tmp_path)
    assert main(["identify", "ur5", str(tmp_path / "none.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err
    # a model whose joints the CSV does not name
    assert main(["identify", "panda", str(path)]) == 2
    assert "name no joint of the model" in capsys.readouterr().err
    assert main(["identify", "ur5", str(path), "--cutoff", "900"]) == 2
    assert "cutoff" in capsys.readouterr().err
