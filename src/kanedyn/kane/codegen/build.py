"""Building: the cache of generated code, the C compiler, cffi, loading (stage 3 of codegen).

Where it sits: frozen equations → lowering (``lowering.py``) → printing
(``printers.py``) → **building** → compiled system (``runtime.py``).

Generated sources and built extensions live in ``$KANEDYN_CACHE/codegen`` (default
``~/.cache/kanedyn/codegen``). An entry is named by a hash of everything it is built
from — the generated source (with its style for numpy and numba; with the cffi
declarations and ``C_FLAGS`` for C) — so a change of the equations, of the lowering,
of the printers or of the build flags gives another name, and an unchanged source is
loaded again without building. (The key is the generated text, not the codegen
modules' own files: a change in them that prints the same code rightly reuses it.)
A C library is looked up under this interpreter's extension suffix only. Files are
written atomically (a half-written module or library never has its final name).
numba's own cache (``njit(cache=True)``) sits beside the generated module it was
compiled from. :func:`to_c` writes the standalone C source
to a path of the caller's choosing.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

from ...errors import CompilerError
from .lowering import lower
from .printers import c_source

__all__ = ["C_FLAGS", "atomic_write", "c_module_name", "cache_dir", "find_c_compiler", "load_c",
           "load_python", "python_module_name", "to_c"]


#: what the C compiler is given besides the source (part of a library's cache key).
#: -g0 undoes the -g of Python's own CFLAGS, which cffi passes first: debug information
#: for thousands of generated statements costs compile time and nobody steps through them.
#: -fno-tree-slp-vectorize (gcc; clang takes it as -fno-slp-vectorize): the straight-line
#: vectoriser took a quarter of gcc's time on the massive-leg Stewart platform and its
#: code ran no faster (docs/benchmarks.md, issue 18). -O2 rather than -O1: -O1 compiled
#: in 2/3 of the time but ran 15-20 % slower.
C_FLAGS = ("-O2", "-fno-tree-slp-vectorize", "-g0", "-std=c99")


def cache_dir() -> Path:
    """``$KANEDYN_CACHE/codegen`` (default ``~/.cache/kanedyn/codegen``), created if need be."""
    d = Path(os.environ.get("KANEDYN_CACHE", Path.home() / ".cache" / "kanedyn")) / "codegen"
    d.mkdir(parents=True, exist_ok=True)
    return d


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename, so that a reader
    sees the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def python_module_name(src: str, style: str) -> str:
    """The cache name of a generated Python module: a hash of its style and source."""
    return f"kanedyn_gen_{style}_{_digest(style + src)}"


def c_module_name(src: str, declarations: str) -> str:
    """The cache name of a generated C library: a hash of all it is built from — the
    source, the declarations cffi wraps, and the compiler flags."""
    return f"kanedyn_gen_c_{_digest(chr(0).join([src, declarations, *C_FLAGS]))}"


def _import(modname: str, path: Path):
    """Import the module (Python or extension) at ``path`` as ``modname``, once."""
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules[modname] = mod
    return mod


def load_python(src: str, style: str):
    """The generated module of ``src`` (``style`` "numpy" or "numba"), written to the
    cache unless it is there and imported unless it was."""
    modname = python_module_name(src, style)
    if modname in sys.modules:
        return sys.modules[modname]
    path = cache_dir() / f"{modname}.py"
    if not path.exists():
        atomic_write(path, src)
    return _import(modname, path)


def find_c_compiler() -> str:
    """The system C compiler (``$CC``, else cc, gcc or clang), or a CompilerError."""
    for cand in [os.environ.get("CC")] + ["cc", "gcc", "clang"]:
        if cand and shutil.which(cand.split()[0]):
            return cand
    raise CompilerError(
        "backend='c' needs a C compiler, and none was found (looked for $CC, cc, gcc, clang "
        "on PATH); install one (e.g. apt-get install gcc) or use backend='numba' or 'numpy'"
    )


def load_c(src: str, declarations: str):
    """The cffi extension of the C ``src`` exposing ``declarations``: loaded from the
    cache when this Python has built it before, else compiled with the system compiler.

    A library is looked up under this interpreter's own extension suffix
    (``cpython-312-x86_64-linux-gnu.so``, ...): the cache directory is shared by every
    Python on the machine, and another one's library does not import here."""
    try:
        import cffi
    except ImportError as exc:  # pragma: no cover - cffi is a test/extra dependency
        raise CompilerError("backend='c' needs cffi (pip install cffi)") from exc
    cc = find_c_compiler()
    modname = c_module_name(src, declarations)
    if modname in sys.modules:
        return sys.modules[modname]
    d = cache_dir()
    built = [d / (modname + s) for s in importlib.machinery.EXTENSION_SUFFIXES
             if (d / (modname + s)).is_file()]
    if not built:
        ffi = cffi.FFI()
        ffi.cdef(declarations)
        ffi.set_source(modname, src, extra_compile_args=list(C_FLAGS))
        work = Path(tempfile.mkdtemp(prefix=modname, dir=d))
        env_cc = os.environ.get("CC")
        os.environ["CC"] = cc
        try:
            so = Path(ffi.compile(tmpdir=str(work), verbose=False))
        except Exception as exc:
            raise CompilerError(f"backend='c': compiling the generated C with {cc!r} failed: "
                                f"{exc}") from exc
        finally:
            if env_cc is None:
                os.environ.pop("CC", None)
            else:
                os.environ["CC"] = env_cc
        target = d / so.name
        os.replace(so, target)  # atomic: a half-built library never has the final name
        shutil.rmtree(work, ignore_errors=True)
        built = [target]
    return _import(modname, built[0])


def to_c(eom, path, parameters=None, prefix: str = "") -> Path:
    """Write standalone C source of the equations to ``path`` (atomically); return the path."""
    low = lower(eom, parameters)
    src = c_source(low, prefix)
    path = Path(path)
    atomic_write(path, src)
    return path

