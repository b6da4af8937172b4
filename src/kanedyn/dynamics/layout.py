"""The flat layout of a Model: the one packing every compiled consumer reads.

:func:`kanedyn.dynamics.flat.flatten` packs a :class:`~kanedyn.model.Model` into one
C-contiguous float64 array ``data`` of shape (nb + 1, :data:`WIDTH`): row i
(0 ≤ i < nb) describes body i and its joint, the last row the whole model. The
dynamics kernels, the energy and derivative kernels, the configuration map, the
compiled RK4/AVF loops and the batched simulation all read this array and nothing
else; this module is the only place its columns, the joint codes and the row width
are defined (:mod:`.kernels` re-exports them while it is being split).

Body row i (coordinates: "parent" is the parent body's frame, "joint" the joint
frame fixed to the parent, "body" the child's own frame):

============  =====  ===========================================================
column        width  holds
============  =====  ===========================================================
``E_TREE``    9      E of ``X_tree = joint_X_parent`` as Featherstone's (E, r),
                     row-major: the rotation from parent to joint coordinates
``R_TREE``    3      r of X_tree: the joint frame's origin, parent coordinates
``AXIS``      3      unit joint axis (revolute, prismatic, helical), joint frame
``PITCH``     1      helical pitch h (translation h q along the axis), else 0
``MASS``      1      m, the body's mass
``H``         3      h = m c, first moment of mass, body coordinates
``IBAR``      9      Ī = I_c + m c× c×ᵀ, rotational inertia about the body origin,
                     body coordinates, row-major; ``I = [Ī, h×; h×ᵀ, m 1]``
                     (Featherstone 2008, eq. 2.63)
``PARENT``    1      index of the parent body, -1 for the world
``JTYPE``     1      joint type code (:data:`JOINT_CODES`)
``IQ``        1      offset of the joint's coordinates in q
``IV``        1      offset of the joint's speeds in v
``NVJ``       1      the joint's number of speeds
``AXIS_ID``   1      0, 1 or 2 when a revolute axis is the unit x, y or z axis (a
                     cheaper transform), else -1
``SIDX``      1      k when the motion subspace of a one-speed joint is the unit
                     vector e_k of R⁶ (revolute or prismatic about a unit axis:
                     ``Sᵀ f = f[k]``, ``I S`` is column k of I), else -1
``ARMATURE``  1      the joint's rotor inertia, added to M's diagonal at each of
                     its speeds (:attr:`kanedyn.model.joints.Joint.armature`)
``SUNIT``     1      n > 0 when S is the first n = nv columns of the 6 x 6
                     identity, ``S[:, c] = e_c`` (spherical 3, free 6: ``S = 1``;
                     :attr:`kanedyn.model.joints.Joint.identity_columns`), else 0:
                     the kernels pick columns of an inertia instead of forming S
``JFUNCS``    1      for ``JTYPE = EXTENSION`` (a joint type beyond the built-in
                     codes), the address of its entry table of C entry points
                     (:mod:`kanedyn.dynamics.kernels.joint_extension`), else 0
============  =====  ===========================================================

Model row (the last, index nb):

============  =====  ===========================================================
``NB``        1      number of bodies
``NQ``        1      length of q
``NV``        1      length of v
``GRAV``      3      the world gravity vector g, world coordinates (the spatial
                     gravity acceleration is ``[0; g]``)
``QTOL``      1      tolerance on the norm of a quaternion in q
                     (:data:`kanedyn.model.joints.QUAT_TOL`, read at run time)
``CHAIN``     1      1 if every body's parent is the body before it, else 0
``SINGTOL``   1      the pivot of ABA's ``D_i`` at or below which joint i moves no
                     inertia (:func:`kanedyn.model.model.singular_tolerance`)
============  =====  ===========================================================

Integers (parent, type, offsets, flags) are stored as floats, exactly
representable. The single-state entry points take ``data`` inside a larger 1-D
buffer: a header of :data:`HDR` floats (nb, nq, nv, the buffer's length, then
unused), ``data``, then the kernels' workspace (:mod:`.flat`).

**The version rule.** :data:`LAYOUT_VERSION` numbers this table. Whoever changes
a column, the width, the header or a joint code bumps it and records the new
:data:`LAYOUT_FINGERPRINT` (a digest of the table, computed by
:func:`fingerprint`); importing this module with a changed table and the old
version raises :class:`LayoutError` naming both fingerprints. Every compiled
module keys its numba disk cache by the version and by the source of every file
it compiles in (:func:`kanedyn.dynamics._compiled.key_cache`), so a cache built
against another layout is never loaded: it is recompiled.
"""

