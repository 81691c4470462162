"""Support tickets' tables (SPEC 20), for both databases.

SQLite: `migrate_support_sqlite(conn)` runs inside `open_db`'s transaction each time a data dir is opened
(CREATE ... IF NOT EXISTS: older data dirs gain the tables). PostgreSQL: `SUPPORT_MIGRATION` is a migration of
server/store/sql/schema.py.
"""

from __future__ import annotations

import sqlite3

_TABLES = """
CREATE TABLE {ine}support_tickets (
    id {text} PRIMARY KEY,
    user_id {text} NOT NULL,
    user_email {text},
    subject {text} NOT NULL,
    severity {int} NOT NULL CHECK (severity IN (1, 2, 3)),
    status {text} NOT NULL CHECK (status IN ('open', 'closed')),
    plan {text} NOT NULL,
    created_at {real} NOT NULL,
    updated_at {real} NOT NULL,
    closed_at {real},
    first_response_due {real},
    first_response_at {real}
);
CREATE INDEX {ine}support_tickets_user ON support_tickets (user_id, created_at);
CREATE INDEX {ine}support_tickets_status ON support_tickets (status, created_at);
CREATE TABLE {ine}support_messages (
    id {text} PRIMARY KEY,
    ticket_id {text} NOT NULL,
    author_id {text},
    author_email {text},
    side {text} NOT NULL CHECK (side IN ('customer', 'operator')),
    body {text} NOT NULL,
    created_at {real} NOT NULL
);
CREATE INDEX {ine}support_messages_ticket ON support_messages (ticket_id, created_at);
"""

SUPPORT_SQLITE = _TABLES.format(ine="IF NOT EXISTS ", text="TEXT", int="INTEGER", real="REAL")
SUPPORT_MIGRATION = _TABLES.format(ine="", text="text", int="integer", real="double precision")


def migrate_support_sqlite(conn: sqlite3.Connection) -> None:
    """Create the tables a data dir lacks (idempotent; in the caller's transaction)."""
    for statement in SUPPORT_SQLITE.split(";"):
        if statement.strip():
            conn.execute(statement)
