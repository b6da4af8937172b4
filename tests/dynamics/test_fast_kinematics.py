"""Kernels of forward kinematics, energies, momentum, centre of mass and Jacobians
against the readable reference (6x6 Plücker matrices, one body at a time)."""

from __future__ import annotations

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics import reference as ref
from kanedyn.spatial import skew

ALL_JOINTS = ("revolute", "prismatic", "helical", "spherical", "planar", "free")


def close(x, y, rtol=1e-12):
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    assert x.shape == y.shape
    err = float(np.abs(x - y).max()) / max(1.0, float(np.abs(y).max()))
    assert err <= rtol, f"relative error {err:.2e}"


@pytest.mark.parametrize("seed, floating", [(s, fb) for s in range(4) for fb in (False, True)])
def test_kinematics_energy_momentum_jacobians(seed, floating):
    model = kd.models.random_tree(7, seed, floating_base=floating, joint_types=ALL_JOINTS)
    rng = np.random.default_rng(seed)
    q = kd.random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    R, p = ref.body_placements(model, q)
    kin = kd.forward_kinematics(model, q, v)
    close(kin.R, R)
    close(kin.p, p)
    close(kin.velocity, ref.body_velocities(model, q, v))
    assert kd.forward_kinematics(model, q).velocity is None
    close(kd.kinetic_energy(model, q, v), ref.kinetic_energy(model, q, v))
    close(kd.potential_energy(model, q), ref.potential_energy(model, q))
    close(kd.spatial_momentum(model, q, v), ref.spatial_momentum(model, q, v))
    com = sum(b.mass * (p[b.index] + R[b.index] @ b.com) for b in model.bodies) / model.total_mass
    close(kd.center_of_mass(model, q), com)
    for b in range(model.nb):
        J = ref.jacobian_local(model, q, b)
        Jlwa = np.vstack([R[b] @ J[:3], R[b] @ J[3:]])
        Jw = Jlwa.copy()
        Jw[3:] += skew(p[b]) @ Jlwa[:3]
        close(kd.jacobian(model, q, b, "local"), J)
        close(kd.jacobian(model, q, b, "local_world_aligned"), Jlwa)
        close(kd.jacobian(model, q, b, "world"), Jw)
        # the meaning of "local": J v is the body's spatial velocity in its own axes
        close(kd.jacobian(model, q, b) @ v, kin.velocity[b])


def test_batches_equal_single_states():
    model = kd.models.random_tree(6, 1, floating_base=True, joint_types=ALL_JOINTS)
    rng = np.random.default_rng(2)
    Q = np.array([kd.random_configuration(model, rng) for _ in range(5)])
    V = rng.normal(size=(5, model.nv))
    kins = kd.forward_kinematics(model, Q, V)
    T, Vp = kd.kinetic_energy(model, Q, V), kd.potential_energy(model, Q)
    h, c = kd.spatial_momentum(model, Q, V), kd.center_of_mass(model, Q)
    J = kd.jacobian(model, Q, 3, "world")
    assert len(kins) == 5 and T.shape == (5,) and h.shape == (5, 6) and J.shape == (5, 6, model.nv)
    for k in range(5):
        one = kd.forward_kinematics(model, Q[k], V[k])
        np.testing.assert_array_equal(kins[k].R, one.R)
        np.testing.assert_array_equal(kins[k].velocity, one.velocity)
        assert T[k] == kd.kinetic_energy(model, Q[k], V[k])
        assert Vp[k] == kd.potential_energy(model, Q[k])
        np.testing.assert_array_equal(h[k], kd.spatial_momentum(model, Q[k], V[k]))
        np.testing.assert_array_equal(c[k], kd.center_of_mass(model, Q[k]))
        np.testing.assert_array_equal(J[k], kd.jacobian(model, Q[k], 3, "world"))


def test_energy_of_a_falling_point_mass_pendulum():
    """Independent of the reference: one point mass m at the tip of a massless rod of
    length l, hinged about y at the origin: V = -m g l cos θ, T = ½ m l² θ̇²."""
    m, l, g = 2.0, 0.7, 9.81
    model = kd.models.pendulum_chain(1, length=l, mass=m, point_mass=True)
    th, thd = 0.4, -1.3
    close(kd.potential_energy(model, [th]), -m * g * l * np.cos(th))
    close(kd.kinetic_energy(model, [th], [thd]), 0.5 * m * l**2 * thd**2)
    # rotating (0, 0, -l) about +y by θ puts the mass at (-l sin θ, 0, -l cos θ)
    close(kd.center_of_mass(model, [th]), [-l * np.sin(th), 0.0, -l * np.cos(th)])
    Jlwa = kd.jacobian(model, [0.0], 0, "local_world_aligned")
    close(Jlwa[:, 0], [0.0, 1.0, 0.0, 0.0, 0.0, 0.0])  # ω along the hinge; the origin is fixed


def test_bad_input():
    model = kd.models.random_tree(3, 0, floating_base=True)
    q = kd.neutral(model)
    with pytest.raises(kd.StateError, match="q has"):
        kd.forward_kinematics(model, q[:-1])
    bad = q.copy()
    bad[3] = 2.0
    for f in (lambda: kd.potential_energy(model, bad), lambda: kd.jacobian(model, bad, 1),
              lambda: kd.forward_kinematics(model, bad)):
        with pytest.raises(kd.StateError, match="joint0"):
            f()
    with pytest.raises(kd.StateError, match="v has"):
        kd.kinetic_energy(model, q, np.zeros(model.nv + 1))
    with pytest.raises(kd.KanedynError, match="frame"):
        kd.jacobian(model, q, 0, frame="body")
