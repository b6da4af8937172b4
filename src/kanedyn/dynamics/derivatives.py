"""Analytic derivatives of inverse and forward dynamics: ∂τ/∂(q, v) of RNEA, ∂v̇/∂(q, v) of ABA.

Derivatives with respect to q are taken in the *tangent* of the configuration,
along the same v-sized chart directions that
:func:`kanedyn.integrate_configuration` uses: ``∂f/∂q · δ`` is
``d/dε f(q ⊕ εδ)`` with ``q ⊕ εδ = integrate_configuration(model, q, δ, ε)``.
For a ball or free joint that is a rotation increment in the child's own axes
(the convention of Pinocchio's ``computeRNEADerivatives``); for 1-dof joints it
is the ordinary partial derivative.

Method: a forward-mode (tangent) pass of the recursive Newton–Euler algorithm
(Featherstone 2008, Table 5.1), all seed directions at once. Every joint here
moves its child frame on the right by ``exp(S ξ)`` with S constant in child
coordinates, so perturbing joint i by ξ_i turns its transform as

    δX_i = −crm(S_i ξ_i) X_i,

and the tangents of the body velocities, accelerations and forces follow by
differentiating each line of the recursion (with ``crm(a) b = −crm(b) a`` and
``crf(a) b = crf̄(b) a`` to move the seed to the right):

    δv_i = X_i δv_λ + crm(X_i v_λ) S_i ξ_i + S_i δq̇_i
    δa_i = X_i δa_λ + crm(X_i a_λ) S_i ξ_i − crm(v_Ji) δv_i + crm(v_i) S_i δq̇_i
    δf_i = I_i δa_i + crf̄(I_i v_i) δv_i + crf(v_i) I_i δv_i
    δτ_i = S_iᵀ δf_i,   δf_λ += X_iᵀ (δf_i + crf̄(f_i) S_i ξ_i)

(``f_i`` the force of the whole subtree, accumulated as in the backward pass).
This is the same quantity as Carpentier & Mansard (RSS 2018) compute, by a
different arrangement. Forward dynamics follows from τ = RNEA(q, v, ABA(q, v, τ)):

    ∂v̇/∂(q, v) = −M⁻¹ ∂τ/∂(q, v) at a = ABA(q, v, τ),   ∂v̇/∂τ = M⁻¹.

:func:`kinetic_energy_gradient_derivative` is the same tangent pass applied to
the recursion for ∂T/∂q of :func:`kanedyn.sim.system.kinetic_energy_gradient_reference`
(what the Hamiltonian form of the implicit methods needs).

The public functions run the compiled pass of :mod:`.derivatives_kernel`;
:func:`rnea_derivatives_reference` and
:func:`kinetic_energy_gradient_derivative_reference` are the readable numpy
definitions it is tested against. O(n · nv) per state. External forces are not
supported (``f_ext`` is not an argument).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ModelError, StateError
from ..model import Model
from ..spatial import crf, crm, skew
from ._dispatch import fail
from .data import Data, data_of
from .flat import flatten
from .reference import joint_transforms


def _crf_bar(b: NDArray) -> NDArray:
    """The matrix C with ``crf(a) b = C a`` for b = [n; f]: ``[[−n×, −f×], [−f×, 0]]``."""
    C = np.zeros((6, 6))
    N, F = skew(b[:3]), skew(b[3:])
    C[:3, :3] = -N
    C[:3, 3:] = -F
    C[3:, :3] = -F
    return C


def _vec(model: Model, x: ArrayLike, n: int, name: str) -> NDArray:
    a = np.asarray(x, dtype=float)
    if a.shape != (n,):
        raise StateError(f"{name} must have shape ({n},) for model {model.name!r}; got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise StateError(f"{name} contains NaN or infinity")
    return a


def _c(x: NDArray) -> NDArray:
    return np.ascontiguousarray(x, dtype=float)


def _check_q(model: Model, q: ArrayLike) -> NDArray:
    qq = _vec(model, q, model.nq, "q").copy()
    for b in model.bodies:
        qq[b.iq] = b.joint.check(qq[b.iq])
    return qq


def _batched(fn, model, q, x, y, name, data=None):
    """Run a one-state function over a leading batch axis (q of shape (N, nq)); None for
    one state. ``data=`` is checked first (TypeError if it is no Data of ``model``): the
    tangent kernels write only into the arrays they return, so it is not otherwise used."""
    if data is not None:
        data_of(model, data)
    q = np.asarray(q, dtype=float)
    if q.ndim == 2:
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        if x.ndim != 2 or y.ndim != 2 or x.shape[0] != q.shape[0] or y.shape[0] != q.shape[0]:
            raise StateError(f"{name}: a batch of q needs batches of the same length of the "
                             f"other arguments; got {q.shape}, {x.shape}, {y.shape}")
        outs = [fn(model, q[k], x[k], y[k]) for k in range(q.shape[0])]
        return np.stack([o[0] for o in outs]), np.stack([o[1] for o in outs])
    return None


def _rnea_tangent(model: Model, q: NDArray, v: NDArray, a: NDArray, gravity: bool = True):
    """The tangent pass; returns (τ, ∂τ/∂q, ∂τ/∂v)."""
    nv, nb = model.nv, model.nb
    a_grav = model.gravity_spatial if gravity else np.zeros(6)
    X = joint_transforms(model, q)
    vel, acc, f = [None] * nb, [None] * nb, [None] * nb
    Dvq, Dvv, Daq, Dav, Dfq, Dfv = ([None] * nb for _ in range(6))
    S_of = [b.joint.motion_subspace() for b in model.bodies]
    for b in model.bodies:  # forward pass
        i, p, S = b.index, b.parent, S_of[b.index]
        vJ = S @ v[b.iv]
        if p < 0:
            vp, ap = np.zeros(6), X[i] @ (-a_grav)
            Dvq[i], Dvv[i] = np.zeros((6, nv)), np.zeros((6, nv))
            Daq[i], Dav[i] = np.zeros((6, nv)), np.zeros((6, nv))
        else:
            vp, ap = X[i] @ vel[p], X[i] @ acc[p]
            Dvq[i], Dvv[i] = X[i] @ Dvq[p], X[i] @ Dvv[p]
            Daq[i], Dav[i] = X[i] @ Daq[p], X[i] @ Dav[p]
        vel[i] = vp + vJ
        acc[i] = ap + S @ a[b.iv] + crm(vel[i]) @ vJ
        # δX_i = −crm(S ξ) X_i acting on the parent's velocity and acceleration
        Dvq[i][:, b.iv] += crm(vp) @ S
        Dvv[i][:, b.iv] += S
        Daq[i][:, b.iv] += crm(ap) @ S
        CvJ = crm(vJ)
        Daq[i] -= CvJ @ Dvq[i]
        Dav[i] -= CvJ @ Dvv[i]
        Dav[i][:, b.iv] += crm(vel[i]) @ S
        I = b.inertia
        h = I @ vel[i]
        f[i] = I @ acc[i] + crf(vel[i]) @ h
        G = _crf_bar(h) + crf(vel[i]) @ I  # ∂(crf(v) I v)/∂v
        Dfq[i] = I @ Daq[i] + G @ Dvq[i]
        Dfv[i] = I @ Dav[i] + G @ Dvv[i]
    tau = np.zeros(nv)
    dq, dv = np.zeros((nv, nv)), np.zeros((nv, nv))
    for b in reversed(model.bodies):  # backward pass, child before parent
        i, p, S = b.index, b.parent, S_of[b.index]
        tau[b.iv] = S.T @ f[i]
        dq[b.iv] = S.T @ Dfq[i]
        dv[b.iv] = S.T @ Dfv[i]
        if p >= 0:
            XT = X[i].T
            Dfq[i][:, b.iv] += _crf_bar(f[i]) @ S  # δX_iᵀ f_i = X_iᵀ crf(S ξ) f_i
            f[p] = f[p] + XT @ f[i]
            Dfq[p] = Dfq[p] + XT @ Dfq[i]
            Dfv[p] = Dfv[p] + XT @ Dfv[i]
    return tau, dq, dv


def rnea_tangent_compiled(model: Model, q: NDArray, v: NDArray, a: NDArray,
                          gravity: bool = True) -> tuple[NDArray, NDArray]:
    """``(∂τ/∂q, ∂τ/∂v)`` by the compiled tangent pass on the model's flat array (q, v, a
    contiguous float64 of the right lengths, q's quaternions checked by the caller)."""
    from .derivatives_kernel import rnea_tangent

    dq = np.empty((model.nv, model.nv))
    dv = np.empty((model.nv, model.nv))
    s = rnea_tangent(flatten(model).data, gravity, q, v, a, dq, dv)
    if s:
        fail(model, s, "rnea_derivatives", q, ((v, "v"), (a, "a")))
    return dq, dv


