"""Joint wrenches: the spatial force each joint transmits from parent to child.

Against Pinocchio's ``data.f`` after ``rnea`` (with and without external forces; in
world coordinates ``data.oMi[i].act(data.f[i])``) on the shipped robots and random trees
of every joint type, fixed and floating base; against physics independent of RNEA's
backward pass (the root joint's wrench is the rate of the whole model's momentum minus
gravity and the external forces; a free root under ABA's acceleration transmits
nothing; each wrench projects on its joint's motion subspace to ``kd.rnea``'s τ); and the
numba kernel against the numpy reference, one state and batched.

Tolerances: 1e-10 relative to the largest entry for the peer and the reference (they
differ by rounding only); the momentum rate is a fourth-order central difference with
step 1e-3, held to 1e-8 of the largest wrench.
"""

from __future__ import annotations

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics.joint_wrenches import REFERENCES, joint_wrenches_reference
from kanedyn.model.urdf import ROBOTS

SWAP = np.array([3, 4, 5, 0, 1, 2])  # [lin; ang] <-> [ang; lin]
ALL_JOINTS = ("revolute", "prismatic", "helical", "spherical", "planar")
ROBOT_CASES = [(n, f) for n in ROBOTS for f in (False, True)]
TREE_CASES = [(s, f) for s in range(4) for f in (False, True)]


def close(x, y, rel=1e-10):
    np.testing.assert_allclose(x, y, rtol=0, atol=rel * max(1.0, np.abs(y).max()))


def _compare_pinocchio(model, twin, rng, n=2):
    pin = pytest.importorskip("pinocchio")
    pm, pd, iv, jid = twin.pmodel, twin.pdata, twin.iv, twin.jid
    for k in range(n):
        q = kd.random_configuration(model, rng)
        v, a = rng.normal(size=(2, model.nv))
        qp = twin.to_pin_q(q)
        fext = rng.normal(size=(model.nb, 6)) if k else None
        if fext is None:
            pin.rnea(pm, pd, qp, v[iv], a[iv])
        else:
            fp = [pin.Force.Zero() for _ in range(pm.njoints)]
            for i in range(model.nb):
                fp[jid[i]] = pin.Force(fext[i][SWAP])
            pin.rnea(pm, pd, qp, v[iv], a[iv], fp)
        f_p = np.array([pd.f[j].vector[SWAP] for j in jid])
        pin.forwardKinematics(pm, pd, qp)  # oMi (rnea leaves it alone; data.f stays)
        world_p = np.array([pd.oMi[j].act(pd.f[j]).vector[SWAP] for j in jid])
        lwa_p = np.array([pin.SE3(pd.oMi[j].rotation, np.zeros(3)).act(pd.f[j]).vector[SWAP]
                          for j in jid])
        close(kd.joint_wrenches(model, q, v, a, fext), f_p)
        close(kd.joint_wrenches(model, q, v, a, fext, reference="world"), world_p)
        close(kd.joint_wrenches(model, q, v, a, fext, reference="local_world_aligned"), lwa_p)


@pytest.mark.parametrize("name, floating", ROBOT_CASES,
                         ids=[f"{n}-{'floating' if f else 'fixed'}" for n, f in ROBOT_CASES])
def test_shipped_robots_match_pinocchio(name, floating, pin_urdf_twin):
    model, twin = pin_urdf_twin(name, floating)
    _compare_pinocchio(model, twin, np.random.default_rng(1))


@pytest.mark.parametrize("seed, floating", TREE_CASES,
                         ids=[f"{s}-{'floating' if f else 'fixed'}" for s, f in TREE_CASES])
def test_random_trees_match_pinocchio(seed, floating, pin_twin):
    model = kd.models.random_tree(12, seed=seed, floating_base=floating, joint_types=ALL_JOINTS)
    _compare_pinocchio(model, pin_twin(model), np.random.default_rng(seed))


MODELS = [("panda", lambda: kd.load_robot("panda")),
          ("quadruped-floating", lambda: kd.load_robot("quadruped", floating_base=True)),
          ("tree-fixed", lambda: kd.models.random_tree(9, seed=21, joint_types=ALL_JOINTS)),
          ("tree-floating", lambda: kd.models.random_tree(9, seed=22, floating_base=True,
                                                          joint_types=ALL_JOINTS))]


@pytest.fixture(params=MODELS, ids=[m[0] for m in MODELS])
def model(request):
    return request.param[1]()


