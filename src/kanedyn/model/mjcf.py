"""MJCF import: a MuJoCo XML model to a :class:`~kanedyn.model.Model`.

MJCF (MuJoCo's XML format, https://mujoco.readthedocs.io, "XML Reference")
nests ``<body>`` elements in ``<worldbody>``. A body's ``pos`` and orientation
place its frame in its parent's frame; its ``<joint>`` elements (hinge,
slide, ball, free) move it relative to that reference pose, each about or
along an axis through an anchor ``pos`` given in the body's frame; a body
without joints is welded to its parent. Mass comes from ``<inertial>``, or,
without one, from the body's geoms as solids of uniform density
(``<compiler inertiafromgeom>``, see :mod:`kanedyn.model.geom_inertia`).

Loading is done in two steps, both public:

1. :func:`parse_mjcf` reads the XML (``<include>`` spliced in, each element
   remembering its file and line; ``<replicate>`` and ``<attach>`` expanded as
   MuJoCo expands them), resolves ``<default>`` classes and
   ``childclass``, turns every orientation into a rotation matrix, computes
   each body's inertia, and builds the Model; it returns an
   :class:`MJCFRobot` — the Model together with what it does not carry: the
   joints' passive parameters, ``<equality>`` loop closures, ``<actuator>``
   motors, the reference configuration ``qpos0`` and the list of what was
   skipped;
2. the layers above turn that data into objects of theirs:
   :func:`kanedyn.forces.mjcf_forces` (springs, dampers, friction loss) and
   :func:`kanedyn.constraints.mjcf_loops` / :func:`kanedyn.constraints.mjcf_system`
   (the loop closures of a ``ConstrainedSystem``).

:func:`load_mjcf` returns the Model alone.

Conventions (and how they map MuJoCo's):

- Joint order in q and v is MuJoCo's (bodies depth first in document order,
  a body's joints in document order), and ``q`` is MuJoCo's ``qpos`` for
  hinge, slide and ball joints (a hinge's angle counts from its reference pose
  at ``qpos = ref``, as in MuJoCo).
- A free joint's q is MuJoCo's too, (position, quaternion w x y z) of the body
  in the world. Its speeds differ: kanedyn's v is the body's spatial velocity
  in body coordinates, angular first, ``v = (ω_body, Rᵀ ṗ)``, where MuJoCo's
  ``qvel = (ṗ, ω_body)`` (linear velocity in world axes first).
- Every kanedyn body's frame is a MuJoCo body's frame, except where a joint's
  anchor is not at its body's origin: a revolute (or spherical) joint turns
  about its frame's origin, so the moving body's origin is put on the anchor
  and the MuJoCo body's frame becomes a frame of the Model named after the
  body (``model.frames[name]``; its pose is MuJoCo's ``xpos``/``xmat``). The
  moving body is then named ``<body>/<joint>``. A body with several
  joints becomes a chain of massless bodies ``<body>/<joint>``, one per joint,
  as MuJoCo composes them (each joint turns the body about its anchor in the
  frame left by the previous one). A body with no joint is merged into its
  parent (its frame kept) or, under the world, is static (a world frame).
- Angles are degrees unless ``<compiler angle="radian">`` (MuJoCo's default):
  euler, axisangle, and a hinge's or ball's range, ref and springref.

Skipped, with one :class:`~kanedyn.errors.KanedynWarning` listing them:
everything kanedyn does not model — collision (contacts) of geoms, sites,
cameras, lights, tendons, sensors, plugins, keyframes, visual and rendering
assets, solver options, actuators other than joint motors.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..errors import KanedynWarning, MJCFError, ModelError
from ..spatial import (
    Transform,
    inertia_parameters,
    matrix_to_quat,
    rotational_inertia_is_physical,
    spatial_inertia,
)
from .geom_inertia import (
    PRIMITIVES,
    SIZE_COUNT,
    mesh_unit_properties,
    primitive_unit_properties,
)
from .joints import Free, Joint, JointLimits, Prismatic, Revolute, Spherical
from .model import Model, ModelBuilder
from .urdf import _Element, _parse_xml, _plane_alignment, _Where
from .visuals import VisualGeometry

#: joint types of MJCF
MJCF_JOINT_TYPES = ("hinge", "slide", "ball", "free")

# elements inside a body that generate bodies: refused (the rest is read, or skipped)
_BODY_REFUSE = ("composite", "flexcomp")
_TOP_SKIP = ("visual", "statistic", "size", "tendon", "sensor", "keyframe", "contact",
             "extension", "custom", "deformable", "plugin")
_ACTUATOR_TAGS = ("motor", "general", "position", "velocity", "intvelocity", "damper",
                  "cylinder", "muscle", "adhesion", "plugin")


# --------------------------------------------------------------------------------------
# The file's content as data
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MJCFJoint:
    """One MJCF joint, angles in radians: ``range`` is None when the joint is not limited."""

    name: str
    type: str
    body: str
    pos: NDArray
    axis: NDArray
    range: tuple[float, float] | None
    ref: float
    springref: float
    stiffness: float
    damping: float
    frictionloss: float
    armature: float
    line: int


@dataclass(frozen=True)
class MJCFBody:
    """A MuJoCo body: its pose in its parent's frame at the reference configuration,
    and its mass, centre of mass and rotational inertia about it, in its own frame."""

    name: str
    parent: str
    pos: NDArray
    rotation: NDArray
    mass: float
    com: NDArray
    inertia: NDArray
    joints: tuple[MJCFJoint, ...]
    inertia_from: str
    line: int


@dataclass(frozen=True)
class MJCFEquality:
    """An ``<equality connect|weld>`` as a loop closure between two kanedyn bodies
    (None: the world), each side's frame (R, p) in its body's coordinates."""

    name: str
    kind: str
    body_a: str | None
    body_b: str | None
    frame_a: tuple[NDArray, NDArray]
    frame_b: tuple[NDArray, NDArray]
    line: int


@dataclass(frozen=True)
class MJCFActuator:
    """A ``<motor>`` on a joint: joint force ``gear * ctrl``, ctrl within ``ctrlrange``
    (None: unlimited)."""

    name: str
    joint: str
    gear: float
    ctrlrange: tuple[float, float] | None
    forcerange: tuple[float, float] | None
    line: int


@dataclass(frozen=True)
class MJCFRobot:
    """The content of an MJCF file: the Model and what it does not carry.

    ``bodies`` are MuJoCo's bodies in MuJoCo's order (world excluded), ``joints``
    MuJoCo's joints in q order, ``qpos0`` the reference configuration (kanedyn q)
    at which MuJoCo's model is defined, ``skipped`` what was not read
    (``{"<tag> / what": [lines]}``, a line of an included or attached file as
    ``"file.xml:line"``)."""

    name: str
    model: Model
    bodies: dict
    joints: dict
    equalities: tuple[MJCFEquality, ...]
    actuators: tuple[MJCFActuator, ...]
    qpos0: NDArray
    skipped: dict
    source: str
    options: dict = field(default_factory=dict)
    #: the visible geoms (groups 0-2) as :class:`~kanedyn.model.visuals.VisualGeometry`
    visuals: tuple = ()


# --------------------------------------------------------------------------------------
# Reading: files, includes, defaults, attributes
# --------------------------------------------------------------------------------------

def _read(path: Path, source: str, el: _Element | None, where: _Where) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        at = f"{where(el)}: " if el is not None else ""
        raise MJCFError(f"{at}cannot read MJCF file {str(path)!r}: {e.strerror}") from None


#: the suffix a <replicate> adds to the names an <attach> inside it brings in
_ATTACH_SUFFIX = "__kanedyn_suffix"


def _renamed(el: _Element, rename) -> _Element:
    """A deep copy of an element, every ``name`` below it (itself included) renamed."""
    attrib = dict(el.attrib)
    if "name" in attrib:
        attrib["name"] = rename(attrib["name"])
    if el.tag == "attach":  # its names come later: keep what the copy adds to them
        attrib[_ATTACH_SUFFIX] = rename(attrib.get(_ATTACH_SUFFIX, ""))
    out = _Element(el.tag, attrib, el.line, [_renamed(c, rename) for c in el.children])
    out.source = getattr(el, "source", "")
    return out


def _walk(el: _Element):
    """An element and all its descendants, depth first."""
    todo = [el]
    while todo:
        e = todo.pop()
        yield e
        todo += reversed(e.children)


def _expand_replicates(el: _Element, opts: dict, where: _Where) -> None:
    """Replace every ``<replicate count offset euler sep>`` below ``el`` by ``count``
    ``<frame>``s holding copies of its children, copy i at ``T^i`` (T the offset and the
    euler rotation, composed i times) with names suffixed ``sep`` + i (zero-padded to the
    digits of count), inner replicates first, as MuJoCo expands them."""
    out = []
    for c in el.children:
        _expand_replicates(c, opts, where)
        if c.tag != "replicate":
            out.append(c)
            continue
        at = _Attrs(c, c.attrib, where)
        n = at.float("count")
        if n is None or n < 1 or n != int(n):
            raise MJCFError(f"{where(c)}: count={c.attrib.get('count')!r} must be a positive "
                            "integer")
        n = int(n)
        step = _rotation(_Attrs(c, {k: v for k, v in c.attrib.items() if k == "euler"},
                                where), opts), at.floats("offset", 3, (0.0, 0.0, 0.0))
        sep, width = c.attrib.get("sep", ""), len(str(n))
        T = _IDENTITY
        for i in range(n):
            R, p = T
            frame = _Element("frame", {"pos": " ".join(repr(float(x)) for x in p),
                                       "quat": " ".join(repr(float(x))
                                                        for x in matrix_to_quat(R))},
                             c.line, [_renamed(k, lambda n, x=f"{sep}{i:0{width}d}": n + x)
                              for k in c.children])
            frame.source = getattr(c, "source", "")
            out.append(frame)
            T = _compose(step, T)
    el.children = out


def _tag_source(el: _Element, source: str) -> None:
    todo = [el]
    while todo:
        e = todo.pop()
        e.source = source
        todo += e.children


def _expand_includes(el: _Element, base: Path, stack: tuple[Path, ...], where: _Where
                     ) -> None:
    """Replace every ``<include file>`` below ``el`` by the children of that file's root."""
    out = []
    for c in el.children:
        if c.tag != "include":
            _expand_includes(c, base, stack, where)
            out.append(c)
            continue
        name = c.attrib.get("file")
        if not name:
            raise MJCFError(f"{where(c)}: missing required attribute 'file'")
        here = Path(getattr(c, "source", str(base))).parent
        path = Path(name) if Path(name).is_absolute() else here / name
        if not path.exists() and not Path(name).is_absolute():
            path = base / name  # MuJoCo resolves includes from the main file's folder
        real = path.resolve()
        if real in stack:
            chain = " -> ".join(str(p.name) for p in (*stack, real))
            raise MJCFError(f"{where(c)}: <include file={name!r}> is a cycle ({chain})")
        text = _read(path, str(path), c, where)
        sub = _parse_xml(text, str(path), MJCFError)
        _tag_source(sub, str(path))
        if sub.tag != "mujoco":
            raise MJCFError(f"{where(sub)}: an included file's root element must be "
                            f"<mujoco>, not <{sub.tag}>")
        _expand_includes(sub, base, (*stack, real), where)
        out += sub.children
    el.children = out


