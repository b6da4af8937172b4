"""``report.html``: one self-contained page — summary table, plots, a 3D animation.

Everything is inline (plots as base64 PNG, the animation's data as JSON, a
small script drawing on a 2D canvas with a perspective projection), so the
file opens offline and can be mailed. The animation loops, has play/pause and
a time slider, and turns under a mouse drag. The page's script reports on
itself in the DOM, which is how the tests read it from headless Chromium:

* ``#status`` becomes ``ok`` once frames have been drawn without error;
* ``#frame`` holds the number of frames drawn so far (it grows while playing);
* ``#errors`` collects ``window.onerror`` and ``console.error`` messages;
* opened with ``#selftest``, the page drags its own canvas with synthetic mouse
  events and writes the view angles before/after into ``#selftest``.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from .._files import write_atomic
from ..errors import KanedynError


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


def _img(path) -> str:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise KanedynError(f"write_report: cannot read plot {str(p)!r}: {exc}") from exc
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise KanedynError(f"write_report: plot {str(p)!r} is not a PNG file")
    b64 = base64.b64encode(data).decode("ascii")
    name = html.escape(p.stem.replace("_", " "))
    return (f"<figure><img alt='{name}' src='data:image/png;base64,{b64}'>"
            f"<figcaption>{name}</figcaption></figure>")


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
#view{border:1px solid #999;background:#fbfbfd;cursor:grab;touch-action:none}
#controls{margin:0.4em 0} #controls input[type=range]{width:60%;vertical-align:middle}
.small{font-size:0.8em;color:#666} #errors{color:#b00;white-space:pre-wrap}
"""

_JS = r"""
(function () {
  var errors = document.getElementById('errors');
  function report(msg) { errors.textContent += msg + '\n'; }
  window.onerror = function (msg, src, line) { report('error: ' + msg + ' (line ' + line + ')'); };
  var cerr = console.error;
  console.error = function () {
    report('console.error: ' + Array.prototype.join.call(arguments, ' '));
    if (cerr) cerr.apply(console, arguments);
  };
  var D = JSON.parse(document.getElementById('anim-data').textContent);
  var canvas = document.getElementById('view'), ctx = canvas.getContext('2d');
  var slider = document.getElementById('slider'), button = document.getElementById('play');
  var tlabel = document.getElementById('time'), counter = document.getElementById('frame');
  var status = document.getElementById('status');
  var F = D.t.length, nb = D.parents.length;
  var lo = D.bounds[0], hi = D.bounds[1];
  var centre = [0, 1, 2].map(function (k) { return 0.5 * (lo[k] + hi[k]); });
  var radius = Math.max(1e-6, 0.5 * Math.hypot(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]));
  var view = {yaw: -0.6, pitch: 0.35}, frame = 0, drawn = 0, playing = true;
  slider.max = F - 1;

  // world z is up; camera on a sphere around the centre, perspective division by depth
  function project(p) {
    var x = p[0] - centre[0], y = p[1] - centre[1], z = p[2] - centre[2];
    var cy = Math.cos(view.yaw), sy = Math.sin(view.yaw);
    var cp = Math.cos(view.pitch), sp = Math.sin(view.pitch);
    var x1 = cy * x - sy * y, y1 = sy * x + cy * y;          // turn about z
    var depth = cp * y1 + sp * z, up = -sp * y1 + cp * z;    // tilt about the screen's x
    var dist = 3.2 * radius, f = 0.45 * Math.min(canvas.width, canvas.height) / radius;
    var s = f * dist / (dist + depth);
    return [canvas.width / 2 + s * x1, canvas.height / 2 - s * up, depth];
  }
  function line(a, b, width, colour) {
    ctx.strokeStyle = colour; ctx.lineWidth = width;
    ctx.beginPath(); ctx.moveTo(a[0], a[1]); ctx.lineTo(b[0], b[1]); ctx.stroke();
  }
  function dot(a, r, colour) {
    ctx.fillStyle = colour; ctx.beginPath(); ctx.arc(a[0], a[1], r, 0, 2 * Math.PI); ctx.fill();
  }
  function axes() {
    var o = project(centre.map(function (c, k) { return k == 2 ? lo[2] : c; }));
    var L = 0.4 * radius, names = ['x', 'y', 'z'], cols = ['#c33', '#3a3', '#33c'];
    for (var k = 0; k < 3; k++) {
      var e = centre.map(function (c, j) { return (j == 2 ? lo[2] : c) + (j == k ? L : 0); });
      var pe = project(e);
      line(o, pe, 1, cols[k]); ctx.fillStyle = cols[k]; ctx.fillText(names[k], pe[0] + 3, pe[1]);
    }
  }
  function draw() {
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.fillStyle = '#fbfbfd'; ctx.fillRect(0, 0, canvas.width, canvas.height);
    axes();
    var O = D.origins[frame], C = D.coms[frame];
    var anchor = {};
    for (var r = 0; r < D.roots.length; r++) anchor[D.roots[r]] = D.anchors[r];
    var items = [];
    for (var i = 0; i < nb; i++) {
      var a = D.parents[i] < 0 ? anchor[i] : O[D.parents[i]];   // none: floating
      var po = project(O[i]), pc = project(C[i]), pa = a ? project(a) : po;
      items.push({d: (pa[2] + po[2]) / 2, f: function (pa, po, pc) { return function () {
        line(pa, po, 4, '#345'); line(po, pc, 1.5, '#89a');
        dot(po, 4, '#e80'); dot(pc, 3, '#28c'); }; }(pa, po, pc)});
    }
    for (var r2 = 0; r2 < D.anchors.length; r2++) {
      var pA = project(D.anchors[r2]);
      ctx.fillStyle = '#555'; ctx.fillRect(pA[0] - 5, pA[1] - 5, 10, 10);
    }
    items.sort(function (u, v) { return v.d - u.d; });   // far first
    items.forEach(function (it) { it.f(); });
    slider.value = frame;
    tlabel.textContent = 't = ' + D.t[frame].toFixed(3) + ' s';
    drawn += 1; counter.textContent = drawn;
    if (drawn >= 2 && status.textContent !== 'ok' && errors.textContent === '') {
      status.textContent = 'ok';
    }
  }
  var span = F > 1 ? D.t[F - 1] - D.t[0] : 1;
  var interval = Math.max(16, Math.min(200, 1000 * span / Math.max(1, F - 1)));
  setInterval(function () { if (playing) { frame = (frame + 1) % F; draw(); } }, interval);
  button.onclick = function () {
    playing = !playing; button.textContent = playing ? 'pause' : 'play';
  };
  slider.oninput = function () { frame = parseInt(slider.value, 10); draw(); };
  var drag = null;
  canvas.addEventListener('mousedown', function (e) { drag = [e.clientX, e.clientY]; });
  window.addEventListener('mouseup', function () { drag = null; });
  window.addEventListener('mousemove', function (e) {
    if (!drag) return;
    view.yaw += 0.01 * (e.clientX - drag[0]);
    view.pitch = Math.max(-1.5, Math.min(1.5, view.pitch + 0.01 * (e.clientY - drag[1])));
    drag = [e.clientX, e.clientY]; draw();
  });
  draw();
  if (location.hash === '#selftest') {
    var before = [view.yaw, view.pitch];
    canvas.dispatchEvent(new MouseEvent('mousedown', {clientX: 100, clientY: 100, bubbles: true}));
    window.dispatchEvent(new MouseEvent('mousemove', {clientX: 160, clientY: 130, bubbles: true}));
    window.dispatchEvent(new MouseEvent('mouseup', {clientX: 160, clientY: 130, bubbles: true}));
    document.getElementById('selftest').textContent =
      JSON.stringify({before: before, after: [view.yaw, view.pitch]});
  }
})();
"""


