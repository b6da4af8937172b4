"""A UR5 arm from its URDF, falling under gravity with joint friction; the energy budget.

The shipped ``ur5.urdf`` (the ROS description's numbers) gives every joint
``<dynamics damping="0" friction="0"/>``. Here the file is read, the
``<dynamics>`` elements are given illustrative values (a Coulomb level of 1.5–2 N m
and 0.8–1 N m s/rad of viscous friction on the three large joints), and the
model is loaded from the edited XML. From those
elements ``kanedyn.forces.urdf_friction`` makes one friction element per
joint: a Coulomb level ``friction`` (N m) plus viscous ``damping``
(N m s/rad), the sign function smoothed by tanh(w/ε) so that a fixed-step
method can integrate it. The wrists get viscous damping only: smoothed, a
Coulomb level acts near w = 0 as a damper of slope Fc/ε, which on the light
last wrist (8.5e-5 kg m² about its axis) has a time constant of microseconds,
far below an explicit step (``kanedyn.friction.simulate`` treats stick–slip
exactly instead).

The arm is released at rest from a stretched-out pose and falls. The energy
budget must close: E(t) − E(0) = W_nc(t), the (negative) work of friction.
W_nc is recorded by the integrator; the example also computes the heat of each
joint independently, by the trapezoidal rule on F(w)·w along the output, and
compares the two.

Run: .venv/bin/python examples/urdf_arm_friction.py [--short] [--out FOLDER]
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

import numpy as np

import kanedyn as kd
from kanedyn.forces import urdf_friction
from kanedyn.model.urdf import robot_path

# (friction [N m], damping [N m s/rad]) per joint: illustrative, larger on larger gears
DYNAMICS = {
    "shoulder_pan_joint": (2.0, 1.0),
    "shoulder_lift_joint": (2.0, 1.0),
    "elbow_joint": (1.5, 0.8),
    "wrist_1_joint": (0.0, 0.05),
    "wrist_2_joint": (0.0, 0.05),
    "wrist_3_joint": (0.0, 0.01),
}
EPS = 1e-2       # rad/s: width of the tanh smoothing of sgn(w)
DT = 1e-3        # s
Q0 = np.array([0.3, -0.2, 0.4, -0.5, 0.6, 0.0])   # rad: the arm held out, then let go


def ur5_with_friction() -> str:
    """The shipped UR5 URDF with the ``<dynamics>`` of each joint set from DYNAMICS."""
    xml = robot_path("ur5").read_text()
    for joint, (fric, damp) in DYNAMICS.items():
        block = re.compile(rf'(<joint name="{joint}".*?)<dynamics [^>]*/>', re.S)
        xml, n = block.subn(rf'\1<dynamics damping="{damp}" friction="{fric}"/>', xml, count=1)
        if n != 1:
            raise RuntimeError(f"ur5.urdf has no <dynamics> for {joint}")
    return xml


def joint_heat(model: kd.Model, elements, traj) -> dict[str, float]:
    """Heat ∫ F(w) w dt of each friction element, by the trapezoidal rule on the samples."""
    heat = {}
    for e in elements:
        w = traj.v[:, model.bodies[model.joint_index(e.joint)].iv.start]
        heat[e.joint] = float(np.trapezoid(np.asarray(e.law(w)) * w, traj.t))
    return heat


def main(short: bool = False, out: str | Path | None = None) -> dict:
    """Run the example; returns the budget figures printed (and the trajectory)."""
    out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="urdf_arm_friction_"))
    out.mkdir(parents=True, exist_ok=True)
    model = kd.load_urdf_string(ur5_with_friction())
    elements = urdf_friction(model, smoothing="tanh", eps=EPS)
    t_final = 0.5 if short else 3.0

    traj, half = (kd.simulate(model, Q0, np.zeros(model.nv), t_final, method="rk4", dt=h,
                              forces=elements, progress=False) for h in (DT, DT / 2))
    E = traj.energy
    lost = float(E[0] - E[-1])
    heat = joint_heat(model, elements, traj)
    budget = float(np.abs(traj.budget).max())
    budget_half = float(np.abs(half.budget).max())
    # the trapezoidal heat is second order in the output spacing: a check, not the budget
    quad_gap = abs(sum(heat.values()) + float(traj.work_nc[-1]))

    from kanedyn.viz import plot_energy_budget, plot_states

    plots = [plot_states(traj, out / "arm_states.png", names=model.joint_names,
                         title="UR5 falling with joint friction"),
             plot_energy_budget(traj, out / "arm_energy_budget.png",
                                title="E - E0 = W_nc (friction work)")]

    print(f"{model} from ur5.urdf, <dynamics> friction/damping on every joint; "
          f"{len(elements)} friction elements (tanh, eps = {EPS} rad/s)")
    print(f"released at rest from q0 = {Q0.tolist()} rad; {t_final:g} s of rk4, dt = {DT} s")
    print(f"  energy E0 = {E[0]:.4f} J, E(end) = {E[-1]:.4f} J: {lost:.4f} J lost")
    print(f"  work of friction W_nc = {traj.work_nc[-1]:.4f} J (recorded by the integrator)")
    print(f"  budget max |E - E0 - W_nc| = {budget:.2e} J ({budget / max(lost, 1e-300):.1e} "
          f"of the energy lost); with dt/2: {budget_half:.2e} J, {budget / budget_half:.1f}x "
          "smaller")
    print("  heat per joint (trapezoid on the samples, independent of W_nc): "
          + ", ".join(f"{j.removesuffix('_joint')} {h:.3f} J" for j, h in heat.items()))
    print(f"  sum of the heats {sum(heat.values()):.4f} J; differs from -W_nc by {quad_gap:.1e} J")
    print(f"plots written to {', '.join(str(p) for p in plots)}")
    return {"energy_lost": lost, "work_nc": float(traj.work_nc[-1]), "budget": budget,
            "budget_half_step": budget_half,
            "heat": heat, "traj": traj, "model": model, "elements": elements,
            "plots": plots}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="0.5 s instead of 3 s")
    ap.add_argument("--out", help="folder for the plots (default: a temporary folder)")
    args = ap.parse_args()
    main(args.short, args.out)
