"""The checklist passes on sound models and fails, naming the line, on broken ones."""

from __future__ import annotations

import json

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.forces import ForceElement, JointSpring
from kanedyn.model.joints import Revolute
from kanedyn.verify import CHECKS, checklist

from .conftest import ModelWrapper, skew_chain


def _status(report):
    return {r.name: r.status for r in report}


def test_pendulum_chain_passes_every_applicable_line(chain3_report):
    r = chain3_report
    assert r.passed, str(r)
    st = _status(r)
    for name in ("mass_matrix_symmetric", "mass_matrix_positive_definite", "inverse_forward",
                 "crba_vs_rnea", "energy_conservation", "power_balance", "lagrange",
                 "static_hand", "static_potential", "static_symmetry", "dissipation"):
        assert st[name] == "PASS", str(r)
    # a planar chain on a horizontal first axis under gravity has no momentum symmetry
    assert st["momentum_conservation"] == "skip"
    assert "no symmetry" in r["momentum_conservation"].detail
    # every line that ran carries its figure and tolerance
    for line in r:
        if not line.skipped:
            assert line.figure is not None and line.tolerance is not None


def test_random_floating_tree_passes_and_finds_its_symmetry():
    r = checklist(kd.models.random_tree(5, floating_base=True), n_samples=3, seed=2)
    assert r.passed, str(r)
    m = r["momentum_conservation"]
    assert m.passed is True
    assert "vertical axis" in m.detail and "2 linear momentum" in m.detail
    assert r["energy_conservation"].passed is True
    assert r["lagrange"].skipped  # quaternions: nq != nv


def test_free_body_without_gravity_conserves_all_six_momenta():
    model = kd.models.free_body(inertia=(0.1, 0.2, 0.3), gravity=(0.0, 0.0, 0.0))
    r = checklist(model, n_samples=2, checks=["momentum_conservation", "energy_conservation"])
    assert r.passed, str(r)
    assert "all 6 components" in r["momentum_conservation"].detail


def test_vertical_first_axis_conserves_angular_momentum_about_it():
    b = kd.ModelBuilder("turntable")
    b.add_body("table", None, Revolute("spin", axis=(0, 0, 1)), None, 2.0, (0.3, 0, 0),
               np.diag([0.1, 0.1, 0.2]))
    b.add_body("arm", "table", Revolute("swing", axis=(1, 0, 0)), (np.eye(3), (0.3, 0, 0)), 1.0,
               (0, 0, -0.5), np.diag([0.08, 0.08, 0.01]))
    r = checklist(b.build(), n_samples=2, checks=["momentum_conservation"])
    m = r["momentum_conservation"]
    assert m.passed is True, str(r)
    assert "'spin'" in m.detail and "vertical axis" in m.detail


def test_flipped_gravity_in_a_user_system_fails_the_energy_lines():
    """(i) C v − g instead of C v + g: the motion falls upwards while V counts down."""
    model = kd.models.pendulum_chain(2)
    r = checklist(ModelWrapper(model, flip_gravity=True), n_samples=3, seed=0)
    assert not r.passed
    failed = {x.name for x in r.failed}
    assert failed == {"energy_conservation", "power_balance", "static_potential"}, str(r)
    assert r["energy_conservation"].figure > 1e-2   # a drift of order one, not a rounding
    assert "FAILED: energy_conservation, power_balance, static_potential" in str(r)
    assert r.exit_code == 1
    # the same wrapper without the flip passes: the failure is the sign, not the wrapper
    ok = checklist(ModelWrapper(model), n_samples=3, seed=0)
    assert ok.passed and ok.exit_code == 0, str(ok)
    # tree-only lines are skipped for a system, and say so
    assert ok["static_hand"].skipped and "needs a Model" in ok["static_hand"].detail


def test_wrong_signed_products_of_inertia_fail_only_energy_conservation():
    """(ii) The equations use I with I_xz, I_yz flipped; the energy uses the right I.

    The flipped model is a physical model in its own right, so every check of
    the equations' internal consistency passes: M stays symmetric positive
    definite (D I D has the same eigenvalues), inverse and forward dynamics
    agree, the bias forces belong to that M (the power balance with
    T = ½vᵀMv), and gravity — which sees only masses and centres of mass — is
    right. Only the comparison of the motion with the independently computed
    T + V can see that the inertia is not the body's: energy_conservation.
    """
    good, bad = skew_chain(False), skew_chain(True)
    assert not np.allclose(kd.crba(good, [0.3, -0.2, 0.5]), kd.crba(bad, [0.3, -0.2, 0.5]))
    r = checklist(ModelWrapper(bad, energy_model=good), n_samples=3, seed=0, t_final=0.5)
    assert [x.name for x in r.failed] == ["energy_conservation"], str(r)
    assert r["energy_conservation"].figure > 1e-3
    assert checklist(ModelWrapper(good), n_samples=3, seed=0, t_final=0.5).passed


