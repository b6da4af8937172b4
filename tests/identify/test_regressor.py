"""The joint torque regressor τ = Y(q, v, a) π (kanedyn.identify.regressor).

Checked against inverse dynamics computed without it (``kd.rnea`` with the model's own
inertias: Y π + armature ⊙ a = τ) on chains, random trees of every joint type, fixed and
floating, and the Panda; the compiled kernel against the numpy reference, one state and
batched; and against Pinocchio's ``computeJointTorqueRegressor`` column by column (the
same parameter order and body frames), for random trees built joint by joint in both
libraries and the Panda loaded by each library's own URDF parser.

Tolerance 1e-10 relative to the largest entry (the computations differ by rounding only,
~1e-15 here).
"""

from __future__ import annotations

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import identify as ki
from kanedyn.identify.regressor import (
    body_regressor_reference,
    inertia_from_parameters,
    parameters_of_inertia,
)
from kanedyn.model import Revolute, robot_path
from kanedyn.spatial import crf

ALL_JOINTS = ("revolute", "prismatic", "helical", "spherical", "planar")
TREES = [(s, f) for s in range(4) for f in (False, True)]


def close(x, y, rel=1e-10):
    np.testing.assert_allclose(x, y, rtol=0, atol=rel * max(1.0, np.abs(y).max()))


def models():
    yield kd.models.pendulum_chain(4, planar=False)
    yield kd.models.pendulum_chain(3)
    yield kd.load_robot("panda")
    yield kd.load_robot("panda", floating_base=True)
    for s, f in TREES:
        yield kd.models.random_tree(7, seed=s, floating_base=f, joint_types=ALL_JOINTS)


MODELS = list(models())
IDS = [m.name + ("-floating" if m.bodies[0].joint.kind == "free" else "") for m in MODELS]


def states(model, rng, n):
    Q = np.array([kd.random_configuration(model, rng) for _ in range(n)])
    return Q, rng.normal(size=(n, model.nv)), rng.normal(size=(n, model.nv))


def test_every_joint_type_is_covered():
    kinds = {b.joint.kind for m in MODELS for b in m.bodies}
    assert kinds == set(ALL_JOINTS) | {"free"}


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_regressor_times_parameters_is_rnea(model):
    rng = np.random.default_rng(1)
    pi = ki.standard_parameters(model)
    Q, V, A = states(model, rng, 5)
    tau = kd.rnea(model, Q, V, A) - model.armature * A
    Y = ki.joint_torque_regressor(model, Q, V, A)
    assert Y.shape == (5, model.nv, 10 * model.nb)
    for k in range(5):
        close(Y[k] @ pi, tau[k])
        close(ki.joint_torque_regressor_reference(model, Q[k], V[k], A[k]) @ pi, tau[k])


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_compiled_equals_reference_alone_and_batched(model):
    rng = np.random.default_rng(2)
    Q, V, A = states(model, rng, 11)  # more than a batch task of one thread
    Yb = ki.joint_torque_regressor(model, Q, V, A)
    for k in range(11):
        Yr = ki.joint_torque_regressor_reference(model, Q[k], V[k], A[k])
        close(Yb[k], Yr)
        assert np.array_equal(ki.joint_torque_regressor(model, Q[k], V[k], A[k]), Yb[k])


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_world_formulation_is_the_definition(model):
    """The kernel's formulation in numpy (blocks and motion subspaces in world
    coordinates, one dot product per body and ancestor) equals the book's (blocks
    carried up by X_upᵀ), and the kernel equals it."""
    rng = np.random.default_rng(6)
    Q, V, A = states(model, rng, 3)
    for k in range(3):
        Yw = ki.regressor.joint_torque_regressor_world_reference(model, Q[k], V[k], A[k])
        close(Yw, ki.joint_torque_regressor_reference(model, Q[k], V[k], A[k]))
        close(ki.joint_torque_regressor(model, Q[k], V[k], A[k]), Yw)


