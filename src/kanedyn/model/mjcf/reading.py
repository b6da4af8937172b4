"""Reading MJCF: files, ``<include>``, ``<replicate>`` and ``<attach>``, ``<default>``
classes, attributes, and every orientation MJCF allows (quat, axisangle, euler, xyaxes,
zaxis) as a rotation matrix.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ...errors import MJCFError
from ...spatial import matrix_to_quat
from ..urdf import _Element, _parse_xml, _plane_alignment, _Where
from .elements import _ACTUATOR_TAGS

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
# The body tree
# --------------------------------------------------------------------------------------

def _skip(skipped: dict, what: str, el: _Element) -> None:
    skipped.setdefault(what, []).append((getattr(el, "source", ""), el.line))


def _where_lines(skipped: dict, source: str) -> dict:
    """Skipped elements' lines: a number in the main file, ``file:line`` in an included or
    attached one."""
    return {what: [n if src == source else f"{Path(src).name}:{n}" for src, n in lines]
            for what, lines in skipped.items()}


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
