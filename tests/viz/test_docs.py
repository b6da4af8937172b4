"""Every Python snippet of docs/report.md runs (and asserts what it shows)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "report.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_the_page_has_snippets():
    assert len(SNIPPETS) >= 1


@pytest.mark.parametrize("code", SNIPPETS, ids=[f"snippet{i}" for i in range(len(SNIPPETS))])
def test_snippet_runs(code, capsys):
    exec(compile(code, str(DOC), "exec"), {"__name__": "docs_snippet"})
    assert capsys.readouterr().out   # each snippet prints what it shows
