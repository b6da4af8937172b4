"""The shipped robot descriptions in kanedyn and in Pinocchio: same M(q) and RNEA.

Pinocchio (pin 4.1) is an independent URDF parser and an independent
implementation of CRBA/RNEA, so agreement to 1e-9 checks the loader (origins,
rpy, axes, inertial frames, fixed-link merging) and the algorithms at once.

Order and coordinate maps: joints are matched by name (Pinocchio takes the
children of a link in alphabetical order of joint names, kanedyn in document
order; the shipped files make both agree, which is asserted too). Pinocchio's
free flyer has q = (p, x, y, z, w) and v = (v_lin, ω) in the base frame;
kanedyn's has q = (p, w, x, y, z) and v = (ω, v_lin), also in the base frame.
"""

from __future__ import annotations

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.model.urdf import ROBOTS, robot_path

pin = pytest.importorskip("pinocchio")


def _index_maps(model, pmodel):
    """Permutations with ``q_pin = q_kd[iq]`` (up to the quaternion reorder) and
    ``v_pin = v_kd[iv]``."""
    iq, iv = [], []
    for jid in range(1, pmodel.njoints):
        name = pmodel.names[jid]
        body = model.bodies[model.joint_index("root_joint" if name == "root_joint" else name)]
        q0, v0 = body.iq.start, body.iv.start
        if body.joint.kind == "free":
            iq += [q0, q0 + 1, q0 + 2, q0 + 4, q0 + 5, q0 + 6, q0 + 3]  # w last in Pinocchio
            iv += [v0 + 3, v0 + 4, v0 + 5, v0, v0 + 1, v0 + 2]  # linear first in Pinocchio
        else:
            assert pmodel.nqs[jid] == body.joint.nq == 1
            iq.append(q0)
            iv.append(v0)
    return np.array(iq), np.array(iv)


@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("name", ROBOTS)
def test_crba_rnea_match_pinocchio(name, floating):
    path = str(robot_path(name))
    model = kd.load_urdf(path, floating_base=floating)
    pmodel = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating
              else pin.buildModelFromUrdf(path))
    pdata = pmodel.createData()
    assert (pmodel.nq, pmodel.nv) == (model.nq, model.nv)
    # same joint order in both, so the benchmark may compare vectors directly
    assert list(pmodel.names)[1:] == model.joint_names
    # inertias[0] is the universe, which holds the (fixed) root link's mass in Pinocchio
    assert np.isclose(sum(I.mass for I in pmodel.inertias[1:]), model.total_mass, rtol=1e-12)
    iq, iv = _index_maps(model, pmodel)

    rng = np.random.default_rng(7)
    for _ in range(3):
        q = kd.random_configuration(model, rng)
        v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
        qp = q[iq]
        M = kd.crba(model, q)
        Mp = pin.crba(pmodel, pdata, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T  # Pinocchio fills the upper triangle
        scale = max(1.0, np.abs(Mp).max())
        np.testing.assert_allclose(M[np.ix_(iv, iv)], Mp, rtol=0, atol=1e-9 * scale)
        tau = kd.rnea(model, q, v, a)
        taup = pin.rnea(pmodel, pdata, qp, v[iv], a[iv])
        scale = max(1.0, np.abs(taup).max())
        np.testing.assert_allclose(tau[iv], taup, rtol=0, atol=1e-9 * scale)
