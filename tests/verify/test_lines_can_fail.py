"""Every line of the checklist can fail: corrupt one public algorithm at a time and the
line that compares it with something independent must catch it."""

from __future__ import annotations

import numpy as np
import pytest

import kanedyn as kd
import kanedyn.dynamics as dyn
from kanedyn.verify import checklist

_crba, _aba, _g, _V, _h = dyn.crba, dyn.aba, dyn.gravity_torques, dyn.potential_energy, \
    dyn.spatial_momentum


def _asym(model, q):
    M = _crba(model, q)
    M[0, -1] += 1e-6 * abs(M[0, 0])
    return M


CASES = {
    # a mass matrix 1e-4 off (100x the power balance's tolerance, 1e5x the others')
    "crba_scaled": ("crba", lambda m, q: _crba(m, q) * (1 + 1e-4),
                    {"crba_vs_rnea", "lagrange", "power_balance"}),
    "crba_asymmetric": ("crba", _asym, {"mass_matrix_symmetric"}),
    "aba_biased": ("aba", lambda m, q, v, tau: _aba(m, q, v, tau) + 1e-3,
                   {"inverse_forward", "energy_conservation"}),
    "gravity_sign": ("gravity_torques", lambda m, q: -_g(m, q), {"static_hand"}),
    # a torque on a chain hanging straight down, where symmetry says there is none
    "gravity_offset": ("gravity_torques", lambda m, q: _g(m, q) + 1e-3,
                       {"static_hand", "static_symmetry"}),
    "potential_sign": ("potential_energy", lambda m, q: -_V(m, q),
                       {"static_potential", "energy_conservation", "power_balance"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_corrupted_algorithm_fails_its_line(case, monkeypatch):
    attr, fake, lines = CASES[case]
    model = kd.models.pendulum_chain(2, planar=False)
    monkeypatch.setattr(dyn, attr, fake)
    r = checklist(model, n_samples=3, seed=1,
                  checks=sorted(lines | {"mass_matrix_positive_definite"}))
    failed = {x.name for x in r.failed}
    assert lines <= failed, str(r)
    assert "mass_matrix_positive_definite" not in failed


def test_a_momentum_leak_fails_the_momentum_line(monkeypatch):
    model = kd.models.random_tree(3, seed=0, floating_base=True)
    calls = iter(range(10**6))
    monkeypatch.setattr(dyn, "spatial_momentum",
                        lambda m, q, v: _h(m, q, v) + 1e-4 * next(calls) * np.ones(6))
    r = checklist(model, n_samples=2, checks=["momentum_conservation"])
    assert r["momentum_conservation"].passed is False, str(r)
