"""What every integration method shares: the problem, the solution, Newton, the step loop.

A method sees a :class:`Problem` (a system of the DESIGN.md protocol, forces
already summed into callables, initial state, span, step) and returns a
:class:`Solution`. Fixed-step methods subclass :class:`FixedStepMethod` and
implement one step; :func:`run_fixed` drives them, checks for divergence and
turns Newton failures into a :class:`~kanedyn.SolverError` that names the step.

Tangent coordinates. Implicit and Hamiltonian methods work in a chart around
the configuration q_n at the start of the step, ``q = q_n ⊕ ξ`` =
``system.integrate_configuration(q_n, ξ, 1)``, so a quaternion is only ever
moved by the exponential map and the dynamic equations are untouched by that
choice. Along the chart ``v = J(ξ) ξ̇`` (:func:`chart_jacobian`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numba as nb
import numpy as np
from numpy.typing import NDArray

from ..errors import DivergenceError, SolverError


# ---------------------------------------------------------------------------- problem
@dataclass
class Problem:
    """An initial value problem for ``q̇ = W(q) v``, ``M v̇ + h = τ(t, q, v)``.

    ``tau_cons(q)`` are conservative joint forces (springs, −∂V_s/∂q) whose
    potential ``potential(q)`` is part of the energy; ``tau_nc(t, q, v)`` the
    others, whose power ``vᵀ τ_nc`` is integrated into W_nc.
    """

    system: object
    q0: NDArray
    v0: NDArray
    t_final: float
    dt: float | None = None
    t0: float = 0.0
    tau_cons: Callable[[NDArray], NDArray] | None = None
    tau_nc: Callable[[float, NDArray, NDArray], NDArray] | None = None
    potential: Callable[[NDArray], float] | None = None
    progress: Callable[[float], None] | None = None
    blowup: float = 1e8
    save_every: int = 1
    #: ``force_jacobians(t, q, v)`` -> (∂τ/∂q in the tangent space, ∂τ/∂v) of all force
    #: elements together (cons + nc), or None when one of them has no closed form.
    #: None as a field: no force Jacobians known (then only a problem without forces
    #: gets analytic Newton matrices)
    force_jacobians: Callable | None = None
    #: the force elements as the rows of the compiled loops (:mod:`kanedyn.forces.kernel`),
    #: filled by ``kd.simulate`` when every element has one; None otherwise
    force_rows: NDArray | None = None

    @property
    def has_nc(self) -> bool:
        return self.tau_nc is not None

    def tau(self, t: float, q: NDArray, v: NDArray) -> NDArray:
        tau = np.zeros(self.system.nv)
        if self.tau_cons is not None:
            tau += self.tau_cons(q)
        if self.tau_nc is not None:
            tau += self.tau_nc(t, q, v)
        return tau

    def acceleration(self, t: float, q: NDArray, v: NDArray) -> NDArray:
        return self.system.forward_dynamics(q, v, self.tau(t, q, v))

    def power_nc(self, t: float, q: NDArray, v: NDArray) -> float:
        if self.tau_nc is None:
            return 0.0
        return float(v @ self.tau_nc(t, q, v))

    def energy(self, q: NDArray, v: NDArray) -> float:
        """E = T + V_gravity + V_springs."""
        e = float(self.system.energy(q, v))
        if self.potential is not None:
            e += self.potential(q)
        return e

    def energy_gradient(self, q: NDArray, v: NDArray) -> tuple[NDArray, NDArray]:
        """(∂E/∂q at fixed v in the tangent space, ∂E/∂v = M v), springs included."""
        s = self.system
        if hasattr(s, "energy_gradient"):
            dq, dv = s.energy_gradient(q, v)
        else:
            dq = kinetic_energy_gradient(s, q, v) + gravity_torques(s, q)
            dv = s.mass_matrix(q) @ v
        if self.tau_cons is not None:
            dq = dq - self.tau_cons(q)
        return dq, dv

    def hamiltonian_gradient(self, q: NDArray, p: NDArray) -> tuple[NDArray, NDArray, NDArray]:
        """(∂H/∂q, ∂H/∂p = v, v) for H(q, p) = ½ pᵀM⁻¹p + V, in additive coordinates.

        ``∂H/∂q|_p = −∂T/∂q|_v + ∂V/∂q`` (Legendre transform: ∂H/∂q = −∂L/∂q).
        """
        s = self.system
        v = solve_spd(s.mass_matrix(q), p)
        if hasattr(s, "hamiltonian_terms"):
            dT, g = s.hamiltonian_terms(q, v)
            dq = g - dT
        else:
            dq = -kinetic_energy_gradient(s, q, v) + gravity_torques(s, q)
        if self.tau_cons is not None:
            dq = dq - self.tau_cons(q)
        return dq, v, v


@nb.njit(cache=True, nogil=True, inline="always")
def nan_max(a: float, b: float) -> float:
    """max(a, b) that keeps a NaN: the compiled Newton loops take |Δ|∞ of an update as
    ``size = nan_max(size, abs(dx_i))`` and stop on a non-finite size — numba's (and
    Python's) ``max(size, nan)`` returns size, which let a NaN update pass as converged."""
    return a if a != a or b <= a else b


