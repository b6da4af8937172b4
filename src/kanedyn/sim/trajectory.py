"""The result of a simulation: states, derived quantities, the energy budget, solver statistics.

``budget = E(t) − E(0) − W_nc(t)`` with E = T + V_gravity + V_springs and
``W_nc = ∫ vᵀ τ_nc dt`` the work of the non-conservative force elements,
integrated by the method itself. An exact method keeps the budget at
roundoff, any method at its own accuracy.

Derived arrays (``vdot``, ``energy``, ``momentum``) are computed from the
system on first access and then kept; a loaded trajectory has them from the
file.
"""

from __future__ import annotations

import base64
import html
import io
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .._files import write_atomic
from .._optional import pandas
from ..errors import KanedynError, StateError

if TYPE_CHECKING:
    import pandas as pd

_ARRAYS = ("t", "q", "v", "vdot", "energy", "momentum", "work_nc", "budget")
_MOMENTUM = ("L_x", "L_y", "L_z", "P_x", "P_y", "P_z")

#: Further views a notebook shows below a trajectory's plots: functions
#: ``view(traj) -> str | None`` returning HTML (None: nothing to show). The package's
#: ``__init__`` registers the 3D view of :mod:`kanedyn.viz` here, so that ``sim`` never
#: imports ``viz`` (DESIGN.md: imports run one way).
HTML_VIEWS: list = []


def coordinate_names(system, n: int, which: str) -> list[str]:
    """Names of the ``n`` coordinates (``which="q"``) or speeds (``"v"``) of a system: the
    joint's name for a one-coordinate joint, ``<joint>.<k>`` for the k-th of a joint with
    several (a free joint's q: position x, y, z then quaternion w, x, y, z), and the index
    where the system has no model with named joints (a Kane system, a loaded trajectory)."""
    model = getattr(system, "model", None)
    bodies = getattr(model, "bodies", None)
    names = [str(i) for i in range(n)]
    if bodies is None:
        return names
    for body in bodies:
        sl = body.iq if which == "q" else body.iv
        idx = range(n)[sl]
        for k, i in enumerate(idx):
            names[i] = body.joint.name if len(idx) == 1 else f"{body.joint.name}.{k}"
    return names


@dataclass(frozen=True)
class Switch:
    """A mode change of one friction joint at time ``t``: kind ``"stick"``, ``"slip"``
    (break-away from stick) or ``"reverse"`` (the sliding speed passes through 0 without
    sticking); ``joint`` is the speed index, ``direction`` the new sliding direction
    (+1, −1; 0 when it sticks)."""

    t: float
    joint: int
    kind: str
    direction: int


@dataclass
class FrictionRecord:
    """The joint-friction side of a run with stick–slip (:mod:`kanedyn.sim.stickslip`,
    :mod:`kanedyn.sim.time_stepping`); a :class:`Trajectory`'s ``friction`` attribute.

    Columns follow ``joints`` (speed indices); rows the trajectory's output times.
    ``force`` is τ_f at the friction joints (the holding force while stuck), ``mode``
    +1 / −1 sliding forward / backward and 0 stuck, ``stuck`` the stick phases (exact
    laws only), ``work`` = ∫ τ_fᵀ v dt (the friction's work on the mechanism),
    ``other_work`` = ∫ (τ + τ_nc)ᵀ v dt of the applied and other non-conservative forces,
    ``dissipated`` = −∫ τ_fᵀ w dt ≥ 0 (the heat in the contacts, w the sliding speeds),
    ``z`` the LuGre bristle states, ``switches`` the stick/slip events in time order.
    """

    joints: list[int]
    force: NDArray
    mode: NDArray
    stuck: NDArray
    work: NDArray
    other_work: NDArray
    dissipated: NDArray
    z: NDArray
    switches: list[Switch] = field(default_factory=list)

    def switch_times(self, kind: str | None = None) -> NDArray:
        """Times of the switches (of one ``kind`` if given)."""
        return np.array([s.t for s in self.switches if kind is None or s.kind == kind])