class _Defaults:
    """``<default>`` classes: ``{class: {tag: {attribute: value}}}``, children inheriting
    from their parent class (class "main" is the top one)."""

    def __init__(self, root: _Element | None, where: _Where):
        self.classes: dict[str, dict[str, dict]] = {"main": {}}
        self.where = where
        for d in ([] if root is None else root.findall("default")):
            self._read(d, None)

    def _read(self, el: _Element, parent: str | None) -> None:
        name = el.attrib.get("class", "main" if parent is None else None)
        if name is None:
            raise MJCFError(f"{self.where(el)}: a nested <default> needs a 'class'")
        if name in self.classes and not (name == "main" and parent is None):
            raise MJCFError(f"{self.where(el)}: default class {name!r} is defined twice")
        inherited = {} if parent is None else self.classes[parent]
        own = {t: dict(a) for t, a in inherited.items()}
        for c in el.children:
            if c.tag == "default":
                continue
            tag = "actuator" if c.tag in _ACTUATOR_TAGS else c.tag
            own.setdefault(tag, {}).update(c.attrib)
        self.classes[name] = own
        for c in el.findall("default"):
            self._read(c, name)

    def attrs(self, el: _Element, childclass: str | None) -> dict:
        """The element's attributes over those of its class (own, or the childclass)."""
        cls = el.attrib.get("class", childclass or "main")
        if cls not in self.classes:
            raise MJCFError(f"{self.where(el)}: unknown default class {cls!r} (classes: "
                            f"{', '.join(sorted(self.classes))})")
        tag = "actuator" if el.tag in _ACTUATOR_TAGS else el.tag
        out = dict(self.classes[cls].get(tag, {}))
        out.update(el.attrib)
        out.pop("class", None)
        return out


class _Attrs:
    """Typed reads of one element's resolved attributes, errors naming element and line."""

    def __init__(self, el: _Element, attrs: dict, where: _Where):
        self.el, self.a, self.where = el, attrs, where

    def has(self, k: str) -> bool:
        return k in self.a

    def str(self, k: str, default: str | None = None) -> str | None:
        return self.a.get(k, default)

    def floats(self, k: str, n: int | tuple[int, ...] | None = None, default=None
               ) -> NDArray | None:
        raw = self.a.get(k)
        if raw is None:
            return None if default is None else np.asarray(default, dtype=float)
        try:
            vals = np.array([float(t) for t in raw.split()], dtype=float)
        except ValueError:
            vals = None
        counts = (n,) if isinstance(n, int) else n
        if vals is None or not np.all(np.isfinite(vals)) or \
                (counts is not None and vals.size not in counts):
            want = "" if counts is None else " or ".join(str(c) for c in counts) + " "
            raise MJCFError(f"{self.where(self.el)}: attribute {k}={raw!r} is not {want}"
                            "finite numbers")
        return vals

    def float(self, k: str, default: float | None = None) -> float | None:
        v = self.floats(k, 1, None if default is None else [default])
        return None if v is None else float(v[0])

    def bool(self, k: str, default: str = "false") -> bool | None:
        raw = self.a.get(k, default)
        if raw not in ("true", "false", "auto"):
            raise MJCFError(f"{self.where(self.el)}: attribute {k}={raw!r} must be true, "
                            "false or auto")
        return None if raw == "auto" else raw == "true"

    def nonneg(self, k: str) -> float:
        v = self.float(k, 0.0)
        if v < 0.0:
            raise MJCFError(f"{self.where(self.el)}: {k}={v} must be >= 0")
        return v


# --------------------------------------------------------------------------------------
# Orientations
# --------------------------------------------------------------------------------------

def _quat_matrix(q: NDArray) -> NDArray:
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _axis_rotation(axis: NDArray, angle: float) -> NDArray:
    a = axis / np.linalg.norm(axis)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


_ORIENTATIONS = ("quat", "axisangle", "euler", "xyaxes", "zaxis")


def _rotation(at: _Attrs, opts: dict) -> NDArray:
    """The rotation of one of MJCF's five orientation attributes (identity if none).

    euler: three rotations about the axes of ``eulerseq``, lower-case axes moving
    with the frame (R = R1 R2 R3), upper-case ones fixed (R = R3 R2 R1), mixed as
    MuJoCo composes them one by one."""
    given = [k for k in _ORIENTATIONS if at.has(k)]
    if len(given) > 1:
        raise MJCFError(f"{at.where(at.el)}: orientation given twice ({', '.join(given)}); "
                        "use one of quat, axisangle, euler, xyaxes, zaxis")
    if not given:
        return np.eye(3)
    k = given[0]
    scale = opts["angle_scale"]
    if k == "quat":
        q = at.floats(k, 4)
        if np.linalg.norm(q) < 1e-12:
            raise MJCFError(f"{at.where(at.el)}: quat {at.str(k)!r} is zero")
        return _quat_matrix(q)
    if k == "axisangle":
        v = at.floats(k, 4)
        if np.linalg.norm(v[:3]) < 1e-12:
            raise MJCFError(f"{at.where(at.el)}: axisangle axis {at.str(k)!r} is zero")
        return _axis_rotation(v[:3], v[3] * scale)
    if k == "euler":
        e = at.floats(k, 3) * scale
        R = np.eye(3)
        for ch, ang in zip(opts["eulerseq"], e, strict=True):
            r = _axis_rotation(np.eye(3)["xyz".index(ch.lower())], ang)
            R = R @ r if ch.islower() else r @ R
        return R
    if k == "xyaxes":
        v = at.floats(k, 6)
        x, y = v[:3], v[3:]
        nx = np.linalg.norm(x)
        y = y - (x @ y) / max(nx * nx, 1e-300) * x
        ny = np.linalg.norm(y)
        if nx < 1e-12 or ny < 1e-12:
            raise MJCFError(f"{at.where(at.el)}: xyaxes {at.str(k)!r} are zero or parallel")
        x, y = x / nx, y / ny
        return np.column_stack([x, y, np.cross(x, y)])
    z = at.floats(k, 3)
    if np.linalg.norm(z) < 1e-12:
        raise MJCFError(f"{at.where(at.el)}: zaxis {at.str(k)!r} is zero")
    return _plane_alignment(z)