def kinetic_tangent_compiled(model: Model, q: NDArray, v: NDArray) -> NDArray:
    """``∂/∂q (∂T/∂q)`` by the compiled tangent pass (arguments as
    :func:`rnea_tangent_compiled`)."""
    from .derivatives_kernel import kinetic_tangent

    D = np.empty((model.nv, model.nv))
    s = kinetic_tangent(flatten(model).data, q, v, D)
    if s:
        fail(model, s, "kinetic_energy_gradient_derivative", q, ((v, "v"),))
    return D


def rnea_derivatives_reference(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike,
                               gravity: bool = True) -> tuple[NDArray, NDArray]:
    """The numpy definition of :func:`rnea_derivatives` (one state)."""
    qq = _check_q(model, q)
    _, dq, dv = _rnea_tangent(model, qq, _vec(model, v, model.nv, "v"),
                              _vec(model, a, model.nv, "a"), gravity)
    return dq, dv


def rnea_derivatives(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike, *,
                     gravity: bool = True, data: Data | None = None) -> tuple[NDArray, NDArray]:
    """``(∂τ/∂q, ∂τ/∂v)`` (nv x nv each) of ``τ = RNEA(q, v, a) = M(q) a + C(q, v) v + g(q)``.

    ∂/∂q is along the chart of :func:`kanedyn.integrate_configuration` (for ball
    and free joints a rotation increment in child axes, as Pinocchio's
    ``computeRNEADerivatives``). Computed by a tangent pass of RNEA (see the module
    docstring for the recursion). ``gravity=False`` leaves g(q) out. External forces
    are not supported. Accepts one state or a batch (leading axis, looped). Armature
    adds ``J ⊙ a`` to τ, constant in q and v: it leaves both derivatives unchanged
    (``∂τ/∂a = M + diag J`` is ``kd.crba``, which has it).
    """
    out = _batched(lambda m, qq, vv, aa: rnea_derivatives(m, qq, vv, aa, gravity=gravity),
                   model, q, v, a, "rnea_derivatives", data)
    if out is not None:
        return out
    qq = _check_q(model, q)
    return rnea_tangent_compiled(model, qq, _c(_vec(model, v, model.nv, "v")),
                                 _c(_vec(model, a, model.nv, "a")), gravity)


