"""Every ```python block of README.md and docs/*.md runs.

The blocks of one file run in order in one namespace (a page builds on its
earlier snippets), in a fresh temporary working directory, with matplotlib
drawing off-screen. A block whose fence is preceded by the line
``<!-- no-test -->`` is skipped: the pages use that only for snippets that need
something a test machine lacks (a cluster, hardware), and say why next to it.
A failure names the file, the block and its first line.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
NO_TEST = "<!-- no-test -->"


def blocks(text: str) -> list[tuple[int, str, bool]]:
    """(line of the fence, code, skipped) of every ```python block of a Markdown text."""
    out = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = [s.strip() for s in text[:m.start()].splitlines() if s.strip()]
        out.append((line, m.group(1), bool(before) and before[-1] == NO_TEST))
    return out


def test_the_block_finder():
    text = ("intro\n```python\nx = 1\n```\n\n<!-- no-test -->\n\n```python\ncluster()\n```\n"
            "```sh\nls\n```\n```python\ny = x + 1\n```\n")
    assert blocks(text) == [(2, "x = 1\n", False), (8, "cluster()\n", True),
                            (14, "y = x + 1\n", False)]


def test_the_pages_have_snippets():
    """The guide's own pages carry runnable snippets (and nobody skipped them all)."""
    for name in ("README.md", "index.md", "quickstart.md", "dynamics.md", "cli.md", "sweep.md"):
        page = ROOT / name if name == "README.md" else ROOT / "docs" / name
        found = blocks(page.read_text(encoding="utf-8"))
        assert any(not skip for _, _, skip in found) or name == "index.md", name


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p.read_text(encoding="utf-8"))],
                         ids=lambda p: p.name)
def test_snippets_run(page, tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    rel = page.relative_to(ROOT)
    ns: dict = {"__name__": f"docs_{page.stem}"}
    for line, code, skip in blocks(page.read_text(encoding="utf-8")):
        if skip:
            continue
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                # compiled at its line so a traceback points into the page
                exec(compile("\n" * line + code, str(rel), "exec"), ns)
        except Exception as e:
            first = code.strip().splitlines()[0] if code.strip() else ""
            pytest.fail(f"{rel}, block at line {line} ({first!r}) raised "
                        f"{type(e).__name__}: {e}\n--- output so far ---\n{buf.getvalue()}")
    assert os.getcwd() == str(tmp_path)  # no snippet changed directory behind our back


def test_the_index_links_every_page_and_names_every_example():
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w.-]+\.md)(?:#[\w-]*)?\)", index))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages <= linked, f"docs/index.md does not link {sorted(pages - linked)}"
    assert all((ROOT / "docs" / name).is_file() for name in linked), "a link to no page"
    examples = [p.name for p in (ROOT / "examples").iterdir() if p.suffix in (".py", ".toml")]
    missing = [name for name in examples if name not in index]
    assert not missing, f"docs/index.md does not mention the examples {missing}"


def test_relative_links_of_the_guide_resolve():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", text):
            if target.startswith(("http", "mailto")) or "/shared/" in target:
                continue  # the web; DESIGN.md lives in the project's shared folder
            assert (page.parent / target).exists(), f"{page.name}: broken link {target}"
