"""What the compiled discrete gradients' Newton iteration costs, piece by piece (issue 17).

The figures behind docs/benchmarks.md, "Issue 17: fewer and cheaper Newton updates in the
compiled discrete gradients" (the per-step ratios against MuJoCo are bench/sim_vs_mujoco.py's):

- ``stats``: Newton residuals a step, Newton matrices built and the energy drift of avf,
  energy_momentum and itoh_abe on the 7- and 20-link chains of sim_vs_mujoco (10 s at dt =
  1e-3), and on ``make demo``'s arm with its smoothed friction (3 s at dt = 2e-3, the
  budget max|E − E0 − W_nc| / max|E|);
- ``friction``: Itoh–Abe (both variants) through the friction bands of the demo arm, 1 s:
  the budget of the compiled loop and of the Python steps, residuals and µs a step;
- ``predictor``: the error of the best-order extrapolation of the increments (the order
  chosen in hindsight, 1..9) against the converged increments of an avf run, relative;
- ``passes``: µs per call of the pieces (best of 3 rounds of N calls, in one compiled
  loop): the RNEA tangent pass at v = 0 against the full one, the energy pass, M⁻¹p by
  ABA, and a gradient ∇H (ABA + the energy pass on its poses);
- ``path``: µs per Itoh–Abe configuration part (∇̄_qH along the forward path at fixed p,
  Δq = 1e-3 (1..2)) on the 7- and 20-link chains, H by ``path_hamiltonian_moved`` (the
  backward pass, ancestors of the moved joint only) against ``hamiltonian_aba`` (the
  workspace's flag set to 0: the whole ABA pass at every point), same process;
- ``step``: energy_momentum's energy error on the 7-link chain at dt = 5e-3 (5 s), against
  its Python steps (``compiled=False``);
- ``lie``: energy_momentum's "lie" variant on a tossed free body (10 s at dt = 1e-3),
  compiled loop against its Python steps, µs a step (best of 3 after a warm-up);
- ``floating``: its "floating" variant on a free base with a 6-link arm, no gravity, the
  same way;
- ``avf_chart``: avf and itoh_abe (both variants) on a ball-jointed elbow, a tossed
  free body and a planar cart with a hinged pole (the chart loops of
  integrators/avf_chart_compiled.py) the same way, and how far their q is from the Python
  steps' after 1 s;
- ``gauss_chart``: midpoint, gauss4, midpoint + energy projection and energy_momentum's
  "projection" variant on the same three models (the tangent form of
  integrators/gauss_compiled.py) the same way.

Run: PYTHONPATH=src .venv/bin/python bench/dg_newton.py [stats friction predictor passes
     path step lie floating avf_chart gauss_chart]
"""

from __future__ import annotations

import sys
import time
from math import comb

import numba as nb
import numpy as np

import kanedyn as kd
from kanedyn.cli import demo_arm
from kanedyn.dynamics.derivatives_kernel import rnea_tangent, rnea_tangent_static
from kanedyn.dynamics.energy_kernel import energy_pass_into, energy_workspace
from kanedyn.dynamics.flat import flatten
from kanedyn.forces.kernel import empty_rows
from kanedyn.integrators import discrete_gradient_compiled as dgc

METHODS = ("avf", "energy_momentum", "itoh_abe")


def chain(n: int):
    model = kd.models.pendulum_chain(n, planar=False, radius=0.05)
    return model, 0.5 * np.cos(np.arange(n)), np.zeros(n)


def stats() -> None:
    print("== Newton statistics (residuals a step, matrices built, drift / budget) ==")
    for n in (7, 20):
        model, q0, v0 = chain(n)
        for m in METHODS:
            tr = kd.simulate(model, q0, v0, 10.0, method=m, dt=1e-3, progress=False)
            it = tr.stats["newton_iterations"]
            drift = np.abs(tr.energy - tr.energy[0]).max() / abs(tr.energy[0])
            print(f"{n:2d} links {m:16s} {it.mean():5.2f} residuals/step, "
                  f"{int(np.ravel(tr.stats.get('newton_matrices', [-1]))[0]):5d} matrices, "
                  f"drift {drift:.1e}", flush=True)
    model, forces = demo_arm()
    q0, v0 = np.linspace(0.9, 0.3, model.nq), np.zeros(model.nv)
    for m in METHODS:
        tr = kd.simulate(model, q0, v0, 3.0, method=m, dt=2e-3, forces=forces, progress=False)
        it = np.asarray(tr.stats["newton_iterations"])
        mats = tr.stats.get("newton_matrices")
        b = np.abs(tr.budget).max() / np.abs(tr.energy).max()
        print(f"demo arm {m:16s} {it.mean():5.2f} residuals/step, "
              f"{'Python steps' if mats is None else f'{int(mats[0]):5d} matrices'}, "
              f"budget {b:.1e}", flush=True)


