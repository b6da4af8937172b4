"""Fixtures shared by sim's tests of the compiled loops."""

from types import SimpleNamespace

import numpy as np
import pytest

import kanedyn as kd


def _with_tool(model, body: str):
    """The model with a frame "tool" fixed to ``body`` at a turned, shifted placement."""
    c, s = np.cos(0.7), np.sin(0.7)
    R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return model.add_frame("tool", body, (R, np.array([0.1, -0.3, 0.25])))


@pytest.fixture(scope="session")
def wrench_chain():
    """A 4-link 3D chain with a tool frame on link3 and constant wrenches (the wrench rows
    of forces/kernel.py): ``elements()`` a local wrench on link3, a world one on link4, one
    on the tool frame and a damper (``as_function=True``: the first given as a Python
    function); ``f_local``, ``f_world`` the wrenches, ``with_tool`` the frame's maker."""
    from kanedyn.forces import ExternalWrench, JointDamper

    f_local = np.array([0.1, -0.2, 0.3, 1.0, -0.5, 0.7])
    f_world = np.array([0.0, 0.4, -0.1, -0.3, 0.2, 0.9])
    model = _with_tool(kd.models.pendulum_chain(4, planar=False, length=0.3, mass=1.0,
                                                radius=0.05), "link3")

    def elements(as_function: bool = False):
        local = (lambda t, q, v: f_local) if as_function else f_local
        return [ExternalWrench("link3", local), ExternalWrench("link4", f_world, frame="world"),
                ExternalWrench("tool", 0.5 * f_world), JointDamper(model.joint_names[1], 0.1)]

    return SimpleNamespace(model=model, q0=np.linspace(0.3, -0.2, 4),
                           v0=np.linspace(-0.5, 0.4, 4), elements=elements, f_local=f_local,
                           f_world=f_world, with_tool=_with_tool)
