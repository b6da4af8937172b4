"""Centroidal momentum: A_G, h_G = A_G v and Ȧ_G v.

Checked three ways: against Pinocchio (``ccrba``, ``computeCentroidalMomentumTimeVariation``,
``dccrba``) on the shipped robots (Pinocchio's own URDF parser) and on random trees of
every joint type built joint by joint in both libraries; against physics computed
independently of both (m ċ from a finite difference of ``kd.center_of_mass``, the angular
momentum about the centre of mass summed body by body from ``kd.forward_kinematics``, Ȧ_G v
as a finite difference of A_G along the motion); and the numba kernels against the numpy
references of :mod:`kanedyn.dynamics.centroidal`, one state and batched.

Tolerances: 1e-10 relative to the largest entry for the peers and the references (the
computations differ only by rounding, ~1e-14 here); the finite differences are fourth-order
central differences with step 1e-3 (truncation ~1e-12, rounding ~1e-13 of the scale),
held to 1e-8.
"""

from __future__ import annotations

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics import centroidal as cen
from kanedyn.model.urdf import ROBOTS
from kanedyn.spatial import inertia_parameters

SWAP = np.array([3, 4, 5, 0, 1, 2])  # [lin; ang] <-> [ang; lin]
ALL_JOINTS = ("revolute", "prismatic", "helical", "spherical", "planar")
ROBOT_CASES = [(n, f) for n in ROBOTS for f in (False, True)]
TREE_CASES = [(s, f) for s in range(4) for f in (False, True)]


def close(x, y, rel=1e-10):
    np.testing.assert_allclose(x, y, rtol=0, atol=rel * max(1.0, np.abs(y).max()))


def _compare_pinocchio(model, twin, rng, n=3):
    pin = pytest.importorskip("pinocchio")
    pm, pd, iv = twin.pmodel, twin.pdata, twin.iv
    for _ in range(n):
        q = kd.random_configuration(model, rng)
        v = rng.normal(size=model.nv)
        qp, vp = twin.to_pin_q(q), v[iv]
        Ag_p = pin.ccrba(pm, pd, qp, vp).copy()
        hg_p = pd.hg.vector.copy()
        A = kd.centroidal_momentum_matrix(model, q)
        close(A[SWAP][:, iv], Ag_p)
        close(kd.centroidal_momentum(model, q, v)[SWAP], hg_p)
        dhg_p = pin.computeCentroidalMomentumTimeVariation(pm, pd, qp, vp,
                                                            np.zeros(model.nv)).vector.copy()
        b = kd.centroidal_momentum_bias(model, q, v)
        close(b[SWAP], dhg_p)
        pin.dccrba(pm, pd, qp, vp)
        close(b[SWAP], pd.dAg @ vp)


@pytest.mark.parametrize("name, floating", ROBOT_CASES,
                         ids=[f"{n}-{'floating' if f else 'fixed'}" for n, f in ROBOT_CASES])
def test_shipped_robots_match_pinocchio(name, floating, pin_urdf_twin):
    model, twin = pin_urdf_twin(name, floating)
    _compare_pinocchio(model, twin, np.random.default_rng(3))


@pytest.mark.parametrize("seed, floating", TREE_CASES,
                         ids=[f"{s}-{'floating' if f else 'fixed'}" for s, f in TREE_CASES])
def test_random_trees_match_pinocchio(seed, floating, pin_twin):
    model = kd.models.random_tree(12, seed=seed, floating_base=floating, joint_types=ALL_JOINTS)
    _compare_pinocchio(model, pin_twin(model), np.random.default_rng(seed))


def test_every_joint_type_is_covered():
    kinds = set()
    for s, f in TREE_CASES:
        kinds |= {b.joint.kind for b in kd.models.random_tree(12, seed=s, floating_base=f,
                                                               joint_types=ALL_JOINTS).bodies}
    assert kinds == set(ALL_JOINTS) | {"free"}


MODELS = [("panda", lambda: kd.load_robot("panda")),
          ("humanoid-floating", lambda: kd.load_robot("humanoid", floating_base=True)),
          ("tree-fixed", lambda: kd.models.random_tree(9, seed=11, joint_types=ALL_JOINTS)),
          ("tree-floating", lambda: kd.models.random_tree(9, seed=12, floating_base=True,
                                                          joint_types=ALL_JOINTS))]


@pytest.fixture(params=MODELS, ids=[m[0] for m in MODELS])
def model(request):
    return request.param[1]()


def _fd(f, h=1e-3):
    """d/dt f(t) at 0, fourth-order central difference."""
    return (8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)


