"""Outbox jobs: one row per (record, channel), moved between states by the table in store.outbox.jobs.

Every state change is one UPDATE guarded by `state IN (allowed predecessors)`,
so two processes (the hub's worker and `outbox retry`) can never move a job
along an edge the transition table forbids; a refused change raises
IllegalTransition (or JobNotFound). This module holds what both databases share (the
job type, row mapping, state lists); the SQL is in server/store/sql/sqlite_sync.py and pg_sync.py / pg_repos.py.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from server.store.outbox.jobs import (
    TRANSITIONS,
    JobState,
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
