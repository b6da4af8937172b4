"""Between the public functions and the kernels: lazy loading, the general path, errors.

The public functions try the kernel first with the arguments as given. The
kernel's numba dispatcher accepts only float64 C-contiguous arrays of the
right number of dimensions and raises TypeError otherwise (at no cost when
the arguments are right); the kernel itself checks lengths, quaternion norms
and the finiteness of its result and returns a status. Only when either says
no does Python look closer: :func:`general` converts and validates (raising
a :class:`~kanedyn.StateError` that names the input at fault) and
:func:`fail` explains a non-zero status.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..errors import StateError
from ..model import Model
from ._state import external_forces, states


class _Kernels:
    """``K.name`` is the compiled entry point ``kernels.name``, loaded on first use
    (so that importing kanedyn compiles nothing)."""

    def __getattr__(self, name: str):
        from . import kernels

        disp = kernels.ready(name)
        setattr(self, name, disp)
        return disp


K = _Kernels()


def general(model: Model, q, speeds: tuple, f_ext=None):
    """Validated, contiguous float64 (N, ·) inputs: ``(Q, [X...], F or None, single)``.

    ``speeds`` is a tuple of (array, name) pairs of speed-sized inputs; a single
    state broadcasts against a batch.
    """
    arrays, single = states(model, q, *speeds)
    arrays = [np.ascontiguousarray(x, dtype=np.float64) for x in arrays]
    N = arrays[0].shape[0]
    F = None if f_ext is None else np.ascontiguousarray(external_forces(model, f_ext, N))
    return arrays, F, single


def fail(model: Model, status: NDArray | int, what: str, q, speeds: tuple, f_ext=None):
    """Raise the StateError that explains a non-zero kernel status."""
    from .kernels import BAD_SHAPE, NOT_FINITE

    st = np.atleast_1d(np.asarray(status))
    k = int(np.flatnonzero(st)[0])
    s = int(st[k])
    # the general checks name a wrong shape, a NaN input or a bad quaternion precisely
    (Q, *_), F, single = general(model, q, speeds, f_ext)
    where = "" if single else f" (state {k} of the batch)"
    if s > 0:
        j = model.bodies[s - 1].joint
        n = np.linalg.norm(Q[k, model.bodies[s - 1].iq][-4:])
        raise StateError(f"joint {j.name!r}: quaternion has norm {n:.6g}, not 1{where}")
    if s == BAD_SHAPE:
        raise StateError(f"{what}: an input has the wrong shape{where}")
    assert s == NOT_FINITE
    raise StateError(f"{what}: the result is not finite for finite input{where} — "
                     "the state is far outside the model's range (overflow)")
