"""The `availability_minutes` table: its schema on both databases and its synchronous repository over a `Db`.

One row per (minute, hub). A hub writes the minute it starts (its heartbeat: zeros) as soon as it starts and at each
minute's start, and a finished minute's counts when it ends; a row already there (the heartbeat, or a restart of the
same hub within the minute) is added to, never replaced, in the write's transaction. Latency and feed-to-frame
buckets are stored as their counts (comma-separated), so a month's percentiles come from the merged buckets; the
minute's own p50/p95/p99 and feed p99 are stored beside them (seconds) for anyone reading the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from server.core.availability import MinuteRecord, percentile
from server.core.metrics import LATENCY_BUCKETS
from server.store.accounts.console import Db

SQLITE_TABLE = """CREATE TABLE IF NOT EXISTS availability_minutes (
    minute INTEGER NOT NULL,
    hub TEXT NOT NULL,
    requests INTEGER NOT NULL DEFAULT 0,
    errors INTEGER NOT NULL DEFAULT 0,
    latency TEXT NOT NULL DEFAULT '',
    p50 REAL, p95 REAL, p99 REAL,
    frames INTEGER NOT NULL DEFAULT 0,
    feed TEXT NOT NULL DEFAULT '',
    feed_p99 REAL,
    samples INTEGER NOT NULL DEFAULT 0,
    outages TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (minute, hub)
)"""

PG_MIGRATION = """
CREATE TABLE availability_minutes (
    minute bigint NOT NULL,
    hub text NOT NULL,
    requests bigint NOT NULL DEFAULT 0,
    errors bigint NOT NULL DEFAULT 0,
    latency text NOT NULL DEFAULT '',
    p50 double precision, p95 double precision, p99 double precision,
    frames bigint NOT NULL DEFAULT 0,
    feed text NOT NULL DEFAULT '',
    feed_p99 double precision,
    samples integer NOT NULL DEFAULT 0,
    outages text NOT NULL DEFAULT '{}',
    PRIMARY KEY (minute, hub)
);
"""

COLUMNS = "minute, hub, requests, errors, latency, p50, p95, p99, frames, feed, feed_p99, samples, outages"
UPSERT = (f"INSERT INTO availability_minutes ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
          "ON CONFLICT (minute, hub) DO UPDATE SET requests = excluded.requests, errors = excluded.errors, "
          "latency = excluded.latency, p50 = excluded.p50, p95 = excluded.p95, p99 = excluded.p99, "
          "frames = excluded.frames, feed = excluded.feed, feed_p99 = excluded.feed_p99, "
          "samples = excluded.samples, outages = excluded.outages")


def _text(buckets: list[int]) -> str:
    return ",".join(map(str, buckets))


def _buckets(text: str) -> list[int]:
    return [int(n) for n in text.split(",")] if text else []


def record_of(row: dict[str, Any]) -> MinuteRecord:
    return MinuteRecord(row["hub"], int(row["minute"]), int(row["requests"]), int(row["errors"]),
                        _buckets(row["latency"]), int(row["frames"]), _buckets(row["feed"]), int(row["samples"]),
                        orjson.loads(row["outages"]))


def row_of(r: MinuteRecord) -> tuple[Any, ...]:
    bounds = LATENCY_BUCKETS
    return (r.minute, r.hub, r.requests, r.errors, _text(r.latency), percentile(r.latency, bounds, 0.5),
            percentile(r.latency, bounds, 0.95), percentile(r.latency, bounds, 0.99), r.frames, _text(r.feed),
            percentile(r.feed, bounds, 0.99), r.samples, orjson.dumps(r.outages).decode())


class MinutesRepo:
    def __init__(self, db: Db) -> None:
        self.db = db

    def add(self, records: Sequence[MinuteRecord]) -> None:
        """Add each record to its (minute, hub) row, made if missing; one transaction."""
        merged: dict[tuple[int, str], MinuteRecord] = {}
        for r in records:
            key = (r.minute, r.hub)
            if key in merged:
                merged[key].add(r)
            else:
                merged[key] = MinuteRecord(r.hub, r.minute)
                merged[key].add(r)
        with self.db.transaction():
            for (minute, hub), r in merged.items():
                for row in self.db.rows(f"SELECT {COLUMNS} FROM availability_minutes WHERE minute = ? AND hub = ?",
                                        (minute, hub)):
                    r.add(record_of(row))
            self.db.many(UPSERT, [row_of(r) for r in merged.values()])

    def between(self, first: int, end: int) -> list[MinuteRecord]:
        """Every hub's rows of minutes [first, end)."""
        rows = self.db.rows(f"SELECT {COLUMNS} FROM availability_minutes WHERE minute >= ? AND minute < ? "
                            "ORDER BY minute, hub", (first, end))
        return [record_of(row) for row in rows]

    def first_minute(self) -> int | None:
        """The earliest minute any hub recorded: the data dir's first start (since availability is recorded)."""
        rows = self.db.rows("SELECT MIN(minute) AS first FROM availability_minutes")
        first = rows[0]["first"] if rows else None
        return None if first is None else int(first)
