"""The Model: an immutable tree of rigid bodies joined by joints.

Bodies are numbered in tree order (a parent before its children); body i is
moved by joint i relative to its parent ``parent[i]`` (-1: the world).
Fixed joints never appear here: :class:`ModelBuilder` merges a body on a
fixed joint into its parent, adding its inertia and keeping its frame in
``model.frames`` so its pose can still be asked for.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import KanedynWarning, ModelError
from ..spatial import (
    INERTIA_ROUNDING,
    Transform,
    clip_rotational_inertia,
    inertia_parameters,
    rotational_inertia_defect,
    rotational_inertia_is_physical,
    spatial_inertia,
    transform_inertia,
)
from .joints import Fixed, Joint


@dataclass(frozen=True)
class Body:
    """One rigid body and the joint that moves it.

    ``X_tree`` is the Plücker transform from the parent body's coordinates to
    the joint frame (``jointframe_X_parent``); ``inertia`` is the body's 6x6
    spatial inertia about its own origin, in its own coordinates.
    """

    name: str
    index: int
    parent: int
    joint: Joint
    placement: Transform
    inertia: NDArray
    iq: slice
    iv: slice

    @property
    def X_tree(self) -> NDArray:
        return self.placement.matrix()

    @property
    def mass(self) -> float:
        return float(self.inertia[5, 5])

    @property
    def com(self) -> NDArray:
        return inertia_parameters(self.inertia)[1]


@dataclass(frozen=True)
class Frame:
    """A named frame fixed to a body: ``placement`` is frame_X_body (body -1: the world,
    ``placement`` then frame_X_world)."""

    name: str
    body: int
    placement: Transform


@dataclass(frozen=True)
class Model:
    """A rigid-body tree. Build one with :class:`ModelBuilder`, a builder in
    :mod:`kanedyn.models`, or :func:`kanedyn.load_urdf`; no algorithm changes it.

    ``source`` is the description file the model was loaded from ("" when it was built
    in code or from a string): the 3D views read the robot's visual geometry from it."""

    name: str
    bodies: tuple[Body, ...]
    gravity: NDArray
    frames: dict = field(default_factory=dict)
    root_name: str = "world"
    source: str = ""

    def __post_init__(self):
        object.__setattr__(self, "gravity", np.asarray(self.gravity, dtype=float).reshape(3))

    @property
    def nb(self) -> int:
        return len(self.bodies)

    @property
    def nq(self) -> int:
        return sum(b.joint.nq for b in self.bodies)

    @property
    def nv(self) -> int:
        return sum(b.joint.nv for b in self.bodies)

    @property
    def parents(self) -> tuple[int, ...]:
        return tuple(b.parent for b in self.bodies)

    @property
    def joint_names(self) -> list[str]:
        """Names of the moving joints, in the order of their entries in q and v."""
        return [b.joint.name for b in self.bodies]

    @property
    def body_names(self) -> list[str]:
        return [b.name for b in self.bodies]

    @property
    def gravity_spatial(self) -> NDArray:
        """Gravity as a spatial acceleration in world coordinates, ``[0; g]``."""
        return np.concatenate([np.zeros(3), self.gravity])

    @property
    def total_mass(self) -> float:
        return float(sum(b.mass for b in self.bodies))

    @property
    def armature(self) -> NDArray:
        """The rotor inertia added to M's diagonal at each speed (nv,): each joint's
        :attr:`~kanedyn.model.joints.Joint.armature` repeated over its speeds (Pinocchio's
        ``model.armature``, MuJoCo's ``dof_armature``)."""
        out = np.zeros(self.nv)
        for b in self.bodies:
            out[b.iv] = b.joint.armature
        return out

    @property
    def has_quaternions(self) -> bool:
        return any(b.joint.nq != b.joint.nv for b in self.bodies)

    def body_index(self, name: str | int) -> int:
        """Index of a body given by name (a merged link's name gives the body it is part of)."""
        if isinstance(name, (int, np.integer)):
            if not 0 <= name < self.nb:
                raise ModelError(f"body index {name} out of range 0..{self.nb - 1}")
            return int(name)
        for b in self.bodies:
            if b.name == name:
                return b.index
        if name in self.frames:
            if self.frames[name].body < 0:
                raise ModelError(f"frame {name!r} is fixed to the world, not to a body "
                                 "(kd.frame_placement gives its pose)")
            return self.frames[name].body
        raise ModelError(
            f"no body or frame named {name!r}; bodies are {self.body_names}"
        )

    def frame(self, name: str | int) -> Frame:
        """The frame called ``name``: a named frame of :attr:`frames` (a merged fixed
        link, a sensor, a tool point), a body (its origin and axes; an int is a body
        index) or the world (``root_name``; body -1). ModelError listing the names if
        there is none."""
        if isinstance(name, (int, np.integer)):
            i = self.body_index(name)
            return Frame(self.bodies[i].name, i, Transform.identity())
        fr = self.frames.get(name) if isinstance(name, str) else None
        if fr is not None:
            return fr
        for b in self.bodies:  # (a Model built by hand may not list its bodies as frames)
            if b.name == name:
                return Frame(name, b.index, Transform.identity())
        if name == self.root_name:
            return Frame(name, -1, Transform.identity())
        others = sorted(n for n in self.frames if n not in set(self.body_names))
        raise ModelError(f"no frame or body named {name!r}; frames are {others}, bodies are "
                         f"{self.body_names} (and the world, {self.root_name!r})")

    def add_frame(self, name: str, parent: str | int, placement=None) -> Model:
        """A new Model with one more frame, fixed to ``parent`` (a body, an existing frame,
        or the world): ``placement`` is its pose in the parent frame, a
        :class:`~kanedyn.spatial.Transform` or a pair ``(R, p)`` (R its axes in parent
        coordinates, p its origin); a frame on a frame composes the placements onto the
        body. This Model is not changed (it is immutable)."""
        if not isinstance(name, str) or not name:
            raise ModelError(f"a frame needs a non-empty name, got {name!r}")
        if name in self.frames or name in self.body_names or name == self.root_name:
            raise ModelError(f"frame {name!r} already exists in model {self.name!r} "
                             "(frame names are unique, bodies and the world included)")
        if isinstance(parent, (int, np.integer)) and not 0 <= parent < self.nb:
            raise ModelError(f"frame {name!r}: parent body index {parent} out of range "
                             f"0..{self.nb - 1}")
        try:
            pf = self.frame(parent)
        except ModelError as e:
            raise ModelError(f"frame {name!r}: parent {parent!r} does not exist; {e}") from None
        X = _as_transform(placement, f"frame {name!r}") @ pf.placement
        frames = dict(self.frames)
        frames[name] = Frame(name, pf.body, X)
        return replace(self, frames=frames)

    def joint_index(self, name: str) -> int:
        for b in self.bodies:
            if b.joint.name == name:
                return b.index
        raise ModelError(f"no joint named {name!r}; joints are {self.joint_names}")

    def children(self, i: int) -> list[int]:
        return [b.index for b in self.bodies if b.parent == i]

    def subtree(self, i: int) -> list[int]:
        """Body i and all its descendants, in tree order."""
        out = [i]
        for b in self.bodies[i + 1 :]:
            if b.parent in out:
                out.append(b.index)
        return out

    def support(self, i: int) -> list[int]:
        """The bodies from the root down to body i, in tree order."""
        out = []
        while i >= 0:
            out.append(i)
            i = self.bodies[i].parent
        return out[::-1]

    def with_gravity(self, gravity: ArrayLike) -> Model:
        """A copy of this model with another gravity vector."""
        return replace(self, gravity=np.asarray(gravity, float), frames=dict(self.frames))

    def __repr__(self) -> str:
        kinds = {}
        for b in self.bodies:
            kinds[b.joint.kind] = kinds.get(b.joint.kind, 0) + 1
        desc = ", ".join(f"{n} {k}" for k, n in kinds.items())
        return f"Model({self.name!r}: {self.nb} bodies, nq={self.nq}, nv={self.nv}; {desc})"