@pytest.mark.parametrize("reference", REFERENCES)
def test_kernel_matches_reference_single_and_batched(model, reference):
    rng = np.random.default_rng(2)
    N = 10
    Q = np.array([kd.random_configuration(model, rng) for _ in range(N)])
    V, A = rng.normal(size=(2, N, model.nv))
    Fx = rng.normal(size=(N, model.nb, 6))
    for F in (None, Fx):
        W = kd.joint_wrenches(model, Q, V, A, F, reference=reference)
        assert W.shape == (N, model.nb, 6)
        for k in range(N):
            fk = None if F is None else F[k]
            close(W[k], joint_wrenches_reference(model, Q[k], V[k], A[k], fk, reference))
            # the same bits alone (the single-state entry point) as in a batch
            assert np.array_equal(kd.joint_wrenches(model, Q[k], V[k], A[k], fk,
                                                    reference=reference), W[k])
    # one state as lists, one f_ext for a whole batch
    close(kd.joint_wrenches(model, Q[0].tolist(), V[0].tolist(), A[0], Fx[0].tolist(),
                            reference=reference),
          joint_wrenches_reference(model, Q[0], V[0], A[0], Fx[0], reference))
    close(kd.joint_wrenches(model, Q, V, A, Fx[0], reference=reference),
          kd.joint_wrenches(model, Q, V, A, np.broadcast_to(Fx[0], Fx.shape),
                            reference=reference))


def test_projection_on_motion_subspace_is_rnea_tau(model):
    rng = np.random.default_rng(3)
    q = kd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    fext = rng.normal(size=(model.nb, 6))
    for F in (None, fext):
        W = kd.joint_wrenches(model, q, v, a, F)
        tau = kd.rnea(model, q, v, a, F)
        proj = np.concatenate([b.joint.motion_subspace().T @ W[b.index] for b in model.bodies])
        order = np.concatenate([np.arange(b.iv.start, b.iv.stop) for b in model.bodies])
        close(proj, tau[order])


def _fd(f, h=1e-3):
    return (8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)


def test_root_wrenches_are_momentum_rate_minus_gravity_and_external_forces(model):
    """Σ over root joints of the world wrench = d/dt [L_O; P] - [m c × g; m g] - Σ_i f_ext,i
    (world, about the world origin), d/dt along q̇ = W(q) v, v̇ = a."""
    rng = np.random.default_rng(4)
    q = kd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    fext = rng.normal(size=(model.nb, 6))
    roots = [b.index for b in model.bodies if b.parent < 0]
    hdot = _fd(lambda t: kd.spatial_momentum(model, kd.integrate_configuration(model, q, v, t),
                                             v + t * a))
    m, c, g = model.total_mass, kd.center_of_mass(model, q), model.gravity
    gravity = np.r_[m * np.cross(c, g), m * g]
    kin = kd.forward_kinematics(model, q)
    ext = np.zeros(6)
    for i in range(model.nb):  # body force [n; f] to world axes about the world origin
        R, p = kin.R[i], kin.p[i]
        f_w = R @ fext[i, 3:]
        ext += np.r_[R @ fext[i, :3] + np.cross(p, f_w), f_w]
    W = kd.joint_wrenches(model, q, v, a, reference="world")
    close(W[roots].sum(axis=0), hdot - gravity, rel=1e-8)
    W = kd.joint_wrenches(model, q, v, a, fext, reference="world")
    close(W[roots].sum(axis=0), hdot - gravity - ext, rel=1e-8)


def test_free_root_under_forward_dynamics_transmits_nothing():
    """A floating base whose acceleration comes from ABA with no force on the root joint:
    the free joint carries no wrench; every other joint carries its τ along S."""
    model = kd.load_robot("humanoid", floating_base=True)
    rng = np.random.default_rng(6)
    q = kd.random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    tau = rng.normal(size=model.nv)
    tau[model.bodies[0].iv] = 0.0
    a = kd.aba(model, q, v, tau)
    W = kd.joint_wrenches(model, q, v, a)
    scale = np.abs(W).max()
    np.testing.assert_allclose(W[0], 0.0, atol=1e-10 * scale)


def test_bad_input_is_named():
    model = kd.load_robot("ur5")
    q, z = kd.neutral(model), np.zeros(model.nv)
    with pytest.raises(kd.KanedynError, match="unknown reference 'base'.*local_world_aligned"):
        kd.joint_wrenches(model, q, z, z, reference="base")
    with pytest.raises(kd.StateError, match=r"f_ext must have shape \(6, 6\)"):
        kd.joint_wrenches(model, q, z, z, np.zeros((5, 6)))
    with pytest.raises(kd.StateError, match="f_ext contains NaN"):
        kd.joint_wrenches(model, q, z, z, np.full((6, 6), np.nan))
    with pytest.raises(kd.StateError, match="a has 3 entries"):
        kd.joint_wrenches(model, q, z, np.zeros(3))
    with pytest.raises(kd.StateError, match="batch sizes differ"):
        kd.joint_wrenches(model, np.tile(q, (3, 1)), np.zeros((2, 6)), z)
    with pytest.raises(kd.StateError, match="not finite"):
        kd.joint_wrenches(model, q, np.full(6, 1e300), z)
