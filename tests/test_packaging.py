"""The wheel's compiled cache (build_backend/kanedyn_build.py): what the build asks for,
when it compiles, and that numba's cache written in one folder is loaded from another
holding the same files — which is what lets the cache built in ``build/lib…`` serve the
files pip installs."""

import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "build_backend"))
import kanedyn_build  # noqa: E402


def _dependencies() -> list[str]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["dependencies"]


@pytest.fixture
def setuptools_requires(monkeypatch):
    # setuptools' own hook runs setup.py; the test needs only what is added to it
    monkeypatch.setattr(kanedyn_build._setuptools, "get_requires_for_build_wheel",
                        lambda config_settings=None: ["setuptools>=68"])


def test_pyproject_names_this_backend():
    with open(ROOT / "pyproject.toml", "rb") as f:
        system = tomllib.load(f)["build-system"]
    assert system["build-backend"] == "kanedyn_build"
    assert system["backend-path"] == ["build_backend"]
    # an sdist carries the backend (python -m build makes the wheel from the sdist)
    assert "build_backend/*.py" in (ROOT / "MANIFEST.in").read_text()


def test_a_wheel_build_asks_for_the_runtime_dependencies(setuptools_requires, monkeypatch):
    monkeypatch.delenv(kanedyn_build.ENV, raising=False)
    req = kanedyn_build.get_requires_for_build_wheel()
    assert req[0] == "setuptools>=68"
    assert set(_dependencies()) <= set(req)
    assert any(r.startswith("numba") for r in req)
    monkeypatch.setenv(kanedyn_build.ENV, "0")
    assert kanedyn_build.get_requires_for_build_wheel() == ["setuptools>=68"]
    # the editable build (make's install) is setuptools' hook, untouched
    assert (kanedyn_build.get_requires_for_build_editable
            is kanedyn_build._setuptools.get_requires_for_build_editable)


@pytest.mark.parametrize("editable, env, runs", [(False, None, True), (True, None, False),
                                                 (False, "0", False), (False, "1", True)])
def test_the_build_step_compiles_only_for_a_wheel(monkeypatch, tmp_path, editable, env, runs):
    from setuptools.dist import Distribution

    calls = []
    monkeypatch.setattr(kanedyn_build.subprocess, "run",
                        lambda cmd, env, cwd: calls.append((cmd, env, cwd))
                        or subprocess.CompletedProcess(cmd, 0))
    if env is None:
        monkeypatch.delenv(kanedyn_build.ENV, raising=False)
    else:
        monkeypatch.setenv(kanedyn_build.ENV, env)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("PYTHONPATH", "/pip/overlay")
    cmd = kanedyn_build.PrecompileCache(Distribution())
    cmd.build_lib = str(tmp_path)
    cmd.editable_mode = editable
    cmd.run()
    assert len(calls) == runs
    if runs:
        argv, environ, cwd = calls[0]
        assert argv[1:] == ["-m", "kanedyn", "precompile"]
        # the built tree first, pip's build environment after it; numba's own cache place
        assert environ["PYTHONPATH"].split(os.pathsep) == [str(tmp_path), "/pip/overlay"]
        assert "NUMBA_CACHE_DIR" not in environ
        assert cwd == str(tmp_path)


def test_a_failed_precompile_warns_and_the_build_goes_on(monkeypatch, tmp_path, capsys):
    from setuptools.dist import Distribution

    monkeypatch.delenv(kanedyn_build.ENV, raising=False)
    monkeypatch.setattr(kanedyn_build.subprocess, "run",
                        lambda cmd, env, cwd: subprocess.CompletedProcess(cmd, 3))
    cmd = kanedyn_build.PrecompileCache(Distribution())
    cmd.build_lib = str(tmp_path)
    cmd.run()
    assert "precompile` failed (exit 3)" in capsys.readouterr().err


#: a keyed module as kanedyn's kernels are (key_cache, then a cached njit)
TOY = textwrap.dedent("""
    import numba as nb
    from kanedyn.dynamics import _compiled
    _compiled.key_cache(__name__)

    @nb.njit(cache=True)
    def twice(x):
        return 2.0 * x
""")

#: prints the toy's result and numba's cache hits and misses
LOAD = "import toy_keyed as t; s = t.twice.stats; " \
       "print(t.twice(1.5), sum(s.cache_hits.values()), sum(s.cache_misses.values()))"


def _load(folder: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([str(folder), str(ROOT / "src")])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    r = subprocess.run([sys.executable, "-c", LOAD], env=env, capture_output=True, text=True,
                       cwd=folder)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_the_cache_is_loaded_from_a_copy_of_the_files(tmp_path):
    """numba stamps a cache with the source's digest (not its time), kanedyn's keyed
    locator adds the compile key: a copy with other times hits the cache, a copy with
    other source does not."""
    built = tmp_path / "built"
    built.mkdir()
    (built / "toy_keyed.py").write_text(TOY)
    assert _load(built) == ["3.0", "0", "1"]  # compiled, written beside the source
    assert list((built / "__pycache__").glob("toy_keyed.twice-*.nbi"))
    installed = tmp_path / "installed"
    shutil.copytree(built, installed)
    os.utime(installed / "toy_keyed.py", (1e9, 1e9))  # pip writes new times
    assert _load(installed) == ["3.0", "1", "0"]
    edited = tmp_path / "edited"
    shutil.copytree(built, edited)
    (edited / "toy_keyed.py").write_text(TOY.replace("2.0 * x", "3.0 * x"))
    assert _load(edited) == ["4.5", "0", "1"]
