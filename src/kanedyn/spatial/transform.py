"""Plücker coordinate transforms (Featherstone 2008, sec. 2.8).

``X = B_X_A = [E 0; -E r× E]`` maps motion vectors from A to B coordinates,
``E`` the rotation from A to B coordinates, ``r`` the position of B's origin
in A coordinates. Force vectors map with ``X* = X^-T = [E -E r×; 0 E]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .algebra import skew


def rot(E: ArrayLike) -> NDArray:
    """Plücker transform of a pure change of orientation (spatial_v2 ``rot``)."""
    X = np.zeros((6, 6))
    X[:3, :3] = E
    X[3:, 3:] = E
    return X


def xlt(r: ArrayLike) -> NDArray:
    """Plücker transform of a pure shift of origin by r (spatial_v2 ``xlt``)."""
    X = np.eye(6)
    X[3:, :3] = -skew(r)
    return X


def plucker(E: ArrayLike, r: ArrayLike) -> NDArray:
    """``[E 0; -E r× E]`` = rot(E) @ xlt(r)."""
    E = np.asarray(E, dtype=float)
    X = rot(E)
    X[3:, :3] = -E @ skew(r)
    return X


def plucker_force(E: ArrayLike, r: ArrayLike) -> NDArray:
    """The force transform ``X* = [E -E r×; 0 E]`` of :func:`plucker` (E, r)."""
    E = np.asarray(E, dtype=float)
    X = rot(E)
    X[:3, 3:] = -E @ skew(r)
    return X


@dataclass(frozen=True)
class Transform:
    """A Plücker transform ``B_X_A`` held as (E, r), never as a 6x6 matrix.

    ``Transform.from_pose(R, p)`` builds it from the pose of frame B in frame
    A (B's axes ``R`` and origin ``p`` in A coordinates): ``E = R.T, r = p``.
    """

    E: NDArray
    r: NDArray

    def __post_init__(self) -> None:
        object.__setattr__(self, "E", np.asarray(self.E, dtype=float).reshape(3, 3))
        object.__setattr__(self, "r", np.asarray(self.r, dtype=float).reshape(3))

    @classmethod
    def identity(cls) -> Transform:
        return cls(np.eye(3), np.zeros(3))

    @classmethod
    def from_pose(cls, R: ArrayLike, p: ArrayLike) -> Transform:
        return cls(np.asarray(R, dtype=float).T, p)

    @property
    def rotation(self) -> NDArray:
        """Active rotation of B relative to A (``E.T``)."""
        return self.E.T

    @property
    def translation(self) -> NDArray:
        """B's origin in A coordinates (``r``)."""
        return self.r

    def __matmul__(self, other):
        """Compose ``C_X_B @ B_X_A = C_X_A``, or apply to a motion vector."""
        if isinstance(other, Transform):
            return Transform(self.E @ other.E, other.r + other.E.T @ self.r)
        return self.apply_motion(other)

    def inverse(self) -> Transform:
        """``A_X_B``."""
        return Transform(self.E.T, -self.E @ self.r)

    def apply_motion(self, m: ArrayLike) -> NDArray:
        m = np.asarray(m, dtype=float)
        w = self.E @ m[:3]
        return np.concatenate([w, self.E @ (m[3:] - np.cross(self.r, m[:3]))])

    def apply_force(self, f: ArrayLike) -> NDArray:
        f = np.asarray(f, dtype=float)
        return np.concatenate([self.E @ (f[:3] - np.cross(self.r, f[3:])), self.E @ f[3:]])

    def inverse_apply_motion(self, m: ArrayLike) -> NDArray:
        """``X^-1 m`` without forming the inverse."""
        m = np.asarray(m, dtype=float)
        w = self.E.T @ m[:3]
        return np.concatenate([w, self.E.T @ m[3:] + np.cross(self.r, w)])

    def transpose_apply_force(self, f: ArrayLike) -> NDArray:
        """``X^T f`` = ``A_X*_B f``: a force from B coordinates back to A coordinates."""
        f = np.asarray(f, dtype=float)
        fl = self.E.T @ f[3:]
        return np.concatenate([self.E.T @ f[:3] + np.cross(self.r, fl), fl])

    def matrix(self) -> NDArray:
        return plucker(self.E, self.r)

    def force_matrix(self) -> NDArray:
        return plucker_force(self.E, self.r)

    def point_to_parent(self, p: ArrayLike) -> NDArray:
        """Coordinates in A of a point given in B coordinates."""
        return self.r + self.E.T @ np.asarray(p, dtype=float)