def _pose(at: _Attrs, opts: dict) -> tuple[NDArray, NDArray]:
    return _rotation(at, opts), at.floats("pos", 3, (0.0, 0.0, 0.0))


def _compose(A, B):
    """Pose of C in A from the pose of B in A and of C in B (each (R, p))."""
    return A[0] @ B[0], A[1] + A[0] @ B[1]


def _invert(A):
    return A[0].T, -A[0].T @ A[1]


_IDENTITY = (np.eye(3), np.zeros(3))


# --------------------------------------------------------------------------------------
# Inertia
# --------------------------------------------------------------------------------------

def _inertial(el: _Element, at: _Attrs, opts: dict, strict: bool, body: str, where
              ) -> tuple[float, NDArray, NDArray]:
    """(mass, com, inertia about com in body axes) of an ``<inertial>`` element."""
    if not at.has("pos"):
        raise MJCFError(f"{where(el)}: missing required attribute 'pos'")
    mass = at.float("mass")
    if mass is None:
        raise MJCFError(f"{where(el)}: missing required attribute 'mass'")
    if mass < 0.0:
        raise MJCFError(f"{where(el)}: mass {mass} is negative")
    R, c = _pose(at, opts)
    if at.has("fullinertia") and at.has("diaginertia"):
        raise MJCFError(f"{where(el)}: give diaginertia or fullinertia, not both")
    if at.has("fullinertia"):
        if at.has("quat") or any(at.has(k) for k in _ORIENTATIONS):
            raise MJCFError(f"{where(el)}: fullinertia cannot be combined with an "
                            "orientation (MuJoCo)")
        xx, yy, zz, xy, xz, yz = at.floats("fullinertia", 6)
        I = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    elif at.has("diaginertia"):
        I = np.diag(at.floats("diaginertia", 3))
    else:
        raise MJCFError(f"{where(el)}: needs diaginertia or fullinertia")
    ok, why = rotational_inertia_is_physical(I)
    if not ok:
        msg = (f"{where(el)}: the inertia of body {body!r} is not a rigid body's rotational "
               f"inertia ({why})")
        if strict:
            raise MJCFError(msg)
        warnings.warn(f"{msg}; kept as given", KanedynWarning, stacklevel=4)
    return mass, c, R @ I @ R.T


def _geom_frame(el: _Element, at: _Attrs, opts: dict, where, kind: str
                ) -> tuple[NDArray, NDArray, NDArray]:
    """(R, p, size) of a geom: its axes and origin in its body's (or frame's) coordinates
    and its MJCF size (half-sizes; from ``fromto`` when given)."""
    if at.has("fromto"):
        if kind not in ("capsule", "cylinder", "box", "ellipsoid"):
            raise MJCFError(f"{where(el)}: fromto is only for capsule, cylinder, box and "
                            f"ellipsoid, not {kind}")
        ft = at.floats("fromto", 6)
        d = ft[3:] - ft[:3]
        L = np.linalg.norm(d)
        if L < 1e-12:
            raise MJCFError(f"{where(el)}: fromto {at.str('fromto')!r} has zero length")
        R, p = _plane_alignment(d), 0.5 * (ft[:3] + ft[3:])
        raw = at.floats("size", None, ())
        if raw.size < 1 or not raw[0] > 0.0:
            raise MJCFError(f"{where(el)}: a {kind} geom with fromto needs a positive size "
                            f"(its radius); got {at.str('size')!r}")
        # MuJoCo: a box or ellipsoid along fromto has half-sides (size[0], size[0], L/2)
        size = np.array([raw[0], 0.5 * L]) if kind in ("capsule", "cylinder") else \
            np.array([raw[0], raw[0], 0.5 * L])
    else:
        R, p = _pose(at, opts)
        size = at.floats("size", None, ())
    return R, p, size


def _geom_properties(el: _Element, at: _Attrs, opts: dict, meshes: dict, where
                     ) -> tuple[float, NDArray, NDArray] | None:
    """(mass, com, inertia about com) of one geom in its body's frame; None for geoms
    that carry no volume (plane, hfield, sdf)."""
    kind = at.str("type", "sphere")
    if kind in ("plane", "hfield", "sdf"):
        return None
    if kind not in PRIMITIVES and kind != "mesh":
        raise MJCFError(f"{where(el)}: unknown geom type {kind!r} (MJCF geom types: "
                        f"plane, hfield, sdf, mesh, {', '.join(PRIMITIVES)})")
    if at.has("shellinertia") and at.bool("shellinertia"):
        raise MJCFError(f"{where(el)}: shellinertia (a hollow geom) is not supported")
    R, p, size = _geom_frame(el, at, opts, where, kind)
    if kind == "mesh":
        mname = at.str("mesh")
        if mname is None:
            raise MJCFError(f"{where(el)}: a mesh geom needs a 'mesh' attribute")
        if mname not in meshes:
            raise MJCFError(f"{where(el)}: mesh {mname!r} is not defined in <asset> "
                            f"(meshes: {', '.join(sorted(meshes)) or 'none'})")
        V, c0, J = meshes[mname][:3]
    else:
        n = SIZE_COUNT[kind]
        if size.size < n or not np.all(size[:n] > 0.0):
            raise MJCFError(f"{where(el)}: a {kind} geom needs size with {n} positive "
                            f"number(s); got {at.str('size')!r}")
        V, Jd = primitive_unit_properties(kind, size[:n])
        c0, J = np.zeros(3), np.diag(Jd)
    m = at.float("mass")
    if m is None:
        rho = at.float("density", 1000.0)
        m = rho * V
    else:
        if m < 0:
            raise MJCFError(f"{where(el)}: mass {m} is negative")
        rho = m / V
    return m, p + R @ c0, rho * (R @ J @ R.T)


#: MuJoCo's geom colour where none is given
GEOM_RGBA = (0.5, 0.5, 0.5, 1.0)


def _geom_visual(el: _Element, at: _Attrs, opts: dict, meshes: dict, where, prefix: tuple,
                 body: str) -> tuple:
    """What a geom looks like, in its MuJoCo body's frame: ``(body, R, p, kind, size,
    rgba, vertices, faces, mesh file, name)`` with sizes as :class:`VisualGeometry`
    takes them (full sides and lengths where MJCF gives halves). A mesh keeps the
    coordinates of its file (MuJoCo re-centres it internally and moves the geom frame
    to match, so it is drawn where the file puts it)."""
    kind = at.str("type", "sphere")
    R, p, size = _geom_frame(el, at, opts, where, kind)
    Rg, pg = prefix
    R, p = Rg @ R, pg + Rg @ p
    rgba = tuple(at.floats("rgba", 4, GEOM_RGBA))
    verts = faces = file = None
    if kind == "mesh":
        verts, faces, file = meshes[at.str("mesh")][3]
        size = (1.0, 1.0, 1.0)  # the asset's scale is in the vertices already
    elif kind == "box":
        size = tuple(2.0 * size[:3])
    elif kind in ("capsule", "cylinder"):
        size = (size[0], 2.0 * size[1])
    elif kind == "sphere":
        size = (size[0],)
    else:  # ellipsoid: its semi-axes
        size = tuple(size[:3])
    label = f"{where(el)} (body {body!r})"
    return body, R, p, kind, size, rgba, verts, faces, file, label


