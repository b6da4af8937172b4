"""Input check of external forces, shared by RNEA and ABA."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import StateError
from ..model import Model


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
