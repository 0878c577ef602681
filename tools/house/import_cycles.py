"""Print every import circle among omoide's own modules; exit 1 when there is one.

usage: python3 tools/house/import_cycles.py [--with-type-checking] [REPO]

The graph covers ``core/src/omoide`` and every ``plugins/*/src/<package>``. An edge
``a -> b`` means that running module ``a`` can import module ``b``:

- imports inside functions count (a lazy import only hides a circle until it runs);
- imports in the body of ``if TYPE_CHECKING:`` do not (they never run), unless
  ``--with-type-checking`` asks for them too: circles that only annotations close are
  allowed, but are still worth seeing when a module's dependencies are being cut;
- ``from pkg import name`` where ``pkg.name`` is a module is an edge to that submodule,
  otherwise to ``pkg`` itself; relative imports are resolved;
- a package's ``__init__`` is a module like any other, so an ``__init__`` that imports its
  submodules has edges to them;
- importing ``a.b.c`` is an edge to ``a.b.c`` only: the parent packages it initialises on
  the way are not edges (every submodule would otherwise sit in a circle with an
  ``__init__`` that re-exports it).

Each circle (a strongly connected component of more than one module) is printed with the
imports that close it, as ``file:line``, so it can be cut at the right place.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ImportEdge:
    """One import statement's edge: ``source`` imports ``target`` at ``where``."""

    source: str
    target: str
    where: str


def package_roots(repo: Path) -> list[Path]:
    """The directories whose children are top-level packages: the core's and each plugin's."""
    return [repo / "core/src", *sorted(repo.glob("plugins/*/src"))]


def module_files(repo: Path) -> dict[str, Path]:
    """Every module of the core and of the in-tree plugins, by dotted name."""
    modules: dict[str, Path] = {}
    for root in package_roots(repo):
        if not root.is_dir():
            continue
        for package in sorted(p for p in root.iterdir() if (p / "__init__.py").is_file()):
            for path in sorted(package.rglob("*.py")):
                parts = list(path.relative_to(root).with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts.pop()
                modules[".".join(parts)] = path
    return modules


def _type_checking_only(tree: ast.AST) -> set[int]:
    """Ids of the nodes inside the body of an ``if TYPE_CHECKING:`` (not its ``else``)."""
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for statement in node.body:
                hidden.update(id(inner) for inner in ast.walk(statement))
    return hidden


def _absolute(module: str | None, level: int, importer: str, is_package: bool) -> str:
    """The absolute dotted name a (possibly relative) ``from`` import refers to."""
    if level == 0:
        return module or ""
    base = importer.split(".")
    # In a package's __init__, "." is the package itself; in a module, its parent.
    drop = level - 1 if is_package else level
    base = base[: len(base) - drop] if drop else base
    return ".".join([*base, module] if module else base)


def _nearest_module(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is one of our modules (attributes are not)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str, path: Path, modules: dict[str, Path],
               with_type_checking: bool = False) -> Iterator[ImportEdge]:
    """The edges from module ``name`` (read from ``path``) to the other modules it imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hidden = set() if with_type_checking else _type_checking_only(tree)
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, name, is_package)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.append(submodule if submodule in modules else base)
        for target in targets:
            found = _nearest_module(target, modules)
            if found is not None and found != name:
                yield ImportEdge(name, found, f"{path}:{node.lineno}")


def import_graph(repo: Path, with_type_checking: bool = False) -> dict[str, list[ImportEdge]]:
    """Every module's outgoing import edges, lazy imports included."""
    modules = module_files(repo)
    # dict.fromkeys: one edge per statement, however many names it imports.
    return {name: list(dict.fromkeys(imports_of(name, path, modules, with_type_checking)))
            for name, path in modules.items()}


def import_circles(graph: dict[str, list[ImportEdge]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted (Tarjan)."""
    successors = {name: sorted({edge.target for edge in edges}) for name, edges in graph.items()}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(start: str) -> None:
        # Iterative, so a deep import chain cannot hit the recursion limit.
        work = [(start, iter(successors.get(start, [])))]
        order[start] = low[start] = len(order)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in order:
                    order[child] = low[child] = len(order)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(successors.get(child, []))))
                elif child in on_stack:
                    low[node] = min(low[node], order[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == order[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))

    for name in sorted(successors):
        if name not in order:
            visit(name)
    return sorted(circles)


def describe(circle: list[str], graph: dict[str, list[ImportEdge]], repo: Path) -> str:
    """One circle as text: its modules, then each import that keeps it closed."""
    members = set(circle)
    lines = [f"circle of {len(circle)}: " + " <-> ".join(circle)]
    for name in circle:
        for edge in graph[name]:
            if edge.target in members:
                where = Path(edge.where.rpartition(":")[0]).relative_to(repo)
                line = edge.where.rpartition(":")[2]
                lines.append(f"    {edge.source} -> {edge.target}   ({where}:{line})")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    with_type_checking = "--with-type-checking" in argv[1:]
    paths = [arg for arg in argv[1:] if not arg.startswith("--")]
    repo = Path(paths[0] if paths else Path(__file__).resolve().parents[2]).resolve()
    graph = import_graph(repo, with_type_checking)
    circles = import_circles(graph)
    for circle in circles:
        print(describe(circle, graph, repo))
    if circles:
        print(f"{len(circles)} import circle(s) among {len(graph)} modules")
        return 1
    print(f"no import circles among {len(graph)} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
