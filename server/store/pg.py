"""PostgreSQL (SPEC 12): connections, the schema migrations, and the adapter the synchronous repositories use.

`--database-url postgresql://...` selects it (server/store/pg_repos.py holds the hub's async repositories).
The synchronous repositories of server/store/*.py and server/evidence/ (the CLI commands, seeding, start-up
and shutdown work) run unchanged on a `PgConn`: it takes their SQLite-dialect statements (`?` placeholders,
`INSERT OR IGNORE`, `BEGIN IMMEDIATE` = BEGIN + the advisory write lock) and hands PostgreSQL the equivalent,
with rows readable by index and by column name like `sqlite3.Row`.

Migrations are an ordered list (`MIGRATIONS`), recorded in `schema_migrations`; `migrate` applies the
missing ones and seeds the demo content of an empty database in one transaction, holding an advisory
lock, so two servers starting together on an empty database do not race: the second waits, then finds
everything applied.
"""

from __future__ import annotations

import os
import re
import secrets
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import pq
from psycopg.rows import BaseRowFactory

from server.store.db import _SEEDERS, EVIDENCE_LOCK, lock_sql

# The synchronous repositories' `BEGIN IMMEDIATE` (SQLite: take the write lock now) becomes BEGIN plus this
# transaction-scoped advisory lock, so their check-then-write transactions (the demo key, a receipt import
# chunk, an anchoring batch) stay serialised between processes as they are on SQLite.
WRITE_LOCK = "market-write:"

# Every connection of this process carries it: pg_stat_activity tells which process holds a connection, and
# an outbox job's claimed_by names its claimer, so a hub can tell a live hub's job in flight from an orphan.
APPLICATION_NAME = f"market-server/{os.getpid()}-{secrets.token_hex(4)}"
MIGRATE_LOCK = "market-migrate:"
__all__ = ["EVIDENCE_LOCK", "MIGRATIONS", "WRITE_LOCK", "PgConn", "connect", "lock_sql", "migrate", "open_pg", "redact"]


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and str(url).startswith(("postgresql://", "postgres://"))


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


# --- migrations ---------------------------------------------------------------------------------
# Never edit an applied migration; append a new one. REAL epoch seconds are double precision
# (a float survives bit for bit: the evidence ledger hashes its ts as an IEEE 754 double).

MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "initial schema", """
CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE api_keys (
    id text PRIMARY KEY,
    key_hash text NOT NULL UNIQUE,
    plan text NOT NULL CHECK (plan IN ('free', 'professional', 'enterprise')),
    rate bigint,
    label text,
    created_at double precision NOT NULL,
    revoked_at double precision
);
CREATE TABLE users (
    id text PRIMARY KEY,
    email text NOT NULL UNIQUE,
    password_hash text NOT NULL,
    name text,
    company text,
    created_at double precision NOT NULL,
    disabled_at double precision
);
CREATE TABLE content_items (
    id text PRIMARY KEY,
    kind text NOT NULL CHECK (kind IN ('news', 'research')),
    title_zh text NOT NULL,
    title_en text NOT NULL,
    summary_zh text NOT NULL,
    summary_en text NOT NULL,
    source text,
    author text,
    category text,
    published_at double precision NOT NULL,
    tags text NOT NULL DEFAULT '[]',
    created_at double precision NOT NULL
);
CREATE INDEX content_items_latest ON content_items (kind, published_at DESC, id DESC);
CREATE TABLE candles (
    instrument text NOT NULL,
    day text NOT NULL,
    o double precision NOT NULL, h double precision NOT NULL, l double precision NOT NULL,
    c double precision NOT NULL, v double precision NOT NULL,
    PRIMARY KEY (instrument, day)
);
CREATE TABLE inquiries (
    id text PRIMARY KEY,
    user_id text NOT NULL,
    user_email text,
    product text NOT NULL,
    quantity double precision NOT NULL,
    unit text,
    message text,
    delivery_place text,
    contact_phone text,
    status text NOT NULL DEFAULT 'received',
    created_at double precision NOT NULL
);
CREATE TABLE cooperations (
    id text PRIMARY KEY,
    company text NOT NULL,
    contact_name text NOT NULL,
    email text,
    phone text,
    type text NOT NULL,
    message text,
    status text NOT NULL DEFAULT 'received',
    created_at double precision NOT NULL
);
CREATE TABLE outbox_jobs (
    id text PRIMARY KEY,
    record_kind text NOT NULL,
    record_id text NOT NULL,
    channel text NOT NULL,
    target text NOT NULL,
    payload text NOT NULL,
    state text NOT NULL CHECK (state IN ('pending', 'sending', 'delivered', 'failed', 'dead')),
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at double precision NOT NULL,
    last_error text,
    idempotency_id text NOT NULL UNIQUE,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    delivered_at double precision
);
CREATE INDEX outbox_jobs_due ON outbox_jobs (state, next_attempt_at);
CREATE INDEX outbox_jobs_record ON outbox_jobs (record_kind, record_id);
CREATE TABLE receipts (
    receipt_no text PRIMARY KEY,
    commodity text NOT NULL,
    grade text NOT NULL,
    quantity double precision NOT NULL,
    unit text NOT NULL,
    warehouse text NOT NULL,
    holder text NOT NULL,
    holder_masked text NOT NULL,
    status text NOT NULL CHECK (status IN ('active', 'pledged', 'frozen', 'cancelled')),
    issued_at double precision NOT NULL,
    expires_at double precision,
    salt text NOT NULL,
    evidence_hash text NOT NULL,
    updated_at double precision NOT NULL
);
CREATE TABLE evidence_leaves (
    idx bigint PRIMARY KEY,
    hash text UNIQUE NOT NULL,
    submitted_at double precision NOT NULL,
    batch bigint NULL
);
CREATE INDEX evidence_leaves_pending ON evidence_leaves (idx) WHERE batch IS NULL;
CREATE TABLE evidence_nodes (
    level integer NOT NULL,
    pos bigint NOT NULL,
    hash text NOT NULL,
    PRIMARY KEY (level, pos)
);
CREATE TABLE evidence_blocks (
    height bigint PRIMARY KEY,
    root text NOT NULL,
    tree_size bigint NOT NULL,
    prev_hash text NOT NULL,
    block_hash text NOT NULL,
    ts double precision NOT NULL,
    tx_hash text NOT NULL
);
"""),
    (2, "outbox claim owner", """
ALTER TABLE outbox_jobs ADD COLUMN claimed_by text;
"""),
)


