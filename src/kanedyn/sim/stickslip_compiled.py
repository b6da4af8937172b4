"""The event-driven stick–slip run as one compiled loop (numba).

The algorithm is that of :mod:`.stickslip_events` (the readable reference, tested
against this loop step for step): Dormand–Prince 5(4) with step-size control on
y = (q, v, W_f, W_other, D), the partitioned dynamics of :mod:`.stickslip` in each
segment of constant modes (exact Stribeck laws g(|w|) d + Fv w on sliding joints; stuck
joints' v̇ = 0 and their holding force λ = M_SF v̇_F − b_S), events located on the dense
output by the Illinois method, and at each event the modes re-solved by the rules of
:meth:`.stickslip._Problem.resolve` (enumeration of {stick, +, −} up to ``ENUMERATE``
joints, most stuck first; then the sequential rule).

It runs on a Model's flat array: revolute, prismatic and helical joints, and ball, free
and planar ones (a floating base; friction on 1-DOF joints). q is integrated as the
reference integrates it, in q itself with q̇ = W(q) v
(:func:`.configuration_kernel.qdot_into`, each joint's ``kinematic_map``: a quaternion
by ½ q ⊗ (0, ω), its norm kept by the flow to the integration tolerance, not renormalised;
the kernels take its rotation normalised), and the force rows' springs read the 1-DOF
joints' coordinates gathered from q; on a Model of additive joints (read from the flat
array: no ball, free or planar joint) q̇ = v and the run is the one before, to the bit.
The loop uses the CRBA and RNEA kernels of :mod:`kanedyn.dynamics.kernels`, the kernel of
``kd.kinetic_energy`` for the energy, the force rows of :mod:`kanedyn.forces.kernel` and
the exact law's curve of :mod:`kanedyn.friction.laws_kernel`, with the friction table of
:mod:`.time_stepping_compiled` (FT_FS, FT_FC, ..., FT_SURF). Each sample is one row of a
float table (t, y, modes, friction forces, v̇, E), each switch one row (t, speed index,
kind, direction); both grow as needed.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..dynamics import _compiled, kernels
from ..dynamics.layout import FREE, IQ, IV, JTYPE, NQ, NV, NVJ, PLANAR, SPHERICAL
from ..errors import SolverError
from ..forces.kernel import (
    applied_forces,
    force_rows,
    has_forces,
    joint_forces,
    spring_potential,
    wrench_forces_add,
)
from ..friction.laws import Stribeck
from ..friction.laws_kernel import stribeck_curve
from ..integrators.base import cholesky, cholesky_solve
from ..integrators.dopri5 import B, C, D, E
from ..integrators.gauss_compiled import gather
from ..integrators.rk4_compiled import compiled_or_none
from ..model import Model
from ..model.joints import Free, Planar, Spherical
from .configuration_kernel import qdot_into
from .stickslip_events import ROOT_ITERATIONS, ROOT_TOL, SAME_TIME, A
from .time_stepping_compiled import FT_DELTA, FT_FC, FT_FS, FT_FV, FT_SURF, FT_VS
from .trajectory import Switch

_compiled.key_cache(__name__)

#: event kinds: a sliding joint's w·d reaching 0, a held force reaching −Fs or +Fs
EV_ZERO, EV_BREAK_N, EV_BREAK_P = 0, 1, 2
#: switch kinds (the ``Switch.kind`` strings, in this order)
SWITCH_KINDS = ("stick", "reverse", "slip")
SW_STICK, SW_REVERSE, SW_SLIP = 0, 1, 2
#: why a run stopped early
SS_NOT_FINITE, SS_KERNEL, SS_COLLAPSE, SS_ZENO = 1, 2, 3, 4
#: up to this many joints at w = 0, modes by enumeration (stickslip.ENUMERATE)
ENUMERATE = 4


@nb.njit(cache=True, nogil=True)
def coordinates(data):
    """(nq, nv, additive, iq_of_dof) of the model ``data``: additive when no joint is a
    ball, free or planar one (then q̇ = v and q_j is the coordinate of speed j); iq_of_dof
    the index in q of each speed's coordinate on 1-DOF additive joints, −1 elsewhere
    (:func:`.rk4_manifold.dof_coordinates`: the force rows' springs read q there)."""
    nb_ = data.shape[0] - 1
    nq, nv = int(data[nb_, NQ]), int(data[nb_, NV])
    iq = np.full(nv, -1, np.int64)
    additive = True
    for i in range(nb_):
        kd = int(data[i, JTYPE])
        if kd == SPHERICAL or kd == FREE or kd == PLANAR:
            additive = False
        elif int(data[i, NVJ]) == 1:
            iq[int(data[i, IV])] = int(data[i, IQ])
    return nq, nv, additive, iq


@nb.njit(cache=True, nogil=True)
def workspace(data):
    """The arrays :func:`evaluate` works in, allocated once a run (ws[16:]: the
    coordinates' layout of :func:`coordinates`, [nq, additive], and a gathered q)."""
    nb_ = data.shape[0] - 1
    nq, nv, additive, iq = coordinates(data)
    return (np.empty((nv, nv)), np.empty((nv, nv)), np.empty(nv), np.zeros(nv), np.zeros(nv),
            np.empty(nv), np.empty((nb_, 12)), np.empty((nb_, 13)), np.empty((2, 6)),
            np.empty(3 * nb_), np.empty((nb_, 12)), np.empty((3 * nb_ + 2, 6)),
            np.empty(nv, np.int64), np.empty((nv, nv)), np.empty(nv), np.empty(11),
            np.array([nq, 1 if additive else 0], np.int64), iq, np.zeros(nv))


@nb.njit(cache=True, nogil=True)
def evaluate(data, P, forces, FT, idx, mode, t, y, dy, tf, ws) -> bool:
    """dy = ẏ at (t, y) in the modes ``mode`` and tf the friction forces (the held force
    λ for a stuck joint), as :meth:`.stickslip._Problem.rhs`; False if the kernels refuse
    the state or M_FF is not positive definite."""
    M, L, hv, tnc, tau, b, Xc, Pc, Fc, Ac, Xr, wr, free, Mf, x, _, lay, iq, qd = ws
    nv = hv.shape[0]
    nq = lay[0]
    additive = lay[1] == 1
    nf = idx.shape[0]
    q = y[:nq]
    v = y[nq:nq + nv]
    s = kernels.crba_core(data, q, M, Xc, Pc, Fc, Ac)
    s |= kernels.rnea_core(data, q, v, v, data, True, False, False, hv, Xr, wr)  # h(q, v)
    if s != 0:
        return False
    if forces:
        if additive:
            if applied_forces(data, P, t, q, v, tnc, tau):  # (wrench rows: at q)
                return False
        else:  # the rows' springs at the 1-DOF joints' coordinates (gathered)
            gather(iq, q, qd)
            joint_forces(P, t, qd, v, tnc, tau)
            if wrench_forces_add(data, P, q, tnc, tau):
                return False
    for i in range(nv):
        b[i] = tau[i] - hv[i]
        free[i] = 1
    for c in range(nf):
        j = idx[c]
        d = mode[c]
        if d == 0:
            free[j] = 0
            continue
        w = v[j] - FT[c, FT_SURF]
        tf[c] = -(stribeck_curve(abs(w), FT[c, FT_FC], FT[c, FT_FS], FT[c, FT_VS],
                                 FT[c, FT_DELTA]) * d + FT[c, FT_FV] * w)
        b[j] += tf[c]
    m = 0
    for i in range(nv):
        if free[i] == 1:
            free[m] = i
            m += 1
    # M_FF v̇_F = b_F, v̇_S = 0
    for a in range(m):
        x[a] = b[free[a]]
        for k in range(m):
            Mf[a, k] = M[free[a], free[k]]
    if m > 0:
        if not cholesky(Mf, m, L):
            return False
        cholesky_solve(L, m, x, x)
    if additive:
        for i in range(nv):
            dy[i] = v[i]
    else:
        qdot_into(data, q, v, dy)  # q̇ = W(q) v (dy[:nq])
    for i in range(nv):
        dy[nq + i] = 0.0
    for a in range(m):
        dy[nq + free[a]] = x[a]
    wf, wo, dis = 0.0, 0.0, 0.0
    for c in range(nf):
        j = idx[c]
        if mode[c] == 0:  # λ = M_SF v̇_F − b_S
            lam = 0.0
            for a in range(m):
                lam += M[j, free[a]] * x[a]
            tf[c] = lam - b[j]
        wf += tf[c] * v[j]
        dis -= tf[c] * (v[j] - FT[c, FT_SURF])
    for i in range(nv):
        wo += tnc[i] * v[i]
    dy[nq + nv] = wf
    dy[nq + nv + 1] = wo
    dy[nq + nv + 2] = dis
    return True


@nb.njit(cache=True, nogil=True)
def consistent(data, P, forces, FT, idx, t, y, trial, zero, nz, dy, tf, ws) -> bool:
    """:meth:`.stickslip._Problem.consistent`: the joints zero[:nz] held within ±Fs or
    accelerating the way they slide (to 1e-12 of the largest |v̇|)."""
    nv = ws[2].shape[0]
    nq = ws[16][0]
    if not evaluate(data, P, forces, FT, idx, trial, t, y, dy, tf, ws):
        return False
    amax = 0.0
    for i in range(nv):
        amax = max(amax, abs(dy[nq + i]))
    for a in range(nz):
        k = zero[a]
        if trial[k] == 0:
            if not -FT[k, FT_FS] <= tf[k] <= FT[k, FT_FS]:
                return False
        elif trial[k] * dy[nq + idx[k]] < -1e-12 * (1.0 + amax):
            return False
    return True


@nb.njit(cache=True, nogil=True)
def add_switch(SW, nsw, t, j, kind, d) -> int:
    SW[nsw, 0], SW[nsw, 1], SW[nsw, 2], SW[nsw, 3] = t, j, kind, d
    return nsw + 1


@nb.njit(cache=True, nogil=True)
def resolve(data, P, forces, FT, idx, t, y, mode, cand, forced, arrival, SW, nsw, dy, tf,
            ws) -> int:
    """:meth:`.stickslip._Problem.resolve` (``cand``/``forced``: flags per friction joint;
    ``arrival``: the switch kind of a candidate that slides); returns the switch count."""
    nf = idx.shape[0]
    prev = mode.copy()
    zero = np.empty(nf, np.int64)
    nz = 0
    for k in range(nf):
        if not forced[k] and (mode[k] == 0 or cand[k]):
            zero[nz] = k
            nz += 1
    for k in range(nf):
        if cand[k]:
            mode[k] = 0
    done = False
    if 0 < nz <= ENUMERATE:
        trial = mode.copy()
        ncombo = 3 ** nz
        for count in range(nz + 1):  # most stuck first; itertools.product's order within
            for code in range(ncombo):
                r = code
                nonzero = 0
                for a in range(nz - 1, -1, -1):
                    digit = r % 3
                    r //= 3
                    trial[zero[a]] = 0 if digit == 0 else (1 if digit == 1 else -1)
                    if digit != 0:
                        nonzero += 1
                if nonzero != count:
                    continue
                if consistent(data, P, forces, FT, idx, t, y, trial, zero, nz, dy, tf, ws):
                    mode[:] = trial
                    done = True
                    break
            if done:
                break
    if not done:  # the sequential rule
        for _ in range(nf + 1):
            anystuck = False
            for k in range(nf):
                anystuck |= mode[k] == 0
            if not anystuck:
                break
            evaluate(data, P, forces, FT, idx, mode, t, y, dy, tf, ws)
            worst, excess = -1, 0.0
            for k in range(nf):
                if mode[k] != 0:
                    continue
                e = max(tf[k] - FT[k, FT_FS], -FT[k, FT_FS] - tf[k])
                if e > excess:
                    worst, excess = k, e
            if worst < 0:
                break
            mode[worst] = -1 if tf[worst] > 0 else 1
    for a in range(nz):
        k = zero[a]
        if mode[k] == 0 and (cand[k] or prev[k] != 0):
            nsw = add_switch(SW, nsw, t, idx[k], SW_STICK, 0)
        elif mode[k] != 0:
            nsw = add_switch(SW, nsw, t, idx[k], arrival if cand[k] else SW_SLIP, mode[k])
    return nsw


@nb.njit(cache=True, nogil=True)
def event_values(data, P, forces, FT, idx, mode, t, y, evk, evc, ne, g, dy, tf, ws,
                 fresh) -> bool:
    """The segment's event functions at (t, y) into g[:ne] (:meth:`._Problem.events`);
    ``fresh``: tf already holds the forces at (t, y) (the step's last stage)."""
    nq = ws[16][0]
    need = False
    for e in range(ne):
        need |= evk[e] != EV_ZERO and not fresh
    if need and not evaluate(data, P, forces, FT, idx, mode, t, y, dy, tf, ws):
        return False
    for e in range(ne):
        c = evc[e]
        if evk[e] == EV_ZERO:
            g[e] = (y[nq + idx[c]] - FT[c, FT_SURF]) * mode[c]
        elif evk[e] == EV_BREAK_N:
            g[e] = FT[c, FT_FS] - tf[c]
        else:
            g[e] = tf[c] + FT[c, FT_FS]
    return True


@nb.njit(cache=True, nogil=True)
def dense_at(R, t0, h, t, out):
    """The step's dense output at t (stickslip_events.dense_at)."""
    th = (t - t0) / h
    for i in range(out.shape[0]):
        out[i] = R[0, i] + th * (R[1, i] + (1.0 - th) * (R[2, i] + th * (
            R[3, i] + (1.0 - th) * R[4, i])))


@nb.njit(cache=True, nogil=True)
def event_root(data, P, forces, FT, idx, mode, R, t0, h, e, evk, evc, lo, glo, hi, ghi, yd,
               g1, dy, tf, ws) -> float:
    """stickslip_events.event_root on event e of the dense output R of the step from t0."""
    if glo == 0.0:
        return lo
    tol = ROOT_TOL * (1.0 + abs(hi))
    kept = 0
    n = yd.shape[0]
    y = np.empty(n)
    for _ in range(ROOT_ITERATIONS):
        if hi - lo <= tol or ghi == 0.0:
            break
        c = hi - ghi * (hi - lo) / (ghi - glo)
        if not lo < c < hi:
            c = 0.5 * (lo + hi)
        dense_at(R, t0, h, c, y)
        event_values(data, P, forces, FT, idx, mode, c, y, evk[e:e + 1], evc[e:e + 1], 1,
                     g1, dy, tf, ws, False)
        gc = g1[0]
        if gc > 0.0:
            lo, glo = c, gc
            if kept == -1:
                ghi *= 0.5
            kept = -1
        else:
            hi, ghi = c, gc
            if kept == 1:
                glo *= 0.5
            kept = 1
    return hi


@nb.njit(cache=True, nogil=True)
def segment_events(mode, evk, evc) -> int:
    """The events of a segment in the modes ``mode`` (the order of _Problem.events)."""
    ne = 0
    for c in range(mode.shape[0]):
        if mode[c] != 0:
            evk[ne], evc[ne] = EV_ZERO, c
            ne += 1
        else:
            evk[ne], evc[ne] = EV_BREAK_N, c
            evk[ne + 1], evc[ne + 1] = EV_BREAK_P, c
            ne += 2
    return ne


@nb.njit(cache=True, nogil=True)
def grow(S, rows: int):
    """S with room for at least ``rows`` rows (doubling)."""
    if rows <= S.shape[0]:
        return S
    out = np.empty((max(rows, 2 * S.shape[0]), S.shape[1]))
    out[:S.shape[0]] = S
    return out


@nb.njit(cache=True, nogil=True)
def put_sample(data, P, forces, FT, idx, S, row, t, y, mode, dy, tf, ws, fresh):
    """Row ``row`` of the sample table: t, y, modes, friction forces, v̇, E (the
    quantities _Problem.assemble recomputes at each output time); ``fresh``: dy and tf
    already hold ẏ and the forces at (t, y)."""
    n = y.shape[0]
    nf = idx.shape[0]
    nv = ws[2].shape[0]
    nq = ws[16][0]
    if not fresh:
        evaluate(data, P, forces, FT, idx, mode, t, y, dy, tf, ws)
    S[row, 0] = t
    for i in range(n):
        S[row, 1 + i] = y[i]
    for c in range(nf):
        S[row, 1 + n + c] = mode[c]
        S[row, 1 + n + nf + c] = tf[c]
    for i in range(nv):
        S[row, 1 + n + 2 * nf + i] = dy[nq + i]
    out = ws[15]
    kernels.summary_into(data, y[:nq], y[nq:nq + nv], True, out)
    if ws[16][1] == 1:
        V = spring_potential(P, y[:nv])
    else:
        gather(ws[17], y[:nq], ws[18])
        V = spring_potential(P, ws[18])
    S[row, 1 + n + 2 * nf + nv] = out[0] + out[1] + V


@nb.njit(cache=True, nogil=True)
def any_stuck(mode) -> bool:
    for c in range(mode.shape[0]):
        if mode[c] == 0:
            return True
    return False


@nb.njit(cache=True, nogil=True)
def stickslip_run(data, P, forces, FT, idx, y0, mode, t_final, rtol, atol, max_step,
                  stick_step, grid, max_switches, n_switches0, steps):
    """The run of :func:`.stickslip_events.run` from y0 and the resolved modes at t = 0;
    ``grid`` the dt_out sampling (empty: every step). Returns (S, ns, SW, nsw, code, t):
    the sample and switch tables with their row counts, and the stop code (0, or an SS_*
    code at time t); ``steps`` gets the [accepted, rejected] step counts."""
    ws = workspace(data)
    nv = ws[2].shape[0]  # (P may hold wrench rows after the nv of the speeds)
    nq = ws[16][0]
    nf = idx.shape[0]
    n = nq + nv + 3
    width = 1 + n + 2 * nf + nv + 1
    S = np.empty((256, width))
    SW = np.empty((64, 4))
    ns, nsw = 0, 0
    use_grid = grid.shape[0] > 0
    y = y0.copy()
    K = np.empty((7, n))
    R = np.empty((5, n))
    ys, y1, err, yd = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    dy, tf, tf1 = np.empty(n), np.zeros(nf), np.zeros(nf)
    evk, evc = np.empty(2 * nf, np.int64), np.empty(2 * nf, np.int64)
    g_old, g_new, g1 = np.empty(2 * nf), np.empty(2 * nf), np.empty(1)
    cand, forced = np.zeros(nf, np.bool_), np.zeros(nf, np.bool_)
    eps = np.finfo(np.float64).eps
    t = 0.0
    gi = 0
    # the segment's start: k1, events and their values
    if not evaluate(data, P, forces, FT, idx, mode, t, y, K[0], tf, ws):
        return S, ns, SW, nsw, SS_KERNEL, t
    ne = segment_events(mode, evk, evc)
    event_values(data, P, forces, FT, idx, mode, t, y, evk, evc, ne, g_old, dy, tf, ws, False)
    # the starting step (stickslip_events.initial_step)
    d0, d1 = 0.0, 0.0
    for i in range(nq + nv):
        sc = atol + rtol * abs(y[i])
        d0 += (y[i] / sc) ** 2
        d1 += (K[0, i] / sc) ** 2
    d0, d1 = np.sqrt(d0 / (nq + nv)), np.sqrt(d1 / (nq + nv))
    h = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    hmax = min(max_step, stick_step) if any_stuck(mode) else max_step
    h = min(h, t_final, hmax)
    if not use_grid:
        put_sample(data, P, forces, FT, idx, S, ns, t, y, mode, dy, tf, ws, False)
        ns += 1
    t_seg, same_time = t, 0
    while t < t_final:
        h = min(h, t_final - t)
        if h <= 4 * eps * max(1.0, t_final):
            break
        if h < 1e-14 * max(1.0, abs(t)):
            return S, ns, SW, nsw, SS_COLLAPSE, t
        # the Dormand–Prince step (stickslip_events.dopri_step)
        ok = True
        for i in range(1, 7):
            for m in range(n):
                s = 0.0
                for j in range(i):
                    if A[i, j] != 0.0:
                        s += A[i, j] * K[j, m]
                ys[m] = y[m] + h * s
            ok &= evaluate(data, P, forces, FT, idx, mode, t + C[i] * h, ys, K[i], tf, ws)
        # the last stage is at (t + h, y1) (its a-row is b): its forces serve the events
        # and the sample at the step's end
        tf1[:] = tf
        for m in range(n):
            s, e = 0.0, 0.0
            for j in range(7):
                if B[j] != 0.0:
                    s += B[j] * K[j, m]
                if E[j] != 0.0:
                    e += E[j] * K[j, m]
            y1[m] = y[m] + h * s
            err[m] = h * e
        en = 0.0
        for m in range(nq + nv):
            sc = atol + rtol * max(abs(y[m]), abs(y1[m]))
            en += (err[m] / sc) ** 2
        en = np.sqrt(en / (nq + nv))
        if not np.isfinite(en) or not ok:
            en = np.inf
        fac = 0.9 * en ** -0.2 if en > 0 else 10.0
        if en > 1.0:
            h *= max(0.2, fac)
            steps[1] += 1
            continue
        steps[0] += 1
        t1 = t_final if h >= t_final - t else t + h
        for m in range(n):
            if not np.isfinite(y1[m]):
                return S, ns, SW, nsw, SS_NOT_FINITE, t1
        # the dense output's coefficients (stickslip_events.dense)
        for m in range(n):
            R[0, m] = y[m]
            R[1, m] = y1[m] - y[m]
            R[2, m] = h * K[0, m] - R[1, m]
            R[3, m] = R[1, m] - h * K[6, m] - R[2, m]
            s = 0.0
            for j in range(7):
                if D[j] != 0.0:
                    s += D[j] * K[j, m]
            R[4, m] = h * s
        event_values(data, P, forces, FT, idx, mode, t1, y1, evk, evc, ne, g_new, dy, tf1, ws,
                     True)
        hit, t_ev = -1, t1
        for e in range(ne):
            if g_old[e] >= 0.0 and g_new[e] <= 0.0:
                r = event_root(data, P, forces, FT, idx, mode, R, t, h, e, evk, evc, t,
                               g_old[e], t1, g_new[e], yd, g1, dy, tf, ws)
                if hit < 0 or r < t_ev:
                    hit, t_ev = e, r
        t_end = t_ev if hit >= 0 else t1
        if use_grid:
            while gi < grid.shape[0] and (grid[gi] < t_end or (hit < 0 and t_end >= t_final)):
                S = grow(S, ns + 1)
                dense_at(R, t, h, grid[gi], yd)
                put_sample(data, P, forces, FT, idx, S, ns, grid[gi], yd, mode, dy, tf, ws, False)
                ns += 1
                gi += 1
        h_next = min(h * min(10.0, max(0.2, fac)), max_step)
        if hit < 0:
            t = t1
            y[:] = y1
            K[0] = K[6]
            g_old[:ne] = g_new[:ne]
            if not use_grid:
                S = grow(S, ns + 1)
                put_sample(data, P, forces, FT, idx, S, ns, t, y, mode, K[0], tf1, ws, True)
                ns += 1
            hmax = min(max_step, stick_step) if any_stuck(mode) else max_step
            h = min(h_next, hmax)
            continue
        # an event: advance to it, switch, start a new segment
        if t_ev < t1:
            dense_at(R, t, h, t_ev, y)
        else:
            y[:] = y1
        t = t_ev
        if not use_grid:
            S = grow(S, ns + 1)
            put_sample(data, P, forces, FT, idx, S, ns, t, y, mode, dy, tf, ws, False)
            ns += 1
        same_time = same_time + 1 if t - t_seg <= 1e-14 * max(1.0, abs(t_seg)) else 0
        if same_time > SAME_TIME or n_switches0 + nsw > max_switches:
            return S, ns, SW, nsw, SS_ZENO, t
        t_seg = t
        SW = grow(SW, nsw + nf + 2)
        k = evc[hit]
        cand[:] = False
        forced[:] = False
        if evk[hit] == EV_ZERO:
            y[nq + idx[k]] = FT[k, FT_SURF]
            cand[k] = True
        else:
            evaluate(data, P, forces, FT, idx, mode, t, y, dy, tf, ws)
            mode[k] = -1 if tf[k] > 0 else 1
            nsw = add_switch(SW, nsw, t, idx[k], SW_SLIP, mode[k])
            forced[k] = True
        nsw = resolve(data, P, forces, FT, idx, t, y, mode, cand, forced, SW_REVERSE, SW, nsw,
                      dy, tf, ws)
        if not evaluate(data, P, forces, FT, idx, mode, t, y, K[0], tf, ws):
            return S, ns, SW, nsw, SS_KERNEL, t
        ne = segment_events(mode, evk, evc)
        event_values(data, P, forces, FT, idx, mode, t, y, evk, evc, ne, g_old, dy, tf, ws, False)
        if not use_grid:
            S = grow(S, ns + 1)
            put_sample(data, P, forces, FT, idx, S, ns, t, y, mode, dy, tf, ws, False)
            ns += 1
        hmax = min(max_step, stick_step) if any_stuck(mode) else max_step
        h = min(h_next, hmax)
    if use_grid:
        while gi < grid.shape[0]:
            S = grow(S, ns + 1)
            put_sample(data, P, forces, FT, idx, S, ns, grid[gi], y, mode, dy, tf, ws, False)
            ns += 1
            gi += 1
    return S, ns, SW, nsw, 0, t


@nb.njit(cache=True, nogil=True)
def start_modes(data, P, forces, FT, idx, y0, mode) -> int:
    """mode ← the modes at t = 0 as :func:`.stickslip.simulate_stick_slip` resolves them
    (each joint sliding the way its relative speed points; those at exactly 0 candidates
    to stick, :func:`resolve`, a slip their arrival); returns the number of switches that
    made (:func:`stickslip_run`'s ``n_switches0``). One run's start in
    ``simulate_batch(method="stickslip")``."""
    ws = workspace(data)
    nq = ws[16][0]
    nf = idx.shape[0]
    cand = np.zeros(nf, np.bool_)
    some = False
    for k in range(nf):
        w = y0[nq + idx[k]] - FT[k, FT_SURF]
        mode[k] = 1 if w > 0.0 else (-1 if w < 0.0 else 0)
        cand[k] = w == 0.0
        some |= cand[k]
    if not some:
        return 0
    return resolve(data, P, forces, FT, idx, 0.0, y0, mode, cand, np.zeros(nf, np.bool_),
                   SW_SLIP, np.empty((nf + 1, 4)), 0, np.empty(y0.shape[0]), np.zeros(nf),
                   ws)


def joint_not_taken(model: Model):
    """The first joint of ``model`` the loop cannot move (it takes additive joints and
    ball, free and planar ones), or None."""
    for b in model.bodies:
        if not (b.joint.chart_is_additive or type(b.joint) in (Spherical, Free, Planar)):
            return b.joint
    return None


def applies(pb) -> bool:
    """Whether the compiled loop takes this problem (module doc): a Model whose joints are
    additive or ball, free and planar ones, exact Stribeck laws, no ``tau`` function,
    force elements with rows."""
    model = getattr(pb.sys, "model", None)
    if pb.tau is not None or not isinstance(model, Model):
        return False
    if joint_not_taken(model) is not None:
        return False
    return all(type(law) is Stribeck and law.smoothing is None for law in pb.laws)


def compiled_run(pb, q0, v0, mode, switches: list, t_final: float, rtol: float, atol: float,
                 max_step: float, stick_step: float, grid, max_switches: int):
    """The compiled run of :class:`.stickslip._Problem` ``pb`` from (q0, v0) and the modes
    resolved at t = 0 (their switches in ``switches``): a Trajectory, or None where the
    loop does not apply (:func:`applies`) or numba cannot compile it."""
    if not applies(pb):
        return None
    from ..dynamics.flat import flatten

    model = pb.sys.model
    P, why = force_rows(model, [f for f in pb.forces], friction=True, wrenches=True)
    if why is not None:
        return None
    FT = np.zeros((len(pb.idx), 13))
    for c, law in enumerate(pb.laws):
        FT[c, [FT_FC, FT_FS, FT_VS, FT_DELTA, FT_FV]] = (law.Fc, law.Fs, law.vs, law.delta,
                                                         law.Fv)
        FT[c, FT_SURF] = pb.vb[c]
    y0 = np.concatenate([q0, v0, [0.0, 0.0, 0.0]])
    g = np.empty(0) if grid is None else np.asarray(grid, float)
    steps = np.zeros(2, np.int64)

    def run():
        return stickslip_run(flatten(model).data, P, has_forces(P), FT,
                             np.asarray(pb.idx, np.int64), y0, mode.astype(np.int64),
                             float(t_final), float(rtol), float(atol), float(max_step),
                             float(stick_step), g, int(max_switches), len(switches), steps)

    out = compiled_or_none("stickslip", run)
    if out is None:
        return None
    S, ns, SW, nsw, code, t_stop = out
    if code:
        why = {SS_NOT_FINITE: "state not finite",
               SS_KERNEL: "the dynamics kernel refused the state (or M is not positive "
                          "definite)",
               SS_COLLAPSE: "step size collapsed",
               SS_ZENO: f"{len(switches) + nsw} mode switches without progress (Zeno "
                        "behaviour or a chattering contact)"}[int(code)]
        raise SolverError(f"friction simulate: {why} at t={t_stop:.9g}")
    for t, j, kind, d in SW[:nsw]:
        switches.append(Switch(float(t), int(j), SWITCH_KINDS[int(kind)], int(d)))
    S = S[:ns]
    n, nf, nv = y0.size, len(pb.idx), pb.nv
    return pb.record(S[:, 0], S[:, 1:1 + n], S[:, 1 + n:1 + n + nf].astype(int), switches,
                     S[:, 1 + n + nf:1 + n + 2 * nf], S[:, 1 + n + 2 * nf:1 + n + 2 * nf + nv],
                     S[:, 1 + n + 2 * nf + nv], steps=steps.tolist(), compiled=True)
