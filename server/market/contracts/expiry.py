"""A contract's last trading day: its product's rule counted on the venue's calendar (SPEC 16, 19).

The calendar answers past its known range too (weekdays assumed, logged once by the calendar), so a contract
expiring years ahead never fails; such a day is *provisional*: the rule looked at a date past `known_until`, and
the day may move when the venue publishes that year's holidays (docs/contracts.md).
"""

from __future__ import annotations

from calendar import monthrange
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Protocol

from server.market.contracts.rules import DayRule, ListingRule

ONE_DAY = timedelta(days=1)


class Days(Protocol):
    """What the rules read from a venue's calendar (server.market.venues.day_calendars.DayCalendar)."""

    known_until: date

    def is_trading_day(self, day: date) -> bool: ...


@dataclass(frozen=True, slots=True)
class Expiry:
    day: date
    provisional: bool  # the rule read the calendar past its known range


def add_months(year: int, month: int, k: int) -> tuple[int, int]:
    n = year * 12 + month - 1 + k
    return n // 12, n % 12 + 1


def last_trading_day(rule: ListingRule, days: Days, year: int, month: int) -> Expiry:
    """The last trading day of the contract delivering in `month` of `year`."""
    y, m = add_months(year, month, rule.month_offset)
    if rule.rule is DayRule.TRADING_DAY:
        found, looked = _nth_trading_day(days, y, m, rule.day)
    elif rule.rule is DayRule.CALENDAR_DAY:
        found = looked = next_trading_day(days, date(y, m, rule.day), inclusive=True)
    else:
        anchor = date(y, m, rule.day)
        steps = rule.back + (0 if days.is_trading_day(anchor) else 1)
        found, looked = _trading_days_before(days, anchor, steps), anchor
    return Expiry(found, looked > days.known_until)


def next_trading_day(days: Days, day: date, inclusive: bool = False) -> date:
    """The first trading day after `day` (or on it, when `inclusive`)."""
    day = day if inclusive else day + ONE_DAY
    while not days.is_trading_day(day):
        day += ONE_DAY
    return day


def _nth_trading_day(days: Days, year: int, month: int, n: int) -> tuple[date, date]:
    """(the nth trading day of the month, n < 0 counting from its end; the last date read). A month with fewer
    trading days than |n| (a venue shut for weeks) ends the count at its last or first trading day."""
    last = monthrange(year, month)[1]
    dates = [date(year, month, d) for d in (range(1, last + 1) if n > 0 else range(last, 0, -1))]
    found: date | None = None
    for k, day in enumerate(d for d in dates if days.is_trading_day(d)):
        found = day
        if k + 1 == abs(n):
            break
    if found is None:  # no trading day in the whole month: the rule falls on the month's edge (never in practice)
        found = dates[0]
    return found, (found if n > 0 else dates[0])


def _trading_days_before(days: Days, anchor: date, steps: int) -> date:
    day = anchor
    for _ in range(steps):
        day -= ONE_DAY
        while not days.is_trading_day(day):
            day -= ONE_DAY
    return day
