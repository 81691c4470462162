"""SQLite's synchronous repositories, in SQLite's dialect (`?` placeholders, `INSERT OR IGNORE`, BEGIN IMMEDIATE).

The CLI commands use them in their own process (server/store/sql/admin.py), the hub through the storage threads
(server/store/sql/sqlite_repos.py), `open_db` for the seed steps. Each takes a `sqlite3.Connection` (rows as
`sqlite3.Row`); multi-statement writes run in `transaction(conn)`, so one writer at a time, between processes
too. PostgreSQL's counterparts are in server/store/sql/pg_sync.py; both share only the neutral modules' types,
helpers and logic (keys.py, users.py, content.py, candles.py, outbox.py, records.py, receipts.py).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import date
from typing import Any

from server.core.keys import ApiKey, hash_key, key_from_row, new_key
from server.store.accounts.console_schema import OWNER_ENABLED  # issue 32
from server.store.accounts.users import DuplicateEmail, User, new_user, normalize_email, user_from_row
from server.store.history.candle_rows import (
    CHUNK,
    Candle,
    Settlement,
    between_params,
    between_sql,
    settlement_of,
    write_chunks,
)
from server.store.outbox.jobs import BACKLOG, CLAIMABLE, RETRYABLE, TRANSITIONS, IllegalTransition, JobState, Retry
from server.store.outbox.queue import (
    JOB_COLUMNS,
    MAX_ERROR_CHARS,
    Job,
    JobNotFound,
    job_from_row,
    job_rows,
    predecessors,
    states_in,
)
from server.store.site.content import CONTENT_COLUMNS, IMPORT_CHUNK, ContentItem, ContentKind, content_values, item_view
from server.store.site.evidence_sqlite import EvidenceLog
from server.store.site.receipts import (
    INSERT_COLUMNS,
    PUBLIC_COLUMNS,
    ReceiptBook,
    ReceiptData,
    ReceiptStatus,
    public_view,
    receipt_from_row,
)
from server.store.site.records import (
    Accepted,
    ChannelSpec,
    Cooperation,
    Inquiry,
    RecordWrite,
    cooperation_write,
    inquiry_write,
)
from server.store.sources.schema import KEY_ROWS  # SPEC 20: each key with its account's ticks a second
from server.store.sql.errors import integrity_errors
from server.store.sql.sqlite_tx import transaction


class KeyRepo:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def create(self, plan: str, rate: int | None = None, label: str | None = None) -> tuple[ApiKey, str]:
        key, secret = new_key(plan, rate, label, time.time())
        self.conn.execute(
            "INSERT INTO api_keys (id, key_hash, plan, rate, label, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (key.id, hash_key(secret), plan, rate, label, key.created_at),
        )
        return key, secret

    def create_demo_key(self) -> str | None:
        """On a new database, one professional demo key and its meta marker in one transaction; its secret, or
        None if this database already had its demo key."""
        with transaction(self.conn):
            if self.conn.execute("SELECT 1 FROM meta WHERE key = 'demo_key'").fetchone():
                return None
            key, secret = self.create("professional", label="demo")
            self.conn.execute("INSERT INTO meta (key, value) VALUES ('demo_key', ?)", (key.id,))
        return secret

    def list(self) -> list[ApiKey]:
        return [key_from_row(r) for r in self.conn.execute("SELECT * FROM api_keys ORDER BY created_at")]

    def revoke(self, key_id: str) -> bool:
        cur = self.conn.execute(
            "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (time.time(), key_id)
        )
        return cur.rowcount == 1

    def by_hash(self, key_hash: str) -> ApiKey | None:
        sql = f"{KEY_ROWS} WHERE key_hash = ? AND {OWNER_ENABLED}"  # issue 32: disabled owners' keys
        row = self.conn.execute(sql, (key_hash,)).fetchone()
        return key_from_row(row) if row else None

    def active_by_hash(self) -> dict[str, ApiKey]:
        rows = self.conn.execute(f"{KEY_ROWS} WHERE revoked_at IS NULL AND {OWNER_ENABLED}")
        return {r["key_hash"]: key_from_row(r) for r in rows}

class UserRepo:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def create(
        self, email: str, password_hash: str, name: str | None = None, company: str | None = None,
        now: float | None = None,
    ) -> User:
        user = new_user(email, password_hash, name, company, time.time() if now is None else now)
        try:
            self.conn.execute(
                "INSERT INTO users (id, email, password_hash, name, company, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (user.id, user.email, user.password_hash, user.name, user.company, user.created_at),
            )
        except integrity_errors():
            raise DuplicateEmail(user.email) from None
        return user

    def by_email(self, email: str) -> User | None:
        row = self.conn.execute("SELECT * FROM users WHERE email = ?", (normalize_email(email),)).fetchone()
        return user_from_row(row) if row else None

    def by_id(self, user_id: str) -> User | None:
        row = self.conn.execute("SELECT * FROM users WHERE id = ?", (user_id,)).fetchone()
        return user_from_row(row) if row else None

    def disable(self, email: str, now: float | None = None) -> bool:
        cur = self.conn.execute(
            "UPDATE users SET disabled_at = ? WHERE email = ? AND disabled_at IS NULL",
            (time.time() if now is None else now, normalize_email(email)),
        )
        return cur.rowcount == 1

    def set_password_hash(self, user_id: str, password_hash: str) -> None:
        self.conn.execute("UPDATE users SET password_hash = ? WHERE id = ?", (password_hash, user_id))


class ContentRepo:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def page(self, kind: ContentKind, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
        """Items newest first (ties by id) and the total count of that kind."""
        rows = self.conn.execute(
            f"SELECT {CONTENT_COLUMNS} FROM content_items WHERE kind = ? "
            "ORDER BY published_at DESC, id DESC LIMIT ? OFFSET ?",
            (kind.value, limit, offset),
        ).fetchall()
        (total,) = self.conn.execute("SELECT COUNT(*) FROM content_items WHERE kind = ?", (kind.value,)).fetchone()
        return [item_view(r) for r in rows], int(total)

    def version(self) -> int:
        """The content's version: items are only inserted (never updated or deleted), so their count."""
        (count,) = self.conn.execute("SELECT COUNT(*) FROM content_items").fetchone()
        return int(count)

    def add_many(self, items: Iterable[ContentItem], now: float | None = None) -> int:
        """Insert items not yet present (same id); returns how many were new. Caller owns the transaction."""
        now = time.time() if now is None else now
        added = 0
        for item in items:
            cur = self.conn.execute(
                f"INSERT OR IGNORE INTO content_items ({CONTENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                content_values(item, now),
            )
            added += cur.rowcount
        return added

    def import_items(self, items: list[ContentItem], chunk: int = IMPORT_CHUNK) -> int:
        """`add_many` in transactions of `chunk` items; returns how many were new."""
        added = 0
        for start in range(0, len(items), chunk):
            with transaction(self.conn):
                added += self.add_many(items[start:start + chunk])
        return added


