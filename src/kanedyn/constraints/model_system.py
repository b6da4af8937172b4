"""A Model with loop closures and other constraints, as a constrained system."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..dynamics import crba, nonlinear_effects, potential_energy
from ..dynamics.energy_kernel import energy_terms
from ..dynamics.flat import flatten
from ..errors import ConstraintError, StateError
from ..model.configuration import integrate_configuration, q_dot
from .loops import (
    BodyKinematics,
    LoopClosure,
    UserConstraint,
    VelocityConstraint,
    _frame,
    loop_rows,
)
from .system import ConstrainedMechanics


def _on_bodies(model, lc: LoopClosure) -> LoopClosure:
    """``lc`` with each side that names a frame of ``model.frames`` that is not a body
    replaced by that frame's body (None for the world) and ``frame_a``/``frame_b``
    given in the body's coordinates: ``R_b = R_bF R``, ``p_b = p_bF + R_bF p``."""
    out = {}
    for side in ("a", "b"):
        b, fr = getattr(lc, f"body_{side}"), getattr(lc, f"frame_{side}")
        if not isinstance(b, str) or b == model.root_name or b in model.body_names:
            continue
        F = model.frame(b)  # ModelError naming the frames if there is none
        R, p = _frame(fr)
        RF, pF = F.placement.rotation, F.placement.translation
        out[f"body_{side}"] = None if F.body < 0 else F.body
        out[f"frame_{side}"] = (RF @ R, pF + RF @ p)
    return replace(lc, **out) if out else lc


