"""Building: the cache of generated code, the C compiler, cffi, loading (stage 3 of codegen).

Where it sits: frozen equations → lowering (``lower.py``) → printing
(``printers.py``) → **building** → compiled system (``runtime.py``).

Generated sources and built extensions live in ``$KANEDYN_CACHE/codegen`` (default
``~/.cache/kanedyn/codegen``). An entry is named by a hash of the text it is built
from (the source; for numpy and numba the style too), so equations, lowering or
printers that change give another name, and an unchanged source is loaded again
without building. Files are written atomically (a half-written module or library
never has its final name). numba's own cache (``njit(cache=True)``) sits beside the
generated module it was compiled from. :func:`to_c` writes the standalone C source
to a path of the caller's choosing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

from ...errors import CompilerError
from .lower import lower
from .printers import c_declarations, c_source

__all__ = ["cache_dir", "find_c_compiler", "load_c", "load_python", "to_c"]


def cache_dir() -> Path:
    d = Path(os.environ.get("KANEDYN_CACHE", Path.home() / ".cache" / "kanedyn")) / "codegen"
    d.mkdir(parents=True, exist_ok=True)
    return d


def atomic_write(path: Path, text: str) -> None:
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


def load_python(src: str, style: str):
    key = hashlib.sha256((style + src).encode()).hexdigest()[:16]
    modname = f"kanedyn_gen_{style}_{key}"
    if modname in sys.modules:
        return sys.modules[modname]
    path = cache_dir() / f"{modname}.py"
    if not path.exists():
        atomic_write(path, src)
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules[modname] = mod
    return mod


def find_c_compiler() -> str:
    """The system C compiler (``$CC``, else cc, gcc or clang), or a CompilerError."""
    for cand in [os.environ.get("CC")] + ["cc", "gcc", "clang"]:
        if cand and shutil.which(cand.split()[0]):
            return cand
    raise CompilerError(
        "backend='c' needs a C compiler, and none was found (looked for $CC, cc, gcc, clang "
        "on PATH); install one (e.g. apt-get install gcc) or use backend='numba' or 'numpy'"
    )


def load_c(src: str):
    try:
        import cffi
    except ImportError as exc:  # pragma: no cover - cffi is a test/extra dependency
        raise CompilerError("backend='c' needs cffi (pip install cffi)") from exc
    cc = find_c_compiler()
    key = hashlib.sha256(src.encode()).hexdigest()[:16]
    modname = f"kanedyn_gen_c_{key}"
    if modname in sys.modules:
        return sys.modules[modname]
    d = cache_dir()
    built = sorted(d.glob(f"{modname}*.so"))
    if not built:
        ffi = cffi.FFI()
        ffi.cdef(c_declarations())
        ffi.set_source(modname, src, extra_compile_args=["-O2", "-std=c99"])
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
    spec = importlib.util.spec_from_file_location(modname, built[0])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules[modname] = mod
    return mod


def to_c(eom, path, parameters=None, prefix: str = "") -> Path:
    """Write standalone C source of the equations to ``path`` (atomically); return the path."""
    low = lower(eom, parameters)
    src = c_source(low, prefix)
    path = Path(path)
    atomic_write(path, src)
    return path