@pytest.mark.parametrize("model", MODELS[:4], ids=IDS[:4])
def test_structural_zeros_are_exact(model):
    """Where the book's definition (blocks carried up in body coordinates, as Pinocchio)
    gives an exact 0 — a joint's own body's m and h along its axis, the first body's
    parameters of a fixed base — so does the kernel: base_parameters tells the
    unidentifiable parameters by them."""
    rng = np.random.default_rng(7)
    Q, V, A = states(model, rng, 5)
    Y = ki.joint_torque_regressor(model, Q, V, A)
    for k in range(5):
        Yr = ki.joint_torque_regressor_reference(model, Q[k], V[k], A[k])
        assert np.all(Y[k][Yr == 0.0] == 0.0)  # (the kernel has a few more: numpy's 6 × 6
        # products leave ~1e-17 where its (E, r) transforms give 0)


@pytest.mark.parametrize("model", [MODELS[2], MODELS[-1]], ids=[IDS[2], IDS[-1]])
def test_every_path_gives_the_same_bits(model):
    """One state through the C front end, the Python wrapper behind it (which runs the
    same kernel on the packed buffer: ``__wrapped__``), from another thread (its own
    buffer), into ``out=``, and in a batch: the same bits; and the readable reference to
    rounding."""
    import threading

    rng = np.random.default_rng(5)
    Q, V, A = states(model, rng, 3)
    Yb = ki.joint_torque_regressor(model, Q, V, A)
    wrapper = getattr(ki.joint_torque_regressor, "__wrapped__", ki.joint_torque_regressor)
    for k in range(3):
        Y = ki.joint_torque_regressor(model, Q[k], V[k], A[k])
        assert np.array_equal(Y, Yb[k])
        assert np.array_equal(wrapper(model, Q[k], V[k], A[k]), Y)
        out = np.full_like(Y, np.nan)
        assert ki.joint_torque_regressor(model, Q[k], V[k], A[k], out=out) is out
        assert np.array_equal(out, Y)
        out[:] = np.nan
        assert wrapper(model, Q[k], V[k], A[k], out=out) is out
        assert np.array_equal(out, Y)
        got = []
        t = threading.Thread(target=lambda got, x: got.append(
            ki.joint_torque_regressor(model, *x)), args=(got, (Q[k], V[k], A[k])))
        t.start()
        t.join()
        assert np.array_equal(got[0], Y)
        close(Y, ki.joint_torque_regressor_reference(model, Q[k], V[k], A[k]))


def test_bad_input_on_the_fast_paths_is_named():
    """What the single-state kernel refuses (a non-finite result, an out= of the wrong
    shape) reaches the general path, which names it."""
    model = kd.load_robot("panda")
    q, v, a = kd.neutral(model), np.zeros(model.nv), np.zeros(model.nv)
    a[3] = np.inf
    with pytest.raises(kd.StateError, match="a contains NaN or infinity"):
        ki.joint_torque_regressor(model, q, v, a)
    with pytest.raises(kd.StateError, match="out="):
        ki.joint_torque_regressor(model, q, v, np.zeros(model.nv), out=np.zeros((3, 3)))
    with pytest.raises(kd.StateError, match="out="):
        ki.joint_torque_regressor(model, q, v, np.zeros(model.nv),
                                  out=np.zeros((model.nv, 10 * model.nb), dtype=np.float32))


def test_armature_is_outside_the_regressor():
    model = kd.load_urdf(str(robot_path("panda")),
                         armature={n: 0.1 * (k + 1) for k, n in enumerate(
                             kd.load_robot("panda").joint_names)})
    assert np.all(model.armature > 0)
    rng = np.random.default_rng(3)
    Q, V, A = states(model, rng, 3)
    Y = ki.joint_torque_regressor(model, Q, V, A)
    close(np.einsum("kij,j->ki", Y, ki.standard_parameters(model)) + model.armature * A,
          kd.rnea(model, Q, V, A))


