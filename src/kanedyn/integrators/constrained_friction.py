"""Exact stick–slip joint friction in the constrained energy–momentum step.

``kd.simulate(constrained_system, ..., method="energy_momentum" | "avf",
forces=[JointFriction(joint, Stribeck(...))])`` with an exact (unsmoothed) law: each
friction joint j is either *held* for the step or *sliding* in a direction d_j = ±1.

- A held joint is two more rows of the step (:mod:`.constrained_energy_momentum`), taken
  with the loop closures: the position row q_j − q_j(t) = 0 and its hidden row γ_j = v_j = 0.
  Their multipliers are the friction's: −λ_j is the holding torque, μ_j stops a joint that
  enters the step moving. The step ends with Δq_j = 0 and v_j' = 0 exactly: no creep.
- A sliding joint takes τ_j = −d_j c_j, c_j = g(|v_j|) + Fv |v_j| the law's level at the
  start of the step (as in :mod:`kanedyn.sim.time_stepping`): a constant force of the step.

The energy identity of the step (module doc of :mod:`.constrained_energy_momentum`, with
Φ = (g, γ) now nonzero at the start for the rows of a joint that enters moving,
γ_j(z) = v_j):

    H(z') − H(z) = Δx·F + ν·Φ(z) = Δx·F + Σ_entering μ_j v_j,

so the sliding joints' work Δq_j τ_j and the entry's μ_j v_j are the friction's work, and
E − E₀ − W_nc closes to round-off whatever the stick–slip sequence.

The active set (Moreau's conditions at the end of the step, as time_stepping's box LCP
states them): a held joint stays held while |λ_j| ≤ Fs_j (the law's static level in the
direction of the impending motion), else it slides in the direction d_j = sign λ_j in
which the other forces push it; a sliding joint whose end speed is not along d_j
(d_j v_j' ≤ 0: the friction stops it within the step) is held. One change at a time, the
largest violation first (releases before holds); a joint released in a step is not held
again in that step. At the start of a run the joints at rest are held. A held joint whose
row depends on the loop closures and the other held rows (a four-bar with one joint held
is locked whole) takes no row: it is still, by the others' rows, and its share of the
holding torque is not determined (recorded as 0).

Cost: one constrained step a trial (its Newton matrix rebuilt when the set changes);
Python steps only (the compiled loop does not take exact laws).
"""

from __future__ import annotations

import numpy as np

from ..errors import FrictionError, SolverError
from .chart import canonical_coordinates


class FrictionJoints:
    """The exact-law friction joints of a constrained run: ``spec`` a sequence of (speed
    index, q index, law) (built by ``kd.simulate`` from the JointFriction elements), their
    stick/slip state between steps and the per-step record."""

    def __init__(self, system, spec):
        rows = list(spec)
        self.idx = np.array([int(j) for j, _, _ in rows], dtype=int)
        self.iq = np.array([int(k) for _, k, _ in rows], dtype=int)
        self.laws = [law for _, _, law in rows]
        if len(set(self.idx.tolist())) != len(rows):
            raise FrictionError("friction: a joint has two friction laws")
        for j, law in zip(self.idx, self.laws, strict=True):
            if not getattr(law, "discontinuous", False):
                raise FrictionError(f"friction: the law of speed {j} is smoothed; exact "
                                    "stick–slip takes an exact law (a smoothed law is a force "
                                    "element)")
            if not 0 <= j < system.nv:
                raise FrictionError(f"friction: speed index {j} outside 0..{system.nv - 1}")
        self.held: set[int] | None = None   # positions (into idx) held at the step's start
        self.held0: set[int] = set()        # and at the run's start
        self.direction = np.zeros(len(rows), dtype=int)
        # per step: friction torque (holding torque while held), held flags, friction work
        self.force: list = []
        self.stuck: list = []
        self.work: list = []

    def level(self, c: int, d: int, speed: float) -> float:
        """c_j: the law's level for motion along d at |v| = speed."""
        law = self.laws[c].direction(d)
        s = np.array(abs(speed))
        return float(law.curve(s) + law.Fv * s)

    def static(self, c: int, d: int) -> float:
        """Fs_j for impending motion along d."""
        return float(self.laws[c].direction(d).static_level)


def _independent(method, t, q, held: list[int]) -> tuple[list[int], list[int]]:
    """Split the held joints into those that take a row and those locked by the loop
    closures and the rows before them (rank of [G; e_j] at q, in the order given)."""
    fj = method.friction
    G = method.system.constraint_matrix(t, q)[: method.system.nc]
    rows, take, locked = list(G), [], []
    r = np.linalg.matrix_rank(G) if G.size else 0
    for c in held:
        e = np.zeros(method.system.nv)
        e[fj.idx[c]] = 1.0
        trial = np.array(rows + [e])
        r1 = np.linalg.matrix_rank(trial, tol=1e-9 * max(1.0, float(np.abs(trial).max())))
        if r1 > r:
            rows.append(e)
            take.append(c)
            r = r1
        else:
            locked.append(c)
    return take, locked


