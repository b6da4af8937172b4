"""The compiled smoothed Stribeck law (friction/laws_kernel.py) against the numpy law,
its reference (friction/laws.py), over both sides of v = 0, the Stribeck dip and the
viscous tail, for both smooth sign functions and several curve shapes."""

import numpy as np
import pytest

from kanedyn.errors import FrictionError
from kanedyn.friction import RationalStribeck, Stribeck
from kanedyn.friction.laws_kernel import (
    smooth_sign,
    stribeck_curve,
    stribeck_derivative,
    stribeck_force,
    stribeck_parameters,
)

V = np.concatenate([-np.geomspace(1e-9, 50.0, 60), [0.0], np.geomspace(1e-9, 50.0, 60)])


@pytest.mark.parametrize("kind", ["tanh", "sqrt"])
@pytest.mark.parametrize("delta", [0.5, 1.0, 2.0, 3.3])
def test_compiled_stribeck_is_the_numpy_law(kind, delta):
    law = Stribeck(Fc=0.7, Fs=1.3, vs=0.04, delta=delta, Fv=0.2).smoothed(kind, 2e-3)
    p = stribeck_parameters(law)
    compiled = np.array([stribeck_force(v, *p) for v in V])
    np.testing.assert_allclose(compiled, law(V), rtol=4e-16 * 8, atol=0.0)
    assert stribeck_force(0.0, *p) == 0.0
    # odd in v, as F(v) = g(|v|) σ(v) + Fv v is
    np.testing.assert_array_equal(compiled[:60], -compiled[61:])


@pytest.mark.parametrize("kind", ["tanh", "sqrt"])
@pytest.mark.parametrize("delta", [0.5, 1.0, 2.0, 3.3])
def test_compiled_derivative_and_curve_are_the_numpy_law(kind, delta):
    """∂F/∂v (the slope the linearly implicit steps and the AVF Newton matrix use) and the
    exact law's curve g(|v|), against the numpy law; the slope also against a central
    difference of the compiled force (an independent check of the formula)."""
    law = Stribeck(Fc=0.7, Fs=1.3, vs=0.04, delta=delta, Fv=0.2).smoothed(kind, 2e-3)
    p = stribeck_parameters(law)
    slope = np.array([stribeck_derivative(v, *p) for v in V])
    # 1 − tanh² cancels: an ulp of tanh (numba's and numpy's differ by one) is
    # 2.2e-16 Fs/ε ≈ 1.4e-13 absolute here
    np.testing.assert_allclose(slope, law.derivative(V), rtol=1e-14, atol=1e-12)
    for v in V[np.abs(V) > 1e-4]:
        dv = 1e-6 * abs(v)
        fd = (stribeck_force(v + dv, *p) - stribeck_force(v - dv, *p)) / (2 * dv)
        assert abs(fd - stribeck_derivative(v, *p)) <= 1e-5 * (1.0 + abs(fd))
    s = np.abs(V)
    np.testing.assert_allclose([stribeck_curve(x, *p[:4]) for x in s], law.curve(s),
                               rtol=4e-16 * 8, atol=0.0)


@pytest.mark.parametrize("kind", ["tanh", "sqrt"])
def test_compiled_smooth_sign_is_the_numpy_smoothing(kind):
    sm = Stribeck(1.0, 1.0, 1.0).smoothed(kind, 0.03).smoothing
    code = stribeck_parameters(Stribeck(1.0, 1.0, 1.0, smoothing=sm))[-1]
    np.testing.assert_allclose([smooth_sign(v, sm.eps, code) for v in V], sm(V),
                               rtol=4e-16 * 4, atol=0.0)


def test_laws_without_a_compiled_form_are_refused_by_name():
    with pytest.raises(FrictionError, match="is exact"):
        stribeck_parameters(Stribeck(1.0, 1.5, 0.1))
    with pytest.raises(FrictionError, match="RationalStribeck.*no compiled form"):
        stribeck_parameters(RationalStribeck(1.0, 1.5, 0.1).smoothed("tanh", 1e-3))
