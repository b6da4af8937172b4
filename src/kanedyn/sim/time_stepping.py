"""Fixed-step simulation with joint friction, one treatment of v = 0 per joint.

All treatments share one step, semi-implicit (symplectic) Euler on the
system protocol,

    M(q) (v⁺ - v) = dt [τ(t, q, v) - h(q, v) + τ_f],     q⁺ = q ⊕ dt v⁺,

and differ only in how τ_f is found:

- a smoothed or continuous law: τ_f = -F(w) linearised in v⁺ (linearly
  implicit: (M + dt ∂F/∂v) Δv = dt(...)), because its slope Fs/ε near 0
  would make the explicit step unstable for dt > 2 m ε / Fs;
- :class:`Karnopp` (Karnopp, ASME J. Dyn. Sys. 107, 1985): outside the band
  |w| >= band the exact law; inside it the force that makes v̇_j = 0, clipped
  to ±Fs — a joint inside the band keeps its (small) velocity: it drifts;
- an exact law (sgn): a complementarity problem per step (Moreau's
  time-stepping, Moreau 1988; Jean 1999): each joint either sticks,
  w⁺_j = 0 with |τ_f,j| <= c_j, or slides with τ_f,j = -c_j sgn w⁺_j, where
  c_j = Fs while stuck and g(|w_j|) + Fv |w_j| while sliding (the level
  taken from the start of the step). Solved by projected Gauss–Seidel on
  the Delassus operator dt M⁻¹; a stuck joint's speed is then set to the
  surface speed exactly, so it does not creep.

``kd.simulate(..., method="time_stepping", dt=...)`` (and its older name
:func:`kanedyn.friction.time_stepping`) runs :func:`time_stepping`; the result is a
:class:`~kanedyn.sim.Trajectory` with the friction's side in ``traj.friction``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..errors import FrictionError, SolverError
from ..friction._joints import joint_speed_index
from ..friction.karnopp import Karnopp
from ..friction.laws import FrictionLaw
from .friction_joints import checked_state, friction_system
from .trajectory import FrictionRecord, Trajectory


def time_stepping(system, q0: ArrayLike, v0: ArrayLike, t_final: float, dt: float,
                  joints: dict, tau=None, surface_velocity: dict | None = None,
                  pgs_iterations: int = 50, pgs_tol: float = 1e-13) -> Trajectory:
    """Fixed-step simulation with friction on 1-DOF joints (see the module docstring).

    ``joints`` maps a joint to an exact law (complementarity), a smoothed law,
    or a :class:`Karnopp` band. ``tau(t, q, v)`` is the applied generalized
    force. Works are accumulated with the post-step speed v⁺, the speed the
    step moves q with. Returns a :class:`~kanedyn.sim.Trajectory` (``work_nc`` = friction
    work + work of τ, the friction's side in ``traj.friction``).
    """
    sys_ = friction_system(system)
    dt, t_final = float(dt), float(t_final)
    if not (np.isfinite(dt) and dt > 0):
        raise FrictionError(f"time_stepping: dt={dt} must be > 0")
    if not (np.isfinite(t_final) and t_final > 0):
        raise FrictionError(f"time_stepping: t_final={t_final} must be > 0")
    if not joints:
        raise FrictionError("time_stepping: no friction joints given")
    idx, items = [], []
    for name, law in joints.items():
        if not isinstance(law, (FrictionLaw, Karnopp)):
            raise FrictionError(f"joint {name!r}: {law!r} is not a friction law or Karnopp band")
        idx.append(joint_speed_index(sys_, name))
        items.append(law)
    nf = len(idx)
    vb = np.zeros(nf)
    for name, val in (surface_velocity or {}).items():
        vb[idx.index(joint_speed_index(sys_, name))] = float(val)
    kinds = ["karnopp" if isinstance(x, Karnopp) else "exact" if x.discontinuous else "smooth"
             for x in items]

    nsteps = int(round(t_final / dt))
    q = checked_state(q0, sys_.nq, "q0")
    v = checked_state(v0, sys_.nv, "v0")
    Q = np.empty((nsteps + 1, sys_.nq))
    V = np.empty((nsteps + 1, sys_.nv))
    FR = np.zeros((nsteps + 1, nf))
    ST = np.zeros((nsteps + 1, nf), dtype=bool)
    E = np.empty(nsteps + 1)
    Wf = np.zeros(nsteps + 1)
    Wo = np.zeros(nsteps + 1)
    D = np.zeros(nsteps + 1)
    Q[0], V[0], E[0] = q, v, sys_.energy(q, v)
    stuck = np.array([k == "exact" and v[j] == vb[c] for c, (j, k) in
                      enumerate(zip(idx, kinds, strict=True))])
    ST[0] = stuck
    for n in range(nsteps):
        t = n * dt
        M = np.asarray(sys_.mass_matrix(q), dtype=float)
        h = np.asarray(sys_.nonlinear_effects(q, v), dtype=float)
        tau_a = np.zeros(sys_.nv) if tau is None else np.asarray(tau(t, q, v), float).reshape(-1)
        rhs = dt * (tau_a - h)
        A = M.copy()
        tf = np.zeros(nf)
        level = np.zeros(nf)
        cpl = []
        for c, (j, law, kind) in enumerate(zip(idx, items, kinds, strict=True)):
            w = v[j] - vb[c]
            if kind == "smooth":
                f0, d0 = float(law(w)), float(law.derivative(w))
                rhs[j] -= dt * f0
                A[j, j] += dt * d0               # linearly implicit in v⁺
            elif kind == "karnopp" and abs(w) >= law.band:
                tf[c] = -float(law.law(w))
                rhs[j] += dt * tf[c]
            elif kind == "karnopp":
                cpl.append(c)                    # holding force found below
                level[c] = law.law.static_level
            else:
                level[c] = law.static_level if stuck[c] else float(
                    law.direction(int(np.sign(w))).curve(abs(w))
                    + law.direction(int(np.sign(w))).Fv * abs(w))
        Minv = np.linalg.inv(A)
        dv_free = Minv @ rhs
        exact = [c for c, k in enumerate(kinds) if k == "exact"]
        if cpl:
            # Karnopp: the force that gives v̇_j = 0 (Δv_j = 0) for the band joints, clipped
            J = [idx[c] for c in cpl]
            lam = -np.linalg.solve(Minv[np.ix_(J, J)], dv_free[J]) / dt
            lam = np.clip(lam, -level[cpl], level[cpl])
            tf[cpl] = lam
            dv_free = dv_free + dt * Minv[:, J] @ lam
        if exact:
            J = [idx[c] for c in exact]
            W = dt * Minv[np.ix_(J, J)]
            wfree = v[J] + dv_free[J] - vb[exact]
            lam = np.zeros(len(exact))
            for _it in range(pgs_iterations):
                change = 0.0
                for a in range(len(exact)):
                    r = wfree[a] + W[a] @ lam
                    new = np.clip(lam[a] - r / W[a, a], -level[exact[a]], level[exact[a]])
                    change = max(change, abs(new - lam[a]))
                    lam[a] = new
                if change <= pgs_tol * (1.0 + np.max(np.abs(lam))):
                    break
            else:
                if len(exact) > 1:
                    raise SolverError(f"time_stepping: projected Gauss–Seidel did not converge "
                                      f"at t={t:.6g} ({pgs_iterations} iterations)")
            tf[exact] = lam
            dv_free = dv_free + dt * Minv[:, J] @ lam
        v_new = v + dv_free
        for c in exact:
            stuck[c] = abs(tf[c]) < level[c] * (1.0 - 1e-12)
            if stuck[c]:
                v_new[idx[c]] = vb[c]            # on the constraint, exactly
        for c, kind in enumerate(kinds):
            if kind == "smooth":
                w_new = v_new[idx[c]] - vb[c]
                w = v[idx[c]] - vb[c]
                tf[c] = -(float(items[c](w)) + float(items[c].derivative(w)) * (w_new - w))
        if not np.all(np.isfinite(v_new)):
            raise SolverError(f"time_stepping: the state is not finite at t={t + dt:.6g}")
        Wf[n + 1] = Wf[n] + dt * float(tf @ v_new[idx])
        Wo[n + 1] = Wo[n] + dt * float(tau_a @ v_new)
        D[n + 1] = D[n] - dt * float(tf @ (v_new[idx] - vb))
        q = np.asarray(sys_.integrate_configuration(q, v_new, dt), dtype=float)
        v = v_new
        Q[n + 1], V[n + 1], FR[n + 1], ST[n + 1] = q, v, tf, stuck
        E[n + 1] = sys_.energy(q, v)
    mode = np.where(ST, 0, np.sign(V[:, idx] - vb)).astype(int)
    record = FrictionRecord(joints=idx, force=FR, mode=mode, stuck=ST, work=Wf, other_work=Wo,
                            dissipated=D, z=np.zeros((nsteps + 1, 0)))
    return Trajectory(np.arange(nsteps + 1) * dt, Q, V, Wf + Wo, method="time_stepping",
                      energy=E, system=sys_, friction=record)
