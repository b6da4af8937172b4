"""The body tree: MJCF bodies and joints to kanedyn bodies (a chain of massless bodies for a
body with several joints, anchors off the origin moved onto the joint).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ...errors import KanedynWarning, MJCFError
from ...spatial import matrix_to_quat
from ..joints import Free, Joint, JointLimits, Prismatic, Revolute, Spherical
from ..urdf import _Element, _Where
from .elements import _BODY_REFUSE, MJCF_JOINT_TYPES, MJCFBody, MJCFJoint
from .inertia import _geom_properties, _geom_visual, _inertial, _read_meshes, _sum_inertias
from .reading import (
    _ATTACH_SUFFIX,
    _IDENTITY,
    _Attrs,
    _axis_rotation,
    _compose,
    _Defaults,
    _expand_replicates,
    _load_root,
    _merged_worldbody,
    _pose,
    _renamed,
    _skip,
    _walk,
)


def _joint(el: _Element, at: _Attrs, body: str, index: int, opts: dict, where,
           strict: bool = False) -> MJCFJoint:
    kind = "free" if el.tag == "freejoint" else at.str("type", "hinge")
    if kind not in MJCF_JOINT_TYPES:
        raise MJCFError(f"{where(el)}: unknown joint type {kind!r} (MJCF joint types are "
                        f"{', '.join(MJCF_JOINT_TYPES)})")
    name = at.str("name") or f"{body}_joint{index}"
    axis = at.floats("axis", 3, (0.0, 0.0, 1.0))
    if kind in ("hinge", "slide"):
        n = np.linalg.norm(axis)
        if n < 1e-12:
            raise MJCFError(f"{where(el)}: axis {at.str('axis')!r} is zero")
        axis = axis / n
    # angles of hinges and balls are in the compiler's unit; lengths are lengths
    scale = opts["angle_scale"] if kind in ("hinge", "ball") else 1.0
    limited = at.bool("limited", "auto")
    rng = at.floats("range", 2)
    if limited is None:
        limited = rng is not None and opts["autolimits"]
    if limited:
        if rng is None and kind != "ball":
            raise MJCFError(f"{where(el)}: limited='true' needs a range with lower < upper")
        lo, hi = (0.0, 0.0) if rng is None else rng * scale
        if kind in ("hinge", "slide") and not lo < hi:
            raise MJCFError(f"{where(el)}: range {at.str('range')!r} must have lower < upper")
        rng = (float(lo), float(hi))
    else:
        rng = None
    if el.tag == "freejoint":
        # MuJoCo's <freejoint> takes no defaults and no dynamics attributes
        return MJCFJoint(name, kind, body, np.zeros(3), axis, None, 0.0, 0.0, 0.0, 0.0, 0.0,
                         0.0, el.line)
    armature = at.nonneg("armature")
    if kind == "free" and armature > 0.0:
        # MuJoCo adds it to M in its own speeds, whose linear part is the world-frame
        # velocity; kanedyn's (and Pinocchio's) armature acts on the body-frame speeds.
        # M agrees, the bias forces differ by armature * (ω × v): say so, never silently.
        msg = (f"{where(el)}: armature {armature:g} on free joint {name!r}: kanedyn adds it "
               "to M in the body-frame speeds (as Pinocchio), MuJoCo in its world-frame "
               "linear speeds, so the bias forces differ by armature·(ω × v)")
        if strict:
            raise MJCFError(msg)
        warnings.warn(msg, KanedynWarning, stacklevel=5)
    return MJCFJoint(name, kind, body, at.floats("pos", 3, (0.0, 0.0, 0.0)), axis, rng,
                     at.float("ref", 0.0) * scale, at.float("springref", 0.0) * scale,
                     at.nonneg("stiffness"), at.nonneg("damping"), at.nonneg("frictionloss"),
                     armature, el.line)


@dataclass
class _KBody:
    """A kanedyn body being assembled: its parent (index, -1 world), joint, placement
    (pose of its joint frame in the parent body), and the parts of its inertia."""

    name: str
    parent: int
    joint: Joint
    placement: tuple
    parts: list = field(default_factory=list)
    mj_joint: MJCFJoint | None = None
    el: _Element | None = None


def _kanedyn_joint(j: MJCFJoint) -> Joint:
    limits = JointLimits() if j.range is None or j.type == "ball" else \
        JointLimits(j.range[0], j.range[1])
    common = dict(name=j.name, damping=j.damping, friction=j.frictionloss,
                  armature=j.armature, limits=limits)
    if j.type == "hinge":
        return Revolute(axis=tuple(j.axis), continuous=j.range is None, **common)
    if j.type == "slide":
        return Prismatic(axis=tuple(j.axis), **common)
    if j.type == "ball":
        return Spherical(**common)
    return Free(**common)


class _Parser:
    def __init__(self, root: _Element, source: str, base: Path, strict: bool):
        self.where = _Where(source)
        self.source, self.base, self.strict = source, base, strict
        self.skipped: dict[str, list[int]] = {}
        self.visual_parts: list[tuple] = []  # see _geom_visual
        where = self.where
        comp = [_Attrs(c, c.attrib, where) for c in root.findall("compiler")]
        opts = {"angle_scale": np.pi / 180.0, "eulerseq": "xyz", "inertiafromgeom": "auto",
                "inertiagrouprange": (0, 5), "meshdir": "", "autolimits": True,
                "boundmass": 0.0, "boundinertia": 0.0, "settotalmass": -1.0}
        known = {"angle", "eulerseq", "inertiafromgeom", "inertiagrouprange", "meshdir",
                 "assetdir", "autolimits", "boundmass", "boundinertia", "settotalmass",
                 "texturedir", "strippath", "discardvisual", "usethread", "fitaabb",
                 "convexhull", "exactmeshinertia", "saveinertial"}
        for at in comp:
            a = at.str("angle")
            if a is not None:
                if a not in ("degree", "radian"):
                    raise MJCFError(f"{where(at.el)}: angle={a!r} must be degree or radian")
                opts["angle_scale"] = np.pi / 180.0 if a == "degree" else 1.0
            seq = at.str("eulerseq")
            if seq is not None:
                if len(seq) != 3 or any(ch not in "xyzXYZ" for ch in seq):
                    raise MJCFError(f"{where(at.el)}: eulerseq={seq!r} must be three of "
                                    "x, y, z, X, Y, Z")
                opts["eulerseq"] = seq
            ifg = at.str("inertiafromgeom")
            if ifg is not None:
                if ifg not in ("auto", "true", "false"):
                    raise MJCFError(f"{where(at.el)}: inertiafromgeom={ifg!r} must be auto, "
                                    "true or false")
                opts["inertiafromgeom"] = ifg
            if at.has("inertiagrouprange"):
                g = at.floats("inertiagrouprange", 2)
                opts["inertiagrouprange"] = (int(g[0]), int(g[1]))
            if at.has("assetdir"):
                opts["meshdir"] = at.str("assetdir")
            if at.has("meshdir"):
                opts["meshdir"] = at.str("meshdir")
            if at.has("autolimits"):
                opts["autolimits"] = bool(at.bool("autolimits"))
            for k in ("boundmass", "boundinertia", "settotalmass"):
                if at.has(k):
                    opts[k] = at.float(k)
            if at.str("coordinate", "local") != "local":
                raise MJCFError(f"{where(at.el)}: coordinate='global' was removed from MJCF "
                                "(MuJoCo 2.3.3); give local coordinates")
            if at.has("balanceinertia") and at.bool("balanceinertia"):
                raise MJCFError(f"{where(at.el)}: balanceinertia='true' is not supported "
                                "(fix the inertias in the file)")
            if at.has("alignfree") and at.bool("alignfree"):
                raise MJCFError(f"{where(at.el)}: alignfree='true' (free bodies' frames moved "
                                "to their inertial frames) is not supported")
            if at.has("fusestatic") and at.bool("fusestatic"):
                _skip(self.skipped, "<compiler> fusestatic (kanedyn always merges welded "
                      "bodies; body names stay frames)", at.el)
            for k in at.a:
                if k not in known | {"coordinate", "balanceinertia", "fusestatic", "alignfree"}:
                    _skip(self.skipped, f"<compiler> {k}", at.el)
        self.opts = opts
        self.defaults = _Defaults(root, where)
        self.gravity = np.array([0.0, 0.0, -9.81])
        self.options: dict = {}
        for o in root.findall("option"):
            at = _Attrs(o, o.attrib, where)
            if at.has("gravity"):
                self.gravity = at.floats("gravity", 3)
            for k, v in o.attrib.items():
                if k != "gravity":
                    self.options[k] = v
                    _skip(self.skipped, f"<option> {k}", o)
            for f in o.findall("flag"):
                if f.attrib.get("gravity") == "disable":
                    self.gravity = np.zeros(3)
                for k in f.attrib:
                    if k != "gravity":
                        _skip(self.skipped, f"<option><flag> {k}", f)
        self.meshes = _read_meshes(root.findall("asset"), self.defaults, base, opts, where,
                                   self.skipped)
        # <asset><model name file>: models whose subtrees <attach> copies in, each read
        # with its own compiler settings, defaults and meshes (its own context)
        self.models = [c for a in root.findall("asset") for c in a.children
                       if c.tag == "model"]
        self._contexts: dict[str, tuple[_Parser, _Element]] = {}
        self.root = root
        self.attached: list[tuple] = []  # (parser, root, rename, names) per attachment
        self.ctx = self

    # ---- bodies ----------------------------------------------------------------------
    def bodies(self, world: _Element):
        """Walk the tree: MJCF bodies, kanedyn bodies, frames and sites."""
        where = self.where
        self.mj_bodies: dict[str, MJCFBody] = {}
        self.mj_joints: dict[str, MJCFJoint] = {}
        self.kbodies: list[_KBody] = []
        # MuJoCo body -> (kanedyn body index or -1, pose of the body's frame in it)
        self.carrier: dict[str, tuple[int, tuple]] = {"world": (-1, _IDENTITY)}
        self.world_pose: dict[str, tuple] = {"world": _IDENTITY}
        self.sites: dict[str, tuple[str, tuple]] = {}
        self.qpos0: list[NDArray] = []
        self.body_el: dict[str, _Element] = {}
        self.frames: list[tuple[str, int, tuple]] = []
        self.names: set[str] = {"world"}
        for c in world.children:
            if c.tag == "joint" or c.tag == "freejoint":
                raise MJCFError(f"{where(c)}: the world body cannot have joints")
            if c.tag == "inertial":
                raise MJCFError(f"{where(c)}: the world body cannot have an <inertial>")
        self._children(world, "world", _IDENTITY, world.attrib.get("childclass"))

    def _children(self, el: _Element, body: str, prefix: tuple, childclass: str | None):
        """The sub-elements of body ``body`` (or of a <frame> in it, ``prefix`` the frame's
        pose in the body) that are not its joints, geoms or inertial."""
        where = self.where
        for c in el.children:
            if c.tag == "body":
                self._body(c, body, prefix, childclass)
            elif c.tag == "frame":
                at = _Attrs(c, c.attrib, where)
                cc = c.attrib.get("childclass", childclass)
                self._children(c, body, _compose(prefix, _pose(at, self.ctx.opts)), cc)
            elif c.tag == "site":
                at = _Attrs(c, self.ctx.defaults.attrs(c, childclass), where)
                name = at.str("name")
                if name is not None:
                    self.sites[name] = (body, _compose(prefix, _pose(at, self.ctx.opts)))
                _skip(self.skipped, "<site>", c)  # (an equality may still name it)
            elif c.tag in ("joint", "freejoint", "geom", "inertial"):
                if body == "world" and c.tag == "geom":
                    _skip(self.skipped, "<geom> collision (contacts)", c)
                if el.tag == "frame" and c.tag != "geom":
                    raise MJCFError(f"{where(c)}: <{c.tag}> inside a <frame> is not "
                                    "supported (put it in the body)")
            elif c.tag == "attach":
                self._attach(c, body, prefix)
            elif c.tag in ("camera", "light", "plugin"):
                _skip(self.skipped, f"<{c.tag}>", c)
            elif c.tag in _BODY_REFUSE:
                raise MJCFError(f"{where(c)}: <{c.tag}> (generated bodies) is not supported; "
                                "expand it first (load the file in MuJoCo and save it with "
                                "mujoco.mj_saveLastXML)")
            else:
                _skip(self.skipped, f"<{c.tag}>", c)

    def _context(self, el: _Element, name: str) -> tuple[_Parser, _Element]:
        """The parser and worldbody of the model ``name`` of ``<asset><model>`` (its
        ``name``, or else the ``model`` attribute of the file's root, as in MuJoCo)."""
        if name in self._contexts:
            return self._contexts[name]
        roots = {}
        for m in self.models:
            file = m.attrib.get("file")
            if not file:
                raise MJCFError(f"{self.where(m)}: an <asset><model> needs a 'file'")
            path = Path(file) if Path(file).is_absolute() else self.base / file
            if m.attrib.get("name", name) != name:
                roots[m.attrib["name"]] = None
                continue
            root = _load_root(path, self.where, m)
            key = m.attrib.get("name") or root.attrib.get("model", path.stem)
            roots[key] = (root, path)
            if key == name:
                break
        if roots.get(name) is None:
            raise MJCFError(f"{self.where(el)}: model {name!r} is not an <asset><model> "
                            f"(models: {', '.join(sorted(roots)) or 'none'})")
        root, path = roots[name]
        child = _Parser(root, str(path), path.resolve().parent, self.strict)
        self.skipped.update({k: self.skipped.get(k, []) + v for k, v in child.skipped.items()})
        child.skipped = self.skipped  # one list for the whole model
        world = _merged_worldbody(root, str(path))
        _expand_replicates(world, child.opts, self.where)
        self._contexts[name] = (child, world)
        return child, world

    def _attach(self, el: _Element, parent: str, prefix: tuple) -> None:
        """``<attach model body prefix>``: a copy of that model's body subtree, every name
        in it prefixed, read in the attached model's own context (as MuJoCo attaches)."""
        at = _Attrs(el, el.attrib, self.where)
        for k in ("model", "body"):
            if not at.has(k):
                raise MJCFError(f"{self.where(el)}: missing required attribute {k!r}")
        child, world = self._context(el, at.str("model"))
        found = [b for b in _walk(world) if b.tag == "body"
                 and b.attrib.get("name") == at.str("body")]
        if not found:
            raise MJCFError(f"{self.where(el)}: model {at.str('model')!r} has no body "
                            f"{at.str('body')!r}")
        pre, post = at.str("prefix", ""), el.attrib.get(_ATTACH_SUFFIX, "")

        def rename(n, pre=pre, post=post):
            return pre + n + post

        names = {e.attrib["name"] for e in _walk(found[0]) if "name" in e.attrib}
        outer, self.ctx = self.ctx, child
        try:
            self._body(_renamed(found[0], rename), parent, prefix, None)
        finally:
            self.ctx = outer
        self.attached.append((child, child.root, rename, names))

    def _geoms(self, el: _Element, prefix: tuple, childclass: str | None, out: list):
        for c in el.children:
            if c.tag == "frame":
                at = _Attrs(c, c.attrib, self.where)
                self._geoms(c, _compose(prefix, _pose(at, self.ctx.opts)),
                            c.attrib.get("childclass", childclass), out)
            elif c.tag == "geom":
                out.append((c, prefix, childclass))

    def _body(self, el: _Element, parent: str, prefix: tuple, childclass: str | None):
        where, opts = self.where, self.ctx.opts
        cc = el.attrib.get("childclass", childclass)
        if cc is not None and cc not in self.ctx.defaults.classes:
            raise MJCFError(f"{where(el)}: unknown childclass {cc!r}")
        name = el.attrib.get("name") or f"body{len(self.mj_bodies) + 1}"
        if name in self.names:
            first = self.body_el.get(name)
            raise MJCFError(f"{where(el)}: body {name!r} is defined twice"
                            + (f" (first on line {first.line})" if first is not None else ""))
        self.names.add(name)
        self.body_el[name] = el
        at = _Attrs(el, el.attrib, where)
        R, p = _compose(prefix, _pose(at, opts))
        if at.has("gravcomp") and at.float("gravcomp") != 0.0:
            _skip(self.skipped, "<body> gravcomp (gravity compensation)", el)

        # inertia: <inertial>, or the geoms (compiler inertiafromgeom)
        ie = el.findall("inertial")
        geoms: list = []
        self._geoms(el, _IDENTITY, cc, geoms)
        ifg = opts["inertiafromgeom"]
        use_geoms = ifg == "true" or (ifg == "auto" and not ie)
        parts, source = [], "none"
        if ie and not use_geoms:
            parts.append(_inertial(ie[0], _Attrs(ie[0], ie[0].attrib, where), opts,
                                   self.strict, name, where))
            source = "inertial"
        lo, hi = opts["inertiagrouprange"]
        for g, gprefix, gcc in geoms:
            gat = _Attrs(g, self.ctx.defaults.attrs(g, gcc), where)
            props = _geom_properties(g, gat, opts, self.ctx.meshes, where)
            grp = int(gat.float("group", 0.0))
            if use_geoms and props is not None and lo <= grp <= hi:
                m, c, Ic = props
                Rg, pg = gprefix
                parts.append((m, pg + Rg @ c, Rg @ Ic @ Rg.T))
                source = "geoms"
            if props is not None and 0 <= grp <= 2:  # the groups MuJoCo's viewer shows
                self.visual_parts.append(_geom_visual(g, gat, self.ctx.opts,
                                                      self.ctx.meshes, where, gprefix, name))
            _skip(self.skipped, "<geom> collision (contacts)", g)
        mass, com, Ic = _sum_inertias(parts) if parts else (0.0, np.zeros(3),
                                                            np.zeros((3, 3)))
        mass, Ic = _bounded(mass, Ic, opts)

        # joints
        jels = [c for c in el.children if c.tag in ("joint", "freejoint")]
        joints = []
        for k, je in enumerate(jels):
            # MuJoCo's <freejoint> takes no default class
            jat = _Attrs(je, dict(je.attrib) if je.tag == "freejoint"
                         else self.ctx.defaults.attrs(je, cc), where)
            j = _joint(je, jat, name, k, opts, where, self.strict)
            if j.name in self.mj_joints:
                raise MJCFError(f"{where(je)}: joint {j.name!r} is defined twice (first on "
                                f"line {self.mj_joints[j.name].line})")
            if j.type == "ball" and j.range is not None:
                _skip(self.skipped, "<joint> range of a ball joint (not modelled)", je)
            if j.type in ("ball", "free") and j.stiffness > 0:
                _skip(self.skipped, f"<joint> stiffness of a {j.type} joint (not modelled)", je)
            if j.type in ("ball", "free") and j.frictionloss > 0:
                _skip(self.skipped, f"<joint> frictionloss of a {j.type} joint (not "
                      "modelled)", je)
            if jat.has("springdamper"):
                _skip(self.skipped, "<joint> springdamper", je)
            self.mj_joints[j.name] = j
            joints.append(j)
        if any(j.type == "free" for j in joints):
            fj = next(j for j in joints if j.type == "free")
            if len(joints) > 1:
                raise MJCFError(f"{where(el)}: a free joint ({fj.name!r}, line {fj.line}) "
                                "must be the body's only joint")
            if parent != "world":
                raise MJCFError(f"{where(el)}: a free joint ({fj.name!r}, line {fj.line}) "
                                "can only be in a body directly under <worldbody> (as in "
                                "MuJoCo)")

        mb = MJCFBody(name, parent, p, R, mass, com, Ic, tuple(joints), source, el.line)
        self.mj_bodies[name] = mb
        self.world_pose[name] = _compose(self.world_pose[parent], (R, p))

        kp, T_kp_parent = self.carrier[parent]
        T = _compose(T_kp_parent, (R, p))  # this body's reference frame in body kp
        if not joints:
            self.carrier[name] = (kp, T)
            if kp < 0:
                self.frames.append((name, -1, T))
            else:
                self.kbodies[kp].parts.append(_moved((mass, com, Ic), T))
                self.frames.append((name, kp, T))
        elif joints[0].type == "free":
            j = joints[0]
            self.kbodies.append(_KBody(name, -1, _kanedyn_joint(j), _IDENTITY,
                                       [(mass, com, Ic)], j, el))
            self.carrier[name] = (len(self.kbodies) - 1, _IDENTITY)
            W = self.world_pose[name]
            self.qpos0.append(np.concatenate([W[1], matrix_to_quat(W[0])]))
        else:
            prev_anchor = None
            parent_index, placement_base = kp, T
            for k, j in enumerate(joints):
                last = k == len(joints) - 1
                anchor = j.pos
                step = anchor if prev_anchor is None else anchor - prev_anchor
                placement = _compose(placement_base, (np.eye(3), step))
                # q counts from the reference pose at q = ref: turn the joint frame back by ref
                if j.type == "hinge" and j.ref != 0.0:
                    placement = _compose(placement, (_axis_rotation(j.axis, -j.ref),
                                                     np.zeros(3)))
                elif j.type == "slide" and j.ref != 0.0:
                    placement = _compose(placement, (np.eye(3), -j.ref * j.axis))
                at_origin = last and not np.any(anchor)
                kname = name if at_origin else f"{name}/{j.name}"
                if kname in self.names and kname != name:
                    raise MJCFError(f"{where(el)}: the moving body {kname!r} made for joint "
                                    f"{j.name!r} clashes with a body of that name")
                self.kbodies.append(_KBody(kname, parent_index, _kanedyn_joint(j), placement,
                                           [], j, el))
                parent_index = len(self.kbodies) - 1
                placement_base = _IDENTITY
                prev_anchor = anchor
                if j.type in ("hinge", "slide"):
                    self.qpos0.append(np.array([j.ref]))
                else:
                    self.qpos0.append(np.array([1.0, 0.0, 0.0, 0.0]))
            T_body = (np.eye(3), -prev_anchor)  # the body's frame in the last moving body
            self.kbodies[-1].parts.append(_moved((mass, com, Ic), T_body))
            self.carrier[name] = (parent_index, T_body)
            if self.kbodies[-1].name != name:
                self.frames.append((name, parent_index, T_body))
        self._children(el, name, _IDENTITY, cc)


def _scaled(mb: MJCFBody, f: float) -> MJCFBody:
    return MJCFBody(mb.name, mb.parent, mb.pos, mb.rotation, mb.mass * f, mb.com,
                    mb.inertia * f, mb.joints, mb.inertia_from, mb.line)


def _bounded(mass: float, Ic: NDArray, opts: dict) -> tuple[float, NDArray]:
    """MuJoCo's compiler boundmass and boundinertia: lower bounds on a body's mass and
    principal moments."""
    if opts["boundmass"] > 0:
        mass = max(mass, opts["boundmass"])
    if opts["boundinertia"] > 0:
        w, V = np.linalg.eigh(0.5 * (Ic + Ic.T))
        Ic = V @ np.diag(np.maximum(w, opts["boundinertia"])) @ V.T
    return mass, Ic


def _moved(part, T):
    """A part's (m, c, I_c) given in a frame whose pose in the body is T = (R, p)."""
    m, c, Ic = part
    R, p = T
    return m, p + R @ c, R @ Ic @ R.T