def friction() -> None:
    """Itoh–Abe through the friction bands of ``make demo``'s arm: the budget of the
    compiled loop and of the Python steps over 1 s (dt = 2e-3, from rest)."""
    print("== Itoh–Abe with smoothed friction (demo arm, 1 s): budget max|E − E0 − W_nc| / "
          "max|E|, residuals a step, µs a step ==")
    model, forces = demo_arm()
    q0, v0 = np.linspace(0.9, 0.3, model.nq), np.zeros(model.nv)
    for variant in ("forward", "symmetric"):
        for compiled in (True, False):
            def run(variant=variant, compiled=compiled):
                return kd.simulate(model, q0, v0, 1.0, method="itoh_abe", dt=2e-3,
                                   forces=forces, variant=variant, compiled=compiled,
                                   progress=False)
            if compiled:
                run()  # (compiled or loaded from the cache)
            t = time.perf_counter()
            tr = run()
            us = 1e6 * (time.perf_counter() - t) / (len(tr.t) - 1)
            b = np.abs(tr.budget).max() / np.abs(tr.energy).max()
            it = np.asarray(tr.stats["newton_iterations"])
            print(f"  {variant:9s} {'compiled loop' if compiled else 'Python steps':13s} "
                  f"budget {b:.1e}  {it.mean():5.2f} residuals/step  {us:8.1f} µs/step",
                  flush=True)


def predictor() -> None:
    print("== best-order predictor error (relative to the increment) ==")
    for n in (7, 20):
        model, q0, v0 = chain(n)
        tr = kd.simulate(model, q0, v0, 1.0, method="avf", dt=1e-3, progress=False)
        P = np.array([kd.crba(model, tr.q[j]) @ tr.v[j] for j in range(len(tr.q))])
        D = np.diff(np.hstack([tr.q, P]), axis=0)
        errs = []
        for k in range(20, len(D)):
            best = np.inf
            for order in range(1, 10):
                d0 = sum((-1) ** j * comb(order, j + 1) * D[k - 1 - j] for j in range(order))
                best = min(best, np.abs(d0 - D[k]).max() / np.abs(D[k]).max())
            errs.append(best)
        e = np.array(errs)
        print(f"{n:2d} links: median {np.median(e):.1e}, 90 % {np.quantile(e, 0.9):.1e}, "
              f"max {e.max():.1e}")


@nb.njit
def _repeat(N, which, data, P, q, p, a, v, B, W, aw, ew, dT, dV, out, gq):
    for _ in range(N):
        if which == 0:
            rnea_tangent(data, False, q, np.zeros(q.shape[0]), a, B, W)
        elif which == 1:
            rnea_tangent_static(data, False, q, a, B)
        elif which == 2:
            energy_pass_into(data, q, v, dT, dV, out, *ew)
        elif which == 3:
            dgc.velocity_aba(q, p, aw, v)
        else:
            dgc.gradient_aba(data, P, False, q, p, aw, v, ew, dT, dV, out, gq)


def passes(N: int = 5000) -> None:
    print("== µs per call ==")
    names = ("rnea_tangent (v = 0, dq and dv)", "rnea_tangent_static", "energy pass",
             "M⁻¹p by ABA", "∇H: ABA + energy pass on its poses")
    for n in (7, 20):
        model, q, _ = chain(n)
        data = flatten(model).data
        rng = np.random.default_rng(0)
        p, a, v = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
        B, W = np.empty((n, n)), np.empty((n, n))
        aw, ew = dgc.aba_velocity_workspace(data, n), energy_workspace(n)
        dT, dV, out, gq = np.empty(n), np.empty(n), np.empty(8), np.empty(n)
        args = (data, empty_rows(n), q, p, a, v, B, W, aw, ew, dT, dV, out, gq)
        for which, name in enumerate(names):
            _repeat(10, which, *args)
            best = np.inf
            for _ in range(3):
                t0 = time.perf_counter()
                _repeat(N, which, *args)
                best = min(best, (time.perf_counter() - t0) / N)
            print(f"{n:2d} links {name:36s} {best * 1e6:6.2f}")


