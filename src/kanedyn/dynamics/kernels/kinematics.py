"""Forward kinematics, energies and momentum, body Jacobians on the flat model.

From ``X_up[i] = (E, r)`` (Featherstone 2008, Chapter 4): the pose of body i in the
world is ``R_i = R_p Eᵀ``, ``p_i = p_p + R_p r``, and its spatial velocity
``v_i = X_up[i] v_p + S_i q̇_i`` (body coordinates). From these: the kinetic energy
``T = ½ Σ v_iᵀ I_i v_i`` (+ ½ Σ armature v²), the potential ``V = -Σ m_i gᵀ c_i``, the
spatial momentum in world coordinates, the centre of mass; and the body Jacobian,
each ancestor's column of S taken to the world (the readable forms:
``reference.body_placements``, ``body_velocities``, ``kinetic_energy``,
``jacobian_local``).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .. import _compiled
from ..layout import ARMATURE, GRAV, IV, MASS, NQ, NV, NVJ, PARENT, H
from .constants import BAD_SHAPE, NOT_FINITE
from .joint_rows import joint_transform, motion_subspace_column, motion_subspace_times
from .spatial_rows import all_finite, all_finite2, inertia_times, x_motion

_compiled.key_cache(__name__)  # (see dynamics/_compiled.py)


@njit(cache=True)
def kinematics_into(data, q, v, use_v, R, p, vel):
    """Body poses in the world (``R[i]`` axes, ``p[i]`` origin) and, if ``use_v``, the
    spatial velocities ``vel[i]`` in body coordinates (rows of a (nb, 6) array).

    From ``X_up[i] = (E, r)``: the pose of body i in its parent is ``(Eᵀ, r)``, so
    ``R_i = R_p Eᵀ``, ``p_i = p_p + R_p r``; ``v_i = X_up[i] v_p + S_i v_i``.
    """
    nb = data.shape[0] - 1
    X = np.empty((nb, 12))
    for i in range(nb):
        if joint_transform(data, i, q, X):
            return i + 1
        par = int(data[i, PARENT])
        for a in range(3):
            for b in range(3):
                if par < 0:
                    R[i, a, b] = X[i, 3 * b + a]
                else:
                    R[i, a, b] = (R[par, a, 0] * X[i, 3 * b] + R[par, a, 1] * X[i, 3 * b + 1]
                                  + R[par, a, 2] * X[i, 3 * b + 2])
            if par < 0:
                p[i, a] = X[i, 9 + a]
            else:
                p[i, a] = (p[par, a] + R[par, a, 0] * X[i, 9] + R[par, a, 1] * X[i, 10]
                           + R[par, a, 2] * X[i, 11])
        if use_v:
            motion_subspace_times(data, i, v, vel, i)
            if par >= 0:
                o0, o1, o2, o3, o4, o5 = (vel[i, 0], vel[i, 1], vel[i, 2], vel[i, 3],
                                          vel[i, 4], vel[i, 5])
                x_motion(X, i, vel, par, vel, i)
                vel[i, 0] += o0
                vel[i, 1] += o1
                vel[i, 2] += o2
                vel[i, 3] += o3
                vel[i, 4] += o4
                vel[i, 5] += o5
    return 0


@njit(cache=True)
def summary_into(data, q, v, use_v, out):
    """``out = [T, V, L (3), P (3), c (3)]``: kinetic energy ``½ Σ v_iᵀ I_i v_i``, potential
    energy ``-Σ m_i gᵀ c_i``, spatial momentum in world coordinates about the world origin,
    and the centre of mass of the whole model (world)."""
    nb = data.shape[0] - 1
    R = np.empty((nb, 3, 3))
    p = np.empty((nb, 3))
    vel = np.empty((nb + 1, 6))  # last row: I_i v_i
    st = kinematics_into(data, q, v, use_v, R, p, vel)
    if st:
        return st
    for k in range(11):
        out[k] = 0.0
    mass = 0.0
    for i in range(nb):
        m = data[i, MASS]
        mass += m
        for a in range(3):
            # m c_world = m p + R h
            mc = m * p[i, a] + (R[i, a, 0] * data[i, H] + R[i, a, 1] * data[i, H + 1]
                                + R[i, a, 2] * data[i, H + 2])
            out[1] -= data[nb, GRAV + a] * mc
            out[8 + a] += mc
        if use_v:
            inertia_times(data, i, MASS, vel, i, vel, nb)
            for k in range(6):
                out[0] += 0.5 * vel[i, k] * vel[nb, k]
            # body momentum [n; f] (body axes, about its origin) to world axes about the
            # world origin: P = R f, L = R n + p × P
            n0, n1, n2 = vel[nb, 0], vel[nb, 1], vel[nb, 2]
            f0, f1, f2 = vel[nb, 3], vel[nb, 4], vel[nb, 5]
            P0 = R[i, 0, 0] * f0 + R[i, 0, 1] * f1 + R[i, 0, 2] * f2
            P1 = R[i, 1, 0] * f0 + R[i, 1, 1] * f1 + R[i, 1, 2] * f2
            P2 = R[i, 2, 0] * f0 + R[i, 2, 1] * f1 + R[i, 2, 2] * f2
            out[2] += R[i, 0, 0] * n0 + R[i, 0, 1] * n1 + R[i, 0, 2] * n2
            out[3] += R[i, 1, 0] * n0 + R[i, 1, 1] * n1 + R[i, 1, 2] * n2
            out[4] += R[i, 2, 0] * n0 + R[i, 2, 1] * n1 + R[i, 2, 2] * n2
            out[2] += p[i, 1] * P2 - p[i, 2] * P1
            out[3] += p[i, 2] * P0 - p[i, 0] * P2
            out[4] += p[i, 0] * P1 - p[i, 1] * P0
            out[5] += P0
            out[6] += P1
            out[7] += P2
            arm = data[i, ARMATURE]
            if arm != 0.0:  # the rotor's kinetic energy, ½ armature v² (no momentum)
                o = int(data[i, IV])
                for c in range(int(data[i, NVJ])):
                    out[0] += 0.5 * arm * v[o + c] * v[o + c]
    for a in range(3):
        out[8 + a] /= mass
    return 0 if all_finite(out) else NOT_FINITE


@njit(cache=True, nogil=True)
def world_poses(data, q):
    """(status, R, p, col): every body's pose in the world (:func:`kinematics_into`) in new
    arrays, and a (2, 6) scratch row pair for :func:`world_column`."""
    nb = data.shape[0] - 1
    R = np.empty((nb, 3, 3))
    p = np.empty((nb, 3))
    col = np.empty((2, 6))
    return kinematics_into(data, q, q, False, R, p, col), R, p, col


@njit(cache=True, nogil=True)
def world_column(data, R, p, j, c, col):
    """Column c of body j's motion subspace in world axes about the world origin,
    ``(ω, v_O) = (R_j ω_j, R_j v_j + p_j × R_j ω_j)`` (R, p the poses of
    :func:`kinematics_into`; ``col`` (2, 6) scratch), as six scalars."""
    motion_subspace_column(data, j, c, col, 0)
    for a in range(3):
        col[1, a] = R[j, a, 0] * col[0, 0] + R[j, a, 1] * col[0, 1] + R[j, a, 2] * col[0, 2]
        col[1, 3 + a] = (R[j, a, 0] * col[0, 3] + R[j, a, 1] * col[0, 4]
                         + R[j, a, 2] * col[0, 5])
    w0, w1, w2 = col[1, 0], col[1, 1], col[1, 2]
    u0 = col[1, 3] + p[j, 1] * w2 - p[j, 2] * w1
    u1 = col[1, 4] + p[j, 2] * w0 - p[j, 0] * w2
    u2 = col[1, 5] + p[j, 0] * w1 - p[j, 1] * w0
    return w0, w1, w2, u0, u1, u2


@njit(cache=True)
def jacobian_into(data, q, body, frame, J):
    """The 6 x nv Jacobian of ``body``: frame 0 local, 1 local_world_aligned, 2 world.

    Each column S_j[:, c] of an ancestor j is taken to world coordinates about the
    world origin, ``(ω, v_O) = (R_j ω_j, R_j v_j + p_j × R_j ω_j)``; then
    local_world_aligned moves the point to the body origin, ``v = v_O + ω × p_b``,
    and local rotates that into body axes, ``(R_bᵀ ω, R_bᵀ v)``.
    """
    st, R, p, col = world_poses(data, q)
    if st:
        return st
    for a in range(J.shape[0]):
        for b in range(J.shape[1]):
            J[a, b] = 0.0
    j = body
    while j >= 0:
        o = int(data[j, IV])
        for c in range(int(data[j, NVJ])):
            w0, w1, w2, u0, u1, u2 = world_column(data, R, p, j, c, col)
            if frame != 2:  # the velocity of the point at the body origin: v_O + ω × p_b
                u0 += w1 * p[body, 2] - w2 * p[body, 1]
                u1 += w2 * p[body, 0] - w0 * p[body, 2]
                u2 += w0 * p[body, 1] - w1 * p[body, 0]
            if frame == 0:
                for a in range(3):
                    J[a, o + c] = R[body, 0, a] * w0 + R[body, 1, a] * w1 + R[body, 2, a] * w2
                    J[3 + a, o + c] = R[body, 0, a] * u0 + R[body, 1, a] * u1 + R[body, 2, a] * u2
            else:
                J[0, o + c], J[1, o + c], J[2, o + c] = w0, w1, w2
                J[3, o + c], J[4, o + c], J[5, o + c] = u0, u1, u2
        j = int(data[j, PARENT])
    return 0 if all_finite2(J) else NOT_FINITE


@njit(cache=True, nogil=True)
def kinematics1(data, q, v, use_v, R, p, vel):
    nb = data.shape[0] - 1
    if q.shape[0] != int(data[nb, NQ]) or (use_v and v.shape[0] != int(data[nb, NV])):
        return BAD_SHAPE
    return kinematics_into(data, q, v, use_v, R, p, vel)


@njit(cache=True, nogil=True)
def summary1(data, q, v, use_v, out):
    nb = data.shape[0] - 1
    if q.shape[0] != int(data[nb, NQ]) or (use_v and v.shape[0] != int(data[nb, NV])):
        return BAD_SHAPE
    return summary_into(data, q, v, use_v, out)


@njit(cache=True, nogil=True)
def jacobian1(data, q, body, frame, J):
    if q.shape[0] != int(data[data.shape[0] - 1, NQ]):
        return BAD_SHAPE
    return jacobian_into(data, q, body, frame, J)


@njit(cache=True, parallel=True, nogil=True)
def kinematics_batch(data, Q, V, use_v, R, p, vel, status):
    for k in prange(Q.shape[0]):
        status[k] = kinematics_into(data, Q[k], V[k], use_v, R[k], p[k], vel[k])


@njit(cache=True, parallel=True, nogil=True)
def summary_batch(data, Q, V, use_v, out, status):
    for k in prange(Q.shape[0]):
        status[k] = summary_into(data, Q[k], V[k], use_v, out[k])


@njit(cache=True, parallel=True, nogil=True)
def jacobian_batch(data, Q, body, frame, out, status):
    for k in prange(Q.shape[0]):
        status[k] = jacobian_into(data, Q[k], body, frame, out[k])
