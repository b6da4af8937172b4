"""Centroidal momentum: the momentum of the whole model about its centre of mass.

Following Orin, Goswami & Lee, "Centroidal dynamics of a humanoid robot",
Autonomous Robots 35:161–176 (2013), with G a frame at the centre of mass c whose
axes are the world's, and ``i_X_G`` the Plücker transform from G to body i:

    h_G = [k_G; l_G] = Σ_i i_X_Gᵀ I_i v_i = A_G(q) v
    A_G = Σ_i i_X_Gᵀ I_i J_i
    ḣ_G = A_G v̇ + Ȧ_G v,   Ȧ_G v = Σ_i i_X_Gᵀ (I_i a_i + v_i ×* I_i v_i)

with J_i the body Jacobian of body i (body coordinates) and a_i = J̇_i v the
acceleration body i has when v̇ = 0 (RNEA's forward pass without gravity). k_G is the
angular momentum about the centre of mass and l_G = m ċ the linear momentum, both in
world axes. The rate formula holds because G moves with ċ and ċ × l_G = 0, so
``d/dt`` of the shift from the world origin to c adds nothing.

Row order: **angular first** (k_G, then l_G), as everywhere in kanedyn and as in
Orin et al. Pinocchio's ``data.Ag``, ``data.hg`` and ``data.dhg`` are linear first:
``A_G = data.Ag[[3, 4, 5, 0, 1, 2]]`` (columns mapped to Pinocchio's v order).

The computations are :func:`kanedyn.dynamics.centroidal_kernel.ag_core` and
``cm_core`` (numba); the readable definitions are
:func:`centroidal_momentum_matrix_reference` and :func:`centroidal_momentum_bias_reference`
below, which follow the sums above body by body.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ModelError
from ..model import Model
from ..spatial import crf, crm, plucker
from ._dispatch import c_front, fail, fast_path, run_batch
from .data import Data
from .kernels.entries import ENTRIES
from .reference import body_placements, body_velocities, jacobian_local, joint_transforms

_AG, _CM = ENTRIES["centroidal_momentum_matrix"], ENTRIES["centroidal_momentum"]
# (one float64 state goes straight to the kernel: the fast path of _dispatch.fast_path;
# the bodies below are the general path)


def _no_mass(model: Model, what: str):
    raise ModelError(f"{what}: model {model.name!r} has no mass (total mass "
                     f"{model.total_mass:g}), so it has no centre of mass")


def _fail(model: Model, s, what: str, q, speeds: tuple, f_ext=None):
    from .centroidal_kernel import NO_MASS

    if np.any(np.asarray(s) == NO_MASS):
        _no_mass(model, what)
    fail(model, s, what, q, speeds, f_ext)


@fast_path(_AG, fail=_fail)
def centroidal_momentum_matrix(model: Model, q: ArrayLike, *,
                               out: NDArray | None = None,
                               data: Data | None = None) -> NDArray:
    """The centroidal momentum matrix ``A_G(q)`` (6 x nv; (N, 6, nv) for a batch).

    ``h_G = A_G v``: rows 0-2 the angular momentum about the centre of mass, rows 3-5
    the linear momentum, both in world axes — kanedyn's angular-first order, that of
    Orin, Goswami & Lee (2013); Pinocchio's ``data.Ag`` after ``ccrba`` has the two
    halves swapped. Column j is the momentum the model has when speed j alone is 1.

    Computed as CRBA's composite inertias ``I^c_i`` (Featherstone 2008, Table 6.2), then
    ``A_G[:, joint i] = i_X_Gᵀ I^c_i S_i`` (Orin et al. 2013): O(nb + nv).
    ``out``: an array of the result's shape to write into (and return).
    """
    return run_batch(_AG, model, q, (), None, out, fail=_fail)


centroidal_momentum_matrix = c_front(centroidal_momentum_matrix, _AG)


def _momentum_and_bias(model: Model, q: ArrayLike, v: ArrayLike, what: str) -> NDArray:
    """``[h_G, Ȧ_G v]`` (12,) or (N, 12), by the general path."""
    return run_batch(_CM, model, q, ((v, "v"),), what=what, fail=_fail)


@fast_path(_CM, fail=_fail, view=np.s_[..., :6])
def centroidal_momentum(model: Model, q: ArrayLike, v: ArrayLike, *,
                        data: Data | None = None) -> NDArray:
    """The centroidal momentum ``h_G = [k_G; l_G] = A_G(q) v`` (6,; (N, 6) for a batch):
    the angular momentum about the centre of mass and the linear momentum ``m ċ``, in
    world axes, angular first (Pinocchio's ``data.hg``, halves swapped).

    Computed body by body from the velocities, without forming A_G (Orin et al.
    2013): ``h_G = Σ_i i_X_Gᵀ I_i v_i``.
    """
    return _momentum_and_bias(model, q, v, "centroidal_momentum")[..., :6]


@fast_path(_CM, fail=_fail, view=np.s_[..., 6:])
def centroidal_momentum_bias(model: Model, q: ArrayLike, v: ArrayLike, *,
                             data: Data | None = None) -> NDArray:
    """``Ȧ_G(q, v) v`` (6,; (N, 6) for a batch), angular first: the rate of change of the
    centroidal momentum when v̇ = 0, so that ``ḣ_G = A_G v̇ + Ȧ_G v``.

    ``Ȧ_G v = Σ_i i_X_Gᵀ (I_i a_i + v_i ×* I_i v_i)`` with a_i the body accelerations of
    RNEA's forward pass at v̇ = 0 without gravity (Orin, Goswami & Lee 2013;
    Featherstone 2008, Table 5.1). Pinocchio: ``data.dhg`` after
    ``computeCentroidalMomentumTimeVariation(model, data, q, v, 0)``, halves swapped.
    """
    return _momentum_and_bias(model, q, v, "centroidal_momentum_bias")[..., 6:]


# --- the readable definitions (one state), which the kernels are tested against ----

def _centroid_transforms(model: Model, q: NDArray) -> list[NDArray]:
    """``i_X_G`` for every body: G at the centre of mass c with world axes, so
    ``i_X_G = plucker(R_iᵀ, p_i - c)`` (the rotation from world to body axes, and body
    i's origin seen from c)."""
    R, p = body_placements(model, q)
    m = model.total_mass
    if not m > 0.0:
        _no_mass(model, "centroidal momentum")
    c = sum(b.mass * (p[b.index] + R[b.index] @ b.com) for b in model.bodies) / m
    return [plucker(R[i].T, p[i] - c) for i in range(model.nb)]


def centroidal_momentum_matrix_reference(model: Model, q: NDArray) -> NDArray:
    """``A_G = Σ_i i_X_Gᵀ I_i J_i`` (Orin, Goswami & Lee 2013), body by body."""
    XG = _centroid_transforms(model, q)
    A = np.zeros((6, model.nv))
    for b in model.bodies:
        A += XG[b.index].T @ b.inertia @ jacobian_local(model, q, b.index)
    return A


def centroidal_momentum_reference(model: Model, q: NDArray, v: NDArray) -> NDArray:
    """``h_G = Σ_i i_X_Gᵀ I_i v_i``, body by body."""
    XG = _centroid_transforms(model, q)
    vel = body_velocities(model, q, v)
    return sum(XG[b.index].T @ b.inertia @ vel[b.index] for b in model.bodies)


def centroidal_momentum_bias_reference(model: Model, q: NDArray, v: NDArray) -> NDArray:
    """``Ȧ_G v = Σ_i i_X_Gᵀ (I_i a_i + v_i ×* I_i v_i)``, a_i the body accelerations at
    v̇ = 0 without gravity: ``a_i = X_up[i] a_λ(i) + v_i × S_i v_i`` (a root: 0)."""
    XG = _centroid_transforms(model, q)
    X_up = joint_transforms(model, q)
    vel = body_velocities(model, q, v)
    acc = [None] * model.nb
    hdot = np.zeros(6)
    for b in model.bodies:  # parent before child
        i, p = b.index, b.parent
        vJ = b.joint.motion_subspace() @ v[b.iv]
        acc[i] = np.zeros(6) if p < 0 else X_up[i] @ acc[p] + crm(vel[i]) @ vJ
        f = b.inertia @ acc[i] + crf(vel[i]) @ b.inertia @ vel[i]
        hdot += XG[i].T @ f
    return hdot