def _visuals(P: _Parser, model: Model) -> tuple:
    """The :class:`~kanedyn.model.visuals.VisualGeometry` of every visible geom, on the
    kanedyn body that carries its MuJoCo body (``model.frame`` of the body's name); a
    mesh given by vertices only is drawn as their convex hull (trimesh), or not at all
    without trimesh."""
    out = []
    for body, R, p, kind, size, rgba, verts, faces, file, label in P.visual_parts:
        if rgba[3] <= 0.0:
            continue  # invisible (MuJoCo's convention for collision-only geoms)
        F = model.frame(body)
        RF, pF = F.placement.rotation, F.placement.translation
        if kind == "mesh" and faces is None:
            try:
                import trimesh
            except ImportError:
                continue
            hull = trimesh.Trimesh(verts).convex_hull
            verts, faces = np.asarray(hull.vertices), np.asarray(hull.faces)
        out.append(VisualGeometry(F.body, Transform.from_pose(RF @ R, pF + RF @ p), kind,
                                  size, rgba, verts, faces, label, file))
    return tuple(out)


def _sum_inertias(parts) -> tuple[float, NDArray, NDArray]:
    """Mass, centre of mass and inertia about it of rigidly joined parts (m, c, I_c)."""
    I6 = np.zeros((6, 6))
    for m, c, Ic in parts:
        I6 += spatial_inertia(m, c, Ic)
    return inertia_parameters(I6)


def _binary_stl(path: Path) -> NDArray | None:
    """The triangles (n, 3, 3) of a binary STL file (an 80-byte header, a uint32 count n,
    then n records of a normal, three vertices as float32 and a uint16), or None if the
    file is not one (ASCII STL, another format)."""
    if path.suffix.lower() != ".stl":
        return None
    data = path.read_bytes()
    if len(data) < 84:
        return None
    n = int(np.frombuffer(data, "<u4", 1, 80)[0])
    if len(data) != 84 + 50 * n or n == 0:
        return None
    rec = np.frombuffer(data, np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)),
                                        ("a", "<u2")]), n, 84)
    return rec["v"].astype(float)


def _trimesh(at: str):
    try:
        import trimesh
    except ImportError:
        raise MJCFError(f"{at}: mesh inertia needs the trimesh package "
                        "(pip install trimesh)") from None
    return trimesh


def _read_meshes(asset_els, defaults: _Defaults, base: Path, opts: dict, where,
                 skipped) -> dict:
    """``{name: (V, c, J, (vertices, faces, file))}`` of every ``<mesh>`` asset: its unit
    density volume, centroid and inertia, and its scaled geometry (faces None when the
    mesh is given by vertices only), in mesh coordinates."""
    meshes = {}
    for asset in asset_els:
        for el in asset.children:
            if el.tag == "model":
                continue  # read by <attach>
            if el.tag != "mesh":
                _skip(skipped, f"<asset> <{el.tag}>", el)
                continue
            at = _Attrs(el, defaults.attrs(el, None), where)
            file = at.str("file")
            name = at.str("name") or (Path(file).stem if file else None)
            if name is None:
                raise MJCFError(f"{where(el)}: a mesh needs a name or a file")
            scale = at.floats("scale", 3, (1.0, 1.0, 1.0))
            inertia = at.str("inertia", "legacy")
            if inertia not in ("legacy", "exact", "convex", "shell"):
                raise MJCFError(f"{where(el)}: mesh inertia {inertia!r} is not one of "
                                "convex, exact, legacy, shell")
            if inertia == "shell":
                raise MJCFError(f"{where(el)}: mesh inertia='shell' (a hollow mesh) is not "
                                "supported")
            if file is not None:
                folder = opts["meshdir"]
                path = Path(file)
                if not path.is_absolute():
                    path = base / folder / path
                if not path.exists():
                    raise MJCFError(f"{where(el)}: mesh file {str(path)!r} does not exist")
                tri = _binary_stl(path)
                if tri is not None:  # the common case, read directly (trimesh is slower)
                    verts, faces = tri.reshape(-1, 3), np.arange(tri.shape[0] * 3).reshape(-1, 3)
                else:
                    trimesh = _trimesh(where(el))
                    try:
                        tm = trimesh.load_mesh(str(path), process=False)
                        verts, faces = np.asarray(tm.vertices, float), np.asarray(tm.faces)
                    except Exception as e:  # trimesh raises many kinds on a bad file
                        raise MJCFError(f"{where(el)}: cannot read mesh file {str(path)!r} "
                                        f"({type(e).__name__}: {e})") from None
                if verts.size == 0 or faces.size == 0:
                    raise MJCFError(f"{where(el)}: mesh file {str(path)!r} has no triangles")
            elif el.find("plugin") is not None:
                raise MJCFError(f"{where(el)}: a mesh made by a plugin is not supported")
            elif at.has("builtin"):
                raise MJCFError(f"{where(el)}: builtin meshes ({at.str('builtin')!r}) are not "
                                "supported; give the mesh as a file or vertex data")
            elif at.has("vertex"):
                verts = at.floats("vertex")
                faces = at.floats("face")
                faces = None if faces is None else faces.astype(np.int64)
                if verts.size < 12 or verts.size % 3 or (faces is not None and faces.size % 3):
                    raise MJCFError(f"{where(el)}: a mesh needs at least 4 vertices and "
                                    "faces of 3 vertices each")
                verts = verts.reshape(-1, 3)
                faces = None if faces is None else faces.reshape(-1, 3)
            else:
                raise MJCFError(f"{where(el)}: a mesh needs a file or vertex data")
            verts = verts * scale
            try:
                meshes[name] = (*mesh_unit_properties(verts, faces, mode=inertia),
                                (verts, faces, str(path) if file is not None else None))
            except ValueError as e:
                raise MJCFError(f"{where(el)}: mesh {name!r}: {e}") from None
    return meshes


# --------------------------------------------------------------------------------------
# The body tree
# --------------------------------------------------------------------------------------

def _skip(skipped: dict, what: str, el: _Element) -> None:
    skipped.setdefault(what, []).append((getattr(el, "source", ""), el.line))


def _where_lines(skipped: dict, source: str) -> dict:
    """Skipped elements' lines: a number in the main file, ``file:line`` in an included or
    attached one."""
    return {what: [n if src == source else f"{Path(src).name}:{n}" for src, n in lines]
            for what, lines in skipped.items()}


def _joint(el: _Element, at: _Attrs, body: str, index: int, opts: dict, where,
           strict: bool = False) -> MJCFJoint:
    kind = "free" if el.tag == "freejoint" else at.str("type", "hinge")
    if kind not in MJCF_JOINT_TYPES:
        raise MJCFError(f"{where(el)}: unknown joint type {kind!r} (MJCF joint types are "
                        f"{', '.join(MJCF_JOINT_TYPES)})")
    name = at.str("name") or f"{body}_joint{index}"
    axis = at.floats("axis", 3, (0.0, 0.0, 1.0))
    if kind in ("hinge", "slide"):
        n = np.linalg.norm(axis)
        if n < 1e-12:
            raise MJCFError(f"{where(el)}: axis {at.str('axis')!r} is zero")
        axis = axis / n
    # angles of hinges and balls are in the compiler's unit; lengths are lengths
    scale = opts["angle_scale"] if kind in ("hinge", "ball") else 1.0
    limited = at.bool("limited", "auto")
    rng = at.floats("range", 2)
    if limited is None:
        limited = rng is not None and opts["autolimits"]
    if limited:
        if rng is None and kind != "ball":
            raise MJCFError(f"{where(el)}: limited='true' needs a range with lower < upper")
        lo, hi = (0.0, 0.0) if rng is None else rng * scale
        if kind in ("hinge", "slide") and not lo < hi:
            raise MJCFError(f"{where(el)}: range {at.str('range')!r} must have lower < upper")
        rng = (float(lo), float(hi))
    else:
        rng = None
    if el.tag == "freejoint":
        # MuJoCo's <freejoint> takes no defaults and no dynamics attributes
        return MJCFJoint(name, kind, body, np.zeros(3), axis, None, 0.0, 0.0, 0.0, 0.0, 0.0,
                         0.0, el.line)
    armature = at.nonneg("armature")
    if kind == "free" and armature > 0.0:
        # MuJoCo adds it to M in its own speeds, whose linear part is the world-frame
        # velocity; kanedyn's (and Pinocchio's) armature acts on the body-frame speeds.
        # M agrees, the bias forces differ by armature * (ω × v): say so, never silently.
        msg = (f"{where(el)}: armature {armature:g} on free joint {name!r}: kanedyn adds it "
               "to M in the body-frame speeds (as Pinocchio), MuJoCo in its world-frame "
               "linear speeds, so the bias forces differ by armature·(ω × v)")
        if strict:
            raise MJCFError(msg)
        warnings.warn(msg, KanedynWarning, stacklevel=5)
    return MJCFJoint(name, kind, body, at.floats("pos", 3, (0.0, 0.0, 0.0)), axis, rng,
                     at.float("ref", 0.0) * scale, at.float("springref", 0.0) * scale,
                     at.nonneg("stiffness"), at.nonneg("damping"), at.nonneg("frictionloss"),
                     armature, el.line)


