"""The joint torque regressor: inverse dynamics as a linear map of the inertial parameters.

The spatial force a body needs, ``f_i = I_i a_i + v_i ×* I_i v_i`` (Featherstone 2008,
eq. 5.9), is linear in the ten **standard parameters** of its inertia, in Pinocchio's
order (``pinocchio::Inertia::toDynamicParameters``, checked in the tests)::

    π_i = (m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz)

with c the centre of mass and ``Ī = I_c + m c× c×ᵀ`` the rotational inertia **about
the body frame's origin**, in body coordinates (the flat layout's MASS, H, IBAR;
``I = [Ī, h×; h×ᵀ, m 1]`` with h = m c). So ``f_i = A_i(v_i, a_i) π_i`` with a 6 × 10
body regressor A_i (Atkeson, An & Hollerbach 1986, eq. 9; Khalil & Dombre 2002, §9.3).
RNEA's backward pass sums the bodies' forces up the tree, ``τ_j = S_jᵀ Σ_{i ⪰ j}
ᵢX_jᵀ f_i``, so the joint torques are

    τ = Y(q, v, a) π,    Y[j, block i] = S_jᵀ (ⁱX_j)ᵀ A_i   for every i in the subtree of j

(zero elsewhere; ``ⁱX_j`` the product of the X_up from j down to i), π the stacked
π_i of all bodies in tree order. The rotor inertia of a joint (armature) is not a body
parameter: ``rnea(q, v, a) = Y π + J_r ⊙ a``.

:func:`joint_torque_regressor_reference` is the readable definition (numpy, one state);
:func:`joint_torque_regressor_world_reference` the same in the kernel's formulation
(blocks and motion subspaces moved once to world coordinates, a dot product per body
and ancestor); :func:`joint_torque_regressor` is the public function on the compiled
kernel (:mod:`.regressor_kernel`), one state or a batch; from Python, one state goes
through the C front end (``dynamics/_fastcall.c``) straight to the kernel.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..dynamics import _dispatch
from ..dynamics.data import _ident, buffer_of
from ..dynamics.flat import fast, flatten
from ..dynamics.reference import body_motions
from ..model import Model
from ..spatial import crf
from . import regressor_kernel

F8 = np.dtype(np.float64)

#: the names of the ten standard parameters of a body, in the order of π_i
PARAMETERS = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")


def inertia_from_parameters(pi: ArrayLike) -> NDArray:
    """The 6 × 6 spatial inertia ``[Ī, h×; h×ᵀ, m 1]`` of the ten standard parameters."""
    m, hx, hy, hz, xx, xy, yy, xz, yz, zz = np.asarray(pi, dtype=float)
    H = np.array([[0.0, -hz, hy], [hz, 0.0, -hx], [-hy, hx, 0.0]])
    I = np.zeros((6, 6))
    I[:3, :3] = [[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]
    I[:3, 3:] = H
    I[3:, :3] = H.T
    I[3:, 3:] = m * np.eye(3)
    return I


def parameters_of_inertia(I: ArrayLike) -> NDArray:
    """The ten standard parameters of a 6 × 6 spatial inertia (inverse of
    :func:`inertia_from_parameters`)."""
    I = np.asarray(I, dtype=float)
    Ib = I[:3, :3]
    return np.array([I[5, 5], I[2, 4], I[0, 5], I[1, 3], Ib[0, 0], Ib[0, 1], Ib[1, 1],
                     Ib[0, 2], Ib[1, 2], Ib[2, 2]])


def standard_parameters(model: Model) -> NDArray:
    """π: the ten standard parameters of every body, in tree order (10 nb), such that
    ``joint_torque_regressor(model, q, v, a) @ π = rnea(model, q, v, a)`` (without
    armature)."""
    return np.concatenate([parameters_of_inertia(b.inertia) for b in model.bodies])


def parameter_names(model: Model) -> list[str]:
    """``"<body>.<parameter>"`` for each entry of π (e.g. ``"link2.mcx"``)."""
    return [f"{b.name}.{p}" for b in model.bodies for p in PARAMETERS]


def body_regressor_reference(vel: NDArray, acc: NDArray) -> NDArray:
    """A(v, a), 6 × 10: ``I(π) a + v ×* I(π) v = A π`` for every π, column k being the
    force of the unit parameter vector e_k (the definition, column by column)."""
    A = np.empty((6, 10))
    for k in range(10):
        I = inertia_from_parameters(np.eye(10)[k])
        A[:, k] = I @ acc + crf(vel) @ I @ vel
    return A


def joint_torque_regressor_reference(model: Model, q: ArrayLike, v: ArrayLike,
                                     a: ArrayLike) -> NDArray:
    """Y(q, v, a), nv × 10 nb, one state, in the book's notation (module doc).

    Forward pass: X_up, v_i and a_i as RNEA's (a_0 = -a_grav, so gravity is in Y);
    then each body's block A_i is carried up through its ancestors j, the rows of
    joint j getting ``S_jᵀ`` of it (Atkeson, An & Hollerbach 1986, eq. 14)."""
    q, v, a = (np.asarray(x, dtype=float) for x in (q, v, a))
    X_up, vel, acc = body_motions(model, q, v, a)
    Y = np.zeros((model.nv, 10 * model.nb))
    for b in model.bodies:
        i = b.index
        F = body_regressor_reference(vel[i], acc[i])  # forces of body i, in i coordinates
        j = i
        while j >= 0:  # up the support of body i
            bj = model.bodies[j]
            Y[bj.iv, 10 * i:10 * i + 10] = bj.joint.motion_subspace().T @ F
            F = X_up[j].T @ F
            j = bj.parent
    return Y


def joint_torque_regressor_world_reference(model: Model, q: ArrayLike, v: ArrayLike,
                                           a: ArrayLike) -> NDArray:
    """Y(q, v, a) as the compiled kernel computes it (:mod:`.regressor_kernel`), readable:
    each body's block moved once to world coordinates, ``A⁰_i = (ⁱX_0)ᵀ A_i``, each
    joint's motion subspace too, ``S⁰_j = (ʲX_0)⁻¹ S_j``, and then

        Y[j, block i] = S_jᵀ (ⁱX_j)ᵀ A_i = (S⁰_j)ᵀ A⁰_i     (i in the subtree of j)

    as ``ⁱX_j = ⁱX_0 (ʲX_0)⁻¹`` (Featherstone 2008, §2.9: the power Sᵀ f is the same in
    any coordinates). Equal to :func:`joint_torque_regressor_reference` to rounding."""
    q, v, a = (np.asarray(x, dtype=float) for x in (q, v, a))
    X_up, vel, acc = body_motions(model, q, v, a)
    X0 = []  # ⁱX_0, parent before child
    for b in model.bodies:
        X0.append(X_up[b.index] if b.parent < 0 else X_up[b.index] @ X0[b.parent])
    S0 = [np.linalg.solve(X0[b.index], b.joint.motion_subspace()) for b in model.bodies]
    Y = np.zeros((model.nv, 10 * model.nb))
    for b in model.bodies:
        i = b.index
        A0 = X0[i].T @ body_regressor_reference(vel[i], acc[i])
        j = i
        while j >= 0:
            Y[model.bodies[j].iv, 10 * i:10 * i + 10] = S0[j].T @ A0
            j = model.bodies[j].parent
    return Y


def joint_torque_regressor(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike, *,
                           out: NDArray | None = None) -> NDArray:
    """The joint torque regressor Y(q, v, a): ``τ = Y π`` (module doc), compiled.

    π = :func:`standard_parameters` (10 per body, Pinocchio's order and convention:
    m, m c, and the rotational inertia about the **body frame origin**, body axes).
    One state gives nv × 10 nb; a batch (Q, V, A of shape (N, nq), (N, nv), (N, nv))
    gives N × nv × 10 nb, computed in parallel. The armature is not in Y:
    ``rnea(model, q, v, a) = Y @ π + armature * a``. ``out``: a float64 array of the
    result's shape to write into (and return), which saves an allocation per call in a
    hot loop."""
    # one float64 state: the kernel on the calling thread's packed buffer, no validation
    # pass, no parallel launch (the C front end below does the same without Python); any
    # status goes through the general path, which names the culprit
    try:
        buf, nv, _, owner, _ = model._kd_hot  # (dynamics/flat.py _Hot)
    except (AttributeError, ValueError):
        buf, nv, _, owner, _ = fast(model)
    if owner != _ident():
        buf = buffer_of(model, None)
    if (type(q) is np.ndarray and type(v) is np.ndarray and type(a) is np.ndarray
            and q.ndim == v.ndim == a.ndim == 1 and q.dtype is F8 and v.dtype is F8
            and a.dtype is F8):
        Y = np.empty((nv, 10 * model.nb)) if out is None else out
        if _dispatch.writable(Y, 2) and _single(buf, q, v, a, Y) == 0:
            return Y  # (the kernel checks Y's shape: BAD_SHAPE, then store() names it)
    return _dispatch.store(out, _general(model, q, v, a))


def _general(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> NDArray:
    """Y of one state or a batch, of any array-likes: validated (a
    :class:`~kanedyn.StateError` naming the input at fault), then the batched kernel."""
    fm = flatten(model)
    (Q, V, A), _, single = _dispatch.general(model, q, ((v, "v"), (a, "a")))
    N = Q.shape[0]
    out = np.empty((N, fm.nv, 10 * fm.nb))
    status = np.zeros(N, dtype=np.int64)
    _dispatch.batch(regressor_kernel.ready("regressor_batch"), fm.data, Q, V, A, out, status)
    if np.any(status):
        _dispatch.fail(model, status, "joint_torque_regressor", q, ((v, "v"), (a, "a")))
    return out[0] if single else out


def _single(*args) -> int:
    """``regressor_kernel.regressor_f``'s bare entry point (``dynamics.kernels.entry``:
    the caller passes float64 arrays of the declared ndim), loaded on the first call."""
    global _single
    _single = regressor_kernel.entry("regressor_f")
    return _single(*args)


# one state of C-contiguous float64 arrays on the model's owner thread: from C straight to
# regressor_kernel.regressor_c (dynamics/_fastcall.c, as rnea's); everything else, and any
# non-zero status, reaches the function above unchanged
joint_torque_regressor = _dispatch.c_front_of(
    joint_torque_regressor, regressor_kernel.c_address, "qvv", (-1, -3))
