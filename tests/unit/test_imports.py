"""No import cycle anywhere in `server/` (issue 19 item 1), and every import points down the layers (issue 33).

The layers, lowest first (docs/architecture.md draws them): `core` < `config` < `market`, `evidence` < `engine`,
`store` < `stream`, `feeds`, `notify` < `api` < `http` < the root (the top-level modules: root, serve, cli,
commands, workers, lifecycle, ticks, ...). A module imports its own part and parts of lower layers only: two parts
of one layer know nothing of each other. The root may import anything.

Every import statement counts, wherever it is: at module level, inside a function (a lazy import is
still a dependency; it only moves the failure to run time), and under `if TYPE_CHECKING:` (a type-only
cycle is the same design knot; the hub's service-locator circle was one). An edge goes to the module
named: `from a.b import c` is an edge to `a.b.c` when that is a module of `server/`, else to `a.b`.
Importing `a.b.c` also runs `a/__init__` and `a/b/__init__`, but those are not counted as edges of
the importer: a package's `__init__` that imports its own submodules would otherwise always close a
"cycle" with them, while Python resolves that order without trouble.
"""

from __future__ import annotations

import ast
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "server"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path = SERVER) -> dict[str, set[str]]:
    """module -> the modules of `server` it imports (anywhere in its body)."""
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the package, up level - 1
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            else:
                continue
            graph[name].update(t for t in targets if t in files and t != name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None (iterative depth-first search, colours)."""
    colour = dict.fromkeys(graph, 0)  # 0 new, 1 on the current path, 2 done
    for start in sorted(graph):
        if colour[start]:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        colour[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                colour[path.pop()] = 2
                stack.pop()
            elif colour[nxt] == 1:
                return [*path[path.index(nxt):], nxt]
            elif colour[nxt] == 0:
                colour[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


LAYERS: dict[str, int] = {
    "core": 0,
    "config": 1,  # imports no part it configures
    "market": 2, "evidence": 2,
    "engine": 3, "store": 3,
    "stream": 4, "feeds": 4, "notify": 4,
    "api": 5,
    "http": 6,
}
ROOT = 7  # every other top-level module or package of server/


def part(module: str) -> str:
    """`server.api.core.router` -> `api`; a top-level module (`server.root`) is its own part."""
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else ""


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module of the same or a higher layer's other part, as `a -> b` (the root's excepted)."""
    found = []
    for module, targets in sorted(graph.items()):
        rank = LAYERS.get(part(module), ROOT)
        if rank == ROOT:
            continue
        for target in sorted(targets):
            other = LAYERS.get(part(target), ROOT)
            if other > rank or (other == rank and part(target) != part(module)):
                found.append(f"{module} -> {target}")
    return found


def test_imports_point_down_the_layers() -> None:
    graph = import_graph()
    assert {part(m) for m in graph} >= set(LAYERS)  # every layer is there to check
    assert upward_imports(graph) == []


def test_the_layer_check_names_an_upward_import(tmp_path: Path) -> None:
    """The check can fail: a store module importing notify (same layer, other part) and engine importing api (up)
    are both named; store importing core (down) is not."""
    pkg = tmp_path / "server"
    for name in ("core", "store", "notify", "engine", "api"):
        (pkg / name).mkdir(parents=True)
        (pkg / name / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "limits.py").write_text("")
    (pkg / "notify" / "jobs.py").write_text("")
    (pkg / "api" / "routes.py").write_text("")
    (pkg / "store" / "outbox.py").write_text("from server.notify.jobs import x\nfrom server.core import limits\n")
    (pkg / "engine" / "gcra.py").write_text("def f():\n    from server.api.routes import g\n")
    assert upward_imports(import_graph(pkg)) == [
        "server.engine.gcra -> server.api.routes", "server.store.outbox -> server.notify.jobs"]


def test_server_has_no_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 50 and any(graph.values())  # the walk found the package and its imports
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle in server/: " + " -> ".join(cycle or [])


def test_the_cycle_finder_names_a_cycle(tmp_path: Path) -> None:
    """The check can fail: a two-module circle through a function-level import is found and named."""
    pkg = tmp_path / "server"
    (pkg / "a").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "__init__.py").write_text("")
    (pkg / "a" / "x.py").write_text("from server.a import y\n")
    (pkg / "a" / "y.py").write_text("def f():\n    from .x import g\n")
    (pkg / "b.py").write_text("import server.a.x\n")
    graph = import_graph(pkg)
    assert graph["server.b"] == {"server.a.x"}
    assert find_cycle(graph) == ["server.a.x", "server.a.y", "server.a.x"]
