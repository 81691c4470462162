"""Issue 44 (SPEC 15, 18): after a restart, graceful or `kill -9`, every quote names its seq with the price that seq
was applied with, and its change and today's candle are those of the last tick the archive holds.

A JSON-lines feed of methanol, pta and pp ticks, several in one millisecond (the same instrument twice included)
and the next group 1 ms later, written at once (read in one batch or a few): the newest batch of the Redis tick
log holds several ticks of each instrument. The hub is stopped with SIGTERM once the feed went quiet and started
again on an emptied file (as the issue's FIFO: each line is read once), then fed more, killed with SIGKILL once
the archive holds every tick, and started again on the same file (read again from its start: nothing it
published is published again); each time the quotes (price, seq, change, today's candle, its 1m buckets) and the
stream's snapshot must be what they were before, and each (id, seq) they name must carry the price the archive
holds for it. Run on the Redis engine with PostgreSQL (the issue) and on the memory engine with the data dir's
SQLite (or PostgreSQL under MARKET_TEST_STORAGE=postgresql), on both runtimes.

Before the fix the Redis variants failed at the first restart with `methanol: the quote names seq 80 with 2470.0,
the archive's last tick is seq 80 at 2472.69`: the tick log's join took each instrument's first tick of the
newest batch (seq 1 here) instead of its last, and the hash's seq was put on it.

What another process does (apply the file, commit the archive, take the feed's lease) is awaited by polling its
answers with a deadline: nothing in this process to await.
"""

from __future__ import annotations

import json
import signal
import sqlite3
from contextlib import ExitStack
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from websockets.sync.client import connect

from server.market.timefmt import TZ
from tests.conftest import ServerProcess, database_flags, engine_variants
from tests.pg_service import pg_schema
from tests.poll import until as _until
from tests.redis_service import redis_prefix, require_redis

NOW = "2026-11-24T09:30:00+08:00"  # a Tuesday: ZCE and DCE in their morning session (hidden --clock-start)
IDS = ("methanol", "pta", "pp")
BASE = {"methanol": 2470.0, "pta": 4810.0, "pp": 7310.0}
MARKER = "urea"  # a tick of another ZCE instrument written after a restart: the new hub read the whole file
QUOTE_KEYS = ("price", "change", "changePct", "open", "high", "low", "volume", "prevClose", "seq", "updated",
              "tradingDay")
VARIANTS = [("granian", "redis"), ("robyn", "redis"), ("granian", "memory"), ("robyn", "memory")]


