"""kanedyn.viz — plots, the self-contained HTML report and animations (see docs/report.md).

Plain functions of arrays (or of any object with ``t, q, v, energy, work_nc,
budget`` attributes, such as a :class:`kanedyn.sim.Trajectory`); every file is
written atomically.
"""

from .animate import animate
from .frames import animation_frames
from .outputs import write_run_outputs
from .plots import (
    energy_figure_data,
    plot_constraint_residuals,
    plot_energy_budget,
    plot_energy_error,
    plot_energy_figure,
    plot_states,
)
from .report import view_page, view_section, write_report
from .scene import decimate, scene_data
from .summary import run_table
from .view import trajectory_view_html

__all__ = [
    "animate",
    "animation_frames",
    "decimate",
    "energy_figure_data",
    "plot_constraint_residuals",
    "plot_energy_budget",
    "plot_energy_error",
    "plot_energy_figure",
    "plot_states",
    "run_table",
    "scene_data",
    "trajectory_view_html",
    "view_page",
    "view_section",
    "write_report",
    "write_run_outputs",
]
