"""The optional C extensions (Cython sources next to their Python twins), loaded only when current.

setup.py builds them; where they are missing the pure-Python code runs instead and gives the same
results (tests compare the two forms). A build older than its source is stale: it is not used,
with a warning, so that an edited .pyx never runs as its previous version.
"""

from __future__ import annotations

import importlib
import os
import warnings
from types import ModuleType


def load(name: str, package: str = __package__) -> ModuleType | None:
    """<package>.<name> compiled from <name>.pyx beside it (engine.binlog by default), or None."""
    try:
        module = importlib.import_module(f"{package}.{name}")
    except ImportError:
        return None
    source = os.path.join(os.path.dirname(module.__file__ or ""), f"{name}.pyx")
    if os.path.exists(source) and os.path.getmtime(source) > os.path.getmtime(module.__file__ or source):
        warnings.warn(
            f"{package.replace('.', '/')}/{name}.pyx changed since it was compiled: its pure-Python twin runs "
            "until it is rebuilt (pip install -e .)",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return module
