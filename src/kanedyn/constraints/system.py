"""Constrained mechanical systems: ``M(q) v̇ = f(t, q, v) − C(t, q)ᵀ λ`` with constraints.

Two kinds of constraint act on the speeds v (nv of them, Kane's generalized speeds):

- holonomic, ``g(t, q) = 0`` (nc rows), with ``G = ∂g/∂q · W(q)`` so that
  ``ġ = G v + ∂g/∂t``;
- nonholonomic, ``A(t, q) v = b(t, q)`` (nn rows).

Stacked, ``C = [G; A]`` (m = nc + nn rows) is the constraint matrix at velocity level,
``c_v(t, q, v) = [G v + g_t; A v − b]`` the velocity constraint, and
``C v̇ = γ(t, q, v)`` the acceleration constraint (``γ = −Ċ v − ...``, the terms of
d c_v/dt that do not contain v̇). The multipliers λ are the constraint forces in the
sense that ``−Cᵀλ`` is the generalized force the constraints apply
(the sign of Hairer & Wanner, *Solving ODEs II*, ch. VII, and of the test set's Andrews
problem).

Every function here takes a batch of states (leading axes) as well as one state.
:class:`DescriptorSystem` is given by explicit formulas (the DAE test-set problems);
:class:`~kanedyn.constraints.model_system.ConstrainedSystem` builds them from a
:class:`~kanedyn.Model` and loop closures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConstraintError, StateError

#: relative size of the finite-difference step of the fallback γ = −d(C v)/dt
_FD_STEP = 1e-6


class ConstrainedMechanics:
    """What every constrained system offers; subclasses provide the primitive functions.

    Primitives (batched over leading axes): :meth:`mass_matrix`, :meth:`applied_forces`,
    :meth:`q_dot`, :meth:`constraint`, :meth:`constraint_matrix`,
    :meth:`velocity_constraint`, :meth:`gamma`. Everything else (forward dynamics with
    multipliers, the system protocol of DESIGN.md, rank checks) is built on them.
    """

    nq: int
    nv: int
    nc: int  # holonomic rows
    nn: int  # nonholonomic rows
    #: a name for each of the m = nc + nn constraint rows (holonomic first)
    constraint_names: list[str]
    #: True if the constraints depend on t explicitly
    rheonomic: bool = False
    name: str = "constrained system"
    #: the capability the integrators and kd.simulate read (not the class): this system
    #: offers the constraint primitives below, and its forward_dynamics obeys them
    handles_constraints: bool = True

    @property
    def m(self) -> int:
        return self.nc + self.nn

    # ---- primitives -------------------------------------------------------------------
    def mass_matrix(self, q: ArrayLike) -> NDArray:
        raise NotImplementedError

    def applied_forces(self, t, q: ArrayLike, v: ArrayLike) -> NDArray:
        """``f(t, q, v) = τ(t, q, v) − h(q, v)``: all forces but the constraint forces."""
        raise NotImplementedError

    def q_dot(self, q: ArrayLike, v: ArrayLike) -> NDArray:
        return np.asarray(v, dtype=float)

    def integrate_configuration(self, q: ArrayLike, v: ArrayLike, dt: float) -> NDArray:
        return np.asarray(q, dtype=float) + dt * np.asarray(v, dtype=float)

    def constraint(self, t, q: ArrayLike) -> NDArray:
        """Holonomic residual g(t, q), shape (..., nc)."""
        raise NotImplementedError

    def constraint_matrix(self, t, q: ArrayLike) -> NDArray:
        """``C = [G; A]``, shape (..., m, nv)."""
        raise NotImplementedError

    def velocity_constraint(self, t, q: ArrayLike, v: ArrayLike) -> NDArray:
        """``c_v = [G v + g_t; A v − b]``, shape (..., m)."""
        C = self.constraint_matrix(t, q)
        return np.einsum("...ij,...j->...i", C, v)

    def velocity_constraint_with(self, C: NDArray, t, q: ArrayLike, v: ArrayLike) -> NDArray:
        """c_v when C = constraint_matrix(t, q) is already at hand (saves recomputing it)."""
        return self.velocity_constraint(t, q, v)

    def gamma(self, t, q: ArrayLike, v: ArrayLike) -> NDArray:
        """Right side of the acceleration constraint ``C v̇ = γ``, shape (..., m).

        Default: central difference of ``c_v`` along the motion, ``γ = −d c_v/dt``
        at v̇ = 0 (accurate to about 1e-9 relative; problems override it exactly).
        """
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        qd = self.q_dot(q, v)
        scale = np.maximum(1.0, np.max(np.abs(q), axis=-1, keepdims=True))
        speed = np.maximum(np.max(np.abs(qd), axis=-1, keepdims=True), 1e-300)
        eps = _FD_STEP * scale / speed
        t = np.asarray(t, dtype=float)
        e = eps[..., 0]
        cp = self.velocity_constraint(t + e, q + eps * qd, v)
        cm = self.velocity_constraint(t - e, q - eps * qd, v)
        return -(cp - cm) / (2.0 * eps)

    def potential_energy(self, q: ArrayLike) -> NDArray | float:
        """Potential of the conservative applied forces (0 unless the system knows one)."""
        q = np.asarray(q, dtype=float)
        return np.zeros(q.shape[:-1]) if q.ndim > 1 else 0.0

    def compiled_form(self):
        """The :class:`~kanedyn.constraints.system_kernel.CompiledForm` of this system (its
        primitives compiled, for the compiled DAE solver), or None: a system has one only
        where a subclass says so."""
        return None

    # ---- derived ------------------------------------------------------------------------
    def constraint_jacobian(self, q: ArrayLike, t: float = 0.0) -> NDArray:
        """G, the holonomic rows of C (shape (..., nc, nv))."""
        return self.constraint_matrix(t, q)[..., : self.nc, :]

    def kkt_matrix(self, t, q: ArrayLike) -> NDArray:
        """``[[M, Cᵀ], [C, 0]]`` (..., nv+m, nv+m)."""
        M = self.mass_matrix(q)
        C = self.constraint_matrix(t, q)
        n, m = self.nv, self.m
        K = np.zeros(M.shape[:-2] + (n + m, n + m))
        K[..., :n, :n] = M
        K[..., :n, n:] = np.swapaxes(C, -1, -2)
        K[..., n:, :n] = C
        return K

    def accelerations(self, q: ArrayLike, v: ArrayLike, tau: ArrayLike | None = None,
                      t: float = 0.0) -> tuple[NDArray, NDArray]:
        """Index-1 solve: ``[M Cᵀ; C 0] [v̇; λ] = [f + τ; γ]``. Returns (v̇, λ)."""
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        rhs_f = self.applied_forces(t, q, v)
        if tau is not None:
            rhs_f = rhs_f + np.asarray(tau, dtype=float)
        rhs = np.concatenate([rhs_f, self.gamma(t, q, v)], axis=-1)
        K = self.kkt_matrix(t, q)
        try:
            sol = np.linalg.solve(K, rhs[..., None])[..., 0]
        except np.linalg.LinAlgError:
            self.check_constraints(q, t=t)  # names the redundant rows
            raise
        if not np.all(np.isfinite(sol)):
            self.check_constraints(q, t=t)
            raise ConstraintError(f"{self.name}: the KKT system gave non-finite accelerations")
        return sol[..., : self.nv], sol[..., self.nv:]

    def check_constraints(self, q: ArrayLike, t: float = 0.0, tol: float = 1e-9) -> int:
        """Rank of C at q; raises :class:`ConstraintError` naming the dependent rows.

        The rows are ordered by a column-pivoted QR of Cᵀ: the first ``rank`` are
        independent, the others are (numerically) combinations of them.
        """
        from scipy.linalg import qr

        q = np.asarray(q, dtype=float)
        if q.ndim != 1:
            raise StateError("check_constraints takes one configuration")
        C = self.constraint_matrix(t, q)
        if C.shape[0] == 0:
            return 0
        _, Rr, piv = qr(C.T, pivoting=True, mode="economic")
        d = np.abs(np.diag(Rr))
        rank = int(np.sum(d > tol * max(d[0], 1e-300)))
        if rank < C.shape[0]:
            bad = sorted(int(i) for i in piv[rank:])
            names = [self.constraint_names[i] for i in bad]
            raise ConstraintError(
                f"{self.name}: constraints are redundant or singular — the {C.shape[0]} "
                f"rows of C have rank {rank}; rows {bad} ({', '.join(names)}) depend on the "
                "others (remove them, or restrict a loop closure to the axes it really fixes)"
            )
        return rank

    # ---- the system protocol of DESIGN.md ----------------------------------------------
    def nonlinear_effects(self, q: ArrayLike, v: ArrayLike) -> NDArray:
        """``h(q, v) = −f(0, q, v)`` (Coriolis, centrifugal, gravity, built-in forces)."""
        return -self.applied_forces(0.0, q, v)

    def forward_dynamics(self, q: ArrayLike, v: ArrayLike, tau: ArrayLike | None = None,
                         t: float = 0.0) -> NDArray:
        """v̇ of the constrained motion (index-1 solve with multipliers)."""
        return self.accelerations(q, v, tau, t)[0]

    def multipliers(self, q: ArrayLike, v: ArrayLike, tau: ArrayLike | None = None,
                    t: float = 0.0) -> NDArray:
        return self.accelerations(q, v, tau, t)[1]

    def energy(self, q: ArrayLike, v: ArrayLike) -> NDArray | float:
        """``½ vᵀ M v + V(q)``."""
        v = np.asarray(v, dtype=float)
        M = self.mass_matrix(q)
        T = 0.5 * np.einsum("...i,...ij,...j->...", v, M, v)
        out = T + self.potential_energy(q)
        return float(out) if np.ndim(out) == 0 else out

    def residuals(self, t, q: ArrayLike, v: ArrayLike, vdot: ArrayLike) -> dict[str, NDArray]:
        """The three levels: g, c_v = G v (+ g_t), and C v̇ − γ."""
        C = self.constraint_matrix(t, q)
        acc = np.einsum("...ij,...j->...i", C, vdot) - self.gamma(t, q, v)
        return {"g": self.constraint(t, q), "Gv": self.velocity_constraint(t, q, v),
                "acc": acc}


def _t_column(t, q: NDArray) -> NDArray:
    """t broadcast against the leading axes of q, with a trailing axis of length 1."""
    return np.broadcast_to(np.asarray(t, dtype=float), q.shape[:-1])[..., None]


class DescriptorSystem(ConstrainedMechanics):
    """A constrained system given by its formulas, as the DAE test set states them.

    Callables (each must accept a batch of states with leading axes):

    - ``mass(q) -> (..., nv, nv)``, ``force(t, q, v) -> (..., nv)`` (= f),
    - ``g(t, q) -> (..., nc)``, ``G(t, q) -> (..., nc, nv)``,
      ``gamma(t, q, v) -> (..., nc)`` (optional: exact −Ġv − ...; else finite differences),
      ``g_t(t, q) -> (..., nc)`` for rheonomic constraints,
    - ``A(t, q) -> (..., nn, nv)``, ``b(t, q)``, ``gamma_nh(t, q, v)`` (nonholonomic, optional),
    - ``q_dot(q, v)`` (default v, nq = nv), ``potential(q)`` (optional).
    """

    def __init__(self, nq: int, nv: int, mass: Callable, force: Callable,
                 g: Callable | None = None, G: Callable | None = None, nc: int = 0,
                 gamma: Callable | None = None, g_t: Callable | None = None,
                 A: Callable | None = None, b: Callable | None = None, nn: int = 0,
                 gamma_nh: Callable | None = None, q_dot: Callable | None = None,
                 potential: Callable | None = None,
                 constraint_names: Sequence[str] | None = None, name: str = "descriptor"):
        self.nq, self.nv, self.nc, self.nn = int(nq), int(nv), int(nc), int(nn)
        if nc and (g is None or G is None):
            raise ConstraintError(f"{name}: nc = {nc} holonomic rows need both g and G")
        if nn and A is None:
            raise ConstraintError(f"{name}: nn = {nn} nonholonomic rows need A")
        if q_dot is None and nq != nv:
            raise StateError(f"{name}: nq = {nq} != nv = {nv} needs a q_dot(q, v) map")
        self._mass, self._force = mass, force
        self._g, self._G, self._gamma, self._g_t = g, G, gamma, g_t
        self._A, self._b, self._gamma_nh = A, b, gamma_nh
        self._q_dot, self._potential = q_dot, potential
        self.rheonomic = g_t is not None
        self.name = name
        names = list(constraint_names) if constraint_names is not None else (
            [f"g[{i}]" for i in range(nc)] + [f"A[{i}]" for i in range(nn)])
        if len(names) != nc + nn:
            raise ConstraintError(f"{name}: {len(names)} constraint names for {nc + nn} rows")
        self.constraint_names = names
        #: set by a problem whose formulas exist compiled (Andrews' squeezer)
        self._compiled_form = None

    def compiled_form(self):
        return self._compiled_form

    def mass_matrix(self, q):
        return np.asarray(self._mass(np.asarray(q, dtype=float)), dtype=float)

    def applied_forces(self, t, q, v):
        return np.asarray(self._force(t, np.asarray(q, float), np.asarray(v, float)), float)

    def q_dot(self, q, v):
        if self._q_dot is None:
            return np.asarray(v, dtype=float)
        return self._q_dot(np.asarray(q, float), np.asarray(v, float))

    def constraint(self, t, q):
        q = np.asarray(q, dtype=float)
        if not self.nc:
            return np.zeros(q.shape[:-1] + (0,))
        return np.asarray(self._g(t, q), dtype=float)

    def constraint_matrix(self, t, q):
        q = np.asarray(q, dtype=float)
        parts = []
        if self.nc:
            parts.append(np.asarray(self._G(t, q), dtype=float))
        if self.nn:
            parts.append(np.asarray(self._A(t, q), dtype=float))
        if not parts:
            return np.zeros(q.shape[:-1] + (0, self.nv))
        return np.concatenate(parts, axis=-2)

    def velocity_constraint(self, t, q, v):
        return self.velocity_constraint_with(self.constraint_matrix(t, q), t, q, v)

    def velocity_constraint_with(self, C, t, q, v):
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        cv = np.einsum("...ij,...j->...i", C, v)
        if self._g_t is not None and self.nc:
            cv[..., : self.nc] += self._g_t(t, q)
        if self._b is not None and self.nn:
            cv[..., self.nc:] -= self._b(t, q)
        return cv

    def gamma(self, t, q, v):
        exact_h = self._gamma is not None or not self.nc
        exact_n = self._gamma_nh is not None or not self.nn
        if not (exact_h and exact_n):
            return super().gamma(t, q, v)
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        parts = []
        if self.nc:
            parts.append(np.asarray(self._gamma(t, q, v), dtype=float))
        if self.nn:
            parts.append(np.asarray(self._gamma_nh(t, q, v), dtype=float))
        if not parts:
            return np.zeros(q.shape[:-1] + (0,))
        return np.concatenate(parts, axis=-1)

    def potential_energy(self, q):
        if self._potential is None:
            return super().potential_energy(q)
        return self._potential(np.asarray(q, dtype=float))