def test_kernels_match_references_single_and_batched(model):
    rng = np.random.default_rng(5)
    Q = np.array([kd.random_configuration(model, rng) for _ in range(11)])
    V = rng.normal(size=(11, model.nv))
    A = kd.centroidal_momentum_matrix(model, Q)
    h = kd.centroidal_momentum(model, Q, V)
    b = kd.centroidal_momentum_bias(model, Q, V)
    assert A.shape == (11, 6, model.nv) and h.shape == b.shape == (11, 6)
    for k in range(11):
        close(A[k], cen.centroidal_momentum_matrix_reference(model, Q[k]))
        close(h[k], cen.centroidal_momentum_reference(model, Q[k], V[k]))
        close(b[k], cen.centroidal_momentum_bias_reference(model, Q[k], V[k]))
        # a state gives the same bits alone (the single-state entry point) or in a batch
        assert np.array_equal(kd.centroidal_momentum_matrix(model, Q[k]), A[k])
        assert np.array_equal(kd.centroidal_momentum(model, Q[k], V[k]), h[k])
        assert np.array_equal(kd.centroidal_momentum_bias(model, Q[k], V[k]), b[k])
    close(h, np.einsum("kij,kj->ki", A, V))
    # lists and one q against a batch of v broadcast like every other function
    close(kd.centroidal_momentum(model, Q[0].tolist(), V), np.einsum("ij,kj->ki", A[0], V))


def test_linear_part_is_mass_times_com_velocity(model):
    rng = np.random.default_rng(8)
    q = kd.random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    A = kd.centroidal_momentum_matrix(model, q)
    c_dot = _fd(lambda t: kd.center_of_mass(model, kd.integrate_configuration(model, q, v, t)))
    close((A @ v)[3:], model.total_mass * c_dot, rel=1e-8)


def test_angular_part_is_angular_momentum_about_com(model):
    """k_G = Σ_i R_i I_c,i R_iᵀ ω_i + m_i (c_i - c) × ċ_i, from the body poses and
    velocities of forward kinematics (body frame velocity [ω; v_O] in body axes)."""
    rng = np.random.default_rng(9)
    q = kd.random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    kin = kd.forward_kinematics(model, q, v)
    c = kd.center_of_mass(model, q)
    k = np.zeros(3)
    for b in model.bodies:
        m, com, Ic = inertia_parameters(b.inertia)
        R, p, vel = kin.R[b.index], kin.p[b.index], kin.velocity[b.index]
        w = R @ vel[:3]
        ci = p + R @ com
        ci_dot = R @ vel[3:] + np.cross(w, R @ com)
        k += R @ Ic @ R.T @ w + m * np.cross(ci - c, ci_dot)
    close((kd.centroidal_momentum_matrix(model, q) @ v)[:3], k)
    close(kd.centroidal_momentum(model, q, v)[:3], k)


def test_bias_is_time_derivative_of_A_G_along_the_motion(model):
    """At v̇ = 0, ḣ_G = Ȧ_G v = d/dt A_G(q(t)) v along q̇ = W(q) v."""
    rng = np.random.default_rng(10)
    q = kd.random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    fd = _fd(lambda t: kd.centroidal_momentum_matrix(
        model, kd.integrate_configuration(model, q, v, t)) @ v)
    close(kd.centroidal_momentum_bias(model, q, v), fd, rel=1e-8)


def test_rate_of_momentum_is_external_wrench_about_com():
    """Free-floating, no joint forces: ḣ_G = A_G v̇ + Ȧ_G v equals the gravity wrench about
    the centre of mass, [0; m g] — with v̇ from ABA."""
    model = kd.load_robot("humanoid", floating_base=True)
    rng = np.random.default_rng(4)
    q = kd.random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    vdot = kd.aba(model, q, v, np.zeros(model.nv))
    hdot = (kd.centroidal_momentum_matrix(model, q) @ vdot
            + kd.centroidal_momentum_bias(model, q, v))
    expected = np.r_[0.0, 0.0, 0.0, model.total_mass * model.gravity]
    np.testing.assert_allclose(hdot, expected, rtol=0, atol=1e-9 * model.total_mass * 9.81)


def test_bad_input_is_named():
    model = kd.load_robot("ur5")
    with pytest.raises(kd.StateError, match="q has 5 entries"):
        kd.centroidal_momentum_matrix(model, np.zeros(5))
    with pytest.raises(kd.StateError, match="v has 2 entries"):
        kd.centroidal_momentum_bias(model, kd.neutral(model), np.zeros(2))
    with pytest.raises(kd.StateError, match="NaN"):
        kd.centroidal_momentum(model, np.full(6, np.nan), np.zeros(6))
    free = kd.models.random_tree(3, seed=0, floating_base=True)
    q = kd.neutral(free)
    q[3:7] = [2.0, 0, 0, 0]
    with pytest.raises(kd.StateError, match="quaternion"):
        kd.centroidal_momentum_matrix(free, q)


