"""Everything a run writes for people to look at, in one call (what ``kanedyn simulate``
and ``kanedyn demo`` produce): plots, an optional animation file and ``report.html``."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import KanedynError
from ..model import Model
from ..model.visuals import VisualGeometry
from .animate import animate
from .frames import animation_frames
from .plots import (
    energy_figure_data,
    plot_constraint_residuals,
    plot_energy_budget,
    plot_energy_figure,
    plot_states,
)
from .report import write_report
from .scene import MAX_TRIANGLES
from .summary import run_table


def write_run_outputs(folder: str | os.PathLike, model: Model, runs, *,
                      summary: Mapping | None = None, verify=None, residuals=None,
                      animation: str | None = None, max_frames: int = 240,
                      visuals: Sequence[VisualGeometry] | None = None,
                      wall_times: Mapping[str, float] | None = None,
                      max_triangles: int = MAX_TRIANGLES) -> dict[str, Path]:
    """Write the plots, ``report.html`` (and an animation file) of one or more runs.

    Parameters
    ----------
    folder : output folder (created if missing; its parent must exist).
    model : the Model the runs are of (for the animation and the joint names).
    runs : a trajectory (``t, q, v, energy``; ``work_nc, budget`` if there are
        non-conservative forces) or ``{label: trajectory}``. The first run is the
        one whose states, budget and animation are drawn; the energy figure and the
        runs table compare all of them.
    summary : the run's configuration and figures (``{name: value}``), the report's
        folded "Details" section (and summary.json's content, written by the caller).
    verify : a :class:`~kanedyn.verify.VerifyReport`, added to the details as a table.
    residuals : constraint residuals of the first run (see :func:`plot_constraint_residuals`);
        without them no residual plot is drawn.
    animation : a file name in ``folder`` ending in .gif or .mp4, or None for none.
    visuals : the bodies' visual geometry, drawn in the report's 3D view.
    wall_times : ``{label: seconds}`` each run took, for the runs table.

    The headline figure ``energy_error.png`` is :func:`~kanedyn.viz.energy_figure_data`'s:
    the budget error ``|E − E(0) − W_nc|`` of every run when anything non-conservative
    acts, ``|E − E(0)|`` only when nothing does.

    Returns ``{"states": path, "energy_error": ..., "energy_budget": ...,
    ["residuals": ...,] ["animation": ...,] "report": ...}``.
    """
    folder = Path(folder)
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise KanedynError(f"cannot create output folder {str(folder)!r}: {exc}") from exc
    named = dict(runs) if isinstance(runs, Mapping) else {
        getattr(runs, "method", "") or "run": runs}
    if not named:
        raise KanedynError("write_run_outputs: no runs given")
    label, first = next(iter(named.items()))
    energy = energy_figure_data(named)
    out: dict[str, Path] = {}
    out["energy_error"] = plot_energy_figure(energy, folder / "energy_error.png")
    out["states"] = plot_states(first, folder / "states.png", names=model.joint_names,
                                title=f"states ({label})")
    out["energy_budget"] = plot_energy_budget(first, folder / "energy_budget.png",
                                              title=f"energy budget ({label})")
    if residuals is not None:
        out["residuals"] = plot_constraint_residuals(first, folder / "residuals.png",
                                                     residuals=residuals)
    if animation is not None:
        out["animation"] = animate(model, first, folder / animation)
    table = dict(summary or {})
    if verify is not None:
        table["verification"] = verify.to_dict()
    frames = animation_frames(model, first.t, first.q, max_frames=max_frames)
    plots = [p for k, p in out.items() if k != "animation"]
    out["report"] = write_report(folder / "report.html", table, plots, frames,
                                 visuals=visuals, max_triangles=max_triangles,
                                 runs=run_table(named, wall_times), energy=energy)
    return out
