"""The kernels' status codes and the size of the packed buffer's workspace.

The flat layout itself (columns, joint codes, the header of :data:`~..layout.HDR`
floats) is :mod:`kanedyn.dynamics.layout`. The packed buffer of the single-state entry
points is that header, the flat model, and a workspace of :func:`workspace_size` floats.
"""

NOT_FINITE = -1
BAD_SHAPE = -2
#: ``SINGULAR - i``: joint i moves no inertia (ABA's D_i has a pivot <= SINGTOL)
SINGULAR = -3

# The packed buffer of the single-state entry points (``rnea_f`` ...): one 1-D float64
# array holding a header (nb, nq, nv, its own length: layout.HDR floats), the flat
# model, and a workspace for the algorithms, so that a call from Python passes one
# array for all of it. Each array argument costs numba's dispatcher ~25 ns to type
# and, with the runtime (NRT) on, ~20 ns more to wrap; each array allocated in a kernel
# ~25 ns. The entry points are therefore compiled without the runtime and allocate
# nothing.


def workspace_size(nb: int, nv: int) -> int:
    """Floats of workspace the entry points need: the largest of RNEA, CRBA and ABA."""
    rnea = 12 * nb + 6 * (3 * nb + 2)
    crba = 12 * nb + 13 * nb + 12 + 3 * nb
    aba = 24 * nb + 6 * nv + 6 * (3 * nb + 8) + 21 * nb + 72 * nb + nv
    return max(rnea, crba, aba)
