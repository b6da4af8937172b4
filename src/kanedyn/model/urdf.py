"""URDF import: a robot description file to a :class:`~kanedyn.model.Model`.

The URDF (Unified Robot Description Format, ROS ``urdfdom`` specification)
describes a tree of *links* joined by *joints*. Each joint has an ``<origin>``
(the pose of the joint frame in the parent link's frame, ``xyz`` and
fixed-axis ``rpy``), an ``<axis>`` in the joint frame, and moves the child
link, whose frame *is* the joint frame displaced by the joint motion. A
link's ``<inertial>`` gives the mass, the centre of mass (``origin xyz``) and
the rotational inertia about the centre of mass in axes rotated by
``origin rpy``.

Loading is done in two steps, both public:

1. :func:`parse_urdf` reads the XML (with line numbers, so every error names
   the element and its line), checks every attribute and the topology, and
   returns a :class:`URDFRobot` — the file's content as plain data, including
   what the Model does not carry (``<mimic>`` couplings, the world-fixed links);
2. :func:`build_model` walks the tree depth first, children in document
   order, and adds the bodies to a :class:`~kanedyn.model.ModelBuilder`, which
   merges links on fixed joints into their parent (their frames are kept in
   ``model.frames``).

:func:`load_urdf` does both. Meshes (``package://`` or file names) are never
opened; ``<visual>``, ``<collision>``, ``<material>``, ``<gazebo>``,
``<calibration>`` and ``<safety_controller>`` are ignored, and of ``<transmission>``
only Drake's ``<drake:rotor_inertia>`` and ``<drake:gear_ratio>`` are read (a joint's
armature). Defects robot packages ship with (link inertias that are not a rigid
body's, joints that move no inertia, a ``<mimic>`` of a missing joint) are warnings,
errors with ``strict=True``: see :func:`build_model` and ``docs/urdf.md``.

Choices made here (and where they differ from other loaders):

- Fixed base: the root link is the world. Its inertia, and that of links fixed
  to it, moves nothing and is dropped; those links are listed in
  :attr:`URDFRobot.world_links` and are not frames of the Model.
- ``floating_base=True`` puts a free joint named ``root_joint`` (as in
  Pinocchio) between the world and the root link. If the root link is a dummy
  named ``world`` (no mass) with a single fixed joint to the real base, the
  free joint moves that base instead, so ``q[:7]`` is the base link's pose.
  (Pinocchio attaches its free flyer to the ``world`` link itself; the two
  agree when that fixed joint's origin is the identity.)
- A ``<mimic>`` joint stays an independent joint (as in Pinocchio by default);
  the coupling is recorded in :attr:`URDFRobot.mimic`.
- ``planar``: URDF moves the child in the plane normal to ``axis``; kanedyn's
  :class:`~kanedyn.model.joints.Planar` moves in its joint frame's xy-plane.
  The joint frame is turned by the shortest rotation A taking z to the axis,
  and the child link is attached to the moving body by the fixed rotation Aᵀ,
  so the link's frame is exactly where URDF puts it. The moving body is then
  named ``<child>_planar`` and the link is a merged frame of it. q = (x, y, θ)
  has x, y along A's first two columns (in the joint frame) and θ about the axis.
  (Pinocchio 4.1 ignores the axis of a planar joint and always uses the xy-plane.)
- Joint order in q and v: depth first from the root, the children of a link
  in the order their joints appear in the file. (Pinocchio, through urdfdom,
  takes the children of a link in alphabetical order of their joint names.)
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from xml.parsers import expat

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import KanedynWarning, ModelError, URDFError
from ..spatial import INERTIA_ROUNDING, rotational_inertia_defect
from .joints import Fixed, Free, Joint, JointLimits, Planar, Prismatic, Revolute
from .model import Model, ModelBuilder, singular_joints

#: joint types of the URDF specification
URDF_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")

#: robot descriptions shipped with kanedyn (``src/kanedyn/data/robots/<name>.urdf``)
ROBOTS = ("panda", "ur5", "humanoid", "quadruped", "chain20")

_ROBOT_DIR = Path(__file__).resolve().parent.parent / "data" / "robots"


# --------------------------------------------------------------------------------------
# XML with line numbers
# --------------------------------------------------------------------------------------

@dataclass
class _Element:
    tag: str
    attrib: dict
    line: int
    children: list = field(default_factory=list)

    def find(self, tag: str) -> _Element | None:
        for c in self.children:
            if c.tag == tag:
                return c
        return None

    def findall(self, tag: str) -> list[_Element]:
        return [c for c in self.children if c.tag == tag]


def _parse_xml(text: str | bytes, source: str, error: type[ModelError] = URDFError) -> _Element:
    """A light element tree from expat, each element knowing its line number; malformed
    XML raises ``error`` with the line and column."""
    parser = expat.ParserCreate()
    stack: list[_Element] = []
    root: list[_Element] = []

    def start(tag, attrib):
        el = _Element(tag, dict(attrib), parser.CurrentLineNumber)
        if stack:
            stack[-1].children.append(el)
        else:
            root.append(el)
        stack.append(el)

    def end(tag):
        stack.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(text, True)
    except expat.ExpatError as e:
        raise error(
            f"{source}, line {e.lineno}, column {e.offset + 1}: malformed XML "
            f"({expat.errors.messages[e.code]})"
        ) from None
    return root[0]


# --------------------------------------------------------------------------------------
# The file's content as data
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class URDFInertial:
    """Mass, centre of mass and rotational inertia about the centre of mass, all in
    link axes (the ``<inertial><origin rpy>`` rotation already applied), as the file
    gives them. ``defect`` says why the rotational inertia is not a rigid body's
    beyond rounding ("" if it is one, see :func:`build_model`); ``line`` is that of
    the ``<inertia>`` element."""

    mass: float
    com: NDArray
    inertia: NDArray
    line: int = 0
    defect: str = ""


@dataclass(frozen=True)
class URDFLink:
    name: str
    inertial: URDFInertial | None
    line: int

    @property
    def mass(self) -> float:
        return 0.0 if self.inertial is None else self.inertial.mass


@dataclass(frozen=True)
class URDFMimic:
    """``q[joint] = multiplier * q[mimicked] + offset`` — recorded, not enforced."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class URDFJoint:
    name: str
    type: str
    parent: str
    child: str
    origin_R: NDArray
    origin_p: NDArray
    axis: NDArray
    limits: JointLimits
    damping: float
    friction: float
    mimic: URDFMimic | None
    line: int


