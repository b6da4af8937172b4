"""The AVF discrete gradient as one compiled loop over all steps (numba).

The same method as :class:`~kanedyn.integrators.discrete_gradient.AVF` (tested
to roundoff against it) for a plain Model with additive coordinates: canonical (q, p),
``∇H = (g − ∂T/∂q + ∂V_springs/∂q, M⁻¹p)`` from the CRBA kernel behind ``kd.crba`` and
the energy kernel of :mod:`kanedyn.dynamics.energy_kernel` (both on the model's one flat
array), the segment integral by Gauss–Legendre nodes, simplified Newton. Force elements
enter by their rows (:mod:`kanedyn.forces.kernel`: springs in H, the others as
``p' = p − h ∇̄_qH + h τ_nc(t + h/2, q̄, v̄)``, so that ``E' − E = h v̄ᵀ τ_nc``, the W_nc
increment recorded); a torque given as a Python function, a wrench or another law has
none, and the run takes the Python method. The Newton matrix is

    [[1, −h/2 M⁻¹], [0, 1 + h/2 C M⁻¹]],   C = diag(−∂τ_nc/∂v) ≥ 0 (dampers, friction)

at the start of the step — block triangular: without forces each update is two
matrix–vector products; with them ``(M + h/2 C) y = r_p``, ``δp = −M y``,
``δq = −r_q − h/2 y`` (one SPD solve), which keeps the iteration contracting with a
steep smoothed friction law (slope Fs/ε) where the matrix without C would not.
A step whose Newton iteration does not settle makes
the whole run fall back to the Python method (which refreshes its Jacobian).
A model with armature takes the Python method too (:func:`.rk4_compiled.applicable`:
this loop's energy is the bodies' alone, without the rotors' ½ Σ J v²).

This module imports the force rows of :mod:`kanedyn.forces` (DESIGN's order has
integrators below forces; a recorded exception): numba cannot take the force kernel as
an argument without losing its disk cache (a function argument's type differs in every
process), so the loop compiles the one compiled form of the elements in.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..dynamics import _compiled, kernels
from ..dynamics.energy_kernel import energy_pass
from ..dynamics.flat import flatten
from ..forces.kernel import (
    damping_slopes,
    empty_rows,
    has_forces,
    joint_forces,
    spring_gradient_add,
)
from .base import _chol_solve
from .rk4_compiled import largest_speed, save_sample, state_guard, step_grid, store

_compiled.key_cache(__name__)


@nb.njit(cache=True, nogil=True)
def _avf_loop(data, P, forces, t0, q0, v0, dt, n_steps, every, xi, w, tol, maxiter, blowup,
              Q, V, Wk, iters, status):
    n = v0.shape[0]
    q, v = q0.copy(), v0.copy()
    M = np.empty((n, n))
    M0 = np.empty((n, n))
    K = np.empty((n, n))  # M0 + h/2 C (with forces)
    Minv = np.empty((n, n))
    eye = np.eye(n)
    col = np.empty(n)
    qk, pk, vk = np.empty(n), np.empty(n), np.empty(n)
    dT, dV, out = np.empty(n), np.empty(n), np.empty(8)
    gq, gp = np.empty(n), np.empty(n)
    dq, dp, rq, rp = np.zeros(n), np.zeros(n), np.empty(n), np.empty(n)
    tau_nc, tau, slope = np.zeros(n), np.zeros(n), np.zeros(n)
    have_last, last_h = False, 0.0
    vmax0 = largest_speed(v)
    work = 0.0
    Wk[0] = 0.0
    k_out = store(q, v, Q, V, 0)
    for step in range(n_steps):
        h = dt[step]
        tm = t0 + step * dt[0] + 0.5 * h  # the midpoint time (the grid of step_grid)
        s = kernels.crba1(data, q, M)
        if forces:
            # the Newton matrix's p-block (module doc): M + h/2 C, C at the start
            damping_slopes(P, v, slope)
            for i in range(n):
                for j in range(n):
                    M0[i, j] = M[i, j]
                    K[i, j] = M[i, j]
                K[i, i] += 0.5 * h * slope[i]
        else:
            for j in range(n):  # M⁻¹ column by column (for the Newton matrix)
                if not _chol_solve(M, eye[j], col):
                    status[0], status[1] = 3, step
                    return k_out
                Minv[:, j] = col
        p = M @ v
        if not (have_last and last_h == h):
            for i in range(n):
                dq[i] = h * v[i]
                dp[i] = 0.0
        last = np.inf
        ok = False
        for it in range(1, maxiter + 1):
            # residual R(d) = (dq − h ∇̄_pH, dp + h ∇̄_qH − h τ_nc(t + h/2, q + dq/2, ∇̄_pH))
            gq[:] = 0.0
            gp[:] = 0.0
            for k in range(xi.shape[0]):
                for i in range(n):
                    qk[i] = q[i] + xi[k] * dq[i]
                    pk[i] = p[i] + xi[k] * dp[i]
                s |= kernels.crba1(data, qk, M)
                if not _chol_solve(M, pk, vk):
                    status[0], status[1] = 3, step
                    return k_out
                s |= energy_pass(data, qk, vk, dT, dV, out)
                for i in range(n):
                    gq[i] += w[k] * (dV[i] - dT[i])
                    gp[i] += w[k] * vk[i]
                if forces:
                    spring_gradient_add(P, qk, w[k], gq)
            for i in range(n):
                rq[i] = dq[i] - h * gp[i]
                rp[i] = dp[i] + h * gq[i]
            if forces:
                for i in range(n):
                    qk[i] = q[i] + 0.5 * dq[i]
                joint_forces(P, tm, qk, gp, tau_nc, tau)
                for i in range(n):
                    rp[i] -= h * tau_nc[i]
            # the block-triangular Newton matrix: δp = −rp, δq = −rq + h/2 M0⁻¹ δp (no
            # forces); with them (M0 + h/2 C) y = rp, δp = −M0 y, δq = −rq − h/2 y
            size, scale = 0.0, 0.0
            if forces:
                if not _chol_solve(K, rp, vk):
                    status[0], status[1] = 3, step
                    return k_out
                corr = vk
                mp = M0 @ vk
            else:
                corr = Minv @ rp
                mp = rp
            for i in range(n):
                d_p = -mp[i]
                d_q = -rq[i] - 0.5 * h * corr[i]
                dq[i] += d_q
                dp[i] += d_p
                size = max(size, abs(d_q), abs(d_p))
                scale = max(scale, abs(dq[i]), abs(dp[i]))
            if not np.isfinite(size):
                break
            theta = size / last if last < np.inf and last > 0 else 1.0
            if (size <= tol * scale or (theta < 0.5 and theta / (1 - theta) * size <= tol * scale)
                    or (size <= 1e-9 * scale and theta >= 0.5)):
                iters[step] = it
                ok = True
                break
            last = size
        if not ok:
            status[0], status[1] = 1, step
            return k_out
        have_last, last_h = True, h
        if forces:
            # W_nc += h v̄ᵀ τ_nc(t + h/2, q̄, v̄) with v̄ = Δq/h (the Python method's)
            for i in range(n):
                qk[i] = q[i] + 0.5 * dq[i]
                vk[i] = dq[i] / h
            joint_forces(P, tm, qk, vk, tau_nc, tau)
            for i in range(n):
                work += h * vk[i] * tau_nc[i]
        for i in range(n):
            q[i] += dq[i]
            pk[i] = p[i] + dp[i]
        s |= kernels.crba1(data, q, M)
        if not _chol_solve(M, pk, v) or s != 0:
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


def run(problem, tol: float, maxiter: int, nodes: int):
    """The whole AVF run in the compiled loop: a Solution, or None to fall back."""
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
    status = np.zeros(2, dtype=np.int64)
    _avf_loop(flatten(model).data, np.ascontiguousarray(P, float), has_forces(P),
              float(problem.t0), np.ascontiguousarray(problem.q0, float),
              np.ascontiguousarray(problem.v0, float), steps, n_steps, every, 0.5 * (x + 1.0),
              0.5 * wts, float(tol), int(maxiter), float(problem.blowup), Q, V, W, iters,
              status)
    if status[0]:
        return None  # the Python method takes the whole run, and reports what happens
    return Solution(times[keep], Q, V, W, {"newton_iterations": iters}, "avf")
