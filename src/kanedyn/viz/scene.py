"""The 3D scene of a trajectory's view: visual geometry as triangles, decimated and packed.

:func:`triangulate` turns a :class:`~kanedyn.model.visuals.VisualGeometry`
into triangles (primitives by :mod:`trimesh.creation`, meshes as they are);
:func:`decimate` simplifies the meshes to a triangle budget by quadric edge
collapse (Garland & Heckbert 1997, as ``fast-simplification`` implements it,
through trimesh's ``simplify_quadric_decimation``); :func:`scene_data` packs
the result for the page: each distinct mesh once (vertices float32, faces
uint16/uint32, base64), then one instance per visual (body, placement,
colour), and the box that holds the robot over every frame, for the camera.
"""

from __future__ import annotations

import base64
import warnings
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ..errors import KanedynError, KanedynWarning
from ..model.visuals import VisualGeometry
from ..spatial import matrix_to_quat, quat_to_matrix

#: triangles of the mesh files kept by default: a 30-body humanoid's report stays
#: well under 10 MB (see bench/report_size.py) and draws at once in software WebGL
MAX_TRIANGLES = 60_000

#: the resolution of the primitives' triangulation (segments around a circle)
SECTIONS = 24


def triangulate(v: VisualGeometry) -> tuple[NDArray, NDArray]:
    """Vertices (n, 3) and faces (m, 3) of a visual, in its geometry frame.

    Box: 12 triangles; cylinder: ``4·SECTIONS``; sphere and ellipsoid: an
    icosphere of 320 triangles (scaled by the semi-axes for an ellipsoid);
    capsule: trimesh's capsule of ``SECTIONS`` segments; mesh: its own.
    """
    if v.kind == "mesh":
        return v.vertices, v.faces
    import trimesh.creation as tc

    if v.kind == "box":
        m = tc.box(extents=v.size)
    elif v.kind == "sphere":
        m = tc.icosphere(subdivisions=2, radius=v.size[0])
    elif v.kind == "ellipsoid":
        m = tc.icosphere(subdivisions=2, radius=1.0)
        m.vertices = np.asarray(m.vertices) * np.asarray(v.size)
    elif v.kind == "cylinder":
        m = tc.cylinder(radius=v.size[0], height=v.size[1], sections=SECTIONS)
    else:  # capsule: trimesh's height is the cylindrical part's, centred on the origin
        m = tc.capsule(height=v.size[1], radius=v.size[0], count=[SECTIONS, SECTIONS])
    return np.asarray(m.vertices, float), np.asarray(m.faces, np.int64)


def _simplify(V: NDArray, F: NDArray, target: int) -> tuple[NDArray, NDArray] | None:
    """The mesh decimated to about ``target`` faces; None if fast-simplification is missing."""
    import trimesh

    # writable C-ordered copies: fast-simplification's binding refuses read-only arrays
    mesh = trimesh.Trimesh(np.array(V, float, order="C"), np.array(F, np.int64, order="C"),
                           process=False)
    # weld coincident vertices whatever their normals or texture coordinates (Collada
    # splits them along seams): edge collapse needs the surface connected, else it tears
    # holes along every seam
    mesh.merge_vertices(merge_tex=True, merge_norm=True)
    mesh.update_faces(mesh.nondegenerate_faces())
    try:
        out = mesh.simplify_quadric_decimation(face_count=int(target))
    except ImportError:  # fast-simplification is in the viz extra
        return None
    Fo = np.asarray(out.faces, np.int64)
    if Fo.size == 0:   # collapsed to nothing (a degenerate mesh): keep it as it was
        return V, F
    return np.asarray(out.vertices, float), Fo


