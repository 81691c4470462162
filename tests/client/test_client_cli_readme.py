"""The README's example runs as written, and the `market-client` CLI, against a real server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from tests.client.conftest import CLIENT_DIR
from tests.conftest import ServerProcess


def run(args: list[str], cwd: object = None, **env: str) -> subprocess.CompletedProcess[str]:
    inherited = {k: v for k, v in os.environ.items() if k not in {"MARKET_KEY", "MARKET_URL"}}
    full_env = {**inherited, "PYTHONPATH": str(CLIENT_DIR), **env}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60, cwd=cwd, env=full_env)


def readme_example() -> str:
    text = (CLIENT_DIR / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1
    return blocks[0]


def test_readme_example_runs_as_written(server: ServerProcess) -> None:
    """From a directory holding data/demo-key.txt (the server's data dir), as after ./scripts/serve."""
    example = readme_example()
    assert len(example.splitlines()) <= 12
    out = run(["-c", example], cwd=server.data_dir.parent, MARKET_URL=server.base)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert re.match(r"[\d,.]+ USD/bbl \[", lines[0]) and lines[1].startswith("snapshot epoch=")
    assert "brent " in lines[1] and "wti " in lines[1]
    ticks = [line for line in lines if line.startswith("tick ")]
    assert len(ticks) == 5 and all(re.match(r"tick (brent|wti) [\d,.]+ \([+-]", t) for t in ticks), ticks


def test_cli_quotes_prints_a_table(server: ServerProcess, key: str) -> None:
    out = run(["-m", "market_client", "quotes", "--kind", "oil", "--url", server.base], MARKET_KEY=key)
    assert out.returncode == 0, out.stderr
    head, *rows = out.stdout.splitlines()
    assert head.split() == ["id", "kind", "name", "price", "change", "change%", "unit", "updated"]
    assert rows and all(row.split()[1] == "oil" for row in rows) and any(row.startswith("brent ") for row in rows)
    as_json = run(["-m", "market_client", "quotes", "--ids", "brent,wti", "--json", "--key", key,
                   "--url", server.base])
    assert [q["id"] for q in json.loads(as_json.stdout)["quotes"]] == ["brent", "wti"]


def test_cli_watch_prints_one_line_per_tick(server: ServerProcess, key: str) -> None:
    out = run(["-m", "market_client", "watch", "brent", "wti", "--count", "3", "--url", server.base, "--key", key])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 3 and all(re.match(r"\S+\+08:00  (brent|wti)\s.*seq=\d+$", line) for line in lines), lines
    assert "# snapshot: 2 quotes" in out.stderr


def test_cli_refusals_exit_1_with_the_problem(server: ServerProcess) -> None:
    out = run(["-m", "market_client", "quotes", "--url", server.base, "--key", "mk_wrong"])
    assert out.returncode == 1 and "401 unauthorized" in out.stderr and not out.stdout
    missing = run(["-m", "market_client", "quotes", "--kind", "metal", "--url", server.base, "--key", "x"])
    assert missing.returncode == 2 and "invalid choice" in missing.stderr
    watch = run(["-m", "market_client", "watch", "nope", "--url", server.base], MARKET_KEY=server.demo_key)
    assert watch.returncode == 1 and "unknown_ids" in watch.stderr
