"""The API reference builds without a warning, describes every public name, and every
public name has a docstring.

The build is Sphinx's, in this process, with the project's ``docs/conf.py``: nitpicky
cross-references (a reference to a name that does not exist is a warning), MyST for the
guide's pages and the notebooks (rendered as stored, not executed). Any warning fails
the test, which prints them all. A second, tiny build shows that a reference to a name
that does not exist is reported, however the project's resolver treats real names.
"""

from __future__ import annotations

import importlib.util
import inspect
import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kanedyn as kd

sphinx_application = pytest.importorskip("sphinx.application")
pytest.importorskip("myst_nb")

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

# Sphinx's and MyST's own deprecations, raised inside their code
pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")]


def _api_extension():
    spec = importlib.util.spec_from_file_location("kanedyn_api", DOCS / "_ext" / "kanedyn_api.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _build(srcdir: Path, confdir: Path, out: Path):
    warnings = io.StringIO()
    app = sphinx_application.Sphinx(str(srcdir), str(confdir), str(out / "html"),
                                    str(out / "doctrees"), "html", status=None,
                                    warning=warnings, freshenv=True)
    app.build()
    return app, warnings.getvalue()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return _build(DOCS, DOCS, tmp_path_factory.mktemp("docs"))


def test_the_docs_build_without_a_warning(built):
    app, warnings = built
    assert app.statuscode == 0
    assert warnings == "", f"the docs build warned:\n{warnings}"


def test_every_public_name_is_described_in_the_reference(built):
    app, _ = built
    described = {}
    for name, entry in app.env.get_domain("py").objects.items():
        described.setdefault(entry.docname, set()).add(name)
    everything = set().union(*described.values())
    api = _api_extension()
    missing = []
    for mod_name, name, obj in api.public_names():
        full = f"{mod_name}.{name}"
        if inspect.ismodule(obj):
            ok = obj.__name__ in everything
        elif callable(obj):
            # described under its public name, or (re-exported by kanedyn) there
            ok = full in everything or f"kanedyn.{name}" in everything
        else:  # data: described in the submodule that assigns it
            ok = any(n.endswith(f".{name}") and n.startswith(mod_name) for n in everything)
        if not ok:
            missing.append(full)
    assert not missing, f"public names the reference does not describe: {missing}"


def test_every_public_name_has_a_docstring():
    api = _api_extension()
    bare = []
    for mod_name, name, obj in api.public_names():
        if inspect.ismodule(obj) or callable(obj):
            doc = inspect.getdoc(obj) or ""
        else:  # data carry a "#:" comment where they are assigned
            home = api.data_home(importlib.import_module(mod_name), name)
            doc = "" if home is None else "documented"
        if not doc.strip():
            bare.append(f"{mod_name}.{name}")
    assert not bare, f"public names without a docstring: {bare}"


def test_a_broken_cross_reference_is_reported(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(textwrap.dedent(f"""\
        import runpy
        globals().update({{k: v for k, v in runpy.run_path({str(DOCS / "conf.py")!r}).items()
                           if not k.startswith("__")}})
        exclude_patterns = []
        """))
    (src / "index.rst").write_text(textwrap.dedent("""\
        Test
        ====

        .. autofunction:: kanedyn.simulate

        A documented name :func:`kanedyn.simulate`, a real one left out of this page
        :func:`kanedyn.rnea`, and one that does not exist :func:`kanedyn.no_such_function`.
        """))
    # sphinx-build as `make docs` runs it, in a process of its own (a second Sphinx in
    # this one would warn about its extensions being registered twice)
    src_path = str(Path(kd.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [src_path, *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-n", "-W",
                           "--keep-going", "-q", str(src), str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, timeout=300)
    lines = [w for w in proc.stderr.splitlines() if "WARNING" in w]
    assert proc.returncode != 0
    assert len(lines) == 1 and "kanedyn.no_such_function" in lines[0], proc.stderr


def test_every_public_subpackage_has_a_page():
    import importlib
    import pkgutil

    api = _api_extension()
    packages = [f"kanedyn.{m.name}" for m in pkgutil.iter_modules(kd.__path__) if m.ispkg]
    public = [p for p in packages if hasattr(importlib.import_module(p), "__all__")]
    assert sorted(set(public) - set(api.PUBLIC_MODULES)) == [], "add them to PUBLIC_MODULES"
    for mod_name in api.PUBLIC_MODULES:
        page = DOCS / "api" / f"{mod_name.removeprefix('kanedyn.')}.rst"  # kanedyn.rst too
        assert f".. kanedyn-api:: {mod_name}" in page.read_text(encoding="utf-8"), page
