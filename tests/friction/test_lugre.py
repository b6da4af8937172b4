"""LuGre: steady state = static Stribeck curve, pre-sliding = spring of stiffness σ0,
hysteresis dissipates between the Coulomb and static bounds, Jacobians."""

import math

import numpy as np
import pytest

from kanedyn import friction

LG = friction.LuGre(sigma0=1e5, sigma1=300.0, Fc=1.0, Fs=1.5, vs=0.01, delta=2.0, sigma2=0.4)


@pytest.mark.parametrize("v", [-0.05, -0.004, 0.002, 0.01, 0.2])
def test_steady_state_equals_static_curve(v):
    static = friction.Stribeck(1.0, 1.5, 0.01, 2.0, 0.4)
    assert LG.static_curve(v) == pytest.approx(static(v), rel=1e-14)
    # integrate the bristle at constant v from z = 0: it relaxes at rate σ0|v|/g ≥ 130/s
    t = np.linspace(0.0, 0.4, 5)
    z, F = LG.response(t, lambda tt: v)
    assert z[-1] == pytest.approx(LG.steady_state(v), rel=1e-7)
    assert F[-1] == pytest.approx(static(v), rel=1e-7)


def test_presliding_is_a_spring_of_stiffness_sigma0():
    """For |x| ≪ Fc/σ0 = 1e-5 m the bristle follows the motion (ż = v (1 - σ0 z sgn v/g),
    the bracket within σ0 A/Fc of 1), so F ≈ σ0 x + (σ1 + σ2) v."""
    A, w = 1e-7, 2 * math.pi * 2.0
    t = np.linspace(0.0, 1.0, 401)
    z, F = LG.response(t, lambda tt: A * w * math.cos(w * tt))
    x = A * np.sin(w * t)
    v = A * w * np.cos(w * t)
    bound = LG.sigma0 * A / LG.Fc                              # = 1e-2
    assert np.max(np.abs(z - x)) <= 1.5 * bound * A
    spring = F - (LG.sigma1 + LG.sigma2) * v
    k_fit = float(np.dot(x, spring) / np.dot(x, x))
    assert k_fit == pytest.approx(LG.sigma0, rel=2 * bound)
    assert np.max(np.abs(F)) < LG.Fc                           # no sliding: below breakaway


def test_hysteresis_loop_dissipates_between_coulomb_and_static_bounds():
    """A slow cycle of amplitude A ≫ Fc/σ0 slides almost everywhere: the work
    ∮F dx per cycle lies between 4 Fc A and 4 Fs A (plus the viscous part)."""
    A, w = 2e-3, 2 * math.pi * 0.5
    t = np.linspace(0.0, 2.0, 40001)                            # one period
    vel = lambda tt: A * w * math.cos(w * tt)
    z, F = LG.response(t, vel, z0=LG.steady_state(A * w))
    v = A * w * np.cos(w * t)
    work = np.trapezoid(F * v, t)                                # ∮ F dx
    visc = (LG.sigma2) * np.trapezoid(v * v, t)
    assert 4 * LG.Fc * A < work - visc < 4 * LG.Fs * A
    # friction lag: the force differs between the two passes through the same x
    x = A * np.sin(w * t)
    i1, i2 = np.argmin(np.abs(x[:10000] - 0.0)), 20000 + np.argmin(np.abs(x[20000:30000]))
    assert F[i1] * F[i2] < 0                                    # opposite signs: a loop


def test_lugre_jacobians_match_differences():
    h = 1e-9
    for z, v in [(1e-6, 0.003), (-5e-6, -0.02), (2e-6, 0.0004)]:
        dzdz, dzdv, dFdz, dFdv = LG.jacobians(z, v)
        assert dzdz == pytest.approx((LG.z_dot(z + h * 1e-3, v) - LG.z_dot(z - h * 1e-3, v))
                                     / (2e-3 * h), rel=1e-5)
        assert dzdv == pytest.approx((LG.z_dot(z, v + h) - LG.z_dot(z, v - h)) / (2 * h),
                                     rel=1e-5)
        assert dFdv == pytest.approx((LG.force(z, v + h) - LG.force(z, v - h)) / (2 * h),
                                     rel=1e-5)
        assert dFdz == pytest.approx(LG.sigma0 + LG.sigma1 * dzdz, rel=1e-14)
