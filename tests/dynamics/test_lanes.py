"""The batched kernels' lane blocks (several states at once, kernels.rnea_lanes,
crba_lanes, aba_lanes) against the per-state kernels: the same arithmetic, so the
same bits, for every state of a batch whatever its place in a block of LANES; and
the fallbacks (joints whose S is not a unit vector, far angles, large trees) where they
apply. (An overflowing state in a block: test_fast_kernels.)"""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics import kernels as K
from kanedyn.dynamics.flat import flatten
from kanedyn.model.urdf import robot_path

ALL_JOINTS = ("revolute", "prismatic", "helical", "spherical", "planar", "free")
ONE_SPEED = ("revolute", "prismatic", "helical")
# 45 states: one task of 32 (four full blocks), one of 13 (a full block and one of 5)
N = 45


def batch_and_singles(model, rng, Q=None):
    if Q is None:
        Q = np.array([kd.random_configuration(model, rng) for _ in range(N)])
    n = Q.shape[0]
    V, A = rng.normal(size=(2, n, model.nv))
    F = rng.normal(size=(n, len(model.bodies), 6))
    calls = {
        "rnea": (lambda k: kd.rnea(model, *(x[k] for x in (Q, V, A)))),
        "rnea f_ext": (lambda k: kd.rnea(model, *(x[k] for x in (Q, V, A, F)))),
        "nle": (lambda k: kd.nonlinear_effects(model, Q[k], V[k])),
        "gravity": (lambda k: kd.gravity_torques(model, Q[k])),
        "crba": (lambda k: kd.crba(model, Q[k])),
        "aba": (lambda k: kd.aba(model, *(x[k] for x in (Q, V, A)))),
        "aba f_ext": (lambda k: kd.aba(model, *(x[k] for x in (Q, V, A, F)))),
    }
    for name, call in calls.items():
        batch = call(slice(None))
        for k in range(n):
            # the same arithmetic on the same numbers: equal to the last bit
            np.testing.assert_array_equal(batch[k], call(k), err_msg=f"{name}, state {k}")


@pytest.mark.parametrize("seed", [0, 1])
def test_one_speed_trees_take_every_lane_kernel(seed):
    model = kd.models.random_tree(12, seed, floating_base=True, joint_types=ONE_SPEED)
    data = flatten(model).data
    assert data.shape[0] - 1 <= K.ABA_LANE_BODIES and K.aba_lanes_fit(data)
    batch_and_singles(model, np.random.default_rng(seed))


def test_every_joint_type_through_the_lane_fallbacks():
    """Spherical, planar and inner free joints go lane by lane through the scalar
    helpers in RNEA and CRBA; ABA keeps such trees per state."""
    model = kd.models.random_tree(14, 5, floating_base=True, joint_types=ALL_JOINTS)
    assert not K.aba_lanes_fit(flatten(model).data)
    batch_and_singles(model, np.random.default_rng(5))


def test_trees_beyond_the_lane_blocks_stay_per_state():
    model = kd.models.pendulum_chain(K.LANE_BODIES + 6, planar=False)
    assert len(model.bodies) > K.LANE_BODIES
    rng = np.random.default_rng(2)
    Q = np.array([kd.random_configuration(model, rng) for _ in range(11)])
    batch_and_singles(model, rng, Q)


def test_far_angles_take_libm_in_their_lane_only():
    """CRBA's vectorised sin/cos serves |angle| <= SINCOS_BIG; a lane beyond (or NaN
    excluded) takes libm, as the single-state kernel does for that joint."""
    model = kd.load_urdf(str(robot_path("humanoid")))
    rng = np.random.default_rng(3)
    Q = np.array([kd.random_configuration(model, rng) for _ in range(N)])
    Q[3, 5] = 3.0 * K.SINCOS_BIG
    Q[10, 0] = -7.5 * K.SINCOS_BIG
    M = kd.crba(model, Q)
    for k in range(N):
        np.testing.assert_array_equal(M[k], kd.crba(model, Q[k]))


def test_stack_blocks_hold_their_shape_and_do_not_overlap():
    """The lane kernels' blocks (kernels.stack_array): C-ordered, sized by their shape,
    each apart from the others (a block too small for its shape once let a CRBA block
    run into its neighbours)."""
    from numba import njit

    stack_array = K.stack_array

    @njit
    def number(x, v):
        f = x.reshape(x.size)
        for k in range(x.size):
            f[k] = v + k

    @njit
    def fill():
        a = stack_array((3, 8))
        b = stack_array((2, 5, 8))
        c = stack_array((8,))
        number(a, 1000.0)
        number(b, 2000.0)
        number(c, 3000.0)
        return a.copy(), b.copy(), c.copy()

    a, b, c = fill()
    for x, v, shape in ((a, 1000.0, (3, 8)), (b, 2000.0, (2, 5, 8)), (c, 3000.0, (8,))):
        assert x.shape == shape and x.flags.c_contiguous
        np.testing.assert_array_equal(x.ravel(), v + np.arange(x.size))
