"""Constrained test problems, each with its source and a reference solution.

Every problem has ``.system`` (a constrained system), ``.q0``, ``.v0`` (consistent),
``.t_final`` and ``.reference`` (the solution at t_final, and where it comes from).

- :func:`pendulum` — the planar pendulum in Cartesian coordinates, the textbook index-3
  DAE (Hairer & Wanner II, sec. VII.1); reference: the angle ODE
  θ̈ = −(g/L) sin θ integrated independently to 1e-13.
- :func:`andrews` — Andrews' squeezing mechanism, 7 bodies, index 3 (Hairer & Wanner II,
  sec. VII.7; Mazzia & Magherini, *Test Set for IVP Solvers*, release 2.4, 2008,
  problem "andrews"); reference: the test set's PSIDE solution at t = 0.03.
- :func:`car_axis` — the car axis problem, index 3 (same test set, problem "caraxis",
  after Rentrop, Roche & Steinebach 1989); reference: the test set's at t = 3.
- :func:`slider_crank`, :func:`four_bar` — rigid planar linkages built from a
  :class:`~kanedyn.Model` with a loop closure (see :mod:`.mechanisms`).

The score is the test set's *mixed error significant correct digits*,
``mescd = −log10 max_i |y_i − y_ref,i| / (atol/rtol + |y_ref,i|)`` over the components
the problem names (Andrews: the 7 positions, as in the test set).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConstraintError
from .system import DescriptorSystem


@dataclass
class Reference:
    """A reference solution at ``t``: positions ``q``, speeds ``v`` (and more if known)."""

    t: float
    q: NDArray
    v: NDArray | None = None
    extra: dict = field(default_factory=dict)
    source: str = ""


@dataclass
class Problem:
    name: str
    system: object
    q0: NDArray
    v0: NDArray
    t_final: float
    source: str
    reference_fn: object = field(repr=False, default=None)
    #: which parts of the state mescd is computed on: "q" or "qv"
    mescd_on: str = "q"
    t0: float = 0.0

    @cached_property
    def reference(self) -> Reference:
        return self.reference_fn()

    def mescd(self, q: ArrayLike, v: ArrayLike | None = None, rtol: float = 1e-8,
              atol: float = 1e-8) -> float:
        """Mixed error significant correct digits of (q[, v]) at t_final."""
        ref = self.reference
        y = np.asarray(q, dtype=float)
        yr = ref.q
        if self.mescd_on == "qv":
            if v is None:
                raise ConstraintError(f"{self.name}: mescd is defined on q and v; pass v")
            y = np.concatenate([y, np.asarray(v, dtype=float)])
            yr = np.concatenate([ref.q, ref.v])
        return mescd(y, yr, rtol, atol)


def mescd(y: ArrayLike, y_ref: ArrayLike, rtol: float, atol: float) -> float:
    """``−log10 max_i |y_i − y_ref,i| / (atol/rtol + |y_ref,i|)`` (Mazzia & Magherini 2008,
    sec. I.3). An exact match gives +inf."""
    y, yr = np.asarray(y, dtype=float), np.asarray(y_ref, dtype=float)
    e = np.max(np.abs(y - yr) / (atol / rtol + np.abs(yr)))
    return float(np.inf) if e == 0 else float(-np.log10(e))


# --------------------------------------------------------------------------------------
# the Cartesian pendulum
# --------------------------------------------------------------------------------------

def pendulum(length: float = 1.0, mass: float = 1.0, gravity: float = 9.81,
             theta0: float = 1.0, t_final: float = 2.0) -> Problem:
    """Point mass on a massless rod, in Cartesian q = (x, y), released at rest at angle
    theta0 from the downward vertical: ``m q̈ = (0, −m g) − λ q``, ``g = (x² + y² − L²)/2``."""
    L, m, gr = float(length), float(mass), float(gravity)

    def M(q):
        return m * np.broadcast_to(np.eye(2), q.shape[:-1] + (2, 2)).copy()

    def force(t, q, v):
        f = np.zeros_like(np.asarray(q, dtype=float))
        f[..., 1] = -m * gr
        return f

    def g(t, q):
        return 0.5 * (np.sum(q * q, axis=-1, keepdims=True) - L * L)

    def G(t, q):
        return q[..., None, :].copy()

    def gamma(t, q, v):
        return -np.sum(v * v, axis=-1, keepdims=True)

    def potential(q):
        return m * gr * q[..., 1]

    system = DescriptorSystem(2, 2, M, force, g, G, nc=1, gamma=gamma, potential=potential,
                              constraint_names=["rod length"], name="pendulum")
    q0 = np.array([L * np.sin(theta0), -L * np.cos(theta0)])

    def reference():
        from scipy.integrate import solve_ivp

        sol = solve_ivp(lambda t, y: [y[1], -gr / L * np.sin(y[0])], (0.0, t_final),
                        [theta0, 0.0], method="DOP853", rtol=1e-13, atol=1e-13)
        th, om = sol.y[:, -1]
        return Reference(t_final, L * np.array([np.sin(th), -np.cos(th)]),
                         L * om * np.array([np.cos(th), np.sin(th)]),
                         source="angle ODE θ̈ = −(g/L) sin θ, DOP853 at rtol = atol = 1e-13")

    return Problem("pendulum", system, q0, np.zeros(2), t_final,
                   "Hairer & Wanner II (1996), sec. VII.1", reference, "qv")


# --------------------------------------------------------------------------------------
# Andrews' squeezing mechanism
# --------------------------------------------------------------------------------------

#: parameters of the test set (Mazzia & Magherini 2008, problem "andrews")
ANDREWS_PARAMETERS = dict(
    m1=0.04325, m2=0.00365, m3=0.02373, m4=0.00706, m5=0.07050, m6=0.00706, m7=0.05498,
    xa=-0.06934, ya=-0.00227, xb=-0.03635, yb=0.03273, xc=0.014, yc=0.072, c0=4530.0,
    i1=2.194e-6, i2=4.410e-7, i3=5.255e-6, i4=5.667e-7, i5=1.169e-5, i6=5.667e-7,
    i7=1.912e-5, d=28e-3, da=115e-4, e=2e-2, ea=1421e-5, rr=7e-3, ra=92e-5, l0=7785e-5,
    ss=35e-3, sa=1874e-5, sb=1043e-5, sc=18e-3, sd=2e-2, ta=2308e-5, tb=916e-5, u=4e-2,
    ua=1228e-5, ub=449e-5, zf=2e-2, zt=4e-2, fa=1421e-5, mom=33e-3,
)

ANDREWS_NAMES = ["beta", "theta", "gamma", "phi", "delta", "omega", "epsilon"]


def _andrews_terms(P):
    """The loop-closure equations as sums of ``k·cos(c·q)`` / ``k·sin(c·q)`` plus constants.

    Each row i of g is ``Σ_terms k trig(c·q) − const_i``; the terms give g, its Jacobian
    and γ = −Ġq̇ exactly: for a term T = k trig(φ), d²T/dt² at q̈ = 0 is −T φ̇², so
    γ = Σ T φ̇². The rows are those of Hairer & Wanner II, sec. VII.7, and of the test set.
    """
    def c(*idx):
        v = np.zeros(7)
        v[list(idx)] = 1.0
        return v

    crank = [(P["rr"], "cos", c(0)), (-P["d"], "cos", c(0, 1))]
    crank_y = [(P["rr"], "sin", c(0)), (-P["d"], "sin", c(0, 1))]
    rows = [
        (crank + [(-P["ss"], "sin", c(2))], P["xb"]),
        (crank_y + [(P["ss"], "cos", c(2))], P["yb"]),
        (crank + [(-P["e"], "sin", c(3, 4)), (-P["zt"], "cos", c(4))], P["xa"]),
        (crank_y + [(P["e"], "cos", c(3, 4)), (-P["zt"], "sin", c(4))], P["ya"]),
        (crank + [(-P["zf"], "cos", c(5, 6)), (-P["u"], "sin", c(6))], P["xa"]),
        (crank_y + [(-P["zf"], "sin", c(5, 6)), (P["u"], "cos", c(6))], P["ya"]),
    ]
    # flatten to arrays: term k, trig kind, phase vector, row
    K, S, Cm, R = [], [], [], []
    for i, (terms, _) in enumerate(rows):
        for k, kind, cv in terms:
            K.append(k)
            S.append(kind == "sin")
            Cm.append(cv)
            R.append(i)
    consts = np.array([r[1] for r in rows])
    return np.array(K), np.array(S), np.array(Cm), np.array(R), consts


def andrews_system(params: dict | None = None) -> DescriptorSystem:
    """Andrews' squeezer as ``M(q) q̈ = f(q, q̇) − Gᵀλ``, ``g(q) = 0`` (7 angles, 6 rows)."""
    P = dict(ANDREWS_PARAMETERS)
    if params:
        unknown = set(params) - set(P)
        if unknown:
            raise ConstraintError(f"andrews: unknown parameters {sorted(unknown)}")
        P.update(params)
    K, is_sin, Cph, rows, consts = _andrews_terms(P)
    onehot = np.zeros((len(K), 6))
    onehot[np.arange(len(K)), rows] = 1.0
    m1, m2, m3, m4, m5, m6, m7 = (P[f"m{i}"] for i in range(1, 8))
    i1, i2, i3, i4, i5, i6, i7 = (P[f"i{i}"] for i in range(1, 8))
    ra, rr, da, e, ea, zt, zf, fa, u = (P[k] for k in
                                        ("ra", "rr", "da", "e", "ea", "zt", "zf", "fa", "u"))
    sa, sb, ta, tb, ua, ub = (P[k] for k in ("sa", "sb", "ta", "tb", "ua", "ub"))
    sc, sd, xb, yb, xc, yc, c0, l0, mom = (P[k] for k in
                                           ("sc", "sd", "xb", "yb", "xc", "yc", "c0", "l0",
                                            "mom"))
    ee = e - ea
    zz = zf - fa

    def mass(q):
        th, ph, om = q[..., 1], q[..., 3], q[..., 5]
        M = np.zeros(q.shape[:-1] + (7, 7))
        M[..., 0, 0] = m1 * ra ** 2 + m2 * (rr ** 2 - 2 * da * rr * np.cos(th) + da ** 2) + i1 + i2
        M[..., 1, 0] = M[..., 0, 1] = m2 * (da ** 2 - da * rr * np.cos(th)) + i2
        M[..., 1, 1] = m2 * da ** 2 + i2
        M[..., 2, 2] = m3 * (sa ** 2 + sb ** 2) + i3
        M[..., 3, 3] = m4 * ee ** 2 + i4
        M[..., 4, 3] = M[..., 3, 4] = m4 * (ee ** 2 + zt * ee * np.sin(ph)) + i4
        M[..., 4, 4] = (m4 * (zt ** 2 + 2 * zt * ee * np.sin(ph) + ee ** 2)
                        + m5 * (ta ** 2 + tb ** 2) + i4 + i5)
        M[..., 5, 5] = m6 * zz ** 2 + i6
        M[..., 6, 5] = M[..., 5, 6] = m6 * (zz ** 2 - u * zz * np.sin(om)) + i6
        M[..., 6, 6] = (m6 * (zz ** 2 - 2 * u * zz * np.sin(om) + u ** 2)
                        + m7 * (ua ** 2 + ub ** 2) + i6 + i7)
        return M

    def force(t, q, v):
        th, ga, ph, om = q[..., 1], q[..., 2], q[..., 3], q[..., 5]
        bep, thp, php, dep, omp, epp = (v[..., k] for k in (0, 1, 3, 4, 5, 6))
        xd = sd * np.cos(ga) + sc * np.sin(ga) + xb
        yd = sd * np.sin(ga) - sc * np.cos(ga) + yb
        lang = np.sqrt((xd - xc) ** 2 + (yd - yc) ** 2)
        fs = -c0 * (lang - l0) / lang  # spring between D and C
        fx, fy = fs * (xd - xc), fs * (yd - yc)
        f = np.empty(np.broadcast_shapes(q.shape, v.shape))
        f[..., 0] = mom - m2 * da * rr * thp * (thp + 2 * bep) * np.sin(th)
        f[..., 1] = m2 * da * rr * bep ** 2 * np.sin(th)
        f[..., 2] = fx * (sc * np.cos(ga) - sd * np.sin(ga)) + fy * (sd * np.cos(ga)
                                                                    + sc * np.sin(ga))
        f[..., 3] = m4 * zt * ee * dep ** 2 * np.cos(ph)
        f[..., 4] = -m4 * zt * ee * php * (php + 2 * dep) * np.cos(ph)
        f[..., 5] = -m6 * u * zz * epp ** 2 * np.cos(om)
        f[..., 6] = m6 * u * zz * omp * (omp + 2 * epp) * np.cos(om)
        return f

    def term_values(q):
        phi = q @ Cph.T  # (..., nterms)
        return np.where(is_sin, np.sin(phi), np.cos(phi)) * K, phi

    def g(t, q):
        T, _ = term_values(q)
        return T @ onehot - consts

    def G(t, q):
        phi = q @ Cph.T
        # d/dφ of k cos φ is −k sin φ; of k sin φ is k cos φ
        dT = np.where(is_sin, np.cos(phi), -np.sin(phi)) * K
        return np.einsum("...k,kr,kj->...rj", dT, onehot, Cph)

    def gamma(t, q, v):
        T, _ = term_values(q)
        phidot = v @ Cph.T
        return (T * phidot ** 2) @ onehot

    system = DescriptorSystem(7, 7, mass, force, g, G, nc=6, gamma=gamma,
                              constraint_names=[f"loop {r}" for r in
                                                ("B x", "B y", "A x (via E)", "A y (via E)",
                                                 "A x (via G)", "A y (via G)")],
                              name="andrews")
    # the same formulas compiled, for the compiled DAE solver (system_kernel.py)
    from .system_kernel import KIND_ANDREWS, CompiledForm, pack_andrews

    system._compiled_form = CompiledForm(KIND_ANDREWS,
                                         pack_andrews(P, K, is_sin, Cph, rows, consts),
                                         np.zeros((1, 1)))
    return system


