"""The identification report (kanedyn.identify.report): the friction curves' bands and the
figures.

The band of a friction curve is the delta method's on the fit's covariance. For the
viscous + Coulomb law, F(v) = F_c + F_v v for v > 0 is linear in its parameters, so the
band's half-width there is exactly t·sqrt(var F_c + 2 v cov + v² var F_v): as v → 0+ it
is F_c's own interval half-width, and on the negative side (asymmetric levels) F_c,neg's
— checked against the intervals the fit reports, computed independently of the band.
"""

from __future__ import annotations

import warnings

import matplotlib.image
import numpy as np
import pytest

import kanedyn as kd
from kanedyn import identify as ki

from .test_fit import NOMINAL, experiment


@pytest.fixture(scope="module")
def fits():
    _, _, q, v, a, tau = experiment(11, kind="viscous+coulomb")
    _, laws, *data = experiment(12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kd.KanedynWarning)
        linear = ki.fit(NOMINAL, q, v, a, tau)
        asym = ki.fit(NOMINAL, q, v, a, tau, asymmetric=True)
        stribeck = ki.fit(NOMINAL, *data, "stribeck")
    return linear, asym, stribeck, data, laws


def half_width(res, name):
    k = res.names.index(name)
    return res.interval[k, 1] - res.estimate[k]


def test_band_of_a_linear_law_is_its_parameters_intervals(fits):
    linear, asym, *_ = fits
    F, half = ki.friction_band(linear, "j2", [1e-9, -1e-9, 0.5])
    p = linear.friction_parameters("j2")
    assert F[0] == pytest.approx(p["Fc"] + 1e-9 * p["Fv"])
    assert half[0] == pytest.approx(half_width(linear, "j2.Fc"), rel=1e-6)
    assert half[1] == pytest.approx(half_width(linear, "j2.Fc"), rel=1e-6)
    # at v = 0.5: Var(F_c + 0.5 F_v) from the covariance's 2 × 2 block
    i, k = linear.names.index("j2.Fc"), linear.names.index("j2.Fv")
    var = linear.cov[i, i] + 0.25 * linear.cov[k, k] + linear.cov[i, k]
    t = half_width(linear, "j2.Fc") / linear.stderr[i]
    assert half[2] == pytest.approx(t * np.sqrt(var), rel=1e-9)
    # asymmetric: each side its own level's interval
    _, half = ki.friction_band(asym, "j1", [1e-9, -1e-9])
    assert half[0] == pytest.approx(half_width(asym, "j1.Fc_pos"), rel=1e-6)
    assert half[1] == pytest.approx(half_width(asym, "j1.Fc_neg"), rel=1e-6)
    with pytest.raises(kd.IdentificationError, match="'j9' has no fitted friction"):
        ki.friction_band(linear, "j9", [0.1])


def test_report_writes_the_table_and_readable_figures(fits, tmp_path):
    _, _, stribeck, data, laws = fits
    q, v, a, tau = data
    t = np.arange(q.shape[0]) * 0.01
    files = ki.report(stribeck, tmp_path / "out", data=(t, q, v, a, tau),
                      truth={f"j{j + 1}": laws[j] for j in range(3)})
    assert sorted(files) == ["friction", "text", "torque"]
    text = (tmp_path / "out" / "identification.txt").read_text()
    assert text.startswith(stribeck.report())
    for name in ("friction", "torque"):
        image = matplotlib.image.imread(files[name])
        assert image.ndim == 3 and min(image.shape[:2]) >= 250
        assert image[..., :3].std() > 0.05  # something is drawn
    assert not list((tmp_path / "out").glob("*.tmp.png"))
    with pytest.raises(kd.IdentificationError, match="do not match"):
        ki.plot_torques(tmp_path / "x.png", t, tau, tau[:-1], ["j1", "j2", "j3"])
