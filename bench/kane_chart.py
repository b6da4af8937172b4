"""kd.simulate on compiled Kane systems with quaternions: the closed-form chart Jacobian
against the central-difference fallback, side by side in one run.

The integrators step a system with quaternions in the chart ``q = q0 ⊕ ξ`` and need
J(ξ) (``v = J ξ̇``) at every stage. A ``CompiledSystem`` now gives it in closed form
(``chart_jacobian``: W(q)⁺ ∂(q0 ⊕ ξ)/∂ξ, the quaternion rows by SO(3)'s right Jacobian);
without it, ``kanedyn.integrators.base.chart_jacobian`` takes central differences of the
chart (2 nv chart evaluations and a least-squares solve a call). The fallback is run
here through a proxy that hides the method, on the same code otherwise; both are the
Python steps (``compiled=False``). First, RK4 by the loop generated with the equations
(``compiled_rk4``, kd.simulate's default for rk4 on a numba-compiled holonomic system), over
1 s.

Systems (numba backend): the spacecraft with a reaction wheel (``classic.
spacecraft_reaction_wheel``, nq 5, nv 4) and the free rigid body (``classic.
free_rigid_body``, nq 7, nv 6, no loads). dt = 1e-3, 0.2 s, best of 3 after a warm-up;
µs per step and the energy drift max |E − E0| / E0 of each run.

    PYTHONPATH=src .venv/bin/python bench/kane_chart.py

``--methods``: instead, midpoint, gauss4 and energy_momentum (its ``"projection"``
variant: midpoint and the energy projection), and itoh_abe (forward and symmetric) — the
implicit methods with a compiled loop in the quaternions' chart,
``kane_compiled.run_gauss_chart`` and ``run_itoh_abe_chart`` — by that loop against their
Python steps (``compiled=False``, the loop's reference), same systems, dt, span and
timing; µs per step, their ratio, the energy drift of each, and the largest |Δq|, |Δv|
between the two runs.

    PYTHONPATH=src .venv/bin/python bench/kane_chart.py --methods

With ``--methods``, then a forces case: a Kane tree with a quaternion derived from a Model
(``random_tree(2, seed=7, floating_base=True, joint_types=("revolute",))``: a free base
carrying a wheel on a hinge, nq 8, nv 7, gravity), with force elements that have rows
bound through its ``source_model`` — a spring and a damper on the hinge, a damper on the
base's six speeds, a constant torque on every speed, a constant wrench on the wheel —, the
same five methods by the chart loops against their Python steps, 0.05 s (the Python
Itoh–Abe steps take 24–36 ms each), the same timing; the energy budget
max |E − E₀ − W_nc| / |E₀| of each run beside the µs. Run it with
``KANEDYN_FIRST_CALLS=compile`` (the library's first calls compiled, not the reference's).
"""

from __future__ import annotations

import time

import numpy as np

import kanedyn as kd
from kanedyn.kane import classic


class WithoutChartJacobian:
    """The system with its ``chart_jacobian`` hidden (the integrators' fallback runs)."""

    def __init__(self, system):
        self._s = system

    def __getattr__(self, name):
        if name == "chart_jacobian":
            raise AttributeError(name)
        return getattr(self._s, name)


def systems():
    s, _ = classic.spacecraft_reaction_wheel()
    wheel = s.derive().compile(parameters={"I11": 3.0, "I22": 4.0, "I33": 5.0, "I12": 0.3,
                                           "J": 0.2, "K": 0.12})
    q_wheel = np.array([0.9, 0.1, -0.3, 0.2, 0.0])
    q_wheel[:4] /= np.linalg.norm(q_wheel[:4])
    s, _ = classic.free_rigid_body()
    body = s.derive().compile(parameters={"m": 2.0, "I11": 1.0, "I22": 2.0, "I33": 3.0,
                                          "I12": 0.1, "I23": -0.05, "I31": 0.02})
    q_body = np.concatenate([q_wheel[:4], [0.1, 0.2, 0.3]])
    return [("reaction wheel", wheel, q_wheel, np.array([0.3, -0.2, 0.5, 20.0])),
            ("free rigid body", body, q_body, np.array([0.3, -1.2, 0.5, 0.1, 0.0, -0.2]))]


def timed(system, q0, v0, method, T=0.2, dt=1e-3, repeat=3, compiled=False, **options):
    """µs a step (best of ``repeat`` after a warm-up call) and the energy drift
    max |E − E₀ − W_nc| / |E₀| (W_nc = 0 without force elements)."""
    kd.simulate(system, q0, v0, 10 * dt, method=method, dt=dt, compiled=compiled, **options)
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        tr = kd.simulate(system, q0, v0, T, method=method, dt=dt, compiled=compiled,
                         **options)
        best = min(best, time.perf_counter() - t0)
    drift = np.abs(tr.energy - tr.energy[0] - tr.work_nc).max() / abs(tr.energy[0])
    return best / round(T / dt) * 1e6, drift


