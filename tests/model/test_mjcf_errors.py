"""Bad MJCF input: each a clear MJCFError (or KanedynWarning) naming the element and line;
the one warning that lists what kanedyn skipped."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.errors import MJCFError
from kanedyn.model.mjcf import parse_mjcf


def _quiet(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kd.KanedynWarning)
        return parse_mjcf(**kw)


def _body(inner: str, outer: str = "") -> str:
    return f"<mujoco>{outer}<worldbody><body name='b'>{inner}</body></worldbody></mujoco>"


def test_malformed_xml_names_the_line():
    xml = "<mujoco>\n<worldbody>\n<body name='b'>\n<geom size='1'\n</worldbody></mujoco>"
    with pytest.raises(MJCFError, match=r"<string>, line 5, column \d+: malformed XML"):
        kd.load_mjcf(string=xml)


def test_unknown_joint_type():
    with pytest.raises(MJCFError, match=r"line 1, <joint name='j'>: unknown joint type "
                                        r"'hinge2'"):
        kd.load_mjcf(string=_body("<joint name='j' type='hinge2'/><geom size='0.1'/>"))


@pytest.mark.parametrize("geom", ["<geom name='g' type='box' size='0.1 0.2'/>",
                                  "<geom name='g' type='capsule'/>",
                                  "<geom name='g' type='sphere' size='0'/>",
                                  "<geom name='g' type='cylinder' fromto='0 0 0 0 0 1'/>"])
def test_geom_without_size(geom):
    with pytest.raises(MJCFError, match=r"line 1, <geom name='g'>: a \w+ geom .*size"):
        kd.load_mjcf(string=_body("<joint/>" + geom))


def test_missing_and_unreadable_mesh_files(tmp_path):
    xml = """<mujoco>
      <asset>
        <mesh name="m" file="nothere.stl"/>
      </asset>
      <worldbody><body><joint/><geom type="mesh" mesh="m"/></body></worldbody></mujoco>"""
    (tmp_path / "a.xml").write_text(xml)
    with pytest.raises(MJCFError, match=r"a\.xml, line 3, <mesh name='m'>: mesh file .*"
                                        r"nothere\.stl' does not exist"):
        kd.load_mjcf(tmp_path / "a.xml")
    (tmp_path / "nothere.stl").write_bytes(b"\x00garbage, not an STL\xff" * 3)
    with pytest.raises(MJCFError, match=r"line 3, <mesh name='m'>: (cannot read mesh file|"
                                        r"mesh file .* has no triangles)"):
        kd.load_mjcf(tmp_path / "a.xml")


def test_mesh_geom_naming_an_undefined_mesh():
    with pytest.raises(MJCFError, match=r"<geom>: mesh 'nope' is not defined in <asset>"):
        kd.load_mjcf(string=_body("<joint/><geom type='mesh' mesh='nope'/>"))


BAD_INERTIA = "fullinertia='1 0.1 0.1 0 0 0'"  # triangle inequality broken: 0.1 + 0.1 < 1


def test_invalid_fullinertia_warns_when_the_merged_body_is_valid_and_strict_refuses():
    xml = f"""<mujoco><worldbody><body name="a"><joint axis="0 0 1"/>
      <inertial pos="0 0 0" mass="5" diaginertia="2 2 2"/>
      <body name="part" pos="0 0 0.1"><inertial pos="0 0 0" mass="0.1" {BAD_INERTIA}/></body>
      </body></worldbody></mujoco>"""
    with pytest.warns(kd.KanedynWarning, match=r"line 3, <inertial>: the inertia of body "
                                               r"'part' is not a rigid body's"):
        model = kd.load_mjcf(string=xml)
    assert model.nv == 1
    with pytest.raises(MJCFError, match=r"line 3, <inertial>: the inertia of body 'part'"):
        kd.load_mjcf(string=xml, strict=True)


def test_invalid_fullinertia_of_a_moving_body_is_an_error_after_the_warning():
    xml = _body(f"<joint/><inertial pos='0 0 0' mass='1' {BAD_INERTIA}/>")
    with pytest.warns(kd.KanedynWarning, match="not a rigid body's"), \
            pytest.raises(MJCFError, match=r"line 1, <body name='b'>: .*rotational inertia"):
        kd.load_mjcf(string=xml)


def test_include_cycle(tmp_path):
    (tmp_path / "main.xml").write_text(
        "<mujoco>\n  <include file='a.xml'/>\n  <worldbody/>\n</mujoco>")
    (tmp_path / "a.xml").write_text("<mujoco>\n\n  <include file='b.xml'/>\n</mujoco>")
    (tmp_path / "b.xml").write_text("<mujoco>\n  <include file='a.xml'/>\n</mujoco>")
    with pytest.raises(MJCFError, match=r"b\.xml, line 2, <include>: <include file='a\.xml'> "
                                        r"is a cycle \(main\.xml -> a\.xml -> b\.xml -> a\.xml\)"):
        kd.load_mjcf(tmp_path / "main.xml")


def test_missing_include_file(tmp_path):
    (tmp_path / "main.xml").write_text("<mujoco>\n<include file='gone.xml'/>\n</mujoco>")
    with pytest.raises(MJCFError, match=r"main\.xml, line 2, <include>: cannot read MJCF "
                                        r"file .*gone\.xml"):
        kd.load_mjcf(tmp_path / "main.xml")


def test_other_structural_errors():
    with pytest.raises(MJCFError, match=r"root element must be <mujoco>, not <robot>"):
        kd.load_mjcf(string="<robot name='r'/>")
    with pytest.raises(MJCFError, match=r"unknown default class 'nope'"):
        kd.load_mjcf(string=_body("<joint class='nope'/><geom size='0.1'/>"))
    with pytest.raises(MJCFError, match=r"orientation given twice \(quat, euler\)"):
        kd.load_mjcf(string=_body("<joint/><geom size='0.1' quat='1 0 0 0' euler='0 0 1'/>"))
    with pytest.raises(MJCFError, match=r"free joint .* must be the body's only joint"):
        kd.load_mjcf(string=_body("<freejoint/><joint/><geom size='0.1'/>"))
    with pytest.raises(MJCFError, match=r"attribute pos='0 x 0' is not 3 finite numbers"):
        kd.load_mjcf(string=_body("<joint pos='0 x 0'/><geom size='0.1'/>"))
    with pytest.raises(MJCFError, match=r"body 'b' is defined twice"):
        kd.load_mjcf(string="<mujoco><worldbody><body name='b'><joint/><geom size='1'/></body>"
                            "<body name='b'/></worldbody></mujoco>")
    with pytest.raises(MJCFError, match=r"<composite> .* is not supported"):
        kd.load_mjcf(string=_body("<joint/><geom size='0.1'/><composite type='grid'/>"))
    with pytest.raises(MJCFError, match=r"<replicate>: count='2.5' must be a positive "):
        kd.load_mjcf(string=_body("<joint/><geom size='0.1'/><replicate count='2.5'/>"))
    with pytest.raises(MJCFError, match="give either a path or string"):
        kd.load_mjcf()


SKIPPING = """<mujoco model="m">
  <option timestep="0.002"/>
  <visual><global offwidth="800"/></visual>
  <asset><texture name="t" builtin="checker" width="8" height="8"/></asset>
  <worldbody>
    <light pos="0 0 3"/>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="b" pos="0 0 1">
      <camera name="c"/>
      <site name="s"/>
      <joint name="j" axis="0 1 0"/>
      <geom type="capsule" size="0.05 0.2"/>
    </body>
  </worldbody>
  <tendon><fixed name="t"><joint joint="j" coef="1"/></fixed></tendon>
  <actuator><position joint="j" kp="1"/></actuator>
  <sensor><jointpos joint="j"/></sensor>
  <keyframe><key qpos="0.1"/></keyframe>
