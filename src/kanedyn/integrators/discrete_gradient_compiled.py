"""The discrete-gradient methods as one compiled loop over all steps (numba).

The same methods as their Python references — :class:`~.discrete_gradient.AVF`,
:class:`~.discrete_gradient.ItohAbe` (both variants) and the ``"gonzalez"`` variant of
:class:`~.energy_momentum.EnergyMomentum` — for a plain Model with additive coordinates
whose force elements all have rows in :mod:`kanedyn.forces.kernel`
(:func:`.rk4_compiled.applicable`), tested step for step against them. Every one solves,
in canonical variables z = (q, p), p = M(q) v, for the increment d = (Δq, Δp) of

    R(d) = (Δq − h ∇̄_pH,  Δp + h ∇̄_qH − h τ_nc(t + h/2, q + Δq/2, ∇̄_pH)) = 0,

with its own discrete gradient ∇̄H(z, z + d) (:data:`AVF`, :data:`ITOH_ABE`,
:data:`ITOH_ABE_SYMMETRIC`, :data:`GONZALEZ`; formulas in the references' docstrings),
evaluated by the kernels behind ``kd.crba`` (M, then a Cholesky factor for v = M⁻¹p) and
the energy kernel (∂T/∂q|_v, g(q), T, V). Itoh–Abe's H along its coordinate paths comes from the
articulated-body algorithm's backward pass alone, kept per body, so that each point of a
path remakes only the moved joint's body and its ancestors (:func:`path_hamiltonian_moved`,
O(depth) against :func:`hamiltonian_aba`'s O(n); docs/benchmarks.md, "Issue 17: itoh_abe's
path by the backward pass alone"). The force rows (springs, dampers, smoothed
Stribeck friction, constant and sinusoidal torques) enter as the Python methods take them:
the springs' potential in H, τ_nc in the momentum equation, ``W_nc += h v̄ᵀ τ_nc`` with
v̄ = Δq/h, so that the budget E − E₀ − W_nc closes to round-off; Itoh–Abe's polish sweeps
its momentum equation with τ_nc as ``ItohAbe.polish`` does. Any other element makes the
method take its Python steps.

This module imports the force rows of :mod:`kanedyn.forces` (DESIGN's order has
integrators below forces; a recorded exception in tests/test_import_direction.py): numba
cannot take the force kernel as an argument without losing its disk cache, so the loop
compiles the one compiled form of the elements in.

What makes it fast (docs/benchmarks.md, "Issue 17: compiled discrete gradients"):

- **Newton matrix**: the exact Jacobian of R to first order in h, ``∂R/∂d = 1 + h
  [[−∂ḡ_p/∂Δq, −∂ḡ_p/∂Δp], [∂ḡ_q/∂Δq, ∂ḡ_q/∂Δp]]`` with ``∂ḡ/∂d ≈ W ⊙ ∇²H(z_n)``: W = ½
  for the symmetric discrete gradients (AVF, Gonzalez, symmetrised Itoh–Abe), and for
  Itoh–Abe the weights of its coordinate path (1 for a coordinate moved before, ½ for
  itself, 0 after). ∇²H from the tangent passes of
  :mod:`kanedyn.dynamics.derivatives_kernel` (``B = ∂(Mv)/∂q`` and ``∂g/∂q`` by the
  zero-velocity pass ``rnea_tangent_static``, ``∂²T/∂q²`` by ``kinetic_tangent``):
  ``H_pp = M⁻¹``, ``H_pq = −M⁻¹B``, ``H_qq = −∂²T/∂q² + ∂g/∂q + BᵀM⁻¹B`` (Legendre
  transform, as ``ModelSystem.canonical_jacobians``); with force rows the springs' k join
  H_qq and the slopes C = diag(−∂τ_nc/∂v) ≥ 0 of dampers and friction join the momentum
  rows as ``h C ∂ḡ_p/∂d`` (which keeps Newton contracting on a steep smoothed friction
  law, as the block-triangular matrix with C of the former AVF loop). Newton then
  contracts by O(h² |∇³H| |d|) per iteration (≈ 1e-5–1e-4 on the benchmark chains,
  against 2e-3–4e-2 for the block-triangular ``[[1, −h/2 M⁻¹], [0, 1]]`` it replaces;
  taken at the midpoint of the predicted step). The matrix is LU-factored and kept for at
  most ``refresh`` (:data:`REFRESH`, 50) steps, rebuilt at the next step when a step's
  iteration contracted by less than ``slow`` (:data:`SLOW`, 3e-2), at once when by less
  than 0.1 (rates judged only on updates above the roundoff floor); for AVF also once the
  steps since it was built have taken ``cost`` (:data:`COST`, 2) residuals more than the
  fewest any of them took — a matrix's price (14 µs against 7 µs a residual on the 7-link
  demo arm): a kept matrix's error grows with the steps, and on ``make demo``'s arm, where
  the predictor is poor, it costs a residual a step before its contraction is slow.
- **Predictor**: the polynomial extrapolation of the last k ≤ ``degree`` + 1 increments
  (:data:`DEGREE` = 8, for Itoh–Abe too: its differences of H are noisy, but degree 2
  took 2.39 / 3.60 residuals a step on the 7- / 20-link chains against 2.03 / 2.17), k the order
  that predicted the last step best (:func:`.gauss_compiled.best_order`, as the midpoint
  loop): on smooth motion the highest, with an error O((h ω)^k) of the increment, which
  leaves one Newton update a step on the 7-link benchmark chain at dt = 1e-3 (degree 4:
  two); where a smoothed friction law turns within a step a high-degree extrapolation
  misses by 1e-3–1e-1 of the increment, and a low one does better. AVF with force rows
  extrapolates (Δq, Δp − h τ_nc(v̄)) instead, smooth where τ_nc(v̄) is not, and adds h
  τ_nc back at the predicted v̄ = Δq/h (3.81 → 3.54 residuals a step on the demo arm).
- **Stopping**: Newton's error after an update is bounded by θ/(1 − θ) times the update,
  θ the contraction; the first update of a step takes θ carried from the last step that
  measured it (Hairer & Wanner's RADAU5 carries its rate the same way), so a step whose
  predictor was good ends after one residual. AVF and the forward Itoh–Abe without force
  rows only: Gonzalez's and the symmetric Itoh–Abe's residuals hold differences of H,
  whose round-off makes the carried θ unreliable (with it Gonzalez's energy error on the
  7-link chain at dt = 5e-3 grew from 2e-14 to 1.1e-12), so they measure θ within every
  step. A second update's quotient below the roundoff
  floor (not a measurement: round-off adds to it) still bounds θ from above and lowers the
  carried θ when smaller, so that one hard step's θ is not carried on through the smooth
  steps after it (20-link chain: 1.74 → 1.55 residuals a step).
- **The forward Itoh–Abe's momentum equation eliminated** (no force rows): its ∇̄_qH is
  taken at fixed p along q_1..q_n, so it depends on Δq alone, and each residual first
  sets Δp = −h ∇̄_qH(Δq), which solves the momentum equation at that Δq exactly (R_p = 0).
  The 2n Newton solve with R_p = 0 is then Newton on the eliminated equation R_q(Δq) =
  Δq − h ∇̄_pH(Δq, Δp(Δq)) = 0 (its Schur complement is that equation's Jacobian), the
  Δp it returns is Δp(Δq) to first order in the update, and the polish sweep after
  Newton (one more ∇̄_qH, :func:`_polish`) is not needed; with the carried θ a step
  takes 1.09 residuals on the 7-link chain at dt = 1e-3 (2.03 and a polish before) and
  1.64 on the 20-link one (2.17), drift over 10 s 4.8e-14 and 1.5e-13 (docs/benchmarks.md,
  "Issue 17 at stop 45"). With force rows, τ_nc(∇̄_pH) couples the two equations: Newton
  on both, and the polish. The symmetric variant's ∇̄_qH depends on Δp (its reverse
  path runs at p + Δp), so it keeps Newton on both; without force rows it ends at
  Newton's stop too, without the polish (two more configuration parts): measured, the
  polish changed its drift by at most a factor 2.6 either way (chains of 7 and 20 links,
  a random tree, dt = 1e-3–1e-2, 5 s) and cost 29 % of its step (7 links: 74.1 → 52.5
  µs).
- One Cholesky factorization per mass matrix (``cholesky``/``cholesky_solve`` of
  :mod:`.base`), the Newton matrix by ``lu_factor``/``lu_solve`` of
  :mod:`.gauss_compiled`; no allocation inside a step.

A step whose Newton iteration does not settle (after one rebuilt matrix), a kernel that
refuses a state, or a blow-up makes :func:`run` return None: the Python method then takes
the whole run and reports what happens (step, time, residual, method).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..dynamics import _compiled, kernels
from ..dynamics.derivatives_kernel import kinetic_tangent, rnea_tangent_static
from ..dynamics.energy_kernel import (
    energy_pass_into,
    energy_pass_posed,
    energy_workspace,
    poses_from_transforms,
)
from ..dynamics.flat import flatten
from ..dynamics.kernels.aba import aba_core, aba_workspace
from ..dynamics.kernels.crba import crba_core
from ..dynamics.kernels.spatial_rows import inertia_world_s, sym_times_s, x_inv_motion_s
from ..dynamics.layout import ARMATURE, GRAV, IQ, IV, MASS, NQ, NVJ, PARENT, SINGTOL, H
from ..forces.kernel import (
    P_K,
    applied_forces,
    damping_slopes,
    empty_rows,
    has_forces,
    spring_gradient_add,
    spring_potential,
)
from .base import cholesky, cholesky_solve, nan_max
from .gauss_compiled import best_order, extrapolate, lu_factor, lu_solve
from .rk4_compiled import (
    first_run_problem,
    ready_or_python,
    save_sample,
    state_guard,
    step_grid,
    store,
)

_compiled.key_cache(__name__)

#: the discrete gradients of the loop (its ``kind`` argument)
AVF, ITOH_ABE, ITOH_ABE_SYMMETRIC, GONZALEZ = 0, 1, 2, 3
#: the predictor's degree for AVF and Gonzalez (module doc)
DEGREE = 8
#: the Newton matrix is kept at most REFRESH steps, rebuilt at the next step after one whose
#: iteration contracted by less than SLOW (module doc)
REFRESH, SLOW = 50, 3e-2
#: a Newton matrix's price in residuals (module doc): rebuilt once the steps since it was
#: built have taken that many residuals beyond the fewest any of them took
COST = 2.0
_EPS = np.finfo(np.float64).eps


# --------------------------------------------------------------------- H and its gradient
@nb.njit(cache=True, nogil=True)
def potential(data, q, ew) -> float:
    """V(q) = −Σ m_i gᵀ c_i (world centres of mass) from the body poses; NaN if the
    kernels refuse q. ew: the energy pass's workspace (its pose arrays are used)."""
    nb_ = data.shape[0] - 1
    R, P, vel = ew[4], ew[5], ew[1]
    if kernels.kinematics_into(data, q, q, False, R, P, vel) != 0:
        return np.nan
    V = 0.0
    for i in range(nb_):
        m = data[i, MASS]
        for a in range(3):
            mc = (m * P[i, a] + R[i, a, 0] * data[i, H] + R[i, a, 1] * data[i, H + 1]
                  + R[i, a, 2] * data[i, H + 2])
            V -= data[nb_, GRAV + a] * mc
    return V