def _as_transform(placement, name: str = "") -> Transform:
    if placement is None:
        return Transform.identity()
    if isinstance(placement, Transform):
        X = placement
    else:
        try:
            R, p = placement
            X = Transform.from_pose(R, p)
        except (TypeError, ValueError):
            raise ModelError(
                f"{name}: placement must be a Transform or a pair (R, p) of a 3x3 rotation "
                f"and a 3-vector, got {placement!r}"
            ) from None
    E = X.E
    if not (np.all(np.isfinite(E)) and np.all(np.isfinite(X.r))):
        raise ModelError(f"{name}: placement is not finite")
    if not (np.allclose(E @ E.T, np.eye(3), atol=1e-9) and np.linalg.det(E) > 0):
        raise ModelError(f"{name}: placement rotation {E.T.tolist()} is not a proper rotation "
                         "(R Rᵀ = 1, det R = +1)")
    return X


class ModelBuilder:
    """Builds a :class:`Model` body by body, parents first.

    ``placement`` is the pose of the joint frame in the parent body's frame,
    given as a :class:`~kanedyn.spatial.Transform` or a pair ``(R, p)`` (R the
    joint frame's axes in parent coordinates, p its origin). Inertia is given
    as mass, centre of mass and rotational inertia about the centre of mass,
    all in the body's own frame.
    """

    def __init__(self, name: str = "model", gravity: ArrayLike = (0.0, 0.0, -9.81),
                 root_name: str = "world"):
        self.name = name
        g = np.asarray(gravity, dtype=float)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ModelError(f"model {name!r}: gravity must be a finite 3-vector, got {gravity!r}")
        self.gravity = g
        self.root_name = root_name
        self._bodies: list[dict] = []
        # every named frame: name -> (body index or -1, frame_X_body)
        self._frames: dict[str, tuple[int, Transform]] = {root_name: (-1, Transform.identity())}

    def _resolve(self, parent) -> tuple[int, Transform]:
        if parent is None:
            parent = self.root_name
        if isinstance(parent, (int, np.integer)):
            if not -1 <= parent < len(self._bodies):
                raise ModelError(f"parent body index {parent} does not exist yet")
            return int(parent), Transform.identity()
        if parent not in self._frames:
            raise ModelError(
                f"parent {parent!r} does not exist (known: {sorted(self._frames)}); "
                "add parents before their children"
            )
        return self._frames[parent]

    def add_body(self, name: str, parent=None, joint: Joint | None = None, placement=None,
                 mass: float = 0.0, com: ArrayLike = (0.0, 0.0, 0.0),
                 inertia: ArrayLike = ((0.0, 0.0, 0.0),) * 3, *,
                 check_inertia: bool = True) -> int:
        """Add a body moved by ``joint`` relative to ``parent`` (a name, an index, or None
        for the world). A :class:`~kanedyn.model.joints.Fixed` joint merges the body into
        its parent. Returns the index of the body that now carries this link.

        ``check_inertia=False`` takes a symmetric rotational inertia that is not a rigid
        body's as given (a loader's link that may become physical once merged with the
        links fixed to it); :meth:`build` then judges the merged body instead."""
        if not isinstance(name, str) or not name:
            raise ModelError(f"a body needs a non-empty name, got {name!r}")
        if name in self._frames:
            raise ModelError(f"body {name!r} is defined twice")
        if joint is None:
            joint = Fixed(name=f"{name}_fixed")
        if not isinstance(joint, Joint):
            raise ModelError(f"body {name!r}: joint must be a kanedyn Joint, got {joint!r}")
        try:
            m = float(mass)
            Ic = np.asarray(inertia, dtype=float).reshape(3, 3)
            c = np.asarray(com, dtype=float).reshape(3)
        except (TypeError, ValueError):
            raise ModelError(
                f"body {name!r}: mass must be a number, com a 3-vector and inertia a 3x3 "
                f"matrix; got mass={mass!r}, com={com!r}, inertia={inertia!r}"
            ) from None
        if not np.isfinite(m) or m < 0.0:
            raise ModelError(f"body {name!r}: mass {mass} is negative or not finite")
        if not (np.all(np.isfinite(Ic)) and np.all(np.isfinite(c))):
            raise ModelError(f"body {name!r}: inertia or centre of mass is not finite")
        ok, why = rotational_inertia_is_physical(Ic)
        if not ok and (check_inertia or why == "not symmetric"):
            raise ModelError(f"body {name!r}: rotational inertia {Ic.tolist()} is {why}")
        arm = joint.armature
        if not (isinstance(arm, (int, float, np.floating, np.integer)) and np.isfinite(arm)
                and arm >= 0.0):
            raise ModelError(f"joint {joint.name!r}: armature must be a finite number >= 0, "
                             f"got {arm!r}")
        pbody, X_pf = self._resolve(parent)
        # joint frame relative to the *body* that carries the parent frame
        X_tree = _as_transform(placement, f"body {name!r}") @ X_pf
        I_local = spatial_inertia(m, c, Ic)
        if isinstance(joint, Fixed):
            if pbody < 0:
                raise ModelError(
                    f"link {name!r} is fixed to the world; a fixed link has no dynamics "
                    "(drop it or give it a moving joint)"
                )
            pb = self._bodies[pbody]
            pb["inertia"] = pb["inertia"] + transform_inertia(X_tree.inverse().matrix(), I_local)
            pb["links"].append(name)
            pb["unchecked"] = pb["unchecked"] or not check_inertia
            self._frames[name] = (pbody, X_tree)
            return pbody
        idx = len(self._bodies)
        self._bodies.append(dict(name=name, parent=pbody, joint=joint, placement=X_tree,
                                 inertia=I_local, links=[name], unchecked=not check_inertia))
        self._frames[name] = (idx, Transform.identity())
        return idx

    def add_frame(self, name: str, parent, placement=None) -> None:
        """A massless named frame (a sensor, a tool point) fixed to ``parent``."""
        if name in self._frames:
            raise ModelError(f"frame {name!r} is defined twice")
        pbody, X_pf = self._resolve(parent)
        self._frames[name] = (pbody, _as_transform(placement, f"frame {name!r}") @ X_pf)

    def build(self, check_singular: bool = True, warn_unphysical: bool = True,
              accept_indefinite: bool = False) -> Model:
        """The Model. Bodies holding links added with ``check_inertia=False`` are judged
        as a whole; those that are positive semidefinite but
        break the triangle inequality are kept as given and listed in
        ``self.unphysical_bodies`` (``{body: reason}``), each with a KanedynWarning unless
        ``warn_unphysical=False`` (a loader that warns per link of its own file).
        ``accept_indefinite=True`` keeps, and lists, also bodies whose rotational inertia
        is not positive semidefinite (a loader that judges the M(q) they produce)."""
        self.unphysical_bodies: dict[str, str] = {}
        if not self._bodies:
            raise ModelError(f"model {self.name!r} has no moving body")
        names = [b["joint"].name for b in self._bodies]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ModelError(f"joint names used twice: {sorted(dup)}")
        bodies, iq, iv = [], 0, 0
        for i, d in enumerate(self._bodies):
            j = d["joint"]
            inertia = np.asarray(d["inertia"], dtype=float)
            if d["unchecked"]:
                inertia, why = _merged_inertia(d["name"], d["links"], inertia,
                                               accept_indefinite)
                if why:
                    self.unphysical_bodies[d["name"]] = why
                    if warn_unphysical:
                        warnings.warn(f"body {d['name']!r}: its rotational inertia is not a "
                                      f"rigid body's ({why}); kept as given", KanedynWarning,
                                      stacklevel=2)
            bodies.append(Body(d["name"], i, d["parent"], j, d["placement"],
                               inertia, slice(iq, iq + j.nq),
                               slice(iv, iv + j.nv)))
            iq += j.nq
            iv += j.nv
        # frames fixed to the world (links welded to the ground, the root link of a
        # fixed-base URDF) keep body -1; the world itself is not listed
        frames = {n: Frame(n, b, X) for n, (b, X) in self._frames.items()
                  if n != self.root_name}
        model = Model(self.name, tuple(bodies), self.gravity, frames, self.root_name)
        if check_singular:
            _check_nonsingular(model)
        return model


