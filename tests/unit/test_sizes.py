"""Small parts a newcomer can read (issue 33 item 2): in server/, no module over 450 lines, no function over 50
lines, no class over 20 methods. A part that outgrows them is split by idea, not squeezed."""

from __future__ import annotations

import ast
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "server"
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 50
MAX_METHODS = 20


def oversized(root: Path = SERVER) -> list[str]:
    """Every module, function and class of `root` over its limit, named with its size."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text()
        name = path.relative_to(root.parent).as_posix()
        if source.count("\n") > MAX_MODULE_LINES:
            found.append(f"{name}: {source.count(chr(10))} lines")
        for node in ast.walk(ast.parse(source, name)):
            if isinstance(node, ast.ClassDef):
                methods = [b for b in node.body if isinstance(b, ast.FunctionDef | ast.AsyncFunctionDef)]
                if len(methods) > MAX_METHODS:
                    found.append(f"{name}:{node.lineno} class {node.name}: {len(methods)} methods")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found.append(f"{name}:{node.lineno} {node.name}: {lines} lines")
    return found


def test_server_parts_stay_small() -> None:
    assert len(list(SERVER.rglob("*.py"))) > 50  # the walk found the package
    assert oversized() == []


def test_the_size_check_names_what_is_too_big(tmp_path: Path) -> None:
    pkg = tmp_path / "server"
    pkg.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (pkg / "long.py").write_text(f"def f():\n{body}\n")
    methods = "\n".join(f"    def m{i}(self): pass" for i in range(MAX_METHODS + 1))
    (pkg / "wide.py").write_text(f"class C:\n{methods}\n")
    (pkg / "fine.py").write_text("def g():\n    return 1\n")
    assert oversized(pkg) == [f"server/long.py:1 f: {MAX_FUNCTION_LINES + 1} lines",
                              f"server/wide.py:1 class C: {MAX_METHODS + 1} methods"]
