"""Consistent initial values: q on g = 0, v on C v = 0, and the v̇, λ that go with them.

From a guess (q̃, ṽ):

1. position level — the point of g(t, q) = 0 nearest q̃ in the mass metric, by
   Gauss–Newton: ``q ← q ⊕ Δ``, ``Δ = −M⁻¹Gᵀ (G M⁻¹ Gᵀ)⁻¹ g`` (the minimum-norm step
   in ‖·‖_M; cf. the projection methods of Hairer, Lubich & Wanner, GNI, sec. IV.4);
2. velocity level — the exact M-orthogonal projection
   ``v = ṽ − M⁻¹Cᵀ (C M⁻¹ Cᵀ)⁻¹ c_v(t, q, ṽ)``;
3. acceleration level — v̇ and λ from ``[M Cᵀ; C 0][v̇; λ] = [f; γ]``.

The residual of every level is reported; a level that cannot be met raises
:class:`~kanedyn.ConstraintError` naming the level, the residual and the worst row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConstraintError
from .system import ConstrainedMechanics


@dataclass
class ConsistentState:
    q: NDArray
    v: NDArray
    vdot: NDArray
    lam: NDArray
    residuals: dict  # level -> max |residual|
    iterations: int


def _mass_projector(system, t, q):
    M = system.mass_matrix(q)
    C = system.constraint_matrix(t, q)
    MiCT = np.linalg.solve(M, C.T)
    return M, C, MiCT, C @ MiCT


def project_position(system: ConstrainedMechanics, q: ArrayLike, t: float = 0.0,
                     tol: float = 1e-12, max_iter: int = 50,
                     max_distance: float | None = None,
                     fixed: Sequence[int] = ()) -> tuple[NDArray, int]:
    """The configuration on g(t, q) = 0 nearest q in the mass metric (Gauss–Newton).

    ``fixed``: speed-space indices held at the guess (the coordinates the user
    prescribes, e.g. a crank angle); the others move, in the metric of their block of M.
    """
    q = np.array(q, dtype=float)
    free = np.setdiff1d(np.arange(system.nv), np.asarray(fixed, dtype=int))
    nc = system.nc
    if nc == 0:
        return q, 0
    scale = max(1.0, float(np.max(np.abs(q))))
    q_start = q.copy()
    res = np.inf
    for it in range(max_iter + 1):
        g = system.constraint(t, q)
        res = float(np.max(np.abs(g)))
        if not np.isfinite(res):
            break
        if res <= tol * scale:
            return q, it
        if it == max_iter:
            break
        M = system.mass_matrix(q)[np.ix_(free, free)]
        G = system.constraint_matrix(t, q)[:nc][:, free]
        MiGT = np.linalg.solve(M, G.T)
        S = G @ MiGT
        delta = np.zeros(system.nv)
        try:
            delta[free] = -MiGT @ np.linalg.solve(S, g)
        except np.linalg.LinAlgError:
            try:
                system.check_constraints(q, t=t)
            except ConstraintError as e:
                raise ConstraintError(f"position level (max|g| = {res:.3g}, iteration {it}): "
                                      f"{e}") from None
            raise ConstraintError(
                f"{system.name}: position level — G M⁻¹ Gᵀ is singular on the free "
                f"coordinates {free.tolist()} (too many coordinates fixed?)") from None
        q = system.integrate_configuration(q, delta, 1.0)
        if max_distance is not None and np.max(np.abs(q - q_start)) > max_distance:
            break
    g = system.constraint(t, q)
    k = int(np.nanargmax(np.abs(g))) if np.any(np.isfinite(g)) else 0
    raise ConstraintError(
        f"{system.name}: no consistent configuration near the guess — position level "
        f"residual max|g| = {res:.3g} after {it} Gauss–Newton iterations (worst row {k}: "
        f"{system.constraint_names[k]})")


def project_velocity(system: ConstrainedMechanics, q: ArrayLike, v: ArrayLike,
                     t: float = 0.0) -> NDArray:
    """v on the velocity constraint, the nearest to v in the mass metric."""
    v = np.array(v, dtype=float)
    if system.m == 0:
        return v
    _, _, MiCT, S = _mass_projector(system, t, q)
    cv = system.velocity_constraint(t, q, v)
    try:
        return v - MiCT @ np.linalg.solve(S, cv)
    except np.linalg.LinAlgError:
        system.check_constraints(np.asarray(q, dtype=float), t=t)
        raise


def consistent_initial_values(system: ConstrainedMechanics, q_guess: ArrayLike,
                              v_guess: ArrayLike | None = None, t: float = 0.0,
                              tol: float = 1e-12, max_iter: int = 50,
                              max_distance: float | None = None,
                              fixed: Sequence[int] = ()) -> ConsistentState:
    """Consistent (q, v, v̇, λ) nearest the guess; see the module docstring. ``fixed``
    coordinates (speed indices) keep their guessed position; v is projected freely."""
    q_guess = np.asarray(q_guess, dtype=float)
    if q_guess.shape != (system.nq,):
        raise ConstraintError(f"{system.name}: q guess must have shape ({system.nq},), "
                              f"got {q_guess.shape}")
    v_guess = np.zeros(system.nv) if v_guess is None else np.asarray(v_guess, dtype=float)
    if v_guess.shape != (system.nv,):
        raise ConstraintError(f"{system.name}: v guess must have shape ({system.nv},), "
                              f"got {v_guess.shape}")
    if not (np.all(np.isfinite(q_guess)) and np.all(np.isfinite(v_guess))):
        raise ConstraintError(f"{system.name}: the initial guess contains NaN or infinity")
    q, iters = project_position(system, q_guess, t, tol, max_iter, max_distance, fixed)
    system.check_constraints(q, t=t)
    v = project_velocity(system, q, v_guess, t)
    vdot, lam = system.accelerations(q, v, t=t)
    r = system.residuals(t, q, v, vdot)
    residuals = {k: float(np.max(np.abs(x))) if np.size(x) else 0.0 for k, x in r.items()}
    scale_v = max(1.0, float(np.max(np.abs(v))))
    if residuals["Gv"] > 1e-9 * scale_v:
        raise ConstraintError(f"{system.name}: velocity level residual max|Cv| = "
                              f"{residuals['Gv']:.3g} after projection")
    scale_a = max(1.0, float(np.max(np.abs(vdot))))
    if residuals["acc"] > 1e-8 * scale_a:
        raise ConstraintError(f"{system.name}: acceleration level residual max|Cv̇ − γ| = "
                              f"{residuals['acc']:.3g} (ill-conditioned constraints?)")
    return ConsistentState(q, v, vdot, lam, residuals, iters)
