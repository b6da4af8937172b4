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

from pathlib import Path

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.model.urdf import ROBOTS, robot_path

pin = pytest.importorskip("pinocchio")


def _maps(model, pmodel):
    """``q ↦ q_pin`` and the permutation ``iv`` with ``v_pin = v[iv]``.

    Pinocchio's free flyer: q = (p, x, y, z, w), v = (v_lin, ω); its continuous
    (unbounded revolute) joints: q = (cos θ, sin θ)."""
    pieces, iv = [], []
    for jid in range(1, pmodel.njoints):
        body = model.bodies[model.joint_index(pmodel.names[jid])]
        q0, v0 = body.iq.start, body.iv.start
        if body.joint.kind == "free":
            pieces.append(lambda q, q0=q0: q[[q0, q0 + 1, q0 + 2, q0 + 4, q0 + 5, q0 + 6, q0 + 3]])
            iv += [v0 + 3, v0 + 4, v0 + 5, v0, v0 + 1, v0 + 2]
        elif pmodel.nqs[jid] == 2:
            pieces.append(lambda q, q0=q0: np.array([np.cos(q[q0]), np.sin(q[q0])]))
            iv.append(v0)
        else:
            assert pmodel.nqs[jid] == body.joint.nq == 1
            pieces.append(lambda q, q0=q0: q[[q0]])
            iv.append(v0)
    return (lambda q: np.concatenate([f(q) for f in pieces])), np.array(iv)


DATA = Path(__file__).resolve().parent.parent / "data" / "urdf"

# the shipped robots and the test files on which Pinocchio's conventions coincide with
# kanedyn's: not planar.urdf (Pinocchio ignores a planar joint's axis), and world_root.urdf
# only with a fixed base (with a floating base Pinocchio floats the dummy 'world' link,
# kanedyn the base link it is fixed to at an offset)
CASES = [(n, f) for n in ROBOTS + ("arm2", "tree_order") for f in (False, True)]
CASES.append(("world_root", False))


@pytest.mark.parametrize("name, floating", CASES,
                         ids=[f"{n}-{'floating' if f else 'fixed'}" for n, f in CASES])
def test_crba_rnea_match_pinocchio(name, floating):
    path = str(robot_path(name) if name in ROBOTS else DATA / f"{name}.urdf")
    model = kd.load_urdf(path, floating_base=floating)
    pmodel = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating
              else pin.buildModelFromUrdf(path))
    pdata = pmodel.createData()
    assert pmodel.nv == model.nv
    if name in ROBOTS:
        # same joint order and q size in both, so the benchmark may compare directly
        assert list(pmodel.names)[1:] == model.joint_names and pmodel.nq == model.nq
    else:
        assert sorted(pmodel.names[1:]) == sorted(model.joint_names)
    # inertias[0] is the universe, which holds the (fixed) root link's mass in Pinocchio
    assert np.isclose(sum(I.mass for I in pmodel.inertias[1:]), model.total_mass, rtol=1e-12)
    to_pin_q, iv = _maps(model, pmodel)

    rng = np.random.default_rng(7)
    for _ in range(3):
        q = kd.random_configuration(model, rng)
        v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
        qp = to_pin_q(q)
        M = kd.crba(model, q)
        Mp = pin.crba(pmodel, pdata, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T  # Pinocchio fills the upper triangle
        scale = max(1.0, np.abs(Mp).max())
        np.testing.assert_allclose(M[np.ix_(iv, iv)], Mp, rtol=0, atol=1e-9 * scale)
        tau = kd.rnea(model, q, v, a)
        taup = pin.rnea(pmodel, pdata, qp, v[iv], a[iv])
        scale = max(1.0, np.abs(taup).max())
        np.testing.assert_allclose(tau[iv], taup, rtol=0, atol=1e-9 * scale)


def random_urdf(seed: int, n: int = 10) -> str:
    """A random tree URDF: every joint type Pinocchio reads the same way, random origins
    (xyz, rpy), unnormalised axes, inertial frames turned by random rpy, fixed links with
    mass, links without <inertial>, joints written in random document order."""
    rng = np.random.default_rng(seed)
    links, joints = ['<link name="l0"/>'], []
    for i in range(1, n):
        m = rng.uniform(0.2, 2.0)
        d = np.sort(rng.uniform(0.01, 0.1, 3))
        d[2] = min(d[2], 0.9 * (d[0] + d[1]))  # principal moments of a real body
        inertial = (f'<inertial><origin xyz="{" ".join(map(str, rng.uniform(-.2, .2, 3)))}" '
                    f'rpy="{" ".join(map(str, rng.uniform(-3, 3, 3)))}"/>'
                    f'<mass value="{m}"/><inertia ixx="{d[0]}" ixy="0" ixz="0" iyy="{d[1]}" '
                    f'iyz="0" izz="{d[2]}"/></inertial>')
        kind = rng.choice(["revolute", "continuous", "prismatic", "fixed", "floating"],
                          p=[0.35, 0.15, 0.2, 0.2, 0.1])
        # only fixed links may lack <inertial>: a massless moving leaf would make M singular
        bare = kind == "fixed" and rng.uniform() < 0.5
        links.append(f'<link name="l{i}">{"" if bare else inertial}</link>')
        limit = '<limit lower="-1" upper="1" effort="1" velocity="1"/>'
        joints.append(
            f'<joint name="j{i}" type="{kind}"><parent link="l{rng.integers(0, i)}"/>'
            f'<child link="l{i}"/><origin xyz="{" ".join(map(str, rng.uniform(-.5, .5, 3)))}" '
            f'rpy="{" ".join(map(str, rng.uniform(-3, 3, 3)))}"/>'
            f'<axis xyz="{" ".join(map(str, rng.normal(size=3)))}"/>{limit}</joint>')
    rng.shuffle(joints)
    return "<robot name='random'>" + "".join(links + joints) + "</robot>"


@pytest.mark.parametrize("seed", range(6))
def test_random_urdf_trees_match_pinocchio(seed, tmp_path):
    xml = random_urdf(seed)
    model = kd.load_urdf_string(xml, floating_base=bool(seed % 2))
    path = tmp_path / "random.urdf"
    path.write_text(xml)
    pmodel = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if seed % 2
              else pin.buildModelFromUrdf(str(path)))
    pdata = pmodel.createData()
    to_pin_q, iv = _maps(model, pmodel)
    rng = np.random.default_rng(seed)
    q = kd.random_configuration(model, rng)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    Mp = pin.crba(pmodel, pdata, to_pin_q(q))
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    np.testing.assert_allclose(kd.crba(model, q)[np.ix_(iv, iv)], Mp, rtol=0, atol=1e-9)
    np.testing.assert_allclose(kd.rnea(model, q, v, a)[iv],
                               pin.rnea(pmodel, pdata, to_pin_q(q), v[iv], a[iv]),
                               rtol=0, atol=1e-9)