def _merged_inertia(name: str, links: list[str], I: NDArray,
                    accept_indefinite: bool = False) -> tuple[NDArray, str]:
    """The spatial inertia of a body built from links taken as given, judged as a whole,
    and ``""`` or the reason it is kept though not physical:

    - physical, or physical up to :data:`~kanedyn.spatial.INERTIA_ROUNDING` of its
      largest principal moment: returned (clipped, see
      :func:`~kanedyn.spatial.clip_rotational_inertia`);
    - positive semidefinite but breaking the triangle inequality I1 + I2 ≥ I3: no mass
      distribution has it, but the spatial inertia is still positive semidefinite, so
      M(q) is and the dynamics are well defined: returned as given, with the reason;
    - not positive semidefinite (a negative kinetic energy is possible): a ModelError
      naming the body and its links (``err.body``), or with ``accept_indefinite`` as
      given, with the reason."""
    m, c, Ic = inertia_parameters(I)
    # the merge sums link inertias about the body origin and moves the sum to the centre
    # of mass: its rounding is relative to m |c|² as much as to the moments themselves
    scale = m * float(c @ c)
    defect, why = rotational_inertia_defect(Ic, scale)
    if defect == 0.0:
        return I, ""
    if defect <= INERTIA_ROUNDING:
        if m > 0.0:
            return spatial_inertia(m, c, clip_rotational_inertia(Ic)), ""
        out = I.copy()
        out[:3, :3] = clip_rotational_inertia(Ic)
        return out, ""
    ev = np.linalg.eigvalsh(0.5 * (Ic + Ic.T))
    if accept_indefinite or ev[0] >= -INERTIA_ROUNDING * max(float(ev[2]), scale):
        return I, why
    merged = "" if len(links) == 1 else f" (links {', '.join(map(repr, links))} merged)"
    err = ModelError(f"body {name!r}{merged}: its rotational inertia about its centre of mass "
                     f"is not positive semidefinite ({why}), so M(q) need not be and the "
                     "kinetic energy can be negative; the merged body is judged, so this is "
                     "an error, not a warning: correct the file's <inertial>")
    err.body = name
    raise err


