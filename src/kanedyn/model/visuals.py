"""Visual geometry: what a body looks like, for drawing only (no physics reads it).

One record, :class:`VisualGeometry`, holds one piece of a body's appearance —
a primitive (box, sphere, cylinder, capsule, ellipsoid) or a triangle mesh —
with its placement in the body and its colour. :func:`load_urdf_visuals` fills
it from the ``<visual>`` elements of a URDF; a loader of another format (MJCF
geoms) fills the same record. The record lives here, in the model layer, so
that loaders can make it without importing :mod:`kanedyn.viz`.

Conventions (the same for every format, so a loader converts to them):

* ``placement`` is ``geometry_X_body`` as for :class:`~kanedyn.model.Frame`:
  the geometry frame's pose in the body is ``(placement.rotation,
  placement.translation)``; ``body = -1`` means fixed in the world (then
  ``placement`` is ``geometry_X_world``).
* ``size``, in metres, in the geometry frame: ``box`` (x, y, z) full side
  lengths (URDF's ``size``; MJCF's ``size`` is half of it); ``sphere`` (r,);
  ``cylinder`` (r, length) along z, centred; ``capsule`` (r, length of the
  cylindrical part) along z, centred (MJCF's ``size`` has the half length);
  ``ellipsoid`` (a, b, c) semi-axes; ``mesh`` the scale that was applied.
* ``vertices`` (n, 3) and ``faces`` (m, 3) are given for ``mesh`` only, in the
  geometry frame with the scale applied.

Mesh files (STL, OBJ, Collada, whatever :mod:`trimesh` reads) are found as
ROS tools find them (``package://pkg/path``, ``file://``, paths relative to
the URDF); a mesh that cannot be found or read is left out with one
:class:`~kanedyn.errors.KanedynWarning` naming the file, so its body falls
back to the skeleton drawing.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..errors import KanedynError, KanedynWarning, URDFError
from ..spatial import Transform
from .model import Frame, Model
from .urdf import _Element, _floats, _origin, _parse_xml, _Where

#: the kinds of visual geometry a :class:`VisualGeometry` can be
VISUAL_KINDS = ("box", "sphere", "cylinder", "capsule", "ellipsoid", "mesh")

#: colour of a visual that says none (light steel grey)
DEFAULT_RGBA = (0.72, 0.74, 0.78, 1.0)

_SIZES = {"box": 3, "sphere": 1, "cylinder": 2, "capsule": 2, "ellipsoid": 3, "mesh": 3}


@dataclass(frozen=True, eq=False)
class VisualGeometry:
    """One piece of a body's appearance (see the module docstring for the conventions).

    ``name`` says where it came from (file, line, link), ``source`` is the mesh
    file it was read from (None for a primitive).
    """

    body: int
    placement: Transform
    kind: str
    size: tuple[float, ...]
    rgba: tuple[float, float, float, float] = DEFAULT_RGBA
    vertices: NDArray | None = None
    faces: NDArray | None = None
    name: str = ""
    source: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in VISUAL_KINDS:
            raise KanedynError(f"visual {self.name!r}: kind {self.kind!r} is not one of "
                               f"{', '.join(VISUAL_KINDS)}")
        size = tuple(float(s) for s in self.size)
        # a mesh's scale may be negative (a mirrored part); a primitive's size may not
        ok = (lambda s: s != 0) if self.kind == "mesh" else (lambda s: s > 0)
        if len(size) != _SIZES[self.kind] or not all(np.isfinite(s) and ok(s) for s in size):
            raise KanedynError(f"visual {self.name!r}: a {self.kind} needs {_SIZES[self.kind]} "
                               f"{'non-zero' if self.kind == 'mesh' else 'positive'} finite "
                               f"size values, got {self.size!r}")
        object.__setattr__(self, "size", size)
        rgba = tuple(float(c) for c in self.rgba)
        if len(rgba) != 4 or not all(0.0 <= c <= 1.0 for c in rgba):
            raise KanedynError(f"visual {self.name!r}: rgba must be 4 numbers in [0, 1], "
                               f"got {self.rgba!r}")
        object.__setattr__(self, "rgba", rgba)
        if self.kind == "mesh":
            V = np.asarray(self.vertices, dtype=float)
            F = np.asarray(self.faces)
            if V.ndim != 2 or V.shape[1] != 3 or not np.all(np.isfinite(V)):
                raise KanedynError(f"visual {self.name!r}: vertices must be a finite (n, 3) "
                                   "array")
            if F.ndim != 2 or F.shape[1] != 3 or F.size == 0 or not np.issubdtype(
                    F.dtype, np.integer) or F.min() < 0 or F.max() >= len(V):
                raise KanedynError(f"visual {self.name!r}: faces must be a non-empty (m, 3) "
                                   f"integer array indexing the {len(V)} vertices")
            V.setflags(write=False)
            F = F.astype(np.int64, copy=False)
            F.setflags(write=False)
            object.__setattr__(self, "vertices", V)
            object.__setattr__(self, "faces", F)
        elif self.vertices is not None or self.faces is not None:
            raise KanedynError(f"visual {self.name!r}: a {self.kind} takes no vertices/faces")


# --------------------------------------------------------------------------------------
# Finding mesh files
# --------------------------------------------------------------------------------------

def _split_paths(paths: str | os.PathLike | Iterable[str | os.PathLike] | None) -> list[Path]:
    if paths is None:
        return []
    if isinstance(paths, str | os.PathLike):
        return [Path(p) for p in str(paths).split(os.pathsep) if p]
    return [Path(p) for p in paths]


def _package_name(folder: Path) -> str | None:
    """The ``<name>`` of ``folder/package.xml`` (ROS's package manifest), if any."""
    try:
        text = (folder / "package.xml").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    m = re.search(r"<name>\s*([^<\s]+)\s*</name>", text)
    return m.group(1) if m else None


def _package_roots(pkg: str, start: Path | None, search: list[Path]) -> list[Path]:
    """Folders that may be package ``pkg``, in the order they are tried.

    First the search paths (each either the package itself, or a folder holding
    it, one or two levels down, as ``ROS_PACKAGE_PATH`` entries do), then the
    folders above ``start`` (the URDF's folder): one named ``pkg`` or whose
    ``package.xml`` names it, or one holding a sibling folder ``pkg``.
    """
    out: list[Path] = []
    for d in search:
        if d.name == pkg or _package_name(d) == pkg:
            out.append(d)
        out.append(d / pkg)
        if d.is_dir():
            try:
                out += [c for c in d.iterdir() if c.is_dir() and _package_name(c) == pkg]
            except OSError:
                pass
    if start is not None:
        for a in [start, *start.parents]:
            if a.name == pkg or _package_name(a) == pkg:
                out.append(a)
            out.append(a / pkg)
    return out


def resolve_mesh_path(uri: str, base: str | os.PathLike | None = None,
                      package_paths: str | os.PathLike | Iterable | None = None) -> Path | None:
    """The file a URDF mesh ``filename`` names, or None if it is nowhere to be found.

    ``package://pkg/rel`` is looked for in ``package_paths`` (a list of folders,
    or one string of folders separated by ``os.pathsep`` like ``ROS_PACKAGE_PATH``;
    the environment's ``ROS_PACKAGE_PATH`` is searched after them) and above
    ``base``, the URDF's folder (see :func:`_package_roots`); ``file://`` and
    plain paths are taken relative to ``base``, then to each search path.
    """
    base_dir = None if base is None else Path(base)
    search = _split_paths(package_paths) + _split_paths(os.environ.get("ROS_PACKAGE_PATH"))
    if uri.startswith("package://"):
        pkg, _, rel = uri[len("package://"):].partition("/")
        candidates = [root / rel for root in _package_roots(pkg, base_dir, search)]
    else:
        rel = uri[len("file://"):] if uri.startswith("file://") else uri
        p = Path(rel)
        if p.is_absolute():
            candidates = [p]
        else:
            candidates = ([base_dir / p] if base_dir is not None else [p]) + [d / p
                                                                             for d in search]
    for c in candidates:
        if c.is_file():
            return c
    return None


# --------------------------------------------------------------------------------------
# Reading mesh files
# --------------------------------------------------------------------------------------

def _unit_scale(obj) -> float:
    """Metres per unit of a loaded mesh: Collada's ``<unit meter=...>`` (and any unit a
    format declares), which trimesh records as ``units`` but does not apply."""
    units = getattr(obj, "units", None)
    if not units:
        return 1.0
    try:
        from trimesh.units import unit_conversion

        return float(unit_conversion(str(units), "meters"))
    except (ValueError, KeyError, ImportError):
        m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*\*\s*meters?\s*", str(units))
        return float(m.group(1)) if m else 1.0


#: Collada's up axes turned into kanedyn's (and ROS's) z up, by the axes the COLLADA 1.4
#: specification gives each (<up_axis>: X_UP right -y, up +x; Y_UP right +x, up +y, in +z)
_UP_AXIS = {"X_UP": np.array([[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]]),
            "Y_UP": np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])}


