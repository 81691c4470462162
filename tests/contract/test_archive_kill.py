"""SPEC 18: a hub killed with SIGKILL while its feed is still writing, before the archive's committed count caught
up, replays after the restart exactly a prefix of what was fed: every tick it reported committed, in feed order,
no gap and no duplicate. On SQLite, and on PostgreSQL (skipped without it unless MARKET_REQUIRE_SERVICES=1).

The feed file grows on a thread of this test (the hub tails it) until after the kill. The replayed prefix is read
back through the restarted hub's answers: each instrument's seq, the day's volume and the 1-minute candles, held
to an independent aggregation of the first fed ticks.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.market.timefmt import TZ
from server.store.history.archive_pg import PgTickArchive
from server.store.history.archive_sqlite import SqliteTickArchive
from tests.conftest import ServerProcess, sqlite_only
from tests.pg_service import pg_schema

NOW = "2026-11-18T14:20:00+08:00"  # a Wednesday: ZCE and ICE in session
IDS = ("brent", "methanol")
START = datetime(2026, 11, 18, 9, 0, tzinfo=TZ).timestamp()
LINES_PER_WRITE = 50


def _tick(k: int) -> dict[str, Any]:
    inst = IDS[k % 2]
    base = 80.0 if inst == "brent" else 2400.0
    return {"id": inst, "price": round(base + (k % 23) * (0.05 if inst == "brent" else 1.0), 2),
            "ts": round(START + k * 0.1, 3), "volume": 1 + k % 7}


class GrowingFeed:
    """Appends ticks to the feed file on a thread, LINES_PER_WRITE at a time, until stopped."""

    def __init__(self, path: Path) -> None:
        self.path, self.fed = path, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with self.path.open("a") as f:
            while not self._stop.is_set():
                f.write("".join(json.dumps(_tick(self.fed + j)) + "\n" for j in range(LINES_PER_WRITE)))
                f.flush()
                self.fed += LINES_PER_WRITE
                self._stop.wait(0.01)  # a pace, not a wait for anything

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(10)
        return self.fed


def _committed(srv: ServerProcess) -> int:
    for line in httpx.get(srv.base + "/metrics").text.splitlines():
        if line.startswith("market_archive_committed_ticks "):
            return int(float(line.split()[1]))
    return -1


def _candles(ticks: list[dict[str, Any]], inst: str) -> list[tuple[str, float, float, float, float, int]]:
    """The independent 1-minute aggregation of `ticks` of `inst`: (start, o, h, l, c, v)."""
    buckets: dict[int, list[Any]] = {}
    for t in ticks:
        if t["id"] != inst:
            continue
        start = int(t["ts"] // 60) * 60
        b = buckets.setdefault(start, [t["price"], t["price"], t["price"], t["price"], 0])
        b[1], b[2], b[3], b[4] = max(b[1], t["price"]), min(b[2], t["price"]), t["price"], b[4] + t["volume"]
    return [(datetime.fromtimestamp(s, TZ).isoformat(timespec="milliseconds"), *buckets[s]) for s in sorted(buckets)]


@contextlib.contextmanager
def _storage(kind: str) -> Iterator[tuple[str, ...]]:
    if kind == "sqlite":
        yield ()
    else:
        with pg_schema() as url:
            yield ("--database-url", url)


@pytest.mark.parametrize("storage", [pytest.param("sqlite", marks=sqlite_only), "postgresql"])
def test_a_kill_mid_feed_replays_exactly_a_committed_prefix(tmp_path: Path, storage: str) -> None:
    feed_path, data = tmp_path / "ticks.jsonl", tmp_path / "data"
    feed_path.write_text("")
    with _storage(storage) as flags:
        args = ("--feed", f"jsonl:{feed_path}", "--clock-start", NOW, "--engine", "memory", *flags)
        srv = ServerProcess(data, "granian", *args)
        feed = GrowingFeed(feed_path)
        try:
            deadline, seen = time.monotonic() + 20, 0
            while (seen := _committed(srv)) < 1000:  # a few group commits behind us
                assert time.monotonic() < deadline, srv.output()
                time.sleep(0.02)  # another process commits: nothing to await
            srv.proc.send_signal(signal.SIGKILL)  # the feed still writing: ticks read and not committed yet
            srv.proc.wait(10)
        finally:
            fed = feed.stop()
            if srv.proc.poll() is None:
                srv.stop()
        archived = _archived(data, flags)
        assert seen <= archived < fed, (seen, archived, fed)  # every tick reported committed; some were in flight
        feed_path.write_text("")  # nothing new: everything after the restart comes from the archive
        again = ServerProcess(data, "granian", *args)
        try:
            _replayed(again, archived)
        finally:
            assert again.stop() == 0, again.output()


def _archived(data: Path, flags: tuple[str, ...]) -> int:
    """What the killed hub's archive holds is exactly the first N fed ticks, in feed order; returns N."""
    archive = PgTickArchive(flags[1]) if flags else SqliteTickArchive(data, readonly=True)
    try:
        rows = sorted((t for inst in IDS for t in archive.read(inst, 0, 2**62)), key=lambda t: t[1])
    finally:
        archive.close()
    seqs = {inst: 0 for inst in IDS}
    fed = []
    for t in map(_tick, range(len(rows))):
        seqs[t["id"]] += 1
        fed.append((t["id"], round(t["ts"] * 1000), seqs[t["id"]], t["price"], t["volume"]))
    assert [tuple(r) for r in rows] == fed  # no gap, no duplicate, nothing torn
    return len(rows)


def _replayed(srv: ServerProcess, n: int) -> None:
    """The restarted hub replayed the archive's N ticks: its seq, day volume and 1-minute candles are theirs."""
    assert f"replayed {n} archived ticks" in srv.output()
    prefix = [_tick(k) for k in range(n)]
    h = {"X-SERVICE-Key": srv.demo_key}
    for inst in IDS:
        mine = [t for t in prefix if t["id"] == inst]
        quote = httpx.get(f"{srv.base}/api/v1/quotes/{inst}", headers=h).json()
        assert (quote["seq"], quote["volume"]) == (len(mine), sum(t["volume"] for t in mine)), inst
        series = httpx.get(f"{srv.base}/api/v1/kline/{inst}", headers=h,
                           params={"interval": "1m", "limit": 1000}).json()["series"]
        got = [(c["t"], c["o"], c["h"], c["l"], c["c"], c["v"]) for c in series]
        assert got == _candles(prefix, inst), inst