@nb.njit(cache=True, nogil=True)
def cholesky(A, n, L) -> bool:
    """L (n×n, lower) with L Lᵀ = A[:n, :n]; False if A is not positive definite."""
    for j in range(n):
        d = A[j, j]
        for k in range(j):
            d -= L[j, k] * L[j, k]
        if not d > 0.0:
            return False
        L[j, j] = np.sqrt(d)
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / L[j, j]
    return True


@nb.njit(cache=True, nogil=True)
def cholesky_solve(L, n, b, x):
    """x[:n] = (L Lᵀ)⁻¹ b[:n] (forward then back substitution; x may be b)."""
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]


@nb.njit(cache=True)
def _chol_solve(M, b, out):
    """Solve M x = b for symmetric positive definite M (Cholesky); False if not SPD."""
    n = M.shape[0]
    L = np.zeros((n, n))
    if not cholesky(M, n, L):
        return False
    cholesky_solve(L, n, b, out)
    return True


def solve_spd(M: NDArray, b: NDArray) -> NDArray:
    """``M⁻¹ b`` for a small symmetric positive definite M (mass matrices): a compiled
    Cholesky, which for n ≲ 30 costs a fraction of ``np.linalg.solve``'s call overhead."""
    out = np.empty(b.shape[0])
    if not _chol_solve(np.ascontiguousarray(M, dtype=float), np.ascontiguousarray(b, dtype=float),
                       out):
        raise SolverError("the mass matrix is not positive definite at this configuration")
    return out


# ------------------------------------------------------------------- system helpers
def kinetic_energy_gradient(system, q: NDArray, v: NDArray) -> NDArray:
    """∂T/∂q at fixed v in the tangent space: the system's own, or central differences."""
    if hasattr(system, "kinetic_energy_gradient"):
        return system.kinetic_energy_gradient(q, v)
    ke = getattr(system, "kinetic_energy", None)
    if ke is None:
        def ke(qq, vv):
            return system.energy(qq, vv) - system.energy(qq, np.zeros_like(vv))
    eps = 1e-6
    out = np.empty(system.nv)
    for k in range(system.nv):
        e = np.zeros(system.nv)
        e[k] = eps
        out[k] = (ke(system.integrate_configuration(q, e, 1.0), v)
                  - ke(system.integrate_configuration(q, -e, 1.0), v)) / (2 * eps)
    return out


def gravity_torques(system, q: NDArray) -> NDArray:
    """∂V/∂q in the tangent space: the system's own, or ``nonlinear_effects(q, 0)``."""
    if hasattr(system, "gravity_torques"):
        return system.gravity_torques(q)
    return system.nonlinear_effects(q, np.zeros(system.nv))


def chart_is_additive(system) -> bool:
    """True when ``q ⊕ ξ = q + ξ`` and v = q̇ (no quaternion or planar joints, speeds that
    are the coordinate rates); from the system's ``chart_is_additive``, else nq == nv."""
    flag = getattr(system, "chart_is_additive", None)
    if flag is not None:
        return bool(flag)
    return system.nq == system.nv


def is_nonholonomic(system) -> bool:
    """More independent coordinates than speeds (rolling, knife edges): q moves by
    q̇ = W(q) v through a space that no chart of dimension nv covers, so q itself must
    be integrated. A tree never is: nq − #quaternions = nv (a ModelSystem says so with
    ``nonholonomic = False``). A system may say so itself with a ``nonholonomic``
    attribute; compiled Kane systems are judged by their quaternion groups."""
    flag = getattr(system, "nonholonomic", None)
    if flag is not None:
        return bool(flag)
    quats = getattr(system, "quaternions", None)
    if quats is None:  # a protocol-only system says nothing of its quaternions: holonomic
        return False
    return int(system.nq) - len(quats) > int(system.nv)