def _locked(method, t, q, v, h):
    """The step of a mechanism locked whole by its held rows (nc + held = nv): it stays
    where it is and stops, ΔH = −T(q, v) is the friction's work, and λ the static
    multipliers, G_extᵀλ = F − ∇V at (t + h/2, q, v = 0): the holding torques."""
    s, n = method.system, method.system.nv
    C = canonical_coordinates(method.problem, method.chart, q)
    p0 = s.mass_matrix(q) @ v
    gx = C.gradient(np.zeros(n), np.zeros(n))[0]   # ∇_x H at p = 0: ∇V
    F = method._force(t + 0.5 * h, np.asarray(q, dtype=float), np.zeros(n))
    G = method._G(t, q, None)
    lam = np.linalg.solve(G.T, F - gx)
    work = float(method.problem.energy(q, np.zeros(n)) - method.problem.energy(q, v))
    u = np.concatenate([np.zeros(n), -p0, lam, np.zeros(method._m + method.k)])
    return u, C, p0, work, False


def step(method, t, q, v, h):
    """One constrained energy–momentum step with exact stick–slip (module doc)."""
    fj = method.friction
    n, nc, nf = method.system.nv, method.system.nc, fj.idx.size
    vj = v[fj.idx]
    if fj.held is None:  # the run's start: the joints at rest are held
        fj.held = {c for c in range(nf) if vj[c] == 0.0}
        fj.held0 = set(fj.held)
        fj.direction = np.sign(vj).astype(int)
    held = set(fj.held)
    direction = fj.direction.copy()
    released: set[int] = set()
    for _ in range(2 * nf + 2):
        take, locked = _independent(method, t, q, sorted(held))
        method._held = (None if not take else
                        (fj.idx[take], fj.iq[take], np.asarray(q, dtype=float)[fj.iq[take]]))
        method._m = nc + len(take)
        tf = np.zeros(n)
        for c in range(nf):
            if c not in held:
                tf[fj.idx[c]] = -direction[c] * fj.level(c, direction[c], vj[c])
        method._tf = tf
        if len(take) + method.system.nc == n:
            # the held rows lock the mechanism whole: Δx = 0, v' = 0, no Newton (its
            # discrete gradients would divide round-off by |Δx| → 0)
            u, C, p0, work, slow = _locked(method, t, q, v, h)
        else:
            u, C, p0, work, slow = method.attempt(t, q, v, h)
        q1, v1, _ = C.state(u[:n], p0 + u[n:2 * n])
        lam = u[2 * n + nc:2 * n + method._m]
        # the largest violation of the end-of-step conditions: releases first
        worst, change = 0.0, None
        for r, c in enumerate(take):
            d = 1 if lam[r] > 0 else -1
            over = abs(lam[r]) / fj.static(c, d) - 1.0
            if over > max(worst, 1e-12):
                worst, change = over, ("release", c, d)
        if change is None:
            for c in range(nf):
                if c not in held and c not in released and direction[c] * v1[fj.idx[c]] <= 0:
                    change = ("hold", c, 0)
                    break
        if change is None:
            break
        kind, c, d = change
        if kind == "release":
            held.discard(c)
            released.add(c)
            direction[c] = d
        else:
            held.add(c)
    else:
        raise SolverError(
            f"{method.name}: the stick–slip set did not settle at step {method._n} "
            f"(t = {t:.6g}, h = {h:.3g}; joints at speeds {fj.idx.tolist()}): reduce dt")
    q1, v1, res = method.commit(h, u, C, p0, work, slow)
    q1, v1 = np.array(q1, dtype=float), np.array(v1, dtype=float)
    force = np.zeros(nf)
    fwork = 0.0
    for r, c in enumerate(take):
        force[c] = -lam[r]
        fwork += float(u[2 * n + method._m + nc + r] * v[fj.idx[c]])
    if len(take) + nc == n:
        fwork = work  # locked whole: the kinetic energy at entry is the friction's
    for c in set(take) | set(locked):
        # held: still to the last bit (the rows hold it to Newton's tolerance)
        q1[fj.iq[c]] = q[fj.iq[c]]
        v1[fj.idx[c]] = 0.0
    for c in range(nf):
        if c not in held:
            force[c] = tf[fj.idx[c]]
            fwork += float(u[fj.idx[c]] * tf[fj.idx[c]])
    fj.held, fj.direction = held, direction
    fj.force.append(force)
    fj.stuck.append(np.array([c in held for c in range(nf)]))
    fj.work.append(fwork)
    method._held, method._m, method._tf = None, nc, None
    return q1, v1, res
