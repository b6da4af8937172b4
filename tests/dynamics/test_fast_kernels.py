"""The numba kernels behind kd.rnea / kd.crba / kd.aba against the readable reference.

The reference (kanedyn.dynamics.reference) builds 6x6 Plücker matrices and
multiplies them as in Featherstone's tables; the kernels never form a 6x6
transform and move inertias with the (E, r) formulas. Agreement to 1e-12
(relative) on random trees of every joint type is therefore a check of the
kernels' algebra, not an echo.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics import reference as ref
from kanedyn.dynamics.data import data_of
from kanedyn.dynamics.flat import _CACHE, HOT, flatten
from kanedyn.dynamics.layout import AXIS_ID, CHAIN

ALL_JOINTS = ("revolute", "prismatic", "helical", "spherical", "planar", "free")
RTOL = 1e-12


def close(x, y, rtol=RTOL):
    """|x - y| <= rtol * max(1, |y|_max): relative to the size of the result."""
    x, y = np.asarray(x), np.asarray(y)
    assert x.shape == y.shape
    scale = max(1.0, float(np.abs(y).max()))
    err = float(np.abs(x - y).max()) / scale
    assert err <= rtol, f"relative error {err:.2e} > {rtol:.0e}"


def random_state(model, rng):
    q = kd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    f_ext = rng.normal(size=(model.nb, 6))
    return q, v, a, f_ext


TREES = [(n, seed, fb, jt) for n, seed, fb, jt in
         [(1, s, False, ALL_JOINTS[:5]) for s in range(5)]
         + [(1, 0, True, ALL_JOINTS[:5])]
         + [(n, s, fb, ALL_JOINTS[:5]) for n in (4, 11) for s in range(6) for fb in (False, True)]
         + [(9, s, False, ALL_JOINTS) for s in range(4)]]  # free joints inside the tree


@pytest.mark.parametrize("n, seed, floating, joints", TREES)
def test_kernels_equal_reference_on_random_trees(n, seed, floating, joints):
    model = kd.models.random_tree(n, seed, floating_base=floating, joint_types=joints)
    rng = np.random.default_rng(100 + seed)
    for _ in range(2):
        q, v, a, f = random_state(model, rng)
        close(kd.rnea(model, q, v, a), ref.rnea(model, q, v, a))
        close(kd.rnea(model, q, v, a, f), ref.rnea(model, q, v, a, f))
        close(kd.nonlinear_effects(model, q, v), ref.rnea(model, q, v, np.zeros(model.nv)))
        close(kd.gravity_torques(model, q), ref.rnea(model, q, 0 * v, 0 * v))
        close(kd.crba(model, q), ref.crba(model, q))
        close(kd.aba(model, q, v, a), ref.aba(model, q, v, a))
        close(kd.aba(model, q, v, a, f), ref.aba(model, q, v, a, f))


def test_every_joint_type_is_exercised():
    kinds = set()
    for n, seed, floating, joints in TREES:
        m = kd.models.random_tree(n, seed, floating_base=floating, joint_types=joints)
        kinds |= {b.joint.kind for b in m.bodies}
        kinds |= {f"{b.joint.kind}-child" for b in m.bodies if b.parent >= 0}
    for k in ALL_JOINTS:
        assert k in kinds
        assert f"{k}-child" in kinds  # also below another body, not only at the root


def test_other_gravity_and_slightly_nonunit_quaternion():
    """Another gravity vector, and a root quaternion of norm 1 + 5e-5 (within the
    tolerance; both paths normalise it) give the reference's results."""
    model = kd.models.random_tree(6, 3, floating_base=True).with_gravity((1.0, -2.0, 3.0))
    rng = np.random.default_rng(7)
    q, v, a, f = random_state(model, rng)
    qn = q.copy()
    q[3:7] *= 1.0 + 5e-5
    close(kd.rnea(model, q, v, a, f), ref.rnea(model, qn, v, a, f))
    close(kd.crba(model, q), ref.crba(model, qn))
    close(kd.aba(model, q, v, a, f), ref.aba(model, qn, v, a, f))


