"""The cache of generated code (kane/codegen/build.py) is keyed by everything an entry is
built from, so a change in the lowering, the printers or the build flags is never
served an old module or library, and an unchanged source is never built twice."""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import shutil
import sys

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import kane
from kanedyn.kane.codegen import build, lower, printers

# the submodule, not the function ``lower`` that the package exports under that name
lowering = importlib.import_module("kanedyn.kane.codegen.lowering")

HAVE_CC = shutil.which("cc") is not None


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """An empty cache per test, so that its files can be counted."""
    monkeypatch.setenv("KANEDYN_CACHE", str(tmp_path))
    return tmp_path / "codegen"


@functools.cache
def pendulum():
    model = kd.models.pendulum_chain(2)
    return model, kane.derive(model)


def check(sysc, model) -> None:
    q = np.array([0.4, -0.9])
    assert np.allclose(sysc.mass_matrix(q), kd.crba(model, q), rtol=1e-12, atol=1e-14)


def test_a_change_in_the_lowering_or_the_printers_is_a_new_module(cache, monkeypatch):
    model, eom = pendulum()
    first = eom.compile("numpy")
    again = eom.compile("numpy")
    assert again.source == first.source
    assert len(list(cache.glob("*.py"))) == 1  # the second compile loaded the first's module
    # the lowering changed (single-use definitions kept as statements): other code, other name
    with monkeypatch.context() as patch:
        patch.setattr(lowering, "_inline_single_use", lambda *args: None)
        unlined = eom.compile("numpy")
    assert unlined.source != first.source
    assert len(list(cache.glob("*.py"))) == 2
    check(unlined, model)
    # the printers changed (one more line in the header): other code, other name
    header = printers._header
    monkeypatch.setattr(printers, "_header", lambda low: header(low) + ["changed"])
    reprinted = eom.compile("numpy")
    assert "# changed" in reprinted.source
    assert len(list(cache.glob("*.py"))) == 3
    check(reprinted, model)


def test_the_c_key_holds_the_declarations_and_the_flags(monkeypatch):
    _, eom = pendulum()
    src, decl = printers.c_source(lower(eom)), printers.c_declarations()
    name = build.c_module_name(src, decl)
    assert build.c_module_name(src, decl) == name
    assert build.c_module_name(src + "\n", decl) != name
    assert build.c_module_name(src, decl.replace("int qdot", "int qdot_")) != name
    monkeypatch.setattr(build, "C_FLAGS", ("-O3", "-std=c99"))
    assert build.c_module_name(src, decl) != name
    assert build.python_module_name(src, "numpy") != build.python_module_name(src, "numba")


@pytest.mark.skipif(not HAVE_CC, reason="no C compiler")
def test_c_flags_and_another_pythons_library(cache, monkeypatch):
    """A library is rebuilt when the flags change, loaded again when nothing did, and a
    library of the same name built for another interpreter (the cache is shared by every
    Python on the machine) is not imported."""
    model, eom = pendulum()
    src = printers.c_source(lower(eom))
    name = build.c_module_name(src, printers.c_declarations())
    cache.mkdir(parents=True)
    (cache / f"{name}.cpython-00-other.so").write_bytes(b"not this interpreter's library")
    sysc = eom.compile("c")
    ours = cache / (name + importlib.machinery.EXTENSION_SUFFIXES[0])
    assert ours.is_file()
    check(sysc, model)
    built = sorted(cache.glob("*.so"))
    stamp = ours.stat().st_mtime_ns
    monkeypatch.delitem(sys.modules, name)  # as in a new process: from the cache's file
    check(eom.compile("c"), model)
    assert sorted(cache.glob("*.so")) == built and ours.stat().st_mtime_ns == stamp
    monkeypatch.setattr(build, "C_FLAGS", ("-O1", "-std=c99"))
    check(eom.compile("c"), model)
    assert len(list(cache.glob("*.so"))) == len(built) + 1
