"""numba kernel of the joint torque regressor (:mod:`.regressor`), on the flat layout.

The readable form is :func:`.regressor.joint_torque_regressor_reference`: each body's
block A_i (6 × 10, body coordinates) carried up through its ancestors j by X_upᵀ, the
rows of joint j getting ``S_jᵀ`` of it. Carrying ten force columns through every
ancestor costs ten 6-D force transforms per (body, ancestor) pair; here the block is
carried up two levels only (body i's own joint and its parent's), then moved **once** to
world coordinates, where each joint's motion subspace has been moved once too, so that
each further (body, ancestor) pair costs ten 6-D dot products:

    Y[j, block i] = S_jᵀ (ⁱX_j)ᵀ A_i = (⁰X_j S_j)ᵀ (⁰X_i)⁻ᵀ A_i = (S⁰_j)ᵀ A⁰_i

since ``ⁱX_j = ⁱX_0 (ʲX_0)⁻¹`` and the power ``Sᵀ f`` is the same in any coordinates
(Featherstone 2008, §2.9; readable: :func:`.regressor.joint_torque_regressor_world_reference`;
Pinocchio's ``computeJointTorqueRegressor`` carries the block all the way up, as the
reference). Six of A's ten columns (those of Ī) are pure moments (f = 0), so their
transforms are rotations only.

Why two levels in body coordinates: there the structural zeros of Y come out exactly 0,
as in Pinocchio — a joint's torque does not depend on its own body's m and h_z (about
its axis), nor on a child's m where the child's origin is on the axis — while the
world-coordinate dot products leave ~1e-16 of rounding in their place. Those zeros are
what ``base_parameters`` tells unidentifiable parameters by, and the rounding changed
its pivoting (the worked example's excitation came out with condition number 966
instead of 47.6). The zeros of the farther ancestors of the shipped robots are kept by
the world formulation (checked against the body-coordinate definition in the tests).

One state (:func:`regressor_core`): the forward pass (RNEA's, Table 5.1, without forces)
gives X_up[i], v_i, a_i (body coordinates, a_0 = -a_grav so gravity is in Y), and the
world transform ``ⁱX_0`` (X0) and the world motion subspace ``S⁰_i = ⁰X_i S_i`` (S0) of
every joint; then per body its A_i in closed form (:func:`body_regressor`), the rows of
its joint (:func:`joint_rows`), carried to the parent (:func:`block_xt` with X_up[i]),
the parent's rows, moved to world coordinates (:func:`block_xt` with the parent's ⁱX_0),
and dotted with S⁰_j of every further ancestor j (:func:`project`).

The closed form of A_i (Atkeson, An & Hollerbach 1986, eq. 9, in spatial form): with
v_i = (ω, u), a_i = (α, ā) and â = ā + ω × u (the classical acceleration of the body
origin), for π = (m, h, Ī) (Ī's entries xx, xy, yy, xz, yz, zz):

    n = Ī α + ω × Ī ω + h × â,        f = m â + α × h + ω × (ω × h)

so the column of m is (0; â), that of h_k is (e_k × â; α × e_k + ω × (ω × e_k)), that
of the Ī entry with basis matrix E is (E α + ω × E ω; 0). ``B`` holds the ten columns
as ten force rows.

Entry points: ``regressor_batch`` (parallel over states), ``regressor1`` (allocates
its workspace, for compiled callers), ``regressor_f`` (one state on the packed buffer
of :mod:`kanedyn.dynamics.flat`, called bare from Python) and ``regressor_c`` (the same
on bare pointers, for the C front end ``_fastcall.c``).
"""

from __future__ import annotations

import numpy as np
from numba import carray, njit, prange

from ..dynamics import _compiled
from ..dynamics._compiled import KernelModule
from ..dynamics.centroidal_kernel import _at
from ..dynamics.kernels.constants import BAD_SHAPE, NOT_FINITE
from ..dynamics.kernels.entries import Sig, c_function
from ..dynamics.kernels.joint_rows import (
    SINCOS_BIG,
    SINCOS_MIN,
    joint_transform,
    motion_subspace_column,
    motion_subspace_times,
    motion_subspace_transpose_times,
    sincos,
    unit_axis_transform,
)
from ..dynamics.kernels.lanes import BATCH_TASK
from ..dynamics.kernels.spatial_rows import (
    cross_motion_add,
    cross_unit_add,
    state_lengths_ok,
    world_transform,
    x_inv_motion,
    x_motion,
    xt_force,
)
from ..dynamics.layout import AXIS_ID, GRAV, HDR, IQ, IV, NV, NVJ, PARENT, SIDX, WIDTH

_compiled.key_cache(__name__)  # (see dynamics/_compiled.py)


