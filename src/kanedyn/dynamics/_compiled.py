"""Loading a kernel module's compiled functions on first use, from a cache that cannot
be stale.

numba keys the on-disk cache of a function by that function's own file. A kernel
module that compiles the helpers and layout constants of :mod:`.kernels` into its
code (the frames, centroidal and joint-wrench kernels) would therefore keep running
old code after a file of the kernels package changes: after the armature
column was added to the flat layout (``WIDTH`` 36 → 37) a cached frame kernel
refused every call as a bad shape. So such a module records, in a cached function of its own
(``_built_against``, returning :data:`KERNELS_DIGEST` as it was when compiled), the
digest of the kernels package (:data:`kanedyn.dynamics.kernels._cache.DIGEST`, all its
files) its cache was built with; before its first compilation
:class:`KernelModule` compares it with today's and, if they differ, deletes every
cache file of that module, so that everything is compiled afresh.
"""

from __future__ import annotations

from pathlib import Path

from . import kernels as _kernels
from .kernels import _cache

if _cache.DIGEST is not None:
    #: a digest of the kernels package, all its files (60 bits, so that a compiled
    #: function can return it)
    KERNELS_DIGEST = int(_cache.DIGEST[:15], 16)
else:  # no source files (a frozen install): the layout at least
    KERNELS_DIGEST = hash((_kernels.WIDTH, _kernels.HDR)) & (2**60 - 1)


class KernelModule:
    """``ready(name)``, ``entry(name)`` for the kernels of one module.

    ``namespace`` is the module's ``globals()``: its dispatchers, its ``SIGNATURES``
    (one signature per kernel) and its ``_built_against`` (an ``@njit(cache=True)``
    function returning :data:`KERNELS_DIGEST`). ``first``: kernels to compile before
    a given one (a batch that calls a single-state kernel, so that it links that one
    specialisation)."""

    def __init__(self, namespace: dict, first: dict[str, tuple[str, ...]] | None = None):
        self.ns = namespace
        self.first = first or {}
        self.checked = False
        self.dropped = False  # whether this process found the cache stale and deleted it

    def _drop_stale_cache(self) -> None:
        if self.checked:
            return
        self.checked = True
        probe = self.ns["_built_against"]
        if probe() == KERNELS_DIGEST:
            return
        # the cache was built against another kernels package: delete this module's cache
        # files (numba's index and data files are named <module>.<function>-<line>...),
        # then forget the probe's stale compilation
        folder = Path(probe._cache._cache_path)
        stem = Path(self.ns["__file__"]).stem
        for f in folder.glob(f"{stem}.*.nb[ic]"):
            f.unlink(missing_ok=True)
        probe._cache.flush()
        self.dropped = True

    def ready(self, name: str):
        """The dispatcher of ``name``, compiled (or loaded from a cache built against
        today's kernels package) for its one signature, then closed to others: an argument
        of another type raises TypeError (as :func:`kanedyn.dynamics.kernels.ready`)."""
        self._drop_stale_cache()
        for other in self.first.get(name, ()):
            self.ready(other)
        disp = self.ns[name]
        if not disp.signatures:
            disp.compile(self.ns["SIGNATURES"][name])
            disp.disable_compile()
        return disp

    def entry(self, name: str):
        """The compiled entry point of ``name`` without numba's dispatcher (see
        :func:`kanedyn.dynamics.kernels.entry`: the caller passes float64 arrays of the
        declared ndim)."""
        disp = self.ready(name)
        return disp.overloads[disp.signatures[0]].entry_point