@nb.njit
def _configuration_parts(N, data, P, q, p, dq, g, x, aw, v, cw, H0):
    for _ in range(N):
        dgc.configuration_part(data, P, False, q, p, dq, False, g, x, aw, v, cw, H0)


def path() -> None:
    print("== Itoh–Abe configuration part, µs per call ==")
    for n in (7, 20):
        model, q, _ = chain(n)
        data = flatten(model).data
        P = empty_rows(n)
        p, dq = np.linspace(-1.0, 1.0, n), 1e-3 * np.linspace(1.0, 2.0, n)
        aw, cw = dgc.aba_velocity_workspace(data, n), dgc.path_workspace(data)
        v, g, x = np.empty(n), np.empty(n), np.empty(n)
        for flag, name in ((0, "hamiltonian_aba at every point"),
                           (1, "path_hamiltonian_moved")):
            cw[-1][0] = flag
            H0 = dgc.path_start(data, P, False, q, p, aw, v, cw)
            args = (data, P, q, p, dq, g, x, aw, v, cw, H0)
            _configuration_parts(10, *args)
            best = np.inf
            for _ in range(3):
                t0 = time.perf_counter()
                _configuration_parts(2000, *args)
                best = min(best, (time.perf_counter() - t0) / 2000)
            print(f"{n:2d} links {name:32s} {best * 1e6:7.2f}")


def step() -> None:
    print("== energy_momentum at dt = 5e-3, 7 links, 5 s: max|ΔE| / max|E| ==")
    model, q0, v0 = chain(7)
    for compiled in (True, False):
        tr = kd.simulate(model, q0, v0, 5.0, method="energy_momentum", dt=5e-3,
                         progress=False, compiled=compiled)
        e = np.abs(tr.energy - tr.energy[0]).max() / np.abs(tr.energy).max()
        print(f"{'compiled' if compiled else 'Python steps':12s} "
              f"{np.asarray(tr.stats['newton_iterations']).mean():5.2f} residuals/step, "
              f"energy error {e:.1e}")


def _compiled_against_python(m, q0, v0, method: str = "energy_momentum",
                             T_compiled: float = 10.0, **kw) -> None:
    """``method`` on (m, q0, v0), dt = 1e-3: the compiled loop over ``T_compiled`` (10 s)
    against the Python steps over 1 s, µs a step (best of 3 after a warm-up), the drift
    max|E − E0| / max(|E0|, max T), and (last line) the largest difference in q of the
    two over their common first second."""
    runs = {}
    for compiled, T in ((True, T_compiled), (False, 1.0)):
        kd.simulate(m, q0, v0, 0.1, method=method, dt=1e-3, compiled=compiled, **kw)
        best = np.inf
        for _ in range(3):
            t0 = time.perf_counter()
            tr = kd.simulate(m, q0, v0, T, method=method, dt=1e-3, compiled=compiled, **kw)
            best = min(best, (time.perf_counter() - t0) / (len(tr.t) - 1))
        scale = max(abs(tr.energy[0]), float(np.max(kd.kinetic_energy(m, tr.q, tr.v))))
        drift = np.abs(tr.energy - tr.energy[0]).max() / scale
        runs[compiled] = tr
        print(f"{'compiled' if compiled else 'Python steps':12s} {T:g} s: {best * 1e6:8.1f}"
              f"   drift {drift:.1e}")
    k = len(runs[False].t)
    dq = np.abs(runs[True].q[:k] - runs[False].q).max()
    print(f"max |q_compiled − q_Python| over 1 s: {dq:.1e}")


def lie() -> None:
    print("== energy_momentum, lie variant, free body: µs a step ==")
    inertia = np.array([[0.2, 0.01, 0.02], [0.01, 0.3, -0.03], [0.02, -0.03, 0.25]])
    m = kd.models.free_body(mass=1.5, inertia=inertia, com=(0.1, -0.05, 0.2))
    _compiled_against_python(m, kd.neutral(m), np.array([1.0, 2.0, -0.5, 0.3, 0.1, 2.0]))


