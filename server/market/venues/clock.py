"""One venue's clock: trading days, sessions, status and the closing-tick rule (SPEC 16).

The rule: a tick belongs to the first trading day of its venue whose close is after it.
The close of trading day D is the venue's close time plus the 60 s grace of the closing tick
(the exchange stamps it at the end time), cut back to the first window of the next trading day
where that starts sooner (global FX rolls at 17:00 New York exactly).

Cost: ``trading_day`` and ``bucket_ts`` are closures over ``server.market.venues.tick_tables`` (one
``dict.get`` per tick); everything else here is for requests, not ticks. Windows of a day are
laid out once and cached (the calendar and notices are fixed when the clock is built).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo

from server.market.venues.data import SessionTemplate, VenueSpec, WindowSpec
from server.market.venues.day_calendars import DayCalendar
from server.market.venues.tick_tables import HOUR_MS, TickTables

BREAK_MAX_MS = 3 * HOUR_MS  # a pause shorter than this between two windows is a break, else closed
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
        self._sessions: dict[date, tuple[Window, ...]] = {}
        self.trading_day: Callable[[int], date]
        """The trading day a tick stamped ``ts_ms`` (epoch milliseconds) belongs to."""
        self.bucket_ts: Callable[[int], int]
        """The instant to bucket an intraday tick by: a tick within 60 s after a window's end (and
        before the next window) counts at the window's last millisecond, so it makes no lone bar."""
        self.trading_day, self.bucket_ts = TickTables(self).lookups()

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
        """The last trading day before ``day`` (None if there is none within 62 days)."""
        return next((d for d in (day - timedelta(days=k) for k in range(1, 63)) if self.is_trading_day(d)), None)

    def trading_days_back(self, end: date, n: int) -> list[date]:
        """The ``n`` trading days ending at ``end`` (or at the last trading day before it), ascending:
        the days of a daily-candle history (SPEC 16: none on a shut day, none missing)."""
        if n < 0:
            raise ValueError("n must be >= 0")
        out: list[date] = []
        day: date | None = end if self.is_trading_day(end) else self.previous_trading_day(end)
        while day is not None and len(out) < n:
            out.append(day)
            day = self.previous_trading_day(day)
        out.reverse()
        return out

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
    def windows_after(self, ts_ms: int) -> Iterator[Window]:
        """The windows of the trading days from 3 days before ``ts_ms`` on, in order, for 62 days."""
        day = self.local_date(ts_ms) - timedelta(days=3)
        for _ in range(62):
            yield from self.windows(day)
            day += timedelta(days=1)

    def status(self, ts_ms: int) -> MarketStatus:
        """open inside a window; break in a pause shorter than 3 h between two windows; else closed."""
        previous_end: int | None = None
        for w in self.windows_after(ts_ms):
            if w.start_ms <= ts_ms < w.end_ms:
                return MarketStatus.OPEN
            if w.start_ms > ts_ms:
                short = previous_end is not None and w.start_ms - previous_end < BREAK_MAX_MS
                return MarketStatus.BREAK if short else MarketStatus.CLOSED
            previous_end = w.end_ms
        return MarketStatus.CLOSED

    def next_open(self, ts_ms: int) -> int | None:
        """Epoch ms of the first window start after ``ts_ms`` (None past a 2-month horizon)."""
        return next((w.start_ms for w in self.windows_after(ts_ms) if w.start_ms > ts_ms), None)

    def next_close(self, ts_ms: int) -> int | None:
        """Epoch ms of the first window end after ``ts_ms`` (the current window's if open)."""
        return next((w.end_ms for w in self.windows_after(ts_ms) if w.end_ms > ts_ms), None)