def decimate(visuals: Sequence[VisualGeometry], max_triangles: int = MAX_TRIANGLES
             ) -> list[VisualGeometry]:
    """The visuals with their meshes simplified to about ``max_triangles`` in all.

    The budget counts each distinct mesh once — what the page holds (visuals
    sharing a mesh keep sharing it, and the page sends it once); the scene
    draws a shared mesh once per visual, so its triangle count can be higher.
    Each distinct mesh gets a share of the budget proportional to its size, at
    least ``min(its size, 64)`` triangles so small parts keep their shape;
    meshes are left alone when the budget holds them all. Primitives are not
    counted (a few hundred triangles each at most). The decimated count is
    what :func:`scene_data` reports as ``triangles``.
    """
    if int(max_triangles) < 1:
        raise KanedynError(f"decimate: max_triangles must be >= 1, got {max_triangles}")
    unique: dict[int, VisualGeometry] = {}
    for v in visuals:
        if v.kind == "mesh":
            unique.setdefault(id(v.vertices), v)
    total = sum(len(v.faces) for v in unique.values())
    if total <= max_triangles:
        return list(visuals)
    done: dict[int, tuple[NDArray, NDArray]] = {}
    for key, v in unique.items():
        n = len(v.faces)
        target = max(min(n, 64), int(n * max_triangles / total))
        got = _simplify(v.vertices, v.faces, target) if target < n else (v.vertices, v.faces)
        if got is None:
            warnings.warn(f"decimate: fast-simplification is not installed (pip install "
                          f"kanedyn[viz]); the {total} mesh triangles are kept, over the "
                          f"budget of {max_triangles}", KanedynWarning, stacklevel=2)
            return list(visuals)
        done[key] = got
    out = []
    for v in visuals:
        if v.kind != "mesh":
            out.append(v)
            continue
        V, F = done[id(v.vertices)]
        out.append(VisualGeometry(v.body, v.placement, v.kind, v.size, v.rgba, V, F, v.name,
                                  v.source))
    # visuals that shared a mesh share the decimated one too (same arrays)
    return out


def _b64(a: NDArray) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def scene_data(visuals: Sequence[VisualGeometry], frames: dict, nb: int) -> dict:
    """The page's scene: meshes, instances, triangle count and the robot's bounds.

    ``frames`` is :func:`kanedyn.viz.animation_frames`' dict (it holds each body's
    pose per frame, ``origins`` and ``quats``); ``nb`` the model's body count.

    Returns (JSON-ready) ``meshes`` — ``{"v": base64 float32 (n, 3), "f": base64
    uint16 or uint32 (m, 3), "width": 2 or 4, "nv": n, "nf": m}`` each distinct
    triangulated geometry once; ``instances`` — ``{"body", "mesh", "p", "q" (w, x,
    y, z), "rgba"}``, the geometry's pose in its body; ``triangles`` — the number of
    triangles drawn (summed over instances); ``bodies`` — the bodies that have a
    visual; ``bounds`` — the box holding every vertex over every frame.
    """
    meshes: list[dict] = []
    index: dict[int, int] = {}
    instances = []
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    O = np.asarray(frames["origins"], float)          # (F, nb, 3)
    Qb = np.asarray(frames["quats"], float)           # (F, nb, 4)
    # quat_to_matrix unpacks (w, x, y, z) along the first axis, so it takes columns
    Rb = (np.moveaxis(quat_to_matrix(Qb.reshape(-1, 4).T), -1, 0).reshape(*Qb.shape[:2], 3, 3)
          if Qb.size else None)
    triangles = 0
    for v in visuals:
        if not -1 <= v.body < nb:
            raise KanedynError(f"visual {v.name!r}: body {v.body} is not a body of the model "
                               f"(it has {nb})")
        key = id(v.vertices) if v.kind == "mesh" else None
        if key is None or key not in index:
            V, F = triangulate(v)
            width = 2 if len(V) <= 65535 else 4
            meshes.append({"v": _b64(np.asarray(V, "<f4")),
                           "f": _b64(np.asarray(F, "<u2" if width == 2 else "<u4")),
                           "width": width, "nv": int(len(V)), "nf": int(len(F)),
                           "lo": V.min(axis=0).tolist(), "hi": V.max(axis=0).tolist()})
            if key is not None:
                index[key] = len(meshes) - 1
            k = len(meshes) - 1
        else:
            k = index[key]
        triangles += meshes[k]["nf"]
        R, p = v.placement.rotation, v.placement.translation
        instances.append({"body": int(v.body), "mesh": k, "p": p.tolist(),
                          "q": matrix_to_quat(R).tolist(), "rgba": list(v.rgba)})
        # the box of the mesh's corners, carried by the body through every frame
        a, b = np.array(meshes[k]["lo"]), np.array(meshes[k]["hi"])
        corners = np.array([[x, y, z] for x in (a[0], b[0]) for y in (a[1], b[1])
                            for z in (a[2], b[2])]) @ R.T + p
        if v.body < 0 or Rb is None:
            pts = corners
        else:
            pts = np.einsum("fij,kj->fki", Rb[:, v.body], corners) + O[:, v.body, None, :]
        pts = pts.reshape(-1, 3)
        lo, hi = np.minimum(lo, pts.min(axis=0)), np.maximum(hi, pts.max(axis=0))
    out = {"meshes": meshes, "instances": instances, "triangles": int(triangles),
           "bodies": sorted({i["body"] for i in instances if i["body"] >= 0})}
    if instances:
        out["bounds"] = [lo.tolist(), hi.tolist()]
    return out
