"""The daily candles' day axis: the union of every instrument's trading days, and who trades on each.

The candle book keeps one column per day of the axis for every instrument (numpy rows share the columns); a
row's candle on a day its venue does not trade is never shown (``open_rows``), so each instrument has exactly
one candle per trading day of its own venue (SPEC 16) while the arrays stay rectangular.

- ``WeekdayAxis``: Monday to Friday, every row open (no venue clocks: the unit tests' books, old data dirs).
- ``VenueAxis``: the venues' calendars (``server.market.venues.clock``): a date is on the axis when any row's
  venue trades that day (a CFETS make-up Saturday, the first of a month for a monthly price included).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta
from typing import Protocol

import numpy as np

from server.market.timefmt import is_weekday

MAX_GAP_DAYS = 62  # the longest stretch without a trading day any venue could have (monthly prices: 31)


class Calendar(Protocol):
    def is_trading_day(self, day: date) -> bool: ...


class TradingAxis(Protocol):
    n: int

    def on_axis(self, day: date) -> bool: ...

    def open_rows(self, day: date) -> np.ndarray: ...


class WeekdayAxis:
    """Monday to Friday, every instrument trading every day."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._all = np.ones(n, dtype=bool)

    def on_axis(self, day: date) -> bool:
        return is_weekday(day)

    def open_rows(self, day: date) -> np.ndarray:
        return self._all


class VenueAxis:
    """The union of the rows' venue calendars (one calendar per row, in row order); with `spans`, (first, last)
    day ordinals per row, a row trades only within its span (a futures contract between its first and last trading
    day, SPEC 19)."""

    def __init__(self, calendars: Sequence[Calendar],
                 spans: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.n = len(calendars)
        self._spans = spans
        distinct: dict[int, Calendar] = {}
        self._row_of: list[int] = []  # row -> index of its calendar among the distinct ones
        index: dict[int, int] = {}
        for cal in calendars:
            key = id(cal)
            if key not in index:
                index[key] = len(distinct)
                distinct[key] = cal
            self._row_of.append(index[key])
        self._calendars = list(distinct.values())
        self._rows = np.asarray(self._row_of, dtype=np.intp)
        self._open: dict[date, np.ndarray] = {}

    def on_axis(self, day: date) -> bool:
        return bool(self.open_rows(day).any())

    def rebind(self, row: int, calendar: Calendar) -> None:
        """Row ``row`` follows ``calendar`` from now on (a reserved row bound to a declared instrument, SPEC 20)."""
        index = next((i for i, cal in enumerate(self._calendars) if cal is calendar), None)
        if index is None:
            index = len(self._calendars)
            self._calendars.append(calendar)
        self._row_of[row] = index
        self._rows = np.asarray(self._row_of, dtype=np.intp)
        self._open = {}

    def open_rows(self, day: date) -> np.ndarray:
        found = self._open.get(day)
        if found is None:
            per_calendar = np.array([cal.is_trading_day(day) for cal in self._calendars], dtype=bool)
            found = per_calendar[self._rows]
            if self._spans is not None:
                found &= (self._spans[0] <= day.toordinal()) & (day.toordinal() <= self._spans[1])
            self._open[day] = found
            found.flags.writeable = False
        return found


def axis_columns(trading_days: int) -> int:
    """Axis columns that hold at least ``trading_days`` of each daily venue's own trading days: a third more (the
    Chinese exchanges' holidays take at most about 15 weekdays in any 120; a monthly price has what falls in)."""
    return trading_days + trading_days // 3


def axis_days_back(axis: TradingAxis, end: date, n: int, after: date | None = None) -> list[date]:
    """The last ``n`` axis days up to ``end`` (included), ascending; only days after ``after`` when given."""
    out: list[date] = []
    day = end
    gap = 0
    while len(out) < n and gap <= MAX_GAP_DAYS and (after is None or day > after):
        if axis.on_axis(day):
            out.append(day)
            gap = 0
        else:
            gap += 1
        day -= timedelta(days=1)
    out.reverse()
    return out