def test_a_massless_model_has_no_centre_of_mass():
    b = kd.ModelBuilder("ghost")
    b.add_body("link", None, kd.model.joints.Revolute("j", axis=(0.0, 0.0, 1.0)))
    ghost = b.build(check_singular=False)
    for f, args in ((kd.centroidal_momentum_matrix, ()), (kd.centroidal_momentum, ([1.0],)),
                    (kd.centroidal_momentum_bias, ([1.0],))):
        with pytest.raises(kd.ModelError, match="'ghost' has no mass"):
            f(ghost, np.zeros(1), *args)
        with pytest.raises(kd.ModelError, match="no mass"):
            f(ghost, np.zeros((3, 1)), *[np.ones((3, 1)) for _ in args])
    with pytest.raises(kd.ModelError, match="no mass"):
        cen.centroidal_momentum_matrix_reference(ghost, np.zeros(1))


def test_workspaces_fit_the_models_packed_buffer():
    """The single-state entry points carve their workspace out of the buffer that
    kernels.workspace_size sizes (for ABA); they refuse to run past its end."""
    from kanedyn.dynamics import centroidal_kernel, joint_wrenches_kernel, kernels

    for nb in range(1, 300):
        for nv in (nb, 3 * nb, 6 * nb):
            size = kernels.workspace_size(nb, nv)
            assert centroidal_kernel.workspace_size(nb) <= size
            assert joint_wrenches_kernel.workspace_size(nb, nv) <= size


def test_out_and_the_c_fast_path():
    """out= takes the result (one state or a batch); the C fast path of _fastcall.c, where
    it is built, gives the Python wrapper's bits and hands it every call it does not take."""
    model = kd.models.random_tree(7, seed=3, floating_base=True, joint_types=ALL_JOINTS)
    rng = np.random.default_rng(0)
    Q = np.array([kd.random_configuration(model, rng) for _ in range(3)])
    f = kd.centroidal_momentum_matrix
    wrapper = getattr(f, "__wrapped__", f)
    out = np.full((6, model.nv), np.nan)
    assert f(model, Q[0], out=out) is out
    assert np.array_equal(out, wrapper(model, Q[0]))
    assert np.array_equal(f(model, Q[0]), wrapper(model, Q[0]))
    outs = np.empty((3, 6, model.nv))
    assert f(model, Q, out=outs) is outs and np.array_equal(outs, wrapper(model, Q))
    assert np.array_equal(f(model, list(Q[1])), outs[1])
    with pytest.raises(kd.StateError, match="wrong shape"):
        f(model, Q[0], out=np.empty((6, model.nv + 1)))
    with pytest.raises(kd.StateError, match="out= must be"):
        f(model, Q, out=np.empty((3, 6, model.nv), dtype=np.float32))
    q = Q[0].copy()
    q[3:7] *= 2.0  # not a unit quaternion: the wrapper names the joint
    with pytest.raises(kd.StateError, match="quaternion"):
        f(model, q)


def test_the_c_fast_path_gives_the_wrappers_bits_on_every_robot():
    """centroidal_kernel.ag_c runs ag_core on arrays made from the buffer's addresses, the
    wrapper's ag_f on reshaped slices of it: the same arithmetic, so the same bits — on
    every shipped robot and on trees below and above the vectorised sincos (8 bodies)."""
    f = kd.centroidal_momentum_matrix
    wrapper = getattr(f, "__wrapped__", f)
    models = [kd.load_robot(n, floating_base=fl) for n, fl in ROBOT_CASES]
    models += [kd.models.random_tree(n, seed=n, floating_base=n % 2 == 0,
                                     joint_types=ALL_JOINTS) for n in (3, 8, 12, 25)]
    rng = np.random.default_rng(2)
    for model in models:
        for _ in range(3):
            q = kd.random_configuration(model, rng)
            assert np.array_equal(f(model, q), wrapper(model, q)), model.name


def test_a_tree_too_large_for_the_lanes_goes_state_by_state():
    model = kd.models.random_tree(70, seed=4, floating_base=True, joint_types=ALL_JOINTS)
    rng = np.random.default_rng(1)
    Q = np.array([kd.random_configuration(model, rng) for _ in range(3)])
    A = kd.centroidal_momentum_matrix(model, Q)
    for k in range(3):
        assert np.array_equal(A[k], kd.centroidal_momentum_matrix(model, Q[k]))
        close(A[k], cen.centroidal_momentum_matrix_reference(model, Q[k]))
