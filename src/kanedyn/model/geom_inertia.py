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

A mesh's volume integrals come from the divergence theorem over its
triangles (Mirtich, "Fast and accurate computation of polyhedral mass
properties", 1996), as implemented by ``trimesh``.
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


def mesh_unit_properties(vertices: ArrayLike, faces: ArrayLike, convex_hull: bool = False
                         ) -> tuple[float, NDArray, NDArray]:
    """(V, c, J) of a closed triangle mesh: volume, centre of mass, and the rotational
    inertia per unit density about c (3x3), all in the mesh's coordinates.

    ``convex_hull=True`` takes the mesh's convex hull instead (MuJoCo's
    ``inertia="convex"``). Raises ValueError if the volume is not positive.
    """
    import trimesh

    mesh = trimesh.Trimesh(np.asarray(vertices, float), np.asarray(faces, np.int64),
                           process=False)
    if convex_hull:
        mesh = mesh.convex_hull
    props = mesh.mass_properties  # density 1
    V = float(props.volume)
    if not V > 0.0:
        raise ValueError(f"volume {V:.6g} is not positive (faces inward or not closed)")
    return V, np.asarray(props.center_mass, float), np.asarray(props.inertia, float)
