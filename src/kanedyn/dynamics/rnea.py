"""Inverse dynamics by the recursive Newton–Euler algorithm (Featherstone 2008, Table 5.1).

The computation is :func:`kanedyn.dynamics.kernels.rnea.rnea_core` (numba); the
readable definition it is tested against is :func:`kanedyn.dynamics.reference.rnea`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..model import Model
from ._dispatch import c_front, fast_path, run_batch
from .data import Data
from .kernels.entries import ENTRIES

_RNEA, _NLE, _GRAVITY = (ENTRIES[n] for n in ("rnea", "nonlinear_effects", "gravity_torques"))

# (one float64 state goes straight to the kernel: the fast path of _dispatch.fast_path;
# the bodies below are the general path)


@fast_path(_RNEA)
def rnea(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike,
         f_ext: ArrayLike | None = None, *, out: NDArray | None = None,
         data: Data | None = None) -> NDArray:
    """Joint forces ``τ = M(q) a + C(q, v) v + g(q) - Σ_i J_iᵀ f_ext,i``.

    ``f_ext`` (nb x 6, optional) is the external spatial force ``[n; f]`` on
    each body, in that body's coordinates (Pinocchio's LOCAL convention).
    Accepts one state or a batch (leading axis; the batch runs in parallel).
    ``out``: an array of the result's shape to write into (and return), which
    saves an allocation per call in a hot loop.
    """
    return run_batch(_RNEA, model, q, ((v, "v"), (a, "a")), f_ext, out, pack=_flags(True, True))


rnea = c_front(rnea, _RNEA)


@fast_path(_NLE)
def nonlinear_effects(model: Model, q: ArrayLike, v: ArrayLike, *,
                      out: NDArray | None = None, data: Data | None = None) -> NDArray:
    """``h(q, v) = C(q, v) v + g(q)`` = RNEA with zero acceleration."""
    return run_batch(_NLE, model, q, ((v, "v"),), None, out, pack=_flags(True, False))


nonlinear_effects = c_front(nonlinear_effects, _NLE)


@fast_path(_GRAVITY)
def gravity_torques(model: Model, q: ArrayLike, *, out: NDArray | None = None,
                    data: Data | None = None) -> NDArray:
    """``g(q)``: the joint forces that hold the model still against gravity."""
    return run_batch(_GRAVITY, model, q, (), None, out, pack=_flags(False, False))


gravity_torques = c_front(gravity_torques, _GRAVITY)


def _flags(use_v: bool, use_a: bool):
    """What RNEA's batched kernel (one for the three entries) takes between Q and the
    result: V and A (zeros for the ones the entry leaves out), F, whether it uses v, a
    and F."""

    def pack(N, fm, X, F, has_f):
        zeros = np.zeros((N, fm.nv)) if len(X) < 2 else None
        return (X[0] if use_v else zeros, X[1] if use_a else zeros, F, use_v, use_a, has_f)

    return pack
