"""URDFs as robot packages ship them: each defect found in the wild, in a file written here.

The shapes (measured on example-robot-data, see docs/benchmarks.md): a placeholder
inertia (every entry 1e-6: principal moments 0, 0, 3e-6) on a footprint link, a
rotational inertia a few percent outside the triangle inequality (CAD exports), a
-4e-8 eigenvalue on a small link, rounding-level negatives, a massless finger joint,
no moving joint, an empty ``<robot>``; and ``strict=True``, which makes each warning
the error it used to be. Where the numbers are taken as given, Pinocchio (which takes
every file as given) is the reference.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.errors import SolverError, URDFError
from kanedyn.spatial import inertia_parameters, rotational_inertia_defect

pin = pytest.importorskip("pinocchio")

HEAVY = '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.12" iyz="0" izz="0.15"/>'
PLACEHOLDER = '<inertia ixx="1e-6" ixy="1e-6" ixz="1e-6" iyy="1e-6" iyz="1e-6" izz="1e-6"/>'
# principal moments 0.01, 0.01, 0.0206: I1 + I2 < I3 by 3 % of I3
TRIANGLE = '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.0206"/>'
# a 2x2 block with eigenvalues 1e-5 ± (1e-5 + 4e-8): one principal moment -4e-8
NEGATIVE = ('<inertia ixx="1e-5" ixy="1.004e-5" ixz="0" iyy="1e-5" iyz="0" izz="2e-5"/>')
# principal moments -1e-14, 1e-3, 1e-3 + 1e-14 (a rod, printed to 11 digits): the
# triangle inequality broken by 2e-11 of I3, rounding
ROUNDING = ('<inertia ixx="5e-4" ixy="5.0000000001e-4" ixz="0" iyy="5e-4" iyz="0" '
            'izz="1e-3"/>')


def link(name, mass="1", inertia=HEAVY, com="0 0 0"):
    return (f'<link name="{name}"><inertial><origin xyz="{com}"/><mass value="{mass}"/>'
            f"{inertia}</inertial></link>")


def joint(name, parent, child, type="revolute", xyz="0 0 0.3", axis="0 1 0"):
    limit = '<limit lower="-2" upper="2" effort="10" velocity="5"/>' if type == "revolute" else ""
    return (f'<joint name="{name}" type="{type}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}" rpy="0.1 0.2 0.3"/>'
            f'<axis xyz="{axis}"/>{limit}</joint>')


def robot(*lines):
    return "\n".join(['<?xml version="1.0"?>', '<robot name="wild">', *lines, "</robot>"])


def line_of(xml: str, needle: str) -> int:
    return next(k for k, t in enumerate(xml.splitlines(), 1) if needle in t)


def load(xml, **kw):
    """The model and the KanedynWarnings of loading it (each as its message)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = kd.load_urdf_string(xml, **kw)
    return model, [str(w.message) for w in caught if issubclass(w.category, kd.KanedynWarning)]


def pin_model(xml, tmp_path, floating):
    path = tmp_path / "wild.urdf"
    path.write_text(xml)
    return (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating
            else pin.buildModelFromUrdf(str(path)))


def same_as_pinocchio(model, pmodel, floating, seed=0):
    """M(q) and RNEA at a random state, joints matched by name (revolute joints only
    besides the free flyer, whose q and v Pinocchio orders (p, xyzw) and (v, ω))."""
    rng = np.random.default_rng(seed)
    q = kd.random_configuration(model, rng)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    iq, iv = [], []
    for jid in range(1, pmodel.njoints):
        b = model.bodies[model.joint_index(pmodel.names[jid])]
        if b.joint.kind == "free":
            o, w = b.iq.start, b.iv.start
            iq += [o, o + 1, o + 2, o + 4, o + 5, o + 6, o + 3]
            iv += [w + 3, w + 4, w + 5, w, w + 1, w + 2]
        else:
            iq.append(b.iq.start)
            iv.append(b.iv.start)
    pdata = pmodel.createData()
    Mp = pin.crba(pmodel, pdata, q[iq])
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    M = kd.crba(model, q)[np.ix_(iv, iv)]
    np.testing.assert_allclose(M, Mp, rtol=0, atol=1e-12 * np.abs(Mp).max())
    taup = pin.rnea(pmodel, pdata, q[iq], v[iv], a[iv])
    np.testing.assert_allclose(kd.rnea(model, q, v, a)[iv], taup, rtol=0,
                               atol=1e-12 * np.abs(taup).max())


