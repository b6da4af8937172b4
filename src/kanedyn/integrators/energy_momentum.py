"""Energy–momentum methods: conservation of E and of momentum maps by the structure of the step.

``method="energy_momentum"`` picks one of four variants (``variant=``), in this order:

``"lie"`` — a single rigid body on a free joint, no force elements (gravity allowed).
    The Lie–midpoint (Simo–Wong) scheme with the Cayley map (Simo & Wong, *IJNME* 31,
    1991; Austin, Krishnaprasad & Wang, *J. Comput. Phys.* 107, 1993; Lewis & Simo,
    *J. Nonlinear Sci.* 4, 1994), split as SO(3) x R³ about the centre of mass. With π = I_c ω
    the body angular momentum about the centre of mass, P the world linear momentum,
    x_c the centre of mass, R the attitude and Q = cay(h ω̄) the relative rotation:

        π' = Qᵀ π,   ω̄ = I_c⁻¹ (π + π')/2,   R' = R Q,
        P' = P + h m g,   x_c' = x_c + h (P + P')/(2m).

    Since ``cay(â)ᵀ = (1 + â/2)⁻¹(1 − â/2)``, the first line is the implicit equation
    ``π' − π = h π̄ × ω̄`` (π̄ the mean), a discrete Euler equation ``I_c ω̇ = π × ω``. Then
    - ``R'π' = R Q Qᵀ π = Rπ``: the world angular momentum about the centre of mass is kept
      by construction, whatever ω̄ is;
    - ``½π'ᵀI_c⁻¹π' − ½πᵀI_c⁻¹π = (π' − π)·ω̄ = h (π̄ × ω̄)·ω̄ = 0``: the rotational energy
      is exact (ω̄ is the midpoint discrete gradient of the quadratic H in π);
    - the translation is the midpoint rule of a quadratic Hamiltonian with linear potential,
      so ``|P|²/2m − m g·x_c`` is exact, and ``x_c × P`` changes by ``h x_c × m g`` plus
      terms along ``g × P̄``: the component of L along g is kept. Without gravity the total
      [L; P] about the world origin is kept exactly.
    Order 2, symmetric; the quaternion is multiplied by ``(1, h ω̄/2)/√(1 + |h ω̄|²/4)``, the
    quaternion of cay(h ω̄), so it stays unit to roundoff. The 3x3 implicit equation is
    solved by Newton with its analytic Jacobian ``1 + h/2 (ω̄× − π̄× I_c⁻¹)``.

``"floating"`` — a free root with revolute, prismatic or helical joints below it and no
    gravity (force elements allowed). In y = (μ, θ, p_θ), μ the first six rows of M v (the
    momentum conjugate to the base's body twist, in base coordinates), H(y) = ½ zᵀM(θ)⁻¹z
    + V(θ) with z = (μ, p_θ), and Gonzalez's discrete gradient ∇̄H = (ν̄, ∇̄_θH, ∇̄_pH) over
    Δy (correction direction Δy):

        μ' − μ = h ad*_ν̄ μ̄ + h τ_base,   θ' − θ = h ∇̄_pH,   p' − p = −h ∇̄_θH + h τ_θ,
        g' = g f  with  Ad_f = cay(h ad_ν̄) = (1 − h ad_ν̄/2)⁻¹(1 + h ad_ν̄/2),

    ad_ν = crm(ν), ad*_ν μ = crm(ν)ᵀμ (the Euler–Poincaré equation μ̇ = ad*_ν μ in these
    conventions). cay(h ad_ν̄) is block lower triangular with diagonal blocks cay(h ω̄), so
    it is the adjoint of an SE(3) element f (rotation cay(h ω̄), translation read off its
    lower-left block); and since cay(A)ᵀ = (1 − Aᵀ/2)⁻¹(1 + Aᵀ/2), the first equation
    (τ_base = 0) is μ' = Ad_fᵀ μ: the world momentum Ad*_{g⁻¹}μ is unchanged, by
    construction (Simo, Tarnow & Wong, *CMAME* 100, 1992; Lewis & Simo 1994). The 4x4
    Cayley map of se(3) would not do: its adjoint differs from cay(ad) at O(h³). E is
    exact because ``ν̄·Δμ = h ν̄ᵀ ad*_ν̄ μ̄ = h (ad_ν̄ ν̄)·μ̄ = 0`` and the rest is Gonzalez's
    argument; joint torques add ``h v̄ᵀτ`` to E exactly (the budget closes) and, having
    no base component, keep [L; P]. Order 2, symmetric. On a Model whose force elements
    on the joints below the base all have compiled rows it runs in the compiled loop of
    :mod:`.floating_cayley_compiled` (``compiled=False``: the Python steps below, its
    reference).

``"gonzalez"`` — every joint's configuration adds (revolute, prismatic, helical). Gonzalez's
    midpoint discrete gradient (Gonzalez, *J. Nonlinear Sci.* 6, 1996) in the canonical
    variables z = (q, p), p = M(q) v:

        ∇̄H = ∇H(z̄) + [H(z') − H(z) − ∇H(z̄)·Δz] / (w·Δz) · w,      z' = z + h S ∇̄H,

    so ``H(z') − H(z) = ∇̄H·Δz = h ∇̄Hᵀ S ∇̄H = 0``. Gonzalez's correction direction is
    w = Δz; that choice breaks the momentum p_k conjugate to a cyclic coordinate q_k
    (ṗ_k = −∂H/∂q_k = 0), because the correction puts ``c Δq_k`` into ∇̄_{q_k}H. Here w is Δz
    with the increments of the cyclic coordinates removed — Gonzalez's discrete gradient of
    H written in the invariants of the translation symmetry (every variable but q_k), his
    G-equivariant construction for this group. Then ``∇̄_{q_k}H = ∂H/∂q_k(z̄) = 0`` and
    ``p_k' = p_k`` exactly, as is every momentum linear in (q, p) that the symmetry gives.
    Order 2, symmetric. On a plain Model whose force elements all have compiled rows
    (:mod:`kanedyn.forces.kernel`) it runs in the compiled loop of
    :mod:`.discrete_gradient_compiled` (``compiled=False``: the Python steps below, its
    reference). ``cyclic="auto"`` takes the root joints that leave E invariant: a
    revolute root about the gravity axis, a prismatic root across it, any 1-dof root without
    gravity — and none when springs are present (their potential may depend on q_k). Pass
    joint names (or ``()``) to choose. Non-conservative forces enter as
    ``h τ_nc(t + h/2, q̄, v̄)`` with ``v̄ = ∇̄_pH``, so ``E' − E = h v̄ᵀ τ_nc`` exactly, which is
    the recorded W_nc increment: the budget closes to roundoff.

``"projection"`` — everything else (ball joints in the chain, floating chains under
    gravity, free bodies with force elements, protocol-only systems): the implicit midpoint
    rule in tangent coordinates ``q = q_n ⊕ ξ`` followed by a projection (:mod:`.projection`)
    onto E = E₀ + W_nc and the momentum components that the system conserves. This is a
    projection method of order 2, not a structural energy–momentum scheme.
    ``momentum="auto"`` conserves [L; P] when the system has a free root joint, no gravity
    and no force elements, otherwise only the energy; pass the names explicitly
    (``"momentum"``, ``"angular_momentum"``, ``"linear_momentum"``, a tuple, or ``()``).
    On a Model with revolute, prismatic, helical, ball, free or planar joints (no
    armature) whose force elements all have compiled rows, it runs in the compiled
    tangent midpoint + projection loop of :mod:`.gauss_compiled` — the same algorithm,
    the same steps to Newton's tolerance (``compiled=False``: the Python steps, its
    reference) —, with momentum rows among the invariants (a free root without gravity
    or forces) too, the projection then onto E and [L; P]. That includes a chain whose
    joints all add (``variant="projection"`` asked for there): the midpoint stays in the
    tangent form z = (ξ, v), q = q₀ + ξ (not the canonical one that ``method="midpoint"``
    takes there), which the loop's tangent form computes so on those joints. On a
    compiled Kane system (numba backend), with quaternions or additive coordinates,
    projected onto the energy alone, it runs in the chart loop of :mod:`.kane_compiled`
    (:func:`.kane_compiled.run_gauss_chart`; on additive coordinates the generated chart
    is q₀ + ξ with J = 1, the Python step's ``chart_jacobian`` None).
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import SolverError
from ..spatial import crm, inertia_parameters, quat_multiply, quat_to_matrix, skew
from .base import FixedStepMethod, NewtonFailure, chart_is_additive, newton, solve_spd
from .discrete_gradient import NEWTON_TOL
from .gauss import Midpoint
from .projection import Projected

VARIANTS = ("auto", "lie", "floating", "gonzalez", "projection")
_EPS = np.finfo(float).eps


class _TangentMidpoint(Midpoint):
    """Midpoint rule in tangent coordinates (ξ, v), also for additive charts."""

    def __init__(self, problem, **options):
        super().__init__(problem, **options)
        self.canonical = False


def _auto_invariants(problem) -> tuple[str, ...]:
    model = _model(problem.system)
    if model is None:
        return ()
    free_root = model.bodies[0].joint.kind == "free" and all(
        b.parent >= 0 for b in model.bodies[1:])
    if not free_root or np.any(model.gravity != 0.0):
        return ()
    if problem.tau_nc is None and problem.tau_cons is None:
        return ("momentum",)
    return ()


def _model(system):
    """The Model whose structure the variants use: the system's declared ``tree_model``
    (a capability, see :mod:`kanedyn.sim.system`), or None."""
    return getattr(system, "tree_model", None)


def lie_applicable(problem) -> str | None:
    """None when the Lie–Cayley free-body scheme applies, else the reason it does not."""
    model = _model(problem.system)
    if model is None:
        return "the system is not a Model (no body inertia to work with)"
    if len(model.bodies) != 1 or model.bodies[0].joint.kind != "free":
        return "the model is not a single body on a free joint"
    b = model.bodies[0]
    if not np.allclose(b.X_tree, np.eye(6), rtol=0.0, atol=1e-15):
        return "the free joint's frame is not the world frame"
    if problem.tau_nc is not None or problem.tau_cons is not None:
        return "force elements act on the body"
    if b.mass <= 0.0:
        return "the body has no mass"
    return None


def floating_applicable(problem) -> str | None:
    """None when the floating-base Lie–Gonzalez scheme applies, else the reason."""
    model = _model(problem.system)
    if model is None:
        return "the system is not a Model"
    b0 = model.bodies[0]
    if b0.joint.kind != "free" or any(b.parent < 0 for b in model.bodies[1:]):
        return "the model has no single free root"
    if len(model.bodies) < 2:
        return "the model has one body (the 'lie' variant applies)"
    if any(b.joint.kind not in ("revolute", "prismatic", "helical") for b in model.bodies[1:]):
        return "joints other than the root are not all revolute, prismatic or helical"
    if not np.allclose(b0.X_tree, np.eye(6), rtol=0.0, atol=1e-15):
        return "the free joint's frame is not the world frame"
    if np.any(np.asarray(model.gravity) != 0.0):
        return "gravity acts (the energy then depends on the base pose)"
    return None


def _gonzalez_correction(g, d, w, dH: float, H0: float):
    """Gonzalez's discrete gradient ``g + [ΔH − g·Δz]/(w·Δz) w`` from the midpoint gradient
    g, the increment d = Δz and the correction direction w (module doc). The bracket is
    O(|w|³) and carries the roundoff of ΔH, ≈ eps |H|: below the |w| at which that noise,
    divided by |w|, would exceed the term itself, the correction is dropped."""
    den = float(w @ d)
    floor = 1e3 * _EPS * (abs(H0) + 1.0) / (float(np.sqrt(g @ g)) + 1e-300)
    if den > floor * floor:
        return g + (dH - float(g @ d)) / den * w
    return g


def auto_cyclic(problem) -> tuple[int, ...]:
    """Indices (in q) of root joints that leave E = T + V invariant (see module doc)."""
    model = _model(problem.system)
    if model is None or problem.tau_cons is not None:
        return ()
    g = np.asarray(model.gravity, float)
    gn = float(np.linalg.norm(g))
    out = []
    for b in model.bodies:
        jt = b.joint
        if b.parent >= 0 or jt.kind not in ("revolute", "prismatic", "helical"):
            continue
        if gn == 0.0:
            out.append(b.iq.start)
            continue
        a = b.placement.rotation @ np.asarray(jt.axis, float)  # the axis in world axes
        along = abs(float(a @ g)) / gn
        if jt.kind == "revolute" and abs(along - 1.0) <= 1e-12:
            out.append(b.iq.start)
        elif jt.kind == "prismatic" and along <= 1e-12:
            out.append(b.iq.start)
    return tuple(out)


class EnergyMomentum(FixedStepMethod):
    """Energy–momentum scheme (module doc): Lie–Cayley for a free body, adjoint Cayley +
    Gonzalez for a floating chain without gravity, Gonzalez's discrete gradient for
    additive chains, midpoint + projection otherwise; order 2."""

    name = "energy_momentum"
    order = 2
    options = {"momentum": "auto", "tol": 1e-12, "maxiter": 30, "variant": "auto",
               "cyclic": "auto", "compiled": True}

    def __init__(self, problem, **options):
        super().__init__(problem, **options)
        variant = self.opts["variant"]
        if variant not in VARIANTS:
            raise SolverError(f"energy_momentum: variant must be one of {VARIANTS}, "
                              f"got {variant!r}")
        lie_reason = lie_applicable(problem)
        floating_reason = floating_applicable(problem)
        additive = chart_is_additive(self.system)
        if variant == "auto":
            variant = ("lie" if lie_reason is None else "floating" if floating_reason is None
                       else "gonzalez" if additive else "projection")
        if variant == "floating" and floating_reason is not None:
            raise SolverError("energy_momentum: variant 'floating' needs a free root with "
                              "revolute/prismatic/helical joints below it and no gravity; "
                              f"here {floating_reason}")
        if variant == "lie" and lie_reason is not None:
            raise SolverError(f"energy_momentum: variant 'lie' needs a single torque-free "
                              f"body on a free joint; here {lie_reason}")
        if variant == "gonzalez" and not additive:
            raise SolverError("energy_momentum: variant 'gonzalez' works in canonical "
                              "coordinates (q, p) and needs joints whose configuration adds "
                              "(revolute, prismatic, helical); use variant='projection'")
        if self.opts["momentum"] != "auto" and variant != "projection":
            raise SolverError("energy_momentum: momentum= chooses the invariants of the "
                              f"projection variant; the {variant!r} variant keeps its "
                              "momenta by construction (pass variant='projection')")
        self.variant = variant
        if variant == "projection":
            mom = self.opts["momentum"]
            if mom == "auto":
                mom = _auto_invariants(problem)
            elif isinstance(mom, str):
                mom = (mom,)
            self.invariants = ("energy", *tuple(mom))
            base = _TangentMidpoint(problem, tol=self.opts["tol"], maxiter=self.opts["maxiter"])
            self.inner = Projected(base, self.invariants)
        elif variant == "lie":
            self._setup_lie()
        elif variant == "floating":
            self._last = None
        else:
            self._setup_gonzalez()

    def compiled_run(self, project):
        """The whole run of the ``"gonzalez"`` variant by the compiled loop of
        :mod:`.discrete_gradient_compiled` (a plain Model whose force elements have compiled
        rows, :mod:`kanedyn.forces.kernel`; same steps to Newton's tolerance); of the
        ``"lie"`` variant by :mod:`.lie_cayley_compiled`; of the ``"projection"`` variant
        by the tangent midpoint + projection loop of :mod:`.gauss_compiled` (every joint
        kind it takes, additive ones alone included:
        :func:`.gauss_compiled.tangent_applicable` with ``additive``) or, on a compiled
        Kane system, :func:`.kane_compiled.run_gauss_chart` (:meth:`_compiled_projection`;
        the same algorithm, the same steps to Newton's tolerance); or None: then these
        Python steps."""
        from . import discrete_gradient_compiled as dgc
        from . import kane_compiled, rk4_compiled

        if not self.opts["compiled"] or project is not None:
            return None
        if self.variant == "projection":
            return self._compiled_projection()
        if self.variant == "lie":
            if self.problem.progress is not None:
                return None
            from . import lie_cayley_compiled

            return rk4_compiled.compiled_or_none(self.name, lie_cayley_compiled.run, self,
                                                 self.problem)
        if self.variant == "floating":
            from . import floating_cayley_compiled

            return rk4_compiled.compiled_or_none(self.name, floating_cayley_compiled.run,
                                                 self, self.problem)
        if self.variant == "gonzalez" and kane_compiled.applicable(self.problem):
            # a compiled Kane system: its generated functions in kane_compiled's loop
            return rk4_compiled.compiled_or_none(self.name, kane_compiled.run_gonzalez,
                                                 self.problem, self.mask, NEWTON_TOL,
                                                 self.opts["maxiter"])
        if (self.variant != "gonzalez"
                or not rk4_compiled.applicable(self.problem, forces=True)):
            return None
        run = functools.partial(dgc.run, cyclic=self.cyclic, carry_p=False)
        return rk4_compiled.compiled_or_none(self.name, run, self.problem, self.name,
                                             dgc.GONZALEZ, NEWTON_TOL, self.opts["maxiter"])

    def _compiled_projection(self):
        """The ``"projection"`` variant on a Model with ball, free or planar joints, or
        with additive joints alone (the Python variant's midpoint is in the tangent form
        there too, ``_TangentMidpoint``, and so is the loop's: ``tangent_applicable`` with
        ``additive``):
        ``_gauss_loop``'s tangent midpoint (z = (ξ, v), q = q₀ ⊕ ξ, the stage equation of
        :class:`_TangentMidpoint`, solved to the same ``tol``) followed by the projection
        onto E₀ + W_nc (``project_energy_standard``) or, with momentum rows (a free root
        without gravity or forces: ``momentum="auto"``), onto the energy and [L; P]
        (``project_standard``) — :class:`.projection.Projected`'s iteration, the Python
        variant's step; on a compiled Kane system with quaternions or with additive
        coordinates (the generated chart q₀ + ξ, J = 1: ``chart_applicable`` with
        ``additive``) onto the energy alone, that midpoint and projection in the chart loop
        of :mod:`.kane_compiled` (:func:`.kane_compiled.run_gauss_chart`)."""
        from . import gauss_compiled, kane_compiled, rk4_compiled
        from .gauss import REFRESH_AFTER

        if self.invariants == ("energy",) and kane_compiled.chart_applicable(self.problem,
                                                                             additive=True):
            # a compiled Kane system (quaternions, or additive coordinates: the chart
            # q0 + ξ, J = 1): the tangent midpoint and the energy projection in
            # kane_compiled's chart loop, by its generated functions
            m = self.inner.base
            return rk4_compiled.compiled_or_none(
                self.name, kane_compiled.run_gauss_chart, self.problem, self.name, m.A, m.b,
                m.d, m.c, m.opts["tol"], m.opts["maxiter"], True)
        if (gauss_compiled.momentum_rows(self.invariants) is None
                or not gauss_compiled.tangent_applicable(self.problem, planar=True,
                                                         additive=True)):
            return None
        return rk4_compiled.compiled_or_none(
            self.name, gauss_compiled.run, self.problem, 1, self.opts["tol"],
            self.opts["maxiter"], REFRESH_AFTER, "midpoint", True,
            gauss_compiled.PREDICTOR_STEPS, True, self.name, self.invariants)

    def step(self, t, q, v, h):
        if self.variant == "lie":
            return self._lie_step(q, v, h)
        if self.variant == "floating":
            return self._floating_step(t, q, v, h)
        if self.variant == "gonzalez":
            return self._gonzalez_step(t, q, v, h)
        out = self.inner.step(t, q, v, h)
        self.newton_iterations = self.inner.newton_iterations
        return out

    # ------------------------------------------------------------------------- lie
    def _setup_lie(self) -> None:
        b = _model(self.system).bodies[0]
        self.m, self.c, self.Ic = inertia_parameters(b.inertia)
        self.Ic_inv = np.linalg.inv(self.Ic)
        self.g = np.asarray(_model(self.system).gravity, float)

    def _lie_step(self, q, v, h):
        m, c, Ic, Ici = self.m, self.c, self.Ic, self.Ic_inv
        R = quat_to_matrix(q[3:7])
        w, vo = v[:3], v[3:]
        xc = q[:3] + R @ c
        P = m * (R @ (vo + np.cross(w, c)))  # world linear momentum
        pi = Ic @ w                           # body angular momentum about the centre of mass
        # π' − π + h ω̄ × π̄ = 0 by Newton (3 unknowns, exact Jacobian); predictor: π' = π
        pn = pi.copy()
        scale = float(np.abs(pi).max())
        it, done = 0, scale == 0.0
        while not done:
            it += 1
            pb = 0.5 * (pi + pn)
            wb = Ici @ pb
            r = pn - pi + h * np.cross(wb, pb)
            # ∂r/∂π' = 1 + h/2 (ω̄× − π̄× I_c⁻¹)
            Jm = np.eye(3) + 0.5 * h * (skew(wb) - skew(pb) @ Ici)
            d = np.linalg.solve(Jm, r)
            pn -= d
            size = float(np.abs(d).max())
            if size <= 2 * _EPS * scale or (size <= 1e-13 * scale and it >= 3):
                done = True
            elif it >= self.opts["maxiter"] or not np.isfinite(size):
                raise NewtonFailure(float(np.abs(r).max()), it,
                                    "the discrete Euler equation π' − π + h ω̄ × π̄ = 0 did "
                                    "not converge (the rotation per step is too large)")
        self.newton_iterations += it
        wb = Ici @ (0.5 * (pi + pn))
        a = 0.5 * h * wb                       # the quaternion of cay(h ω̄) is ∝ (1, h ω̄/2)
        dq = np.concatenate([[1.0], a]) / np.sqrt(1.0 + a @ a)
        quat = quat_multiply(q[3:7], dq)
        quat /= np.linalg.norm(quat)           # at roundoff already; keeps it there
        Pn = P + (h * m) * self.g
        xcn = xc + (0.5 * h / m) * (P + Pn)
        Rn = quat_to_matrix(quat)
        wn = Ici @ pn
        q1 = np.concatenate([xcn - Rn @ c, quat])
        v1 = np.concatenate([wn, Rn.T @ Pn / m - np.cross(wn, c)])
        return q1, v1, 0.0

    # -------------------------------------------------------------------- gonzalez
    def _setup_gonzalez(self) -> None:
        n = self.system.nv
        cyc = self.opts["cyclic"]
        if isinstance(cyc, str) and cyc == "auto":
            idx = auto_cyclic(self.problem)
        else:
            names = (cyc,) if isinstance(cyc, str) else tuple(cyc)
            joints = list(getattr(self.system, "joint_names", ()))
            idx = []
            for nm in names:
                if isinstance(nm, (int, np.integer)) and 0 <= int(nm) < n:
                    idx.append(int(nm))
                elif nm in joints:
                    model = _model(self.system)
                    k = joints.index(nm)
                    idx.append(model.bodies[k].iq.start if model is not None else k)
                else:
                    raise SolverError(f"energy_momentum: cyclic coordinate {nm!r} is not a "
                                      f"joint name ({joints}) or an index below {n}")
        self.cyclic = tuple(sorted(set(idx)))
        self.mask = np.ones(n)
        self.mask[list(self.cyclic)] = 0.0
        self._last = None

    def _H(self, q, p):
        v = solve_spd(self.system.mass_matrix(q), p)
        return self.problem.energy(q, v)

    def discrete_gradient(self, q0, p0, H0, dq, dp):
        """Gonzalez's midpoint discrete gradient with the cyclic directions left out of w."""
        P = self.problem
        gq, gp, _ = P.hamiltonian_gradient(q0 + 0.5 * dq, p0 + 0.5 * dp)
        dH = self._H(q0 + dq, p0 + dp) - H0
        g = _gonzalez_correction(np.concatenate([gq, gp]), np.concatenate([dq, dp]),
                                 np.concatenate([dq * self.mask, dp]), dH, H0)
        n = dq.size
        return g[:n], g[n:]

    def _gonzalez_step(self, t, q, v, h):
        P, s, n = self.problem, self.system, self.system.nv
        M0 = s.mass_matrix(q)
        p0 = M0 @ v
        H0 = self._H(q, p0)

        def residual(d):
            dq, dp = d[:n], d[n:]
            gq, gp = self.discrete_gradient(q, p0, H0, dq, dp)
            rp = dp + h * gq
            if P.has_nc:
                rp -= h * P.tau_nc(t + 0.5 * h, q + 0.5 * dq, gp)
            return np.concatenate([dq - h * gp, rp])

        Jm = np.eye(2 * n)
        Jm[:n, n:] = -0.5 * h * np.linalg.inv(M0)
        last = self._last
        d0 = last[1] if last is not None and last[0] == h else np.concatenate([h * v, np.zeros(n)])
        d, it = newton(residual, d0, Jm, tol=NEWTON_TOL, maxiter=self.opts["maxiter"])
        self._last = (h, d)
        self.newton_iterations += it
        dq, dp = d[:n], d[n:]
        q1, p1 = q + dq, p0 + dp
        v1 = solve_spd(s.mass_matrix(q1), p1)
        dw = 0.0
        if P.has_nc:
            vbar = dq / h
            dw = h * float(vbar @ P.tau_nc(t + 0.5 * h, q + 0.5 * dq, vbar))
        return q1, v1, dw

    # -------------------------------------------------------------------- floating
    def _floating_step(self, t, q, v, h):
        """Free root moved by the adjoint Cayley map, Gonzalez's discrete gradient in
        y = (μ, θ, p_θ) (module doc, variant 'floating')."""
        P, s = self.problem, self.system
        nv = s.nv
        n = nv - 6
        M0 = s.mass_matrix(q)
        z0 = M0 @ v                      # (μ, p_θ): μ the momentum conjugate to the base twist
        mu0, p0 = z0[:6], z0[6:]
        th0 = q[7:]
        base = q[:7]

        def qof(th):
            return np.concatenate([base, th])

        def H(th, z):
            qq = qof(th)
            return P.energy(qq, solve_spd(s.mass_matrix(qq), z))

        H0 = H(th0, z0)

        def dg(d):
            """Gonzalez's discrete gradient (ν̄, ∇̄_θH, ∇̄_pH) of H(μ, θ, p_θ) over d."""
            dmu, dth, dp = d[:6], d[6:6 + n], d[6 + n:]
            zbar = z0 + 0.5 * np.concatenate([dmu, dp])
            dHq, _, vbar = P.hamiltonian_gradient(qof(th0 + 0.5 * dth), zbar)
            g = np.concatenate([vbar[:6], dHq[6:], vbar[6:]])
            dH = H(th0 + dth, z0 + np.concatenate([dmu, dp])) - H0
            return _gonzalez_correction(g, d, d, dH, H0)

        def forcing(d, g):
            vb = np.concatenate([g[:6], g[6 + n:]])
            tau = P.tau_nc(t + 0.5 * h, qof(th0 + 0.5 * d[6:6 + n]), vb)
            return tau, vb

        def residual(d):
            dmu, dth, dp = d[:6], d[6:6 + n], d[6 + n:]
            g = dg(d)
            nu = g[:6]
            r_mu = dmu - h * crm(nu).T @ (mu0 + 0.5 * dmu)
            r_th = dth - h * g[6 + n:]
            r_p = dp + h * g[6:6 + n]
            if P.has_nc:
                tau, _ = forcing(d, g)
                r_mu -= h * tau[:6]
                r_p -= h * tau[6:]
            return np.concatenate([r_mu, r_th, r_p])

        Minv = np.linalg.inv(M0)
        Jm = np.eye(6 + 2 * n)
        Jm[6:6 + n, :6] = -0.5 * h * Minv[6:, :6]
        Jm[6:6 + n, 6 + n:] = -0.5 * h * Minv[6:, 6:]
        last = self._last
        same_h = last is not None and last[0] == h
        d0 = last[1] if same_h else np.concatenate([np.zeros(6), h * v[6:], np.zeros(n)])
        if not same_h:
            self._reuse = {}
        # the difference Jacobian newton builds when this matrix contracts slowly is kept
        # for the next steps (of the same h): it would be built again nearly every step
        # (21.7 residuals a step on bench/dg_newton.py's floating arm; kept, 9.6)
        d, it = newton(residual, d0, Jm, tol=1e-15, maxiter=self.opts["maxiter"],
                       reuse=self._reuse)
        self._last = (h, d)
        self.newton_iterations += it
        g = dg(d)
        nu = g[:6]
        # the base moves by f with Ad_f = cay(h ad_ν̄) (an SE(3) element: block lower
        # triangular, diagonal blocks cay(h ω̄)); then μ' = Ad_fᵀ μ keeps the world momentum
        A = h * crm(nu)
        C = np.linalg.solve(np.eye(6) - 0.5 * A, np.eye(6) + 0.5 * A)
        Rc = C[:3, :3]
        B = C[3:, :3] @ Rc.T            # p_f× (the position of the new base frame in the old)
        pf = np.array([B[2, 1], B[0, 2], B[1, 0]])
        a = 0.5 * h * nu[:3]            # the quaternion of cay(h ω̄) ∝ (1, h ω̄/2)
        dquat = np.concatenate([[1.0], a]) / np.sqrt(1.0 + a @ a)
        quat = quat_multiply(q[3:7], dquat)
        quat /= np.linalg.norm(quat)
        R = quat_to_matrix(q[3:7])
        q1 = np.concatenate([q[:3] + R @ pf, quat, th0 + d[6:6 + n]])
        if P.has_nc:
            mu1 = mu0 + d[:6]
        else:
            mu1 = C.T @ mu0             # = μ + Δμ to Newton's tolerance, exactly Ad_fᵀ μ
        z1 = np.concatenate([mu1, p0 + d[6 + n:]])
        v1 = solve_spd(s.mass_matrix(q1), z1)
        dw = 0.0
        if P.has_nc:
            tau, vb = forcing(d, g)
            dw = h * float(vb @ tau)
        return q1, v1, dw
