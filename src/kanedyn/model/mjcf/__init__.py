"""MJCF import: a MuJoCo XML model to a :class:`~kanedyn.model.Model`.

MJCF (MuJoCo's XML format, https://mujoco.readthedocs.io, "XML Reference")
nests ``<body>`` elements in ``<worldbody>``. A body's ``pos`` and orientation
place its frame in its parent's frame; its ``<joint>`` elements (hinge,
slide, ball, free) move it relative to that reference pose, each about or
along an axis through an anchor ``pos`` given in the body's frame; a body
without joints is welded to its parent. Mass comes from ``<inertial>``, or,
without one, from the body's geoms as solids of uniform density
(``<compiler inertiafromgeom>``, see :mod:`kanedyn.model.geom_inertia`).

Loading is done in two steps, both public:

1. :func:`parse_mjcf` reads the XML (``<include>`` spliced in, each element
   remembering its file and line; ``<replicate>`` and ``<attach>`` expanded as
   MuJoCo expands them), resolves ``<default>`` classes and
   ``childclass``, turns every orientation into a rotation matrix, computes
   each body's inertia, and builds the Model; it returns an
   :class:`MJCFRobot` — the Model together with what it does not carry: the
   joints' passive parameters, ``<equality>`` loop closures, ``<actuator>``
   motors, the reference configuration ``qpos0`` and the list of what was
   skipped;
2. the layers above turn that data into objects of theirs:
   :func:`kanedyn.forces.mjcf_forces` (springs, dampers, friction loss) and
   :func:`kanedyn.constraints.mjcf_loops` / :func:`kanedyn.constraints.mjcf_system`
   (the loop closures of a ``ConstrainedSystem``).

:func:`load_mjcf` returns the Model alone.

Conventions (and how they map MuJoCo's):

- Joint order in q and v is MuJoCo's (bodies depth first in document order,
  a body's joints in document order), and ``q`` is MuJoCo's ``qpos`` for
  hinge, slide and ball joints (a hinge's angle counts from its reference pose
  at ``qpos = ref``, as in MuJoCo).
- A free joint's q is MuJoCo's too, (position, quaternion w x y z) of the body
  in the world. Its speeds differ: kanedyn's v is the body's spatial velocity
  in body coordinates, angular first, ``v = (ω_body, Rᵀ ṗ)``, where MuJoCo's
  ``qvel = (ṗ, ω_body)`` (linear velocity in world axes first).
- Every kanedyn body's frame is a MuJoCo body's frame, except where a joint's
  anchor is not at its body's origin: a revolute (or spherical) joint turns
  about its frame's origin, so the moving body's origin is put on the anchor
  and the MuJoCo body's frame becomes a frame of the Model named after the
  body (``model.frames[name]``; its pose is MuJoCo's ``xpos``/``xmat``). The
  moving body is then named ``<body>/<joint>``. A body with several
  joints becomes a chain of massless bodies ``<body>/<joint>``, one per joint,
  as MuJoCo composes them (each joint turns the body about its anchor in the
  frame left by the previous one). A body with no joint is merged into its
  parent (its frame kept) or, under the world, is static (a world frame).
- Angles are degrees unless ``<compiler angle="radian">`` (MuJoCo's default):
  euler, axisangle, and a hinge's or ball's range, ref and springref.

Skipped, with one :class:`~kanedyn.errors.KanedynWarning` listing them:
everything kanedyn does not model — collision (contacts) of geoms, sites,
cameras, lights, tendons, sensors, plugins, keyframes, visual and rendering
assets, solver options, actuators other than joint motors.
"""

from .elements import (
    MJCF_JOINT_TYPES,
    MJCFActuator,
    MJCFBody,
    MJCFEquality,
    MJCFJoint,
    MJCFRobot,
)
from .load import load_mjcf, parse_mjcf, skipped_summary

__all__ = ["MJCF_JOINT_TYPES", "MJCFActuator", "MJCFBody", "MJCFEquality", "MJCFJoint",
           "MJCFRobot", "load_mjcf", "parse_mjcf", "skipped_summary"]
