"""Which database the hub runs on: SQLite in the data dir (default) or PostgreSQL (`--database-url`).

Chosen once, where the hub is built; everything else sees only the repository protocols.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from server.config import StorageSettings
from server.store.site.records import ChannelSpec
from server.store.sql.repositories import Repositories
from server.store.sql.sqlite_repos import sqlite_repositories
from server.store.sql.storage import SqliteStorage


def open_repositories(settings: StorageSettings, channels: Sequence[ChannelSpec], clock: Callable[[], float],
                      wake: Callable[[], None]) -> Repositories:
    """The hub's repositories. PostgreSQL is migrated here (start-up, before anything is served)."""
    if settings.database_url:
        from server.store.sql.pg_repos import PgStorage, pg_repositories

        settings.data_dir.mkdir(parents=True, exist_ok=True)  # still holds the JWT secret and the demo-key file

        pg = PgStorage(settings.database_url, settings.database_pool)
        return pg_repositories(pg, channels, clock, wake)
    storage = SqliteStorage(settings.data_dir)
    return sqlite_repositories(storage, channels, clock, wake)
