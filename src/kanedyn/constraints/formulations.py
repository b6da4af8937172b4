"""DAE formulations of a constrained system, selected by name.

Every formulation is written as a semi-explicit DAE ``D y' = F(t, y)`` with a
constant diagonal D of ones (differential rows) and zeros (algebraic rows), in the
variables ``y = (q, v, a, λ[, μ])`` — a = v̇ is carried as an algebraic variable so
that D stays constant although M depends on q (the layout of Andrews' squeezer in the
IVP test set, Mazzia & Magherini 2008):

================  ==================================================  =================
name              equations (besides q' = W v, v' = a,                index of
                  0 = f − M a − Cᵀλ)                                  (q, v, a, λ, μ)
================  ==================================================  =================
``"index3"``      0 = [g; A v − b]                                    1, 2, 3, 3 (λ_nh 2)
``"index2"``      0 = c_v = [G v + g_t; A v − b]                      1, 1, 2, 2
``"index1"``      0 = C a − γ                                         1, 1, 1, 1
``"baumgarte"``   0 = C a − γ + 2α c_v + β² [g; 0]                    1, 1, 1, 1
``"ggl"``         q' = W (v + Gᵀμ), 0 = c_v, 0 = g                    1, 1, 2, 2, 2
================  ==================================================  =================

GGL is Gear, Gupta & Leimkuhler (1985), "Automatic integration of Euler–Lagrange
equations with constraints", J. Comput. Appl. Math. 12–13, 77–90. Baumgarte (1972),
"Stabilization of constraints and integrals of motion in dynamical systems", Comput.
Methods Appl. Mech. Eng. 1, 1–16: g̈ + 2αġ + β²g = 0.

The index of each variable is what Radau IIA needs to scale its error estimate
(Hairer & Wanner II, ch. VII: the error of index-2 components multiplied by h, of
index-3 components by h²); it is derived here from the formulation, so the user
never orders variables by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..errors import ConstraintError
from .system import ConstrainedMechanics

#: the names of the DAE formulations of :func:`formulate` (the table above)
FORMULATIONS = ("index3", "index2", "index1", "baumgarte", "ggl")


def baumgarte_parameters(dt: float | None = None, alpha: float | None = None,
                         beta: float | None = None) -> tuple[float, float]:
    """α, β of Baumgarte's g̈ + 2αġ + β²g = 0.

    Given explicitly, they are used as they are. Otherwise they follow from a time
    scale dt (a fixed step, or the output interval): critical damping α = β with the
    constraint's relaxation time 10·dt, i.e. ``α = β = 1/(10 dt)`` — slow enough that
    an explicit or implicit integrator resolves the added dynamics (βdt = 0.1), fast
    enough that the drift decays within ~10 steps' worth of motion.
    """
    if alpha is not None and beta is not None:
        a, b = float(alpha), float(beta)
    elif dt is not None:
        if dt <= 0:
            raise ConstraintError(f"baumgarte: dt must be positive, got {dt}")
        a = b = 1.0 / (10.0 * float(dt))
        if alpha is not None:
            a = float(alpha)
        if beta is not None:
            b = float(beta)
    else:
        raise ConstraintError("baumgarte needs alpha and beta, or a time scale dt to pick them")
    if a < 0 or b < 0 or not np.isfinite(a + b):
        raise ConstraintError(f"baumgarte: alpha = {a} and beta = {b} must be finite and >= 0")
    return a, b


@dataclass
class DAE:
    """``D y' = F(t, y)`` of a constrained system in one formulation."""

    system: ConstrainedMechanics
    formulation: str
    n: int
    mass: NDArray  # diagonal of D (1 differential, 0 algebraic)
    index: NDArray  # differentiation index of each variable
    slices: dict = field(default_factory=dict)
    alpha: float = 0.0
    beta: float = 0.0

    @property
    def algebraic(self) -> NDArray:
        return np.flatnonzero(self.mass == 0.0)

    def split(self, y: NDArray) -> dict[str, NDArray]:
        return {k: y[..., s] for k, s in self.slices.items()}

    def pack(self, q, v, a, lam, mu=None) -> NDArray:
        parts = [q, v, a, lam]
        if "mu" in self.slices:
            parts.append(np.zeros(self.system.nc) if mu is None else mu)
        return np.concatenate([np.asarray(p, dtype=float).ravel() for p in parts])

    def initial_state(self, q0, v0, t0: float = 0.0) -> NDArray:
        """y0 from a consistent (q0, v0): a and λ from the index-1 solve, μ = 0."""
        a0, lam0 = self.system.accelerations(q0, v0, t=t0)
        return self.pack(q0, v0, a0, lam0)

    def rhs(self, t, y: NDArray) -> NDArray:
        """F(t, y), for y of shape (..., n) and t broadcastable to its leading axes."""
        sysm = self.system
        s = self.slices
        q, v, a, lam = y[..., s["q"]], y[..., s["v"]], y[..., s["a"]], y[..., s["lam"]]
        out = np.empty_like(y)
        C = sysm.constraint_matrix(t, q)
        CT_lam = np.einsum("...ji,...j->...i", C, lam)
        if self.formulation == "ggl":
            mu = y[..., s["mu"]]
            G = C[..., : sysm.nc, :]
            out[..., s["q"]] = sysm.q_dot(q, v + np.einsum("...ji,...j->...i", G, mu))
            out[..., s["mu"]] = sysm.constraint(t, q)
        else:
            out[..., s["q"]] = sysm.q_dot(q, v)
        out[..., s["v"]] = a
        M = sysm.mass_matrix(q)
        out[..., s["a"]] = (sysm.applied_forces(t, q, v)
                            - np.einsum("...ij,...j->...i", M, a) - CT_lam)
        f = self.formulation
        if f == "index3":
            if sysm.nn:
                lam_eq = sysm.velocity_constraint_with(C, t, q, v)
                lam_eq[..., : sysm.nc] = sysm.constraint(t, q)
            else:  # holonomic only: the velocity rows are not needed at all
                lam_eq = sysm.constraint(t, q)
        elif f in ("index2", "ggl"):
            lam_eq = sysm.velocity_constraint_with(C, t, q, v)
        else:
            lam_eq = np.einsum("...ij,...j->...i", C, a) - sysm.gamma(t, q, v)
            if f == "baumgarte":
                lam_eq = lam_eq + 2.0 * self.alpha * sysm.velocity_constraint_with(C, t, q, v)
                lam_eq[..., : sysm.nc] += self.beta ** 2 * sysm.constraint(t, q)
        out[..., s["lam"]] = lam_eq
        if y.ndim == 1 or (y.ndim == 2 and y.shape[0] == 1 and np.ndim(t) == 0):
            self._last_rhs = (t, y.reshape(-1).copy(), out.reshape(-1))
        return out


    def jacobian(self, t, y: NDArray) -> NDArray:
        """∂F/∂y: exact in a, λ, μ (F is linear in them), forward differences in q and v.

        Differences in the linear variables would be poor: they are often 0 (step
        √(eps·1e-5)) while their coefficients are tiny (Andrews' M ~ 1e-5), so the
        round-off of F swamps the derivative.
        """
        sysm = self.system
        s = self.slices
        nq, nv = sysm.nq, sysm.nv
        nd = nq + nv
        q = y[s["q"]]
        J = np.zeros((self.n, self.n))
        last = getattr(self, "_last_rhs", None)  # radau5 has just evaluated F(t, y)
        if last is not None and last[0] == t and np.array_equal(last[1], y):
            f0 = last[2]
        else:
            f0 = self.rhs(t, y)
        delt = np.sqrt(np.finfo(float).eps * np.maximum(1e-5, np.abs(y[:nd])))
        Yb = np.repeat(y[None, :], nd, axis=0)
        Yb[np.arange(nd), np.arange(nd)] += delt
        J[:, :nd] = ((self.rhs(t, Yb) - f0[None, :]) / delt[:, None]).T
        C = sysm.constraint_matrix(t, q)
        J[s["v"], s["a"]] = np.eye(nv)
        J[s["a"], s["a"]] = -sysm.mass_matrix(q)
        if self.formulation in ("index1", "baumgarte"):
            J[s["lam"], s["a"]] = C
        J[s["a"], s["lam"]] = -C.T
        if "mu" in s:
            W = sysm.q_dot(np.repeat(q[None, :], nv, axis=0), np.eye(nv)).T  # nq x nv
            J[s["q"], s["mu"]] = W @ C[: sysm.nc].T
        return J


