"""Ticks a second per account (SPEC 20, docs/ingest.md): a dedicated data source's publishing limit.

A bucket of `rate` tokens a second that keeps at most one second's worth; a batch of n ticks is taken whole while
the bucket is not in debt (it may go below zero, so one request of any allowed size passes), after which the
account waits until it is out of debt. GCRA (limits.py) does not fit: it admits n requests only if all n fit, so
a batch larger than one second's ticks would never pass.

`TickBuckets` is the memory engine's (this process); the Redis engine runs the same arithmetic in the script that
also keeps the batch (server/engine/redis_inbox.py), so every hub draws from one bucket. The rate is an argument
of each take: the account's own rate, or the plan's default (`--ingest-rate`).
"""

from __future__ import annotations

from collections.abc import Callable


def tick_wait(tokens: float, rate: int) -> float:
    """Seconds until a bucket holding `tokens` (<= 0) is out of debt: the next batch may go then."""
    return -tokens / rate + 1 / rate


class TickBuckets:
    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._level: dict[str, tuple[float, float]] = {}  # account -> (tokens, at)

    def take(self, account: str, n: int, rate: int) -> float:
        """0 if the `n` ticks may go now (taken), else the seconds to wait (nothing taken)."""
        now = self.clock()
        tokens, at = self._level.get(account, (float(rate), now))
        tokens = min(float(rate), tokens + (now - at) * rate)
        if tokens <= 0:
            self._level[account] = (tokens, now)
            return tick_wait(tokens, rate)
        self._level[account] = (tokens - n, now)
        return 0.0
