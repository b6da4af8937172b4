"""``<equality>`` loop closures and ``<actuator>`` joint motors, as data for the layers above.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...errors import MJCFError
from .elements import MJCFActuator, MJCFEquality
from .reading import _Attrs, _compose, _invert, _quat_matrix, _skip

if TYPE_CHECKING:
    from .tree import _Parser


# --------------------------------------------------------------------------------------
# Equalities and actuators
# --------------------------------------------------------------------------------------

def _equalities(elements, P: _Parser) -> list[MJCFEquality]:
    where, out = P.where, []
    for k, (defaults, el) in enumerate(elements):
        at = _Attrs(el, defaults.attrs(el, None), where)
        if el.tag not in ("connect", "weld"):
            _skip(P.skipped, f"<equality> <{el.tag}>", el)
            continue
        if at.has("active") and not at.bool("active"):
            _skip(P.skipped, f"<equality> <{el.tag}> active='false'", el)
            continue
        name = at.str("name") or f"equality{k}"
        if at.has("site1") or at.has("site2"):
            sides = []
            for s in ("site1", "site2"):
                sn = at.str(s)
                if sn is None or sn not in P.sites:
                    raise MJCFError(f"{where(el)}: {s} {sn!r} is not a site of the model")
                sides.append(P.sites[sn])
            (b1, T1), (b2, T2) = sides
            T_b1 = T1
            T_b2 = T2
        else:
            b1, b2 = at.str("body1"), at.str("body2", "world")
            for role, b in (("body1", b1), ("body2", b2)):
                if b is None:
                    raise MJCFError(f"{where(el)}: missing required attribute {role!r}")
                if b not in P.world_pose:
                    raise MJCFError(f"{where(el)}: {role} {b!r} is not a body of the model")
            if el.tag == "connect":
                anchor = at.floats("anchor", 3)
                if anchor is None:
                    raise MJCFError(f"{where(el)}: connect needs an 'anchor'")
                T_b1 = (np.eye(3), anchor)
                # the same point in body2, at the reference configuration
                T_b2 = _compose(_invert(P.world_pose[b2]),
                                _compose(P.world_pose[b1], T_b1))
            else:
                anchor = at.floats("anchor", 3, (0.0, 0.0, 0.0))
                T_b2 = (np.eye(3), anchor)
                rel = at.floats("relpose", 7)
                if rel is not None and np.any(rel[3:]):
                    # MuJoCo: body1's weld point is relpose's position, and body2's
                    # axes keep relpose's rotation in body1
                    T_b1 = (_quat_matrix(rel[3:]), rel[:3])
                else:  # the anchor frame's pose in body1 at the reference configuration
                    T_b1 = _compose(_compose(_invert(P.world_pose[b1]),
                                             P.world_pose[b2]), T_b2)
        if at.has("torquescale") and el.tag == "weld":
            _skip(P.skipped, "<weld> torquescale (exact constraint instead)", el)
        ends = []
        for b, Tb in ((b1, T_b1), (b2, T_b2)):
            kb, Tk = P.carrier[b]
            Tf = _compose(Tk, Tb)
            ends.append((None if kb < 0 else P.kbodies[kb].name, Tf))
        if ends[0][0] is None and ends[1][0] is None:
            raise MJCFError(f"{where(el)}: both bodies of this {el.tag} are fixed to the "
                            "world")
        kind = "point" if el.tag == "connect" else "weld"
        out.append(MJCFEquality(name, kind, ends[0][0], ends[1][0], ends[0][1], ends[1][1],
                                el.line))
    return out


def _actuators(elements, P: _Parser) -> list[MJCFActuator]:
    where, out = P.where, []
    for k, (defaults, el) in enumerate(elements):
        at = _Attrs(el, defaults.attrs(el, None), where)
        if el.tag != "motor":
            _skip(P.skipped, f"<actuator> <{el.tag}>", el)
            continue
        joint = at.str("joint")
        if joint is None:
            _skip(P.skipped, "<actuator> <motor> on a tendon, site or body", el)
            continue
        if joint not in P.mj_joints:
            raise MJCFError(f"{where(el)}: joint {joint!r} is not a joint of the model")
        if P.mj_joints[joint].type != "hinge" and P.mj_joints[joint].type != "slide":
            _skip(P.skipped, "<actuator> <motor> on a ball or free joint", el)
            continue
        gear = at.floats("gear", None, (1.0,))
        if gear.size > 1 and np.any(gear[1:]):
            raise MJCFError(f"{where(el)}: gear {at.str('gear')!r} has more than one "
                            "non-zero entry for a one-dof joint")

        def limited(kind, P=P, at=at, el=el):
            lim = at.bool(f"{kind}limited", "auto")
            rng = at.floats(f"{kind}range", 2)
            if lim is None:
                lim = rng is not None and P.opts["autolimits"]
            if not lim:
                return None
            if rng is None or not rng[0] < rng[1]:
                raise MJCFError(f"{where(el)}: {kind}limited needs {kind}range with "
                                "lower < upper")
            return float(rng[0]), float(rng[1])

        out.append(MJCFActuator(at.str("name") or f"actuator{k}", joint, float(gear[0]),
                                limited("ctrl"), limited("force"), el.line))
    return out
