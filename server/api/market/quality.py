"""`GET /api/v1/quality?venue=&from=&to=` (SPEC 20): each venue's trading days with their data condition.

Keyed, like the other reference routes. Per venue per trading day in ``[from, to]`` (canonical YYYY-MM-DD, both
included, at most MAX_DAYS; `to` defaults to today, `from` to DEFAULT_DAYS before it; `venue` left out: every
venue): `{date, venue, condition, gaps: [{from, to}], lastModified}`, by date then venue. The condition comes from
the stored tick archive (server/store/history) by market/quality.py's rules; a closed day's answer is kept in
memory (it changes no more). A hub without a durable history (the demo feed) lists no days.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

import orjson

from server.api.core.query import known_query, param_error, parse_day_range
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.market.freshness import Freshness
from server.market.quality import Condition, DayQuality, day_quality
from server.market.timefmt import iso, local_date
from server.store.history.threads import History

PARAMS = frozenset({"venue", "from", "to"})
MAX_DAYS = 366
DEFAULT_DAYS = 30
MAX_KEPT = 50_000  # closed days' answers kept in memory (a venue's year is 366)


class QualityApi:
    def __init__(self, fresh: Freshness, ids: list[str], history: History | None,
                 clock: Callable[[], float]) -> None:
        """`fresh`: the venues' clocks, rows and --stale-after (market/freshness.py); `ids`: instrument ids by row;
        `history`: the durable history (None: nothing stored)."""
        self.fresh, self.ids, self.history, self.clock = fresh, ids, history, clock
        self._kept: dict[tuple[str, date], DayQuality] = {}

    def register(self, router: Router) -> None:
        router.add("GET", "/api/v1/quality", self.quality, Access.KEYED, name="quality")

    async def quality(self, req: Request) -> Response:
        query = known_query(req, PARAMS)
        venue = query.get("venue")
        if venue is not None and venue not in self.fresh.clocks:
            raise param_error("venue", f"venue must be one of {', '.join(sorted(self.fresh.clocks))}")
        now_ms = int(self.clock() * 1000)
        start, end = parse_day_range(query, local_date(now_ms / 1000), DEFAULT_DAYS, MAX_DAYS, "a range")
        days: list[dict[str, Any]] = []
        for vid in [venue] if venue is not None else sorted(self.fresh.clocks):
            days += [await self._entry(vid, day, now_ms) for day in self._days(vid, start, end, now_ms)]
        days.sort(key=lambda d: (d["date"], d["venue"]))
        return Response(200, orjson.dumps({"days": days}), headers=[("cache-control", "private, no-cache")])

    def _days(self, vid: str, start: date, end: date, now_ms: int) -> list[date]:
        """The venue's trading days in the range whose first session has begun."""
        if self.history is None:
            return []
        clock = self.fresh.clocks[vid]
        return [d for d in clock.trading_days(start, end) if (w := clock.windows(d)) and w[0].start_ms <= now_ms]

    async def _entry(self, vid: str, day: date, now_ms: int) -> dict[str, Any]:
        q = self._kept.get((vid, day))
        if q is None:
            q = await self._measure(vid, day, now_ms)
            if q.condition is not Condition.PENDING:
                if len(self._kept) >= MAX_KEPT:
                    self._kept.clear()
                self._kept[(vid, day)] = q
        return {"date": day.isoformat(), "venue": vid, "condition": q.condition.value,
                "gaps": [{"from": iso(a / 1000), "to": iso(b / 1000)} for a, b in q.gaps],
                "lastModified": iso(q.last_ms / 1000) if q.last_ms is not None else None}

    async def _measure(self, vid: str, day: date, now_ms: int) -> DayQuality:
        clock, fresh = self.fresh.clocks[vid], self.fresh
        windows = clock.windows(day)
        continuous = [r for r in fresh.rows_of.get(vid, ()) if fresh.venue_of_row[r] == vid]
        ids = [self.ids[r] for r in continuous or fresh.rows_of.get(vid, ())]
        lo, hi = windows[0].start_ms, windows[-1].end_ms + 1
        closed = now_ms >= max(clock.close_ms(day), hi)
        assert self.history is not None  # _days lists none without it
        # a pending day's ticks are not read at every request: its condition needs none
        ticks = await self.history.read(
            lambda _, archive: sorted(t[1] for i in ids for t in archive.read(i, lo, hi))) if closed else []
        return day_quality(ticks, windows, fresh.stale_ms, closed=closed, continuous=bool(continuous))