@dataclass
class _KBody:
    """A kanedyn body being assembled: its parent (index, -1 world), joint, placement
    (pose of its joint frame in the parent body), and the parts of its inertia."""

    name: str
    parent: int
    joint: Joint
    placement: tuple
    parts: list = field(default_factory=list)
    mj_joint: MJCFJoint | None = None
    el: _Element | None = None


def _kanedyn_joint(j: MJCFJoint) -> Joint:
    limits = JointLimits() if j.range is None or j.type == "ball" else \
        JointLimits(j.range[0], j.range[1])
    common = dict(name=j.name, damping=j.damping, friction=j.frictionloss,
                  armature=j.armature, limits=limits)
    if j.type == "hinge":
        return Revolute(axis=tuple(j.axis), continuous=j.range is None, **common)
    if j.type == "slide":
        return Prismatic(axis=tuple(j.axis), **common)
    if j.type == "ball":
        return Spherical(**common)
    return Free(**common)


class _Parser:
    def __init__(self, root: _Element, source: str, base: Path, strict: bool):
        self.where = _Where(source)
        self.source, self.base, self.strict = source, base, strict
        self.skipped: dict[str, list[int]] = {}
        self.visual_parts: list[tuple] = []  # see _geom_visual
        where = self.where
        comp = [_Attrs(c, c.attrib, where) for c in root.findall("compiler")]
        opts = {"angle_scale": np.pi / 180.0, "eulerseq": "xyz", "inertiafromgeom": "auto",
                "inertiagrouprange": (0, 5), "meshdir": "", "autolimits": True,
                "boundmass": 0.0, "boundinertia": 0.0, "settotalmass": -1.0}
        known = {"angle", "eulerseq", "inertiafromgeom", "inertiagrouprange", "meshdir",
                 "assetdir", "autolimits", "boundmass", "boundinertia", "settotalmass",
                 "texturedir", "strippath", "discardvisual", "usethread", "fitaabb",
                 "convexhull", "exactmeshinertia", "saveinertial"}
        for at in comp:
            a = at.str("angle")
            if a is not None:
                if a not in ("degree", "radian"):
                    raise MJCFError(f"{where(at.el)}: angle={a!r} must be degree or radian")
                opts["angle_scale"] = np.pi / 180.0 if a == "degree" else 1.0
            seq = at.str("eulerseq")
            if seq is not None:
                if len(seq) != 3 or any(ch not in "xyzXYZ" for ch in seq):
                    raise MJCFError(f"{where(at.el)}: eulerseq={seq!r} must be three of "
                                    "x, y, z, X, Y, Z")
                opts["eulerseq"] = seq
            ifg = at.str("inertiafromgeom")
            if ifg is not None:
                if ifg not in ("auto", "true", "false"):
                    raise MJCFError(f"{where(at.el)}: inertiafromgeom={ifg!r} must be auto, "
                                    "true or false")
                opts["inertiafromgeom"] = ifg
            if at.has("inertiagrouprange"):
                g = at.floats("inertiagrouprange", 2)
                opts["inertiagrouprange"] = (int(g[0]), int(g[1]))
            if at.has("assetdir"):
                opts["meshdir"] = at.str("assetdir")
            if at.has("meshdir"):
                opts["meshdir"] = at.str("meshdir")
            if at.has("autolimits"):
                opts["autolimits"] = bool(at.bool("autolimits"))
            for k in ("boundmass", "boundinertia", "settotalmass"):
                if at.has(k):
                    opts[k] = at.float(k)
            if at.str("coordinate", "local") != "local":
                raise MJCFError(f"{where(at.el)}: coordinate='global' was removed from MJCF "
                                "(MuJoCo 2.3.3); give local coordinates")
            if at.has("balanceinertia") and at.bool("balanceinertia"):
                raise MJCFError(f"{where(at.el)}: balanceinertia='true' is not supported "
                                "(fix the inertias in the file)")
            if at.has("alignfree") and at.bool("alignfree"):
                raise MJCFError(f"{where(at.el)}: alignfree='true' (free bodies' frames moved "
                                "to their inertial frames) is not supported")
            if at.has("fusestatic") and at.bool("fusestatic"):
                _skip(self.skipped, "<compiler> fusestatic (kanedyn always merges welded "
                      "bodies; body names stay frames)", at.el)
            for k in at.a:
                if k not in known | {"coordinate", "balanceinertia", "fusestatic", "alignfree"}:
                    _skip(self.skipped, f"<compiler> {k}", at.el)
        self.opts = opts
        self.defaults = _Defaults(root, where)
        self.gravity = np.array([0.0, 0.0, -9.81])
        self.options: dict = {}
        for o in root.findall("option"):
            at = _Attrs(o, o.attrib, where)
            if at.has("gravity"):
                self.gravity = at.floats("gravity", 3)
            for k, v in o.attrib.items():
                if k != "gravity":
                    self.options[k] = v
                    _skip(self.skipped, f"<option> {k}", o)
            for f in o.findall("flag"):
                if f.attrib.get("gravity") == "disable":
                    self.gravity = np.zeros(3)
                for k in f.attrib:
                    if k != "gravity":
                        _skip(self.skipped, f"<option><flag> {k}", f)
        self.meshes = _read_meshes(root.findall("asset"), self.defaults, base, opts, where,
                                   self.skipped)
        # <asset><model name file>: models whose subtrees <attach> copies in, each read
        # with its own compiler settings, defaults and meshes (its own context)
        self.models = [c for a in root.findall("asset") for c in a.children
                       if c.tag == "model"]
        self._contexts: dict[str, tuple[_Parser, _Element]] = {}
        self.root = root
        self.attached: list[tuple] = []  # (parser, root, rename, names) per attachment
        self.ctx = self

    # ---- bodies ----------------------------------------------------------------------
    def bodies(self, world: _Element):
        """Walk the tree: MJCF bodies, kanedyn bodies, frames and sites."""
        where = self.where
        self.mj_bodies: dict[str, MJCFBody] = {}
        self.mj_joints: dict[str, MJCFJoint] = {}
        self.kbodies: list[_KBody] = []
        # MuJoCo body -> (kanedyn body index or -1, pose of the body's frame in it)
        self.carrier: dict[str, tuple[int, tuple]] = {"world": (-1, _IDENTITY)}
        self.world_pose: dict[str, tuple] = {"world": _IDENTITY}
        self.sites: dict[str, tuple[str, tuple]] = {}
        self.qpos0: list[NDArray] = []
        self.body_el: dict[str, _Element] = {}
        self.frames: list[tuple[str, int, tuple]] = []
        self.names: set[str] = {"world"}
        for c in world.children:
            if c.tag == "joint" or c.tag == "freejoint":
                raise MJCFError(f"{where(c)}: the world body cannot have joints")
            if c.tag == "inertial":
                raise MJCFError(f"{where(c)}: the world body cannot have an <inertial>")
        self._children(world, "world", _IDENTITY, world.attrib.get("childclass"))

    def _children(self, el: _Element, body: str, prefix: tuple, childclass: str | None):
        """The sub-elements of body ``body`` (or of a <frame> in it, ``prefix`` the frame's
        pose in the body) that are not its joints, geoms or inertial."""
        where = self.where
        for c in el.children:
            if c.tag == "body":
                self._body(c, body, prefix, childclass)
            elif c.tag == "frame":
                at = _Attrs(c, c.attrib, where)
                cc = c.attrib.get("childclass", childclass)
                self._children(c, body, _compose(prefix, _pose(at, self.ctx.opts)), cc)
            elif c.tag == "site":
                at = _Attrs(c, self.ctx.defaults.attrs(c, childclass), where)
                name = at.str("name")
                if name is not None:
                    self.sites[name] = (body, _compose(prefix, _pose(at, self.ctx.opts)))
                _skip(self.skipped, "<site>", c)  # (an equality may still name it)
            elif c.tag in ("joint", "freejoint", "geom", "inertial"):
                if body == "world" and c.tag == "geom":
                    _skip(self.skipped, "<geom> collision (contacts)", c)
                if el.tag == "frame" and c.tag != "geom":
                    raise MJCFError(f"{where(c)}: <{c.tag}> inside a <frame> is not "
                                    "supported (put it in the body)")
            elif c.tag == "attach":
                self._attach(c, body, prefix)
            elif c.tag in ("camera", "light", "plugin"):
                _skip(self.skipped, f"<{c.tag}>", c)
            elif c.tag in _BODY_REFUSE:
                raise MJCFError(f"{where(c)}: <{c.tag}> (generated bodies) is not supported; "
                                "expand it first (load the file in MuJoCo and save it with "
                                "mujoco.mj_saveLastXML)")
            else:
                _skip(self.skipped, f"<{c.tag}>", c)

    def _context(self, el: _Element, name: str) -> tuple[_Parser, _Element]:
        """The parser and worldbody of the model ``name`` of ``<asset><model>`` (its
        ``name``, or else the ``model`` attribute of the file's root, as in MuJoCo)."""
        if name in self._contexts:
            return self._contexts[name]
        roots = {}
        for m in self.models:
            file = m.attrib.get("file")
            if not file:
                raise MJCFError(f"{self.where(m)}: an <asset><model> needs a 'file'")
            path = Path(file) if Path(file).is_absolute() else self.base / file
            if m.attrib.get("name", name) != name:
                roots[m.attrib["name"]] = None
                continue
            root = _load_root(path, self.where, m)
            key = m.attrib.get("name") or root.attrib.get("model", path.stem)
            roots[key] = (root, path)
            if key == name:
                break
        if roots.get(name) is None:
            raise MJCFError(f"{self.where(el)}: model {name!r} is not an <asset><model> "
                            f"(models: {', '.join(sorted(roots)) or 'none'})")
        root, path = roots[name]
        child = _Parser(root, str(path), path.resolve().parent, self.strict)
        self.skipped.update({k: self.skipped.get(k, []) + v for k, v in child.skipped.items()})
        child.skipped = self.skipped  # one list for the whole model
        world = _merged_worldbody(root, str(path))
        _expand_replicates(world, child.opts, self.where)
        self._contexts[name] = (child, world)
        return child, world

    def _attach(self, el: _Element, parent: str, prefix: tuple) -> None:
        """``<attach model body prefix>``: a copy of that model's body subtree, every name
        in it prefixed, read in the attached model's own context (as MuJoCo attaches)."""
        at = _Attrs(el, el.attrib, self.where)
        for k in ("model", "body"):
            if not at.has(k):
                raise MJCFError(f"{self.where(el)}: missing required attribute {k!r}")
        child, world = self._context(el, at.str("model"))
        found = [b for b in _walk(world) if b.tag == "body"
                 and b.attrib.get("name") == at.str("body")]
        if not found:
            raise MJCFError(f"{self.where(el)}: model {at.str('model')!r} has no body "
                            f"{at.str('body')!r}")
        pre, post = at.str("prefix", ""), el.attrib.get(_ATTACH_SUFFIX, "")

        def rename(n, pre=pre, post=post):
            return pre + n + post

        names = {e.attrib["name"] for e in _walk(found[0]) if "name" in e.attrib}
        outer, self.ctx = self.ctx, child
        try:
            self._body(_renamed(found[0], rename), parent, prefix, None)
        finally:
            self.ctx = outer
        self.attached.append((child, child.root, rename, names))

    def _geoms(self, el: _Element, prefix: tuple, childclass: str | None, out: list):
        for c in el.children:
            if c.tag == "frame":
                at = _Attrs(c, c.attrib, self.where)
                self._geoms(c, _compose(prefix, _pose(at, self.ctx.opts)),
                            c.attrib.get("childclass", childclass), out)
            elif c.tag == "geom":
                out.append((c, prefix, childclass))

    def _body(self, el: _Element, parent: str, prefix: tuple, childclass: str | None):
        where, opts = self.where, self.ctx.opts
        cc = el.attrib.get("childclass", childclass)
        if cc is not None and cc not in self.ctx.defaults.classes:
            raise MJCFError(f"{where(el)}: unknown childclass {cc!r}")
        name = el.attrib.get("name") or f"body{len(self.mj_bodies) + 1}"
        if name in self.names:
            first = self.body_el.get(name)
            raise MJCFError(f"{where(el)}: body {name!r} is defined twice"
                            + (f" (first on line {first.line})" if first is not None else ""))
        self.names.add(name)
        self.body_el[name] = el
        at = _Attrs(el, el.attrib, where)
        R, p = _compose(prefix, _pose(at, opts))
        if at.has("gravcomp") and at.float("gravcomp") != 0.0:
            _skip(self.skipped, "<body> gravcomp (gravity compensation)", el)

        # inertia: <inertial>, or the geoms (compiler inertiafromgeom)
        ie = el.findall("inertial")
        geoms: list = []
        self._geoms(el, _IDENTITY, cc, geoms)
        ifg = opts["inertiafromgeom"]
        use_geoms = ifg == "true" or (ifg == "auto" and not ie)
        parts, source = [], "none"
        if ie and not use_geoms:
            parts.append(_inertial(ie[0], _Attrs(ie[0], ie[0].attrib, where), opts,
                                   self.strict, name, where))
            source = "inertial"
        lo, hi = opts["inertiagrouprange"]
        for g, gprefix, gcc in geoms:
            gat = _Attrs(g, self.ctx.defaults.attrs(g, gcc), where)
            props = _geom_properties(g, gat, opts, self.ctx.meshes, where)
            grp = int(gat.float("group", 0.0))
            if use_geoms and props is not None and lo <= grp <= hi:
                m, c, Ic = props
                Rg, pg = gprefix
                parts.append((m, pg + Rg @ c, Rg @ Ic @ Rg.T))
                source = "geoms"
            if props is not None and 0 <= grp <= 2:  # the groups MuJoCo's viewer shows
                self.visual_parts.append(_geom_visual(g, gat, self.ctx.opts,
                                                      self.ctx.meshes, where, gprefix, name))
            _skip(self.skipped, "<geom> collision (contacts)", g)
        mass, com, Ic = _sum_inertias(parts) if parts else (0.0, np.zeros(3),
                                                            np.zeros((3, 3)))
        mass, Ic = _bounded(mass, Ic, opts)

        # joints
        jels = [c for c in el.children if c.tag in ("joint", "freejoint")]
        joints = []
        for k, je in enumerate(jels):
            # MuJoCo's <freejoint> takes no default class
            jat = _Attrs(je, dict(je.attrib) if je.tag == "freejoint"
                         else self.ctx.defaults.attrs(je, cc), where)
            j = _joint(je, jat, name, k, opts, where, self.strict)
            if j.name in self.mj_joints:
                raise MJCFError(f"{where(je)}: joint {j.name!r} is defined twice (first on "
                                f"line {self.mj_joints[j.name].line})")
            if j.type == "ball" and j.range is not None:
                _skip(self.skipped, "<joint> range of a ball joint (not modelled)", je)
            if j.type in ("ball", "free") and j.stiffness > 0:
                _skip(self.skipped, f"<joint> stiffness of a {j.type} joint (not modelled)", je)
            if j.type in ("ball", "free") and j.frictionloss > 0:
                _skip(self.skipped, f"<joint> frictionloss of a {j.type} joint (not "
                      "modelled)", je)
            if jat.has("springdamper"):
                _skip(self.skipped, "<joint> springdamper", je)
            self.mj_joints[j.name] = j
            joints.append(j)
        if any(j.type == "free" for j in joints):
            fj = next(j for j in joints if j.type == "free")
            if len(joints) > 1:
                raise MJCFError(f"{where(el)}: a free joint ({fj.name!r}, line {fj.line}) "
                                "must be the body's only joint")
            if parent != "world":
                raise MJCFError(f"{where(el)}: a free joint ({fj.name!r}, line {fj.line}) "
                                "can only be in a body directly under <worldbody> (as in "
                                "MuJoCo)")

        mb = MJCFBody(name, parent, p, R, mass, com, Ic, tuple(joints), source, el.line)
        self.mj_bodies[name] = mb
        self.world_pose[name] = _compose(self.world_pose[parent], (R, p))

        kp, T_kp_parent = self.carrier[parent]
        T = _compose(T_kp_parent, (R, p))  # this body's reference frame in body kp
        if not joints:
            self.carrier[name] = (kp, T)
            if kp < 0:
                self.frames.append((name, -1, T))
            else:
                self.kbodies[kp].parts.append(_moved((mass, com, Ic), T))
                self.frames.append((name, kp, T))
        elif joints[0].type == "free":
            j = joints[0]
            self.kbodies.append(_KBody(name, -1, _kanedyn_joint(j), _IDENTITY,
                                       [(mass, com, Ic)], j, el))
            self.carrier[name] = (len(self.kbodies) - 1, _IDENTITY)
            W = self.world_pose[name]
            self.qpos0.append(np.concatenate([W[1], matrix_to_quat(W[0])]))
        else:
            prev_anchor = None
            parent_index, placement_base = kp, T
            for k, j in enumerate(joints):
                last = k == len(joints) - 1
                anchor = j.pos
                step = anchor if prev_anchor is None else anchor - prev_anchor
                placement = _compose(placement_base, (np.eye(3), step))
                # q counts from the reference pose at q = ref: turn the joint frame back by ref
                if j.type == "hinge" and j.ref != 0.0:
                    placement = _compose(placement, (_axis_rotation(j.axis, -j.ref),
                                                     np.zeros(3)))
                elif j.type == "slide" and j.ref != 0.0:
                    placement = _compose(placement, (np.eye(3), -j.ref * j.axis))
                at_origin = last and not np.any(anchor)
                kname = name if at_origin else f"{name}/{j.name}"
                if kname in self.names and kname != name:
                    raise MJCFError(f"{where(el)}: the moving body {kname!r} made for joint "
                                    f"{j.name!r} clashes with a body of that name")
                self.kbodies.append(_KBody(kname, parent_index, _kanedyn_joint(j), placement,
                                           [], j, el))
                parent_index = len(self.kbodies) - 1
                placement_base = _IDENTITY
                prev_anchor = anchor
                if j.type in ("hinge", "slide"):
                    self.qpos0.append(np.array([j.ref]))
                else:
                    self.qpos0.append(np.array([1.0, 0.0, 0.0, 0.0]))
            T_body = (np.eye(3), -prev_anchor)  # the body's frame in the last moving body
            self.kbodies[-1].parts.append(_moved((mass, com, Ic), T_body))
            self.carrier[name] = (parent_index, T_body)
            if self.kbodies[-1].name != name:
                self.frames.append((name, parent_index, T_body))
        self._children(el, name, _IDENTITY, cc)


