"""Bad URDF input: each gets a URDFError naming the element at fault and its line.

The expected line is found in the test's own text (the line holding a marker),
not taken from the parser.
"""

from __future__ import annotations

import pytest

import kanedyn as kd
from kanedyn.errors import KanedynError, ModelError, URDFError

INERTIA = '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>'


def link(name, mass="1", inertia=INERTIA, extra=""):
    return (f'<link name="{name}"><inertial><mass value="{mass}"/>{inertia}</inertial>'
            f"{extra}</link>")


def joint(name, parent, child, type="continuous", body=""):
    return (f'<joint name="{name}" type="{type}"><parent link="{parent}"/>'
            f'<child link="{child}"/><axis xyz="0 1 0"/><origin xyz="0 0 -0.5"/>{body}</joint>')


def robot(*lines):
    return "\n".join(['<?xml version="1.0"?>', '<robot name="bad">', *lines, "</robot>"])


def line_of(xml: str, needle: str) -> int:
    for k, text in enumerate(xml.splitlines(), start=1):
        if needle in text:
            return k
    raise AssertionError(needle)


def check(xml: str, marker: str | None, *fragments: str, **kwargs) -> URDFError:
    with pytest.raises(URDFError) as info:
        kd.load_urdf_string(xml, **kwargs)
    msg = str(info.value)
    if marker is not None:
        assert f"line {line_of(xml, marker)}" in msg, msg
    for f in fragments:
        assert f in msg, msg
    return info.value


def test_urdf_error_is_a_kanedyn_model_error():
    assert issubclass(URDFError, ModelError) and issubclass(URDFError, KanedynError)


def test_malformed_xml_names_line():
    xml = robot(link("a"), '<joint name="j" type="continuous"', link("b"))
    err = check(xml, None, "malformed XML")
    # expat reports where the broken tag stops making sense: the line after it
    lines = (line_of(xml, "<joint name"), line_of(xml, 'link name="b"'))
    assert any(f"line {n}," in str(err) for n in lines), str(err)
    check(robot(link("a"), "<link name='b'>"), None, "malformed XML", "line 5")


def test_unknown_joint_type():
    xml = robot(link("a"), link("b"), joint("ball_joint", "a", "b", type="ball"))
    check(xml, "ball_joint", "unknown joint type 'ball'", "ball_joint")


@pytest.mark.parametrize("role", ["parent", "child"])
def test_joint_link_does_not_exist(role):
    j = joint("j1", "nope", "b") if role == "parent" else joint("j1", "a", "nope")
    xml = robot(link("a"), link("b"), j)
    check(xml, 'name="j1"', f"{role} link 'nope' does not exist", "<joint name='j1'>")


def test_link_with_two_parents():
    xml = robot(link("a"), link("b"), link("c"), joint("j1", "a", "c"), joint("j2", "b", "c"))
    check(xml, 'name="j2"', "link 'c' has two parents", "'j1'")


def test_cycle():
    xml = robot(link("a"), link("b"), link("c"), joint("ab", "a", "b"), joint("bc", "b", "c"),
                joint("cb", "c", "b", body=""))
    # c -> b gives b two parents first; a pure cycle needs every link in it to have one
    check(xml, 'name="cb"', "two parents")
    xml = robot(link("a"), link("b"), link("c"), joint("bc", "b", "c"), joint("cb", "c", "b"))
    check(xml, None, "cycle", "'bc'", "'cb'")
    xml = robot(link("a"), joint("aa", "a", "a"))
    check(xml, None, "cycle", "'aa'")


def test_several_roots():
    xml = robot(link("a"), link("b"), link("c"), joint("ab", "a", "b"))
    c_line = line_of(xml, '<link name="c"')
    check(xml, None, "several root links", "'a'", "'c'", f"'c' (line {c_line})")


def test_negative_mass():
    xml = robot(link("a"), link("heavy", mass="-2"), joint("j", "a", "heavy"))
    check(xml, 'name="heavy"', "<link name='heavy'>", "mass -2.0", "negative")


