"""Simulation with joint friction: exact stick–slip by event-driven mode switching.

``kd.simulate(..., method="stickslip")`` (and its older name
:func:`kanedyn.friction.simulate`) runs :func:`simulate_stick_slip`; the result is a
:class:`~kanedyn.sim.Trajectory` whose ``friction`` attribute holds the friction forces,
the modes and the switches (:class:`~kanedyn.sim.trajectory.FrictionRecord`).

Each friction joint j is in one of three modes: sliding forward (+1), sliding
backward (-1) or stuck (0), with relative speed w_j = v_j - v_belt,j (the
belt, or the surface the joint rubs on, moves at a constant speed).

- Sliding, direction d: the friction is the smooth branch
  τ_f,j = -[g_d(|w_j|) d + Fv,d w_j] of the law, integrated until w_j d
  reaches 0 (an event).
- Stuck: w_j ≡ 0 is a constraint, v̇_j = 0, and the friction τ_f,j = λ_j is the
  force that holds it. With S the stuck speeds and F the others,

      M_FF v̇_F = b_F,        λ_S = M_SF v̇_F - b_S,        b = τ - h + τ_f,slip,

  (the partitioned form of M v̇ + h = τ + τ_f with v̇_S = 0). The joint stays
  stuck while -Fs,+ <= λ_j <= Fs,- and breaks free in direction d = -sgn λ_j
  when a bound is reached (an event). At every event the modes of all joints
  at w = 0 are re-solved together: up to ``ENUMERATE`` of them by trying
  every stick/forward/backward assignment (most stuck first) for one that is
  consistent — held forces within bounds, sliding joints accelerating the way
  they slide; beyond that a sequential rule (release the joint furthest
  beyond its bound, re-check the rest).

Because v̇_S is set to exactly zero, a stuck joint does not move at all: no
creep, to the last bit.

With exact laws only, the segments are integrated by kanedyn's Dormand–Prince 5(4) with
events on its dense output: the whole run compiled (:mod:`.stickslip_compiled`) on a
Model of 1-DOF additive joints, also with ball, free and planar joints (q integrated in
q itself with q̇ = W(q) v, as the reference does), with exact Stribeck laws and compiled
force rows, else (and with
``compiled=False``) its readable reference :mod:`.stickslip_events`, which the compiled
loop equals step for step. A solve_ivp ``method`` runs the segments by solve_ivp (below),
as do the cases outside the compiled one by default. Smooth laws (smoothed sgn,
Tanh/Simscape forms) and LuGre need no modes; they are integrated as an ordinary ODE
(LSODA) in the same function so that all treatments run on the same footing.

The energy budget is integrated alongside: ``friction_work`` = ∫ τ_fᵀ v dt
(the friction's work on the mechanism, which is what changes its energy),
``other_work`` = ∫ (τ + τ_nc)ᵀ v dt for the applied and non-conservative
forces, and ``dissipated`` = -∫ τ_fᵀ w dt >= 0 (the heat in the contact).
E(t) - E(0) = friction_work + other_work to integration accuracy.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import ArrayLike

from ..errors import FrictionError, SolverError
from ..forces.base import ForceElement
from ..friction._joints import joint_speed_index
from ..friction.karnopp import Karnopp
from ..friction.laws import FrictionLaw
from ..friction.lugre import LuGre
from . import stickslip_events
from .friction_joints import checked_state, friction_system
from .trajectory import FrictionRecord, Switch, Trajectory

#: up to this many joints at zero speed at once, modes are found by enumeration
ENUMERATE = 4


class _Problem:
    def __init__(self, system, joints, tau, forces, surface_velocity):
        self.sys = friction_system(system)
        if not joints:
            raise FrictionError("simulate: no friction joints given")
        self.idx: list[int] = []
        self.laws: list = []
        for name, law in joints.items():
            if isinstance(law, Karnopp):
                raise FrictionError(
                    f"joint {name!r}: {law!r} is a Karnopp band, a fixed-step treatment of "
                    "v = 0 (method='time_stepping'); the event-driven simulator holds a stuck "
                    f"joint exactly with the law itself: give {law.law!r}")
            if not isinstance(law, (FrictionLaw, LuGre)):
                raise FrictionError(f"joint {name!r}: {law!r} is not a friction law (a "
                                    "Stribeck-type law of kanedyn.friction, or LuGre)")
            j = joint_speed_index(self.sys, name)
            if j in self.idx:
                raise FrictionError(f"joint {name!r} has two friction laws")
            self.idx.append(j)
            self.laws.append(law)
        sv = surface_velocity or {}
        self.vb = np.zeros(len(self.idx))
        for name, val in sv.items():
            j = joint_speed_index(self.sys, name)
            if j not in self.idx:
                raise FrictionError(f"surface velocity given for {name!r}, which has no friction")
            self.vb[self.idx.index(j)] = float(val)
        self.tau = tau
        self.forces: list[ForceElement] = [f.bind(self.sys) for f in (forces or ())]
        for f in self.forces:
            if f.discontinuous:
                hint = (f" — pass {{{f.joint!r}: {f.law!r}}} in joints"
                        if hasattr(f, "law") else "")
                raise FrictionError(
                    f"force element {f!r} is discontinuous in v; exact friction goes in "
                    f"joints=..., where its stick–slip is resolved{hint}")
        self.exact = [isinstance(law, FrictionLaw) and law.discontinuous for law in self.laws]
        self.lugre = [k for k, law in enumerate(self.laws) if isinstance(law, LuGre)]
        self.nq, self.nv, self.nz = self.sys.nq, self.sys.nv, len(self.lugre)

    # --- state layout: q, v, z (LuGre), W_f, W_other, D -----------------------
    def split(self, y):
        nq, nv, nz = self.nq, self.nv, self.nz
        return y[:nq], y[nq:nq + nv], y[nq + nv:nq + nv + nz]

    def applied(self, t, q, v):
        """(τ that does work counted in other_work, τ of conservative elements)."""
        tau_nc = np.zeros(self.nv)
        tau_c = np.zeros(self.nv)
        if self.tau is not None:
            tau_nc += np.asarray(self.tau(t, q, v), dtype=float).reshape(self.nv)
        for f in self.forces:
            g = np.asarray(f.generalized_force(t, q, v), dtype=float)
            if f.conservative:
                tau_c += g
            else:
                tau_nc += g
        return tau_nc, tau_c

    def energy(self, q, v):
        return self.sys.energy(q, v) + sum(f.potential(q) for f in self.forces if f.conservative)

    def evaluate(self, t, y, mode):
        """(v̇, ż, τ_f at the friction joints, τ_nc) for the given modes."""
        q, v, z = self.split(y)
        M = np.asarray(self.sys.mass_matrix(q), dtype=float)
        h = np.asarray(self.sys.nonlinear_effects(q, v), dtype=float)
        tau_nc, tau_c = self.applied(t, q, v)
        b = tau_nc + tau_c - h
        tf = np.zeros(len(self.idx))
        zdot = np.zeros(self.nz)
        stuck = []
        for k, (j, law) in enumerate(zip(self.idx, self.laws, strict=True)):
            w = v[j] - self.vb[k]
            if isinstance(law, LuGre):
                kz = self.lugre.index(k)
                zdot[kz] = law.z_dot(z[kz], w)
                tf[k] = -float(law.force(z[kz], w))
            elif self.exact[k]:
                d = mode[k]
                if d == 0:
                    stuck.append(k)
                    continue
                side = law.direction(d)
                tf[k] = -(float(side.curve(abs(w))) * d + side.Fv * w)
            else:
                tf[k] = -float(law(w))
            b[j] += tf[k]
        if not stuck:
            vdot = np.linalg.solve(M, b)
        else:
            S = [self.idx[k] for k in stuck]
            F = [i for i in range(self.nv) if i not in S]
            vdot = np.zeros(self.nv)
            if F:
                vdot[F] = np.linalg.solve(M[np.ix_(F, F)], b[F])
            lam = M[np.ix_(S, F)] @ vdot[F] - b[S] if F else -b[S]
            tf[stuck] = lam
        return vdot, zdot, tf, tau_nc

    def rhs(self, t, y, mode):
        q, v, _ = self.split(y)
        vdot, zdot, tf, tau_nc = self.evaluate(t, y, mode)
        w = v[self.idx] - self.vb
        qd = np.asarray(self.sys.q_dot(q, v), dtype=float)
        return np.concatenate([qd, vdot, zdot,
                               [tf @ v[self.idx], tau_nc @ v, -(tf @ w)]])

    def holding_limits(self, k):
        law = self.laws[k]
        return law.direction(+1).static_level, law.direction(-1).static_level

    def events(self, mode):
        """The terminal events of a segment with these modes, and what each means:
        a sliding joint's w·d reaching 0 ("zero"), a stuck joint's holding force
        reaching either bound ("break")."""
        events, meta = [], []
        for k in range(len(self.idx)):
            if not self.exact[k]:
                continue
            if mode[k] != 0:
                def ev(tt, yy, off=self.nq + self.idx[k], d=mode[k], vb=self.vb[k]):
                    return (yy[off] - vb) * d
                new = [(ev, "zero")]
            else:
                fp, fn = self.holding_limits(k)
                m = mode.copy()

                def ev_n(tt, yy, k=k, fn=fn, m=m):
                    return fn - self.evaluate(tt, yy, m)[2][k]

                def ev_p(tt, yy, k=k, fp=fp, m=m):
                    return self.evaluate(tt, yy, m)[2][k] + fp
                new = [(ev_n, "break"), (ev_p, "break")]
            for e, what in new:
                e.terminal, e.direction = True, -1
                events.append(e)
                meta.append((k, what))
        return events, meta

    def assemble(self, t, Y, modes, switches, **stats) -> Trajectory:
        """The trajectory from the stacked states, with forces, v̇ and energy recomputed
        at each output time in the mode that was active there."""
        n = len(t)
        fr = np.empty((n, len(self.idx)))
        E = np.empty(n)
        A = np.empty((n, self.nv))
        for i in range(n):
            A[i], _, fr[i], _ = self.evaluate(t[i], Y[i], modes[i])
            q, v, _ = self.split(Y[i])
            E[i] = self.energy(q, v)
        return self.record(t, Y, modes, switches, fr, A, E, **stats)

    def record(self, t, Y, modes, switches, fr, A, E, **stats) -> Trajectory:
        """The trajectory from the stacked states Y, the segments' modes and the friction
        forces fr, accelerations A and energies E at the output times; ``stats`` go to
        its stats beside the switch times."""
        o = self.nq + self.nv + self.nz
        w = Y[:, [self.nq + j for j in self.idx]] - self.vb
        exact = np.array(self.exact)[None, :]
        mode = np.where(exact, modes, np.sign(w)).astype(int)
        record = FrictionRecord(
            joints=list(self.idx), force=fr, mode=mode, stuck=exact & (mode == 0),
            work=Y[:, o], other_work=Y[:, o + 1], dissipated=Y[:, o + 2],
            z=Y[:, self.nq + self.nv:o], switches=switches)
        # W_nc = friction work + other work, so that the budget E − E₀ − W_nc closes
        return Trajectory(t, Y[:, :self.nq], Y[:, self.nq:self.nq + self.nv],
                          Y[:, o] + Y[:, o + 1],
                          stats={"switch_times": record.switch_times(), **stats},
                          method="stickslip", vdot=A, energy=E, system=self.sys,
                          friction=record)

    def consistent(self, t, y, mode, zero) -> bool:
        """Whether the modes of the joints ``zero`` (all at w = 0) are consistent:
        stuck ones held within their bounds, sliding ones accelerating the way they
        slide (the friction then is the ∓Fs of that direction)."""
        vdot, _, tf, _ = self.evaluate(t, y, mode)
        for k in zero:
            if mode[k] == 0:
                fp, fn = self.holding_limits(k)
                if not -fp <= tf[k] <= fn:
                    return False
            else:
                scale = 1e-12 * (1.0 + np.max(np.abs(vdot)))
                if mode[k] * vdot[self.idx[k]] < -scale:
                    return False
        return True

    def resolve(self, t, y, mode, switches, candidates, arrival_kind="reverse",
                forced=()):
        """Modes for the joints at w = 0: the candidates that just arrived there and the
        joints already stuck (``forced`` ones were just released and keep sliding).

        Up to ``ENUMERATE`` such joints, every assignment in {stick, +, -} is tried,
        those with the most stuck joints first, and the first consistent one is taken
        (a complementarity solve by enumeration). Beyond that, or if none is
        consistent, a sequential rule: the joint furthest beyond its bound is released
        first and the rest re-checked."""
        prev = mode.copy()
        zero = [k for k in range(len(self.idx)) if self.exact[k] and k not in forced
                and (mode[k] == 0 or k in candidates)]
        for k in candidates:
            mode[k] = 0
        done = False
        if 0 < len(zero) <= ENUMERATE:
            combos = sorted(itertools.product((0, 1, -1), repeat=len(zero)),
                            key=lambda c: sum(x != 0 for x in c))
            for combo in combos:
                trial = mode.copy()
                trial[zero] = combo
                if self.consistent(t, y, trial, zero):
                    mode[:] = trial
                    done = True
                    break
        if not done:
            self._resolve_sequential(t, y, mode)
        for k in zero:
            if mode[k] == 0 and (k in candidates or prev[k] != 0):
                switches.append(Switch(t, self.idx[k], "stick", 0))
            elif mode[k] != 0:
                kind = arrival_kind if k in candidates else "slip"
                switches.append(Switch(t, self.idx[k], kind, int(mode[k])))

    def _resolve_sequential(self, t, y, mode):
        for _ in range(len(self.idx) + 1):
            stuck = [k for k in range(len(self.idx)) if self.exact[k] and mode[k] == 0]
            if not stuck:
                return
            _, _, tf, _ = self.evaluate(t, y, mode)
            worst, excess = None, 0.0
            for k in stuck:
                fp, fn = self.holding_limits(k)
                e = max(tf[k] - fn, -fp - tf[k])
                if e > excess:
                    worst, excess = k, e
            if worst is None:
                return
            mode[worst] = -1 if tf[worst] > 0 else 1


def event_settings(t_final: float, rtol: float, atol: float, max_step: float,
                   stick_step: float | None, max_switches: int) -> tuple:
    """(rtol, atol, max_step, stick_step, max_switches) of an event-driven run, checked:
    ``stick_step`` None is t_final/1000, and it must be > 0 (:func:`simulate_stick_slip`'s
    and the batched stickslip's of :mod:`.batch`)."""
    stick_step = t_final / 1000.0 if stick_step is None else float(stick_step)
    if not stick_step > 0:
        raise FrictionError(f"stick_step={stick_step} must be > 0")
    return float(rtol), float(atol), float(max_step), stick_step, int(max_switches)


def simulate_stick_slip(system, q0: ArrayLike, v0: ArrayLike, t_final: float, joints: dict,
                        tau=None, forces=(), surface_velocity: dict | None = None,
                        method: str | None = None, rtol: float = 1e-10, atol: float = 1e-12,
                        max_step: float = np.inf, dt_out: float | None = None,
                        stick_step: float | None = None,
                        max_switches: int = 100_000, compiled: bool = True) -> Trajectory:
    """Simulate a Model (or any system of the protocol) with friction on 1-DOF joints.

    ``joints`` maps a joint (name, or speed index for a non-Model system) to a
    friction law: an exact law (sgn) gets event-driven stick–slip, a smoothed
    or continuous law and :class:`~kanedyn.friction.LuGre` are integrated as
    they are. ``tau(t, q, v)`` is an applied generalized force, ``forces`` more
    :class:`~kanedyn.forces.base.ForceElement` s, ``surface_velocity`` the
    constant speed of the surface each joint rubs on (default 0).

    ``method``: None (the default) runs kanedyn's own Dormand–Prince 5(4) with events on
    its dense output where every law is exact and the case has a compiled form (a Model
    of 1-DOF additive joints, ball, free and planar ones, exact
    :class:`~kanedyn.friction.Stribeck` laws, force
    elements with compiled rows, no ``tau`` function): the compiled loop of
    :mod:`.stickslip_compiled`, or with ``compiled=False`` its Python reference
    (:mod:`.stickslip_events`, which also takes ``tau`` and the other exact laws). Other
    exact cases run each segment by solve_ivp's "DOP853"; with a smoothed law or LuGre,
    solve_ivp's "LSODA" (which switches to BDF
    when it detects stiffness — LuGre's bristle rate σ0|v|/g makes the problem very
    stiff, and Radau with its finite-difference Jacobian fails on it). A solve_ivp method
    name ("DOP853", "LSODA", ...) runs each segment by solve_ivp instead. A joint is stuck
    at t = 0 if its relative speed is exactly 0 and the load can be held.

    While a joint is stuck the state may not move at all, so the step-size
    control sees nothing and only the time dependence of the load can end the
    phase; ``stick_step`` (default t_final/1000) bounds the step then, so that
    a break-away is not stepped over. (Events are found from sign changes
    between steps, as in solve_ivp: two crossings within one step are missed.)

    Returns a :class:`~kanedyn.sim.Trajectory` with ``work_nc`` = friction work + other
    work (so its ``budget`` is E − E₀ − W_friction − W_other) and the friction's side in
    ``traj.friction`` (:class:`~kanedyn.sim.trajectory.FrictionRecord`).
    """
    from scipy.integrate import solve_ivp  # (here: ~1 s of `import kanedyn` at top)
    pb = _Problem(system, joints, tau, forces, surface_velocity)
    q0 = checked_state(q0, pb.nq, "q0")
    v0 = checked_state(v0, pb.nv, "v0")
    t_final = float(t_final)
    if not np.isfinite(t_final) or t_final <= 0:
        raise FrictionError(f"t_final={t_final} must be finite and > 0")
    own = method is None and all(pb.exact)  # kanedyn's DOPRI5 with events (module doc)
    if method is None:
        method = "DOP853" if own else "LSODA"
    mode = np.zeros(len(pb.idx), dtype=int)
    switches: list[Switch] = []
    z0 = np.zeros(pb.nz)
    y = np.concatenate([q0, v0, z0, [0.0, 0.0, 0.0]])
    stick0 = []
    for k, j in enumerate(pb.idx):
        w = v0[j] - pb.vb[k]
        mode[k] = int(np.sign(w))
        if pb.exact[k] and w == 0.0:
            stick0.append(k)
    if stick0:
        pb.resolve(0.0, y, mode, switches, stick0, arrival_kind="slip")
    grid = None if dt_out is None else np.arange(0.0, t_final + 0.5 * dt_out, dt_out)
    rtol, atol, max_step, stick_step, max_switches = event_settings(
        t_final, rtol, atol, max_step, stick_step, max_switches)

    if own and compiled:
        from .stickslip_compiled import compiled_run

        out = compiled_run(pb, q0, v0, mode, switches, t_final, rtol, atol, max_step,
                           stick_step, grid, max_switches)
        if out is not None:
            return out
    if own and not compiled:
        T, Y, MODE, steps = stickslip_events.run(pb, y, mode, switches, t_final, rtol, atol,
                                                 max_step, stick_step, grid, max_switches)
        return pb.assemble(T, Y, MODE, switches, steps=steps, compiled=False)

    T, Y, MODE = [], [], []
    t = 0.0
    same_time = 0
    while t < t_final:
        events, meta = pb.events(mode)
        m_seg = mode.copy()
        any_stuck = any(pb.exact[k] and mode[k] == 0 for k in range(len(pb.idx)))
        hmax = min(max_step, stick_step) if any_stuck else max_step
        sol = solve_ivp(lambda tt, yy, m=m_seg: pb.rhs(tt, yy, m), (t, t_final), y, method=method,
                        rtol=rtol, atol=atol, max_step=hmax, events=events or None,
                        dense_output=grid is not None)
        if sol.status == -1:
            raise SolverError(f"friction simulate: integration failed at t={sol.t[-1]:.6g}: "
                              f"{sol.message}")
        t_end = float(sol.t[-1])
        if grid is None:
            ts, ys = sol.t, sol.y.T
        else:
            ts = grid[(grid >= t) & (grid < t_end)] if sol.status == 1 else grid[grid >= t]
            ys = sol.sol(ts).T if ts.size else np.empty((0, y.size))
        T.append(ts)
        Y.append(ys)
        MODE.append(np.repeat(m_seg[None, :], ts.size, axis=0))
        y = sol.y[:, -1].copy()
        if not np.all(np.isfinite(y)):
            raise SolverError(f"friction simulate: state not finite at t={t_end:.6g}")
        if sol.status != 1:
            break
        same_time = stickslip_events.check_progress(t_end, t, same_time, switches,
                                                    max_switches)
        t = t_end
        fired = [meta[i] for i, te in enumerate(sol.t_events) if te.size]
        stickslip_events.apply_events(pb, t, y, mode, switches, fired)

    return pb.assemble(np.concatenate(T), np.vstack(Y), np.vstack(MODE), switches)


def friction_simulate(system, q0: ArrayLike, v0: ArrayLike, t_final: float, joints: dict,
                      tau=None, forces=(), surface_velocity: dict | None = None,
                      **options) -> Trajectory:
    """``kanedyn.friction.simulate``: the event-driven stick–slip simulation of
    ``kd.simulate(..., method="stickslip")`` under its older name, with the friction laws
    given as ``joints`` ({joint name or speed index: law}). A thin name kept for the
    code that calls it (not deprecated); everything is :func:`simulate_stick_slip`'s,
    including the keyword options (``method``, ``rtol``, ``atol``, ``dt_out``, ...)."""
    return simulate_stick_slip(system, q0, v0, t_final, joints, tau, forces, surface_velocity,
                               **options)
