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
