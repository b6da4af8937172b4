"""Robot identification against Pinocchio (issue 20): the joint torque regressor per
sample, and a whole identification's time and parameter error.

    .venv/bin/python bench/identify.py [--robot panda] [--samples 2000]

Per state, µs: ``kd.joint_torque_regressor`` one state at a time from Python, the same
over a batch (per sample, all cores), and Pinocchio's ``computeJointTorqueRegressor``
from Python, on the same states (Pinocchio's model from its own URDF parser; the best of
several alternating runs, and the load). Then ``identify.fit`` of a 3-DOF arm with
Stribeck friction from 10 s of 1 kHz data: its time and the largest error of a parameter
in units of its standard error, at two noise levels.
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
          f"one {one / peer:.2f}, batch {batch / peer:.2f}; load {os.getloadavg()[0]:.1f}")


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


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--robot", default="panda")
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=1000.0)
    args = ap.parse_args()
    regressor(args.robot, args.samples)
    fit(args.rate)
