"""Fixed-step simulation with joint friction, one treatment of v = 0 per joint.

All treatments share one step, semi-implicit (symplectic) Euler on the
system protocol,

    M(q) (v⁺ - v) = dt [τ(t, q, v) - h(q, v) + τ_f],     q⁺ = q ⊕ dt v⁺,

and differ only in how τ_f is found:

- a smoothed or continuous law: τ_f = -F(w) linearised in v⁺ (linearly
  implicit: (M + dt ∂F/∂v) Δv = dt(...)), because its slope Fs/ε near 0
  would make the explicit step unstable for dt > 2 m ε / Fs; where the law falls
  (∂F/∂v < 0, the Stribeck dip) its slope is left out (explicit there), as a
  negative term on M's diagonal would destabilise the step;
- :class:`Karnopp` (Karnopp, ASME J. Dyn. Sys. 107, 1985): outside the band
  |w| >= band the exact law; inside it the force that makes v̇_j = 0, clipped
  to ±Fs — a joint inside the band keeps its (small) velocity: it drifts;
- :class:`~kanedyn.friction.LuGre` (a state z per joint): backward Euler in z with the
  rate σ0|w|/g(w) of the start of the step, z⁺ = (z + dt w⁺) / (1 + dt σ0|w|/g(w)), so
  that F⁺ = σ0 z⁺ + σ1 (z⁺ − z)/dt + σ2 w⁺ is affine in w⁺ with a positive slope and
  enters the step linearly implicit like a smoothed law (stable for the stiff σ0);
  the bristle states are in ``traj.friction.z``;
- an exact law (sgn): a complementarity problem per step (Moreau's
  time-stepping, Moreau 1988; Jean 1999): each joint either sticks,
  w⁺_j = 0 with |τ_f,j| <= c_j, or slides with τ_f,j = -c_j sgn w⁺_j, where
  c_j = Fs while stuck and g(|w_j|) + Fv |w_j| while sliding (the level
  taken from the start of the step). All the exact joints together are one box
  LCP on their Delassus matrix dt (A⁻¹)_JJ, solved exactly by the active-set
  method of :func:`~.time_stepping_compiled.box_lcp` (any number of joints sticking
  at once); a stuck joint's speed is then set to the surface speed exactly, so it
  does not creep.

``kd.simulate(..., method="time_stepping", dt=...)`` (and its older name
:func:`kanedyn.friction.time_stepping`) runs :func:`time_stepping`; the result is a
:class:`~kanedyn.sim.Trajectory` with the friction's side in ``traj.friction``.
This function's step loop is the readable reference. A Model with additive coordinates,
Stribeck laws (exact, smoothed, or inside a Karnopp band) or LuGre laws, no ``tau=``
function and force elements that have a compiled form (:mod:`kanedyn.forces.kernel`)
runs the same steps in the compiled loop of :mod:`.time_stepping_compiled`
(``compiled=True``, the default; tested step for step against this loop). Another law,
another system, or a torque given as a Python function (``tau=`` or a
:class:`~kanedyn.forces.JointTorque` of a function) takes this loop: on the 7-link arm
of ``bench/friction.py`` about 2 ms a step instead of 3–14 µs.

The energy E (springs' potential included) and the works are recorded at every step;
semi-implicit Euler does not conserve energy, so the budget E − E₀ − W_nc closes to
O(dt), not to round-off (the event-driven ``method="stickslip"`` closes it to its
tolerance).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..errors import FrictionError, SolverError
from ..forces import ForceSet
from ..forces.kernel import force_rows, has_forces
from ..friction._joints import joint_speed_index
from ..friction.karnopp import Karnopp
from ..friction.laws import FrictionLaw, Stribeck
from ..friction.laws_kernel import SMOOTHING_CODES
from ..friction.lugre import LuGre
from ..integrators.rk4_compiled import compiled_or_none
from ..model import Model
from . import time_stepping_compiled as tsc
from .friction_joints import checked_state, friction_system
from .trajectory import FrictionRecord, Trajectory


def time_stepping(system, q0: ArrayLike, v0: ArrayLike, t_final: float, dt: float,
                  joints: dict, tau=None, surface_velocity: dict | None = None,
                  forces=None, compiled: bool = True) -> Trajectory:
    """Fixed-step simulation with friction on 1-DOF joints (see the module docstring).

    ``joints`` maps a joint to an exact law (complementarity), a smoothed law, a
    :class:`~kanedyn.friction.LuGre` law or a :class:`Karnopp` band. ``tau(t, q, v)``
    is an applied generalized force given as a Python function; ``forces`` other force
    elements (springs, dampers, torques, wrenches; springs' potential is part of the
    energy). Works are accumulated with the post-step speed v⁺, the speed the step
    moves q with. ``compiled``: run the compiled loop where it applies (module doc).
    Returns a :class:`~kanedyn.sim.Trajectory` (``work_nc`` = friction work + work of
    τ and of the non-conservative elements, the friction's side in ``traj.friction``).
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
        if not isinstance(law, (FrictionLaw, Karnopp, LuGre)):
            raise FrictionError(f"joint {name!r}: {law!r} is not a friction law, a LuGre law "
                                "or a Karnopp band")
        j = joint_speed_index(sys_, name)
        if j in idx:
            raise FrictionError(f"time_stepping: joint {name!r} has two friction laws")
        idx.append(j)
        items.append(law)
    nf = len(idx)
    vb = np.zeros(nf)
    for name, val in (surface_velocity or {}).items():
        vb[idx.index(joint_speed_index(sys_, name))] = float(val)
    kinds = ["karnopp" if isinstance(x, Karnopp) else "lugre" if isinstance(x, LuGre)
             else "exact" if x.discontinuous else "smooth" for x in items]
    fs = ForceSet(sys_, forces)
    for f in fs.elements:
        if f.discontinuous:
            raise FrictionError(f"time_stepping: force element {f!r} is discontinuous in v; "
                                f"exact friction goes in joints=, where its stick–slip is "
                                f"resolved (or pass it to kd.simulate, which puts it there)")
    nsteps = int(round(t_final / dt))
    q = checked_state(q0, sys_.nq, "q0")
    v = checked_state(v0, sys_.nv, "v0")
    run = _compiled_run(sys_, items, tau, fs, compiled) if nsteps > 0 else None
    # None from compiled_or_none: numba could not compile the loop (a RuntimeWarning says
    # so); the Python steps then take the run
    out = (None if run is None else
           compiled_or_none("time_stepping", run, idx, vb, kinds, q, v, dt, nsteps))
    if out is None:
        out = _python_run(sys_, idx, items, kinds, vb, tau, fs, q, v, dt, nsteps)
    Q, V, FR, ST, E, Wf, Wo, D, Z = out
    mode = np.where(ST, 0, np.sign(V[:, idx] - vb)).astype(int)
    record = FrictionRecord(joints=idx, force=FR, mode=mode, stuck=ST, work=Wf, other_work=Wo,
                            dissipated=D, z=Z[:, [c for c, k in enumerate(kinds)
                                                  if k == "lugre"]])
    return Trajectory(np.arange(nsteps + 1) * dt, Q, V, Wf + Wo, method="time_stepping",
                      energy=E, system=sys_, friction=record)


def _python_run(sys_, idx, items, kinds, vb, tau, fs, q, v, dt, nsteps):
    """The reference step loop (module doc): (Q, V, FR, ST, E, Wf, Wo, D, Z), Z the
    bristle states (a column per friction joint, zero but for LuGre's)."""
    nf = len(idx)
    Q = np.empty((nsteps + 1, sys_.nq))
    V = np.empty((nsteps + 1, sys_.nv))
    FR = np.zeros((nsteps + 1, nf))
    ST = np.zeros((nsteps + 1, nf), dtype=bool)
    E = np.empty(nsteps + 1)
    Wf = np.zeros(nsteps + 1)
    Wo = np.zeros(nsteps + 1)
    D = np.zeros(nsteps + 1)
    Z = np.zeros((nsteps + 1, nf))
    z = np.zeros(nf)
    Q[0], V[0], E[0] = q, v, sys_.energy(q, v) + fs.potential(q)
    stuck = np.array([k == "exact" and v[j] == vb[c] for c, (j, k) in
                      enumerate(zip(idx, kinds, strict=True))])
    ST[0] = stuck
    exact = [c for c, k in enumerate(kinds) if k == "exact"]
    # the BLCP's warm start: the previous step's forces and stick set
    lam, state = np.zeros(len(exact)), np.zeros(len(exact), dtype=np.int64)
    for n in range(nsteps):
        t = n * dt
        M = np.asarray(sys_.mass_matrix(q), dtype=float)
        h = np.asarray(sys_.nonlinear_effects(q, v), dtype=float)
        tau_nc = fs.tau_nonconservative(t, q, v) if fs.nonconservative else np.zeros(sys_.nv)
        if tau is not None:
            tau_nc = tau_nc + np.asarray(tau(t, q, v), float).reshape(-1)
        tau_a = tau_nc + fs.tau_conservative(q) if fs.conservative else tau_nc
        rhs = dt * (tau_a - h)
        A = M.copy()
        tf = np.zeros(nf)
        level = np.zeros(nf)
        slope = np.zeros(nf)  # LuGre: 1 / (1 + dt σ0|w|/g(w))
        lugre_fc = {}  # LuGre: (F at w, ∂F⁺/∂w⁺)
        cpl = []
        for c, (j, law, kind) in enumerate(zip(idx, items, kinds, strict=True)):
            w = v[j] - vb[c]
            if kind == "smooth":
                # linearly implicit in v⁺ where the law rises (the slope Fs/ε near 0); where
                # it falls (the Stribeck dip) explicit, as a negative slope on M's diagonal
                # would destabilise the step (or make A singular)
                f0, d0 = float(law(w)), max(float(law.derivative(w)), 0.0)
                rhs[j] -= dt * f0
                A[j, j] += dt * d0
            elif kind == "lugre":
                # z⁺ = r (z + dt w⁺): F⁺ = c0 + c1 w⁺ (module doc), linearly implicit
                r = 1.0 / (1.0 + dt * law.sigma0 * abs(w) / float(law.g(w)))
                c0 = law.sigma0 * r * z[c] + law.sigma1 * (r - 1.0) * z[c] / dt
                c1 = (law.sigma0 * dt + law.sigma1) * r + law.sigma2
                slope[c] = r
                lugre_fc[c] = (c0 + c1 * w, c1)
                rhs[j] -= dt * (c0 + c1 * w)
                A[j, j] += dt * c1
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
        if cpl:
            # Karnopp: the force that gives v̇_j = 0 (Δv_j = 0) for the band joints, clipped
            J = [idx[c] for c in cpl]
            lam_k = -np.linalg.solve(Minv[np.ix_(J, J)], dv_free[J]) / dt
            lam_k = np.clip(lam_k, -level[cpl], level[cpl])
            tf[cpl] = lam_k
            dv_free = dv_free + dt * Minv[:, J] @ lam_k
        if exact:
            J = [idx[c] for c in exact]
            W = np.ascontiguousarray(dt * Minv[np.ix_(J, J)])
            wfree = v[J] + dv_free[J] - vb[exact]
            if tsc.box_lcp(W, wfree, np.ascontiguousarray(level[exact]), lam, state) < 0:
                raise SolverError(f"time_stepping: the friction complementarity problem was "
                                  f"not solved at step {n + 1}, t={t:.6g} ({len(exact)} joints)")
            tf[exact] = lam
            dv_free = dv_free + dt * Minv[:, J] @ lam
        v_new = v + dv_free
        for a, c in enumerate(exact):
            stuck[c] = state[a] == 0
            if stuck[c]:
                v_new[idx[c]] = vb[c]            # on the constraint, exactly
        for c, kind in enumerate(kinds):
            w_new = v_new[idx[c]] - vb[c]
            w = v[idx[c]] - vb[c]
            if kind == "smooth":
                tf[c] = -(float(items[c](w))
                          + max(float(items[c].derivative(w)), 0.0) * (w_new - w))
            elif kind == "lugre":
                f0, c1 = lugre_fc[c]
                tf[c] = -(f0 + c1 * (w_new - w))
                z[c] = slope[c] * (z[c] + dt * w_new)
        if not np.all(np.isfinite(v_new)):
            raise SolverError(f"time_stepping: the state is not finite at t={t + dt:.6g}")
        Wf[n + 1] = Wf[n] + dt * float(tf @ v_new[idx])
        Wo[n + 1] = Wo[n] + dt * float(tau_nc @ v_new)
        D[n + 1] = D[n] - dt * float(tf @ (v_new[idx] - vb))
        q = np.asarray(sys_.integrate_configuration(q, v_new, dt), dtype=float)
        v = v_new
        Q[n + 1], V[n + 1], FR[n + 1], ST[n + 1], Z[n + 1] = q, v, tf, stuck, z
        E[n + 1] = sys_.energy(q, v) + fs.potential(q)
    return Q, V, FR, ST, E, Wf, Wo, D, Z


def friction_table(items, kinds, vb) -> np.ndarray:
    """The friction table FT (nf, NFT) of :mod:`.time_stepping_compiled` for the laws
    ``items`` (Stribeck, exact or smoothed, LuGre, Karnopp bands), their treatments
    ``kinds`` and surface speeds ``vb`` — one row per friction joint (shared with the
    batched time-stepping of :mod:`.batch`)."""
    laws = [x.law if isinstance(x, Karnopp) else x for x in items]
    FT = np.zeros((len(items), tsc.NFT))
    for c, law in enumerate(laws):
        if isinstance(law, LuGre):
            FT[c, [tsc.FT_FC, tsc.FT_FS, tsc.FT_VS, tsc.FT_DELTA]] = (
                law.Fc, law.Fs, law.vs, law.delta)
            FT[c, [tsc.FT_S0, tsc.FT_S1, tsc.FT_S2]] = (law.sigma0, law.sigma1, law.sigma2)
            FT[c, tsc.FT_SURF] = vb[c]
            FT[c, tsc.FT_KIND] = tsc.KIND_LUGRE
            continue
        FT[c, [tsc.FT_FC, tsc.FT_FS, tsc.FT_VS, tsc.FT_DELTA, tsc.FT_FV]] = (
            law.Fc, law.Fs, law.vs, law.delta, law.Fv)
        sm = law.smoothing
        FT[c, tsc.FT_EPS] = 0.0 if sm is None else sm.eps
        FT[c, tsc.FT_SMOOTH] = 0 if sm is None else SMOOTHING_CODES[sm.kind]
        FT[c, tsc.FT_SURF] = vb[c]
        FT[c, tsc.FT_KIND] = {"exact": tsc.KIND_EXACT, "smooth": tsc.KIND_SMOOTH,
                              "karnopp": tsc.KIND_KARNOPP}[kinds[c]]
        if kinds[c] == "karnopp":
            FT[c, tsc.FT_BAND] = items[c].band
    return FT


def _compiled_run(sys_, items, tau, fs, compiled: bool):
    """The compiled loop as a function of (idx, vb, kinds, q, v, dt, nsteps), or None
    where it does not apply (module doc)."""
    model = getattr(sys_, "model", None)
    if (not compiled or tau is not None or not isinstance(model, Model)
            or not sys_.chart_is_additive or model.nq != model.nv):
        return None
    laws = [x.law if isinstance(x, Karnopp) else x for x in items]
    if any(not isinstance(x, LuGre) and (type(x) is not Stribeck or (
            x.smoothing is not None and x.smoothing.kind not in SMOOTHING_CODES))
           for x in laws):
        return None
    P, why = force_rows(model, fs.elements, friction=True, wrenches=True)
    if why is not None:
        return None

    def run(idx, vb, kinds, q, v, dt, nsteps):
        from ..dynamics.flat import flatten

        nf = len(idx)
        FT = friction_table(items, kinds, vb)
        Q = np.empty((nsteps + 1, model.nq))
        V = np.empty((nsteps + 1, model.nv))
        FR = np.zeros((nsteps + 1, nf))
        ST = np.zeros((nsteps + 1, nf), dtype=bool)
        E = np.empty(nsteps + 1)
        Wf, Wo, D = np.zeros(nsteps + 1), np.zeros(nsteps + 1), np.zeros(nsteps + 1)
        Z = np.zeros((nsteps + 1, nf))
        status = np.zeros(2, np.int64)
        tsc.time_stepping_run(flatten(model).data, P, has_forces(P), FT,
                              np.asarray(idx, np.int64), q, v, dt, nsteps, Q, V, FR, ST, E,
                              Wf, Wo, D, Z, status)
        if status[0]:
            n = int(status[1])
            why = {tsc.TS_NOT_FINITE: "the state is not finite",
                   tsc.TS_KERNEL: "the dynamics kernel refused the state (or M is not "
                                  "positive definite)",
                   tsc.TS_LCP: "the friction complementarity problem was not solved"}
            raise SolverError(f"time_stepping: {why[int(status[0])]} at step {n}, "
                              f"t={n * dt:.6g}: q = {np.array2string(Q[n - 1], precision=4)}, "
                              f"v = {np.array2string(V[n - 1], precision=4)}")
        return Q, V, FR, ST, E, Wf, Wo, D, Z

    return run
