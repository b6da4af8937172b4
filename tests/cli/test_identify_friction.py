"""kanedyn identify-friction on a CSV: the fit the command prints is the library's fit."""

import numpy as np
import pytest

from kanedyn import friction
from kanedyn.cli import main


def _csv(tmp_path, header="v,F"):
    law = friction.Stribeck(Fc=0.8, Fs=1.2, vs=0.05, delta=2.0, Fv=0.3)
    sp = np.geomspace(1e-3, 2.0, 30)
    v = np.concatenate([-sp[::-1], sp])
    F = law(v) + 0.005 * np.random.default_rng(3).normal(size=v.size)
    p = tmp_path / "data.csv"
    np.savetxt(p, np.column_stack([v, F]), delimiter=",", header=header, comments="")
    return p


def test_fit_from_csv(tmp_path, capsys):
    data = _csv(tmp_path)
    assert main(["identify-friction", str(data), "--plot", str(tmp_path / "fit.png")]) == 0
    out = capsys.readouterr().out
    raw = np.genfromtxt(data, delimiter=",", names=True)
    fit = friction.fit(raw["v"], raw["F"], model="stribeck")
    for name, value in fit.params.items():
        assert name in out and f"{value:.6g}"[:5] in out
    assert fit.params["Fs"] == pytest.approx(1.2, abs=5 * fit.stderr["Fs"])
    assert (tmp_path / "fit.png").stat().st_size > 1000


def test_bad_csv_is_one_line(tmp_path, capsys):
    data = _csv(tmp_path, header="speed,torque")
    assert main(["identify-friction", str(data)]) == 2
    assert "no column 'v'; columns are speed, torque" in capsys.readouterr().err
    assert main(["identify-friction", str(data), "--velocity-column", "speed",
                 "--force-column", "torque"]) == 0
    assert main(["identify-friction", str(tmp_path / "none.csv")]) == 2
