"""The translators (and sqlglot under them) are imported once, safely, whichever thread meets
the first DDL or statement."""

from __future__ import annotations

import ast
import subprocess
import sys

from .import_graph import ROOT, imported_from, modules

# Threads start together in a fresh interpreter and meet the translators the way a channel's
# preloading thread, a worker's first statement or DDL, and a clone do. sqlglot's modules import
# one another in a cycle: entered side by side from different modules without the lock, most
# runs fail with "partially initialized module".
RACE = """
import sys
import threading

import engine.slave as slave_package
from engine.applier.executor import TransactionExecutor
from engine.slave.database import Slave
from engine.slave.translators import load_ddl, load_statements

slave = Slave(sys.argv[1])
executors = [TransactionExecutor(slave.session()) for _ in range(2)]
start = threading.Barrier(4)
failures = []


def ask(how):
    start.wait()
    try:
        if how == 0:
            load_ddl()
            load_statements()
        elif how == 1:
            executors[0].statements
        elif how == 2:
            executors[1].ddl.translate("CREATE DATABASE d", None, slave_package.Catalog())
        else:
            slave_package.DdlTranslator()
    except Exception as exc:
        failures.append(repr(exc))


threads = [threading.Thread(target=ask, args=(how,)) for how in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(failures)
"""


def test_threads_meeting_the_translators_at_once_all_get_them(tmp_path) -> None:
    for attempt in range(4):
        slave = tmp_path / f"slave-{attempt}.duckdb"
        run = subprocess.run(
            [sys.executable, "-c", RACE, str(slave)], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip() == "[]"


# The translators' modules: among themselves they import freely, the first import being locked
TRANSLATORS = ("engine.slave.ddl", "engine.slave.statements", "engine.slave.guard")
LOADER = "engine.slave.translators"


def _imports_sqlglot_or_translators(node: ast.AST, package: str) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == "sqlglot" for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        target = imported_from(node, package)
        names = [f"{target}.{alias.name}" for alias in node.names] + [target]
        return any(name.split(".")[0] == "sqlglot" or name.startswith(TRANSLATORS) for name in names)
    return False


def test_every_import_of_the_translators_inside_a_function_goes_through_the_lock() -> None:
    # An import at a module's top runs when the module loads, before any worker thread exists;
    # one inside a function may run on any thread, so it must ask load_ddl() or load_statements().
    unlocked = []
    for name, path in modules().items():
        if name.startswith(TRANSLATORS) or name == LOADER:
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for function in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if _imports_sqlglot_or_translators(node, package):
                    unlocked.append(f"{name}:{node.lineno}")
    assert unlocked == []
