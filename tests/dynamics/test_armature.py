"""Armature (a joint's rotor inertia on M's diagonal) in every numeric path.

Against Pinocchio: tests/model/test_urdf_pinocchio.py (crba, rnea, aba). Here the
identities that hold whatever the implementation: M from crba equals the columns of
rnea at unit accelerations, aba inverts rnea, T = ½ vᵀ M v, and every path (single
state, batch in vector lanes, per-state batch, numpy reference, C front end,
derivatives, the integrators' energy kernel) gives the same numbers.
"""

from __future__ import annotations

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics import reference as ref
from kanedyn.errors import ModelError, SymbolicError
from kanedyn.model import ModelBuilder, Revolute
from kanedyn.sim.system import ModelSystem

I_OK = np.diag([0.01, 0.02, 0.025])


def models():
    rng = np.random.default_rng(3)
    panda = kd.load_robot("panda")
    quad = kd.load_robot("quadruped", floating_base=True)
    return [
        kd.load_robot("panda", armature={n: float(rng.uniform(0.05, 0.5))
                                         for n in panda.joint_names}),
        # a floating base with a rotor on every joint but the root (lanes take the batch)
        kd.load_robot("quadruped", floating_base=True, armature=0.2),
        # and one on the free root too: ABA's direct solve, per-state batch path
        kd.load_robot("quadruped", floating_base=True,
                      armature={n: 0.1 for n in quad.joint_names}),
    ]


MODELS = models()
IDS = ["panda", "quadruped", "quadruped-root"]


def _state(model, rng, n=None):
    shape = () if n is None else (n,)
    q = (kd.random_configuration(model, rng) if n is None
         else np.stack([kd.random_configuration(model, rng) for _ in range(n)]))
    return q, rng.normal(size=shape + (model.nv,)), rng.normal(size=shape + (model.nv,))


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_identities(model):
    rng = np.random.default_rng(0)
    q, v, a = _state(model, rng)
    M = kd.crba(model, q)
    h = kd.nonlinear_effects(model, q, v)
    # columns of M from RNEA at unit accelerations, without velocity and gravity terms
    g0 = model.with_gravity((0, 0, 0))
    cols = np.stack([kd.rnea(g0, q, np.zeros(model.nv), e) for e in np.eye(model.nv)], 1)
    np.testing.assert_allclose(M, cols, rtol=0, atol=1e-12 * np.abs(M).max())
    tau = kd.rnea(model, q, v, a)
    np.testing.assert_allclose(tau, M @ a + h, rtol=0, atol=1e-11 * np.abs(tau).max())
    np.testing.assert_allclose(kd.aba(model, q, v, tau), a, rtol=0, atol=1e-9)
    T = kd.kinetic_energy(model, q, v)
    assert T == pytest.approx(0.5 * v @ M @ v, rel=1e-12)
    assert T == pytest.approx(ref.kinetic_energy(model, q, v), rel=1e-12)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_every_path_agrees(model):
    """Kernel single state (C front end and numba entry), batch (lanes or per state),
    and the numpy reference of the book."""
    rng = np.random.default_rng(1)
    Q, V, A = _state(model, rng, n=11)  # 11: a full lane block and a partial one
    Mb, Tb, Ab = kd.crba(model, Q), kd.rnea(model, Q, V, A), kd.aba(model, Q, V, A)
    for k in range(Q.shape[0]):
        q, v, a = Q[k], V[k], A[k]
        M, tau, acc = kd.crba(model, q), kd.rnea(model, q, v, a), kd.aba(model, q, v, a)
        np.testing.assert_array_equal(M, Mb[k])  # same bits alone or in a batch
        np.testing.assert_array_equal(tau, Tb[k])
        np.testing.assert_array_equal(acc, Ab[k])
        np.testing.assert_allclose(M, ref.crba(model, q), rtol=0, atol=1e-12 * np.abs(M).max())
        np.testing.assert_allclose(tau, ref.rnea(model, q, v, a), rtol=0,
                                   atol=1e-11 * np.abs(tau).max())
        np.testing.assert_allclose(acc, ref.aba(model, q, v, a), rtol=0,
                                   atol=1e-10 * np.abs(acc).max())


@pytest.mark.parametrize("model", MODELS[:2], ids=IDS[:2])
def test_derivatives_and_system(model):
    """aba_derivatives against a central difference of aba (which has the armature);
    ModelSystem's energy kernel against T = ½ vᵀ M v."""
    rng = np.random.default_rng(2)
    q, v, tau = _state(model, rng)
    dq, dv = kd.aba_derivatives(model, q, v, tau)
    eps = 1e-6
    fd = np.stack([(kd.aba(model, q, v + eps * e, tau) - kd.aba(model, q, v - eps * e, tau))
                   / (2 * eps) for e in np.eye(model.nv)], 1)
    np.testing.assert_allclose(dv, fd, rtol=0, atol=1e-6 * max(1.0, np.abs(fd).max()))
    fq = np.stack([(kd.aba(model, kd.integrate_configuration(model, q, e, eps), v, tau)
                    - kd.aba(model, kd.integrate_configuration(model, q, e, -eps), v, tau))
                   / (2 * eps) for e in np.eye(model.nv)], 1)
    np.testing.assert_allclose(dq, fq, rtol=0, atol=1e-5 * max(1.0, np.abs(fq).max()))
    system = ModelSystem(model)
    M = kd.crba(model, q)
    assert system.kinetic_energy(q, v) == pytest.approx(0.5 * v @ M @ v, rel=1e-12)
    np.testing.assert_allclose(system.energy_gradient(q, v)[1], M @ v, rtol=1e-12)


def test_energy_is_conserved_in_simulation():
    """A free pendulum chain with rotors: the energy (bodies + rotors) is an invariant of
    the motion, which RK4 keeps to its truncation error."""
    model = kd.models.pendulum_chain(n=3, planar=True)
    b = ModelBuilder("rotors")
    for body in model.bodies:
        j = body.joint
        b.add_body(body.name, None if body.parent < 0 else model.bodies[body.parent].name,
                   Revolute(j.name, axis=j.axis, armature=0.3), body.placement,
                   body.mass, body.com, kd.spatial.inertia_parameters(body.inertia)[2])
    rotors = b.build()
    q0, v0 = np.array([0.5, -0.3, 0.2]), np.array([0.0, 1.0, -1.0])
    traj = kd.simulate(rotors, q0, v0, 2.0, method="rk4", dt=1e-3)
    E = traj.energy
    assert np.ptp(E) < 1e-7 * max(1.0, abs(E[0]))
    # the rotors change the motion (the armature is not ignored by the integrator)
    plain = kd.simulate(model, q0, v0, 2.0, method="rk4", dt=1e-3)
    assert np.abs(plain.q[-1] - traj.q[-1]).max() > 1e-2


def test_armature_validation_and_kane():
    b = ModelBuilder("m")
    with pytest.raises(ModelError, match="joint 'j': armature must be a finite number >= 0"):
        b.add_body("a", None, Revolute("j", armature=-1.0), None, 1.0, (0, 0, -1), I_OK)
    with pytest.raises(ModelError, match="armature must be"):
        b.add_body("a", None, Revolute("j", armature=np.nan), None, 1.0, (0, 0, -1), I_OK)
    from kanedyn import kane

    with pytest.raises(SymbolicError, match="armature"):
        kane.derive(MODELS[0])
