"""LLVM's machine-code generation level for the kernels compiled in this process.

numba's ``NUMBA_OPT`` sets one level for both LLVM's optimisation passes and its
machine-code generation (instruction selection, register allocation). Where compile
time is the cost — the test suite compiles every kernel on a cold cache — the
environment variable ``KANEDYN_CODEGEN_OPT`` (0-3) sets the second alone: at 0 the
fast instruction selector and register allocator run after the passes of
``NUMBA_OPT``. The first midpoint run on the ball elbow (the gauss loop) then compiled in
67.8 s instead of 86.8 s at NUMBA_OPT=1, for code 2.4x slower (``bench/compile_levels.py``;
docs/benchmarks.md, "The suite's time at stop 43"). The arithmetic does not change:
kanedyn sets no fast-math flag, so no level fuses or reorders a floating-point
operation.

numba creates its one target machine when the first ``@njit`` function is declared,
so this module is imported first of all by ``kanedyn/__init__.py``. Code compiled at
another level must not share a cache directory with this: ``make test`` gives the
suite a cache of its own (``NUMBA_CACHE_DIR``), as it does for ``NUMBA_OPT``.
"""

from __future__ import annotations

import functools
import os

#: the environment variable read at import
ENV = "KANEDYN_CODEGEN_OPT"


def set_codegen_level(level: str | None = None) -> int | None:
    """Make llvmlite create its target machines at ``level`` (default: the value of
    :data:`ENV`; nothing is changed where it is unset or empty); returns the level set.
    Only a target machine created afterwards is affected (numba's, at its first
    ``@njit``)."""
    import llvmlite.binding as ll

    level = os.environ.get(ENV, "") if level is None else level
    if not level:
        return None
    if level not in ("0", "1", "2", "3"):
        raise ValueError(f"{ENV}={level!r}: give a code generation level 0, 1, 2 or 3")
    make = ll.Target.create_target_machine
    make = getattr(make, "__wrapped__", make)

    @functools.wraps(make)  # (numba reads its parameters)
    def create_target_machine(self, *args, **kwargs):
        kwargs["opt"] = int(level)
        return make(self, *args, **kwargs)

    ll.Target.create_target_machine = create_target_machine
    return int(level)


set_codegen_level()
