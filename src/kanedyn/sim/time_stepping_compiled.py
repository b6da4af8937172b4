"""Moreau's time-stepping with joint friction as one compiled loop (numba), and its
complementarity solve.

The step is that of :func:`kanedyn.sim.time_stepping.time_stepping` (the readable
reference, tested against this loop step for step): semi-implicit Euler,

    A (v⁺ − v) = dt [τ(t, q, v) − h(q, v)] + dt τ_f,     q⁺ = q + dt v⁺,

A = M(q) plus dt F'(w) on the diagonal of each smoothed-law joint (linearly implicit), and
for the exact-law joints the friction τ_f = λ from the box linear complementarity problem
(BLCP) on their Delassus matrix W = dt (A⁻¹)_JJ (Moreau 1988; Jean 1999):

    u = w_free + W λ,   −c ≤ λ ≤ c,
    |λ_i| < c_i ⇒ u_i = 0 (stuck),   λ_i = c_i ⇒ u_i ≤ 0,   λ_i = −c_i ⇒ u_i ≥ 0 (sliding),

u the joints' slip speeds after the step, c their friction levels (Fs while stuck, the
curve g(|w|) + Fv|w| while sliding). W is symmetric positive definite, so the BLCP is
exactly the optimality condition of the strictly convex box QP

    min ½ λᵀ W λ + w_freeᵀ λ   subject to   −c ≤ λ ≤ c,

whose solution is unique. :func:`box_lcp` solves it exactly by the primal active-set
method (Nocedal & Wright, *Numerical Optimization*, 2nd ed. 2006, Algorithm 16.3,
specialised to bounds): on the current face the free λ solve a small SPD system
(Cholesky), a step blocked by a bound adds it to the active set, and at a face's
minimiser the bound whose multiplier (the slip speed u_i) has the wrong sign leaves it.
It terminates in finitely many faces (the objective strictly decreases between them), each
exact to round-off, for any number of joints sticking at once. Why not projected
Gauss–Seidel (the former solve): on a chain the joints are strongly coupled (W far from
diagonal) and PGS converges linearly at a rate near 1 — on the 7-link arm of
``bench/friction.py`` held at rest, all seven stuck (cond W = 720), it takes 405 sweeps
to a change of 1e-13 and its λ is then still 6e-11 off (the former cap of 50 sweeps
raised there); why not Lemke's method:
it would double the problem (the box as two LCPs) where the active set works on the box
directly, warm-started by the previous step's stick set (one face solve per step once
the stick set settles).

:func:`time_stepping_run` is the whole run on a Model's flat array (additive coordinates:
revolute, prismatic and helical joints): the CRBA and RNEA kernels of
:mod:`kanedyn.dynamics.kernels` (their workspace allocated once a run), the kernel of
``kd.kinetic_energy`` for the energy (rotors included), the force rows of
:mod:`kanedyn.forces.kernel` (springs, dampers, constant and sinusoidal torques) and the
compiled Stribeck law of :mod:`kanedyn.friction.laws_kernel` (exact or smoothed).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..dynamics import _compiled, kernels
from ..forces.kernel import applied_forces, spring_potential
from ..friction.laws_kernel import stribeck_curve, stribeck_derivative, stribeck_force
from ..integrators.base import cholesky, cholesky_solve

_compiled.key_cache(__name__)

# columns of the friction table FT (nf, NFT): the law's parameters (FT_EPS 0: the exact
# sgn), the surface speed, the treatment (KIND_EXACT: the BLCP; KIND_SMOOTH: linearly
# implicit; KIND_KARNOPP: Karnopp's band of half-width FT_BAND around the law; KIND_LUGRE:
# LuGre with σ0, σ1, σ2 in FT_S0..FT_S2 and its curve in FT_FC..FT_DELTA)
(FT_FC, FT_FS, FT_VS, FT_DELTA, FT_FV, FT_EPS, FT_SMOOTH, FT_SURF, FT_KIND, FT_BAND, FT_S0,
 FT_S1, FT_S2) = range(13)
NFT = 13
KIND_EXACT, KIND_SMOOTH, KIND_KARNOPP, KIND_LUGRE = 0, 1, 2, 3

#: why a run stopped early, by the status code it leaves
TS_NOT_FINITE, TS_KERNEL, TS_LCP = 1, 2, 3


@nb.njit(cache=True, nogil=True)
def box_lcp(W, w, c, lam, state) -> int:
    """Solve the box LCP of the module doc by the primal active-set method; returns the
    number of faces visited, or −1 if it did not finish (a cap of 4n + 20 faces).

    ``lam`` and ``state`` (+1 at c, −1 at −c, 0 free) are a warm start on entry (the
    free λ are clipped into the box, the bound ones put on their bound) and the
    solution on exit: state 0 is a stuck joint, ±1 one sliding backwards / forwards
    (u_i ≤ 0 at +c, u_i ≥ 0 at −c). A multiplier counts as of the wrong sign beyond
    1e-13 of the problem's speed scale, so round-off cannot make it cycle."""
    n = w.shape[0]
    if n == 0:
        return 0
    free = np.empty(n, np.int64)
    Wf = np.empty((n, n))
    L = np.empty((n, n))
    rhs = np.empty(n)
    x = np.empty(n)
    scale = 0.0
    for i in range(n):
        if state[i] > 0:
            lam[i] = c[i]
        elif state[i] < 0:
            lam[i] = -c[i]
        else:
            lam[i] = min(max(lam[i], -c[i]), c[i])
        s = abs(w[i])
        for k in range(n):
            s += abs(W[i, k]) * c[k]
        scale = max(scale, s)
    tol = 1e-13 * scale
    for it in range(1, 4 * n + 21):
        m = 0
        for i in range(n):
            if state[i] == 0:
                free[m] = i
                m += 1
        # the minimiser on this face: W_FF x_F = −(w_F + W_FB λ_B)
        for a in range(m):
            i = free[a]
            s = -w[i]
            for k in range(n):
                if state[k] != 0:
                    s -= W[i, k] * lam[k]
            rhs[a] = s
            for b in range(m):
                Wf[a, b] = W[i, free[b]]
        if m > 0:
            if not cholesky(Wf, m, L):
                return -1
            cholesky_solve(L, m, rhs, x)
        # the longest step towards it that stays in the box
        alpha, block, side = 1.0, -1, 0
        for a in range(m):
            i = free[a]
            p = x[a] - lam[i]
            if p > 0.0 and x[a] > c[i]:
                r = (c[i] - lam[i]) / p
                if r < alpha:
                    alpha, block, side = r, i, 1
            elif p < 0.0 and x[a] < -c[i]:
                r = (-c[i] - lam[i]) / p
                if r < alpha:
                    alpha, block, side = r, i, -1
        if block >= 0:
            for a in range(m):
                i = free[a]
                lam[i] += alpha * (x[a] - lam[i])
            lam[block] = side * c[block]
            state[block] = side
            continue
        for a in range(m):
            lam[free[a]] = x[a]
        # at the face's minimiser: the bound whose slip speed points the wrong way leaves
        worst, excess = -1, tol
        for i in range(n):
            if state[i] == 0:
                continue
            u = w[i]
            for k in range(n):
                u += W[i, k] * lam[k]
            e = u * state[i]  # > 0: at +c but u > 0, or at −c but u < 0
            if e > excess:
                worst, excess = i, e
        if worst < 0:
            return it
        state[worst] = 0
    return -1


