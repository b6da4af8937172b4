"""Plots of a simulation (matplotlib, Agg; no window, no global pyplot state).

Each function takes either arrays or any object with the attributes of the
same names (a :class:`kanedyn.sim.Trajectory` has ``t, q, v, energy,
work_nc, budget``), writes a PNG atomically and returns its path:

* :func:`plot_states` — q(t) and v(t);
* :func:`plot_energy_error` — ``|E(t) − E(0)| / scale`` on a log scale, one
  curve per run (pass several runs to compare integrators);
* :func:`plot_energy_budget` — ``E − E(0)``, the non-conservative work W_nc
  and the budget ``E − E(0) − W_nc`` (zero for exact dynamics);
* :func:`plot_energy_figure` — the report's headline: the data of
  :func:`energy_figure_data`, one curve per run on one log axis — the budget
  error ``|E − E(0) − W_nc|`` when anything non-conservative acts, ``|E − E(0)|``
  only when nothing does;
* :func:`plot_constraint_residuals` — ``|g(q)|`` (and whatever other levels
  are given) on a log scale.

On the log scales a value below 1e-17 (exact zero included) is drawn at 1e-17,
and the axis label says so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .._files import write_atomic
from ..errors import KanedynError

#: the floor of the log-scale plots (machine precision of a relative error, and below)
LOG_FLOOR = 1e-17


def _field(obj, name: str, given=None, required: bool = True):
    """``given`` if not None, else ``obj.<name>``; an array either way."""
    if given is None and obj is not None and not isinstance(obj, np.ndarray | list | tuple):
        given = getattr(obj, name, None)
    if given is None:
        if required:
            raise KanedynError(f"plot: no {name!r} given (pass {name}= or an object with .{name})")
        return None
    a = np.asarray(given, dtype=float)
    if not np.all(np.isfinite(a)):
        raise KanedynError(f"plot: {name!r} contains NaN or infinity")
    return a


def _time(obj, t) -> np.ndarray:
    if t is None and isinstance(obj, np.ndarray | list | tuple):
        t = obj
        obj = None
    tt = _field(obj, "t", t)
    if tt.ndim != 1 or tt.size < 2:
        raise KanedynError(f"plot: t must be 1-D with at least 2 samples, got shape {tt.shape}")
    return tt


def _rows(a: np.ndarray, n: int, name: str) -> np.ndarray:
    if a.ndim == 1:
        a = a[:, None]
    if a.shape[0] != n:
        raise KanedynError(f"plot: {name!r} has {a.shape[0]} samples but t has {n}")
    return a


def _figure(nrows: int = 1, height: float = 3.0) -> tuple[Figure, list]:
    fig = Figure(figsize=(7.5, height * nrows + 0.6), dpi=100)
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(nrows, 1, k + 1) for k in range(nrows)]
    return fig, axes


def _save_log_plot(fig: Figure, ax, ylabel: str, title: str, path,
                   ylabel_size: float | None = None) -> Path:
    """Label a one-axis log plot of curves over time (t, ``ylabel``, a legend, ``title``)
    and save it (:func:`_save`)."""
    ax.set_xlabel("t [s]")
    ax.set_ylabel(ylabel, fontsize=ylabel_size)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    ax.set_title(title)
    return _save(fig, path)


def _save(fig: Figure, path) -> Path:
    fig.tight_layout()
    return write_atomic(path, lambda tmp: fig.savefig(tmp, format="png"))


def _labels(names: Sequence[str] | None, n: int, prefix: str) -> list[str]:
    if names is not None and len(names) == n:
        return list(names)
    return [f"{prefix}{i}" for i in range(n)]


def plot_states(traj=None, path: str | os.PathLike = "states.png", *, t=None, q=None, v=None,
                names: Sequence[str] | None = None, title: str | None = None) -> Path:
    """q(t) (top) and v(t) (bottom, if v is available). ``names`` label the columns of q."""
    tt = _time(traj, t)
    Q = _rows(_field(traj, "q", q), tt.size, "q")
    V = _field(traj, "v", v, required=False)
    V = None if V is None else _rows(V, tt.size, "v")
    fig, axes = _figure(2 if V is not None else 1)
    for k, lab in enumerate(_labels(names, Q.shape[1], "q")):
        axes[0].plot(tt, Q[:, k], lw=1.2, label=lab)
    axes[0].set_ylabel("q")
    if V is not None:
        for k, lab in enumerate(_labels(None, V.shape[1], "v")):
            axes[1].plot(tt, V[:, k], lw=1.2, label=lab)
        axes[1].set_ylabel("v")
    for ax in axes:
        ax.grid(alpha=0.3)
        if ax.lines and len(ax.lines) <= 14:
            ax.legend(fontsize=7, ncol=min(7, len(ax.lines)), loc="upper right")
    axes[-1].set_xlabel("t [s]")
    axes[0].set_title(title or "states")
    return _save(fig, path)


def _runs(runs) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(label, t, E) for one trajectory, a (t, E) pair, or a mapping label -> either."""
    if isinstance(runs, Mapping):
        items = list(runs.items())
    else:
        items = [(getattr(runs, "method", "") or "run", runs)]
    out = []
    for label, r in items:
        if isinstance(r, tuple | list) and len(r) == 2:
            t, E = np.asarray(r[0], float), np.asarray(r[1], float)
        else:
            t, E = _time(r, None), _field(r, "energy")
        if E.shape != t.shape:
            raise KanedynError(f"plot: run {label!r}: energy has shape {E.shape}, t {t.shape}")
        if not np.all(np.isfinite(E)):
            raise KanedynError(f"plot: run {label!r}: energy contains NaN or infinity")
        out.append((str(label), t, E))
    return out


