"""The report's table of runs: one row per method, the figures a reader compares."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..errors import KanedynError
from .plots import energy_figure_data


def _steps(traj) -> int:
    stats = getattr(traj, "stats", {}) or {}
    for key in ("nstep", "naccpt"):   # adaptive solvers count their own steps
        if key in stats and np.ndim(stats[key]) == 0:
            return int(stats[key])
    return int(len(traj.t) - 1)


def run_table(runs, wall_times: Mapping[str, float] | None = None) -> list[dict]:
    """One row per run of ``{label: trajectory}``: what the report's "Runs" table shows.

    Columns: ``method``; ``steps`` (the solver's own count if it keeps one,
    else output intervals); ``wall time [s]`` (from ``wall_times``, or "—");
    the energy figure's maximum (:func:`~kanedyn.viz.energy_figure_data`, the
    same scale): ``max |E - E(0) - W_nc| / E_scale`` when anything
    non-conservative acts in any run, else ``max |E - E(0)| / E_scale``; and
    ``max |g(q)|``, the largest constraint residual (``stats["residual_g"]``),
    "—" for a run without constraints.
    """
    named = dict(runs) if isinstance(runs, Mapping) else {
        getattr(runs, "method", "") or "run": runs}
    if not named:
        raise KanedynError("run_table: no runs given")
    fig = energy_figure_data(named)
    err_col = "max " + fig["quantity"]
    rows = []
    for (label, traj), s in zip(named.items(), fig["series"], strict=True):
        stats = getattr(traj, "stats", {}) or {}
        wall = None if wall_times is None else wall_times.get(label)
        res = stats.get("residual_g")
        rows.append({
            "method": str(label),
            "steps": _steps(traj),
            "wall time [s]": "—" if wall is None else f"{float(wall):.3g}",
            err_col: f"{s['max']:.2e}",
            "max |g(q)|": "—" if res is None else f"{float(np.max(np.abs(res))):.2e}",
        })
    return rows
