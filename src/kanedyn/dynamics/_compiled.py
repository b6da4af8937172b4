"""Compiled modules whose numba disk cache cannot be stale, and loading their kernels.

numba keys the on-disk cache of a function by that function's own file: the index
of a cache records a digest of the source file, and a cache whose digest differs is
ignored and overwritten. A module that compiles code or constants of another file
into its own — the layout constants of :mod:`.layout`, the helpers of
:mod:`.kernels`, the energy pass called by the RK4 loop — would therefore keep
running old code after that other file changed: after the armature column was added
to the flat layout (``WIDTH`` 36 → 37) a cached frame kernel refused every call as a
bad shape.

So every such module calls :func:`key_cache` after its imports and before its first
``@njit``: from then on, the index of each of its cached functions (njit and cfunc)
is stamped with numba's digest of the module's own source *and* the module's
**compile key**: :data:`~.layout.LAYOUT_VERSION` and a SHA-256 over the source of
:mod:`.layout`, of every kanedyn module it imports at top level (but this one, which
compiles nothing in), and (recursively) the compile keys of the keyed modules among
them. A cache written under another
layout version, another layout, or another source of anything compiled in carries
another stamp; numba then treats it as stale — it is never loaded, the function is
compiled afresh and its index overwritten (``dispatcher.stats.cache_misses``).
This is done by a cache locator placed first in numba's list (it takes only the
files of keyed modules and delegates the directory to numba's own locators, so
``NUMBA_CACHE_DIR`` works as usual).

:class:`KernelModule` compiles a module's kernels for their one signature each on
first use and hands out their entry points.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path

from numba.core import caching, config

from . import layout

#: file (real path) of a keyed module → its compile key
_KEYS: dict[str, str] = {}


def _source_digest(path: str | None) -> str:
    if path is None:
        return "-"
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:  # no source (a frozen install): its name still counts
        return "-"


def _top_level_imports(tree: ast.Module, package: str) -> list[tuple[str, tuple[str, ...]]]:
    """(absolute module name, imported names) of the module-level imports (also inside
    a module-level ``if``/``try``); imports inside functions are never compiled in."""
    out = []
    stack = list(tree.body)
    while stack:
        node = stack.pop(0)
        if isinstance(node, ast.Import):
            out += [(a.name, ()) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""),
                                               package) if node.level else node.module
            out.append((base, tuple(a.name for a in node.names)))
        elif isinstance(node, (ast.If, ast.Try)):
            stack += node.body + node.orelse + getattr(node, "finalbody", [])
            stack += [s for h in getattr(node, "handlers", []) for s in h.body]
    return out


#: the line of a module that keys its cache (its imports come before it)
_KEY_CALL = re.compile(rb"^(?:_compiled\.)?key_cache\(", re.M)


def dependencies(module_name: str, whole: bool = False) -> list[str]:
    """The kanedyn modules that ``module_name`` imports at top level (submodules named
    in ``from package import module`` count as themselves), already imported.

    Only the source before the module's :func:`key_cache` call is parsed (its imports
    must come before it; parsing all of a long kernel module would cost ~0.1 s at import), unless
    ``whole``."""
    mod = sys.modules[module_name]
    text = Path(mod.__file__).read_bytes()
    call = None if whole else _KEY_CALL.search(text)
    tree = ast.parse(text[:call.start()] if call else text)
    root = module_name.split(".")[0]
    deps = set()
    for base, names in _top_level_imports(tree, mod.__package__):
        if base != root and not base.startswith(root + "."):
            continue
        importlib.import_module(base)
        subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in sys.modules]
        deps.update(subs)
        if len(subs) < len(names) or not names:
            deps.add(base)
    # this module compiles nothing in: its own edits must not drop every cache
    deps.discard(module_name)
    deps.discard(__name__)
    return sorted(deps)


def compile_key(module_name: str) -> str:
    """The compile key of a module (see the module docstring), from its dependencies."""
    h = hashlib.sha256(f"layout {layout.LAYOUT_VERSION} {layout.LAYOUT_FINGERPRINT}"
                       .encode())
    h.update(_source_digest(layout.__file__).encode())
    for dep in dependencies(module_name):
        f = getattr(sys.modules[dep], "__file__", None)
        h.update(f"\n{dep} {_source_digest(f)} {_KEYS.get(_real(f), '')}".encode())
    return h.hexdigest()


def _real(path: str | None) -> str:
    return os.path.realpath(path) if path else ""


def key_cache(module_name: str) -> str:
    """Stamp the numba cache of every function defined in ``module_name`` from now on
    with the module's compile key (call it after the module's imports, before its first
    ``@njit``); returns the key."""
    key = compile_key(module_name)
    _KEYS[_real(sys.modules[module_name].__file__)] = key
    return key


def stamp_of(dispatcher) -> object:
    """The stamp the cache index of a cached dispatcher (njit or cfunc) is written and
    checked with (for the tests)."""
    return dispatcher._cache._cache_file._source_stamp


class KeyedLocator(caching._CacheLocator):
    """numba's locator for the functions of keyed modules: the cache directory of the
    locator numba would have chosen, the source stamp extended by the compile key."""

    def __init__(self, inner, key: str):
        self._inner = inner
        self._key = key

    def ensure_cache_path(self):
        self._inner.ensure_cache_path()

    def get_cache_path(self):
        return self._inner.get_cache_path()

    def get_source_stamp(self):
        return (self._inner.get_source_stamp(),
                ("kanedyn layout", layout.LAYOUT_VERSION, self._key))

    def get_disambiguator(self):
        return self._inner.get_disambiguator()

    def __getattr__(self, name: str):
        # what numba reads of a locator beyond its methods (``_py_file`` in the warning
        # for a function it cannot cache, e.g. one calling a ctypes pointer) is the inner
        # locator's; without this, that warning was an AttributeError
        if name == "_inner":  # (not set yet: unpickling, copying)
            raise AttributeError(name)
        return getattr(self._inner, name)

    @classmethod
    def from_function(cls, py_func, py_file):
        key = _KEYS.get(_real(py_file))
        if key is None:
            return None
        for other in _numba_locators():
            if other is not cls:
                inner = other.from_function(py_func, py_file)
                if inner is not None:
                    return cls(inner, key)
        return None


def _numba_locators() -> list:
    """The locator classes numba tries, in order: its own list, or the one named by
    ``NUMBA_CACHE_LOCATOR_CLASSES`` (dotted paths, or names in numba's caching module)."""
    if not config.CACHE_LOCATOR_CLASSES:
        return caching.CacheImpl._locator_classes
    out = []
    for name in config.CACHE_LOCATOR_CLASSES.split(","):
        mod, _, cls = name.strip().rpartition(".")
        out.append(getattr(importlib.import_module(mod) if mod else caching, cls))
    return out


if KeyedLocator not in caching.CacheImpl._locator_classes:
    caching.CacheImpl._locator_classes.insert(0, KeyedLocator)
_THIS = f"{__name__}.KeyedLocator"
if config.CACHE_LOCATOR_CLASSES and _THIS not in config.CACHE_LOCATOR_CLASSES:
    # numba then tries only the classes named there: put ours first among them
    config.CACHE_LOCATOR_CLASSES = f"{_THIS},{config.CACHE_LOCATOR_CLASSES}"


class KernelModule:
    """``ready(name)``, ``entry(name)`` for the kernels of one module.

    ``namespace`` is the module's ``globals()``: its dispatchers and its
    ``SIGNATURES`` (one signature per kernel). ``first``: kernels to compile before a
    given one (a batch that calls a single-state kernel, so that it links that one
    specialisation)."""

    def __init__(self, namespace: dict, first: dict[str, tuple[str, ...]] | None = None):
        self.ns = namespace
        self.first = first or {}

    def ready(self, name: str):
        """The dispatcher of ``name``, compiled (or loaded from a cache built against
        today's layout and sources) for its one signature, then closed to others: an
        argument of another type raises TypeError (as
        :func:`kanedyn.dynamics.kernels.ready`)."""
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
