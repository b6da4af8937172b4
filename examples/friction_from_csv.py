"""Friction identification from a CSV file, through the command line.

A joint is driven at constant speeds, both ways, and the torque that holds
each speed is logged: that torque is the friction F(v). This script writes
such a log as ``friction_data.csv`` (columns ``v`` in rad/s and ``F`` in N·m)
from a known Stribeck law plus measurement noise — or takes your own CSV — and
fits it with

    kanedyn identify-friction friction_data.csv --plot fit.png

which prints each parameter with its 95 % confidence interval. With the
synthetic data the script also repeats the experiment with fresh noise and
counts how often each interval holds the true value: for honest intervals,
about 95 % of the time (any single experiment may miss one or two of the five).

Run: .venv/bin/python examples/friction_from_csv.py [--short] [--out FOLDER] [--csv FILE]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from kanedyn import friction
from kanedyn.cli import main as kanedyn

# the law the synthetic experiment measures: Coulomb 0.8 N·m, breakaway 1.2 N·m,
# Stribeck speed 0.05 rad/s, Gaussian shape, viscous 0.3 N·m·s/rad
TRUTH = {"Fc": 0.8, "Fs": 1.2, "vs": 0.05, "delta": 2.0, "Fv": 0.3}
NOISE = 0.01  # N·m, standard deviation of the torque measurement


def write_experiment(path: Path, n_per_side: int, seed: int = 0) -> Path:
    """Constant-speed experiments, log-spaced speeds (dense where the Stribeck dip is)."""
    law = friction.Stribeck(**TRUTH)
    speeds = np.geomspace(1e-3, 2.0, n_per_side)
    v = np.concatenate([-speeds[::-1], speeds])
    F = law(v) + NOISE * np.random.default_rng(seed).normal(size=v.size)
    np.savetxt(path, np.column_stack([v, F]), delimiter=",", header="v,F", comments="")
    return path


def main(short: bool = False, out: str | Path | None = None, csv: str | None = None) -> dict:
    out = Path(out or tempfile.mkdtemp(prefix="kanedyn_friction_csv_"))
    out.mkdir(parents=True, exist_ok=True)
    data = Path(csv) if csv else write_experiment(out / "friction_data.csv",
                                                  12 if short else 40)
    plot = out / "fit.png"
    status = kanedyn(["identify-friction", str(data), "--plot", str(plot)])
    if status != 0:
        raise SystemExit(status)
    raw = np.genfromtxt(data, delimiter=",", names=True)
    fit = friction.fit(raw["v"], raw["F"], model="stribeck")
    result = {"params": fit.params, "plot": plot}
    if not csv:
        repeats = 20 if short else 100
        law, speeds = friction.Stribeck(**TRUTH), raw["v"]
        hits = dict.fromkeys(TRUTH, 0)
        for seed in range(1, repeats + 1):
            noisy = law(speeds) + NOISE * np.random.default_rng(seed).normal(size=speeds.size)
            ci = friction.fit(speeds, noisy, model="stribeck").ci
            for k in hits:
                hits[k] += ci[k][0] <= TRUTH[k] <= ci[k][1]
        result["coverage"] = {k: h / repeats for k, h in hits.items()}
        print(f"95 % intervals holding the true value over {repeats} repeats: "
              + ", ".join(f"{k} {100 * c:.0f} %" for k, c in result["coverage"].items()))
    print(f"wrote {data} and {plot}")
    return result


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="fewer speeds")
    ap.add_argument("--out", help="folder for the CSV and the plot (default: a temporary one)")
    ap.add_argument("--csv", help="your own CSV with columns v and F")
    a = ap.parse_args()
    main(a.short, a.out, a.csv)
