"""An external wrench on a body, mapped to joint space by ``τ = Jᵀ f``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from .. import dynamics as dyn
from ..errors import ModelError, StateError
from .base import ForceElement
from .joint import joint_model

FRAMES = ("local", "world")


class ExternalWrench(ForceElement):
    """A spatial force ``f = [n; f]`` on ``body``, constant or a function ``f(t, q, v)``.

    ``frame="local"``: f in the body's own coordinates, moment about its origin
    (the ``f_ext`` convention of :func:`kanedyn.rnea`); ``frame="world"``: f in
    world coordinates, moment about the world origin. Joint forces follow by
    virtual power, ``τ = Jᵀ f`` with the Jacobian of the same frame (Featherstone
    2008, eq. 5.20). ``body`` may name any frame (a tool point, a merged link): the
    wrench then acts at that frame, in its axes for ``"local"`` (``kd.jacobian`` gives
    the frame's own Jacobian). Non-conservative: its work enters W_nc.
    """

    def __init__(self, body: str | int, wrench: ArrayLike | Callable, frame: str = "local"):
        if frame not in FRAMES:
            raise ModelError(f"ExternalWrench: frame {frame!r} is not one of {FRAMES}")
        if not callable(wrench):
            w = np.asarray(wrench, dtype=float)
            if w.shape != (6,) or not np.all(np.isfinite(w)):
                raise ModelError(f"ExternalWrench on {body!r}: wrench must be 6 finite numbers "
                                 f"[n; f], got {wrench!r}")
        self.body, self.wrench, self.frame = body, wrench, frame
        self._model = None

    def bind(self, system) -> ExternalWrench:
        model = joint_model(system)  # (a compiled Kane tree: the Model it was derived from)
        if model is None:
            raise ModelError("ExternalWrench needs a system built on a Model (for its "
                             "Jacobian): a Model, or Kane equations derived from one")
        model.frame(self.body)  # raises naming the frames and bodies if there is none
        out = ExternalWrench(self.body, self.wrench, self.frame)
        out._model = model
        return out

    def generalized_force(self, t, q, v):
        f = self.wrench(t, q, v) if callable(self.wrench) else self.wrench
        f = np.asarray(f, dtype=float)
        if f.shape != (6,):
            raise StateError(f"ExternalWrench on {self.body!r}: got shape {f.shape}, need (6,)")
        J = dyn.jacobian(self._model, q, self.body, frame=self.frame)
        return J.T @ f