def _scaled(mb: MJCFBody, f: float) -> MJCFBody:
    return MJCFBody(mb.name, mb.parent, mb.pos, mb.rotation, mb.mass * f, mb.com,
                    mb.inertia * f, mb.joints, mb.inertia_from, mb.line)


def _bounded(mass: float, Ic: NDArray, opts: dict) -> tuple[float, NDArray]:
    """MuJoCo's compiler boundmass and boundinertia: lower bounds on a body's mass and
    principal moments."""
    if opts["boundmass"] > 0:
        mass = max(mass, opts["boundmass"])
    if opts["boundinertia"] > 0:
        w, V = np.linalg.eigh(0.5 * (Ic + Ic.T))
        Ic = V @ np.diag(np.maximum(w, opts["boundinertia"])) @ V.T
    return mass, Ic


def _moved(part, T):
    """A part's (m, c, I_c) given in a frame whose pose in the body is T = (R, p)."""
    m, c, Ic = part
    R, p = T
    return m, p + R @ c, R @ Ic @ R.T


# --------------------------------------------------------------------------------------
# Equalities and actuators
# --------------------------------------------------------------------------------------

def _equalities(elements, P: _Parser) -> list[MJCFEquality]:
    where, out = P.where, []
    for k, (defaults, el) in enumerate(elements):
        at = _Attrs(el, defaults.attrs(el, None), where)
        if el.tag not in ("connect", "weld"):
            _skip(P.skipped, f"<equality> <{el.tag}>", el)
            continue
        if at.has("active") and not at.bool("active"):
            _skip(P.skipped, f"<equality> <{el.tag}> active='false'", el)
            continue
        name = at.str("name") or f"equality{k}"
        if at.has("site1") or at.has("site2"):
            sides = []
            for s in ("site1", "site2"):
                sn = at.str(s)
                if sn is None or sn not in P.sites:
                    raise MJCFError(f"{where(el)}: {s} {sn!r} is not a site of the model")
                sides.append(P.sites[sn])
            (b1, T1), (b2, T2) = sides
            T_b1 = T1
            T_b2 = T2
        else:
            b1, b2 = at.str("body1"), at.str("body2", "world")
            for role, b in (("body1", b1), ("body2", b2)):
                if b is None:
                    raise MJCFError(f"{where(el)}: missing required attribute {role!r}")
                if b not in P.world_pose:
                    raise MJCFError(f"{where(el)}: {role} {b!r} is not a body of the model")
            if el.tag == "connect":
                anchor = at.floats("anchor", 3)
                if anchor is None:
                    raise MJCFError(f"{where(el)}: connect needs an 'anchor'")
                T_b1 = (np.eye(3), anchor)
                # the same point in body2, at the reference configuration
                T_b2 = _compose(_invert(P.world_pose[b2]),
                                _compose(P.world_pose[b1], T_b1))
            else:
                anchor = at.floats("anchor", 3, (0.0, 0.0, 0.0))
                T_b2 = (np.eye(3), anchor)
                rel = at.floats("relpose", 7)
                if rel is not None and np.any(rel[3:]):
                    # MuJoCo: body1's weld point is relpose's position, and body2's
                    # axes keep relpose's rotation in body1
                    T_b1 = (_quat_matrix(rel[3:]), rel[:3])
                else:  # the anchor frame's pose in body1 at the reference configuration
                    T_b1 = _compose(_compose(_invert(P.world_pose[b1]),
                                             P.world_pose[b2]), T_b2)
        if at.has("torquescale") and el.tag == "weld":
            _skip(P.skipped, "<weld> torquescale (exact constraint instead)", el)
        ends = []
        for b, Tb in ((b1, T_b1), (b2, T_b2)):
            kb, Tk = P.carrier[b]
            Tf = _compose(Tk, Tb)
            ends.append((None if kb < 0 else P.kbodies[kb].name, Tf))
        if ends[0][0] is None and ends[1][0] is None:
            raise MJCFError(f"{where(el)}: both bodies of this {el.tag} are fixed to the "
                            "world")
        kind = "point" if el.tag == "connect" else "weld"
        out.append(MJCFEquality(name, kind, ends[0][0], ends[1][0], ends[0][1], ends[1][1],
                                el.line))
    return out