class CandleRepo:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def upsert(self, candles: list[Candle], chunk: int = CHUNK, settlements: Sequence[Settlement] = ()) -> None:
        """Insert or replace candles, `chunk` rows per transaction (an upsert is idempotent, so a
        failure part-way leaves nothing a re-run would not fix); a futures candle's settlement in its transaction
        (a NULL never replaces a value held)."""
        for rows, settled in write_chunks(candles, settlements, chunk):
            with transaction(self.conn):
                self.conn.executemany(
                    "INSERT INTO candles (instrument, day, o, h, l, c, v) VALUES (?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (instrument, day) DO UPDATE SET o=excluded.o, h=excluded.h, l=excluded.l, "
                    "c=excluded.c, v=excluded.v",
                    rows,
                )
                self.conn.executemany(
                    "INSERT INTO settlements_1d (instrument, day, oi, s) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (instrument, day) DO UPDATE SET oi=COALESCE(excluded.oi, settlements_1d.oi), "
                    "s=COALESCE(excluded.s, settlements_1d.s)",
                    settled,
                )

    def settlements_since(self, first_day: date) -> list[Settlement]:
        rows = self.conn.execute("SELECT instrument, day, oi, s FROM settlements_1d WHERE day >= ? ORDER BY day",
                                 (first_day.isoformat(),))
        return [settlement_of(r) for r in rows]

    def since(self, first_day: date) -> list[Candle]:
        rows = self.conn.execute(
            "SELECT instrument, day, o, h, l, c, v FROM candles WHERE day >= ? ORDER BY day",
            (first_day.isoformat(),),
        )
        return [(r[0], date.fromisoformat(r[1]), r[2], r[3], r[4], r[5], r[6]) for r in rows]

    def between(self, first: date, last: date, inst: str | None = None, limit: int | None = None,
                newest: bool = False) -> list[Candle]:
        rows = self.conn.execute(between_sql(inst, limit, newest, "?"), between_params(first, last, inst, limit))
        out = [(r[0], date.fromisoformat(r[1]), r[2], r[3], r[4], r[5], r[6]) for r in rows]
        return out[::-1] if newest else out


