"""kanedyn.viz — plots, the self-contained HTML report and animations (see docs/report.md).

Plain functions of arrays (or of any object with ``t, q, v, energy, work_nc,
budget`` attributes, such as a :class:`kanedyn.sim.Trajectory`); every file is
written atomically.
"""

from .animate import animate
from .frames import animation_frames
from .outputs import write_run_outputs
from .plots import plot_constraint_residuals, plot_energy_budget, plot_energy_error, plot_states
from .report import write_report

__all__ = [
    "animate",
    "animation_frames",
    "plot_constraint_residuals",
    "plot_energy_budget",
    "plot_energy_error",
    "plot_states",
    "write_report",
    "write_run_outputs",
]
