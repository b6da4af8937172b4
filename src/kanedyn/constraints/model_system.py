"""A Model with loop closures and other constraints, as a constrained system."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConstraintError
from .loops import BodyKinematics, LoopClosure, UserConstraint, VelocityConstraint, loop_rows
from .system import ConstrainedMechanics


class ConstrainedSystem(ConstrainedMechanics):
    """``M(q) v̇ + h(q, v) = τ − Cᵀλ`` for a tree :class:`~kanedyn.Model` cut open at its
    loops, with holonomic rows (loop closures, user g(q)) and velocity rows.

    ``tau(t, q, v)``: applied joint forces (optional); ``forces``: force elements
    (``generalized_force(t, q, v)``, see :mod:`kanedyn.forces`). M and h come from
    ``kd.crba`` and ``kd.nonlinear_effects``; the constraint Jacobians from ``kd.jacobian``.
    """

    def __init__(self, model, constraints: Sequence[LoopClosure | UserConstraint] = (),
                 velocity_constraints: Sequence[VelocityConstraint] = (),
                 tau: Callable | None = None, forces: Sequence = (), name: str | None = None):
        self.model = model
        self.constraints = tuple(constraints)
        self.velocity_constraints = tuple(velocity_constraints)
        self.nq, self.nv = model.nq, model.nv
        for c in self.constraints:
            if not isinstance(c, (LoopClosure, UserConstraint)):
                raise ConstraintError(f"{c!r} is not a LoopClosure or UserConstraint")
            if isinstance(c, UserConstraint) and model.nq != model.nv:
                raise ConstraintError(f"user constraint {c.name!r} needs q̇ = v (nq = nv); "
                                      f"model {model.name!r} has quaternions")
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

    # ---- batching helper ----------------------------------------------------------------
    @staticmethod
    def _flat(x, n):
        x = np.asarray(x, dtype=float)
        return x.reshape(-1, n), x.shape[:-1]

    def mass_matrix(self, q):
        import kanedyn as kd

        Q, lead = self._flat(q, self.nq)
        # one state per call: the public functions take batches, but a state at a time
        # keeps to the single-state path (the batches here are 1-30 states)
        M = np.array([kd.crba(self.model, x) for x in Q])
        return M.reshape(lead + (self.nv, self.nv))

    def applied_forces(self, t, q, v):
        import kanedyn as kd

        Q, lead = self._flat(q, self.nq)
        V, leadv = self._flat(v, self.nv)
        N = max(len(Q), len(V))
        Q = np.broadcast_to(Q, (N, self.nq)).copy()
        V = np.broadcast_to(V, (N, self.nv)).copy()
        lead = lead if len(lead) >= len(leadv) else leadv
        f = -np.array([kd.nonlinear_effects(self.model, x, y) for x, y in zip(Q, V, strict=True)])
        if self.tau is not None or self.forces:
            T = np.broadcast_to(np.asarray(t, dtype=float), (N,))
            for k in range(N):
                if self.tau is not None:
                    f[k] += self.tau(T[k], Q[k], V[k])
                for el in self.forces:
                    f[k] += el.generalized_force(T[k], Q[k], V[k])
        return f.reshape(lead + (self.nv,))

    def q_dot(self, q, v):
        import kanedyn as kd

        lead = np.broadcast_shapes(np.shape(q)[:-1], np.shape(v)[:-1])
        Q, _ = self._flat(np.ascontiguousarray(np.broadcast_to(q, lead + (self.nq,))), self.nq)
        V, _ = self._flat(np.ascontiguousarray(np.broadcast_to(v, lead + (self.nv,))), self.nv)
        return np.asarray(kd.q_dot(self.model, Q, V)).reshape(lead + (self.nq,))

    def integrate_configuration(self, q, v, dt):
        import kanedyn as kd

        return kd.integrate_configuration(self.model, q, v, dt)

    def potential_energy(self, q):
        import kanedyn as kd

        Q, lead = self._flat(q, self.nq)
        V = np.array([kd.potential_energy(self.model, x) for x in Q]).reshape(lead)
        for el in self.forces:
            if el.conservative:
                V = V + np.array([el.potential(x) for x in Q]).reshape(lead)
        return float(V) if V.ndim == 0 else V

    # ---- constraints --------------------------------------------------------------------
    def _rows(self, q: NDArray, v: NDArray):
        """g, C, c_v, γ at one state."""
        kin = BodyKinematics(self.model, q, v) if any(
            isinstance(c, LoopClosure) for c in self.constraints) else None
        g, G, gam = [], [], []
        for c, bodies in zip(self.constraints, self._bodies, strict=True):
            if isinstance(c, LoopClosure):
                gi, Gi, gami = loop_rows(c, kin, *bodies)
            else:
                gi, Gi = c.g(q), c.G(q)
                gami = c.gamma(q, v) if c.gamma is not None else None
                if gami is None:
                    h = 1e-6 / max(1e-300, float(np.max(np.abs(v))))
                    gami = -(c.G(q + h * v) - c.G(q - h * v)) @ v / (2 * h)
            g.append(gi)
            G.append(Gi)
            gam.append(gami)
        A, cv_nh, gam_nh = [], [], []
        for c in self.velocity_constraints:
            Ai = np.asarray(c.A(q), dtype=float).reshape(c.dim, self.nv)
            b = np.zeros(c.dim) if c.b is None else np.asarray(c.b, dtype=float)
            A.append(Ai)
            cv_nh.append(Ai @ v - b)
            if c.gamma is not None:
                gam_nh.append(np.asarray(c.gamma(q, v), dtype=float))
            else:
                qd = self.q_dot(q, v)
                h = 1e-6 / max(1e-300, float(np.max(np.abs(qd))))
                gam_nh.append(-(np.asarray(c.A(q + h * qd)) - np.asarray(c.A(q - h * qd)))
                              @ v / (2 * h))
        cat = lambda xs, n: np.concatenate(xs) if xs else np.zeros(n)
        gv = cat(g, 0)
        Gm = np.vstack(G) if G else np.zeros((0, self.nv))
        Am = np.vstack(A) if A else np.zeros((0, self.nv))
        Cm = np.vstack([Gm, Am])
        cv = np.concatenate([Gm @ v, cat(cv_nh, 0)])
        return gv, Cm, cv, np.concatenate([cat(gam, 0), cat(gam_nh, 0)])

    def _batched(self, which: int, q, v=None):
        """Rows ``which`` (0 g, 1 C, 2 c_v, 3 γ) for a batch. The last batch is cached:
        a DAE residual asks for g, C, c_v (and γ) at the same states in turn."""
        Q, lead = self._flat(q, self.nq)
        if v is None:
            key = (Q.shape, Q.tobytes())
            cached = getattr(self, "_cache_q", None)
            if cached is None or cached[0] != key:
                rows = [self._rows(x, np.zeros(self.nv))[:2] for x in Q]
                cached = (key, [np.array([r[k] for r in rows]) for k in range(2)])
                self._cache_q = cached
            arr = cached[1][which]
            return arr.reshape(lead + arr.shape[1:])
        V, leadv = self._flat(v, self.nv)
        N = max(len(Q), len(V))
        if len(leadv) > len(lead):
            lead = leadv
        Q, V = np.broadcast_to(Q, (N, self.nq)), np.broadcast_to(V, (N, self.nv))
        key = (Q.shape, Q.tobytes(), V.tobytes())
        cached = getattr(self, "_cache_qv", None)
        if cached is None or cached[0] != key:
            rows = [self._rows(x, y) for x, y in zip(Q, V, strict=True)]
            arrs = [np.array([r[k] for r in rows]) for k in range(4)]
            cached = (key, arrs)
            self._cache_qv = cached
            self._cache_q = ((Q.shape, np.ascontiguousarray(Q).tobytes()), arrs[:2])
        arr = cached[1][which]
        return arr.reshape(lead + arr.shape[1:])

    def constraint(self, t, q):
        return self._batched(0, q)

    def constraint_matrix(self, t, q):
        return self._batched(1, q)

    def velocity_constraint(self, t, q, v):
        return self._batched(2, q, v)

    def gamma(self, t, q, v):
        return self._batched(3, q, v)

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
