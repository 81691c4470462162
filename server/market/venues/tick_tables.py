"""The per-tick lookup tables of a venue clock: epoch hour -> trading day, minute -> closing window.

Built lazily, 32 days at a time, from the clock's trading days, windows and closes; an hour
that holds a close maps to a ``_Split`` resolved by a bisect (once a day per venue). The two
per-tick functions are closures over the tables' bound ``get``: no attribute or global lookup
on the hot path (bench/trading_day_cost.py measures them).

Invariant: the tables only grow, and an entry, once written, never changes (the calendar and the
notices are fixed when the clock is built), so a reader never sees a wrong value mid-build.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from typing import Protocol

HOUR_MS = 3_600_000
MINUTE_MS = 60_000
GRACE_MS = 60_000  # the closing tick: stamped at a window's end, counted in it
_CHUNK_MS = 32 * 24 * HOUR_MS
_MARGIN = timedelta(days=45)  # > the longest gap between two trading days (a month for monthly prices)


class _Span(Protocol):
    @property
    def start_ms(self) -> int: ...
    @property
    def end_ms(self) -> int: ...


class Clock(Protocol):
    """What the tables read from a venue clock (``server.market.venues.clock.VenueClock``)."""

    def trading_days(self, start: date, end: date) -> list[date]: ...
    def windows(self, day: date) -> Sequence[_Span]: ...
    def close_ms(self, day: date) -> int: ...
    def local_date(self, ts_ms: int) -> date: ...


class _Split:
    """An hour holding one or more closes: ``days[bisect_right(cuts, ts)]``."""

    __slots__ = ("cuts", "days")

    def __init__(self, cuts: tuple[int, ...], days: tuple[date, ...]) -> None:
        self.cuts = cuts
        self.days = days


class TickTables:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.hours: dict[int, date | _Split] = {}
        self.closing: dict[int, tuple[int, int]] = {}  # minute -> (window end, end of its grace)

    def lookups(self) -> tuple[Callable[[int], date], Callable[[int], int]]:
        """``(trading_day, bucket_ts)`` for the clock."""
        hours_get, closing_get, hours = self.hours.get, self.closing.get, self.hours
        slow, build = self._resolve, self.build

        def trading_day(ts_ms: int, _hour: int = HOUR_MS, _date: type = date) -> date:
            entry = hours_get(ts_ms // _hour)
            if entry.__class__ is _date:
                return entry  # type: ignore[return-value]
            return slow(ts_ms, entry)

        def bucket_ts(ts_ms: int, _minute: int = MINUTE_MS, _hour: int = HOUR_MS) -> int:
            closing = closing_get(ts_ms // _minute)
            if closing is None:
                if ts_ms // _hour not in hours:
                    build(ts_ms // _CHUNK_MS)
                    return bucket_ts(ts_ms)
                return ts_ms
            return closing[0] - 1 if closing[0] <= ts_ms < closing[1] else ts_ms

        return trading_day, bucket_ts

    def _resolve(self, ts_ms: int, entry: date | _Split | None) -> date:
        if entry is None:
            self.build(ts_ms // _CHUNK_MS)
            entry = self.hours[ts_ms // HOUR_MS]
            if isinstance(entry, date):
                return entry
        assert isinstance(entry, _Split)
        return entry.days[bisect_right(entry.cuts, ts_ms)]

    def build(self, chunk: int) -> None:
        clock = self.clock
        lo, hi = chunk * _CHUNK_MS, (chunk + 1) * _CHUNK_MS
        days = clock.trading_days(clock.local_date(lo) - _MARGIN, clock.local_date(hi) + _MARGIN)
        closes = [self._close_with_grace(day, nxt) for day, nxt in zip(days, [*days[1:], None], strict=True)]
        for hour in range(lo // HOUR_MS, hi // HOUR_MS):
            first = bisect_right(closes, hour * HOUR_MS)
            last = bisect_right(closes, (hour + 1) * HOUR_MS - 1)
            if first == last:
                self.hours[hour] = days[first]
            else:
                self.hours[hour] = _Split(tuple(closes[first:last]), tuple(days[first:last + 1]))
        self._build_closing(days, lo, hi)

    def _close_with_grace(self, day: date, following: date | None) -> int:
        close = self.clock.close_ms(day) + GRACE_MS
        nxt = self.clock.windows(following) if following is not None else ()
        return min(close, nxt[0].start_ms) if nxt else close

    def _build_closing(self, days: list[date], lo: int, hi: int) -> None:
        windows = [w for d in days for w in self.clock.windows(d)]
        for w, nxt in zip(windows, [*windows[1:], None], strict=True):
            if not lo <= w.end_ms < hi:
                continue
            limit = w.end_ms + GRACE_MS if nxt is None else min(w.end_ms + GRACE_MS, nxt.start_ms)
            if limit <= w.end_ms:
                continue
            for minute in range(w.end_ms // MINUTE_MS, (limit - 1) // MINUTE_MS + 1):
                self.closing[minute] = (w.end_ms, limit)
