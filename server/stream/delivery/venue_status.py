"""The WebSocket ``status`` frame (SPEC 16): when a venue opens, breaks or closes, each session subscribed to one
of its instruments gets ``{"type":"status","venue","status","ts"}`` once.

The stream clock calls ``on_clock`` every second; a venue's status is computed again only once its next window
edge (``next_open`` / ``next_close``) has passed, so a quiet second costs one comparison per venue; while a venue
is open and `stale` is given, it is asked each second whether the venue's feed went silent (SPEC 20): then the
status is ``stale``, and ``open`` again when ticks return. The first
reading is the baseline (no frame: a session learns the current status from the venues endpoint or a quote's
``marketStatus``). A frame goes to every ready member of each subscription group holding one of the venue's
instruments, once per group; a member over its buffer cap holds it with its ticks (conflated per venue).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from server.market.freshness import venue_clocks
from server.market.timefmt import iso
from server.market.venues.clock import VenueClock
from server.stream.delivery.registry import Group, SubscriptionRegistry, write_ready
from server.stream.protocol import messages as msg
from server.stream.protocol.session import Session
from server.stream.protocol.wire import text_frame

_HELD_KEY = -(1 << 40)  # held status frames' keys count down from here: below every candle channel's (-1 - ch)
Stale = Callable[[str, int], bool]  # (venue, epoch ms) -> its feed is silent while it is open
_RECHECK_MS = 3_600_000  # a venue with no window edge ahead (past its calendar): looked at again within an hour


class Clock(Protocol):
    def status(self, ts_ms: int) -> str: ...

    def next_open(self, ts_ms: int) -> int | None: ...

    def next_close(self, ts_ms: int) -> int | None: ...


class VenueStatus:
    def __init__(self, clocks: Mapping[str, Clock], rows_of: Mapping[str, Sequence[int]],
                 registry: SubscriptionRegistry[Session], stale: Stale | None = None) -> None:
        """`clocks`: each venue's clock (its widest session); `rows_of`: the instrument rows of each venue;
        `stale(venue, ms)`: its feed is silent (None: never)."""
        self.clocks = dict(clocks)
        self.rows_of = {vid: tuple(rows) for vid, rows in rows_of.items() if rows}
        self.registry = registry
        self.stale = stale
        self.status: dict[str, str] = {}
        self._held_key = {vid: _HELD_KEY - i for i, vid in enumerate(self.clocks)}
        self._due: dict[str, float] = {}  # venue -> epoch ms of its next window edge

    def on_clock(self, now: float) -> int:
        """Venues whose status changed by ``now``: their frames out; returns how many frames were written."""
        ms = int(now * 1000)
        written = 0
        for vid, clock in self.clocks.items():
            before = self.status.get(vid)
            watched = self.stale is not None and before in ("open", "stale")
            if ms < self._due.get(vid, -math.inf) and not watched:
                continue
            status = self._status_at(vid, clock, ms)
            self.status[vid] = status
            if before is not None and before != status:
                written += self._send(vid, text_frame(msg.status_payload(vid, status, iso(now))))
        return written

    def _status_at(self, vid: str, clock: Clock, ms: int) -> str:
        if ms >= self._due.get(vid, -math.inf):
            edges = [t for t in (clock.next_open(ms), clock.next_close(ms)) if t is not None]
            self._due[vid] = min(edges) if edges else ms + _RECHECK_MS
            status = str(clock.status(ms))
        else:
            status = "open" if self.status[vid] == "stale" else self.status[vid]
        return "stale" if status == "open" and self.stale is not None and self.stale(vid, ms) else status

    def _send(self, venue: str, frame: bytes) -> int:
        groups: dict[int, Group[Session]] = {}
        for row in self.rows_of.get(venue, ()):
            for group in self.registry.by_row[row]:
                groups[id(group)] = group
        written = 0
        for group in groups.values():
            group.sent += 1  # the console's usage counts it as a message (registry.py)
            written += write_ready(group, frame)
            for session in group.held():
                session.out.hold([(self._held_key[venue], frame)])
        return written


def venue_status_of(row_clocks: Sequence[VenueClock], registry: SubscriptionRegistry[Session],
                    stale: Stale | None = None) -> VenueStatus | None:
    """The status frames of the venues of these per-row clocks (``MarketState.clocks``; None without clocks);
    `stale`: whether an open venue's feed is silent (market/freshness.py), None: never."""
    clocks, rows_of = venue_clocks(row_clocks)
    return VenueStatus(clocks, rows_of, registry, stale) if clocks else None