def singular_tolerance(model: Model) -> float:
    """The size below which a joint's inertia counts as none: 1e-12 of the largest entry of
    the bodies' spatial inertias (rounding in M, whose entries are sums of those)."""
    scale = max((float(np.abs(b.inertia).max()) for b in model.bodies), default=0.0)
    return 1e-12 * scale


def singular_joints(model: Model, q: ArrayLike | None = None) -> list[str]:
    """The joints that move no inertia at configuration q (default: the neutral one).

    Joint i moves no inertia when the articulated-body inertia of its subtree, projected
    on its motion subspace, ``D_i = S_iᵀ I^A_i S_i + armature_i 1``, has an eigenvalue at
    or below :func:`singular_tolerance` (Featherstone 2008, Table 7.1: ABA divides by
    D_i; M(q) is then singular). A massless leaf, or a point mass on a revolute axis, is
    such a joint at every q. Returned leaf first (the order ABA meets them).
    """
    from ..spatial import plucker

    qq = np.concatenate([b.joint.neutral() for b in model.bodies]) if q is None else \
        np.asarray(q, dtype=float).reshape(model.nq)
    tol = singular_tolerance(model)
    IA = [b.inertia.copy() for b in model.bodies]
    out = []
    for b in reversed(model.bodies):
        j = b.joint
        S = j.motion_subspace(qq[b.iq])
        D = S.T @ IA[b.index] @ S + j.armature * np.eye(j.nv)
        ev = np.linalg.eigvalsh(0.5 * (D + D.T))
        Ia = IA[b.index]
        if ev[0] <= tol:
            out.append(j.name)
        else:
            U = IA[b.index] @ S
            Ia = Ia - U @ np.linalg.solve(D, U.T)
        if b.parent >= 0:
            R, p = j.pose(qq[b.iq])
            X_up = plucker(R.T, p) @ b.X_tree
            IA[b.parent] = IA[b.parent] + X_up.T @ Ia @ X_up
    return out


def _check_nonsingular(model: Model) -> None:
    """Every joint must move some inertia (see :func:`singular_joints`), else a
    ModelError naming the first (``err.joint``, for loaders to point into their file)."""
    bad = singular_joints(model)
    if bad:
        b = model.bodies[model.joint_index(bad[0])]
        err = ModelError(
            f"joint {bad[0]!r} (body {b.name!r}) moves no inertia: the bodies it carries "
            "are massless or their mass lies on its axis, so M(q) would be singular "
            "(give it a rotor inertia, armature=, or its bodies mass)"
        )
        err.joint = bad[0]
        raise err
