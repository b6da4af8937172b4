"""The Joint base class, the registry of joint types, and what every joint shares.

A joint type is one class (one module of this package) holding all its maths:
the joint model X_J(q), S, W(q); the configuration manifold (neutral, random,
``q ⊕ v dt``, the difference, the quaternion check); the integrators' chart
(``q_n ⊕ x``, its Jacobian J(x) and the derivatives the variational methods
need); and how it is packed into a row of the flat layout
(:mod:`kanedyn.dynamics.flat`). Every other module asks the joint instead of
branching on its ``kind``. A new type is a subclass registered with
:func:`register_joint_type` (see docs/architecture.md, "How to add a joint type").

Every joint here has a *constant* motion subspace S expressed in the child
(successor) frame, so the joint bias velocity ``c_J = Ṡ v`` is zero. Where the
speeds are not derivatives of the coordinates (spherical, free and planar
joints), the kinematic map ``W(q)`` says how q moves. This is the
Featherstone/Pinocchio convention: v is the joint velocity in child
coordinates.

The joint transform is ``X_J = child_X_jointframe = plucker(R(q).T, p(q))``
with ``R(q), p(q)`` the pose of the child frame in the joint (predecessor)
frame.

**Compiled primitives.** Beside its class, a joint module defines numba functions
(decorated :data:`compiled_primitive`) that the kernels inline, pure functions of the
joint's parameters (axis a, pitch h: the caller reads them from the flat row and passes
scalars, so that this layer does not import the layout) and of its slice of q, x or F:

- ``joint_pose(q, k, ...)`` → ``(bad, R00, R01, …, R22, p0, p1, p2)``: the pose (R
  row-major, p) of the child in the joint frame, ``X_J = plucker(Rᵀ, p)``
  (Featherstone 2008, Table 4.1), q_j starting at ``q[k]``; ``bad`` = 1 when a
  quaternion in q_j is not unit within the tolerance passed;
- ``motion_subspace_column(c, ...)`` → S[:, c]; ``motion_subspace_times(x, o, ...)`` →
  ``S x_j`` (x_j starting at ``x[o]``); ``motion_subspace_transpose_times(F, k, c, ...)``
  → ``S[:, c]ᵀ F[k]`` (six-tuples and a scalar) — not needed when
  :attr:`Joint.identity_columns` holds (the kernels then take ``S[:, c] = e_c``);
- ``integrate(q, a, v, b, dt, out)``: ``out[a:a+nq] = q_j ⊕ v_j dt``, only when q is not
  additive.

Each keeps, operation for operation, the arithmetic of the kernels' branch it replaced
(the batch and single-state kernels must give the same bits). The one dispatcher,
:mod:`kanedyn.dynamics.kernels.joint_rows` (and, for ``integrate``,
:mod:`kanedyn.sim.configuration_kernel`), calls those of the built-in types by joint
code, inlined. A type whose ``compiled_code`` is no built-in code gets the code
EXTENSION, and the kernels call its primitives through C entry points made from them
(:mod:`kanedyn.dynamics.kernels.joint_extension`): the parameters ``p`` are then the
floats of the body-row columns its ``compiled_parameters`` names, in order, after the
fixed arguments above (and, for ``joint_pose``, the quaternion tolerance first when the
type has a quaternion), as the built-in types' are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import ClassVar

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ...errors import ModelError, StateError
from ...spatial import plucker
from ...spatial.lie import RIGHT_JACOBIAN_QUADRATURE

#: how far from unit norm a quaternion in q may be before it is an error
QUAT_TOL = 1e-4

#: the decorator of the joint types' compiled primitives: inlined into the kernels and
#: never cached on their own (a cached primitive that inlines another module's, as the
#: helical pose inlines the revolute one, would go stale when that module changes; the
#: kernels that compile them in import every joint module, so their keyed caches cover
#: these files: kanedyn.dynamics._compiled)
compiled_primitive = njit(_nrt=False, forceinline=True)


def unit_axis(axis, joint: str) -> NDArray:
    """``axis`` normalised; ModelError naming the joint when it is zero or not finite."""
    a = np.asarray(axis, dtype=float).reshape(3)
    n = np.linalg.norm(a)
    if not np.isfinite(n) or n < 1e-12:
        raise ModelError(f"joint {joint!r}: axis {a} is zero or not finite")
    return a / n


def checked_quat(qj: NDArray, joint: str) -> NDArray:
    """The unit quaternion ``qj`` normalised; StateError when its norm is off by > QUAT_TOL."""
    n = np.linalg.norm(qj)
    if not abs(n - 1.0) <= QUAT_TOL:
        raise StateError(
            f"joint {joint!r}: quaternion {qj} has norm {n:.6g}, not 1 "
            f"(tolerance {QUAT_TOL}); normalise it or integrate with integrate_configuration"
        )
    return qj / n


def random_unit_quaternion(rng: np.random.Generator) -> NDArray:
    """Uniform on SO(3): a normalised 4-vector of standard normals."""
    x = rng.normal(size=4)
    return x / np.linalg.norm(x)


@dataclass(frozen=True)
class JointLimits:
    """Joint limits and dynamics data as URDF gives them (used by force elements)."""

    lower: float | None = None
    upper: float | None = None
    effort: float | None = None
    velocity: float | None = None


@dataclass(frozen=True)
class Joint:
    """Base class. Subclasses define ``nq``, ``nv``, ``kind`` and the maps.

    ``damping`` and ``friction`` are used by force elements; ``armature`` (finite, ≥ 0,
    checked by ModelBuilder) is a rotor inertia added to M's diagonal at each of the
    joint's speeds (MuJoCo's ``dof_armature``, Pinocchio's ``model.armature``), which
    every numeric algorithm honours.

    Class attributes a joint type sets:

    - ``nq``, ``nv``, ``kind`` (the registry key);
    - ``quaternion``: the slice of q_j holding a unit quaternion (w, x, y, z), or None;
    - ``chart_is_additive``: True when ``q ⊕ x = q + x`` (then J(x) = 1, the chart
      methods are not called, and batched additive kernels accept the joint);
    - ``compiled_code``: the name of a built-in joint code of
      :mod:`kanedyn.dynamics.layout` (whose primitives the dispatcher of
      :mod:`kanedyn.dynamics.kernels.joint_rows` calls inlined), or any other name for a
      type with compiled primitives of its own (called through C entry points, see the
      module docstring), or None when no kernel knows the joint;
    - ``compiled_parameters``: the body-row columns (layout names such as ``"AXIS"``,
      ``"PITCH"``) whose floats follow the fixed arguments of its primitives;
    - ``compiled_primitives``: where its primitives are (a module or namespace), None
      for the module that defines the class;
    - ``identity_columns``: True when S is the first nv columns of the 6 x 6 identity
      (``S[:, c] = e_c``; packed as SUNIT = nv): the kernels then pick columns of an
      inertia instead of forming S, and take their floating-base paths when nv = 6
      (``S = 1``) at a root.
    """

    name: str
    damping: float = 0.0
    friction: float = 0.0
    armature: float = 0.0
    limits: JointLimits = field(default_factory=JointLimits)

    nq = 0
    nv = 0
    kind = "joint"
    quaternion: ClassVar[slice | None] = None
    chart_is_additive = True
    compiled_code: ClassVar[str | None] = None
    compiled_parameters: ClassVar[tuple[str, ...]] = ()
    compiled_primitives: ClassVar[object | None] = None
    identity_columns: ClassVar[bool] = False

    # --- the joint model -------------------------------------------------
    def pose(self, qj: NDArray) -> tuple[NDArray, NDArray]:
        """Pose (R, p) of the child frame in the joint frame."""
        raise NotImplementedError

    def motion_subspace(self, qj: NDArray | None = None) -> NDArray:
        """S (6 x nv), in child coordinates, constant for every joint here."""
        raise NotImplementedError

    def kinematic_map(self, qj: NDArray) -> NDArray:
        """W(q) (nq x nv) with ``q̇_j = W(q_j) v_j``."""
        return np.eye(self.nq, self.nv)

    def transform(self, qj: NDArray) -> NDArray:
        """X_J (6x6) = child_X_jointframe."""
        R, p = self.pose(qj)
        return plucker(R.T, p)

    @property
    def is_fixed(self) -> bool:
        return self.nv == 0

    @property
    def has_quaternion(self) -> bool:
        """q_j holds a unit quaternion (at :attr:`quaternion`)."""
        return self.quaternion is not None

    def symbolic_model(self, qj: list, uj: list, ops) -> tuple[list, list, list]:
        """``(R, p, q̇_j)``: the pose of the child in the joint frame (R a 3 x 3 nested
        list, p a 3-list) and the kinematic equations ``q̇_j = W(q_j) u_j``, as symbolic
        expressions of the joint's coordinates ``qj`` and speeds ``uj`` (for
        :func:`kanedyn.kane.derive` and :mod:`kanedyn.verify.lagrange`).

        ``ops`` is the caller's symbolic toolbox (this layer does not import a computer
        algebra system): ``ops.sincos(x)`` → (sin x, cos x), ``ops.number(x)`` a float
        as an exact constant, ``ops.matrix(R, tag)`` a 3 x 3 bound as one intermediate
        (or R itself), ``ops.half`` = 1/2. Every built-in type defines it; a type that
        does not is refused by those callers with an error naming it."""
        raise NotImplementedError(f"joint type {self.kind!r} has no symbolic model")

    # --- the configuration manifold ----------------------------------------
    def neutral(self) -> NDArray:
        """The zero configuration of the joint."""
        return np.zeros(self.nq)

    def random_configuration(self, rng: np.random.Generator, scale: float = 1.0) -> NDArray:
        """A random q_j: coordinates ~ U(-scale, scale) (quaternion joints override)."""
        return rng.uniform(-scale, scale, self.nq)

    def integrate(self, qj: NDArray, vj: NDArray, dt: float) -> NDArray:
        """Configuration reached from q_j at constant speed v_j after dt (on the manifold)."""
        return qj + dt * vj

    def difference(self, q0: NDArray, q1: NDArray) -> NDArray:
        """The constant speed v that takes q0 to q1 in unit time (inverse of integrate)."""
        return q1 - q0

    def check(self, qj: NDArray) -> NDArray:
        """Validate this joint's part of q; returns it (normalised where it is a quaternion)."""
        if self.quaternion is None:
            return qj
        out = np.array(qj, dtype=float)
        out[self.quaternion] = checked_quat(qj[self.quaternion], self.name)
        return out

    def exponential_right_jacobian(self, q0: NDArray, xi: NDArray) -> NDArray:
        """J_r(ξ) (nv x nv) of ``ξ ↦ q0 ⊕ ξ`` for the body velocity:
        ``J_r(ξ) = Sᵀ (∫₀¹ X_J(q0 ⊕ sξ) X_J(q0)⁻¹ ds) S`` (Hairer–Lubich–Wanner 2006,
        III.4), by 8-point Gauss–Legendre quadrature; S has orthonormal columns.
        Joints with a closed form override it; additive joints give the identity."""
        if self.chart_is_additive:
            return np.eye(self.nv)
        S = self.motion_subspace()
        X0inv = np.linalg.inv(self.transform(q0))
        A = np.zeros((6, 6))
        for s, w in zip(*RIGHT_JACOBIAN_QUADRATURE, strict=True):
            A += w * (self.transform(self.integrate(q0, xi, s)) @ X0inv)
        return S.T @ A @ S

    # --- the integrators' chart q_n ⊕ x (kanedyn.integrators.chart) ---------
    # Static in the joint's parameters; only non-additive joints define them.
    @classmethod
    def chart_point(cls, qj: NDArray, xj: NDArray) -> NDArray:
        """φ(x) = q_j ⊕ x on the chart centred at q_j."""
        if cls.chart_is_additive:
            return qj + xj
        raise NotImplementedError(f"joint type {cls.kind!r} defines no chart")

    @classmethod
    def chart_jacobian(cls, xj: NDArray) -> NDArray:
        """J(x) with ``d/dε φ(x + εδ) = φ(x) ⊕ J(x) δ`` (body velocity)."""
        return np.eye(cls.nv)

    @classmethod
    def chart_derivative(cls, xj: NDArray, wj: NDArray) -> NDArray:
        """D with ``D δ = d/dε J(x + εδ) w``."""
        return np.zeros((cls.nv, cls.nv))

    @classmethod
    def chart_end_velocity(cls, xj: NDArray) -> tuple[NDArray, NDArray]:
        """(W, ∂W/∂x) with W(x) = J(x) x (x itself on exponential charts)."""
        return np.array(xj, dtype=float), np.eye(cls.nv)

    @classmethod
    def chart_start_sensitivity(cls, xj: NDArray) -> NDArray:
        """K with ``dx = K δ`` when the centre moves by ``q_n ⊕ εδ`` and φ(x) stays."""
        return -np.eye(cls.nv)

    # --- the flat layout (kanedyn.dynamics.flat) ------------------------------
    def pack(self, row: NDArray, layout: ModuleType) -> None:
        """Write this joint's columns of its body row: JTYPE, SUNIT (from
        :attr:`identity_columns`), AXIS, PITCH, SIDX, AXIS_ID (``layout`` is
        :mod:`kanedyn.dynamics.layout`, passed in so that the model layer does not import
        the dynamics layer). SIDX and AXIS_ID stay -1 (no shortcut). JTYPE is the
        built-in code named by :attr:`compiled_code`, else EXTENSION (the packer then
        writes the address of the type's entry table in JFUNCS)."""
        if self.compiled_code is None:
            raise ModelError(f"joint {self.name!r}: kind {self.kind!r} has no fast kernel")
        code = getattr(layout, self.compiled_code, None)
        if code not in layout.JOINT_CODES.values():
            code = layout.EXTENSION
        row[layout.JTYPE] = code
        row[layout.SUNIT] = self.nv if self.identity_columns else 0
        row[layout.SIDX] = -1
        row[layout.AXIS_ID] = -1


#: joint type name (URDF's, and the builders') -> its Joint class
JOINT_TYPES: dict[str, type[Joint]] = {}


def register_joint_type(cls: type[Joint], *aliases: str) -> type[Joint]:
    """Add a joint class to :data:`JOINT_TYPES` under its ``kind`` (and ``aliases``).

    This is the registry line of a joint type; usable as a class decorator. A kind
    already taken by another class is a ModelError (no silent replacement)."""
    if not (isinstance(cls, type) and issubclass(cls, Joint)):
        raise ModelError(f"register_joint_type takes a Joint subclass, not {cls!r}")
    for key in (cls.kind, *aliases):
        old = JOINT_TYPES.get(key)
        if old is not None and old is not cls:
            raise ModelError(f"joint type {key!r} is already registered ({old.__name__})")
        JOINT_TYPES[key] = cls
    return cls