</mujoco>"""


def test_one_warning_lists_what_was_skipped():
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        robot = parse_mjcf(string=SKIPPING)
    ours = [w for w in rec if issubclass(w.category, kd.KanedynWarning)]
    assert len(ours) == 1
    msg = str(ours[0].message)
    for what in ("<option> timestep x1 (line 2)", "<visual> x1 (line 3)",
                 "<asset> <texture> x1 (line 4)", "<light> x1 (line 6)",
                 "<geom> collision (contacts) x2 (lines 7, 12)", "<camera> x1 (line 9)",
                 "<site>", "<tendon> x1 (line 15)", "<actuator> <position> x1 (line 16)",
                 "<sensor> x1 (line 17)", "<keyframe> x1 (line 18)"):
        assert what in msg, what
    assert set(robot.skipped) >= {"<tendon>", "<sensor>", "<keyframe>", "<camera>"}
    assert robot.model.nv == 1


def test_nothing_to_skip_no_warning():
    xml = _body("<joint/><inertial pos='0 0 0.1' mass='1' diaginertia='1 1 1'/>")
    with warnings.catch_warnings():
        warnings.simplefilter("error", kd.KanedynWarning)
        model = kd.load_mjcf(string=xml)
    assert model.nv == 1
    np.testing.assert_allclose(model.bodies[0].com, [0, 0, 0.1])


def test_names_of_merged_and_anchored_bodies():
    xml = """<mujoco><worldbody><body name="a"><joint name="j1" pos="0 0 0.1"/>
      <joint name="j2" axis="1 0 0"/><geom size="0.1"/>
      <body name="welded" pos="0.3 0 0"><geom size="0.05"/></body></body>
      <body name="static" pos="1 0 0"/></worldbody></mujoco>"""
    robot = _quiet(string=xml)
    m = robot.model
    assert m.body_names == ["a/j1", "a"]
    assert m.frames["welded"].body == 1 and m.frames["static"].body == -1


def test_free_joint_below_a_moving_body_is_refused():
    xml = """<mujoco><worldbody><body name="a"><joint/><geom size="0.1"/>
      <body name="b"><freejoint name="f"/><geom size="0.1"/></body></body>
      </worldbody></mujoco>"""
    with pytest.raises(MJCFError, match=r"line 2, <body name='b'>: a free joint \('f', line 2\)"
                                        r" can only be in a body directly under <worldbody>"):
        kd.load_mjcf(string=xml)


def test_a_joint_that_moves_no_inertia_is_named():
    """A hinge carrying a massless body. Today the Model builder refuses it (M(q) would be
    singular) and the loader names the joint and its line; the builder may instead warn
    (loading kinematics-only models), so the test takes either, naming the joint."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try:
            kd.load_mjcf(string=_body("<joint name='j'/>"))
        except MJCFError as e:
            msg = str(e)
            assert "<joint name='j'> (line 1)" in msg
        else:
            msg = " ".join(str(w.message) for w in rec)
    assert "'j'" in msg


