"""The operator's repositories (CLI commands, in their own process): one bundle per backend, chosen once.

SQLite in `--data-dir` (the repositories of server/store/*.py) or PostgreSQL with `--database-url`
(server/store/sql/pg_sync.py); each is migrated and seeded like a new data dir on first use. The commands see
only what both offer, so neither backend's SQL reaches the other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Protocol

from server.core.keys import ApiKey
from server.evidence import Block
from server.store.accounts.users import User
from server.store.history.candle_rows import Candle
from server.store.outbox.jobs import JobState
from server.store.outbox.queue import Job
from server.store.site.content import ContentItem
from server.store.site.evidence_sqlite import EvidenceLog
from server.store.site.receipts import ImportResult, ReceiptData, ReceiptStatus
from server.store.sql.db import open_db
from server.store.sql.sqlite_sync import CandleRepo, ContentRepo, KeyRepo, OutboxRepo, ReceiptRepo, UserRepo


class AdminKeys(Protocol):
    def create(self, plan: str, rate: int | None = None, label: str | None = None) -> tuple[ApiKey, str]: ...

    def list(self) -> list[ApiKey]: ...

    def revoke(self, key_id: str) -> bool: ...


class AdminUsers(Protocol):
    def create(self, email: str, password_hash: str, name: str | None = None, company: str | None = None,
               now: float | None = None) -> User: ...

    def disable(self, email: str, now: float | None = None) -> bool: ...


class AdminContent(Protocol):
    def import_items(self, items: list[ContentItem], chunk: int = ...) -> int: ...


class AdminCandles(Protocol):
    def upsert(self, candles: list[Candle], chunk: int = ...) -> None: ...

    def since(self, first_day: date) -> list[Candle]: ...


class AdminOutbox(Protocol):
    def list_jobs(self, state: JobState | None = None, limit: int = 1000) -> list[Job]: ...

    def for_record(self, kind: str, record_id: str) -> list[Job]: ...

    def retry(self, job_id: str, now: float) -> Job: ...


class AdminReceipts(Protocol):
    def import_all(self, receipts: list[ReceiptData], now: float | None = None, chunk: int = ...) -> ImportResult: ...

    def transition(self, receipt_no: str, new: ReceiptStatus, now: float | None = None) -> str: ...

    def public(self, receipt_no: str) -> dict[str, Any] | None: ...


class AdminEvidence(Protocol):
    def submit(self, hash_hex: str) -> str: ...

    def anchor_all(self, batch: int = ...) -> Block | None: ...

    def lookup(self, hash_hex: str) -> dict[str, Any] | None: ...

    def submit_and_anchor(self, hash_hex: str) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class AdminRepos:
    keys: AdminKeys
    users: AdminUsers
    content: AdminContent
    candles: AdminCandles
    outbox: AdminOutbox
    receipts: AdminReceipts
    evidence: AdminEvidence
    close: Callable[[], None]


def open_admin(data_dir: Path, database_url: str | None = None) -> AdminRepos:
    """The database of a command: PostgreSQL with a URL (psycopg is imported only then), else SQLite."""
    if database_url:
        return _postgresql(database_url)
    conn = open_db(data_dir)
    evidence = EvidenceLog(conn)
    return AdminRepos(KeyRepo(conn), UserRepo(conn), ContentRepo(conn), CandleRepo(conn), OutboxRepo(conn),
                      ReceiptRepo(conn, evidence), evidence, conn.close)


def _postgresql(url: str) -> AdminRepos:
    from server.store.sql.pg import connect, migrate
    from server.store.sql.pg_sync import (
        PgCandleRepo,
        PgContentRepo,
        PgEvidenceLog,
        PgKeyRepo,
        PgOutboxRepo,
        PgReceiptRepo,
        PgUserRepo,
    )

    conn = connect(url)
    migrate(conn)
    evidence = PgEvidenceLog(conn)
    return AdminRepos(PgKeyRepo(conn), PgUserRepo(conn), PgContentRepo(conn), PgCandleRepo(conn),
                      PgOutboxRepo(conn), PgReceiptRepo(conn, evidence), evidence, conn.close)
