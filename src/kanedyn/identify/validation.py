"""Validation of an identification on held-out data: the torque it predicts and the
motion it produces when simulated (Swevers et al. 2007, sec. 5; Khalil & Dombre 2002,
sec. 12.6).

Two errors per joint j, on samples the fit did not see:

- **torque prediction error** (equation error): ``e_τ,kj = τ̂_j(q_k, q̇_k, q̈_k) - τ_kj``
  with τ̂ = Y_b π̂_b + F̂(q̇) + J_r q̈ (:meth:`Identification.predict`); its RMS per joint
  and relative to the RMS of the measured torque. On data whose model is right this is
  the measurement noise (its RMS ≈ σ_j), so it is compared against ``result.sigma``;
- **output error** (simulation error): the identified model — physically consistent
  standard parameters with the same base parameters (:func:`consistent`; the base
  parameters fix M(q) and h(q, q̇) entirely, so any such set gives the same motion) and
  the identified friction laws — simulated with :func:`kanedyn.simulate` from the
  held-out data's first state under the measured torques, linearly interpolated between
  the samples: ``e_q,kj = q_sim,j(t_k) - q_kj``, its RMS and maximum per joint.

The friction laws are discontinuous at v = 0 (sgn); the simulation smooths the sign by
tanh(v/ε) (``eps``), as a fixed-step integrator needs, and takes the identified curve
as fitted (also when its levels fit no :class:`~kanedyn.friction.Stribeck` law, e.g.
F_s < F_c on a joint the data excite little at low speed). The output error of an open-loop
simulation grows with the horizon for any model (a robot arm under given torques is not
asymptotically stable), so it is meaningful on short held-out stretches and for
comparing models on the same data.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import IdentificationError
from ..model import Model
from .data import Lowpass
from .estimation import Identification, _data, _speed_names
from .regressor import inertia_from_parameters, joint_torque_regressor


@dataclass
class Validation:
    """The errors of :func:`validate`, per speed (``joints``): ``torque_rms``,
    ``torque_relative`` (RMS error / RMS of the measured torque), ``noise`` (the fit's σ̂
    for comparison), ``q_rms`` and ``q_max`` of the simulated motion, the samples
    ``t``, the simulated ``q_sim`` (at the first ``len(q_sim)`` samples of ``t``: all of
    them unless a ``horizon`` was given), the predicted torques ``tau_pred`` and the measured
    ``tau`` and ``q``."""

    joints: list[str]
    torque_rms: NDArray
    torque_relative: NDArray
    noise: NDArray
    q_rms: NDArray
    q_max: NDArray
    t: NDArray
    q_sim: NDArray
    tau_pred: NDArray
    tau: NDArray | None = None
    q: NDArray | None = None

    def plot(self, path, other: Validation | None = None, label: str = "identified",
             other_label: str = "other model") -> str:
        """Measured against predicted torque per joint (and ``other``'s prediction, e.g. a
        validation of the CAD model's parameters on the same data), to a PNG
        (:func:`kanedyn.identify.plot_torques`); returns the path."""
        from .report import plot_torques

        return plot_torques(path, self.t, self.tau, self.tau_pred, self.joints,
                            other=None if other is None else other.tau_pred,
                            label=label, other_label=other_label)

    def report(self) -> str:
        """A plain-text table of the errors per joint."""
        lines = [f"{'joint':>20} {'tau RMS err':>12} {'relative':>9} {'noise':>9} "
                 f"{'q RMS err':>10} {'q max err':>10}"]
        for k, name in enumerate(self.joints):
            lines.append(f"{name:>20} {self.torque_rms[k]:12.4g} {self.torque_relative[k]:9.3g}"
                         f" {self.noise[k]:9.3g} {self.q_rms[k]:10.3g} {self.q_max[k]:10.3g}")
        return "\n".join(lines)


def identified_model(result: Identification, standard: ArrayLike | None = None) -> Model:
    """The model with the identified inertial parameters: ``standard`` (10 nb standard
    parameters; default the physically consistent ones of :meth:`Identification.consistent`,
    which have the estimated base parameters) put into the bodies of ``result.model``."""
    pi = result.consistent().standard if standard is None else np.asarray(standard, float)
    model = result.model
    if pi.shape != (10 * model.nb,):
        raise IdentificationError(f"identified_model: standard has shape {pi.shape}; the "
                                  f"model needs {10 * model.nb} parameters (10 per body)")
    bodies = tuple(dataclasses.replace(b, inertia=inertia_from_parameters(pi[10 * i:10 * i + 10]))
                   for i, b in enumerate(model.bodies))
    return dataclasses.replace(model, bodies=bodies)


def validate(result: Identification, t: ArrayLike, q: ArrayLike, v: ArrayLike, a: ArrayLike,
             tau: ArrayLike, *, standard: ArrayLike | None = None, eps: float = 1e-2,
             dt: float | None = None, lowpass: Lowpass | None = None,
             horizon: float | None = None) -> Validation:
    """Validate ``result`` on held-out samples (t, q, v, a, τ) of a uniform time grid: the
    torque prediction error and the output error of the simulated identified model
    (module doc). ``standard``: the standard parameters to simulate and predict with
    (default: the consistent projection of the estimate; another set — a CAD model, a
    deliberately wrong one — compares models on the same data); ``eps``: the width of
    the tanh smoothing of the friction's sign in the simulation (rad/s or m/s); ``dt``:
    the integration step (default: the sample spacing, RK4); ``lowpass``: the filter
    the measured τ went through (:class:`~kanedyn.identify.Lowpass`, samples at its
    rate): the predicted torque is passed through it too before the comparison, as the
    fit's friction columns are, and the torque errors are taken one cut-off period in
    from the ends (``tau_pred`` is then the filtered prediction); ``horizon``: simulate
    only the first ``horizon`` seconds (the output error of an open loop grows with the
    horizon, the torque error does not: it is taken over every sample); ``q_sim`` then
    holds the samples of ``t`` up to t[0] + horizon."""
    # (here: importing sim costs kanedyn.identify's import nothing until validation runs;
    # forces is a leaf below sim — a known departure, tests/test_import_direction.py)
    from ..forces import JointTorque
    from ..sim import simulate

    model = result.model
    Q, V, A, T = _data(model, q, v, a, tau)
    tt = np.asarray(t, dtype=float).ravel()
    if tt.size != Q.shape[0]:
        raise IdentificationError(f"validate: t has {tt.size} samples, q {Q.shape[0]}")
    steps = np.diff(tt)
    if tt.size < 2 or np.any(steps <= 0):
        raise IdentificationError("validate: t must increase (at least two samples)")
    if model.nq != model.nv:
        raise IdentificationError("validate: the model's coordinates must be additive "
                                  "(revolute, prismatic, helical joints)")
    sim_model = identified_model(result, standard)
    if standard is None:
        tau_pred = result.predict(Q, V, A)
    else:  # the identified friction on the given inertial parameters
        Yb = result.base.regressor(joint_torque_regressor(model, Q, V, A))
        pi_b = result.base.of(np.asarray(standard, dtype=float))
        tau_pred = result.predict(Q, V, A) + Yb @ (pi_b - result.base_estimate)
    inner = slice(None)
    if lowpass is not None:  # τ was low-passed: so is the prediction (parallel filtering)
        if abs(float(np.mean(steps)) * lowpass.rate - 1.0) > 1e-6:
            raise IdentificationError(f"validate: the samples are {float(np.mean(steps)):.6g}"
                                      f" s apart; lowpass= is for samples at "
                                      f"{lowpass.rate:g} Hz")
        if tt.size <= 2 * lowpass.period:
            raise IdentificationError(f"validate: {tt.size} samples are too few for the "
                                      f"low-pass's ends ({lowpass.period} at each)")
        tau_pred = lowpass(tau_pred)
        inner = slice(lowpass.period, tt.size - lowpass.period)
    err = (tau_pred - T)[inner]
    torque_rms = np.sqrt(np.mean(err ** 2, axis=0))
    scale = np.sqrt(np.mean(T[inner] ** 2, axis=0))
    relative = np.divide(torque_rms, scale, out=np.full_like(scale, np.inf), where=scale > 0)

    if not (np.isfinite(eps) and eps > 0):
        raise IdentificationError(f"validate: eps={eps} must be finite and > 0")
    n_sim = tt.size
    if horizon is not None:
        n_sim = int(np.searchsorted(tt, tt[0] + float(horizon), side="right"))
        if not (np.isfinite(horizon) and n_sim >= 2):
            raise IdentificationError(f"validate: horizon={horizon} s must be finite and "
                                      f"hold at least two samples (they are "
                                      f"{float(np.mean(steps)):.6g} s apart)")
    laws = list(zip(result.friction_joints, map(int, result.friction_speeds), strict=True))

    def applied(time, _q, v):
        """The measured torque minus the identified friction, its sgn smoothed by tanh:
        F(v) = tanh(v/ε) sgn(v) F̂(v) = tanh(v/ε) (g(|v|) + F_v |v|), g the identified
        curve of v's direction (the fitted levels as they are, even a curve no
        FrictionLaw admits, as Fs < Fc: the fit's own model)."""
        out = np.array([np.interp(time, tt, T[:, j]) for j in range(model.nv)])
        for joint, j in laws:
            out[j] -= (np.tanh(v[j] / eps) * np.sign(v[j])
                       * float(result.friction_torque(joint, v[j])[0]))
        return out

    forces = [JointTorque(applied)]
    h = float(np.mean(steps)) if dt is None else float(dt)
    every = max(1, int(round(float(np.mean(steps)) / h)))
    ts = tt[:n_sim]
    traj = simulate(sim_model, Q[0], V[0], float(ts[-1] - ts[0]), method="rk4", dt=h,
                    forces=forces, t0=float(ts[0]), save_every=every)
    q_sim = np.column_stack([np.interp(ts, traj.t, traj.q[:, j]) for j in range(model.nq)])
    dq = q_sim - Q[:n_sim]
    return Validation(_speed_names(model), torque_rms, relative, result.sigma.copy(),
                      np.sqrt(np.mean(dq ** 2, axis=0)), np.max(np.abs(dq), axis=0), tt,
                      q_sim, tau_pred, T, Q)
