"""Timestamps and trading days in Asia/Shanghai.

Asia/Shanghai has had a fixed +08:00 offset since 1991 and observes no DST, so
formatting uses arithmetic on a fixed offset (fast, allocation-light); the
``TZ`` object is kept for callers that need real zone-aware datetimes.
"""

from __future__ import annotations

import math
from datetime import date, datetime, timedelta, timezone
from functools import lru_cache
from zoneinfo import ZoneInfo

TZ = ZoneInfo("Asia/Shanghai")

_OFFSET_S = 8 * 3600
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_FIXED = timezone(timedelta(seconds=_OFFSET_S))
_SATURDAY = 5


@lru_cache(maxsize=4096)
def _second_prefix(whole: int) -> str:
    """'YYYY-MM-DDTHH:MM:SS' in local time for an integer epoch second (four-digit year, even before 1000:
    strftime's %Y gives '999' there, which is not ISO 8601)."""
    return datetime.fromtimestamp(whole, _FIXED).isoformat(timespec="seconds")[:19]


def iso(ts: float) -> str:
    """ISO 8601 with millisecond precision and +08:00 offset."""
    millis = math.floor(ts * 1000.0 + 0.5)
    whole, ms = divmod(millis, 1000)
    return f"{_second_prefix(whole)}.{ms:03d}+08:00"


def local_date(ts: float) -> date:
    """Calendar date in Asia/Shanghai for an epoch-seconds timestamp."""
    return date.fromordinal(_EPOCH_ORDINAL + int((ts + _OFFSET_S) // 86400))


def next_weekday(day: date) -> date:
    """The day itself on Mon-Fri, else the following Monday."""
    wd = day.weekday()
    return day + timedelta(days=7 - wd) if wd >= _SATURDAY else day


def previous_weekday(day: date) -> date:
    """The day itself on Mon-Fri, else the Friday before."""
    wd = day.weekday()
    return day - timedelta(days=wd - 4) if wd >= _SATURDAY else day


def day_start(day: date) -> float:
    """Epoch seconds of local (Asia/Shanghai) midnight starting ``day``."""
    return (day.toordinal() - _EPOCH_ORDINAL) * 86400.0 - _OFFSET_S


def trading_day(ts: float) -> date:
    """Trading day a tick at ``ts`` belongs to; weekend ticks count for Monday.

    Chinese futures attribute night sessions to the next trading day, so a
    Saturday or Sunday tick updates the following Monday's candle.
    """
    return next_weekday(local_date(ts))


def is_weekday(day: date) -> bool:
    return day.weekday() < _SATURDAY


def trading_days_back(end: date, n: int) -> list[date]:
    """The ``n`` Mon-Fri dates ending at ``end`` (inclusive), ascending."""
    if not is_weekday(end):
        raise ValueError(f"end must be a weekday, got {end.isoformat()}")
    if n < 0:
        raise ValueError("n must be >= 0")
    out: list[date] = []
    day = end
    while len(out) < n:
        if day.weekday() < _SATURDAY:
            out.append(day)
        day -= timedelta(days=1)
    out.reverse()
    return out