def test_attach_errors(tmp_path):
    (tmp_path / "c.xml").write_text("<mujoco><worldbody><body name='arm'><joint/>"
                                    "<geom size='0.1'/></body></worldbody></mujoco>")
    xml = """<mujoco><asset><model name="c" file="c.xml"/></asset><worldbody>
      <attach model="{m}" body="{b}" prefix="p-"/></worldbody></mujoco>"""
    (tmp_path / "a.xml").write_text(xml.format(m="nope", b="arm"))
    with pytest.raises(MJCFError, match=r"line 2, <attach>: model 'nope' is not an "
                                        r"<asset><model> \(models: c\)"):
        kd.load_mjcf(tmp_path / "a.xml")
    (tmp_path / "a.xml").write_text(xml.format(m="c", b="leg"))
    with pytest.raises(MJCFError, match=r"<attach>: model 'c' has no body 'leg'"):
        kd.load_mjcf(tmp_path / "a.xml")
    (tmp_path / "a.xml").write_text(xml.format(m="c", b="arm"))
    assert _quiet(path=tmp_path / "a.xml").model.body_names == ["p-arm"]


def test_armature_on_a_free_joint_is_said_to_differ_from_mujocos():
    """MuJoCo's free-joint armature acts on world-frame linear speeds, kanedyn's on the
    body-frame ones (as Pinocchio's): M agrees, the bias forces do not, so it warns."""
    xml = ("<mujoco><worldbody><body name='b'><joint name='root' type='free' "
           "armature='0.3'/><geom type='sphere' size='0.1' mass='1'/></body></worldbody>"
           "</mujoco>")
    with pytest.warns(kd.KanedynWarning, match="free joint 'root'.*ω × v"):
        model = kd.load_mjcf(string=xml)
    assert np.all(model.armature == 0.3)
    with pytest.raises(kd.KanedynError, match="armature 0.3 on free joint 'root'"):
        kd.load_mjcf(string=xml, strict=True)