def floating() -> None:
    """A free base (3 kg) carrying a 6-link arm of hinges about y, x, y, ..., no gravity."""
    print("== energy_momentum, floating variant, free base + 6-link arm: µs a step ==")
    from kanedyn.model.joints import Free, Revolute

    b = kd.ModelBuilder("floating_arm", gravity=(0, 0, 0))
    b.add_body("base", None, Free("root"), None, 3.0, (0.05, -0.02, 0.1),
               np.diag([0.2, 0.3, 0.25]))
    parent = "base"
    for k in range(6):
        axis = (0, 1, 0) if k % 2 == 0 else (1, 0, 0)
        b.add_body(f"link{k}", parent, Revolute(f"j{k}", axis=axis),
                   (np.eye(3), (0.3 if k == 0 else 0.25, 0, 0)), 1.0, (0.12, 0, 0),
                   np.diag([0.002, 0.02, 0.02]))
        parent = f"link{k}"
    m = b.build()
    q0 = kd.neutral(m)
    q0[7:] = 0.4 * np.cos(np.arange(6))
    v0 = np.concatenate([[0.3, -0.5, 0.8, 0.1, 0.2, -0.1], 1.5 * np.sin(np.arange(6) + 1)])
    _compiled_against_python(m, q0, v0)


def _chart_cases() -> dict:
    """tests/integrators/test_chart_methods.py's ball-jointed elbow (a ball shoulder, a
    hinged forearm, gravity), tossed free body (offset centre of mass, full inertia,
    gravity) and planar cart (a body on a planar joint in a vertical plane carrying a
    hinged pole): name → (model, q0, v0)."""
    m = kd.models.ball_elbow()
    q0 = kd.neutral(m)
    q0[:4] = kd.integrate_configuration(m, q0, np.array([0.9, -0.4, 0.2, 0.0]), 1.0)[:4]
    q0[4] = 0.7
    inertia = np.array([[0.2, 0.01, 0.02], [0.01, 0.3, -0.03], [0.02, -0.03, 0.25]])
    body = kd.models.free_body(mass=1.5, inertia=inertia, com=(0.1, -0.05, 0.2))
    cases = {"ball-jointed elbow": (m, q0, np.array([0.3, 1.2, 2.0, -1.0])),
             "tossed free body": (body, kd.neutral(body),
                                  np.array([1.0, 2.0, -0.5, 0.3, 0.1, 2.0])),
             "planar cart": (kd.models.planar_cart(), np.array([0.1, 0.5, 0.3, 0.8]),
                             np.array([1.0, 2.0, -1.5, 3.0]))}
    return cases


def avf_chart() -> None:
    """avf and itoh_abe (both variants) in the chart of ball, free and planar joints, on
    the models of :func:`_chart_cases`."""
    for method, kw in (("avf", {}), ("itoh_abe", {"variant": "forward"}),
                       ("itoh_abe", {"variant": "symmetric"})):
        for name, (model, q, v) in _chart_cases().items():
            print(f"== {method} {kw.get('variant', '')}, {name}: µs a step ==")
            _compiled_against_python(model, q, v, method, **kw)


def gauss_chart() -> None:
    """midpoint, gauss4, midpoint + project="energy" and energy_momentum's "projection"
    variant in the tangent form of integrators/gauss_compiled.py (q = q0 ⊕ ξ, ξ̇ = J(ξ)⁻¹v)
    on the models of :func:`_chart_cases`, the same way as :func:`avf_chart`."""
    for method, kw in (("midpoint", {}), ("gauss4", {}), ("midpoint", {"project": "energy"}),
                       ("energy_momentum", {"variant": "projection"})):
        for name, (model, q, v) in _chart_cases().items():
            # the projected runs over 3 s: the free body and the cart fall under gravity,
            # T and V grow apart, and E = T + V loses the projection's 4 tol (1 + |E0|) to
            # round-off (the projection stops converging at t ≈ 3.2 s resp. 4.5 s, the
            # compiled loop and the Python steps alike)
            print(f"== {method} {kw}, {name}: µs a step ==")
            _compiled_against_python(model, q, v, method, 3.0 if kw else 10.0, **kw)


if __name__ == "__main__":
    parts = sys.argv[1:] or ["stats", "friction", "predictor", "passes", "path", "step", "lie",
                             "floating", "avf_chart", "gauss_chart"]
    with open("/proc/loadavg") as f:
        print("load before:", f.read().split()[:3])
    for part in parts:
        {"stats": stats, "friction": friction, "predictor": predictor, "passes": passes,
         "path": path, "step": step, "lie": lie, "floating": floating,
         "avf_chart": avf_chart, "gauss_chart": gauss_chart}[part]()
    with open("/proc/loadavg") as f:
        print("load after:", f.read().split()[:3])
