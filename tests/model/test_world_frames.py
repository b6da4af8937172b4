"""Frames welded to the world keep their pose, and are refused where a body is needed."""

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
    with pytest.raises(kd.ModelError, match="'camera' is fixed to the world"):
        kd.jacobian(model, [0.0], "camera")


def test_fixed_base_urdf_root_is_the_world():
    model = kd.load_robot("panda")
    R, p = kd.frame_placement(model, kd.neutral(model), model.root_name)
    assert np.allclose(R, np.eye(3)) and np.allclose(p, 0.0)