def _collada_up(path: Path) -> NDArray | None:
    """The rotation that makes a Collada file's up axis z (None if it is z already or the
    file is not Collada). trimesh ignores ``<up_axis>``; RViz (Assimp) applies it."""
    if path.suffix.lower() != ".dae":
        return None
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16).decode("utf-8", errors="replace")
    except OSError:
        return None
    m = re.search(r"<up_axis>\s*([XYZ]_UP)\s*</up_axis>", head)
    return _UP_AXIS.get(m.group(1)) if m else None


def _main_colour(geom) -> tuple[float, float, float, float] | None:
    vis = getattr(geom, "visual", None)
    mat = getattr(vis, "material", None)
    c = None
    if mat is not None:
        c = getattr(mat, "main_color", None)
    elif getattr(vis, "kind", None) in ("face", "vertex"):
        c = getattr(vis, "main_color", None)
    if c is None:
        return None
    c = np.asarray(c, dtype=float).reshape(-1)
    if c.size < 3:
        return None
    c = c / 255.0 if c.max() > 1.0 else c
    return (float(c[0]), float(c[1]), float(c[2]), float(c[3]) if c.size > 3 else 1.0)


def read_mesh(path: str | os.PathLike) -> list[tuple[NDArray, NDArray, tuple | None]]:
    """The triangles of a mesh file, one ``(vertices, faces, rgba or None)`` per part.

    A file of several parts (a Collada scene with a material each) keeps them
    apart, each with its material's main colour and its node transform applied;
    Collada's ``<unit>`` and ``<up_axis>`` are applied (vertices in metres, z up:
    a ``Y_UP`` file is turned by +90° about x, as RViz shows it; iCub's meshes in
    example-robot-data are such files). Textures are not read.
    Raises :class:`KanedynError` if the file cannot be read as a mesh.
    """
    try:
        import trimesh
    except ImportError as exc:  # pragma: no cover - trimesh is in the viz extra
        raise KanedynError("reading mesh files needs trimesh (pip install trimesh)") from exc
    p = Path(path)
    try:
        # process=True merges the duplicate vertices of STL triangle soups, which quadric
        # decimation needs (it collapses shared edges)
        loaded = trimesh.load(str(p), process=True)
    except Exception as exc:  # trimesh raises many kinds; all mean "not a readable mesh"
        raise KanedynError(f"cannot read mesh {str(p)!r}: {type(exc).__name__}: {exc}"
                           ) from None
    scale = _unit_scale(loaded)
    parts = []
    if isinstance(loaded, trimesh.Scene):
        for node in loaded.graph.nodes_geometry:
            T, gname = loaded.graph[node]
            geom = loaded.geometry.get(gname)
            if not isinstance(geom, trimesh.Trimesh) or len(geom.faces) == 0:
                continue
            V = np.asarray(geom.vertices, float) @ T[:3, :3].T + T[:3, 3]
            parts.append((V * scale, np.asarray(geom.faces), _main_colour(geom)))
    elif isinstance(loaded, trimesh.Trimesh) and len(loaded.faces):
        parts.append((np.asarray(loaded.vertices, float) * scale, np.asarray(loaded.faces),
                      _main_colour(loaded)))
    if not parts:
        raise KanedynError(f"cannot read mesh {str(p)!r}: it holds no triangles")
    up = _collada_up(p)
    if up is not None:
        parts = [(V @ up.T, F, c) for V, F, c in parts]
    return parts