def _ticks(start: int, n: int, at: datetime) -> list[dict[str, Any]]:
    """Ticks `start` .. `start + n - 1`: four per millisecond (so every third group has one instrument twice),
    each group 1 ms after the last; every price different (37 and 500 are coprime)."""
    out = []
    for k in range(start, start + n):
        inst = IDS[k % 3]
        ts = at + timedelta(milliseconds=(k - start) // 4)
        out.append({"id": inst, "price": round(BASE[inst] + (k * 37 % 500) * 0.01, 2),
                    "ts": ts.isoformat(timespec="milliseconds"), "volume": 1 + k % 3})
    return out


def _lines(ticks: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(t) + "\n" for t in ticks)



class Archive:
    """The hub's tick archive as rows (id, seq) -> price: PostgreSQL's `archive_ticks` or the data dir's
    history.sqlite3."""

    def __init__(self, database: str | None, data_dir: Path) -> None:
        self.database, self.data_dir = database, data_dir

    def rows(self) -> dict[tuple[str, int], float]:
        if self.database is not None:
            try:
                with psycopg.connect(self.database, autocommit=True) as pg:
                    got = pg.execute("SELECT id, seq, price FROM archive_ticks").fetchall()
            except psycopg.errors.UndefinedTable:
                return {}
        else:
            path = self.data_dir / "history.sqlite3"
            if not path.exists():
                return {}
            conn = sqlite3.connect(path, timeout=10.0)
            try:
                got = conn.execute("SELECT id, seq, price FROM ticks").fetchall()
            except sqlite3.OperationalError:  # the table is not made yet
                return {}
            finally:
                conn.close()
        return {(inst, int(seq)): float(price) for inst, seq, price in got}

    def last(self, rows: dict[tuple[str, int], float]) -> dict[str, tuple[int, float]]:
        """Each instrument's newest tick in the archive: (seq, price)."""
        out: dict[str, tuple[int, float]] = {}
        for (inst, seq), price in rows.items():
            if seq > out.get(inst, (0, 0.0))[0]:
                out[inst] = (seq, price)
        return out


def _quote(srv: ServerProcess, inst: str) -> dict[str, Any]:
    r = httpx.get(f"{srv.base}/api/v1/quotes/{inst}", headers={"X-SERVICE-Key": srv.demo_key}, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _answers(srv: ServerProcess) -> dict[str, Any]:
    """What a client sees of the three instruments: the quote's price, seq, change and today's candle, and the 1m
    buckets of today."""
    out: dict[str, Any] = {}
    for inst in IDS:
        q = _quote(srv, inst)
        out[inst] = {k: q.get(k) for k in QUOTE_KEYS}
        out[f"{inst}-1m"] = httpx.get(f"{srv.base}/api/v1/kline/{inst}", headers={"X-SERVICE-Key": srv.demo_key},
                                      params={"interval": "1m", "limit": 1000}, timeout=10).json()["series"]
    return out


def _snapshot(srv: ServerProcess) -> dict[str, tuple[int, float]]:
    """The stream's snapshot on connecting: each instrument's (seq, price)."""
    with connect(f"{srv.ws_base}/ws/quotes", additional_headers={"X-SERVICE-Key": srv.demo_key},
                 open_timeout=10) as ws:
        while (msg := json.loads(ws.recv(timeout=10)))["type"] != "snapshot":
            pass
    prices = {q["id"]: q["price"] for q in msg["quotes"]}
    return {inst: (msg["seqs"][inst], prices[inst]) for inst in IDS}


def _check_named_right(srv: ServerProcess, archive: Archive, before: dict[str, Any]) -> None:
    """Every seq the hub names (quote and snapshot) with the price the archive holds for it; the answers as
    before the restart."""
    rows = archive.rows()
    last = archive.last(rows)
    after = _answers(srv)
    for inst in IDS:
        named = (after[inst]["seq"], after[inst]["price"])
        assert named == last[inst], (f"{inst}: the quote names seq {named[0]} with {named[1]}, the archive's last "
                                     f"tick is seq {last[inst][0]} at {last[inst][1]} (seq {named[0]} was applied "
                                     f"at {rows.get((inst, named[0]))})")
    snapshot = _snapshot(srv)
    for inst, (seq, price) in snapshot.items():
        assert rows.get((inst, seq)) == price, (f"{inst}: the snapshot names seq {seq} with {price}, applied at "
                                                f"{rows.get((inst, seq))}")
    assert after == before, (after, before)


@pytest.mark.parametrize("variant", engine_variants(VARIANTS))
def test_a_restart_names_each_seq_with_its_own_price(tmp_path: Path, variant: tuple[str, str]) -> None:
    runtime, engine = variant
    data = tmp_path / "data"
    feed = tmp_path / "ticks.jsonl"
    feed.write_text("")
    session = datetime(2026, 11, 24, 9, 10, tzinfo=TZ)
    first, second = _ticks(0, 240, session), _ticks(240, 240, session + timedelta(minutes=2))
    with ExitStack() as stack:
        if engine == "redis":
            url = require_redis()
            database: str | None = stack.enter_context(pg_schema())
            prefix = stack.enter_context(redis_prefix(url))
            flags: tuple[str, ...] = ("--engine", "redis", "--redis-url", url, "--redis-prefix", prefix,
                                      "--database-url", database or "")
        else:
            on_pg = database_flags(data)
            database = on_pg[1] if on_pg else None
            flags = ("--engine", "memory", *on_pg)
        flags += ("--feed", f"jsonl:{feed}", "--clock-start", NOW)
        archive = Archive(database, data)
        hubs: list[ServerProcess] = []

        def start() -> ServerProcess:
            hubs.append(ServerProcess(data, runtime, *flags))
            return hubs[-1]

        def fed(srv: ServerProcess, ticks: list[dict[str, Any]], expected: int) -> dict[str, Any]:
            """`ticks` written to the feed at once; once the archive holds all `expected` ticks and the hub has
            applied them, what it answers."""
            with feed.open("a") as fh:
                fh.write(_lines(ticks))
            assert _until(lambda: len(archive.rows()) >= expected), (len(archive.rows()), srv.output())
            last = archive.last(archive.rows())
            assert _until(lambda: all(_quote(srv, i)["seq"] == last[i][0] for i in IDS)), srv.output()
            answers = _answers(srv)
            for inst in IDS:  # the live hub names each seq right: the reference is sound
                assert (answers[inst]["seq"], answers[inst]["price"]) == last[inst], (inst, answers[inst], last)
            return answers

        def restarted(marker: int) -> ServerProcess:
            """A hub started again; it has read the feed file through: a marker tick (urea's seq `marker`) written
            after it started is applied and archived, so the file's older lines, if any, were handled before it
            and anything they published again is in the archive too (it commits in the order ticks applied)."""
            srv = start()
            with feed.open("a") as fh:
                fh.write(_lines([{"id": MARKER, "price": 2000.0 + marker, "ts": (session + timedelta(
                    minutes=10, seconds=marker)).isoformat(), "volume": 1}]))
            assert _until(lambda: _quote(srv, MARKER)["price"] == 2000.0 + marker), srv.output()
            assert _until(lambda: (MARKER, marker) in archive.rows()), srv.output()
            return srv

        try:
            hub = start()
            before = fed(hub, first, len(first))
            assert hub.stop() == 0, hub.output()  # graceful: SIGTERM once the feed went quiet
            feed.write_text("")  # as a FIFO would: the lines read are gone (the file kept: the SIGKILL below)
            hub = restarted(1)
            _check_named_right(hub, archive, before)
            assert len(archive.rows()) == len(first) + 1

            before = fed(hub, second, len(first) + 1 + len(second))
            hub.proc.send_signal(signal.SIGKILL)  # every tick is in the archive (committed) by now
            hub.proc.wait(10)
            hub = restarted(2)  # it reads the file again from its start: what was published is dropped
            _check_named_right(hub, archive, before)
            assert len(archive.rows()) == len(first) + len(second) + 2  # nothing of the file published again
            assert hub.stop() == 0, hub.output()
        finally:
            for srv in hubs:
                if srv.proc.poll() is None:
                    srv.stop()
