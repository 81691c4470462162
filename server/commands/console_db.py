"""The console's repository for a command's own process: SQLite in --data-dir, or PostgreSQL (--database-url)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from server.store.accounts.console import PgDb, SqliteDb
from server.store.accounts.console_repo import ConsoleRepo

T = TypeVar("T")


def with_console(ns: argparse.Namespace, fn: Callable[[ConsoleRepo], T]) -> T:
    url = getattr(ns, "database_url", None)
    if url:
        from server.store.sql.pg import connect, migrate

        conn = connect(url)
        try:
            migrate(conn)
            return fn(ConsoleRepo(PgDb(conn)))
        finally:
            conn.close()
    from server.store.sql.db import open_db

    sconn = open_db(Path(ns.data_dir))
    try:
        return fn(ConsoleRepo(SqliteDb(sconn)))
    finally:
        sconn.close()
