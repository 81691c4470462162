"""SQLite (WAL) in the data dir: one file, opened by the hub and by CLI commands alike.

`open_db` applies every table of `SQLITE_SCHEMA` (server/store/sql/schema.py: one explicit list, whatever
was imported) and, in the transaction that creates the database, the seed steps (server/store/site/seed.py).
Connections are autocommit (`isolation_level=None`); multi-statement writes use
`transaction()` (BEGIN IMMEDIATE ... COMMIT).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

from server.store.accounts.console_schema import migrate_console_sqlite
from server.store.incidents.schema import INCIDENT_TABLES_SQLITE
from server.store.site.content import ContentItem
from server.store.site.receipts import ReceiptData
from server.store.site.seed import seed
from server.store.sources.schema import migrate_sources_sqlite
from server.store.sql.errors import storage_errors as storage_errors  # where other modules look it up
from server.store.sql.schema import SQLITE_SCHEMA
from server.store.sql.sqlite_sync import ContentRepo, ReceiptRepo
from server.store.sql.sqlite_tx import configure, transaction
from server.store.support.schema import migrate_support_sqlite

DB_NAME = "market.sqlite3"


class SqliteSeedTarget:
    """The seed steps' writes on SQLite (server/store/site/seed.py), in `open_db`'s transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def add_content(self, items: Iterable[ContentItem], now: float) -> int:
        return ContentRepo(self.conn).add_many(items, now)

    def add_receipts(self, receipts: Iterable[ReceiptData], now: float) -> None:
        repo = ReceiptRepo(self.conn)
        for r in receipts:
            repo.insert(r, now)


def open_db(data_dir: Path) -> sqlite3.Connection:
    data_dir.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(data_dir / DB_NAME, isolation_level=None, check_same_thread=False, timeout=10.0)
    configure(conn)
    with transaction(conn):
        for statement in SQLITE_SCHEMA:
            conn.execute(statement)
        migrate_console_sqlite(conn)  # issue 32: the console's columns and tables, also on older data dirs
        migrate_support_sqlite(conn)  # issue 43: support tickets
        migrate_sources_sqlite(conn)  # SPEC 20: dedicated data sources (docs/ingest.md)
        for statement in INCIDENT_TABLES_SQLITE:  # issue 42: incidents and maintenance
            conn.execute(statement)
        if conn.execute("SELECT 1 FROM meta WHERE key = 'seeded'").fetchone() is None:
            seed(SqliteSeedTarget(conn), time.time())
            conn.execute("INSERT INTO meta (key, value) VALUES ('seeded', '1')")
    return conn