@pytest.mark.parametrize("inertia", [
    '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="-0.01"/>',
    '<inertia ixx="0.01" ixy="0.05" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>',
])
def test_inertia_that_is_not_positive_semidefinite(inertia):
    """A moving body alone whose inertia is not positive semidefinite: judged on the M(q)
    it produces. Here the joint (about y) sees a positive moment, so M is positive
    definite: loaded as given with one warning saying so; strict=True refuses it."""
    xml = robot(link("a"), link("b", inertia=inertia), joint("j", "a", "b"))
    with pytest.warns(kd.KanedynWarning, match="<link name='b'>.*not positive "
                      "semidefinite.*neutral configuration is positive definite"):
        model = kd.load_urdf_string(xml)
    assert kd.aba(model, [0.3], [0.0], [0.0]).shape == (1,)
    check(xml, 'name="b"', "<link name='b'>", "not positive semidefinite", strict=True)


def test_negative_moment_about_the_joint_axis_is_refused_by_aba():
    """iyy < 0 with the centre of mass on the axis: M = [iyy] < 0. It loads (rnea and crba
    give the file's numbers), the warning says M is not positive definite, and aba
    raises a SolverError naming the joint."""
    inertia = '<inertia ixx="0.01" ixy="0" ixz="0" iyy="-0.5" iyz="0" izz="0.01"/>'
    xml = robot(link("a"), link("b", inertia=inertia), joint("j", "a", "b"))
    with pytest.warns(kd.KanedynWarning, match="is not positive definite"):
        model = kd.load_urdf_string(xml, check_singular=False)
    assert kd.crba(model, [0.0])[0, 0] == pytest.approx(-0.5)
    with pytest.raises(kd.SolverError, match="'j'"):
        kd.aba(model, [0.0], [0.0], [1.0])


def test_triangle_inequality_alone_is_a_warning_and_a_strict_error():
    """Positive semidefinite but no mass distribution's: M(q) stays positive
    semidefinite, so it loads as given with a warning; strict=True refuses it."""
    inertia = '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.03"/>'
    xml = robot(link("a"), link("b", inertia=inertia), joint("j", "a", "b"))
    with pytest.warns(kd.KanedynWarning, match="<link name='b'>.*triangle inequality"):
        model = kd.load_urdf_string(xml)
    assert model.bodies[0].inertia[2, 2] == pytest.approx(0.03, rel=1e-12)  # as given
    check(xml, 'name="b"', "<link name='b'>", "triangle inequality", strict=True)


def test_point_mass_is_valid():
    zero = '<origin xyz="0 0 -1"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>'
    xml = robot(link("a"), link("bob", inertia=zero), joint("j", "a", "bob"))
    assert kd.load_urdf_string(xml).total_mass == 1.0


def test_massless_moving_leaf_names_the_urdf_joint():
    xml = robot(link("a"), link("b"), '<link name="ghost"/>', joint("ab", "a", "b"),
                joint("to_ghost", "b", "ghost"))
    check(xml, 'name="to_ghost"', "<joint name='to_ghost'>", "moves no inertia", strict=True)
    with pytest.warns(kd.KanedynWarning, match="'to_ghost' .* moves no inertia"):
        kd.load_urdf_string(xml)
    # a kinematics-only description can still be loaded on request, for kinematics
    model = kd.load_urdf_string(xml, check_singular=False)
    R, p = kd.frame_placement(model, [0.0, 0.0], "ghost")
    assert p[2] == -1.0  # two joints, each 0.5 below its parent


def test_mass_on_the_axis_moves_no_inertia():
    """A point mass on a revolute axis has no inertia about it: M would be singular."""
    zero = '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>'
    xml = robot(link("a"), link("bead", inertia=zero),
                '<joint name="spin" type="continuous"><parent link="a"/><child link="bead"/>'
                '<axis xyz="0 0 1"/></joint>')
    check(xml, 'name="spin"', "'spin'", "moves no inertia", strict=True)