# --- inertias ------------------------------------------------------------------------

def footprint_robot():
    """A quadruped-like base: a massless-ish footprint link (placeholder inertia) fixed
    to the trunk, the root of the description."""
    return robot(link("base", mass="0.001", inertia=PLACEHOLDER), link("trunk", mass="5"),
                 link("leg"), '<joint name="fp" type="fixed"><parent link="base"/>'
                 '<child link="trunk"/></joint>', joint("hip", "trunk", "leg"))


@pytest.mark.parametrize("floating", [False, True])
def test_placeholder_inertia_on_a_footprint_link(floating, tmp_path):
    xml = footprint_robot()
    model, warned = load(xml, floating_base=floating)
    assert len(warned) == 1
    msg = warned[0]
    base_line = line_of(xml, '<link name="base"')
    assert "<link name='base'>" in msg and f"line {base_line}" in msg
    assert "triangle inequality" in msg or "positive semidefinite" in msg
    assert ("fixed to the world" in msg) != floating
    if floating:  # merged into the trunk's body, taken as given: Pinocchio's numbers
        assert "'base' it is merged into is physical" in msg
        assert model.total_mass == pytest.approx(5.001 + 1.0)
    same_as_pinocchio(model, pin_model(xml, tmp_path, floating), floating)
    with pytest.raises(URDFError, match="line 3, <link name='base'>: <inertia> \\(line 3\\) "
                                        "is not a rigid body's rotational inertia"):
        kd.load_urdf_string(xml, floating_base=floating, strict=True)


def test_triangle_inequality_broken_by_a_few_percent(tmp_path):
    """A sensor link fixed to a heavy link: a warning, the merged body physical. The same
    link alone on a joint: a warning that the body is not physical either."""
    xml = robot(link("base"), link("arm"), link("camera", mass="0.2", inertia=TRIANGLE),
                joint("shoulder", "base", "arm"),
                joint("mount", "arm", "camera", type="fixed", xyz="0.1 0 0"))
    model, warned = load(xml)
    assert len(warned) == 1 and "<link name='camera'>" in warned[0]
    assert "triangle inequality I1 + I2 >= I3 by 2.91 % of I3" in warned[0]
    assert "'arm' it is merged into is physical" in warned[0]
    same_as_pinocchio(model, pin_model(xml, tmp_path, False), False)
    # the same link alone on a joint (Romeo's small versions): the body breaks the
    # triangle inequality but is positive semidefinite, so M(q) is: loaded as given with
    # one warning that says so; strict=True makes it the error
    alone = robot(link("base"), link("camera", mass="0.2", inertia=TRIANGLE),
                  joint("pan", "base", "camera"))
    model, warned = load(alone)
    assert len(warned) == 1 and f"line {line_of(alone, 'camera')}" in warned[0]
    assert "'camera' it is part of is not physical either" in warned[0]
    assert "positive semidefinite, so M(q) is too" in warned[0]
    same_as_pinocchio(model, pin_model(alone, tmp_path, False), False)
    with pytest.raises(URDFError, match=f"line {line_of(alone, 'camera')}, "
                                        "<link name='camera'>.*triangle inequality"):
        kd.load_urdf_string(alone, strict=True)