@pytest.mark.parametrize("robot, floating", [("panda", False), ("ur5", False), ("chain20", False),
                                             ("humanoid", True), ("quadruped", True)])
def test_kernels_equal_reference_on_robots(robot, floating):
    """The shipped robot descriptions. ABA gets 1e-11: the kernel works in world
    coordinates (faster), where the articulated inertia of a light distal body (a
    wrist) is a small difference of terms of size m |p|²; on chain20 and ur5 that
    costs about two digits against the body-frame reference (measured 4e-12)."""
    from kanedyn.model.urdf import robot_path

    model = kd.load_urdf(str(robot_path(robot)), floating_base=floating)
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, v, a, f = random_state(model, rng)
        close(kd.rnea(model, q, v, a, f), ref.rnea(model, q, v, a, f))
        close(kd.crba(model, q), ref.crba(model, q))
        close(kd.aba(model, q, v, a, f), ref.aba(model, q, v, a, f), rtol=1e-11)


def test_batch_equals_single_states():
    model = kd.models.random_tree(7, 2, floating_base=True, joint_types=ALL_JOINTS)
    rng = np.random.default_rng(3)
    N = 9
    S = [random_state(model, rng) for _ in range(N)]
    Q, V, A, F = (np.array([s[k] for s in S]) for k in range(4))
    tau = kd.rnea(model, Q, V, A)
    tau_f = kd.rnea(model, Q, V, A, F)
    M = kd.crba(model, Q)
    qdd = kd.aba(model, Q, V, A)
    qdd_f = kd.aba(model, Q, V, A, F)
    h = kd.nonlinear_effects(model, Q, V)
    g = kd.gravity_torques(model, Q)
    assert tau.shape == (N, model.nv) and M.shape == (N, model.nv, model.nv)
    for k in range(N):
        # the same kernel on the same numbers: equal to the last bit
        np.testing.assert_array_equal(tau[k], kd.rnea(model, Q[k], V[k], A[k]))
        np.testing.assert_array_equal(tau_f[k], kd.rnea(model, Q[k], V[k], A[k], F[k]))
        np.testing.assert_array_equal(M[k], kd.crba(model, Q[k]))
        np.testing.assert_array_equal(qdd[k], kd.aba(model, Q[k], V[k], A[k]))
        np.testing.assert_array_equal(qdd_f[k], kd.aba(model, Q[k], V[k], A[k], F[k]))
        np.testing.assert_array_equal(h[k], kd.nonlinear_effects(model, Q[k], V[k]))
        np.testing.assert_array_equal(g[k], kd.gravity_torques(model, Q[k]))
        close(tau_f[k], ref.rnea(model, Q[k], V[k], A[k], F[k]))
        close(qdd_f[k], ref.aba(model, Q[k], V[k], A[k], F[k]))


def test_single_state_broadcasts_against_a_batch():
    model = kd.models.random_tree(5, 4)
    rng = np.random.default_rng(4)
    q, v, a, f = random_state(model, rng)
    V = rng.normal(size=(3, model.nv))
    tau = kd.rnea(model, q, V, a, f)  # one q, a and f_ext; three v
    for k in range(3):
        np.testing.assert_array_equal(tau[k], kd.rnea(model, q, V[k], a, f))


def test_inputs_of_other_types_take_the_general_path():
    model = kd.models.pendulum_chain(3, planar=False)
    q, v, a = np.array([0.1, -0.2, 0.3]), np.array([1.0, 0.5, -0.5]), np.array([0.0, 1.0, 2.0])
    tau = kd.rnea(model, q, v, a)
    close(kd.rnea(model, list(q), tuple(v), a.astype(np.float32).astype(float)), tau)
    close(kd.rnea(model, q, v, np.array([0, 1, 2])), tau)  # integer array
    Z = np.zeros((3, 2))
    Z[:, 0] = v
    close(kd.rnea(model, q, Z[:, 0], a), tau)  # non-contiguous view
    close(kd.aba(model, [0.1, -0.2, 0.3], v, tau), a)
    close(kd.crba(model, q.tolist()), ref.crba(model, q))


