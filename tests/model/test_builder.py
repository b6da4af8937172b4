"""ModelBuilder's checks: each bad input raises a ModelError naming the body or joint."""

from __future__ import annotations

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.errors import ModelError
from kanedyn.model import Fixed, ModelBuilder, Prismatic, Revolute, Spherical
from kanedyn.spatial import inertia_parameters

I_OK = np.diag([0.01, 0.02, 0.025])


def one_body(**kw):
    b = ModelBuilder("m")
    args = dict(name="link", parent=None, joint=Revolute("j", axis=(0, 1, 0)),
                placement=None, mass=1.0, com=(0, 0, -0.5), inertia=I_OK)
    args.update(kw)
    b.add_body(**args)
    return b.build()


@pytest.mark.parametrize("mass", [-1.0, np.nan, np.inf])
def test_bad_mass(mass):
    with pytest.raises(ModelError, match="body 'link': mass .* negative or not finite"):
        one_body(mass=mass)


@pytest.mark.parametrize("inertia, why", [
    (np.diag([0.01, 0.01, -0.001]), "not positive semidefinite"),
    (np.diag([0.01, 0.01, 0.03]), "triangle inequality"),
    ([[0.01, 0.002, 0], [0, 0.01, 0], [0, 0, 0.01]], "not symmetric"),
])
def test_unphysical_rotational_inertia(inertia, why):
    with pytest.raises(ModelError, match=f"body 'link': rotational inertia .*{why}"):
        one_body(inertia=inertia)


def test_point_mass_and_triangle_equality_are_physical():
    one_body(inertia=np.zeros((3, 3)))
    one_body(inertia=np.diag([0.01, 0.01, 0.02]))  # a thin disc: I1 + I2 = I3 exactly


def test_wrong_shapes_are_model_errors_not_numpy_errors():
    with pytest.raises(ModelError, match="inertia a 3x3 matrix"):
        one_body(inertia=(1.0, 2.0))
    with pytest.raises(ModelError, match="com a 3-vector"):
        one_body(com=(0.0, 1.0))
    with pytest.raises(ModelError, match="mass must be a number"):
        one_body(mass="heavy")
    with pytest.raises(ModelError, match="joint must be a kanedyn Joint"):
        one_body(joint="revolute")
    with pytest.raises(ModelError, match="non-empty name"):
        one_body(name="")
    with pytest.raises(ModelError, match="gravity must be a finite 3-vector"):
        ModelBuilder("m", gravity=(0, -9.81))


@pytest.mark.parametrize("R, why", [
    (np.diag([1.0, 1.0, 1.1]), "not a proper rotation"),
    (np.diag([1.0, 1.0, -1.0]), "not a proper rotation"),  # a reflection
    (np.eye(2), "placement must be"),
])
def test_bad_placement(R, why):
    with pytest.raises(ModelError, match=f"body 'link'.*{why}"):
        one_body(placement=(R, (0, 0, 0)))


def test_massless_moving_leaf_names_joint():
    b = ModelBuilder("m")
    b.add_body("upper", None, Revolute("shoulder", axis=(0, 1, 0)), None, 1.0, (0, 0, -0.5),
               I_OK)
    b.add_body("ghost", "upper", Revolute("wrist", axis=(1, 0, 0)), (np.eye(3), (0, 0, -1)))
    with pytest.raises(ModelError, match="joint 'wrist' \\(body 'ghost'\\) moves no inertia") \
            as info:
        b.build()
    assert info.value.joint == "wrist"
    assert b.build(check_singular=False).nb == 2  # the check can be switched off


def test_mass_on_revolute_axis_is_singular_but_not_on_prismatic():
    """A point mass on the axis of a revolute joint has no moment of inertia about it;
    along a prismatic axis it still has its mass."""
    on_axis = dict(com=(0, 0, 0), inertia=np.zeros((3, 3)))
    with pytest.raises(ModelError, match="moves no inertia"):
        one_body(**on_axis)
    M = kd.crba(one_body(joint=Prismatic("j", axis=(0, 0, 1)), **on_axis), [0.3])
    assert M[0, 0] == pytest.approx(1.0)
    # a spherical joint with a point mass at its centre: all three directions singular
    with pytest.raises(ModelError, match="moves no inertia"):
        one_body(joint=Spherical("ball"), **on_axis)


def test_massless_intermediate_body_is_fine():
    b = ModelBuilder("m")
    b.add_body("gimbal", None, Revolute("yaw", axis=(0, 0, 1)))
    b.add_body("arm", "gimbal", Revolute("pitch", axis=(0, 1, 0)), None, 2.0, (0.5, 0, 0), I_OK)
    M = kd.crba(b.build(), [0.0, 0.0])
    # yaw about z with the mass 0.5 m out: Izz + m r²; pitch: Iyy + m r²
    np.testing.assert_allclose(np.diag(M), [0.025 + 2.0 * 0.25, 0.02 + 2.0 * 0.25], atol=1e-14)


def test_topology_errors():
    b = ModelBuilder("m")
    with pytest.raises(ModelError, match="parent 'nobody' does not exist"):
        b.add_body("a", "nobody", Revolute("j"), None, 1.0, (1, 0, 0), I_OK)
    with pytest.raises(ModelError, match="parent body index 3 does not exist"):
        b.add_body("a", 3, Revolute("j"), None, 1.0, (1, 0, 0), I_OK)
    b.add_body("a", None, Revolute("j"), None, 1.0, (1, 0, 0), I_OK)
    with pytest.raises(ModelError, match="body 'a' is defined twice"):
        b.add_body("a", None, Revolute("k"), None, 1.0, (1, 0, 0), I_OK)
    with pytest.raises(ModelError, match="fixed to the world"):
        b.add_body("plate", None, Fixed("weld"), None, 1.0)
    b.add_body("b", "a", Revolute("j"), None, 1.0, (1, 0, 0), I_OK)
    with pytest.raises(ModelError, match=r"joint names used twice: \['j'\]"):
        b.build()
    with pytest.raises(ModelError, match="has no moving body"):
        ModelBuilder("empty").build()


def test_fixed_merge_and_frames():
    """A body fixed to another: one body, the composite inertia, and the frame kept."""
    b = ModelBuilder("m")
    b.add_body("a", None, Revolute("j", axis=(0, 0, 1)), None, 1.0, (0.2, 0, 0), I_OK)
    R = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])
    b.add_body("tool", "a", None, (R, (0.5, 0, 0)), 3.0, (0.1, 0, 0), np.zeros((3, 3)))
    b.add_frame("tip", "tool", (np.eye(3), (0, 0, 0.1)))
    model = b.build()
    assert model.nb == 1 and set(model.frames) >= {"a", "tool", "tip"}
    m, c, _ = inertia_parameters(model.bodies[0].inertia)
    assert m == pytest.approx(4.0)
    # the tool's centre of mass is at (0.5, 0, 0) + R (0.1, 0, 0) = (0.5, 0.1, 0) in a
    np.testing.assert_allclose(c, (1.0 * np.array([0.2, 0, 0]) + 3.0 * np.array([0.5, 0.1, 0]))
                               / 4.0, atol=1e-15)
    Rt, pt = kd.frame_placement(model, [np.pi / 2], "tip")
    # a turned by 90° about z: tool origin at (0, 0.5, 0), tip 0.1 above it
    np.testing.assert_allclose(pt, [0, 0.5, 0.1], atol=1e-15)
    np.testing.assert_allclose(Rt, [[-1, 0, 0], [0, -1, 0], [0, 0, 1]], atol=1e-15)