@nb.njit(cache=True, nogil=True)
def mass_workspace(n, nb_):
    """(M, L, then the CRBA kernel's scratch: X_up (nb, 12), composite inertias (nb, 13),
    two force rows, the joint angles with cos and sin (3 nb))."""
    return (np.empty((n, n)), np.zeros((n, n)), np.empty((nb_, 12)), np.empty((nb_, 13)),
            np.empty((2, 6)), np.empty(3 * nb_))


@nb.njit(cache=True, nogil=True)
def factor_mass(data, q, mw) -> bool:
    """mw[0] ← M(q) by the CRBA kernel (:func:`kanedyn.dynamics.kernels.crba.crba_core`,
    in mw's scratch), mw[1] ← its Cholesky factor; False if a kernel refuses q or M is
    not positive definite."""
    M, L = mw[0], mw[1]
    if crba_core(data, q, M, mw[2], mw[3], mw[4], mw[5]) != 0:
        return False
    return cholesky(M, M.shape[0], L)


@nb.njit(cache=True, nogil=True)
def velocity(data, q, p, mw, v) -> bool:
    """v ← M(q)⁻¹ p (mw: the workspace of :func:`factor_mass`, left holding M(q) and its
    Cholesky factor)."""
    if not factor_mass(data, q, mw):
        return False
    cholesky_solve(mw[1], p.shape[0], p, v)
    return True


@nb.njit(cache=True, nogil=True)
def hamiltonian(data, P, forces, q, p, mw, v, ew) -> float:
    """H(q, p) = ½ pᵀM⁻¹p + V(q) (+ the springs' potential of the force rows P when
    ``forces``); NaN if a kernel refuses q."""
    if not velocity(data, q, p, mw, v):
        return np.nan
    T = 0.0
    for i in range(p.shape[0]):
        T += 0.5 * p[i] * v[i]
    H = T + potential(data, q, ew)
    if forces:
        H += spring_potential(P, q)
    return H


@nb.njit(cache=True, nogil=True)
def energy(data, P, forces, q, p, mw, v, ew, dT, dV, out) -> float:
    """H(q, p) = T + V by the energy kernel at v = M⁻¹p (the energy the trajectory
    reports, springs included); NaN if a kernel refuses q."""
    if not velocity(data, q, p, mw, v) or energy_pass_into(data, q, v, dT, dV, out, *ew) != 0:
        return np.nan
    H = out[0] + out[1]
    if forces:
        H += spring_potential(P, q)
    return H


@nb.njit(cache=True, nogil=True)
def gradient(data, P, forces, q, p, mw, v, ew, dT, dV, out, gq) -> bool:
    """gq ← ∂H/∂q|_p = g(q) − ∂T/∂q|_v (+ the springs' k (q − q_rest)), v ← ∂H/∂p = M⁻¹p,
    out[0] + out[1] = H without the springs."""
    if not velocity(data, q, p, mw, v) or energy_pass_into(data, q, v, dT, dV, out, *ew) != 0:
        return False
    for i in range(q.shape[0]):
        gq[i] = dV[i] - dT[i]
    if forces:
        spring_gradient_add(P, q, 1.0, gq)
    return True


# ------------------------------------- the same by the articulated-body algorithm: O(n)
# The functions above (CRBA, a Cholesky factor, then the energy pass) are the readable
# reference: M(q) is formed and factored, O(n²) + O(n³) per value of ∇H. The residuals use
# the forms below instead, in which M⁻¹p comes from one articulated-body pass (O(n)); they
# are tested against the reference (tests/integrators/test_discrete_gradient_compiled.py).
@nb.njit(cache=True, nogil=True)
def aba_velocity_workspace(data, n):
    """(the flat array with gravity set to zero, a zero n-vector, ABA's scratch
    :func:`kanedyn.dynamics.kernels.aba.aba_workspace`) for :func:`velocity_aba`."""
    nb_ = data.shape[0] - 1
    free = data.copy()
    for a in range(3):
        free[nb_, GRAV + a] = 0.0
    return free, np.zeros(n), aba_workspace(nb_, n)


@nb.njit(cache=True, nogil=True)
def velocity_aba(q, p, aw, v) -> bool:
    """v ← M(q)⁻¹ p by one articulated-body pass (Featherstone 2008, Table 7.1): ABA
    solves ``M(q) q̈ = τ − C(q, v) v − g(q)``; with v = 0 and gravity set to zero it is
    ``q̈ = M⁻¹ τ``, here with τ = p. O(n) against the CRBA + Cholesky of
    :func:`velocity`. aw: :func:`aba_velocity_workspace`; its ABA scratch then holds the
    body poses of q (``ws[1][i]`` = (E, r) of body i from the world)."""
    free, zero, ws = aw
    return aba_core(free, q, zero, p, free, False, v, *ws) == 0


@nb.njit(cache=True, nogil=True)
def potential_from_poses(data, X0) -> float:
    """V(q) = −Σ m_i gᵀ c_i from the poses X0[i] = (E, r) (E: world to body, r: the body's
    origin in the world) that ABA leaves: ``m c_world = m r + Eᵀ h`` (h = m c, body
    coordinates), as :func:`potential` from the kinematics pass."""
    nb_ = data.shape[0] - 1
    V = 0.0
    for i in range(nb_):
        m = data[i, MASS]
        for a in range(3):
            mc = (m * X0[i, 9 + a] + X0[i, a] * data[i, H] + X0[i, 3 + a] * data[i, H + 1]
                  + X0[i, 6 + a] * data[i, H + 2])
            V -= data[nb_, GRAV + a] * mc
    return V


@nb.njit(cache=True, nogil=True)
def hamiltonian_aba(data, P, forces, q, p, aw, v) -> float:
    """:func:`hamiltonian` in O(n): ``H = ½ pᵀ v + V(q)`` with v = M⁻¹p by
    :func:`velocity_aba` and V from the poses of the same pass (+ the springs' potential);
    NaN if the kernel refuses q. (T = ½ pᵀM⁻¹p includes the rotors' armature, as in
    :func:`hamiltonian`.)"""
    if not velocity_aba(q, p, aw, v):
        return np.nan
    T = 0.0
    for i in range(p.shape[0]):
        T += 0.5 * p[i] * v[i]
    H = T + potential_from_poses(data, aw[2][1])
    if forces:
        H += spring_potential(P, q)
    return H


@nb.njit(cache=True, nogil=True)
def gradient_aba(data, P, forces, q, p, aw, v, ew, dT, dV, out, gq) -> bool:
    """:func:`gradient` in O(n): v ← M⁻¹p by :func:`velocity_aba`, then the energy pass's
    ``−∂H/∂q|_p = ∂T/∂q|_v − g(q)`` (the Legendre transform: ``∂H/∂q|_p = −∂L/∂q|_v``,
    and ∂T/∂q|_v = −Σ σᵀ crf(V_λ) H_k in one pass, :mod:`kanedyn.dynamics.energy_kernel`),
    on the body poses the articulated-body pass has just computed."""
    if not velocity_aba(q, p, aw, v):
        return False
    poses_from_transforms(aw[2][1], ew[4], ew[5])  # (R, P of energy_workspace)
    energy_pass_posed(data, v, dT, dV, out, *ew)
    for i in range(q.shape[0]):
        gq[i] = dV[i] - dT[i]
    if forces:
        spring_gradient_add(P, q, 1.0, gq)
    return True