def test_what_the_unchecked_entry_points_are_not_given():
    """The single-state kernels are called past numba's type check (kernels.entry),
    trusting the wrappers' ndim/dtype checks: 8-byte items that are not float64
    (int64, big-endian float64), strided and reversed views, read-only arrays, a
    2-D speed next to a 1-D q, and out= arrays that cannot take the result must
    give the float64 results or a StateError — never reinterpreted bits or a crash."""
    model = kd.models.random_tree(4, 2, floating_base=True)
    rng = np.random.default_rng(12)
    q, v, a, f = random_state(model, rng)
    tau, M, qdd = kd.rnea(model, q, v, a, f), kd.crba(model, q), kd.aba(model, q, v, a, f)
    big_endian = q.astype(">f8")
    close(kd.crba(model, big_endian), M)
    close(kd.rnea(model, big_endian, v, a, f), tau)
    ai = np.round(a).astype(np.int64)
    close(kd.rnea(model, q, v, ai), kd.rnea(model, q, v, ai.astype(float)))
    close(kd.aba(model, q, v, a, f.astype(">f8")), qdd)
    close(kd.rnea(model, q, v, a, np.round(f).astype(np.int64)),
          kd.rnea(model, q, v, a, np.round(f)))
    rev = np.ascontiguousarray(q[::-1])[::-1]  # the same values, stride -8
    strided = np.repeat(v, 2)[::2]
    close(kd.rnea(model, rev, strided, a, f), tau)
    close(kd.crba(model, rev), M)
    close(kd.aba(model, rev, strided, a, f), qdd)
    ro = q.copy()
    ro.flags.writeable = False
    close(kd.crba(model, ro), M)
    close(kd.rnea(model, q, v[None, :], a), kd.rnea(model, q, v, a)[None, :])
    close(kd.aba(model, q, v, a[None, :], f), qdd[None, :])
    col = np.zeros((model.nv, 3))
    assert kd.rnea(model, q, v, a, f, out=col[:, 1]) is not None
    close(col[:, 1], tau)
    Mt = np.zeros((model.nv, model.nv)).T  # Fortran order
    kd.crba(model, q, out=Mt)
    close(Mt, M)
    locked = np.empty(model.nv)
    locked.flags.writeable = False
    with pytest.raises(kd.StateError, match="out"):
        kd.rnea(model, q, v, a, out=locked)
    with pytest.raises(kd.StateError, match="out"):
        kd.aba(model, q, v, a, out=np.empty(model.nv, dtype=np.int64))


@pytest.mark.parametrize("call", ["rnea", "aba", "crba", "nle", "gravity"])
def test_bad_input_raises_state_error(call):
    model = kd.models.random_tree(4, 0, floating_base=True)
    rng = np.random.default_rng(0)
    q, v, a, f = random_state(model, rng)
    fn = {
        "rnea": lambda q, v: kd.rnea(model, q, v, a),
        "aba": lambda q, v: kd.aba(model, q, v, a),
        "crba": lambda q, v: kd.crba(model, q),
        "nle": lambda q, v: kd.nonlinear_effects(model, q, v),
        "gravity": lambda q, v: kd.gravity_torques(model, q),
    }[call]
    with pytest.raises(kd.StateError, match="q has"):
        fn(q[:-1], v)
    bad = q.copy()
    bad[3:7] *= 1.01
    with pytest.raises(kd.StateError, match="joint0"):
        fn(bad, v)
    Qb = np.array([q, bad, q])
    with pytest.raises(kd.StateError, match="joint0"):
        fn(Qb, np.array([v, v, v]))
    nan_q = q.copy()
    nan_q[-1] = np.nan
    with pytest.raises(kd.StateError, match="NaN"):
        fn(nan_q, v)
    if call not in ("crba", "gravity"):
        with pytest.raises(kd.StateError, match="v has"):
            fn(q, v[:-1])
        nan_v = v.copy()
        nan_v[0] = np.inf
        with pytest.raises(kd.StateError, match="NaN or infinity"):
            fn(q, nan_v)
    # not numbers, or not an array: named, never numpy's ValueError or TypeError
    with pytest.raises(kd.StateError, match="q must hold real numbers; got strings"):
        fn([str(x) for x in q], v)
    with pytest.raises(kd.StateError, match="q must hold real numbers; got complex"):
        fn(q + 1e-3j, v)
    with pytest.raises(kd.StateError, match="rows differ in length"):
        fn([list(q), list(q[:-1])], np.array([v, v]))
    as_objects = np.array(list(q), dtype=object)
    assert np.array_equal(fn(as_objects, v), fn(q, v))  # numbers held as objects are numbers


