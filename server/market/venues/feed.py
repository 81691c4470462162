"""What a feed needs from the venues: when an instrument may move, when an assessment prints.

For the demo feed (SPEC 16: "it moves an instrument only while its venue is in session, and an
assessment once at its assessment time") and for counting a JSONL feed's ticks outside every
session. Pure functions over a ``VenueClock``; the feed owns the clock it asks with.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta

from server.core.availability import MINUTE_S, InSession
from server.market.venues.clock import BREAK_MAX_MS, MarketStatus, VenueClock
from server.market.venues.data import Publication


def in_session(clock: VenueClock, ts_ms: int) -> bool:
    """True while a window of the clock is open at ``ts_ms`` (a continuous instrument may tick)."""
    return clock.status(ts_ms) is MarketStatus.OPEN


def open_at_minute(clocks: Mapping[str, VenueClock]) -> InSession:
    """`(venue, epoch minute) -> bool`: the venue's clock said open at that minute's start. The availability
    figures (the SLA report, the /status page's uptime) count a feed down only while its venue is in session."""
    return lambda venue, minute: in_session(clocks[venue], minute * MINUTE_S * 1000)


def prints_between(clock: VenueClock, after_ms: int, until_ms: int) -> list[tuple[int, date]]:
    """The assessment prints in ``(after_ms, until_ms]`` as ``(ts_ms, trading day)``: one per trading
    day for a daily publication, one per month for a monthly one, at the end of its window (the
    assessment time). Empty for a continuous venue."""
    if clock.venue.publication is Publication.CONTINUOUS or until_ms <= after_ms:
        return []
    # every template lays a trading day's windows on that day or the day before it
    first = clock.local_date(after_ms) - timedelta(days=1)
    days = clock.trading_days(first, clock.local_date(until_ms) + timedelta(days=2))
    return [(w.end_ms, w.day) for d in days for w in clock.windows(d) if after_ms < w.end_ms <= until_ms]


def status_changes(clock: VenueClock, after_ms: int, until_ms: int) -> list[tuple[int, MarketStatus]]:
    """The instants in ``(after_ms, until_ms]`` at which the clock's status changes, with the new
    status: a window's start opens, its end breaks (the next window starts within 3 h) or closes.
    What the WebSocket ``status`` frame announces (SPEC 16)."""
    out: list[tuple[int, MarketStatus]] = []
    windows = clock.windows_after(after_ms)
    current = next(windows, None)
    while current is not None and current.start_ms <= until_ms:
        following = next(windows, None)
        if after_ms < current.start_ms:
            out.append((current.start_ms, MarketStatus.OPEN))
        if after_ms < current.end_ms <= until_ms:
            short = following is not None and following.start_ms - current.end_ms < BREAK_MAX_MS
            out.append((current.end_ms, MarketStatus.BREAK if short else MarketStatus.CLOSED))
        current = following
    return out
