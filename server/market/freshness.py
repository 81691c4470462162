"""Feed freshness and in-session silences (SPEC 20): pure rules, no I/O, the time pushed in.

A venue's feed is `degraded_performance` once none of its continuously traded instruments has ticked for
`stale_after_s` seconds of its sessions, `major_outage` after MAJOR_S; while it is shut (closed or in a break) it
is `operational`. Silence counts only time inside the venue's windows (a lunch break or a night does not make a
feed stale), which is also how the daily quality report measures a gap (market/quality.py).

Invariant: only `on_ticks` moves a venue's last tick; a venue without continuous instruments is never stale.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Protocol

from server.market.venues.clock import VenueClock
from server.market.venues.data import Publication

MAJOR_S = 300  # five minutes of in-session silence: major_outage


class Level(StrEnum):
    """Statuspage's component statuses (partial_outage is not produced by a feed)."""

    OPERATIONAL = "operational"
    DEGRADED = "degraded_performance"
    PARTIAL = "partial_outage"
    MAJOR = "major_outage"


class Span(Protocol):
    @property
    def start_ms(self) -> int: ...

    @property
    def end_ms(self) -> int: ...


def in_session_ms(windows: Iterable[Span], start_ms: int, end_ms: int) -> int:
    """Milliseconds of ``(start_ms, end_ms)`` inside the windows (ordered by start)."""
    total = 0
    for w in windows:
        if w.start_ms >= end_ms:
            break
        total += max(0, min(w.end_ms, end_ms) - max(w.start_ms, start_ms))
    return total


class Freshness:
    def __init__(self, venue_of_row: Sequence[str | None], clocks: Mapping[str, VenueClock], stale_after_s: float,
                 now_ms: int, rows_of: Mapping[str, Sequence[int]] | None = None, major_s: float = MAJOR_S) -> None:
        """`venue_of_row`: each instrument row's venue, None for a row that is not continuously traded; `clocks`:
        each venue's widest session clock; `now_ms`: the start (silence counts from here before the first tick);
        `rows_of`: every row of each venue (continuous or not); `major_s`: the silence of a major outage."""
        self.venue_of_row = tuple(venue_of_row)
        self.rows_of = {vid: tuple(rows) for vid, rows in (rows_of or {}).items()}
        self.clocks = dict(clocks)
        self.stale_ms = int(stale_after_s * 1000)
        self.major_ms = int(major_s * 1000)
        self.last_ms = {v: now_ms for v in set(venue_of_row) if v is not None}

    def on_ticks(self, rows: Iterable[int], now_ms: int) -> None:
        venue_of = self.venue_of_row
        for row in rows:
            venue = venue_of[row]
            if venue is not None:
                self.last_ms[venue] = now_ms

    def silence_ms(self, venue: str, now_ms: int) -> int:
        """In-session time since the venue's last tick (0 for a venue not followed)."""
        last, clock = self.last_ms.get(venue), self.clocks.get(venue)
        if last is None or clock is None:
            return 0
        return in_session_ms(clock.windows_after(last), last, now_ms)

    def stale(self, venue: str, now_ms: int) -> bool:
        """The venue, open now, has been silent for --stale-after (the stream's `stale` status frame)."""
        return self.level(venue, now_ms, True) is not Level.OPERATIONAL

    def level(self, venue: str, now_ms: int, open_now: bool) -> Level:
        """The feed component's status; `open_now`: the venue is in a session at ``now_ms``."""
        if not open_now:
            return Level.OPERATIONAL
        silent = self.silence_ms(venue, now_ms)
        if silent >= self.major_ms:
            return Level.MAJOR
        return Level.DEGRADED if silent >= self.stale_ms else Level.OPERATIONAL


def venue_clocks(row_clocks: Sequence[VenueClock]) -> tuple[dict[str, VenueClock], dict[str, list[int]]]:
    """Each venue's clock (its widest session: the venue's own template, else its first row's) and its rows, from
    per-row clocks (``MarketState.clocks``)."""
    clocks: dict[str, VenueClock] = {}
    rows_of: dict[str, list[int]] = {}
    for row, clock in enumerate(row_clocks):
        venue = clock.venue
        rows_of.setdefault(venue.id, []).append(row)
        if venue.id not in clocks or clock.template.id == venue.session:
            clocks[venue.id] = clock
    return clocks, rows_of


def freshness_of(row_clocks: Sequence[VenueClock], publications: Sequence[str], stale_after_s: float,
                 now_ms: int, major_s: float = MAJOR_S) -> Freshness:
    """The freshness of every venue of these per-row clocks; a row counts when it and its venue trade
    continuously (`publications`: each row's instrument publication)."""
    clocks, rows_of = venue_clocks(row_clocks)
    rows = [c.venue.id if p == "continuous" and c.venue.publication is Publication.CONTINUOUS else None
            for c, p in zip(row_clocks, publications, strict=True)]
    return Freshness(rows, clocks, stale_after_s, now_ms, rows_of, major_s)