def workspace(nb: int, nv: int) -> int:
    """Floats of workspace :func:`regressor_core` needs: X, X0 (nb × 12 each), w
    ((2 nb + 2) × 6), S0 (nv × 6), B (10 × 6), T (3 nb). (Less than the packed buffer's,
    ``dynamics.kernels.constants.workspace_size``, for any model: ABA's is larger; the
    entry points check it all the same.)"""
    return 39 * nb + 6 * nv + 72


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
    motion ``v = w[iv]``, ``a = w[ia]``, in the body's coordinates."""
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


@njit(cache=True, _nrt=False, forceinline=True)
def block_xt(X0, i, B):
    """``B[k] ← X0[i]ᵀ B[k]`` for the ten force rows (``xt_force``; the six moment-only
    rows of Ī just rotate, n' = Eᵀ n, as f = 0): to the parent's coordinates with
    X_up[i], to world coordinates with ⁱX_0."""
    e0, e1, e2, e3, e4, e5, e6, e7, e8 = (X0[i, 0], X0[i, 1], X0[i, 2], X0[i, 3], X0[i, 4],
                                          X0[i, 5], X0[i, 6], X0[i, 7], X0[i, 8])
    for k in range(4):
        (B[k, 0], B[k, 1], B[k, 2], B[k, 3], B[k, 4], B[k, 5]) = xt_force(
            e0, e1, e2, e3, e4, e5, e6, e7, e8, X0[i, 9], X0[i, 10], X0[i, 11],
            B[k, 0], B[k, 1], B[k, 2], B[k, 3], B[k, 4], B[k, 5])
    for k in range(4, 10):
        n0, n1, n2 = B[k, 0], B[k, 1], B[k, 2]
        B[k, 0] = e0 * n0 + e3 * n1 + e6 * n2
        B[k, 1] = e1 * n0 + e4 * n1 + e7 * n2
        B[k, 2] = e2 * n0 + e5 * n1 + e8 * n2


@njit(cache=True, _nrt=False)
def forward_pass(data, q, v, a, X, X0, w, S0, T):
    """RNEA's forward pass (Table 5.1) without forces, and the world quantities; status
    (i + 1: the quaternion of body i is not of unit norm).

    Writes X[i] = X_up[i] and X0[i] = ⁱX_0 as (E, r); w[i] = v_i, w[nb + i] = a_i (body
    coordinates; rows 2 nb, 2 nb + 1 scratch); S0[iv_i + c] = ⁰X_i S_i[:, c]; T (3 nb)
    the joint angles, their cos and sin (as CRBA: from ``SINCOS_MIN`` bodies on, in one
    vectorised loop, ``joint_rows.sincos``, for the joints about a unit axis)."""
    nb = data.shape[0] - 1
    A = nb
    J = 2 * nb
    vec = nb >= SINCOS_MIN
    if vec:
        for i in range(nb):
            T[i] = q[int(data[i, IQ])]
        sincos(T[:nb], T[nb:2 * nb], T[2 * nb:3 * nb])
    for i in range(nb):  # parent before child
        if vec and data[i, AXIS_ID] >= 0 and abs(T[i]) <= SINCOS_BIG:
            unit_axis_transform(data, i, T[nb + i], T[2 * nb + i], X)
        elif joint_transform(data, i, q, X):
            return i + 1
        p = int(data[i, PARENT])
        motion_subspace_times(data, i, v, w, J)  # S q̇
        if p < 0:  # a_0 = -a_grav = [0; -g], seen from body i
            w[J + 1, 0], w[J + 1, 1], w[J + 1, 2] = 0.0, 0.0, 0.0
            w[J + 1, 3] = -data[nb, GRAV]
            w[J + 1, 4] = -data[nb, GRAV + 1]
            w[J + 1, 5] = -data[nb, GRAV + 2]
            x_motion(X, i, w, J + 1, w, A + i)
            for m in range(6):
                w[i, m] = w[J, m]
        else:
            x_motion(X, i, w, A + p, w, A + i)
            x_motion(X, i, w, p, w, i)
            for m in range(6):
                w[i, m] += w[J, m]
            k = int(data[i, SIDX])
            if k >= 0:  # v_i × S q̇ with S = e_k
                cross_unit_add(w, i, k, v[int(data[i, IV])], w, A + i)
            else:
                cross_motion_add(w, i, w, J, w, A + i)
        motion_subspace_times(data, i, a, w, J + 1)  # S q̈
        for m in range(6):
            w[A + i, m] += w[J + 1, m]
        world_transform(X, i, X0, p)
        o = int(data[i, IV])
        for c in range(int(data[i, NVJ])):
            motion_subspace_column(data, i, c, w, J)
            x_inv_motion(X0, i, w, J, S0, o + c)
    return 0


