"""The hub's availability recorder (SPEC 20, docs/sla.md): one row per minute, durably, on either storage.

Nothing is added to a request's path: the keyed requests, their 5xx and their latency buckets are the Prometheus
series the pipeline already updates (`market_http_requests_total`, `market_http_request_seconds`: the remembered
answer's path bumps its route's 200 cell and one latency bucket), the frames are the stream's delivered counters,
the feed-to-frame latency the tick path's histogram. Once a minute the recorder reads them and keeps the difference
from the previous reading; each second it samples every component's status (what /api/v1/status reports) and
counts the seconds each was out.

Writes: the minute the hub starts in (its heartbeat) at once, and at each minute's start the finished minute and
the new one's heartbeat, in one transaction; so a hub killed with `kill -9` leaves every later minute without a row.
A write that fails (storage away) is kept and retried each second, oldest first, up to MAX_PENDING rows; at stop
the minute in progress is written with what it counted so far.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass

from server.api.core.router import Access, Router
from server.core.availability import MINUTE_S, MinuteRecord, delta
from server.core.background import cancel_and_wait
from server.core.metrics import Counter, Histogram, HttpMetrics
from server.market.freshness import Level
from server.store.availability.store import AvailabilityStore

log = logging.getLogger("market.availability")

MAX_PENDING = 7 * 24 * 60  # rows kept while storage is away (a week of one hub); the oldest are dropped first
STOP_WRITE_S = 1.0  # the last write's bound at shutdown (inside the hub's shutdown budget)
WARN_EVERY_S = 60.0
Levels = Callable[[float], list[tuple[str, str, Level]]]


def hub_id(host: str, port: int, worker: int) -> str:
    """A hub's name in the rows: host name and HTTP port (a `serve --workers N` child adds `/N`): the same across
    restarts of one hub, different for two hubs of one machine."""
    return f"{host}:{port}" + (f"/{worker}" if worker else "")


def this_hub(port: int, worker: int) -> str:
    return hub_id(socket.gethostname(), port, worker)


@dataclass(frozen=True, slots=True)
class Reading:
    requests: int
    errors: int
    latency: list[float]
    frames: int
    feed: list[float]


class Readings:
    """The cumulative counters a minute's figures are the difference of."""

    def __init__(self, http: HttpMetrics, keyed: Callable[[], set[str]], frames: list[Counter],
                 feed: Histogram) -> None:
        """`keyed()`: the names of the keyed routes (their requests count, SPEC 20's "keyed REST requests")."""
        self.http, self.keyed, self.frames, self.feed = http, keyed, frames, feed

    def read(self) -> Reading:
        keyed = self.keyed()
        requests = errors = 0
        for labels, value in self.http.requests.totals().items():
            route = labels[0][1] if labels else ""
            if route in keyed:
                requests += int(value)
                if labels[1][1].startswith("5"):
                    errors += int(value)
        latency: list[float] = []
        for labels, series in list(self.http.latency.counts.items()):
            if labels and labels[0][1] in keyed:
                latency = [a + b for a, b in zip(latency, series[:-1], strict=True)] if latency else series[:-1]
        frames = sum(int(c.value()) for c in self.frames)
        return Reading(requests, errors, list(latency), frames, list(self.feed.series()[:-1]))


class AvailabilityRecorder:
    def __init__(self, hub: str, store: AvailabilityStore, readings: Readings, levels: Levels,
                 clock: Callable[[], float]) -> None:
        """`levels(now)`: every component's status on this hub, as /api/v1/status computes it."""
        self.hub, self.store, self.readings, self.levels, self.clock = hub, store, readings, levels, clock
        self.pending: list[MinuteRecord] = []
        self.current = MinuteRecord(hub, 0)
        self._base: Reading | None = None
        self._task: asyncio.Task[None] | None = None
        self._write: asyncio.Task[None] | None = None
        self._warned = -WARN_EVERY_S

    # --- what happens each second (no I/O: tests drive it) -----------------------------------------------------
    def begin(self, now: float) -> None:
        """The first minute: its heartbeat, and the counters' baseline."""
        self.current = MinuteRecord(self.hub, int(now // MINUTE_S))
        self._base = self.readings.read()
        self.pending.append(MinuteRecord(self.hub, self.current.minute))

    def second(self, now: float) -> None:
        """Close the minute if it ended (its figures, and the next one's heartbeat), then sample the components."""
        minute = int(now // MINUTE_S)
        if minute != self.current.minute:
            self.close_minute()
            self.current = MinuteRecord(self.hub, minute)
            self.pending.append(MinuteRecord(self.hub, minute))
        current = self.current
        current.samples += 1
        for cid, _, level in self.levels(now):
            if level is not Level.OPERATIONAL:
                current.outages[cid] = current.outages.get(cid, 0) + 1

    def close_minute(self) -> None:
        """The minute in progress with what was counted since the last reading, queued for writing."""
        now, before = self.readings.read(), self._base
        assert before is not None
        self._base = now
        r = self.current
        r.requests, r.errors = now.requests - before.requests, now.errors - before.errors
        r.latency, r.feed = delta(now.latency, before.latency), delta(now.feed, before.feed)
        r.frames = now.frames - before.frames
        self.pending.append(r)
        if len(self.pending) > MAX_PENDING:
            del self.pending[:len(self.pending) - MAX_PENDING]

    # --- the service -------------------------------------------------------------------------------------------
    async def start(self) -> None:
        self.begin(self.clock())
        self._flush()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="availability")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        if self._base is None:  # never started
            return
        self.close_minute()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(STOP_WRITE_S):
                if self._write is not None:
                    await self._write
                if self.pending:
                    await self.store.add(list(self.pending))
                    self.pending.clear()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(1.0 - self.clock() % 1.0)  # on the second, so a minute's samples are its own
            self.second(self.clock())
            self._flush()

    def _flush(self) -> None:
        """Write what is pending, one write at a time (a slow storage delays rows, never the sampling)."""
        if self.pending and self._write is None:
            self._write = asyncio.get_running_loop().create_task(self._write_pending(list(self.pending)))

    async def _write_pending(self, rows: list[MinuteRecord]) -> None:
        try:
            await self.store.add(rows)
        except Exception as exc:
            now = self.clock()
            if now - self._warned >= WARN_EVERY_S:
                self._warned = now
                log.warning("availability rows not written (%d pending, retried each second): %s",
                            len(self.pending), type(exc).__name__)
        else:
            written = {id(r) for r in rows}
            self.pending = [r for r in self.pending if id(r) not in written]
        finally:
            self._write = None


def keyed_routes(router: Router) -> Callable[[], set[str]]:
    """The keyed routes' names, read once the router is complete (at the recorder's start)."""
    names: set[str] = set()

    def read() -> set[str]:
        if not names:
            names.update(r.name for r in router.routes() if r.access is Access.KEYED)
        return names
    return read
