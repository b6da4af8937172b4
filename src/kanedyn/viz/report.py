"""``report.html``: one self-contained page — the runs, the energy figure, a 3D view, plots.

Everything is inline (plots as base64 PNG, the view's data as JSON, three.js
and the page's script), so the file opens offline and can be mailed. The 3D
view draws each body's visual geometry (URDF ``<visual>``, MJCF geoms: see
:mod:`kanedyn.model.visuals`) moving with the trajectory, in WebGL through
three.js (r187, MIT, embedded from ``viz/static/``); bodies without visuals are
drawn as a skeleton (origins joined parent to child, a stick to the centre of
mass). The camera is fitted to the robot over the whole run; drag to orbit,
wheel to zoom, right-drag to pan; play/pause and a time slider. Without WebGL
a 2D canvas draws the skeleton.

The page's script reports on itself in the DOM, which is how the tests read it
from headless Chromium (see ``viz/static/view.js``): ``#status`` becomes ``ok``
once frames have been drawn without error; ``#frame`` counts frames drawn;
``#errors`` collects ``window.onerror`` and ``console.error``; ``#renderer`` is
``webgl`` or ``2d``; ``#triangles`` the visuals' triangles in the scene;
``#drawn-triangles`` what WebGL drew in the last frame; opened with
``#selftest``, the page drags, zooms and moves its own slider and writes what
that did into ``#selftest``.
"""

from __future__ import annotations

import base64
import functools
import html
import importlib.util
import json
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

from .._files import write_atomic
from ..errors import KanedynError, KanedynWarning
from ..model.visuals import VisualGeometry
from .scene import MAX_TRIANGLES, decimate, scene_data

_STATIC = Path(__file__).resolve().parent / "static"


def _fmt(x) -> str:
    if isinstance(x, bool) or x is None:
        return html.escape(str(x))
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return f"{x:.6g}" if math.isfinite(x) else str(x)
    return html.escape(str(x))


def _table(d: Mapping) -> str:
    rows = []
    for k, v in d.items():
        if callable(getattr(v, "to_dict", None)):  # a VerifyReport, or anything like it
            v = v.to_dict()
        if isinstance(v, Mapping):
            cell = _table(v)
        elif isinstance(v, Sequence) and not isinstance(v, str) and v and all(
                isinstance(r, Mapping) for r in v):
            cell = _records(v)
        else:
            cell = _fmt(v)
        rows.append(f"<tr><th>{html.escape(str(k))}</th><td>{cell}</td></tr>")
    return "<table class='kv'>" + "".join(rows) + "</table>"


def _records(rows: Sequence[Mapping]) -> str:
    """A list of dicts (e.g. the checklist's lines) as one table with a column per key."""
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cols)
    body = []
    for r in rows:
        cls = {True: "pass", False: "fail"}.get(r.get("passed"), "")
        cells = "".join(f"<td>{_fmt(r.get(c, ''))}</td>" for c in cols)
        body.append(f"<tr class='{cls}'>{cells}</tr>")
    return f"<table class='rec'><tr>{head}</tr>{''.join(body)}</table>"


def _img(path, caption: str | None = None) -> str:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise KanedynError(f"write_report: cannot read plot {str(p)!r}: {exc}") from exc
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise KanedynError(f"write_report: plot {str(p)!r} is not a PNG file")
    b64 = base64.b64encode(data).decode("ascii")
    name = html.escape(p.stem.replace("_", " "))
    cap = name if caption is None else html.escape(caption)
    return (f"<figure><img alt='{name}' src='data:image/png;base64,{b64}'>"
            f"<figcaption>{cap}</figcaption></figure>")


def _round(x, digits: int = 5):
    if isinstance(x, list):
        return [_round(y, digits) for y in x]
    if isinstance(x, float):
        return float(f"{x:.{digits}g}")
    return x