def aba_derivatives(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike, *,
                    data: Data | None = None) -> tuple[NDArray, NDArray]:
    """``(∂v̇/∂q, ∂v̇/∂v)`` of forward dynamics ``v̇ = ABA(q, v, τ)`` at fixed τ.

    From ``τ = RNEA(q, v, ABA(q, v, τ))``: ``∂v̇/∂(q, v) = −M⁻¹ ∂τ/∂(q, v)`` with the RNEA
    derivatives taken at ``a = v̇`` (Carpentier & Mansard 2018, sec. IV); ``∂v̇/∂τ = M⁻¹``.
    ∂/∂q in the chart of :func:`kanedyn.integrate_configuration`. No external forces.
    Accepts one state or a batch (leading axis, looped).
    """
    out = _batched(lambda m, qq, vv, tt: aba_derivatives(m, qq, vv, tt, data=data),
                   model, q, v, tau, "aba_derivatives", data)
    if out is not None:
        return out
    from scipy.linalg import cho_factor, cho_solve

    from .aba import aba
    from .crba import crba

    qq = _check_q(model, q)
    vv = _vec(model, v, model.nv, "v")
    tt = _vec(model, tau, model.nv, "tau")
    qdd = np.asarray(aba(model, qq, vv, tt, data=data), dtype=float)
    dq, dv = rnea_tangent_compiled(model, qq, _c(vv), _c(qdd))
    try:
        c = cho_factor(np.asarray(crba(model, qq, data=data), dtype=float))
    except np.linalg.LinAlgError:
        raise ModelError(f"aba_derivatives: the mass matrix of {model.name!r} is not positive "
                         "definite at this q (a body without inertia on a moving joint?)") from None
    return -cho_solve(c, dq), -cho_solve(c, dv)


