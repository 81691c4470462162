"""The stream clock: candle runs (whole seconds + GRACE_S) and heartbeats (multiples of --heartbeat-s) on the
server's clock, so every hub runs them in the same phase (server/stream/delivery/candle_frames.py). `Schedule` decides
what is due (no I/O: tests call `on_clock` with the time they choose); `run_clock` is the task that calls it."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable

from server.stream.delivery.candle_frames import GRACE_S, CandleFrames
from server.stream.delivery.fanout import FanOut
from server.stream.delivery.heartbeats import Heartbeats
from server.stream.delivery.registry import SubscriptionRegistry
from server.stream.delivery.venue_status import VenueStatus
from server.stream.protocol.session import Session

log = logging.getLogger("market.stream")


class Schedule:
    def __init__(self, candles: CandleFrames | None, candle_registry: SubscriptionRegistry[Session],
                 fanout: FanOut, beats: Heartbeats, venues: VenueStatus | None = None) -> None:
        """`venues`: the venues' status frames (None: a state without venue clocks, as in unit tests)."""
        self.candles = candles
        self.venues = venues
        self.candle_registry = candle_registry
        self.fanout = fanout
        self.beats = beats
        self._next_run = -math.inf  # candle runs at whole seconds + GRACE_S

    def next_wakeup(self, now: float) -> float:
        """When on_clock is due next: the next candle run (whole second + GRACE_S), or heartbeat."""
        run = math.floor(now - GRACE_S) + 1 + GRACE_S
        if self.candles is not None and self.candles.deferred_to is not None:
            run = min(run, self.candles.deferred_to)
        return min(run, self.beats.next_due(now))

    def on_clock(self, now: float) -> None:
        """Candle runs and heartbeats that are due at ``now``."""
        candles = self.candles
        deferred = candles is not None and candles.deferred_to is not None and now >= candles.deferred_to
        if now >= self._next_run or deferred:
            if now >= self._next_run:
                self._next_run = math.floor(now - GRACE_S) + 1 + GRACE_S
            if candles is not None:
                frames = candles.on_run(now, self.candle_registry.by_row)
                if frames:
                    self.fanout.candle_frames(frames)
            if self.venues is not None:
                self.venues.on_clock(now)
        self.beats.on_clock(now)


async def run_clock(schedule: Schedule, clock: Callable[[], float]) -> None:
    while True:
        now = clock()
        await asyncio.sleep(max(0.0, schedule.next_wakeup(now) - now))
        try:
            schedule.on_clock(clock())
        except Exception:
            log.exception("stream clock run failed")
