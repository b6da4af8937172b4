"""Identify a 7-DOF arm: its inertial parameters and joint friction together, then
validate the identified model by simulation on held-out data.

The arm is the shipped Franka Panda URDF with its two finger joints made fixed (the
hand is one rigid body), each joint given a rotor inertia (armature) of 0.1 kg m², as a
geared arm has; the armature is known to the fit, the link inertias are not.

1. the "truth": every link's mass, centre of mass and rotational inertia perturbed
   from the URDF's (masses and inertias by up to ±30 %, centres by ~1 cm), and a
   Stribeck law on every joint (kanedyn.friction.Stribeck);
2. an excitation trajectory (``identify.excitation``: a finite Fourier series within
   the joints' limits, optimised for the condition number of the base regressor);
3. the experiment: ``kd.simulate`` of the truth, its friction's sign smoothed by
   tanh(v/ε) (a fixed-step integrator needs it), under a computed-torque law along the
   excitation (the URDF's inverse dynamics plus PD feedback, so the truth's errors show
   as tracking error), at 1 kHz; the joint angles and the applied torques are
   "measured" with noise;
4. ``identify.prepare`` (zero-phase low-pass of q and τ, q̇ and q̈ by differences),
   ``identify.fit`` with Stribeck friction, the friction columns through the same
   low-pass as τ (parallel filtering), one sample per half cut-off period, a joint's
   equations near rest (|q̇| < V_MIN) left out; the 95 % intervals and how often they
   hold the truth;
5. ``identify.validate`` on a second, held-out run (another excitation): the torque
   prediction error per joint against the noise over the whole run, and the motion of
   the identified model simulated open loop under the measured torques over its first
   HORIZON seconds, against the URDF's own parameters;
6. ``identify.report``: the tables and the plots (friction curves with their bands and
   the hidden truth, measured against predicted torque on the held-out run) in FOLDER.

Run: .venv/bin/python examples/identify_arm.py [--short] [--out FOLDER] [--seed N]
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import kanedyn as kd
from kanedyn import friction, identify
from kanedyn.forces import JointFriction, JointTorque
from kanedyn.friction.smoothing import Smoothing
from kanedyn.model.urdf import robot_path
from kanedyn.spatial import inertia_parameters, spatial_inertia

RATE = 1000.0            # Hz: the robot's sampling rate and the integration step
EPS = 1e-2               # rad/s: tanh width of the friction's sign in the simulations
NOISE_Q = 2e-6           # rad: encoder noise (a 20-bit encoder's quantisation, RMS)
NOISE_TAU = 0.05         # N m: torque sensor noise
CUTOFF = 25.0            # Hz: low-pass of q and τ before differentiation
V_MIN = 0.03             # rad/s: below it friction is not a sliding law (the truth's
                         # tanh region here; presliding on a real joint)
HORIZON = 0.5            # s: the held-out stretch simulated open loop
ARMATURE = 0.1           # kg m²: rotor inertia of every joint (known)


def seven_dof_panda() -> kd.Model:
    """The shipped Panda URDF with its finger joints fixed: a 7-DOF arm."""
    xml = robot_path("panda").read_text()
    xml, n = re.subn(r'(<joint name="panda_finger_joint\d" )type="prismatic"', r'\1type="fixed"',
                     xml)
    if n != 2:
        raise RuntimeError("panda.urdf: expected two prismatic finger joints")
    return kd.load_urdf_string(xml, armature=ARMATURE)


def hidden_truth(model: kd.Model, rng: np.random.Generator):
    """The perturbed model and a Stribeck law per joint."""
    bodies = []
    for b in model.bodies:
        m, c, Ic = inertia_parameters(b.inertia)
        bodies.append(dataclasses.replace(b, inertia=spatial_inertia(
            m * rng.uniform(0.7, 1.3), c + rng.normal(0.0, 0.01, 3), Ic * rng.uniform(0.7, 1.3))))
    truth = dataclasses.replace(model, bodies=tuple(bodies))
    n = model.nv
    Fc = rng.uniform(0.3, 0.8, n)
    laws = [friction.Stribeck(Fc[j], Fc[j] * rng.uniform(1.3, 1.8), rng.uniform(0.05, 0.15),
                              2.0, rng.uniform(0.2, 0.6)) for j in range(n)]
    return truth, laws


def experiment(model, truth, laws, design, duration, rng):
    """Simulate the truth tracking the design by computed torque (the URDF's model) + PD;
    returns the measured (t, q, τ) at RATE and the true (q, v)."""
    h = 1.0 / RATE
    t = np.arange(0.0, duration + 0.5 * h, h)
    qd, vd, ad = design.trajectory(t)
    ff = kd.rnea(model, qd, vd, ad)
    Kp, Kd = 400.0, 40.0
    smooth = [dataclasses.replace(law, smoothing=Smoothing("tanh", EPS)) for law in laws]

    def control(time, q, v):
        """The torque acting at ``time``: the references interpolated between samples, so
        that the torque "measured" at a sample instant is the one acting on the state
        there (a command held over the step would be measured half a step early)."""
        x = min(max(time * RATE, 0.0), t.size - 1.0)
        k = min(int(x), t.size - 2)
        w = x - k
        at = (lambda z: (1.0 - w) * z[k] + w * z[k + 1])  # noqa: E731
        return at(ff) + Kp * (at(qd) - q) + Kd * (at(vd) - v)

    forces = [JointTorque(control)] + [JointFriction(name, law) for name, law in
                                       zip(model.joint_names, smooth, strict=True)]
    traj = kd.simulate(truth, qd[0], vd[0], duration, method="rk4", dt=h, forces=forces,
                       progress=False)
    tau = np.array([control(tk, qk, vk) for tk, qk, vk in zip(traj.t, traj.q, traj.v,
                                                              strict=True)])
    q_meas = traj.q + rng.normal(0.0, NOISE_Q, traj.q.shape)
    tau_meas = tau + rng.normal(0.0, NOISE_TAU, tau.shape)
    return traj.t, q_meas, tau_meas


def main(short: bool = False, out: str | Path | None = None, seed: int = 7) -> dict:
    """Run the example (``seed``: the hidden truth's and the noise's); returns the
    identification and the two validations."""
    out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="identify_arm_"))
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    model = seven_dof_panda()
    truth, laws = hidden_truth(model, rng)
    period = 6.0 if short else 10.0
    periods = 3 if short else 10
    limits = dict(v_limits=1.5, a_limits=4.0, harmonics=3, samples=40, period=period,
                  max_iter=8 if short else 60)
    t0 = time.perf_counter()
    design = identify.excitation(model, seed=1, **limits)
    print(f"excitation: condition number {design.initial_condition_number:.4g} -> "
          f"{design.condition_number:.4g}")
    t1 = time.perf_counter()
    t, q, tau = experiment(model, truth, laws, design, periods * period, rng)
    t2 = time.perf_counter()
    tp, qp, vp, ap, taup = identify.prepare(t, q, tau, cutoff=CUTOFF)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kd.KanedynWarning)  # notes are kept in result.notes
        # τ was low-passed: the friction columns go through the same filter (parallel
        # filtering); one sample per half cut-off period (the filtered noise nearly
        # independent); a joint's equations near rest left out
        result = identify.fit(model, qp, vp, ap, taup, friction="stribeck",
                              lowpass=identify.Lowpass(CUTOFF, RATE),
                              every=int(RATE / (2 * CUTOFF)), v_min=V_MIN)
    t3 = time.perf_counter()
    print(result.report())
    print(f"design {t1 - t0:.1f} s, experiment {t2 - t1:.1f} s, fit {t3 - t2:.1f} s")
    true = np.concatenate([result.base.of(identify.standard_parameters(truth))]
                          + [[l.Fc, l.Fs, l.Fv, l.vs, l.delta] for l in laws])
    inside = (result.interval[:, 0] <= true) & (true <= result.interval[:, 1])
    print(f"truth inside the 95 % interval for {inside.sum()} of {inside.size} parameters")

    # held out: another excitation, validated by torque prediction and by simulation
    other = identify.excitation(model, seed=2, **{**limits, "max_iter": 3})
    t2, q2, tau2 = experiment(model, truth, laws, other, 2.0 if short else 5.0, rng)
    held = identify.prepare(t2, q2, tau2, cutoff=CUTOFF)
    # the measured τ was low-passed: the predictions are passed through the same filter;
    # the torque errors over the whole held-out run, the motion open loop over its first
    # HORIZON seconds (module doc)
    lowpass = identify.Lowpass(CUTOFF, RATE)
    val = result.validate(*held, eps=EPS, lowpass=lowpass, horizon=HORIZON)
    cad = result.validate(*held, eps=EPS, lowpass=lowpass, horizon=HORIZON,
                          standard=identify.standard_parameters(model))
    print("\nidentified model on held-out data:\n" + val.report())
    print("\nthe URDF's inertias (with the identified friction) on the same data:\n"
          + cad.report())
    files = identify.report(result, out, validation=val, other=cad, other_label="URDF",
                            truth=dict(zip(model.joint_names, laws, strict=True)))
    print(f"report written to {out}: {', '.join(Path(f).name for f in files.values())}")
    return {"result": result, "truth_inside": inside, "validation": val, "urdf": cad,
            "files": files}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--seed", type=int, default=7, help="of the hidden truth and the noise")
    args = ap.parse_args()
    main(args.short, args.out, args.seed)
