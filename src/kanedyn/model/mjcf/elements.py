"""What an MJCF file gives beyond the Model, as data: the MJCF joints, bodies, equalities,
actuators and the :class:`MJCFRobot` that :func:`~kanedyn.model.mjcf.parse_mjcf` returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from numpy.typing import NDArray

from ..model import Model

#: joint types of MJCF
MJCF_JOINT_TYPES = ("hinge", "slide", "ball", "free")

# elements inside a body that generate bodies: refused (the rest is read, or skipped)
_BODY_REFUSE = ("composite", "flexcomp")
_TOP_SKIP = ("visual", "statistic", "size", "tendon", "sensor", "keyframe", "contact",
             "extension", "custom", "deformable", "plugin")
_ACTUATOR_TAGS = ("motor", "general", "position", "velocity", "intvelocity", "damper",
                  "cylinder", "muscle", "adhesion", "plugin")


# --------------------------------------------------------------------------------------
# The file's content as data
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MJCFJoint:
    """One MJCF joint, angles in radians: ``range`` is None when the joint is not limited."""

    name: str
    type: str
    body: str
    pos: NDArray
    axis: NDArray
    range: tuple[float, float] | None
    ref: float
    springref: float
    stiffness: float
    damping: float
    frictionloss: float
    armature: float
    line: int


@dataclass(frozen=True)
class MJCFBody:
    """A MuJoCo body: its pose in its parent's frame at the reference configuration,
    and its mass, centre of mass and rotational inertia about it, in its own frame."""

    name: str
    parent: str
    pos: NDArray
    rotation: NDArray
    mass: float
    com: NDArray
    inertia: NDArray
    joints: tuple[MJCFJoint, ...]
    inertia_from: str
    line: int


@dataclass(frozen=True)
class MJCFEquality:
    """An ``<equality connect|weld>`` as a loop closure between two kanedyn bodies
    (None: the world), each side's frame (R, p) in its body's coordinates."""

    name: str
    kind: str
    body_a: str | None
    body_b: str | None
    frame_a: tuple[NDArray, NDArray]
    frame_b: tuple[NDArray, NDArray]
    line: int


@dataclass(frozen=True)
class MJCFActuator:
    """A ``<motor>`` on a joint: joint force ``gear * ctrl``, ctrl within ``ctrlrange``
    (None: unlimited)."""

    name: str
    joint: str
    gear: float
    ctrlrange: tuple[float, float] | None
    forcerange: tuple[float, float] | None
    line: int


@dataclass(frozen=True)
class MJCFRobot:
    """The content of an MJCF file: the Model and what it does not carry.

    ``bodies`` are MuJoCo's bodies in MuJoCo's order (world excluded), ``joints``
    MuJoCo's joints in q order, ``qpos0`` the reference configuration (kanedyn q)
    at which MuJoCo's model is defined, ``skipped`` what was not read
    (``{"<tag> / what": [lines]}``, a line of an included or attached file as
    ``"file.xml:line"``)."""

    name: str
    model: Model
    bodies: dict
    joints: dict
    equalities: tuple[MJCFEquality, ...]
    actuators: tuple[MJCFActuator, ...]
    qpos0: NDArray
    skipped: dict
    source: str
    options: dict = field(default_factory=dict)
    #: the visible geoms (groups 0-2) as :class:`~kanedyn.model.visuals.VisualGeometry`
    visuals: tuple = ()