def main() -> None:
    print(f"load {open('/proc/loadavg').read().split()[:3]}, {time.strftime('%H:%M:%S')} UTC")
    print(f"{'system':16s} {'method':16s} {'closed form':>12s} {'differences':>12s} "
          f"{'ratio':>6s}  drift closed / differences")
    for name, fast, q0, v0 in systems():
        c, dc = timed(fast, q0, v0, "rk4", T=1.0, compiled=True)
        print(f"{name:16s} {'rk4, generated loop':16s} {c:10.1f} µs   (drift {dc:.1e})")
        for method in ("rk4", "midpoint", "energy_momentum"):
            a, da = timed(fast, q0, v0, method)
            b, db = timed(WithoutChartJacobian(fast), q0, v0, method)
            print(f"{name:16s} {method:16s} {a:10.1f} µs {b:10.1f} µs {b / a:6.2f}  "
                  f"{da:.1e} / {db:.1e}")


def methods() -> None:
    """The compiled loops in the chart against the Python steps (module doc)."""
    print(f"load {open('/proc/loadavg').read().split()[:3]}, {time.strftime('%H:%M:%S')} UTC")
    print(f"{'system':16s} {'method':18s} {'loop':>10s} {'Python':>10s} {'ratio':>6s}  "
          f"drift loop / Python    max |Δq|, |Δv|")
    for name, fast, q0, v0 in systems():
        for label in ("midpoint", "gauss4", "energy_momentum", "itoh_abe",
                      "itoh_abe symmetric"):
            method, *variant = label.split()
            kw = {"variant": variant[0]} if variant else {}
            a, da = timed(fast, q0, v0, method, compiled=True, **kw)
            b, db = timed(fast, q0, v0, method, **kw)
            x = kd.simulate(fast, q0, v0, 0.2, method=method, dt=1e-3, **kw)
            y = kd.simulate(fast, q0, v0, 0.2, method=method, dt=1e-3, compiled=False, **kw)
            print(f"{name:16s} {label:18s} {a:7.1f} µs {b:7.1f} µs {b / a:6.1f}  "
                  f"{da:.1e} / {db:.1e}    {np.abs(x.q - y.q).max():.1e}, "
                  f"{np.abs(x.v - y.v).max():.1e}")


def wheeled_base():
    """The forces case (module doc): the tree, its force elements, a state."""
    from kanedyn.forces import ExternalWrench, JointDamper, JointSpring, JointTorque
    from kanedyn.kane import tree

    model = kd.models.random_tree(2, seed=7, floating_base=True, joint_types=("revolute",))
    system = tree.derive(model).compile(backend="numba")
    base, hinge = (b.joint.name for b in model.bodies)
    forces = [JointSpring(hinge, 3.0, 0.2), JointDamper(hinge, 0.3), JointDamper(base, 0.1),
              JointTorque(np.linspace(-0.2, 0.3, model.nv)),
              ExternalWrench(model.bodies[1].name, [0.1, -0.2, 0.3, 0.5, -0.4, 0.6])]
    q0 = np.array([0.1, -0.2, 0.3, 0.9, 0.1, -0.3, 0.2, 0.5])
    q0[3:7] /= np.linalg.norm(q0[3:7])
    return system, forces, q0, np.array([0.3, -1.2, 0.5, 0.1, 0.0, -0.2, 8.0])


def forces_case() -> None:
    """The chart loops with force rows against the Python steps (module doc)."""
    system, forces, q0, v0 = wheeled_base()
    T = 0.05
    print(f"wheeled base with forces (nq 8, nv 7), T = {T} s:")
    for label in ("midpoint", "gauss4", "energy_momentum", "itoh_abe",
                  "itoh_abe symmetric"):
        method, *variant = label.split()
        kw = {"variant": variant[0]} if variant else {}
        a, da = timed(system, q0, v0, method, T=T, compiled=True, forces=forces, **kw)
        b, db = timed(system, q0, v0, method, T=T, forces=forces, **kw)
        x = kd.simulate(system, q0, v0, T, method=method, dt=1e-3, forces=forces, **kw)
        y = kd.simulate(system, q0, v0, T, method=method, dt=1e-3, forces=forces,
                        compiled=False, **kw)
        assert "python_steps" not in x.stats
        print(f"{'wheeled base':16s} {label:18s} {a:7.1f} µs {b:7.1f} µs {b / a:6.1f}  "
              f"{da:.1e} / {db:.1e}    {np.abs(x.q - y.q).max():.1e}, "
              f"{np.abs(x.v - y.v).max():.1e}  W_nc {x.work_nc[-1]:.3f}")


if __name__ == "__main__":
    import sys

    if "--methods" in sys.argv[1:]:
        methods()
        forces_case()
        print(f"load {open('/proc/loadavg').read().split()[:3]}, "
              f"{time.strftime('%H:%M:%S')} UTC")
    else:
        main()