def test_negative_eigenvalue_of_4e_8(tmp_path):
    xml = robot(link("base"), link("body"), link("antenna", mass="0.05", inertia=NEGATIVE),
                joint("yaw", "base", "body", axis="0 0 1"),
                joint("ant", "body", "antenna", type="fixed", xyz="0 0.2 0.1"))
    model, warned = load(xml, floating_base=True)
    assert len(warned) == 1 and "not positive semidefinite" in warned[0]
    assert "-4" in warned[0] and "e-08" in warned[0]
    same_as_pinocchio(model, pin_model(xml, tmp_path, True), True)
    with pytest.raises(URDFError, match="<link name='antenna'>.*not positive semidefinite"):
        kd.load_urdf_string(xml, floating_base=True, strict=True)


def test_rounding_level_negatives_are_clipped_silently():
    xml = robot(link("base"), link("arm", inertia=ROUNDING, com="0.1 0 0"),
                joint("j", "base", "arm"))
    given = np.array([[5e-4, 5.0000000001e-4, 0], [5.0000000001e-4, 5e-4, 0], [0, 0, 1e-3]])
    assert np.linalg.eigvalsh(given)[0] < 0  # the file's tensor is (just) not PSD
    for strict in (False, True):
        model, warned = load(xml, strict=strict)
        assert warned == []
    m, c, Ic = inertia_parameters(model.bodies[0].inertia)
    # the body's rotational inertia is physical (to the rounding of moving it to the
    # centre of mass and back, ~1e-16 of I3, where the file's is 2e-11 off), and within
    # 1e-9 of the given one
    assert rotational_inertia_defect(given)[0] == pytest.approx(2e-11, rel=1e-3)
    assert rotational_inertia_defect(Ic)[0] < 1e-14
    R = np.eye(3)  # no inertial rpy: the link's axes are the file's
    np.testing.assert_allclose(Ic, R @ given @ R.T, rtol=0, atol=1e-9 * 2e-3)


# --- joints --------------------------------------------------------------------------

def hand_robot():
    """A palm with a finger whose last phalanx is massless (a fingertip frame on a
    revolute joint): M is singular at that joint."""
    return robot(link("palm"), link("phalanx1", mass="0.05", com="0 0 0.02",
                                    inertia='<inertia ixx="2e-6" ixy="0" ixz="0" iyy="2e-6" '
                                            'iyz="0" izz="1e-6"/>'),
                 '<link name="phalanx2"/>', joint("wrist", "palm", "phalanx1", xyz="0 0 0.1"),
                 joint("finger", "phalanx1", "phalanx2", xyz="0 0 0.04"))


def test_massless_finger_joint(tmp_path):
    xml = hand_robot()
    model, warned = load(xml)
    assert len(warned) == 1
    finger_line = line_of(xml, '<joint name="finger"')
    assert f"'finger' (line {finger_line}) moves no inertia" in warned[0]
    assert "armature=" in warned[0]
    rng = np.random.default_rng(5)
    q, v, a = kd.random_configuration(model, rng), rng.normal(size=2), rng.normal(size=2)
    # what needs no inverse of M works and agrees with Pinocchio
    same_as_pinocchio(model, pin_model(xml, tmp_path, False), False)
    assert np.all(np.isfinite(kd.jacobian(model, q, "phalanx2")))
    assert np.all(np.isfinite(kd.frame_placement(model, q, "phalanx2")[1]))
    # what needs M⁻¹ says which joint and what to do: single state (C front end), the
    # numba entry through the general path, batches in lanes and per state, simulate
    tau = kd.rnea(model, q, v, a)
    calls = {
        "single": lambda: kd.aba(model, q, v, tau),
        "list": lambda: kd.aba(model, list(q), list(v), list(tau)),
        "batch": lambda: kd.aba(model, np.stack([q] * 9), np.stack([v] * 9),
                                np.stack([tau] * 9)),
        "derivatives": lambda: kd.aba_derivatives(model, q, v, tau),
        "simulate": lambda: kd.simulate(model, q, v, 0.01, method="rk4", dt=1e-3),
        "simulate_batch": lambda: kd.simulate_batch(model, q[None], v[None], 0.01,
                                                    method="rk4", dt=1e-3),
    }
    for name, call in calls.items():
        with pytest.raises(SolverError, match="joint 'finger' moves no inertia.*armature="):
            call()
            pytest.fail(f"{name}: no SolverError")
    # a rotor on that joint makes the model regular: aba inverts rnea, as Pinocchio's
    fixed, warned = load(xml, armature={"finger": 1e-4})
    assert warned == []
    assert np.allclose(kd.aba(fixed, q, v, kd.rnea(fixed, q, v, a)), a, rtol=0, atol=1e-8)
    pmodel = pin_model(xml, tmp_path, False)
    iv = [fixed.joint_index(n) for n in pmodel.names[1:]]
    pmodel.armature = fixed.armature[iv]
    ap = pin.aba(pmodel, pmodel.createData(), q[iv], v[iv], tau[iv])
    np.testing.assert_allclose(kd.aba(fixed, q, v, tau)[iv], ap, rtol=1e-9)
    with pytest.raises(URDFError, match="<joint name='finger'>.*moves no inertia"):
        kd.load_urdf_string(xml, strict=True)


