"""Load time of an MJCF humanoid: ``kd.load_mjcf`` against MuJoCo's ``MjModel.from_xml_path``.

Both read and compile the same file from disk in the same process, alternating,
``REPEAT`` times; the table gives the best and the median of each (wall clock,
``time.perf_counter``). kanedyn's figure is the whole of ``parse_mjcf``: XML with
line numbers, defaults, inertia from geoms, and the Model with its checks;
MuJoCo's is its C++ compiler (which also builds collision structures, the
sparse layout and rendering data kanedyn does not make). The files are
gymnasium's ``humanoid.xml`` (the Humanoid-v5 robot, 23 dofs) and, for scale,
``ant.xml``; with dm_control installed, also its suite's humanoid and the dog (85 dofs,
176 STL meshes whose inertia is computed from the triangles).

Run: ``.venv/bin/python bench/load_times.py [more.xml ...]`` (files named on the
command line are timed too).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import warnings

import kanedyn as kd
from kanedyn.model.mjcf import parse_mjcf

REPEAT = 30


def gym_asset(name: str) -> str | None:
    try:
        import gymnasium
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", name)
    return path if os.path.exists(path) else None


def dm_control_asset(name: str) -> str | None:
    """A dm_control suite file (``pip install dm-control``), if that package is there."""
    try:
        import dm_control.suite as suite
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(suite.__file__), name)
    return path if os.path.exists(path) else None


def timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def main() -> int:
    try:
        import mujoco
    except ImportError:
        print("mujoco is not installed (pip install mujoco): nothing to compare")
        return 0
    rows = []
    files = [(n, gym_asset(n), "gymnasium") for n in ("humanoid.xml", "ant.xml")]
    files += [(f"dmc {n}", dm_control_asset(n), "dm_control") for n in ("humanoid.xml",
                                                                         "dog.xml")]
    files += [(os.path.basename(p), p, "the command line") for p in sys.argv[1:]]
    for name, path, where in files:
        if path is None:
            print(f"{where}'s {name} not found (pip install {where.replace('_', '-')}): "
                  "skipped")
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", kd.KanedynWarning)
            robot = parse_mjcf(path)  # warm: imports, trimesh not needed here
            mujoco.MjModel.from_xml_path(path)
            t_kd, t_mj = [], []
            for _ in range(REPEAT):
                t_kd.append(timed(parse_mjcf, path))
                t_mj.append(timed(mujoco.MjModel.from_xml_path, path))
        rows.append((name, robot.model.nv, min(t_kd), statistics.median(t_kd), min(t_mj),
                     statistics.median(t_mj)))
    print(f"mujoco {mujoco.__version__}, python {sys.version.split()[0]}, best/median of "
          f"{REPEAT}")
    print(f"{'file':<17}{'nv':>4}  {'kanedyn best':>13}{'median':>11}  {'MuJoCo best':>12}"
          f"{'median':>11}  {'ratio (median)':>15}")
    for name, nv, kb, km, mb, mm in rows:
        print(f"{name:<17}{nv:>4}  {kb * 1e3:>10.2f} ms{km * 1e3:>8.2f} ms  {mb * 1e3:>9.2f} ms"
              f"{mm * 1e3:>8.2f} ms  {km / mm:>14.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
