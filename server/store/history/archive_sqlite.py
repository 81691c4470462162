"""The history file on SQLite: the tick archive and the stored candles, in `history.sqlite3` in the data dir.

A file of its own, beside market.sqlite3: the archive's group commit every second must never hold the write
lock that keys, records and receipts wait for, and a full disk that stops the archive must not stop them.

Layout (chosen by measurement, bench/archive_layout.py and bench/README.md "Tick archive layout"):
`ticks` is WITHOUT ROWID with PRIMARY KEY (id, ts, seq): the rows of one instrument are stored in time order
in the primary key's b-tree itself (no second index to update), so a range read of one instrument is one
b-tree walk and an append of a second of ticks touches each instrument's right edge only. `history_ids` lists
the instruments held, so per-instrument work (prune, flat files) never scans the table for them. Candles
live in one table per interval (`bars_1m` ... `bars_1d`), WITHOUT ROWID with PRIMARY KEY (id, t): a page of a
range query is one b-tree walk, and a bulk import inserts ~20% faster than into one table keyed by interval too.

Durability: WAL with synchronous=NORMAL. A committed transaction survives a killed process (`kill -9`): it is
in the WAL, which the next open replays; a power loss may lose the last commits (never corrupts the file).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from server.store.history.archive import DetailedTick, Tick, with_detail

HISTORY_DB = "history.sqlite3"
READ_CHUNK = 5000  # rows fetched at a time by a streamed read
PRUNE_STEP_MS = 3_600_000  # ticks are deleted an hour of one instrument per transaction

HISTORY_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS ticks (id TEXT NOT NULL, ts INTEGER NOT NULL, seq INTEGER NOT NULL, "
    "price REAL NOT NULL, volume REAL NOT NULL, detail TEXT, PRIMARY KEY (id, ts, seq)) WITHOUT ROWID",
    *(f"CREATE TABLE IF NOT EXISTS bars_{interval} (id TEXT NOT NULL, t INTEGER NOT NULL, o REAL NOT NULL, "
      "h REAL NOT NULL, l REAL NOT NULL, c REAL NOT NULL, v REAL NOT NULL, PRIMARY KEY (id, t)) WITHOUT ROWID"
      for interval in ("1m", "5m", "15m", "1h", "1d")),
    "CREATE TABLE IF NOT EXISTS history_ids (id TEXT PRIMARY KEY) WITHOUT ROWID",
)


def open_history(data_dir: Path, readonly: bool = False) -> sqlite3.Connection:
    """A connection to the history file (created with its tables on first use). One thread uses it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(data_dir / HISTORY_DB, isolation_level=None, check_same_thread=False, timeout=10.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=10000")
    if readonly:
        conn.execute("PRAGMA query_only=ON")
    else:
        with write_tx(conn):
            for statement in HISTORY_SCHEMA:
                conn.execute(statement)
            migrate_history(conn)
    return conn


def migrate_history(conn: sqlite3.Connection) -> None:
    """A history file made before a column existed gets it (in the caller's transaction): `ticks.detail` (SPEC 19,
    a futures tick's detail; NULL in the rows written before, which replay as price and volume only)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(ticks)")}
    if "detail" not in columns:
        conn.execute("ALTER TABLE ticks ADD COLUMN detail TEXT")


@contextmanager
def write_tx(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT; on an error, roll back if SQLite has not already (it does itself after
    SQLITE_FULL), so the connection is usable for the retry."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def note_ids(conn: sqlite3.Connection, ids: Iterable[str]) -> None:
    conn.executemany("INSERT OR IGNORE INTO history_ids (id) VALUES (?)", [(i,) for i in set(ids)])


def held_ids(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT id FROM history_ids ORDER BY id")]


def file_bytes(data_dir: Path) -> int:
    return sum(p.stat().st_size for p in data_dir.glob(HISTORY_DB + "*") if p.is_file())


class SqliteTickArchive:
    """`TickArchive` over one connection to the history file."""

    def __init__(self, data_dir: Path, readonly: bool = False) -> None:
        self.data_dir = data_dir
        self.conn = open_history(data_dir, readonly)

    def append(self, ticks: Sequence[Tick | DetailedTick]) -> None:
        with write_tx(self.conn):
            self.conn.executemany("INSERT OR IGNORE INTO ticks (id, ts, seq, price, volume, detail) "
                                  "VALUES (?, ?, ?, ?, ?, ?)", with_detail(ticks))
            note_ids(self.conn, (t[0] for t in ticks))

    def read(self, inst: str, start_ms: int, end_ms: int) -> Iterator[Tick]:
        cur = self.conn.execute("SELECT id, ts, seq, price, volume FROM ticks WHERE id = ? AND ts >= ? AND ts < ? "
                                "ORDER BY ts, seq", (inst, start_ms, end_ms))
        try:
            while rows := cur.fetchmany(READ_CHUNK):
                yield from rows
        finally:
            cur.close()

    def read_detailed(self, inst: str, start_ms: int, end_ms: int) -> Iterator[DetailedTick]:
        cur = self.conn.execute("SELECT id, ts, seq, price, volume, detail FROM ticks WHERE id = ? AND ts >= ? "
                                "AND ts < ? ORDER BY ts, seq", (inst, start_ms, end_ms))
        try:
            while rows := cur.fetchmany(READ_CHUNK):
                yield from rows
        finally:
            cur.close()

    def instruments(self) -> list[str]:
        return held_ids(self.conn)

    def last(self) -> tuple[int, int] | None:
        best: tuple[int, int] | None = None
        for inst in self.instruments():  # the newest of each instrument: one b-tree descent each
            row = self.conn.execute("SELECT ts, seq FROM ticks WHERE id = ? ORDER BY ts DESC, seq DESC LIMIT 1",
                                    (inst,)).fetchone()
            if row is not None and (best is None or tuple(row) > best):
                best = (row[0], row[1])
        return best

    def earliest(self, inst: str) -> int | None:
        row = self.conn.execute("SELECT MIN(ts) FROM ticks WHERE id = ?", (inst,)).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def prune(self, before_ms: int) -> int:
        deleted = 0
        for inst in self.instruments():
            first = self.earliest(inst)
            while first is not None and first < before_ms:  # an hour per transaction: short write-lock holds
                upto = min(before_ms, first + PRUNE_STEP_MS)
                with write_tx(self.conn):
                    deleted += self.conn.execute("DELETE FROM ticks WHERE id = ? AND ts < ?", (inst, upto)).rowcount
                first = self.earliest(inst)
        return deleted

    def size_bytes(self) -> int:
        return file_bytes(self.data_dir)

    def close(self) -> None:
        self.conn.close()
