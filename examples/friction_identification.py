"""Identify the Stribeck friction of a robot joint from synthetic measurements.

Two experiments on joint 2 (the elbow) of the shipped UR5 model, with a known
"true" friction and measurement noise on the torque:

1. constant-velocity runs: the elbow moves at a set of constant speeds (both
   directions, log-spaced to sample the Stribeck region) while the torque is
   logged; gravity changes with the angle and is removed through the model's
   RNEA before the fit (``friction.fit_joint``);
2. a free trajectory: the elbow is driven by a torque profile and swings
   under gravity with exact stick–slip friction; the fit runs through the
   inverse dynamics with accelerations from a Savitzky–Golay derivative
   (``friction.fit_trajectory``).

Run: .venv/bin/python examples/friction_identification.py [--plot fit.png]
"""

from __future__ import annotations

import argparse

import numpy as np

import kanedyn as kd
from kanedyn import friction

TRUE = friction.Stribeck(Fc=2.0, Fs=3.0, vs=0.05, delta=2.0, Fv=1.5)
JOINT = "elbow_joint"


def constant_velocity(model: kd.Model, noise: float, rng: np.random.Generator):
    j = model.bodies[model.joint_index(JOINT)].iv.start
    speeds = np.geomspace(2e-3, 2.0, 25)
    q, v, tau = [], [], []
    for w in np.r_[speeds, -speeds]:
        for k in range(4):                          # four angles per speed: gravity varies
            qk = kd.neutral(model).copy()
            qk[1] = -0.5
            qk[j] = -1.0 + 0.5 * k
            vk = np.zeros(model.nv)
            vk[j] = w
            q.append(qk)
            v.append(vk)
    q, v = np.array(q), np.array(v)
    a = np.zeros_like(v)
    tau = np.asarray(kd.rnea(model, q, v, a))
    tau[:, j] += TRUE(v[:, j]) + noise * rng.normal(size=len(q))
    return q, v, a, tau


def free_trajectory(model: kd.Model, noise: float, rng: np.random.Generator):
    """The elbow alone (others locked by a stiff PD) would need a reduced model; here a
    one-joint arm with the elbow's link inertia stands in for it."""
    b = kd.ModelBuilder("elbow")
    from kanedyn.model.joints import Revolute

    b.add_body("forearm", None, Revolute(JOINT, axis=(0.0, 1.0, 0.0)), mass=2.0,
               com=(0.2, 0.0, 0.0), inertia=np.diag([0.01, 0.03, 0.03]))
    arm = b.build()
    drive = lambda t, q, v: np.array([6.0 * np.sin(2 * np.pi * 0.6 * t)])
    tr = friction.simulate(arm, [0.0], [0.0], 8.0, {JOINT: TRUE}, tau=drive, dt_out=2e-3,
                           rtol=1e-10, atol=1e-12)
    tau = np.array([drive(t, None, None) for t in tr.t]) + noise * rng.normal(size=(tr.t.size, 1))
    return arm, tr, tau


def main(plot: str | None = "friction_identification.png", noise: float = 0.05) -> dict:
    rng = np.random.default_rng(42)
    model = kd.models.robot("ur5")
    q, v, a, tau = constant_velocity(model, noise, rng)
    fit1 = friction.fit_joint(model, q, v, a, tau, JOINT, model="stribeck")
    print("1. constant-velocity runs on the UR5 elbow, gravity removed by RNEA")
    print(fit1.report())
    arm, tr, tau2 = free_trajectory(model, noise, rng)
    fit2 = friction.fit_trajectory(arm, tr.t, tr.q, tr.v, tau2, JOINT, model="gaussian",
                                   window=9)
    print("\n2. free trajectory (driven swing with stick–slip), through the dynamics")
    print(fit2.report())
    print(f"\ntruth: {TRUE}")
    if plot:
        fit1.plot(plot)
        print(f"plot written to {plot}")
    return {"constant_velocity": fit1, "trajectory": fit2}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plot", default="friction_identification.png")
    ap.add_argument("--noise", type=float, default=0.05)
    args = ap.parse_args()
    main(args.plot, args.noise)
