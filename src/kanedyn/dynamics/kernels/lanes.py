"""Several states at once: the batched kernels' tasks, lane blocks on the stack.

A batched kernel hands out tasks of :data:`BATCH_TASK` states; within a task the lane
forms of the algorithms (``rnea_lanes``, ``crba_lanes``, ``aba_lanes``, each beside
its single-state form in ``rnea.py``, ``crba.py``, ``aba.py``) run :data:`LANES`
states through the same arithmetic, on blocks allocated on the stack
(:func:`stack_array`).
"""

from __future__ import annotations

from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .. import _compiled

_compiled.key_cache(__name__)  # (see dynamics/_compiled.py)

# States per task of the batched kernels: each task allocates its workspace once.
# Tasks are handed out dynamically (the wrappers set numba's parallel chunk size to
# 1 around the call), so a thread whose core is busy with other work takes fewer.
BATCH_TASK = 32


# --- Several states at once: the batched RNEA and CRBA ------------------------
#
# The batched RNEA and CRBA run LANES states through the algorithm together: every
# quantity of the recursion is an (·, LANES) block, and each step a loop over the
# lanes, which the compiler turns into vector instructions (8 doubles with AVX-512).
# The tree, the joint types and so every branch are the same for all states, so
# the lanes never diverge; only joints whose S is not a unit vector (rare), failed
# quaternions and, in CRBA, angles beyond SINCOS_BIG fall back to the scalar
# helpers, lane by lane. The arithmetic is that of rnea_core and crba_core,
# operation for operation: a state gives the same bits alone or in a batch.
#
# The vectoriser needs to know that the blocks do not overlap, or it gives up
# ("too many memory checks"): numba does not mark arrays as not aliasing, so the
# blocks live on the stack (:func:`stack_array`, an LLVM alloca, which no other
# pointer can alias), sized for up to LANE_BODIES bodies (larger trees take the
# per-state kernels), and the lane loops run to a count the compiler does not know
# (a loop of exactly 8 is unrolled first and then not vectorised).

#: states per lane block (one AVX-512 register of doubles)
LANES = 8
#: the largest tree the lane kernels take (their stack blocks: ~120 kB each)
LANE_BODIES = 64
# (stack_array takes constants: a product written in the call is not one to numba)
LANE_ANGLES = LANE_BODIES * LANES


@intrinsic
def stack_array(typingctx, shape):
    """A C-contiguous float64 array of the given shape (a tuple of compile-time constant
    ints) on the stack of the calling function: it lives as long as that function's
    frame, and the compiler knows that no other array overlaps it. Its size is the
    product of the shape, so the array cannot reach past its block."""
    if not (isinstance(shape, types.BaseTuple)
            and all(isinstance(d, types.IntegerLiteral) for d in shape.types)):
        return None
    dims = [d.literal_value for d in shape.types]
    arrty = types.Array(types.float64, len(dims), "C")

    def codegen(context, builder, sig, args):
        from numba.np.arrayobj import make_array, populate_array

        intp = context.get_value_type(types.intp)
        size = 1
        for d in dims:
            size *= d
        data = cgutils.alloca_once(builder, context.get_value_type(types.float64), size=size)
        strides, step = [], 8
        for d in reversed(dims):
            strides.insert(0, step)
            step *= d
        ary = make_array(arrty)(context, builder)
        populate_array(ary, data=data, shape=[intp(d) for d in dims],
                       strides=[intp(x) for x in strides], itemsize=intp(8), meminfo=None)
        return ary._getvalue()

    return arrty(shape), codegen


@njit(cache=True, _nrt=False, forceinline=True)
def lane_cross_unit_add(Vb, i, k, Xv, k0, o, L, dst):
    """``dst[i, :, l] += v_i × (s e_k)`` with s = ``Xv[k0 + l, o]`` (as :func:`cross_unit_add`)."""
    if k < 3:
        # rows (r1, r2) += ±(ω_a, ω_b) s and (r4, r5) += ±(v_a, v_b) s
        a, b = (2, 1) if k == 0 else ((2, 0) if k == 1 else (1, 0))
        r1, r2 = (1, 2) if k == 0 else ((0, 2) if k == 1 else (0, 1))
        sg = 1.0 if k != 1 else -1.0
        for l in range(L):
            s = Xv[k0 + l, o]
            x1 = Vb[i, a, l] * s
            x2 = Vb[i, b, l] * s
            y1 = Vb[i, 3 + a, l] * s
            y2 = Vb[i, 3 + b, l] * s
            if sg > 0:
                dst[i, r1, l] += x1
                dst[i, r2, l] -= x2
                dst[i, 3 + r1, l] += y1
                dst[i, 3 + r2, l] -= y2
            else:
                dst[i, r1, l] -= x1
                dst[i, r2, l] += x2
                dst[i, 3 + r1, l] -= y1
                dst[i, 3 + r2, l] += y2
    else:
        a, b = (2, 1) if k == 3 else ((2, 0) if k == 4 else (1, 0))
        r1, r2 = (4, 5) if k == 3 else ((3, 5) if k == 4 else (3, 4))
        sg = 1.0 if k != 4 else -1.0
        for l in range(L):
            s = Xv[k0 + l, o]
            x1 = Vb[i, a, l] * s
            x2 = Vb[i, b, l] * s
            if sg > 0:
                dst[i, r1, l] += x1
                dst[i, r2, l] -= x2
            else:
                dst[i, r1, l] -= x1
                dst[i, r2, l] += x2