def plot_energy_error(runs, path: str | os.PathLike = "energy_error.png", *,
                      title: str | None = None) -> Path:
    """``|E(t) − E(0)| / max(|E(0)|, max|E − E(0)|)`` on a log scale, a curve per run.

    ``runs``: a trajectory, a pair ``(t, energy)``, or a mapping ``{label: either}``.
    """
    fig, (ax,) = _figure(1, 3.6)
    for label, t, E in _runs(runs):
        scale = max(abs(E[0]), float(np.abs(E - E[0]).max()), 1e-300)
        err = np.maximum(np.abs(E - E[0]) / scale, LOG_FLOOR)
        ax.semilogy(t, err, lw=1.2, label=f"{label} (max {err.max():.2e})")
    return _save_log_plot(fig, ax, f"|E - E(0)| / scale   (floor {LOG_FLOOR:g})",
                          title or "energy error", path)


def plot_energy_budget(traj=None, path: str | os.PathLike = "energy_budget.png", *, t=None,
                       energy=None, work_nc=None, budget=None, title: str | None = None) -> Path:
    """E − E(0), W_nc and the budget ``E − E(0) − W_nc`` (top); |budget| on a log scale
    (bottom). Without W_nc the work is taken as zero (a conservative run)."""
    tt = _time(traj, t)
    E = _rows(_field(traj, "energy", energy), tt.size, "energy")[:, 0]
    W = _field(traj, "work_nc", work_nc, required=False)
    W = np.zeros_like(E) if W is None else _rows(W, tt.size, "work_nc")[:, 0]
    B = _field(traj, "budget", budget, required=False)
    B = E - E[0] - W if B is None else _rows(B, tt.size, "budget")[:, 0]
    fig, (ax, ax2) = _figure(2)
    ax.plot(tt, E - E[0], label="E - E(0)")
    ax.plot(tt, W, label="W_nc (non-conservative work)")
    ax.plot(tt, B, "k--", lw=1, label="budget E - E(0) - W_nc")
    ax.set_ylabel("energy [J]")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax2.semilogy(tt, np.maximum(np.abs(B), LOG_FLOOR), "k", lw=1)
    ax2.set_ylabel(f"|budget| [J]  (floor {LOG_FLOOR:g})")
    ax2.set_xlabel("t [s]")
    ax2.grid(alpha=0.3, which="both")
    ax.set_title(title or "energy budget")
    return _save(fig, path)


