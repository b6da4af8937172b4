"""Pinocchio twins of kanedyn models, for the tests that take Pinocchio as the peer (the
dynamics, centroidal, joint-wrench and identification tests).

``pin_twin(model)`` builds the same tree in Pinocchio joint by joint (every joint type
of ``kd.models.random_tree``); ``pin_urdf_twin(name, floating)`` loads a shipped robot's
URDF with Pinocchio's own parser (an independent loader). Both return a :class:`Twin`
with the maps between the two libraries' coordinates:

- Pinocchio's free flyer: q = (p, x, y, z, w), v = (v_lin, ω), both in the base frame;
  kanedyn's: q = (p, w, x, y, z), v = (ω, v_lin). Spherical: (x, y, z, w) against
  (w, x, y, z). Planar: (x, y, cos θ, sin θ) against (x, y, θ). A continuous joint of
  a URDF: (cos θ, sin θ) against θ.
- Spatial vectors: Pinocchio's Motion and Force are linear first; kanedyn's angular
  first (:data:`SWAP` reorders a 6-vector or the rows of a 6 x n matrix).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.model.urdf import robot_path
from kanedyn.spatial import inertia_parameters


def pytest_configure(config) -> None:
    # the suite tests the compiled kernels: a first call on a cold cache waits for its
    # kernel instead of being answered by the reference while it compiles
    # (kanedyn.dynamics.first_calls; tests/dynamics/test_first_calls.py tests that
    # mode). The environment variable for the subprocesses the tests start
    from kanedyn.dynamics import first_calls

    os.environ["KANEDYN_FIRST_CALLS"] = "compile"
    first_calls.set_mode("compile")


#: [lin; ang] <-> [ang; lin]
SWAP = np.array([3, 4, 5, 0, 1, 2])


@dataclass
class Twin:
    pmodel: object
    pdata: object
    to_pin_q: object   # kanedyn q -> Pinocchio q
    iv: np.ndarray     # v_pin = v_kd[iv]
    jid: list          # Pinocchio joint id (int) of kanedyn body i


def _q_pieces(model, pmodel, jid):
    pieces = []
    for b in model.bodies:
        q0, kind = b.iq.start, b.joint.kind
        nqp = pmodel.nqs[jid[b.index]]
        if kind == "free":
            pieces.append(lambda q, q0=q0: q[[q0, q0 + 1, q0 + 2, q0 + 4, q0 + 5, q0 + 6, q0 + 3]])
        elif kind == "spherical":
            pieces.append(lambda q, q0=q0: q[[q0 + 1, q0 + 2, q0 + 3, q0]])
        elif kind == "planar":
            pieces.append(lambda q, q0=q0: np.array([q[q0], q[q0 + 1], np.cos(q[q0 + 2]),
                                                     np.sin(q[q0 + 2])]))
        elif nqp == 2:  # a continuous joint
            pieces.append(lambda q, q0=q0: np.array([np.cos(q[q0]), np.sin(q[q0])]))
        else:
            pieces.append(lambda q, q0=q0, n=b.joint.nq: q[q0:q0 + n])
    order = np.argsort(jid)  # Pinocchio's q is in joint-id order

    def to_pin_q(q):
        return np.concatenate([pieces[i](q) for i in order])

    iv = np.empty(model.nv, dtype=int)
    for b in model.bodies:
        j = pmodel.joints[jid[b.index]]
        idx = np.arange(b.iv.start, b.iv.stop)
        if b.joint.kind == "free":
            idx = idx[[3, 4, 5, 0, 1, 2]]
        iv[j.idx_v:j.idx_v + j.nv] = idx
    return to_pin_q, iv


def _twin(model, pmodel) -> Twin:
    jid = [int(pmodel.getJointId(b.joint.name)) for b in model.bodies]
    assert min(jid) > 0 and len(set(jid)) == model.nb
    to_pin_q, iv = _q_pieces(model, pmodel, jid)
    return Twin(pmodel, pmodel.createData(), to_pin_q, iv, jid)


@pytest.fixture
def pin_twin():
    """``pin_twin(model)``: the same tree built in Pinocchio joint by joint."""
    pin = pytest.importorskip("pinocchio")

    def build(model) -> Twin:
        pm = pin.Model()
        pm.gravity = pin.Motion(np.asarray(model.gravity, float), np.zeros(3))
        ids = []
        for b in model.bodies:
            j = b.joint
            if j.kind == "revolute":
                jm = pin.JointModelRevoluteUnaligned(np.asarray(j.axis, float))
            elif j.kind == "prismatic":
                jm = pin.JointModelPrismaticUnaligned(np.asarray(j.axis, float))
            elif j.kind == "helical":
                jm = pin.JointModelHelicalUnaligned(np.asarray(j.axis, float), float(j.pitch))
            elif j.kind == "spherical":
                jm = pin.JointModelSpherical()
            elif j.kind == "planar":
                jm = pin.JointModelPlanar()
            elif j.kind == "free":
                jm = pin.JointModelFreeFlyer()
            else:
                raise AssertionError(j.kind)
            parent = 0 if b.parent < 0 else ids[b.parent]
            placement = pin.SE3(b.placement.rotation, b.placement.translation)
            jid = pm.addJoint(parent, jm, placement, j.name)
            m, c, Ic = inertia_parameters(b.inertia)
            pm.appendBodyToJoint(jid, pin.Inertia(m, c, Ic), pin.SE3.Identity())
            ids.append(jid)
        return _twin(model, pm)

    return build


@pytest.fixture
def pin_urdf_twin():
    """``pin_urdf_twin(name, floating)``: (kanedyn model, Twin) of a shipped robot, each
    library loading the URDF with its own parser."""
    pin = pytest.importorskip("pinocchio")

    def load(name: str, floating: bool):
        path = str(robot_path(name))
        model = kd.load_urdf(path, floating_base=floating)
        pm = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating
              else pin.buildModelFromUrdf(path))
        return model, _twin(model, pm)

    return load


@pytest.fixture
def cold_loop_check(monkeypatch):
    """``cold_loop_check(method, model, q0, v0, loop, job, **kw)``: :func:`_cold_loop_check`
    with this test's monkeypatch."""
    return lambda *args, **kw: _cold_loop_check(monkeypatch, *args, **kw)


