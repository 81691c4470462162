"""The evidence log and its ledger in SQLite (`?` placeholders, `INSERT OR IGNORE`, BEGIN IMMEDIATE).

The logic is database-free (log.py `MerkleLog`, ledger.py `HashChain`); these give it SQLite's SQL.
PostgreSQL's counterparts are in server/store/sql/pg_sync.py. One instance per connection, one connection per thread.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager

from server.evidence.ledger import Block, BlockRow, HashChain, Ledger, block_values
from server.evidence.log import MerkleLog
from server.store.sql.schema import EVIDENCE_BLOCKS_SQLITE, EVIDENCE_LOG_SQLITE
from server.store.sql.sqlite_tx import joined_transaction, transaction


class LocalLedger(HashChain):
    """Hash-chained blocks in the caller's SQLite connection (one connection per thread)."""

    def __init__(self, conn: sqlite3.Connection, *, schema: bool = True) -> None:
        self.conn = conn
        if schema:
            conn.execute(EVIDENCE_BLOCKS_SQLITE)

    def write_transaction(self) -> AbstractContextManager[object]:
        return joined_transaction(self.conn)

    def last_block(self) -> tuple[int, str] | None:
        row = self.conn.execute("SELECT height, block_hash FROM evidence_blocks ORDER BY height DESC LIMIT 1"
                                ).fetchone()
        return (row[0], row[1]) if row else None

    def insert_block(self, b: Block) -> None:
        self.conn.execute(f"INSERT INTO evidence_blocks ({self.COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                          block_values(b))

    def block_row(self, height: int) -> BlockRow | None:
        row = self.conn.execute(f"SELECT {self.COLUMNS} FROM evidence_blocks WHERE height = ?", (height,)).fetchone()
        return tuple(row) if row else None  # type: ignore[return-value]

    def block_rows(self) -> Iterable[BlockRow]:
        return self.conn.execute(f"SELECT {self.COLUMNS} FROM evidence_blocks ORDER BY height")


class EvidenceLog(MerkleLog):
    """The log in a SQLite connection. Its single writer makes a submit's MAX(idx)+1 atomic."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        ledger: Ledger | None = None,
        clock: Callable[[], float] = time.time,
        *,
        schema: bool = True,
    ) -> None:
        """`schema=False` skips the CREATE TABLE IF NOT EXISTS statements (a read-only connection)."""
        self.conn = conn
        if schema:
            for stmt in EVIDENCE_LOG_SQLITE:
                conn.execute(stmt)
        super().__init__(ledger if ledger is not None else LocalLedger(conn, schema=schema), clock)

    def insert_leaf(self, h: str, ts: float) -> int | None:
        self.conn.execute(  # one autocommit statement: MAX(idx)+1 is atomic under SQLite's write lock
            "INSERT OR IGNORE INTO evidence_leaves (idx, hash, submitted_at, batch) "
            "VALUES ((SELECT COALESCE(MAX(idx) + 1, 0) FROM evidence_leaves), ?, ?, NULL)", (h, ts))
        row = self.conn.execute("SELECT batch FROM evidence_leaves WHERE hash = ?", (h,)).fetchone()
        return row[0]  # type: ignore[no-any-return]

    def anchoring(self) -> AbstractContextManager[object]:
        return transaction(self.conn)

    def pending_leaves(self, limit: int | None) -> list[tuple[int, str]]:
        rows = self.conn.execute("SELECT idx, hash FROM evidence_leaves WHERE batch IS NULL ORDER BY idx LIMIT ?",
                                 (-1 if limit is None else limit,)).fetchall()  # LIMIT -1: no limit
        return [(r[0], r[1]) for r in rows]

    def count_leaves(self, anchored: bool) -> int:
        sql = "SELECT COUNT(*) FROM evidence_leaves WHERE batch IS " + ("NOT NULL" if anchored else "NULL")
        return int(self.conn.execute(sql).fetchone()[0])

    def insert_nodes(self, rows: list[tuple[int, int, str]]) -> None:
        self.conn.executemany("INSERT INTO evidence_nodes (level, pos, hash) VALUES (?, ?, ?)", rows)

    def set_batch(self, height: int, below: int) -> None:
        self.conn.execute("UPDATE evidence_leaves SET batch = ? WHERE batch IS NULL AND idx < ?", (height, below))

    def leaf_hash_at(self, idx: int) -> str | None:
        row = self.conn.execute("SELECT hash FROM evidence_leaves WHERE idx = ?", (idx,)).fetchone()
        return None if row is None else row[0]  # type: ignore[no-any-return]

    def node_hash_at(self, level: int, pos: int) -> str | None:
        row = self.conn.execute("SELECT hash FROM evidence_nodes WHERE level = ? AND pos = ?", (level, pos)).fetchone()
        return None if row is None else row[0]  # type: ignore[no-any-return]

    def leaf(self, h: str) -> tuple[int, int | None] | None:
        row = self.conn.execute("SELECT idx, batch FROM evidence_leaves WHERE hash = ?", (h,)).fetchone()
        return None if row is None else (row[0], row[1])
