"""Constraints on a Model: loop closures between two bodies, user g(q), velocity constraints.

A loop closure ties a frame F_a fixed to body a to a frame F_b fixed to body b (either may
be the world). Its rows, in world coordinates:

- ``kind="point"``: ``p_b − p_a = 0`` (the origins coincide), optionally only along some
  world ``axes`` (a planar loop fixes two);
- ``kind="revolute"``: the points coincide and the z axes stay parallel,
  ``x_a · z_b = 0``, ``y_a · z_b = 0`` (5 rows);
- ``kind="weld"``: the points coincide and the frames stay aligned,
  ``y_a · z_b = z_a · x_b = x_a · y_b = 0`` (6 rows, locally).

Jacobians come from the body Jacobians of the numeric core (``kd.jacobian`` with
``frame="local_world_aligned"``): a body point r = R c moves with ``ṗ = v_O + ω × r``, so
``J_point = J_v − [r]× J_ω``; a direction u = R n turns with ``u̇ = ω × u``, and
``d(u·w)/dt = (w × u) · (ω_b − ω_a)``. The acceleration terms γ = −Ċv are exact, from the
bias accelerations (v̇ = 0, no gravity) of a forward pass (Featherstone 2008, ch. 2,
classical acceleration of a body point ``a_O + ω × v_O + ω̇ × c + ω × (ω × c)``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..dynamics import forward_kinematics, jacobian
from ..errors import ConstraintError
from ..spatial import crm, skew

KINDS = ("point", "revolute", "weld")
_ROT_PAIRS = {"point": (), "revolute": ((0, 2), (1, 2)), "weld": ((1, 2), (2, 0), (0, 1))}


@dataclass(frozen=True)
class LoopClosure:
    """A loop joint between ``body_a`` and ``body_b`` (names, indices, or None = world).

    ``frame_a``/``frame_b`` are (R, p): the joint frame's axes and origin in the body's
    coordinates (default: the body frame). ``axes`` restricts a point constraint to some
    world axes (0, 1, 2)."""

    body_a: str | int | None
    body_b: str | int | None
    kind: str = "point"
    frame_a: tuple | None = None
    frame_b: tuple | None = None
    axes: tuple = (0, 1, 2)
    name: str = "loop"

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ConstraintError(f"loop closure {self.name!r}: kind {self.kind!r} is not one "
                                  f"of {KINDS}")
        if self.kind != "point" and tuple(self.axes) != (0, 1, 2):
            raise ConstraintError(f"loop closure {self.name!r}: axes restrict only a point "
                                  "constraint")
        if not self.axes or any(a not in (0, 1, 2) for a in self.axes):
            raise ConstraintError(f"loop closure {self.name!r}: axes {self.axes} must be a "
                                  "subset of (0, 1, 2)")

    @property
    def dim(self) -> int:
        return len(self.axes) + len(_ROT_PAIRS[self.kind])

    @property
    def row_names(self) -> list[str]:
        xyz = "xyz"
        rows = [f"{self.name}: point {xyz[a]}" for a in self.axes]
        rows += [f"{self.name}: {xyz[i]}_a·{xyz[j]}_b" for i, j in _ROT_PAIRS[self.kind]]
        return rows


@dataclass(frozen=True)
class UserConstraint:
    """Holonomic rows ``g(q) = 0`` given by the user, with ``G(q) = ∂g/∂q`` (nq = nv) and
    optionally ``gamma(q, v) = −Ġ v`` (else by finite differences)."""

    g: Callable
    G: Callable
    dim: int
    gamma: Callable | None = None
    name: str = "user"

    @property
    def row_names(self) -> list[str]:
        return [f"{self.name}[{k}]" for k in range(self.dim)]

    @classmethod
    def from_sympy(cls, exprs: Sequence, q_symbols: Sequence, name: str = "user"):
        """g from sympy expressions in the symbols q; G = ∂g/∂q and γ = −∂(G v)/∂q · v
        are derived symbolically (for coordinates with q̇ = v)."""
        import sympy as sp

        q = sp.Matrix(list(q_symbols))
        gx = sp.Matrix(list(exprs))
        v = sp.Matrix(sp.symbols(f"_v0:{len(q)}"))
        Gx = gx.jacobian(q)
        gam = -(Gx * v).jacobian(q) * v
        fg = sp.lambdify([q], list(gx), "numpy")
        fG = sp.lambdify([q], Gx.tolist(), "numpy")
        fgam = sp.lambdify([q, v], list(gam), "numpy")
        return cls(lambda x: np.array(fg(x), dtype=float).reshape(-1),
                   lambda x: np.array(fG(x), dtype=float).reshape(len(gx), len(q)),
                   len(gx),
                   lambda x, y: np.array(fgam(x, y), dtype=float).reshape(-1), name)


@dataclass(frozen=True)
class VelocityConstraint:
    """Nonholonomic rows ``A(q) v = b`` (b constant), e.g. a knife edge or rolling contact.
    ``gamma(q, v) = −Ȧ v`` if known, else by finite differences along the motion."""

    A: Callable
    dim: int
    b: ArrayLike | None = None
    gamma: Callable | None = None
    name: str = "velocity"
    extra: dict = field(default_factory=dict)

    @property
    def row_names(self) -> list[str]:
        return [f"{self.name}[{k}]" for k in range(self.dim)]


def _frame(fr) -> tuple[NDArray, NDArray]:
    if fr is None:
        return np.eye(3), np.zeros(3)
    R, p = fr
    return np.asarray(R, dtype=float).reshape(3, 3), np.asarray(p, dtype=float).reshape(3)


class BodyKinematics:
    """Poses, velocities, bias accelerations and Jacobians of a Model's bodies at (q, v).

    ``acc_bias[i]``: spatial acceleration of body i (body coordinates) for v̇ = 0 and no
    gravity — the ``J̇ v`` term: ``a_i = X_up a_p + crm(v_i) S v_i`` (Featherstone 2008,
    Table 5.1, with q̈ = 0 and a_0 = 0).
    """

    def __init__(self, model, q: NDArray, v: NDArray | None = None):
        self.model, self.q = model, q
        if v is None:  # positions and Jacobians only
            kin = forward_kinematics(model, q)
            self.R, self.p = kin.R, kin.p
            self.vel = self.acc_bias = None
            self._J: dict[int, NDArray] = {}
            return
        kin = forward_kinematics(model, q, v)
        self.R, self.p, self.vel = kin.R, kin.p, kin.velocity
        self.acc_bias = np.zeros((model.nb, 6))
        for b in model.bodies:
            i, par = b.index, b.parent
            S = b.joint.motion_subspace(q[b.iq])
            vJ = S @ v[b.iv]
            if par >= 0:
                Xup = b.joint.transform(q[b.iq]) @ b.X_tree
                self.acc_bias[i] = Xup @ self.acc_bias[par] + crm(self.vel[i]) @ vJ
            else:
                self.acc_bias[i] = crm(self.vel[i]) @ vJ
        self._J = {}

    def jacobian(self, i: int) -> NDArray:
        if i not in self._J:
            self._J[i] = jacobian(self.model, self.q, i, frame="local_world_aligned")
        return self._J[i]

    def point(self, i: int | None, c: NDArray):
        """World position, Jacobian (3 x nv) and bias acceleration (None without v) of
        body point c."""
        nv = self.model.nv
        if i is None:
            return c.copy(), np.zeros((3, nv)), np.zeros(3)
        R = self.R[i]
        r = R @ c
        J = self.jacobian(i)
        Jp = J[3:] - skew(r) @ J[:3]
        if self.vel is None:
            return self.p[i] + r, Jp, None
        w, vO = self.vel[i, :3], self.vel[i, 3:]
        wd, aO = self.acc_bias[i, :3], self.acc_bias[i, 3:]
        a_body = aO + np.cross(w, vO) + np.cross(wd, c) + np.cross(w, np.cross(w, c))
        return self.p[i] + r, Jp, R @ a_body

    def rotation(self, i: int | None):
        """Axes R (world), angular Jacobian (3 x nv), ω and bias ω̇ in world coordinates."""
        nv = self.model.nv
        if i is None:
            return np.eye(3), np.zeros((3, nv)), np.zeros(3), np.zeros(3)
        R = self.R[i]
        if self.vel is None:
            return R, self.jacobian(i)[:3], None, None
        return R, self.jacobian(i)[:3], R @ self.vel[i, :3], R @ self.acc_bias[i, :3]


def loop_rows(lc: LoopClosure, kin: BodyKinematics, ia: int | None, ib: int | None):
    """(g, G, γ) of one loop closure at the state of ``kin``."""
    Ra_f, pa_f = _frame(lc.frame_a)
    Rb_f, pb_f = _frame(lc.frame_b)
    xa, Ja, aa = kin.point(ia, pa_f)
    xb, Jb, ab = kin.point(ib, pb_f)
    ax = list(lc.axes)
    with_v = kin.vel is not None
    g = [(xb - xa)[ax]]
    G = [(Jb - Ja)[ax]]
    gam = [-(ab - aa)[ax]] if with_v else []
    pairs = _ROT_PAIRS[lc.kind]
    if pairs:
        RA, JwA, wA, wdA = kin.rotation(ia)
        RB, JwB, wB, wdB = kin.rotation(ib)
        FA, FB = RA @ Ra_f, RB @ Rb_f
        dJ = JwB - JwA
        if with_v:
            dw, dwd = wB - wA, wdB - wdA
        gr, Gr, gamr = [], [], []
        for i, j in pairs:
            u, w = FA[:, i], FB[:, j]
            n = np.cross(w, u)
            gr.append(u @ w)
            Gr.append(n @ dJ)
            if with_v:
                ud, wd = np.cross(wA, u), np.cross(wB, w)
                gamr.append(-((np.cross(wd, u) + np.cross(w, ud)) @ dw + n @ dwd))
        g.append(np.array(gr))
        G.append(np.array(Gr))
        if with_v:
            gam.append(np.array(gamr))
    return np.concatenate(g), np.vstack(G), (np.concatenate(gam) if with_v else None)


def loop_closure_from_spec(spec: dict, index: int = 0) -> LoopClosure:
    """A :class:`LoopClosure` from a plain table (a scenario file's ``[[constraints]]``):

    ``type`` = "point" | "revolute" | "weld" (or "loop" with ``kind``), ``body_a``,
    ``body_b`` (names; omitted or "world" for the world), ``point_a``/``point_b`` (the
    joint frame's origin in the body, default 0), ``rotation_a``/``rotation_b`` (3x3, default
    identity), ``axes`` (world axes of a point constraint, e.g. [0, 1]), ``name``."""
    d = dict(spec)
    kind = d.pop("type", None)
    if kind == "loop":
        kind = d.pop("kind", "point")
    name = d.pop("name", f"constraint {index}")
    if kind not in KINDS:
        raise ConstraintError(f"constraint {name!r}: type {kind!r} is not one of "
                              f"{KINDS + ('loop',)}")

    def frame(side):
        R = d.pop(f"rotation_{side}", None)
        p = d.pop(f"point_{side}", None)
        if R is None and p is None:
            return None
        try:
            return (np.eye(3) if R is None else np.asarray(R, float).reshape(3, 3),
                    np.zeros(3) if p is None else np.asarray(p, float).reshape(3))
        except ValueError:
            raise ConstraintError(f"constraint {name!r}: rotation_{side} must be 3x3 and "
                                  f"point_{side} 3 numbers") from None

    body_a, body_b = d.pop("body_a", None), d.pop("body_b", None)
    fa, fb = frame("a"), frame("b")
    axes = tuple(int(a) for a in d.pop("axes", (0, 1, 2)))
    if d:
        raise ConstraintError(f"constraint {name!r}: unknown keys {sorted(d)}")
    return LoopClosure(None if body_a in (None, "world") else body_a,
                       None if body_b in (None, "world") else body_b, kind, fa, fb, axes, name)
