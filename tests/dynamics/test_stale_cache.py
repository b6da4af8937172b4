"""A compiled cache built against another flat layout or another source is never run.

numba keys a function's disk cache by its own file only; every kanedyn module that
compiles in the layout of ``layout.py`` or code of another file keys its cache by the
layout version and those sources too (``kanedyn.dynamics._compiled.key_cache``). Here,
on a copy of the package in a tmp dir:

- a column moved (MASS and PITCH swapped) without a bump of ``LAYOUT_VERSION`` is
  caught at ``import kanedyn``: a ``LayoutError`` names the version and the fingerprints;
- with the version bumped, the caches written under the old layout are provably not
  loaded: both kernels the run calls — one of the kernels package itself (potential
  energy, ``kernels/kinematics.py``) and the energy kernel, which compiles in the
  package's joint transforms — are cache misses,
  compiled afresh, and right; a stale kernel would read the mass from the old column,
  which now holds the pitch (0), and give V = 0;
- after an edit of ``kernels/joint_rows.py`` alone (which the energy kernel reaches only
  through the package: ``kernels.motion_subspace_column``, ``kernels/__init__.py`` →
  ``joint_rows.py``), the energy kernel is compiled afresh too (the frames, centroidal
  and joint-wrench kernels compile it in the same way and carry the same kind of key:
  tests/dynamics/test_layout.py), and right;
  an unchanged next run loads the caches (hits).

"Caught" means: an error at import for a layout change without a version bump; else
the stale cache dropped (numba's cache-miss count) and the result right.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import kanedyn
from kanedyn.dynamics import layout

SCRIPT = textwrap.dedent("""
    import json
    import sys
    import numpy as np
    import kanedyn as kd
    from kanedyn.dynamics import energy_kernel, kernels, layout, reference
    model = kd.models.pendulum_chain(3, planar=False)
    q = np.array([0.3, -0.2, 0.5])
    v = np.array([0.1, 0.4, -0.3])
    ok = {}
    if "V" in sys.argv[1]:
        V = kd.potential_energy(model, q)           # kernels/kinematics.py summary1
        ok["V"] = bool(np.isclose(V, reference.potential_energy(model, q), rtol=1e-12))
    if "E" in sys.argv[1]:
        E = kd.ModelSystem(model).energy(q, v)      # energy_kernel.energy_terms
        ok["E"] = bool(np.isclose(E, reference.kinetic_energy(model, q, v)
                                  + reference.potential_energy(model, q), rtol=1e-12))
    def stats(f):
        s = f.stats
        return [sum(s.cache_hits.values()), sum(s.cache_misses.values())]
    print(json.dumps({"version": layout.LAYOUT_VERSION, "ok": ok,
                      "summary1": stats(kernels.kinematics.summary1),
                      "energy_terms": stats(energy_kernel.energy_terms)}))
""")


def _copy_package(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(Path(kanedyn.__file__).parent, src / "kanedyn",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return src


def _run(src: Path, tmp_path: Path, code: str = SCRIPT,
         what: str = "VE") -> subprocess.CompletedProcess:
    # no .pyc files: Python checks one against its source's mtime (in seconds) and size,
    # and the edits here keep the size and may fall in the same second
    env = dict(os.environ, PYTHONPATH=str(src), NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               KANEDYN_NO_C="1", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-c", code, what], env=env, capture_output=True,
                          text=True, timeout=900, cwd=tmp_path)


def _swap_mass_and_pitch(layout_py: Path) -> None:
    text = layout_py.read_text()
    assert "PITCH = 15\nMASS = 16\n" in text
    layout_py.write_text(text.replace("PITCH = 15\nMASS = 16\n", "PITCH = 16\nMASS = 15\n"))


def test_a_moved_column_without_a_version_bump_fails_at_import(tmp_path):
    src = _copy_package(tmp_path)
    _swap_mass_and_pitch(src / "kanedyn" / "dynamics" / "layout.py")
    out = _run(src, tmp_path, "import kanedyn")
    assert out.returncode != 0
    assert "LayoutError" in out.stderr
    assert (f"the flat layout changed but LAYOUT_VERSION is still {layout.LAYOUT_VERSION}"
            in out.stderr)
    assert "MASS=15" in out.stderr and "PITCH=16" in out.stderr


def test_a_cache_built_against_another_layout_or_source_is_never_run(tmp_path):
    src = _copy_package(tmp_path)

    def run(what="VE"):
        out = _run(src, tmp_path, what=what)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    both = ("summary1", "energy_terms")
    first = run()  # a fresh cache, written
    assert first["ok"] == {"V": True, "E": True}
    assert all(first[k][1] > 0 for k in both)
    again = run()  # the same sources: loaded from the cache
    assert all(again[k] == [1, 0] for k in both), again

    # a moved column, the version bumped and the new fingerprint recorded (as the
    # import error of an unbumped change says)
    layout_py = src / "kanedyn" / "dynamics" / "layout.py"
    _swap_mass_and_pitch(layout_py)
    msg = _run(src, tmp_path, "import kanedyn").stderr
    new = re.search(r"set LAYOUT_FINGERPRINT = '([0-9a-f]+)'", msg).group(1)
    text = layout_py.read_text()
    text = re.sub(r'LAYOUT_FINGERPRINT = "[0-9a-f]+"', f'LAYOUT_FINGERPRINT = "{new}"', text)
    bumped = layout.LAYOUT_VERSION + 1
    assert f"LAYOUT_VERSION = {layout.LAYOUT_VERSION}\n" in text
    layout_py.write_text(text.replace(f"LAYOUT_VERSION = {layout.LAYOUT_VERSION}\n",
                                      f"LAYOUT_VERSION = {bumped}\n"))
    moved = run()
    assert moved["version"] == bumped
    assert moved["ok"] == {"V": True, "E": True}, moved
    assert all(moved[k][0] == 0 and moved[k][1] > 0 for k in both), moved

    # kernels/joint_rows.py edited (a comment): the energy kernel, which compiles it in
    # through the package (its own file unchanged), is compiled afresh
    kernels_py = src / "kanedyn" / "dynamics" / "kernels" / "joint_rows.py"
    kernels_py.write_text(kernels_py.read_text() + "\n# edited\n")
    edited = run("E")
    assert edited["ok"] == {"E": True}, edited
    assert edited["energy_terms"][0] == 0 and edited["energy_terms"][1] > 0, edited
    assert run("E")["energy_terms"] == [1, 0]  # and the cache it wrote is used next time
