"""Mass properties of solid geometric primitives and closed meshes of uniform density.

What MuJoCo's compiler does for ``inertiafromgeom``: each geom is a solid of
density ρ (or of a given mass, ρ = m / V); its volume V, centre of mass c and
rotational inertia about c are known in closed form in the geom's own frame
(principal axes along the frame's axes), and a body's inertia is their sum
moved to the body frame by the parallel-axis theorem.

Closed forms (any mechanics handbook, e.g. Meriam & Kraige, *Engineering
Mechanics: Dynamics*, table D/4), m = ρ V:

- sphere, radius r: ``V = 4/3 π r³``, ``I = 2/5 m r²``;
- box, half-sides a, b, c: ``V = 8abc``, ``I_xx = m (b² + c²)/3`` (and cyclic);
- ellipsoid, semi-axes a, b, c: ``V = 4/3 π abc``, ``I_xx = m (b² + c²)/5``;
- cylinder, radius r, half-length h: ``V = 2π r² h``,
  ``I_xx = I_yy = m (3r² + 4h²)/12``, ``I_zz = m r²/2``;
- capsule, radius r, half-length h of its cylinder: the cylinder (mass m_c)
  and two hemispheres (together a sphere of mass m_s), each hemisphere's
  centre of mass at 3r/8 from its flat face, so about the centre
  ``I_xx = m_c (3r² + 4h²)/12 + m_s (2r²/5 + h² + 3hr/4)``,
  ``I_zz = m_c r²/2 + 2 m_s r²/5``.

A mesh's volume integrals are sums over tetrahedra, one per triangle (see
:func:`mesh_unit_properties`); ``trimesh`` only reads the files.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

PRIMITIVES = ("sphere", "capsule", "cylinder", "ellipsoid", "box")

#: how many size numbers each primitive reads (MuJoCo's geom ``size``)
SIZE_COUNT = {"sphere": 1, "capsule": 2, "cylinder": 2, "ellipsoid": 3, "box": 3}


def primitive_unit_properties(kind: str, size: ArrayLike) -> tuple[float, NDArray]:
    """Volume V and the principal moments of inertia *per unit density* (so I = ρ · J)
    of a primitive about its centre (its frame origin), in its frame's axes."""
    s = np.asarray(size, dtype=float)
    pi = np.pi
    if kind == "sphere":
        r = s[0]
        V = 4.0 / 3.0 * pi * r**3
        J = np.full(3, 0.4 * V * r**2)
    elif kind == "box":
        a, b, c = s[:3]
        V = 8.0 * a * b * c
        J = V / 3.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    elif kind == "ellipsoid":
        a, b, c = s[:3]
        V = 4.0 / 3.0 * pi * a * b * c
        J = V / 5.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    elif kind == "cylinder":
        r, h = s[:2]
        V = 2.0 * pi * r * r * h
        Jxx = V * (3.0 * r * r + 4.0 * h * h) / 12.0
        J = np.array([Jxx, Jxx, 0.5 * V * r * r])
    elif kind == "capsule":
        r, h = s[:2]
        Vc = 2.0 * pi * r * r * h
        Vs = 4.0 / 3.0 * pi * r**3
        V = Vc + Vs
        Jxx = Vc * (3.0 * r * r + 4.0 * h * h) / 12.0 + Vs * (0.4 * r * r + h * h + 0.75 * h * r)
        J = np.array([Jxx, Jxx, 0.5 * Vc * r * r + 0.4 * Vs * r * r])
    else:
        raise ValueError(f"not a primitive: {kind!r}")
    return float(V), J


def mesh_unit_properties(vertices: ArrayLike, faces: ArrayLike | None, mode: str = "exact"
                         ) -> tuple[float, NDArray, NDArray]:
    """(V, c, J) of a triangle mesh: volume, centre of mass, and the rotational inertia
    per unit density about c (3x3), all in the mesh's coordinates.

    The solid is cut into tetrahedra, one per triangle (D, E, F) with its apex at a
    reference point o; each has the signed volume ``v = (D − o)·((E − D) × (F − D))/6``
    and, about o, the second moments
    ``∫ x_j x_k dV = v/20 [2 Σ_P P_j P_k + Σ_{P≠Q} P_j Q_k]`` (P, Q over D, E, F
    relative to o; Tonon, "Explicit exact formulas for the 3-D tetrahedron inertia
    tensor", J. Math. Stat. 2005), and ``I = tr(S) 1 − S``. ``mode``:

    - ``"exact"``: signed volumes, exact for a closed, consistently oriented mesh;
    - ``"convex"``: the same on the mesh's convex hull (also used when there are no faces);
    - ``"legacy"``: MuJoCo's default: the volume and centre of mass from tetrahedra with
      their apex at the area-weighted centre of the faces, then the inertia from
      tetrahedra with their apex at that centre of mass, every volume taken as its
      absolute value — equal to ``"exact"`` on convex meshes, different on others.

    Raises ValueError if the volume is not positive.
    """
    P = np.asarray(vertices, dtype=float).reshape(-1, 3)
    if mode == "convex" or faces is None or len(faces) == 0:
        F = _hull_faces(P)
    else:
        F = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    if F.size == 0 or F.min() < 0 or F.max() >= len(P):
        raise ValueError("faces name vertices that do not exist")
    D, E, G = P[F[:, 0]], P[F[:, 1]], P[F[:, 2]]
    cross = np.cross(E - D, G - D)  # = 2 area n
    centre = (D + E + G) / 3.0
    legacy = mode == "legacy"
    if legacy:
        area = 0.5 * np.linalg.norm(cross, axis=1)
        if not area.sum() > 0.0:
            raise ValueError("the mesh has no surface area")
        o = (area[:, None] * centre).sum(axis=0) / area.sum()
    else:
        o = P.mean(axis=0)  # any point: signed volumes do not depend on it
    vol = np.einsum("ij,ij->i", centre - o, cross) / 6.0
    if legacy:
        vol = np.abs(vol)
    V = vol.sum()
    if not V > 0.0:
        raise ValueError(f"volume {V:.6g} is not positive (faces inward or not closed)")
    c = (vol[:, None] * (0.75 * centre + 0.25 * o)).sum(axis=0) / V
    # second moments about c, tetrahedra with their apex at c
    D, E, G = D - c, E - c, G - c
    vol = np.einsum("ij,ij->i", D, np.cross(E - D, G - D)) / 6.0
    if legacy:
        vol = np.abs(vol)
    V = vol.sum()
    # 2 Σ_P P Pᵀ + Σ_{P≠Q} P Qᵀ = Σ_P P Pᵀ + (Σ_P P)(Σ_P P)ᵀ
    S = np.zeros((3, 3))
    for A in (D, E, G, D + E + G):
        S += (vol[:, None] * A).T @ A
    S /= 20.0
    return float(V), c, np.trace(S) * np.eye(3) - S


def _hull_faces(P: NDArray) -> NDArray:
    """Outward-oriented triangles of the convex hull of points P."""
    from scipy.spatial import ConvexHull

    hull = ConvexHull(P)
    F = hull.simplices.copy()
    inside = P[hull.vertices].mean(axis=0)
    D, E, G = P[F[:, 0]], P[F[:, 1]], P[F[:, 2]]
    flip = np.einsum("ij,ij->i", np.cross(E - D, G - D), D - inside) < 0
    F[flip] = F[flip][:, [0, 2, 1]]
    return F
