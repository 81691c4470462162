"""The incidents' tables (SPEC 20), for both databases.

SQLite: `INCIDENT_TABLES_SQLITE`, applied (CREATE ... IF NOT EXISTS) by `open_db` each time a data dir is opened.
PostgreSQL: `INCIDENTS_MIGRATION`, one migration of server/store/sql/schema.py.

`incidents_auto_open` lets at most one unresolved incident carry a given `auto_key`: the storage is the arbiter
between hubs that would open the same automatic incident. `incident_updates.notified_at` marks an update whose
e-mail jobs were written (server/store/incidents/repo.py `notify_pending`); the jobs' idempotency ids
(`incident:{update}:{account}`) make a second writer's insert a no-op. `incident_mail` holds an account's choice
(absent: enterprise accounts are told, others not).
"""

from __future__ import annotations

INCIDENT_TABLES_SQLITE: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS incidents (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('investigating', 'identified', 'monitoring', 'resolved')),
    impact TEXT NOT NULL CHECK (impact IN ('minor', 'major', 'critical')),
    components TEXT NOT NULL DEFAULT '[]',
    auto_key TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    resolved_at REAL
)""",
    "CREATE INDEX IF NOT EXISTS incidents_recent ON incidents (created_at DESC, id DESC)",
    "CREATE UNIQUE INDEX IF NOT EXISTS incidents_auto_open ON incidents (auto_key) "
    "WHERE resolved_at IS NULL AND auto_key IS NOT NULL",
    """CREATE TABLE IF NOT EXISTS incident_updates (
    id TEXT PRIMARY KEY,
    incident_id TEXT NOT NULL,
    status TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL,
    notified_at REAL
)""",
    "CREATE INDEX IF NOT EXISTS incident_updates_of ON incident_updates (incident_id, created_at)",
    "CREATE INDEX IF NOT EXISTS incident_updates_unnotified ON incident_updates (created_at) WHERE notified_at IS NULL",
    """CREATE TABLE IF NOT EXISTS maintenances (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    scheduled_for REAL NOT NULL,
    scheduled_until REAL NOT NULL,
    created_at REAL NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS maintenances_until ON maintenances (scheduled_until)",
    """CREATE TABLE IF NOT EXISTS incident_mail (
    user_id TEXT PRIMARY KEY,
    enabled INTEGER NOT NULL,
    updated_at REAL NOT NULL
)""",
)

INCIDENTS_MIGRATION = """
CREATE TABLE incidents (
    id text PRIMARY KEY,
    title text NOT NULL,
    status text NOT NULL CHECK (status IN ('investigating', 'identified', 'monitoring', 'resolved')),
    impact text NOT NULL CHECK (impact IN ('minor', 'major', 'critical')),
    components text NOT NULL DEFAULT '[]',
    auto_key text,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    resolved_at double precision
);
CREATE INDEX incidents_recent ON incidents (created_at DESC, id DESC);
CREATE UNIQUE INDEX incidents_auto_open ON incidents (auto_key) WHERE resolved_at IS NULL AND auto_key IS NOT NULL;
CREATE TABLE incident_updates (
    id text PRIMARY KEY,
    incident_id text NOT NULL,
    status text NOT NULL,
    body text NOT NULL,
    created_at double precision NOT NULL,
    notified_at double precision
);
CREATE INDEX incident_updates_of ON incident_updates (incident_id, created_at);
CREATE INDEX incident_updates_unnotified ON incident_updates (created_at) WHERE notified_at IS NULL;
CREATE TABLE maintenances (
    id text PRIMARY KEY,
    title text NOT NULL,
    scheduled_for double precision NOT NULL,
    scheduled_until double precision NOT NULL,
    created_at double precision NOT NULL
);
CREATE INDEX maintenances_until ON maintenances (scheduled_until);
CREATE TABLE incident_mail (
    user_id text PRIMARY KEY,
    enabled integer NOT NULL,
    updated_at double precision NOT NULL
);
"""
