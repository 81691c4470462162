"""Outbox job states, their allowed transitions and the retry policy: pure, no I/O.

Invariants:
- `delivered` is terminal: nothing moves a delivered job, so it is never sent again.
- Only `pending` and `failed` jobs are claimed (moved to `sending`) by the worker.
- `sending -> pending` is the recovery path: a job claimed by a process that
  died (or stopped mid-send) is put back and sent again (at-least-once).
- `failed`/`dead -> pending` is the operator's `outbox retry`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from server.core.transitions import IllegalTransition, Transitions

__all__ = ["CLAIMABLE", "TRANSITIONS", "IllegalTransition", "JobState", "transition"]


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


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with full jitter, a cap, and a bounded number of attempts.

    After attempt n (1-based) fails, the next one waits uniform(0, min(cap, base * 2**(n-1)))
    seconds ("full jitter": spreads retries of many jobs so a recovering receiver is not
    hit by all of them at once). After `max_attempts` attempts the job is dead.
    """

    base_s: float = 30.0
    cap_s: float = 3600.0
    max_attempts: int = 8

    def delay(self, attempts: int, rng: Callable[[], float]) -> float:
        ceiling = min(self.cap_s, self.base_s * 2.0 ** max(0, attempts - 1))
        return ceiling * rng()

    def after_failure(self, attempts: int, now: float, rng: Callable[[], float] = random.random) -> Retry:
        if attempts >= self.max_attempts:
            return Retry(S.DEAD, None)
        return Retry(S.FAILED, now + self.delay(attempts, rng))


class DeliveryFailed(Exception):
    """A delivery attempt failed; `reason` is short and safe to store and log (no URL query, no secret)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
