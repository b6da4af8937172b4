"""The friction examples run (short) and show what they claim."""

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_compensation_removes_the_stick_slip(tmp_path):
    ex = load("friction_compensation")
    out = ex.run(t_final=3.5, plot=str(tmp_path / "comp.png"))
    pd, ff = out["pd"], out["pd+ff"]
    # without compensation the joint sticks at the reversal (t ≈ 3 s) until the PD error
    # reaches about Fs/Kp = 15 mrad; with it the error is several times smaller
    assert pd["stuck_fraction"] > 0.1 and pd["sticks"] >= 1
    assert ff["stuck_fraction"] < 0.3 * pd["stuck_fraction"]
    assert ff["rms_error"] < 0.2 * pd["rms_error"]
    assert pd["max_error"] == pytest.approx(ex.LAW.Fs / ex.KP, rel=0.1)
    for r in out.values():
        assert r["energy_residual"] < 1e-8
    assert (tmp_path / "comp.png").stat().st_size > 1000


def test_identification_example_recovers_the_truth(tmp_path):
    ex = load("friction_identification")
    fits = ex.main(plot=str(tmp_path / "fit.png"), noise=0.05)
    truth = {"Fc": 2.0, "Fs": 3.0, "vs": 0.05, "Fv": 1.5}
    for r in fits.values():
        for n, x in truth.items():
            assert abs(r.params[n] - x) < 4 * r.stderr[n], (n, r.params[n], r.stderr[n])
    assert (tmp_path / "fit.png").stat().st_size > 1000
