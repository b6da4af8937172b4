"""A joint type is one class and one registry line (docs/architecture.md, "How to add a
joint type"): two types declared here, outside the package, are taken by every layer.

- ``AxialRevolute``: a revolute joint about the joint frame's x axis, written from scratch
  (a Joint subclass, not a Revolute). Its compiled primitives are the revolute ones, so
  its ``pack`` writes that code and the compiled rnea/crba/aba, kinematics and the
  compiled RK4 loop take it unchanged. Checked against the O(n³) reference
  (dynamics/reference.py) and against the same mechanism built from ``Revolute``.
- ``Cylindrical``: rotation about and translation along z, nq = nv = 2, with no compiled
  primitive. Its numpy definition reaches the reference algorithms and the
  configuration maps; the reference dynamics equal those of a prismatic joint followed by
  a revolute one through a massless link (an independent model of the same motion), and
  the fast kernels refuse it with a ModelError naming it.
- ``CompiledCylindrical``: the same joint with its compiled primitives (below, in this
  module) and a ``compiled_code`` of its own, not a built-in one: the kernels call them
  through C entry points (kernels/joint_extension.py), with no edit of the package.
  Compiled rnea/crba/aba (one state and batched), kinematics and RK4 against the
  reference and against the prismatic-then-revolute model. Its ``symbolic_model``
  takes it to ``kane.derive`` and to the Lagrange check (verify/lagrange.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics import reference
from kanedyn.errors import ModelError
from kanedyn.model import ModelBuilder, Prismatic, Revolute
from kanedyn.model.joints import JOINT_TYPES, Joint, register_joint_type
from kanedyn.model.joints.base import compiled_primitive
from kanedyn.spatial import axis_angle

I1 = np.diag([0.02, 0.03, 0.04])
I2 = np.diag([0.01, 0.015, 0.02])


@dataclass(frozen=True)
class AxialRevolute(Joint):
    """Rotation q about the x axis of the joint frame; S = (1, 0, 0, 0, 0, 0)."""

    nq = 1
    nv = 1
    kind = "axial_revolute"
    compiled_code = "REVOLUTE"

    def pose(self, qj):
        return axis_angle((1.0, 0.0, 0.0), float(qj[0])), np.zeros(3)

    def motion_subspace(self, qj=None):
        S = np.zeros((6, 1))
        S[0, 0] = 1.0
        return S

    def pack(self, row, layout):
        super().pack(row, layout)
        row[layout.AXIS:layout.AXIS + 3] = (1.0, 0.0, 0.0)
        row[layout.SIDX] = 0      # S is the unit column e_0 ...
        row[layout.AXIS_ID] = 0   # ... and the rotation is about x: the sparse shortcut


@dataclass(frozen=True)
class Cylindrical(Joint):
    """q = (θ, d): rotation θ about z and translation d along z; v = (ω_z, v_z)."""

    nq = 2
    nv = 2
    kind = "cylindrical"

    def pose(self, qj):
        return axis_angle((0.0, 0.0, 1.0), float(qj[0])), np.array([0.0, 0.0, float(qj[1])])

    def motion_subspace(self, qj=None):
        S = np.zeros((6, 2))
        S[2, 0] = 1.0
        S[5, 1] = 1.0
        return S

    def symbolic_model(self, qj, uj, ops):
        s, c = ops.sincos(qj[0])
        zero, one = ops.number(0.0), ops.number(1.0)
        return [[c, -s, zero], [s, c, zero], [zero, zero, one]], [zero, zero, qj[1]], list(uj)


@dataclass(frozen=True)
class CompiledCylindrical(Cylindrical):
    """Cylindrical, with the compiled primitives of this module."""

    kind = "compiled_cylindrical"
    compiled_code = "CYLINDRICAL"


# the compiled primitives of CompiledCylindrical (contract: kanedyn.model.joints.base)
@compiled_primitive
def joint_pose(q, k):
    """R = rotation q[k] about z, p = q[k + 1] e_z."""
    c, s = np.cos(q[k]), np.sin(q[k])
    return (0, c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, q[k + 1])


@compiled_primitive
def motion_subspace_column(c):
    """S = [e_z 0; 0 e_z]."""
    return 0.0, 0.0, 1.0 if c == 0 else 0.0, 0.0, 0.0, 1.0 if c == 1 else 0.0


@compiled_primitive
def motion_subspace_times(x, o):
    return 0.0, 0.0, x[o], 0.0, 0.0, x[o + 1]


@compiled_primitive
def motion_subspace_transpose_times(F, k, c):
    return F[k, 2] if c == 0 else F[k, 5]


@pytest.fixture
def registered():
    """Register the types for one test and leave the registry as it was."""
    before = dict(JOINT_TYPES)
    register_joint_type(AxialRevolute)
    register_joint_type(Cylindrical)
    register_joint_type(CompiledCylindrical)
    yield
    JOINT_TYPES.clear()
    JOINT_TYPES.update(before)


def _arm(first) -> kd.Model:
    b = ModelBuilder("arm")
    b.add_body("l1", None, first, None, 1.3, (0.0, 0.1, -0.3), I1)
    b.add_body("l2", "l1", Revolute("j2", axis=(0.0, 1.0, 0.0)), (np.eye(3), (0.0, 0.0, -0.6)),
               0.8, (0.05, 0.0, -0.2), I2)
    return b.build()


def _state(rng, model):
    return (kd.random_configuration(model, rng), rng.normal(size=model.nv),
            rng.normal(size=model.nv), rng.normal(size=model.nv))


def test_registry_refuses_a_taken_kind_and_a_non_joint(registered):
    assert JOINT_TYPES["axial_revolute"] is AxialRevolute
    register_joint_type(AxialRevolute)  # the same class again is no change

    @dataclass(frozen=True)
    class Impostor(AxialRevolute):
        pass

    with pytest.raises(ModelError, match="'axial_revolute' is already registered"):
        register_joint_type(Impostor)
    with pytest.raises(ModelError, match="takes a Joint subclass"):
        register_joint_type(int)


def test_new_type_on_the_compiled_path_matches_reference_and_revolute(registered):
    new = _arm(AxialRevolute("j1"))
    old = _arm(Revolute("j1", axis=(1.0, 0.0, 0.0)))
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, v, a, tau = _state(rng, new)
        tau_ref = reference.rnea(new, q, v, a)
        M_ref = reference.crba(new, q)
        qdd_ref = reference.aba(new, q, v, tau)
        # the reference itself agrees with the model built from the existing type
        np.testing.assert_allclose(tau_ref, reference.rnea(old, q, v, a), rtol=0, atol=1e-12)
        for model in (new, old):
            np.testing.assert_allclose(kd.rnea(model, q, v, a), tau_ref, rtol=0, atol=1e-11)
            np.testing.assert_allclose(kd.crba(model, q), M_ref, rtol=0, atol=1e-11)
            np.testing.assert_allclose(kd.aba(model, q, v, tau), qdd_ref, rtol=0, atol=1e-10)
        # kinematics: compiled body poses against the reference placements
        kin = kd.forward_kinematics(new, q, v)
        R_ref, p_ref = reference.body_placements(new, q)
        np.testing.assert_allclose(kin.R, R_ref, rtol=0, atol=1e-12)
        np.testing.assert_allclose(kin.p, p_ref, rtol=0, atol=1e-12)
        np.testing.assert_allclose(kin.velocity, reference.body_velocities(new, q, v),
                                   rtol=0, atol=1e-12)


def test_new_type_simulates_like_the_revolute_model(registered):
    new = _arm(AxialRevolute("j1"))
    old = _arm(Revolute("j1", axis=(1.0, 0.0, 0.0)))
    q0, v0 = np.array([0.4, -0.3]), np.array([0.5, 1.0])
    for method in ("rk4", "verlet"):
        t_new = kd.simulate(new, q0, v0, 0.5, method=method, dt=1e-3)
        t_old = kd.simulate(old, q0, v0, 0.5, method=method, dt=1e-3)
        np.testing.assert_allclose(t_new.q, t_old.q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(t_new.v, t_old.v, rtol=0, atol=1e-12)


def _cylinder_arm(cls=Cylindrical) -> kd.Model:
    return _arm(cls("c"))


def _prismatic_then_revolute() -> kd.Model:
    """The same motion: slide along z (a massless link), then turn about z."""
    b = ModelBuilder("arm2")
    b.add_body("slider", None, Prismatic("d", axis=(0.0, 0.0, 1.0)), None, 0.0)
    b.add_body("l1", "slider", Revolute("th", axis=(0.0, 0.0, 1.0)), None, 1.3,
               (0.0, 0.1, -0.3), I1)
    b.add_body("l2", "l1", Revolute("j2", axis=(0.0, 1.0, 0.0)),
               (np.eye(3), (0.0, 0.0, -0.6)), 0.8, (0.05, 0.0, -0.2), I2)
    return b.build()


def test_new_type_without_kernels_on_the_reference_path(registered):
    cyl, pr = _cylinder_arm(), _prismatic_then_revolute()
    swap = [1, 0, 2]  # (θ, d, q2) of the cylinder arm is (d, θ, q2) of the other
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, v, a, tau = _state(rng, cyl)
        np.testing.assert_allclose(reference.rnea(cyl, q, v, a),
                                   reference.rnea(pr, q[swap], v[swap], a[swap])[swap],
                                   rtol=0, atol=1e-12)
        np.testing.assert_allclose(reference.crba(cyl, q),
                                   reference.crba(pr, q[swap])[np.ix_(swap, swap)],
                                   rtol=0, atol=1e-12)
        np.testing.assert_allclose(reference.aba(cyl, q, v, tau),
                                   reference.aba(pr, q[swap], v[swap], tau[swap])[swap],
                                   rtol=0, atol=1e-10)
        Rc, pc = reference.body_placements(cyl, q)
        Rp, pp = reference.body_placements(pr, q[swap])
        np.testing.assert_allclose(Rc, Rp[1:], rtol=0, atol=1e-12)
        np.testing.assert_allclose(pc, pp[1:], rtol=0, atol=1e-12)
        # the configuration maps are the joint's defaults (additive coordinates)
        np.testing.assert_allclose(kd.integrate_configuration(cyl, q, v, 0.1), q + 0.1 * v)
    assert cyl.nq == cyl.nv == 3 and not cyl.has_quaternions
    with pytest.raises(ModelError, match="joint 'c': kind 'cylindrical' has no fast kernel"):
        kd.rnea(cyl, q, v, a)


def test_new_code_compiled_outside_the_package(registered):
    """A joint code of its own, compiled: the kernels call the primitives above."""
    cyl, pr = _cylinder_arm(CompiledCylindrical), _prismatic_then_revolute()
    swap = [1, 0, 2]
    rng = np.random.default_rng(11)
    Q, V, A, T = (np.array(x) for x in zip(*(_state(rng, cyl) for _ in range(5)), strict=True))
    for q, v, a, tau in zip(Q, V, A, T, strict=True):
        tau_ref = reference.rnea(pr, q[swap], v[swap], a[swap])[swap]
        np.testing.assert_allclose(kd.rnea(cyl, q, v, a), tau_ref, rtol=0, atol=1e-12)
        np.testing.assert_allclose(kd.crba(cyl, q), reference.crba(pr, q[swap])[
            np.ix_(swap, swap)], rtol=0, atol=1e-12)
        np.testing.assert_allclose(kd.aba(cyl, q, v, tau),
                                   reference.aba(pr, q[swap], v[swap], tau[swap])[swap],
                                   rtol=0, atol=1e-10)
        kin = kd.forward_kinematics(cyl, q, v)
        R_ref, p_ref = reference.body_placements(cyl, q)
        np.testing.assert_allclose(kin.R, R_ref, rtol=0, atol=1e-12)
        np.testing.assert_allclose(kin.p, p_ref, rtol=0, atol=1e-12)
    # batched: each state gives its single-state bits
    np.testing.assert_array_equal(kd.rnea(cyl, Q, V, A),
                                  [kd.rnea(cyl, *s) for s in zip(Q, V, A, strict=True)])
    np.testing.assert_array_equal(kd.crba(cyl, Q), [kd.crba(cyl, q) for q in Q])
    # the compiled RK4 loop against the prismatic-then-revolute model
    q0, v0 = np.array([0.4, -0.2, 0.3]), np.array([0.5, 0.3, -1.0])
    t_cyl = kd.simulate(cyl, q0, v0, 0.5, method="rk4", dt=1e-3)
    t_pr = kd.simulate(pr, q0[swap], v0[swap], 0.5, method="rk4", dt=1e-3)
    np.testing.assert_allclose(t_cyl.q, t_pr.q[:, swap], rtol=0, atol=1e-11)


def test_new_type_in_kane_derive_and_the_lagrange_check(registered):
    """The symbolic model of the class (no edit of kane/ or verify/) against the
    prismatic-then-revolute model."""
    import sympy as sp

    from kanedyn import kane
    from kanedyn.verify.lagrange import lagrange_terms

    cyl, pr = _cylinder_arm(), _prismatic_then_revolute()
    swap = [1, 0, 2]
    eom = kane.derive(cyl)
    fM, fh = lagrange_terms(cyl)
    rng = np.random.default_rng(4)
    for _ in range(2):
        q, v, _, tau = _state(rng, cyl)
        env = {s: sp.Float(float(x)) for s, x in zip(eom.q, q, strict=True)}
        env.update({s: sp.Float(float(x)) for s, x in zip(eom.u, v, strict=True)})
        env.update({s: sp.Float(float(x)) for s, x in zip(eom.inputs, tau, strict=True)})
        for sym, e in eom.intermediates:
            env[sym] = sp.Float(float(sp.sympify(e).xreplace(env)))
        M = np.array(eom.mass_matrix.xreplace(env), dtype=float)
        F = np.array(eom.forcing.xreplace(env), dtype=float).ravel()
        M_pr = reference.crba(pr, q[swap])[np.ix_(swap, swap)]
        h_pr = reference.rnea(pr, q[swap], v[swap], np.zeros(3))[swap]
        np.testing.assert_allclose(M, M_pr, rtol=0, atol=1e-12)
        np.testing.assert_allclose(F, tau - h_pr, rtol=0, atol=1e-11)
        np.testing.assert_allclose(fM(q), M_pr, rtol=0, atol=1e-12)
        np.testing.assert_allclose(fh(q, v), h_pr, rtol=0, atol=1e-11)
