"""Feed-forward compensation: with the exact model, the open-loop feed-forward torque
reproduces the planned motion through the forward simulation (an independent check of
RNEA + F(v_d) against mass matrix, bias and event-driven friction)."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import FrictionError, friction

LAWS = {"joint1": friction.Stribeck(0.5, 0.8, 0.05, 2.0, 0.2),
        "joint2": friction.Stribeck(0.2, 0.3, 0.02, 1.0, 0.1)}


def plan(t):
    """Both joints keep moving forward (v_d > 0), so the friction branch is known."""
    q = np.stack([0.4 * t + 0.1 * np.sin(2 * t), 0.3 * t - 0.05 * np.cos(3 * t)], axis=-1)
    v = np.stack([0.4 + 0.2 * np.cos(2 * t), 0.3 + 0.15 * np.sin(3 * t)], axis=-1)
    a = np.stack([-0.4 * np.sin(2 * t), 0.45 * np.cos(3 * t)], axis=-1)
    return q, v, a


def test_feedforward_reproduces_the_plan_open_loop():
    model = kd.models.pendulum_chain(2)
    tau_ff = lambda t, q, v: friction.feedforward_torque(model, *plan(t), LAWS)
    q0, v0, _ = plan(0.0)
    tr = friction.simulate(model, q0, v0, 2.0, LAWS, tau=tau_ff, dt_out=0.1)
    qd, vd, _ = plan(tr.t)
    assert np.max(np.abs(tr.q - qd)) < 1e-6
    assert np.max(np.abs(tr.v - vd)) < 1e-6
    # without the friction term the same plan drifts visibly
    rigid = lambda t, q, v: np.asarray(kd.rnea(model, *plan(t)))
    tr2 = friction.simulate(model, q0, v0, 2.0, LAWS, tau=rigid, dt_out=0.1)
    assert np.max(np.abs(tr2.q - qd)) > 0.05


def test_friction_feedforward_values_and_bad_input():
    law = LAWS["joint1"]
    v = np.array([-0.3, 0.0, 0.2])
    np.testing.assert_array_equal(friction.friction_feedforward(law, v), law(v))
    smooth = friction.friction_feedforward(law, 1e-4, eps=1e-3)
    assert smooth == pytest.approx(float(law.smoothed("tanh", 1e-3)(1e-4)))
    with pytest.raises(FrictionError, match="not a static friction law"):
        friction.friction_feedforward(friction.LuGre(1e5, 1.0, 1.0, 1.5, 0.01), v)
    with pytest.raises(FrictionError, match="NaN"):
        friction.friction_feedforward(law, [np.nan])