def _cold_loop_check(monkeypatch, method: str, model, q0, v0, loop, job: str, **kw) -> None:
    """On a cold cache (kanedyn.dynamics.first_calls, mode "reference") a run whose compiled
    ``loop`` is neither compiled nor in the disk cache takes the Python steps (the
    method's ``compiled=False`` run, bit for bit; the loop is not called) and hands the
    loop's first-run ``job`` (a function of the loop's module) to a compiler process;
    that job calls the loop with the argument types of a real run, so that what it
    compiles is what the run after it loads. Nothing is compiled here but what the Python
    steps call (run it beside the tests that run them)."""
    import sys

    from numba import typeof
    from numba.core.typing.typeof import Purpose

    from kanedyn.dynamics import first_calls

    job = f"call:{loop.__module__}:{job}"
    # the Python steps themselves first (every kernel they call is then compiled here)
    c = kd.simulate(model, q0, v0, 0.05, method=method, dt=1e-3, compiled=False, **kw)
    seen, asked, wanted = [], [], {}
    real = first_calls.loop_ready

    def spy(loop_, args, job_):
        seen.append((loop_, args, job_))
        return real(loop_, args, job_)

    class Cold:
        """The loop as a new process on an empty cache sees it: nothing compiled, nothing
        on disk (in_disk_cache below); counts its calls."""

        overloads: dict = {}
        _cache, targetctx, calls = loop._cache, loop.targetctx, 0

        def __call__(self, *args):
            self.calls += 1
            return loop(*args)

    cold = Cold()
    cold.__module__ = loop.__module__  # (the job's module, as the loop's)
    with monkeypatch.context() as mp:
        mp.setattr(first_calls, "loop_ready", spy)
        mp.setattr(sys.modules[loop.__module__], loop.__name__, cold)
        mp.setattr(first_calls, "in_disk_cache", lambda *a: False)
        mp.setattr(first_calls, "_mode", "reference")
        mp.setattr(first_calls, "_poll", lambda: asked.append(1))
        mp.setattr(first_calls, "_wanted", wanted)
        b = kd.simulate(model, q0, v0, 0.05, method=method, dt=1e-3, **kw)
        assert len(seen) == 1 and seen[0][0] is cold and seen[0][2] == job
        assert job in wanted and asked and cold.calls == 0  # (the Python steps ran)
        np.testing.assert_array_equal(b.q, c.q)
        np.testing.assert_array_equal(b.v, c.v)
        assert np.ptp(b.q, axis=0).max() > 1e-4  # (it moved)
        # the job, as the compiler process runs it, reaches the loop with the argument
        # types of a real run (not run here: the spy answers no, nothing is compiled)
        run_args = seen.pop()[1]
        first_calls.make(job)
        assert len(seen) == 1 and seen[0][0] is cold and cold.calls == 0
        assert ([typeof(x, Purpose.argument) for x in seen[0][1]]
                == [typeof(x, Purpose.argument) for x in run_args])