class SignFlippedDamper(ForceElement):
    """A damper written τ = +c v by mistake."""

    dissipative = True

    def __init__(self, c):
        self.c, self.name = c, "flipped damper"

    def generalized_force(self, t, q, v):
        return self.c * np.asarray(v)


class SignFlippedSpring(ForceElement):
    """V = ½ k |q|², but τ = +k q."""

    conservative = True

    def __init__(self, k):
        self.k, self.name = k, "flipped spring"

    def generalized_force(self, t, q, v):
        return self.k * np.asarray(q)

    def potential(self, q):
        return 0.5 * self.k * float(np.dot(q, q))


def test_flipped_force_elements_fail_the_dissipation_line():
    model = kd.models.pendulum_chain(2)
    good = checklist(model, n_samples=3, checks=["dissipation"],
                     forces=[JointSpring("joint1", 5.0, rest=0.2)])
    assert good.passed, str(good)
    r = checklist(model, n_samples=3, checks=["dissipation"],
                  forces=[SignFlippedDamper(0.5), SignFlippedSpring(3.0)])
    d = r["dissipation"]
    assert d.passed is False
    assert "'flipped damper'" in d.detail and "'flipped spring'" in d.detail


def test_negative_joint_damping_in_the_model_fails_naming_the_joint():
    b = kd.ModelBuilder("leaky")
    b.add_body("link", None, Revolute("hinge", axis=(0, 1, 0), damping=-0.3), None, 1.0,
               (0, 0, -0.5), np.diag([0.1, 0.1, 0.01]))
    r = checklist(b.build(), n_samples=2)
    assert [x.name for x in r.failed] == ["dissipation"], str(r)
    assert "'hinge'" in r["dissipation"].detail and "damping -0.3" in r["dissipation"].detail


def test_report_table_and_dict(chain3_report):
    text = str(chain3_report)
    assert text.splitlines()[0] == "verification of pendulum_chain_3_planar"
    for line in chain3_report:
        assert line.name in text
    d = json.loads(chain3_report.to_json())
    assert d["passed"] is True and len(d["checks"]) == len(CHECKS)
    assert d["checks"][0]["name"] == "mass_matrix_symmetric"


def test_check_selection_and_bad_input():
    model = kd.models.pendulum_chain(1)
    r = checklist(model, checks=["mass_matrix_symmetric"])
    assert [x.name for x in r] == ["mass_matrix_symmetric"]
    with pytest.raises(kd.ModelError, match="unknown check.*energy"):
        checklist(model, checks=["energy"])
    with pytest.raises(kd.ModelError, match="missing .*forward_dynamics"):
        checklist(object())
    with pytest.raises(kd.ModelError, match="n_samples"):
        checklist(model, n_samples=0)


def test_nan_in_the_dynamics_fails_the_line_instead_of_passing():
    class NaNSystem(ModelWrapper):
        def mass_matrix(self, q):
            M = super().mass_matrix(q)
            M[0, 0] = np.nan
            return M

    r = checklist(NaNSystem(kd.models.pendulum_chain(2)), n_samples=2,
                  checks=["mass_matrix_symmetric", "mass_matrix_positive_definite"])
    assert [x.status for x in r] == ["FAIL", "FAIL"], str(r)


def test_lagrange_line_with_sympy_itself():
    r = checklist(kd.models.pendulum_chain(2), n_samples=2, checks=["lagrange"],
                  symbolic_engine="sympy")
    assert r["lagrange"].passed is True and "by sympy" in r["lagrange"].detail


def test_a_system_that_raises_fails_its_lines_without_crashing():
    class Singular(ModelWrapper):
        def forward_dynamics(self, q, v, tau):
            return np.linalg.solve(np.zeros((self.nv, self.nv)), tau)

    r = checklist(Singular(kd.models.pendulum_chain(2)), n_samples=2)
    assert r["mass_matrix_symmetric"].passed is True
    for name in ("inverse_forward", "energy_conservation", "power_balance"):
        assert r[name].passed is False and "LinAlgError" in r[name].detail, str(r)


def test_a_compiled_kane_system_and_a_model_system_pass_as_systems():
    kane = pytest.importorskip("kanedyn.kane")
    if not hasattr(kane, "derive"):
        pytest.skip("kanedyn.kane.derive is not available")
    model = kd.models.pendulum_chain(2, planar=False)
    for system in (kane.derive(model).compile(), kd.ModelSystem(model)):
        r = checklist(system, n_samples=2)
        assert r.passed, str(r)
        assert r["energy_conservation"].passed is True and r["power_balance"].passed is True
    assert checklist(kd.ModelSystem(model), n_samples=1,
                     checks=["mass_matrix_symmetric"]).subject == f"ModelSystem({model.name})"
