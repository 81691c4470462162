"""Closed candles of every interval (1m, 5m, 15m, 1h, 1d), stored as their buckets close (SPEC 18).

A bar is `(id, t, o, h, l, c, v)` with `t` the bucket's start in epoch ms (for 1d: the start of the trading
day, as the caller's `bucket_start` says). `CandleStore` is one connection's view, used by one thread like the
archive (SQLite: the tables `bars_1m` ... `bars_1d` of the history file, store/history/archive_sqlite.py; PostgreSQL:
store/history/archive_pg.py). Writes are upserts: storing a bucket again (a restart, a re-run import) replaces it.

`range` pages forward from `start` (SPEC 14 `from`): the earliest `limit` bars with start <= t < end and the `t`
of the first bar left out as `next`; `latest` answers a range without `from` (the latest `limit` before `end`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from server.store.history.archive_sqlite import note_ids, open_history, write_tx

INTERVALS = ("1m", "5m", "15m", "1h", "1d")
Bar = tuple[str, int, float, float, float, float, float]  # id, t (ms), o, h, l, c, v
CHUNK = 10_000  # bars per write transaction: an import never holds the write lock for long


@dataclass(frozen=True)
class Page:
    rows: list[Bar]  # ascending t
    next: int | None  # t of the first bar of the range left out (pass it as the next start), None: none left


def table(interval: str) -> str:
    """The interval's table (`bars_1m` ...): the name is built only from a checked interval."""
    return f"bars_{check_interval(interval)}"


def check_interval(interval: str) -> str:
    if interval not in INTERVALS:
        raise ValueError(f"unknown interval {interval!r} (one of {', '.join(INTERVALS)})")
    return interval


class CandleStore(Protocol):
    def put_closed(self, interval: str, rows: Sequence[Bar]) -> None:
        """Store closed bars of `interval` (upsert), `CHUNK` rows per transaction."""

    def range(self, interval: str, inst: str, start: int, end: int, limit: int) -> Page:
        """The earliest `limit` bars with start <= t < end, and `next`."""

    def latest(self, interval: str, inst: str, end: int, limit: int) -> list[Bar]:
        """The latest `limit` bars with t < end, ascending."""

    def earliest(self, interval: str, inst: str) -> int | None:
        """t of the first bar held, or None."""

    def read_all(self, interval: str, start: int, end: int) -> Iterator[Bar]:
        """Every instrument's bars with start <= t < end, by (id, t); streamed (flat files)."""

    def prune(self, interval: str, before: int) -> int:
        """Delete the bars with t < before; returns how many went."""

    def close(self) -> None: ...


def check_limit(limit: int) -> int:
    if limit < 1:
        raise ValueError("limit must be >= 1")
    return limit


def page_of(rows: list[Bar], limit: int) -> Page:
    """`rows` holds up to limit + 1 bars: the extra one names `next`."""
    if len(rows) > limit:
        return Page(rows[:limit], rows[limit][1])
    return Page(rows, None)


class SqliteCandleStore:
    """`CandleStore` over one connection to the history file."""

    def __init__(self, data_dir: Path, readonly: bool = False) -> None:
        self.conn = open_history(data_dir, readonly)

    def put_closed(self, interval: str, rows: Sequence[Bar]) -> None:
        sql = f"INSERT OR REPLACE INTO {table(interval)} (id, t, o, h, l, c, v) VALUES (?, ?, ?, ?, ?, ?, ?)"
        for at in range(0, len(rows), CHUNK):
            chunk = rows[at:at + CHUNK]
            with write_tx(self.conn):
                self.conn.executemany(sql, chunk)
                note_ids(self.conn, (r[0] for r in chunk))

    def range(self, interval: str, inst: str, start: int, end: int, limit: int) -> Page:
        rows = self.conn.execute(f"SELECT id, t, o, h, l, c, v FROM {table(interval)} WHERE id = ? AND t >= ? "
                                 "AND t < ? ORDER BY t LIMIT ?", (inst, start, end, check_limit(limit) + 1)).fetchall()
        return page_of(_bars(rows), limit)

    def latest(self, interval: str, inst: str, end: int, limit: int) -> list[Bar]:
        rows = self.conn.execute(f"SELECT id, t, o, h, l, c, v FROM {table(interval)} WHERE id = ? AND t < ? "
                                 "ORDER BY t DESC LIMIT ?", (inst, end, check_limit(limit))).fetchall()
        return _bars(reversed(rows))

    def earliest(self, interval: str, inst: str) -> int | None:
        row = self.conn.execute(f"SELECT MIN(t) FROM {table(interval)} WHERE id = ?", (inst,)).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def read_all(self, interval: str, start: int, end: int) -> Iterator[Bar]:
        name = table(interval)
        for inst in [r[0] for r in self.conn.execute("SELECT id FROM history_ids ORDER BY id")]:
            cur = self.conn.execute(f"SELECT id, t, o, h, l, c, v FROM {name} WHERE id = ? AND t >= ? AND t < ? "
                                    "ORDER BY t", (inst, start, end))
            while rows := cur.fetchmany(5000):
                yield from _bars(rows)

    def prune(self, interval: str, before: int) -> int:
        name = table(interval)
        deleted = 0
        for inst in [r[0] for r in self.conn.execute("SELECT id FROM history_ids")]:
            with write_tx(self.conn):
                deleted += self.conn.execute(f"DELETE FROM {name} WHERE id = ? AND t < ?", (inst, before)).rowcount
        return deleted

    def close(self) -> None:
        self.conn.close()


def _bars(rows: Iterable[sqlite3.Row | tuple]) -> list[Bar]:
    return [(r[0], int(r[1]), r[2], r[3], r[4], r[5], r[6]) for r in rows]
