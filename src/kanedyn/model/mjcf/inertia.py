"""Inertia of MJCF bodies: ``<inertial>``, or the geoms as uniform solids (primitives and
meshes, :mod:`kanedyn.model.geom_inertia`), and the visible geoms for the 3D views.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ...errors import KanedynWarning, MJCFError
from ...spatial import (
    Transform,
    inertia_parameters,
    rotational_inertia_is_physical,
    spatial_inertia,
)
from ..geom_inertia import PRIMITIVES, SIZE_COUNT, mesh_unit_properties, primitive_unit_properties
from ..model import Model
from ..urdf import _Element, _plane_alignment
from ..visuals import VisualGeometry
from .reading import _ORIENTATIONS, _Attrs, _Defaults, _pose, _skip

if TYPE_CHECKING:
    from .tree import _Parser


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