def test_armature_at_load_and_from_drake_transmissions():
    xml = hand_robot().replace("</robot>", (
        '<transmission name="t"><type>transmission_interface/SimpleTransmission</type>'
        '<joint name="finger"><hardwareInterface>EffortJointInterface</hardwareInterface>'
        '</joint><actuator name="m"><drake:rotor_inertia value="1e-7"/>'
        '<drake:gear_ratio value="50"/></actuator></transmission></robot>'))
    model, warned = load(xml)
    assert warned == []
    np.testing.assert_allclose(model.armature, [0.0, 1e-7 * 50**2], rtol=1e-15)
    assert model.bodies[1].joint.armature == pytest.approx(2.5e-4)
    # the keyword replaces the file's value for the joints it names; a number: all
    assert list(kd.load_urdf_string(xml, armature={"finger": 0.5}).armature) == [0.0, 0.5]
    assert list(kd.load_urdf_string(xml, armature=0.01).armature) == [0.01, 0.01]
    assert kd.load_urdf_string(xml, floating_base=True, armature=0.01).armature[:6].sum() == 0
    with pytest.raises(URDFError, match=r"armature= names \['thumb'\].*\['wrist', 'finger'\]"):
        kd.load_urdf_string(xml, armature={"thumb": 0.1})
    with pytest.raises(URDFError, match="armature of joint 'wrist' must be a finite number"):
        kd.load_urdf_string(xml, armature={"wrist": -1.0})
    bad = xml.replace('value="1e-7"', 'value="-1"')
    with pytest.raises(URDFError, match="drake:rotor_inertia.*value >= 0"):
        kd.load_urdf_string(bad)


# --- topology ------------------------------------------------------------------------

def test_no_moving_joint_suggests_a_floating_base():
    xml = robot(link("body"), link("prop"), '<joint name="p" type="fixed">'
                '<parent link="body"/><child link="prop"/></joint>')
    with pytest.raises(URDFError, match="has no moving joint.*floating_base=True"):
        kd.load_urdf_string(xml)
    model = kd.load_urdf_string(xml, floating_base=True)
    assert model.nv == 6 and model.total_mass == pytest.approx(2.0)
    with pytest.raises(URDFError, match="has no moving joint.*floating_base=True"):
        kd.load_urdf_string(robot(link("alone")))


def test_empty_robot_says_it_is_empty():
    for xml in (robot(), '<robot name="ur3" xmlns:xacro="http://wiki.ros.org/xacro">'
                         "<!-- nothing here --></robot>"):
        with pytest.raises(URDFError, match="the robot is empty"):
            kd.load_urdf_string(xml)
