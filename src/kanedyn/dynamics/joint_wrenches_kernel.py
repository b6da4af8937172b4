"""numba kernels of :mod:`.joint_wrenches`: the spatial force each joint transmits.

These are the forces of RNEA's backward pass: after it, the force row of body i of
:func:`kanedyn.dynamics.kernels.rnea.rnea_core`'s workspace holds
``f_i = I_i a_i + v_i ×* I_i v_i - f_ext,i + Σ_children X_cᵀ f_c``, the force the
parent exerts on the subtree of i through joint i, in body i coordinates about its
origin. The kernel runs :func:`~kanedyn.dynamics.kernels.rnea.rnea_core` itself and copies
them out, in body coordinates or moved to the world (``i_X_0ᵀ f_i``, about the world
origin) or turned to world axes about the body origin. The readable definition is
:func:`kanedyn.dynamics.joint_wrenches.joint_wrenches_reference`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import _compiled
from ._compiled import KernelModule
from .kernels.constants import BAD_SHAPE, NOT_FINITE
from .kernels.entries import Sig
from .kernels.lanes import BATCH_TASK
from .kernels.rnea import rnea_core
from .kernels.spatial_rows import all_finite2, world_transform, xt_force
from .layout import (
    HDR,
    PARENT,
    WIDTH,
)

_compiled.key_cache(__name__)

#: the ``reference`` codes: body coordinates; world coordinates about the world
#: origin; world axes about the body origin (Pinocchio's LOCAL, WORLD, LOCAL_WORLD_ALIGNED)
LOCAL, WORLD, LOCAL_WORLD_ALIGNED = 0, 1, 2


def workspace_size(nb: int, nv: int) -> int:
    """Floats of workspace of :func:`jw_f`, carved out of the model's packed buffer after
    its flat data (the buffer's workspace, sized for ABA, is larger)."""
    return 12 * nb + 6 * (3 * nb + 2) + 12 * nb + nv


@njit(cache=True, _nrt=False, forceinline=True)
def jw_core(data, q, v, a, fext, use_fext, ref, W, X, w, X0, tau):
    """The joint wrenches (nb, 6) into W, in the coordinates ``ref`` names; status.

    Workspace (written, never read before): ``X``, ``w`` those of ``rnea_core``;
    ``X0`` (nb, 12) ``i_X_0``; ``tau`` (nv) RNEA's joint forces (unused here).
    """
    nb = data.shape[0] - 1
    s = rnea_core(data, q, v, a, fext, True, True, use_fext, tau, X, w)
    if s:
        return s
    F = 2 * nb
    if ref == LOCAL:
        for i in range(nb):
            for m in range(6):
                W[i, m] = w[F + i, m]
        return 0
    for i in range(nb):
        world_transform(X, i, X0, int(data[i, PARENT]))
        # the force transform i_X_0ᵀ (world: about the world origin), or its rotation
        # alone (world axes, about the body origin)
        r0 = X0[i, 9] if ref == WORLD else 0.0
        r1 = X0[i, 10] if ref == WORLD else 0.0
        r2 = X0[i, 11] if ref == WORLD else 0.0
        (W[i, 0], W[i, 1], W[i, 2], W[i, 3], W[i, 4], W[i, 5]) = xt_force(
            X0[i, 0], X0[i, 1], X0[i, 2], X0[i, 3], X0[i, 4], X0[i, 5], X0[i, 6], X0[i, 7],
            X0[i, 8], r0, r1, r2, w[F + i, 0], w[F + i, 1], w[F + i, 2], w[F + i, 3],
            w[F + i, 4], w[F + i, 5])
    return 0 if all_finite2(W) else NOT_FINITE


@njit(cache=True, _nrt=False)
def _jw_f(buf, q, v, a, fext, use_fext, ref, W):
    nb = int(buf[0])
    nv = int(buf[2])
    o = HDR + (nb + 1) * WIDTH
    if not (q.shape[0] == int(buf[1]) and v.shape[0] == nv and a.shape[0] == nv
            and W.shape[0] == nb and W.shape[1] == 6 and 0 <= ref <= 2
            and buf.shape[0] >= o + 42 * nb + 12 + nv):
        return BAD_SHAPE
    o1 = o + 12 * nb
    o2 = o1 + 18 * nb + 12
    o3 = o2 + 12 * nb
    data = buf[HDR:o].reshape((nb + 1, WIDTH))
    if not use_fext:
        fext = data  # unused
    return jw_core(data, q, v, a, fext, use_fext, ref, W, buf[o:o1].reshape((nb, 12)),
                   buf[o1:o2].reshape((3 * nb + 2, 6)), buf[o2:o3].reshape((nb, 12)),
                   buf[o3:o3 + nv])


@njit(cache=True, _nrt=False, nogil=True)
def jw_f(buf, q, v, a, ref, W):
    """The joint wrenches of one state, no external forces."""
    return _jw_f(buf, q, v, a, buf[:HDR].reshape((1, HDR)), False, ref, W)


@njit(cache=True, _nrt=False, nogil=True)
def jw_f_fext(buf, q, v, a, fext, ref, W):
    """The joint wrenches of one state with external forces fext (nb, 6), body coordinates."""
    if not (fext.shape[0] == int(buf[0]) and fext.shape[1] == 6):
        return BAD_SHAPE
    return _jw_f(buf, q, v, a, fext, True, ref, W)


@njit(cache=True, parallel=True, nogil=True)
def jw_batch(data, Q, V, A, Fx, use_fext, ref, out, status):
    """The joint wrenches over a batch of states, in parallel; per-state status."""
    N = Q.shape[0]
    nb = data.shape[0] - 1
    nv = V.shape[1]
    for t in prange((N + BATCH_TASK - 1) // BATCH_TASK):
        X = np.empty((nb, 12))
        w = np.empty((3 * nb + 2, 6))
        X0 = np.empty((nb, 12))
        tau = np.empty(nv)
        for k in range(t * BATCH_TASK, min(N, (t + 1) * BATCH_TASK)):
            kf = k if use_fext else 0  # without external forces Fx has one (unused) row
            status[k] = jw_core(data, Q[k], V[k], A[k], Fx[kf], use_fext, ref, out[k], X, w,
                                X0, tau)


# --- entry points: compiled for one signature each, on first use -----------------

SIGNATURES = {
    # any strides for the caller's arrays: called without the dispatcher's type check
    # (see kernels.entry); the wrappers check ndim and dtype
    "jw_f": f"int64({Sig.V}, {Sig.A}, {Sig.A}, {Sig.A}, int64, {Sig.A2})",
    "jw_f_fext": f"int64({Sig.V}, {Sig.A}, {Sig.A}, {Sig.A}, {Sig.A2}, int64, {Sig.A2})",
    "jw_batch": f"void({Sig.M}, {Sig.M}, {Sig.M}, {Sig.M}, {Sig.T3}, {Sig.B}, int64, {Sig.T3}, "
                f"{Sig.I})",
}


_LOADER = KernelModule(globals())
# the dispatcher of a kernel, compiled for its one signature, and its bare compiled entry
# point (KernelModule.ready, .entry)
ready, entry = _LOADER.ready, _LOADER.entry
