"""The console's tables and columns (SPEC 17), for both databases.

Accounts gain a plan, a role and (enterprise) a rate; keys gain an owner, a display prefix and the time of their
last use. Usage, subscription requests and the audit list are new tables.

SQLite: `migrate_console_sqlite(conn)` runs inside `open_db`'s transaction each time a data dir is opened: it adds
the columns an older data dir lacks (ALTER TABLE ... ADD COLUMN, only when missing) and creates the tables.
PostgreSQL: `CONSOLE_MIGRATION` is migration 3 of server/store/sql/schema.py.
"""

from __future__ import annotations

import sqlite3

# A key whose owning account is disabled is served as if it did not exist (SPEC 17: a disabled account's keys stop
# working; the hubs' key refresh drops them within a second). Keys made with `keys create` have no owner.
OWNER_ENABLED = "(owner_id IS NULL OR owner_id NOT IN (SELECT id FROM users WHERE disabled_at IS NOT NULL))"

# (table, column, SQLite declaration) added to existing tables
SQLITE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("users", "plan", "TEXT NOT NULL DEFAULT 'free'"),
    ("users", "role", "TEXT NOT NULL DEFAULT 'customer'"),
    ("users", "rate", "INTEGER"),
    ("api_keys", "owner_id", "TEXT"),
    ("api_keys", "prefix", "TEXT"),
    ("api_keys", "last_used_at", "REAL"),
)

SQLITE_TABLES: tuple[str, ...] = (
    "CREATE INDEX IF NOT EXISTS api_keys_owner ON api_keys (owner_id)",
    """CREATE TABLE IF NOT EXISTS console_usage (
    key_id TEXT NOT NULL,
    day TEXT NOT NULL,
    requests INTEGER NOT NULL DEFAULT 0,
    refused INTEGER NOT NULL DEFAULT 0,
    client_errors INTEGER NOT NULL DEFAULT 0,
    ws_connections INTEGER NOT NULL DEFAULT 0,
    ws_messages INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, day)
)""",
    """CREATE TABLE IF NOT EXISTS subscription_requests (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    user_email TEXT,
    plan TEXT NOT NULL CHECK (plan IN ('professional', 'enterprise')),
    message TEXT,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
    rate INTEGER,
    created_at REAL NOT NULL,
    decided_at REAL,
    decided_by TEXT
)""",
    "CREATE UNIQUE INDEX IF NOT EXISTS subscription_open ON subscription_requests (user_id) WHERE status = 'pending'",
    "CREATE INDEX IF NOT EXISTS subscription_status ON subscription_requests (status, created_at)",
    """CREATE TABLE IF NOT EXISTS console_events (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    key_id TEXT,
    detail TEXT,
    ip TEXT
)""",
    "CREATE INDEX IF NOT EXISTS console_events_user ON console_events (user_id, at)",
)


def migrate_console_sqlite(conn: sqlite3.Connection) -> None:
    """Bring a data dir of any earlier version up to the console's schema (idempotent; in the caller's transaction)."""
    for table, column, declaration in SQLITE_COLUMNS:
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if column not in have:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
    for statement in SQLITE_TABLES:
        conn.execute(statement)


CONSOLE_MIGRATION = """
ALTER TABLE users ADD COLUMN plan text NOT NULL DEFAULT 'free'
    CHECK (plan IN ('free', 'professional', 'enterprise'));
ALTER TABLE users ADD COLUMN role text NOT NULL DEFAULT 'customer' CHECK (role IN ('customer', 'operator'));
ALTER TABLE users ADD COLUMN rate bigint;
ALTER TABLE api_keys ADD COLUMN owner_id text;
ALTER TABLE api_keys ADD COLUMN prefix text;
ALTER TABLE api_keys ADD COLUMN last_used_at double precision;
CREATE INDEX api_keys_owner ON api_keys (owner_id);
CREATE TABLE console_usage (
    key_id text NOT NULL,
    day text NOT NULL,
    requests bigint NOT NULL DEFAULT 0,
    refused bigint NOT NULL DEFAULT 0,
    client_errors bigint NOT NULL DEFAULT 0,
    ws_connections bigint NOT NULL DEFAULT 0,
    ws_messages bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, day)
);
CREATE TABLE subscription_requests (
    id text PRIMARY KEY,
    user_id text NOT NULL,
    user_email text,
    plan text NOT NULL CHECK (plan IN ('professional', 'enterprise')),
    message text,
    status text NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
    rate bigint,
    created_at double precision NOT NULL,
    decided_at double precision,
    decided_by text
);
CREATE UNIQUE INDEX subscription_open ON subscription_requests (user_id) WHERE status = 'pending';
CREATE INDEX subscription_status ON subscription_requests (status, created_at);
CREATE TABLE console_events (
    id text PRIMARY KEY,
    user_id text NOT NULL,
    at double precision NOT NULL,
    kind text NOT NULL,
    key_id text,
    detail text,
    ip text
);
CREATE INDEX console_events_user ON console_events (user_id, at);
"""