def formulate(system: ConstrainedMechanics, formulation: str = "index3",
              alpha: float | None = None, beta: float | None = None,
              dt: float | None = None) -> DAE:
    """The DAE of ``system`` in ``formulation`` (one of :data:`FORMULATIONS`)."""
    if formulation not in FORMULATIONS:
        raise ConstraintError(
            f"unknown formulation {formulation!r}; choose one of {FORMULATIONS}")
    nq, nv, nc, nn = system.nq, system.nv, system.nc, system.nn
    m = nc + nn
    sl = {"q": slice(0, nq), "v": slice(nq, nq + nv), "a": slice(nq + nv, nq + 2 * nv),
          "lam": slice(nq + 2 * nv, nq + 2 * nv + m)}
    n = nq + 2 * nv + m
    if formulation == "ggl":
        sl["mu"] = slice(n, n + nc)
        n += nc
    mass = np.zeros(n)
    mass[: nq + nv] = 1.0
    index = np.ones(n, dtype=int)
    if formulation == "index3":
        if nc:
            index[sl["v"]] = 2
            index[sl["a"]] = 3
            lam_idx = index[sl["lam"]]
            lam_idx[:nc] = 3
            lam_idx[nc:] = 2
        elif nn:
            index[sl["a"]] = 2
            index[sl["lam"]] = 2
    elif formulation in ("index2", "ggl"):
        if m:
            index[sl["a"]] = 2
            index[nq + 2 * nv:] = 2
    a = b = 0.0
    if formulation == "baumgarte":
        a, b = baumgarte_parameters(dt, alpha, beta)
    return DAE(system, formulation, n, mass, index, sl, a, b)


def index1_ode(system: ConstrainedMechanics, alpha: float = 0.0, beta: float = 0.0):
    """The reduced ODE ``y = (q, v)``, ``q' = W v``, ``v' = v̇(q, v)`` from the index-1 solve,
    optionally with Baumgarte terms. Returns ``fun(t, y)`` for ``scipy.integrate.solve_ivp``."""
    nq = system.nq

    def fun(t, y):
        q, v = y[:nq], y[nq:]
        if alpha == 0.0 and beta == 0.0:
            vdot = system.accelerations(q, v, t=t)[0]
        else:
            f = system.applied_forces(t, q, v)
            gam = system.gamma(t, q, v) - 2.0 * alpha * system.velocity_constraint(t, q, v)
            gam[: system.nc] -= beta ** 2 * system.constraint(t, q)
            K = system.kkt_matrix(t, q)
            vdot = np.linalg.solve(K, np.concatenate([f, gam]))[: system.nv]
        return np.concatenate([system.q_dot(q, v), vdot])

    return fun