#: the test set's consistent initial values (positions; velocities are zero)
ANDREWS_Q0 = np.array([-0.0617138900142764496358948458001, 0.0,
                       0.455279819163070380255912382449, 0.222668390165885884674473185609,
                       0.487364979543842550225598953530, -0.222668390165885884674473185609,
                       1.23054744454982119249735015568])
#: the test set's consistent initial accelerations and multipliers
ANDREWS_A0 = np.array([14222.4439199541138705911625887, -10666.8329399655854029433719415,
                       0.0, 0.0, 0.0, 0.0, 0.0])
ANDREWS_LAM0 = np.array([98.5668703962410896057654982170, -6.12268834425566265503114393122,
                         0.0, 0.0, 0.0, 0.0])

_ANDREWS_REF = np.array([
    0.1581077119629904e+2, -0.1575637105984298e+2, 0.4082224013073101e-1,
    -0.5347301163226948e+0, 0.5244099658805304e+0, 0.5347301163226948e+0,
    0.1048080741042263e+1,
    0.1139920302151208e+4, -0.1424379294994111e+4, 0.1103291221937134e+2,
    0.1929337464421385e+2, 0.5735699284790808e+0, -0.1929337464421385e+2,
    0.3231791658026955e+0,
    -0.2463176316945196e+5, 0.5185037701610329e+5, 0.3241025686413781e+6,
    0.5667493645176213e+6, 0.1674362929479361e+5, -0.5667493645176222e+6,
    0.9826520791458422e+4,
    0.1991753333731910e+3, -0.2975531228015052e+2, 0.2306654119098399e+2,
    0.3145271365475927e+2, 0.2264249232082739e+2, 0.1161740700019673e+2,
])


