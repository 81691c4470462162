"""The outbox's retry policy and a delivery's failure: pure, no I/O (the job states are server/store/outbox/jobs.py)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from server.store.outbox.jobs import JobState, Retry

S = JobState


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