def test_body_regressor_is_the_newton_euler_force():
    """A(v, a) π = I(π) a + v ×* I(π) v for a random π (not a basis vector), and the
    closed form of the kernel equals the column-by-column definition."""
    rng = np.random.default_rng(4)
    for _ in range(5):
        vel, acc, pi = rng.normal(size=6), rng.normal(size=6), rng.normal(size=10)
        I = inertia_from_parameters(pi)
        close(body_regressor_reference(vel, acc) @ pi, I @ acc + crf(vel) @ I @ vel)
        assert np.array_equal(parameters_of_inertia(I), pi)


def test_parameters_are_pinocchios():
    """π_i of a body with mass m, centre of mass c and inertia I_c about it: h = m c and
    the rotational inertia about the body origin by the parallel-axis theorem, in the
    order m, h, xx, xy, yy, xz, yz, zz (computed by hand here)."""
    m, c = 2.0, np.array([0.1, 0.2, 0.3])
    Ic = np.array([[1.0, 0.01, 0.02], [0.01, 2.0, 0.03], [0.02, 0.03, 2.5]])
    b = kd.ModelBuilder("one")
    b.add_body("b", None, Revolute("j", axis=(0, 0, 1)), None, m, c, Ic)
    pi = ki.standard_parameters(b.build())
    Io = Ic + m * (c @ c * np.eye(3) - np.outer(c, c))
    close(pi, [m, *(m * c), Io[0, 0], Io[0, 1], Io[1, 1], Io[0, 2], Io[1, 2], Io[2, 2]])
    pin = pytest.importorskip("pinocchio")
    close(pi, pin.Inertia(m, c, Ic).toDynamicParameters())
    assert ki.parameter_names(b.build())[:2] == ["b.m", "b.mcx"]


def test_bad_input_is_named():
    model = kd.models.pendulum_chain(2)
    with pytest.raises(kd.StateError, match="v"):
        ki.joint_torque_regressor(model, [0.0, 0.0], [0.0], [0.0, 0.0])
    with pytest.raises(kd.StateError, match="batch sizes differ"):
        ki.joint_torque_regressor(model, np.zeros((3, 2)), np.zeros((2, 2)), np.zeros((3, 2)))
    with pytest.raises(kd.StateError):
        ki.joint_torque_regressor(model, [np.nan, 0.0], [0.0, 0.0], [0.0, 0.0])
    free = kd.models.free_body()
    with pytest.raises(kd.StateError, match="quaternion"):
        ki.joint_torque_regressor(free, [0, 0, 0, 2.0, 0, 0, 0], np.zeros(6), np.zeros(6))
    # the same through the single-state kernel (float64 arrays go there first)
    with pytest.raises(kd.StateError, match="quaternion"):
        ki.joint_torque_regressor(free, np.array([0, 0, 0, 2.0, 0, 0, 0]), np.zeros(6),
                                  np.zeros(6))
    with pytest.raises(kd.StateError, match="v"):
        ki.joint_torque_regressor(model, np.zeros(2), np.zeros(3), np.zeros(2))


def _compare_pinocchio(model, twin, rng):
    pin = pytest.importorskip("pinocchio")
    cols = np.concatenate([np.arange(10 * (j - 1), 10 * j) for j in twin.jid])
    for _ in range(3):
        q = kd.random_configuration(model, rng)
        v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
        Yp = pin.computeJointTorqueRegressor(twin.pmodel, twin.pdata, twin.to_pin_q(q),
                                             v[twin.iv], a[twin.iv]).copy()
        close(ki.joint_torque_regressor(model, q, v, a)[twin.iv], Yp[:, cols])


@pytest.mark.parametrize("seed, floating", TREES,
                         ids=[f"{s}-{'floating' if f else 'fixed'}" for s, f in TREES])
def test_random_trees_match_pinocchio(seed, floating, pin_twin):
    model = kd.models.random_tree(9, seed=seed, floating_base=floating, joint_types=ALL_JOINTS)
    _compare_pinocchio(model, pin_twin(model), np.random.default_rng(seed))


@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
def test_panda_matches_pinocchio(floating, pin_urdf_twin):
    model, twin = pin_urdf_twin("panda", floating)
    _compare_pinocchio(model, twin, np.random.default_rng(5))