def andrews() -> Problem:
    """Andrews' squeezing mechanism on [0, 0.03] (Mazzia & Magherini 2008, "andrews")."""
    def reference():
        return Reference(0.03, _ANDREWS_REF[:7], _ANDREWS_REF[7:14],
                         {"a": _ANDREWS_REF[14:21], "lam": _ANDREWS_REF[21:]},
                         source="IVP test set (Mazzia & Magherini 2008): PSIDE at "
                                "rtol = atol = 1e-14 on a Cray C90")

    return Problem("andrews", andrews_system(), ANDREWS_Q0.copy(), np.zeros(7), 0.03,
                   "Hairer & Wanner II (1996), sec. VII.7; Mazzia & Magherini, Test Set for "
                   "IVP Solvers (2008), problem 'andrews'", reference, "q")


# --------------------------------------------------------------------------------------
# the car axis
# --------------------------------------------------------------------------------------

CAR_AXIS_PARAMETERS = dict(eps=1e-2, M=10.0, L=1.0, L0=0.5, r=0.1, w=10.0, g=1.0)

_CAR_REF = np.array([0.4934557842755629e-01, 0.4969894602303324e+00, 0.1041742524885400e+01,
                     0.3739110272652214e+00, -0.7705836840321485e-01, 0.7446866596327776e-02,
                     0.1755681574942899e-01, 0.7703410437794031e+00, -0.4736886750784630e-02,
                     -0.1104680411345730e-02])


