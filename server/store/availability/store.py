"""The availability rows for the hub: every call off the event loop (SQLite's storage threads, or a worker thread
on PostgreSQL's sync pool), the storage picked once, as the console's store does (store/accounts/console_store.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from server.core.availability import MinuteRecord
from server.store.accounts.console import PgDb, SqliteDb
from server.store.availability.minutes import MinutesRepo
from server.store.sql.storage import SqliteStorage

T = TypeVar("T")


class AvailabilityStore:
    def __init__(self, storage: Any) -> None:
        self.storage = storage
        self.sqlite = isinstance(storage, SqliteStorage)

    async def _read(self, fn: Callable[[MinutesRepo], T]) -> T:
        if self.sqlite:
            return await self.storage.read(lambda c: fn(MinutesRepo(SqliteDb(c))))  # type: ignore[no-any-return]
        return await self.storage.in_thread(lambda c: fn(MinutesRepo(PgDb(c))))  # type: ignore[no-any-return]

    async def add(self, records: Sequence[MinuteRecord]) -> None:
        if self.sqlite:
            await self.storage.write(lambda c: MinutesRepo(SqliteDb(c)).add(records))
        else:
            await self.storage.in_thread(lambda c: MinutesRepo(PgDb(c)).add(records))

    async def between(self, first: int, end: int) -> list[MinuteRecord]:
        return await self._read(lambda r: r.between(first, end))

    async def first_minute(self) -> int | None:
        return await self._read(lambda r: r.first_minute())