def chart_jacobian(system, q0: NDArray, xi: NDArray) -> NDArray | None:
    """J(ξ) with ``v = J ξ̇`` along ``q0 ⊕ ξ``; None means the identity."""
    if chart_is_additive(system):
        return None
    if hasattr(system, "chart_jacobian"):
        return system.chart_jacobian(q0, xi)
    # fallback from the protocol alone: v = W(q)⁺ q̇ along the chart curve, with the
    # columns of W(q) from q_dot(q, e_k) and ∂(q0 ⊕ ξ)/∂ξ by central differences
    # (accurate to ≈ 1e-10; a system that offers chart_jacobian does better)
    nv = system.nv
    q = system.integrate_configuration(q0, xi, 1.0)
    eye = np.eye(nv)
    W = np.column_stack([system.q_dot(q, eye[k]) for k in range(nv)])
    eps = 1e-6
    D = np.column_stack([(system.integrate_configuration(q0, xi + eps * eye[k], 1.0)
                          - system.integrate_configuration(q0, xi - eps * eye[k], 1.0))
                         / (2 * eps) for k in range(nv)])
    return np.linalg.lstsq(W, D, rcond=None)[0]


def momentum(system, q: NDArray, v: NDArray) -> NDArray:
    if hasattr(system, "momentum"):
        return np.asarray(system.momentum(q, v), dtype=float)
    raise SolverError(f"system {system!r} offers no momentum(q, v)")


# ------------------------------------------------------------------------------ newton
class NewtonFailure(Exception):
    """Raised by :func:`newton` inside a step; the step loop adds step, time and method."""

    def __init__(self, residual: float, iterations: int, reason: str):
        super().__init__(reason)
        self.residual, self.iterations, self.reason = residual, iterations, reason


def fd_jacobian(residual: Callable[[NDArray], NDArray], x: NDArray, r: NDArray) -> NDArray:
    """Forward-difference Jacobian of ``residual`` at x (r = residual(x))."""
    n = x.size
    Jm = np.empty((r.size, n))
    for k in range(n):
        h = 1e-7 * max(1.0, abs(x[k]))
        xk = x.copy()
        xk[k] += h
        Jm[:, k] = (residual(xk) - r) / h
    return Jm


#: Itoh–Abe's floor for :func:`newton`: an update below 1e-10 |x| leaves an error at the
#: noise of its differences of H (≈ eps |H| / Δq_i near its 1e-5 switch); above it a stall
#: under an approximate matrix is a slow contraction — friction's slope in its band —, not
#: noise: taken there, the demo arm's budget E − E₀ − W_nc lost 5e-10 of E in a second
ITOH_ABE_FLOOR = 1e-10


