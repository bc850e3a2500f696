"""The house's shape, read from the source: the console has one door into the engine, and no
module imports its way back to itself."""

from __future__ import annotations

import ast
import importlib

import engine.api

from .import_graph import ROOT, circles, graph, imports


def test_the_console_reaches_the_engine_only_through_its_door() -> None:
    past_the_door = sorted(
        f"{found.importer}:{found.line} imports {found.imported}"
        for found in imports()
        if found.importer.startswith("console")
        and found.imported.startswith("engine")
        and found.imported != "engine.api"
    )
    assert past_the_door == []


def test_no_engine_module_goes_through_the_door() -> None:
    # the door is for callers outside the engine; inside it, modules import their neighbours
    inside = sorted(f"{found.importer}:{found.line}" for found in imports() if found.imported == "engine.api")
    assert [where for where in inside if where.startswith("engine.")] == []


def test_no_import_circle() -> None:
    assert circles(graph()) == []


def test_no_module_imports_another_ones_private_name() -> None:
    private = sorted(
        f"{found.importer}:{found.line} takes {name} from {found.imported}"
        for found in imports()
        for name in found.names
        if name.startswith("_")
    )
    assert private == []


# (lower, higher): the lower layer never imports the higher one; data flows binlog -> relay log ->
# transactions -> scheduling -> slave -> applier -> replay -> replica, and the engine knows no console
LAYERS_THAT_NEVER_LOOK_UP = [
    ("engine.binlog", "engine.relaylog"),
    ("engine.binlog", "engine.transactions"),
    ("engine.transactions", "engine.applier"),
    ("engine.scheduling", "engine.applier"),
    ("engine.slave", "engine.applier"),
    ("engine.slave", "engine.replay"),
    ("engine.applier", "engine.replay"),
    ("engine.applier", "engine.replica"),
    ("engine.replay", "engine.replica"),
    ("engine", "console"),
]


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_layers_import_only_downwards() -> None:
    upwards = sorted(
        f"{found.importer}:{found.line} imports {found.imported}"
        for found in imports()
        for lower, higher in LAYERS_THAT_NEVER_LOOK_UP
        if _in(found.importer, lower) and _in(found.imported, higher)
    )
    assert upwards == []


def test_circle_finder_finds_a_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(edges) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_every_name_of_the_door_is_its_homes_own_object() -> None:
    for name, home in engine.api._HOMES.items():
        assert getattr(engine.api, name) is getattr(importlib.import_module(home), name), name


def test_the_door_tells_type_checkers_the_same_names_and_homes() -> None:
    tree = ast.parse((ROOT / "engine" / "api.py").read_text())
    (guarded,) = [node for node in tree.body if isinstance(node, ast.If)]
    typed = {
        alias.name: node.module
        for node in ast.walk(guarded)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert typed == engine.api._HOMES


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        engine.api.ReplicaServerr  # noqa: B018
    except AttributeError as error:
        assert "ReplicaServerr" in str(error)
    else:
        raise AssertionError("engine.api answered a name it does not have")
