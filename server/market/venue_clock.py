"""One venue's clock: trading days, sessions, status and the closing-tick rule (SPEC 16).

The rule: a tick belongs to the first trading day of its venue whose close is after it.
The close of trading day D is the venue's close time plus ``GRACE_MS`` (the exchange
stamps its closing tick at the end time), cut back to the first window of the next
trading day where that starts sooner (global FX rolls at 17:00 New York exactly).

Cost: ``trading_day`` is one ``dict.get`` keyed by the epoch hour. The table is built
lazily, 32 days at a time; an hour that holds a close maps to a ``_Split`` resolved by a
bisect (once a day per venue). ``bucket_ts`` is one more ``dict.get`` keyed by the minute.

Invariant: the tables only grow, and an entry, once written, never changes (the calendar
and notices are fixed when the clock is built).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo

from server.market.day_calendars import DayCalendar
from server.market.venues import SessionTemplate, VenueSpec, WindowSpec

HOUR_MS = 3_600_000
MINUTE_MS = 60_000
GRACE_MS = 60_000
BREAK_MAX_MS = 3 * HOUR_MS  # a pause shorter than this between two windows is a break, else closed
_CHUNK_MS = 32 * 24 * HOUR_MS
_MARGIN = timedelta(days=45)  # > the longest gap between two trading days (a month for monthly prices)
_SATURDAY = 5


class MarketStatus(StrEnum):
    OPEN = "open"
    BREAK = "break"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class Window:
    start_ms: int
    end_ms: int
    day: date  # the trading day the window belongs to


class _Split:
    """An hour holding one or more closes: ``days[bisect_right(cuts, ts)]``."""

    __slots__ = ("cuts", "days")

    def __init__(self, cuts: tuple[int, ...], days: tuple[date, ...]) -> None:
        self.cuts = cuts
        self.days = days


def _hhmm(text: str) -> time:
    hours, minutes = text.split(":")
    return time(int(hours), int(minutes))


def night_held(previous: date, day: date) -> bool:
    """A night session before ``day`` exists iff the days strictly between the previous trading
    day and ``day`` are none or exactly a Saturday and a Sunday."""
    gap = (day - previous).days - 1
    return gap == 0 or (gap == 2 and (previous + timedelta(days=1)).weekday() == _SATURDAY)


class VenueClock:
    """Trading days and sessions of one venue for one session template."""

    def __init__(self, venue: VenueSpec, template: SessionTemplate, days: DayCalendar) -> None:
        self.venue = venue
        self.template = template
        self.days = days
        self.zone = ZoneInfo(venue.zone)
        self._close = (venue.close[0], _hhmm(venue.close[1]))
        self._hours: dict[int, date | _Split] = {}
        self._closing: dict[int, tuple[int, int]] = {}  # minute -> (window end, end of its grace)
        self._sessions: dict[date, tuple[Window, ...]] = {}
        self.trading_day: Callable[[int], date]
        """The trading day a tick stamped ``ts_ms`` (epoch milliseconds) belongs to."""
        self.bucket_ts: Callable[[int], int]
        """The instant to bucket an intraday tick by: a tick within 60 s after a window's end (and
        before the next window) counts at the window's last millisecond, so it makes no lone bar."""
        self.trading_day, self.bucket_ts = self._lookups()

    # --- the per-tick lookups ------------------------------------------------
    def _lookups(self) -> tuple[Callable[[int], date], Callable[[int], int]]:
        """The two per-tick functions as closures over the tables' bound ``get`` (no attribute or
        global lookups on the hot path: measured in bench/trading_day_cost.py)."""
        hours_get, closing_get, hours = self._hours.get, self._closing.get, self._hours
        slow, build = self._resolve, self._build

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
            self._build(ts_ms // _CHUNK_MS)
            return self.trading_day(ts_ms)
        assert isinstance(entry, _Split)
        return entry.days[bisect_right(entry.cuts, ts_ms)]

    # --- calendar ----------------------------------------------------------------
    def is_trading_day(self, day: date) -> bool:
        return self.days.is_trading_day(day)

    def trading_days(self, start: date, end: date) -> list[date]:
        """Trading days d with start <= d <= end, ascending."""
        out: list[date] = []
        day = start
        while day <= end:
            if self.days.is_trading_day(day):
                out.append(day)
            day += timedelta(days=1)
        return out

    def previous_trading_day(self, day: date) -> date | None:
        for back in range(1, 62):
            candidate = day - timedelta(days=back)
            if self.days.is_trading_day(candidate):
                return candidate
        return None

    def sessions(self, day: date) -> list[tuple[datetime, datetime]]:
        """The windows of trading day ``day`` as aware datetimes in the venue zone (night first)."""
        return [(self.local(w.start_ms), self.local(w.end_ms)) for w in self.windows(day)]

    def windows(self, day: date) -> tuple[Window, ...]:
        """The windows of ``day`` in epoch ms (empty if ``day`` is not a trading day)."""
        cached = self._sessions.get(day)
        if cached is None:
            cached = self._sessions[day] = self._lay_out(day)
        return cached

    def _lay_out(self, day: date) -> tuple[Window, ...]:
        if not self.days.is_trading_day(day):
            return ()
        out: list[Window] = []
        previous = self.previous_trading_day(day) if self.template.night else None
        if previous is not None and night_held(previous, day) and day not in self.days.notices.night_cancelled:
            out.extend(self._window(previous, spec, day) for spec in self.template.night)
        specs = self.template.monday if self.template.monday and day.weekday() == 0 else self.template.day
        out.extend(self._window(day, spec, day) for spec in specs)
        return tuple(out)

    def _window(self, anchor: date, spec: WindowSpec, day: date) -> Window:
        start_off, start, end_off, end = spec
        return Window(self._at(anchor, start_off, _hhmm(start)), self._at(anchor, end_off, _hhmm(end)), day)

    def _at(self, anchor: date, offset: int, clock: time) -> int:
        local = datetime.combine(anchor + timedelta(days=offset), clock, tzinfo=self.zone)
        return int(local.timestamp()) * 1000

    def close_ms(self, day: date) -> int:
        """The instant trading day ``day`` closes (before the grace of the closing tick)."""
        return self._at(day, self._close[0], self._close[1])

    def local(self, ts_ms: int) -> datetime:
        return datetime.fromtimestamp(ts_ms / 1000, self.zone)

    def local_date(self, ts_ms: int) -> date:
        return self.local(ts_ms).date()

    # --- status ------------------------------------------------------------------
    def windows_around(self, ts_ms: int) -> list[Window]:
        """Every window of the trading days from 3 days before ``ts_ms`` to 45 after, ordered."""
        here = self.local_date(ts_ms)
        days = self.trading_days(here - timedelta(days=3), here + _MARGIN)
        return [w for d in days for w in self.windows(d)]

    def status(self, ts_ms: int) -> MarketStatus:
        """open inside a window; break in a pause shorter than 3 h between two windows; else closed."""
        previous_end: int | None = None
        for w in self.windows_around(ts_ms):
            if w.start_ms <= ts_ms < w.end_ms:
                return MarketStatus.OPEN
            if w.start_ms > ts_ms:
                short = previous_end is not None and w.start_ms - previous_end < BREAK_MAX_MS
                return MarketStatus.BREAK if short else MarketStatus.CLOSED
            previous_end = w.end_ms
        return MarketStatus.CLOSED

    def next_open(self, ts_ms: int) -> int | None:
        """Epoch ms of the first window start after ``ts_ms`` (None past the 45-day horizon)."""
        return next((w.start_ms for w in self.windows_around(ts_ms) if w.start_ms > ts_ms), None)

    def next_close(self, ts_ms: int) -> int | None:
        """Epoch ms of the first window end after ``ts_ms`` (the current window's if open)."""
        return next((w.end_ms for w in self.windows_around(ts_ms) if w.end_ms > ts_ms), None)

    # --- the lookup tables -----------------------------------------------------
    def _build(self, chunk: int) -> None:
        lo, hi = chunk * _CHUNK_MS, (chunk + 1) * _CHUNK_MS
        days = self.trading_days(self.local_date(lo) - _MARGIN, self.local_date(hi) + _MARGIN)
        closes = [self._close_with_grace(day, nxt) for day, nxt in zip(days, [*days[1:], None], strict=True)]
        for hour in range(lo // HOUR_MS, hi // HOUR_MS):
            first = bisect_right(closes, hour * HOUR_MS)
            last = bisect_right(closes, (hour + 1) * HOUR_MS - 1)
            if first == last:
                self._hours[hour] = days[first]
            else:
                self._hours[hour] = _Split(tuple(closes[first:last]), tuple(days[first:last + 1]))
        self._build_closing(days, lo, hi)

    def _close_with_grace(self, day: date, following: date | None) -> int:
        close = self.close_ms(day) + GRACE_MS
        nxt = self.windows(following) if following is not None else ()
        return min(close, nxt[0].start_ms) if nxt else close

    def _build_closing(self, days: list[date], lo: int, hi: int) -> None:
        windows = [w for d in days for w in self.windows(d)]
        for w, nxt in zip(windows, [*windows[1:], None], strict=True):
            if not lo <= w.end_ms < hi:
                continue
            limit = min(w.end_ms + GRACE_MS, nxt.start_ms if nxt is not None else w.end_ms + GRACE_MS)
            for minute in range(w.end_ms // MINUTE_MS, (limit - 1) // MINUTE_MS + 1):
                if limit > w.end_ms:
                    self._closing[minute] = (w.end_ms, limit)
