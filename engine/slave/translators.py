"""Loading the DDL and statement translators, once, whichever thread asks first.

They import sqlglot, whose modules import one another in a cycle. Python locks each module
separately while it imports it, so two threads importing sqlglot at once can each be handed the
other's half-initialised module ("cannot import name 'Token' from partially initialized module").
Workers and channels meet their first DDL or statement on their own threads, so every first
import goes through one lock here; after it, the modules are plain lookups.

The two load apart: a log's first DDL waits for the DDL translator alone, and the statement
translator brings sqlglot's DuckDB dialect besides (a fifth of the two's import time), which only
statements need. The DDL translator writes DuckDB SQL with sqlglot in one rare case (an ALTER that
rebuilds a table computes its expression columns), where sqlglot imports that dialect itself,
possibly while another thread imports the statement translator: that thread enters at the
dialect's module holding no other module's import lock, so Python makes it wait for the import
under way and hands it the whole module."""

from __future__ import annotations

import importlib
import os
import threading
from types import ModuleType

_first_import = threading.Lock()
_loaded: dict[str, ModuleType] = {}  # "ddl", "statements" -> the module


def _load(name: str) -> ModuleType:
    module = _loaded.get(name)
    if module is None:
        with _first_import:
            module = _loaded.get(name)
            if module is None:
                module = _loaded[name] = importlib.import_module(f"{__package__}.{name}")
    return module


def load_ddl() -> ModuleType:
    """The module `engine.slave.ddl`, imported if not yet."""
    return _load("ddl")


def load_statements() -> ModuleType:
    """The module `engine.slave.statements` (and sqlglot's DuckDB dialect), imported if not yet."""
    return _load("statements")


def _unlock_in_child() -> None:
    # A process forked while another thread held the lock would wait for that thread forever.
    global _first_import
    _first_import = threading.Lock()


os.register_at_fork(after_in_child=_unlock_in_child)