def plot_constraint_residuals(traj=None, path: str | os.PathLike = "residuals.png", *, t=None,
                              residuals=None, title: str | None = None) -> Path:
    """Constraint residuals on a log scale: ``residuals`` is (N, m) (the norm over the m
    constraints is drawn) or a mapping ``{"position": (N, m), "velocity": ...}``."""
    tt = _time(traj, t)
    if residuals is None and traj is not None:
        residuals = getattr(traj, "residuals", None)
    if residuals is None:
        raise KanedynError("plot: no constraint residuals given (residuals= or .residuals)")
    levels = residuals if isinstance(residuals, Mapping) else {"|g(q)|": residuals}
    fig, (ax,) = _figure(1, 3.6)
    for label, r in levels.items():
        R = _rows(_field(None, str(label), r), tt.size, str(label))
        ax.semilogy(tt, np.maximum(np.linalg.norm(R, axis=1), LOG_FLOOR), lw=1.2, label=label)
    return _save_log_plot(fig, ax, f"residual norm  (floor {LOG_FLOOR:g})",
                          title or "constraint residuals", path)


#: points per curve of the energy figure (the envelope of the run, see energy_figure_data)
FIGURE_POINTS = 1000


def _envelope(t: np.ndarray, y: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ``n`` points of (t, y): the largest y of each of n equal runs of samples,
    at its own time, so that no peak of the error is lost from the figure."""
    if t.size <= n:
        return t, y
    edges = np.linspace(0, t.size, n + 1).astype(int)
    k = np.array([a + int(np.argmax(y[a:b])) for a, b in zip(edges[:-1], edges[1:],
                                                              strict=True)])
    return t[k], y[k]


def energy_figure_data(runs, points: int = FIGURE_POINTS) -> dict:
    """What the report's energy figure shows, one series per run (``{label: trajectory}``).

    If any run has non-conservative work (``work_nc`` not identically zero:
    friction, dampers, actuators), every run is shown by its energy budget
    error ``|E(t) − E(0) − W_nc(t)|`` — the part of the energy change that the
    forces do not account for, which an exact method keeps at roundoff;
    ``|E − E(0)|`` would show the friction's work, the same for every method.
    Only if nothing non-conservative acts is it ``|E(t) − E(0)|``. Both are
    divided by one scale for all runs, ``E_scale = max over runs of
    max(|E(0)|, max |E − E(0)|)``, and floored at ``LOG_FLOOR`` (1e-17).

    Returns ``{"kind": "budget" | "energy", "quantity": str, "scale": E_scale,
    "title", "series": [{"label", "t", "value", "max"}]}``; ``value`` holds at
    most ``points`` samples per run, the largest of each equal run of samples
    (``max`` is over all of them).
    """
    items = list(runs.items()) if isinstance(runs, Mapping) else [
        (getattr(runs, "method", "") or "run", runs)]
    if not items:
        raise KanedynError("energy_figure_data: no runs given")
    got = []
    for label, r in items:
        t = _time(r, None)
        E = _rows(_field(r, "energy"), t.size, "energy")[:, 0]
        W = _field(r, "work_nc", required=False)
        W = np.zeros_like(E) if W is None else _rows(W, t.size, "work_nc")[:, 0]
        got.append((str(label), t, E, W))
    nc = any(np.any(W != 0) for *_, W in got)
    scale = max(max(abs(E[0]), float(np.abs(E - E[0]).max())) for _, _, E, _ in got)
    scale = scale if scale > 0 else 1.0
    series = []
    for label, t, E, W in got:
        err = np.maximum(np.abs(E - E[0] - W if nc else E - E[0]) / scale, LOG_FLOOR)
        tt, yy = _envelope(t, err, int(points))
        series.append({"label": label, "t": tt.tolist(), "value": yy.tolist(),
                       "max": float(err.max())})
    return {
        "kind": "budget" if nc else "energy",
        "quantity": ("|E - E(0) - W_nc| / E_scale" if nc else "|E - E(0)| / E_scale"),
        "scale": float(scale),
        "title": ("energy budget error (non-conservative forces act)" if nc
                  else "energy error (no non-conservative force acts)"),
        "series": series,
    }


def plot_energy_figure(data: Mapping, path: str | os.PathLike = "energy.png") -> Path:
    """Draw :func:`energy_figure_data`'s series, one curve per run on one log axis."""
    fig, (ax,) = _figure(1, 3.6)
    for s in data["series"]:
        ax.semilogy(s["t"], s["value"], lw=1.2, label=f"{s['label']} (max {s['max']:.1e})")
    return _save_log_plot(
        fig, ax, f"{data['quantity']}\n(E_scale = {data['scale']:.4g} J, floor {LOG_FLOOR:g})",
        data["title"], path, ylabel_size=8)
