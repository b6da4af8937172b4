"""The event-driven stick–slip run on kanedyn's own Dormand–Prince 5(4): the readable
reference of the compiled loop (:mod:`.stickslip_compiled`).

:func:`~.stickslip.simulate_stick_slip` integrates each segment of constant modes (the
partitioned dynamics of its module doc: stuck joints' v̇ = 0, the held force λ from
M_SF v̇_F − b_S) by solve_ivp; its step-size control and root finding are scipy's and
cannot be compiled. This module is the same simulation with an integrator written out, so
that the compiled loop can be equal to it step for step:

- the step: Dormand–Prince 5(4) (Dormand & Prince 1980; Hairer, Nørsett & Wanner,
  *Solving ODEs I*, 2nd ed., II.4–II.6), the tableau of :mod:`kanedyn.integrators.dopri5`,
  FSAL, on y = (q, v, W_f, W_other, D) with q̇ = the system's ``q_dot(q, v)`` (q̇ = v on
  additive coordinates; on a Model with ball, free or planar joints W(q) v, each joint's
  ``kinematic_map``: a quaternion is integrated in q itself by ½ q ⊗ (0, ω), not by
  q ⊕ ξ on the manifold, so its norm stays 1 to the tolerance, not to round-off, and is
  not renormalised; the dynamics take its rotation normalised). The error is the RMS
  of err_i / (atol + rtol max(|y_i|, |y1_i|)) over q and v (the works follow, they do not
  steer); a step with norm ≤ 1 is accepted, the next is h·min(10, max(0.2, 0.9 en^-1/5)),
  bounded by ``max_step`` and, while a joint is stuck, by ``stick_step``;
- the events: each segment's event functions (:meth:`~.stickslip._Problem.events`: a
  sliding joint's w·d, a stuck joint's Fs,− − λ and λ + Fs,+) at the ends of every
  accepted step; a function that goes from ≥ 0 to ≤ 0 (solve_ivp's rule for direction
  −1) has a root in the step, found on the 4th-order dense output (Hairer's DOPRI5
  contd5) by the Illinois method (Dowell & Jarratt, BIT 11, 1971: regula falsi whose
  retained end's value is halved when it is kept twice) to |Δt| ≤ 4 eps (1 + |t|), the
  state then taken at the bracket's end past the root. The earliest root of the step ends
  the segment (ties: the first event of the list, as solve_ivp);
- at the event, exactly what the solve_ivp path does: a joint reaching w = 0 gets
  v_j = v_belt exactly, a joint whose λ reached a bound is released (d = −sgn λ), and the
  modes are re-solved by :meth:`~.stickslip._Problem.resolve` (enumeration up to
  ``ENUMERATE`` joints, then the sequential rule). The next segment starts with the step
  size the control proposed, and k1 = f(t, y) in the new modes.

Stuck joints' v̇ is exactly 0, so every stage, the step and the dense output leave their
speeds at v_belt to the last bit, and their q at q + v_belt t (unchanged on a still
surface). With ``grid`` (the dt_out sampling) the states at grid points g with
t_step ≤ g < t_step + h are the dense output of that step (the points at or past t_final
that of the last step); without it, every segment's start and every accepted step's end.
"""

from __future__ import annotations

import numpy as np

from ..errors import SolverError
from ..integrators.dopri5 import A as _A
from ..integrators.dopri5 import B, C, D, E
from .trajectory import Switch

#: the DOPRI5 stage coefficients a_ij as a 7×7 array (row i: stage i's weights)
A = np.zeros((7, 7))
for _i, _row in enumerate(_A):
    A[_i, :len(_row)] = _row

#: the root finder's relative tolerance in t (scipy's brentq in solve_ivp: 4 eps)
ROOT_TOL = 4.0 * np.finfo(float).eps
#: the root finder's iteration cap (Illinois converges superlinearly: ~10 are used)
ROOT_ITERATIONS = 200
#: at most this many event points at one time (no progress) before it counts as Zeno
SAME_TIME = 20


def initial_step(f0, y, rtol: float, atol: float, n: int) -> float:
    """Hairer's starting step (Solving ODEs I, II.4): 0.01 ‖y‖/‖f‖ in the weighted RMS
    norm over the first n entries (q, v), or 1e-6 when either is below 1e-5."""
    sc = atol + rtol * np.abs(y[:n])
    d0 = np.sqrt(np.mean((y[:n] / sc) ** 2))
    d1 = np.sqrt(np.mean((f0[:n] / sc) ** 2))
    return 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1


