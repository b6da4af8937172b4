"""Force elements of an MJCF model's joints: MuJoCo's passive joint forces.

MuJoCo applies to every scalar joint (hinge, slide) the passive force
``τ = −k (q − q_spring) − b q̇`` (``stiffness``, ``springref``, ``damping``)
and, as a constraint, dry friction ``frictionloss`` of level F: the joint
sticks while |τ| ≤ F and slides against ``−F sgn q̇``. Here those are a
:class:`JointSpring`, a :class:`JointDamper` (also on ball and free joints,
all of whose speeds MuJoCo damps alike) and a :class:`JointFriction` with a
Coulomb law of level F — exact (a sgn, for ``kd.simulate(method="stickslip")``)
or smoothed (for every integrator of ``kd.simulate``).
"""

from __future__ import annotations

from ..errors import ModelError
from ..friction.laws import Stribeck
from ..friction.smoothing import make_smoothing
from .base import ForceElement
from .friction import JointFriction
from .joint import JointDamper, JointSpring


def mjcf_forces(robot, frictionloss: str = "smooth", eps: float = 1e-3,
                smoothing: str = "tanh") -> list[ForceElement]:
    """The springs, dampers and friction elements of a parsed MJCF model
    (:class:`kanedyn.model.mjcf.MJCFRobot`), one per joint and kind where its
    coefficient is non-zero.

    ``frictionloss="smooth"`` gives a Coulomb friction element smoothed by
    ``smoothing`` ("tanh" or "sqrt") of width ``eps`` (m/s or rad/s);
    ``frictionloss="exact"`` an exact-stiction one (sgn; simulate it with
    ``kd.simulate(..., method="stickslip")``). A spring's rest position is
    ``springref``, in q (radians for a hinge).
    """
    if frictionloss not in ("smooth", "exact"):
        raise ModelError(f"mjcf_forces: frictionloss={frictionloss!r} must be 'smooth' or "
                         "'exact'")
    sm = make_smoothing(smoothing, eps) if frictionloss == "smooth" else None
    out: list[ForceElement] = []
    for j in robot.joints.values():
        scalar = j.type in ("hinge", "slide")
        if scalar and j.stiffness > 0.0:
            out.append(JointSpring(j.name, j.stiffness, j.springref))
        if j.damping > 0.0:
            out.append(JointDamper(j.name, j.damping))
        if scalar and j.frictionloss > 0.0:
            F = j.frictionloss
            # Fs = Fc: no Stribeck dip, plain Coulomb (vs is then irrelevant)
            out.append(JointFriction(j.name, Stribeck(F, F, 1.0, 2.0, 0.0, sm)))
    return out
