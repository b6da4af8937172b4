"""Frames welded to the world keep their pose and have zero Jacobians (they never move)."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.model import ModelBuilder, Revolute
from kanedyn.spatial import rotz


def test_frames_fixed_to_the_world():
    b = ModelBuilder("arm")
    b.add_frame("camera", None, (rotz(0.3), (1.0, 2.0, 3.0)))
    b.add_body("link", None, Revolute("j", axis=(0, 0, 1)), None, 1.0, (0.5, 0, 0),
               np.diag([0.1, 0.1, 0.1]))
    model = b.build()
    for q in ([0.0], [1.2]):
        R, p = kd.frame_placement(model, q, "camera")
        assert np.allclose(R, rotz(0.3)) and np.allclose(p, [1.0, 2.0, 3.0])
        R, p = kd.frame_placement(model, q, "world")
        assert np.allclose(R, np.eye(3)) and np.allclose(p, 0.0)
    # the frame's own Jacobian (issue 14), not an error, and never a body's
    for frame in ("local", "local_world_aligned", "world"):
        J = kd.jacobian(model, np.array([0.7]), "camera", frame=frame)
        assert J.shape == (6, 1) and not J.any()
    with pytest.raises(kd.ModelError, match="'camera' is fixed to the world"):
        model.body_index("camera")


def test_fixed_base_urdf_root_is_the_world():
    model = kd.load_robot("panda")
    R, p = kd.frame_placement(model, kd.neutral(model), model.root_name)
    assert np.allclose(R, np.eye(3)) and np.allclose(p, 0.0)
