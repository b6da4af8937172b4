"""A quaternion moved by the exponential map stays unit norm to machine precision."""

import numba as nb
import numpy as np

import kanedyn as kd
from kanedyn.dynamics.flat import flatten
from kanedyn.sim.configuration_kernel import integrate_into


@nb.njit(cache=True)
def _many_steps(data, q, v, dt, n):
    out = np.empty_like(q)
    worst = 0.0
    for _ in range(n):
        integrate_into(data, q, v, dt, out)
        q[:] = out
        # a tumbling body: the speed changes with the orientation
        v[0], v[1], v[2] = 1.3 + q[1], -0.7 + 2.0 * q[2], 2.1 - q[3]
        nrm = np.sqrt(q[0] ** 2 + q[1] ** 2 + q[2] ** 2 + q[3] ** 2)
        worst = max(worst, abs(nrm - 1.0))
    return worst


def test_unit_norm_over_a_million_steps():
    """10⁶ steps of ModelSystem's compiled q ⊕ v dt on a ball joint (the same function
    ``ModelSystem.integrate_configuration`` calls, here driven from a compiled loop)."""
    m = kd.models.pendulum_chain(1, planar=False, joint="spherical")
    s = kd.ModelSystem(m)
    assert s._data is flatten(m).data  # the flat array ModelSystem's map reads
    q = kd.random_configuration(m, 1)
    v = np.array([1.3, -0.7, 2.1])
    worst = _many_steps(s._data, q, v, 1e-3, 1_000_000)
    assert worst <= 4 * np.finfo(float).eps


def test_compiled_loop_is_the_library_path():
    m = kd.models.pendulum_chain(1, planar=False, joint="spherical")
    s = kd.ModelSystem(m)
    q0 = kd.random_configuration(m, 2)
    qa, va = q0.copy(), np.array([1.3, -0.7, 2.1])
    _many_steps(s._data, qa, va, 1e-3, 1000)
    qb, vb = q0.copy(), np.array([1.3, -0.7, 2.1])
    for _ in range(1000):
        qb = kd.integrate_configuration(m, qb, vb, 1e-3)  # the public, uncompiled map
        vb = np.array([1.3 + qb[1], -0.7 + 2.0 * qb[2], 2.1 - qb[3]])
    np.testing.assert_allclose(qa, qb, atol=1e-13)


def test_free_body_simulation_keeps_unit_quaternion():
    m = kd.models.free_body(inertia=(0.1, 0.2, 0.3))
    tr = kd.simulate(m, kd.neutral(m), [3.0, 1.0, -2.0, 0.1, 0.0, 0.0], 2.0, method="rk4",
                     dt=1e-3)
    assert np.abs(np.linalg.norm(tr.q[:, 3:], axis=1) - 1).max() <= 4 * np.finfo(float).eps
