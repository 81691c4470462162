"""SQLite (WAL) in the data dir: one file, opened by the hub and by CLI commands alike.

Each repository declares its own tables (`SCHEMA`) and `open_db` applies them
all, so whichever command first opens an empty data dir creates everything.
Connections are autocommit (`isolation_level=None`); multi-statement writes use
`transaction()` (BEGIN IMMEDIATE ... COMMIT).
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

DB_NAME = "market.sqlite3"

_SCHEMAS: list[str] = []
_SEEDERS: list[Callable[[sqlite3.Connection], None]] = []

META_SCHEMA = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"

EVIDENCE_LOCK = "market-evidence:"


def storage_errors(*more: type[Exception]) -> tuple[type[Exception], ...]:
    """What either database raises (plus `more`), for `except storage_errors():` (evaluated when an exception
    is matched). psycopg's errors join once psycopg is loaded: it is imported only for a PostgreSQL URL, so a
    SQLite run never pays its ~0.2 s import (half of a CLI command's start-up)."""
    pg = sys.modules.get("psycopg")
    return (sqlite3.Error, *((pg.Error,) if pg is not None else ()), *more)


def integrity_errors() -> tuple[type[Exception], ...]:
    """A constraint violation (unique, check) from either database."""
    pg = sys.modules.get("psycopg")
    return (sqlite3.IntegrityError, *((pg.IntegrityError,) if pg is not None else ()))


def lock_sql(name: str) -> str:
    """PostgreSQL: a transaction-scoped advisory lock per schema (parallel test runs use their own schemas)."""
    return f"SELECT pg_advisory_xact_lock(hashtext('{name}' || current_schema()))"


def dialect(conn: Any) -> str:
    """"sqlite" or "postgresql" (server/store/pg.py's PgConn) for a connection the sync repositories get."""
    return str(getattr(conn, "dialect", "sqlite"))


def register_schema(sql: str) -> None:
    """Called at import time by each repository module."""
    if sql not in _SCHEMAS:
        _SCHEMAS.append(sql)


def register_seeder(seed: Callable[[sqlite3.Connection], None]) -> None:
    """Demo-content seeders, run once inside the transaction that creates the database."""
    if seed not in _SEEDERS:
        _SEEDERS.append(seed)


def open_db(data_dir: Path) -> sqlite3.Connection:
    data_dir.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(data_dir / DB_NAME, isolation_level=None, check_same_thread=False, timeout=10.0)
    configure(conn)
    with transaction(conn):
        conn.execute(META_SCHEMA)
        for sql in _SCHEMAS:
            for statement in _split(sql):
                conn.execute(statement)
        if conn.execute("SELECT 1 FROM meta WHERE key = 'seeded'").fetchone() is None:
            for seed in _SEEDERS:
                seed(conn)
            conn.execute("INSERT INTO meta (key, value) VALUES ('seeded', '1')")
    return conn


def configure(conn: sqlite3.Connection) -> None:
    """Row access by name, WAL, and a 10 s wait for the write lock (CLI imports hold it one chunk at a time)."""
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=10000")


def _split(sql: str) -> list[str]:
    return [s.strip() for s in sql.split(";") if s.strip()]


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
