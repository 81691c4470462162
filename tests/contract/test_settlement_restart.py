"""Issue 39: a live feed's futures board survives a restart, `kill -9` included (SPEC 18 and 19), on SQLite and on
PostgreSQL (skipped without it unless MARKET_REQUIRE_SERVICES=1).

The hub runs on a fake clock (hidden --clock-start) on Wednesday 2026-11-25 at 14:57 in Shanghai; its feed's lines
carry the book, open interest, a published settlement and limits over two trading days: Wednesday's session, then
lines stamped 15:01 (Thursday's trading day at ZCE and DCE), which settle Wednesday at once. The hub is killed with
SIGKILL and started again on the same data dir: Wednesday's settlement and open interest come from storage
(`settlements_1d`), Thursday's board from the archived ticks' detail, so every quote field and daily candle
answers as before. A data dir (and a PostgreSQL schema) made before the change opens and works too.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.store.history.archive_sqlite import HISTORY_DB
from server.store.sql.db import open_db
from server.store.sql.pg import connect, migrate
from server.store.sql.schema import MIGRATIONS
from tests import poll
from tests.conftest import ServerProcess, sqlite_only
from tests.pg_service import QmarkConnection, pg_schema

CLOCK_START = "2026-11-25T14:57:00+08:00"  # a Wednesday, ZCE and DCE in session until 15:00
AFTER_CLOSE = "2026-11-25T15:02:00+08:00"  # the restart: Thursday's trading day (Wednesday closed)
IDS = ("methanol", "pp")
BOARD = ("price", "prevClose", "prevSettle", "settle", "change", "changePct", "openInterest", "oiChange", "bid",
         "ask", "bidSize", "askSize", "volume", "turnover", "limitUp", "limitDown", "seq", "tradingDay")
MEMORY = ("--engine", "memory")  # the archive of one hub (the Redis engine's lease holder: test_archive_redis.py)


def ts(hhmmss: str) -> str:
    return f"2026-11-25T{hhmmss}+08:00"


LINES: list[dict[str, Any]] = [
    # Wednesday: methanol settles by its rule (the day's VWAP, (2400*10 + 2410*30) / 40 = 2407.5 -> 2408),
    # pp at the settlement the feed published
    {"id": "methanol", "price": 2400, "volume": 10, "ts": ts("14:50:00"), "bid": 2399, "ask": 2401, "oi": 1000},
    {"id": "methanol", "price": 2410, "volume": 30, "ts": ts("14:51:00"), "bid": 2409, "ask": 2411,
     "bidSize": 5, "askSize": 7, "oi": 1010},
    {"id": "pp", "price": 7000, "volume": 10, "ts": ts("14:50:00"), "settle": 6990, "oi": 500},
    # Thursday (15:01: after ZCE's and DCE's close): the book, open interest, a running volume, published limits
    # and a published settlement of the live day
    {"id": "methanol", "price": 2420, "volume": 2, "ts": ts("15:01:00"), "oi": 1012, "bid": 2419, "ask": 2421,
     "bidSize": 6, "askSize": 2},
    {"id": "pp", "price": 7001, "volume": 1, "ts": ts("15:01:00"), "bid": 7000, "ask": 7002, "oi": 505,
     "limitUp": 7400, "limitDown": 6600},
    {"id": "methanol", "price": 2415, "cumVolume": 10, "ts": ts("15:01:03"), "oi": 1015, "bid": 2414, "ask": 2416},
    {"id": "pp", "price": 7003, "volume": 4, "ts": ts("15:01:04"), "settle": 6995, "bidSize": 9, "askSize": 1},
]


_until = partial(poll.until, timeout=15.0)  # this module's wait and polling interval


def _metric(srv: ServerProcess, name: str) -> float:
    for line in httpx.get(srv.base + "/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return -1.0


def _answers(srv: ServerProcess) -> dict[str, Any]:
    h = {"X-SERVICE-Key": srv.demo_key}
    out: dict[str, Any] = {}
    for inst in IDS:
        q = httpx.get(f"{srv.base}/api/v1/quotes/{inst}", headers=h).json()
        out[inst] = {k: q.get(k) for k in BOARD}
        out[f"{inst}-1d"] = httpx.get(f"{srv.base}/api/v1/kline/{inst}", headers=h,
                                      params={"interval": "1d", "limit": 3}).json()["series"]
    return out


@contextlib.contextmanager
def _storage(kind: str) -> Iterator[tuple[str, ...]]:
    if kind == "sqlite":
        yield ()
    else:
        with pg_schema() as url:
            yield ("--database-url", url)


def _db(data: Path, flags: tuple[str, ...]) -> sqlite3.Connection | QmarkConnection:
    return QmarkConnection(flags[1]) if flags else sqlite3.connect(data / "market.sqlite3", timeout=10.0)


def _settled(data: Path, flags: tuple[str, ...], day: str) -> list[tuple[Any, ...]]:
    conn = _db(data, flags)
    try:
        return [tuple(r) for r in conn.execute("SELECT instrument, oi, s FROM settlements_1d WHERE day = ? "
                                               "ORDER BY instrument", (day,))]
    finally:
        conn.close()


@pytest.mark.parametrize("storage", [pytest.param("sqlite", marks=sqlite_only), "postgresql"])
def test_the_board_survives_kill_9(tmp_path: Path, storage: str) -> None:
    feed, data = tmp_path / "ticks.jsonl", tmp_path / "data"
    feed.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    with _storage(storage) as flags:
        srv = ServerProcess(data, "granian", "--feed", f"jsonl:{feed}", "--clock-start", CLOCK_START, *MEMORY,
                            *flags)
        try:
            assert _until(lambda: _metric(srv, "market_archive_committed_ticks") == len(LINES)), srv.output()
            # Wednesday's candles were written when the products' day moved on (the keeper: off the loop)
            assert _until(lambda: _settled(data, flags, "2026-11-25") == [("methanol", 1010.0, 2408.0),
                                                                          ("pp", 500.0, 6990.0)]), srv.output()
            before = _answers(srv)
            srv.proc.send_signal(signal.SIGKILL)
            srv.proc.wait(10)
        finally:
            srv.kill()
        m, pp = before["methanol"], before["pp"]
        assert (m["prevSettle"], m["change"], m["price"], m["settle"]) == (2408.0, 7.0, 2415.0, None)
        assert (m["openInterest"], m["oiChange"], m["bid"], m["ask"], m["volume"]) == (1015, 5, 2414.0, 2416.0, 10)
        assert (m["bidSize"], m["askSize"], m["limitDown"], m["limitUp"]) == (6, 2, 2240.0, 2576.0)
        assert (pp["prevSettle"], pp["settle"], pp["change"], pp["openInterest"]) == (6990.0, 6995.0, 13.0, 505)
        assert (pp["bid"], pp["ask"], pp["bidSize"], pp["askSize"]) == (7000.0, 7002.0, 9, 1)
        assert (pp["limitDown"], pp["limitUp"]) == (6600.0, 7400.0)
        assert [(c["t"], c["oi"], c["s"]) for c in before["methanol-1d"]] == [
            ("2026-11-25", 1010, 2408.0), ("2026-11-26", 1015, None)]
        assert [(c["t"], c["oi"], c["s"]) for c in before["pp-1d"]] == [
            ("2026-11-25", 500, 6990.0), ("2026-11-26", 505, 6995.0)]

        feed.write_text("")  # nothing new: everything after the restart comes from storage and the archive
        again = ServerProcess(data, "granian", "--feed", f"jsonl:{feed}", "--clock-start", AFTER_CLOSE, *MEMORY,
                              *flags)
        try:
            assert _answers(again) == before
            assert "replayed 4 archived ticks" in again.output(), again.output()  # Thursday's: Wednesday's stored
        finally:
            assert again.stop() == 0, again.output()


@pytest.mark.parametrize("storage", [pytest.param("sqlite", marks=sqlite_only), "postgresql"])
def test_a_hub_down_over_the_close_settles_the_day_from_the_archive(tmp_path: Path, storage: str) -> None:
    """Wednesday's hub is killed in session (nothing of Wednesday stored but its archived ticks); started after the
    close, it settles Wednesday as a hub running at the close would have (methanol by its rule, pp at the published
    settlement, each with the day's last open interest), so Thursday's prevSettle, limits and oiChange are known."""
    feed, data = tmp_path / "ticks.jsonl", tmp_path / "data"
    feed.write_text("".join(json.dumps(line) + "\n" for line in LINES[:3]))
    with _storage(storage) as flags:
        srv = ServerProcess(data, "granian", "--feed", f"jsonl:{feed}", "--clock-start", CLOCK_START, *MEMORY,
                            *flags)
        try:
            assert _until(lambda: _metric(srv, "market_archive_committed_ticks") == 3), srv.output()
            srv.proc.send_signal(signal.SIGKILL)
            srv.proc.wait(10)
        finally:
            srv.kill()
        assert _settled(data, flags, "2026-11-25") == []
        feed.write_text("".join(json.dumps(line) + "\n" for line in LINES[3:5]))
        again = ServerProcess(data, "granian", "--feed", f"jsonl:{feed}", "--clock-start", AFTER_CLOSE, *MEMORY,
                              *flags)
        try:
            assert _until(lambda: _answers(again)["pp"]["price"] == 7001.0), again.output()
            after = _answers(again)
            assert "settled 2 futures trading days" in again.output(), again.output()
        finally:
            assert again.stop() == 0, again.output()
        m, pp = after["methanol"], after["pp"]
        assert (m["prevSettle"], m["change"], m["openInterest"], m["oiChange"]) == (2408.0, 12.0, 1012, 2)
        assert (m["limitDown"], m["limitUp"], pp["prevSettle"], pp["change"]) == (2240.0, 2576.0, 6990.0, 11.0)
        assert [(c["t"], c["oi"], c["s"]) for c in after["methanol-1d"]] == [
            ("2026-11-25", 1010, 2408.0), ("2026-11-26", 1012, None)]
        assert _settled(data, flags, "2026-11-25") == [("methanol", 1010.0, 2408.0), ("pp", 500.0, 6990.0)]


OLD_TICKS_SQLITE = ("CREATE TABLE ticks (id TEXT NOT NULL, ts INTEGER NOT NULL, seq INTEGER NOT NULL, "
                    "price REAL NOT NULL, volume REAL NOT NULL, PRIMARY KEY (id, ts, seq)) WITHOUT ROWID")
OLD_TICKS_PG = ("CREATE TABLE archive_ticks (id text NOT NULL, ts bigint NOT NULL, seq bigint NOT NULL, "
                "price double precision NOT NULL, volume double precision NOT NULL, PRIMARY KEY (id, ts, seq)) "
                "PARTITION BY RANGE (ts)")
WEDNESDAY_MS = 1795564800000  # 2026-11-25T00:00:00Z: the archive partition of that UTC day
OLD_TICK = ("methanol", 1795589400000, 1, 2390.0, 4.0)  # 14:50 Shanghai on Wednesday, archived without a detail


def _old_data_dir(data: Path, flags: tuple[str, ...]) -> None:
    """The schema as it was before issue 39's durable board: no `settlements_1d`, no `detail` in the archive; one
    tick of Wednesday's session in the archive."""
    if not flags:
        open_db(data).close()
        conn = sqlite3.connect(data / "market.sqlite3")
        conn.execute("DROP TABLE settlements_1d")
        conn.close()
        history = sqlite3.connect(data / HISTORY_DB)
        history.execute(OLD_TICKS_SQLITE)
        history.execute("CREATE TABLE history_ids (id TEXT PRIMARY KEY) WITHOUT ROWID")
        history.execute("INSERT INTO ticks VALUES (?, ?, ?, ?, ?)", OLD_TICK)
        history.execute("INSERT INTO history_ids VALUES ('methanol')")
        history.commit()
        history.close()
        return
    with connect(flags[1]) as conn:
        migrate(conn)
        conn.execute("DROP TABLE settlements_1d")
        version = next(v for v, name, _ in MIGRATIONS if name.startswith("futures daily open interest"))
        conn.execute("DELETE FROM schema_migrations WHERE version = %s", (version,))
        conn.execute(OLD_TICKS_PG)
        conn.execute(f"CREATE TABLE archive_ticks_p20261125 PARTITION OF archive_ticks FOR VALUES FROM "
                     f"({WEDNESDAY_MS}) TO ({WEDNESDAY_MS + 86_400_000})")
        conn.execute("CREATE TABLE history_ids (id text PRIMARY KEY)")
        conn.execute("INSERT INTO archive_ticks VALUES (%s, %s, %s, %s, %s)", OLD_TICK)
        conn.execute("INSERT INTO history_ids VALUES ('methanol')")


@pytest.mark.parametrize("storage", [pytest.param("sqlite", marks=sqlite_only), "postgresql"])
def test_a_data_dir_from_before_opens_and_keeps_the_board(tmp_path: Path, storage: str) -> None:
    """The tables and the column are added at start; the old tick replays as price and volume only, the new ones
    with their detail, and Wednesday's settlement is stored in the new table."""
    feed, data = tmp_path / "ticks.jsonl", tmp_path / "data"
    data.mkdir()
    feed.write_text("".join(json.dumps(line) + "\n" for line in LINES[1:3]))
    with _storage(storage) as flags:
        _old_data_dir(data, flags)
        args = ("--feed", f"jsonl:{feed}", "--clock-start", CLOCK_START, *MEMORY, *flags)
        srv = ServerProcess(data, "granian", *args)
        try:
            h = {"X-SERVICE-Key": srv.demo_key}
            q = _until(lambda: (q := httpx.get(f"{srv.base}/api/v1/quotes/methanol", headers=h).json())["seq"] == 2
                       and q)
            assert q and (q["open"], q["price"], q["volume"], q["bid"], q["openInterest"]) == (2390.0, 2410.0, 34,
                                                                                             2409.0, 1010), q
            assert _until(lambda: _metric(srv, "market_archive_committed_ticks") == 2), srv.output()
        finally:
            assert srv.stop() == 0, srv.output()
        assert _settled(data, flags, "2026-11-25") == [("methanol", 1010.0, None), ("pp", 500.0, 6990.0)]
        feed.write_text("".join(json.dumps(line) + "\n" for line in LINES[3:5]))  # Thursday: Wednesday settles
        again = ServerProcess(data, "granian", *args)
        try:
            h = {"X-SERVICE-Key": again.demo_key}
            q = _until(lambda: (q := httpx.get(f"{again.base}/api/v1/quotes/methanol", headers=h).json())["seq"] == 3
                       and q)
            # the replay of Wednesday (the old tick without a detail, the new one with it), then Thursday's line:
            # VWAP (2390*4 + 2410*30) / 34 = 2407.6 -> 2408
            assert q and (q["prevSettle"], q["openInterest"], q["oiChange"], q["bid"]) == (2408.0, 1012, 2, 2419.0), q
        finally:
            assert again.stop() == 0, again.output()
        assert _settled(data, flags, "2026-11-25") == [("methanol", 1010.0, 2408.0), ("pp", 500.0, 6990.0)]
