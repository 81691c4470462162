"""docs/storage.md, "What `ts` means": a JSON line means the same tick to the feed and to `ticks import` (issue 45).

Tuesday 2026-11-24's lines (issue 45's example: methanol at 09:00 in epoch seconds) are fed to one hub on a fake
clock (hidden --clock-start, Tuesday afternoon) and imported with the CLI into another data dir; on Wednesday both
hubs answer the same candles and the same flat file of Tuesday's ticks, and that file imports back as the same
rows. The same lines in epoch milliseconds are refused row by row, exit status 1, nothing stored. What the hubs do
is awaited by polling their answers with a deadline (another process: nothing here to await).
"""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import ServerProcess, run_cli

TUESDAY = "2026-11-24T14:20:00+08:00"
WEDNESDAY = "2026-11-25T14:20:00+08:00"  # Tuesday's flat files exist (the day closed on every venue)
NINE = 1795482000.0  # 2026-11-24 09:00 in Shanghai, epoch seconds
IDS = ("methanol", "brent")
MEMORY = ("--engine", "memory")  # the history is written on the memory engine (the lease holder's on Redis)


def _lines() -> list[dict[str, Any]]:
    """80 ticks from 09:00, every 37.5 s, alternating instruments: a feed's lines, which carry no seq (the feed
    numbers each instrument's ticks as it accepts them, and `ticks import` numbers them the same way)."""
    return [{"id": IDS[k % 2], "price": (2402.0 if k % 2 == 0 else 80.25) + k % 7, "ts": NINE + k * 37.5,
             "volume": 28 + k % 3} for k in range(80)]


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _committed(srv: ServerProcess) -> float:
    for line in httpx.get(srv.base + "/metrics").text.splitlines():
        if line.startswith("market_archive_committed_ticks "):
            return float(line.split()[1])
    return -1.0


def _answers(srv: ServerProcess) -> dict[str, Any]:
    """Tuesday's candles and the listing of its ticks' flat file, as this hub answers them."""
    h = {"X-SERVICE-Key": srv.demo_key}
    out: dict[str, Any] = {}
    for inst in IDS:
        for interval in ("1m", "5m", "1h"):
            r = httpx.get(f"{srv.base}/api/v1/kline/{inst}", headers=h, params={
                "interval": interval, "from": "2026-11-24T00:00:00+08:00", "to": "2026-11-25T00:00:00+08:00"})
            assert r.status_code == 200, r.text
            out[f"{inst}-{interval}"] = r.json()["series"]
    r = httpx.get(f"{srv.base}/api/v1/flatfiles", headers=h,
                  params={"dataset": "ticks", "from": "2026-11-24", "to": "2026-11-24"})
    assert r.status_code == 200, r.text
    out["files"] = [{k: f[k] for k in ("date", "bytes", "sha256", "rows")} for f in r.json()["files"]]
    return out


def _fed_hub(tmp: Path) -> ServerProcess:
    """A hub that read the lines from its feed on Tuesday, started again on Wednesday with nothing new to read."""
    data, lines = tmp / "fed", _lines()
    first = ServerProcess(data, "granian", "--feed", f"jsonl:{_write(tmp / 'feed.jsonl', lines)}",
                          "--clock-start", TUESDAY, *MEMORY)
    try:
        deadline = time.monotonic() + 15
        while _committed(first) != len(lines):
            assert time.monotonic() < deadline, first.output()
            time.sleep(0.05)  # polling another process: nothing to await
    finally:
        assert first.stop() == 0, first.output()
    return ServerProcess(data, "granian", "--feed", f"jsonl:{_write(tmp / 'none.jsonl', [])}",
                         "--clock-start", WEDNESDAY, *MEMORY)


def _imported_hub(tmp: Path) -> ServerProcess:
    data = tmp / "imported"
    data.mkdir()
    out = run_cli(data, "ticks", "import", str(_write(tmp / "dump.jsonl", _lines())), "--clock-start", WEDNESDAY)
    assert out.returncode == 0 and "imported 80 ticks" in out.stdout, (out.stdout, out.stderr)
    return ServerProcess(data, "granian", "--feed", f"jsonl:{_write(tmp / 'empty.jsonl', [])}",
                         "--clock-start", WEDNESDAY, *MEMORY)


def test_a_feeds_lines_imported_are_the_ticks_the_feed_made(tmp_path: Path) -> None:
    fed = _fed_hub(tmp_path)
    try:
        from_feed = _answers(fed)
        download = httpx.get(f"{fed.base}/api/v1/flatfiles/ticks/2026-11-24.csv.gz",
                             headers={"X-SERVICE-Key": fed.demo_key})
        assert download.status_code == 200, download.text
    finally:
        assert fed.stop() == 0, fed.output()
    assert len(from_feed["methanol-1m"]) == 40 and from_feed["methanol-1m"][0]["t"] == "2026-11-24T09:00:00.000+08:00"
    assert from_feed["files"][0]["rows"] == 80, from_feed["files"]
    imported = _imported_hub(tmp_path)
    try:
        assert _answers(imported) == from_feed
    finally:
        assert imported.stop() == 0, imported.output()
    # the flat file's rows (ts as ISO 8601 with offset) read back as the same ticks
    flat = tmp_path / "2026-11-24.csv"
    flat.write_bytes(gzip.decompress(download.content))
    assert "methanol,2026-11-24T09:00:00.000+08:00,1,2402.0,28.0" in flat.read_text().splitlines()
    out = run_cli(tmp_path / "fed", "ticks", "import", str(flat), "--clock-start", WEDNESDAY)
    assert out.returncode == 0 and "imported 80 ticks" in out.stdout, (out.stdout, out.stderr)


def test_lines_in_milliseconds_are_refused_row_by_row(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    lines = [{**line, "ts": round(line["ts"] * 1000)} for line in _lines()]
    out = run_cli(data, "ticks", "import", str(_write(tmp_path / "ms.jsonl", lines)), "--clock-start", WEDNESDAY)
    assert out.returncode == 1 and "imported 0 ticks" in out.stdout, (out.stdout, out.stderr)
    assert "80 bad rows skipped" in out.stderr, out.stderr
    named = [line.strip() for line in out.stderr.splitlines() if line.strip().startswith("line ")]
    assert len(named) == 80, out.stderr
    assert named[0] == "line 1: ts 1795482000000 is plainly epoch milliseconds: ts is epoch seconds"
    # the other bad rows are named too: a day the retention deletes, a time ahead of the clock
    old_and_new = [{**_lines()[0], "ts": NINE - 31 * 86400}, {**_lines()[1], "ts": NINE + 2 * 86400}, _lines()[2]]
    out = run_cli(data, "ticks", "import", str(_write(tmp_path / "odd.jsonl", old_and_new)), "--clock-start", WEDNESDAY)
    assert out.returncode == 1 and "imported 1 ticks" in out.stdout, (out.stdout, out.stderr)
    assert "line 1: ts 2026-10-24T09:00:00.000+08:00 is older than the retention keeps" in out.stderr
    assert ("line 2: ts 2026-11-26T09:00:00.000+08:00 is in the future (the clock reads 2026-11-25T14:20:00"
            in out.stderr), out.stderr
