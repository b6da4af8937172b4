"""Rotation matrices and unit quaternions.

Rotation matrices here are *active*: ``R @ u`` rotates u, and the columns of
the rotation of a frame B relative to A are B's axes in A coordinates (the
convention of Pinocchio and SciPy). Featherstone's coordinate transform E of
a Plücker transform is the transpose, ``E = R.T``.

Quaternions are unit and scalar-first ``(w, x, y, z)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .algebra import skew


def rotx(theta: float) -> NDArray:
    """Active rotation by ``theta`` about x."""
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def roty(theta: float) -> NDArray:
    """Active rotation by ``theta`` about y."""
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rotz(theta: float) -> NDArray:
    """Active rotation by ``theta`` about z."""
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def axis_angle(axis: ArrayLike, theta: float) -> NDArray:
    """Rodrigues' formula, ``R = 1 + sin θ a× + (1 - cos θ) a× a×`` for unit axis a."""
    a = np.asarray(axis, dtype=float)
    n = np.linalg.norm(a)
    if n == 0.0:
        raise ValueError("axis_angle: the axis is the zero vector")
    A = skew(a / n)
    return np.eye(3) + np.sin(theta) * A + (1.0 - np.cos(theta)) * (A @ A)


def so3_exp(w: ArrayLike) -> NDArray:
    """Matrix exponential of ``w×``: the rotation by |w| about w/|w|."""
    w = np.asarray(w, dtype=float)
    th = np.linalg.norm(w)
    W = skew(w)
    if th < 1e-8:  # Taylor series; the closed form loses digits here
        return np.eye(3) + W + 0.5 * (W @ W)
    return np.eye(3) + (np.sin(th) / th) * W + ((1.0 - np.cos(th)) / th**2) * (W @ W)


def so3_log(R: ArrayLike) -> NDArray:
    """The rotation vector w with ``so3_exp(w) == R``, |w| ≤ π."""
    return quat_log(matrix_to_quat(R))


def quat_normalize(q: ArrayLike) -> NDArray:
    """``q / |q|`` along the last axis: the unit quaternion of the same rotation."""
    q = np.asarray(q, dtype=float)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def quat_multiply(p: ArrayLike, q: ArrayLike) -> NDArray:
    """Hamilton product ``p ⊗ q`` (scalar first); ``R(p ⊗ q) = R(p) R(q)``."""
    if type(p) is np.ndarray and type(q) is np.ndarray and p.shape == q.shape == (4,):
        # one pair (the integrators' case): the same products in scalars, without the
        # axis bookkeeping of the batched form below (the same bits)
        pw, px, py, pz = p.tolist()
        qw, qx, qy, qz = q.tolist()
        return np.array([pw * qw - px * qx - py * qy - pz * qz,
                         pw * qx + px * qw + py * qz - pz * qy,
                         pw * qy - px * qz + py * qw + pz * qx,
                         pw * qz + px * qy - py * qx + pz * qw])
    pw, px, py, pz = np.moveaxis(np.asarray(p, dtype=float), -1, 0)
    qw, qx, qy, qz = np.moveaxis(np.asarray(q, dtype=float), -1, 0)
    return np.stack(
        [
            pw * qw - px * qx - py * qy - pz * qz,
            pw * qx + px * qw + py * qz - pz * qy,
            pw * qy - px * qz + py * qw + pz * qx,
            pw * qz + px * qy - py * qx + pz * qw,
        ],
        axis=-1,
    )


def quat_conjugate(q: ArrayLike) -> NDArray:
    """``q* = (w, −x, −y, −z)``: for a unit quaternion the inverse rotation, ``q ⊗ q* = 1``."""
    q = np.array(q, dtype=float)
    q[..., 1:] *= -1.0
    return q


def quat_to_matrix(q: ArrayLike) -> NDArray:
    """Active rotation matrix of a unit quaternion (w, x, y, z)."""
    w, x, y, z = np.asarray(q, dtype=float)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def matrix_to_quat(R: ArrayLike) -> NDArray:
    """Unit quaternion (w ≥ 0) of a rotation matrix, by Shepperd's stable method."""
    R = np.asarray(R, dtype=float)
    tr = np.trace(R)
    d = np.array([tr, R[0, 0], R[1, 1], R[2, 2]])
    k = int(np.argmax(d))
    if k == 0:
        w = 0.5 * np.sqrt(1.0 + tr)
        q = np.array([w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w),
                      (R[1, 0] - R[0, 1]) / (4 * w)])
    elif k == 1:
        x = 0.5 * np.sqrt(1.0 + 2 * R[0, 0] - tr)
        q = np.array([(R[2, 1] - R[1, 2]) / (4 * x), x, (R[0, 1] + R[1, 0]) / (4 * x),
                      (R[0, 2] + R[2, 0]) / (4 * x)])
    elif k == 2:
        y = 0.5 * np.sqrt(1.0 + 2 * R[1, 1] - tr)
        q = np.array([(R[0, 2] - R[2, 0]) / (4 * y), (R[0, 1] + R[1, 0]) / (4 * y), y,
                      (R[1, 2] + R[2, 1]) / (4 * y)])
    else:
        z = 0.5 * np.sqrt(1.0 + 2 * R[2, 2] - tr)
        q = np.array([(R[1, 0] - R[0, 1]) / (4 * z), (R[0, 2] + R[2, 0]) / (4 * z),
                      (R[1, 2] + R[2, 1]) / (4 * z), z])
    if q[0] < 0:
        q = -q
    return q / np.linalg.norm(q)


def quat_exp(w: ArrayLike) -> NDArray:
    """Quaternion of the rotation vector w: ``(cos(|w|/2), sin(|w|/2) w/|w|)``.

    This is ``exp`` of the pure quaternion ``(0, w/2)``; it is the map the
    integrators use to update an orientation by a body angular velocity,
    ``q(t+h) = q(t) ⊗ quat_exp(h ω)``.
    """
    w = np.asarray(w, dtype=float)
    th = np.linalg.norm(w)
    half = 0.5 * th
    # sin(th/2)/th, by its series near zero
    k = 0.5 - th * th / 48.0 if th < 1e-6 else np.sin(half) / th
    return np.concatenate([[np.cos(half)], k * w])


def quat_log(q: ArrayLike) -> NDArray:
    """Rotation vector of a unit quaternion (inverse of :func:`quat_exp`), |w| ≤ π."""
    q = np.asarray(q, dtype=float)
    if q[0] < 0:  # q and -q are the same rotation; pick the short way
        q = -q
    s = np.linalg.norm(q[1:])
    th = 2.0 * np.arctan2(s, q[0])
    k = 2.0 / q[0] * (1 + s * s / (3 * q[0] ** 2)) if s < 1e-8 else th / s
    return k * q[1:]