def dopri_step(f, t: float, y, k1, h: float):
    """One Dormand–Prince 5(4) step: (y1, err, K) with K the seven stage rates (K[6] =
    f(t + h, y1), the next step's k1)."""
    K = [k1]
    for i in range(1, 7):
        s = np.zeros_like(y)
        for j in range(i):
            if A[i, j] != 0.0:
                s += A[i, j] * K[j]
        K.append(f(t + C[i] * h, y + h * s))
    s = np.zeros_like(y)
    for j in range(7):
        if B[j] != 0.0:
            s += B[j] * K[j]
    y1 = y + h * s
    e = np.zeros_like(y)
    for j in range(7):
        if E[j] != 0.0:
            e += E[j] * K[j]
    return y1, h * e, K


def error_norm(err, y, y1, rtol: float, atol: float, n: int) -> float:
    """RMS of err_i / (atol + rtol max(|y_i|, |y1_i|)) over the first n entries."""
    sc = atol + rtol * np.maximum(np.abs(y[:n]), np.abs(y1[:n]))
    en = float(np.sqrt(np.mean((err[:n] / sc) ** 2)))
    return en if np.isfinite(en) else np.inf


def dense(y, y1, K, h: float):
    """The coefficients (r1..r5) of the step's 4th-order continuous extension (contd5)."""
    r2 = y1 - y
    r3 = h * K[0] - r2
    r4 = r2 - h * K[6] - r3
    r5 = np.zeros_like(y)
    for j in range(7):
        if D[j] != 0.0:
            r5 += D[j] * K[j]
    return y, r2, r3, r4, h * r5


def dense_at(R, t0: float, h: float, t: float):
    """y(t) = r1 + θ (r2 + (1 − θ)(r3 + θ (r4 + (1 − θ) r5))), θ = (t − t0)/h."""
    th = (t - t0) / h
    r1, r2, r3, r4, r5 = R
    return r1 + th * (r2 + (1.0 - th) * (r3 + th * (r4 + (1.0 - th) * r5)))


def event_root(g, lo: float, glo: float, hi: float, ghi: float) -> float:
    """A root of g in [lo, hi] with g(lo) ≥ 0 ≥ g(hi), by the Illinois method; the end of
    the final bracket past the root (g ≤ 0), or lo when g(lo) = 0."""
    if glo == 0.0:
        return lo
    tol = ROOT_TOL * (1.0 + abs(hi))
    kept = 0  # +1: lo was kept last time, −1: hi was
    for _ in range(ROOT_ITERATIONS):
        if hi - lo <= tol or ghi == 0.0:
            break
        c = hi - ghi * (hi - lo) / (ghi - glo)
        if not lo < c < hi:
            c = 0.5 * (lo + hi)
        gc = g(c)
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


def earliest_event(events, g_old, g_new, R, t: float, h: float, t1: float):
    """(index, time) of the first root in the step [t, t1] among the events that go from
    ≥ 0 to ≤ 0 over it (ties: the first of the list), or (−1, t1) if none does."""
    hit, t_ev = -1, t1
    for i, (a, b) in enumerate(zip(g_old, g_new, strict=True)):
        if a >= 0.0 and b <= 0.0:
            r = event_root(lambda tt, e=events[i]: e(tt, dense_at(R, t, h, tt)), t, a, t1, b)
            if hit < 0 or r < t_ev:
                hit, t_ev = i, r
    return hit, t_ev


def apply_events(pb, t: float, y, mode, switches: list, fired) -> None:
    """The switches of the events ``fired`` ([(friction joint, "zero" | "break")]) at
    (t, y), in place: a joint reaching w = 0 gets v_j = v_belt exactly and is a candidate
    to stick, a joint whose held force reached a bound slides the way the load pushes
    (d = −sgn λ); then the modes of all joints at w = 0 are re-solved
    (:meth:`~.stickslip._Problem.resolve`, the released ones kept sliding)."""
    stick, release = [], []
    for k, what in fired:
        if what == "zero":
            y[pb.nq + pb.idx[k]] = pb.vb[k]
            stick.append(k)
        else:
            release.append(k)
    for k in release:
        lam = pb.evaluate(t, y, mode)[2][k]
        mode[k] = -1 if lam > 0 else 1
        switches.append(Switch(t, pb.idx[k], "slip", int(mode[k])))
    pb.resolve(t, y, mode, switches, stick, forced=release)