@pytest.mark.parametrize("lines, marker, fragment", [
    ([link("a"), link("b"), '<joint type="continuous"><parent link="a"/><child link="b"/>'
      "</joint>"], "<joint type", "missing required attribute 'name'"),
    ([link("a"), link("b"), '<joint name="j"><parent link="a"/><child link="b"/></joint>'],
     'name="j"', "missing required attribute 'type'"),
    (['<link><inertial><mass value="1"/></inertial></link>'], "<link>",
     "missing required attribute 'name'"),
    ([link("a"), '<link name="b"><inertial><mass/>' + INERTIA + "</inertial></link>",
      joint("j", "a", "b")], 'name="b"', "'value'"),
    ([link("a"), '<link name="b"><inertial>' + INERTIA + "</inertial></link>",
      joint("j", "a", "b")], 'name="b"', "has no <mass>"),
    ([link("a"), link("b", inertia='<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0"/>'),
      joint("j", "a", "b")], 'name="b"', "'izz'"),
    ([link("a"), link("b"), '<joint name="j" type="fixed"><parent/><child link="b"/></joint>'],
     'name="j"', "<parent> (line"),
    ([link("a"), link("b"), '<joint name="j" type="fixed"><child link="b"/></joint>'],
     'name="j"', "missing <parent"),
    ([link("a"), link("b"), joint("j", "a", "b", type="revolute")], 'name="j"',
     "needs a <limit>"),
    ([link("a"), link("b"), joint("j", "a", "b", type="prismatic",
                                  body='<limit lower="0" upper="1" velocity="1"/>')],
     'name="j"', "missing required attribute 'effort'"),
    ([link("a"), link("b"), joint("j", "a", "b", type="revolute",
                                  body='<limit lower="1" upper="0" effort="1" velocity="1"/>')],
     'name="j"', "lower 1.0 > upper 0.0"),
    ([link("a"), link("b"), '<joint name="j" type="fixed"><parent link="a"/>'
      '<child link="b"/><origin xyz="0 1"/></joint>'], 'name="j"', "xyz='0 1' is not 3"),
    ([link("a"), link("b"), '<joint name="j" type="fixed"><parent link="a"/>'
      '<child link="b"/><origin rpy="0 x 0"/></joint>'], 'name="j"', "rpy='0 x 0'"),
    ([link("a"), link("b"), '<joint name="j" type="continuous"><parent link="a"/>'
      '<child link="b"/><axis xyz="0 0 0"/></joint>'], 'name="j"', "is zero"),
    ([link("a"), link("b"), joint("j", "a", "b", body='<dynamics damping="-1"/>')],
     'name="j"', "damping and friction must be >= 0"),
    ([link("a"), link("a")], 'name="a"></link>', "defined twice"),
    ([link("a"), link("b"), link("c"), joint("j", "a", "b"), joint("j", "a", "c")],
     'child link="c"', "joint 'j' is defined twice"),
])
def test_bad_or_missing_attributes(lines, marker, fragment):
    xml = robot(*lines)
    if marker == 'name="a"></link>':  # the second of two identical lines
        with pytest.raises(URDFError, match="line 4.*defined twice.*line 3"):
            kd.load_urdf_string(xml)
        return
    check(xml, marker, fragment)


def test_mimic_of_a_missing_joint_is_a_warning():
    """kanedyn records mimic couplings without enforcing them: a dangling one is ignored."""
    xml = robot(link("a"), link("b"), joint("j", "a", "b", body='<mimic joint="nobody"/>'))
    check(xml, 'name="j"', "'nobody', which does not exist", strict=True)
    with pytest.warns(kd.KanedynWarning, match="'nobody', which does not exist"):
        model = kd.load_urdf_string(xml)
    assert model.joint_names == ["j"]


def test_not_a_robot_and_unexpanded_xacro():
    check('<?xml version="1.0"?>\n<sdf version="1.6"/>', None, "line 2", "must be <robot>")
    xml = robot('<xacro:macro name="leg" params="side">', "</xacro:macro>", link("a"))
    check(xml, "xacro:macro", "unexpanded xacro")


def test_no_links_and_missing_file(tmp_path):
    check(robot(), None, "has no <link>")
    with pytest.raises(URDFError, match="cannot read URDF file"):
        kd.load_urdf(tmp_path / "missing.urdf")
    with pytest.raises(URDFError, match="either a path or string"):
        kd.load_urdf()


def test_floating_base_with_ambiguous_world_root():
    xml = robot('<link name="world"/>', link("a"), link("b"),
                joint("wa", "world", "a", type="fixed"), joint("wb", "world", "b", type="fixed"))
    check(xml, '<link name="world"/>', "exactly one fixed joint", floating_base=True)
    kd.load_urdf_string(xml.replace('type="fixed"', 'type="continuous"'))  # fixed base: fine