# --------------------------------------------------------------------------------------
# URDF <visual>
# --------------------------------------------------------------------------------------

def _rgba(el: _Element | None, where: _Where, context: _Element) -> tuple | None:
    if el is None:
        return None
    c = el.find("color")
    if c is None:
        return None
    vals = _floats(c, "rgba", 4, where, context=context)
    if np.any(vals < 0) or np.any(vals > 1):
        raise URDFError(f"{where(context)}: <color rgba={c.attrib['rgba']!r}> (line {c.line}) "
                        "is not four numbers in [0, 1]")
    return tuple(float(x) for x in vals)


def _positive(el: _Element, attr: str, n: int, where: _Where, context: _Element,
              default=None, nonzero: bool = False) -> tuple[float, ...]:
    vals = _floats(el, attr, n, where, default, context=context)
    if np.any(vals == 0) if nonzero else np.any(vals <= 0):
        raise URDFError(f"{where(context)}: <{el.tag} {attr}={el.attrib.get(attr)!r}> "
                        f"(line {el.line}) must be {'non-zero' if nonzero else 'positive'}")
    return tuple(float(x) for x in vals)


def _scaled(V: NDArray, F: NDArray, c, scale: tuple) -> tuple:
    """A mesh part scaled; a mirroring scale (odd number of negative factors) also turns
    the faces' winding over, so that their normals still point out."""
    if np.prod(np.sign(scale)) < 0:
        F = F[:, ::-1]
    return V * np.asarray(scale), np.ascontiguousarray(F), c