def car_axis() -> Problem:
    """The car axis on [0, 3]: q = (x_l, y_l, x_r, y_r), ``k q̈ = f(t, q) − Gᵀλ`` with
    k = M ε²/2, the right wheel's road bump (x_b, y_b) = (√(L² − y_b²), r sin ωt) making the
    first constraint time-dependent (Mazzia & Magherini 2008, problem "caraxis").

    The test set writes ``+Gᵀλ``; here λ = −λ_testset so that −Cᵀλ is the constraint force.
    """
    P = CAR_AXIS_PARAMETERS
    eps, Mm, L, L0, r, w, gr = (P[k] for k in ("eps", "M", "L", "L0", "r", "w", "g"))
    k = Mm * eps * eps / 2.0

    def road(t, q):
        tt = np.broadcast_to(np.asarray(t, dtype=float), q.shape[:-1])
        yb = r * np.sin(w * tt)
        xb = np.sqrt(L * L - yb * yb)
        ybd = r * w * np.cos(w * tt)
        xbd = -yb * ybd / xb
        ybdd = -r * w * w * np.sin(w * tt)
        xbdd = -(ybd * ybd + yb * ybdd) / xb - yb * ybd * (yb * ybd) / xb ** 3
        return xb, yb, xbd, ybd, xbdd, ybdd

    def mass(q):
        return k * np.broadcast_to(np.eye(4), q.shape[:-1] + (4, 4)).copy()

    def force(t, q, v):
        xb, yb = road(t, q)[:2]
        xl, yl, xr, yr = (q[..., i] for i in range(4))
        Ll = np.sqrt(xl ** 2 + yl ** 2)
        Lr = np.sqrt((xr - xb) ** 2 + (yr - yb) ** 2)
        f = np.empty(np.broadcast_shapes(q.shape, np.shape(v)))
        f[..., 0] = (L0 - Ll) * xl / Ll
        f[..., 1] = (L0 - Ll) * yl / Ll - k * gr
        f[..., 2] = (L0 - Lr) * (xr - xb) / Lr
        f[..., 3] = (L0 - Lr) * (yr - yb) / Lr - k * gr
        return f

    def g(t, q):
        xb, yb = road(t, q)[:2]
        xl, yl, xr, yr = (q[..., i] for i in range(4))
        return np.stack([xb * xl + yb * yl, (xl - xr) ** 2 + (yl - yr) ** 2 - L * L], axis=-1)

    def G(t, q):
        xb, yb = road(t, q)[:2]
        xl, yl, xr, yr = (q[..., i] for i in range(4))
        z = np.zeros_like(xl)
        dx, dy = 2 * (xl - xr), 2 * (yl - yr)
        return np.stack([np.stack([xb, yb, z, z], -1), np.stack([dx, dy, -dx, -dy], -1)], -2)

    def g_t(t, q):
        _, _, xbd, ybd, _, _ = road(t, q)
        z = np.zeros_like(xbd)
        return np.stack([xbd * q[..., 0] + ybd * q[..., 1], z], axis=-1)

    def gamma(t, q, v):
        _, _, xbd, ybd, xbdd, ybdd = road(t, q)
        xl, yl = q[..., 0], q[..., 1]
        vxl, vyl, vxr, vyr = (v[..., i] for i in range(4))
        g1 = -(2 * (xbd * vxl + ybd * vyl) + xbdd * xl + ybdd * yl)
        g2 = -2 * ((vxl - vxr) ** 2 + (vyl - vyr) ** 2)
        return np.stack([g1, g2], axis=-1)

    system = DescriptorSystem(4, 4, mass, force, g, G, nc=2, gamma=gamma, g_t=g_t,
                              constraint_names=["left wheel on the road normal",
                                                "axis length"], name="car_axis")
    q0 = np.array([0.0, L0, L, L0])
    v0 = np.array([-L0 / L, 0.0, -L0 / L, 0.0])

    def reference():
        return Reference(3.0, _CAR_REF[:4], _CAR_REF[4:8], {"lam": -_CAR_REF[8:]},
                         source="IVP test set (Mazzia & Magherini 2008), problem 'caraxis'")

    return Problem("car_axis", system, q0, v0, 3.0,
                   "Mazzia & Magherini, Test Set for IVP Solvers (2008), problem 'caraxis'",
                   reference, "qv")


def slider_crank(**kw) -> Problem:
    from .mechanisms import slider_crank_problem

    return slider_crank_problem(**kw)


def four_bar(**kw) -> Problem:
    from .mechanisms import four_bar_problem

    return four_bar_problem(**kw)
