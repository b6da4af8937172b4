"""Static friction laws: values against the formulas written out by hand, derivatives
against central differences, the Simscape conversion, and bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanedyn import FrictionError, friction

V = np.array([-0.3, -0.05, -0.013, -1e-3, 1e-3, 0.007, 0.02, 0.1, 0.8])


def test_stribeck_value_matches_formula():
    Fc, Fs, vs, d, Fv = 1.0, 1.5, 0.01, 2.0, 0.1
    law = friction.Stribeck(Fc, Fs, vs, d, Fv)
    for v in (-0.02, 0.005, 0.3):
        expect = (Fc + (Fs - Fc) * math.exp(-((abs(v) / vs) ** d))) * math.copysign(1, v) + Fv * v
        assert law(v) == pytest.approx(expect, rel=1e-14)
    assert law(0.0) == 0.0                                    # sgn(0) = 0
    assert law(1e-12) == pytest.approx(Fs, rel=1e-9)          # static level at 0+
    assert law(10.0) == pytest.approx(Fc + Fv * 10.0, rel=1e-14)  # Coulomb + viscous far out
    np.testing.assert_allclose(law(-V), -law(V), rtol=0, atol=0)  # odd


def test_named_variants_and_rational_form():
    e = friction.exponential(1.0, 2.0, 0.1, 0.0)
    g = friction.gaussian(1.0, 2.0, 0.1, 0.0)
    r = friction.RationalStribeck(1.0, 2.0, 0.1, 2.0, 0.0)
    assert e.delta == 1.0 and g.delta == 2.0
    # at v = vs: exp(-1) for both exponential forms, 1/2 for the rational form
    assert e(0.1) == pytest.approx(1.0 + math.exp(-1.0), rel=1e-14)
    assert g(0.1) == pytest.approx(1.0 + math.exp(-1.0), rel=1e-14)
    assert r(0.1) == pytest.approx(1.5, rel=1e-14)
    # at v = 2 vs the Gaussian has decayed most, the rational form least
    assert g(0.2) < e(0.2) < r(0.2)


LAWS = [
    friction.Stribeck(1.0, 1.5, 0.02, 2.0, 0.3),
    friction.Stribeck(1.0, 1.5, 0.02, 0.7, 0.3),
    friction.exponential(0.5, 0.9, 0.05, 0.1),
    friction.RationalStribeck(1.0, 2.0, 0.1, 2.0, 0.3),
    friction.Stribeck(1.0, 1.5, 0.02, 2.0, 0.3).smoothed("tanh", 5e-3),
    friction.Stribeck(1.0, 1.5, 0.02, 2.0, 0.3).smoothed("sqrt", 5e-3),
    friction.TanhStribeck(0.5, 100.0, 10.0, 1.0, 500.0, 0.2),
    friction.SimscapeFriction(2.0, 0.01, 1.0, 0.1),
    friction.Asymmetric(friction.gaussian(1.0, 1.5, 0.02, 0.3),
                        friction.exponential(0.6, 0.8, 0.05, 0.1)),
]


@pytest.mark.parametrize("law", LAWS, ids=lambda x: type(x).__name__)
def test_derivative_matches_central_difference(law):
    h = 1e-7
    fd = (law(V + h) - law(V - h)) / (2 * h)
    np.testing.assert_allclose(law.derivative(V), fd, rtol=1e-5, atol=1e-5)


def test_smoothed_derivative_at_zero_is_Fs_over_eps():
    for kind in ("tanh", "sqrt"):
        law = friction.Stribeck(1.0, 1.5, 0.02, 2.0, 0.3).smoothed(kind, 1e-4)
        assert law.derivative(0.0) == pytest.approx(1.5 / 1e-4 + 0.3, rel=1e-12)
        assert law(0.0) == 0.0
        assert not law.discontinuous and law.exact().discontinuous


def test_simscape_breakaway_parameterisation():
    F_brk, v_brk, Fc, f = 2.0, 0.01, 1.0, 0.1
    sc = friction.SimscapeFriction(F_brk, v_brk, Fc, f)
    assert sc.v_st == pytest.approx(math.sqrt(2) * v_brk)
    assert sc.v_coul == pytest.approx(v_brk / 10)
    # the Stribeck term sqrt(2e) x exp(-x^2) peaks at x = 1/sqrt(2), i.e. v = v_brk, with
    # value F_brk - Fc: the force there is F_brk up to tanh(10) and the viscous part
    v = np.linspace(0.2 * v_brk, 3 * v_brk, 20001)
    assert v[np.argmax(sc(v) - f * v - Fc * np.tanh(v / sc.v_coul))] == pytest.approx(
        v_brk, rel=1e-3)
    assert sc(v_brk) == pytest.approx(F_brk + Fc * (math.tanh(10) - 1) + f * v_brk, rel=1e-12)
    # conversion keeps levels and the Gaussian decay, and round-trips
    g = sc.to_stribeck()
    assert (g.Fc, g.Fs, g.vs, g.delta, g.Fv) == pytest.approx((Fc, F_brk, sc.v_st, 2.0, f))
    back = g.to_breakaway()
    assert (back.F_brk, back.v_brk, back.Fc, back.Fv) == pytest.approx((F_brk, v_brk, Fc, f))
    assert friction.Stribeck.from_breakaway(F_brk, v_brk, Fc, f) == g
    # far from zero both are Fc + f v to within (F_brk - Fc)|1 - sqrt(2e) x| exp(-x^2)
    vf = np.linspace(4 * sc.v_st, 1.0, 50)
    x = vf / sc.v_st
    bound = (F_brk - Fc) * np.abs(1 - math.sqrt(2 * math.e) * x) * np.exp(-x * x) + 1e-12
    assert np.all(np.abs(sc(vf) - g(vf)) <= bound)
    with pytest.raises(FrictionError, match="delta = 2"):
        friction.SimscapeFriction.from_stribeck(friction.exponential(1.0, 2.0, 0.1))


def test_asymmetric_uses_each_side():
    pos = friction.gaussian(1.0, 1.5, 0.02, 0.3)
    neg = friction.exponential(0.6, 0.8, 0.05, 0.1)
    a = friction.Asymmetric(pos, neg)
    assert a(0.03) == pos(0.03) and a(-0.03) == neg(-0.03)
    assert a.direction(+1) is pos and a.direction(-1) is neg


@pytest.mark.parametrize("make, match", [
    (lambda: friction.Stribeck(-1.0, 1.5, 0.01), "Fc=-1.0 is negative"),
    (lambda: friction.Stribeck(1.0, 1.5, 0.01, 2.0, -0.1), "Fv=-0.1 is negative"),
    (lambda: friction.Stribeck(1.0, 0.5, 0.01), "below the Coulomb level"),
    (lambda: friction.Stribeck(1.0, 1.5, 0.0), "vs=0.0 must be > 0"),
    (lambda: friction.Stribeck(1.0, 1.5, -0.01), "vs=-0.01 must be > 0"),
    (lambda: friction.Stribeck(1.0, 1.5, 0.01, 0.0), "delta=0.0 must be > 0"),
    (lambda: friction.Stribeck(1.0, float("nan"), 0.01), "not finite"),
    (lambda: friction.RationalStribeck(1.0, 0.9, 0.01), "below the Coulomb level"),
    (lambda: friction.SimscapeFriction(0.5, 0.01, 1.0), "below the Coulomb level"),
    (lambda: friction.SimscapeFriction(2.0, 0.0, 1.0), "v_brk=0.0 must be > 0"),
    (lambda: friction.TanhStribeck(1.0, 5.0, 10.0, 1.0, 100.0), "gamma2=5.0 must exceed"),
    (lambda: friction.Stribeck(1.0, 1.5, 0.01).smoothed("tanh", 0.0), "eps=0.0"),
    (lambda: friction.Stribeck(1.0, 1.5, 0.01).smoothed("sqrt", -1e-3), "eps=-0.001"),
    (lambda: friction.Stribeck(1.0, 1.5, 0.01).smoothed("erf", 1e-3), "kind 'erf' unknown"),
    (lambda: friction.LuGre(0.0, 1.0, 1.0, 1.5, 0.01), "sigma0=0.0 must be > 0"),
    (lambda: friction.Stribeck(1.0, 1.5, 0.01, 2.0, 0.0, "tanh"), "smoothing='tanh'"),
    (lambda: friction.LuGre(1e5, 1.0, 1.0, 0.5, 0.01), "below the Coulomb level"),
])
def test_bad_parameters_raise_friction_error(make, match):
    with pytest.raises(FrictionError, match=match):
        make()


def test_creep_velocity_formula():
    """Below the Stribeck velocity g ≈ Fs, so v_creep → ε artanh(f/Fs) (tanh) and
    ε r/√(1-r²) (sqrt); creep_velocity solves F(v) = f on the full law."""
    base = friction.Stribeck(1.0, 1.5, 0.5, 2.0, 0.0)
    f = 0.9
    for kind, formula in (("tanh", lambda e: e * math.atanh(f / 1.5)),
                          ("sqrt", lambda e: e * (f / 1.5) / math.sqrt(1 - (f / 1.5) ** 2))):
        for eps in (1e-4, 1e-5):
            v = friction.creep_velocity(base.smoothed(kind, eps), f)
            assert v == pytest.approx(formula(eps), rel=1e-6)


@settings(max_examples=60, deadline=None)
@given(Fc=st.floats(0.0, 10.0), dF=st.floats(0.0, 10.0), vs=st.floats(1e-3, 1.0),
       delta=st.floats(0.3, 4.0), Fv=st.floats(0.0, 5.0), v=st.floats(1e-4, 3.0),
       rational=st.booleans())
def test_stribeck_family_properties(Fc, dF, vs, delta, Fv, v, rational):
    """Odd; between the Coulomb and static bounds; derivative = central difference."""
    cls = friction.RationalStribeck if rational else friction.Stribeck
    law = cls(Fc, Fc + dF, vs, delta, Fv)
    assert law(-v) == -law(v)
    assert Fc + Fv * v - 1e-12 <= law(v) <= Fc + dF + Fv * v + 1e-12
    h = 1e-6 * v
    fd = (law(v + h) - law(v - h)) / (2 * h)
    scale = 1.0 + abs(fd) + (Fc + dF) / v
    assert abs(law.derivative(v) - fd) <= 1e-5 * scale