# ------------------------- H along a coordinate path by the backward pass alone: O(depth)
# Itoh–Abe's ∇̄_qH visits n + 1 points of a coordinate path, each differing from the last
# in one coordinate. H = ½ pᵀM⁻¹p + V(q) needs no forward pass: with v = 0, no gravity and
# τ = p, ABA's backward pass (Featherstone 2008, Table 7.1) gives u_i = p_i − S_iᵀ p^A_i
# and D_i = S_iᵀ I^A_i S_i, and pᵀM⁻¹p = Σ_i u_i² / D_i (the innovations factorisation
# of M⁻¹: Rodriguez, Jain & Kreutz-Delgado, Int. J. Robotics Research 10, 1991). V =
# −gᵀ Σ_roots (first moment of the root's subtree), the subtree masses and first moments
# summed tip to base. Each body keeps a row: what it passes to its parent — I^a_i =
# I^A_i − U_i U_iᵀ/D_i, p^a_i = p^A_i + U_i u_i/D_i, its subtree's Σ u²/D, mass and
# first moment — in world coordinates, as :func:`kanedyn.dynamics.kernels.aba.aba_core`
# (the articulated inertia passes to the parent by a plain sum), and the pose of the body
# it was made at (its stamp). Moving q_k moves k's subtree rigidly and leaves every other
# pose as it was, so only the rows of k's body and its ancestors are made anew
# (:func:`path_hamiltonian_moved`); a child whose pose has changed since its row was
# made (the moved body's children) has its row carried along rigidly, ``Δᵀ I Δ`` with
# Δ from the stamp to the present pose (an articulated inertia of a rigidly moved
# subtree is the same in the subtree's own frame). Each point then costs one congruence
# per child of the moved body and, per ancestor, a sum and a rank-one update: against a
# whole ABA pass and the poses (O(n)) of :func:`hamiltonian_aba`.
#: columns of a body's row in the path cache: I^a (21, packed as in spatial_rows), p^a
#: (6), Σ u²/D (1), mass (1), first moment (3)
_PIA, _PPA, _PUU, _PM, _PH, _PW = 0, 21, 27, 28, 29, 32
#: columns of a body's pose record: X_up (12), i_X_0 (12), the stamp (i_X_0 when its row
#: was made, 12), its rigid inertia in world coordinates (21 packed) and S⁰ (6) at i_X_0
_BX, _BX0, _BST, _BI, _BS, _BW = 0, 12, 24, 36, 57, 63


@nb.njit(cache=True, nogil=True)
def path_workspace(data):
    """The path cache of :func:`path_hamiltonian`: (rows (nb, 32), pose records (nb, 63),
    flags (nb, 2): pose current, inertia and S⁰ current; the three again as kept at the
    path's start; the children of each body and of the world (index nb) as ranges
    ``first[i]:first[i+1]`` of ``kids``; each body's subtree (itself first) likewise;
    the body of each coordinate; a stack; a scratch row pair; a flag: 1 when every joint
    has at most one speed, the joints :func:`_path_row` takes)."""
    nb_ = data.shape[0] - 1
    nq = int(data[nb_, NQ])
    first = np.zeros(nb_ + 2, np.int64)
    for i in range(nb_):
        par = int(data[i, PARENT])
        first[(par if par >= 0 else nb_) + 1] += 1
    for i in range(nb_ + 1):
        first[i + 1] += first[i]
    kids, fill = np.empty(nb_, np.int64), first[:-1].copy()
    qbody = np.full(nq, -1, np.int64)
    flag = np.ones(1, np.int64)
    depth = np.zeros(nb_, np.int64)
    for i in range(nb_):
        par = int(data[i, PARENT])
        depth[i] = 0 if par < 0 else depth[par] + 1
        par = par if par >= 0 else nb_
        kids[fill[par]] = i
        fill[par] += 1
        n = int(data[i, NVJ])
        if n > 1:
            flag[0] = 0
        elif n == 1:
            qbody[int(data[i, IQ])] = i
    # subtrees: body j is in i's when i is on j's path to the root
    sfirst = np.zeros(nb_ + 1, np.int64)
    for j in range(nb_):
        i = j
        while i >= 0:
            sfirst[i + 1] += 1
            i = int(data[i, PARENT])
    for i in range(nb_):
        sfirst[i + 1] += sfirst[i]
    sub, fill = np.empty(sfirst[nb_], np.int64), sfirst[:-1].copy()
    for j in range(nb_):
        i = j
        while i >= 0:
            sub[fill[i]] = j
            fill[i] += 1
            i = int(data[i, PARENT])
    return (np.zeros((nb_, _PW)), np.zeros((nb_, _BW)), np.zeros((nb_, 2), np.int64),
            np.zeros((nb_, _PW)), np.zeros((nb_, _BW)), np.zeros((nb_, 2), np.int64),
            first, kids, sfirst, sub, qbody, np.empty(nb_, np.int64), np.empty((2, 6)), flag)


@nb.njit(cache=True, nogil=True, _nrt=False)
def _path_pose(data, i, B, F, stack):
    """Make i_X_0 of body i current (flag 0), and those of its ancestors that are not:
    ``i_X_0 = X_up[i] λ_X_0`` (E = E_i E_λ, r = r_λ + E_λᵀ r_i), root to body."""
    top = 0
    j = i
    while j >= 0 and F[j, 0] == 0:
        stack[top] = j
        top += 1
        j = int(data[j, PARENT])
    while top > 0:
        top -= 1
        j = stack[top]
        par = int(data[j, PARENT])
        if par < 0:
            for m in range(12):
                B[j, _BX0 + m] = B[j, _BX + m]
        else:
            for a in range(3):
                for b in range(3):
                    B[j, _BX0 + 3 * a + b] = (B[j, _BX + 3 * a] * B[par, _BX0 + b]
                                              + B[j, _BX + 3 * a + 1] * B[par, _BX0 + 3 + b]
                                              + B[j, _BX + 3 * a + 2] * B[par, _BX0 + 6 + b])
            for a in range(3):
                B[j, _BX0 + 9 + a] = (B[par, _BX0 + 9 + a]
                                      + B[par, _BX0 + a] * B[j, _BX + 9]
                                      + B[par, _BX0 + 3 + a] * B[j, _BX + 10]
                                      + B[par, _BX0 + 6 + a] * B[j, _BX + 11])
        F[j, 0] = 1


@nb.njit(cache=True, nogil=True, _nrt=False)
def _path_inertia(data, i, B, F, Sx, stack):
    """Make body i's rigid inertia in world coordinates ``X0ᵀ I_i X0`` (packed) and its
    S⁰ = X0⁻¹ S_i current (flag 1), at its current pose."""
    if F[i, 1] == 1:
        return
    _path_pose(data, i, B, F, stack)
    e0, e1, e2, e3, e4, e5, e6, e7, e8 = (B[i, _BX0], B[i, _BX0 + 1], B[i, _BX0 + 2],
                                          B[i, _BX0 + 3], B[i, _BX0 + 4], B[i, _BX0 + 5],
                                          B[i, _BX0 + 6], B[i, _BX0 + 7], B[i, _BX0 + 8])
    r0, r1, r2 = B[i, _BX0 + 9], B[i, _BX0 + 10], B[i, _BX0 + 11]
    m, g0, g1, g2, j00, j01, j11, j02, j12, j22 = inertia_world_s(
        data, i, e0, e1, e2, e3, e4, e5, e6, e7, e8, r0, r1, r2)
    o = _BI
    B[i, o], B[i, o + 1], B[i, o + 2], B[i, o + 3], B[i, o + 4], B[i, o + 5] = (
        j00, j01, j11, j02, j12, j22)
    B[i, o + 6], B[i, o + 7], B[i, o + 8], B[i, o + 9] = 0.0, g2, -g1, m
    B[i, o + 10], B[i, o + 11], B[i, o + 12], B[i, o + 13], B[i, o + 14] = -g2, 0.0, g0, 0.0, m
    B[i, o + 15], B[i, o + 16], B[i, o + 17] = g1, -g0, 0.0
    B[i, o + 18], B[i, o + 19], B[i, o + 20] = 0.0, 0.0, m
    if int(data[i, NVJ]) == 1:
        kernels.motion_subspace_column(data, i, 0, Sx, 0)
        (B[i, _BS], B[i, _BS + 1], B[i, _BS + 2], B[i, _BS + 3], B[i, _BS + 4],
         B[i, _BS + 5]) = x_inv_motion_s(e0, e1, e2, e3, e4, e5, e6, e7, e8, r0, r1, r2,
                                         Sx[0, 0], Sx[0, 1], Sx[0, 2], Sx[0, 3], Sx[0, 4],
                                         Sx[0, 5])
    F[i, 1] = 1


