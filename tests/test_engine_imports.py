"""The engine's import graph, read from the source: every import counts, lazy ones inside functions
and TYPE_CHECKING ones included, since each still ties one module to another."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The layers below the replica: the slave and transactions never import the appliers, and the
# appliers' modules do not import each other in a circle.
ACYCLIC = ("engine.applier", "engine.slave", "engine.transactions", "engine.replay")


def _modules() -> dict[str, Path]:
    modules = {}
    for path in sorted((ROOT / "engine").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, str]]:
    """(module, name imported from it) for every import in the file; name "" for a module."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.append((submodule, "") if submodule in modules else (target, alias.name))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, "") for alias in node.names)
    return [(target, imported) for target, imported in found if target in modules and target != name]


def _within(name: str) -> bool:
    return any(name == top or name.startswith(top + ".") for top in ACYCLIC)


def test_the_applier_slave_transactions_and_replay_import_no_circle():
    modules = _modules()
    graph = {
        name: {target for target, _ in _imports(name, path, modules) if _within(target)}
        for name, path in modules.items()
        if _within(name)
    }
    circles = []
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        if name in trail:
            circles.append(" -> ".join(trail[trail.index(name) :] + [name]))
            return
        if name in done:
            return
        for target in sorted(graph[name]):
            visit(target, [*trail, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    assert circles == []


def test_no_engine_module_imports_another_ones_private_name():
    modules = _modules()
    private = [
        f"{name}: {imported} from {target}"
        for name, path in modules.items()
        for target, imported in _imports(name, path, modules)
        if imported.startswith("_")
    ]
    assert private == []
