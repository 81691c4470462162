"""The dedicated data sources' columns and table (SPEC 20, docs/ingest.md), for both databases.

An account may hold a namespace (`users.namespace`, unique; granted by an operator: `users namespace EMAIL NS`);
a key has a `scope` (`read`, the default, or `ingest`: publishes, never reads); `custom_instruments` keeps each
declared instrument with the reserved market-state row (`slot`) it is bound to on every hub. A deleted instrument
keeps its row (`deleted_at`): a slot is never given to another instrument, so no hub can show one instrument's
prices, candles or seqs under another's id.

Each account's limits an operator sets (`users limits EMAIL`): `users.instrument_cap` (declared instruments) and
`users.ticks_per_second` (published ticks); NULL is the enterprise plan's default (100; the hub's --ingest-rate).

SQLite: `migrate_sources_sqlite(conn)` runs inside `open_db`'s transaction each time a data dir is opened (columns
added when missing, tables created). PostgreSQL: `SOURCES_MIGRATION` is migration 8 of server/store/sql/schema.py,
`LIMITS_MIGRATION` migration 9.
"""

from __future__ import annotations

import sqlite3

_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("users", "namespace", "TEXT"),
    ("api_keys", "scope", "TEXT NOT NULL DEFAULT 'read'"),
    ("users", "instrument_cap", "INTEGER CHECK (instrument_cap >= 0)"),
    ("users", "ticks_per_second", "INTEGER CHECK (ticks_per_second > 0)"),
)

_TABLE = """
CREATE TABLE {ine}custom_instruments (
    id {text} PRIMARY KEY,
    owner_id {text} NOT NULL,
    slot {int} NOT NULL UNIQUE,
    name_zh {text} NOT NULL,
    name_en {text} NOT NULL,
    unit_zh {text} NOT NULL,
    unit_en {text} NOT NULL,
    currency {text} NOT NULL,
    decimals {int} NOT NULL,
    venue {text} NOT NULL,
    session {text} NOT NULL DEFAULT '',
    created_at {real} NOT NULL,
    deleted_at {real}
);
CREATE INDEX {ine}custom_instruments_owner ON custom_instruments (owner_id);
CREATE UNIQUE INDEX {ine}users_namespace ON users (namespace)
"""

SOURCES_MIGRATION = """
ALTER TABLE users ADD COLUMN namespace text;
ALTER TABLE api_keys ADD COLUMN scope text NOT NULL DEFAULT 'read' CHECK (scope IN ('read', 'ingest'));
""" + _TABLE.format(ine="", text="text", int="integer", real="double precision") + ";\n"


LIMITS_MIGRATION = """
ALTER TABLE users ADD COLUMN instrument_cap integer CHECK (instrument_cap >= 0);
ALTER TABLE users ADD COLUMN ticks_per_second integer CHECK (ticks_per_second > 0);
"""

# The key queries' rows: each key with its account's ticks a second (NULL: the hub's --ingest-rate), read by every
# key refresh, so an operator's change reaches every hub within a second as a plan change does.
KEY_ROWS = ("SELECT *, (SELECT u.ticks_per_second FROM users u WHERE u.id = api_keys.owner_id) AS ticks_per_second "
            "FROM api_keys")


def migrate_sources_sqlite(conn: sqlite3.Connection) -> None:
    """Bring a data dir of any earlier version up to this schema (idempotent; in the caller's transaction)."""
    for table, column, declaration in _COLUMNS:
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if column not in have:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
    for statement in _TABLE.format(ine="IF NOT EXISTS ", text="TEXT", int="INTEGER", real="REAL").split(";"):
        if statement.strip():
            conn.execute(statement)
