"""The import graph of engine/ and console/, read from the source: every import, at the top of a
module, inside a function or under TYPE_CHECKING, is an edge.

`python -m tests.import_graph` prints it: the circles (there should be none), what console/ imports
from the engine, and the biggest modules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "console")


@dataclass(frozen=True)
class Import:
    importer: str  # module name
    imported: str  # module name (a package's __init__ is the package's name)
    names: tuple[str, ...]  # the names taken from it ("*" for `import x`)
    line: int


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Module name -> its file, for every Python module under the packages."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imports(root: Path = ROOT) -> Iterator[Import]:
    """Every import of one of the packages' modules by another, wherever it stands in the file."""
    known = modules(root)
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in known:
                        yield Import(name, alias.name, ("*",), node.lineno)
            elif isinstance(node, ast.ImportFrom):
                target = imported_from(node, package)
                for alias in node.names:
                    submodule = f"{target}.{alias.name}"
                    imported = submodule if submodule in known else target
                    if imported in known and imported != name:
                        yield Import(name, imported, (alias.name,), node.lineno)


def imported_from(node: ast.ImportFrom, package: str) -> str:
    """The absolute name of the module a `from ... import` statement in `package` reads."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {name: set() for name in modules(root)}
    for found in imports(root):
        edges[found.importer].add(found.imported)
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:
        # iterative, so that a deep chain of imports cannot hit the recursion limit
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return sorted(found)


def main() -> None:
    edges = graph()
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} import edges")
    print("circles:", circles(edges) or "none")
    print("console/ -> engine/:")
    for importer, imported in sorted(
        {(i.importer, i.imported) for i in imports() if i.importer.startswith("console")}
    ):
        if imported.startswith("engine"):
            print(f"  {importer} -> {imported}")
    sizes = sorted(((len(p.read_text().splitlines()), n) for n, p in modules().items()), reverse=True)
    print("largest modules:")
    for lines, name in sizes[:12]:
        print(f"  {lines:5d}  {name}")


if __name__ == "__main__":
    main()