class OutboxRepo:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def add(self, kind: str, record_id: str, payload: dict[str, Any],
            channels: Iterable[tuple[str, str]], now: float) -> int:
        """Insert one pending job per (channel kind, target); runs in the caller's transaction."""
        rows = job_rows(kind, record_id, payload, channels, now)
        self.conn.executemany(f"INSERT INTO outbox_jobs ({JOB_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
        return len(rows)

    def claim_due(self, now: float, limit: int) -> list[Job]:
        """Atomically move up to `limit` due pending/failed jobs to sending, counting the attempt."""
        rows = self.conn.execute(
            "UPDATE outbox_jobs SET state = 'sending', attempts = attempts + 1, updated_at = ? "
            f"WHERE id IN (SELECT id FROM outbox_jobs WHERE state IN {states_in(CLAIMABLE)} "
            "AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?) "
            f"AND state IN {states_in(CLAIMABLE)} RETURNING *",
            (now, now, limit),
        ).fetchall()
        return sorted((job_from_row(r) for r in rows), key=lambda j: j.next_attempt_at)

    def mark_delivered(self, job_id: str, now: float) -> None:
        self._move(job_id, JobState.DELIVERED, "last_error = NULL, delivered_at = ?", (now,), now)

    def mark_failed(self, job_id: str, retry: Retry, error: str, now: float) -> None:
        at = retry.at if retry.at is not None else now
        self._move(job_id, retry.state, "last_error = ?, next_attempt_at = ?", (error[:MAX_ERROR_CHARS], at), now)

    def retry(self, job_id: str, now: float) -> Job:
        """Operator retry: a failed or dead job goes back to pending with its attempts reset."""
        self._move(job_id, JobState.PENDING, "attempts = 0, next_attempt_at = ?", (now,), now,
                   only_from=RETRYABLE)
        return self.get(job_id)

    def release(self, job_ids: Iterable[str], now: float) -> int:
        """Put jobs this process claimed but did not finish (stop mid-send) back to pending."""
        ids = list(job_ids)
        if not ids:
            return 0
        marks = ",".join("?" * len(ids))
        cur = self.conn.execute(
            f"UPDATE outbox_jobs SET state = 'pending', next_attempt_at = ?, updated_at = ? "
            f"WHERE state = 'sending' AND id IN ({marks})",
            (now, now, *ids),
        )
        return cur.rowcount

    def recover(self, now: float) -> int:
        """At worker start: jobs left in sending by a crashed process go back to pending (at-least-once)."""
        cur = self.conn.execute(
            "UPDATE outbox_jobs SET state = 'pending', next_attempt_at = ?, updated_at = ?, "
            "last_error = COALESCE(last_error, 'interrupted by a restart') WHERE state = 'sending'",
            (now, now),
        )
        return cur.rowcount

    def get(self, job_id: str) -> Job:
        row = self.conn.execute("SELECT * FROM outbox_jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise JobNotFound(job_id)
        return job_from_row(row)

    def list_jobs(self, state: JobState | None = None, limit: int = 1000) -> list[Job]:
        if state is None:
            rows = self.conn.execute("SELECT * FROM outbox_jobs ORDER BY created_at, id LIMIT ?", (limit,))
        else:
            rows = self.conn.execute(
                "SELECT * FROM outbox_jobs WHERE state = ? ORDER BY created_at, id LIMIT ?", (state.value, limit)
            )
        return [job_from_row(r) for r in rows]

    def for_record(self, kind: str, record_id: str) -> list[Job]:
        rows = self.conn.execute(
            "SELECT * FROM outbox_jobs WHERE record_kind = ? AND record_id = ? ORDER BY id", (kind, record_id)
        )
        return [job_from_row(r) for r in rows]

    def counts(self, include_delivered: bool = False) -> dict[JobState, int]:
        """Jobs per state; delivered ones only on request (they grow without bound, the rest should not)."""
        out = dict.fromkeys(JobState, 0)
        states = list(JobState) if include_delivered else [s for s in JobState if s is not JobState.DELIVERED]
        for row in self.conn.execute(
            f"SELECT state, COUNT(*) FROM outbox_jobs WHERE state IN {states_in(states)} GROUP BY state"
        ):
            out[JobState(row[0])] = row[1]
        return out

    def next_due(self) -> float | None:
        """When the earliest pending or failed job falls due (None when there is none)."""
        row = self.conn.execute(
            f"SELECT MIN(next_attempt_at) FROM outbox_jobs WHERE state IN {states_in(CLAIMABLE)}"
        ).fetchone()
        return None if row[0] is None else float(row[0])

    def backlog(self) -> int:
        row = self.conn.execute(f"SELECT COUNT(*) FROM outbox_jobs WHERE state IN {states_in(BACKLOG)}").fetchone()
        return int(row[0])

    def _move(self, job_id: str, target: JobState, sets: str, params: tuple[Any, ...], now: float,
              only_from: Iterable[JobState] | None = None) -> None:
        allowed = predecessors(target)
        sources = tuple(s.value for s in only_from if s.value in allowed) if only_from else allowed
        cur = self.conn.execute(
            f"UPDATE outbox_jobs SET state = ?, updated_at = ?, {sets} WHERE id = ? AND state IN {states_in(sources)}",
            (target.value, now, *params, job_id),
        )
        if cur.rowcount == 0:
            raise IllegalTransition(TRANSITIONS.machine, self.get(job_id).state, target)


class RecordRepo:
    def __init__(
        self, conn: sqlite3.Connection, clock: Callable[[], float] = time.time,
        channels: Sequence[ChannelSpec] = (),
    ) -> None:
        self.conn = conn
        self.clock = clock
        self.channels = tuple(channels)

    def add_inquiry(self, q: Inquiry) -> Accepted:
        return self.insert(inquiry_write(q, self.clock()))

    def add_cooperation(self, c: Cooperation) -> Accepted:
        return self.insert(cooperation_write(c, self.clock()))

    def insert(self, w: RecordWrite) -> Accepted:
        """The record and one job per channel, in one transaction."""
        with transaction(self.conn):
            self.conn.execute(f"INSERT INTO {w.table} ({w.columns}) VALUES ({', '.join('?' * len(w.params))})",
                              w.params)
            if self.channels:
                OutboxRepo(self.conn).add(w.kind, w.payload["id"], w.payload, self.channels, w.now)
        return w.accepted

    def inquiry(self, record_id: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT * FROM inquiries WHERE id = ?", (record_id,)).fetchone()
        return dict(row) if row else None

    def cooperation(self, record_id: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT * FROM cooperations WHERE id = ?", (record_id,)).fetchone()
        return dict(row) if row else None


class ReceiptRepo(ReceiptBook):
    """Receipts in a SQLite connection."""

    def __init__(self, conn: sqlite3.Connection, evidence: EvidenceLog | None = None) -> None:
        self.conn = conn
        self.evidence = evidence if evidence is not None else EvidenceLog(conn)

    def write_transaction(self) -> AbstractContextManager[object]:
        return transaction(self.conn)

    def load(self, receipt_no: str) -> tuple[ReceiptData, str] | None:
        row = self.conn.execute("SELECT * FROM receipts WHERE receipt_no = ?", (receipt_no,)).fetchone()
        return None if row is None else receipt_from_row(row)

    def insert_row(self, values: tuple[Any, ...]) -> None:
        self.conn.execute(f"INSERT INTO receipts ({INSERT_COLUMNS}) VALUES ({', '.join('?' * len(values))})", values)

    def update_status(self, receipt_no: str, status: ReceiptStatus, digest: str, now: float) -> None:
        self.conn.execute("UPDATE receipts SET status = ?, evidence_hash = ?, updated_at = ? WHERE receipt_no = ?",
                          (status.value, digest, now, receipt_no))

    def public(self, receipt_no: str) -> dict[str, Any] | None:
        row = self.conn.execute(f"SELECT {PUBLIC_COLUMNS} FROM receipts WHERE receipt_no = ?", (receipt_no,)
                                ).fetchone()
        return None if row is None else public_view(row)
