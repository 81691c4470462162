"""The async repository protocols (server/store/sql/repositories.py) over SQLite.

Each method hands one plain function to `SqliteStorage`: writes to its writer
thread, reads to its reader threads. The synchronous repositories underneath
(KeyRepo, UserRepo, ...) are the same ones the CLI commands use in their own process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import date
from typing import Any

from server.core.keys import ApiKey
from server.evidence import Block
from server.store.accounts.users import User
from server.store.history.candle_rows import Candle, Settlement
from server.store.outbox.jobs import JobState, Retry
from server.store.outbox.queue import Job
from server.store.site.content import ContentKind
from server.store.site.evidence_sqlite import EvidenceLog
from server.store.site.records import ChannelSpec, RecordsService, RecordWrite
from server.store.sql.repositories import Repositories
from server.store.sql.sqlite_sync import CandleRepo, ContentRepo, KeyRepo, OutboxRepo, ReceiptRepo, RecordRepo, UserRepo
from server.store.sql.storage import SqliteStorage


class SqliteKeys:
    def __init__(self, storage: SqliteStorage) -> None:
        self.storage = storage

    async def active_by_hash(self) -> dict[str, ApiKey]:
        return await self.storage.read(lambda c: KeyRepo(c).active_by_hash())

    async def by_hash(self, key_hash: str) -> ApiKey | None:
        return await self.storage.read(lambda c: KeyRepo(c).by_hash(key_hash))

    def create_demo_key_blocking(self) -> str | None:
        return self.storage.write_blocking(lambda c: KeyRepo(c).create_demo_key())


class SqliteUsers:
    def __init__(self, storage: SqliteStorage) -> None:
        self.storage = storage

    async def by_email(self, email: str) -> User | None:
        return await self.storage.read(lambda c: UserRepo(c).by_email(email))

    async def by_id(self, user_id: str) -> User | None:
        return await self.storage.read(lambda c: UserRepo(c).by_id(user_id))

    async def create(self, email: str, password_hash: str, name: str | None, company: str | None) -> User:
        return await self.storage.write(lambda c: UserRepo(c).create(email, password_hash, name, company))

    async def set_password_hash(self, user_id: str, password_hash: str) -> None:
        await self.storage.write(lambda c: UserRepo(c).set_password_hash(user_id, password_hash))


class SqliteContent:
    def __init__(self, storage: SqliteStorage) -> None:
        self.storage = storage

    async def page(self, kind: ContentKind, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
        return await self.storage.read(lambda c: ContentRepo(c).page(kind, limit, offset))

    async def version(self) -> int:
        return await self.storage.read(lambda c: ContentRepo(c).version())


class SqliteRecords(RecordsService):
    """Record + jobs in one transaction on the writer thread."""

    def __init__(self, storage: SqliteStorage, channels: Sequence[ChannelSpec],
                 clock: Callable[[], float] = time.time, wake: Callable[[], None] = lambda: None) -> None:
        super().__init__(channels, clock, wake)
        self.storage = storage

    async def _commit(self, w: RecordWrite) -> None:
        await self.storage.write(lambda c: RecordRepo(c, self.clock, self.channels).insert(w))


class SqliteOutbox:
    def __init__(self, storage: SqliteStorage) -> None:
        self.storage = storage

    async def recover(self, now: float) -> int:
        return await self.storage.write(lambda c: OutboxRepo(c).recover(now))

    async def claim_due(self, now: float, limit: int) -> list[Job]:
        return await self.storage.write(lambda c: OutboxRepo(c).claim_due(now, limit))

    async def mark_delivered(self, job_id: str, now: float) -> None:
        await self.storage.write(lambda c: OutboxRepo(c).mark_delivered(job_id, now))

    async def mark_failed(self, job_id: str, retry: Retry, error: str, now: float) -> None:
        await self.storage.write(lambda c: OutboxRepo(c).mark_failed(job_id, retry, error, now))

    async def release(self, job_ids: list[str], now: float) -> int:
        return await self.storage.write(lambda c: OutboxRepo(c).release(job_ids, now))

    async def counts(self) -> dict[JobState, int]:
        return await self.storage.read(lambda c: OutboxRepo(c).counts())

    async def next_due(self) -> float | None:
        return await self.storage.read(lambda c: OutboxRepo(c).next_due())

    async def list_jobs(self, state: JobState | None = None, limit: int = 1000) -> list[Job]:
        return await self.storage.read(lambda c: OutboxRepo(c).list_jobs(state, limit))


class SqliteReceipts:
    def __init__(self, storage: SqliteStorage) -> None:
        self.storage = storage

    async def public(self, receipt_no: str) -> dict[str, Any] | None:
        return await self.storage.read(lambda c: ReceiptRepo(c, EvidenceLog(c, schema=False)).public(receipt_no))


class SqliteEvidence:
    def __init__(self, storage: SqliteStorage, clock: Callable[[], float] = time.time) -> None:
        self.storage = storage
        self.clock = clock
        storage.write_blocking(lambda c: EvidenceLog(c))  # its tables, once (start-up)

    async def lookup(self, hash_hex: str) -> dict[str, Any] | None:
        return await self.storage.read(lambda c: EvidenceLog(c, clock=self.clock, schema=False).lookup(hash_hex))

    async def anchor_batch(self, max_leaves: int) -> Block | None:
        return await self.storage.write(
            lambda c: EvidenceLog(c, clock=self.clock, schema=False).anchor_pending(max_leaves))


class SqliteCandles:
    def __init__(self, storage: SqliteStorage) -> None:
        self.storage = storage

    async def since(self, first_day: date) -> list[Candle]:
        return await self.storage.read(lambda c: CandleRepo(c).since(first_day))

    def since_blocking(self, first_day: date) -> list[Candle]:
        """At start-up, before the server accepts anything (the feed's history is built from it)."""
        return self.storage.read_blocking(lambda c: CandleRepo(c).since(first_day))

    async def between(self, first: date, last: date, inst: str | None = None, limit: int | None = None,
                      newest: bool = False) -> list[Candle]:
        return await self.storage.read(lambda c: CandleRepo(c).between(first, last, inst, limit, newest))

    def settlements_since_blocking(self, first_day: date) -> list[Settlement]:
        return self.storage.read_blocking(lambda c: CandleRepo(c).settlements_since(first_day))

    async def upsert(self, candles: list[Candle], settlements: Sequence[Settlement] = ()) -> None:
        await self.storage.write(lambda c: CandleRepo(c).upsert(candles, settlements=settlements))

    def upsert_blocking(self, candles: list[Candle], settlements: Sequence[Settlement] = ()) -> None:
        """At shutdown, after the loop's work stopped (the final flush)."""
        self.storage.write_blocking(lambda c: CandleRepo(c).upsert(candles, settlements=settlements))


SqliteRepositories = Repositories  # the name the tests and older callers use


def sqlite_repositories(storage: SqliteStorage, channels: Sequence[ChannelSpec], clock: Callable[[], float],
                        wake: Callable[[], None]) -> Repositories:
    return Repositories(
        storage, SqliteKeys(storage), SqliteUsers(storage), SqliteContent(storage),
        SqliteRecords(storage, channels, clock, wake), SqliteOutbox(storage), SqliteReceipts(storage),
        SqliteEvidence(storage, clock), SqliteCandles(storage),
    )