def test_bad_external_forces():
    model = kd.models.random_tree(3, 1)
    q, v, a, f = random_state(model, np.random.default_rng(0))
    with pytest.raises(kd.StateError, match="f_ext"):
        kd.rnea(model, q, v, a, f[:-1])
    with pytest.raises(kd.StateError, match="f_ext"):
        kd.aba(model, q, v, a, f.T.copy())
    f[1, 2] = np.nan
    with pytest.raises(kd.StateError, match="f_ext"):
        kd.rnea(model, q, v, a, f)


def test_flat_model_is_cached_and_dropped_with_the_model():
    model = kd.models.random_tree(5, 9, floating_base=True)
    inertia_before = [b.inertia.copy() for b in model.bodies]
    fm = flatten(model)
    assert flatten(model) is fm
    assert (fm.nb, fm.nq, fm.nv) == (model.nb, model.nq, model.nv)
    assert fm.data.flags.c_contiguous and fm.data.dtype == np.float64
    q, v, a, _ = random_state(model, np.random.default_rng(0))
    kd.rnea(model, q, v, a)
    for b, I in zip(model.bodies, inertia_before, strict=True):  # the model is not touched
        np.testing.assert_array_equal(b.inertia, I)
    key = id(model)
    # the hot buffer is the calling thread's Data's copy; the Model's is a read-only template
    assert key in _CACHE and getattr(model, HOT)[0] is data_of(model, None).buf
    assert getattr(model, HOT)[0] is not fm.buf and not fm.buf.flags.writeable
    del model
    gc.collect()
    assert key not in _CACHE


@pytest.mark.parametrize("how", ["deepcopy", "pickle", "copy"])
def test_a_copied_model_gets_its_own_flat_form(how):
    """The per-model cache kept on the Model is not carried by a deep copy or a pickle
    (the copy is flattened anew and gives the same bits); a shallow copy shares it."""
    import copy
    import pickle

    model = kd.models.random_tree(6, 4, floating_base=True)
    q, v, a, _ = random_state(model, np.random.default_rng(1))
    M, tau = kd.crba(model, q), kd.rnea(model, q, v, a)
    other = {"deepcopy": copy.deepcopy, "copy": copy.copy,
             "pickle": lambda m: pickle.loads(pickle.dumps(m))}[how](model)
    if how == "copy":
        assert getattr(other, HOT)[0] is getattr(model, HOT)[0]
    else:
        assert len(getattr(other, HOT)) == 0  # not carried: flattened on first use
    np.testing.assert_array_equal(kd.crba(other, q), M)
    np.testing.assert_array_equal(kd.rnea(other, q, v, a), tau)
    np.testing.assert_array_equal(kd.aba(other, q, v, tau), kd.aba(model, q, v, tau))
    if how != "copy":
        assert getattr(other, HOT)[0] is data_of(other, None).buf