def newton(residual: Callable[[NDArray], NDArray], x0: NDArray,
           jacobian: NDArray | Callable[[NDArray], NDArray] | None = None,
           tol: float = 1e-14, maxiter: int = 50,
           stagnation: float = 1e-9, reuse: dict | None = None,
           floor: float = 0.0) -> tuple[NDArray, int]:
    """Solve ``residual(x) = 0`` by (simplified) Newton; returns (x, iterations).

    Jacobians: a method passes what it knows of ∂residual/∂x. midpoint and gauss4 build
    the full stage matrix in closed form when the system provides the derivatives of
    its dynamics (a ModelSystem: ``acceleration_jacobians`` from
    :func:`kanedyn.aba_derivatives`, ``canonical_jacobians``) and every force element
    has a Jacobian (``Problem.force_jacobians``, filled by the ForceSet: springs,
    dampers, smooth friction), and pass it as a function of x, so that a refresh is
    analytic too. Otherwise (a compiled Kane system, a constrained system, a
    ``JointTorque`` or ``ExternalWrench``, ``jacobian="differences"``) they pass the
    kinematic block they know (h M⁻¹ or h·1, the Lie step's 3x3 matrix) and the rest
    comes from forward differences of the residual.

    ``jacobian`` is a matrix (kept for the whole solve), a function of x, or
    None (forward differences at x0). When the iteration contracts slowly
    (ratio > 0.25) with a frozen matrix it is refreshed by forward differences
    once; when it diverges, it restarts from x0 with that matrix. ``reuse`` (a dict
    kept by the caller between steps) carries a refreshed matrix over to the next
    solves, as Jacobians are reused from step to step in stiff solvers. Converged when
    the update, or the error estimated from the rate of
    contraction θ, ``θ/(1−θ)|Δx|``, is below ``tol`` relative to |x|∞ (the unknowns
    are increments over a step, so this is a bar on the step itself; or at roundoff
    stagnation: an update below ``stagnation`` |x| that no longer shrinks). ``floor`` > 0:
    such a stall is taken as roundoff only below ``floor`` |x| or once the matrix was
    refreshed — above it, with the caller's approximate matrix, a contraction slower than
    ½ is not roundoff, and the matrix is refreshed (Itoh–Abe, whose bar must sit high
    for the noise of its differences of H, ``ItohAbe.stagnation``).
    """
    x = np.array(x0, dtype=float)
    r = residual(x)
    if not np.all(np.isfinite(r)):
        raise NewtonFailure(float("nan"), 0, "the residual is not finite at the initial guess")
    x_start, r_start = x.copy(), r.copy()
    if reuse is not None and "J" in reuse:
        Jm = reuse["J"]
    elif callable(jacobian):
        Jm = jacobian(x)
    elif jacobian is None:
        Jm = fd_jacobian(residual, x, r)
    else:
        Jm = jacobian
    refreshed = jacobian is None
    last = np.inf
    for it in range(1, maxiter + 1):
        try:
            dx = -np.linalg.solve(Jm, r)
        except np.linalg.LinAlgError:
            raise NewtonFailure(float(np.abs(r).max()), it,
                                "the Newton matrix is singular") from None
        x += dx
        r = residual(x)
        size = float(np.abs(dx).max())
        finite = bool(np.all(np.isfinite(r)))
        if not refreshed and (not finite or (it >= 2 and size > last)):
            # a diverging iteration with the approximate matrix (a stiff step): start
            # again from the initial guess with the full finite-difference Jacobian
            x, r = x_start.copy(), r_start.copy()
            Jm = jacobian(x) if callable(jacobian) else fd_jacobian(residual, x, r)
            refreshed, last = True, np.inf
            if reuse is not None:
                reuse["J"] = Jm
            continue
        if not finite:
            raise NewtonFailure(float("nan"), it, "the residual became NaN or infinite")
        scale = float(np.abs(x).max())  # relative to x itself: stage unknowns are increments
        if size <= tol * scale:
            return x, it
        theta = size / last if np.isfinite(last) and last > 0 else 1.0
        # the error left after this update is about θ/(1−θ)·|Δx| (Hairer & Wanner II, IV.8)
        if theta < 0.5 and theta / (1 - theta) * size <= tol * scale:
            return x, it
        if (size <= stagnation * scale and theta >= 0.5  # the residual is at roundoff
                and (floor <= 0.0 or refreshed or size <= floor * scale)):
            return x, it
        if it >= 2 and size > 0.25 * last and not refreshed:
            # slow contraction: a full Jacobian (2n residuals) costs less than the
            # iterations it saves
            Jm = jacobian(x) if callable(jacobian) else fd_jacobian(residual, x, r)
            refreshed = True
            if reuse is not None:
                reuse["J"] = Jm
        last = size
    raise NewtonFailure(float(np.abs(r).max()), maxiter,
                        f"no convergence in {maxiter} iterations (last update {last:.3g})")


# ---------------------------------------------------------------------------- solution
@dataclass
class Solution:
    """What a method returns: states at output times, W_nc, and per-step statistics."""

    t: NDArray
    q: NDArray
    v: NDArray
    work_nc: NDArray
    stats: dict[str, NDArray] = field(default_factory=dict)
    method: str = ""
    message: str = ""


class FixedStepMethod:
    """A one-step method with fixed step ``dt``. Subclasses set ``name``, ``order`` and
    implement :meth:`step`; unknown options raise a SolverError listing the known ones."""

    name = "fixed"
    order = 0
    options: dict = {}

    def __init__(self, problem: Problem, **options):
        unknown = set(options) - set(self.options)
        if unknown:
            raise SolverError(
                f"method {self.name!r} does not take option(s) {sorted(unknown)}; "
                f"it takes {sorted(self.options) or 'none'}"
            )
        self.problem = problem
        self.system = problem.system
        self.opts = {**self.options, **options}
        self.newton_iterations = 0

    def step(self, t: float, q: NDArray, v: NDArray, h: float) -> tuple[NDArray, NDArray, float]:
        """One step from (t, q, v) of size h: returns (q1, v1, ΔW_nc)."""
        raise NotImplementedError


