"""The entry points: :func:`parse_mjcf` (the Model and what it does not carry) and
:func:`load_mjcf` (the Model alone).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

from ...errors import KanedynWarning, MJCFError, ModelError
from ..model import Model, ModelBuilder
from ..urdf import _Element, _Where
from .elements import _TOP_SKIP, MJCFRobot
from .equality import _actuators, _equalities
from .inertia import _sum_inertias, _visuals
from .reading import (
    _Defaults,
    _expand_replicates,
    _merged_worldbody,
    _read,
    _renamed,
    _root,
    _skip,
    _where_lines,
)
from .tree import _Parser, _scaled

_REFERENCES = {"equality": ("body1", "body2", "site1", "site2"), "actuator": ("joint",)}


def _referring(root: _Element, P: _Parser, table: str) -> list[tuple[_Defaults, _Element]]:
    """The elements of the model's ``<equality>`` or ``<actuator>`` tables with the defaults
    they read, then those of each attached model that refer only to what was attached
    (renamed with the attachment's prefix, as MuJoCo copies them)."""
    out = [(P.defaults, el) for t in root.findall(table) for el in t.children]
    for child, croot, rename, names in P.attached:
        for t in croot.findall(table):
            for el in t.children:
                refs = [el.attrib[k] for k in _REFERENCES[table] if k in el.attrib]
                if not refs or not all(r in names or r == "world" for r in refs):
                    continue
                copy = _renamed(el, rename)
                for k in _REFERENCES[table]:
                    if k in copy.attrib and copy.attrib[k] != "world":
                        copy.attrib[k] = rename(copy.attrib[k])
                out.append((child.defaults, copy))
    return out


def parse_mjcf(path: str | os.PathLike | None = None, *, string: str | None = None,
               strict: bool = False, warn: bool = True) -> MJCFRobot:
    """Read an MJCF file (or ``string=`` XML) and build its Model; see the module
    docstring for the conventions.

    Raises :class:`~kanedyn.errors.MJCFError` naming the element, its file and
    line. An ``<inertial>`` whose rotational inertia is not physical is a
    :class:`~kanedyn.errors.KanedynWarning` (an error with ``strict=True``); the
    Model is still refused if a merged body's inertia is not physical. What
    kanedyn does not model is listed in ``skipped`` and, with ``warn=True``, in
    one KanedynWarning.
    """
    if (path is None) == (string is None):
        raise MJCFError("give either a path or string=<xml>, not both or neither")
    if string is None:
        source = str(path)
        file = Path(path)
        if source.lstrip().startswith("<"):
            raise MJCFError(f"cannot read MJCF file {source[:60]!r}...: that looks like XML "
                            "text; pass string=...")
        text = _read(file, source, None, _Where(source))
        base = file.resolve().parent
        stack = (file.resolve(),)
    else:
        source, text, base, stack = "<string>", string, Path.cwd(), ()
    where = _Where(source)
    root = _root(text, source, base, stack, where)
    P = _Parser(root, source, base, strict)
    for c in root.children:
        if c.tag in _TOP_SKIP:
            _skip(P.skipped, f"<{c.tag}>", c)
        elif c.tag not in ("compiler", "option", "default", "asset", "worldbody", "equality",
                           "actuator"):
            _skip(P.skipped, f"<{c.tag}>", c)
    merged = _merged_worldbody(root, source)
    _expand_replicates(merged, P.opts, where)
    P.bodies(merged)
    equalities = _equalities(_referring(root, P, "equality"), P)
    actuators = _actuators(_referring(root, P, "actuator"), P)
    model = _build(P, root.attrib.get("model", Path(source).stem or "mjcf"))
    skipped = _where_lines(P.skipped, source)
    if warn and skipped:
        warnings.warn(f"{source}: {skipped_summary(skipped)}", KanedynWarning, stacklevel=3)
    qpos0 = np.concatenate(P.qpos0) if P.qpos0 else np.zeros(0)
    if string is None:  # the file, for the 3D views (see Model.source)
        model = replace(model, source=str(Path(path).resolve()))
    return MJCFRobot(model.name, model, P.mj_bodies, P.mj_joints, tuple(equalities),
                     tuple(actuators), qpos0, skipped, source, P.options, _visuals(P, model))


def skipped_summary(skipped: dict) -> str:
    """One sentence listing what was skipped, with (up to five) line numbers each."""
    items = []
    for what, lines in skipped.items():
        shown = ", ".join(str(n) for n in lines[:5]) + (", ..." if len(lines) > 5 else "")
        items.append(f"{what} x{len(lines)} (line{'s' if len(lines) > 1 else ''} {shown})")
    return "skipped what kanedyn does not model: " + "; ".join(items)


def _build(P: _Parser, name: str) -> Model:
    opts = P.opts
    if opts["settotalmass"] > 0:  # MuJoCo scales every body's mass and inertia alike
        total = sum(mb.mass for mb in P.mj_bodies.values())
        if not total > 0:
            raise MJCFError(f"{P.source}: <compiler settotalmass> on a model without mass")
        f = opts["settotalmass"] / total
        for kb in P.kbodies:
            kb.parts = [(m * f, c, Ic * f) for m, c, Ic in kb.parts]
        P.mj_bodies = {n: _scaled(mb, f) for n, mb in P.mj_bodies.items()}
    b = ModelBuilder(name, gravity=P.gravity, root_name="world")
    for kb in P.kbodies:
        m, c, Ic = _sum_inertias(kb.parts) if kb.parts else (0.0, np.zeros(3),
                                                               np.zeros((3, 3)))
        at = P.where(kb.el)
        try:
            b.add_body(kb.name, kb.parent, kb.joint, kb.placement, m, c, Ic)
        except ModelError as e:
            raise MJCFError(f"{at}: {e}") from None
    for fname, kb, T in P.frames:
        if fname in b._frames:
            continue
        try:
            b.add_frame(fname, kb if kb >= 0 else None, T)
        except ModelError as e:
            raise MJCFError(f"{P.where(P.body_el[fname])}: {e}") from None
    try:
        return b.build()
    except ModelError as e:
        jn = getattr(e, "joint", None)
        if jn in P.mj_joints:
            el = P.body_el[P.mj_joints[jn].body]
            raise MJCFError(f"{P.where(el)}, <joint name={jn!r}> (line "
                            f"{P.mj_joints[jn].line}): {e}") from None
        raise MJCFError(f"{P.source}: {e}") from None


def load_mjcf(path: str | os.PathLike | None = None, *, string: str | None = None,
              strict: bool = False) -> Model:
    """Load an MJCF (MuJoCo XML) file, or ``string=`` XML, as a Model.

    The joints' passive forces, ``<equality>`` loop closures and ``<actuator>``
    motors are in :func:`parse_mjcf`'s :class:`MJCFRobot`, and become force elements and
    loop closures with :func:`kanedyn.forces.mjcf_forces` and
    :func:`kanedyn.constraints.mjcf_system`. See :mod:`kanedyn.model.mjcf`.
    """
    return parse_mjcf(path, string=string, strict=strict).model
