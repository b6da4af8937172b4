"""kanedyn's build backend: setuptools', and a wheel that carries numba's compiled kernels.

Issue 17 asks for a first call in seconds in a fresh environment. ``make`` gets there by
running ``kanedyn precompile`` after its editable install; this module does the same for a
plain ``pip install .`` (or ``python -m build``): the wheel's build compiles the kernels a
first call needs into numba's disk cache beside the built sources, and the wheel ships
that cache. numba stamps a cache with a digest of the source's *content* (and
kanedyn's keyed modules with the compile key of ``dynamics/_compiled.py``), so the cache
built in ``build/lib…`` is valid where pip installs the same files; a cache made for
another CPU, another numba or other sources is never loaded (numba compiles afresh).

- The PEP 517 hooks are setuptools' own; only :func:`get_requires_for_build_wheel` adds
  the package's runtime dependencies (the build runs kanedyn to compile it). An editable
  install gets setuptools' requirements alone and compiles nothing: ``make`` runs
  ``kanedyn precompile`` itself, and ``make test`` compiles what it runs.
- :class:`PrecompileCache` is the ``build`` sub-command that runs ``python -m kanedyn
  precompile`` on the built tree (after ``build_ext``, which built the C front end it
  also readies).
- ``KANEDYN_PRECOMPILE=0`` in the environment turns both off: a wheel without the cache,
  built in seconds instead of minutes (``docs/benchmarks.md``, "First call").
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from setuptools import Command
from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 (the PEP 517 hooks, re-exported)

#: the variable that turns the compiled cache off ("0")
ENV = "KANEDYN_PRECOMPILE"
ROOT = Path(__file__).resolve().parents[1]


def precompile_wanted(environ: dict | None = None) -> bool:
    """Whether a wheel's build compiles the cache (``KANEDYN_PRECOMPILE`` is not "0")."""
    return (os.environ if environ is None else environ).get(ENV, "1").strip() != "0"


def runtime_requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """``[project].dependencies`` of pyproject.toml: what running kanedyn needs."""
    with open(pyproject, "rb") as f:
        return list(tomllib.load(f)["project"]["dependencies"])


def get_requires_for_build_wheel(config_settings=None) -> list[str]:
    """setuptools' requirements, and kanedyn's runtime ones when the cache is compiled."""
    extra = runtime_requirements() if precompile_wanted() else []
    return _setuptools.get_requires_for_build_wheel(config_settings) + extra


class PrecompileCache(Command):
    """``build`` sub-command: ``python -m kanedyn precompile`` on the built package, which
    writes numba's cache into its ``__pycache__`` folders (the wheel then holds them)."""

    description = "compile kanedyn's numba kernels into the built package's cache"
    user_options: list = []
    #: set by setuptools' editable_wheel: the sources stay where they are, nothing to ship
    editable_mode = False

    def initialize_options(self) -> None:
        self.build_lib = None

    def finalize_options(self) -> None:
        self.set_undefined_options("build", ("build_lib", "build_lib"))

    def get_outputs(self) -> list[str]:
        return []

    def get_output_mapping(self) -> dict[str, str]:
        return {}

    def run(self) -> None:
        if self.editable_mode or not precompile_wanted():
            return
        env = {k: v for k, v in os.environ.items()
               if k not in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT")}
        # (pip's isolated build environment is itself on PYTHONPATH: keep it after ours)
        env["PYTHONPATH"] = os.pathsep.join(
            [os.path.abspath(self.build_lib)] + [p for p in [env.get("PYTHONPATH")] if p])
        print(f"kanedyn: compiling numba's kernels into {self.build_lib} (a few minutes; "
              f"{ENV}=0 skips it)", flush=True)
        r = subprocess.run([sys.executable, "-m", "kanedyn", "precompile"], env=env,
                           cwd=self.build_lib)
        if r.returncode:
            # the package runs without the cache (its first calls compile): say so, go on
            print(f"kanedyn: WARNING: `kanedyn precompile` failed (exit {r.returncode}); "
                  "the wheel has no compiled cache, and first calls will compile",
                  file=sys.stderr, flush=True)