def check_state(problem: Problem, method: str, n: int, t: float, q: NDArray, v: NDArray,
                vmax0: float) -> None:
    """Stop with a DivergenceError on NaN/inf or a speed beyond ``blowup`` x the initial scale."""
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
        raise DivergenceError(
            f"{method}: the state became NaN or infinite at step {n}, t = {t:.6g}: "
            f"q = {np.array2string(q, precision=4)}, v = {np.array2string(v, precision=4)}; "
            "reduce dt or use an implicit method"
        )
    vm = float(np.abs(v).max()) if v.size else 0.0
    if vm > problem.blowup * (1.0 + vmax0):
        raise DivergenceError(
            f"{method}: blow-up at step {n}, t = {t:.6g}: max |v| = {vm:.3g} exceeds "
            f"{problem.blowup:g} x (1 + max|v0|); q = {np.array2string(q, precision=4)}, "
            f"v = {np.array2string(v, precision=4)}; reduce dt or raise blowup="
        )


def run_fixed(method: FixedStepMethod, problem: Problem) -> Solution:
    """Drive a fixed-step method from t0 to t_final; the last step is shortened to land on it."""
    dt, t0, tf = problem.dt, problem.t0, problem.t_final
    n_steps = int(np.ceil((tf - t0) / dt - 1e-9)) if tf > t0 else 0
    every = max(1, int(problem.save_every))
    n_out = n_steps // every + 1 + (1 if n_steps % every else 0)
    T = np.empty(n_out)
    Q = np.empty((n_out, problem.system.nq))
    V = np.empty((n_out, problem.system.nv))
    Wn = np.empty(n_out)
    iters = np.zeros(n_steps, dtype=np.int32)
    q, v, w, t = np.array(problem.q0, float), np.array(problem.v0, float), 0.0, t0
    T[0], Q[0], V[0], Wn[0] = t, q, v, w
    vmax0 = float(np.abs(v).max()) if v.size else 0.0
    k_out = 1
    try:
        k_out = _fixed_loop(method, problem, n_steps, every, T, Q, V, Wn, iters, q, v, w, t,
                            vmax0)
        interrupted = False
    except _Interrupted as e:  # Ctrl-C: keep what was computed, and say so
        k_out, interrupted = e.k_out, True
    stats = {"newton_iterations": iters}
    if interrupted:
        stats["interrupted"] = np.array([T[k_out - 1]])
    msg = f"interrupted at t = {T[k_out - 1]:.6g}" if interrupted else ""
    return Solution(T[:k_out], Q[:k_out], V[:k_out], Wn[:k_out], stats, method.name, msg)


class _Interrupted(Exception):
    def __init__(self, k_out: int):
        self.k_out = k_out


def _fixed_loop(method, problem, n_steps, every, T, Q, V, Wn, iters, q, v, w, t, vmax0) -> int:
    """The stepping loop of :func:`run_fixed`; returns the number of stored samples."""
    dt, t0, tf = problem.dt, problem.t0, problem.t_final
    k_out = 1
    try:
        for n in range(n_steps):
            h = min(dt, tf - t) if n == n_steps - 1 else dt
            before = method.newton_iterations
            try:
                q, v, dw = method.step(t, q, v, h)
            except NewtonFailure as e:
                raise SolverError(
                    f"{method.name}: Newton failed at step {n} (t = {t:.6g}, h = {h:.3g}) after "
                    f"{e.iterations} iterations, residual {e.residual:.3g}: {e.reason}. "
                    "Reduce dt, or choose a method with a smaller stage system "
                    "(midpoint rather than gauss4), or an explicit one (rk4, dopri5)"
                ) from None
            iters[n] = method.newton_iterations - before
            t = t0 + (n + 1) * dt if n < n_steps - 1 else tf
            w += dw
            check_state(problem, method.name, n + 1, t, q, v, vmax0)
            if (n + 1) % every == 0 or n == n_steps - 1:
                T[k_out], Q[k_out], V[k_out], Wn[k_out] = t, q, v, w
                k_out += 1
            if problem.progress is not None:
                problem.progress(t)
    except KeyboardInterrupt:
        raise _Interrupted(k_out) from None
    return k_out