@dataclass(frozen=True)
class URDFRobot:
    """The content of a URDF file, checked: links and joints in document order,
    ``root`` the one link without a parent, ``children`` the joints leaving each link
    in document order."""

    name: str
    links: dict
    joints: dict
    root: str
    children: dict
    source: str
    #: ``{joint: reflected rotor inertia}`` from the file's transmissions
    #: (``<drake:rotor_inertia>`` times ``<drake:gear_ratio>`` squared)
    armature: dict = field(default_factory=dict)
    #: ``{joint: message}`` for ``<mimic>`` elements naming a joint that does not exist
    #: (kanedyn records mimic couplings without enforcing them: a warning, see build_model)
    dangling_mimic: dict = field(default_factory=dict)

    @property
    def mimic(self) -> dict[str, URDFMimic]:
        """``{joint: URDFMimic}`` for every joint whose ``<mimic>`` names an existing joint."""
        return {n: j.mimic for n, j in self.joints.items()
                if j.mimic is not None and n not in self.dangling_mimic}

    @property
    def parent_joint(self) -> dict[str, URDFJoint]:
        return {j.child: j for j in self.joints.values()}

    @property
    def world_links(self) -> list[str]:
        """Links rigidly fixed to the root (with a fixed base, they are the world)."""
        out, todo = [], [self.root]
        while todo:
            name = todo.pop(0)
            out.append(name)
            todo += [j.child for j in self.children[name] if j.type == "fixed"]
        return out

    @property
    def total_mass(self) -> float:
        return float(sum(link.mass for link in self.links.values()))


class _Where:
    """Formats error locations: ``<source>, line N, <joint name='x'>``."""

    def __init__(self, source: str):
        self.source = source

    def __call__(self, el: _Element | None, what: str = "") -> str:
        if el is None:
            return f"{self.source}: {what}"
        name = el.attrib.get("name")
        tag = f"<{el.tag} name={name!r}>" if name is not None else f"<{el.tag}>"
        # (an element of an MJCF <include> names its own file)
        return f"{getattr(el, 'source', self.source)}, line {el.line}, {tag}{what}"


