"""No import cycle anywhere in `server/` (issue 19 item 1): the import graph, built with `ast`, is acyclic.

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