from __future__ import annotations

import hashlib

#: bump on any change of the tables below, and record the new fingerprint
LAYOUT_VERSION = 3

# joint type codes in ``data[i, JTYPE]``
REVOLUTE, PRISMATIC, HELICAL, PLANAR, SPHERICAL, FREE = range(6)
#: joint kind (:attr:`kanedyn.model.joints.Joint.kind`) → code: the built-in types,
#: whose primitives the kernels call directly
JOINT_CODES = {"revolute": REVOLUTE, "prismatic": PRISMATIC, "helical": HELICAL,
               "planar": PLANAR, "spherical": SPHERICAL, "free": FREE}
#: the code of every other joint type with compiled primitives: the kernels call them
#: through the entry table at ``data[i, JFUNCS]``
EXTENSION = 6

# columns of a body row
E_TREE = 0
R_TREE = 9
AXIS = 12
PITCH = 15
MASS = 16
H = 17
IBAR = 20
PARENT = 29
JTYPE = 30
IQ = 31
IV = 32
NVJ = 33
AXIS_ID = 34
SIDX = 35
ARMATURE = 36
SUNIT = 37
JFUNCS = 38
# columns of the model row (the last row)
NB = 0
NQ = 1
NV = 2
GRAV = 3
QTOL = 6
CHAIN = 7
SINGTOL = 8
#: floats in a row
WIDTH = 39
#: floats in the header of the packed buffer before ``data``
HDR = 8

#: (name, first column, width) of a body row, in column order
BODY_COLUMNS = (("E_TREE", E_TREE, 9), ("R_TREE", R_TREE, 3), ("AXIS", AXIS, 3),
                ("PITCH", PITCH, 1), ("MASS", MASS, 1), ("H", H, 3), ("IBAR", IBAR, 9),
                ("PARENT", PARENT, 1), ("JTYPE", JTYPE, 1), ("IQ", IQ, 1), ("IV", IV, 1),
                ("NVJ", NVJ, 1), ("AXIS_ID", AXIS_ID, 1), ("SIDX", SIDX, 1),
                ("ARMATURE", ARMATURE, 1), ("SUNIT", SUNIT, 1), ("JFUNCS", JFUNCS, 1))
#: (name, first column, width) of the model row
MODEL_COLUMNS = (("NB", NB, 1), ("NQ", NQ, 1), ("NV", NV, 1), ("GRAV", GRAV, 3),
                 ("QTOL", QTOL, 1), ("CHAIN", CHAIN, 1), ("SINGTOL", SINGTOL, 1))

#: the fingerprint of the tables of version :data:`LAYOUT_VERSION`
LAYOUT_FINGERPRINT = "646ff792023e6fb9"


class LayoutError(ImportError):
    """The flat layout changed without a bump of :data:`LAYOUT_VERSION`, or its tables
    are inconsistent (overlapping columns, a column beyond the row)."""


def fingerprint() -> str:
    """A digest of the tables (columns, widths, joint codes, header): what a layout
    version stands for."""
    table = (BODY_COLUMNS, MODEL_COLUMNS, WIDTH, HDR, tuple(sorted(JOINT_CODES.items())),
             EXTENSION)
    return hashlib.sha256(repr(table).encode()).hexdigest()[:16]


def _check() -> None:
    for what, columns in (("body", BODY_COLUMNS), ("model", MODEL_COLUMNS)):
        used: dict[int, str] = {}
        for name, first, width in columns:
            if globals()[name] != first:
                raise LayoutError(f"flat layout: the {what} table says {name} = {first}, the "
                                  f"constant is {globals()[name]}")
            for c in range(first, first + width):
                if c in used or not 0 <= c < WIDTH:
                    raise LayoutError(
                        f"flat layout: {what} column {name} ({first}..{first + width - 1}) "
                        + (f"overlaps {used[c]}" if c in used else f"is beyond WIDTH = {WIDTH}"))
                used[c] = name
    now = fingerprint()
    if now != LAYOUT_FINGERPRINT:
        table = ", ".join(f"{n}={c}" for n, c, _ in BODY_COLUMNS)
        raise LayoutError(
            f"the flat layout changed but LAYOUT_VERSION is still {LAYOUT_VERSION}: its "
            f"tables have fingerprint {now!r}, version {LAYOUT_VERSION} recorded "
            f"{LAYOUT_FINGERPRINT!r} (body columns now {table}; WIDTH={WIDTH}, HDR={HDR}). "
            f"Bump LAYOUT_VERSION in {__file__} and set LAYOUT_FINGERPRINT = {now!r}")


_check()
