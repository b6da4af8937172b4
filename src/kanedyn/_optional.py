"""Optional dependencies, imported where they are used, with one message for a missing one."""

from __future__ import annotations

from types import ModuleType

from .errors import KanedynError


def pandas(what: str) -> ModuleType:
    """The pandas module, or a KanedynError naming ``what`` needed it and the extra to add."""
    try:
        import pandas as pd
    except ImportError:
        raise KanedynError(f"{what} needs pandas: pip install 'kanedyn[pandas]'") from None
    return pd
