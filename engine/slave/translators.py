"""Loading the DDL and statement translators, once, whichever thread asks first.

They import sqlglot, whose modules import one another in a cycle. Python locks each module
separately while it imports it, so two threads importing sqlglot at once can each be handed the
other's half-initialised module ("cannot import name 'Token' from partially initialized module").
Workers and channels meet their first DDL or statement on their own threads, so every first
import goes through one lock here; after it, the modules are plain lookups."""

from __future__ import annotations

import os
import threading
from types import ModuleType

_first_import = threading.Lock()
_loaded: tuple[ModuleType, ModuleType] | None = None


def load_translators() -> tuple[ModuleType, ModuleType]:
    """The modules `engine.slave.ddl` and `engine.slave.statements`, imported if not yet."""
    global _loaded
    if _loaded is None:
        with _first_import:
            if _loaded is None:
                from . import ddl, statements

                _loaded = (ddl, statements)
    return _loaded


def _unlock_in_child() -> None:
    # A process forked while another thread held the lock would wait for that thread forever.
    global _first_import
    _first_import = threading.Lock()


os.register_at_fork(after_in_child=_unlock_in_child)
