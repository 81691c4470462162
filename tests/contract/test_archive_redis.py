"""SPEC 18 "Many hubs": on the Redis engine with PostgreSQL, every hub applies every tick but only the feed's lease
holder writes the tick archive, and a leader killed with SIGKILL loses and duplicates no archived tick: the hub
that takes the lease writes again what it applied lately (the archive keeps one row per tick) and continues the
feed file from what was published."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import httpx
import psycopg

from tests.conftest import ServerProcess
from tests.pg_service import pg_schema
from tests.poll import until as _until
from tests.redis_service import redis_prefix, require_redis

T0 = 1_795_000_000.0  # 2026-11-18 17:46:40 +08:00; the ticks' own times (the archive keeps whatever a feed stamps)
NOW = "2026-11-21T12:00:00+08:00"  # the hubs' clock (hidden --clock-start): a Saturday, the week's files exist


def _ticks(start: int, n: int) -> list[dict[str, Any]]:
    return [{"id": ("brent", "wti", "methanol")[k % 3], "price": 70.0 + (k % 11) * 0.25, "ts": T0 + k * 0.5,
             "volume": 1} for k in range(start, start + n)]



def _leads(srv: ServerProcess) -> bool:
    for line in httpx.get(srv.base + "/metrics").text.splitlines():
        if line.startswith("market_feed_up "):
            return float(line.split()[1]) == 1.0
    return False


def _metric(srv: ServerProcess, name: str) -> float:
    for line in httpx.get(srv.base + "/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return -1.0


def _applied(srv: ServerProcess) -> float:
    return _metric(srv, "market_ticks_applied_total")


def test_a_killed_leader_loses_and_duplicates_no_archived_tick(tmp_path: Path) -> None:
    """The leader commits its archive buffer every 60 s here (hidden --archive-commit-s), so when it is killed
    every tick it fed is applied on both hubs and committed by neither: all of them reach the archive only through
    the hub that takes the lease over, once each; that hub then feeds (and archives) the rest of the file."""
    url = require_redis()
    feed = tmp_path / "ticks.jsonl"
    feed.write_text("")
    first, rest = _ticks(0, 500), _ticks(500, 100)
    with pg_schema() as database, redis_prefix(url) as prefix, psycopg.connect(database, autocommit=True) as pg:
        def archived() -> list[tuple[str, int, int]]:
            try:
                return pg.execute("SELECT id, ts, seq FROM archive_ticks").fetchall()
            except psycopg.errors.UndefinedTable:
                return []

        flags = ("--engine", "redis", "--redis-url", url, "--redis-prefix", prefix, "--database-url", database,
                 "--feed", f"jsonl:{feed}", "--clock-start", NOW)
        leader = ServerProcess(tmp_path / "a", "granian", *flags, "--archive-commit-s", "60")
        follower = None
        try:
            assert _until(lambda: _leads(leader)), leader.output()
            follower = ServerProcess(tmp_path / "b", "robyn", *flags)
            with feed.open("a") as fh:
                fh.write("".join(json.dumps(t) + "\n" for t in first))
            assert _until(lambda: _applied(follower) >= len(first)), follower.output()
            assert archived() == []  # fed and applied everywhere, committed nowhere: the leader holds them
            leader.proc.send_signal(signal.SIGKILL)
            leader.proc.wait(10)
            assert _until(lambda: len(archived()) >= len(first)), (len(archived()), follower.output())
            assert "took the feed's lease: 500 recently applied ticks" in follower.output(), follower.output()
            with feed.open("a") as fh:  # the new leader feeds the rest of the file
                fh.write("".join(json.dumps(t) + "\n" for t in rest))
            everything = first + rest
            assert _until(lambda: len(archived()) >= len(everything)), (len(archived()), follower.output())
            # every tick the follower handed to its archive is committed: 500 written again, 100 fed
            assert _until(lambda: _metric(follower, "market_archive_committed_ticks") >= len(everything))
            assert _applied(follower) == len(everything)  # each tick applied once: nothing fed again
            rows = archived()
            third = ServerProcess(tmp_path / "c", "granian", *flags)  # a hub joining later serves the same history
            try:
                key = (tmp_path / "a" / "demo-key.txt").read_text().strip()  # made by the first hub, in PostgreSQL
                listings = [_flat_files(hub, key) for hub in (follower, third)]
            finally:
                assert third.stop() == 0, third.output()
        finally:
            if leader.proc.poll() is None:
                leader.stop()
            if follower is not None:
                assert follower.stop() == 0, follower.output()
    assert len(rows) == len(everything)  # no tick twice (under another seq) and none lost
    assert sorted((i, ts) for i, ts, _ in rows) == sorted((t["id"], int(t["ts"] * 1000)) for t in everything)
    assert len({(i, seq) for i, _, seq in rows}) == len(rows)
    assert listings[0] == listings[1] and sum(f["rows"] for f in listings[0]) == len(everything), listings


def _flat_files(srv: ServerProcess, key: str) -> list[dict[str, Any]]:
    """The ticks' flat files of the week (SPEC 18: made by each hub from the one history, byte for byte alike)."""
    r = httpx.get(srv.base + "/api/v1/flatfiles", params={"dataset": "ticks", "from": "2026-11-16", "to": "2026-11-21"},
                  headers={"X-SERVICE-Key": key}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["files"]  # type: ignore[no-any-return]
