"""A Model wrapped in the system protocol of DESIGN.md, plus the gradients integrators need.

The protocol (what every integrator relies on):
``nq, nv, mass_matrix(q), nonlinear_effects(q, v), forward_dynamics(q, v, tau),
energy(q, v), q_dot(q, v), integrate_configuration(q, v, dt)``.

Optional members an integrator uses when a system offers them (with a
documented fallback otherwise):

- ``kinetic_energy_gradient(q, v)``: ∂T/∂q at fixed v, in the tangent space
  (the derivative along ``q ⊕ εe_k`` = ``integrate_configuration(q, e_k, ε)``).
  Fallback: central differences of ``energy(q ⊕ εe_k, v) - energy(q ⊕ εe_k, 0)``.
- ``gravity_torques(q)`` = ∂V/∂q in the tangent space. Fallback:
  ``nonlinear_effects(q, 0)``.
- ``chart_jacobian(q0, xi)``: the matrix J(ξ) with ``v = J(ξ) ξ̇`` along
  ``q(t) = integrate_configuration(q0, ξ(t), 1)``. Fallback: the identity when
  ``nq == nv`` (the chart is then assumed additive, ``q0 + ξ``).
- ``momentum(q, v)``: spatial momentum ``[L; P]`` in world coordinates.
- ``chart_is_additive``: True when ``q0 ⊕ ξ = q0 + ξ`` and ``v = q̇`` (no quaternions, no
  planar joints, speeds that are the coordinate rates); the Hamiltonian methods then work
  in canonical coordinates (q, p). Fallback: ``nq == nv``, so a system whose speeds are
  not the rates must say False.
- ``acceleration_jacobians(q, v, tau, dtau_dq, dtau_dv)``: ∂v̇/∂(q, v) of
  ``v̇ = forward_dynamics(q, v, τ(q, v))``, q in the tangent space;
  ``canonical_jacobians(q, v)``: (∂(M v)/∂q, ∂²L/∂q² at fixed v); ``chart_rate_jacobian(v)``:
  ∂(J(ξ)⁻¹ v)/∂ξ at ξ = 0. The implicit midpoint and Gauss methods build their Newton
  matrix from these. Fallback: forward differences of the stage residual.

Capabilities a system declares as attributes (the integrators read these, never a
class name or the insides of a Model; absent means False / None):

- ``handles_constraints``: the system carries constraints (a constrained system of
  :mod:`kanedyn.constraints`): the DAE solvers take its constraint primitives, and the
  methods that step the unconstrained Hamiltonian refuse it.
- ``has_chart``: the system's joints have the per-joint charts of
  :mod:`kanedyn.integrators.chart`; ``chart_joints`` then lists ``(kind, iq, iv)`` for
  each joint (kind as :attr:`kanedyn.model.joints.Joint.kind`, iq and iv its slices of
  q and v), in tree order, and ``chart_types`` maps each kind to the object holding its
  chart (``chart_is_additive``, ``chart_point``, ``chart_jacobian``, ``chart_derivative``,
  ``chart_end_velocity``, ``chart_start_sensitivity``: the joint class).
- ``compiled_step``: the Model whose flat layout the compiled RK4 and discrete-gradient
  loops (:func:`kanedyn.sim.batch.rk4_run`,
  :mod:`kanedyn.integrators.discrete_gradient_compiled`) step, when they can take this system
  (additive coordinates, no rotor inertia); None when they cannot.
- ``compiled_manifold_step``: the Model whose flat layout the compiled RK4 loop on the
  configuration manifold (:func:`kanedyn.sim.rk4_manifold.rk4_manifold_run`: ball, free
  and planar joints, joint types with a compiled ``integrate``, armature) steps, for
  ``kd.simulate(..., method="rk4")`` where ``compiled_step`` is None; None when it cannot.
- ``tree_model``: the Model whose equations these are, with nothing added, for the
  methods that use its structure (bodies, inertias, gravity: the energy–momentum
  variants); None for any other system.
- ``nonholonomic``: fewer independent speeds than coordinates minus quaternion norms.
- ``eliminated_constraints``: the system's velocity constraints (and configuration
  constraints g(q) = 0) are eliminated in its equations (a compiled Kane system with
  ``u_dependent`` or ``q_dependent``); it then offers ``dependent_speeds(q, u)``,
  ``constraint_residuals(q, u)``, ``configuration_jacobian(q)``,
  ``consistent_configuration(q)``, ``q_dependent``, ``speed_names``,
  ``dependent_speed_names`` and ``coordinate_names``, and ``kd.simulate`` integrates it by
  :mod:`kanedyn.integrators.eliminated` (y = (q, u) stepped directly, q_dep projected).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import cho_factor, cho_solve

from .. import dynamics as dyn
from ..dynamics._dispatch import fail, singular_error
from ..dynamics.derivatives import kinetic_tangent_compiled, rnea_tangent_compiled
from ..dynamics.energy_kernel import energy_terms
from ..dynamics.flat import flatten
from ..model import Model
from ..model import configuration as cfg
from ..model.model import singular_joints
from ..spatial import crf, crm
from .configuration_kernel import integrate_into


def _c(x) -> NDArray:
    return np.ascontiguousarray(x, dtype=float)


def _additive(joint) -> bool:
    return joint.chart_is_additive


class ModelSystem:
    """A :class:`~kanedyn.Model` seen as a dynamical system (the protocol of DESIGN.md).

    Every method takes one state (1-D arrays) and calls the public batched
    functions of :mod:`kanedyn` (``kd.aba``, ``kd.crba``, ...), so it uses the fast
    kernels when they are present. The Model itself is not changed.
    """

    def __init__(self, model: Model):
        bad = singular_joints(model)
        if bad:  # forward dynamics needs M⁻¹: say which joint, before any step
            raise singular_error(model, bad[0], f"simulating {model.name!r}")
        self.model = model
        self.nq = model.nq
        self.nv = model.nv
        self.joint_names = model.joint_names
        self.chart_is_additive = all(_additive(b.joint) for b in model.bodies)
        # the capabilities of the module doc
        self.nonholonomic = False  # a tree: nq − #quaternions = nv
        self.has_chart = True
        self.chart_joints = tuple((b.joint.kind, b.iq, b.iv) for b in model.bodies)
        # kind → joint type: the chart maths of each joint lives in its own module
        self.chart_types = {b.joint.kind: type(b.joint) for b in model.bodies}
        self.tree_model = model
        # the compiled loops' energy is the bodies' alone (no ½ Σ armature v²)
        self.compiled_step = (model if self.chart_is_additive and not model.armature.any()
                              else None)
        # every tree: the compiled RK4 loop on the manifold (ball, free, planar, armature)
        self.compiled_manifold_step = model
        self._curved = [b for b in model.bodies if not _additive(b.joint)]
        self._zero_v = np.zeros(model.nv)
        # the Model's one flat array (cached per Model by flatten, shared with kd.aba etc.)
        self._data = flatten(model).data
        self._dT = np.zeros(model.nv)
        self._dV = np.zeros(model.nv)
        self._out = np.zeros(8)

    def __repr__(self) -> str:
        return f"ModelSystem({self.model.name!r}, nq={self.nq}, nv={self.nv})"

    # --- the protocol -----------------------------------------------------
    # Inputs are made contiguous float64 (integrators pass slices of state
    # vectors) so that the public functions take their fast path without copies.
    def mass_matrix(self, q: NDArray) -> NDArray:
        return dyn.crba(self.model, _c(q))

    def nonlinear_effects(self, q: NDArray, v: NDArray) -> NDArray:
        return dyn.nonlinear_effects(self.model, _c(q), _c(v))

    def forward_dynamics(self, q: NDArray, v: NDArray, tau: NDArray,
                         f_ext: NDArray | None = None) -> NDArray:
        """v̇ = ABA(q, v, τ, f_ext)."""
        return dyn.aba(self.model, _c(q), _c(v), _c(tau), f_ext)

    def _pass(self, q: NDArray, v: NDArray) -> tuple[float, float, NDArray, NDArray, NDArray]:
        """(T, V, ∂T/∂q, [L; P], ∂V/∂q) by one pass of the energy kernel."""
        q, v = _c(q), _c(v)
        s = energy_terms(self._data, q, v, self._dT, self._dV, self._out)
        if s:
            fail(self.model, s, "energy", q, ((v, "v"),))
        return self._out[0], self._out[1], self._dT, self._out[2:], self._dV

    # T, V and [L; P] come from the energy kernel; they equal kd.kinetic_energy,
    # kd.potential_energy and kd.spatial_momentum (tested), at a fraction of the cost.
    def kinetic_energy(self, q: NDArray, v: NDArray) -> float:
        return float(self._pass(q, v)[0])

    def potential_energy(self, q: NDArray) -> float:
        return float(self._pass(q, self._zero_v)[1])

    def energy(self, q: NDArray, v: NDArray) -> float:
        """E = T + V (gravity); potentials of springs are added by the simulation."""
        T, V = self._pass(q, v)[:2]
        return float(T + V)

    def momentum(self, q: NDArray, v: NDArray) -> NDArray:
        """Spatial momentum [L; P] in world coordinates, L about the world origin."""
        return self._pass(q, v)[3].copy()

    def q_dot(self, q: NDArray, v: NDArray) -> NDArray:
        return cfg.q_dot(self.model, _c(q), _c(v))

    def integrate_configuration(self, q: NDArray, v: NDArray, dt: float) -> NDArray:
        """q ⊕ dt v, by the compiled joint maps of :mod:`.configuration_kernel` (equal to
        :func:`kanedyn.integrate_configuration`, tested), quaternions renormalised."""
        out = np.empty(self.nq)
        integrate_into(self._data, _c(q), _c(v), float(dt), out)
        return out

    def neutral(self) -> NDArray:
        return cfg.neutral(self.model)

    # --- gradients ------------------------------------------------------------
    def gravity_torques(self, q: NDArray) -> NDArray:
        """g(q) = ∂V/∂q in the tangent space (V̇ = gᵀ v); from the energy kernel, equal to
        ``kd.gravity_torques`` (tested)."""
        return self._pass(q, self._zero_v)[4].copy()

    def kinetic_energy_gradient(self, q: NDArray, v: NDArray) -> NDArray:
        """∂T/∂q at fixed speeds v in the tangent space (see
        :func:`kinetic_energy_gradient_reference` for the derivation; computed by the
        O(n) kernel of :mod:`kanedyn.dynamics.energy_kernel`)."""
        return self._pass(q, v)[2].copy()

    def energy_gradient(self, q: NDArray, v: NDArray) -> tuple[NDArray, NDArray]:
        """(∂E/∂q at fixed v in the tangent space, ∂E/∂v = M v)."""
        _, _, dT, _, dV = self._pass(q, v)
        return dT + dV, self.mass_matrix(q) @ v

    def hamiltonian_terms(self, q: NDArray, v: NDArray) -> tuple[NDArray, NDArray]:
        """(∂T/∂q at fixed v, g(q)) from one kernel pass (what ∂H/∂q needs)."""
        _, _, dT, _, dV = self._pass(q, v)
        return dT.copy(), dV.copy()

    # --- derivatives of the dynamics (for Newton matrices) ---------------------
    def acceleration_jacobians(self, q: NDArray, v: NDArray, tau: NDArray,
                               dtau_dq: NDArray | None = None,
                               dtau_dv: NDArray | None = None) -> tuple[NDArray, NDArray]:
        """``(A_q, A_v) = ∂v̇/∂(q, v)`` of ``v̇ = ABA(q, v, τ(q, v))``, q in the tangent space.

        Differentiating ``RNEA(q, v, v̇(q, v)) = τ(q, v)`` gives
        ``∂RNEA/∂(q, v) + M A_{q,v} = ∂τ/∂(q, v)``, so
        ``A_{q,v} = M⁻¹ (∂τ/∂(q, v) − ∂RNEA/∂(q, v))`` with the RNEA derivatives at
        a = v̇ (:func:`kanedyn.rnea_derivatives`, its compiled pass called directly);
        ``dtau_dq``, ``dtau_dv`` are the force elements' Jacobians
        (None: τ held fixed).
        """
        q, v = _c(q), _c(v)
        a = _c(self.forward_dynamics(q, v, tau))
        dq, dv = rnea_tangent_compiled(self.model, q, v, a)
        if dtau_dq is not None:
            dq = dq - dtau_dq
        if dtau_dv is not None:
            dv = dv - dtau_dv
        c = cho_factor(self.mass_matrix(q))
        return -cho_solve(c, dq), -cho_solve(c, dv)

    def canonical_jacobians(self, q: NDArray, v: NDArray) -> tuple[NDArray, NDArray]:
        """``(B, L_qq)``: ``B = ∂(M(q) v)/∂q`` at fixed v and ``L_qq = ∂/∂q (∂T/∂q − g)`` at
        fixed v, q in the tangent space — what the Jacobian of Hamilton's equations in
        (q, p) needs: with ``v = M⁻¹p``, ``∂v/∂q|_p = −M⁻¹B``, and ``ṗ = ∂L/∂q + τ`` has
        ``∂ṗ/∂v|_q = Bᵀ`` (as ∂T/∂q_k = ½ vᵀ ∂_k M v).

        B is the q-derivative of RNEA(q, 0, v) without gravity (= M(q) v), ∂g/∂q that of
        RNEA(q, 0, 0), ∂²T/∂q² from :func:`kanedyn.dynamics.kinetic_energy_gradient_derivative`.
        """
        q, v = _c(q), _c(v)
        B = rnea_tangent_compiled(self.model, q, self._zero_v, v, gravity=False)[0]
        G = rnea_tangent_compiled(self.model, q, self._zero_v, self._zero_v)[0]
        return B, kinetic_tangent_compiled(self.model, q, v) - G

    def chart_rate_jacobian(self, v: NDArray) -> NDArray:
        """``∂(J(ξ)⁻¹ v)/∂ξ`` at ξ = 0: ``J_r(ξ)⁻¹ = 1 + ½ ad_ξ + O(ξ²)`` and
        ``ad_ξ v = −crm(v) ξ``, so the block of a group joint is ``−½ Sᵀ crm(S v_j) S``
        (zero for 1-dof joints). Away from ξ = 0 the error is O(|ξ||v|), which in a Newton
        matrix ``1 − h A ∂f/∂z`` with ξ = O(h v) costs a contraction of O(h²|v|²) only."""
        K = np.zeros((self.nv, self.nv))
        for b in self._curved:
            S = b.joint.motion_subspace()
            K[b.iv, b.iv] = -0.5 * S.T @ crm(S @ v[b.iv]) @ S
        return K

    def chart_jacobian(self, q0: NDArray, xi: NDArray) -> NDArray:
        """J(ξ) with ``v = J(ξ) ξ̇`` along ``q = q0 ⊕ ξ`` (block diagonal by joint).

        For a joint whose configuration is a group element moved on the right
        by ``exp(ξ)`` (SO(3), SE(3), SE(2)), J is the right Jacobian of the
        exponential, ``J_r(ξ) = ∫₀¹ Ad_{exp(−sξ)} ds`` (Hairer–Lubich–Wanner
        2006, III.4; Barfoot 2017, 7.1.5), with ``Ad_{exp(−sξ)}`` the Plücker
        transform from the child frame at ξ = 0 to the child frame at sξ. It is
        evaluated by 8-point Gauss–Legendre quadrature. 1-dof joints have J = 1.
        """
        J = np.eye(self.nv)
        q0 = np.asarray(q0, float)
        xi = np.asarray(xi, float)
        for b in self._curved:
            # closed forms (SO(3), SE(3)) or the quadrature: the joint's own method
            J[b.iv, b.iv] = b.joint.exponential_right_jacobian(q0[b.iq], xi[b.iv])
        return J


def kinetic_energy_gradient_reference(model: Model, q: NDArray, v: NDArray) -> NDArray:
    """∂T/∂q at fixed speeds v, in the tangent space of each joint.

    Perturbing joint k by ``q_k ⊕ ε e`` turns the world-frame velocity of
    every body i in the subtree of k by ``σ = S_k e``:
    ``δV_i = ε σ × (V_i − V_λ(k))``, while its inertia turns as
    ``δI_i = ε (σ×* I_i − I_i σ×)``. Summing ``h_iᵀ δV_i + ½ V_iᵀ δI_i V_i``
    over the subtree, the terms in V_i cancel and what is left is

        ∂T/∂ξ_k = S_kᵀ crm(V_λ)ᵀ H_k = −S_kᵀ crf(V_λ) H_k,

    with ``V_λ`` the velocity of k's parent and ``H_k`` the momentum of k's
    subtree, both in body k coordinates (derived here; it is the term
    ``vᵀ ∂M/∂q v / 2`` of Lagrange's equations for 1-dof joints, and includes
    the gyroscopic ``ad*`` term of Boltzmann–Hamel for ball and free joints).
    O(n): one forward and one backward pass.
    """
    q = np.asarray(q, dtype=float)
    v = np.asarray(v, dtype=float)
    nb = model.nb
    X_up = [None] * nb
    V = np.empty((nb, 6))
    Vp = np.zeros((nb, 6))
    for b in model.bodies:
        i, p = b.index, b.parent
        X_up[i] = b.joint.transform(q[b.iq]) @ b.X_tree
        vJ = b.joint.motion_subspace() @ v[b.iv]
        if p >= 0:
            Vp[i] = X_up[i] @ V[p]
        V[i] = Vp[i] + vJ
    H = np.array([b.inertia @ V[b.index] for b in model.bodies])
    dT = np.zeros(model.nv)
    for b in reversed(model.bodies):
        i, p = b.index, b.parent
        dT[b.iv] = -b.joint.motion_subspace().T @ (crf(Vp[i]) @ H[i])
        if p >= 0:
            H[p] += X_up[i].T @ H[i]
    return dT


def as_system(system_or_model) -> object:
    """A Model is wrapped in a :class:`ModelSystem`; anything else is taken as is."""
    if isinstance(system_or_model, Model):
        return ModelSystem(system_or_model)
    return system_or_model
