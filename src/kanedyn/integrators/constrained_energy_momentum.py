"""Constrained energy–momentum integration: exact energy and exact constraints together.

``kd.simulate(constrained_system, q0, v0, T, method="energy_momentum" | "avf", dt=...)``
for a system with holonomic constraints g(q) = 0 (nc rows) in index-3 form,

    q̇ = ∂H/∂p,   ṗ = −∂H/∂q − Gᵀλ + F(t, q, v),   g(q) = 0,

H(q, p) = ½ pᵀM⁻¹p + V(q) (V: gravity and springs), G = ∂g/∂q, F the non-conservative
forces (dampers, motors: whatever does work W_nc). Differentiating g(q) = 0 once gives the
*hidden* constraint γ(q, p) = G(q) M(q)⁻¹ p = 0 (ġ = 0), a second constraint on phase space.

The step
--------
z = (q, p), Δz = z' − z, S = [[0, 1], [−1, 0]]. For f = H, each row of g, each row of γ, a
*discrete gradient* ∇̄f(z, z') is a map with ``∇̄f · Δz = f(z') − f(z)`` exactly. One step is

    Δq =  h ∇̄_pH + h ∇̄_pγᵀ μ
    Δp = −h ∇̄_qH − h ∇̄gᵀ λ − h ∇̄_qγᵀ μ + h F(t + h/2, q̄, Δq/h)
    g(q') = 0,   γ(q', p') = 0,

that is ``Δz = h S (∇̄H + ∇̄Φᵀν) + h (0, F)`` with Φ = (g, γ), ν = (λ, μ): 2 nv + 2 nc
equations for (Δq, Δp, λ, μ). λ is the constraint force (the sign of the DAE path,
M v̇ = f − Gᵀλ); μ = O(h²) keeps the nodal velocities on the hidden constraint.

Why energy is exact. ΔH = ∇̄H·Δz. Both constraints hold at both ends, so ∇̄Φ·Δz = ΔΦ = 0,
i.e. ``∇̄Φ S ∇̄H = −∇̄Φ S ∇̄Φᵀν − ∇̄Φ (0, F)``; with S skew (``xᵀSx = 0``)

    ΔH = h ∇̄Hᵀ S ∇̄Φᵀ ν + h ∇̄_pH·F = h νᵀ∇̄Φ S ∇̄Φᵀν + h (∇̄_pH + ∇̄_pγᵀμ)·F = Δq·F.

Without F the energy is conserved to round-off; with F, ``E' − E = Δq·F`` is the work
recorded, so the budget E − E₀ − W_nc closes to round-off. g(q') = 0 and G v' = 0 are
equations of the step: they hold to Newton's tolerance at every node.

Sources. Gonzalez, *J. Nonlinear Sci.* 9 (1999) 473, "Mechanical systems subject to
holonomic constraints: differential–algebraic formulations and conservative integration":
the discrete gradient of H with the discrete gradient of g in the constraint force, which
keeps E and g; there the hidden constraint holds on average only (``∇̄g Δq = 0``), the
nodal velocities leave it by O(h²). Here it is a second phase-space constraint with its
own multiplier entering through S (Dirac's second-class constraints; RATTLE's velocity
projection is the symplectic counterpart, Andersen, *J. Comput. Phys.* 52 (1983) 24;
Leimkuhler & Reich, *Simulating Hamiltonian Dynamics* (2004), ch. 7). Chosen over a
post-step velocity projection, which removes kinetic energy (rescaling it back would
break the momenta), and over Betsch's discrete null-space method (*CMAME* 194 (2005)
5159), which needs a null-space basis of G per mechanism: this form takes any g with its
Jacobian, and keeps the momenta the discrete gradients keep (below).

Discrete gradients. Gonzalez's midpoint form (*J. Nonlinear Sci.* 6 (1996) 449),

    ∇̄f = a + [f(z') − f(z) − a·Δz] / (w·Δz) · w,       a ≈ ∇f(z̄),

which satisfies the defining identity for *any* a and w with w·Δz ≠ 0: a = ∇f(z̄) makes it
second order. For H, a is ∇H at the midpoint (``"energy_momentum"``) or its average over
the segment by Gauss–Legendre quadrature (``"avf"``, ``nodes=``). For g, a = G(q̄). For γ,
a = (∂γ/∂q, G(q̄) M(q̄)⁻¹) with ∂γ/∂q (at fixed p, by differences) taken from the Newton
matrix, which is kept over several steps: its staleness is O(h) in a, the correction
restores the exact identity, and the term multiplies μ = O(h²), so the order stays 2.
Since a step's result depends (at O(h³)) on when that matrix was built, the schedule is
kept free of round-off: every ``REFRESH`` steps, at a new h, and after a slow step —
one whose Newton updates took more than ``SLOW[1]`` iterations to fall to ``SLOW[0]``,
far above round-off (the total count, which the round-off floor decides, would not do:
two evaluations of the same step in another order then build at other steps).
w = Δz with the increments of the cyclic coordinates removed (coordinates
q_k on which neither H nor g depend — a root revolute about gravity, a root prismatic
across it, no gravity: checked numerically at random states), so their momenta p_k are
kept exactly, as in :mod:`.energy_momentum`'s "gonzalez" variant.

Momenta (``momenta=True``, "linear", "angular"). The cyclic coordinates above keep the
momenta whose symmetry is a translation of coordinates. A free-floating mechanism's
rotations act on the root's chart nonlinearly (the rotation's exponential coordinates), its
angular momentum is not quadratic in (x, p), and the midpoint-based discrete gradients keep
it to O(h²) only. With ``momenta=`` the chosen rows Ψ of the whole's [L; P] (world axes,
about the origin) are equations of the step, Ψ(z') = Ψ(z₀) (z₀ the run's start), with
multipliers κ along directions D:

    Δz = h S (∇̄H + ∇̄Φᵀν) + h (0, F) + D κ,    D = (1 − Π) ∂Ψᵀ,

∂Ψ the Jacobian of Ψ in (x, p) at the start of the Newton matrix, Π the orthogonal
projector onto the span of ∇̄H, ∇̄g and ∇̄γ at the iterate. Every column of D is orthogonal
to those discrete gradients, so ∇̄H·Dκ = 0 and ∇̄Φ·Dκ = 0: the identities of "Why energy is
exact" hold as they are (ΔH = (Δx − D_xκ)·F) and E, g, γ stay exact; Ψ is exact to the
Newton tolerance. (The Hamiltonian direction S∇Ψᵀ cannot carry κ: {Ψᵢ, Ψⱼ} is singular on
se(3)*.) The exact flow keeps Ψ, so κ only removes the method's O(h³) local momentum
error and the order stays 2. ``check_symmetry`` refuses the option where E or g change
under a rigid motion of the whole (gravity, a loop on the world, a root not on a free
joint); forces must be internal (joint dampers, motors) for the momenta to be conserved.

Joints. With revolute, prismatic and helical joints z = (q, p). With ball or free joints
in the tree, the step is taken in the local canonical chart of :mod:`.chart` centred on
q_n (quaternions move by the exponential map, never by addition); g is then g(φ_n(x)) with
∂g/∂x = G(q) J(x), γ = G(q) v with v = M⁻¹J⁻ᵀp, and F enters as J(x̄)ᵀF. H and g do not
depend on the chart, so the identities above hold unchanged.

Newton. The 2 nv + 2 nc equations are solved by simplified Newton with the matrix at the
start of a step: the terms in h M⁻¹, h Gᵀ, G, G M⁻¹, and by central differences in the
chart ∂γ/∂x, the stiffness ∂(∇_xH + Gᵀλ)/∂x and ∂ẋ/∂x, and in the momentum rows the
slopes −∂τ_nc/∂v of the force elements (dampers, friction; by differences at the start,
where J = 1); rebuilt every ``REFRESH`` steps and
when a step converges slowly (4–7 iterations a step on the linkages of the tests). The
predictor extrapolates the last two steps. An update is measured by what it moves (Δx,
Δp, h Gᵀδλ, h M⁻¹Gᵀδμ) beyond the round-off of q and p; where the mechanism turns back
(Δx → 0) the corrections carry round-off divided by |Δx| and the updates stall above
``tol``: the step is then taken if they stall below 1e-12, or below 1e-6 when its own
energy error |H' − H − Δx·F| is at round-off (``STALL_DEFECT`` ε (1 + |H|)). Where the
mechanism comes to rest (|Δz| ~ 1e-6: a crank stopped by friction), the corrections carry
the round-off δ of ΔH and Δg divided by |Δz| — h δH/|Δz| and h Σ|λ| δg/|Δx|, ~1e-12 — into
the residual, and the updates this noise makes, measured against the small |Δx| and |p|,
stall near 1e-6 on either side of it, as round-off falls: such a step is taken, its
energy error at round-off, when its residual is within that floor (``residual_floor``:
the rows of Δx and Δp within ν, g's within its round-off δg, γ's within ‖G M⁻¹‖ ν) — it
solves the equations as far as their evaluation can tell.

Cost. Python on the compiled kernels (crba, the energy kernel) and the constraint rows of
:class:`~kanedyn.constraints.ConstrainedSystem`: each iteration evaluates H, ∇H, g, G at
the midpoint and the end. This is the readable reference; for a Model cut at loop closures
whose joints are revolute, prismatic, helical, ball, free or planar (those three in their
charts, compiled), whose force elements all have compiled rows (:mod:`kanedyn.forces.kernel`) and
without ``momenta=``, the whole run is one numba loop of the same steps
(:mod:`.constrained_energy_momentum_compiled`, option ``compiled``, default True;
``ConstrainedSystem.compiled_chart_form``), 20–40× faster (four-bar, RSSR). See
docs/benchmarks.md, "Constrained energy–momentum".

Exact stick–slip joint friction (``kd.simulate(..., forces=[JointFriction(joint, law)])``
with an exact law; option ``friction``): held joints as rows of the step and an active set
per step, :mod:`.constrained_friction` (these Python steps).

A compiled Kane system with configuration constraints takes these steps on its index-3
form (:mod:`.kane_index3`: :class:`~kanedyn.constraints.KaneConstrainedSystem`, whose
Hamiltonian terms are the generated derivatives of the Kane system's T and V).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import lu_factor, lu_solve

from ..constraints.consistent import consistent_initial_values
from ..errors import ConstraintError, SolverError
from . import constrained_friction
from .base import FixedStepMethod, Solution
from .chart import canonical_coordinates, make_chart
from .constrained_energy_momentum_compiled import (
    G_FLOOR,
    SETTLE,
    STALL_DEFECT,
    residual_floor,
)
from .energy_momentum import _gonzalez_correction

_EPS = np.finfo(float).eps
#: the Newton matrix is rebuilt every REFRESH steps (and after a slow step)
REFRESH = 4
#: a step is slow when its Newton updates need more than SLOW[1] iterations to fall to
#: SLOW[0] (module doc: a test far above round-off; the compiled loop's is the same)
SLOW = (1e-8, 5)
#: the blocks of the unknowns, for messages
_BLOCKS = ("Δq (positions)", "Δp (momenta)", "g = 0 (constraints)",
           "G v = 0 (hidden constraint)", "total momenta kept (momenta=)")
#: the rows of the system's momentum [L; P] that ``momenta=`` names
_MOMENTA = {"angular": (0, 1, 2), "linear": (3, 4, 5)}


def momentum_rows(spec) -> tuple[int, ...]:
    """The rows of [L; P] that ``momenta=`` keeps: False/None none, True/"all" six,
    "linear", "angular" or a sequence of them."""
    if spec is None or spec is False:
        return ()
    if spec is True or spec == "all":
        return (0, 1, 2, 3, 4, 5)
    names = (spec,) if isinstance(spec, str) else tuple(spec)
    rows = []
    for nm in names:
        if nm not in _MOMENTA:
            raise SolverError(f"momenta={spec!r}: expected True, 'all', 'linear', "
                              "'angular' or a sequence of the last two")
        rows.extend(_MOMENTA[nm])
    return tuple(sorted(set(rows)))


def _quat_mul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def check_symmetry(system, q0: NDArray, rows: tuple[int, ...], seed: int = 19) -> None:
    """Refuse ``momenta=`` where the rigid motions of the whole do not leave E and g
    unchanged (gravity, a loop closed on the world, a root that is not a free joint): at
    random states near q0, the roots (free joints) are moved by a world rotation (for the
    angular rows) and a translation (for the linear ones) and E and g compared."""
    model = system.model
    roots = [b for b in model.bodies if b.parent < 0]
    bad = [b.name for b in roots if b.joint.kind != "free"]
    if bad:
        raise SolverError(f"momenta=: the root bodies {bad} of {system.name!r} are not on "
                          "free joints: the whole cannot move rigidly, its momenta are not "
                          "conserved")
    rng = np.random.default_rng(seed)
    for _ in range(2):
        q = np.array(q0, dtype=float)
        v = rng.uniform(-1.0, 1.0, system.nv)
        axis = rng.normal(size=3)
        axis *= (0.3 if any(r < 3 for r in rows) else 0.0) / np.linalg.norm(axis)
        c = rng.normal(size=3) * (1.0 if any(r >= 3 for r in rows) else 0.0)
        ang = np.linalg.norm(axis)
        qr = np.concatenate([[np.cos(ang / 2)],
                             np.sin(ang / 2) * axis / ang if ang > 0 else np.zeros(3)])
        w, x, y, z = qr
        R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                      [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                      [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
        qm = q.copy()
        for b in roots:
            i = b.iq.start
            qm[i:i + 3] = R @ q[i:i + 3] + c
            qm[i + 3:i + 7] = _quat_mul(qr, q[i + 3:i + 7])
        E, Em = system.energy(q, v), system.energy(qm, v)
        g, gm = system.constraint(0.0, q), system.constraint(0.0, qm)
        scale = max(1.0, abs(E))
        if abs(Em - E) > 1e-9 * scale or (g.size and np.abs(gm - g).max() > 1e-9):
            raise SolverError(
                f"momenta=: the energy or the constraints of {system.name!r} change under a "
                f"rigid motion of the whole (ΔE = {Em - E:.3g}, Δg = "
                f"{np.abs(gm - g).max() if g.size else 0.0:.3g}): gravity, a spring or a "
                "loop closed on the world — the momenta are not conserved")


def corrected_rows(A: NDArray, d: NDArray, w: NDArray, delta: NDArray,
                   floor: float = 1e-30) -> NDArray:
    """Gonzalez's discrete gradient of each row of a vector function f:
    ``A + [(Δf − A d) / (w·d)] wᵀ``, so that ``∇̄f d = Δf`` exactly. Below w·d = ``floor``
    (1e-30: a mechanism at rest; :data:`G_FLOOR` for g's rows) the correction is left
    out."""
    den = float(w @ d)
    if den > floor:
        return A + np.outer((delta - A @ d) / den, w)
    return A


def cyclic_coordinates(system, problem, q0: NDArray, samples: int = 3,
                       seed: int = 19) -> tuple[int, ...]:
    """Speed indices k on which neither E nor g depend (additive coordinates only): at
    ``samples`` random states near q0, ∂T/∂q_k (random v), ∂V/∂q_k and the column k of
    G all vanish. An analytic function whose derivative vanishes at random points
    vanishes identically, short of a measure-zero accident."""
    if not system.chart_is_additive or problem.tau_cons is not None:
        return ()
    rng = np.random.default_rng(seed)
    n = system.nv
    keep = np.ones(n, dtype=bool)
    for _ in range(samples):
        q = q0 + rng.uniform(-1.0, 1.0, n)
        v = rng.uniform(-1.0, 1.0, n)
        dT, dV = system.hamiltonian_terms(q, v)
        G = system.constraint_matrix(0.0, q)[:system.nc]
        size = max(1.0, float(np.abs(dT).max()), float(np.abs(dV).max()),
                   float(np.abs(G).max()) if G.size else 0.0)
        col = np.abs(G).max(axis=0) if G.size else np.zeros(n)
        keep &= np.maximum(np.maximum(np.abs(dT), np.abs(dV)), col) <= 1e-12 * size
    return tuple(int(k) for k in np.flatnonzero(keep))


class ConstrainedEnergyMomentum(FixedStepMethod):
    """Exact energy, exact g(q) = 0 and G v = 0 at every step; order 2 (module doc)."""

    name = "energy_momentum"
    order = 2
    #: the discrete gradient of H: "midpoint" (Gonzalez) or "avf" (quadrature, corrected)
    gradient = "midpoint"
    options = {"tol": 1e-14, "maxiter": 30, "initialize": True, "cyclic": "auto",
               "nodes": 3, "momenta": False, "compiled": True, "friction": None}

    def __init__(self, problem, **options):
        super().__init__(problem, **options)
        s = self.system
        for attr in ("hamiltonian_terms", "constraint_matrix", "nc"):
            if not hasattr(s, attr):
                raise SolverError(
                    f"{self.name}: constrained energy–momentum integration needs a "
                    f"constrained system with the tree's Hamiltonian terms (a "
                    f"kanedyn.constraints.ConstrainedSystem); {getattr(s, 'name', s)!r} has "
                    f"no {attr!r} — use radau5 or ida")
        if getattr(s, "nn", 0):
            raise SolverError(f"{self.name}: {s.name!r} has {s.nn} nonholonomic rows; the "
                              "constrained energy–momentum method takes holonomic "
                              "constraints g(q) = 0 only (use radau5)")
        if getattr(s, "rheonomic", False):
            raise SolverError(f"{self.name}: {s.name!r} has constraints that depend on t; "
                              "energy is not conserved there (use radau5)")
        k = int(self.opts["nodes"])
        if k < 1:
            raise SolverError(f"{self.name}: nodes must be ≥ 1, got {k}")
        x, w = np.polynomial.legendre.leggauss(k)
        self.xi, self.wq = 0.5 * (x + 1.0), 0.5 * w
        self.chart = None if s.chart_is_additive else make_chart(s)
        self._start(problem)
        n = s.nv
        cyc = self.opts["cyclic"]
        if isinstance(cyc, str) and cyc == "auto":
            cyc = cyclic_coordinates(s, problem, problem.q0)
        self.cyclic = tuple(int(c) for c in cyc)
        self.mask = np.ones(n)
        self.mask[list(self.cyclic)] = 0.0
        self.sys_nc = bool(getattr(s, "has_nonconservative_forces", False))
        self.mrows = momentum_rows(self.opts["momenta"])
        if self.mrows:
            if not hasattr(s, "momentum") or not hasattr(s, "model"):
                raise SolverError(f"{self.name}: momenta= needs a ConstrainedSystem of a "
                                  f"Model (its momentum); {getattr(s, 'name', s)!r} is not")
            check_symmetry(s, problem.q0, self.mrows)
        self.k = len(self.mrows)
        self._B = None         # ∂Ψ/∂(x, p) of the kept momenta, with the Newton matrix
        self._psi = None       # the kept momenta at the start of the run
        self._last = None      # (h, unknowns) of the last step: the next predictor
        self._lu = None        # the Newton matrix kept between steps
        self._aq = None        # ∂γ/∂x at its last evaluation (module doc)
        self._n = 0            # steps taken
        # joints held by stick rows this step (constrained_friction): their speed indices,
        # q indices and held values; m the rows of the step, nc + len(held)
        self._held: tuple[NDArray, NDArray, NDArray] | None = None
        self._m = s.nc
        self._tf = None        # the sliding joints' friction torques this step, or None
        self.friction = (None if not self.opts["friction"] else
                         constrained_friction.FrictionJoints(s, self.opts["friction"]))
        self.lam_mid: list[NDArray] = []   # λ of every step (at t + h/2)

    # ------------------------------------------------------------------- start values
    def _start(self, problem) -> None:
        """Consistent (q0, v0) (``initialize=True``, constraints.consistent), or the check
        that they are, naming the level and its residual; and λ0."""
        s, t0 = self.system, problem.t0
        if self.opts["initialize"]:
            cs = consistent_initial_values(s, problem.q0, problem.v0, t=t0)
            problem.q0, problem.v0, self.lam0 = cs.q, cs.v, cs.lam
            return
        s.check_constraints(problem.q0, t=t0)   # redundant rows: rank and names
        g = s.constraint(t0, problem.q0)
        cv = s.velocity_constraint(t0, problem.q0, problem.v0)
        scale = max(1.0, float(np.abs(problem.q0).max()))
        for level, r, tol in (("position", g, 1e-12 * scale),
                              ("velocity", cv, 1e-10 * max(1.0, float(
                                  np.abs(problem.v0).max())))):
            if r.size and np.abs(r).max() > tol:
                k = int(np.argmax(np.abs(r)))
                raise ConstraintError(
                    f"{self.name}: the initial state of {s.name!r} is not consistent at "
                    f"the {level} level: max residual {np.abs(r).max():.3g} (row {k}: "
                    f"{s.constraint_names[k]}); pass initialize=True or use "
                    "kanedyn.constraints.consistent_initial_values")
        self.lam0 = s.accelerations(problem.q0, problem.v0, t=t0)[1]

    # ------------------------------------------------------------------------ pieces
    def _point(self, qn, x):
        return qn + x if self.chart is None else self.chart.point(qn, x)

    def _jac(self, qn, x):
        return None if self.chart is None else self.chart.jacobian(qn, x)

    def _G(self, t, q, J):
        """∂g/∂x: G(q), times J(x) in a chart; below it the rows e_j of the joints held
        by stick rows (1-DOF joints, on which J is the identity)."""
        G = self.system.constraint_matrix(t, q)[: self.system.nc]
        G = G if J is None else G @ J
        if self._held is None:
            return G
        E = np.zeros((self._held[0].size, G.shape[1]))
        E[np.arange(self._held[0].size), self._held[0]] = 1.0
        return np.vstack([G, E])

    def _g(self, t, q):
        """g(q), and below it q_j − q_j(start of the step) for the held joints."""
        g = self.system.constraint(t, q)
        if self._held is None:
            return g
        return np.concatenate([g, q[self._held[1]] - self._held[2]])

    def _force(self, t, q, v):
        """All non-conservative generalized forces at (t, q, v): the problem's force
        elements and the system's own (its ``tau`` and non-conservative elements)."""
        F = np.zeros(self.system.nv)
        if self.problem.tau_nc is not None:
            F += self.problem.tau_nc(t, q, v)
        if self.sys_nc:
            F += self.system.nonconservative_forces(t, q, v)
        if self._tf is not None:
            F += self._tf
        return F

    def _H_gradient(self, C, dx, p0, dp):
        """The base gradient a of H: at the midpoint, or averaged (AVF quadrature)."""
        if self.gradient == "midpoint":
            gx, gp = C.gradient(0.5 * dx, p0 + 0.5 * dp)[:2]
            return np.concatenate([gx, gp])
        a = np.zeros(2 * dx.size)
        for s, w in zip(self.xi, self.wq, strict=True):
            gx, gp = C.gradient(s * dx, p0 + s * dp)[:2]
            a[:dx.size] += w * gx
            a[dx.size:] += w * gp
        return a

    def _equations(self, ctx, u):
        """The residual of the step's equations (module doc) at u = (Δx, Δp, λ, μ), and
        (the work Δx·F, |H' − H − Δx·F|, the residual's round-off floor (ν, δg):
        ``residual_floor``)."""
        C, t, h, q0, p0, H0, g0, gam0, scale, psi0 = ctx
        s, n, m = self.system, self.system.nv, self._m
        dx, dp = u[:n], u[n:2 * n]
        lam, mu, kap = u[2 * n:2 * n + m], u[2 * n + m:2 * n + 2 * m], u[2 * n + 2 * m:]
        p1 = p0 + dp
        q1, v1, J1 = C.state(dx, p1)
        H1 = self.problem.energy(q1, v1)
        dz = np.concatenate([dx, dp])
        w = np.concatenate([dx * self.mask, dp])
        a = self._H_gradient(C, dx, p0, dp)
        dgH = _gonzalez_correction(a, dz, w, H1 - H0, H0)
        xb = 0.5 * dx
        qb, Jb = self._point(q0, xb), self._jac(q0, xb)
        Gb = self._G(t, qb, Jb)
        g1 = self._g(t, q1)
        wq = dx * self.mask
        Gbar = corrected_rows(Gb, dx, wq, g1 - g0, G_FLOOR)
        # γ = G(q) v: base gradient (∂γ/∂x of the Newton matrix, G M⁻¹ J⁻ᵀ at the
        # midpoint), corrected along Δz
        Ab = C.inverse_mass(xb)
        A = np.hstack([self._aq, Gb @ Ab])
        gam1 = self._G(t, q1, None) @ v1
        Gam = corrected_rows(A, dz, w, gam1 - gam0)
        r_x = dx - h * (dgH[n:] + Gam[:, n:].T @ mu)
        r_p = dp + h * (dgH[:n] + Gbar.T @ lam + Gam[:, :n].T @ mu)
        extra = ()
        Dx = None
        if self.k:
            # the kept momenta Ψ: Ψ(z') = Ψ(z), their multipliers κ along D, the rows of
            # ∂Ψ projected orthogonal to ∇̄H, ∇̄g and ∇̄γ (module doc): E, g, γ untouched
            Q = np.vstack([dgH[None, :], np.hstack([Gbar, np.zeros((m, n))]), Gam])
            Qo = np.linalg.qr(Q.T)[0]
            D = self._B.T - Qo @ (Qo.T @ self._B.T)
            Dx = D[:n]
            r_x -= Dx @ kap
            r_p -= D[n:] @ kap
            extra = (s.momentum(q1, v1)[list(self.mrows)] - psi0,)
        work = 0.0
        f_max = 0.0
        if self.problem.tau_nc is not None or self.sys_nc or self._tf is not None:
            xdot = dx / h
            if Jb is None:
                F = self._force(t + 0.5 * h, qb, xdot)
            else:
                F = Jb.T @ self._force(t + 0.5 * h, qb, Jb @ xdot)
            r_p -= h * F
            work = float((dx if Dx is None else dx - Dx @ kap) @ F)
            f_max = float(np.abs(F).max(initial=0.0))
        if self._held is not None:
            # a held joint that entered the step moving (γ_j = v_j ≠ 0 at its start) is
            # stopped by its row: ΔH = Δx·F + μ·γ(z) (constrained_friction's doc)
            work += float(mu[s.nc:] @ gam0[s.nc:])
        # the step's own energy error if it ended here: at round-off once the equations hold
        defect = abs(H1 - H0 - work)
        # the round-off floor of this residual: the corrections of ∇H and ∇g where they are
        # made (the conditions of _gonzalez_correction and corrected_rows), the rows' terms
        floor_h = 1e3 * _EPS * (abs(H0) + 1.0) / (float(np.sqrt(a @ a)) + 1e-300)
        den_h, den_g = float(w @ dz), float(wq @ dx)
        lam1 = float(np.abs(lam).sum())
        gmax = float(np.abs(Gb).max(initial=0.0))
        terms = float(np.abs(dz).max()) + h * (float(np.abs(a).max()) + lam1 * gmax + f_max)
        floors = residual_floor(h, H0, den_h if den_h > floor_h * floor_h else 0.0,
                                den_g if den_g > G_FLOOR else 0.0, lam1, gmax, scale, terms)
        return np.concatenate([r_x, r_p, g1, gam1, *extra]), (work, defect, floors)

    def _newton_matrix(self, C, t, h, q0, v0, M0, G0, lam):
        """The simplified Newton matrix at the start of the step (module doc), factored."""
        s, n, m = self.system, self.system.nv, self._m
        Ai = np.linalg.inv(M0)
        # by central differences in the chart, at fixed p: ∂γ/∂x (γ = G(q) v, v = M⁻¹J⁻ᵀp),
        # the stiffness ∂(∇_xH + Gᵀλ)/∂x (gravity, springs, curvature of g times λ) and
        # ∂ẋ/∂x = ∂²H/∂x∂p (the gyroscopic coupling: ∂(M⁻¹p)/∂q)
        p0 = M0 @ v0
        Gqv = np.empty((m, n))
        Kqq = np.empty((n, n))
        Kxp = np.empty((n, n))
        k_ = self.k
        rows = list(self.mrows)
        B = np.zeros((k_, 2 * n))
        for k in range(n):
            e = np.zeros(n)
            e[k] = 1e-7 * (1.0 + float(np.abs(q0).max()))
            ends = []
            for sgn in (1.0, -1.0):
                gx, gp, _, ve, Je = C.gradient(sgn * e, p0)
                Gq = self._G(t, self._point(q0, sgn * e), None)
                Ge = Gq if Je is None else Gq @ Je
                # γ = G(q) v (in a chart ∂g/∂x = G J multiplies ẋ = J⁻¹v, not v)
                ends.append((Gq @ ve, gx + Ge.T @ lam, gp,
                             s.momentum(self._point(q0, sgn * e), ve)[rows] if k_ else None))
            Gqv[:, k] = (ends[0][0] - ends[1][0]) / (2 * e[k])
            if k_:
                B[:, k] = (ends[0][3] - ends[1][3]) / (2 * e[k])
            Kqq[:, k] = (ends[0][1] - ends[1][1]) / (2 * e[k])
            Kxp[:, k] = (ends[0][2] - ends[1][2]) / (2 * e[k])
        if k_:
            # ∂Ψ/∂p: Ψ is linear in v = M⁻¹p at x = 0
            for j in range(n):
                B[:, n + j] = s.momentum(q0, Ai[:, j])[rows]
            self._B = B
            gx0, gp0 = C.gradient(np.zeros(n), p0)[:2]
            Q = np.vstack([np.concatenate([gx0, gp0])[None, :],
                           np.hstack([G0, np.zeros((m, n))]), np.hstack([Gqv, G0 @ Ai])])
            Qo = np.linalg.qr(Q.T)[0]
            D0 = B.T - Qo @ (Qo.T @ B.T)
        N = 2 * n + 2 * m + k_
        e2 = 2 * n + 2 * m
        K = np.zeros((N, N))
        I = np.eye(n)
        K[:n, :n] = I - 0.5 * h * Kxp
        K[:n, n:2 * n] = -0.5 * h * Ai
        K[:n, 2 * n + m:e2] = -h * (G0 @ Ai).T
        K[n:2 * n, :n] = 0.5 * h * Kqq + self._damping_slopes(t, q0, v0)
        K[n:2 * n, n:2 * n] = I + 0.5 * h * Kxp.T
        K[n:2 * n, 2 * n:2 * n + m] = h * G0.T
        K[n:2 * n, 2 * n + m:e2] = h * Gqv.T
        K[2 * n:2 * n + m, :n] = G0
        K[2 * n + m:e2, :n] = Gqv
        K[2 * n + m:e2, n:2 * n] = G0 @ Ai
        dn = (0.0, 0.0)
        if k_:
            K[:2 * n, e2:] = -D0
            K[e2:, :2 * n] = B
            dn = (float(np.abs(D0[:n]).sum(axis=1).max()),
                  float(np.abs(D0[n:]).sum(axis=1).max()))
        self._aq = Gqv  # the q-part of the base gradient of γ, until the next matrix
        # the sizes by which _update_size weighs the multipliers' updates
        self._norms = (float(np.abs(G0).sum(axis=0).max()),
                       float(np.abs(Ai @ G0.T).sum(axis=1).max()), *dn)
        lu = lu_factor(K, check_finite=False)
        d = np.abs(np.diag(lu[0]))
        if not np.all(np.isfinite(d)) or d.min() <= 1e-13 * d.max():
            raise self.singular_matrix(q0, t)
        return lu

    def _damping_slopes(self, t, q, v) -> NDArray | float:
        """C = −∂τ_nc/∂v at the start of the step (dampers, friction), by central differences
        (step 1e-7 (1 + |v|)): the derivative of −h F(t + h/2, q̄, Δx/h) in the momentum rows
        with respect to Δx, at Δx = 0 where J = 1 (the dependence on q̄ left out: a simplified
        Newton matrix). The compiled loop puts the same slopes there (the rows' exact
        ``damping_slopes``), so that both judge a step slow, and rebuild, at the same steps.
        0 without force elements."""
        tau = self.problem.tau_nc
        if tau is None:
            return 0.0
        n = v.size
        C = np.empty((n, n))
        e = 1e-7 * (1.0 + float(np.abs(v).max()))
        for k in range(n):
            d = np.zeros(n)
            d[k] = e
            C[:, k] = (tau(t, q, v - d) - tau(t, q, v + d)) / (2 * e)
        return C

    def singular_matrix(self, q0, t) -> SolverError:
        """The error of a singular Newton matrix at (t, q0) (after
        ``check_constraints``, which raises first when rows of G are dependent, naming
        them and the rank)."""
        self.system.check_constraints(q0, t=t)
        return SolverError(f"{self.name}: the Newton matrix is singular at t = {t:.6g} "
                           "(G M⁻¹ Gᵀ singular: a singular configuration of the "
                           "mechanism?)")

    def newton_failure(self, n: int, t: float, h: float, it: int, residual: float,
                       block: int) -> str:
        """The message of a step whose Newton iteration failed (step n at t, size h, after
        ``it`` iterations; the largest residual and the block it is in)."""
        return (f"{self.name}: Newton failed at step {n} (t = {t:.6g}, h = {h:.3g}) "
                f"after {it} iterations: residual {residual:.3g} in {_BLOCKS[block]}. "
                "Reduce dt (the iteration contracts like (h·ω)², ω the fastest rate of "
                "the motion), check that the mechanism is not near a singular "
                "configuration (G M⁻¹ Gᵀ nearly singular), or use radau5")

    def compiled_run(self, project) -> Solution | None:
        """The whole run by the compiled loop of :mod:`.constrained_energy_momentum_compiled`
        (a Model cut at loop closures on revolute, prismatic, helical, ball or free joints,
        force elements with compiled rows, no ``momenta=``; option ``compiled``), or None:
        these Python steps then take it."""
        from . import constrained_energy_momentum_compiled as cemc

        return None if project is not None else cemc.run(self)

    # -------------------------------------------------------------------------- step
    def step(self, t, q, v, h):
        if self.friction is not None:  # exact stick–slip: an active set of held joints
            return constrained_friction.step(self, t, q, v, h)
        return self.commit(h, *self.attempt(t, q, v, h))

    def attempt(self, t, q, v, h):
        """Solve one step from (t, q, v) with the rows of this step (g, and the held
        joints' rows): (u, C, p0, the work of the step, slow). Nothing of the run's
        record changes; a Newton failure raises."""
        s, n, m = self.system, self.system.nv, self._m
        key = () if self._held is None else tuple(self._held[0])
        C = canonical_coordinates(self.problem, self.chart, q)
        M0 = s.mass_matrix(q)
        p0 = M0 @ v
        H0 = self.problem.energy(q, v)
        g0 = self._g(t, q)
        G0 = self._G(t, q, None)
        if self.k and self._psi is None:
            self._psi = s.momentum(q, v)[list(self.mrows)]
        # the kept momenta are held at their values at the start of the run, not of the
        # step: the round-off of each step's evaluation does not accumulate
        psi0 = self._psi
        ctx = (C, t, h, q, p0, H0, g0, G0 @ v, float(np.abs(q).max()), psi0)
        last = self._last
        if last is not None and abs(last[0] - h) <= 1e-9 * h and last[3] == key:
            # predictor: the last two steps' unknowns extrapolated (smooth motion; also for
            # the last step of a run, shortened by round-off to land on t_final)
            u = last[1].copy() if last[2] is None else 2.0 * last[1] - last[2]
        else:
            lam = self.lam0 if not self.lam_mid else self.lam_mid[-1]
            vd = s.forward_dynamics(q, v, None, t) if s.nc else np.zeros(n)
            u = np.concatenate([h * v, h * (M0 @ vd), lam, np.zeros(2 * m - s.nc + self.k)])
        rebuilt = False
        if (self._lu is None or abs(self._lu[0] - h) > 1e-9 * h or self._lu[2] != key
                or self._n % REFRESH == 0):
            self._lu = (h, self._newton_matrix(C, t, h, q, v, M0, G0, u[2 * n:2 * n + m]), key)
            rebuilt = True
        while True:
            u_new, it, ok, res, slow = self._solve(ctx, u, rebuilt)
            if ok or rebuilt:
                break
            # slow or diverging with the kept matrix: a fresh one, from the predictor
            self._lu = (h, self._newton_matrix(C, t, h, q, v, M0, G0, u[2 * n:2 * n + m]), key)
            rebuilt = True
        self.newton_iterations += it
        if not ok:
            r, blk = res
            raise SolverError(self.newton_failure(self._n, t, h, it, float(np.abs(r).max()),
                                                  blk))
        return u_new, C, p0, res, slow

    def commit(self, h, u, C, p0, res, slow):
        """Take the step solved by :meth:`attempt`: the predictor's and the matrix's
        records, λ; returns (q', v', the work of the step)."""
        n, nc = self.system.nv, self.system.nc
        key = () if self._held is None else tuple(self._held[0])
        if slow:  # the kept matrix has gone stale: refresh it for the next step
            self._lu = None
        last = self._last
        same = last is not None and abs(last[0] - h) <= 1e-9 * h and last[3] == key
        self._last = (h, u, last[1] if same else None, key)
        self._n += 1
        self.lam_mid.append(u[2 * n:2 * n + nc].copy())
        q1, v1, _ = C.state(u[:n], p0 + u[n:2 * n])
        return q1, v1, res

    def _solve(self, ctx, u, fresh: bool = False):
        """Simplified Newton; returns (u, iterations, converged, the work Δx·F at u if it
        converged, else (residual, worst block), slow: the updates took more than
        SLOW[1] iterations to fall to SLOW[0]). ``fresh``: the matrix was just built, and
        is judged from the ``SETTLE``-th update (a kept one from the 2nd)."""
        n, m = self.system.nv, self._m
        cuts = (0, n, 2 * n, 2 * n + m, 2 * n + 2 * m, 2 * n + 2 * m + self.k)
        tol = self.opts["tol"]
        p0_norm = float(np.abs(ctx[4]).max())
        u = u.copy()
        r, work = self._equations(ctx, u)
        last = np.inf
        reach = 0  # the iteration at which the update first fell to SLOW[0]

        def slow():
            return reach == 0 or reach > SLOW[1]

        for it in range(1, self.opts["maxiter"] + 1):
            du = -lu_solve(self._lu[1], r, check_finite=False)
            u += du
            r, work = self._equations(ctx, u)
            if not (np.all(np.isfinite(r)) and np.all(np.isfinite(u))):
                return u, it, False, (np.nan_to_num(r, nan=np.inf), 0), True
            err = self._update_size(du, u, p0_norm, ctx[8], ctx[2])
            if reach == 0 and err <= SLOW[0]:
                reach = it
            if err <= tol:
                return u, it, True, work[0], slow()
            if it >= (SETTLE if fresh else 2) and err > 0.9 * last:
                # no longer contracting: at the round-off floor (the corrections of the
                # discrete gradients carry the round-off of f divided by |Δz|, large where
                # the mechanism turns back and Δx → 0): an update at 1e-12, or, when the
                # step's energy error is at the round-off of H, one below 1e-6 or a
                # residual within the floor of its own evaluation (at rest the updates
                # that floor makes, against the small |Δx| and |p|, reach 1e-6); else not
                # converging
                if err <= 1e-12 or (work[1] <= STALL_DEFECT * _EPS * (1.0 + abs(ctx[5]))
                                    and (err <= 1e-6 or self._at_floor(r, work[2]))):
                    return u, it, True, work[0], slow()
                break
            last = err
        blk = int(np.argmax([np.abs(r[a:b]).max() if b > a else 0.0
                             for a, b in zip(cuts[:-1], cuts[1:], strict=True)]))
        return u, it, False, (r, blk), True

    def _at_floor(self, r: NDArray, floors: tuple[float, float]) -> bool:
        """The residual at the round-off floor of its own evaluation (``residual_floor``;
        module doc, Newton): the rows of Δx and Δp within ν, those of g (and held joints)
        within δg, those of γ within ‖G M⁻¹‖ ν (what ν in the momenta moves γ by), the
        kept momenta's within ν (1 + |∂Ψ/∂(x, p)|)."""
        n, m = self.system.nv, self._m
        nu, dg = floors
        e2 = 2 * n + 2 * m
        ok = (np.abs(r[:2 * n]).max() <= nu and np.abs(r[2 * n:2 * n + m]).max(initial=0.0) <= dg
              and np.abs(r[2 * n + m:e2]).max(initial=0.0) <= self._norms[1] * nu)
        if ok and self.k:
            ok = np.abs(r[e2:]).max() <= nu * (1.0 + float(np.abs(self._B).max()))
        return bool(ok)

    def _update_size(self, du, u, p0_norm, q_norm, h):
        """A Newton update measured by what it moves: Δx relative to |Δx|, Δp to |p|, and
        the multipliers by the momentum (h Gᵀδλ) and position (h M⁻¹Gᵀδμ) changes they
        make, relative to |p| and |Δx|. |Δx| vanishes where the mechanism stops (a
        turning point): it is taken at least 1e-6 (1 + |q|); and an update of Δx below the
        round-off of q counts as none."""
        n, m = self.system.nv, self._m
        gn, gan, dnx, dnp = self._norms
        e2 = 2 * n + 2 * m
        dk = float(np.abs(du[e2:]).max(initial=0.0))
        sx = max(float(np.abs(u[:n]).max()), 1e-6 * (1.0 + q_norm))
        sp = max(p0_norm, float(np.abs(u[n:2 * n]).max()), 1e-300)
        # what moves Δx (its update, h M⁻¹Gᵀδμ) and what moves Δp (its update, h Gᵀδλ),
        # less the round-off of q and p themselves: an update at that level counts as none
        move_x = max(float(np.abs(du[:n]).max()),
                     h * gan * float(np.abs(du[2 * n + m:e2]).max(initial=0.0)), dnx * dk)
        move_p = max(float(np.abs(du[n:2 * n]).max()),
                     h * gn * float(np.abs(du[2 * n:2 * n + m]).max(initial=0.0)), dnp * dk)
        return max(max(move_x - 4 * _EPS * (1.0 + q_norm), 0.0) / sx,
                   max(move_p - 4 * _EPS * sp, 0.0) / sp)

    # ------------------------------------------------------------------ the record
    def finish(self, sol, residuals=None):
        """Add to the Solution what the DAE path records: the multipliers λ at the output
        times (``stats["lam"]``, the mean of the two neighbouring steps' λ, which are at
        t ± h/2: O(h²)), and the residuals ``residual_g`` (g) and ``residual_Gv`` (G v) —
        given as ``residuals`` by the compiled loop, which has them at hand."""
        s, every = self.system, max(1, int(self.problem.save_every))
        lm = np.array(self.lam_mid).reshape(-1, s.nc)
        ns = len(lm)
        nodes = np.empty((ns + 1, s.nc))
        nodes[0] = self.lam0
        if ns:
            nodes[1:ns] = 0.5 * (lm[:-1] + lm[1:])
            nodes[ns] = lm[-1] if ns == 1 else 1.5 * lm[-1] - 0.5 * lm[-2]
        idx = np.minimum(np.arange(len(sol.t)) * every, ns)
        idx[-1] = ns if len(sol.t) > 1 else 0
        sol.stats["lam"] = nodes[idx]
        if residuals is not None:
            sol.stats["residual_g"], sol.stats["residual_Gv"] = residuals
        else:
            sol.stats["residual_g"] = np.array([s.constraint(t, q)
                                                for t, q in zip(sol.t, sol.q, strict=True)])
            sol.stats["residual_Gv"] = np.array([s.velocity_constraint(t, q, v) for t, q, v
                                                 in zip(sol.t, sol.q, sol.v, strict=True)])
        sol.stats["cyclic"] = np.array(self.cyclic, dtype=int)
        if self.friction is not None and ns:
            # the exact-law joints (constrained_friction): τ_f (the holding torque while
            # held), the held flags and the friction's work ∫ τ_fᵀ v dt, at the output times
            fj = self.friction
            step = np.maximum(idx - 1, 0)
            sol.stats["friction_force"] = np.array(fj.force)[step]
            stuck = np.array(fj.stuck)[step]
            stuck[idx == 0] = [c in fj.held0 for c in range(fj.idx.size)]
            sol.stats["friction_stuck"] = stuck
            sol.stats["friction_work"] = np.concatenate([[0.0], np.cumsum(fj.work)])[idx]
        if self.k:
            # [L; P] of the whole at the output times (world axes, L about the origin)
            sol.stats["momenta"] = np.array([s.momentum(q, v) for q, v
                                             in zip(sol.q, sol.v, strict=True)])
        return sol


class ConstrainedAVF(ConstrainedEnergyMomentum):
    """The same step with the AVF average of ∇H (Gauss–Legendre, ``nodes``) as the base
    gradient, made exact by Gonzalez's correction (module doc)."""

    name = "avf"
    gradient = "avf"


#: the methods of kd.simulate that integrate a constrained system with exact energy
CONSTRAINED_METHODS = {c.name: c for c in (ConstrainedEnergyMomentum, ConstrainedAVF)}
