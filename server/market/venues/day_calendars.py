"""Which dates a venue trades on: maintained holiday packages plus the exchange notices.

- PRC venues: ``chinese-calendar`` (the State Council's yearly holiday notice). Chinese
  exchanges never trade on a weekend, not even on a make-up workday (调休); CFETS does.
- Other venues: the ``holidays`` package's financial calendars (IFEU, XCME, XSES ...).
- Every calendar has ``known_from`` (before it: unknown, asked of no calendar) and ``known_until``; past
  ``known_until`` a date is a trading day iff it is a weekday
  and the calendar logs that once (SPEC 16), not once per call.
"""

from __future__ import annotations

import logging
from datetime import date
from typing import Any

import chinese_calendar
import holidays

from server.market.venues.calendar_notices import VenueNotices
from server.market.venues.data import CalendarKind, VenueSpec

log = logging.getLogger(__name__)

_SATURDAY = 5
KNOWN_FROM = date(1970, 1, 1)  # the first day of every calendar but a maintained package's that starts later


def prc_known_from() -> date:
    """The first day of the first year chinese-calendar knows (before it the package raises NotImplementedError)."""
    first = min(chinese_calendar.constants.holidays)  # type: ignore[attr-defined]
    return date(first.year, 1, 1)


def prc_known_until() -> date:
    """The last day of the last year chinese-calendar has the State Council's notice for."""
    last = max(chinese_calendar.constants.holidays)  # type: ignore[attr-defined]
    return date(last.year, 12, 31)


class DayCalendar:
    """Trading dates of one venue (immutable after construction but for the one-time log flag)."""

    def __init__(self, venue: VenueSpec, notices: VenueNotices | None = None) -> None:
        self.venue_id = venue.id
        self.kind = venue.calendar
        self.notices = notices or VenueNotices()
        self._code = venue.calendar_code
        self._years: dict[int, Any] = {}
        prc = self.kind in (CalendarKind.PRC, CalendarKind.PRC_WORKDAYS)
        base = prc_known_until() if prc else date.fromisoformat(venue.rules_known_until or "9999-12-31")
        # before known_from the venue's calendar cannot say which days it traded: the API refuses those dates
        self.known_from: date = prc_known_from() if prc else KNOWN_FROM
        self.known_until: date = max(base, self.notices.known_until or base)
        self._said_unknown = False
        self._open: dict[date, bool] = {}

    def is_trading_day(self, day: date) -> bool:
        known = self._open.get(day)
        if known is None:
            known = self._open[day] = self._decide(day)
        return known

    def _decide(self, day: date) -> bool:
        if day in self.notices.closures:
            return False
        if day in self.notices.openings:
            return True
        if not self.known_from <= day <= self.known_until:  # a night session's look back may reach before it
            self._say_unknown()
            return (self.kind is CalendarKind.MONTH_FIRSTS and day.day == 1) or (
                self.kind is not CalendarKind.MONTH_FIRSTS and day.weekday() < _SATURDAY)
        return self._base_open(day)

    def holiday_name(self, day: date) -> str | None:
        """The name of a closure on a weekday (None if the venue trades or the day is a weekend)."""
        if day.weekday() >= _SATURDAY or self.kind is CalendarKind.MONTH_FIRSTS or self.is_trading_day(day):
            return None
        if day in self.notices.closures:
            return self.notices.closures[day]
        if self.kind in (CalendarKind.PRC, CalendarKind.PRC_WORKDAYS):
            return chinese_calendar.get_holiday_detail(day)[1] or "Holiday"
        return str(self._year(day.year).get(day, "Holiday"))

    def _base_open(self, day: date) -> bool:
        weekday = day.weekday() < _SATURDAY
        if self.kind is CalendarKind.PRC:
            return weekday and bool(chinese_calendar.is_workday(day))
        if self.kind is CalendarKind.PRC_WORKDAYS:
            return bool(chinese_calendar.is_workday(day))
        if self.kind is CalendarKind.FINANCIAL:
            return weekday and day not in self._year(day.year)
        if self.kind is CalendarKind.MONTH_FIRSTS:
            return day.day == 1
        return weekday

    def _year(self, year: int) -> Any:
        table = self._years.get(year)
        if table is None:
            table = self._years[year] = holidays.financial_holidays(self._code, years=year)
        return table

    def _say_unknown(self) -> None:
        if not self._said_unknown:
            self._said_unknown = True
            log.warning("venue %s: holiday calendar known from %s until %s; weekdays assumed outside it",
                        self.venue_id, self.known_from.isoformat(), self.known_until.isoformat())
