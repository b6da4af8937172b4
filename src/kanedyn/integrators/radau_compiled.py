"""Radau IIA of order 5 compiled (numba): the whole integration of a DAE in one call.

The readable reference is :func:`kanedyn.integrators.radau.radau5` (Hairer & Wanner,
*Solving ODEs II*, sec. IV.8 and ch. VII); :func:`radau5_run` is the same algorithm —
the same simplified Newton iteration on the transformed three-stage system (one real
system ``(γ̂/h D − J)`` and one complex ``((α − iβ)/h D − J)``), the same error estimate,
step-size controller, starting values, Jacobian reuse and tolerances — written as one
compiled loop, so that a step never returns to Python. What it evaluates, it evaluates
compiled: the DAE residual :func:`dae_rhs` of a formulation of
:mod:`kanedyn.constraints.formulations` on the compiled constraint primitives of
:mod:`kanedyn.constraints.system_kernel`, its Jacobian :func:`dae_jacobian` (as
``DAE.jacobian``: forward differences in q and v, exact in a, λ, μ), and the LU
factorisations (:func:`lu_factor`, :func:`lu_solve`: Gaussian elimination with partial
pivoting, as LAPACK's getrf/getrs, real and complex alike).

Where the two differ in arithmetic (the residual's sums in another order, the LU not
blocked, libm's sin for numpy's), the results differ by round-off: the Newton
iterations then stop at the same iteration unless a test is within round-off of its
threshold, and the accepted solutions agree to far below the tolerance (the test
``tests/integrators/test_radau_compiled.py`` states and checks by how much).

``kd.simulate(..., method="radau5")`` takes this path when the system has a compiled
form (``system.compiled_form()``: Andrews' squeezer, a Model with loop closures) and
the option ``compiled`` is not False.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..constraints import system_kernel as sk
from ..dynamics import _compiled
from . import radau as ref

_compiled.key_cache(__name__)  # (see dynamics/_compiled.py)

#: codes of the formulations (:data:`kanedyn.constraints.formulations.FORMULATIONS`)
FORM_CODE = {"index3": 0, "index2": 1, "index1": 2, "baumgarte": 3, "ggl": 4}
#: status codes of :func:`radau5_run`
OK, MAX_STEPS, COLLAPSED, F0_NOT_FINITE, F_NOT_FINITE, KERNEL_REFUSED = 0, 1, 2, 3, 4, 5


# ------------------------------------------------------------------ residual and Jacobian
@njit(cache=True, nogil=True)
def dae_rhs(kind, P, data, form, nq, nc, alpha, beta, t, y, out, M, f, g, G, gam, ws):
    """``F(t, y)`` of ``D y' = F`` in the formulation ``form`` (see the table of
    :mod:`kanedyn.constraints.formulations`; here q̇ = v and there are no velocity rows):
    ``q' = v (+ Gᵀμ)``, ``v' = a``, ``0 = f − M a − Gᵀλ`` and the constraint rows.
    M, f, g, G, gam, ws: work arrays of the primitives."""
    nv = nq
    q = y[:nq]
    v = y[nq:2 * nq]
    a = y[2 * nq:3 * nq]
    lam = y[3 * nq:3 * nq + nc]
    want_gamma = form == 2 or form == 3
    st = sk.primitives(kind, P, data, q, v, True, want_gamma, M, f, g, G, gam, ws)
    if st != 0:
        out[:] = np.nan
        return st
    for i in range(nv):
        qd = v[i]
        if form == 4:
            for r in range(nc):
                qd += G[r, i] * y[3 * nq + nc + r]
        out[i] = qd
        out[nq + i] = a[i]
        s = f[i]
        for j in range(nv):
            s -= M[i, j] * a[j]
        for r in range(nc):
            s -= G[r, i] * lam[r]
        out[2 * nq + i] = s
    for r in range(nc):
        if form == 0:
            out[3 * nq + r] = g[r]
            continue
        Gv = 0.0
        Ga = 0.0
        for j in range(nv):
            Gv += G[r, j] * v[j]
            Ga += G[r, j] * a[j]
        if form == 1:
            out[3 * nq + r] = Gv
        elif form == 4:
            out[3 * nq + r] = Gv
            out[3 * nq + nc + r] = g[r]
        elif form == 2:
            out[3 * nq + r] = Ga - gam[r]
        else:
            out[3 * nq + r] = Ga - gam[r] + 2.0 * alpha * Gv + beta * beta * g[r]
    return 0


@njit(cache=True, nogil=True)
def dae_jacobian(kind, P, data, form, nq, nc, alpha, beta, t, y, f0, J, work, M, f, g, G,
                 gam, ws):
    """∂F/∂y as ``DAE.jacobian``: forward differences in (q, v) with the step
    ``√(eps·max(1e-5, |y_j|))``, the exact blocks in a, λ, μ (F is linear in them)."""
    n = y.shape[0]
    nd = 2 * nq
    J[:, :] = 0.0
    yp = y.copy()
    eps = np.finfo(np.float64).eps
    for j in range(nd):
        delt = np.sqrt(eps * max(1e-5, abs(y[j])))
        yp[j] = y[j] + delt
        dae_rhs(kind, P, data, form, nq, nc, alpha, beta, t, yp, work, M, f, g, G, gam, ws)
        yp[j] = y[j]
        for i in range(n):
            J[i, j] = (work[i] - f0[i]) / delt
    sk.primitives(kind, P, data, y[:nq], y[nq:nd], False, False, M, f, g, G, gam, ws)
    for i in range(nq):
        J[nq + i, nd + i] = 1.0
        for j in range(nq):
            J[nd + i, nd + j] = -M[i, j]
        for r in range(nc):
            if form == 2 or form == 3:
                J[3 * nq + r, nd + i] = G[r, i]
            J[nd + i, 3 * nq + r] = -G[r, i]
            if form == 4:
                J[i, 3 * nq + nc + r] = G[r, i]


# ------------------------------------------------------------------ LU (as getrf/getrs)
@njit(cache=True, nogil=True)
def lu_factor(A, piv):
    """In place, ``P A = L U`` by Gaussian elimination with partial pivoting (the pivot
    of largest |re| + |im|, as LAPACK's i?amax)."""
    n = A.shape[0]
    for k in range(n):
        p = k
        best = abs(A[k, k].real) + abs(A[k, k].imag)
        for i in range(k + 1, n):
            m = abs(A[i, k].real) + abs(A[i, k].imag)
            if m > best:
                best, p = m, i
        piv[k] = p
        if p != k:
            for j in range(n):
                A[k, j], A[p, j] = A[p, j], A[k, j]
        if best == 0.0:
            continue  # singular: the solves give inf/nan, which the Newton test sees
        inv = 1.0 / A[k, k]
        for i in range(k + 1, n):
            A[i, k] *= inv
        for i in range(k + 1, n):
            lik = A[i, k]
            if lik != 0.0:
                for j in range(k + 1, n):
                    A[i, j] -= lik * A[k, j]


@njit(cache=True, nogil=True)
def lu_solve(LU, piv, b):
    """In place, b ← A⁻¹ b from :func:`lu_factor`'s LU and pivots."""
    n = LU.shape[0]
    for k in range(n):
        p = piv[k]
        if p != k:
            b[k], b[p] = b[p], b[k]
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= LU[i, j] * b[j]
        b[i] = s
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= LU[i, j] * b[j]
        b[i] = s / LU[i, i]


@njit(cache=True, nogil=True)
def _scale(y_a, y_b, h, atol_i, rtol_i, idx, sc):
    for i in range(y_a.shape[0]):
        sc[i] = atol_i[i] + rtol_i * max(abs(y_a[i]), abs(y_b[i]))
        if idx[i] == 2:
            sc[i] /= h
        elif idx[i] >= 3:
            sc[i] /= h * h


@njit(cache=True, nogil=True)
def _grow(a, k):
    if k < a.shape[0]:
        return a
    b = np.empty((2 * a.shape[0],) + a.shape[1:], dtype=a.dtype)
    b[:a.shape[0]] = a
    return b


@njit(cache=True, nogil=True)
def _worst(ev, sc, info, finfo):
    """The component with the largest scaled error (for the collapse message)."""
    k, best = 0, -1.0
    for i in range(ev.shape[0]):
        r = abs(ev[i]) / sc[i]
        if r > best:
            best, k = r, i
    info[8], finfo[2] = k, best


@njit(cache=True, nogil=True)
def _error_estimate(f, Z, Ee, Dm, h, E1, p1, scal, err_v):
    """``err_v = (γ̂/h D − J)⁻¹ (f + D (e·Z)/h)`` and its scaled RMS norm (≥ 1e-10),
    RADAU5's embedded estimate (Hairer & Wanner II, sec. IV.8)."""
    n = f.shape[0]
    for i in range(n):
        err_v[i] = f[i] + Dm[i] * (Ee[0] * Z[0, i] + Ee[1] * Z[1, i] + Ee[2] * Z[2, i]) / h
    lu_solve(E1, p1, err_v)
    ss = 0.0
    for i in range(n):
        ss += (err_v[i] / scal[i]) ** 2
    return max(np.sqrt(ss) * (1.0 / np.sqrt(n)), 1e-10)


# ------------------------------------------------------------------ the integration
@njit(cache=True, nogil=True)
def radau5_run(kind, P, data, form, nq, nc, alpha, beta, t0, tf, y0, Dm, idx, rtol_i,
               atol_i, fnewt, hmax, h, hmin_abs, max_steps, max_newton, Tm, TIm, cons,
               info, finfo):
    """:func:`kanedyn.integrators.radau.radau5` on :func:`dae_rhs` (see it for every
    rule). ``cons = (γ̂, α, β, c₁, c₂, c₃, e₁, e₂, e₃)``, ``Tm``/``TIm`` the transformation
    and its inverse. Returns (t, y, h, D) of the accepted steps (``D``: the collocation
    polynomial, ``Z(s) = Σ D_k s^k``); ``info`` = (status, nstep, naccpt, nrejct, nfev,
    njev, nlu, nnewton_fail, worst component, last error Newton 1 / estimate 2),
    ``finfo`` = (t, h, largest scaled error) at a stop."""
    n = y0.shape[0]
    nv = nq
    GAM, ALP, BET = cons[0], cons[1], cons[2]
    Cc = cons[3:6]
    Ee = cons[6:9]
    VINV = np.linalg.inv(np.array([[Cc[0], Cc[0] ** 2, Cc[0] ** 3],
                                   [Cc[1], Cc[1] ** 2, Cc[1] ** 3],
                                   [Cc[2], Cc[2] ** 2, Cc[2] ** 3]]))
    M = np.empty((nv, nv))
    fv = np.empty(nv)
    g = np.empty(max(nc, 1))
    G = np.empty((max(nc, 1), nv))
    gam = np.empty(max(nc, 1))
    ws = np.empty(sk.workspace_size(data, nv))
    uround = np.finfo(np.float64).eps
    safe, facl, facr, thet = 0.9, 5.0, 1.0 / 8.0, 0.001
    cfac = safe * (1 + 2 * max_newton)
    inv_sqrt_3n = 1.0 / np.sqrt(3.0 * n)
    for k in range(10):
        info[k] = 0
    t = t0
    y = y0.copy()
    f0 = np.empty(n)
    st = dae_rhs(kind, P, data, form, nq, nc, alpha, beta, t, y, f0, M, fv, g, G, gam, ws)
    info[4] = 1
    if st != 0 or not np.all(np.isfinite(f0)):
        info[0] = F0_NOT_FINITE
        finfo[0] = t
        return np.empty(0), np.empty((0, n)), np.empty(0), np.empty((0, 3, n))
    J = np.empty((n, n))
    work = np.empty(n)
    dae_jacobian(kind, P, data, form, nq, nc, alpha, beta, t, y, f0, J, work, M, fv, g,
                 G, gam, ws)
    info[5] = 1
    cap = 256
    ts = np.empty(cap)
    ys = np.empty((cap, n))
    hs = np.empty(cap)
    Ds = np.empty((cap, 3, n))
    ts[0] = t
    ys[0] = y
    nacc = 0
    E1 = np.empty((n, n))
    E2 = np.empty((n, n), dtype=np.complex128)
    p1 = np.empty(n, dtype=np.int64)
    p2 = np.empty(n, dtype=np.int64)
    Z = np.zeros((3, n))
    W = np.zeros((3, n))
    Fz = np.empty((3, n))
    dW = np.zeros((3, n))
    Dp = np.zeros((3, n))
    Dpoly = np.empty((3, n))
    ystage = np.empty(n)
    scal = np.empty(n)
    r1 = np.empty(n)
    rc = np.empty(n, dtype=np.complex128)
    err_v = np.empty(n)
    y1 = np.empty(n)
    hp = 1.0
    have_prev = False
    first, reject, caljac, decompose = True, False, True, True
    faccon, theta = 1.0, 1.0
    hacc, erracc = h, 1e-2
    last_kind = 0  # 0: none, 1: Newton, 2: error estimate (for the collapse message)
    last_ev = np.zeros(n)
    last_sc = np.ones(n)
    fac1 = alph = bet = 0.0
    while t < tf:
        if info[1] >= max_steps:
            info[0] = MAX_STEPS
            finfo[0], finfo[1] = t, h
            break
        if h < hmin_abs:
            info[0] = COLLAPSED
            finfo[0], finfo[1] = t, h
            info[9] = last_kind
            if last_kind:
                _worst(last_ev, last_sc, info, finfo)
            break
        last = t + 1.0001 * h >= tf
        if last:
            h = tf - t
            decompose = True
        if decompose:
            fac1 = GAM / h
            alph, bet = ALP / h, BET / h
            for i in range(n):
                for j in range(n):
                    E1[i, j] = -J[i, j]
                    E2[i, j] = -J[i, j]
                E1[i, i] += fac1 * Dm[i]
                E2[i, i] += (alph - 1j * bet) * Dm[i]
            lu_factor(E1, p1)
            lu_factor(E2, p2)
            info[6] += 1
            decompose = False
        info[1] += 1
        # starting values: extrapolate the previous collocation polynomial
        if not have_prev or first:
            Z[:, :] = 0.0
        else:
            for s in range(3):
                x = 1.0 + Cc[s] * h / hp
                for i in range(n):
                    Z[s, i] = (x * Dp[0, i] + x * x * Dp[1, i] + x ** 3 * Dp[2, i]
                               - (Dp[0, i] + Dp[1, i] + Dp[2, i]))
        W[:, :] = TIm @ Z
        _scale(y, y, h, atol_i, rtol_i, idx, scal)
        faccon = max(faccon, uround) ** 0.8
        theta = abs(thet)
        newt, converged, dynold, thqold = 0, False, 1.0, 1.0
        hfactor = 0.5
        while True:
            if newt >= max_newton:
                break
            finite = True
            for s in range(3):
                for i in range(n):
                    ystage[i] = y[i] + Z[s, i]
                dae_rhs(kind, P, data, form, nq, nc, alpha, beta, t + Cc[s] * h, ystage,
                        Fz[s], M, fv, g, G, gam, ws)
                for i in range(n):
                    if not np.isfinite(Fz[s, i]):
                        finite = False
            info[4] += 1
            if not finite:
                break
            for i in range(n):
                g0 = TIm[0, 0] * Fz[0, i] + TIm[0, 1] * Fz[1, i] + TIm[0, 2] * Fz[2, i]
                g1 = TIm[1, 0] * Fz[0, i] + TIm[1, 1] * Fz[1, i] + TIm[1, 2] * Fz[2, i]
                g2 = TIm[2, 0] * Fz[0, i] + TIm[2, 1] * Fz[1, i] + TIm[2, 2] * Fz[2, i]
                d0, d1, d2 = Dm[i] * W[0, i], Dm[i] * W[1, i], Dm[i] * W[2, i]
                r1[i] = g0 - fac1 * d0
                rc[i] = (g1 - alph * d1 - bet * d2) + 1j * (g2 + bet * d1 - alph * d2)
            lu_solve(E1, p1, r1)
            lu_solve(E2, p2, rc)
            ss = 0.0
            for i in range(n):
                dW[0, i] = r1[i]
                dW[1, i] = rc[i].real
                dW[2, i] = rc[i].imag
                for s in range(3):
                    ss += (dW[s, i] / scal[i]) ** 2
            newt += 1
            dyno = np.sqrt(ss) * inv_sqrt_3n
            if 1 < newt < max_newton:
                thq = dyno / dynold
                theta = thq if newt == 2 else np.sqrt(thq * thqold)
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
            dynold = max(dyno, uround)
            for s in range(3):
                for i in range(n):
                    W[s, i] += dW[s, i]
            Z[:, :] = Tm @ W
            if faccon * dyno <= fnewt:
                converged = True
                break
        if not converged:
            info[7] += 1
            reject = True
            if newt:
                last_kind = 1
                # the largest scaled Newton correction over the three stages
                for i in range(n):
                    last_ev[i] = max(abs(dW[0, i]), abs(dW[1, i]), abs(dW[2, i]))
                    last_sc[i] = scal[i]
            else:
                last_kind = 0
            h *= hfactor
            decompose = True
            if not caljac:
                dae_jacobian(kind, P, data, form, nq, nc, alpha, beta, t, y, f0, J, work,
                             M, fv, g, G, gam, ws)
                info[5] += 1
                caljac = True
            continue
        # embedded error estimate, refined once after a rejection (sec. IV.8)
        for i in range(n):
            y1[i] = y[i] + Z[2, i]
        _scale(y, y1, h, atol_i, rtol_i, idx, scal)
        err = _error_estimate(f0, Z, Ee, Dm, h, E1, p1, scal, err_v)
        if err >= 1.0 and (first or reject):
            for i in range(n):
                ystage[i] = y[i] + err_v[i]
            dae_rhs(kind, P, data, form, nq, nc, alpha, beta, t, ystage, work, M, fv, g, G,
                    gam, ws)
            info[4] += 1
            if np.all(np.isfinite(work)):
                err = _error_estimate(work, Z, Ee, Dm, h, E1, p1, scal, err_v)
        last_kind = 2
        last_ev[:] = err_v
        last_sc[:] = scal
        fac = min(safe, cfac / (newt + 2 * max_newton))
        quot = max(facr, min(facl, err ** 0.25 / fac))
        hnew = h / quot
        if err < 1.0:
            first = False
            info[2] += 1
            if info[2] > 1:  # predictive controller of Gustafsson
                facgus = (hacc / h) * (err * err / erracc) ** 0.25 / safe
                facgus = max(facr, min(facl, facgus))
                quot = max(quot, facgus)
                hnew = h / quot
            hacc, erracc = h, max(1e-2, err)
            Dpoly[:, :] = VINV @ Z
            Dp[:, :] = Dpoly
            hp = h
            have_prev = True
            hs = _grow(hs, nacc)
            Ds = _grow(Ds, nacc)
            hs[nacc] = h
            Ds[nacc] = Dpoly
            nacc += 1
            t = tf if last else t + h
            y[:] = y1
            ts = _grow(ts, nacc)
            ys = _grow(ys, nacc)
            ts[nacc] = t
            ys[nacc] = y
            dae_rhs(kind, P, data, form, nq, nc, alpha, beta, t, y, f0, M, fv, g, G, gam, ws)
            info[4] += 1
            if not np.all(np.isfinite(f0)):
                info[0] = F_NOT_FINITE
                finfo[0] = t
                break
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
                dae_jacobian(kind, P, data, form, nq, nc, alpha, beta, t, y, f0, J, work,
                             M, fv, g, G, gam, ws)
                info[5] += 1
                caljac = True
        else:
            reject = True
            info[3] += 1
            h = 0.1 * h if first else hnew
            decompose = True
            if not caljac:
                dae_jacobian(kind, P, data, form, nq, nc, alpha, beta, t, y, f0, J, work,
                             M, fv, g, G, gam, ws)
                info[5] += 1
                caljac = True
    return ts[:nacc + 1].copy(), ys[:nacc + 1].copy(), hs[:nacc].copy(), Ds[:nacc].copy()


def _constants() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """T, T⁻¹ and (γ̂, α, β, c, e) of the reference module (one source of the tableau)."""
    cons = np.concatenate([[ref.GAMMA, ref.ALPHA, ref.BETA], ref.C, ref.E_ERR])
    return np.ascontiguousarray(ref.T), np.ascontiguousarray(ref.TI), cons


def radau5_compiled(dae, form: sk.CompiledForm, t_span: tuple[float, float], y0,
                    rtol: float = 1e-6, atol: float = 1e-6, h0: float | None = None,
                    max_step: float | None = None, t_eval=None, names=None,
                    max_steps: int = 100_000, max_newton: int = 7,
                    hmin: float | None = None) -> ref.RadauResult:
    """:func:`~kanedyn.integrators.radau.radau5` of ``dae`` (a
    :class:`~kanedyn.constraints.formulations.DAE`) by :func:`radau5_run`, on the
    compiled form of its system; the same inputs, result and errors."""
    from ..errors import DivergenceError, SolverError

    system = dae.system
    if system.nq != system.nv or system.nn:
        raise SolverError("radau5 (compiled): needs q̇ = v and no velocity constraints")
    (t0, tf, y, n, Dm, idx, names, rtol_i, atol_i, fnewt, hmax, h,
     hmin_abs) = ref._setup(t_span, y0, dae.mass, dae.index, rtol, atol, names, h0,
                            max_step, hmin)
    Tm, TIm, cons = _constants()
    info = np.zeros(10, dtype=np.int64)
    finfo = np.zeros(3)
    ts, ys, hs, Ds = radau5_run(
        form.kind, form.params, form.data, FORM_CODE[dae.formulation], system.nq,
        system.nc, float(dae.alpha), float(dae.beta), t0, tf, y, Dm, idx.astype(np.int64),
        float(rtol_i), np.ascontiguousarray(atol_i, dtype=float), float(fnewt), hmax, h,
        hmin_abs, int(max_steps), int(max_newton), Tm, TIm, cons, info, finfo)
    status = int(info[0])
    if status == F0_NOT_FINITE:
        raise DivergenceError(f"radau5: f(t0, y0) is not finite at t = {t0}")
    if status == F_NOT_FINITE:
        raise DivergenceError(f"radau5: f is not finite at t = {finfo[0]:.10g}")
    if status == MAX_STEPS:
        raise SolverError(f"radau5: {max_steps} steps without reaching t = {tf} "
                          f"(stopped at t = {finfo[0]:.10g}, h = {finfo[1]:.3g})")
    if status == COLLAPSED:
        kind = {0: None, 1: "Newton", 2: "error"}[int(info[9])]
        raise SolverError(ref._collapse_message(finfo[0], finfo[1], kind, int(info[8]),
                                                finfo[2], names, idx))
    stats = dict(zip(("nfev", "njev", "nlu", "nstep", "naccpt", "nrejct", "nnewton_fail"),
                     (int(info[k]) for k in (4, 5, 6, 1, 2, 3, 7)), strict=True))
    segments = [(ts[k], hs[k], ys[k], Ds[k]) for k in range(hs.size)]
    res = ref.RadauResult(ts, ys, stats, segments)
    if t_eval is not None:
        te = np.asarray(t_eval, dtype=float)
        res = ref.RadauResult(te, res.sol(te), stats, segments)
    return res