def check_progress(t: float, t_seg: float, same_time: int, switches: list,
                   max_switches: int) -> int:
    """The count of events without progress in t, raised past ``SAME_TIME`` (or past
    ``max_switches`` switches) as a SolverError: Zeno behaviour or chattering."""
    same_time = same_time + 1 if t - t_seg <= 1e-14 * max(1.0, abs(t_seg)) else 0
    if same_time > SAME_TIME or len(switches) > max_switches:
        raise SolverError(
            f"friction simulate: {len(switches)} mode switches, the last ones at "
            f"t={t:.9g} without progress (Zeno behaviour or a chattering contact)")
    return same_time


class Segment:
    """A stretch of constant modes: its right-hand side, its events (and what each
    means) and their values at its start."""

    def __init__(self, pb, mode, t: float, y):
        m = mode.copy()
        self.f = lambda tt, yy: pb.rhs(tt, yy, m)
        self.events, self.meta = pb.events(m)
        self.k1 = self.f(t, y)
        self.g = [e(t, y) for e in self.events]
        self.stuck = any(pb.exact[k] and m[k] == 0 for k in range(len(m)))


def run(pb, y, mode, switches: list, t_final: float, rtol: float, atol: float,
        max_step: float, stick_step: float, grid, max_switches: int):
    """The run of the module doc from the state ``y`` (pb's layout, no LuGre states) and
    the resolved modes ``mode`` at t = 0: (T, Y, MODE, steps), the samples (for
    pb.assemble) and [accepted, rejected] step counts; switches are appended to
    ``switches``."""
    n = pb.nq + pb.nv
    T, Y, MODE = [], [], []

    def sample(t, yy):
        T.append(t)
        Y.append(yy.copy())
        MODE.append(mode.copy())

    t, gi, steps = 0.0, 0, [0, 0]  # steps: accepted, rejected
    seg = Segment(pb, mode, t, y)
    k1 = seg.k1
    h = min(initial_step(k1, y, rtol, atol, n), t_final,
            min(max_step, stick_step) if seg.stuck else max_step)
    if grid is None:
        sample(t, y)
    t_seg, same_time = t, 0
    while t < t_final:
        h = min(h, t_final - t)
        if h <= 4 * np.finfo(float).eps * max(1.0, t_final):
            break
        if h < 1e-14 * max(1.0, abs(t)):
            raise SolverError(f"stickslip: step size collapsed to {h:.3g} at t = {t:.9g}")
        y1, err, K = dopri_step(seg.f, t, y, k1, h)
        en = error_norm(err, y, y1, rtol, atol, n)
        fac = 0.9 * en ** -0.2 if en > 0 else 10.0
        if en > 1.0:
            h *= max(0.2, fac)
            steps[1] += 1
            continue
        steps[0] += 1
        t1 = t_final if h >= t_final - t else t + h
        if not np.all(np.isfinite(y1)):
            raise SolverError(f"stickslip: state not finite at t={t1:.6g}")
        R = dense(y, y1, K, h)
        g_new = [e(t1, y1) for e in seg.events]
        hit, t_ev = earliest_event(seg.events, seg.g, g_new, R, t, h, t1)
        if grid is not None:  # the grid points of this step (all the rest at the end)
            while gi < grid.size and (grid[gi] < t_ev or (hit < 0 and t1 >= t_final)):
                sample(grid[gi], dense_at(R, t, h, grid[gi]))
                gi += 1
        h_next = min(h * min(10.0, max(0.2, fac)), max_step)
        if hit < 0:
            t, y, k1, seg.g = t1, y1, K[6], g_new
            if grid is None:
                sample(t, y)
        else:  # an event: advance to it, switch, and start a new segment there
            y = dense_at(R, t, h, t_ev) if t_ev < t1 else y1.copy()
            t = t_ev
            if grid is None:
                sample(t, y)
            same_time = check_progress(t, t_seg, same_time, switches, max_switches)
            t_seg = t
            apply_events(pb, t, y, mode, switches, [seg.meta[hit]])
            seg = Segment(pb, mode, t, y)
            k1 = seg.k1
            if grid is None:
                sample(t, y)
        h = min(h_next, min(max_step, stick_step) if seg.stuck else max_step)
    if grid is not None:
        while gi < grid.size:  # t_final reached up to rounding before these points
            sample(grid[gi], y)
            gi += 1
    return np.array(T), np.array(Y), np.array(MODE), steps