def test_revolute_joints_about_unit_axes():
    """Joints about the unit x, y, z axes take a shortcut in the kernel; they must give
    what a general axis gives (the reference does not distinguish them)."""
    from kanedyn.model.joints import Revolute
    from kanedyn.spatial import quat_to_matrix

    rng = np.random.default_rng(5)
    b = kd.ModelBuilder("unit_axes")
    parent = None
    for i, axis in enumerate([(1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 0, 1), (0, 1, 0), (1, 0, 0)]):
        x = rng.normal(size=4)
        placement = (quat_to_matrix(x / np.linalg.norm(x)), rng.uniform(-0.5, 0.5, 3))
        parent = b.add_body(f"l{i}", parent, Revolute(f"j{i}", axis=axis), placement,
                            1.0 + i, rng.uniform(-0.2, 0.2, 3), np.diag([0.1, 0.2, 0.25]))
    model = b.build()
    assert list(flatten(model).data[:-1, AXIS_ID]) == [0, 1, 2, 2, 1, 0]  # shortcut taken
    q, v, a, f = random_state(model, rng)
    close(kd.rnea(model, q, v, a, f), ref.rnea(model, q, v, a, f))
    close(kd.crba(model, q), ref.crba(model, q))
    close(kd.aba(model, q, v, a, f), ref.aba(model, q, v, a, f))


@pytest.mark.parametrize("branched", [False, True])
def test_unit_axes_without_tree_rotation(branched):
    """Joints about x, y, z whose tree transform has no rotation (URDF joints without
    rpy), on a chain (CRBA then skips the zeroing of M: every entry is written) and on
    a branched tree, against the reference."""
    from kanedyn.model.joints import Revolute

    rng = np.random.default_rng(8)
    b = kd.ModelBuilder("unit_axes_no_rpy")
    parents = [None, 0, 1, 2, 3, 4] if not branched else [None, 0, 1, 1, 3, 0]
    axes = [(1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 0, 1), (0, 1, 0), (1, 0, 0)]
    for i, (par, axis) in enumerate(zip(parents, axes, strict=True)):
        ci = rng.uniform(-0.2, 0.2, 3)
        Ic = np.diag([0.1, 0.2, 0.25]) + 0.01 * np.ones((3, 3))
        b.add_body(f"l{i}", None if par is None else f"l{par}", Revolute(f"j{i}", axis=axis),
                   (np.eye(3), rng.uniform(-0.5, 0.5, 3)), 1.0 + i, ci, Ic)
    model = b.build()
    data = flatten(model).data
    assert list(data[:-1, AXIS_ID]) == [0, 1, 2, 2, 1, 0]  # shortcut taken
    assert data[-1, CHAIN] == (0.0 if branched else 1.0)
    for _ in range(3):
        q, v, a, f = random_state(model, rng)
        close(kd.crba(model, q), ref.crba(model, q))
        M = np.full((model.nv, model.nv), np.nan)  # every entry written, zeros included
        close(kd.crba(model, q, out=M), ref.crba(model, q))
        close(kd.rnea(model, q, v, a, f), ref.rnea(model, q, v, a, f))
        close(kd.aba(model, q, v, a, f), ref.aba(model, q, v, a, f))


def test_out_argument():
    model = kd.models.random_tree(5, 6, floating_base=True)
    rng = np.random.default_rng(6)
    q, v, a, f = random_state(model, rng)
    tau = np.empty(model.nv)
    assert kd.rnea(model, q, v, a, f, out=tau) is tau
    np.testing.assert_array_equal(tau, kd.rnea(model, q, v, a, f))
    M = np.empty((model.nv, model.nv))
    assert kd.crba(model, q, out=M) is M
    np.testing.assert_array_equal(M, kd.crba(model, q))
    qdd = np.empty(model.nv)
    assert kd.aba(model, q, v, a, out=qdd) is qdd
    np.testing.assert_array_equal(qdd, kd.aba(model, q, v, a))
    h = np.empty(model.nv)
    assert kd.nonlinear_effects(model, q, v, out=h) is h
    np.testing.assert_array_equal(h, kd.nonlinear_effects(model, q, v))
    g = np.empty(model.nv)
    assert kd.gravity_torques(model, q, out=g) is g
    np.testing.assert_array_equal(g, kd.gravity_torques(model, q))
    Q, V, A = np.array([q, q]), np.array([v, -v]), np.array([a, a])
    T = np.empty((2, model.nv))
    assert kd.rnea(model, Q, V, A, out=T) is T
    np.testing.assert_array_equal(T[1], kd.rnea(model, q, -v, a))
    with pytest.raises(kd.StateError, match="out"):
        kd.rnea(model, q, v, a, out=np.empty(model.nv + 1))
    with pytest.raises(kd.StateError, match="out"):
        kd.rnea(model, Q, V, A, out=np.empty(model.nv))
    with pytest.raises(kd.StateError, match="out"):
        kd.crba(model, q, out=np.empty((model.nv, model.nv), dtype=np.float32))


