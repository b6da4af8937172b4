"""One freshness stamp for numba's on-disk cache of every function of this package.

numba keys the cache of a function by the contents of that function's own file, and
a cached function carries the compiled code of every helper it calls or inlines. The
algorithms of this package inline the joint and spatial helpers of ``joint_rows.py``
and ``spatial_rows.py`` and read the layout constants of ``constants.py``; with
numba's own stamp, a change to one of those files would leave the cached RNEA, CRBA
and ABA (``rnea.py``, ...) running the old helpers, without an error. So every
function defined in this package gets the same stamp, a digest of all the package's
source files (and of ``dynamics/layout.py``, where the layout constants may come
from): a change to any of them makes numba recompile all of them. Where a cache goes
is still decided by numba's own locators (``NUMBA_CACHE_DIR``, the ``__pycache__``
beside the file, the user-wide folder), which this one wraps.

(Other kernel modules that compile code of this package into theirs — frames,
centroidal, joint wrenches — check :data:`DIGEST` through ``dynamics/_compiled.py``.)
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from numba.core import caching

HERE = Path(__file__).resolve().parent


def source_files(folder: Path = HERE) -> list[Path]:
    """The files the stamp covers: the package's ``*.py`` and ``../layout.py`` if present."""
    files = sorted(folder.glob("*.py"))
    layout = folder.parent / "layout.py"
    return files + ([layout] if layout.is_file() else [])


def package_digest(files: list[Path]) -> str | None:
    """sha256 over the names and contents of ``files``; None if one cannot be read (a
    frozen install without sources: numba's own stamp is then used)."""
    h = hashlib.sha256()
    try:
        for f in files:
            h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    except OSError:
        return None
    return h.hexdigest()


#: the digest of the package's sources, as this process found them at import
DIGEST = package_digest(source_files())

_IMPL = getattr(caching, "CacheImpl", None) or caching._CacheImpl
_IN_PACKAGE: dict[str, bool] = {}  # source file -> whether it is one of the package's


class PackageStampLocator(caching._CacheLocator):
    """numba's cache locator for a function of this package: the cache path and the
    disambiguator of numba's own choice (``inner``), the package's :data:`DIGEST` as
    the freshness stamp."""

    def __init__(self, inner):
        self._inner = inner

    def ensure_cache_path(self):
        self._inner.ensure_cache_path()

    def get_cache_path(self):
        return self._inner.get_cache_path()

    def get_source_stamp(self):
        return ("kanedyn.dynamics.kernels", DIGEST)

    def get_disambiguator(self):
        return self._inner.get_disambiguator()

    @classmethod
    def from_function(cls, py_func, py_file):
        inside = _IN_PACKAGE.get(py_file)
        if inside is None:  # (once per file: resolving a path costs ~0.1 ms)
            inside = _IN_PACKAGE[py_file] = Path(py_file).resolve().parent == HERE
        if DIGEST is None or not inside:
            return None
        for other in _IMPL._locator_classes:
            if other is not cls:
                inner = other.from_function(py_func, py_file)
                if inner is not None:
                    return cls(inner)
        return None


def install() -> None:
    """Put :class:`PackageStampLocator` first in numba's list of locators (once): it
    answers for the functions of this package only, and must be in place before they
    are decorated. (``NUMBA_CACHE_LOCATOR_CLASSES``, numba's override, bypasses it.)"""
    classes = _IMPL._locator_classes
    if PackageStampLocator not in classes:
        classes.insert(0, PackageStampLocator)