def kinetic_energy_gradient_derivative(model: Model, q: ArrayLike, v: ArrayLike, *,
                                       data: Data | None = None) -> NDArray:
    """``D[k, l] = ∂/∂q_l (∂T/∂q_k)`` at fixed v, both in the tangent chart (nv x nv).

    ∂T/∂ξ_k = −S_kᵀ crf(v_λ,k) H_k (v_λ,k the parent's velocity in k's coordinates,
    H_k the momentum of k's subtree; see
    :func:`kanedyn.sim.system.kinetic_energy_gradient_reference`). Its tangent, with
    δv from the RNEA pass above and ``δH_λ += X_kᵀ (δH_k + crf̄(H_k) S_k ξ_k)``, is

        δ(∂T/∂ξ_k) = −S_kᵀ (crf̄(H_k) δv_λ,k + crf(v_λ,k) δH_k).

    For a model whose chart is additive (1-dof joints only) this is the Hessian of T in
    q, symmetric. Used by the Newton matrix of the Hamiltonian (q, p) form. Compiled;
    the numpy definition is :func:`kinetic_energy_gradient_derivative_reference`.
    """
    if data is not None:  # (the tangent kernels write only into the arrays they return)
        data_of(model, data)
    qq = _check_q(model, q)
    return kinetic_tangent_compiled(model, qq, _c(_vec(model, v, model.nv, "v")))


def kinetic_energy_gradient_derivative_reference(model: Model, q: ArrayLike,
                                                 v: ArrayLike) -> NDArray:
    """The numpy definition of :func:`kinetic_energy_gradient_derivative`."""
    qq = _check_q(model, q)
    vv = _vec(model, v, model.nv, "v")
    nv, nb = model.nv, model.nb
    X = joint_transforms(model, qq)
    S_of = [b.joint.motion_subspace() for b in model.bodies]
    V, Vp, DV, DVp = [None] * nb, [None] * nb, [None] * nb, [None] * nb
    for b in model.bodies:
        i, p, S = b.index, b.parent, S_of[b.index]
        if p < 0:
            Vp[i], DVp[i] = np.zeros(6), np.zeros((6, nv))
        else:
            Vp[i], DVp[i] = X[i] @ V[p], X[i] @ DV[p]
            DVp[i][:, b.iv] += crm(Vp[i]) @ S
        V[i] = Vp[i] + S @ vv[b.iv]
        DV[i] = DVp[i]  # v_J does not move with q
    H = [b.inertia @ V[b.index] for b in model.bodies]
    DH = [b.inertia @ DV[b.index] for b in model.bodies]
    D = np.zeros((nv, nv))
    for b in reversed(model.bodies):
        i, p, S = b.index, b.parent, S_of[b.index]
        D[b.iv] = -S.T @ (_crf_bar(H[i]) @ DVp[i] + crf(Vp[i]) @ DH[i])
        if p >= 0:
            XT = X[i].T
            DH[i][:, b.iv] += _crf_bar(H[i]) @ S
            H[p] = H[p] + XT @ H[i]
            DH[p] = DH[p] + XT @ DH[i]
    return D