def _actuators(elements, P: _Parser) -> list[MJCFActuator]:
    where, out = P.where, []
    for k, (defaults, el) in enumerate(elements):
        at = _Attrs(el, defaults.attrs(el, None), where)
        if el.tag != "motor":
            _skip(P.skipped, f"<actuator> <{el.tag}>", el)
            continue
        joint = at.str("joint")
        if joint is None:
            _skip(P.skipped, "<actuator> <motor> on a tendon, site or body", el)
            continue
        if joint not in P.mj_joints:
            raise MJCFError(f"{where(el)}: joint {joint!r} is not a joint of the model")
        if P.mj_joints[joint].type != "hinge" and P.mj_joints[joint].type != "slide":
            _skip(P.skipped, "<actuator> <motor> on a ball or free joint", el)
            continue
        gear = at.floats("gear", None, (1.0,))
        if gear.size > 1 and np.any(gear[1:]):
            raise MJCFError(f"{where(el)}: gear {at.str('gear')!r} has more than one "
                            "non-zero entry for a one-dof joint")

        def limited(kind, P=P, at=at, el=el):
            lim = at.bool(f"{kind}limited", "auto")
            rng = at.floats(f"{kind}range", 2)
            if lim is None:
                lim = rng is not None and P.opts["autolimits"]
            if not lim:
                return None
            if rng is None or not rng[0] < rng[1]:
                raise MJCFError(f"{where(el)}: {kind}limited needs {kind}range with "
                                "lower < upper")
            return float(rng[0]), float(rng[1])

        out.append(MJCFActuator(at.str("name") or f"actuator{k}", joint, float(gear[0]),
                                limited("ctrl"), limited("force"), el.line))
    return out