@nb.njit(cache=True, nogil=True)
def law_force(FT, c, w) -> float:
    """F(w) of friction joint c's Stribeck law: smoothed (FT_EPS > 0) or exact,
    g(|w|) sgn(w) + Fv w."""
    if FT[c, FT_EPS] > 0.0:
        return stribeck_force(w, FT[c, FT_FC], FT[c, FT_FS], FT[c, FT_VS], FT[c, FT_DELTA],
                              FT[c, FT_FV], FT[c, FT_EPS], int(FT[c, FT_SMOOTH]))
    return (stribeck_curve(abs(w), FT[c, FT_FC], FT[c, FT_FS], FT[c, FT_VS], FT[c, FT_DELTA])
            * np.sign(w) + FT[c, FT_FV] * w)


@nb.njit(cache=True, nogil=True)
def inverse_columns(Lc, idx, sel, ns, G, col):
    """G[:, a] = A⁻¹ e_{idx[sel[a]]} for a < ns (A = Lc Lcᵀ)."""
    nv = col.shape[0]
    for a in range(ns):
        col[:] = 0.0
        col[idx[sel[a]]] = 1.0
        cholesky_solve(Lc, nv, col, col)
        for i in range(nv):
            G[i, a] = col[i]


@nb.njit(cache=True, nogil=True)
def time_stepping_run(data, P, forces, FT, idx, q0, v0, dt, n_steps, Q, V, FR, ST, E, Wf,
                      Wo, D, Z, status):
    """The whole run of the module doc from (q0, v0) by ``n_steps`` steps of ``dt``; every
    step kept: Q, V (n_steps + 1, n), the friction forces FR and stick flags ST (·, nf),
    the energy E (springs included), the friction work Wf, the other forces' work Wo and
    the heat D. ``P``: force rows (applied when ``forces``); ``FT`` (nf, NFT) and ``idx``:
    the friction joints' table and speed indices. Returns the number of steps done;
    ``status`` is left [0, 0] or [code, step] (TS_NOT_FINITE, TS_KERNEL, TS_LCP)."""
    nv = v0.shape[0]
    nf = idx.shape[0]
    q, v = q0.copy(), v0.copy()
    M, Lc = np.empty((nv, nv)), np.empty((nv, nv))
    h, rhs, dv, col = np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv)
    tau_nc, tau = np.zeros(nv), np.zeros(nv)
    out = np.empty(11)  # T, V, momentum, centre of mass (summary_into)
    nb = data.shape[0] - 1
    Xc, Pc, Fc, Ac = np.empty((nb, 12)), np.empty((nb, 13)), np.empty((2, 6)), np.empty(3 * nb)
    Xr, wr = np.empty((nb, 12)), np.empty((3 * nb + 2, 6))
    f0, d0, level, tf = np.zeros(nf), np.zeros(nf), np.zeros(nf), np.zeros(nf)
    z, rl = np.zeros(nf), np.zeros(nf)  # LuGre: bristle states, 1/(1 + dt σ0|w|/g)
    stuck = np.zeros(nf, np.bool_)
    ex = np.empty(nf, np.int64)  # the exact-law joints (friction indices)
    ne = 0
    for c in range(nf):
        if FT[c, FT_KIND] == KIND_EXACT:
            ex[ne] = c
            ne += 1
            stuck[c] = v[idx[c]] == FT[c, FT_SURF]
    G = np.empty((nv, ne))  # A⁻¹'s columns of the exact joints
    band = np.empty(nf, np.int64)  # the Karnopp joints inside their band, this step
    Gk, Wk, Lk = np.empty((nv, nf)), np.empty((nf, nf)), np.empty((nf, nf))
    rk, lk = np.empty(nf), np.empty(nf)
    W = np.empty((ne, ne))
    wfree, lam, cl = np.empty(ne), np.zeros(ne), np.empty(ne)
    state = np.zeros(ne, np.int64)
    status[0], status[1] = 0, 0
    s = kernels.summary_into(data, q, v, True, out)  # the energy of kd.kinetic_energy
    E[0] = out[0] + out[1] + spring_potential(P, q)
    Q[0], V[0] = q, v
    for c in range(nf):
        ST[0, c] = stuck[c]
    for n in range(n_steps):
        t = n * dt
        s |= kernels.crba_core(data, q, M, Xc, Pc, Fc, Ac)
        s |= kernels.rnea_core(data, q, v, v, data, True, False, False, h, Xr, wr)  # h(q, v)
        if forces:  # the joint rows and the wrenches' Jᵀf at (t, q, v)
            s |= applied_forces(data, P, t, q, v, tau_nc, tau)
        for i in range(nv):
            rhs[i] = dt * (tau[i] - h[i])
        nk = 0
        for c in range(nf):
            j = idx[c]
            w = v[j] - FT[c, FT_SURF]
            kind = FT[c, FT_KIND]
            if kind == KIND_SMOOTH:
                args = (FT[c, FT_FC], FT[c, FT_FS], FT[c, FT_VS], FT[c, FT_DELTA],
                        FT[c, FT_FV], FT[c, FT_EPS], int(FT[c, FT_SMOOTH]))
                f0[c] = stribeck_force(w, *args)
                d0[c] = max(stribeck_derivative(w, *args), 0.0)  # (the reference's)
                rhs[j] -= dt * f0[c]
                M[j, j] += dt * d0[c]  # linearly implicit in v⁺
            elif kind == KIND_LUGRE:
                # z⁺ = r (z + dt w⁺), F⁺ = f0 + d0 (w⁺ − w) (time_stepping's module doc)
                g = stribeck_curve(abs(w), FT[c, FT_FC], FT[c, FT_FS], FT[c, FT_VS],
                                   FT[c, FT_DELTA])
                s0, s1 = FT[c, FT_S0], FT[c, FT_S1]
                rl[c] = 1.0 / (1.0 + dt * s0 * abs(w) / g)
                c0 = s0 * rl[c] * z[c] + s1 * (rl[c] - 1.0) * z[c] / dt
                d0[c] = (s0 * dt + s1) * rl[c] + FT[c, FT_S2]
                f0[c] = c0 + d0[c] * w
                rhs[j] -= dt * f0[c]
                M[j, j] += dt * d0[c]
            elif kind == KIND_KARNOPP and abs(w) >= FT[c, FT_BAND]:
                tf[c] = -law_force(FT, c, w)
                rhs[j] += dt * tf[c]
            elif kind == KIND_KARNOPP:
                band[nk] = c  # the holding force is found below
                nk += 1
                level[c] = FT[c, FT_FS]
            elif stuck[c]:
                level[c] = FT[c, FT_FS]
            else:
                a = abs(w)
                level[c] = (stribeck_curve(a, FT[c, FT_FC], FT[c, FT_FS], FT[c, FT_VS],
                                           FT[c, FT_DELTA]) + FT[c, FT_FV] * a)
        if s != 0 or not cholesky(M, nv, Lc):
            status[0], status[1] = TS_KERNEL, n + 1
            return n
        cholesky_solve(Lc, nv, rhs, dv)
        if nk > 0:
            # Karnopp: the force that gives Δv_j = 0 for the band joints, clipped to ±Fs
            inverse_columns(Lc, idx, band, nk, Gk, col)
            for a in range(nk):
                for b in range(nk):
                    Wk[a, b] = Gk[idx[band[a]], b]
                rk[a] = dv[idx[band[a]]]
            if not cholesky(Wk, nk, Lk):
                status[0], status[1] = TS_KERNEL, n + 1
                return n
            cholesky_solve(Lk, nk, rk, lk)
            for a in range(nk):
                c = band[a]
                lk[a] = min(max(-lk[a] / dt, -level[c]), level[c])
                tf[c] = lk[a]
            for a in range(nk):
                for i in range(nv):
                    dv[i] += dt * Gk[i, a] * lk[a]
        if ne > 0:
            inverse_columns(Lc, idx, ex, ne, G, col)
            for a in range(ne):
                c = ex[a]
                j = idx[c]
                for b in range(ne):
                    W[a, b] = dt * G[j, b]
                wfree[a] = v[j] + dv[j] - FT[c, FT_SURF]
                cl[a] = level[c]
            if box_lcp(W, wfree, cl, lam, state) < 0:
                status[0], status[1] = TS_LCP, n + 1
                return n
            for a in range(ne):
                tf[ex[a]] = lam[a]
                for i in range(nv):
                    dv[i] += dt * G[i, a] * lam[a]
        for i in range(nv):
            dv[i] += v[i]  # v⁺
        for a in range(ne):
            c = ex[a]
            stuck[c] = state[a] == 0
            if stuck[c]:
                dv[idx[c]] = FT[c, FT_SURF]  # on the constraint, exactly
        wf, wo, dis = 0.0, 0.0, 0.0
        for c in range(nf):
            j = idx[c]
            if FT[c, FT_KIND] == KIND_SMOOTH or FT[c, FT_KIND] == KIND_LUGRE:
                tf[c] = -(f0[c] + d0[c] * (dv[j] - v[j]))
            if FT[c, FT_KIND] == KIND_LUGRE:
                z[c] = rl[c] * (z[c] + dt * (dv[j] - FT[c, FT_SURF]))
            wf += tf[c] * dv[j]
            dis -= tf[c] * (dv[j] - FT[c, FT_SURF])
        for i in range(nv):
            if not np.isfinite(dv[i]):
                status[0], status[1] = TS_NOT_FINITE, n + 1
                return n
            wo += tau_nc[i] * dv[i]
            v[i] = dv[i]
            q[i] += dt * v[i]
        Wf[n + 1] = Wf[n] + dt * wf
        Wo[n + 1] = Wo[n] + dt * wo
        D[n + 1] = D[n] + dt * dis
        Q[n + 1], V[n + 1] = q, v
        for c in range(nf):
            FR[n + 1, c] = tf[c]
            ST[n + 1, c] = stuck[c]
            Z[n + 1, c] = z[c]
        s |= kernels.summary_into(data, q, v, True, out)
        E[n + 1] = out[0] + out[1] + spring_potential(P, q)
    return n_steps
