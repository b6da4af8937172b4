"""Karnopp's velocity dead band around an exact friction law (Karnopp, ASME J. Dyn. Sys.
107, 1985): outside the band |w| >= band the exact law acts; inside it the force that
holds v̇_j = 0, clipped to ±Fs. The fixed-step simulation of
:mod:`kanedyn.sim.time_stepping` is what applies it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import FrictionError
from .laws import FrictionLaw


@dataclass(frozen=True)
class Karnopp:
    """Karnopp's velocity dead band of half-width ``band`` around an exact law."""

    law: FrictionLaw
    band: float

    def __post_init__(self):
        if not isinstance(self.law, FrictionLaw):
            raise FrictionError(f"Karnopp: {self.law!r} is not a static friction law")
        b = float(self.band)
        if not np.isfinite(b) or b <= 0.0:
            raise FrictionError(f"Karnopp: band={self.band} must be finite and > 0")
        object.__setattr__(self, "band", b)
