"""The mechanism moving, written to a .gif (Pillow) or an .mp4 (ffmpeg) with matplotlib."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
from matplotlib.animation import FFMpegWriter, FuncAnimation, PillowWriter
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .._files import write_atomic
from ..errors import KanedynError
from ..model import Model
from .frames import animation_frames


def _t_q(traj_or_t_q):
    if isinstance(traj_or_t_q, tuple | list) and len(traj_or_t_q) == 2:
        return traj_or_t_q
    if hasattr(traj_or_t_q, "t") and hasattr(traj_or_t_q, "q"):
        return traj_or_t_q.t, traj_or_t_q.q
    raise KanedynError("animate: give a trajectory (with .t and .q) or a pair (t, q)")


def animate(model: Model, traj_or_t_q, path: str | os.PathLike, fps: int = 20,
            max_frames: int = 120, dpi: int = 80) -> Path:
    """Write an animation of ``model`` following the trajectory to ``path``.

    The format follows the suffix: ``.gif`` (matplotlib's PillowWriter) or
    ``.mp4`` (FFMpegWriter; needs ``ffmpeg`` on PATH, else a KanedynError
    saying so). The skeleton is the one of :func:`animation_frames`: segments
    from each body's parent origin to its own, centres of mass as dots, in a
    3D view with equal axis scales. At most ``max_frames`` frames, uniformly
    spaced in time.
    """
    path = Path(path)
    fmt = path.suffix.lower()
    if fmt not in (".gif", ".mp4"):
        raise KanedynError(f"animate: {path.name!r} must end in .gif or .mp4")
    if fmt == ".mp4" and shutil.which("ffmpeg") is None:
        raise KanedynError("animate: writing .mp4 needs ffmpeg on PATH, which was not found; "
                           "install ffmpeg or write a .gif")
    if int(fps) < 1:
        raise KanedynError(f"animate: fps must be a positive integer, got {fps}")
    t, q = _t_q(traj_or_t_q)
    D = animation_frames(model, t, q, max_frames=max_frames)
    O, C = np.array(D["origins"]), np.array(D["coms"])
    anchors = dict(zip(D["roots"], np.array(D["anchors"]), strict=True))
    lo, hi = np.array(D["bounds"][0]), np.array(D["bounds"][1])
    centre, half = 0.5 * (lo + hi), max(0.5 * float(np.max(hi - lo)), 1e-3) * 1.1

    fig = Figure(figsize=(5, 5), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(projection="3d")
    for set_lim, c in zip((ax.set_xlim, ax.set_ylim, ax.set_zlim), centre, strict=True):
        set_lim(c - half, c + half)
    ax.set_box_aspect((1, 1, 1))
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_zlabel("z")
    links = [ax.plot([], [], [], "-", color="#345", lw=3)[0] for _ in D["parents"]]
    arms = [ax.plot([], [], [], "-", color="#89a", lw=1)[0] for _ in D["parents"]]
    joints = ax.plot([], [], [], "o", color="#e80", ms=5)[0]
    coms = ax.plot([], [], [], "o", color="#28c", ms=4)[0]
    label = ax.set_title("")

    def draw(f: int):
        for i, p in enumerate(D["parents"]):
            a = anchors.get(i, O[f, i]) if p < 0 else O[f, p]  # a floating root: no segment
            seg = np.array([a, O[f, i]])
            links[i].set_data_3d(seg[:, 0], seg[:, 1], seg[:, 2])
            arm = np.array([O[f, i], C[f, i]])
            arms[i].set_data_3d(arm[:, 0], arm[:, 1], arm[:, 2])
        joints.set_data_3d(O[f, :, 0], O[f, :, 1], O[f, :, 2])
        coms.set_data_3d(C[f, :, 0], C[f, :, 1], C[f, :, 2])
        label.set_text(f"{D['model']}   t = {D['t'][f]:.3f} s")
        return [*links, *arms, joints, coms, label]

    anim = FuncAnimation(fig, draw, frames=len(D["t"]), blit=False)
    writer = PillowWriter(fps=int(fps)) if fmt == ".gif" else FFMpegWriter(fps=int(fps))
    return write_atomic(path, lambda tmp: anim.save(tmp, writer=writer, dpi=dpi))