@nb.njit(cache=True, nogil=True, _nrt=False, forceinline=True)
def _rotated(e0, e1, e2, e3, e4, e5, e6, e7, e8, g00, g01, g02, g10, g11, g12, g20, g21, g22):
    """Eᵀ G E for a 3x3 G and E, both row-major (e_{3k+c} = E[k, c]); row-major, with
    T = G E first. (Inlined: the entries a caller leaves unused are never computed.)"""
    t00 = g00 * e0 + g01 * e3 + g02 * e6
    t01 = g00 * e1 + g01 * e4 + g02 * e7
    t02 = g00 * e2 + g01 * e5 + g02 * e8
    t10 = g10 * e0 + g11 * e3 + g12 * e6
    t11 = g10 * e1 + g11 * e4 + g12 * e7
    t12 = g10 * e2 + g11 * e5 + g12 * e8
    t20 = g20 * e0 + g21 * e3 + g22 * e6
    t21 = g20 * e1 + g21 * e4 + g22 * e7
    t22 = g20 * e2 + g21 * e5 + g22 * e8
    return (e0 * t00 + e3 * t10 + e6 * t20, e0 * t01 + e3 * t11 + e6 * t21,
            e0 * t02 + e3 * t12 + e6 * t22, e1 * t00 + e4 * t10 + e7 * t20,
            e1 * t01 + e4 * t11 + e7 * t21, e1 * t02 + e4 * t12 + e7 * t22,
            e2 * t00 + e5 * t10 + e8 * t20, e2 * t01 + e5 * t11 + e8 * t21,
            e2 * t02 + e5 * t12 + e8 * t22)


@nb.njit(cache=True, nogil=True, _nrt=False)
def _path_carry(c, C, B):
    """Row c carried rigidly from its stamp to body c's current pose: ``Δᵀ I^a Δ``,
    ``Δᵀ p^a`` and the first moment ``m r_Δ + E_Δᵀ h`` with Δ = (stamp)⁻¹ (pose) =
    (E_oᵀ E_n, r_n − E_nᵀ E_o r_o) (X⁻¹ = (Eᵀ, −E r); X_A X_B = (E_A E_B, r_B + E_Bᵀ r_A));
    Xᵀ A X with X = [E 0; −E r× E] = diag(E, E) T, T = [1 0; −r× 1]: the blocks rotated,
    W_jk = Eᵀ A_jk E, then N₂₂ = W₂₂, N₂₁ = W₂₁ − W₂₂ r×, N₁₁ = W₁₁ − W₁₂ r× + r× N₂₁."""
    o, n = _BST, _BX0
    # E = E_oᵀ E_n (row-major: E[a, b] = Σ_k E_o[k, a] E_n[k, b])
    e0 = B[c, o] * B[c, n] + B[c, o + 3] * B[c, n + 3] + B[c, o + 6] * B[c, n + 6]
    e1 = B[c, o] * B[c, n + 1] + B[c, o + 3] * B[c, n + 4] + B[c, o + 6] * B[c, n + 7]
    e2 = B[c, o] * B[c, n + 2] + B[c, o + 3] * B[c, n + 5] + B[c, o + 6] * B[c, n + 8]
    e3 = B[c, o + 1] * B[c, n] + B[c, o + 4] * B[c, n + 3] + B[c, o + 7] * B[c, n + 6]
    e4 = B[c, o + 1] * B[c, n + 1] + B[c, o + 4] * B[c, n + 4] + B[c, o + 7] * B[c, n + 7]
    e5 = B[c, o + 1] * B[c, n + 2] + B[c, o + 4] * B[c, n + 5] + B[c, o + 7] * B[c, n + 8]
    e6 = B[c, o + 2] * B[c, n] + B[c, o + 5] * B[c, n + 3] + B[c, o + 8] * B[c, n + 6]
    e7 = B[c, o + 2] * B[c, n + 1] + B[c, o + 5] * B[c, n + 4] + B[c, o + 8] * B[c, n + 7]
    e8 = B[c, o + 2] * B[c, n + 2] + B[c, o + 5] * B[c, n + 5] + B[c, o + 8] * B[c, n + 8]
    # r = r_n − E_nᵀ (E_o r_o) = r_n − Eᵀ r_o (Eᵀ = E_nᵀ E_o)
    q0, q1, q2 = B[c, o + 9], B[c, o + 10], B[c, o + 11]
    r0 = B[c, n + 9] - (e0 * q0 + e3 * q1 + e6 * q2)
    r1 = B[c, n + 10] - (e1 * q0 + e4 * q1 + e7 * q2)
    r2 = B[c, n + 11] - (e2 * q0 + e5 * q1 + e8 * q2)
    # the symmetric blocks from their lower entries (00, 10, 11, 20, 21, 22)
    w00, _, _, w10, w11, _, w20, w21, w22 = _rotated(
        e0, e1, e2, e3, e4, e5, e6, e7, e8, C[c, 0], C[c, 1], C[c, 3], C[c, 1], C[c, 2],
        C[c, 4], C[c, 3], C[c, 4], C[c, 5])
    v00, _, _, v10, v11, _, v20, v21, v22 = _rotated(
        e0, e1, e2, e3, e4, e5, e6, e7, e8, C[c, 9], C[c, 13], C[c, 18], C[c, 13], C[c, 14],
        C[c, 19], C[c, 18], C[c, 19], C[c, 20])
    g00, g01, g02, g10, g11, g12, g20, g21, g22 = _rotated(
        e0, e1, e2, e3, e4, e5, e6, e7, e8, C[c, 6], C[c, 7], C[c, 8], C[c, 10], C[c, 11],
        C[c, 12], C[c, 15], C[c, 16], C[c, 17])
    # N₂₁ = W₂₁ − W₂₂ r× ((M r×)[a, :] = (M_a1 r2 − M_a2 r1, M_a2 r0 − M_a0 r2,
    # M_a0 r1 − M_a1 r0))
    n00 = g00 - (v10 * r2 - v20 * r1)
    n01 = g01 - (v20 * r0 - v00 * r2)
    n02 = g02 - (v00 * r1 - v10 * r0)
    n10 = g10 - (v11 * r2 - v21 * r1)
    n11 = g11 - (v21 * r0 - v10 * r2)
    n12 = g12 - (v10 * r1 - v11 * r0)
    n20 = g20 - (v21 * r2 - v22 * r1)
    n21 = g21 - (v22 * r0 - v20 * r2)
    n22 = g22 - (v20 * r1 - v21 * r0)
    # N₁₁[a, b] = W₁₁[a, b] − (W₁₂ r×)[a, b] + (r× N₂₁)[a, b], lower entries; W₁₂[a, k] =
    # W₂₁[k, a], (r× N)[:, b] = r × N[:, b]
    C[c, 0] = w00 - (g10 * r2 - g20 * r1) + (r1 * n20 - r2 * n10)
    C[c, 1] = w10 - (g11 * r2 - g21 * r1) + (r2 * n00 - r0 * n20)
    C[c, 2] = w11 - (g21 * r0 - g01 * r2) + (r2 * n01 - r0 * n21)
    C[c, 3] = w20 - (g12 * r2 - g22 * r1) + (r0 * n10 - r1 * n00)
    C[c, 4] = w21 - (g22 * r0 - g02 * r2) + (r0 * n11 - r1 * n01)
    C[c, 5] = w22 - (g02 * r1 - g12 * r0) + (r0 * n12 - r1 * n02)
    C[c, 6], C[c, 7], C[c, 8], C[c, 9] = n00, n01, n02, v00
    C[c, 10], C[c, 11], C[c, 12], C[c, 13], C[c, 14] = n10, n11, n12, v10, v11
    C[c, 15], C[c, 16], C[c, 17], C[c, 18], C[c, 19], C[c, 20] = n20, n21, n22, v20, v21, v22
    # Xᵀ (n, f) = (Eᵀ n + r × Eᵀ f, Eᵀ f); the first moment m r + Eᵀ h
    p = _PPA
    m0 = e0 * C[c, p] + e3 * C[c, p + 1] + e6 * C[c, p + 2]
    m1 = e1 * C[c, p] + e4 * C[c, p + 1] + e7 * C[c, p + 2]
    m2 = e2 * C[c, p] + e5 * C[c, p + 1] + e8 * C[c, p + 2]
    f0 = e0 * C[c, p + 3] + e3 * C[c, p + 4] + e6 * C[c, p + 5]
    f1 = e1 * C[c, p + 3] + e4 * C[c, p + 4] + e7 * C[c, p + 5]
    f2 = e2 * C[c, p + 3] + e5 * C[c, p + 4] + e8 * C[c, p + 5]
    C[c, p], C[c, p + 1], C[c, p + 2] = m0 + r1 * f2 - r2 * f1, m1 + r2 * f0 - r0 * f2, \
        m2 + r0 * f1 - r1 * f0
    C[c, p + 3], C[c, p + 4], C[c, p + 5] = f0, f1, f2
    ms, y0, y1, y2 = C[c, _PM], C[c, _PH], C[c, _PH + 1], C[c, _PH + 2]
    C[c, _PH] = ms * r0 + e0 * y0 + e3 * y1 + e6 * y2
    C[c, _PH + 1] = ms * r1 + e1 * y0 + e4 * y1 + e7 * y2
    C[c, _PH + 2] = ms * r2 + e2 * y0 + e5 * y1 + e8 * y2
    for m in range(12):
        B[c, _BST + m] = B[c, _BX0 + m]


