"""Check (e): momenta conserved where the model has the symmetry (Noether).

If exactly one body is jointed to the world, the root joint's motion
subspace S (a set of world-fixed screws ξ: an axis for a revolute, prismatic
or helical joint, the plane motions for a planar joint, rotations about the
pivot for a ball joint, everything for a free joint) generates motions of
the whole mechanism that leave the kinetic energy unchanged. Such a motion
also leaves the potential unchanged — and ``ξ · h`` is then a constant of
the force-free motion, h the total spatial momentum at the world origin —
when gravity does no work along it: the gravity wrench
``[Σ c_i × m_i g; Σ m_i g]`` pairs to zero with ``ξ = [ω; v_O]`` for every
configuration iff ``g × ω = 0`` and ``g · v_O = 0``. The conserved screws are
the subspace of span(S) meeting those two linear conditions: all of
span(S) without gravity, the vertical rotations and horizontal translations
with it.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import null_space, orth

from .. import dynamics as dyn
from ..spatial import plucker, skew
from .result import CheckResult, skipped

#: relative momentum drift allowed (same integrator as the energy check)
MOMENTUM_TOL = 1e-6

_TITLE = "momenta conserved (symmetry)"


def conserved_screws(model) -> tuple[np.ndarray, str]:
    """Screws ξ (6 x k, world coordinates at the world origin) whose momentum ξ·h is conserved,
    and a sentence that says which symmetry was found (k = 0: none)."""
    roots = [b for b in model.bodies if b.parent < 0]
    if len(roots) != 1:
        return np.zeros((6, 0)), f"{len(roots)} bodies are jointed to the world: no symmetry"
    root = roots[0]
    j = root.joint
    # the joint frame is fixed in the world; S (child coordinates) equals its
    # joint-frame form at the neutral configuration, and the spans agree at any q
    X_world_from_joint = np.linalg.inv(root.X_tree)  # world_X_jointframe (motion)
    R, p = j.pose(j.neutral())
    S = X_world_from_joint @ np.linalg.inv(plucker(R.T, p)) @ j.motion_subspace()
    g = model.gravity
    if np.linalg.norm(g) == 0.0:
        basis = S
    else:
        A = np.zeros((4, 6))
        A[:3, :3] = skew(g)          # g × ω = 0
        A[3, 3:] = g                 # g · v_O = 0
        N = null_space(A @ S, rcond=1e-10)
        basis = S @ N
    if basis.shape[1] == 0:
        return basis, (f"root joint {j.name!r} ({j.kind}): gravity does work on every motion "
                       "it allows, no symmetry")
    basis = orth(basis, rcond=1e-10)
    what = _describe(basis, g)
    return basis, f"root joint {j.name!r} ({j.kind}): {what}"


def _describe(basis: np.ndarray, g: np.ndarray) -> str:
    k = basis.shape[1]
    if k == 6:
        return "no gravity, free base: all 6 components of the spatial momentum"
    n_rot = np.linalg.matrix_rank(basis[:3], tol=1e-9)
    n_lin = k - n_rot
    parts = []
    if n_rot:
        axis = basis[:3, np.argmax(np.linalg.norm(basis[:3], axis=0))]
        if np.linalg.norm(g) > 0 and n_rot == 1:
            parts.append("angular momentum about the vertical axis")
        else:
            parts.append(f"{n_rot} angular momentum component(s)"
                         + (f" about axis {np.round(axis / np.linalg.norm(axis), 4)}"
                            if n_rot == 1 else ""))
    if n_lin:
        parts.append(f"{n_lin} linear momentum component(s)"
                     + (" perpendicular to gravity" if np.linalg.norm(g) > 0 else ""))
    return " and ".join(parts)


def _body_momenta(model, q, v) -> np.ndarray:
    """Each body's spatial momentum [L_O; p] in world coordinates at the world origin."""
    kin = dyn.forward_kinematics(model, q, v)
    out = np.empty((model.nb, 6))
    for b in model.bodies:
        hb = b.inertia @ kin.velocity[b.index]
        Rb, pb = kin.R[b.index], kin.p[b.index]
        lin = Rb @ hb[3:]
        out[b.index, :3] = Rb @ hb[:3] + np.cross(pb, lin)
        out[b.index, 3:] = lin
    return out


def momentum_conservation(subject, trajectories) -> CheckResult:
    """max over the conserved screws ξ_k and time of ``|ξ_k·(h(t) − h(0))| / scale_k``,
    ``scale_k = max_t Σ_i |ξ_k·h_i(t)|`` (h_i: body i's share), with ``h = kd.spatial_momentum``."""
    if subject.model is None:
        return skipped("momentum_conservation", _TITLE,
                       "needs a Model (the symmetry is read from the tree)")
    model = subject.model
    basis, found = conserved_screws(model)
    if basis.shape[1] == 0:
        return skipped("momentum_conservation", _TITLE, found)
    worst = 0.0
    for _t, Q, V in trajectories:
        H = np.array([dyn.spatial_momentum(model, q, v)
                      for q, v in zip(Q, V, strict=True)])  # (N, 6)
        c = H @ basis                                                # (N, k)
        share = np.array([np.abs(_body_momenta(model, q, v) @ basis).sum(axis=0)
                          for q, v in zip(Q, V, strict=True)])                    # (N, k)
        scale = np.maximum(share.max(axis=0), 1e-300)
        worst = max(worst, float((np.abs(c - c[0]) / scale).max()))
    return CheckResult("momentum_conservation", worst <= MOMENTUM_TOL, worst, MOMENTUM_TOL,
                       f"{found}; max drift / sum of body shares", _TITLE)
