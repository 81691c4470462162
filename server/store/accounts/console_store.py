"""The console's repository for the hub: every call off the event loop (SQLite's storage threads, or a worker
thread on PostgreSQL's sync pool), chosen by the hub's storage once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from server.store.accounts.console import PgDb, SqliteDb
from server.store.accounts.console_repo import ConsoleRepo
from server.store.sql.storage import SqliteStorage

T = TypeVar("T")


class ConsoleStore:
    """`await store.read(lambda r: r.keys_of(uid))`, `await store.write(lambda r: r.create_key(...))`."""

    def __init__(self, storage: Any) -> None:
        self.storage = storage
        self.sqlite = isinstance(storage, SqliteStorage)

    async def read(self, fn: Callable[[ConsoleRepo], T]) -> T:
        if self.sqlite:
            return await self.storage.read(lambda c: fn(ConsoleRepo(SqliteDb(c))))  # type: ignore[no-any-return]
        return await self.storage.in_thread(lambda c: fn(ConsoleRepo(PgDb(c))))  # type: ignore[no-any-return]

    async def write(self, fn: Callable[[ConsoleRepo], T]) -> T:
        if self.sqlite:
            return await self.storage.write(lambda c: fn(ConsoleRepo(SqliteDb(c))))  # type: ignore[no-any-return]
        return await self.storage.in_thread(lambda c: fn(ConsoleRepo(PgDb(c))))  # type: ignore[no-any-return]

    def write_blocking(self, fn: Callable[[ConsoleRepo], T]) -> T:
        """At shutdown, after the loop's work stopped (the metering's last flush)."""
        if self.sqlite:
            return self.storage.write_blocking(lambda c: fn(ConsoleRepo(SqliteDb(c))))  # type: ignore[no-any-return]
        return self.storage.blocking(lambda c: fn(ConsoleRepo(PgDb(c))))  # type: ignore[no-any-return]
