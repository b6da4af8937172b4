"""Feed-forward friction compensation for a planned trajectory.

For a planned motion (q_d(t), v_d(t), a_d(t)) the joint torque

    τ_ff = RNEA(q_d, v_d, a_d) + F(v_d)

is what the plant needs if the friction model F is right; a feedback law
(PD) then only corrects the model error. The friction term is evaluated on
the *planned* speed, not the measured one, so measurement noise does not
chatter through sgn(v) (Armstrong-Hélouvry, Dupont & Canudas de Wit,
Automatica 30(7), 1994, §6.2). With an exact law the compensation jumps by
2 Fs at each reversal of v_d; ``eps`` replaces sgn by tanh(v/eps) there.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..dynamics import rnea
from ..errors import FrictionError
from ._joints import ModelSpeeds, joint_speed_index
from .laws import FrictionLaw


def friction_feedforward(law: FrictionLaw, v_des: ArrayLike, eps: float | None = None
                         ) -> NDArray | float:
    """Friction force F(v_d) to add to the command at the planned speeds ``v_des``."""
    if not isinstance(law, FrictionLaw):
        raise FrictionError(f"friction_feedforward: {law!r} is not a static friction law")
    if eps is not None and law.discontinuous:
        law = law.smoothed("tanh", eps)
    v = np.asarray(v_des, dtype=float)
    if not np.all(np.isfinite(v)):
        raise FrictionError("friction_feedforward: planned speeds contain NaN or infinity")
    return law(v)


def feedforward_torque(model, q_des: ArrayLike, v_des: ArrayLike, a_des: ArrayLike,
                       laws: dict, eps: float | None = None) -> NDArray:
    """τ_ff = RNEA(q_d, v_d, a_d) + F_j(v_d,j) on the joints in ``laws`` (name -> law);
    batched over a leading axis like :func:`kanedyn.rnea`."""
    tau = np.array(rnea(model, q_des, v_des, a_des), dtype=float)
    v = np.asarray(v_des, dtype=float)
    for name, law in laws.items():
        j = joint_speed_index(ModelSpeeds(model), name)
        tau[..., j] += friction_feedforward(law, v[..., j], eps)
    return tau