@nb.njit(cache=True, nogil=True, _nrt=False)
def _path_row(data, i, p, C, B, F, first, kids, stack, Sx) -> bool:
    """Row i of the path cache from body i's inertia and its children's rows (each carried
    to the child's present pose first when it has moved since its row was made); False
    if D_i is not above the model's singular tolerance (or not finite). Written on
    scalars, which the compiler keeps in registers (DESIGN, the fast path)."""
    _path_inertia(data, i, B, F, Sx, stack)
    acc = C[i]  # (the row is summed in place)
    for k in range(_PIA, _PPA):
        acc[k] = B[i, _BI + k]
    for k in range(_PPA, _PM):
        acc[k] = 0.0
    acc[_PM] = data[i, MASS]
    acc[_PH], acc[_PH + 1], acc[_PH + 2] = B[i, _BI + 12], B[i, _BI + 15], B[i, _BI + 7]
    for j in range(first[i], first[i + 1]):  # + the children's rows (index order)
        c = kids[j]
        _path_pose(data, c, B, F, stack)
        for m in range(12):
            if B[c, _BST + m] != B[c, _BX0 + m]:
                _path_carry(c, C, B)
                break
        for k in range(_PW):
            acc[k] += C[c, k]
    if int(data[i, NVJ]) == 1:
        # U = I^A S⁰, D = S⁰ᵀ U (+ armature), u = p_i − S⁰ᵀ p^A; the parent receives
        # I^A − U Uᵀ/D and p^A + U u/D
        s0, s1, s2 = B[i, _BS], B[i, _BS + 1], B[i, _BS + 2]
        s3, s4, s5 = B[i, _BS + 3], B[i, _BS + 4], B[i, _BS + 5]
        u0, u1, u2, u3, u4, u5 = sym_times_s(
            acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7], acc[8], acc[9],
            acc[10], acc[11], acc[12], acc[13], acc[14], acc[15], acc[16], acc[17], acc[18],
            acc[19], acc[20], s0, s1, s2, s3, s4, s5)
        D = (data[i, ARMATURE] + s0 * u0 + s1 * u1 + s2 * u2 + s3 * u3 + s4 * u4
             + s5 * u5)
        if not D > data[data.shape[0] - 1, SINGTOL]:
            return False
        p_ = _PPA
        u = p[int(data[i, IV])] - (s0 * acc[p_] + s1 * acc[p_ + 1] + s2 * acc[p_ + 2]
                                   + s3 * acc[p_ + 3] + s4 * acc[p_ + 4] + s5 * acc[p_ + 5])
        e = u / D
        acc[_PUU] += u * e
        acc[p_] += u0 * e
        acc[p_ + 1] += u1 * e
        acc[p_ + 2] += u2 * e
        acc[p_ + 3] += u3 * e
        acc[p_ + 4] += u4 * e
        acc[p_ + 5] += u5 * e
        b0, b1, b2, b3, b4, b5 = u0 / D, u1 / D, u2 / D, u3 / D, u4 / D, u5 / D
        acc[0] -= b0 * u0
        acc[1] -= b1 * u0
        acc[2] -= b1 * u1
        acc[3] -= b2 * u0
        acc[4] -= b2 * u1
        acc[5] -= b2 * u2
        acc[6] -= b3 * u0
        acc[7] -= b3 * u1
        acc[8] -= b3 * u2
        acc[9] -= b3 * u3
        acc[10] -= b4 * u0
        acc[11] -= b4 * u1
        acc[12] -= b4 * u2
        acc[13] -= b4 * u3
        acc[14] -= b4 * u4
        acc[15] -= b5 * u0
        acc[16] -= b5 * u1
        acc[17] -= b5 * u2
        acc[18] -= b5 * u3
        acc[19] -= b5 * u4
        acc[20] -= b5 * u5
    for m in range(12):
        B[i, _BST + m] = B[i, _BX0 + m]
    return True


@nb.njit(cache=True, nogil=True)
def _path_total(data, P, forces, x, cw) -> float:
    """H = Σ_roots (½ Σ u²/D − gᵀ first moment) (+ the springs' potential) from the rows."""
    C, first, kids = cw[0], cw[6], cw[7]
    nb_ = data.shape[0] - 1
    T, V = 0.0, 0.0
    for j in range(first[nb_], first[nb_ + 1]):
        c = kids[j]
        T += C[c, _PUU]
        V -= (data[nb_, GRAV] * C[c, _PH] + data[nb_, GRAV + 1] * C[c, _PH + 1]
              + data[nb_, GRAV + 2] * C[c, _PH + 2])
    H = 0.5 * T + V
    if forces:
        H += spring_potential(P, x)
    return H


@nb.njit(cache=True, nogil=True)
def path_hamiltonian(data, P, forces, x, p, cw) -> float:
    """H(x, p) = ½ pᵀM⁻¹p + V(x) (+ the springs' potential) by the backward pass alone,
    every pose and row of the path cache cw (:func:`path_workspace`) made anew; NaN if a
    pivot D_i is singular. Equals :func:`hamiltonian_aba` to round-off
    (tests/integrators/test_discrete_gradient_compiled.py); joints of one speed (or none)
    only — cw's flag."""
    C, B, F, first, kids, stack, Sx = cw[0], cw[1], cw[2], cw[6], cw[7], cw[11], cw[12]
    nb_ = data.shape[0] - 1
    for i in range(nb_):
        if kernels.joint_transform(data, i, x, B) != 0:  # (X_up: B's first columns)
            return np.nan
        F[i, 0], F[i, 1] = 0, 0
    for i in range(nb_ - 1, -1, -1):
        if not _path_row(data, i, p, C, B, F, first, kids, stack, Sx):
            return np.nan
    return _path_total(data, P, forces, x, cw)


@nb.njit(cache=True, nogil=True)
def path_hamiltonian_moved(data, P, forces, x, p, k, cw) -> float:
    """:func:`path_hamiltonian` after x_k alone has changed since cw was last used (x and
    p otherwise the same): X_up of k's body anew, the poses of its subtree marked stale,
    the rows of k's body and its ancestors made anew — O(depth) (module comment)."""
    C, B, F, first, kids, stack, Sx = cw[0], cw[1], cw[2], cw[6], cw[7], cw[11], cw[12]
    sfirst, sub = cw[8], cw[9]
    i = cw[10][k]
    if kernels.joint_transform(data, i, x, B) != 0:
        return np.nan
    for j in range(sfirst[i], sfirst[i + 1]):
        F[sub[j], 0], F[sub[j], 1] = 0, 0
    while i >= 0:
        if not _path_row(data, i, p, C, B, F, first, kids, stack, Sx):
            return np.nan
        i = int(data[i, PARENT])
    return _path_total(data, P, forces, x, cw)

# ------------------------------------------------------------------- discrete gradients
@nb.njit(cache=True, nogil=True)
def path_start(data, P, forces, q, p, aw, v, cw) -> float:
    """H(q, p) at the start of Itoh–Abe's forward path, for :func:`configuration_part`
    with ``H_start`` = this value: by :func:`path_hamiltonian`, its rows kept in cw as the
    path's start (cw's flag 0, joints of several speeds: :func:`hamiltonian_aba`)."""
    if cw[13][0] == 0:
        return hamiltonian_aba(data, P, forces, q, p, aw, v)
    H = path_hamiltonian(data, P, forces, q, p, cw)
    cw[3][:] = cw[0]
    cw[4][:] = cw[1]
    cw[5][:] = cw[2]
    return H


@nb.njit(cache=True, nogil=True)
def _path_point(data, P, forces, x, p, k, aw, v, cw) -> float:
    """H at the path's next point, x_k moved (k < 0: the path's start):
    :func:`path_hamiltonian_moved` (:func:`path_hamiltonian`), or :func:`hamiltonian_aba`
    when cw's flag says a joint has several speeds."""
    if cw[13][0] == 0:
        return hamiltonian_aba(data, P, forces, x, p, aw, v)
    if k < 0:
        return path_hamiltonian(data, P, forces, x, p, cw)
    return path_hamiltonian_moved(data, P, forces, x, p, k, cw)


