"""Outbox job states, their allowed transitions and a retry's outcome: pure, no I/O (next to the outbox
repositories that move jobs along them; the retry policy is server/notify/jobs.py).

Invariants:
- `delivered` is terminal: nothing moves a delivered job, so it is never sent again.
- Only `pending` and `failed` jobs are claimed (moved to `sending`) by the worker.
- `sending -> pending` is the recovery path: a job claimed by a process that
  died (or stopped mid-send) is put back and sent again (at-least-once).
- `failed`/`dead -> pending` is the operator's `outbox retry`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from server.core.transitions import IllegalTransition, Transitions

__all__ = ["BACKLOG", "CLAIMABLE", "RETRYABLE", "TRANSITIONS", "IllegalTransition", "JobState", "Retry", "transition"]


class JobState(StrEnum):
    PENDING = "pending"
    SENDING = "sending"
    DELIVERED = "delivered"
    FAILED = "failed"
    DEAD = "dead"


S = JobState
TRANSITIONS = Transitions("outbox job", JobState, {
    S.PENDING: {S.SENDING},
    S.SENDING: {S.DELIVERED, S.FAILED, S.DEAD, S.PENDING},
    S.FAILED: {S.SENDING, S.PENDING},
    S.DEAD: {S.PENDING},
    S.DELIVERED: set(),
})
CLAIMABLE = (S.PENDING, S.FAILED)
RETRYABLE = (S.FAILED, S.DEAD)
BACKLOG = (S.PENDING, S.FAILED, S.SENDING)


def transition(current: JobState, target: JobState) -> JobState:
    """Return `target` if the move is allowed, else raise IllegalTransition."""
    return TRANSITIONS.check(current, target)


@dataclass(frozen=True, slots=True)
class Retry:
    """What happens after a failed attempt: `state` is failed (retry at `at`) or dead (at is None)."""

    state: JobState
    at: float | None
