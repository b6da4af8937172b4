"""The 3D view of a trajectory as an HTML fragment, for a notebook cell (``_repr_html_``)."""

from __future__ import annotations

import html
import os
from collections.abc import Sequence

from ..errors import KanedynError
from ..model import Model
from ..model.mjcf import parse_mjcf
from ..model.visuals import VisualGeometry, load_urdf_visuals
from .frames import animation_frames
from .report import view_page
from .scene import MAX_TRIANGLES


def trajectory_view_html(traj, model: Model | None = None,
                         visuals: Sequence[VisualGeometry] | None = None, *,
                         max_frames: int = 240, max_triangles: int = MAX_TRIANGLES,
                         width: int = 720, height: int = 480) -> str:
    """The report's 3D view of ``traj`` (anything with ``t`` and ``q``) as one ``<iframe>``.

    ``model`` defaults to the trajectory's own (``traj.system.model``, which
    :func:`kanedyn.simulate` of a Model sets), so ``Trajectory._repr_html_`` can be
    ``trajectory_view_html(self)``.

    The frame's ``srcdoc`` is a whole self-contained page (:func:`kanedyn.viz.view_page`:
    three.js, the data and the script inline), so several views in one notebook keep
    their element ids and scripts apart, and the notebook stays viewable offline.
    ``visuals`` as for :func:`kanedyn.viz.write_report`; by default those of the URDF
    or MJCF file the model was loaded from (``model.source``), so a robot is drawn with
    its meshes or geoms.
    """
    if model is None:
        model = getattr(getattr(traj, "system", None), "model", None)
        if not isinstance(model, Model):
            raise KanedynError("trajectory_view_html: the trajectory carries no Model (a "
                               "loaded one, or one of a Kane or constrained system); pass "
                               "model=")
    if visuals is None and os.path.isfile(model.source):
        # a robot loaded from a file is drawn as itself: a URDF's <visual> elements, an
        # MJCF file's visible geoms (the same file gives the same body numbering)
        if model.source.endswith(".urdf"):
            visuals = load_urdf_visuals(model.source, model)
        elif model.source.endswith(".xml"):
            visuals = list(parse_mjcf(model.source, warn=False).visuals) or None
    frames = animation_frames(model, traj.t, traj.q, max_frames=max_frames)
    page = view_page(frames, visuals, title=f"kanedyn view: {model.name}",
                     max_triangles=max_triangles, width=width, height=height)
    return (f"<iframe srcdoc=\"{html.escape(page, quote=True)}\" width='{int(width) + 30}' "
            f"height='{int(height) + 120}' style='border:none' "
            f"title='kanedyn view: {html.escape(model.name, quote=True)}'></iframe>")