# --------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------

def _root(text, source: str, base: Path, stack: tuple, where: _Where) -> _Element:
    """The <mujoco> root of an MJCF text, its includes spliced in."""
    root = _parse_xml(text, source, MJCFError)
    _tag_source(root, source)
    if root.tag != "mujoco":
        hint = " (a URDF file: use kd.load_urdf)" if root.tag == "robot" else ""
        raise MJCFError(f"{where(root)}: the root element must be <mujoco>, not "
                        f"<{root.tag}>{hint}")
    _expand_includes(root, base, stack, where)
    return root


def _load_root(path: Path, where: _Where, el: _Element) -> _Element:
    return _root(_read(path, str(path), el, where), str(path), path.resolve().parent,
                 (path.resolve(),), where)


def _merged_worldbody(root: _Element, source: str) -> _Element:
    """All <worldbody> elements of a model as one."""
    worlds = root.findall("worldbody")
    merged = _Element("worldbody", {}, worlds[0].line if worlds else root.line,
                      [c for w in worlds for c in w.children])
    merged.source = getattr(worlds[0], "source", source) if worlds else source
    return merged


_REFERENCES = {"equality": ("body1", "body2", "site1", "site2"), "actuator": ("joint",)}


def _referring(root: _Element, P: _Parser, table: str) -> list[tuple[_Defaults, _Element]]:
    """The elements of the model's ``<equality>`` or ``<actuator>`` tables with the defaults
    they read, then those of each attached model that refer only to what was attached
    (renamed with the attachment's prefix, as MuJoCo copies them)."""
    out = [(P.defaults, el) for t in root.findall(table) for el in t.children]
    for child, croot, rename, names in P.attached:
        for t in croot.findall(table):
            for el in t.children:
                refs = [el.attrib[k] for k in _REFERENCES[table] if k in el.attrib]
                if not refs or not all(r in names or r == "world" for r in refs):
                    continue
                copy = _renamed(el, rename)
                for k in _REFERENCES[table]:
                    if k in copy.attrib and copy.attrib[k] != "world":
                        copy.attrib[k] = rename(copy.attrib[k])
                out.append((child.defaults, copy))
    return out


def parse_mjcf(path: str | os.PathLike | None = None, *, string: str | None = None,
               strict: bool = False, warn: bool = True) -> MJCFRobot:
    """Read an MJCF file (or ``string=`` XML) and build its Model; see the module
    docstring for the conventions.

    Raises :class:`~kanedyn.errors.MJCFError` naming the element, its file and
    line. An ``<inertial>`` whose rotational inertia is not physical is a
    :class:`~kanedyn.errors.KanedynWarning` (an error with ``strict=True``); the
    Model is still refused if a merged body's inertia is not physical. What
    kanedyn does not model is listed in ``skipped`` and, with ``warn=True``, in
    one KanedynWarning.
    """
    if (path is None) == (string is None):
        raise MJCFError("give either a path or string=<xml>, not both or neither")
    if string is None:
        source = str(path)
        file = Path(path)
        if source.lstrip().startswith("<"):
            raise MJCFError(f"cannot read MJCF file {source[:60]!r}...: that looks like XML "
                            "text; pass string=...")
        text = _read(file, source, None, _Where(source))
        base = file.resolve().parent
        stack = (file.resolve(),)
    else:
        source, text, base, stack = "<string>", string, Path.cwd(), ()
    where = _Where(source)
    root = _root(text, source, base, stack, where)
    P = _Parser(root, source, base, strict)
    for c in root.children:
        if c.tag in _TOP_SKIP:
            _skip(P.skipped, f"<{c.tag}>", c)
        elif c.tag not in ("compiler", "option", "default", "asset", "worldbody", "equality",
                           "actuator"):
            _skip(P.skipped, f"<{c.tag}>", c)
    merged = _merged_worldbody(root, source)
    _expand_replicates(merged, P.opts, where)
    P.bodies(merged)
    equalities = _equalities(_referring(root, P, "equality"), P)
    actuators = _actuators(_referring(root, P, "actuator"), P)
    model = _build(P, root.attrib.get("model", Path(source).stem or "mjcf"))
    skipped = _where_lines(P.skipped, source)
    if warn and skipped:
        warnings.warn(f"{source}: {skipped_summary(skipped)}", KanedynWarning, stacklevel=3)
    qpos0 = np.concatenate(P.qpos0) if P.qpos0 else np.zeros(0)
    if string is None:  # the file, for the 3D views (see Model.source)
        model = replace(model, source=str(Path(path).resolve()))
    return MJCFRobot(model.name, model, P.mj_bodies, P.mj_joints, tuple(equalities),
                     tuple(actuators), qpos0, skipped, source, P.options, _visuals(P, model))


def skipped_summary(skipped: dict) -> str:
    """One sentence listing what was skipped, with (up to five) line numbers each."""
    items = []
    for what, lines in skipped.items():
        shown = ", ".join(str(n) for n in lines[:5]) + (", ..." if len(lines) > 5 else "")
        items.append(f"{what} x{len(lines)} (line{'s' if len(lines) > 1 else ''} {shown})")
    return "skipped what kanedyn does not model: " + "; ".join(items)


def _build(P: _Parser, name: str) -> Model:
    opts = P.opts
    if opts["settotalmass"] > 0:  # MuJoCo scales every body's mass and inertia alike
        total = sum(mb.mass for mb in P.mj_bodies.values())
        if not total > 0:
            raise MJCFError(f"{P.source}: <compiler settotalmass> on a model without mass")
        f = opts["settotalmass"] / total
        for kb in P.kbodies:
            kb.parts = [(m * f, c, Ic * f) for m, c, Ic in kb.parts]
        P.mj_bodies = {n: _scaled(mb, f) for n, mb in P.mj_bodies.items()}
    b = ModelBuilder(name, gravity=P.gravity, root_name="world")
    for kb in P.kbodies:
        m, c, Ic = _sum_inertias(kb.parts) if kb.parts else (0.0, np.zeros(3),
                                                               np.zeros((3, 3)))
        at = P.where(kb.el)
        try:
            b.add_body(kb.name, kb.parent, kb.joint, kb.placement, m, c, Ic)
        except ModelError as e:
            raise MJCFError(f"{at}: {e}") from None
    for fname, kb, T in P.frames:
        if fname in b._frames:
            continue
        try:
            b.add_frame(fname, kb if kb >= 0 else None, T)
        except ModelError as e:
            raise MJCFError(f"{P.where(P.body_el[fname])}: {e}") from None
    try:
        return b.build()
    except ModelError as e:
        jn = getattr(e, "joint", None)
        if jn in P.mj_joints:
            el = P.body_el[P.mj_joints[jn].body]
            raise MJCFError(f"{P.where(el)}, <joint name={jn!r}> (line "
                            f"{P.mj_joints[jn].line}): {e}") from None
        raise MJCFError(f"{P.source}: {e}") from None


def load_mjcf(path: str | os.PathLike | None = None, *, string: str | None = None,
              strict: bool = False) -> Model:
    """Load an MJCF (MuJoCo XML) file, or ``string=`` XML, as a Model.

    The joints' passive forces, ``<equality>`` loop closures and ``<actuator>``
    motors are in :func:`parse_mjcf`'s :class:`MJCFRobot`, and become force elements and
    loop closures with :func:`kanedyn.forces.mjcf_forces` and
    :func:`kanedyn.constraints.mjcf_system`. See :mod:`kanedyn.model.mjcf`.
    """
    return parse_mjcf(path, string=string, strict=strict).model