@njit(cache=True, _nrt=False)
def regressor_core(data, q, v, a, Y, X, X0, w, S0, B, T):
    """Y(q, v, a) (nv × 10 nb) into Y; status (0, i + 1 for a quaternion, NOT_FINITE).

    Workspace (written, never read before): X, X0 (nb, 12), w (2 nb + 2, 6), S0 (nv, 6),
    T (3 nb) (:func:`forward_pass`), B (10, 6) the block of the body at hand."""
    nb = data.shape[0] - 1
    st = forward_pass(data, q, v, a, X, X0, w, S0, T)
    if st:
        return st
    for r in range(Y.shape[0]):
        for c in range(Y.shape[1]):
            Y[r, c] = 0.0
    for i in range(nb):
        body_regressor(w, i, nb + i, B)  # f_i = A_i π_i, body i coordinates
        joint_rows(data, i, B, Y, 10 * i)  # Y[i, block i] = S_iᵀ A_i
        p = int(data[i, PARENT])
        if p < 0:
            continue
        block_xt(X, i, B)  # to the parent's coordinates: X_up[i]ᵀ A_i
        joint_rows(data, p, B, Y, 10 * i)
        j = int(data[p, PARENT])
        if j < 0:
            continue
        block_xt(X0, p, B)  # to world coordinates: (ᵖX_0)ᵀ X_up[i]ᵀ A_i = A⁰_i
        while j >= 0:  # the rest of the support of body i: Y[j, block i] = (S⁰_j)ᵀ A⁰_i
            o = int(data[j, IV])
            for c in range(int(data[j, NVJ])):
                project(S0, o + c, B, Y, 10 * i)
            j = int(data[j, PARENT])
    return 0 if all_finite_rows(Y) else NOT_FINITE


@njit(cache=True, _nrt=False, forceinline=True)
def joint_rows(data, j, B, Y, col):
    """``Y[j's rows, col + k] = S_jᵀ B[k]`` for the ten force rows of B (in j's
    coordinates): a copy of a component for a joint about a coordinate axis."""
    o = int(data[j, IV])
    for c in range(int(data[j, NVJ])):
        for k in range(10):
            Y[o + c, col + k] = motion_subspace_transpose_times(data, j, c, B, k)


@njit(cache=True, _nrt=False, forceinline=True)
def all_finite_rows(Y):
    """Whether every entry of Y is finite: ``Σ y · 0`` is 0 exactly when no y is ±inf or
    NaN (their product with 0 is NaN, which any sum keeps). Four independent sums and no
    branch per entry: the early-exit ``isfinite`` loop (``spatial_rows.all_finite``) took
    ~0.45 µs of the Panda's 810 entries, this ~0.15 µs."""
    n = Y.shape[1]
    for r in range(Y.shape[0]):
        z0 = z1 = z2 = z3 = 0.0
        k = 0
        while k + 4 <= n:
            z0 += Y[r, k] * 0.0
            z1 += Y[r, k + 1] * 0.0
            z2 += Y[r, k + 2] * 0.0
            z3 += Y[r, k + 3] * 0.0
            k += 4
        while k < n:
            z0 += Y[r, k] * 0.0
            k += 1
        if not (z0 + z1 + z2 + z3 == 0.0):
            return False
    return True


@njit(cache=True, _nrt=False, forceinline=True)
def project(S0, s, B, Y, col):
    """``Y[s, col + k] = S0[s] · B[k]`` for the ten rows of B (motion · force; the
    rows k ≥ 4 are moments only)."""
    w0, w1, w2, u0, u1, u2 = S0[s, 0], S0[s, 1], S0[s, 2], S0[s, 3], S0[s, 4], S0[s, 5]
    for k in range(4):
        Y[s, col + k] = (w0 * B[k, 0] + w1 * B[k, 1] + w2 * B[k, 2]
                         + u0 * B[k, 3] + u1 * B[k, 4] + u2 * B[k, 5])
    for k in range(4, 10):
        Y[s, col + k] = w0 * B[k, 0] + w1 * B[k, 1] + w2 * B[k, 2]


