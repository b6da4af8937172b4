"""Build of the one C extension, kanedyn.dynamics._fastcall (everything else is in pyproject.toml).

The extension is optional: without a C compiler the package installs and runs on its
Python wrappers alone, only the single-state calls are slower (see _fastcall.c).
"""

import numpy
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "kanedyn.dynamics._fastcall",
            sources=["src/kanedyn/dynamics/_fastcall.c"],
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
