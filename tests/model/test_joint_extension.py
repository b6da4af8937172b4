"""Joint types called through their C entry points (kernels/joint_extension.py).

Every built-in joint type is declared here a second time under a ``compiled_code`` that
is no built-in code, with the same compiled primitives (``compiled_primitives`` = its
module): the kernels then call those primitives through the type's entry table instead
of inline. The two models must give the same bits in every compiled algorithm — the
arithmetic is the same, only the call differs — so this checks the whole route (the
packing of JFUNCS, the tables, the argument passing of each slot, the unpacking of the
results) for every slot and joint shape, against the inlined dispatcher, which
tests/model/test_joint_primitives.py checks against the numpy definitions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics import layout
from kanedyn.dynamics.flat import flatten
from kanedyn.dynamics.kernels import joint_extension, rnea_into
from kanedyn.errors import ModelError
from kanedyn.model import Free, Helical, ModelBuilder, Planar, Prismatic, Revolute, Spherical
from kanedyn.model.joints import (
    JOINT_TYPES,
    free,
    helical,
    planar,
    prismatic,
    register_joint_type,
    revolute,
)
from kanedyn.model.joints import spherical as spherical_module
from kanedyn.spatial import quat_to_matrix


def _through_entry_points(base, module):
    @dataclass(frozen=True)
    class Routed(base):
        kind = "routed_" + base.kind
        compiled_code = "ROUTED_" + base.kind.upper()
        compiled_primitives = module

    Routed.__name__ = "Routed" + base.__name__
    return Routed


BUILT_IN = ((Revolute, revolute), (Prismatic, prismatic), (Helical, helical),
            (Planar, planar), (Spherical, spherical_module), (Free, free))
ROUTED = {base: _through_entry_points(base, module) for base, module in BUILT_IN}


@pytest.fixture(scope="module")
def registered():
    before = dict(JOINT_TYPES)
    for cls in ROUTED.values():
        register_joint_type(cls)
    yield
    JOINT_TYPES.clear()
    JOINT_TYPES.update(before)


def _tree(routed: bool, seed: int = 5) -> kd.Model:
    """A floating tree with one joint of each type (general axes: no unit-axis shortcut,
    so the joint maths is called), the routed or the built-in classes."""
    rng = np.random.default_rng(seed)

    def joint(cls, name, **kw):
        return (ROUTED[cls] if routed else cls)(name, **kw)

    def axis():
        a = rng.normal(size=3)
        return tuple(a / np.linalg.norm(a))

    def place():
        qr = rng.normal(size=4)
        return quat_to_matrix(qr / np.linalg.norm(qr)), rng.uniform(-0.4, 0.4, 3)

    def inertia():
        # principal moments 0.05 + [0, 0.02): the triangle inequality holds
        return rng.uniform(0.5, 2.0), rng.uniform(-0.1, 0.1, 3), np.diag(
            0.05 + rng.uniform(0.0, 0.02, 3))

    b = ModelBuilder("routed" if routed else "inline")
    b.add_body("base", None, joint(Free, "root"), None, *inertia())
    b.add_body("a", "base", joint(Revolute, "r", axis=axis()), place(), *inertia())
    b.add_body("b", "a", joint(Helical, "h", axis=axis(), pitch=0.07), place(), *inertia())
    b.add_body("c", "base", joint(Prismatic, "p", axis=axis()), place(), *inertia())
    b.add_body("d", "c", joint(Spherical, "s"), place(), *inertia())
    b.add_body("e", "d", joint(Planar, "pl"), place(), *inertia())
    return b.build()


def _states(model, n, seed=9):
    rng = np.random.default_rng(seed)
    Q = np.array([kd.random_configuration(model, rng) for _ in range(n)])
    return Q, rng.normal(size=(n, model.nv)), rng.normal(size=(n, model.nv))


def test_the_routed_model_is_packed_with_entry_tables(registered):
    data = flatten(_tree(True)).data
    nb = data.shape[0] - 1
    assert np.all(data[:nb, layout.JTYPE] == layout.EXTENSION)
    assert np.all(data[:nb, layout.JFUNCS] > 0)
    inline = flatten(_tree(False)).data
    assert np.all(inline[:nb, layout.JTYPE] < layout.EXTENSION)
    assert np.all(inline[:nb, layout.JFUNCS] == 0)
    # the tables differ only in JTYPE and JFUNCS
    other = [c for c in range(layout.WIDTH) if c not in (layout.JTYPE, layout.JFUNCS)]
    np.testing.assert_array_equal(data[:, other], inline[:, other])


def test_every_algorithm_gives_the_inline_bits(registered):
    routed, inline = _tree(True), _tree(False)
    Q, V, A = _states(inline, 6)
    for q, v, a in zip(Q, V, A, strict=True):
        tau = kd.rnea(inline, q, v, a)
        np.testing.assert_array_equal(kd.rnea(routed, q, v, a), tau)
        np.testing.assert_array_equal(kd.crba(routed, q), kd.crba(inline, q))
        np.testing.assert_array_equal(kd.aba(routed, q, v, tau), kd.aba(inline, q, v, tau))
        r, i = kd.forward_kinematics(routed, q, v), kd.forward_kinematics(inline, q, v)
        np.testing.assert_array_equal(r.R, i.R)
        np.testing.assert_array_equal(r.velocity, i.velocity)
        np.testing.assert_array_equal(kd.jacobian(routed, q, "e"), kd.jacobian(inline, q, "e"))
        np.testing.assert_array_equal(kd.centroidal_momentum_matrix(routed, q),
                                      kd.centroidal_momentum_matrix(inline, q))
        for r, i in zip(kd.rnea_derivatives(routed, q, v, a), kd.rnea_derivatives(inline, q, v, a),
                        strict=True):
            np.testing.assert_array_equal(r, i)
    np.testing.assert_array_equal(kd.rnea(routed, Q, V, A), kd.rnea(inline, Q, V, A))
    np.testing.assert_array_equal(kd.crba(routed, Q), kd.crba(inline, Q))
    np.testing.assert_array_equal(kd.aba(routed, Q, V, A), kd.aba(inline, Q, V, A))


def test_integration_on_the_manifold_gives_the_inline_bits(registered):
    """The ``integrate`` slot (spherical, free and planar q are not additive) in
    integrate_configuration (the inline bits) and in the compiled RK4 loop on the manifold,
    whose chart rate J(ξ)⁻¹ v takes the quadrature for a type of one's own where the
    built-ins have closed forms: the runs agree to round-off, and the routed one with the
    Python RK4 on it."""
    routed, inline = _tree(True), _tree(False)
    Q, V, _ = _states(inline, 1)
    np.testing.assert_array_equal(kd.integrate_configuration(routed, Q[0], V[0], 0.1),
                                  kd.integrate_configuration(inline, Q[0], V[0], 0.1))
    t_r = kd.simulate(routed, Q[0], 0.3 * V[0], 0.05, method="rk4", dt=1e-3)
    t_i = kd.simulate(inline, Q[0], 0.3 * V[0], 0.05, method="rk4", dt=1e-3)
    t_p = kd.simulate(routed, Q[0], 0.3 * V[0], 0.05, method="rk4", dt=1e-3, compiled=False)
    for t in (t_i, t_p):
        np.testing.assert_allclose(t_r.q, t.q, rtol=0, atol=1e-13)
        np.testing.assert_allclose(t_r.v, t.v, rtol=0, atol=1e-12)


def test_strided_arrays_reach_the_entry_points(registered):
    """The kernels accept arrays of any layout; an entry point gets a contiguous view or
    copy (joint_extension.array_view): every stride, reversed ones included."""
    routed = _tree(True)
    data = flatten(routed).data
    Q, V, A = _states(routed, 1)
    nb = data.shape[0] - 1

    def run(q, v, a):
        tau = np.empty(routed.nv)
        status = rnea_into(data, q, v, a, data, True, True, False, tau)
        assert status == 0
        return tau

    want = run(Q[0], V[0], A[0])
    for stride in (2, -1, -3):
        def spread(x, stride=stride):  # x as a view at this stride, NaN between
            view = np.full(abs(stride) * x.size, np.nan)[::stride]
            view[:] = x
            return view
        q, v, a = spread(Q[0]), spread(V[0]), spread(A[0])
        np.testing.assert_array_equal(q, Q[0])
        np.testing.assert_array_equal(run(q, v, a), want)
    assert nb == 6


def test_missing_or_unknown_primitives_are_named():
    @dataclass(frozen=True)
    class NoPose(Revolute):
        kind = "no_pose"
        compiled_code = "NO_POSE"
        compiled_primitives = object()  # nothing in it

    @dataclass(frozen=True)
    class BadColumn(Revolute):
        kind = "bad_column"
        compiled_code = "BAD_COLUMN"
        compiled_parameters = ("AXES",)
        compiled_primitives = revolute

    for cls, match in ((NoPose, "'no_pose'.*compiled primitive 'joint_pose' is needed"),
                       (BadColumn, "'bad_column'.*names 'AXES', not a body column")):
        b = ModelBuilder("bad")
        b.add_body("l", None, cls("j", axis=(0.6, 0.8, 0.0)), None, 1.0, (0, 0, 0),
                   np.eye(3) * 0.1)
        with pytest.raises(ModelError, match=match):
            kd.rnea(b.build(), [0.1], [0.0], [0.0])


def test_entry_tables_are_made_once_per_type(registered):
    cls = ROUTED[Revolute]
    assert joint_extension.entry_table(cls) == joint_extension.entry_table(cls)
    table = joint_extension._TABLES[cls][0]
    assert table[joint_extension.TRANSFORM] != 0 and table[joint_extension.INTEGRATE] == 0
