"""Outbox jobs in SQLite: one row per (record, channel), moved between states by the table in notify.jobs.

Every state change is one UPDATE guarded by `state IN (allowed predecessors)`,
so two processes (the hub's worker and `outbox retry`) can never move a job
along an edge the transition table forbids; a refused change raises
IllegalTransition (or JobNotFound).
"""

from __future__ import annotations

import secrets
import sqlite3
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from server.notify.jobs import (
    BACKLOG,
    CLAIMABLE,
    RETRYABLE,
    TRANSITIONS,
    IllegalTransition,
    JobState,
    Retry,
)

MAX_ERROR_CHARS = 500


class JobNotFound(LookupError):
    pass


@dataclass(frozen=True, slots=True)
class Job:
    id: str
    record_kind: str
    record_id: str
    channel: str
    target: str
    payload: dict[str, Any]
    state: JobState
    attempts: int
    next_attempt_at: float
    last_error: str | None
    idempotency_id: str
    created_at: float
    updated_at: float
    delivered_at: float | None


def job_from_row(row: Any) -> Job:
    return Job(
        row["id"], row["record_kind"], row["record_id"], row["channel"], row["target"],
        orjson.loads(row["payload"]), JobState(row["state"]), row["attempts"], row["next_attempt_at"],
        row["last_error"], row["idempotency_id"], row["created_at"], row["updated_at"], row["delivered_at"],
    )


def predecessors(target: JobState) -> tuple[str, ...]:
    return tuple(s.value for s, nexts in TRANSITIONS.items() if target in nexts)


def states_in(states: Iterable[JobState | str]) -> str:
    """`('pending','failed')`: a literal list of job states for an IN clause."""
    return "(" + ",".join(f"'{JobState(s).value}'" for s in states) + ")"


def new_job_id() -> str:
    return "job_" + secrets.token_hex(8)


JOB_COLUMNS = ("id, record_kind, record_id, channel, target, payload, state, next_attempt_at, idempotency_id, "
               "created_at, updated_at")  # what job_rows gives


def job_rows(kind: str, record_id: str, payload: dict[str, Any], channels: Iterable[tuple[str, str]],
             now: float) -> list[tuple[Any, ...]]:
    """One pending job per (channel kind, target), as the values of JOB_COLUMNS."""
    body = orjson.dumps(payload, default=str).decode()
    return [
        (new_job_id(), kind, record_id, ch_kind, target, body, JobState.PENDING.value, now, uuid.uuid4().hex,
         now, now)
        for ch_kind, target in channels
    ]




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