def test_batched_out_is_written_in_place_unless_it_overlaps_an_input():
    """A batch's ``out=`` of the right kind is the kernel's own output (no copy); one that
    overlaps an input (here: out is the acceleration array) still gives the right result."""
    model = kd.models.random_tree(5, 7, floating_base=True)
    rng = np.random.default_rng(7)
    states = [random_state(model, rng) for _ in range(3)]
    Q = np.array([s[0] for s in states])
    V = np.array([s[1] for s in states])
    A = np.array([s[2] for s in states])
    expect_tau = np.array([kd.rnea(model, *s[:3]) for s in states])
    expect_qdd = np.array([kd.aba(model, *s[:3]) for s in states])
    expect_M = np.array([kd.crba(model, s[0]) for s in states])
    T, Qdd, M = np.full_like(V, np.nan), np.full_like(V, np.nan), np.full_like(expect_M, np.nan)
    assert kd.rnea(model, Q, V, A, out=T) is T
    assert kd.aba(model, Q, V, A, out=Qdd) is Qdd
    assert kd.crba(model, Q, out=M) is M
    close(T, expect_tau)
    close(Qdd, expect_qdd)
    close(M, expect_M)
    A2 = A.copy()
    assert kd.rnea(model, Q, V, A2, out=A2) is A2  # out aliases a: computed apart, then copied
    close(A2, expect_tau)


def telescope():
    """A turning base with an arm sliding out along x: M and τ grow as the slide²."""
    from kanedyn.model.joints import Prismatic, Revolute

    b = kd.ModelBuilder("telescope")
    b.add_body("base", None, Revolute("turn", axis=(0, 0, 1)), None, 1.0, (0.1, 0, 0),
               np.diag([0.1, 0.1, 0.1]))
    b.add_body("arm", "base", Prismatic("extend", axis=(1, 0, 0)), None, 1.0, (0, 0, 0),
               np.diag([0.1, 0.1, 0.1]))
    return b.build()


def test_overflow_is_an_error_not_a_silent_inf():
    """A finite but absurd state (an arm extended 1e160 m) overflows M and τ; the kernels
    report it instead of returning inf."""
    model = telescope()
    q, v = np.array([0.3, 1e160]), np.array([1.0, 0.0])
    with pytest.raises(kd.StateError, match="not finite"):
        kd.crba(model, q)
    with pytest.raises(kd.StateError, match="not finite"):
        kd.rnea(model, q, v, np.array([1.0, 0.0]))  # m p² q̈ overflows
    with pytest.raises(kd.StateError, match="not finite"):
        kd.crba(model, np.array([q, q]))


@pytest.mark.parametrize("call", ["rnea", "crba", "aba"])
def test_an_overflowing_state_is_named_and_its_block_computed(call):
    """One state of a batch overflows: the error names it, and without it the batch
    (its lane block included) comes out finite: the lane kernels keep a status per
    state."""
    model = telescope()
    Q = np.tile([0.3, 0.5], (20, 1))
    V = np.tile([1.0, 0.0], (20, 1))
    A = np.tile([1.0, 0.0], (20, 1))
    Q[13, 1] = 1e160
    f = {"rnea": lambda q: kd.rnea(model, q, V[: len(q)], A[: len(q)]),
         "crba": lambda q: kd.crba(model, q),
         "aba": lambda q: kd.aba(model, q, V[: len(q)], np.tile([1e300, 1e300], (len(q), 1)))}[call]
    with pytest.raises(kd.StateError, match="state 13 of the batch"):
        f(Q)
    Q[13, 1] = 0.5
    good = f(Q)
    assert np.all(np.isfinite(good))