def _floats(el: _Element, attr: str, n: int, where: _Where, default=None,
            context: _Element | None = None) -> NDArray:
    """Attribute ``attr`` of ``el`` as n floats (``default`` if absent; required if None)."""
    raw = el.attrib.get(attr)
    ctx = context if context is not None else el
    sub = "" if ctx is el else f" <{el.tag}>"
    if raw is None:
        if default is None:
            raise URDFError(f"{where(ctx)}:{sub} missing required attribute {attr!r}")
        return np.asarray(default, dtype=float)
    try:
        vals = np.array([float(t) for t in raw.split()], dtype=float)
    except ValueError:
        vals = None
    if vals is None or vals.size != n or not np.all(np.isfinite(vals)):
        raise URDFError(
            f"{where(ctx)}:{sub} attribute {attr}={raw!r} is not {n} finite number"
            f"{'s' if n > 1 else ''} (line {el.line})"
        )
    return vals


def _float(el: _Element, attr: str, where: _Where, default: float | None = None,
           context: _Element | None = None) -> float | None:
    if attr not in el.attrib and default is None:
        return None
    return float(_floats(el, attr, 1, where, None if default is None else [default],
                         context)[0])


def rpy_matrix(rpy: ArrayLike) -> NDArray:
    """URDF fixed-axis roll-pitch-yaw: ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    r, p, y = (float(t) for t in rpy)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def _origin(el: _Element, where: _Where) -> tuple[NDArray, NDArray]:
    o = el.find("origin")
    if o is None:
        return np.eye(3), np.zeros(3)
    xyz = _floats(o, "xyz", 3, where, (0.0, 0.0, 0.0), context=el)
    rpy = _floats(o, "rpy", 3, where, (0.0, 0.0, 0.0), context=el)
    return rpy_matrix(rpy), xyz


def _name(el: _Element, where: _Where) -> str:
    name = el.attrib.get("name")
    if not name:
        raise URDFError(f"{where(el)}: missing required attribute 'name'")
    return name


def _link(el: _Element, where: _Where) -> URDFLink:
    name = _name(el, where)
    ie = el.find("inertial")
    if ie is None:
        return URDFLink(name, None, el.line)
    R, c = _origin(ie, where)
    me = ie.find("mass")
    if me is None:
        raise URDFError(f"{where(el)}: <inertial> (line {ie.line}) has no <mass>")
    m = _float(me, "value", where, context=el)
    if m is None:
        raise URDFError(f"{where(el)}: <mass> (line {me.line}) missing required attribute "
                        "'value'")
    if m < 0.0:
        raise URDFError(f"{where(el)}: mass {m} (line {me.line}) is negative")
    te = ie.find("inertia")
    if te is None:
        raise URDFError(f"{where(el)}: <inertial> (line {ie.line}) has no <inertia>")
    comp = {}
    for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
        val = _float(te, k, where, context=el)
        if val is None:
            raise URDFError(f"{where(el)}: <inertia> (line {te.line}) missing required "
                            f"attribute {k!r}")
        comp[k] = val
    I = np.array([[comp["ixx"], comp["ixy"], comp["ixz"]],
                  [comp["ixy"], comp["iyy"], comp["iyz"]],
                  [comp["ixz"], comp["iyz"], comp["izz"]]])
    # judged by build_model, on the rigid body this link becomes part of; relative to the
    # link's size about its own origin (rounding of 1e-9 of that is invisible in M)
    defect, why = rotational_inertia_defect(I, m * float(c @ c))
    # the tensor is given in the inertial frame's axes; turn it into link axes
    return URDFLink(name, URDFInertial(m, c, R @ I @ R.T, te.line,
                                       why if defect > INERTIA_ROUNDING else ""), el.line)


def _joint(el: _Element, where: _Where) -> URDFJoint:
    name = _name(el, where)
    jtype = el.attrib.get("type")
    if jtype is None:
        raise URDFError(f"{where(el)}: missing required attribute 'type'")
    if jtype not in URDF_JOINT_TYPES:
        raise URDFError(f"{where(el)}: unknown joint type {jtype!r} "
                        f"(URDF joint types are {', '.join(URDF_JOINT_TYPES)})")
    links = []
    for tag in ("parent", "child"):
        e = el.find(tag)
        if e is None:
            raise URDFError(f"{where(el)}: missing <{tag} link='...'>")
        if not e.attrib.get("link"):
            raise URDFError(f"{where(el)}: <{tag}> (line {e.line}) missing required "
                            "attribute 'link'")
        links.append(e.attrib["link"])
    R, p = _origin(el, where)
    ae = el.find("axis")
    axis = np.array([1.0, 0.0, 0.0]) if ae is None else _floats(ae, "xyz", 3, where,
                                                               (1.0, 0.0, 0.0), context=el)
    if jtype in ("revolute", "continuous", "prismatic", "planar") and \
            not np.linalg.norm(axis) > 1e-12:
        raise URDFError(f"{where(el)}: <axis xyz='{ae.attrib.get('xyz')}'> is zero")
    le = el.find("limit")
    if le is None:
        if jtype in ("revolute", "prismatic"):
            raise URDFError(f"{where(el)}: a {jtype} joint needs a <limit> element "
                            "(with effort and velocity)")
        limits = JointLimits()
    else:
        vals = {}
        for k in ("effort", "velocity"):
            vals[k] = _float(le, k, where, context=el)
            if vals[k] is None and jtype in ("revolute", "prismatic"):
                raise URDFError(f"{where(el)}: <limit> (line {le.line}) missing required "
                                f"attribute {k!r}")
        lower = upper = None
        if jtype in ("revolute", "prismatic"):
            lower = _float(le, "lower", where, 0.0, context=el)
            upper = _float(le, "upper", where, 0.0, context=el)
            if lower > upper:
                raise URDFError(f"{where(el)}: <limit> (line {le.line}) lower {lower} > "
                                f"upper {upper}")
        limits = JointLimits(lower, upper, vals["effort"], vals["velocity"])
    de = el.find("dynamics")
    damping = friction = 0.0
    if de is not None:
        damping = _float(de, "damping", where, 0.0, context=el)
        friction = _float(de, "friction", where, 0.0, context=el)
        if damping < 0 or friction < 0:
            raise URDFError(f"{where(el)}: <dynamics> (line {de.line}) damping and friction "
                            f"must be >= 0, got {damping} and {friction}")
    mimic = None
    mi = el.find("mimic")
    if mi is not None:
        if not mi.attrib.get("joint"):
            raise URDFError(f"{where(el)}: <mimic> (line {mi.line}) missing required "
                            "attribute 'joint'")
        mimic = URDFMimic(mi.attrib["joint"], _float(mi, "multiplier", where, 1.0, el),
                          _float(mi, "offset", where, 0.0, el))
    return URDFJoint(name, jtype, links[0], links[1], R, p, axis, limits, damping, friction,
                     mimic, el.line)


def parse_urdf(path: str | os.PathLike | None = None, *, string: str | None = None
               ) -> URDFRobot:
    """Read and check a URDF file (or an XML string): attributes, inertias and topology.

    Raises :class:`~kanedyn.errors.URDFError` naming the element and its line.
    """
    if (path is None) == (string is None):
        raise URDFError("give either a path or string=<xml>, not both or neither")
    if string is None:
        source = str(path)
        try:
            text = Path(path).read_bytes()
        except OSError as e:
            hint = " (to load XML text, pass string=... or use load_urdf_string)" \
                if source.lstrip().startswith("<") else ""
            raise URDFError(f"cannot read URDF file {source[:200]!r}: {e.strerror}{hint}"
                            ) from None
    else:
        source, text = "<string>", string
    where = _Where(source)
    root = _parse_xml(text, source)
    if root.tag != "robot":
        raise URDFError(f"{where(root)}: the root element must be <robot>, not <{root.tag}>")
    _reject_xacro(root, where)

    links: dict[str, URDFLink] = {}
    link_el: dict[str, _Element] = {}
    for el in root.findall("link"):
        link = _link(el, where)
        if link.name in links:
            raise URDFError(f"{where(el)}: link {link.name!r} is defined twice "
                            f"(first on line {links[link.name].line})")
        links[link.name] = link
        link_el[link.name] = el
    if not links:
        raise URDFError(f"{where(root)}: the robot is empty (it has no <link>)")

    joints: dict[str, URDFJoint] = {}
    parent_of: dict[str, URDFJoint] = {}
    children: dict[str, list[URDFJoint]] = {n: [] for n in links}
    for el in root.findall("joint"):
        j = _joint(el, where)
        if j.name in joints:
            raise URDFError(f"{where(el)}: joint {j.name!r} is defined twice "
                            f"(first on line {joints[j.name].line})")
        for role, ln in (("parent", j.parent), ("child", j.child)):
            if ln not in links:
                raise URDFError(f"{where(el)}: {role} link {ln!r} does not exist")
        if j.child in parent_of:
            first = parent_of[j.child]
            raise URDFError(
                f"{where(el)}: link {j.child!r} has two parents: joint {first.name!r} "
                f"(line {first.line}) already attaches it to {first.parent!r}; a URDF is a "
                "tree (close loops with kanedyn.constraints instead)"
            )
        joints[j.name] = j
        parent_of[j.child] = j
        children[j.parent].append(j)
    dangling = {}
    for j in joints.values():
        if j.mimic is not None and j.mimic.joint not in joints:
            dangling[j.name] = (f"{source}, line {j.line}, <joint name={j.name!r}>: <mimic> "
                                f"names joint {j.mimic.joint!r}, which does not exist")

    roots = [n for n in links if n not in parent_of]
    if not roots:
        raise URDFError(f"{source}: every link has a parent joint, so the joints form a "
                        f"cycle ({_cycle(next(iter(links)), parent_of)})")
    if len(roots) > 1:
        desc = ", ".join(f"{n!r} (line {links[n].line})" for n in roots)
        raise URDFError(f"{source}: several root links (links without a parent joint): {desc}; "
                        "a URDF has exactly one root")
    reached, todo = set(), [roots[0]]
    while todo:
        n = todo.pop()
        reached.add(n)
        todo += [j.child for j in children[n]]
    if len(reached) != len(links):
        lost = next(n for n in links if n not in reached)
        raise URDFError(f"{source}: the joints form a cycle ({_cycle(lost, parent_of)})")
    return URDFRobot(root.attrib.get("name", "robot"), links, joints, roots[0], children,
                     source, _rotor_inertias(root, joints, where), dangling)


def _rotor_inertias(root: _Element, joints: dict, where: _Where) -> dict[str, float]:
    """``{joint: rotor inertia × gear ratio²}`` from Drake's transmission extension:
    ``<transmission><joint name="j"/><actuator><drake:rotor_inertia value="I"/>
    <drake:gear_ratio value="N"/></actuator></transmission>`` (gear ratio 1 when absent),
    the inertia of the rotor as the joint feels it through the gear."""
    out: dict[str, float] = {}
    for tr in root.findall("transmission"):
        je = tr.find("joint")
        for act in tr.findall("actuator"):
            ri = act.find("drake:rotor_inertia")
            if ri is None:
                continue
            if je is None or je.attrib.get("name") not in joints:
                name = None if je is None else je.attrib.get("name")
                raise URDFError(f"{where(tr)}: <drake:rotor_inertia> (line {ri.line}) is for "
                                f"joint {name!r}, which does not exist")
            inertia = _float(ri, "value", where, context=tr)
            if inertia is None or inertia < 0.0:
                raise URDFError(f"{where(tr)}: <drake:rotor_inertia> (line {ri.line}) needs a "
                                f"value >= 0, got {ri.attrib.get('value')!r}")
            ge = act.find("drake:gear_ratio")
            ratio = 1.0 if ge is None else _float(ge, "value", where, 1.0, context=tr)
            out[je.attrib["name"]] = inertia * ratio * ratio
    return out


def _cycle(start: str, parent_of: dict) -> str:
    seen, n = [], start
    while n not in seen:
        seen.append(n)
        n = parent_of[n].parent
    loop = seen[seen.index(n):] + [n]
    through = [parent_of[x] for x in loop[:-1]]
    return ("links " + " <- ".join(repr(x) for x in loop) + " through joints "
            + ", ".join(f"{j.name!r} (line {j.line})" for j in through))


def _reject_xacro(root: _Element, where: _Where) -> None:
    todo = [root]
    while todo:
        el = todo.pop()
        if el.tag.startswith("xacro:"):
            raise URDFError(f"{where(el)}: this is an unexpanded xacro file; "
                            "run `xacro file.urdf.xacro > file.urdf` first")
        todo += el.children


# --------------------------------------------------------------------------------------
# From the description to a Model
# --------------------------------------------------------------------------------------

def _plane_alignment(axis: NDArray) -> NDArray:
    """The shortest rotation A with A e_z = axis (columns: the plane's x, y and the normal)."""
    n = axis / np.linalg.norm(axis)
    z = np.array([0.0, 0.0, 1.0])
    c = float(n @ z)
    if c > 1.0 - 1e-12:
        return np.eye(3)
    if c < -1.0 + 1e-12:
        return np.diag([1.0, -1.0, -1.0])  # half turn about x
    k = np.cross(z, n)
    s = np.linalg.norm(k)
    k /= s
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + s * K + (1.0 - c) * K @ K


def _moving_joint(j: URDFJoint, armature: float = 0.0) -> Joint:
    common = dict(name=j.name, damping=j.damping, friction=j.friction, armature=armature,
                  limits=j.limits)
    if j.type in ("revolute", "continuous"):
        return Revolute(axis=tuple(j.axis), continuous=j.type == "continuous", **common)
    if j.type == "prismatic":
        return Prismatic(axis=tuple(j.axis), **common)
    if j.type == "floating":
        return Free(**common)
    if j.type == "planar":
        return Planar(**common)
    raise AssertionError(j.type)  # parse_urdf admits no other type


def build_model(robot: URDFRobot, floating_base: bool = False,
                gravity: ArrayLike = (0.0, 0.0, -9.81), *, check_singular: bool = True,
                strict: bool = False, armature: float | dict | None = None) -> Model:
    """The Model of a parsed URDF (see the module docstring for the conventions).

    What robot packages ship is judged where it matters (see ``docs/urdf.md``):

    - a link's rotational inertia that is not a rigid body's (not positive
      semidefinite, or breaking the triangle inequality, by more than
      :data:`~kanedyn.spatial.INERTIA_ROUNDING` of its largest principal moment) is
      taken as given, and gives one :class:`~kanedyn.KanedynWarning` naming the link,
      its line and the violation, when the rigid body it is merged into (through
      fixed joints) is physical — or when it is fixed to the world and moves nothing,
      or when the merged body only breaks the triangle inequality (still positive
      semidefinite, so M(q) is too: the warning says so), or when the merged body is
      not even positive semidefinite (judged then on the M(q) it produces: the warning
      says whether M is positive definite at the neutral configuration, and ``aba``
      raises a SolverError wherever a pivot of M(q) is not positive). Defects within the
      rounding tolerance are clipped silently on the merged body;
    - joints that move no inertia (a massless leaf, a mass on the axis; see
      :func:`~kanedyn.model.model.singular_joints`) give one warning naming them:
      M(q) is singular there, ``aba`` and what needs M⁻¹ raise a SolverError naming the
      joint, and ``armature=`` makes the model regular. ``check_singular=False``
      skips that check (kinematics-only descriptions);
    - ``strict=True`` turns each of these warnings into a URDFError.

    ``armature``: the rotor inertia added to M's diagonal at each speed of a joint
    (kg m² for a revolute joint, kg for a prismatic one): one number for every moving
    joint of the file (not the ``root_joint`` that ``floating_base`` adds), or
    ``{joint name: value}``. It replaces, for the joints it covers, what the file's
    ``<drake:rotor_inertia>`` and ``<drake:gear_ratio>`` transmissions give
    (:attr:`URDFRobot.armature`)."""
    src = robot.source

    def at(j: URDFJoint | None, link: URDFLink) -> str:
        if j is None:
            return f"{src}, line {link.line}, <link name={link.name!r}>"
        return f"{src}, line {j.line}, <joint name={j.name!r}>"

    def inertia_where(link: URDFLink) -> str:
        return (f"{at(None, link)}: <inertia> (line {link.inertial.line}) is not a rigid "
                f"body's rotational inertia ({link.inertial.defect})")

    defective = [ln for ln in robot.links.values()
                 if ln.inertial is not None and ln.inertial.defect]
    if strict and defective:
        raise URDFError(inertia_where(defective[0]))
    if strict and robot.dangling_mimic:
        raise URDFError(next(iter(robot.dangling_mimic.values())))
    if not floating_base and all(j.type == "fixed" for j in robot.joints.values()):
        n = len(robot.links)
        raise URDFError(
            f"{src}: robot {robot.name!r} has no moving joint (its {n} link"
            f"{'s are' if n > 1 else ' is'} fixed to the root link {robot.root!r}), so "
            "with a fixed base nothing moves; load it with floating_base=True to move it "
            "as one free body")
    root = robot.links[robot.root]
    base = root
    world_name = root.name
    if floating_base:
        kids = robot.children[root.name]
        if root.name == "world" and root.mass == 0.0:
            if len(kids) != 1 or kids[0].type != "fixed":
                raise URDFError(
                    f"{at(None, root)}: floating_base=True with a dummy 'world' root needs "
                    "exactly one fixed joint from it to the base link; found "
                    f"{[(k.name, k.type) for k in kids]}"
                )
            base = robot.links[kids[0].child]
        else:
            world_name = "world" if "world" not in robot.links else "__world__"
    root_joint = _root_joint_name(robot, base) if floating_base else None
    arm = _armatures(robot, armature, root_joint)
    b = ModelBuilder(robot.name, gravity=gravity, root_name=world_name)
    on_world = set()  # links that are the world (fixed base) or rigidly fixed to it
    todo: list[tuple[URDFJoint | None, URDFLink]] = []
    if floating_base:
        _add(b, at(None, base), base, None, Free(root_joint, armature=arm.get(root_joint, 0.0)),
             None)
        todo += [(j, robot.links[j.child]) for j in reversed(robot.children[base.name])]
        if base is not root:
            on_world.add(root.name)
    else:
        on_world.add(root.name)
        todo += [(j, robot.links[j.child]) for j in reversed(robot.children[root.name])]

    while todo:  # depth first, children in document order
        j, link = todo.pop()
        where = at(j, link)
        placement = (j.origin_R, j.origin_p)
        if j.type == "fixed" and j.parent in on_world:
            b.add_frame(link.name, j.parent, placement)
            on_world.add(link.name)
        elif j.type == "fixed":
            _add(b, where, link, j.parent, Fixed(j.name), placement)
        elif j.type == "planar":
            A = _plane_alignment(j.axis)
            joint = _moving_joint(j, arm.get(j.name, 0.0))
            if np.allclose(A, np.eye(3)):
                _add(b, where, link, j.parent, joint, placement)
            else:
                plane = f"{link.name}_planar"
                _add(b, where, None, j.parent, joint, (j.origin_R @ A, j.origin_p),
                     name=plane)
                _add(b, where, link, plane, Fixed(f"{j.name}_plane_alignment"),
                     (A.T, np.zeros(3)))
        else:
            _add(b, where, link, j.parent, _moving_joint(j, arm.get(j.name, 0.0)), placement)
        todo += [(c, robot.links[c.child]) for c in reversed(robot.children[link.name])]

    try:
        model = b.build(check_singular=False, warn_unphysical=False, accept_indefinite=True)
    except ModelError as e:
        body = getattr(e, "body", None)
        if body in robot.links:
            raise URDFError(f"{at(None, robot.links[body])}: {e}") from None
        raise URDFError(f"{src}: {e}") from None

    # the joints that move no inertia at the neutral configuration (a non-positive pivot
    # of M): told about below, and named where a defective link's body is indefinite
    bad = singular_joints(model) if defective or check_singular else []
    for link in defective:  # (build kept their bodies: physical, or judged on M(q) here)
        fr = model.frames.get(link.name)
        where_body = -1 if fr is None and link.name in on_world else \
            (fr.body if fr is not None else model.body_index(link.name))
        if where_body < 0:
            fate = "it is fixed to the world, so its inertia moves nothing"
        elif model.bodies[where_body].name in b.unphysical_bodies:
            body = model.bodies[where_body].name
            why = b.unphysical_bodies[body]
            if "not positive semidefinite" not in why:
                fate = (f"loaded as given: the rigid body {body!r} it is part of is not "
                        f"physical either ({why}), but positive semidefinite, so M(q) is too")
            else:  # judged on the joint-space inertia it produces
                at_neutral = "is not positive definite" if bad else "is positive definite"
                fate = (f"loaded as given: the rigid body {body!r} it is part of is not "
                        f"positive semidefinite either ({why}), so some of its motions have "
                        f"negative kinetic energy; M(q) at the neutral configuration "
                        f"{at_neutral}, and aba raises SolverError where a pivot of M(q) "
                        "is not positive")
        else:
            fate = (f"loaded as given: the rigid body {model.bodies[where_body].name!r} it is "
                    "merged into is physical")
        warnings.warn(f"{inertia_where(link)}; {fate} (strict=True makes this an error)",
                      KanedynWarning, stacklevel=3)
    for msg in robot.dangling_mimic.values():
        warnings.warn(f"{msg}; the coupling is ignored (strict=True makes this an error)",
                      KanedynWarning, stacklevel=3)
    if check_singular:
        if bad:
            joints = {j.name: j for j in robot.joints.values()}
            lines = [f"{n!r}" + (f" (line {joints[n].line})" if n in joints else "")
                     for n in bad]
            what = (f"joint{'s' if len(bad) > 1 else ''} {', '.join(lines)} move"
                    f"{'' if len(bad) > 1 else 's'} no inertia (the bodies carried are "
                    "massless or their mass lies on the axis), so M(q) is singular")
            if strict:
                j = joints.get(bad[0])
                head = at(j, robot.links[j.child]) if j is not None else src
                raise URDFError(f"{head}: {what}")
            warnings.warn(
                f"{src}: {what}; rnea, crba, kinematics and Jacobians work, aba and "
                "simulation raise SolverError: give a rotor inertia, e.g. "
                f"armature={{{bad[0]!r}: 1e-4}}, or mass (strict=True makes this an error)",
                KanedynWarning, stacklevel=3)
    # the file, for the 3D views to read its <visual> elements from
    return model if src == "<string>" else replace(model, source=str(Path(src).resolve()))


def _root_joint_name(robot: URDFRobot, base: URDFLink) -> str:
    return "root_joint" if "root_joint" not in robot.joints else f"{base.name}_root_joint"


def _armatures(robot: URDFRobot, armature, root_joint: str | None) -> dict[str, float]:
    """``{joint: armature}``: the file's transmissions, replaced where ``armature`` says
    (``root_joint``: the free joint floating_base adds, which a dict may name)."""
    out = dict(robot.armature)
    moving = [j.name for j in robot.joints.values() if j.type != "fixed"]
    if armature is None:
        return out
    if isinstance(armature, dict):
        names = moving + ([root_joint] if root_joint else [])
        unknown = [n for n in armature if n not in names]
        if unknown:
            raise URDFError(f"{robot.source}: armature= names {unknown}, which are not moving "
                            f"joints of robot {robot.name!r}; its moving joints are {names}")
        items = armature.items()
    else:
        items = ((n, armature) for n in moving)
    for n, val in items:
        try:
            x = float(val)
        except (TypeError, ValueError):
            x = np.nan
        if not (np.isfinite(x) and x >= 0.0):
            raise URDFError(f"{robot.source}: armature of joint {n!r} must be a finite "
                            f"number >= 0, got {val!r}")
        out[n] = x
    return out


def _add(b: ModelBuilder, where: str, link: URDFLink | None, parent: str | None, joint: Joint,
         placement, name: str | None = None) -> None:
    try:
        if link is None or link.inertial is None:
            b.add_body(name or link.name, parent, joint, placement)
        else:
            ine = link.inertial
            b.add_body(link.name, parent, joint, placement, ine.mass, ine.com, ine.inertia,
                       check_inertia=False)
    except ModelError as e:
        raise URDFError(f"{where}: {e}") from None


def load_urdf(path: str | os.PathLike | None = None, floating_base: bool = False,
              gravity: ArrayLike = (0.0, 0.0, -9.81), *, string: str | None = None,
              check_singular: bool = True, strict: bool = False,
              armature: float | dict | None = None) -> Model:
    """Load a URDF file (or ``string=`` XML) as a Model.

    ``floating_base=True`` adds a free joint ``root_joint`` between the world and
    the root link (q starts with its position and unit quaternion (w, x, y, z), v with
    its body-frame (ω, v)). Joints are ordered depth first, children in document
    order; ``model.joint_names`` lists them. Tolerable defects of the file (a link
    inertia that is not a rigid body's once merged, joints that move no inertia) are
    warnings (:class:`~kanedyn.KanedynWarning`), errors with ``strict=True``; ``armature``
    (one number or ``{joint: value}``) adds rotor inertia to M's diagonal.
    ``check_singular=False`` skips the check for joints that move no inertia. See
    :func:`build_model` and :mod:`kanedyn.model.urdf` for the rest.
    """
    return build_model(parse_urdf(path, string=string), floating_base, gravity,
                       check_singular=check_singular, strict=strict, armature=armature)


def load_urdf_string(xml: str, floating_base: bool = False,
                     gravity: ArrayLike = (0.0, 0.0, -9.81), *, check_singular: bool = True,
                     strict: bool = False, armature: float | dict | None = None) -> Model:
    """:func:`load_urdf` of an XML string."""
    return load_urdf(None, floating_base, gravity, string=xml, check_singular=check_singular,
                     strict=strict, armature=armature)


def robot_path(name: str) -> Path:
    """Path of a robot description shipped with kanedyn (one of :data:`ROBOTS`)."""
    if name not in ROBOTS:
        raise ModelError(f"no robot description named {name!r}; available: {', '.join(ROBOTS)}")
    return _ROBOT_DIR / f"{name}.urdf"


def load_robot(name: str, floating_base: bool = False,
               gravity: ArrayLike = (0.0, 0.0, -9.81), *, strict: bool = False,
               armature: float | dict | None = None) -> Model:
    """A shipped robot description (``panda``, ``ur5``, ``humanoid``, ``quadruped``,
    ``chain20``) as a Model (``strict``, ``armature``: as :func:`load_urdf`)."""
    return load_urdf(robot_path(name), floating_base, gravity, strict=strict,
                     armature=armature)
