"""The console's values (SPEC 17) and a small dialect seam, so one repository serves SQLite and PostgreSQL.

The console's queries are plain SQL both databases accept (`?` placeholders, rewritten to `%s` for psycopg;
`INSERT ... ON CONFLICT ... DO UPDATE`), run by the synchronous `ConsoleRepo` (server/store/accounts/console_repo.py)
on a `Db`: SQLite's connection (the storage threads, or a CLI command's own) or a psycopg one (the sync pool,
off the loop). A check-then-write runs in `Db.transaction()`, which first touches the account's row, so two
processes serialise on it in either database.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from server.store.sql.sqlite_tx import joined_transaction

PLANS = ("free", "professional", "enterprise")
PAID_PLANS = ("professional", "enterprise")
KEY_CAPS = {"free": 1, "professional": 10, "enterprise": 100}  # active keys per account


class Role(Enum):
    CUSTOMER = "customer"
    OPERATOR = "operator"


class EventKind(Enum):
    CREATED = "created"
    ROTATED = "rotated"
    REVOKED = "revoked"
    RELABELLED = "relabelled"
    PLAN_REQUESTED = "plan_requested"
    PLAN_CHANGED = "plan_changed"
    PLAN_REJECTED = "plan_rejected"
    LIMITS_CHANGED = "limits_changed"  # an operator's `users limits` (SPEC 20, docs/ingest.md)


class SubscriptionStatus(Enum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


class CapReached(Exception):
    """The account already holds its plan's number of active keys."""

    def __init__(self, plan: str, cap: int) -> None:
        super().__init__(f"the {plan} plan allows {cap} active key{'s' if cap != 1 else ''}")
        self.plan, self.cap = plan, cap


class OpenRequest(Exception):
    """The account already has a subscription request waiting for a decision."""


class NotPending(Exception):
    """The subscription request was decided already."""


@dataclass(frozen=True, slots=True)
class Account:
    id: str
    email: str
    name: str | None
    company: str | None
    plan: str
    role: Role
    rate: int | None  # enterprise: requests/minute; else the plan's (settings)
    created_at: float
    disabled_at: float | None

    @property
    def is_operator(self) -> bool:
        return self.role is Role.OPERATOR


@dataclass(frozen=True, slots=True)
class ConsoleKey:
    id: str
    label: str | None
    plan: str
    rate: int | None
    prefix: str | None
    created_at: float
    last_used_at: float | None
    revoked_at: float | None
    scope: str = "read"  # read or ingest (SPEC 20: an ingest key publishes and reads nothing)


@dataclass(frozen=True, slots=True)
class Subscription:
    id: str
    user_id: str
    user_email: str | None
    plan: str
    message: str | None
    status: SubscriptionStatus
    rate: int | None
    created_at: float
    decided_at: float | None


@dataclass(frozen=True, slots=True)
class Event:
    id: str
    at: float
    kind: str
    key_id: str | None
    detail: str | None
    ip: str | None


@dataclass(frozen=True, slots=True)
class UsageRow:
    key_id: str
    day: str  # YYYY-MM-DD, Asia/Shanghai
    requests: int
    refused: int
    client_errors: int
    ws_connections: int
    ws_messages: int


# the metering's flush: (key id, day) -> (requests, refused, client errors, ws connections, ws messages)
UsageCounts = dict[tuple[str, str], tuple[int, int, int, int, int]]


def account_from_row(r: Any) -> Account:
    return Account(r["id"], r["email"], r["name"], r["company"], r["plan"], Role(r["role"]), r["rate"],
                   r["created_at"], r["disabled_at"])


def key_from_row(r: Any) -> ConsoleKey:
    return ConsoleKey(r["id"], r["label"], r["plan"], r["rate"], r["prefix"], r["created_at"], r["last_used_at"],
                      r["revoked_at"], r["scope"])


def subscription_from_row(r: Any) -> Subscription:
    return Subscription(r["id"], r["user_id"], r["user_email"], r["plan"], r["message"],
                        SubscriptionStatus(r["status"]), r["rate"], r["created_at"], r["decided_at"])


def event_from_row(r: Any) -> Event:
    return Event(r["id"], r["at"], r["kind"], r["key_id"], r["detail"], r["ip"])


class Db(Protocol):
    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]: ...

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute; the number of rows changed."""
        ...

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    def transaction(self) -> Any: ...


class SqliteDb:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return [dict(r) for r in self.conn.execute(sql, tuple(params))]

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.conn.execute(sql, tuple(params)).rowcount

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    def transaction(self) -> Any:
        return joined_transaction(self.conn)


class PgDb:
    """A psycopg connection (dict rows, autocommit) behind the same calls: `?` becomes `%s`."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cur = self.conn.execute(sql.replace("?", "%s"), tuple(params))
        return list(cur.fetchall()) if cur.description else []

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return int(self.conn.execute(sql.replace("?", "%s"), tuple(params)).rowcount)

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(sql.replace("?", "%s"), rows)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self.conn.transaction():
            yield
