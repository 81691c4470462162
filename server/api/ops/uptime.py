"""`GET /api/v1/status/uptime?days=` (SPEC 20, docs/status.md): each component's daily uptime over the last 90
Asia/Shanghai days, for the /status page's bars, no key.

The figures are the SLA report's (server/core/availability.py: `down_minutes` and its rules of "down", the same
counted minutes, the same days), over the per-minute rows every hub records. The route never touches storage: a
task computes the copy at the hub's start and every REFRESH_S, and the route answers the last copy with its `asOf`
(null before the first computation succeeded), so it answers while storage is down. After the first full read only
the last RECHECK_DAYS days are read again (a hub retries rows storage refused for up to a week, so a recent day may
still change); older days are kept from the previous reads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import date
from typing import Any

import orjson

from server.api.core.query import known_query, parse_count
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.core.availability import (
    EPOCH_ORDINAL,
    MINUTE_S,
    UPTIME_DAYS,
    InSession,
    availability,
    by_day,
    counted_span,
    day_minute,
    down_minutes,
    local_day_of,
)
from server.core.background import cancel_and_wait
from server.market.timefmt import iso
from server.store.availability.store import AvailabilityStore

log = logging.getLogger("market.uptime")

MAX_DAYS = UPTIME_DAYS
REFRESH_S = 300.0  # the copy's age at most (plus one computation)
RETRY_S = 5.0  # after a failed refresh, or before the data dir's first minute is recorded
RECHECK_DAYS = 8  # the days read again at each refresh: a week of rows a hub may still be retrying, and today
READ_TIMEOUT_S = 60.0  # a storage that hangs leaves the last copy in place; the next refresh tries again
NO_STORE = ("cache-control", "no-store")
MAX_BODIES = 8  # answers kept per copy (by `days`); the page asks the default
PARAMS = frozenset({"days"})



class UptimeApi:
    def __init__(self, store: AvailabilityStore, components: list[str], in_session: InSession,
                 clock: Callable[[], float]) -> None:
        """`components`: rest, stream, storage and one feed:{venue} per venue (the SLA report's)."""
        self.store, self.components, self.in_session, self.clock = store, components, in_session, clock
        self.as_of: float | None = None
        self.started: int | None = None  # the data dir's first recorded minute, as last read
        self.today: int | None = None  # the Shanghai day the copy ends with
        self.counted: dict[int, int] = {}  # day -> minutes counted
        self.down: dict[str, dict[int, int]] = {c: {} for c in components}  # component -> day -> down minutes
        self._bodies: dict[int, bytes] = {}  # days -> the answer of the current copy (a view costs ~7 ms of CPU)
        self._task: asyncio.Task[None] | None = None

    def register(self, router: Router) -> None:
        router.add("GET", "/api/v1/status/uptime", self.uptime, Access.OPEN, name="status_uptime")

    # --- the copy ---------------------------------------------------------------------------------------------
    async def refresh(self) -> None:
        """Read the rows of the days that may have changed and recompute them (the rest are kept)."""
        now = self.clock()
        in_progress = int(now // MINUTE_S)
        today = local_day_of(in_progress)
        first_day = today - MAX_DAYS + 1
        read_from = first_day if self.today is None else max(first_day, self.today - RECHECK_DAYS + 1)
        self.started = None  # until this read succeeds
        async with asyncio.timeout(READ_TIMEOUT_S):
            first_start = await self.store.first_minute()
            span = counted_span(day_minute(read_from), day_minute(today + 1), first_start, in_progress)
            records = await self.store.between(span.first, span.end) if span.minutes else []
        down = await asyncio.to_thread(down_minutes, records, span, self.components, self.in_session)
        counted, down_by_day = by_day(read_from, today + 1, span, down)
        kept = range(first_day, today + 1)
        self.counted = {d: n for d, n in {**self.counted, **counted}.items() if d in kept}
        self.down = {c: {d: n for d, n in {**self.down.get(c, {}), **down_by_day[c]}.items() if d in kept}
                     for c in self.components}
        self.today, self.as_of, self.started = today, now, first_start
        self._bodies = {}

    def view(self, days: int) -> dict[str, Any]:
        """The last `days` days of the copy, oldest first, per component (no days before the first copy)."""
        out: list[dict[str, Any]] = []
        shown = [] if self.today is None else list(range(self.today - days + 1, self.today + 1))
        for c in self.components:
            counted = sum(self.counted.get(d, 0) for d in shown)
            down = sum(self.down[c].get(d, 0) for d in shown)
            out.append({"id": c, "availability": availability(counted, down), "downMinutes": down, "days": [
                {"date": date.fromordinal(EPOCH_ORDINAL + d).isoformat(),
                 "availability": availability(self.counted.get(d, 0), self.down[c].get(d, 0)),
                 "downMinutes": self.down[c].get(d, 0)} for d in shown]})
        return {"asOf": None if self.as_of is None else iso(self.as_of), "timezone": "Asia/Shanghai", "days": days,
                "components": out}

    def uptime(self, req: Request) -> Response:
        query = known_query(req, PARAMS)
        days = parse_count("days", query.get("days"), MAX_DAYS, MAX_DAYS)
        body = self._bodies.get(days)
        if body is None:
            if len(self._bodies) >= MAX_BODIES:
                self._bodies.clear()
            body = self._bodies[days] = orjson.dumps(self.view(days))
        return Response(200, body, headers=[NO_STORE])

    # --- the service ------------------------------------------------------------------------------------------
    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="uptime")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def _run(self) -> None:
        while True:
            try:
                await self.refresh()
            except Exception as exc:  # storage away: the last copy stays, with its asOf
                log.warning("daily uptime not refreshed (the last copy is served): %s", type(exc).__name__)
            # a failed read, or a data dir whose first heartbeat was not written yet, is tried again soon
            await asyncio.sleep(REFRESH_S if self.started is not None else RETRY_S)
