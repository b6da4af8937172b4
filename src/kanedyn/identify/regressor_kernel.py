"""numba kernel of the joint torque regressor (:mod:`.regressor`), on the flat layout.

One state: RNEA's forward pass (:func:`kanedyn.dynamics.kernels.rnea.rnea_core`, whose
workspace keeps X_up[i] and, in body coordinates, v_i in row i and a_i in row nb + i of
``w``) gives each body's motion; the body regressor A_i (6 × 10) is formed in closed
form, then carried up through the ancestors j, each joint's rows of Y getting
``S_jᵀ`` of it through the joint primitives (:mod:`kanedyn.dynamics.kernels.joint_rows`).

The closed form of A_i (Atkeson, An & Hollerbach 1986, eq. 9, in spatial form): with
v_i = (ω, u), a_i = (α, ā) and â = ā + ω × u (the classical acceleration of the body
origin), for π = (m, h, Ī) (Ī's entries xx, xy, yy, xz, yz, zz):

    n = Ī α + ω × Ī ω + h × â,        f = m â + α × h + ω × (ω × h)

so the column of m is (0; â), that of h_k is (e_k × â; α × e_k + ω × (ω × e_k)), that
of the Ī entry with basis matrix E is (E α + ω × E ω; 0). ``B`` holds the ten columns
as ten force rows, so that moving them to the parent is :func:`xt_force` per row.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..dynamics import _compiled
from ..dynamics.kernels.constants import BAD_SHAPE, NOT_FINITE
from ..dynamics.kernels.joint_rows import motion_subspace_transpose_times
from ..dynamics.kernels.lanes import BATCH_TASK
from ..dynamics.kernels.rnea import rnea_core
from ..dynamics.kernels.spatial_rows import all_finite, state_lengths_ok, xt_force
from ..dynamics.layout import IV, NV, NVJ, PARENT

_compiled.key_cache(__name__)  # (see dynamics/_compiled.py)

@njit(cache=True, _nrt=False, forceinline=True)
def ibar_basis_times(k, x0, x1, x2):
    """``E_k x`` for the basis matrix E_k of the k-th rotational-inertia parameter
    (xx, xy, yy, xz, yz, zz): ``Ī = Σ_k π_{4+k} E_k``."""
    if k == 0:
        return x0, 0.0, 0.0
    if k == 1:
        return x1, x0, 0.0
    if k == 2:
        return 0.0, x1, 0.0
    if k == 3:
        return x2, 0.0, x0
    if k == 4:
        return 0.0, x2, x1
    return 0.0, 0.0, x2


@njit(cache=True, _nrt=False, forceinline=True)
def body_regressor(w, iv, ia, B):
    """The ten columns of A(v, a) (module doc) as the force rows ``B[0..9]``, for the
    motion ``v = w[iv]``, ``a = w[ia]``."""
    o0, o1, o2 = w[iv, 0], w[iv, 1], w[iv, 2]
    u0, u1, u2 = w[iv, 3], w[iv, 4], w[iv, 5]
    al0, al1, al2 = w[ia, 0], w[ia, 1], w[ia, 2]
    # â = ā + ω × u
    c0 = w[ia, 3] + o1 * u2 - o2 * u1
    c1 = w[ia, 4] + o2 * u0 - o0 * u2
    c2 = w[ia, 5] + o0 * u1 - o1 * u0
    B[0, 0], B[0, 1], B[0, 2], B[0, 3], B[0, 4], B[0, 5] = 0.0, 0.0, 0.0, c0, c1, c2
    for k in range(3):  # h_k: (e_k × â; α × e_k + ω × (ω × e_k))
        e0 = 1.0 if k == 0 else 0.0
        e1 = 1.0 if k == 1 else 0.0
        e2 = 1.0 if k == 2 else 0.0
        r = 1 + k
        B[r, 0] = e1 * c2 - e2 * c1
        B[r, 1] = e2 * c0 - e0 * c2
        B[r, 2] = e0 * c1 - e1 * c0
        x0 = o1 * e2 - o2 * e1  # ω × e_k
        x1 = o2 * e0 - o0 * e2
        x2 = o0 * e1 - o1 * e0
        B[r, 3] = al1 * e2 - al2 * e1 + o1 * x2 - o2 * x1
        B[r, 4] = al2 * e0 - al0 * e2 + o2 * x0 - o0 * x2
        B[r, 5] = al0 * e1 - al1 * e0 + o0 * x1 - o1 * x0
    for k in range(6):  # Ī entry k: (E_k α + ω × E_k ω; 0)
        r = 4 + k
        s0, s1, s2 = ibar_basis_times(k, al0, al1, al2)
        t0, t1, t2 = ibar_basis_times(k, o0, o1, o2)
        B[r, 0] = s0 + o1 * t2 - o2 * t1
        B[r, 1] = s1 + o2 * t0 - o0 * t2
        B[r, 2] = s2 + o0 * t1 - o1 * t0
        B[r, 3] = 0.0
        B[r, 4] = 0.0
        B[r, 5] = 0.0


@njit(cache=True, _nrt=False)
def regressor_core(data, q, v, a, Y, X, w, B, tau):
    """Y(q, v, a) (nv × 10 nb) into Y; status (``rnea_core``'s).

    Workspace: ``X``, ``w`` those of ``rnea_core`` (its forward pass leaves X_up, v_i,
    a_i there), ``B`` (10, 6) the block being carried up, ``tau`` (nv) RNEA's torques
    (unused)."""
    nb = data.shape[0] - 1
    st = rnea_core(data, q, v, a, data, True, True, False, tau, X, w)  # data: unused f_ext
    if st:
        return st
    for r in range(Y.shape[0]):
        for c in range(Y.shape[1]):
            Y[r, c] = 0.0
    for i in range(nb):
        body_regressor(w, i, nb + i, B)  # f_i = A_i π_i, body i coordinates
        j = i
        while True:  # up the support of body i: Y[j, block i] = S_jᵀ (ⁱX_j)ᵀ A_i
            o = int(data[j, IV])
            for c in range(int(data[j, NVJ])):
                for k in range(10):
                    Y[o + c, 10 * i + k] = motion_subspace_transpose_times(data, j, c, B, k)
            p = int(data[j, PARENT])
            if p < 0:
                break
            for k in range(10):
                (B[k, 0], B[k, 1], B[k, 2], B[k, 3], B[k, 4], B[k, 5]) = xt_force(
                    X[j, 0], X[j, 1], X[j, 2], X[j, 3], X[j, 4], X[j, 5], X[j, 6], X[j, 7],
                    X[j, 8], X[j, 9], X[j, 10], X[j, 11], B[k, 0], B[k, 1], B[k, 2],
                    B[k, 3], B[k, 4], B[k, 5])
            j = p
    for r in range(Y.shape[0]):
        if not all_finite(Y[r]):
            return NOT_FINITE
    return 0


@njit(cache=True, parallel=True, nogil=True)
def regressor_batch(data, Q, V, A, out, status):
    """Y of every state (rows of Q, V, A) into ``out[k]`` (N × nv × 10 nb), in
    parallel; per-state status."""
    N = Q.shape[0]
    nb = data.shape[0] - 1
    nv = int(data[nb, NV])
    for t in prange((N + BATCH_TASK - 1) // BATCH_TASK):
        X = np.empty((nb, 12))
        w = np.empty((3 * nb + 2, 6))
        B = np.empty((10, 6))
        tau = np.empty(nv)
        for k in range(t * BATCH_TASK, min(N, (t + 1) * BATCH_TASK)):
            status[k] = regressor_core(data, Q[k], V[k], A[k], out[k], X, w, B, tau)


@njit(cache=True, nogil=True)
def regressor1(data, q, v, a, Y):
    """Y of one state into Y (nv × 10 nb); status (BAD_SHAPE for a wrong length)."""
    nb = data.shape[0] - 1
    nv = int(data[nb, NV])
    if not (state_lengths_ok(data, q, nv, v) and a.shape[0] == nv and Y.shape[0] == nv
            and Y.shape[1] == 10 * nb):
        return BAD_SHAPE
    return regressor_core(data, q, v, a, Y, np.empty((nb, 12)), np.empty((3 * nb + 2, 6)),
                          np.empty((10, 6)), np.empty(nv))
