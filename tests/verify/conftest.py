"""Models and deliberately broken systems for the checklist tests."""

from __future__ import annotations

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.model.joints import Revolute
from kanedyn.spatial import quat_to_matrix


class ModelWrapper:
    """A user-written system (the DESIGN.md protocol) built on models.

    ``dynamics_model`` gives the equations (mass matrix, bias forces, forward
    dynamics); ``energy_model`` the energy. With both the same model this is a
    correct system.
    """

    def __init__(self, dynamics_model, energy_model=None, flip_gravity=False):
        self.dm = dynamics_model
        self.em = energy_model if energy_model is not None else dynamics_model
        self.flip_gravity = flip_gravity
        self.nq, self.nv = self.dm.nq, self.dm.nv
        self.name = "wrapper of " + self.dm.name

    def neutral(self):
        return kd.neutral(self.dm)

    def mass_matrix(self, q):
        return kd.crba(self.dm, q)

    def nonlinear_effects(self, q, v):
        h = kd.nonlinear_effects(self.dm, q, v)
        if self.flip_gravity:  # C v - g instead of C v + g
            h = h - 2.0 * kd.gravity_torques(self.dm, q)
        return h

    def forward_dynamics(self, q, v, tau):
        return np.linalg.solve(self.mass_matrix(q), tau - self.nonlinear_effects(q, v))

    def energy(self, q, v):
        return kd.kinetic_energy(self.em, q, v) + kd.potential_energy(self.em, q)

    def q_dot(self, q, v):
        return kd.q_dot(self.dm, q, v)

    def integrate_configuration(self, q, v, dt):
        return kd.integrate_configuration(self.dm, q, v, dt)


def skew_chain(flip_products: bool = False, n: int = 3):
    """A 3D chain of revolute joints with bodies whose inertia has large products.

    ``flip_products`` reflects each rotational inertia through its xy-plane,
    ``I → D I D`` with ``D = diag(1, 1, −1)``: the signs of I_xz and I_yz flip,
    the principal moments (hence physical validity) and mass and centre of
    mass stay. Gravity, the potential and the shape of M are untouched; only
    the kinetic energy of rotations mixing z with x or y changes.
    """
    rng = np.random.default_rng(7)
    b = kd.ModelBuilder("skew_chain_flipped" if flip_products else "skew_chain")
    D = np.diag([1.0, 1.0, -1.0])
    parent = None
    axes = [(0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0)]
    for i in range(n):
        x = rng.normal(size=4)
        R = quat_to_matrix(x / np.linalg.norm(x))
        Ic = R @ np.diag([0.05, 0.3, 0.32]) @ R.T
        if flip_products:
            Ic = D @ Ic @ D
        placement = (np.eye(3), (0.0, 0.0, -0.8 if i else 0.0))
        parent = b.add_body(f"link{i}", parent, Revolute(f"j{i}", axis=axes[i % 3]), placement,
                            1.0 + i, (0.1, -0.05, -0.4), Ic)
    return b.build()


@pytest.fixture(scope="session")
def chain3_report():
    from kanedyn.verify import checklist

    return checklist(kd.models.pendulum_chain(3), n_samples=4, seed=1)
