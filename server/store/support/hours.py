"""Business hours of the support desk and the enterprise first-response target (SPEC 20): pure, no I/O.

Business hours are 09:00-17:00 Asia/Shanghai on the Shanghai Futures Exchange's trading days (its day calendar in
server/market/venues: PRC statutory holidays from chinese-calendar plus the exchange notices; weekends closed, make-up
weekend workdays too, as the exchanges keep them): support follows the market the customers trade, so a holiday the
exchanges keep is not a business day even where offices work. Severity 1: 1 hour around the clock; severity 2 and 3:
8 business hours. A target past the calendar's known years assumes weekdays (the calendar logs it once).
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from pathlib import Path

from server.market.timefmt import TZ
from server.market.venues.calendar_notices import load_notices
from server.market.venues.data import VENUES
from server.market.venues.day_calendars import DayCalendar
from server.store.support.tickets import TARGET_PLAN

CALENDAR_VENUE = "shfe"
OPENS, CLOSES = time(9, 0), time(17, 0)
URGENT_S = 3600.0  # severity 1: one hour, any time
BUSINESS_S = 8 * 3600.0  # severities 2 and 3: eight business hours
MAX_DAYS = 400  # a target is never searched further than this (longer than any run of holidays)


class SupportHours:
    def __init__(self, calendar: DayCalendar) -> None:
        self.calendar = calendar

    @classmethod
    def load(cls, calendar_file: str | Path | None = None) -> SupportHours:
        """SHFE's day calendar with the repository's notices (and `--calendar-file`'s)."""
        notices = load_notices(VENUES, calendar_file).get(CALENDAR_VENUE)
        return cls(DayCalendar(VENUES[CALENDAR_VENUE], notices))

    def is_business_day(self, day: date) -> bool:
        return self.calendar.is_trading_day(day)

    def add(self, start: float, seconds: float) -> float:
        """The instant `seconds` of business hours after `start` (epoch seconds)."""
        left = seconds
        moment = datetime.fromtimestamp(start, TZ)
        for _ in range(MAX_DAYS):
            day = moment.date()
            if self.is_business_day(day):
                opens = datetime.combine(day, OPENS, TZ)
                closes = datetime.combine(day, CLOSES, TZ)
                begin = max(moment, opens)
                if begin < closes:
                    room = (closes - begin).total_seconds()
                    if left <= room:
                        return (begin + timedelta(seconds=left)).timestamp()
                    left -= room
            moment = datetime.combine(day + timedelta(days=1), time(0, 0), TZ)
        raise ValueError(f"no business hours within {MAX_DAYS} days of {start}")

    def first_response_due(self, created_at: float, severity: int, plan: str) -> float | None:
        """The target of a ticket opened at `created_at` by an account on `plan` (None: no target)."""
        if plan != TARGET_PLAN:
            return None
        if severity == 1:
            return created_at + URGENT_S
        return self.add(created_at, BUSINESS_S)
