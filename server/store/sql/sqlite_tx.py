"""SQLite connections: settings and transactions (the repositories' building blocks; server/store/sql/db.py opens)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


def configure(conn: sqlite3.Connection) -> None:
    """Row access by name, WAL, and a 10 s wait for the write lock (CLI imports hold it one chunk at a time)."""
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=10000")


@contextmanager
def transaction(conn: sqlite3.Connection, begin: str = "BEGIN IMMEDIATE") -> Iterator[sqlite3.Connection]:
    conn.execute(begin)
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextmanager
def joined_transaction(conn: sqlite3.Connection, begin: str = "BEGIN IMMEDIATE") -> Iterator[sqlite3.Connection]:
    """The caller's transaction when one is open (the caller commits or rolls back), else one of its own."""
    if conn.in_transaction:
        yield conn
        return
    with transaction(conn, begin):
        yield conn

