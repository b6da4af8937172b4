"""Joint wrenches: the spatial force each joint transmits from parent to child.

In the recursive Newton–Euler algorithm (Featherstone 2008, Table 5.1) the backward
pass accumulates, for each body i,

    f_i = I_i a_i + v_i ×* I_i v_i - f_ext,i + Σ_{c ∈ children(i)} X_cᵀ f_c,

the force that the parent exerts on the subtree of body i through joint i (gravity
included, as ``kd.rnea`` includes it: a_i is measured from the free-fall frame,
a_0 = -a_grav). Its projection on the motion subspace is the joint force,
``τ_i = S_iᵀ f_i``; the rest, ``f_i - S_i τ_i`` in the joint's constrained
directions, is the reaction load the joint's bearing carries — the numeric
counterpart of the constraint forces Kane's method brings in with auxiliary speeds
(Kane & Levinson 1985). For a free root joint, f is the external
wrench that would be needed to move the base as given (zero when a comes from ABA).

The computation is :func:`kanedyn.dynamics.joint_wrenches_kernel.jw_core` (numba),
RNEA's own kernel with its forces copied out; the readable definition is
:func:`joint_wrenches_reference`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import KanedynError
from ..model import Model
from ..spatial import plucker_force
from ._dispatch import fast_path, run_batch
from .data import Data
from .kernels.entries import ENTRIES
from .reference import body_placements, rnea_forces

#: the coordinates a joint wrench is given in (Pinocchio's names, as for Jacobians)
REFERENCES = ("local", "world", "local_world_aligned")

_JW = ENTRIES["joint_wrenches"]


def _reference_code(reference: str) -> int:
    try:
        return REFERENCES.index(reference)
    except ValueError:
        raise KanedynError(f"joint_wrenches: unknown reference {reference!r}; choose one "
                           f"of {REFERENCES}") from None


@fast_path(_JW, options={"reference": _reference_code})
def joint_wrenches(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike,
                   f_ext: ArrayLike | None = None, reference: str = "local", *,
                   data: Data | None = None) -> NDArray:
    """The spatial force ``[n; f]`` each joint transmits from its parent to its child
    body, one row per body (nb x 6; (N, nb, 6) for a batch), in body order.

    ``f_i = I_i a_i + v_i ×* I_i v_i - f_ext,i + Σ_children X_cᵀ f_c`` — RNEA's
    backward-pass forces (Featherstone 2008, Table 5.1), gravity included as in
    :func:`kanedyn.rnea`; ``S_iᵀ f_i`` is ``kd.rnea``'s τ of joint i. ``f_ext`` as
    ``kd.rnea`` takes it (nb x 6, each body's external force in its own coordinates).

    ``reference``:

    - ``"local"`` (default): in body i's coordinates, the moment about its origin
      (Pinocchio's ``data.f`` after ``rnea``);
    - ``"world"``: in world coordinates, the moment about the world origin
      (``i_X_0ᵀ f_i``; Pinocchio ``data.oMi[i].act(data.f[i])``);
    - ``"local_world_aligned"``: world axes, the moment about body i's origin.
    """
    # (one float64 state goes straight to the kernel: the fast path of _dispatch.fast_path)
    return run_batch(_JW, model, q, ((v, "v"), (a, "a")), f_ext,
                     options=(_reference_code(reference),))


def joint_wrenches_reference(model: Model, q: NDArray, v: NDArray, a: NDArray,
                             f_ext: NDArray | None = None,
                             reference: str = "local") -> NDArray:
    """RNEA (Featherstone 2008, Table 5.1) keeping its backward-pass forces, one state."""
    code = _reference_code(reference)
    X_up, f = rnea_forces(model, q, v, a, f_ext)
    for b in reversed(model.bodies):  # backward pass: child before parent
        if b.parent >= 0:
            f[b.parent] = f[b.parent] + X_up[b.index].T @ f[b.index]
    W = np.array(f)
    if code == 0:
        return W
    R, p = body_placements(model, q)
    for i in range(model.nb):
        # 0_X_i* (world) or its rotation alone (local_world_aligned): from body i to world
        # axes, R_i; the world origin seen from body i, -R_iᵀ p_i
        W[i] = plucker_force(R[i], -R[i].T @ p[i] if code == 1 else np.zeros(3)) @ W[i]
    return W
