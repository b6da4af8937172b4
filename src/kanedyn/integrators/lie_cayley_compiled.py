"""The ``"lie"`` variant of energy_momentum compiled: a free rigid body, the whole run in
one numba call.

The readable reference is ``EnergyMomentum._lie_step`` (:mod:`.energy_momentum`); this is
the same step, tested against it step for step. A single body on a free joint under
uniform gravity, no other load: the centre of mass moves by the exact kick–drift of its
linear momentum P, and the body's angular momentum about the centre of mass π (body
coordinates) by the discrete Euler equation of the Lie–Cayley midpoint scheme,

    π' − π + h ω̄ × π̄ = 0,   π̄ = (π + π')/2,   ω̄ = I_c⁻¹ π̄,

solved by Newton with its exact 3 × 3 Jacobian ``1 + h/2 (ω̄× − π̄× I_c⁻¹)``; the attitude
moves by the Cayley map of h ω̄ (quaternion ∝ (1, h ω̄/2)). ½ π·I_c⁻¹π and |π| are kept to
round-off (Lewis & Simo, *J. Nonlinear Sci.* 4 (1994) 253; Hairer, Lubich & Wanner,
*Geometric Numerical Integration*, VII.5).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..dynamics import _compiled
from ..dynamics.energy_kernel import _cross
from .base import nan_max
from .rk4_compiled import save_sample, state_guard, step_grid, store

_compiled.key_cache(__name__)  # (see dynamics/_compiled.py)

#: status codes of :func:`lie_run` (``status[0]``)
OK, NEWTON_FAILED, STATE_GUARD = 0, 1, 2
_EPS = np.finfo(np.float64).eps


@nb.njit(cache=True, nogil=True)
def quaternion_rotation(w, x, y, z, R):
    """R ← the rotation of the unit quaternion (w, x, y, z) (``spatial.quat_to_matrix``)."""
    R[0, 0], R[0, 1], R[0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
    R[1, 0], R[1, 1], R[1, 2] = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
    R[2, 0], R[2, 1], R[2, 2] = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)


@nb.njit(cache=True, nogil=True)
def lie_run(m, c, Ic, Ici, g, q0, v0, dt, n_steps, every, maxiter, blowup, Q, V, iters,
            status):
    """The run from (q0, v0) over the steps ``dt`` (q = (x, quaternion w x y z), v = (ω,
    v_O) in body coordinates, as the free joint's); the kept samples in Q, V (row 0 the
    start); returns how many were written. ``status`` = (code, step): NEWTON_FAILED when
    the discrete Euler equation does not settle in ``maxiter`` updates, STATE_GUARD when
    a state is not finite or a speed passes ``blowup`` (1 + max|v0|)."""
    q, v = q0.copy(), v0.copy()
    R = np.empty((3, 3))
    P, pi, pn, pb, wb, r, t3, xc = (np.empty(3), np.empty(3), np.empty(3), np.empty(3),
                                    np.empty(3), np.empty(3), np.empty(3), np.empty(3))
    J = np.empty((3, 3))
    k_out = store(q, v, Q, V, 0)
    vmax0 = 0.0
    for i in range(6):
        vmax0 = max(vmax0, abs(v[i]))
    for step in range(n_steps):
        h = dt[step]
        quaternion_rotation(q[3], q[4], q[5], q[6], R)
        _cross(v[:3], c, t3)
        for a in range(3):
            t3[a] += v[3 + a]
        for a in range(3):
            P[a] = m * (R[a, 0] * t3[0] + R[a, 1] * t3[1] + R[a, 2] * t3[2])
            xc[a] = q[a] + R[a, 0] * c[0] + R[a, 1] * c[1] + R[a, 2] * c[2]
        pi[:] = Ic @ v[:3]
        pn[:] = pi
        scale = np.abs(pi).max()
        it, done = 0, scale == 0.0
        while not done:
            it += 1
            for a in range(3):
                pb[a] = 0.5 * (pi[a] + pn[a])
            wb[:] = Ici @ pb
            _cross(wb, pb, r)
            for a in range(3):
                r[a] = pn[a] - pi[a] + h * r[a]
            # ∂r/∂π' = 1 + h/2 (ω̄× − π̄× I_c⁻¹)
            for a in range(3):
                for b in range(3):
                    s = 0.0
                    for k in range(3):
                        s += _skew(pb, a, k) * Ici[k, b]
                    J[a, b] = (1.0 if a == b else 0.0) + 0.5 * h * (_skew(wb, a, b) - s)
            d = np.linalg.solve(J, r)
            size = 0.0
            for a in range(3):
                pn[a] -= d[a]
                size = nan_max(size, abs(d[a]))
            if size <= 2 * _EPS * scale or (size <= 1e-13 * scale and it >= 3):
                done = True
            elif it >= maxiter or not np.isfinite(size):
                iters[step] = it
                status[0], status[1] = NEWTON_FAILED, step
                return k_out
        iters[step] = it
        for a in range(3):
            pb[a] = 0.5 * (pi[a] + pn[a])
        wb[:] = Ici @ pb
        cayley_attitude(q, h, wb[0], wb[1], wb[2])
        # the centre of mass: P' = P + h m g, x_c' = x_c + h/(2m) (P + P')
        for a in range(3):
            Pn = P[a] + h * m * g[a]
            xc[a] += 0.5 * h / m * (P[a] + Pn)
            P[a] = Pn
        quaternion_rotation(q[3], q[4], q[5], q[6], R)
        wb[:] = Ici @ pn  # ω'
        _cross(wb, c, t3)
        for a in range(3):
            q[a] = xc[a] - (R[a, 0] * c[0] + R[a, 1] * c[1] + R[a, 2] * c[2])
            v[a] = wb[a]
            v[3 + a] = (R[0, a] * P[0] + R[1, a] * P[1] + R[2, a] * P[2]) / m - t3[a]
        if state_guard(q, v, vmax0, blowup) != 0:
            status[0], status[1] = STATE_GUARD, step + 1
            return k_out
        k_out = save_sample(step, n_steps, every, q, v, Q, V, k_out)
    return k_out


@nb.njit(cache=True, nogil=True)
def cayley_attitude(q, h, w0, w1, w2):
    """q[3:7] ← q[3:7] ⊗ cay(h ω), the quaternion of cay(h ω) being ∝ (1, h ω/2), unit to
    round-off (the attitude update of the lie and floating variants)."""
    a0, a1, a2 = 0.5 * h * w0, 0.5 * h * w1, 0.5 * h * w2
    nrm = np.sqrt(1.0 + a0 * a0 + a1 * a1 + a2 * a2)
    dw, dx, dy, dz = 1.0 / nrm, a0 / nrm, a1 / nrm, a2 / nrm
    pw, px, py, pz = q[3], q[4], q[5], q[6]
    qw = pw * dw - px * dx - py * dy - pz * dz
    qx = pw * dx + px * dw + py * dz - pz * dy
    qy = pw * dy - px * dz + py * dw + pz * dx
    qz = pw * dz + px * dy - py * dx + pz * dw
    nq = np.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
    q[3], q[4], q[5], q[6] = qw / nq, qx / nq, qy / nq, qz / nq


@nb.njit(cache=True, nogil=True)
def _skew(w, a, b) -> float:
    """Entry (a, b) of the cross-product matrix w×."""
    if a == b:
        return 0.0
    if a == 0:
        return -w[2] if b == 1 else w[1]
    if a == 1:
        return w[2] if b == 0 else -w[0]
    return -w[1] if b == 0 else w[0]


def run(method, problem):
    """The whole run of ``method`` (an EnergyMomentum of the ``"lie"`` variant), or None
    when it stops (Newton, a non-finite state, a blow-up): the Python steps then take the
    run and report what happens."""
    from .base import Solution

    n_steps, steps, times, every, keep = step_grid(problem.dt, problem.t0, problem.t_final,
                                                   problem.save_every)
    Q, V = np.empty((len(keep), 7)), np.empty((len(keep), 6))
    iters = np.zeros(n_steps, dtype=np.int32)
    status = np.zeros(2, dtype=np.int64)
    f = np.ascontiguousarray
    lie_run(float(method.m), f(method.c, float), f(method.Ic, float), f(method.Ic_inv, float),
            f(method.g, float), f(problem.q0, float), f(problem.v0, float), steps, n_steps,
            every, int(method.opts["maxiter"]), float(problem.blowup), Q, V, iters, status)
    if status[0] != OK:
        return None
    return Solution(times[keep], Q, V, np.zeros(len(keep)), {"newton_iterations": iters},
                    method.name)
