"""Forward dynamics by the articulated-body algorithm (Featherstone 2008, Table 7.1), in
world coordinates.

Pass 1, parent before child: velocities, the bias accelerations ``c_i = v_i × S_i q̇_i``
and bias forces ``p_i = v_i ×* I_i v_i - f_ext,i``; pass 2, child before parent:

    U_i = I^A_i S_i,   D_i = S_iᵀ U_i (+ armature),   u_i = τ_i - S_iᵀ p^A_i
    I^A_λ(i) += I^A_i - U_i D_i⁻¹ U_iᵀ,   p^A_λ(i) += p^A_i + I^a_i c_i + U_i D_i⁻¹ u_i

pass 3, parent before child: ``q̈_i = D_i⁻¹ (u_i - U_iᵀ a'_i)``, ``a_i = a'_i + S_i q̈_i``.
Written in world coordinates (the articulated inertia passes to the parent by a plain
sum), the velocity-product terms taken in pass 1 (see :func:`aba_core`), a free root
solved directly. :func:`aba_core` (one state), :func:`aba_lanes` (several at once, the
same bits), :func:`aba_batch`, ``aba_f``/``aba_f_fext`` (the packed buffer). The
readable, body-coordinate form: :func:`kanedyn.dynamics.reference.aba`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .. import _compiled
from ..layout import (
    ARMATURE,
    AXIS_ID,
    GRAV,
    HDR,
    IQ,
    IV,
    NV,
    NVJ,
    PARENT,
    SIDX,
    SINGTOL,
    SUNIT,
    WIDTH,
)
from .constants import BAD_SHAPE, NOT_FINITE, SINGULAR
from .joint_rows import (
    joint_transform,
    lane_cos_sin,
    lane_joint_transform,
    lane_unit_axis_transform,
    motion_subspace_column,
)
from .lanes import BATCH_TASK, LANES, stack_array
from .spatial_rows import (
    all_finite,
    cholesky_entry,
    compose,
    cross_force_add,
    cross_force_s,
    cross_motion_add,
    cross_motion_s,
    inertia_to_world,
    inertia_world_s,
    rigid_times,
    state_lengths_ok,
    sym_rank1_to_parent,
    sym_times,
    sym_times_s,
    x_inv_motion,
    x_inv_motion_s,
    x_motion,
    x_motion_s,
    xt_force,
    xt_force_add,
)

_compiled.key_cache(__name__)  # (see dynamics/_compiled.py)


@njit(cache=True, _nrt=False, forceinline=True)
def aba_core(data, q, v, tau, fext, use_fext, qdd, X, X0, S0, w, IA, LW, y):
    """Forward dynamics by the articulated-body algorithm (Table 7.1), O(n), in world
    coordinates.

    Every spatial quantity of body i — motion subspace S⁰_i, velocity, inertia,
    articulated inertia I^A_i and bias force p^A_i — is expressed in world
    coordinates, so the articulated inertia passes to the parent by a plain sum,
    ``I^A_p += I^a_i``, with no 6x6 congruence per body (the book's body-coordinate
    version is :func:`kanedyn.dynamics.reference.aba`).

    The velocity-product and gravity terms are taken in pass 1, as in RNEA: ``a⁰_i =
    a⁰_p + c_i`` (``a⁰ = -a_grav`` at a root, ``c_i = v_i × S_i q̇_i``, the same vector
    in any coordinates since a body-fixed S has ``Ṡ⁰ = v_i × S⁰``) is the acceleration
    body i would have with q̈ = 0, and ``p_i = I_i a⁰_i + v_i ×* I_i v_i - f_ext,i``.
    Passes 2 and 3 then work on ``δ_i = a_i - a⁰_i = δ_p + S_i q̈_i``: the book's
    recursion with c = 0 and ``a'_i = δ_p`` (0 at a root), which spares pass 2 the
    product ``I^a c`` of every body.

    One speed (most joints): ``U = I^A S``, ``D = Sᵀ U`` a scalar, ``u = τ - Sᵀ p^A``;
    the parent receives ``I^a = I^A - U Uᵀ/D`` and ``p^a = p^A + U u/D``, and
    ``q̈ = (u - Uᵀ δ_p)/D``. Several speeds: ``D_i = S_iᵀ U_i`` is factored
    ``D_i = L_i L_iᵀ``; with ``W_i = L_i⁻¹ U_iᵀ`` and ``y_i = L_i⁻¹ u_i`` the book's
    ``U D⁻¹ Uᵀ = Wᵀ W``, ``U D⁻¹ u = Wᵀ y`` and ``q̈_i = L_i⁻ᵀ (y_i - W_i δ_p)``.

    A free joint at the root (a floating base) is solved directly: its S⁰ = X0⁻¹ is
    invertible, so ``S⁰ᵀ (I^A δ + p^A) = τ`` gives ``I^A δ = X0ᵀ τ - p^A`` (τ a force
    in body coordinates, X0ᵀ takes it to the world), one 6x6 Cholesky solve, and
    ``q̈ = X0 δ`` — instead of forming U, D and W for six columns.
    """
    nb = data.shape[0] - 1
    # workspace: X (nb, 12) X_up[i]; X0 (nb, 12) i_X_0, world to body i coordinates;
    # S0 (nv, 6) motion subspace columns, world coordinates; y (nv);
    # w (3 nb + 8, 6) spatial vectors, rows: v_i at i, a⁰_i (pass 1) then δ_i (pass 3)
    # at AC + i, p^A_i at PA + i; scratch at TM (0, 1: vectors, 2..7: U_i columns);
    # IA (nb, 21) I^A_i packed (see spatial_rows); LW (12 nb, 6): L_i (Cholesky factor of
    # D_i) at rows 6i.., W_i = L⁻¹ Uᵀ (rows 0..nv_i-1) at WO + 6i..
    AC = nb
    PA = 2 * nb
    TM = 3 * nb
    WO = 6 * nb
    tol = data[nb, SINGTOL]
    g0 = data[nb, GRAV]
    g1 = data[nb, GRAV + 1]
    g2 = data[nb, GRAV + 2]
    for i in range(nb):  # pass 1: velocities, a⁰ and bias forces, parent before child
        if joint_transform(data, i, q, X):
            return i + 1
        par = int(data[i, PARENT])
        if par < 0:
            for m in range(12):
                X0[i, m] = X[i, m]
        else:
            compose(X, i, X0, par)
        n = int(data[i, NVJ])
        o = int(data[i, IV])
        k = int(data[i, SIDX])
        if k >= 0:
            # S = e_k: S⁰ = X0⁻¹ e_k; for k < 3 ω = E0ᵀ e_k (row k of E0), v = r0 × ω;
            # for k = 3 + l, ω = 0 and v = row l of E0
            l = k if k < 3 else k - 3
            e0, e1, e2 = X0[i, 3 * l], X0[i, 3 * l + 1], X0[i, 3 * l + 2]
            if k < 3:
                r0, r1, r2 = X0[i, 9], X0[i, 10], X0[i, 11]
                S0[o, 0], S0[o, 1], S0[o, 2] = e0, e1, e2
                S0[o, 3] = r1 * e2 - r2 * e1
                S0[o, 4] = r2 * e0 - r0 * e2
                S0[o, 5] = r0 * e1 - r1 * e0
            else:
                S0[o, 0], S0[o, 1], S0[o, 2] = 0.0, 0.0, 0.0
                S0[o, 3], S0[o, 4], S0[o, 5] = e0, e1, e2
            for m in range(6):
                w[TM, m] = S0[o, m] * v[o]  # v_J = S⁰ q̇
        elif par < 0 and data[i, SUNIT] == 6:
            # floating base: v_J = X0⁻¹ v (S⁰ itself is not formed, see above)
            for m in range(6):
                w[TM + 1, m] = v[o + m]
            x_inv_motion(X0, i, w, TM + 1, w, TM)
        else:
            for m in range(6):
                w[TM, m] = 0.0
            for c in range(n):
                motion_subspace_column(data, i, c, w, TM + 1)
                x_inv_motion(X0, i, w, TM + 1, S0, o + c)
                for m in range(6):
                    w[TM, m] += S0[o + c, m] * v[o + c]  # v_J = S⁰ q̇
        if par < 0:  # v = v_J, a⁰ = -a_grav + c = [0; -g] + c
            for m in range(6):
                w[i, m] = w[TM, m]
            w[AC + i, 0], w[AC + i, 1], w[AC + i, 2] = 0.0, 0.0, 0.0
            w[AC + i, 3], w[AC + i, 4], w[AC + i, 5] = -g0, -g1, -g2
        else:
            for m in range(6):
                w[i, m] = w[par, m] + w[TM, m]
                w[AC + i, m] = w[AC + par, m]
        cross_motion_add(w, i, w, TM, w, AC + i)  # c = v × v_J
        # p_i = I_i a⁰_i + v_i ×* I_i v_i - f_ext,i (f_ext given in body coordinates)
        M, h0, h1, h2, j00, j01, j02, j11, j12, j22 = inertia_to_world(data, i, X0, IA)
        w[TM, 0], w[TM, 1], w[TM, 2], w[TM, 3], w[TM, 4], w[TM, 5] = rigid_times(
            M, h0, h1, h2, j00, j01, j02, j11, j12, j22,
            w[i, 0], w[i, 1], w[i, 2], w[i, 3], w[i, 4], w[i, 5])
        (w[PA + i, 0], w[PA + i, 1], w[PA + i, 2], w[PA + i, 3], w[PA + i, 4],
         w[PA + i, 5]) = rigid_times(M, h0, h1, h2, j00, j01, j02, j11, j12, j22,
                                     w[AC + i, 0], w[AC + i, 1], w[AC + i, 2],
                                     w[AC + i, 3], w[AC + i, 4], w[AC + i, 5])
        cross_force_add(w, i, w, TM, w, PA + i)
        if use_fext:
            for m in range(6):
                w[TM, m] = 0.0
            xt_force_add(X0, i, fext, i, w, TM)
            for m in range(6):
                w[PA + i, m] -= w[TM, m]
    for i in range(nb - 1, -1, -1):  # pass 2: articulated inertias, child before parent
        n = int(data[i, NVJ])
        o = int(data[i, IV])
        b = 6 * i
        par = int(data[i, PARENT])
        if n == 1:
            # one speed (most joints): D = Sᵀ U is a scalar, no factorization; the W
            # row holds U itself and the L entry 1/D (pass 3 reads them so)
            s0, s1, s2, s3, s4, s5 = S0[o, 0], S0[o, 1], S0[o, 2], S0[o, 3], S0[o, 4], S0[o, 5]
            u0, u1, u2, u3, u4, u5 = sym_times(IA, i, s0, s1, s2, s3, s4, s5)
            p0, p1, p2 = w[PA + i, 0], w[PA + i, 1], w[PA + i, 2]
            p3, p4, p5 = w[PA + i, 3], w[PA + i, 4], w[PA + i, 5]
            d = s0 * u0 + s1 * u1 + s2 * u2 + s3 * u3 + s4 * u4 + s5 * u5 + data[i, ARMATURE]
            if d <= tol:
                return SINGULAR - i
            u = tau[o] - (s0 * p0 + s1 * p1 + s2 * p2 + s3 * p3 + s4 * p4 + s5 * p5)
            dinv = 1.0 / d
            LW[b, 0] = dinv
            y[o] = u
            LW[WO + b, 0], LW[WO + b, 1], LW[WO + b, 2] = u0, u1, u2
            LW[WO + b, 3], LW[WO + b, 4], LW[WO + b, 5] = u3, u4, u5
            if par >= 0:  # p^a = p^A + U u/D and I^a = I^A - U Uᵀ/D, to the parent
                e = u * dinv
                w[PA + par, 0] += p0 + u0 * e
                w[PA + par, 1] += p1 + u1 * e
                w[PA + par, 2] += p2 + u2 * e
                w[PA + par, 3] += p3 + u3 * e
                w[PA + par, 4] += p4 + u4 * e
                w[PA + par, 5] += p5 + u5 * e
                sym_rank1_to_parent(IA, i, par, u0 * dinv, u1 * dinv, u2 * dinv, u3 * dinv,
                                    u4 * dinv, u5 * dinv, u0, u1, u2, u3, u4, u5)
            continue
        if par < 0 and data[i, SUNIT] == 6:
            # floating base: I^A δ = X0ᵀ τ - p^A by the Cholesky factor L of I^A (SPD),
            # δ kept in y[o:o+6] for pass 3
            w[TM + 1, 0], w[TM + 1, 1], w[TM + 1, 2] = tau[o], tau[o + 1], tau[o + 2]
            w[TM + 1, 3], w[TM + 1, 4], w[TM + 1, 5] = tau[o + 3], tau[o + 4], tau[o + 5]
            for m in range(6):
                w[TM, m] = -w[PA + i, m]
            xt_force_add(X0, i, w, TM + 1, w, TM)
            if data[i, ARMATURE] != 0.0:
                free_root_armature(IA, i, X0, data[i, ARMATURE])
            for c in range(6):
                for r in range(c, 6):
                    if not cholesky_entry(LW, b, r, c, IA[i, r * (r + 1) // 2 + c], tol):
                        return SINGULAR - i
            for r in range(6):  # L z = rhs
                s = w[TM, r]
                for l in range(r):
                    s -= LW[b + r, l] * w[TM + 1, l]
                w[TM + 1, r] = s / LW[b + r, r]
            for r in range(5, -1, -1):  # Lᵀ δ = z
                s = w[TM + 1, r]
                for l in range(r + 1, 6):
                    s -= LW[b + l, r] * y[o + l]
                y[o + r] = s / LW[b + r, r]
            continue
        # several speeds: U = I^A S, D = Sᵀ U, then its Cholesky factor L (D is SPD for
        # a model that moves inertia)
        for c in range(n):  # scratch row 2 + c: U_i[:, c]
            (w[TM + 2 + c, 0], w[TM + 2 + c, 1], w[TM + 2 + c, 2], w[TM + 2 + c, 3],
             w[TM + 2 + c, 4], w[TM + 2 + c, 5]) = sym_times(
                IA, i, S0[o + c, 0], S0[o + c, 1], S0[o + c, 2], S0[o + c, 3], S0[o + c, 4],
                S0[o + c, 5])
        for c in range(n):
            for r in range(c, n):
                d = data[i, ARMATURE] if r == c else 0.0
                for m in range(6):
                    d += S0[o + r, m] * w[TM + 2 + c, m]
                if not cholesky_entry(LW, b, r, c, d, tol):
                    return SINGULAR - i
        # u = τ_i - Sᵀ p^A; y = L⁻¹ u; W = L⁻¹ Uᵀ (forward substitution)
        for r in range(n):
            u = tau[o + r]
            for m in range(6):
                u -= S0[o + r, m] * w[PA + i, m]
            for l in range(r):
                u -= LW[b + r, l] * y[o + l]
            y[o + r] = u / LW[b + r, r]
            for m in range(6):
                x = w[TM + 2 + r, m]
                for l in range(r):
                    x -= LW[b + r, l] * LW[WO + b + l, m]
                LW[WO + b + r, m] = x / LW[b + r, r]
        if par >= 0:  # p^a = p^A + Wᵀ y and I^a = I^A - Wᵀ W, to the parent
            for a in range(6):
                s = w[PA + i, a]
                for l in range(n):
                    s += LW[WO + b + l, a] * y[o + l]
                w[PA + par, a] += s
            for a in range(6):
                for c in range(a + 1):
                    x = IA[i, a * (a + 1) // 2 + c]
                    for l in range(n):
                        x -= LW[WO + b + l, a] * LW[WO + b + l, c]
                    IA[par, a * (a + 1) // 2 + c] += x
    for i in range(nb):  # pass 3: q̈ and δ, parent before child (δ_p = 0 at a root)
        n = int(data[i, NVJ])
        o = int(data[i, IV])
        par = int(data[i, PARENT])
        b = 6 * i
        if par < 0:
            if n == 6 and data[i, SUNIT] == 6:  # floating base: q̈ = X0 δ
                for m in range(6):
                    w[AC + i, m] = y[o + m]
                x_motion(X0, i, w, AC + i, w, TM)
                for m in range(6):
                    qdd[o + m] = w[TM, m]
                continue
            for m in range(6):
                w[AC + i, m] = 0.0
        else:
            for m in range(6):
                w[AC + i, m] = w[AC + par, m]
        if n == 1:  # q̈ = (u - Uᵀ δ_p) / D
            s = y[o]
            for m in range(6):
                s -= LW[WO + b, m] * w[AC + i, m]
            qdd[o] = s * LW[b, 0]
        else:  # q̈ = L⁻ᵀ (y - W δ_p)  (back substitution)
            for r in range(n - 1, -1, -1):
                s = y[o + r]
                for m in range(6):
                    s -= LW[WO + b + r, m] * w[AC + i, m]
                for l in range(r + 1, n):
                    s -= LW[b + l, r] * qdd[o + l]
                qdd[o + r] = s / LW[b + r, r]
        for c in range(n):
            for m in range(6):
                w[AC + i, m] += S0[o + c, m] * qdd[o + c]
    return 0 if all_finite(qdd) else NOT_FINITE


@njit(cache=True, _nrt=False, forceinline=True)
def free_root_armature(IA, i, X0, arm):
    """``I^A_i += arm X0ᵀ X0`` (packed) for a free root, whose v̇ = X0 δ: the rotor term
    ``arm v̇`` of τ, taken to the world by X0ᵀ as aba_core's direct solve needs it. With
    ``X0 = [E 0; -E r× E]``, ``X0ᵀ X0 = [1 - r×r×, r×; -r×, 1]``."""
    r0, r1, r2 = X0[i, 9], X0[i, 10], X0[i, 11]
    rr = r0 * r0 + r1 * r1 + r2 * r2
    IA[i, 0] += arm * (1.0 + rr - r0 * r0)
    IA[i, 1] -= arm * r1 * r0
    IA[i, 2] += arm * (1.0 + rr - r1 * r1)
    IA[i, 3] -= arm * r2 * r0
    IA[i, 4] -= arm * r2 * r1
    IA[i, 5] += arm * (1.0 + rr - r2 * r2)
    # rows 3..5, columns 0..2: -r×, entries (a, c) = -(r×)[a - 3, c]
    IA[i, 7] += arm * r2   # (3, 1): -(-r2)
    IA[i, 8] -= arm * r1   # (3, 2): -(r1)
    IA[i, 10] -= arm * r2  # (4, 0): -(r2)
    IA[i, 12] += arm * r0  # (4, 2): -(-r0)
    IA[i, 15] += arm * r1  # (5, 0): -(-r1)
    IA[i, 16] -= arm * r0  # (5, 1): -(r0)
    IA[i, 9] += arm
    IA[i, 14] += arm
    IA[i, 20] += arm


@njit(cache=True, nogil=True)
def aba_workspace(nb, nv):
    """The scratch arrays (X, X0, S0, w, IA, LW, y) of :func:`aba_core` for nb bodies and
    nv speeds: a loop calling ABA many times allocates them once
    (``aba_core(..., qdd, *ws)``)."""
    return (np.empty((nb, 12)), np.empty((nb, 12)), np.empty((nv, 6)),
            np.empty((3 * nb + 8, 6)), np.empty((nb, 21)), np.empty((12 * nb, 6)),
            np.empty(nv))


@njit(cache=True)
def aba_into(data, q, v, tau, fext, use_fext, qdd):
    """:func:`aba_core` with a workspace of its own."""
    X, X0, S0, w, IA, LW, y = aba_workspace(data.shape[0] - 1, qdd.shape[0])
    return aba_core(data, q, v, tau, fext, use_fext, qdd, X, X0, S0, w, IA, LW, y)


@njit(cache=True, nogil=True)
def aba1(data, q, v, tau, qdd):
    nv = int(data[data.shape[0] - 1, NV])
    if not (state_lengths_ok(data, q, nv, v) and tau.shape[0] == nv and qdd.shape[0] == nv):
        return BAD_SHAPE
    return aba_into(data, q, v, tau, data, False, qdd)


# --- several states at once (see lanes.py) ------------------------------------------

# ABA on several states at once, for trees whose joints all have one speed, but for
# free joints at roots: the several-speed branch of aba_core (a Cholesky factor per
# joint) stays per state. Its blocks are larger than RNEA's and CRBA's, hence a
# smaller limit on the bodies.

#: the largest tree the ABA lane kernel takes (its stack blocks: ~180 kB)
ABA_LANE_BODIES = 40


@njit(cache=True, _nrt=False)
def aba_lanes_fit(data):
    """Whether the lane kernel takes this tree: at most ABA_LANE_BODIES bodies, every
    joint of one speed but free joints at roots."""
    nb = data.shape[0] - 1
    if nb > ABA_LANE_BODIES:
        return False
    for i in range(nb):
        if data[i, NVJ] != 1 and not (data[i, PARENT] < 0 and data[i, SUNIT] == 6):
            return False
        if data[i, NVJ] == 6 and data[i, ARMATURE] != 0.0:  # a free root with a rotor
            return False
    return True


@njit(cache=True, forceinline=True)
def aba_lanes(data, Q, V, Tau, Fx, use_fext, k0, L, out, status, Xs, Ws):
    """:func:`aba_core` for the L <= LANES states ``k0 .. k0 + L - 1`` at once, operation
    for operation (the same bits), for a tree that :func:`aba_lanes_fit`. The one-speed
    joints' W row is U itself and their L entry 1/D, as in aba_core; a free root's
    6x6 Cholesky factor is taken lane by lane in vector loops."""
    X0 = stack_array((ABA_LANE_BODIES, 12, LANES))  # i_X_0
    S0 = stack_array((ABA_LANE_BODIES, 6, LANES))  # S⁰_i (one column)
    Vb = stack_array((ABA_LANE_BODIES, 6, LANES))  # v_i
    Ab = stack_array((ABA_LANE_BODIES, 6, LANES))  # a⁰_i (pass 1), δ_i (pass 3)
    Pb = stack_array((ABA_LANE_BODIES, 6, LANES))  # p^A_i
    Ub = stack_array((ABA_LANE_BODIES, 6, LANES))  # U_i = I^A_i S⁰_i
    IA = stack_array((ABA_LANE_BODIES, 21, LANES))  # I^A_i packed
    Di = stack_array((ABA_LANE_BODIES, LANES))  # 1 / D_i
    Yb = stack_array((ABA_LANE_BODIES, LANES))  # u_i = τ_i - S⁰ᵀ p^A_i
    Xt = stack_array((1, 12, LANES))  # X_up[i]
    T = stack_array((27, LANES))  # scratch
    Lc = stack_array((6, 6, LANES))  # a free root's factor
    Z = stack_array((12, LANES))  # its right side, z, δ
    nb = data.shape[0] - 1
    for l in range(L):
        status[k0 + l] = 0
    for i in range(nb):  # pass 1: velocities, a⁰ and bias forces, parent before child
        k = int(data[i, IQ])
        if data[i, AXIS_ID] >= 0:  # X_up as in rnea_lanes
            lane_cos_sin(Q, k0, k, L, T[0], T[1])
            lane_unit_axis_transform(data, i, T[0], T[1], Xt, 0, L)
        else:
            for l in range(L):
                if lane_joint_transform(data, i, Q[k0 + l], Xs, Xt, 0, l) and status[k0 + l] == 0:
                    status[k0 + l] = i + 1
        par = int(data[i, PARENT])
        o = int(data[i, IV])
        ki = int(data[i, SIDX])
        if par < 0:
            for c in range(12):
                for l in range(L):
                    X0[i, c, l] = Xt[0, c, l]
        else:  # as compose, through T (X0[p] read, X0[i] written)
            for a in range(3):
                for b in range(3):
                    for l in range(L):
                        T[3 * a + b, l] = (Xt[0, 3 * a, l] * X0[par, b, l]
                                           + Xt[0, 3 * a + 1, l] * X0[par, 3 + b, l]
                                           + Xt[0, 3 * a + 2, l] * X0[par, 6 + b, l])
            for a in range(3):
                for l in range(L):
                    T[9 + a, l] = (X0[par, 9 + a, l] + X0[par, a, l] * Xt[0, 9, l]
                                   + X0[par, 3 + a, l] * Xt[0, 10, l]
                                   + X0[par, 6 + a, l] * Xt[0, 11, l])
            for c in range(12):
                for l in range(L):
                    X0[i, c, l] = T[c, l]
        # S⁰ and v_J = S⁰ q̇ (into T[12:18])
        if ki >= 0:
            r = ki if ki < 3 else ki - 3
            for l in range(L):
                e0, e1, e2 = X0[i, 3 * r, l], X0[i, 3 * r + 1, l], X0[i, 3 * r + 2, l]
                if ki < 3:
                    r0, r1, r2 = X0[i, 9, l], X0[i, 10, l], X0[i, 11, l]
                    S0[i, 0, l], S0[i, 1, l], S0[i, 2, l] = e0, e1, e2
                    S0[i, 3, l] = r1 * e2 - r2 * e1
                    S0[i, 4, l] = r2 * e0 - r0 * e2
                    S0[i, 5, l] = r0 * e1 - r1 * e0
                else:
                    S0[i, 0, l], S0[i, 1, l], S0[i, 2, l] = 0.0, 0.0, 0.0
                    S0[i, 3, l], S0[i, 4, l], S0[i, 5, l] = e0, e1, e2
            for m in range(6):
                for l in range(L):
                    T[12 + m, l] = S0[i, m, l] * V[k0 + l, o]
        elif par < 0 and data[i, SUNIT] == 6:  # v_J = X0⁻¹ v
            for l in range(L):
                (T[12, l], T[13, l], T[14, l], T[15, l], T[16, l], T[17, l]) = x_inv_motion_s(
                    X0[i, 0, l], X0[i, 1, l], X0[i, 2, l], X0[i, 3, l], X0[i, 4, l],
                    X0[i, 5, l], X0[i, 6, l], X0[i, 7, l], X0[i, 8, l], X0[i, 9, l],
                    X0[i, 10, l], X0[i, 11, l], V[k0 + l, o], V[k0 + l, o + 1],
                    V[k0 + l, o + 2], V[k0 + l, o + 3], V[k0 + l, o + 4], V[k0 + l, o + 5])
        else:  # one speed, S not a unit vector: S⁰ = X0⁻¹ s, s the model's column
            motion_subspace_column(data, i, 0, Ws, 1)
            for l in range(L):
                (S0[i, 0, l], S0[i, 1, l], S0[i, 2, l], S0[i, 3, l], S0[i, 4, l],
                 S0[i, 5, l]) = x_inv_motion_s(
                    X0[i, 0, l], X0[i, 1, l], X0[i, 2, l], X0[i, 3, l], X0[i, 4, l],
                    X0[i, 5, l], X0[i, 6, l], X0[i, 7, l], X0[i, 8, l], X0[i, 9, l],
                    X0[i, 10, l], X0[i, 11, l], Ws[1, 0], Ws[1, 1], Ws[1, 2], Ws[1, 3],
                    Ws[1, 4], Ws[1, 5])
            for m in range(6):
                for l in range(L):
                    T[12 + m, l] = 0.0 + S0[i, m, l] * V[k0 + l, o]
        if par < 0:  # v = v_J, a⁰ = [0; -g] + c
            for m in range(6):
                for l in range(L):
                    Vb[i, m, l] = T[12 + m, l]
            for m in range(6):
                x = 0.0 if m < 3 else -data[nb, GRAV + m - 3]
                for l in range(L):
                    Ab[i, m, l] = x
        else:
            for m in range(6):
                for l in range(L):
                    Vb[i, m, l] = Vb[par, m, l] + T[12 + m, l]
            for m in range(6):
                for l in range(L):
                    Ab[i, m, l] = Ab[par, m, l]
        for l in range(L):  # c = v × v_J; p = I a⁰ + v ×* I v
            (T[0, l], T[1, l], T[2, l], T[3, l], T[4, l], T[5, l]) = cross_motion_s(
                Vb[i, 0, l], Vb[i, 1, l], Vb[i, 2, l], Vb[i, 3, l], Vb[i, 4, l], Vb[i, 5, l],
                T[12, l], T[13, l], T[14, l], T[15, l], T[16, l], T[17, l])
        for m in range(6):
            for l in range(L):
                Ab[i, m, l] += T[m, l]
        for l in range(L):
            M, h0, h1, h2, j00, j01, j11, j02, j12, j22 = inertia_world_s(
                data, i, X0[i, 0, l], X0[i, 1, l], X0[i, 2, l], X0[i, 3, l], X0[i, 4, l],
                X0[i, 5, l], X0[i, 6, l], X0[i, 7, l], X0[i, 8, l], X0[i, 9, l],
                X0[i, 10, l], X0[i, 11, l])
            IA[i, 0, l], IA[i, 1, l], IA[i, 2, l] = j00, j01, j11
            IA[i, 3, l], IA[i, 4, l], IA[i, 5, l] = j02, j12, j22
            IA[i, 6, l], IA[i, 7, l], IA[i, 8, l], IA[i, 9, l] = 0.0, h2, -h1, M
            IA[i, 10, l], IA[i, 11, l], IA[i, 12, l], IA[i, 13, l] = -h2, 0.0, h0, 0.0
            IA[i, 14, l], IA[i, 15, l], IA[i, 16, l], IA[i, 17, l] = M, h1, -h0, 0.0
            IA[i, 18, l], IA[i, 19, l], IA[i, 20, l] = 0.0, 0.0, M
            t0, t1, t2, t3, t4, t5 = rigid_times(
                M, h0, h1, h2, j00, j01, j02, j11, j12, j22,
                Vb[i, 0, l], Vb[i, 1, l], Vb[i, 2, l], Vb[i, 3, l], Vb[i, 4, l], Vb[i, 5, l])
            p0, p1, p2, p3, p4, p5 = rigid_times(
                M, h0, h1, h2, j00, j01, j02, j11, j12, j22,
                Ab[i, 0, l], Ab[i, 1, l], Ab[i, 2, l], Ab[i, 3, l], Ab[i, 4, l], Ab[i, 5, l])
            c0, c1, c2, c3, c4, c5 = cross_force_s(
                Vb[i, 0, l], Vb[i, 1, l], Vb[i, 2, l], Vb[i, 3, l], Vb[i, 4, l], Vb[i, 5, l],
                t0, t1, t2, t3, t4, t5)
            Pb[i, 0, l], Pb[i, 1, l], Pb[i, 2, l] = p0 + c0, p1 + c1, p2 + c2
            Pb[i, 3, l], Pb[i, 4, l], Pb[i, 5, l] = p3 + c3, p4 + c4, p5 + c5
        if use_fext:  # p -= X0ᵀ f_ext (as aba_core: into a zeroed row, then subtracted)
            for l in range(L):
                c0, c1, c2, c3, c4, c5 = xt_force(
                    X0[i, 0, l], X0[i, 1, l], X0[i, 2, l], X0[i, 3, l], X0[i, 4, l],
                    X0[i, 5, l], X0[i, 6, l], X0[i, 7, l], X0[i, 8, l], X0[i, 9, l],
                    X0[i, 10, l], X0[i, 11, l], Fx[k0 + l, i, 0], Fx[k0 + l, i, 1],
                    Fx[k0 + l, i, 2], Fx[k0 + l, i, 3], Fx[k0 + l, i, 4], Fx[k0 + l, i, 5])
                Pb[i, 0, l] -= 0.0 + c0
                Pb[i, 1, l] -= 0.0 + c1
                Pb[i, 2, l] -= 0.0 + c2
                Pb[i, 3, l] -= 0.0 + c3
                Pb[i, 4, l] -= 0.0 + c4
                Pb[i, 5, l] -= 0.0 + c5
    for i in range(nb - 1, -1, -1):  # pass 2: articulated inertias, child before parent
        o = int(data[i, IV])
        par = int(data[i, PARENT])
        if par < 0 and data[i, SUNIT] == 6:
            aba_lanes_free_root(Tau, k0, o, L, X0, i, Pb, IA, Lc, Z, data[nb, SINGTOL], status)
            continue
        for l in range(L):
            s0, s1, s2 = S0[i, 0, l], S0[i, 1, l], S0[i, 2, l]
            s3, s4, s5 = S0[i, 3, l], S0[i, 4, l], S0[i, 5, l]
            u0, u1, u2, u3, u4, u5 = sym_times_s(
                IA[i, 0, l], IA[i, 1, l], IA[i, 2, l], IA[i, 3, l], IA[i, 4, l], IA[i, 5, l],
                IA[i, 6, l], IA[i, 7, l], IA[i, 8, l], IA[i, 9, l], IA[i, 10, l],
                IA[i, 11, l], IA[i, 12, l], IA[i, 13, l], IA[i, 14, l], IA[i, 15, l],
                IA[i, 16, l], IA[i, 17, l], IA[i, 18, l], IA[i, 19, l], IA[i, 20, l],
                s0, s1, s2, s3, s4, s5)
            p0, p1, p2 = Pb[i, 0, l], Pb[i, 1, l], Pb[i, 2, l]
            p3, p4, p5 = Pb[i, 3, l], Pb[i, 4, l], Pb[i, 5, l]
            d = s0 * u0 + s1 * u1 + s2 * u2 + s3 * u3 + s4 * u4 + s5 * u5 + data[i, ARMATURE]
            u = Tau[k0 + l, o] - (s0 * p0 + s1 * p1 + s2 * p2 + s3 * p3 + s4 * p4 + s5 * p5)
            if not d <= data[nb, SINGTOL]:  # (NaN from an overflow: NOT_FINITE below)
                dinv = 1.0 / d
            else:  # as aba_core, which stops there; this lane's result is not used
                dinv = 0.0
                if status[k0 + l] == 0:
                    status[k0 + l] = SINGULAR - i
            Di[i, l] = dinv
            Yb[i, l] = u
            Ub[i, 0, l], Ub[i, 1, l], Ub[i, 2, l] = u0, u1, u2
            Ub[i, 3, l], Ub[i, 4, l], Ub[i, 5, l] = u3, u4, u5
            # p^a = p^A + U u/D and I^a = I^A - U Uᵀ/D (into T, added to the parent below)
            e = u * dinv
            T[21, l], T[22, l], T[23, l] = p0 + u0 * e, p1 + u1 * e, p2 + u2 * e
            T[24, l], T[25, l], T[26, l] = p3 + u3 * e, p4 + u4 * e, p5 + u5 * e
            b0, b1, b2 = u0 * dinv, u1 * dinv, u2 * dinv
            b3, b4, b5 = u3 * dinv, u4 * dinv, u5 * dinv
            T[0, l] = IA[i, 0, l] - b0 * u0
            T[1, l] = IA[i, 1, l] - b1 * u0
            T[2, l] = IA[i, 2, l] - b1 * u1
            T[3, l] = IA[i, 3, l] - b2 * u0
            T[4, l] = IA[i, 4, l] - b2 * u1
            T[5, l] = IA[i, 5, l] - b2 * u2
            T[6, l] = IA[i, 6, l] - b3 * u0
            T[7, l] = IA[i, 7, l] - b3 * u1
            T[8, l] = IA[i, 8, l] - b3 * u2
            T[9, l] = IA[i, 9, l] - b3 * u3
            T[10, l] = IA[i, 10, l] - b4 * u0
            T[11, l] = IA[i, 11, l] - b4 * u1
            T[12, l] = IA[i, 12, l] - b4 * u2
            T[13, l] = IA[i, 13, l] - b4 * u3
            T[14, l] = IA[i, 14, l] - b4 * u4
            T[15, l] = IA[i, 15, l] - b5 * u0
            T[16, l] = IA[i, 16, l] - b5 * u1
            T[17, l] = IA[i, 17, l] - b5 * u2
            T[18, l] = IA[i, 18, l] - b5 * u3
            T[19, l] = IA[i, 19, l] - b5 * u4
            T[20, l] = IA[i, 20, l] - b5 * u5
        if par >= 0:
            for m in range(6):
                for l in range(L):
                    Pb[par, m, l] += T[21 + m, l]
            for c in range(21):
                for l in range(L):
                    IA[par, c, l] += T[c, l]
    for i in range(nb):  # pass 3: q̈ and δ, parent before child (δ_p = 0 at a root)
        o = int(data[i, IV])
        par = int(data[i, PARENT])
        if par < 0 and data[i, SUNIT] == 6:  # q̈ = X0 δ
            for m in range(6):
                for l in range(L):
                    Ab[i, m, l] = Z[6 + m, l]
            for l in range(L):
                (out[k0 + l, o], out[k0 + l, o + 1], out[k0 + l, o + 2], out[k0 + l, o + 3],
                 out[k0 + l, o + 4], out[k0 + l, o + 5]) = x_motion_s(
                    X0[i, 0, l], X0[i, 1, l], X0[i, 2, l], X0[i, 3, l], X0[i, 4, l],
                    X0[i, 5, l], X0[i, 6, l], X0[i, 7, l], X0[i, 8, l], X0[i, 9, l],
                    X0[i, 10, l], X0[i, 11, l], Ab[i, 0, l], Ab[i, 1, l], Ab[i, 2, l],
                    Ab[i, 3, l], Ab[i, 4, l], Ab[i, 5, l])
            continue
        for m in range(6):
            for l in range(L):
                Ab[i, m, l] = 0.0 if par < 0 else Ab[par, m, l]
        for l in range(L):  # q̈ = (u - Uᵀ δ_p) / D; δ = δ_p + S⁰ q̈
            x = Yb[i, l]
            for m in range(6):
                x -= Ub[i, m, l] * Ab[i, m, l]
            x = x * Di[i, l]
            T[0, l] = x
        for l in range(L):
            out[k0 + l, o] = T[0, l]
        for m in range(6):
            for l in range(L):
                Ab[i, m, l] += S0[i, m, l] * T[0, l]
    for l in range(L):
        if status[k0 + l] == 0 and not all_finite(out[k0 + l]):
            status[k0 + l] = NOT_FINITE


@njit(cache=True, _nrt=False, forceinline=True)
def aba_lanes_free_root(Tau, k0, o, L, X0, i, Pb, IA, Lc, Z, tol, status):
    """Pass 2 of :func:`aba_lanes` for a free root, as aba_core: ``I^A δ = X0ᵀ τ - p^A``
    by the Cholesky factor Lc of I^A; δ into Z[6:12] (Z[0:6]: the right side, then z)."""
    for l in range(L):
        c0, c1, c2, c3, c4, c5 = xt_force(
            X0[i, 0, l], X0[i, 1, l], X0[i, 2, l], X0[i, 3, l], X0[i, 4, l], X0[i, 5, l],
            X0[i, 6, l], X0[i, 7, l], X0[i, 8, l], X0[i, 9, l], X0[i, 10, l], X0[i, 11, l],
            Tau[k0 + l, o], Tau[k0 + l, o + 1], Tau[k0 + l, o + 2], Tau[k0 + l, o + 3],
            Tau[k0 + l, o + 4], Tau[k0 + l, o + 5])
        Z[0, l], Z[1, l], Z[2, l] = -Pb[i, 0, l] + c0, -Pb[i, 1, l] + c1, -Pb[i, 2, l] + c2
        Z[3, l], Z[4, l], Z[5, l] = -Pb[i, 3, l] + c3, -Pb[i, 4, l] + c4, -Pb[i, 5, l] + c5
    for c in range(6):  # as cholesky_entry, column by column
        for r in range(c, 6):
            for l in range(L):
                d = IA[i, r * (r + 1) // 2 + c, l]
                for k in range(c):
                    d -= Lc[r, k, l] * Lc[c, k, l]
                if r != c:
                    Lc[r, c, l] = d / Lc[c, c, l]
                elif not d <= tol:
                    Lc[r, c, l] = np.sqrt(d)
                else:  # singular: NaN, never a division by zero (the status says which)
                    Lc[r, c, l] = np.nan
                    if status[k0 + l] == 0:
                        status[k0 + l] = SINGULAR - i
    for r in range(6):  # L z = rhs
        for l in range(L):
            x = Z[r, l]
            for k in range(r):
                x -= Lc[r, k, l] * Z[k, l]
            Z[r, l] = x / Lc[r, r, l]
    for r in range(5, -1, -1):  # Lᵀ δ = z
        for l in range(L):
            x = Z[r, l]
            for k in range(r + 1, 6):
                x -= Lc[k, r, l] * Z[6 + k, l]
            Z[6 + r, l] = x / Lc[r, r, l]


@njit(cache=True, parallel=True, nogil=True)
def aba_batch(data, Q, V, Tau, F, use_fext, out, status):
    N = Q.shape[0]
    nb = data.shape[0] - 1
    nv = out.shape[1]
    lanes = aba_lanes_fit(data)
    for t in prange((N + BATCH_TASK - 1) // BATCH_TASK):
        X = np.empty((nb, 12))
        w = np.empty((3 * nb + 8, 6))
        end = min(N, (t + 1) * BATCH_TASK)
        if lanes:
            for k in range(t * BATCH_TASK, end, LANES):
                aba_lanes(data, Q, V, Tau, F, use_fext, k, min(LANES, end - k), out, status,
                          X, w)
            continue
        X0 = np.empty((nb, 12))
        S0 = np.empty((nv, 6))
        IA = np.empty((nb, 21))
        LW = np.empty((12 * nb, 6))
        y = np.empty(nv)
        for k in range(t * BATCH_TASK, end):
            kf = k if use_fext else 0
            status[k] = aba_core(data, Q[k], V[k], Tau[k], F[kf], use_fext, out[k], X, X0,
                                 S0, w, IA, LW, y)


# --- the single-state entry points on the packed buffer ------------------------------
# (Without the runtime a function cannot return a view it made, so each entry point
# carves its own views out of the buffer: ``o`` is where the workspace starts.)

@njit(cache=True, _nrt=False)
def _aba_f(buf, q, v, tau, fext, use_fext, qdd):
    nb = int(buf[0])
    nv = int(buf[2])
    o = HDR + (nb + 1) * WIDTH
    data = buf[HDR:o].reshape((nb + 1, WIDTH))
    o1 = o + 12 * nb
    o2 = o1 + 12 * nb
    o3 = o2 + 6 * nv
    o4 = o3 + 6 * (3 * nb + 8)
    o5 = o4 + 21 * nb
    o6 = o5 + 72 * nb
    if not use_fext:
        fext = data  # unused
    return aba_core(data, q, v, tau, fext, use_fext, qdd,
                    buf[o:o1].reshape((nb, 12)), buf[o1:o2].reshape((nb, 12)),
                    buf[o2:o3].reshape((nv, 6)), buf[o3:o4].reshape((3 * nb + 8, 6)),
                    buf[o4:o5].reshape((nb, 21)), buf[o5:o6].reshape((12 * nb, 6)),
                    buf[o6:o6 + nv])


@njit(cache=True, _nrt=False, nogil=True)
def aba_f(buf, q, v, tau, qdd):
    nv = int(buf[2])
    if not (q.shape[0] == int(buf[1]) and v.shape[0] == nv and tau.shape[0] == nv
            and qdd.shape[0] == nv):
        return BAD_SHAPE
    return _aba_f(buf, q, v, tau, buf[:HDR].reshape((1, HDR)), False, qdd)  # unused f_ext


@njit(cache=True, _nrt=False, nogil=True)
def aba_f_fext(buf, q, v, tau, fext, qdd):
    nv = int(buf[2])
    if not (q.shape[0] == int(buf[1]) and v.shape[0] == nv and tau.shape[0] == nv
            and qdd.shape[0] == nv and fext.shape[0] == int(buf[0]) and fext.shape[1] == 6):
        return BAD_SHAPE
    return _aba_f(buf, q, v, tau, fext, True, qdd)
