"""Lie-group maths of the joint manifolds: SO(3), SE(3), SE(2) and unit quaternions.

One place for the exponential and logarithm maps and their Jacobians that the joints
(:mod:`kanedyn.model.joints`), the system protocol (:mod:`kanedyn.sim.system`) and the
charts of the Hamiltonian integrators (:mod:`kanedyn.integrators.chart`) use.

Conventions: a rotation vector x ∈ so(3) has θ = |x|; ``x×`` is the skew matrix. A body
twist ξ = (φ, ρ) ∈ se(3) is angular first, as the spatial vectors of DESIGN.md; its
exponential is the pose (R, p) reached in unit time at that constant body twist, R and
p in the starting frame's axes. With

    a(θ) = (1 − cos θ)/θ²,        b(θ) = (θ − sin θ)/θ³,

- ``exp(x×) = 1 + (1 − θ² b) x× + a (x×)²`` (Rodrigues);
- the right Jacobian ``J_r(x) = 1 − a x× + b (x×)²``, with ``exp(x + δ) ≈ exp(x)
  exp(J_r(x) δ)``; the left one ``J_l(x) = J_r(−x) = J_r(x)ᵀ``, ``exp(x + δ) ≈
  exp(J_l(x) δ) exp(x)`` (Barfoot 2017, eqs. 7.77a/b);
- ``exp(ξ) = (exp(φ×), J_l(φ) ρ)`` (Murray, Li & Sastry 1994, eq. 2.36: J_l is their V);
- the unit quaternion of x is ``(cos(θ/2), sin(θ/2) x/θ)``, and a body angular velocity
  ω moves q by ``q̇ = ½ q ⊗ (0, ω)``.

Near θ = 0 every coefficient is taken from its power series: the closed forms lose up to
log10(1/θ⁴) digits there, which would put noise into Newton residuals.

The functions that charts call per step are compiled (numba) so that a call costs
well under a microsecond; they are called from Python only, never from another file's
compiled code (numba's disk cache would not see a change here).
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .algebra import skew
from .rotation import quat_conjugate, quat_exp, quat_log, quat_multiply, so3_exp, so3_log

__all__ = [
    "RIGHT_JACOBIAN_QUADRATURE",
    "quat_difference",
    "quat_exp",
    "quat_log",
    "quat_rate_matrix",
    "quat_times_exp",
    "se2_coefficients",
    "se3_exp",
    "se3_log",
    "se3_right_jacobian",
    "skew3",
    "so3_coefficients",
    "so3_exp",
    "so3_exp_matrix",
    "so3_left_jacobian",
    "so3_log",
    "so3_right_jacobian",
    "so3_right_jacobian_derivative",
]


# --- SO(3), compiled -----------------------------------------------------------------

@nb.njit(cache=True)
def skew3(x):
    """``x×`` (compiled; :func:`kanedyn.spatial.skew` is the numpy form)."""
    out = np.zeros((3, 3))
    out[0, 1], out[0, 2], out[1, 2] = -x[2], x[1], -x[0]
    out[1, 0], out[2, 0], out[2, 1] = x[2], -x[1], x[0]
    return out


@nb.njit(cache=True)
def so3_coefficients(th):
    """(a, b, a'/θ, b'/θ) with a = (1 − cos θ)/θ², b = (θ − sin θ)/θ³; their power series
    Σ(−1)^k θ^{2k}/(2k+2)!, Σ(−1)^k θ^{2k}/(2k+3)! below θ = 1 (the closed forms lose up
    to log10(1/θ⁴) digits there; 12 terms leave < 1e-20), the closed forms above."""
    if th < 1.0:
        t2 = th * th
        a = b = da = db = 0.0
        f2, f3 = 2.0, 6.0  # (2k+2)!, (2k+3)! at k = 0
        pw, sg = 1.0, 1.0
        for k in range(12):
            a += sg * pw / f2
            b += sg * pw / f3
            if k >= 1:
                da += sg * 2 * k * pw / t2 / f2 if t2 > 0.0 else 0.0
                db += sg * 2 * k * pw / t2 / f3 if t2 > 0.0 else 0.0
            f2 *= (2 * k + 3) * (2 * k + 4)
            f3 *= (2 * k + 4) * (2 * k + 5)
            pw *= t2
            sg = -sg
        if t2 == 0.0:
            da, db = -1.0 / 12.0, -1.0 / 60.0
        return a, b, da, db
    s, c = np.sin(th), np.cos(th)
    return ((1.0 - c) / th**2, (th - s) / th**3, (th * s - 2.0 * (1.0 - c)) / th**4,
            (3.0 * s - th * (2.0 + c)) / th**5)


@nb.njit(cache=True)
def so3_right_jacobian(x):
    """``J_r(x) = 1 − a x× + b (x×)²`` (module doc)."""
    a, b, _, _ = so3_coefficients(np.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]))
    X = skew3(x)
    return np.eye(3) - a * X + b * (X @ X)


@nb.njit(cache=True)
def so3_right_jacobian_derivative(x, w):
    """D with ``D δ = d/dε J_r(x + εδ) w``:

        D = a w× − b ((x×w)× + x× w×) + (b'/θ · x×(x×w) − a'/θ · x×w) xᵀ

    (the product rule on J_r w = w − a x×w + b x×(x×w), with dθ/dx = xᵀ/θ)."""
    th = np.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
    a, b, da, db = so3_coefficients(th)
    X, Wm = skew3(x), skew3(w)
    xw = np.cross(x, w)
    return (a * Wm - b * (skew3(xw) + X @ Wm)
            + np.outer(db * np.cross(x, xw) - da * xw, x))


@nb.njit(cache=True)
def so3_exp_matrix(x):
    """exp(x×) by Rodrigues, with a = sin θ/θ, b = (1 − cos θ)/θ² from the series
    (compiled; :func:`kanedyn.spatial.so3_exp` is the numpy form)."""
    th = np.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
    b, c, _, _ = so3_coefficients(th)
    a = 1.0 - th * th * c  # sin θ/θ = 1 − θ² (θ − sin θ)/θ³
    X = skew3(x)
    return np.eye(3) + a * X + b * (X @ X)


@nb.njit(cache=True)
def quat_times_exp(u, x):
    """``u ⊗ exp(x)`` renormalised: exp(x) = (cos(θ/2), sin(θ/2) x/θ), sin(θ/2)/θ by its
    series below θ = 1e-4 (compiled; the same map as
    ``quat_multiply(u, quat_exp(x))`` followed by normalisation)."""
    th = np.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
    w = np.cos(0.5 * th)
    k = 0.5 - th * th / 48.0 if th < 1e-4 else np.sin(0.5 * th) / th
    b1, b2, b3 = k * x[0], k * x[1], k * x[2]
    a0, a1, a2, a3 = u[0], u[1], u[2], u[3]
    out = np.empty(4)
    out[0] = a0 * w - a1 * b1 - a2 * b2 - a3 * b3
    out[1] = a0 * b1 + a1 * w + a2 * b3 - a3 * b2
    out[2] = a0 * b2 - a1 * b3 + a2 * w + a3 * b1
    out[3] = a0 * b3 + a1 * b2 - a2 * b1 + a3 * w
    n = np.sqrt(out[0] ** 2 + out[1] ** 2 + out[2] ** 2 + out[3] ** 2)
    return out / n


# --- SO(3) and SE(3), numpy ----------------------------------------------------------

def so3_left_jacobian(w: ArrayLike) -> NDArray:
    """``J_l(w) = V(w) = 1 + a w× + b (w×)²`` with a, b of :func:`so3_coefficients`: the
    body-twist exponential moves the origin by ``R V(ω dt) v dt`` (Murray, Li & Sastry
    1994, eq. 2.36). (The closed forms of a and b in doubles lose ~log10(1/θ²) digits:
    a relative 1e-8 at θ = 1e-4; the series there are at roundoff.)"""
    w = np.asarray(w, dtype=float)
    a, b, _, _ = so3_coefficients(float(np.linalg.norm(w)))
    W = skew(w)
    return np.eye(3) + a * W + b * (W @ W)


def se3_exp(xi: ArrayLike) -> tuple[NDArray, NDArray]:
    """(R, p) = exp(ξ) for a body twist ξ = (φ, ρ): ``R = exp(φ×)``, ``p = J_l(φ) ρ``."""
    xi = np.asarray(xi, dtype=float)
    return so3_exp(xi[:3]), so3_left_jacobian(xi[:3]) @ xi[3:]


def se3_log(R: ArrayLike, p: ArrayLike) -> NDArray:
    """The body twist ξ = (φ, ρ), |φ| ≤ π, with ``se3_exp(ξ) == (R, p)``."""
    phi = so3_log(R)
    return np.concatenate([phi, np.linalg.solve(so3_left_jacobian(phi),
                                                np.asarray(p, dtype=float))])


# Gauss–Legendre nodes on [0, 1] for the integral J_r(ξ) = ∫₀¹ Ad_{exp(-sξ)} ds.
# The integrand is entire in s; 8 nodes (exact to degree 15) leave an error
# below 1e-16 for |ξ| ≲ 1 rad, far beyond any step an integrator takes.
_GL_X, _GL_W = np.polynomial.legendre.leggauss(8)
_GL_S = 0.5 * (_GL_X + 1.0)
_GL_W = 0.5 * _GL_W
#: (nodes s, weights) of that rule, for the same integral over another group's
#: transforms (the planar joint's, in :meth:`kanedyn.sim.system.ModelSystem.chart_jacobian`)
RIGHT_JACOBIAN_QUADRATURE = (_GL_S, _GL_W)

_LEVI = np.zeros((3, 3, 3))
_LEVI[0, 1, 2] = _LEVI[1, 2, 0] = _LEVI[2, 0, 1] = 1.0
_LEVI[0, 2, 1] = _LEVI[2, 1, 0] = _LEVI[1, 0, 2] = -1.0


def _so3_coefficients_vectorised(th: NDArray) -> tuple[NDArray, NDArray]:
    """a(θ), b(θ) of the module doc for an array of θ without cancellation: a as
    ½ (sin(θ/2)/(θ/2))², b by its Taylor series below θ = 0.2."""
    half = 0.5 * th
    sinc = np.where(half < 1e-8, 1.0 - half**2 / 6.0, np.sin(half) / np.where(half == 0, 1, half))
    a = 0.5 * sinc**2
    t2 = th * th
    series = (1.0 / 6.0 - t2 / 120.0 * (1.0 - t2 / 42.0 * (1.0 - t2 / 72.0 * (1.0 - t2 / 110.0))))
    safe = np.where(th < 0.2, 1.0, th)
    b = np.where(th < 0.2, series, (safe - np.sin(safe)) / safe**3)
    return a, b


def se3_right_jacobian(xi: NDArray) -> NDArray:
    """Right Jacobian of the SE(3) exponential for a body twist ``ξ = (φ, ρ)`` (angular
    first): ``J_r = ∫₀¹ Ad_{exp(−sξ)} ds`` (Barfoot 2017, 7.1.5), by Gauss–Legendre
    quadrature over s of the closed-form Plücker transforms (vectorised over the nodes)."""
    phi, rho = xi[:3], xi[3:]
    s = _GL_S[:, None]
    w = -s * phi  # rotation vectors of exp(−sξ)
    th = np.linalg.norm(w, axis=1)[:, None, None]
    W = np.einsum("ijk,nk->nij", _LEVI, -w)  # skew(w) for every node: W[n] @ x = w[n] × x
    W2 = W @ W
    small = th < 1e-6
    ths = np.where(small, 1.0, th)
    a = np.where(small, 1.0 - th**2 / 6, np.sin(ths) / ths)
    b, c = _so3_coefficients_vectorised(th)
    eye = np.eye(3)[None]
    # child-0 to child-s coordinates rotate by exp(−sφ×); the origin of the child at s,
    # in child-0 coordinates, is V(sφ) sρ (the translation of exp(sξ))
    E = eye + a * W + b * W2
    V = eye - b * W + c * W2
    r = np.einsum("nij,nj->ni", V, s * rho)
    R = np.einsum("ijk,nk->nij", _LEVI, -r)  # r×
    X = np.zeros((_GL_S.size, 6, 6))  # the Plücker transform [E 0; −E r× E]
    X[:, :3, :3] = E
    X[:, 3:, 3:] = E
    X[:, 3:, :3] = -E @ R
    return np.einsum("n,nij->ij", _GL_W, X)


# --- SE(2) and quaternion kinematics -------------------------------------------------

def se2_coefficients(w: float) -> tuple[float, float]:
    """(sin w / w, (1 − cos w)/w), series below |w| = 1e-9: the planar analogue of
    :func:`so3_left_jacobian`, ``V(w) = [[a, −b], [b, a]]``, so that the SE(2)
    exponential of a body twist (v_x, v_y, w) moves the origin by V(w) (v_x, v_y).
    1 − cos w is taken as 2 sin²(w/2), which does not cancel."""
    if abs(w) < 1e-9:
        return 1.0 - w * w / 6.0, w / 2.0
    return np.sin(w) / w, 2.0 * np.sin(0.5 * w) ** 2 / w


def quat_rate_matrix(qj: NDArray) -> NDArray:
    """The 4x3 matrix G(q) with ``q̇ = ½ q ⊗ (0, ω) = G(q) ω`` for body angular velocity ω."""
    w, x, y, z = qj
    return 0.5 * np.array([[-x, -y, -z], [w, -z, y], [z, w, -x], [-y, x, w]])


def quat_difference(q0: ArrayLike, q1: ArrayLike) -> NDArray:
    """The rotation vector x (body axes of q0, |x| ≤ π) with ``q1 = q0 ⊗ exp(x)``."""
    return quat_log(quat_multiply(quat_conjugate(q0), q1))
