"""The one dispatcher of the compiled joint primitives knows every joint code.

``kernels/joint_rows.py`` calls each joint type's compiled primitives (``joint_pose``,
``motion_subspace_column``, ``motion_subspace_times``, ``motion_subspace_transpose_times``)
by its joint code, one line per code, and ``sim/configuration_kernel.integrate_into`` its
``integrate``. For every registered joint type with a ``compiled_code``, the dispatcher's
result on a packed row is checked here against the type's numpy definition (``pose``,
``motion_subspace``, ``integrate``): a code without its line falls into another type's
maths and fails. Each code of the layout belongs to a registered type, and the packed
SUNIT column says what ``motion_subspace`` says.
"""

from __future__ import annotations

import numpy as np
import pytest

from kanedyn.dynamics import layout
from kanedyn.dynamics.flat import flatten
from kanedyn.dynamics.kernels import joint_rows
from kanedyn.model import ModelBuilder
from kanedyn.model.joints import JOINT_TYPES
from kanedyn.sim.configuration_kernel import integrate_into
from kanedyn.spatial import quat_to_matrix

COMPILED = sorted({cls for cls in JOINT_TYPES.values() if cls.compiled_code},
                  key=lambda c: c.kind)


def _joints(cls, rng):
    """Instances of ``cls``: a general axis (and pitch) where the type has them, and a
    coordinate axis (the kernels' shortcuts)."""
    fields = cls.__dataclass_fields__
    out = []
    for axis in (rng.normal(size=3), np.eye(3)[1]):
        kw = {}
        if "axis" in fields:
            kw["axis"] = tuple(axis / np.linalg.norm(axis))
        if "pitch" in fields:
            kw["pitch"] = 0.15
        out.append(cls("j", **kw))
        if not kw:
            break
    return out


def _one_body(joint, rng):
    b = ModelBuilder("one")
    qr = rng.normal(size=4)
    b.add_body("b", None, joint, (quat_to_matrix(qr / np.linalg.norm(qr)),
                                  rng.uniform(-0.5, 0.5, 3)), 1.2, (0.1, 0.0, 0.2),
               np.diag([0.1, 0.2, 0.3]))
    return b.build()


def test_every_layout_code_is_a_registered_type():
    codes = {getattr(layout, cls.compiled_code) for cls in COMPILED}
    assert codes == set(layout.JOINT_CODES.values())


@pytest.mark.parametrize("cls", COMPILED, ids=lambda c: c.kind)
def test_dispatcher_gives_each_type_its_own_maths(cls):
    rng = np.random.default_rng(5)
    for joint in _joints(cls, rng):
        model = _one_body(joint, rng)
        data = flatten(model).data
        S = joint.motion_subspace()
        nv = joint.nv
        # SUNIT: n > 0 exactly when S is the first n columns of the identity
        is_eye = S.shape == (6, nv) and np.array_equal(S, np.eye(6)[:, :nv])
        assert data[0, layout.SUNIT] == (nv if is_eye else 0)
        assert joint.identity_columns == is_eye
        E_tree = data[0, layout.E_TREE:layout.E_TREE + 9].reshape(3, 3)
        r_tree = data[0, layout.R_TREE:layout.R_TREE + 3]
        for _ in range(3):
            q = joint.random_configuration(rng)
            # X_up = X_J X_tree = plucker(Rᵀ E_tree, r_tree + E_treeᵀ p)
            R, p = joint.pose(q)
            X = np.full((1, 12), np.nan)
            assert joint_rows.joint_transform(data, 0, q, X) == 0
            np.testing.assert_allclose(X[0, :9].reshape(3, 3), R.T @ E_tree, rtol=0,
                                       atol=1e-14)
            np.testing.assert_allclose(X[0, 9:], r_tree + E_tree.T @ p, rtol=0, atol=1e-14)
            x = rng.normal(size=nv)
            dst = np.full((1, 6), np.nan)
            joint_rows.motion_subspace_times(data, 0, x, dst, 0)
            np.testing.assert_allclose(dst[0], S @ x, rtol=0, atol=1e-14)
            F = rng.normal(size=(1, 6))
            for c in range(nv):
                joint_rows.motion_subspace_column(data, 0, c, dst, 0)
                np.testing.assert_array_equal(dst[0], S[:, c])
                np.testing.assert_allclose(
                    joint_rows.motion_subspace_transpose_times(data, 0, c, F, 0),
                    S[:, c] @ F[0], rtol=0, atol=1e-14)
            # q ⊕ v dt against the numpy manifold map
            v = rng.normal(size=nv)
            out = np.full(joint.nq, np.nan)
            integrate_into(data, q, v, 0.05, out)
            np.testing.assert_allclose(out, joint.integrate(q, v, 0.05), rtol=0, atol=1e-13)


def test_a_quaternion_off_unit_is_refused_by_the_pose():
    rng = np.random.default_rng(2)
    for cls in COMPILED:
        joint = cls("j")
        if joint.quaternion is None:
            continue
        data = flatten(_one_body(joint, rng)).data
        q = joint.neutral()
        q[joint.quaternion] *= 1.1
        assert joint_rows.joint_transform(data, 0, q, np.zeros((1, 12))) == 1