class Trajectory:
    """States at the output times and what follows from them.

    Attributes: ``t`` (N,), ``q`` (N, nq), ``v`` (N, nv), ``vdot`` (N, nv) (v̇),
    ``energy`` (N,), ``momentum`` (N, 6) or None, ``work_nc`` (N,), ``budget`` (N,),
    ``stats`` (dict of per-step arrays: ``newton_iterations``, ``rejected_steps``,
    ...), ``method`` (name), ``system`` (None after :meth:`load`), ``friction`` (a
    :class:`FrictionRecord` for a run with stick–slip, else None; not saved by
    :meth:`save` beyond its switch times in ``stats``).
    """

    def __init__(self, t, q, v, work_nc, stats=None, method: str = "", problem=None,
                 vdot=None, energy=None, momentum=None, system=None,
                 friction: FrictionRecord | None = None):
        self.t = np.asarray(t, dtype=float)
        self.q = np.asarray(q, dtype=float)
        self.v = np.asarray(v, dtype=float)
        self.work_nc = np.asarray(work_nc, dtype=float)
        self.stats = dict(stats or {})
        self.method = method
        self._problem = problem
        self.system = system if problem is None else problem.system
        self.friction = friction
        self._vdot = None if vdot is None else np.asarray(vdot, dtype=float)
        self._energy = None if energy is None else np.asarray(energy, dtype=float)
        self._momentum = None if momentum is None else np.asarray(momentum, dtype=float)

    def __len__(self) -> int:
        return self.t.size

    @property
    def interrupted(self) -> bool:
        """True if the run was stopped by Ctrl-C: the samples cover t[0] .. t[-1] only."""
        return "interrupted" in self.stats

    def __repr__(self) -> str:
        return (f"Trajectory(method={self.method!r}, {len(self)} samples, "
                f"t = {self.t[0]:.4g} .. {self.t[-1]:.4g})")

    # --- derived quantities -------------------------------------------------
    def _need(self, what: str):
        if self._problem is None:
            raise KanedynError(f"Trajectory.{what}: not stored and no system to compute it from")
        return self._problem

    @property
    def vdot(self) -> NDArray:
        """v̇ at each output time, from the system's forward dynamics with the forces."""
        if self._vdot is None:
            P = self._need("vdot")
            self._vdot = np.array([P.acceleration(t, q, v)
                                   for t, q, v in zip(self.t, self.q, self.v, strict=True)])
        return self._vdot

    @property
    def energy(self) -> NDArray:
        """E = T + V_gravity + V_springs at each output time."""
        if self._energy is None:
            P = self._need("energy")
            self._energy = np.array([P.energy(q, v) for q, v in zip(self.q, self.v, strict=True)])
        return self._energy

    @property
    def momentum(self) -> NDArray | None:
        """Spatial momentum [L; P] (world coordinates) at each time, if the system offers it."""
        if self._momentum is None and self._problem is not None:
            s = self._problem.system
            if hasattr(s, "momentum"):
                self._momentum = np.array([s.momentum(q, v)
                                           for q, v in zip(self.q, self.v, strict=True)])
        return self._momentum

    @property
    def budget(self) -> NDArray:
        """``E(t) − E(0) − W_nc(t)``: zero for exact dynamics."""
        E = self.energy
        return E - E[0] - self.work_nc

    def relative_energy_error(self) -> NDArray:
        """``|budget| / max(|E(0)|, max|E − E(0)|, tiny)``, the figure tests and benchmarks use."""
        E = self.energy
        scale = max(abs(E[0]), float(np.abs(E - E[0]).max()), 1e-300)
        return np.abs(self.budget) / scale

    # --- tables ----------------------------------------------------------------
    def to_pandas(self) -> pd.DataFrame:
        """The trajectory as a pandas DataFrame, one row per output time.

        The index is ``t``; the columns are ``q:<name>``, ``v:<name>`` and
        ``vdot:<name>`` for each coordinate and speed (names from
        :func:`coordinate_names`: the joint's, ``<joint>.<k>`` for a joint with several
        coordinates, the index where the system has no named joints), then
        ``energy``, ``work_nc`` and ``budget`` (``E − E₀ − W_nc``), the spatial
        momentum ``L_x … P_z`` where the system offers it, and for a constrained system
        the residuals of its three levels, ``g:<row>`` (positions), ``Gv:<row>``
        (velocities) and ``acc:<row>`` (accelerations), rows named by
        ``system.constraint_names``. Needs pandas (``pip install 'kanedyn[pandas]'``).
        """
        pd = pandas("Trajectory.to_pandas")
        nq, nv = self.q.shape[1], self.v.shape[1]
        qn = coordinate_names(self.system, nq, "q")
        vn = coordinate_names(self.system, nv, "v")
        cols: dict[str, NDArray] = {}
        cols.update({f"q:{n}": self.q[:, i] for i, n in enumerate(qn)})
        cols.update({f"v:{n}": self.v[:, i] for i, n in enumerate(vn)})
        cols.update({f"vdot:{n}": self.vdot[:, i] for i, n in enumerate(vn)})
        cols.update(energy=self.energy, work_nc=self.work_nc, budget=self.budget)
        if self.momentum is not None:
            cols.update({n: self.momentum[:, i] for i, n in enumerate(_MOMENTUM)})
        residuals = getattr(self.system, "residuals", None)
        if residuals is not None:
            names = list(getattr(self.system, "constraint_names", []))
            for level, r in residuals(self.t, self.q, self.v, self.vdot).items():
                r = np.asarray(r, dtype=float).reshape(len(self), -1)
                rows = names if len(names) == r.shape[1] else [str(i) for i in range(r.shape[1])]
                cols.update({f"{level}:{n}": r[:, i] for i, n in enumerate(rows)})
        return pd.DataFrame(cols, index=pd.Index(self.t, name="t"))

    # --- in a notebook -----------------------------------------------------------
    def _repr_html_(self) -> str:
        """What a notebook shows for a trajectory: a line of figures, the plots of
        :meth:`plot` (states, speeds, relative energy error) as an inline PNG, and the
        views of :data:`HTML_VIEWS` (the 3D view of the mechanism, with its meshes where
        the Model carries visuals, for a trajectory of a Model)."""
        rows = [("method", self.method or "?"), ("samples", str(len(self))),
                ("t", f"{self.t[0]:.4g} .. {self.t[-1]:.4g} s"),
                ("nq, nv", f"{self.q.shape[1]}, {self.v.shape[1]}")]
        try:
            rows.append(("max |E − E₀ − W_nc| / |E₀|",
                         f"{float(self.relative_energy_error().max()):.3g}"))
            img = self._png()
        except KanedynError as e:  # no energy to compute (a loaded file without it)
            rows.append(("plots", html.escape(str(e))))
            img = ""
        if self.interrupted:
            rows.append(("interrupted", "yes: the samples end at the Ctrl-C"))
        table = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{v}</td></tr>"
                        for k, v in rows)
        views = [v for v in (view(self) for view in HTML_VIEWS) if v]
        return (f"<div class='kanedyn-trajectory'><table>{table}</table>"
                + (f"<img alt='trajectory plots' src='data:image/png;base64,{img}'/>"
                   if img else "") + "".join(views) + "</div>")

    def _png(self) -> str:
        """:meth:`plot` as a base64 PNG; the figure is closed, so a notebook does not show
        it a second time."""
        import matplotlib.pyplot as plt

        fig = self.plot()
        try:
            nq, nv = self.q.shape[1], self.v.shape[1]
            if nq <= 12:  # a legend of more lines than that hides the plot
                for ax, n, which in zip(fig.axes[:2], (nq, nv), "qv", strict=True):
                    ax.legend(coordinate_names(self.system, n, which), fontsize=7,
                              ncol=1 if n <= 6 else 2, loc="upper left",
                              bbox_to_anchor=(1.0, 1.0))
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
        finally:
            plt.close(fig)
        return base64.b64encode(buf.getvalue()).decode("ascii")

    # --- files -----------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> Path:
        """Write to ``.npz`` (everything, statistics included) or ``.csv`` (one row per
        sample: t, q…, v…, v̇…, energy, work_nc, budget), atomically: a temporary file in
        the same directory, then ``os.replace``."""
        path = Path(path)
        fmt = path.suffix.lower()
        if fmt not in (".npz", ".csv"):
            raise KanedynError(f"Trajectory.save: {path.name!r} must end in .npz or .csv")
        def write(tmp: str) -> None:
            with open(tmp, "wb") as fh:
                if fmt == ".npz":
                    arrays = {k: getattr(self, k) for k in _ARRAYS if k != "momentum"}
                    if self.momentum is not None:
                        arrays["momentum"] = self.momentum
                    for k, a in self.stats.items():
                        arrays[f"stats_{k}"] = np.asarray(a)
                    arrays["method"] = np.array(self.method)
                    np.savez(fh, **arrays)
                else:
                    nq, nv = self.q.shape[1], self.v.shape[1]
                    cols = (["t"] + [f"q{i}" for i in range(nq)] + [f"v{i}" for i in range(nv)]
                            + [f"vdot{i}" for i in range(nv)] + ["energy", "work_nc", "budget"])
                    data = np.column_stack([self.t, self.q, self.v, self.vdot, self.energy,
                                            self.work_nc, self.budget])
                    header = f"method={self.method}\n" + ",".join(cols)
                    np.savetxt(fh, data, delimiter=",", header=header, fmt="%.17g")

        write_atomic(path, write)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> Trajectory:
        """Read a file written by :meth:`save`."""
        path = Path(path)
        if path.suffix.lower() == ".npz":
            with np.load(path, allow_pickle=False) as z:
                stats = {k[6:]: z[k] for k in z.files if k.startswith("stats_")}
                return cls(z["t"], z["q"], z["v"], z["work_nc"], stats, str(z["method"]),
                           vdot=z["vdot"], energy=z["energy"],
                           momentum=z["momentum"] if "momentum" in z.files else None)
        if path.suffix.lower() == ".csv":
            with open(path) as fh:
                first = fh.readline()
                cols = fh.readline().lstrip("# ").strip().split(",")
            method = first.lstrip("# ").strip().removeprefix("method=")
            data = np.loadtxt(path, delimiter=",", ndmin=2)
            nq = sum(c.startswith("q") for c in cols)
            nv = sum(c.startswith("v") and not c.startswith("vdot") for c in cols)
            if data.shape[1] != 1 + nq + 2 * nv + 3:
                raise StateError(f"{path}: {data.shape[1]} columns do not match header {cols}")
            t, q, v = data[:, 0], data[:, 1:1 + nq], data[:, 1 + nq:1 + nq + nv]
            vdot = data[:, 1 + nq + nv:1 + nq + 2 * nv]
            return cls(t, q, v, data[:, -2], {}, method, vdot=vdot, energy=data[:, -3])
        raise KanedynError(f"Trajectory.load: {path.name!r} must end in .npz or .csv")

    # --- plots -------------------------------------------------------------------
    def plot(self, path: str | os.PathLike | None = None):
        """States against time, and the relative energy error on a log scale.

        With ``path`` the figure is written there (atomically) and closed;
        returns the matplotlib Figure.
        """
        import matplotlib

        if path is not None:
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        fig, (ax1, ax2, ax3) = plt.subplots(3, 1, sharex=True, figsize=(7, 7))
        ax1.plot(self.t, self.q)
        ax1.set_ylabel("q")
        ax2.plot(self.t, self.v)
        ax2.set_ylabel("v")
        err = np.maximum(self.relative_energy_error(), 1e-17)
        ax3.semilogy(self.t, err)
        ax3.set_ylabel("|E − E₀ − W_nc| / |E₀|")
        ax3.set_xlabel("t [s]")
        fig.suptitle(f"{self.method}")
        fig.tight_layout()
        if path is not None:
            path = Path(path)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix,
                                       dir=path.parent if str(path.parent) else ".")
            os.close(fd)
            try:
                fig.savefig(tmp)
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                plt.close(fig)
        return fig