@nb.njit(cache=True, nogil=True)
def configuration_part(data, P, forces, q, p, dq, reverse, g, x, aw, v, cw, H_start) -> bool:
    """Itoh–Abe's ∇̄_qH at fixed p, the coordinates moved in the order 1..n (``reverse``:
    n..1): ``g_i = [H(.., q_i + Δq_i, ..) − H(..)]/Δq_i``; below an increment of
    1e-5 (1 + |q_i|) the central difference of H at the increment's midpoint (as
    :meth:`.discrete_gradient.ItohAbe.configuration_part`). Each H by
    :func:`path_hamiltonian_moved` from the last point's rows, O(depth of the moved
    joint) (cw its workspace; :func:`hamiltonian_aba`, O(n), for joints of several
    speeds). ``H_start``: H(q, p) by :func:`path_start` (the same for every residual of a
    step, its rows restored from cw), or NaN: made here."""
    n = q.shape[0]
    for i in range(n):
        x[i] = q[i]
    if np.isfinite(H_start):
        H_prev = H_start
        cw[0][:] = cw[3]
        cw[1][:] = cw[4]
        cw[2][:] = cw[5]
    else:
        H_prev = _path_point(data, P, forces, x, p, -1, aw, v, cw)
    for k in range(n):
        i = n - 1 - k if reverse else k
        scale = 1.0 + abs(q[i])
        if abs(dq[i]) > 1e-5 * scale:
            x[i] = q[i] + dq[i]
            H_new = _path_point(data, P, forces, x, p, i, aw, v, cw)
            g[i] = (H_new - H_prev) / dq[i]
        else:
            e = 1e-5 * scale
            x[i] = q[i] + (0.5 * dq[i] + e)
            Hp = _path_point(data, P, forces, x, p, i, aw, v, cw)
            x[i] = q[i] + (0.5 * dq[i] - e)
            g[i] = (Hp - _path_point(data, P, forces, x, p, i, aw, v, cw)) / (2 * e)
            x[i] = q[i] + dq[i]
            H_new = _path_point(data, P, forces, x, p, i, aw, v, cw)
        if not np.isfinite(H_new):
            return False
        H_prev = H_new
    return True


@nb.njit(cache=True, nogil=True)
def configuration_gradient(data, P, forces, kind, q, p, d, H0, g, g1, x, pk, aw, v, cw) -> bool:
    """g ← Itoh–Abe's ∇̄_qH for the increment d = (Δq, Δp): the forward path q_1..q_n at p
    (H0 = H(q, p) by :func:`path_start`), and for ``ITOH_ABE_SYMMETRIC`` its mean with the
    reverse path q_n..q_1 at p + Δp (the second half of the reverse path p_n..p_1, then
    q_n..q_1). The one form of it for :func:`_residual` and :func:`_polish`; g1, x, pk:
    scratch."""
    n = q.shape[0]
    dq = d[:n]
    if not configuration_part(data, P, forces, q, p, dq, False, g, x, aw, v, cw, H0):
        return False
    if kind == ITOH_ABE_SYMMETRIC:
        for i in range(n):
            pk[i] = p[i] + d[n + i]
        if not configuration_part(data, P, forces, q, pk, dq, True, g1, x, aw, v, cw, np.nan):
            return False
        for i in range(n):
            g[i] = 0.5 * (g[i] + g1[i])
    return True


@nb.njit(cache=True, nogil=True)
def momentum_part(Minv, p, dp, reverse, g):
    """Itoh–Abe's ∇̄_pH with ∂²H/∂p² = M⁻¹ (of the configuration it is taken at): in
    closed form, ``g_i = (M⁻¹ p̃)_i + ½ Δp_i M⁻¹_ii`` with p̃ the momenta moved so far."""
    n = p.shape[0]
    for k in range(n):
        i = n - 1 - k if reverse else k
        s = 0.5 * dp[i] * Minv[i, i]
        for j in range(n):
            moved = (j > i) if reverse else (j < i)
            s += Minv[i, j] * (p[j] + dp[j] if moved else p[j])
        g[i] = s


@nb.njit(cache=True, nogil=True)
def inverse(L, Minv):
    """Minv ← M⁻¹ = L⁻ᵀL⁻¹ from the Cholesky factor L of M = LLᵀ, in n³/3 multiply-adds
    (LAPACK's dpotri does the same work; n solves with L and Lᵀ took 3 times as many):

    1. the rows of Y = L⁻ᵀ (upper triangle), row j the solution of L y = e_j by forward
       substitution, y_j = 1/L_jj, y_k = −(Σ_{j≤m<k} L_km y_m)/L_kk;
    2. (M⁻¹)_ij = Σ_{k≥i} Y_ik Y_jk for j ≤ i, row by row into the lower triangle: the
       strict lower one is free, and the diagonal entry, which holds Y_ii, is needed by
       its own row alone and written after it;
    3. the lower triangle mirrored."""
    n = L.shape[0]
    for j in range(n):
        Minv[j, j] = 1.0 / L[j, j]
        for k in range(j + 1, n):
            s = 0.0
            for m in range(j, k):
                s += L[k, m] * Minv[j, m]
            Minv[j, k] = -s / L[k, k]
    for i in range(n):
        for j in range(i):
            s = 0.0
            for k in range(i, n):
                s += Minv[i, k] * Minv[j, k]
            Minv[i, j] = s
        s = 0.0
        for k in range(i, n):
            s += Minv[i, k] * Minv[i, k]
        Minv[i, i] = s
    for i in range(n):
        for j in range(i):
            Minv[j, i] = Minv[i, j]


# --------------------------------------------------------------------------- Newton matrix
@nb.njit(cache=True, nogil=True)
def newton_matrix(data, P, forces, kind, q, v, L, h, J, piv, Minv, B, G, D, zero, slope,
                  vs) -> bool:
    """J ← the LU factors of ``1 + h [[−∂ḡ_p/∂Δq, −∂ḡ_p/∂Δp], [∂ḡ_q/∂Δq, ∂ḡ_q/∂Δp]]``
    with ``∂ḡ/∂d = W ⊙ ∇²H(q, p)`` (module doc); L the Cholesky factor of M(q). With
    force rows: the springs' k in H_qq, and the p-rows' ``+ h C ∂ḡ_p/∂d`` of
    ``−h τ_nc(ḡ_p)``, C = diag(−∂τ_nc/∂v) (dampers, friction) at the velocity ``vs``
    where τ_nc acts — v for the symmetric gradients, Itoh–Abe's own ḡ_p for the forward
    variant: inside a friction law's band the slope changes by O(1) between the two, and
    taken at v it left Newton contracting by only 0.4–0.8 an update."""
    n = q.shape[0]
    inverse(L, Minv)
    zero[:] = 0.0
    s = rnea_tangent_static(data, False, q, v, B)     # B = ∂(M v)/∂q
    s |= rnea_tangent_static(data, True, q, zero, G)  # ∂g/∂q
    s |= kinetic_tangent(data, q, v, D)                    # ∂²T/∂q²
    if s != 0:
        return False
    A = -(Minv @ B)             # H_pq = ∂v/∂q|_p
    K = B.T @ (Minv @ B)        # H_qq = −∂²T/∂q² + ∂g/∂q + BᵀM⁻¹B
    for i in range(n):
        for j in range(n):
            K[i, j] += G[i, j] - D[i, j]
    slope[:] = 0.0
    if forces:
        damping_slopes(P, vs, slope)
        for i in range(n):
            K[i, i] += P[i, P_K]
    for i in range(n):
        for j in range(n):
            if kind == ITOH_ABE:  # the weights of the path q_1..q_n, then p_1..p_n
                w = 1.0 if j < i else (0.5 if j == i else 0.0)
                wqq, wqp, wpq, wpp = w, 0.0, 1.0, w
            else:
                wqq, wqp, wpq, wpp = 0.5, 0.5, 0.5, 0.5
            d = 1.0 if i == j else 0.0
            J[i, j] = d - h * wpq * A[i, j]                 # ∂R_q/∂Δq
            J[i, n + j] = -h * wpp * Minv[i, j]             # ∂R_q/∂Δp
            J[n + i, j] = h * (wqq * K[i, j] + slope[i] * wpq * A[i, j])  # ∂R_p/∂Δq
            J[n + i, n + j] = d + h * (wqp * A[j, i]                       # ∂R_p/∂Δp
                                       + slope[i] * wpp * Minv[i, j])      # (H_qp = H_pqᵀ)
    return lu_factor(J, piv)


