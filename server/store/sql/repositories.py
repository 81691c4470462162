"""What the hub needs from storage: one small async protocol per aggregate.

Handlers, the key cache, the outbox worker, the evidence task and the live feed
depend on these protocols only. `server/store/sql/sqlite_repos.py` implements them
over `SqliteStorage` (calls run on its threads, never on the event loop);
`server/store/sql/pg_repos.py` (SPEC 12) implements the same protocols over psycopg's
async pool in PostgreSQL's own dialect. One is chosen once, where the hub is built
(server/store/sql/backend.py). See docs/storage.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Protocol

from server.core.keys import ApiKey
from server.evidence import Block
from server.store.accounts.users import User
from server.store.history.candle_rows import Candle, Settlement
from server.store.outbox.jobs import JobState, Retry
from server.store.outbox.queue import Job
from server.store.site.content import ContentKind
from server.store.site.records import Accepted, Cooperation, Inquiry


class Storage(Protocol):
    """The database under the repositories (its connections stay inside each backend's repositories)."""

    async def open(self) -> None:
        """Called by the hub's start, on its loop, before the first awaited call."""
        ...

    async def ping(self) -> bool:
        """True when storage answers a trivial read."""
        ...

    async def aclose(self) -> None: ...

    def close(self) -> None: ...


class Keys(Protocol):
    async def active_by_hash(self) -> dict[str, ApiKey]: ...

    async def by_hash(self, key_hash: str) -> ApiKey | None: ...

    def create_demo_key_blocking(self) -> str | None:
        """At start-up, before anything is served: on a new database, one professional demo key (its secret);
        None if the database already had one (two hubs starting together make one)."""
        ...


class Users(Protocol):
    async def by_email(self, email: str) -> User | None: ...

    async def by_id(self, user_id: str) -> User | None: ...

    async def create(self, email: str, password_hash: str, name: str | None, company: str | None) -> User:
        """Raises DuplicateEmail."""
        ...

    async def set_password_hash(self, user_id: str, password_hash: str) -> None: ...


class Content(Protocol):
    async def page(self, kind: ContentKind, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]: ...

    async def version(self) -> int:
        """A number that changes whenever the content does (items are only ever inserted, never updated or deleted:
        their count). Any process's import moves it; one cheap query, polled by the public site."""
        ...


class Records(Protocol):
    """Writes a record and its notification jobs (one per configured channel) in one transaction."""

    async def add_inquiry(self, inquiry: Inquiry) -> Accepted: ...

    async def add_cooperation(self, cooperation: Cooperation) -> Accepted: ...


class Outbox(Protocol):
    """The delivery worker's view of the notification jobs (SPEC 9)."""

    async def recover(self, now: float) -> int: ...

    async def claim_due(self, now: float, limit: int) -> list[Job]: ...

    async def mark_delivered(self, job_id: str, now: float) -> None: ...

    async def mark_failed(self, job_id: str, retry: Retry, error: str, now: float) -> None: ...

    async def release(self, job_ids: list[str], now: float) -> int: ...

    async def counts(self) -> dict[JobState, int]: ...

    async def next_due(self) -> float | None: ...

    async def list_jobs(self, state: JobState | None = None, limit: int = 1000) -> list[Job]: ...


class Receipts(Protocol):
    async def public(self, receipt_no: str) -> dict[str, Any] | None:
        """The client's view (holder masked), or None."""
        ...


class Evidence(Protocol):
    async def lookup(self, hash_hex: str) -> dict[str, Any] | None: ...

    async def anchor_batch(self, max_leaves: int) -> Block | None:
        """Anchor up to `max_leaves` pending hashes in one block; None when nothing is pending."""
        ...


class Candles(Protocol):
    """Closed daily candles of a live feed. The blocking pair is for start-up (the feed's history is
    built before the server accepts) and for the final flush after the loop's work stopped."""

    async def since(self, first_day: date) -> list[Candle]: ...

    async def between(self, first: date, last: date, inst: str | None = None, limit: int | None = None,
                      newest: bool = False) -> list[Candle]:
        """Candles of days first..last (both included; of one instrument, or all), ascending by day; with `limit`
        the earliest (or, `newest`, the latest) that many: range queries below the daily book (SPEC 18)."""
        ...

    async def upsert(self, candles: list[Candle], settlements: Sequence[Settlement] = ()) -> None:
        """Upsert candles and, in the same transactions, futures candles' open interest and settlement (SPEC 19:
        `settlements_1d`, a NULL never replacing a value held)."""
        ...

    def since_blocking(self, first_day: date) -> list[Candle]: ...

    def settlements_since_blocking(self, first_day: date) -> list[Settlement]:
        """The stored open interest and settlement of futures candles from `first_day` on (start-up)."""
        ...

    def upsert_blocking(self, candles: list[Candle], settlements: Sequence[Settlement] = ()) -> None: ...


@dataclass(frozen=True, slots=True)
class Repositories:
    """Every repository the hub uses, over one Storage; built once by the hub (server/store/sql/backend.py)."""

    storage: Storage
    keys: Keys
    users: Users
    content: Content
    records: Records
    outbox: Outbox
    receipts: Receipts
    evidence: Evidence
    candles: Candles
