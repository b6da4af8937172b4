"""Radau IIA of order 5 for ``D y' = f(t, y)`` with a constant diagonal D, index ≤ 3.

The method of Hairer & Wanner, *Solving Ordinary Differential Equations II*
(2nd ed., 1996), sec. IV.8 (implementation) and ch. VII (DAEs of index 2 and 3):

- three-stage collocation at c = ((4 − √6)/10, (4 + √6)/10, 1);
- the stage system ``D Z = h (A ⊗ I) F(Z)`` is solved by simplified Newton. With
  ``T⁻¹ A⁻¹ T = diag(γ̂, [[α, β], [−β, α]])`` the Newton matrix decouples into one real
  ``(γ̂/h D − J)`` and one complex ``((α − iβ)/h D − J)`` system (sec. IV.8);
- the error estimate is the embedded formula of sec. IV.8 (as in RADAU5) with one extra
  solve (``(γ̂/h D − J)⁻¹``), refined once after a rejection;
- for a DAE, the scaled error of index-2 variables is multiplied by h and of index-3
  variables by h² (ch. VII; the index-2/3 option of RADAU5);
- the local tolerances (RADAU5's map for index ≤ 2; rtol itself, with a tighter Newton
  stop, for index 3) are those of :func:`_internal_tolerances`, with the measurements
  that chose them;
- the real and complex LU factorisations and solves call LAPACK directly (getrf/getrs):
  at n ≈ 30 the checks of ``scipy.linalg.lu_factor``/``lu_solve`` cost as much as the work.
  The complex system stays one complex LU: at n = 27 zgetrf takes 10.6 µs, the
  equivalent 2n × 2n real factorisation 21.6 µs;
- step size by the predictive (Gustafsson) controller, dense output from the
  collocation polynomial, and the Newton starting values extrapolated from it.

The index of each variable comes from the caller (the DAE formulation derives it); a
failure to reach t_final raises :class:`~kanedyn.errors.SolverError` with the time, the
step, and the component with the largest scaled error.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg.lapack import dgetrf, dgetrs, zgetrf, zgetrs

from ..errors import DivergenceError, KanedynWarning, SolverError

_S6 = np.sqrt(6.0)
C = np.array([(4.0 - _S6) / 10.0, (4.0 + _S6) / 10.0, 1.0])
A = np.array([
    [(88.0 - 7.0 * _S6) / 360.0, (296.0 - 169.0 * _S6) / 1800.0, (-2.0 + 3.0 * _S6) / 225.0],
    [(296.0 + 169.0 * _S6) / 1800.0, (88.0 + 7.0 * _S6) / 360.0, (-2.0 - 3.0 * _S6) / 225.0],
    [(16.0 - _S6) / 36.0, (16.0 + _S6) / 36.0, 1.0 / 9.0],
])
#: coefficients of the embedded error estimate (Hairer & Wanner II, sec. IV.8; RADAU5)
E_ERR = np.array([-(13.0 + 7.0 * _S6) / 3.0, (-13.0 + 7.0 * _S6) / 3.0, -1.0 / 3.0])


def _transformation() -> tuple[NDArray, NDArray, float, float, float]:
    """T with ``A⁻¹ T = T Λ``, Λ = diag(γ̂, [[α, β], [−β, α]]), from the eigenvectors of A⁻¹."""
    Ainv = np.linalg.inv(A)
    lam, V = np.linalg.eig(Ainv)
    k_real = int(np.argmin(np.abs(lam.imag)))
    k_cplx = int(np.argmax(lam.imag))
    gam = float(lam[k_real].real)
    alpha, beta = float(lam[k_cplx].real), float(lam[k_cplx].imag)
    w = V[:, k_cplx]
    T = np.column_stack([V[:, k_real].real, w.real, w.imag])
    return T, np.linalg.inv(T), gam, alpha, beta


T, TI, GAMMA, ALPHA, BETA = _transformation()
# Z(s) = Σ_k D_k s^k through Z(0) = 0, Z(c_i) = Z_i (the collocation polynomial)
_VINV = np.linalg.inv(np.array([[c, c * c, c ** 3] for c in C]))
_UROUND = np.finfo(float).eps
#: smallest internal rtol for index-3 DAEs (see :func:`_internal_tolerances`)
INDEX3_RTOL_FLOOR = 1e-10


@dataclass
class RadauResult:
    """Accepted steps (``t``, ``y``), dense output ``sol(t)``, statistics."""

    t: NDArray
    y: NDArray
    stats: dict = field(default_factory=dict)
    _segments: list = field(default_factory=list, repr=False)

    def sol(self, t: ArrayLike) -> NDArray:
        """The collocation polynomial of the step containing each t (shape (len(t), n))."""
        tt = np.atleast_1d(np.asarray(t, dtype=float))
        starts = np.array([s[0] for s in self._segments])
        out = np.empty((tt.size, self.y.shape[1]))
        for k, ti in enumerate(tt):
            j = int(np.clip(np.searchsorted(starts, ti, side="right") - 1, 0, len(starts) - 1))
            t0, h, y0, D = self._segments[j]
            s = (ti - t0) / h
            out[k] = y0 + s * D[0] + s * s * D[1] + s ** 3 * D[2]
        return out[0] if np.ndim(t) == 0 else out


def _internal_tolerances(rtol: float, atol, n: int, Dm: NDArray, idx: NDArray):
    """(rtol_i, atol_i, fnewt): the local tolerances of the step control and of Newton.

    - Index ≤ 2: RADAU5's map ``rtol_i = 0.1 rtol^(2/3)`` (Hairer & Wanner II, sec. IV.8).
      The embedded estimate is O(h⁴) while the true local error is O(h⁶), so the global
      error comes out near rtol when the estimate is held at rtol_i.
    - Index 3 (any variable): ``rtol_i = rtol``. With the h²-scaled estimate the global
      error of the *positions* of the unreduced index-3 form is not the 3/2 power of the
      estimate but proportional to it: on Andrews' squeezer (RADAU5's map and Newton
      test) it measured ≈ 7 rtol_i at every tol from 1e-8 to 1e-12, so the map made the
      positions ~100× less accurate than asked. Held at rtol itself (and with the Newton
      test below) they came out at 0.3–2.3 × rtol for rtol = 1e-4 … 1e-9
      (bench/dae_work_precision.py, docs/benchmarks.md) — down to
      ``rtol_i = 1e-10`` (:data:`INDEX3_RTOL_FLOOR`); tighter, the roundoff of the
      index-3 stage system (its condition grows like h⁻³) keeps the Newton iteration
      from reaching its test and the step collapses (Andrews: at 1e-11 and 1e-12), so
      smaller rtol are held there, atol in proportion, with a :class:`~kanedyn.KanedynWarning`.

    Newton stops when the estimated remaining error ``θ/(1 − θ)·‖ΔZ‖`` is below fnewt in
    the scaled norm of the error test (RADAU5: ``max(10 u/rtol_i, min(0.03, rtol_i^½))``).
    That norm weights the index-2 components by h and the index-3 ones by h² — right for
    the error estimate, but a *differential* component of index ≥ 2 (the velocities of
    the index-3 form) carries its Newton error into the next step at full size. On
    Andrews, converging only the velocities fully moved the final positions from 6.8 to
    7.5 digits at tol 1e-10; so when such components exist fnewt is 10× smaller.
    """
    quot_tol = np.asarray(atol, dtype=float) / rtol
    if np.any(idx >= 3):
        rtol_i = max(float(rtol), INDEX3_RTOL_FLOOR)
    else:
        rtol_i = 0.1 * rtol ** (2.0 / 3.0)
    atol_i = rtol_i * quot_tol * np.ones(n)
    fnewt = max(10.0 * _UROUND / rtol_i, min(0.03, rtol_i ** 0.5))
    if np.any((Dm != 0) & (idx >= 2)):
        fnewt = max(10.0 * _UROUND / rtol_i, 0.1 * fnewt)
    return rtol_i, atol_i, fnewt


def _factor(getrf, A, what):
    """LU of A by LAPACK directly (scipy.linalg.lu_factor costs ~2x in checks at n ~ 30)."""
    lu, piv, info = getrf(A, overwrite_a=1)
    if info < 0:
        raise SolverError(f"radau5: LAPACK getrf argument {-info} illegal ({what})")
    return lu, piv  # info > 0 (exactly singular) shows up as inf/nan in the solves


def _fd_jacobian(fun, t, y, f0, vectorized):
    """Forward differences, all columns in one batched call when the function allows it."""
    delt = np.sqrt(_UROUND * np.maximum(1e-5, np.abs(y)))
    if vectorized:
        Yb = y[None, :] + np.diag(delt)
        Fb = fun(t, Yb)
    else:
        Fb = np.array([fun(t, y + np.eye(y.size)[j] * delt[j]) for j in range(y.size)])
    return ((Fb - f0[None, :]) / delt[:, None]).T


def _setup(t_span, y0, mass, index, rtol, atol, names, h0, max_step, hmin):
    """The checked inputs and the local tolerances of :func:`radau5` (shared with the
    compiled loop of :mod:`.radau_compiled`)."""
    t0, tf = float(t_span[0]), float(t_span[1])
    if not tf > t0:
        raise SolverError(f"radau5 integrates forward only: t_span = {t_span}")
    y = np.array(y0, dtype=float).ravel()
    n = y.size
    Dm = np.ones(n) if mass is None else np.asarray(mass, dtype=float).ravel()
    idx = np.ones(n, dtype=int) if index is None else np.asarray(index, dtype=int).ravel()
    if Dm.size != n or idx.size != n:
        raise SolverError(f"radau5: mass ({Dm.size}) and index ({idx.size}) must have n = {n}")
    if not np.all(np.isfinite(y)):
        raise SolverError("radau5: y0 contains NaN or infinity")
    if rtol <= 0 or np.any(np.asarray(atol) <= 0):
        raise SolverError(f"radau5: rtol = {rtol} and atol = {atol} must be positive")
    names = list(names) if names is not None else [f"y[{i}]" for i in range(n)]
    rtol_i, atol_i, fnewt = _internal_tolerances(rtol, atol, n, Dm, idx)
    if np.any(idx >= 3) and rtol < INDEX3_RTOL_FLOOR:
        warnings.warn(
            f"radau5: rtol = {rtol:g} is below the floor {INDEX3_RTOL_FLOOR:g} for index-3 "
            f"DAEs (tighter, roundoff stalls the Newton iteration); running at rtol = "
            f"{INDEX3_RTOL_FLOOR:g}, atol in proportion. For tighter positions use the "
            "'ggl' or 'index1' formulation.", KanedynWarning, stacklevel=3)
    hmax = (tf - t0) if max_step is None else float(max_step)
    h = min(1e-6 if h0 is None else float(h0), hmax, tf - t0)
    hmin_abs = 1e-14 * max(1.0, abs(tf)) if hmin is None else float(hmin)
    return t0, tf, y, n, Dm, idx, names, rtol_i, atol_i, fnewt, hmax, h, hmin_abs


def radau5(fun: Callable, t_span: tuple[float, float], y0: ArrayLike,
           mass: ArrayLike | None = None, index: ArrayLike | None = None,
           rtol: float = 1e-6, atol: float | ArrayLike = 1e-6, jac: Callable | None = None,
           h0: float | None = None, max_step: float | None = None,
           t_eval: ArrayLike | None = None, vectorized: bool = True,
           names: Sequence[str] | None = None, max_steps: int = 100_000,
           max_newton: int = 7, hmin: float | None = None) -> RadauResult:
    """Integrate ``diag(mass) y' = fun(t, y)`` from t_span[0] to t_span[1].

    ``fun(t, Y)`` must accept a batch ``Y`` of shape (k, n) with ``t`` a scalar or an
    array of shape (k,) when ``vectorized`` (the three stages and the finite-difference
    Jacobian are then one call each). ``mass``: the diagonal of D (default: ones, an
    ODE). ``index``: the differentiation index (1, 2, 3) of each variable (default 1).
    ``jac(t, y)``: ∂f/∂y (n × n), else forward differences. ``rtol``/``atol`` set the
    *global* error aimed at; how they become the local tolerances of the step control and
    of the Newton iteration is :func:`_internal_tolerances`. ``max_newton``: Newton
    iterations per step (7, as RADAU5). ``names``: labels of the components, used in
    error messages.
    """
    (t0, tf, y, n, Dm, idx, names, rtol_i, atol_i, fnewt, hmax, h,
     hmin_abs) = _setup(t_span, y0, mass, index, rtol, atol, names, h0, max_step, hmin)
    safe, facl, facr, thet = 0.9, 5.0, 1.0 / 8.0, 0.001
    cfac = safe * (1 + 2 * max_newton)
    idx2, idx3 = idx == 2, idx >= 3
    Dmat = np.diag(Dm)
    inv_sqrt_3n = 1.0 / np.sqrt(3.0 * n)
    inv_sqrt_n = 1.0 / np.sqrt(n)

    def F(t, Y):
        if vectorized:
            return fun(t, Y)
        return np.array([fun(ti, Yi) for ti, Yi in zip(np.broadcast_to(t, len(Y)), Y, strict=True)])

    def jacobian(t, y, f0):
        if jac is not None:
            return np.asarray(jac(t, y), dtype=float)
        return _fd_jacobian(fun if vectorized else (lambda tt, yy: fun(tt, yy)), t, y, f0,
                            vectorized)

    def scale(y_a, y_b, h):
        sc = atol_i + rtol_i * np.maximum(np.abs(y_a), np.abs(y_b))
        sc[idx2] /= h
        sc[idx3] /= h * h
        return sc

    t = t0
    f0 = np.asarray(F(t, y[None, :])[0])
    if not np.all(np.isfinite(f0)):
        raise DivergenceError(f"radau5: f(t0, y0) is not finite at t = {t0}")
    J = jacobian(t, y, f0)
    stats = dict(nfev=1, njev=1, nlu=0, nstep=0, naccpt=0, nrejct=0, nnewton_fail=0)
    ts, ys, segments = [t], [y.copy()], []
    Zprev = None  # the previous step's D (polynomial) and h, for starting values
    first, reject, caljac, decompose = True, False, True, True
    faccon, theta = 1.0, 1.0
    hacc, erracc = h, 1e-2
    last_err = None
    E1 = E2 = None

    while t < tf:
        if stats["nstep"] >= max_steps:
            raise SolverError(f"radau5: {max_steps} steps without reaching t = {tf} "
                              f"(stopped at t = {t:.10g}, h = {h:.3g})")
        if h < hmin_abs:
            _collapse(t, h, last_err, names, idx)
        last = t + 1.0001 * h >= tf
        if last:
            h = tf - t
            decompose = True
        if decompose:
            fac1 = GAMMA / h
            alph, bet = ALPHA / h, BETA / h
            E1 = _factor(dgetrf, fac1 * Dmat - J, "real system")
            E2 = _factor(zgetrf, (alph - 1j * bet) * Dmat - J, "complex system")
            stats["nlu"] += 1
            decompose = False
        stats["nstep"] += 1
        # starting values: extrapolate the previous collocation polynomial
        if Zprev is None or first:
            Z = np.zeros((3, n))
        else:
            Dp, hp = Zprev
            s = 1.0 + C * h / hp
            zs = s[:, None] * Dp[0] + (s * s)[:, None] * Dp[1] + (s ** 3)[:, None] * Dp[2]
            Z = zs - (Dp[0] + Dp[1] + Dp[2])[None, :]
        W = TI @ Z
        scal = scale(y, y, h)
        faccon = max(faccon, _UROUND) ** 0.8
        theta = abs(thet)
        newt, converged, dynold, thqold = 0, False, 1.0, 1.0
        hfactor = 0.5
        while True:
            if newt >= max_newton:
                break
            Fz = F(t + C * h, y[None, :] + Z)
            stats["nfev"] += 1
            if not np.all(np.isfinite(Fz)):
                break
            Gz = TI @ Fz
            DW = Dm * W
            r1 = Gz[0] - fac1 * DW[0]
            rc = (Gz[1] - alph * DW[1] - bet * DW[2]) + 1j * (Gz[2] + bet * DW[1] - alph * DW[2])
            dW = np.empty((3, n))
            dW[0] = dgetrs(E1[0], E1[1], r1)[0]
            u = zgetrs(E2[0], E2[1], rc)[0]
            dW[1] = u.real
            dW[2] = u.imag
            newt += 1
            dyno = float(np.linalg.norm(dW / scal)) * inv_sqrt_3n
            if 1 < newt < max_newton:
                thq = dyno / dynold
                theta = thq if newt == 2 else float(np.sqrt(thq * thqold))
                thqold = thq
                if theta < 0.99:
                    faccon = theta / (1.0 - theta)
                    dyth = faccon * dyno * theta ** (max_newton - 1 - newt) / fnewt
                    if dyth >= 1.0:  # predicted not to converge within max_newton
                        qnewt = max(1e-4, min(20.0, dyth))
                        hfactor = 0.8 * qnewt ** (-1.0 / (4.0 + max_newton - 1 - newt))
                        break
                else:
                    break
            dynold = max(dyno, _UROUND)
            W = W + dW
            Z = T @ W
            if faccon * dyno <= fnewt:
                converged = True
                break
        if not converged:
            stats["nnewton_fail"] += 1
            reject = True
            last_err = ("Newton", dW if newt else None, scal)
            h *= hfactor
            decompose = True
            if not caljac:
                J = jacobian(t, y, f0)
                stats["njev"] += 1
                caljac = True
            continue
        # embedded error estimate, refined once after a rejection (sec. IV.8)
        y1 = y + Z[2]
        scal = scale(y, y1, h)
        F2 = (E_ERR @ Z) / h
        err_v = dgetrs(E1[0], E1[1], f0 + Dm * F2)[0]
        err = max(float(np.linalg.norm(err_v / scal)) * inv_sqrt_n, 1e-10)
        if err >= 1.0 and (first or reject):
            f1 = F(t, (y + err_v)[None, :])[0]
            stats["nfev"] += 1
            if np.all(np.isfinite(f1)):
                err_v = dgetrs(E1[0], E1[1], f1 + Dm * F2)[0]
                err = max(float(np.linalg.norm(err_v / scal)) * inv_sqrt_n, 1e-10)
        last_err = ("error", err_v, scal)
        fac = min(safe, cfac / (newt + 2 * max_newton))
        quot = max(facr, min(facl, err ** 0.25 / fac))
        hnew = h / quot
        if err < 1.0:
            first = False
            stats["naccpt"] += 1
            if stats["naccpt"] > 1:  # predictive controller of Gustafsson
                facgus = (hacc / h) * (err * err / erracc) ** 0.25 / safe
                facgus = max(facr, min(facl, facgus))
                quot = max(quot, facgus)
                hnew = h / quot
            hacc, erracc = h, max(1e-2, err)
            Dpoly = _VINV @ Z
            segments.append((t, h, y.copy(), Dpoly))
            Zprev = (Dpoly, h)
            t = tf if last else t + h
            y = y1
            ts.append(t)
            ys.append(y.copy())
            f0 = np.asarray(F(t, y[None, :])[0])
            stats["nfev"] += 1
            if not np.all(np.isfinite(f0)):
                raise DivergenceError(f"radau5: f is not finite at t = {t:.10g}")
            if last:
                break
            hnew = min(hnew, hmax)
            if reject:
                hnew = min(hnew, h)
            reject = False
            caljac = False
            qt = hnew / h
            if theta <= thet and 1.0 <= qt <= 1.2:
                continue  # keep h, the Jacobian and the factorisations
            h = hnew
            decompose = True
            if theta > thet:
                J = jacobian(t, y, f0)
                stats["njev"] += 1
                caljac = True
        else:
            reject = True
            stats["nrejct"] += 1
            h = 0.1 * h if first else hnew
            decompose = True
            if not caljac:
                J = jacobian(t, y, f0)
                stats["njev"] += 1
                caljac = True
    res = RadauResult(np.array(ts), np.array(ys), stats, segments)
    if t_eval is not None:
        te = np.asarray(t_eval, dtype=float)
        res = RadauResult(te, res.sol(te), stats, segments)
    return res


def _collapse(t, h, last_err, names, idx):
    if last_err is not None and last_err[1] is not None:
        kind, ev, sc = last_err
        r = np.abs(np.atleast_2d(ev)) / sc[None, :]
        k, ratio = int(np.argmax(r.max(axis=0))), float(r.max())
        raise SolverError(_collapse_message(t, h, kind, k, ratio, names, idx))
    raise SolverError(_collapse_message(t, h, None, None, None, names, idx))


def _collapse_message(t, h, kind, k, ratio, names, idx) -> str:
    """'step size collapsed' with the time, the step and the component at fault."""
    where = ""
    if kind is not None:
        what = "Newton correction" if kind == "Newton" else "error estimate"
        where = (f"; largest scaled {what} {ratio:.3g} in component {k} "
                 f"({names[k]}, index {idx[k]})")
    return f"radau5: step size collapsed to h = {h:.3g} at t = {t:.10g}{where}"


# ---------------------------------------------------------------- kd.simulate entry point
_SIM_OPTIONS = ("formulation", "rtol", "atol", "alpha", "beta", "h0", "max_step",
                "max_steps", "initialize", "compiled")


def radau5_method(problem, formulation: str = "index3", rtol: float = 1e-6,
                  atol: float = 1e-6, alpha: float | None = None, beta: float | None = None,
                  h0: float | None = None, max_step: float | None = None,
                  max_steps: int = 100_000, initialize: bool = True,
                  compiled: bool | None = None, **unknown):
    """``kd.simulate(system, q0, v0, t_final, method="radau5", formulation=..., rtol=...,
    atol=...)``: the DAE of the (constrained) system in ``formulation`` (see
    :mod:`kanedyn.constraints.formulations`), integrated by :func:`radau5`.

    ``initialize``: make (q0, v0) consistent first (minimum-distance projection); a
    Baumgarte formulation without alpha/beta takes them from dt (or t_final/100).
    ``dt`` of simulate is the output spacing (dense output); None keeps every step.
    ``compiled``: None (default) runs the compiled loop of :mod:`.radau_compiled` when
    the system has a compiled form (``system.compiled_form()``: Andrews' squeezer, a
    Model with loop closures and no force elements), else this module's Python loop;
    False always the Python loop (the reference); True the compiled loop or an error.
    """
    from .dae_common import compiled_form_of, formulated, solution

    if unknown:
        raise SolverError(f"method 'radau5' does not take option(s) {sorted(unknown)}; it "
                          f"takes {sorted(_SIM_OPTIONS)}")
    system, dae, q0, v0 = formulated(problem, "radau5", formulation, alpha, beta, initialize)
    y0 = dae.initial_state(q0, v0, problem.t0)
    t_eval = None
    if problem.dt is not None:
        n = int(np.floor((problem.t_final - problem.t0) / problem.dt + 1e-9))
        t_eval = problem.t0 + problem.dt * np.arange(n + 1)
        if t_eval[-1] < problem.t_final - 1e-12 * max(1.0, abs(problem.t_final)):
            t_eval = np.append(t_eval, problem.t_final)
    names = ([f"q[{i}]" for i in range(system.nq)] + [f"v[{i}]" for i in range(system.nv)]
             + [f"a[{i}]" for i in range(system.nv)]
             + [f"λ[{i}] ({n})" for i, n in enumerate(system.constraint_names)]
             + [f"μ[{i}]" for i in range(system.nc if formulation == "ggl" else 0)])
    if problem.t_final == problem.t0:
        res = RadauResult(np.array([problem.t0]), y0[None, :], {})
    else:
        form = None if compiled is False else compiled_form_of(system)
        if compiled and form is None:
            raise SolverError(f"radau5: compiled=True, but {system.name!r} has no compiled "
                              "form (one has Andrews' squeezer and a Model with loop "
                              "closures only, q̇ = v, no force elements); pass compiled=None")
        if form is not None:
            from .radau_compiled import radau5_compiled

            res = radau5_compiled(dae, form, (problem.t0, problem.t_final), y0, rtol=rtol,
                                  atol=atol, h0=h0, max_step=max_step, t_eval=t_eval,
                                  names=names, max_steps=max_steps)
        else:
            res = radau5(dae.rhs, (problem.t0, problem.t_final), y0, dae.mass, dae.index,
                         rtol=rtol, atol=atol, jac=dae.jacobian, h0=h0, max_step=max_step,
                         t_eval=t_eval, names=names, max_steps=max_steps)
    return solution(system, dae, res.t, res.y, res.stats, "radau5", problem,
                    compiled=compiled is not False)


def _register():
    from . import register_method

    register_method("radau5", radau5_method, "dae")


_register()
