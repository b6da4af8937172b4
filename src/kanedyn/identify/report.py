"""The identification report with plots: measured against predicted torque per joint,
and the identified friction curves with their pointwise confidence bands.

Figures are drawn with matplotlib's object interface (``Figure`` and the Agg canvas,
as ``kanedyn.viz`` does: no pyplot state, no display needed) and written to PNG files.

The band of a friction curve is the delta method's (Seber & Wild 1989, §5.1): at speed v
the curve F(v; φ̂) of a joint's parameters φ̂ (levels and Stribeck pair) has variance
``g(v)ᵀ Cov(φ̂) g(v)`` with ``g = ∂F/∂φ`` — the friction columns and their θ-derivatives
(:func:`~kanedyn.identify.friction_columns`) — and the band is ``F ± t σ_F`` with the
fit's Student quantile, so its half-width at a level equals that level's interval.
The points beside it are the friction the data show: each used equation's residual
plus the identified friction at its speed (τ − Y_b π̂_b − J_r q̈ up to the parallel
filter, which matters only near rest, where ``v_min`` leaves equations out).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import IdentificationError
from .estimation import Identification, _speed_names, friction_columns, friction_names


def _figure(rows: int, cols: int, width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, axes


def _save(fig, path: str | Path) -> str:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.png")
    fig.tight_layout()
    fig.savefig(tmp, dpi=100)
    os.replace(tmp, path)  # nothing half-written is left at `path`
    return str(path)


def friction_band(result: Identification, joint: str, v: ArrayLike) -> tuple[NDArray, NDArray]:
    """(F̂(v), half-width of the pointwise interval at ``result.confidence``) of a joint's
    identified friction at speeds v, by the delta method (module doc)."""
    if joint not in result.friction_joints:
        raise IdentificationError(f"friction_band: {joint!r} has no fitted friction (joints "
                                  f"with friction: {result.friction_joints})")
    v = np.atleast_1d(np.asarray(v, dtype=float))
    lin, nonlin = friction_names(result.friction, result.asymmetric)
    p = result.friction_parameters(joint)
    C, dC = friction_columns(result.friction, v, tuple(p[n] for n in nonlin),
                             tuple(p[n] for n in lin), result.asymmetric)
    g = np.hstack([C, dC[:, :len(nonlin)]])
    idx = [result.names.index(f"{joint}.{n}") for n in lin + nonlin]
    cov = result.cov[np.ix_(idx, idx)]
    sd = np.sqrt(np.maximum(np.einsum("ki,ij,kj->k", g, cov, g), 0.0))
    se = result.stderr
    # the Student quantile of the fit: interval half-width / standard error
    quantile = float(np.median((result.interval[:, 1] - result.estimate)[se > 0] / se[se > 0]))
    return C @ np.array([p[n] for n in lin]), quantile * sd


def plot_friction(result: Identification, path: str | Path, *, v_max: float | None = None,
                  truth: dict | None = None) -> str:
    """The identified friction of every joint with friction, one panel each: the curve,
    its pointwise band at ``result.confidence`` (module doc), and the friction the fit's
    data show at the equations used; ``truth``: {joint: callable F(v)} drawn dashed (a
    simulated experiment's hidden law). Written to ``path`` (PNG); returns it."""
    joints = list(result.friction_joints)
    if not joints:
        raise IdentificationError("plot_friction: the fit has no joint friction")
    cols = min(len(joints), 4)
    rows = -(-len(joints) // cols)
    fig, axes = _figure(rows, cols, 3.6 * cols, 2.9 * rows)
    level = int(round(100 * result.confidence))
    for k, (joint, j) in enumerate(zip(joints, result.friction_speeds, strict=True)):
        ax = axes[k // cols, k % cols]
        used = result.equations[:, j] if result.equations is not None else slice(None)
        if result.v is not None:
            vj = result.v[used, j]
            shown = result.residuals[used, j] + result.friction_torque(joint, vj)
            ax.plot(vj, shown, ".", ms=2, color="0.6", alpha=0.5, label="data")
            top = float(np.max(np.abs(vj))) if vj.size else 1.0
        else:
            top = 1.0
        top = v_max if v_max is not None else top
        vv = np.linspace(-top, top, 801)
        vv = vv[vv != 0.0]
        F, half = friction_band(result, joint, vv)
        for side in (vv < 0, vv > 0):  # no line across the jump at v = 0
            ax.fill_between(vv[side], (F - half)[side], (F + half)[side], color="C3",
                            alpha=0.3, lw=0, label=f"{level} % band" if side[-1] else None)
            ax.plot(vv[side], F[side], "C3", lw=1.2, label="identified" if side[-1] else None)
            if truth is not None and joint in truth:
                ax.plot(vv[side], np.asarray(truth[joint](vv[side])), "k--", lw=0.9,
                        label="truth" if side[-1] else None)
        ax.axhline(0.0, color="k", lw=0.4)
        ax.axvline(0.0, color="k", lw=0.4)
        ax.set_title(joint, fontsize=9)
        ax.set_xlabel("v [rad/s or m/s]", fontsize=8)
        ax.set_ylabel("friction [N m or N]", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if k == 0:
            ax.legend(fontsize=7, loc="upper left")
    for k in range(len(joints), rows * cols):
        axes[k // cols, k % cols].set_visible(False)
    return _save(fig, path)


def plot_torques(path: str | Path, t: ArrayLike, measured: ArrayLike, predicted: ArrayLike,
                 joints: list[str], *, other: ArrayLike | None = None,
                 other_label: str = "other model", label: str = "identified") -> str:
    """Measured against predicted joint torque, one panel per joint, with the prediction
    error below each (and ``other``, a second prediction to compare, e.g. the CAD
    model's). Written to ``path`` (PNG); returns it."""
    t = np.asarray(t, dtype=float).ravel()
    T, P = np.atleast_2d(measured), np.atleast_2d(predicted)
    O = None if other is None else np.atleast_2d(other)
    if T.shape != P.shape or T.shape != (t.size, len(joints)) or (O is not None
                                                                 and O.shape != T.shape):
        raise IdentificationError(f"plot_torques: t {t.shape}, measured {T.shape}, predicted "
                                  f"{P.shape} and {len(joints)} joints do not match")
    n = len(joints)
    cols = 2 if n > 3 else 1
    rows = -(-n // cols)
    fig, axes = _figure(rows, cols, 7.0 * cols, 2.3 * rows)
    for j, name in enumerate(joints):
        ax = axes[j // cols, j % cols]
        ax.plot(t, T[:, j], color="k", lw=1.0, label="measured")
        ax.plot(t, P[:, j], "C3--", lw=1.0, label=label)
        if O is not None:
            ax.plot(t, O[:, j], "C0:", lw=1.0, label=other_label)
        rms = float(np.sqrt(np.mean((P[:, j] - T[:, j]) ** 2)))
        text = f"{name}: RMS error {rms:.3g}"
        if O is not None:
            text += f" ({other_label} {float(np.sqrt(np.mean((O[:, j] - T[:, j]) ** 2))):.3g})"
        ax.set_title(text, fontsize=9)
        ax.set_ylabel("τ [N m or N]", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if j == 0:
            ax.legend(fontsize=7, loc="upper right")
        if j // cols == rows - 1 or j + cols >= n:
            ax.set_xlabel("t [s]", fontsize=8)
    for k in range(n, rows * cols):
        axes[k // cols, k % cols].set_visible(False)
    return _save(fig, path)


def report(result: Identification, folder: str | Path, *, validation=None,
           data: tuple | None = None, truth: dict | None = None, other=None,
           other_label: str = "other model") -> dict[str, str]:
    """Write the identification report into ``folder``: ``identification.txt`` (the table
    of :meth:`Identification.report`, and the validation's), ``friction.png``
    (:func:`plot_friction`, ``truth`` its option) and ``torque.png`` — measured against
    predicted torque on the held-out data of ``validation`` (a
    :class:`~kanedyn.identify.Validation`; ``other``, a validation of another model on
    the same data, drawn beside it), or else on ``data`` = (t, q, v, a, tau) (e.g. the
    fit's own; when the fit had a parallel filter, samples in order at its rate, and
    the prediction goes through the filter as τ did). Returns {name: path}."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    text = result.report()
    out = {"friction": plot_friction(result, folder / "friction.png", truth=truth)}
    if validation is not None:
        text += "\n\nvalidation on held-out data:\n" + validation.report()
        if other is not None:
            text += f"\n\n{other_label} on the same data:\n" + other.report()
        out["torque"] = validation.plot(folder / "torque.png", other=other,
                                        other_label=other_label)
    elif data is not None:
        t, q, v, a, tau = data
        predicted = result.predict(q, v, a)
        if result.lowpass is not None:
            predicted = result.lowpass(predicted)
        out["torque"] = plot_torques(folder / "torque.png", t, tau, predicted,
                                     _speed_names(result.model))
    path = folder / "identification.txt"
    path.write_text(text + "\n", encoding="utf-8")
    out["text"] = str(path)
    return out