def write_report(path: str | os.PathLike, summary: Mapping, plots: Sequence = (),
                 animation: Mapping | None = None, title: str | None = None) -> Path:
    """Write a self-contained ``report.html`` and return its path.

    Parameters
    ----------
    path : the HTML file to write (atomically).
    summary : what the run was and what came of it, ``{name: value}``; a value
        may be a nested dict (a sub-table), a list of dicts (a table with a
        column per key, rows coloured by their ``passed`` entry), or an object
        with ``to_dict()`` such as a :class:`~kanedyn.verify.VerifyReport`.
    plots : paths of PNG files (e.g. from :mod:`kanedyn.viz.plots`), inlined as base64.
    animation : the dict of :func:`kanedyn.viz.animation_frames`, or None for no animation.
    title : the page title (default: the summary's ``"title"`` or ``"kanedyn report"``).
    """
    if not isinstance(summary, Mapping):
        raise KanedynError(f"write_report: summary must be a dict, got {type(summary).__name__}")
    title = title or str(summary.get("title", "kanedyn report"))
    parts = [f"<h1>{html.escape(title)}</h1>", "<h2>Summary</h2>", _table(summary)]
    if plots:
        parts.append("<h2>Plots</h2>")
        parts += [_img(p) for p in plots]
    if animation is not None:
        need = ("t", "origins", "coms", "anchors", "roots", "parents", "bounds")
        missing = [k for k in need if k not in animation]
        if missing:
            raise KanedynError(f"write_report: animation lacks {missing}; "
                               "make it with kanedyn.viz.animation_frames(model, t, q)")
        data = {k: _round(v) if k in ("t", "origins", "coms", "anchors", "bounds") else v
                for k, v in animation.items()}
        blob = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
        parts.append(
            "<h2>Animation</h2>"
            f"<p class='small'>{html.escape(str(animation.get('model', '')))}: body frame "
            "origins (orange) joined parent to child, centres of mass (blue); grey squares "
            "are the joints to the world. Drag to turn the view.</p>"
            "<canvas id='view' width='720' height='480'></canvas>"
            "<div id='controls'><button id='play'>pause</button> "
            "<input id='slider' type='range' min='0' value='0'> <span id='time'></span></div>"
            "<p class='small'>frames drawn: <span id='frame'>0</span> · status: "
            "<span id='status'>loading</span> <span id='selftest'></span></p>"
            "<div id='errors'></div>"
            f"<script type='application/json' id='anim-data'>{blob}</script>"
            f"<script>{_JS}</script>")
    page = ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
            + "\n".join(parts) + "</body></html>\n")

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(page)

    return write_atomic(path, write)
