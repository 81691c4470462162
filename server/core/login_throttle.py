"""Login attempts per account (issue 45): exponential backoff after failures, a lockout after many. No I/O.

The per-address login bucket (SPEC 5) slows one address; credential stuffing comes from many. This counts an
account's failed logins whatever the address: after FREE_FAILURES a next attempt waits BASE_S, doubling with each
further failure up to MAX_BACKOFF_S; the LOCK_AFTER-th failure in a row locks the account for LOCK_S. An attempt
refused while waiting counts as a failure too (its password is not even checked, so a correct one is refused as a
wrong one would be: a lockout cannot be probed), which makes a fast attack a lockout and a slow one a backoff. A
success resets the count; a count is forgotten FORGET_S after its wait ended.

Keyed by the e-mail address as sent (trimmed, lower-cased), known account or not: an unknown address is
throttled alike, so the answers do not tell which addresses have accounts. This is the memory engine's store (one
hub, bounded by MAX_ACCOUNTS: the oldest entries go first) and the Redis engine's fallback while Redis is away;
server/engine/redis_logins.py keeps the same counts in Redis for every hub.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

FREE_FAILURES = 3
BASE_S = 1.0
MAX_BACKOFF_S = 60.0
LOCK_AFTER = 10
LOCK_S = 900.0
FORGET_S = 3600.0
MAX_ACCOUNTS = 100_000


@dataclass(slots=True)
class _Failures:
    count: int
    until: float  # no attempt before this instant


class LoginThrottle:
    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._failures: dict[str, _Failures] = {}

    def wait_s(self, account: str) -> float:
        """Seconds until the account may try again (0: now)."""
        entry = self._entry(account)
        return 0.0 if entry is None else max(0.0, entry.until - self.clock())

    def failed(self, account: str) -> bool:
        """Count a failure; True when it locks the account (once per lockout: the moment to tell its owner)."""
        now = self.clock()
        entry = self._entry(account) or _Failures(0, now)
        entry.count += 1
        entry.until = now + self.delay_s(entry.count)
        self._failures.pop(account, None)  # re-inserted last: the dict's order is the age of the last failure
        if len(self._failures) >= MAX_ACCOUNTS:
            del self._failures[next(iter(self._failures))]
        self._failures[account] = entry
        return entry.count == LOCK_AFTER

    def succeeded(self, account: str) -> None:
        self._failures.pop(account, None)

    @staticmethod
    def delay_s(failures: int) -> float:
        """The wait after the n-th failure in a row: none, then doubling, then the lockout."""
        if failures >= LOCK_AFTER:
            return LOCK_S
        if failures < FREE_FAILURES:
            return 0.0
        return min(MAX_BACKOFF_S, BASE_S * 2 ** (failures - FREE_FAILURES))

    def _entry(self, account: str) -> _Failures | None:
        entry = self._failures.get(account)
        if entry is not None and self.clock() >= entry.until + FORGET_S:
            del self._failures[account]
            return None
        return entry
