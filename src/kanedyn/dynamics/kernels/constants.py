"""The constants of the flat layout the kernels read, and the kernels' status codes.

A body row of the flat model (``flat.py``: one float64 row per body, the model's row
last) holds X_tree as (E, r), the joint's axis and pitch, the inertia parameters
(m, h = m c, Ī), the tree (parent, offsets in q and v, number of speeds) and the joint
code. They are in this package, which numba compiles and caches as one (see
``_cache``), so that a change of them recompiles every kernel. The packed buffer of
the single-state entry points is a header of :data:`HDR` floats, the flat model, and a
workspace of :func:`workspace_size` floats.
"""

# the layout of the flat model (described in flat.py), here so that a change of it
# invalidates numba's cache of these kernels
#: joint type codes in ``data[i, JTYPE]``
REVOLUTE, PRISMATIC, HELICAL, PLANAR, SPHERICAL, FREE = range(6)
JOINT_CODES = {"revolute": REVOLUTE, "prismatic": PRISMATIC, "helical": HELICAL,
               "planar": PLANAR, "spherical": SPHERICAL, "free": FREE}

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
# columns of the model row (the last row)
NB = 0
NQ = 1
NV = 2
GRAV = 3
QTOL = 6
CHAIN = 7
SINGTOL = 8
WIDTH = 37

NOT_FINITE = -1
BAD_SHAPE = -2
#: ``SINGULAR - i``: joint i moves no inertia (ABA's D_i has a pivot <= SINGTOL)
SINGULAR = -3

# The packed buffer of the single-state entry points (``*_f`` below): one 1-D float64
# array holding a header (nb, nq, nv, its own length), the flat model, and a workspace for the
# algorithms, so that a call from Python passes one array for all of it. Each array
# argument costs numba's dispatcher ~25 ns to type and, with the runtime (NRT) on,
# ~20 ns more to wrap; each array allocated in a kernel ~25 ns. The entry points
# are therefore compiled without the runtime and allocate nothing.
HDR = 8


def workspace_size(nb: int, nv: int) -> int:
    """Floats of workspace the entry points need: the largest of RNEA, CRBA and ABA."""
    rnea = 12 * nb + 6 * (3 * nb + 2)
    crba = 12 * nb + 13 * nb + 12 + 3 * nb
    aba = 24 * nb + 6 * nv + 6 * (3 * nb + 8) + 21 * nb + 72 * nb + nv
    return max(rnea, crba, aba)