# ------------------------------------------------------------------------------ the loop
@nb.njit(cache=True, nogil=True)
def _dg_loop(data, P, forces, t0, kind, carry_p, q0, v0, dt, n_steps, every, xi, w, mask, tol,
             stagnation, maxiter, refresh, degree, slow, cost, floor, blowup, Q, V, Wk,
             iters, status):
    n = v0.shape[0]
    nb_ = data.shape[0] - 1
    q, v = q0.copy(), v0.copy()
    mw0 = mass_workspace(n, nb_)  # M(q) at the start of the step, its factor
    M0, L0 = mw0[0], mw0[1]
    mw = mass_workspace(n, nb_)  # M and its factor at the points the residual visits
    ew = energy_workspace(nb_)
    aw = aba_velocity_workspace(data, n)  # M⁻¹p by ABA (O(n)) in the residuals
    cw = path_workspace(data)  # Itoh–Abe's H along its coordinate paths
    # the Cholesky factor at the step's end is needed by Itoh–Abe's M⁻¹(q) and by p = M v
    # (Gonzalez's reference without carry_p); otherwise v = M⁻¹p by ABA
    need_M0 = not carry_p or kind == ITOH_ABE or kind == ITOH_ABE_SYMMETRIC
    Minv, Minv0 = np.empty((n, n)), np.empty((n, n))
    B, G, D = np.empty((n, n)), np.empty((n, n)), np.empty((n, n))
    J, piv = np.empty((2 * n, 2 * n)), np.empty(2 * n, dtype=np.int64)
    zero, x = np.zeros(n), np.empty(n)
    qk, pk, vk, dT, dV, out = (np.empty(n), np.empty(n), np.empty(n), np.empty(n),
                               np.empty(n), np.empty(8))
    gq, gp, g1, g2 = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    d, d0, r = np.zeros(2 * n), np.zeros(2 * n), np.empty(2 * n)
    tau_nc, tau, slope, vs = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    work = 0.0
    Wk[0] = 0.0
    # the last increments (a ring, newest at `newest`), the order k ≤ degree + 1 of the
    # extrapolation that predicted the last step best
    hist = np.zeros((degree + 1, 1, 2 * n))
    d0_, work_ = d0.reshape((1, 2 * n)), np.empty((1, 2 * n))
    n_hist, newest, order, last_h, since = 0, 0, 1, 0.0, refresh
    rate_kept = np.inf  # the last contraction measured (carried to the next steps' first update)
    kind_carries = kind == AVF or (kind == ITOH_ABE and not forces)  # (module doc)
    # AVF with force rows extrapolates (Δq, Δp − h τ_nc(v̄)) and adds h τ_nc back at the
    # predicted v̄ = Δq/h (module doc)
    split = forces and kind == AVF
    dm = np.zeros(2 * n)
    fewest, excess = 0, 0  # the residuals of the steps since the matrix was built (`cost`)
    p = np.empty(n)
    if not factor_mass(data, q, mw0):
        status[0], status[1] = 3, 0
        return store(q, v, Q, V, 0)
    p[:] = M0 @ v
    k_out = store(q, v, Q, V, 0)
    vmax0 = 0.0
    for i in range(n):
        vmax0 = max(vmax0, abs(v[i]))
    for step in range(n_steps):
        h = dt[step]
        tm = t0 + step * dt[0] + 0.5 * h  # the midpoint time (the grid of step_grid)
        if not carry_p:
            p[:] = M0 @ v  # the Gonzalez reference takes p = M v at every step
        H0 = 0.0
        if kind == GONZALEZ:  # its ΔH
            H0 = hamiltonian_aba(data, P, forces, q, p, aw, vk)
        elif kind != AVF:  # Itoh–Abe: H at the start of the forward path, its rows kept
            H0 = path_start(data, P, forces, q, p, aw, vk, cw)
        if kind == ITOH_ABE_SYMMETRIC:  # (and M⁻¹ at q, for its reverse path's ∇̄_pH)
            inverse(L0, Minv0)
        if h != last_h:
            n_hist, since = 0, refresh
        # predictor: the polynomial through the last `order` increments, extrapolated
        # (Σ_j (−1)^{j+1} C(k, j) d_{n−j}); `order` the one that predicted the last step
        # best (high on smooth motion, low where a friction law turns sharply)
        if n_hist == 0:
            for i in range(n):
                d0[i] = h * v[i]
                d0[n + i] = 0.0
        else:
            extrapolate(hist, newest, min(order, n_hist), d0_)
            if split:
                for i in range(n):
                    qk[i] = q[i] + 0.5 * d0[i]
                    vk[i] = d0[i] / h
                if applied_forces(data, P, tm, qk, vk, tau_nc, tau):
                    status[0], status[1] = 3, step
                    return k_out
                for i in range(n):
                    d0[n + i] += h * tau_nc[i]
        ok, total, built = False, 0, False
        for attempt in range(2):
            # the Newton matrix: kept for `refresh` steps, rebuilt when it contracts badly
            fresh = since >= refresh or attempt == 1
            if attempt == 0 or not np.all(np.isfinite(d)):
                d[:] = d0  # (a rebuilt matrix goes on from the last iterate)
            if fresh:
                # ∇²H at the midpoint of the predicted step: the AVF Jacobian
                # Σ w_k ξ_k ∇²H(z + ξ_k d) differs from ½∇²H(z + d/2) by O(h |d|²)
                if forces and kind == ITOH_ABE:
                    # where its τ_nc acts: ḡ_p with M⁻¹ at q + Δq (it differs from the
                    # midpoint's M⁻¹p̄ by O(h v̇), far more than a friction band is wide)
                    for i in range(n):
                        qk[i] = q[i] + d[i]
                    if not factor_mass(data, qk, mw):
                        status[0], status[1] = 3, step
                        return k_out
                    inverse(mw[1], Minv)
                    momentum_part(Minv, p, d[n:], False, vs)
                for i in range(n):
                    qk[i] = q[i] + 0.5 * d[i]
                    pk[i] = p[i] + 0.5 * d[n + i]
                if not velocity(data, qk, pk, mw, vk) or not newton_matrix(
                        data, P, forces, kind, qk, vk, mw[1], h, J, piv, Minv, B, G, D,
                        zero, slope, vs if forces and kind == ITOH_ABE else vk):
                    status[0], status[1] = 3, step
                    return k_out
                since, built = 0, True
                status[2] += 1
            last, rate, again = np.inf, 0.0, False
            for it in range(1, maxiter + 1):
                total += 1
                if not _residual(data, P, forces, tm, kind, q, p, H0, Minv0, d, h, xi, w, mask, r,
                                 gq, gp, g1, g2, qk, pk, vk, dT, dV, out, mw, aw, ew, Minv, x,
                                 tau_nc, tau, cw):
                    break
                lu_solve(J, piv, r)
                size, scale = 0.0, 0.0
                for i in range(2 * n):
                    d[i] -= r[i]
                    size = nan_max(size, abs(r[i]))
                    scale = max(scale, abs(d[i]))
                if not np.isfinite(size):
                    break
                if it == 1:
                    # the first update: the contraction carried from the last step that
                    # measured it (as Hairer & Wanner's RADAU5 carry theirs) — when it is
                    # small the update is already below tol (AVF and the forward Itoh–Abe
                    # without forces only: the differences of H in Gonzalez's and the
                    # symmetric Itoh–Abe's R make it unreliable, module doc)
                    theta = rate_kept if kind_carries else 1.0
                else:
                    theta = size / last if last > 0 else 1.0
                # the contraction of the matrix, judged only on updates well above the
                # roundoff floor of R (where θ says nothing about the matrix): 1e-12 for
                # the gradients, 1e-9 for Itoh–Abe's differences of H
                measured = it >= 2 and last > max(1e3 * tol, 1e-3 * stagnation) * scale
                if measured:
                    rate = theta
                    rate_kept = theta
                elif it >= 2 and theta < rate_kept:
                    # below that floor the quotient is the contraction plus round-off, so at
                    # least the contraction: a bound that lets the next steps stop after one
                    # update again (a hard step's θ would otherwise be carried on and on)
                    rate_kept = theta
                if (size <= tol * scale
                        or (theta < 0.5 and theta / (1 - theta) * size <= tol * scale)
                        or (it >= 2 and size <= stagnation * scale and theta >= 0.5
                            and (floor <= 0.0 or attempt == 1))
                        or (it >= 2 and size <= floor * scale)):
                    # (stagnation: an update at the roundoff floor that no longer shrinks —
                    # which takes two updates to see, as the predictor may start within it;
                    # `floor`: an update this small leaves an error at the noise of R)
                    ok = True
                    break
                if measured and theta > 0.1 and not fresh:
                    break  # the kept matrix hardly contracts: rebuild it now
                if (floor > 0.0 and attempt == 0 and it >= 2 and theta >= 0.5
                        and size <= stagnation * scale):
                    # a stall above the floor is not yet roundoff: as the Python steps
                    # refresh their matrix there (base.newton's floor), rebuild it at
                    # this iterate, and take a stall under that one
                    again = True
                    break
                last = size
            if ok and rate > slow:
                since = refresh  # it contracts slowly: rebuild it at the next step
            if ok or (fresh and not again):
                break  # (a fresh matrix that fails: the Python method reports)
        iters[step] = total
        if built:
            fewest, excess = total, 0
        else:
            fewest = min(fewest, total)
            excess += total - fewest
            if kind_carries and excess >= cost:
                since = refresh  # it has cost a matrix's price in residuals: rebuild it
        if not ok:
            status[0], status[1] = 1, step
            return k_out
        since += 1
        if forces and (kind == ITOH_ABE or kind == ITOH_ABE_SYMMETRIC):  # (module doc)
            if not _polish(data, P, forces, tm, kind, q, p, H0, Minv0, d, h, g1, g2, gp, x, mw,
                           aw, vk, Minv, qk, pk, tau_nc, tau, cw):
                status[0], status[1] = 3, step
                return k_out
        if forces:
            # W_nc += h v̄ᵀ τ_nc(t + h/2, q̄, v̄) with v̄ = Δq/h (the Python methods')
            for i in range(n):
                qk[i] = q[i] + 0.5 * d[i]
                vk[i] = d[i] / h
            if applied_forces(data, P, tm, qk, vk, tau_nc, tau):
                status[0], status[1] = 3, step
                return k_out
            for i in range(n):
                work += h * vk[i] * tau_nc[i]
        d_ = d.reshape((1, 2 * n))
        if split:  # the ring holds Δp − h τ_nc(t + h/2, v̄) (τ_nc just computed for W_nc)
            for i in range(n):
                dm[i] = d[i]
                dm[n + i] = d[n + i] - h * tau_nc[i]
            d_ = dm.reshape((1, 2 * n))
        order = best_order(hist, newest, n_hist, d_, work_) if n_hist else 1
        newest = (newest + 1) % (degree + 1)
        hist[newest] = d_
        n_hist, last_h = min(n_hist + 1, degree + 1), h
        for i in range(n):
            q[i] += d[i]
            p[i] += d[n + i]
        if need_M0:
            if not factor_mass(data, q, mw0):
                status[0], status[1] = 3, step
                return k_out
            cholesky_solve(L0, n, p, v)
        elif not velocity_aba(q, p, aw, v):
            status[0], status[1] = 3, step
            return k_out
        if state_guard(q, v, vmax0, blowup) != 0:
            status[0], status[1] = 2, step + 1
            return k_out
        kept = save_sample(step, n_steps, every, q, v, Q, V, k_out)
        if kept != k_out:
            Wk[k_out] = work
            k_out = kept
    return k_out