class ConstrainedSystem(ConstrainedMechanics):
    """``M(q) v̇ + h(q, v) = τ − Cᵀλ`` for a tree :class:`~kanedyn.Model` cut open at its
    loops, with holonomic rows (loop closures, user g(q)) and velocity rows.

    ``tau(t, q, v)``: applied joint forces (optional); ``forces``: force elements
    (``generalized_force(t, q, v)``, see :mod:`kanedyn.forces`). M and h come from
    ``kd.crba`` and ``kd.nonlinear_effects``. The rows of the loop closures (g, G, γ) come
    from the compiled :func:`~.system_kernel.loop_rows_kernel` on the flat model; with
    ``compiled=False`` from :func:`~.loops.loop_rows` (numpy, on ``kd.jacobian`` and the
    body kinematics: the readable reference it is tested against).
    """

    def __init__(self, model, constraints: Sequence[LoopClosure | UserConstraint] = (),
                 velocity_constraints: Sequence[VelocityConstraint] = (),
                 tau: Callable | None = None, forces: Sequence = (), name: str | None = None,
                 compiled: bool = True):
        self.model = model
        self.compiled = bool(compiled)
        self.constraints = tuple(constraints)
        self.velocity_constraints = tuple(velocity_constraints)
        self.nq, self.nv = model.nq, model.nv
        for c in self.constraints:
            if not isinstance(c, (LoopClosure, UserConstraint)):
                raise ConstraintError(f"{c!r} is not a LoopClosure or UserConstraint")
            if isinstance(c, UserConstraint) and model.nq != model.nv:
                raise ConstraintError(f"user constraint {c.name!r} needs q̇ = v (nq = nv); "
                                      f"model {model.name!r} has quaternions")
        # a side named by a frame that is not a body (a merged link, a TCP, a user frame)
        # is moved onto its body, the closure frame composed with the frame's placement:
        # the loop acts at that frame, never at the origin of the body it is fixed to
        self.constraints = tuple(_on_bodies(model, c) if isinstance(c, LoopClosure) else c
                                 for c in self.constraints)
        self._bodies = []
        for c in self.constraints:
            if isinstance(c, LoopClosure):
                self._bodies.append(tuple(None if b is None or b == model.root_name
                                          else model.body_index(b)
                                          for b in (c.body_a, c.body_b)))
            else:
                self._bodies.append(None)
        self.nc = sum(c.dim for c in self.constraints)
        self.nn = sum(c.dim for c in self.velocity_constraints)
        self.constraint_names = ([n for c in self.constraints for n in c.row_names]
                                 + [n for c in self.velocity_constraints for n in c.row_names])
        self.tau = tau
        self.forces = tuple(f.bind(self) for f in forces)
        self.name = name or f"{model.name} (constrained)"
        # the capabilities the energy–momentum methods read (sim/system.py's module doc):
        # the tree's per-joint charts, and the tree's Hamiltonian terms below
        self.chart_is_additive = all(b.joint.chart_is_additive for b in model.bodies)
        self.has_chart = True
        self.chart_joints = tuple((b.joint.kind, b.iq, b.iv) for b in model.bodies)
        self.chart_types = {b.joint.kind: type(b.joint) for b in model.bodies}
        self._flat_model = None  # the flat layout, packed on first use (_energy_pass)
        self._dT, self._dV, self._out = np.zeros(self.nv), np.zeros(self.nv), np.zeros(8)

    # ---- batching helper ----------------------------------------------------------------
    @staticmethod
    def _flat(x, n):
        x = np.asarray(x, dtype=float)
        X = x.reshape(-1, n)
        if not (X.flags.writeable and X.flags.c_contiguous):
            X = np.array(X)  # the fast kernels take writable contiguous arrays only
        return X, x.shape[:-1]

    def mass_matrix(self, q):
        Q, lead = self._flat(q, self.nq)
        # one state per call: the public functions take batches, but a state at a time
        # keeps to the single-state path (the batches here are 1-30 states)
        M = np.array([crba(self.model, x) for x in Q])
        return M.reshape(lead + (self.nv, self.nv))

    def applied_forces(self, t, q, v):
        Q, lead = self._flat(q, self.nq)
        V, leadv = self._flat(v, self.nv)
        N = max(len(Q), len(V))
        Q = np.broadcast_to(Q, (N, self.nq)).copy()
        V = np.broadcast_to(V, (N, self.nv)).copy()
        lead = lead if len(lead) >= len(leadv) else leadv
        f = -np.array([nonlinear_effects(self.model, x, y) for x, y in zip(Q, V, strict=True)])
        if self.tau is not None or self.forces:
            T = np.broadcast_to(np.asarray(t, dtype=float), (N,))
            for k in range(N):
                if self.tau is not None:
                    f[k] += self.tau(T[k], Q[k], V[k])
                for el in self.forces:
                    f[k] += el.generalized_force(T[k], Q[k], V[k])
        return f.reshape(lead + (self.nv,))

    def q_dot(self, q, v):
        lead = np.broadcast_shapes(np.shape(q)[:-1], np.shape(v)[:-1])
        # copies: the fast kernels take writable contiguous float64 arrays only
        Q, _ = self._flat(np.array(np.broadcast_to(q, lead + (self.nq,)), dtype=float), self.nq)
        V, _ = self._flat(np.array(np.broadcast_to(v, lead + (self.nv,)), dtype=float), self.nv)
        return np.asarray(q_dot(self.model, Q, V)).reshape(lead + (self.nq,))

    def integrate_configuration(self, q, v, dt):
        return integrate_configuration(self.model, q, v, dt)

    def potential_energy(self, q):
        Q, lead = self._flat(q, self.nq)
        V = np.array([potential_energy(self.model, x) for x in Q]).reshape(lead)
        for el in self.forces:
            if el.conservative:
                V = V + np.array([el.potential(x) for x in Q]).reshape(lead)
        return float(V) if V.ndim == 0 else V

    # ---- the tree's Hamiltonian terms (one state) ---------------------------------------
    def _energy_pass(self, q, v):
        """(∂T/∂q, ∂V_gravity/∂q, [L; P]) by one pass of the compiled energy kernel."""
        if self._flat_model is None:
            self._flat_model = flatten(self.model).data
        q = np.ascontiguousarray(q, dtype=float)
        v = np.ascontiguousarray(v, dtype=float)
        s = energy_terms(self._flat_model, q, v, self._dT, self._dV, self._out)
        if s:
            raise StateError(f"{self.name}: the quaternion of body "
                             f"{self.model.body_names[s - 1]!r} is not unit: {q}")
        return self._dT.copy(), self._dV.copy(), self._out[2:].copy()

    def hamiltonian_terms(self, q: ArrayLike, v: ArrayLike) -> tuple[NDArray, NDArray]:
        """(∂T/∂q at fixed v, ∂V/∂q) in the tangent space, V the potential of
        :meth:`potential_energy` (gravity and the conservative force elements)."""
        dT, dV, _ = self._energy_pass(q, v)
        q = np.asarray(q, dtype=float)
        for el in self.forces:
            if el.conservative:
                dV -= el.generalized_force(0.0, q, np.zeros(self.nv))
        return dT, dV

    def momentum(self, q: ArrayLike, v: ArrayLike) -> NDArray:
        """Spatial momentum [L; P] of all bodies (world coordinates, L about the origin)."""
        return self._energy_pass(q, v)[2]

    def nonconservative_forces(self, t, q: ArrayLike, v: ArrayLike) -> NDArray:
        """The applied forces that are not in :meth:`potential_energy`: ``tau(t, q, v)``
        and the non-conservative force elements (their power is the work W_nc)."""
        f = np.zeros(self.nv)
        if self.tau is not None:
            f += np.asarray(self.tau(t, q, v), dtype=float)
        for el in self.forces:
            if not el.conservative:
                f += el.generalized_force(t, q, v)
        return f

    @property
    def has_nonconservative_forces(self) -> bool:
        return self.tau is not None or any(not el.conservative for el in self.forces)

    def compiled_form(self):
        """The compiled primitives (:mod:`.system_kernel`) when every constraint is a loop
        closure, there are no velocity constraints, no applied forces beyond the model's,
        every joint has ``q̇ = v``, and ``compiled`` is on; else None."""
        from ..model.joints.base import Joint
        from .system_kernel import KIND_MODEL, CompiledForm

        if (self.velocity_constraints or self.tau is not None or self.forces
                or not self.constraints
                or not all(isinstance(c, LoopClosure) for c in self.constraints)
                or self.model.nq != self.model.nv
                or any(type(b.joint).kinematic_map is not Joint.kinematic_map
                       for b in self.model.bodies)
                or self._loop_kernel() is None):
            return None
        data, L = self._loop_kernel()
        return CompiledForm(KIND_MODEL, L, data)

    def compiled_chart_form(self):
        """:meth:`compiled_form` for a tree that may also have ball, free and planar joints
        (q̇ = W(q) v): the form the compiled constrained energy–momentum loop takes, which
        moves those joints in their charts (``q_n ⊗ exp(x)``; a planar joint's
        ``(x_n, y_n) + R(θ_n) ρ``, ``θ_n + ψ``; compiled in :mod:`.system_kernel`); every
        other joint must be revolute, prismatic or helical (q̇ = v). radau5's compiled loop,
        which adds h v to q, takes :meth:`compiled_form` only. None where neither applies."""
        from ..model.joints.base import Joint
        from ..model.joints.free import Free
        from ..model.joints.planar import Planar
        from ..model.joints.spherical import Spherical
        from .system_kernel import KIND_MODEL, CompiledForm

        def charted(joint):
            if type(joint) in (Spherical, Free, Planar):
                return True
            return (joint.kind in ("revolute", "prismatic", "helical")
                    and type(joint).kinematic_map is Joint.kinematic_map)

        if (self.velocity_constraints or self.tau is not None or self.forces
                or not self.constraints
                or not all(isinstance(c, LoopClosure) for c in self.constraints)
                or not all(charted(b.joint) for b in self.model.bodies)
                or self._loop_kernel() is None):
            return None
        data, L = self._loop_kernel()
        return CompiledForm(KIND_MODEL, L, data)

    # ---- constraints --------------------------------------------------------------------
    def _loop_kernel(self):
        """(flat model, packed loop closures) for the compiled rows; None with
        ``compiled=False`` or without loop closures."""
        if not self.compiled:
            return None
        if not hasattr(self, "_kernel_args"):
            from ..dynamics.flat import flatten
            from .system_kernel import pack_loops

            loops = [(c, b) for c, b in zip(self.constraints, self._bodies, strict=True)
                     if isinstance(c, LoopClosure)]
            self._kernel_args = None if not loops else (
                flatten(self.model).data,
                pack_loops([c for c, _ in loops],
                           [tuple(-1 if i is None else i for i in b) for _, b in loops]))
        return self._kernel_args

    def _compiled_loop_rows(self, Q: NDArray, V: NDArray | None):
        """The loop closures' rows (g, G, γ) at the states Q (V: None for g and G only),
        by :func:`~.system_kernel.loop_rows_batch`."""
        from .system_kernel import loop_rows_batch

        data, L = self._loop_kernel()
        nl = sum(c.dim for c in self.constraints if isinstance(c, LoopClosure))
        N = Q.shape[0]
        g, G, gam = np.empty((N, nl)), np.empty((N, nl, self.nv)), np.empty((N, nl))
        Vk = np.zeros((N, self.nv)) if V is None else np.ascontiguousarray(V, dtype=float)
        status = loop_rows_batch(data, L, np.ascontiguousarray(Q, dtype=float), Vk,
                                 V is not None, g, G, gam)
        if status:
            raise ConstraintError(f"{self.name}: the loop-closure kernel refused a state "
                                  f"(status {status}: a quaternion not of unit norm, or a "
                                  "non-finite result)")
        return g, G, gam

    def _position_rows(self, q: NDArray, loops=None):
        """g and C = [G; A] at one configuration (``loops``: the loop closures' (g, G)
        rows already computed compiled)."""
        kin = BodyKinematics(self.model, q) if loops is None and any(
            isinstance(c, LoopClosure) for c in self.constraints) else None
        g, G = [], []
        k = 0
        for c, bodies in zip(self.constraints, self._bodies, strict=True):
            if isinstance(c, LoopClosure) and loops is not None:
                gi, Gi = loops[0][k:k + c.dim], loops[1][k:k + c.dim]
                k += c.dim
            elif isinstance(c, LoopClosure):
                gi, Gi, _ = loop_rows(c, kin, *bodies)
            else:
                gi, Gi = c.g(q), c.G(q)
            g.append(np.asarray(gi, dtype=float).reshape(c.dim))
            G.append(np.asarray(Gi, dtype=float).reshape(c.dim, self.nv))
        A = [np.asarray(c.A(q), dtype=float).reshape(c.dim, self.nv)
             for c in self.velocity_constraints]
        gv = np.concatenate(g) if g else np.zeros(0)
        C = np.vstack(G + A) if G + A else np.zeros((0, self.nv))
        return gv, C

    def _gamma_rows(self, q: NDArray, v: NDArray, loops=None):
        """γ = −Ċ v at one state (exact for loop closures; ``loops``: their γ rows already
        computed compiled)."""
        kin = BodyKinematics(self.model, q, v) if loops is None and any(
            isinstance(c, LoopClosure) for c in self.constraints) else None
        gam = []
        k = 0
        for c, bodies in zip(self.constraints, self._bodies, strict=True):
            if isinstance(c, LoopClosure) and loops is not None:
                gam.append(loops[k:k + c.dim])
                k += c.dim
            elif isinstance(c, LoopClosure):
                gam.append(loop_rows(c, kin, *bodies)[2])
            elif c.gamma is not None:
                gam.append(np.asarray(c.gamma(q, v), dtype=float))
            else:
                h = 1e-6 / max(1e-300, float(np.max(np.abs(v))))
                gam.append(-(c.G(q + h * v) - c.G(q - h * v)) @ v / (2 * h))
        for c in self.velocity_constraints:
            if c.gamma is not None:
                gam.append(np.asarray(c.gamma(q, v), dtype=float))
            else:
                qd = self.q_dot(q, v)
                h = 1e-6 / max(1e-300, float(np.max(np.abs(qd))))
                gam.append(-(np.asarray(c.A(q + h * qd)) - np.asarray(c.A(q - h * qd)))
                           @ v / (2 * h))
        return np.concatenate(gam) if gam else np.zeros(0)

    def _positions(self, q):
        """(g, C) for a batch, the last batch cached: a DAE residual asks for g, C and
        c_v = C v at the same configurations in turn."""
        Q, lead = self._flat(q, self.nq)
        key = (Q.shape, Q.tobytes())
        cached = getattr(self, "_cache_q", None)
        if cached is None or cached[0] != key:
            if self._loop_kernel() is not None:
                gl, Gl, _ = self._compiled_loop_rows(Q, None)
                rows = [self._position_rows(x, (gl[k], Gl[k])) for k, x in enumerate(Q)]
            else:
                rows = [self._position_rows(x) for x in Q]
            cached = (key, np.array([r[0] for r in rows]), np.array([r[1] for r in rows]))
            self._cache_q = cached
        return (cached[1].reshape(lead + (self.nc,)),
                cached[2].reshape(lead + (self.m, self.nv)))

    def constraint(self, t, q):
        return self._positions(q)[0]

    def constraint_matrix(self, t, q):
        return self._positions(q)[1]

    def velocity_constraint(self, t, q, v):
        C = self._positions(q)[1]
        cv = np.einsum("...ij,...j->...i", C, np.asarray(v, dtype=float))
        if self.nn:
            b = np.concatenate([np.zeros(c.dim) if c.b is None else np.asarray(c.b, float)
                                for c in self.velocity_constraints])
            cv[..., self.nc:] -= b
        return cv

    def gamma(self, t, q, v):
        lead = np.broadcast_shapes(np.shape(q)[:-1], np.shape(v)[:-1])
        Q = np.array(np.broadcast_to(q, lead + (self.nq,)), dtype=float).reshape(-1, self.nq)
        V = np.array(np.broadcast_to(v, lead + (self.nv,)), dtype=float).reshape(-1, self.nv)
        if self._loop_kernel() is not None:
            gl = self._compiled_loop_rows(Q, V)[2]
            out = np.array([self._gamma_rows(x, y, gl[k])
                            for k, (x, y) in enumerate(zip(Q, V, strict=True))])
        else:
            out = np.array([self._gamma_rows(x, y) for x, y in zip(Q, V, strict=True)])
        return out.reshape(lead + (self.m,))

    # ---- reactions ----------------------------------------------------------------------
    def reactions(self, q: ArrayLike, v: ArrayLike, lam: ArrayLike | None = None,
                  tau: ArrayLike | None = None, t: float = 0.0) -> dict[str, dict]:
        """Force and moment (world coordinates) that each loop closure applies to its
        ``body_b``, at the origin of frame_b; body_a receives the opposite.

        With rows ``g = x_b − x_a``, the generalized constraint force is ``−Gᵀλ``: the force
        on b is ``−Σ_k e_k λ_k`` over the point rows and the moment ``−Σ_k λ_k (w × u)_k``
        over the orientation rows. λ from the index-1 solve unless given.
        """
        q = np.asarray(q, dtype=float)
        if lam is None:
            lam = self.accelerations(q, v, tau, t)[1]
        lam = np.asarray(lam, dtype=float)
        kin = BodyKinematics(self.model, q, np.asarray(v, dtype=float))
        out, k = {}, 0
        from .loops import _ROT_PAIRS, _frame

        for c, bodies in zip(self.constraints, self._bodies, strict=True):
            lk = lam[k:k + c.dim]
            k += c.dim
            if not isinstance(c, LoopClosure):
                out[c.name] = {"multipliers": lk}
                continue
            F = np.zeros(3)
            F[list(c.axes)] = -lk[:len(c.axes)]
            N = np.zeros(3)
            pairs = _ROT_PAIRS[c.kind]
            if pairs:
                ia, ib = bodies
                RA = kin.rotation(ia)[0] @ _frame(c.frame_a)[0]
                RB = kin.rotation(ib)[0] @ _frame(c.frame_b)[0]
                for m, (i, j) in enumerate(pairs):
                    N -= lk[len(c.axes) + m] * np.cross(RB[:, j], RA[:, i])
            out[c.name] = {"force": F, "moment": N, "multipliers": lk}
        return out
