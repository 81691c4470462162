"""`db migrate --database-url URL`: apply PostgreSQL's pending schema migrations (and seed an empty database).

The server applies them at start too, and so does every other command; this one is for a deploy step that
migrates before starting new servers. Concurrent runs wait on one advisory lock (server/store/sql/pg.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from server.commands.common import command
from server.store.sql.db import open_db


def register(sub: Any) -> None:
    group = sub.add_parser("db", help="database schema").add_subparsers(dest="db_cmd", required=True)
    command(group, "migrate", "apply pending schema migrations (PostgreSQL; SQLite is migrated when opened)",
            _migrate)


def _migrate(ns: argparse.Namespace) -> int:
    if not ns.database_url:
        open_db(Path(ns.data_dir)).close()
        print(f"SQLite in {ns.data_dir} is up to date (its tables are created when it is opened)")
        return 0
    from server.store.sql.pg import MIGRATIONS, connect, migrate, redact

    conn = connect(ns.database_url)
    try:
        applied = migrate(conn)
    finally:
        conn.close()
    latest = MIGRATIONS[-1][0]
    where = redact(ns.database_url)
    if applied:
        print(f"applied migration(s) {', '.join(map(str, applied))} to {where}; schema version {latest}")
    else:
        print(f"{where} is up to date (schema version {latest})")
    return 0
