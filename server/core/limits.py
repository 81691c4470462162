"""GCRA rate limiting: one stored timestamp (the theoretical arrival time) per bucket.

A limit of N per minute allows a burst of N, then one request every 60/N
seconds. Exact and O(1). The clock is passed in, so tests are exact.
The store is a seam: the in-memory dict is the default; a Redis store running
the same arithmetic in a Lua script can replace it for several hubs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from math import floor
from typing import Protocol

MAX_HEADER_SETS = 4096
# (policy, limit, remaining, reset, retry-after) -> header fields; dict reads and writes are atomic, so a runtime
# thread and the event loop may share it
_HEADERS: dict[tuple[str, int, int, int, int], tuple[tuple[str, str], ...]] = {}


@dataclass(slots=True)  # treat as immutable; not frozen: one is built per request, and frozen costs ~1 us more
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset: float  # seconds until the bucket is full again
    retry_after: float  # seconds until the next request is allowed (0 when allowed)
    policy: str  # name used in the RateLimit-Policy field

    def headers(self) -> list[tuple[str, str]]:
        return list(self.header_tuple())

    def header_tuple(self) -> tuple[tuple[str, str], ...]:
        """The rate-limit header fields, built once per distinct (policy, limit, remaining, reset, retry) and
        shared: a busy key repeats the same few values, and formatting five fields costs ~1 us per request."""
        reset = max(0, math.ceil(self.reset))
        retry = 0 if self.allowed else self.retry_after_s
        memo_key = (self.policy, self.limit, self.remaining, reset, retry)
        out = _HEADERS.get(memo_key)
        if out is None:
            fields = [
                ("x-ratelimit-limit", str(self.limit)),
                ("x-ratelimit-remaining", str(self.remaining)),
                ("x-ratelimit-reset", str(reset)),
                ("ratelimit-policy", f'"{self.policy}";q={self.limit};w=60'),
                ("ratelimit", f'"{self.policy}";r={self.remaining};t={reset}'),
            ]
            if not self.allowed:
                fields.append(("retry-after", str(retry)))
            out = tuple(fields)
            if len(_HEADERS) >= MAX_HEADER_SETS:
                _HEADERS.clear()
            _HEADERS[memo_key] = out
        return out

    @property
    def retry_after_s(self) -> int:
        return max(1, math.ceil(self.retry_after))


MINUTE_NS = 60_000_000_000
# The highest rate a key may have (`keys create --rate` refuses more): one request per 60 ns of
# GCRA time, far above what one process serves. The limiter clamps any rate it is given into
# 1..MAX_RATE, so a rate stored by hand or by an older version can never divide by zero.
MAX_RATE = 1_000_000_000


MAX_RATES = 4096  # distinct (per_minute, policy) kept by shared_rate; emptied when full


class Rate:
    """A rate and its policy with the constants GCRA derives from them, made once (`shared_rate`): the hot path's
    `take` then does no division for them, and keeps its header fields per (remaining, reset) here, keyed by
    one int instead of a tuple."""

    __slots__ = ("fields", "full", "interval", "per_minute", "policy", "window")

    def __init__(self, per_minute: int, policy: str) -> None:
        if not 0 < per_minute <= MAX_RATE:
            per_minute = bounded_rate(per_minute)
        self.per_minute, self.policy = per_minute, policy
        self.interval = MINUTE_NS // per_minute
        self.window = self.interval * per_minute  # burst capacity expressed in time
        self.fields: dict[int, tuple[tuple[str, str], ...]] = {}  # remaining * 64 + reset (1..60) -> fields
        # the answer of a full bucket (the request leaves per_minute - 1, the bucket is full again in one interval)
        self.full = Decision(True, per_minute, per_minute - 1, self.interval / 1e9, 0.0, policy).header_tuple()

    def allowed_fields(self, remaining: int, reset: int, ahead_s: float) -> tuple[tuple[str, str], ...]:
        """An allowed request's header fields, kept in `fields` under remaining * 64 + reset (`reset`: ceil(ahead_s),
        1..60): the miss of the memo `Gcra.take` and the Redis limiter read first."""
        out = Decision(True, self.per_minute, remaining, ahead_s, 0.0, self.policy).header_tuple()
        if len(self.fields) >= MAX_HEADER_SETS:
            self.fields.clear()
        self.fields[remaining * 64 + reset] = out
        return out


class LimiterStore(Protocol):
    def get(self, key: str) -> int | None: ...

    def set(self, key: str, tat: int) -> None: ...

    def prune(self, now: float) -> int:
        """Forget buckets that are full again (a store with expiring keys returns 0)."""
        ...


class MemoryStore:
    """Bucket timestamps in a dict; `prune` drops buckets that are full again."""

    def __init__(self) -> None:
        self._tat: dict[str, int] = {}

    def get(self, key: str) -> int | None:
        return self._tat.get(key)

    def set(self, key: str, tat: int) -> None:
        self._tat[key] = tat

    def prune(self, now: float) -> int:
        now_ns = int(now * 1e9)
        # list(items()) copies in one C call: safe while a runtime thread adds buckets (Robyn's sync handlers)
        stale = [k for k, tat in list(self._tat.items()) if tat <= now_ns]
        for k in stale:
            if self._tat.get(k, now_ns + 1) <= now_ns:
                self._tat.pop(k, None)
        return len(stale)

    def __len__(self) -> int:
        return len(self._tat)


class Gcra:
    """Arithmetic in integer nanoseconds, so a burst of N is exactly N however long the run."""

    def __init__(self, store: MemoryStore | None = None) -> None:
        self.store = store if store is not None else MemoryStore()
        self._tats = self.store._tat  # the hot path reads and writes the dict itself (two method calls less)

    def check(self, key: str, per_minute: int, now: float, policy: str = "default") -> Decision:
        if not 0 < per_minute <= MAX_RATE:
            per_minute = bounded_rate(per_minute)
        interval = MINUTE_NS // per_minute
        window = interval * per_minute  # burst capacity expressed in time
        now_ns = int(now * 1e9)
        stored = self.store.get(key)
        tat = now_ns if stored is None or stored < now_ns else int(stored)
        new_tat = tat + interval
        allow_at = new_tat - window
        if now_ns < allow_at:
            return Decision(False, per_minute, 0, (tat - now_ns) / 1e9, (allow_at - now_ns) / 1e9, policy)
        self.store.set(key, new_tat)
        remaining = (window - (new_tat - now_ns)) // interval
        return Decision(True, per_minute, remaining, (new_tat - now_ns) / 1e9, 0.0, policy)

    def take(self, key: str, rate: Rate, now: float) -> tuple[tuple[str, str], ...] | None:
        """`check` for the hot path: an allowed request's header fields (shared, built once per distinct value of
        the rate), or None, leaving the bucket as it was, for a refusal (the caller then runs `check` for the 429).
        The same arithmetic as `check`, with the rate's constants made once (`Rate`)."""
        now_ns = floor(now * 1e9)  # int(), for a positive time; math.floor skips int()'s type call (~300 fewer)
        tats = self._tats
        stored = tats.get(key)
        if stored is None or stored <= now_ns:  # a full bucket (a key below its rate): the same answer every time
            tats[key] = now_ns + rate.interval
            return rate.full
        new_tat = stored + rate.interval
        ahead = new_tat - now_ns  # how far the bucket's time runs ahead of now once this request is taken
        if ahead > rate.window:
            return None
        tats[key] = new_tat
        remaining = (rate.window - ahead) // rate.interval
        reset = -(-ahead // 1_000_000_000)  # ceil(ahead / 1 s): 1..60
        out = rate.fields.get(remaining * 64 + reset)
        return out if out is not None else rate.allowed_fields(remaining, reset, ahead / 1e9)

    def would_allow(self, key: str, per_minute: int, now: float) -> bool:
        """Whether `check` would allow a request now, without taking it (the bucket is left as it is)."""
        if not 0 < per_minute <= MAX_RATE:
            per_minute = bounded_rate(per_minute)
        interval = MINUTE_NS // per_minute
        stored = self.store.get(key)
        now_ns = int(now * 1e9)
        return stored is None or int(stored) + interval - interval * per_minute <= now_ns


_RATES: dict[tuple[int, str], Rate] = {}


def shared_rate(per_minute: int, policy: str) -> Rate:
    """The `Rate` of (per_minute, policy), made once and shared (dict reads and writes are atomic: a runtime thread
    and the event loop may both ask)."""
    key = (per_minute, policy)
    rate = _RATES.get(key)
    if rate is None:
        if len(_RATES) >= MAX_RATES:
            _RATES.clear()
        rate = _RATES[key] = Rate(per_minute, policy)
    return rate


def bounded_rate(per_minute: float) -> int:
    """Any rate as one the arithmetic handles: 1..MAX_RATE (NaN, zero and negatives become 1)."""
    if per_minute > MAX_RATE:
        return MAX_RATE
    if not per_minute >= 1:
        return 1
    return int(per_minute)
