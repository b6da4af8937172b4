"""Robot identification against Pinocchio (issue 20): the joint torque regressor per
sample, and a whole identification's time and parameter error.

    .venv/bin/python bench/identify.py [--robot panda] [--samples 2000]
                                       [--only regressor|fit|whole]

Per state, µs: ``kd.joint_torque_regressor`` one state at a time from Python, the same
over a batch (per sample, all cores), and Pinocchio's ``computeJointTorqueRegressor``
from Python, on the same states (Pinocchio's model from its own URDF parser; the best of
several alternating runs, and the load). Then ``identify.fit`` of a 3-DOF arm with
Stribeck friction from 10 s of 1 kHz data: its time and the largest error of a parameter
in units of its standard error, at two noise levels.

``--only regressor`` (or ``fit``, ``whole``) runs that part alone (the default: all
three; ``--whole-only`` is ``--only whole``).

The whole identification of a 7-DOF arm (the Panda of
examples/identify_arm.py, fingers fixed) from 100 s of 1 kHz data — an excitation
trajectory (finite Fourier series), the hidden truth's torques (inertias ±30 %, a
Stribeck law per joint) plus noise, encoder noise on q — through ``identify.prepare``
(25 Hz) and ``identify.fit`` (Stribeck, parallel filter, one sample in 20); its time
and parameter errors at three torque noise levels. Side by side, the linear part the
way a Pinocchio user does it: ``computeJointTorqueRegressor`` at the same 5,000 samples
from Python, Coulomb and viscous columns appended, the identifiable columns by pivoted
QR, numpy least squares — against kanedyn's ``fit(..., "viscous+coulomb")`` on the
same samples (which also weights the joints by their noise, two to five solves, and
computes the covariance).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

import numpy as np

import kanedyn as kd
from kanedyn import friction, identify
from kanedyn.model.urdf import robot_path
from kanedyn.spatial import inertia_parameters, spatial_inertia


def best(f, reps=7):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def regressor(name: str, n: int) -> None:
    import pinocchio as pin

    model = kd.load_robot(name)
    pm = pin.buildModelFromUrdf(str(robot_path(name)))
    pd = pm.createData()
    rng = np.random.default_rng(0)
    Q = np.array([kd.random_configuration(model, rng) for _ in range(n)])
    V, A = rng.normal(size=(2, n, model.nv))
    identify.joint_torque_regressor(model, Q, V, A)  # compile
    identify.joint_torque_regressor(model, Q[0], V[0], A[0])
    m = min(n, 500)
    load0 = os.getloadavg()[0]
    one, batch, peer = [], [], []
    for _ in range(3):  # alternate: a shared machine's load hits all alike
        one.append(best(lambda: [identify.joint_torque_regressor(model, Q[k], V[k], A[k])
                                 for k in range(m)]) / m)
        batch.append(best(lambda: identify.joint_torque_regressor(model, Q, V, A)) / n)
        peer.append(best(lambda: [pin.computeJointTorqueRegressor(pm, pd, Q[k], V[k], A[k])
                                  for k in range(m)]) / m)
    one, batch, peer = min(one), min(batch), min(peer)
    print(f"regressor, {name} (nb={model.nb}, nv={model.nv}), µs per state: kanedyn one "
          f"{one * 1e6:.2f}, batch {batch * 1e6:.2f}; pinocchio {peer * 1e6:.2f}; ratio "
          f"one {one / peer:.2f}, batch {batch / peer:.2f}; load {load0:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")


def fit(rate: float) -> None:
    nominal = kd.models.elbow_arm()
    for scale in (1.0, 5.0):
        rng = np.random.default_rng(1)
        bodies = []
        for body in nominal.bodies:
            m, c, Ic = inertia_parameters(body.inertia)
            bodies.append(dataclasses.replace(body, inertia=spatial_inertia(
                m * rng.uniform(0.7, 1.3), c + rng.normal(0, 0.02, 3),
                Ic * rng.uniform(0.7, 1.3))))
        truth = dataclasses.replace(nominal, bodies=tuple(bodies))
        laws = [friction.Stribeck(1.5, 2.2, 0.1, 2.0, 1.0) for _ in range(3)]
        t = np.arange(0.0, 10.0, 1.0 / rate)
        q, v, a = np.zeros((3, t.size, 3))
        for j in range(3):
            for k in range(1, 4):
                A_, B_ = rng.normal(0.0, 0.5, 2)
                w = 2 * np.pi * 0.2 * k
                q[:, j] += A_ / w * np.sin(w * t) - B_ / w * np.cos(w * t)
                v[:, j] += A_ * np.cos(w * t) + B_ * np.sin(w * t)
                a[:, j] += -A_ * w * np.sin(w * t) + B_ * w * np.cos(w * t)
        noise = scale * np.array([0.05, 0.1, 0.03])
        tau = (kd.rnea(truth, q, v, a) + np.column_stack([laws[j](v[:, j]) for j in range(3)])
               + rng.normal(size=q.shape) * noise)
        t0 = time.perf_counter()
        res = identify.fit(nominal, q, v, a, tau, friction="stribeck")
        dt = time.perf_counter() - t0
        true = np.concatenate([res.base.of(identify.standard_parameters(truth))]
                              + [[l.Fc, l.Fs, l.Fv, l.vs, l.delta] for l in laws])
        z = np.abs(res.estimate - true) / res.stderr
        print(f"fit, elbow_arm + Stribeck, {t.size} samples, noise x{scale:g}: {dt:.2f} s, "
              f"{res.nfev} evaluations, largest |error|/stderr {z.max():.2f}, condition "
              f"number {res.condition_number:.3g}; load {os.getloadavg()[0]:.1f}")


def whole(duration: float = 100.0, rate: float = 1000.0, cutoff: float = 25.0,
          repeats: int = 1) -> None:
    """The worked example's arm identified from ``duration`` s of data at each noise
    level, ``repeats`` times with new noise (the same truth and design): per run the
    errors, and per level the fraction of all intervals of all runs that hold the truth."""
    import re
    import sys
    import warnings
    from pathlib import Path

    import pinocchio as pin
    import scipy.linalg

    from kanedyn.errors import KanedynWarning

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    from identify_arm import hidden_truth, seven_dof_panda  # the worked example's arm

    model = seven_dof_panda()
    xml = robot_path("panda").read_text()
    pm = pin.buildModelFromXML(re.sub(r'(<joint name="panda_finger_joint\d" )type="prismatic"',
                                      r'\1type="fixed"', xml))
    pd = pm.createData()
    rng = np.random.default_rng(3)
    truth, laws = hidden_truth(model, rng)
    design = identify.excitation(model, v_limits=1.5, a_limits=4.0, harmonics=3, samples=40,
                                 period=10.0, max_iter=8, seed=1)
    t = np.arange(0.0, duration, 1.0 / rate)
    q, v, a = design.trajectory(t)
    clean = kd.rnea(truth, q, v, a) + np.column_stack([laws[j](v[:, j]) for j in range(7)])
    every = int(rate / (2 * cutoff))
    print(f"whole identification, 7-DOF Panda, {t.size} samples ({duration:g} s at "
          f"{rate:g} Hz), excitation condition number {design.condition_number:.3g}; "
          f"load {os.getloadavg()[0]:.1f}")
    def run(noise):
        """One experiment at this noise level: the fit and its intervals' hits."""
        q_meas = q + rng.normal(0.0, 2e-6, q.shape)
        tau = clean + rng.normal(0.0, noise, q.shape)
        t0 = time.perf_counter()
        prepared = identify.prepare(t, q_meas, tau, cutoff=cutoff)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", KanedynWarning)
            res = identify.fit(model, *prepared[1:], "stribeck", every=every,
                               lowpass=identify.Lowpass(cutoff, rate))
        dt = time.perf_counter() - t0
        true = np.concatenate([res.base.of(identify.standard_parameters(truth))]
                              + [[l.Fc, l.Fs, l.Fv, l.vs, l.delta] for l in laws])
        z = np.abs(res.estimate - true) / res.stderr
        hits = (res.interval[:, 0] <= true) & (true <= res.interval[:, 1])
        r = res.base.rank
        rel = np.abs(res.estimate[:r] - true[:r]) / np.abs(true[:r]).max()
        print(f"  noise {noise:g} N m: prepare + fit {dt:.2f} s ({res.rows.size} samples, "
              f"{res.nfev} evaluations); base parameters: largest error "
              f"{rel.max():.2e} of the largest, friction levels Fc largest error "
              f"{np.max(np.abs(res.estimate[r::5] - true[r::5])):.3g} N m; |error|/stderr "
              f"median {np.median(z):.2f}, max {z.max():.2f}; truth inside the 95 % "
              f"intervals {100 * hits.mean():.0f} %; load {os.getloadavg()[0]:.1f}")
        return res, prepared, hits

    for noise in (0.02, 0.05, 0.2):
        hits = []
        for _ in range(repeats):
            res, (tp, qp, vp, ap, taup), h = run(noise)
            hits.append(h)
        if repeats > 1:
            print(f"  noise {noise:g} N m, {repeats} runs: truth inside the 95 % intervals "
                  f"{100 * np.mean(hits):.1f} % of {np.size(hits)} intervals")

    # the linear part side by side, on the same prepared, decimated samples
    rows = res.rows
    Q, V, A, T = qp[rows], vp[rows], ap[rows], taup[rows]

    def peer():
        W = np.empty((rows.size, 7, 70 + 14))
        for k in range(rows.size):
            W[k, :, :70] = pin.computeJointTorqueRegressor(pm, pd, Q[k], V[k], A[k])
        W[:, :, 70:] = 0.0
        for j in range(7):
            W[:, j, 70 + 2 * j] = np.sign(V[:, j])
            W[:, j, 71 + 2 * j] = V[:, j]
        Ws = W.reshape(-1, W.shape[2])
        _, R, perm = scipy.linalg.qr(Ws, mode="economic", pivoting=True)
        rank = int(np.sum(np.abs(np.diag(R)) > 1e-9 * abs(R[0, 0])))
        x, *_ = np.linalg.lstsq(Ws[:, perm[:rank]], (T - model.armature * A).ravel(),
                                rcond=None)
        return rank, x

    def ours():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", KanedynWarning)
            return identify.fit(model, Q, V, A, T, "viscous+coulomb")

    base = identify.base_parameters(model)  # (compiled and cached, as peer's QR is not)
    rank_peer, _ = peer()
    lin = ours()
    mine, theirs = [], []
    for _ in range(3):  # alternate: a shared machine's load hits both alike
        mine.append(best(ours, reps=3))
        theirs.append(best(peer, reps=3))
    mine, theirs = min(mine), min(theirs)
    print(f"  linear part at {rows.size} samples (viscous + Coulomb): kanedyn fit "
          f"{mine:.3f} s ({lin.base.rank} base + 14 friction parameters, weighted, with "
          f"covariance); pinocchio regressor + pivoted QR + lstsq {theirs:.3f} s (rank "
          f"{rank_peer}); ratio {mine / theirs:.2f} (base parameters {base.rank}); "
          f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--robot", default="panda")
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--only", choices=("regressor", "fit", "whole"),
                    help="run one part alone: the regressor per state, the 3-DOF fit, or "
                         "the whole identification of the 7-DOF arm")
    ap.add_argument("--whole-only", action="store_true", help="the same as --only whole")
    ap.add_argument("--repeats", type=int, default=1,
                    help="whole identification: runs per noise level (new noise each)")
    args = ap.parse_args()
    only = "whole" if args.whole_only else args.only
    if only in (None, "regressor"):
        regressor(args.robot, args.samples)
    if only in (None, "fit"):
        fit(args.rate)
    if only in (None, "whole"):
        whole(repeats=args.repeats)
