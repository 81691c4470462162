"""Plain-data views of a venue clock for the HTTP layer: the calendar and the venue list (TradingView's fields:
tradingview.py).

Everything returns dicts, lists and strings ready for JSON; nothing here serialises.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from server.market.timefmt import iso as shanghai_iso
from server.market.venues.clock import VenueClock

MAX_CALENDAR_DAYS = 366


class CalendarRangeError(ValueError):
    """A calendar range the API answers with 400 (the message says why, ``field`` which bound)."""

    def __init__(self, message: str, field: str = "to") -> None:
        super().__init__(message)
        self.field = field


def iso(ts_ms: int, clock: VenueClock) -> str:
    """ISO 8601 with the venue's offset, seconds precision."""
    return clock.local(ts_ms).isoformat(timespec="seconds")


def calendar(clock: VenueClock, start: date, end: date) -> dict[str, Any]:
    """``{venue, from, to, days: [{date, sessions: [{start, end}]}], holidays: [{date, name}]}``,
    both ends included, at most 366 days."""
    if end < start:
        raise CalendarRangeError("'to' is before 'from'")
    if (end - start).days + 1 > MAX_CALENDAR_DAYS:
        raise CalendarRangeError(f"at most {MAX_CALENDAR_DAYS} days per calendar request")
    known_from = clock.days.known_from
    if start < known_from:
        raise CalendarRangeError(f"the {clock.venue.id} calendar is known from {known_from.isoformat()} "
                                 "(calendarKnownFrom in GET /api/v1/venues)", "from")
    days = [
        {"date": day.isoformat(),
         "sessions": [{"start": iso(w.start_ms, clock), "end": iso(w.end_ms, clock)} for w in clock.windows(day)]}
        for day in clock.trading_days(start, end)
    ]
    return {"venue": clock.venue.id, "from": start.isoformat(), "to": end.isoformat(),
            "days": days, "holidays": holidays(clock, start, end)}


def venue_summary(clock: VenueClock, now_ms: int, known_until: date, instruments: list[str]) -> dict[str, Any]:
    """One item of ``GET /api/v1/venues``: ``{id, name, timeZone, publication, status, tradingDay, nextOpen,
    nextClose, calendarKnownFrom, calendarKnownUntil, instruments}`` (instants in +08:00 as every timestamp of the
    API, or null; a calendar's session windows are in the venue's own offset)."""
    next_open, next_close = clock.next_open(now_ms), clock.next_close(now_ms)
    return {
        "id": clock.venue.id, "name": dict(clock.venue.name), "timeZone": clock.venue.zone,
        "publication": clock.venue.publication.value, "status": clock.status(now_ms).value,
        "tradingDay": clock.trading_day(now_ms).isoformat(),
        "nextOpen": None if next_open is None else shanghai_iso(next_open / 1000),
        "nextClose": None if next_close is None else shanghai_iso(next_close / 1000),
        "calendarKnownFrom": clock.days.known_from.isoformat(), "calendarKnownUntil": known_until.isoformat(),
        "instruments": list(instruments),
    }


def holidays(clock: VenueClock, start: date, end: date) -> list[dict[str, str]]:
    """Weekdays in the range on which the venue does not trade, with the closure's name."""
    out: list[dict[str, str]] = []
    day = start
    while day <= end:
        name = clock.days.holiday_name(day)
        if name is not None:
            out.append({"date": day.isoformat(), "name": name})
        day += timedelta(days=1)
    return out
