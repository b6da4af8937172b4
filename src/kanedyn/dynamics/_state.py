"""Input checks shared by the public algorithms: shapes, finiteness, unit quaternions."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import StateError
from ..model import Model
from ..model.configuration import as_state, check_configuration


def states(model: Model, q: ArrayLike, *rest: tuple[ArrayLike, str]) -> tuple[list[NDArray], bool]:
    """Validate q and any number of (array, name) speed-sized inputs to (N, ·) arrays.

    A single state broadcasts against a batch of others.
    """
    Q, single = check_configuration(model, q)
    out = [Q]
    for x, name in rest:
        X, s = as_state(model, x, model.nv, name)
        single = single and s
        out.append(X)
    N = max(a.shape[0] for a in out)
    for k, a in enumerate(out):
        if a.shape[0] not in (1, N):
            raise StateError(f"batch sizes differ: {[a.shape[0] for a in out]}")
        if a.shape[0] == 1 and N > 1:
            out[k] = np.broadcast_to(a, (N, a.shape[1]))
    return out, single


def external_forces(model: Model, f_ext: ArrayLike | None, N: int) -> NDArray | None:
    """f_ext as (N, nb, 6): one spatial force per body, in body coordinates."""
    if f_ext is None:
        return None
    F = np.asarray(f_ext, dtype=float)
    if F.ndim == 2:
        F = F[None]
    if F.ndim != 3 or F.shape[1:] != (model.nb, 6):
        raise StateError(
            f"f_ext must have shape ({model.nb}, 6) or (N, {model.nb}, 6) — one spatial "
            f"force [n; f] per body in body coordinates; got {np.shape(f_ext)}"
        )
    if not np.all(np.isfinite(F)):
        raise StateError("f_ext contains NaN or infinity")
    if F.shape[0] not in (1, N):
        raise StateError(f"f_ext has {F.shape[0]} states but the batch has {N}")
    return np.broadcast_to(F, (N, model.nb, 6))
