"""Build of the one C extension, kanedyn.dynamics._fastcall, and of numba's cache in a wheel
(everything else is in pyproject.toml).

The extension is optional: without a C compiler the package installs and runs on its
Python wrappers alone, only the single-state calls are slower (see _fastcall.c). A wheel's
build then compiles the kernels into the built package (build_backend/kanedyn_build.py).
"""

import sys
from pathlib import Path

import numpy
from setuptools import Extension, setup
from setuptools.command.build import build

sys.path.insert(0, str(Path(__file__).resolve().parent / "build_backend"))
from kanedyn_build import PrecompileCache  # noqa: E402


class Build(build):
    # after build_ext: the precompile readies the C front end's entry points too
    sub_commands = build.sub_commands + [("precompile_cache", lambda self: True)]


setup(
    ext_modules=[
        Extension(
            "kanedyn.dynamics._fastcall",
            sources=["src/kanedyn/dynamics/_fastcall.c"],
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ],
    cmdclass={"build": Build, "precompile_cache": PrecompileCache},
)
