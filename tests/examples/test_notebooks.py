"""Every notebook of ``examples/notebooks`` runs top to bottom in a fresh kernel.

The notebooks check their own results with ``assert`` against an independent answer
(RNEA against CRBA and ABA, a Jacobian against a central difference of the frame's
position, the rolling disk's critical spin against Routh's bound, the DAE against a
one-coordinate Lagrange solution, the fitted friction against the law that made the
data), so a notebook that runs is one whose claims held. They run with the settings
they ship with, which are short (a fraction of a second to two seconds of motion).

The notebooks are kept without outputs, so a change shows in review as the code that
changed; the guide lists every one of them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import kanedyn as kd

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "examples" / "notebooks").glob("*.ipynb"))


def test_there_are_the_five_notebooks():
    assert [p.stem[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04", "05"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{path.name}: a cell is stored with its outputs; clear them")


def test_the_guide_lists_every_notebook():
    page = (ROOT / "docs" / "notebooks.md").read_text(encoding="utf-8")
    missing = [p.name for p in NOTEBOOKS if f"<notebooks/{p.stem}>" not in page]
    assert not missing, f"docs/notebooks.md does not link {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path, monkeypatch):
    # the kernel is a new process: it must import the kanedyn under test, draw off-screen
    # and write into a scratch folder
    src = str(Path(kd.__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [src, *filter(None, [os.environ.get("PYTHONPATH")])]))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as e:
        pytest.fail(f"{path.name}: {str(e)[-4000:]}")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