def test_public_functions_do_not_use_the_reference(monkeypatch):
    """The kernels are the default path: with every reference algorithm made to fail,
    the public functions still answer, one state and batched."""
    model = kd.models.random_tree(4, 8, floating_base=True)
    q, v, a, f = random_state(model, np.random.default_rng(8))

    def boom(*args, **kwargs):
        raise AssertionError("the reference implementation was called")

    for name in ("rnea", "crba", "aba", "body_placements", "body_velocities", "kinetic_energy",
                 "potential_energy", "spatial_momentum", "jacobian_local", "joint_transforms"):
        monkeypatch.setattr(ref, name, boom)
    Q, V, A = np.array([q, q]), np.array([v, v]), np.array([a, a])
    for x, y, z in ((q, v, a), (Q, V, A)):
        kd.rnea(model, x, y, z, f)
        kd.crba(model, x)
        kd.aba(model, x, y, z, f)
        kd.nonlinear_effects(model, x, y)
        kd.gravity_torques(model, x)
        kd.kinetic_energy(model, x, y)
        kd.potential_energy(model, x)
        kd.spatial_momentum(model, x, y)
        kd.center_of_mass(model, x)
        kd.forward_kinematics(model, x, y)
        kd.jacobian(model, x, 2, "world")


def test_external_force_convention_on_a_free_body():
    """Independent of the reference: a free body (com at its origin, no gravity) at rest,
    pushed by f_ext = [n; f] given in body coordinates, accelerates with ω̇ = I⁻¹ n and
    v̇ = f / m in body coordinates, whatever its orientation; and RNEA with zero
    acceleration returns the joint force that cancels the push, τ = -[n; f]."""
    I = np.diag([0.1, 0.2, 0.3])
    model = kd.models.free_body(mass=2.0, inertia=np.diag(I), gravity=(0, 0, 0))
    q = kd.neutral(model)
    x = np.array([0.3, -0.5, 0.2, 0.8])
    q[3:7] = x / np.linalg.norm(x)
    wrench = np.array([[0.4, -0.1, 0.25, 1.0, -2.0, 0.5]])
    qdd = kd.aba(model, q, np.zeros(6), np.zeros(6), wrench)
    close(qdd[:3], np.linalg.solve(I, wrench[0, :3]))
    close(qdd[3:], wrench[0, 3:] / 2.0)
    close(kd.rnea(model, q, np.zeros(6), np.zeros(6), wrench), -wrench[0])


def test_vectorised_sincos_agrees_with_libm():
    """kernels.sincos (CRBA's joint angles, a polynomial the compiler vectorises) against
    numpy's libm: within 2 ulp of the larger of |cos|, |sin| (the absolute error of a
    rotation entry), over small and wide angles up to SINCOS_BIG, quadrant boundaries,
    signed zeros; CRBA takes libm beyond SINCOS_BIG and for NaN (checked on a robot
    with a huge and a NaN angle)."""
    from kanedyn.dynamics.kernels import SINCOS_BIG, SINCOS_MIN, sincos
    from kanedyn.model.urdf import robot_path

    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(-4, 4, 20000), rng.uniform(-1e-6, 1e-6, 1000),
                        rng.uniform(-SINCOS_BIG, SINCOS_BIG, 20000),
                        np.arange(-40, 41) * np.pi / 4, [0.0, -0.0, SINCOS_BIG, -SINCOS_BIG]])
    c, s = np.empty_like(x), np.empty_like(x)
    sincos(x, c, s)
    err = np.maximum(np.abs(c - np.cos(x)), np.abs(s - np.sin(x)))
    assert (err <= 2 * np.spacing(1.0)).all(), err.max()

    model = kd.load_urdf(str(robot_path("humanoid")), floating_base=True)
    assert model.nb >= SINCOS_MIN
    q = kd.random_configuration(model, rng)
    q[7], q[8] = 3e7, -2 * SINCOS_BIG  # two revolute joints beyond the polynomial's range
    close(kd.crba(model, q), ref.crba(model, q))
    q[9] = np.nan
    with pytest.raises(kd.StateError):
        kd.crba(model, q)
