"""PostgreSQL (SPEC 12): connections and the schema migrations.

`--database-url postgresql://...` selects it. Its repositories speak PostgreSQL's own dialect: the hub's async
ones in server/store/sql/pg_repos.py, the synchronous ones (CLI commands, seeding, start-up and shutdown work, the
evidence log) in server/store/sql/pg_sync.py.

Migrations are an ordered list (`MIGRATIONS`, server/store/sql/schema.py), recorded in `schema_migrations`;
`migrate` applies the missing ones and runs the seed steps (server/store/site/seed.py) on an empty database in one
transaction, holding an advisory lock, so two servers starting together on an empty database do not race:
the second waits, then finds everything applied.
"""

from __future__ import annotations

import os
import secrets
import time
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg.rows import DictRow, dict_row

from server.store.site.seed import seed
from server.store.sql.pg_locks import MIGRATE_LOCK, lock_sql
from server.store.sql.pg_sync import PgSeedTarget
from server.store.sql.schema import MIGRATIONS

# Every connection of this process carries it: pg_stat_activity tells which process holds a connection, and
# an outbox job's claimed_by names its claimer, so a hub can tell a live hub's job in flight from an orphan.
APPLICATION_NAME = f"market-server/{os.getpid()}-{secrets.token_hex(4)}"
__all__ = ["APPLICATION_NAME", "MIGRATIONS", "connect", "is_postgres_url", "migrate", "redact"]


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


def connect(url: str) -> psycopg.Connection[DictRow]:
    """A synchronous autocommit connection, rows as dicts (CLI commands, start-up work); raises
    psycopg.OperationalError if PostgreSQL cannot be reached."""
    return psycopg.connect(url, autocommit=True, connect_timeout=10, application_name=APPLICATION_NAME,
                           row_factory=dict_row)


def migrate(conn: psycopg.Connection[DictRow]) -> list[int]:
    """Apply the missing migrations, then seed an unseeded database; returns the versions applied now.

    One transaction under an advisory lock: a concurrent starter waits and then finds nothing to do.
    """
    applied: list[int] = []
    with conn.transaction():
        conn.execute(lock_sql(MIGRATE_LOCK))
        conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, "
                     "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
        done = {row["version"] for row in conn.execute("SELECT version FROM schema_migrations").fetchall()}
        for version, name, sql in MIGRATIONS:
            if version in done:
                continue
            conn.execute(cast(Any, sql))
            conn.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (version, name))
            applied.append(version)
        if conn.execute("SELECT 1 FROM meta WHERE key = 'seeded'").fetchone() is None:
            seed(PgSeedTarget(conn), time.time())
            conn.execute("INSERT INTO meta (key, value) VALUES ('seeded', '1')")
    return applied
