"""PD tracking of a slow sinusoid on a 1-DOF joint with Stribeck friction, with and
without feed-forward friction compensation.

The joint (a horizontal-axis-free rotary stage: revolute about the vertical,
so no gravity torque) has exact stick–slip friction. The controller is

    τ = Kp (q_d - q) + Kd (v_d - v) [+ J a_d + F̂(v_d)]

Without compensation the joint sticks at every reversal of the motion until
the PD error has grown to Fs/Kp, then breaks free and jumps (stick–slip);
with F̂ = the friction law (here: the exact one, smoothed over eps in the
feed-forward only) the sticking intervals and the error spikes vanish.

Run: .venv/bin/python examples/friction_compensation.py [--t-final 12] [--plot out.png]
"""

from __future__ import annotations

import argparse

import numpy as np

import kanedyn as kd
from kanedyn import friction
from kanedyn.model.joints import Revolute

J = 0.05                                # kg m², rotor inertia about the axis
LAW = friction.Stribeck(Fc=0.20, Fs=0.30, vs=0.02, delta=2.0, Fv=0.05)
KP, KD = 20.0, 1.0                      # N m / rad, N m s / rad
AMP, OMEGA = 0.2, 2 * np.pi * 0.25      # rad, rad/s: a slow 0.25 Hz sinusoid


def stage() -> kd.Model:
    b = kd.ModelBuilder("rotary_stage")
    b.add_body("rotor", None, Revolute("axis", axis=(0.0, 0.0, 1.0)), mass=1.0,
               inertia=np.diag([J, J, J]))
    return b.build()


def reference(t):
    return AMP * np.sin(OMEGA * t), AMP * OMEGA * np.cos(OMEGA * t), \
        -AMP * OMEGA**2 * np.sin(OMEGA * t)


def run(t_final: float = 12.0, plot: str | None = None, eps_ff: float = 1e-3) -> dict:
    """Simulate both controllers; returns the tracking figures of each."""
    model = stage()
    out = {}
    for name, comp in (("pd", False), ("pd+ff", True)):
        def tau(t, q, v, comp=comp):
            qd, vd, ad = reference(t)
            u = KP * (qd - q[0]) + KD * (vd - v[0])
            if comp:
                u += J * ad + friction.friction_feedforward(LAW, vd, eps=eps_ff)
            return np.array([u])

        tr = friction.simulate(model, [0.0], [AMP * OMEGA], t_final, {"axis": LAW}, tau=tau,
                               dt_out=2e-3, rtol=1e-8, atol=1e-10)
        e = reference(tr.t)[0] - tr.q[:, 0]
        settle = tr.t >= 2.0                       # after the start-up transient
        stuck = (tr.friction.mode[:, 0] == 0) & settle
        out[name] = dict(
            rms_error=float(np.sqrt(np.mean(e[settle] ** 2))),
            max_error=float(np.max(np.abs(e[settle]))),
            stuck_fraction=float(np.mean(stuck[settle])),
            sticks=int(sum(1 for s in tr.friction.switches if s.kind == "stick" and s.t >= 2.0)),
            energy_residual=float(np.max(np.abs(tr.budget))),
            traj=tr, error=e,
        )
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axs = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
        for name, r in out.items():
            tr = r["traj"]
            axs[0].plot(tr.t, tr.q[:, 0], label=f"q ({name})")
            axs[1].plot(tr.t, 1e3 * r["error"], label=name)
            axs[2].plot(tr.t, tr.v[:, 0], label=name)
        axs[0].plot(tr.t, reference(tr.t)[0], "k--", lw=0.8, label="q_d")
        axs[0].set_ylabel("angle [rad]")
        axs[1].set_ylabel("error [mrad]")
        axs[2].set_ylabel("speed [rad/s]")
        axs[2].set_xlabel("t [s]")
        for a in axs:
            a.legend(loc="upper right")
            a.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(plot, dpi=110)
        plt.close(fig)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-final", type=float, default=12.0)
    ap.add_argument("--plot", default="friction_compensation.png")
    args = ap.parse_args()
    res = run(args.t_final, args.plot)
    for name, r in res.items():
        print(f"{name:6s}: rms error {1e3 * r['rms_error']:.3f} mrad, "
              f"max {1e3 * r['max_error']:.3f} mrad, "
              f"stuck {100 * r['stuck_fraction']:.1f}% of the time, {r['sticks']} sticks,"
              f" energy budget residual {r['energy_residual']:.1e} J")
    print(f"plot written to {args.plot}")


if __name__ == "__main__":
    main()
