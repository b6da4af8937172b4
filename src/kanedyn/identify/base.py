"""Base parameters: the combinations of the standard parameters that the joint torques
determine.

Not every standard parameter moves a joint torque on its own: the first body's mass
moves none of a fixed-base robot, a body's ZZ and the next body's mass m enter the
torques of a planar arm only as ZZ + m l² (Khalil & Dombre 2002, §12.2; Gautier &
Khalil 1990). The **base parameters** are a minimal set of linear combinations
π_b = K π with ``Y π = Y_b π_b`` for every state. They are found numerically (Gautier
1991): stack Y over random states into W (N nv × 10 nb), take the QR decomposition with
column pivoting ``W P = Q R`` and its numerical rank r. The first r pivoted columns W₁
are independent; the others are ``W₂ = W₁ β`` (least squares, exact to rounding), so

    W π = W₁ π₁ + W₂ π₂ = W₁ (π₁ + β π₂),    π_b = π₁ + β π₂,    Y_b = Y[:, independent]

The pivoted QR gives the rank; which r columns lead is chosen in π's order, a column
kept when it is independent of those kept before it (Gram–Schmidt, twice). That is
Khalil's convention — a later body's parameter is grouped into an earlier body's, as in
ZZ1R = ZZ1 + l₁² m₂ — and, unlike the pivot order, it does not depend on the last bits of
W: pivoting breaks ties between columns of equal norm by rounding, so a regressor equal
to 1e-14 could lead with other columns.

The rank is that of W for almost every sample (the random states are generic), so r
is the dimension of the identifiable space; a combination is named in words from the
rows of K, e.g. ``"link1.Izz + 0.25 link2.m"``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray

from ..errors import IdentificationError
from ..model import Model, random_configuration
from .regressor import joint_torque_regressor, parameter_names


@dataclass(frozen=True)
class BaseParameters:
    """A base of the identifiable parameter space of a model.

    ``independent``: the indices (into π) of the standard parameters that lead each base
    parameter (Y_b = Y[..., independent]); ``K`` (r × 10 nb): π_b = K π; ``names``: each
    base parameter in words; ``standard_names``: the names of π's entries; ``rank``: r;
    ``unidentifiable``: the standard parameters that move no torque at all (their
    columns of Y vanish at every state)."""

    independent: NDArray
    K: NDArray
    names: list[str]
    standard_names: list[str]
    unidentifiable: list[str]

    @property
    def rank(self) -> int:
        return int(self.independent.size)

    def of(self, pi: ArrayLike) -> NDArray:
        """π_b = K π of standard parameters π (10 nb)."""
        return self.K @ np.asarray(pi, dtype=float)

    def regressor(self, Y: ArrayLike) -> NDArray:
        """Y_b: the base columns of a regressor Y (..., nv, 10 nb), ``Y_b π_b = Y π``."""
        return np.asarray(Y)[..., self.independent]


def _words(lead: str, coefficients: NDArray, names: list[str]) -> str:
    text = lead
    for c, n in zip(coefficients, names, strict=True):
        if c != 0.0:
            size = "" if abs(abs(c) - 1.0) <= 1e-9 else f"{abs(c):.6g} "
            text += f" {'+' if c > 0 else '-'} {size}{n}"
    return text


def base_parameters(model: Model, samples: int | None = None, seed: int = 0,
                    rtol: float = 1e-9) -> BaseParameters:
    """The base parameters of ``model`` (module doc), from the regressor at ``samples``
    random states (default: enough for twice as many equations as standard parameters).

    ``rtol``: a pivot |R_kk| at or below ``rtol |R_00|`` ends the rank, and a coefficient
    of β below ``rtol`` times its row's largest is dropped as rounding."""
    P = 10 * model.nb
    n = samples if samples is not None else max(20, -(-2 * P // max(model.nv, 1)) + 10)
    rng = np.random.default_rng(seed)
    Q = np.array([random_configuration(model, rng) for _ in range(n)])
    V = rng.normal(size=(n, model.nv))
    A = rng.normal(size=(n, model.nv))
    W = joint_torque_regressor(model, Q, V, A).reshape(n * model.nv, P)
    return base_parameters_of(W, parameter_names(model), rtol)


def base_parameters_of(W: ArrayLike, standard_names: list[str],
                       rtol: float = 1e-9) -> BaseParameters:
    """The base parameters of a stacked regressor W (rows: equations, columns: the
    standard parameters named ``standard_names``), by QR with column pivoting."""
    W = np.asarray(W, dtype=float)
    P = W.shape[1]
    if len(standard_names) != P:
        raise IdentificationError(f"base parameters: {P} columns but {len(standard_names)} "
                                  "names")
    zero = np.all(W == 0.0, axis=0)
    _, R, perm = scipy.linalg.qr(W, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    if d.size == 0 or d[0] == 0.0:
        raise IdentificationError("base parameters: the regressor is zero; no parameter "
                                  "moves a joint torque")
    r = int(np.count_nonzero(d > rtol * d[0]))
    independent = _leading_columns(W, r)
    if independent is None:  # the in-order choice disagrees with the rank: pivot order
        independent = np.sort(perm[:r])
    dependent = np.setdiff1d(np.arange(P), independent)
    beta = np.linalg.lstsq(W[:, independent], W[:, dependent], rcond=None)[0]
    scale = np.maximum(np.abs(beta).max(axis=1, keepdims=True), 1.0)
    beta[np.abs(beta) <= rtol * scale] = 0.0
    K = np.zeros((r, P))
    K[np.arange(r), independent] = 1.0
    K[:, dependent] = beta
    rest = [standard_names[j] for j in dependent]
    names = [_words(standard_names[independent[k]], K[k, dependent], rest) for k in range(r)]
    return BaseParameters(independent, K, names, list(standard_names),
                          [standard_names[j] for j in np.flatnonzero(zero)])


def _leading_columns(W: NDArray, r: int, tol: float = 1e-8) -> NDArray | None:
    """The first r columns of W, in order, each independent of those before it: column j
    is kept when its part orthogonal to the kept ones (classical Gram–Schmidt applied
    twice, which is orthogonal to rounding) exceeds ``tol`` of its norm. None when that
    does not give exactly r columns (a rank too close to call in this order)."""
    basis = np.zeros((W.shape[0], 0))
    kept = []
    for j in range(W.shape[1]):
        w = W[:, j]
        norm = np.linalg.norm(w)
        if norm == 0.0:
            continue
        u = w - basis @ (basis.T @ w)
        u -= basis @ (basis.T @ u)
        if np.linalg.norm(u) > tol * norm:
            kept.append(j)
            basis = np.column_stack([basis, u / np.linalg.norm(u)])
    return np.array(kept) if len(kept) == r else None
