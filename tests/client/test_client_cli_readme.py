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


def readme_examples() -> list[str]:
    text = (CLIENT_DIR / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 2  # the quick example, the charting one
    return blocks


def readme_example() -> str:
    return readme_examples()[0]


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


def test_readme_charting_example_runs_as_written(server: ServerProcess) -> None:
    """candles() over 7 days of 1h bars, then the live 1m bar and a heartbeat (the server's default 5 s). The example
    reads the machine's clock: 7 days hold at least three of Brent's trading days whatever the day and hour (three
    days, as the example read before, held 23 hours of bars on a Monday before ICE's open and none at all after a
    Friday holiday)."""
    out = run(["-c", readme_examples()[1]], cwd=server.data_dir.parent, MARKET_URL=server.base)
    assert out.returncode == 0, out.stderr
    first, *rest = out.stdout.splitlines()
    count = re.fullmatch(r"(\d+) bars from (\S+) last close [\d.]+", first)
    assert count and 24 <= int(count.group(1)) <= 7 * 24 + 1, first  # 7 days of hours (those that had ticks)
    assert rest[-1].startswith("heartbeat at ") and "+08:00: 1 ids" in rest[-1], rest
    assert all(re.match(r"candle brent 1m \S+\+08:00 o=", line) for line in rest[:-1]), rest


def test_cli_quotes_prints_a_table(server: ServerProcess, key: str) -> None:
    out = run(["-m", "market_client", "quotes", "--kind", "oil", "--url", server.base], MARKET_KEY=key)
    assert out.returncode == 0, out.stderr
    head, *rows = out.stdout.splitlines()
    assert head.split() == ["id", "kind", "name", "price", "change", "change%", "unit", "updated"]
    assert rows and all(row.split()[1] == "oil" for row in rows) and any(row.startswith("brent ") for row in rows)
    as_json = run(["-m", "market_client", "quotes", "--ids", "brent,wti", "--json", "--key", key,
                   "--url", server.base])
    assert [q["id"] for q in json.loads(as_json.stdout)["quotes"]] == ["brent", "wti"]


def test_cli_quotes_uses_each_instruments_precision_and_shows_the_zone(server: ServerProcess, key: str) -> None:
    """Issue 22: every price printed with 2 decimals (USD/CNY 7.12, RBOB 2.06) and times without a zone."""
    out = run(["-m", "market_client", "quotes", "--ids", "rbob,sc,brent,jkm,usdcny", "--url", server.base],
              MARKET_KEY=key)
    assert out.returncode == 0, out.stderr
    _, *rows = out.stdout.splitlines()
    cells = {row.split()[0]: re.split(r"\s{2,}", row) for row in rows}
    want = {"rbob": 4, "sc": 1, "brent": 2, "jkm": 3, "usdcny": 4}  # the catalogue's decimals, as in priceText
    assert set(cells) == set(want)
    for inst, places in want.items():
        _, _, _, price, change, pct, _, updated = cells[inst]
        assert re.fullmatch(rf"[\d,]+\.\d{{{places}}}", price), (inst, price)
        assert re.fullmatch(rf"[+-][\d,]+\.\d{{{places}}}", change), (inst, change)
        assert re.fullmatch(r"[+-]\d+\.\d\d", pct), (inst, pct)
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+08:00", updated), (inst, updated)


def test_cli_table_prices_read_as_price_text(server: ServerProcess, key: str) -> None:
    """The table's price is the quote's priceText without its unit, for every instrument (same answer)."""
    from market_client import MarketClient
    from market_client.cli import format_table

    with MarketClient(server.base, key) as api:
        quotes = api.quotes().quotes
    rows = format_table(quotes).splitlines()[1:]
    assert len(rows) == len(quotes) >= 40
    for q, row in zip(quotes, rows, strict=True):
        assert re.split(r"\s{2,}", row)[3] == q.price_text.split(" ")[0], (q.id, row, q.price_text)


def test_cli_watch_prints_one_line_per_tick(server: ServerProcess, key: str) -> None:
    out = run(["-m", "market_client", "watch", "brent", "wti", "--count", "3", "--url", server.base, "--key", key])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 3 and all(re.match(r"\S+\+08:00  (brent|wti)\s.*seq=\d+$", line) for line in lines), lines
    assert "# snapshot: 2 quotes" in out.stderr
    precise = run(["-m", "market_client", "watch", "rbob", "sc", "--count", "6", "--url", server.base,
                   "--key", key])
    assert precise.returncode == 0, precise.stderr
    places = {"rbob": 4, "sc": 1}  # not 4 decimals on everything: the instrument's own
    for line in precise.stdout.splitlines():
        _, inst, price, change, _ = line.split()
        assert re.fullmatch(rf"[\d,]+\.\d{{{places[inst]}}}", price), line
        assert re.fullmatch(rf"[+-][\d,]+\.\d{{{places[inst]}}}", change), line


def test_cli_refusals_exit_1_with_the_problem(server: ServerProcess) -> None:
    out = run(["-m", "market_client", "quotes", "--url", server.base, "--key", "mk_wrong"])
    assert out.returncode == 1 and "401 unauthorized" in out.stderr and not out.stdout
    missing = run(["-m", "market_client", "quotes", "--kind", "metal", "--url", server.base, "--key", "x"])
    assert missing.returncode == 2 and "invalid choice" in missing.stderr
    watch = run(["-m", "market_client", "watch", "nope", "--url", server.base], MARKET_KEY=server.demo_key)
    assert watch.returncode == 1 and "unknown_ids" in watch.stderr


def test_root_readme_websocket_example_sends_the_key_in_a_header(server: ServerProcess) -> None:
    """The README's WebSocket example runs as written (port aside) and keeps the key out of the URL (issue 22)."""
    readme = (CLIENT_DIR.parent / "README.md").read_text()
    quick_start = readme[readme.index("## Quick start"):readme.index("## Commands")]
    assert "?key=" not in quick_start.replace("`?key=`", "")  # only mentioned as the browsers' way
    block = next(b for b in re.findall(r"```sh\n(.*?)```", quick_start, re.S) if "ws/quotes" in b)
    script = re.search(r"<<'EOF'\n(.*?)\nEOF", block, re.S)
    assert script and "X-SERVICE-Key" in script.group(1)
    code = script.group(1).replace("ws://127.0.0.1:8001", server.ws_base)
    out = run(["-c", code], cwd=server.data_dir.parent)
    assert out.returncode == 0, out.stderr
    types = [json.loads(line.split(",", 1)[0] + "}")["type"] for line in out.stdout.splitlines()]
    assert types[:3] == ["snapshot", "subscribed", "snapshot"] and len(types) == 6, out.stdout
    assert "tick" in types[3:] and set(types[3:]) <= {"tick", "heartbeat"}, out.stdout
