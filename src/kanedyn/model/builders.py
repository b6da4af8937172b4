"""Builders of standard mechanisms (available as ``kanedyn.models``)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..errors import ModelError
from ..spatial import quat_to_matrix
from .joints import JOINT_TYPES, Free, Planar, Revolute, Spherical
from .model import Model, ModelBuilder


def rod_inertia(mass: float, length: float, radius: float = 0.0) -> np.ndarray:
    """Rotational inertia about the centre of a solid cylinder along z:
    ``m(3r² + l²)/12`` across, ``m r²/2`` along (a thin rod for r = 0)."""
    across = mass * (3 * radius**2 + length**2) / 12.0
    return np.diag([across, across, 0.5 * mass * radius**2])


def pendulum_chain(n: int, planar: bool = True, length: float | ArrayLike = 1.0,
                   mass: float | ArrayLike = 1.0, radius: float | None = None,
                   point_mass: bool = False, joint: str = "revolute",
                   gravity: ArrayLike = (0.0, 0.0, -9.81), name: str | None = None) -> Model:
    """An n-link pendulum hanging along -z from the world origin, uniform rods.

    ``planar=True``: revolute joints about y; the chain swings in the xz-plane.
    ``planar=False``: a 3D chain — revolute joints whose axes alternate y, x, y, ...
    (``joint="revolute"``), or ball joints (``joint="spherical"``).
    ``point_mass=True`` puts each link's mass at its tip with no rotational inertia
    (the textbook n-link point-mass pendulum). ``radius`` makes the rods solid
    cylinders (default: thin rods, or 5 % of the length for ball joints, whose
    spin about the rod axis needs inertia).
    At q = 0 every link hangs straight down.
    """
    if int(n) != n or n < 1:
        raise ModelError(f"pendulum_chain: n must be a positive integer, got {n!r}")
    if joint not in ("revolute", "spherical"):
        raise ModelError(f"pendulum_chain: joint must be 'revolute' or 'spherical', got {joint!r}")
    if planar and joint != "revolute":
        raise ModelError("pendulum_chain: a planar chain has revolute joints")
    L = np.broadcast_to(np.asarray(length, dtype=float), (n,))
    m = np.broadcast_to(np.asarray(mass, dtype=float), (n,))
    if np.any(L <= 0) or np.any(m <= 0):
        raise ModelError("pendulum_chain: lengths and masses must be positive")
    if radius is None:
        radius = 0.05 if joint == "spherical" else 0.0
    kind = "planar" if planar else "3d"
    b = ModelBuilder(name or f"pendulum_chain_{n}_{kind}{'_ball' if joint == 'spherical' else ''}",
                     gravity=gravity)
    parent = None
    for i in range(n):
        if joint == "spherical":
            jt = Spherical(f"joint{i + 1}")
        else:
            axis = (0.0, 1.0, 0.0) if planar or i % 2 == 0 else (1.0, 0.0, 0.0)
            jt = Revolute(f"joint{i + 1}", axis=axis)
        placement = (np.eye(3), (0.0, 0.0, -L[i - 1] if i > 0 else 0.0))
        if point_mass:
            com, I = (0.0, 0.0, -L[i]), np.zeros((3, 3))
        else:
            com, I = (0.0, 0.0, -L[i] / 2), rod_inertia(m[i], L[i], radius * L[i])
        parent = b.add_body(f"link{i + 1}", parent, jt, placement, m[i], com, I)
    return b.build()


def free_body(mass: float = 1.0, inertia: ArrayLike = (0.1, 0.2, 0.3),
              com: ArrayLike = (0.0, 0.0, 0.0), gravity: ArrayLike = (0.0, 0.0, -9.81),
              name: str = "free_body") -> Model:
    """One rigid body on a free joint. ``inertia``: principal moments or a 3x3 matrix
    about the centre of mass."""
    I = np.asarray(inertia, dtype=float)
    if I.shape == (3,):
        I = np.diag(I)
    b = ModelBuilder(name, gravity=gravity)
    b.add_body("body", None, Free("root"), None, mass, com, I)
    return b.build()


def ball_elbow(name: str = "ball_elbow") -> Model:
    """An upper arm on a ball joint (the shoulder, at the origin) and a forearm hinged to it
    about y (the elbow, 1 m below), both thick rods hanging along −z under gravity: the
    smallest tree with a quaternion and a hinge (the chart methods' tests and benchmarks)."""
    b = ModelBuilder(name)
    b.add_body("upper", None, Spherical("shoulder"), None, 1.0, (0, 0, -0.5),
               np.diag([0.09, 0.09, 0.02]))
    b.add_body("fore", "upper", Revolute("elbow", axis=(0, 1, 0)), (np.eye(3), (0, 0, -1.0)),
               0.8, (0, 0, -0.4), np.diag([0.05, 0.05, 0.01]))
    return b.build()


def planar_cart(name: str = "planar_cart") -> Model:
    """A cart on a planar joint in the vertical x–z plane (the joint's y axis along world z,
    so gravity acts in its plane) carrying a pole hinged about the plane's normal: q =
    (x, y, θ) of the cart, then the pole's angle (the planar joint's chart in the tests and
    benchmarks of the chart methods)."""
    Rx = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])
    b = ModelBuilder(name)
    b.add_body("cart", None, Planar("plane"), (Rx, (0, 0, 0)), 2.0, (0.1, 0.05, 0),
               np.diag([0.05, 0.06, 0.08]))
    b.add_body("pole", "cart", Revolute("hinge", axis=(0, 0, 1)), (np.eye(3), (0.2, 0, 0)),
               0.5, (0, -0.4, 0), np.diag([0.02, 0.005, 0.02]))
    return b.build()