def connect(url: str) -> psycopg.Connection[Any]:
    """A synchronous autocommit connection (CLI commands, start-up work); raises psycopg.OperationalError."""
    return psycopg.connect(url, autocommit=True, connect_timeout=10, application_name=APPLICATION_NAME)


def migrate(conn: psycopg.Connection[Any]) -> list[int]:
    """Apply the missing migrations, then seed an unseeded database; returns the versions applied now.

    One transaction under an advisory lock: a concurrent starter waits and then finds nothing to do.
    """
    applied: list[int] = []
    with conn.transaction():
        conn.execute(lock_sql(MIGRATE_LOCK))
        conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, "
                     "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
        done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations").fetchall()}
        for version, name, sql in MIGRATIONS:
            if version in done:
                continue
            conn.execute(cast(Any, sql))
            conn.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (version, name))
            applied.append(version)
        if conn.execute("SELECT 1 FROM meta WHERE key = 'seeded'").fetchone() is None:
            adapter = PgConn(conn)
            for seed in _SEEDERS:
                seed(adapter.as_sqlite())
            conn.execute("INSERT INTO meta (key, value) VALUES ('seeded', '1')")
    return applied


def open_pg(url: str) -> sqlite3.Connection:
    """What `open_db` is for SQLite: a migrated, seeded database behind the sync repositories' interface."""
    conn = connect(url)
    migrate(conn)
    return PgConn(conn).as_sqlite()


# --- the adapter for the synchronous repositories -----------------------------------------------

_QMARK = re.compile(r"\?")
_INSERT_OR_IGNORE = re.compile(r"^\s*INSERT OR IGNORE INTO", re.IGNORECASE)
_TRANSLATED: dict[str, str] = {}


def translate(sql: str) -> str:
    """SQLite dialect -> PostgreSQL for the statements the repositories use (cached)."""
    out = _TRANSLATED.get(sql)
    if out is None:
        out = _QMARK.sub("%s", sql.replace("%", "%%"))
        if _INSERT_OR_IGNORE.match(out):
            out = _INSERT_OR_IGNORE.sub("INSERT INTO", out, count=1) + " ON CONFLICT DO NOTHING"
        if out.strip().upper() == "BEGIN IMMEDIATE":  # SQLite's write lock, taken at BEGIN: one writer at a time
            out = "BEGIN; " + lock_sql(WRITE_LOCK)
        _TRANSLATED[sql] = out
    return out


class Row(tuple[Any, ...]):
    """A result row readable like sqlite3.Row: row[0] and row["column"]; dict(row) gives the columns."""

    names: tuple[str, ...] = ()

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            return tuple.__getitem__(self, self.names.index(key))
        return tuple.__getitem__(self, key)

    def keys(self) -> tuple[str, ...]:
        return self.names


def _row_factory(cursor: Any) -> Callable[[Sequence[Any]], Row]:
    names = tuple(c.name for c in cursor.description or ())
    cls = type("Row", (Row,), {"names": names})
    return lambda values: cls(values)


class PgConn:
    """The subset of sqlite3.Connection the synchronous repositories use, on a psycopg connection."""

    dialect = "postgresql"

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def as_sqlite(self) -> sqlite3.Connection:
        """Typed as what the repositories declare (they use only execute/executemany/in_transaction)."""
        return cast(sqlite3.Connection, self)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        cur = self.conn.cursor(row_factory=cast(BaseRowFactory[Any], _row_factory))
        return cur.execute(cast(Any, translate(sql)), params or None)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> psycopg.Cursor[Any]:
        cur = self.conn.cursor()
        cur.executemany(cast(Any, translate(sql)), list(rows))
        return cur

    @property
    def in_transaction(self) -> bool:
        return self.conn.info.transaction_status != pq.TransactionStatus.IDLE

    def commit(self) -> None:
        """sqlite3's commit: ends a transaction opened with BEGIN (statements outside one autocommit)."""
        if self.in_transaction:
            self.conn.execute("COMMIT")

    def __enter__(self) -> PgConn:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        """`with conn:` as in sqlite3: commit, or roll back on an exception."""
        if self.in_transaction:
            self.conn.execute("ROLLBACK" if exc_type is not None else "COMMIT")

    def close(self) -> None:
        self.conn.close()
