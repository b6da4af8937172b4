"""Fixtures shared by the integrator tests."""

import numpy as np
import pytest

import kanedyn as kd


@pytest.fixture
def chain_forces():
    """A damper, a spring and smoothed Stribeck friction on a 5-link chain (each with its
    compiled row, forces/kernel.py), a constant and a sinusoidal torque beside them."""
    from kanedyn import friction
    from kanedyn.forces import (
        JointDamper,
        JointFriction,
        JointSpring,
        JointTorque,
        SinusoidalTorque,
    )

    m = kd.models.pendulum_chain(5, planar=False, length=0.3, mass=1.0, radius=0.1)
    j = m.joint_names
    law = friction.Stribeck(Fc=0.05, Fs=0.08, vs=0.05, delta=2.0, Fv=0.01).smoothed("tanh", 1e-2)
    forces = ([JointFriction(n, law) for n in j[:3]]
              + [JointSpring(j[1], 3.0, 0.2), JointDamper(j[2], 0.05),
                 JointDamper(j[4], 0.02), JointTorque(np.array([0.3]), [j[0]]),
                 SinusoidalTorque(j[3], 0.4, 2.0, phase=0.3, offset=0.05)])
    return m, np.linspace(0.9, 0.3, 5), np.array([0.5, -0.2, 0.0, 0.1, 0.3]), forces


@pytest.fixture
def ball_chain():
    """Two rods on ball joints and a third on a hinge, under gravity: the tangent form
    (q = q0 ⊕ ξ) of the compiled loops."""
    from kanedyn.model.joints import Revolute, Spherical

    b = kd.ModelBuilder("ball_chain", gravity=(0.0, 0.0, -9.81))
    rod = np.diag([1.0 / 12.0, 1.0 / 12.0, 1e-2])
    below = (np.eye(3), (0, 0, -1.0))
    b.add_body("l1", None, Spherical("b1"), None, 1.0, (0, 0, -0.5), rod)
    b.add_body("l2", "l1", Spherical("b2"), below, 1.0, (0, 0, -0.5), rod)
    b.add_body("l3", "l2", Revolute("r3", axis=(0, 1, 0)), below, 0.5, (0, 0, -0.5), rod)
    m = b.build()
    return (m, kd.random_configuration(m, np.random.default_rng(1)),
            np.array([0.5, -1.0, 2.0, 1.0, 0.3, -0.2, 1.5]))