_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1000px;color:#222}
h1{font-size:1.4em} h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;font-size:0.9em} th,td{border:1px solid #ccc;padding:2px 6px;
text-align:left;vertical-align:top} table.kv>tbody>tr>th{background:#f3f3f3}
tr.pass td:first-child{border-left:4px solid #2a2} tr.fail td{background:#fdd}
figure{margin:0.8em 0} img{max-width:100%} figcaption{font-size:0.85em;color:#555}
#view{border:1px solid #999;background:#fbfbfd;touch-action:none;display:inline-block;
line-height:0} #view canvas{display:block}
#controls{margin:0.4em 0} #controls input[type=range]{width:60%;vertical-align:middle}
.small{font-size:0.8em;color:#666} #errors{color:#b00;white-space:pre-wrap}
"""


@functools.cache
def _static(name: str) -> str:
    try:
        text = (_STATIC / name).read_text(encoding="utf-8")
    except OSError as exc:
        raise KanedynError(f"write_report: kanedyn's page file {name!r} is missing from "
                           f"{_STATIC} ({exc.strerror}); reinstall kanedyn") from None
    return text.replace("</script", "<\\/script")


def _json_script(element_id: str, data) -> str:
    blob = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return f"<script type='application/json' id='{element_id}'>{blob}</script>"


_ANIMATION_KEYS = ("t", "origins", "coms", "quats", "anchors", "roots", "parents", "bounds")


def view_section(animation: Mapping, visuals: Sequence[VisualGeometry] | None = None, *,
                 max_triangles: int = MAX_TRIANGLES, width: int = 720, height: int = 480
                 ) -> str:
    """The HTML of the 3D view (elements, data and scripts), as report.html embeds it.

    ``animation`` is :func:`kanedyn.viz.animation_frames`' dict; ``visuals`` the
    bodies' visual geometry (:func:`kanedyn.model.visuals.load_urdf_visuals`, or a
    loader's), decimated to ``max_triangles`` mesh triangles. The element ids are
    fixed (``view``, ``status``, ...), so a page holds one view; to show several
    (a notebook), put each in its own frame (:func:`trajectory_view_html`).
    """
    missing = [k for k in _ANIMATION_KEYS if k not in animation]
    if missing:
        raise KanedynError(f"write_report: animation lacks {missing}; "
                           "make it with kanedyn.viz.animation_frames(model, t, q)")
    nb = len(animation["parents"])
    visuals = list(visuals or ())
    if visuals and importlib.util.find_spec("trimesh") is None:
        warnings.warn("write_report: drawing visual geometry needs trimesh (pip install "
                      "kanedyn[viz]); the bodies are drawn as a skeleton", KanedynWarning,
                      stacklevel=2)
        visuals = []
    scene = scene_data(decimate(visuals, max_triangles), animation, nb)
    data = {k: _round(v) if k in ("t", "origins", "coms", "quats", "anchors", "bounds") else v
            for k, v in animation.items()}
    if scene["instances"]:
        what = (f"{len(scene['instances'])} visuals, {scene['triangles']} triangles; bodies "
                "without visuals are drawn as a skeleton: ")
    else:
        what = ""
    return (
        f"<p class='small'>{html.escape(str(animation.get('model', '')))}: {what}body frame "
        "origins (orange) joined parent to child, centres of mass (blue); grey squares are "
        "the joints to the world. Drag to turn the view, wheel to zoom, right-drag to pan.</p>"
        f"<div id='view' data-width='{int(width)}' data-height='{int(height)}'></div>"
        "<div id='controls'><button id='play'>pause</button> "
        "<input id='slider' type='range' min='0' value='0'> <span id='time'></span></div>"
        "<p class='small'>frames drawn: <span id='frame'>0</span> · status: "
        "<span id='status'>loading</span> · renderer: <span id='renderer'></span> · "
        "triangles: <span id='triangles'>0</span> (drawn: <span id='drawn-triangles'>0"
        "</span>) <span id='selftest'></span></p>"
        "<div id='errors'></div>"
        + _json_script("anim-data", data) + _json_script("scene-data", scene)
        + f"<script>{_static('three.kanedyn.min.js')}</script>"
        + f"<script>{_static('view.js')}</script>")


def _energy_caption(energy: Mapping) -> str:
    if energy.get("kind") == "budget":
        return ("Energy budget error |E - E(0) - W_nc| of every run, W_nc the work of the "
                "non-conservative forces: the part of the energy change that the forces do "
                "not account for, which an exact method keeps at roundoff. (|E - E(0)| would "
                "show the forces' work, nearly the same for every method.)")
    return ("Energy error |E - E(0)| of every run: nothing non-conservative acts, so an "
            "exact method keeps E constant.")


def _page(title: str, body: str) -> str:
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
            + body + "</body></html>\n")


def view_page(animation: Mapping, visuals: Sequence[VisualGeometry] | None = None, *,
              title: str = "kanedyn view", max_triangles: int = MAX_TRIANGLES,
              width: int = 720, height: int = 480) -> str:
    """A whole self-contained HTML page holding the 3D view alone (see :func:`view_section`)."""
    return _page(title, view_section(animation, visuals, max_triangles=max_triangles,
                                     width=width, height=height))


def write_report(path: str | os.PathLike, summary: Mapping, plots: Sequence = (),
                 animation: Mapping | None = None, title: str | None = None, *,
                 visuals: Sequence[VisualGeometry] | None = None,
                 max_triangles: int = MAX_TRIANGLES, runs: Sequence[Mapping] | None = None,
                 energy: Mapping | None = None) -> Path:
    """Write a self-contained ``report.html`` and return its path.

    Parameters
    ----------
    path : the HTML file to write (atomically).
    summary : what the run was and what came of it, ``{name: value}``; a value
        may be a nested dict (a sub-table), a list of dicts (a table with a
        column per key, rows coloured by their ``passed`` entry), or an object
        with ``to_dict()`` such as a :class:`~kanedyn.verify.VerifyReport`.
        With ``runs`` it is the page's last section ("Details"), folded;
        without, its first ("Summary").
    plots : paths of PNG files (e.g. from :mod:`kanedyn.viz.plots`), inlined as base64.
        With ``energy`` the first is the energy figure, shown under the runs.
    animation : the dict of :func:`kanedyn.viz.animation_frames`, or None for no 3D view.
    title : the page title (default: the summary's ``"title"`` or ``"kanedyn report"``).
    visuals : the bodies' visual geometry (:class:`~kanedyn.model.visuals.VisualGeometry`),
        drawn in the 3D view; bodies without any are drawn as a skeleton.
    max_triangles : mesh triangles kept in all (see :func:`kanedyn.viz.scene.decimate`).
    runs : the table of the runs, one dict per run (:func:`kanedyn.viz.run_table`).
    energy : the data the energy figure was drawn from (:func:`kanedyn.viz.energy_figure_data`),
        embedded beside it as JSON (``#energy-data``).
    """
    if not isinstance(summary, Mapping):
        raise KanedynError(f"write_report: summary must be a dict, got {type(summary).__name__}")
    title = title or str(summary.get("title", "kanedyn report"))
    plots = list(plots)
    parts = [f"<h1>{html.escape(title)}</h1>"]
    if runs is not None:
        parts += ["<h2>Runs</h2>", _records(list(runs))]
    else:
        parts += ["<h2>Summary</h2>", _table(summary)]
    if energy is not None:
        if not plots:
            raise KanedynError("write_report: energy= is the data of the first plot, but no "
                               "plot was given")
        parts += ["<h2>Energy</h2>", _img(plots.pop(0), _energy_caption(energy)),
                  _json_script("energy-data", energy)]
    if animation is not None:
        parts += ["<h2>Animation</h2>",
                  view_section(animation, visuals, max_triangles=max_triangles)]
    elif visuals:
        raise KanedynError("write_report: visuals were given without an animation to draw")
    if plots:
        parts.append("<h2>Plots</h2>")
        parts += [_img(p) for p in plots]
    if runs is not None:
        parts += ["<h2>Details</h2><details><summary>configuration, checks and figures of "
                  "the run</summary>", _table(summary), "</details>"]
    page = _page(title, "\n".join(parts))

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(page)

    return write_atomic(path, write)
