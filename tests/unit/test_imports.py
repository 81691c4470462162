"""No import cycle anywhere in `server/` (issue 19 item 1), every import points down the layers (issue 33), and the
rooms of a part import only the rooms their `__init__` names (issue 38).

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
import re
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


# The rooms (sub-packages) of a part, and the other rooms of the same part each may import. A part's top-level
# modules are not rooms: they may import every room of their part (e.g. `stream/core.py` connects them), and a room
# may import them. `store/sql/` implements every aggregate's repository, so it may import every room of `store/`.
ROOMS: dict[str, dict[str, set[str]]] = {
    "store": {
        "outbox": set(), "sql": {"*"}, "history": {"sql"}, "flatfiles": {"history", "sql"},
        "site": {"sql", "outbox"}, "accounts": {"sql", "outbox", "site"},
        "support": {"sql", "outbox", "site", "accounts"}, "availability": {"sql", "accounts"},
        "incidents": {"sql", "outbox", "accounts"}, "sources": {"sql", "accounts"},
    },
    "market": {"venues": set(), "candles": set(), "contracts": {"venues"}},
    "stream": {"protocol": set(), "delivery": {"protocol"}, "connections": {"protocol", "delivery"}},
    "api": {
        "core": set(), "auth": {"core"}, "site": {"core", "auth"}, "console": {"core", "auth", "site"},
        "market": {"core"}, "ops": {"core", "docs"}, "docs": {"core", "auth", "site", "console", "market"},
    },
}
MAX_MODULES = 15  # modules directly in one package


def room(module: str) -> str:
    """`server.store.history.archive` -> `history`; a part's top-level module (`server.stream.core`) -> ``."""
    pieces = module.split(".")
    return pieces[2] if len(pieces) > 3 else ""


def crossed_rooms(graph: dict[str, set[str]], rooms: dict[str, dict[str, set[str]]] = ROOMS) -> list[str]:
    """Every import of another room of the same part that the importer's room may not import, as `a -> b`."""
    found = []
    for module, targets in sorted(graph.items()):
        here = room(module)
        allowed = rooms.get(part(module), {}).get(here)
        if allowed is None or "*" in allowed:
            continue
        for target in sorted(targets):
            there = room(target)
            if part(target) == part(module) and there and there != here and there not in allowed:
                found.append(f"{module} -> {target}")
    return found


def test_rooms_import_only_the_rooms_they_name() -> None:
    graph = import_graph()
    for name, rooms in ROOMS.items():  # every room of the table is a package, and every package of a part is in it
        packages = {p.name for p in (SERVER / name).iterdir() if (p / "__init__.py").exists()}
        assert packages == set(rooms), name
    assert crossed_rooms(graph) == []


def test_the_room_check_names_a_crossed_room(tmp_path: Path) -> None:
    """The check can fail: stream's protocol room importing its delivery room is named; delivery importing protocol
    and a top-level module of the part (limits) is not."""
    pkg = tmp_path / "server"
    for name in ("stream", "stream/protocol", "stream/delivery"):
        (pkg / name).mkdir(parents=True)
        (pkg / name / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "stream" / "limits.py").write_text("")
    (pkg / "stream" / "protocol" / "wire.py").write_text("from server.stream.delivery.fanout import f\n")
    (pkg / "stream" / "delivery" / "fanout.py").write_text(
        "from server.stream.protocol import wire\nfrom server.stream import limits\n")
    assert crossed_rooms(import_graph(pkg)) == ["server.stream.protocol.wire -> server.stream.delivery.fanout"]


def test_every_package_is_small_and_says_what_it_keeps() -> None:
    """No package holds more than MAX_MODULES modules directly, and each `__init__` has a docstring that says what
    lives there and what it may import."""
    for init in sorted(SERVER.rglob("__init__.py")):
        modules = [p for p in init.parent.glob("*.py") if p.name != "__init__.py"]
        assert len(modules) <= MAX_MODULES, f"{init.parent}: {len(modules)} modules"
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "import" in doc.lower(), f"{init} has no docstring naming what it may import"


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


REPO = SERVER.parent
JS_IMPORT = re.compile(r"""^\s*(?:import|export)\b[^;]*?\bfrom\s*["'](\.{1,2}/[^"']+)["']""", re.M | re.S)
JS_ROOTS = ("clients/typescript/src", "server/web")


def js_import_graph(root: Path) -> dict[str, set[str]]:
    """file -> the files of the same tree it imports (`import`/`export ... from "./x.js"`, type-only imports too:
    a type-only circle is the same knot). `./x.js` names `x.ts` in a TypeScript tree."""
    files = {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.suffix in {".ts", ".js", ".mjs"}}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        for spec in JS_IMPORT.findall(path.read_text()):
            target = (path.parent / spec).resolve().relative_to(root.resolve()).as_posix()
            for candidate in (target, re.sub(r"\.js$", ".ts", target)):
                if candidate in files and candidate != name:
                    graph[name].add(candidate)
    return graph


def test_no_import_cycle_in_the_javascript_and_typescript() -> None:
    for tree in JS_ROOTS:
        graph = js_import_graph(REPO / tree)
        assert len(graph) > 5 and any(graph.values()), tree  # the walk found the files and their imports
        cycle = find_cycle(graph)
        assert cycle is None, f"import cycle in {tree}: " + " -> ".join(cycle or [])


def test_the_javascript_cycle_finder_names_a_type_only_cycle(tmp_path: Path) -> None:
    (tmp_path / "rest.ts").write_text('import { consoleCalls } from "./console.js";\n')
    (tmp_path / "console.ts").write_text('import type {\n  MarketClient,\n} from "./rest.js";\n')
    (tmp_path / "index.ts").write_text('export { MarketClient } from "./rest.js";\n')
    graph = js_import_graph(tmp_path)
    assert graph["index.ts"] == {"rest.ts"}
    assert find_cycle(graph) == ["console.ts", "rest.ts", "console.ts"]