def load_urdf_visuals(path: str | os.PathLike, model: Model,
                      package_paths: str | os.PathLike | Iterable | None = None, *,
                      string: str | None = None) -> list[VisualGeometry]:
    """The ``<visual>`` elements of a URDF as :class:`VisualGeometry` records of ``model``.

    ``model`` is the Model loaded from the same file (``kd.load_urdf(path)``):
    each link's visuals go to the body that carries the link, placed by
    ``model.frames[link]`` (a link merged into its parent by a fixed joint,
    or welded to the world, is found there too). ``package_paths`` are
    folders to find ``package://`` meshes in (see :func:`resolve_mesh_path`).
    With ``string=`` the XML is read from it and ``path`` is only the folder
    mesh paths are relative to.

    Mesh files that are missing are left out with one
    :class:`~kanedyn.errors.KanedynWarning` naming them all, an unreadable one with a
    warning naming it (each body left without visuals is drawn as a skeleton); malformed visual
    elements raise :class:`~kanedyn.errors.URDFError` naming the line.
    """
    if string is None:
        src = Path(path)
        try:
            text = src.read_bytes()
        except OSError as e:
            raise URDFError(f"cannot read URDF file {str(src)!r}: {e.strerror}") from None
        base, source = src.resolve().parent, str(src)
    else:
        text, source = string, "<string>"
        base = Path(path) if path is not None else None
    where = _Where(source)
    root = _parse_xml(text, source)
    materials = {m.attrib["name"]: _rgba(m, where, m) for m in root.findall("material")
                 if m.attrib.get("name")}
    meshes: dict[tuple, list | KanedynError] = {}
    missing: dict[str, None] = {}
    unreadable: set[Path] = set()
    out: list[VisualGeometry] = []
    for link in root.findall("link"):
        name = link.attrib.get("name", "")
        visuals = link.findall("visual")
        if not visuals:
            continue
        frame = model.frames.get(name)
        if frame is None and name == model.root_name:   # the fixed base link is the world
            frame = Frame(name, -1, Transform.identity())
        if frame is None:
            raise KanedynError(f"{where(link)}: link {name!r} is not a frame of model "
                               f"{model.name!r}; load the visuals with the Model of the same "
                               "URDF")
        for vis in visuals:
            geo = vis.find("geometry")
            shapes = [] if geo is None else [c for c in geo.children
                                             if c.tag in ("box", "sphere", "cylinder", "mesh")]
            if len(shapes) != 1:
                raise URDFError(f"{where(link)}: <visual> (line {vis.line}) needs a <geometry> "
                                "with one of <box>, <cylinder>, <sphere>, <mesh>")
            shape = shapes[0]
            R, p = _origin(vis, where)
            X = Transform.from_pose(R, p) @ frame.placement   # geometry_X_link @ link_X_body
            mat = vis.find("material")
            rgba = _rgba(mat, where, link)
            if rgba is None and mat is not None:
                rgba = materials.get(mat.attrib.get("name", ""))
            label = f"{source}, line {vis.line}, <link name={name!r}> <visual>"
            common = dict(body=frame.body, placement=X, name=label)
            if shape.tag == "box":
                size = _positive(shape, "size", 3, where, link)
            elif shape.tag == "sphere":
                size = _positive(shape, "radius", 1, where, link)
            elif shape.tag == "cylinder":
                size = (_positive(shape, "radius", 1, where, link)[0],
                        _positive(shape, "length", 1, where, link)[0])
            if shape.tag != "mesh":
                out.append(VisualGeometry(kind=shape.tag, size=size,
                                          rgba=rgba or DEFAULT_RGBA, **common))
                continue
            uri = shape.attrib.get("filename")
            if not uri:
                raise URDFError(f"{where(link)}: <mesh> (line {shape.line}) has no filename")
            scale = _positive(shape, "scale", 3, where, link, (1.0, 1.0, 1.0), nonzero=True)
            file = resolve_mesh_path(uri, base, package_paths)
            if file is None:
                missing[uri] = None
                continue
            key = (file, scale)
            if key not in meshes:
                # one array per (file, scale): visuals sharing a mesh share its triangles
                try:
                    meshes[key] = [_scaled(V, F, c, scale) for V, F, c in read_mesh(file)]
                except KanedynError as exc:
                    meshes[key] = exc
            parts = meshes[key]
            if isinstance(parts, KanedynError):
                if file not in unreadable:   # one warning per file
                    warnings.warn(f"{label}: {parts}; the body is drawn as its skeleton",
                                  KanedynWarning, stacklevel=2)
                unreadable.add(file)
                continue
            own = {c for _, _, c in parts if c is not None}
            for V, F, c in parts:
                # a multi-material mesh keeps its colours; otherwise the URDF's colour wins
                colour = c if len(own) > 1 else (rgba or c or DEFAULT_RGBA)
                out.append(VisualGeometry(kind="mesh", size=scale, rgba=colour,
                                          vertices=V, faces=F,
                                          source=str(file), **common))
    if missing:   # one warning for the file, naming every mesh it could not find
        names = ", ".join(repr(u) for u in missing)
        warnings.warn(f"{source}: mesh file{'s' if len(missing) > 1 else ''} not found: {names} "
                      "(searched next to the URDF, in the package folders above it, "
                      "package_paths and ROS_PACKAGE_PATH); "
                      f"{'their bodies are' if len(missing) > 1 else 'its body is'} drawn as "
                      "a skeleton", KanedynWarning, stacklevel=2)
    return out