@njit(cache=True, parallel=True, nogil=True)
def regressor_batch(data, Q, V, A, out, status):
    """Y of every state (rows of Q, V, A) into ``out[k]`` (N × nv × 10 nb), in
    parallel; per-state status."""
    N = Q.shape[0]
    nb = data.shape[0] - 1
    nv = int(data[nb, NV])
    for t in prange((N + BATCH_TASK - 1) // BATCH_TASK):
        X = np.empty((nb, 12))
        X0 = np.empty((nb, 12))
        w = np.empty((2 * nb + 2, 6))
        S0 = np.empty((nv, 6))
        B = np.empty((10, 6))
        T = np.empty(3 * nb)
        for k in range(t * BATCH_TASK, min(N, (t + 1) * BATCH_TASK)):
            status[k] = regressor_core(data, Q[k], V[k], A[k], out[k], X, X0, w, S0, B, T)


@njit(cache=True, nogil=True)
def regressor1(data, q, v, a, Y):
    """Y of one state into Y (nv × 10 nb), its own workspace; status (BAD_SHAPE for a
    wrong length)."""
    nb = data.shape[0] - 1
    nv = int(data[nb, NV])
    if not (state_lengths_ok(data, q, nv, v) and a.shape[0] == nv and Y.shape[0] == nv
            and Y.shape[1] == 10 * nb):
        return BAD_SHAPE
    return regressor_core(data, q, v, a, Y, np.empty((nb, 12)), np.empty((nb, 12)),
                          np.empty((2 * nb + 2, 6)), np.empty((nv, 6)), np.empty((10, 6)),
                          np.empty(3 * nb))


@njit(cache=True, _nrt=False, nogil=True)
def regressor_f(buf, q, v, a, Y):
    """Y of one state on the packed buffer (header, flat model, workspace: ``flat.py``),
    allocating nothing; status (BAD_SHAPE for a wrong length, or a buffer too short for
    the workspace, :func:`workspace`)."""
    nb, nq, nv = int(buf[0]), int(buf[1]), int(buf[2])
    o = HDR + (nb + 1) * WIDTH
    if not (q.shape[0] == nq and v.shape[0] == nv and a.shape[0] == nv and Y.shape[0] == nv
            and Y.shape[1] == 10 * nb and buf.shape[0] >= o + 39 * nb + 6 * nv + 72):
        return BAD_SHAPE
    s = o + 36 * nb + 12
    return regressor_core(buf[HDR:o].reshape((nb + 1, WIDTH)), q, v, a, Y,
                          buf[o:o + 12 * nb].reshape((nb, 12)),
                          buf[o + 12 * nb:o + 24 * nb].reshape((nb, 12)),
                          buf[o + 24 * nb:s].reshape((2 * nb + 2, 6)),
                          buf[s:s + 6 * nv].reshape((nv, 6)),
                          buf[s + 6 * nv:s + 6 * nv + 60].reshape((10, 6)),
                          buf[s + 6 * nv + 60:s + 6 * nv + 60 + 3 * nb])


# --- the C entry point, for _fastcall.c (as dynamics.kernels.c_entry) -------------

def regressor_c(bp, qp, vp, ap, Yp):
    """:func:`regressor_f` on bare pointers (``_fastcall.c`` has checked the states'
    lengths and allocated Y, nv × 10 nb), the flat model and workspace made as arrays
    straight from their addresses in the buffer (``carray``, no reshape calls)."""
    nb, nv = int(bp[0]), int(bp[2])
    o = HDR + (nb + 1) * WIDTH
    if int(bp[3]) < o + 39 * nb + 6 * nv + 72:  # (the buffer's length)
        return BAD_SHAPE
    s = o + 36 * nb + 12
    return regressor_core(carray(_at(bp, HDR), (nb + 1, WIDTH)), carray(qp, (int(bp[1]),)),
                          carray(vp, (nv,)), carray(ap, (nv,)), carray(Yp, (nv, 10 * nb)),
                          carray(_at(bp, o), (nb, 12)), carray(_at(bp, o + 12 * nb), (nb, 12)),
                          carray(_at(bp, o + 24 * nb), (2 * nb + 2, 6)),
                          carray(_at(bp, s), (nv, 6)), carray(_at(bp, s + 6 * nv), (10, 6)),
                          carray(_at(bp, s + 6 * nv + 60), (3 * nb,)))


_C_MADE: dict = {}


def c_address() -> int:
    """The address of ``regressor_c`` (``int64 f(double *buf, double *q, double *v,
    double *a, double *Y)``), compiled or loaded from the on-disk cache on first use,
    after ``regressor_f`` is readied (:func:`kanedyn.dynamics.kernels.entries.c_function`)."""
    return c_function(_C_MADE, "regressor_c", regressor_c, ready, "regressor_f")


SIGNATURES = {
    # any strides for the caller's arrays: regressor_f is called without the
    # dispatcher's type check (see dynamics.kernels.entry); the wrapper checks ndim and
    # dtype
    "regressor_f": f"int64({Sig.V}, {Sig.A}, {Sig.A}, {Sig.A}, {Sig.A2})",
    "regressor_batch": f"void({Sig.M}, {Sig.M}, {Sig.M}, {Sig.M}, {Sig.T3}, {Sig.I})",
}

_LOADER = KernelModule(globals())
# the dispatcher of a kernel, compiled for its one signature, and its bare compiled entry
# point (KernelModule.ready, .entry)
ready, entry = _LOADER.ready, _LOADER.entry
