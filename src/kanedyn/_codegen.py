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

One specialisation per argument type, not per constant (:func:`share_specialisations`):
where a compiled function calls another with a constant — ``rnea_core(..., True, False,
False, ...)``, a Kane loop's method code — numba types the constant as a literal and
compiles the callee, and everything it calls, once more for that value. Over the test
suite ``rnea_core`` was compiled in 9 versions, ``aba_core`` in 4 (3.5 s each), the
Kane loops' shared Newton stage once per loop (docs/benchmarks.md, "The suite's time at
stop 44"). kanedyn's own functions are called with the constants' plain types instead
(``KANEDYN_LITERAL_CALLS=1`` keeps numba's rule, to compare the two).
"""

from __future__ import annotations

import functools
import os

#: the environment variable read at import
ENV = "KANEDYN_CODEGEN_OPT"
#: set to 1: numba's literal specialisation of kanedyn's functions is kept
LITERAL_ENV = "KANEDYN_LITERAL_CALLS"


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


def share_specialisations() -> bool:
    """Call kanedyn's compiled functions from compiled code with the plain types of
    constant arguments (``bool`` for ``True``, ``int64`` for ``3``), so that one compiled
    version serves every constant: numba's dispatcher otherwise compiles a callee for
    each literal value it is called with (``Dispatcher.get_call_template``). Functions
    of other packages keep numba's rule; none of kanedyn's asks for a literal
    (``numba.literally``). False, and nothing changed, where :data:`LITERAL_ENV` is 1."""
    if os.environ.get(LITERAL_ENV, "") == "1":
        return False
    from numba.core import dispatcher, types

    get = dispatcher.Dispatcher.get_call_template
    if getattr(get, "_kanedyn", False):
        return True

    @functools.wraps(get)
    def get_call_template(self, args, kws):
        if (getattr(self.py_func, "__module__", None) or "").startswith("kanedyn."):
            args = tuple(types.unliteral(a) for a in args)
            kws = {k: types.unliteral(a) for k, a in kws.items()}
        return get(self, args, kws)

    get_call_template._kanedyn = True
    dispatcher.Dispatcher.get_call_template = get_call_template
    return True


set_codegen_level()
share_specialisations()
