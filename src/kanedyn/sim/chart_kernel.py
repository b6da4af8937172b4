"""``ξ̇ = J(ξ)⁻¹ v`` on the chart ``q = q₀ ⊕ ξ``, compiled (numba), for the manifold RK4 loop.

The Python RK4 (:class:`kanedyn.integrators.rk4.RK4`) integrates a configuration that is
not additive (ball, free, planar joints, joint types of one's own) in the tangent chart
``q = q₀ ⊕ ξ`` of the step's start, with ``ξ̇ = J(ξ)⁻¹ v`` and J the right Jacobian of
``ξ ↦ q₀ ⊕ ξ`` for the body velocity (``v = J(ξ) ξ̇``; Munthe-Kaas's RKMK idea). J is
block diagonal by joint: 1 on additive joints, and on the others the joint's
:meth:`~kanedyn.model.joints.base.Joint.exponential_right_jacobian`, which this module
computes the same way:

- a ball joint, ``q₀ ⊗ exp(ξ)``: the closed form of SO(3) (Barfoot 2017, eq. 7.77b),
  ``J_r(ξ) = 1 − a ξ× + b (ξ×)²`` and its inverse

      J_r(ξ)⁻¹ = 1 + ½ ξ× + c (ξ×)²,   c = 1/θ² − (1 + cos θ) / (2 θ sin θ),   θ = |ξ|

  (c → 1/12 + θ²/720 as θ → 0);
- a free or planar joint, whose ``q₀ ⊕ ξ`` is the exponential of the body twist ``z = S ξ``
  (SE(3), SE(2) ⊂ SE(3)): ``J(ξ) = Sᵀ ∫₀¹ Ad_{exp(−s z)} ds S = Sᵀ (1 − e^{−ad_z})/ad_z S``,
  whose inverse on the subalgebra is the Bernoulli series

      J⁻¹ v = Sᵀ Σ_k (B_k⁺ / k!) ad_zᵏ (S v) = Sᵀ (1 + ½ ad_z + ad_z²/12 − ad_z⁴/720 + …) S v

  (``x / (1 − e^{−x})``; ad_z = crm(z); it converges for rotation angles |ω_z| < 2π and its
  terms fall like (|ω_z|/2π)^k), summed until a term is below 1e-17 of the sum, up to
  k = 20 — for |ω_z| ≤ 1 (a step turning a joint by < 1 rad);
- every other joint that is not additive (the entry tables of a joint type of one's own,
  and the free and planar joints beyond |ω_z| = 1): ``J(ξ) = Sᵀ (∫₀¹ X_J(q₀ ⊕ sξ)
  X_J(q₀)⁻¹ ds) S`` (Hairer, Lubich & Wanner 2006, III.4) by the same 8-point
  Gauss–Legendre rule as the Python joints
  (:data:`kanedyn.spatial.lie.RIGHT_JACOBIAN_QUADRATURE`), the transforms from the joint's
  compiled pose (``joint_transform``: ``X_up(q_s) X_up(q₀)⁻¹ = X_J(q_s) X_J(q₀)⁻¹``) and
  ``q₀ ⊕ sξ`` from its compiled ``integrate``; then ``J ξ̇ = v`` by Gaussian elimination
  with partial pivoting (nv ≤ 6).

The Python joints compute J by the closed form (ball) or the quadrature (free, planar) and
solve with numpy; the three forms agree to round-off (tested against
``ModelSystem.chart_jacobian``).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..dynamics import _compiled, kernels
from ..dynamics.kernels.joint_extension import INTEGRATE, table_entry
from ..dynamics.layout import EXTENSION, FREE, IV, JFUNCS, JTYPE, NVJ, PLANAR, SPHERICAL
from ..spatial.lie import RIGHT_JACOBIAN_QUADRATURE
from .configuration_kernel import integrate_joint

_compiled.key_cache(__name__)

#: B_k⁺ / k!, the coefficients of x / (1 − e^{−x}) = Σ_k c_k x^k (k = 0 … 20)
_SERIES = np.array([1.0, 1 / 2, 1 / 12, 0.0, -1 / 720, 0.0, 1 / 30240, 0.0, -1 / 1209600, 0.0,
                    1 / 47900160, 0.0, -691 / 1307674368000, 0.0, 1 / 74724249600, 0.0,
                    -3617 / 10670622842880000, 0.0, 43867 / 5109094217170944000, 0.0,
                    -174611 / 802857662698291200000])
_NODES = np.ascontiguousarray(RIGHT_JACOBIAN_QUADRATURE[0], dtype=float)
_WEIGHTS = np.ascontiguousarray(RIGHT_JACOBIAN_QUADRATURE[1], dtype=float)


@nb.njit(cache=True, _nrt=False, nogil=True)
def so3_right_jacobian_inverse_times(x, b, v, out):
    """out[b:b+3] = J_r(ξ)⁻¹ v[b:b+3] with ξ = x[b:b+3] (module doc)."""
    x0, x1, x2 = x[b], x[b + 1], x[b + 2]
    v0, v1, v2 = v[b], v[b + 1], v[b + 2]
    th2 = x0 * x0 + x1 * x1 + x2 * x2
    th = np.sqrt(th2)
    if th < 1e-4:  # the series: the closed form cancels to ~ε/θ² below
        c = 1.0 / 12.0 + th2 / 720.0
    else:
        c = 1.0 / th2 - (1.0 + np.cos(th)) / (2.0 * th * np.sin(th))
    w0, w1, w2 = x1 * v2 - x2 * v1, x2 * v0 - x0 * v2, x0 * v1 - x1 * v0  # ξ × v
    y0, y1, y2 = x1 * w2 - x2 * w1, x2 * w0 - x0 * w2, x0 * w1 - x1 * w0  # ξ × (ξ × v)
    out[b] = v0 + 0.5 * w0 + c * y0
    out[b + 1] = v1 + 0.5 * w1 + c * y1
    out[b + 2] = v2 + 0.5 * w2 + c * y2


@nb.njit(cache=True, _nrt=False, nogil=True)
def solve_small(A, y, n) -> bool:
    """In place: y[:n] ← A[:n, :n]⁻¹ y[:n] by Gaussian elimination with partial pivoting
    (A is overwritten); False if A is singular."""
    for k in range(n):
        p = k
        for r in range(k + 1, n):
            if abs(A[r, k]) > abs(A[p, k]):
                p = r
        if A[p, k] == 0.0:
            return False
        if p != k:
            for c in range(n):
                A[k, c], A[p, c] = A[p, c], A[k, c]
            y[k], y[p] = y[p], y[k]
        for r in range(k + 1, n):
            f = A[r, k] / A[k, k]
            for c in range(k, n):
                A[r, c] -= f * A[k, c]
            y[r] -= f * y[k]
    for k in range(n - 1, -1, -1):
        s = y[k]
        for c in range(k + 1, n):
            s -= A[k, c] * y[c]
        y[k] = s / A[k, k]
    return True


@nb.njit(cache=True, _nrt=False, nogil=True)
def _add_relative_transform(X0, Xs, w, A):
    """A += w X_s X_0⁻¹ (6x6), both given as (E row-major, r) with X = [E 0; −E r× E]:
    X_s X_0⁻¹ = X(E_s E_0ᵀ, E_0 (r_s − r_0))."""
    d0, d1, d2 = Xs[9] - X0[9], Xs[10] - X0[10], Xs[11] - X0[11]
    r0 = X0[0] * d0 + X0[1] * d1 + X0[2] * d2
    r1 = X0[3] * d0 + X0[4] * d1 + X0[5] * d2
    r2 = X0[6] * d0 + X0[7] * d1 + X0[8] * d2
    for a in range(3):
        e0 = Xs[3 * a] * X0[0] + Xs[3 * a + 1] * X0[1] + Xs[3 * a + 2] * X0[2]
        e1 = Xs[3 * a] * X0[3] + Xs[3 * a + 1] * X0[4] + Xs[3 * a + 2] * X0[5]
        e2 = Xs[3 * a] * X0[6] + Xs[3 * a + 1] * X0[7] + Xs[3 * a + 2] * X0[8]
        A[a, 0] += w * e0
        A[a, 1] += w * e1
        A[a, 2] += w * e2
        A[3 + a, 3] += w * e0
        A[3 + a, 4] += w * e1
        A[3 + a, 5] += w * e2
        # row a of −E r×: −(E (r × e_c)) for c = 0, 1, 2
        A[3 + a, 0] -= w * (e1 * r2 - e2 * r1)
        A[3 + a, 1] -= w * (e2 * r0 - e0 * r2)
        A[3 + a, 2] -= w * (e0 * r1 - e1 * r0)


@nb.njit(cache=True, nogil=True)
def quadrature_rate(data, i, q0, xi, v, qs, X0, Xs, W, out) -> int:
    """out[iv] = J(ξ)⁻¹ v[iv] for joint i by the quadrature of the module doc; work arrays
    ``qs`` (nq), ``X0``, ``Xs`` (nb, 12) and ``W`` (4, 6, 6) (A, S's columns as rows, J,
    and the right-hand side in W[3, 0]). Returns 0, or 1 if a pose is refused (a
    quaternion not unit) or J is singular."""
    b, n = int(data[i, IV]), int(data[i, NVJ])
    if kernels.joint_transform(data, i, q0, X0) != 0:
        return 1
    A, S, J, y = W[0], W[1], W[2], W[3, 0]
    A[:, :] = 0.0
    for k in range(_NODES.shape[0]):
        integrate_joint(data, i, q0, xi, _NODES[k], qs)
        if kernels.joint_transform(data, i, qs, Xs) != 0:
            return 1
        _add_relative_transform(X0[i], Xs[i], _WEIGHTS[k], A)
    for c in range(n):
        kernels.motion_subspace_column(data, i, c, S, c)  # S[c] = column c of S
    for r in range(n):  # J = Sᵀ A S
        for c in range(n):
            s = 0.0
            for a in range(6):
                t = 0.0
                for e in range(6):
                    t += A[a, e] * S[c, e]
                s += S[r, a] * t
            J[r, c] = s
        y[r] = v[b + r]
    if not solve_small(J, y, n):
        return 1
    for r in range(n):
        out[b + r] = y[r]
    return 0


@nb.njit(cache=True, nogil=True)
def twist_series_rate(data, i, xi, v, W, out) -> bool:
    """out[iv] = J(ξ)⁻¹ v[iv] for joint i whose chart is the exponential of the twist S ξ,
    by the Bernoulli series of the module doc; False (out untouched) when the rotation
    |ω_z| exceeds 1, where the caller takes the quadrature. ``W`` (4, 6, 6) work."""
    b, n = int(data[i, IV]), int(data[i, NVJ])
    S, z, t, acc, u = W[1], W[3, 0], W[3, 1], W[3, 2], W[3, 3]
    for c in range(n):
        kernels.motion_subspace_column(data, i, c, S, c)  # S[c] = column c of S
    for a in range(6):
        z[a] = 0.0
        t[a] = 0.0
        for c in range(n):
            z[a] += S[c, a] * xi[b + c]
            t[a] += S[c, a] * v[b + c]
    if z[0] * z[0] + z[1] * z[1] + z[2] * z[2] > 1.0:
        return False
    acc[:] = t
    big = 0.0
    for a in range(6):
        big = max(big, abs(t[a]))
    for k in range(1, _SERIES.shape[0]):
        # t ← ad_z t = [z_ω × t_ω; z_v × t_ω + z_ω × t_v] (the motion cross product)
        u[0] = z[1] * t[2] - z[2] * t[1]
        u[1] = z[2] * t[0] - z[0] * t[2]
        u[2] = z[0] * t[1] - z[1] * t[0]
        u[3] = z[4] * t[2] - z[5] * t[1] + z[1] * t[5] - z[2] * t[4]
        u[4] = z[5] * t[0] - z[3] * t[2] + z[2] * t[3] - z[0] * t[5]
        u[5] = z[3] * t[1] - z[4] * t[0] + z[0] * t[4] - z[1] * t[3]
        t[:] = u
        ck = _SERIES[k]
        if ck == 0.0:
            continue
        term = 0.0
        for a in range(6):
            acc[a] += ck * t[a]
            term = max(term, abs(ck * t[a]))
        if term <= 1e-17 * big:
            break
    for r in range(n):
        s = 0.0
        for a in range(6):
            s += S[r, a] * acc[a]
        out[b + r] = s
    return True


@nb.njit(cache=True, nogil=True)
def chart_rate_into(data, q0, xi, v, qs, X0, Xs, W, out) -> int:
    """out = J(ξ)⁻¹ v, ξ̇ of the chart ``q = q₀ ⊕ ξ`` (module doc), joint by joint: v on
    additive joints, the SO(3) closed form on ball joints, the twist series on free and
    planar ones, the quadrature elsewhere.
    Work arrays as :func:`quadrature_rate`; returns 0, or 1 (a pose refused, J singular)."""
    s = 0
    for i in range(data.shape[0] - 1):
        b, kd = int(data[i, IV]), int(data[i, JTYPE])
        if kd == SPHERICAL:
            so3_right_jacobian_inverse_times(xi, b, v, out)
        elif (kd == FREE or kd == PLANAR) and twist_series_rate(data, i, xi, v, W, out):
            pass
        elif kd == FREE or kd == PLANAR or (
                kd == EXTENSION and table_entry(int(data[i, JFUNCS]), INTEGRATE) != 0):
            s |= quadrature_rate(data, i, q0, xi, v, qs, X0, Xs, W, out)
        else:
            for e in range(int(data[i, NVJ])):
                out[b + e] = v[b + e]
    return s