def elbow_arm(name: str = "elbow_arm") -> Model:
    """A 3-DOF elbow manipulator, the first three joints of a PUMA-like arm: a waist about
    the vertical z axis, then a shoulder and an elbow about parallel horizontal y axes
    (links of 0.3 m and 0.4 m); centres of mass slightly off the links' axes, so that
    every kind of base parameter occurs (the identification examples and tests)."""
    b = ModelBuilder(name)
    b.add_body("link1", None, Revolute("j1", axis=(0.0, 0.0, 1.0)), None, 3.0,
               (0.01, 0.02, 0.15), np.diag([0.05, 0.05, 0.03]))
    b.add_body("link2", "link1", Revolute("j2", axis=(0.0, 1.0, 0.0)),
               (np.eye(3), (0.0, 0.0, 0.3)), 2.0, (0.2, 0.01, 0.02), np.diag([0.01, 0.04, 0.04]))
    b.add_body("link3", "link2", Revolute("j3", axis=(0.0, 1.0, 0.0)),
               (np.eye(3), (0.4, 0.0, 0.0)), 1.0, (0.15, -0.01, 0.01),
               np.diag([0.005, 0.02, 0.02]))
    return b.build()


def _random_inertia(rng: np.random.Generator) -> tuple[float, np.ndarray, np.ndarray]:
    m = rng.uniform(0.5, 3.0)
    moments = rng.uniform(0.05, 0.5, 3)
    moments.sort()
    moments[2] = min(moments[2], 0.95 * (moments[0] + moments[1]))  # triangle inequality
    qr = rng.normal(size=4)
    R = quat_to_matrix(qr / np.linalg.norm(qr))
    return m, rng.uniform(-0.3, 0.3, 3), R @ np.diag(moments) @ R.T


def _joint_of_kind(kind: str, name: str, axis: tuple, pitch: float):
    cls = JOINT_TYPES.get(kind)
    if cls is not None and kind != "fixed":
        # the parameters this type has (axis, pitch) from the draw, the rest its defaults
        given = {"axis": axis, "pitch": pitch}
        return cls(name, **{k: v for k, v in given.items() if k in cls.__dataclass_fields__})
    raise ModelError(f"random_tree: unknown joint type {kind!r}")


def random_tree(n: int, seed: int | None = 0, floating_base: bool = False,
                joint_types: tuple[str, ...] = ("revolute", "prismatic", "helical",
                                                "spherical", "planar"),
                gravity: ArrayLike = (0.0, 0.0, -9.81)) -> Model:
    """A random tree of n bodies, each joint drawn from ``joint_types``, random placements
    and physical inertias; the root on a free joint if ``floating_base``. For tests."""
    if int(n) != n or n < 1:
        raise ModelError(f"random_tree: n must be a positive integer, got {n!r}")
    rng = np.random.default_rng(seed)
    b = ModelBuilder(f"random_tree_{n}_{seed}", gravity=gravity)
    for i in range(n):
        if i == 0 and floating_base:
            jt = Free(f"joint{i}")
        else:
            kind = joint_types[rng.integers(len(joint_types))]
            axis = rng.normal(size=3)
            axis /= np.linalg.norm(axis)
            jt = _joint_of_kind(kind, f"joint{i}", tuple(axis), float(rng.uniform(-0.2, 0.2)))
        parent = None if i == 0 else int(rng.integers(0, i))
        qr = rng.normal(size=4)
        placement = (quat_to_matrix(qr / np.linalg.norm(qr)), rng.uniform(-0.5, 0.5, 3))
        m, c, I = _random_inertia(rng)
        b.add_body(f"body{i}", parent, jt, placement, m, c, I)
    return b.build()


def robot(name: str, floating_base: bool = False,
          gravity: ArrayLike = (0.0, 0.0, -9.81)) -> Model:
    """A robot description shipped with kanedyn (``panda``, ``ur5``, ``humanoid``,
    ``quadruped``, ``chain20``), loaded from its URDF; same as :func:`kanedyn.load_robot`.
    The file is at ``kanedyn.model.urdf.robot_path(name)``."""
    from .urdf import load_robot  # here, not at the top: urdf imports this package

    return load_robot(name, floating_base, gravity)