@nb.njit(cache=True, nogil=True)
def _residual(data, P, forces, tm, kind, q, p, H0, Minv0, d, h, xi, w, mask, r, gq, gp, g1, g2,
              qk, pk, vk, dT, dV, out, mw, aw, ew, Minv, x, tau_nc, tau, cw) -> bool:
    """r ← R(d) = (Δq − h ∇̄_pH, Δp + h ∇̄_qH − h τ_nc(t + h/2, q + Δq/2, ∇̄_pH)) for the
    discrete gradient ``kind`` (τ_nc: the force rows P, when ``forces``). The forward
    Itoh–Abe without forces first sets Δp = −h ∇̄_qH(Δq) in d, so that R_p = 0 (module
    doc)."""
    n = q.shape[0]
    dq, dp = d[:n], d[n:]
    if kind == AVF:
        # ∫₀¹ ∇H(z + ξ d) dξ by Gauss–Legendre (Quispel & McLaren 2008)
        gq[:] = 0.0
        gp[:] = 0.0
        for k in range(xi.shape[0]):
            for i in range(n):
                qk[i] = q[i] + xi[k] * dq[i]
                pk[i] = p[i] + xi[k] * dp[i]
            if not gradient_aba(data, P, forces, qk, pk, aw, vk, ew, dT, dV, out, g1):
                return False
            for i in range(n):
                gq[i] += w[k] * g1[i]
                gp[i] += w[k] * vk[i]
    elif kind == GONZALEZ:
        # ∇H(z̄) + [ΔH − ∇H(z̄)·d]/(m·d) m, m = d without the cyclic Δq_k (Gonzalez 1996)
        for i in range(n):
            qk[i] = q[i] + 0.5 * dq[i]
            pk[i] = p[i] + 0.5 * dp[i]
        if not gradient_aba(data, P, forces, qk, pk, aw, vk, ew, dT, dV, out, gq):
            return False
        gp[:] = vk
        for i in range(n):
            qk[i] = q[i] + dq[i]
            pk[i] = p[i] + dp[i]
        dH = hamiltonian_aba(data, P, forces, qk, pk, aw, vk) - H0
        if not np.isfinite(dH):
            return False
        den, gd, gg = 0.0, 0.0, 0.0
        for i in range(n):
            den += mask[i] * dq[i] * dq[i] + dp[i] * dp[i]
            gd += gq[i] * dq[i] + gp[i] * dp[i]
            gg += gq[i] * gq[i] + gp[i] * gp[i]
        floor = 1e3 * _EPS * (abs(H0) + 1.0) / (np.sqrt(gg) + 1e-300)
        if den > floor * floor:
            c = (dH - gd) / den
            for i in range(n):
                gq[i] += c * mask[i] * dq[i]
                gp[i] += c * dp[i]
    else:
        # Itoh–Abe (Itoh & Abe 1988): q_1..q_n at p, then p_1..p_n at q + Δq; symmetrised:
        # the mean with the reverse path p_n..p_1 at q, then q_n..q_1 at p + Δp
        if not configuration_gradient(data, P, forces, kind, q, p, d, H0, gq, g1, x, pk, aw,
                                      vk, cw):
            return False
        if kind == ITOH_ABE and not forces:
            # the momentum equation solved at this Δq, so R_p = 0 (module doc, "the forward
            # Itoh–Abe's momentum equation eliminated")
            for i in range(n):
                dp[i] = -h * gq[i]
        for i in range(n):
            qk[i] = q[i] + dq[i]
        if not factor_mass(data, qk, mw):
            return False
        inverse(mw[1], Minv)
        momentum_part(Minv, p, dp, False, gp)
        if kind == ITOH_ABE_SYMMETRIC:
            momentum_part(Minv0, p, dp, True, g2)
            for i in range(n):
                gp[i] = 0.5 * (gp[i] + g2[i])
    for i in range(n):
        r[i] = dq[i] - h * gp[i]
        r[n + i] = dp[i] + h * gq[i]
    if forces:
        for i in range(n):
            qk[i] = q[i] + 0.5 * dq[i]
        if applied_forces(data, P, tm, qk, gp, tau_nc, tau):
            return False
        for i in range(n):
            r[n + i] -= h * tau_nc[i]
    return True


@nb.njit(cache=True, nogil=True)
def _polish(data, P, forces, tm, kind, q, p, H0, Minv0, d, h, g1, g2, gp, x, mw, aw, v, Minv,
            qk, pk, tau_nc, tau, cw) -> bool:
    """Δp ← −h ∇̄_qH(Δq, Δp) + h τ_nc(t + h/2, q̄, ∇̄_pH) once more after Newton (as
    ``ItohAbe.polish`` for additive coordinates with forces: up to four sweeps of that
    fixed point for the forward variant, one for the symmetric): the momentum equation
    then holds to the noise of the energy differences rather than Newton's stopping
    point. Called with force rows only (without them the loop needs no polish: module
    doc)."""
    n = q.shape[0]
    dq = d[:n]
    dp = d[n:]
    if not configuration_gradient(data, P, forces, kind, q, p, d, H0, g1, g2, x, pk, aw, v,
                                  cw):
        return False
    # ∇̄_pH at Δp (M⁻¹ at q + Δq; the symmetric variant's mean with the reverse path at q)
    for i in range(n):
        qk[i] = q[i] + dq[i]
    if not factor_mass(data, qk, mw):
        return False
    inverse(mw[1], Minv)
    for i in range(n):
        qk[i] = q[i] + 0.5 * dq[i]
    for _ in range(1 if kind == ITOH_ABE_SYMMETRIC else 4):
        momentum_part(Minv, p, dp, False, gp)
        if kind == ITOH_ABE_SYMMETRIC:
            momentum_part(Minv0, p, dp, True, v)
            for i in range(n):
                gp[i] = 0.5 * (gp[i] + v[i])
        if applied_forces(data, P, tm, qk, gp, tau_nc, tau):
            return False
        same = True
        for i in range(n):
            g2[i] = -h * g1[i] + h * tau_nc[i]
            same = same and g2[i] == dp[i]
        if same:
            break
        for i in range(n):
            dp[i] = g2[i]
    return True


def run(problem, name: str, kind: int, tol: float, maxiter: int, *, nodes: int = 3,
        stagnation: float = 1e-9, cyclic=(), carry_p: bool = True, refresh: int = REFRESH,
        degree: int = DEGREE, slow: float = SLOW, cost: float = COST, floor: float = 0.0):
    """The whole run in the compiled loop: a Solution, or None to fall back."""
    from .base import Solution

    s, model = problem.system, problem.system.compiled_step
    P = problem.force_rows if problem.force_rows is not None else empty_rows(s.nv)
    n_steps, steps, times, every, keep = step_grid(problem.dt, problem.t0, problem.t_final,
                                                   problem.save_every)
    Q = np.empty((len(keep), s.nq))
    V = np.empty((len(keep), s.nv))
    W = np.zeros(len(keep))
    iters = np.zeros(n_steps, dtype=np.int32)
    x, wts = np.polynomial.legendre.leggauss(nodes)
    mask = np.ones(s.nv)
    mask[list(cyclic)] = 0.0
    status = np.zeros(3, dtype=np.int64)  # (stop code, at step, Newton matrices built)
    args = (flatten(model).data, np.ascontiguousarray(P, float), has_forces(P),
            float(problem.t0), kind, carry_p, np.ascontiguousarray(problem.q0, float),
            np.ascontiguousarray(problem.v0, float), steps, n_steps, every, 0.5 * (x + 1.0),
            0.5 * wts, mask, float(tol), float(stagnation), int(maxiter), int(refresh),
            int(degree), float(slow), float(cost), float(floor), float(problem.blowup), Q, V,
            W, iters, status)
    if not ready_or_python(_dg_loop, args, "first_run"):
        return None  # (on a cold cache: the Python steps, while a process compiles it)
    _dg_loop(*args)
    if status[0]:
        return None  # the Python method takes the whole run, and reports what happens
    return Solution(times[keep], Q, V, W,
                    {"newton_iterations": iters, "newton_matrices": np.array([status[2]])}, name)


def first_run() -> None:
    """A run of a few steps on a one-link pendulum, which compiles :func:`_dg_loop` for
    the argument types of every run (:func:`kanedyn.dynamics.first_calls.loop_ready`)."""
    from ..model.builders import pendulum_chain

    run(first_run_problem(pendulum_chain(1), [0.3], [0.0]), "avf", AVF, 1e-14, 50)
