"""report.html with a real robot's meshes: file size and time to write, and the load of a
mesh-heavy URDF (kanedyn's Model and visuals against Pinocchio's model and visual geometry).

Robots from example-robot-data (``pip install example-robot-data``; not in the test
extra, 131 MB): Talos (33 bodies, 52 visuals, STL), Panda (Collada) and UR5 (Collada).
For each: loading (best of 5), then report.html of a 240-frame motion (each joint on a
sine, the floating base standing) at several triangle budgets: time to write (best of 3)
and size.

Run: .venv/bin/python bench/report_size.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import kanedyn as kd
from kanedyn.model.visuals import load_urdf_visuals
from kanedyn.viz import animation_frames, write_report

ERD = Path(np.__file__).resolve().parents[1] / "cmeel.prefix" / "share" / "example-robot-data"
ROBOTS = [("talos", "talos_data/robots/talos_reduced.urdf", True),
          ("panda", "panda_description/urdf/panda.urdf", False),
          ("ur5", "ur_description/urdf/ur5_robot.urdf", False)]


def best(fn, n: int) -> tuple[float, object]:
    out, t = None, float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return t, out


def motion(model, frames: int = 240) -> tuple[np.ndarray, np.ndarray]:
    t = np.linspace(0.0, 4.0, frames)
    q0 = kd.neutral(model)
    Q = np.tile(q0, (frames, 1))
    free = model.bodies[0].joint.kind == "free"
    if free:
        Q[:, 2] = 1.05                       # the base at standing height
    k0 = 7 if free else 0
    phase = np.arange(model.nq - k0)
    Q[:, k0:] = 0.4 * np.sin(2 * np.pi * 0.5 * t[:, None] + phase)
    return t, Q


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="Talos only, one repeat")
    args = ap.parse_args()
    if not (ERD / "robots").is_dir():
        print(f"example-robot-data is not installed (looked in {ERD}); pip install it")
        return
    try:
        import pinocchio as pin
    except ImportError:
        pin = None
    n_load, n_write = (1, 1) if args.quick else (5, 3)
    robots = ROBOTS[:1] if args.quick else ROBOTS
    print("== loading a mesh-heavy URDF: model + visual geometry (meshes read), best of "
          f"{n_load} ==")
    print(f"{'robot':>6} {'bodies':>6} {'visuals':>7} {'triangles':>9} "
          f"{'kanedyn [s]':>11} {'pinocchio [s]':>13} {'ratio':>6}")
    loaded = {}
    for name, rel, fb in robots:
        urdf = ERD / "robots" / rel

        def ours(urdf=urdf, fb=fb):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = kd.load_urdf(urdf, floating_base=fb)
                return m, load_urdf_visuals(urdf, m)

        t_k, (model, vis) = best(ours, n_load)
        tri = sum(len(v.faces) for v in vis if v.kind == "mesh")
        if pin is not None:
            def theirs(urdf=urdf, fb=fb):
                pm = (pin.buildModelFromUrdf(str(urdf), pin.JointModelFreeFlyer()) if fb
                      else pin.buildModelFromUrdf(str(urdf)))
                return pin.buildGeomFromUrdf(pm, str(urdf), pin.GeometryType.VISUAL,
                                             package_dirs=[str(ERD.parent)])
            t_p, _ = best(theirs, n_load)
            peer = f"{t_p:13.3f} {t_k / t_p:6.2f}"
        else:
            peer = f"{'(no pin)':>13} {'':>6}"
        print(f"{name:>6} {model.nb:6d} {len(vis):7d} {tri:9d} {t_k:11.3f} {peer}")
        loaded[name] = (model, vis)

    print(f"\n== report.html of a 240-frame motion, best of {n_write} ==")
    print(f"{'robot':>6} {'budget':>8} {'triangles':>9} {'write [s]':>9} {'size [MB]':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (model, vis) in loaded.items():
            t, Q = motion(model)
            for budget in (20_000, 60_000, 200_000):
                path = Path(tmp) / f"{name}_{budget}.html"

                def write(model=model, vis=vis, budget=budget, path=path, t=t, Q=Q):
                    frames = animation_frames(model, t, Q)
                    return write_report(path, {"model": model.name}, [], frames, visuals=vis,
                                        max_triangles=budget)

                t_w, p = best(write, n_write)
                scene = re.search(r"id='scene-data'>(.*?)</script>",
                                  p.read_text(encoding="utf-8"), re.S).group(1)
                shown = json.loads(scene)["triangles"]
                print(f"{name:>6} {budget:8d} {shown:>9} {t_w:9.2f} "
                      f"{p.stat().st_size / 1e6:9.2f}")


if __name__ == "__main__":
    main()