# --- every description on disk, and armature (Pinocchio's model.armature) ---------------

def test_every_shipped_and_test_urdf_is_compared():
    """A new file in src/kanedyn/data/robots/ or tests/data/urdf/ joins CASES (or is named
    here with the reason it cannot be compared)."""
    on_disk = {p.stem for p in robot_path("panda").parent.glob("*.urdf")}
    on_disk |= {p.stem for p in DATA.glob("*.urdf")}
    not_comparable = {"planar"}  # Pinocchio 4.1 ignores a planar joint's axis
    assert on_disk - not_comparable == {n for n, _ in CASES}


def _pin_model(path, floating):
    return (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating
            else pin.buildModelFromUrdf(path))


ARMATURE_CASES = [("panda", False), ("quadruped", True), ("humanoid", True), ("arm2", False)]


@pytest.mark.parametrize("name, floating", ARMATURE_CASES,
                         ids=[f"{n}-{'floating' if f else 'fixed'}" for n, f in ARMATURE_CASES])
def test_armature_matches_pinocchio(name, floating):
    """crba, rnea and aba with a rotor inertia on every joint (the floating base's too:
    its direct solve in ABA), against Pinocchio with ``pmodel.armature`` set."""
    path = str(robot_path(name) if name in ROBOTS else DATA / f"{name}.urdf")
    base = kd.load_urdf(path, floating_base=floating)
    rng = np.random.default_rng(11)
    arm = {n: float(rng.uniform(0.01, 0.5)) for n in base.joint_names}
    model = kd.load_urdf(path, floating_base=floating, armature=arm)
    pmodel = _pin_model(path, floating)
    to_pin_q, iv = _maps(model, pmodel)
    pmodel.armature = model.armature[iv]
    pdata = pmodel.createData()
    for _ in range(3):
        q = kd.random_configuration(model, rng)
        v, a, tau = (rng.normal(size=model.nv) for _ in range(3))
        qp = to_pin_q(q)
        Mp = pin.crba(pmodel, pdata, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        scale = np.abs(Mp).max()
        np.testing.assert_allclose(kd.crba(model, q)[np.ix_(iv, iv)], Mp, rtol=0,
                                   atol=1e-10 * scale)
        taup = pin.rnea(pmodel, pdata, qp, v[iv], a[iv])
        np.testing.assert_allclose(kd.rnea(model, q, v, a)[iv], taup, rtol=0,
                                   atol=1e-10 * max(1.0, np.abs(taup).max()))
        ap = pin.aba(pmodel, pdata, qp, v[iv], tau[iv])
        np.testing.assert_allclose(kd.aba(model, q, v, tau)[iv], ap, rtol=0,
                                   atol=1e-9 * max(1.0, np.abs(ap).max()))
        # and the armature is not a no-op: without it M differs on the diagonal by it
        np.testing.assert_allclose(np.diag(kd.crba(model, q) - kd.crba(base, q)),
                                   model.armature, rtol=1e-9)
