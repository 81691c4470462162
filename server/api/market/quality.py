"""`GET /api/v1/quality?venue=&from=&to=` (SPEC 20): each venue's trading days with their data condition.

Keyed, like the other reference routes. Per venue per trading day in ``[from, to]`` (canonical YYYY-MM-DD, both
included, at most MAX_DAYS; `to` defaults to today, `from` to DEFAULT_DAYS before it; `venue` left out: every
venue): `{date, venue, condition, gaps: [{from, to}], lastModified}`, by date then venue. The condition comes from
the stored tick archive (server/store/history) by market/quality.py's rules; a closed day's answer is kept in
memory (it changes no more). A hub without a durable history (the demo feed) lists no days.

``DayQualities`` is the one place a venue-day's condition is measured and kept: this route and the flat-file
listings (flatfiles.py: each entry's ``condition``) both ask it.
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
from server.market.quality import Condition, DayQuality, day_quality, worst
from server.market.timefmt import iso, local_date
from server.store.history.archive import TickArchive
from server.store.history.threads import History

PARAMS = frozenset({"venue", "from", "to"})
MAX_DAYS = 366
DEFAULT_DAYS = 30
MAX_KEPT = 50_000  # closed days' answers kept in memory (a venue's year is 366)


class DayQualities:
    """Each venue's trading days and their measured quality, a closed day's kept in memory (MAX_KEPT)."""

    def __init__(self, fresh: Freshness, ids: list[str], history: History | None,
                 imports: Callable[[], str] = lambda: "") -> None:
        """`fresh`: the venues' clocks, rows and --stale-after (market/freshness.py); `ids`: instrument ids by row;
        `history`: the durable history (None: nothing stored, no days); `imports`: the flat files' data version
        (store/flatfiles/files.py `data_version`), which every `ticks import` moves: the closed days kept are
        forgotten when it moves, so an imported day's condition is measured again (no restart needed)."""
        self.fresh, self.ids, self.history, self.imports = fresh, ids, history, imports
        self._kept: dict[tuple[str, date], DayQuality] = {}
        self._all_kept: dict[date, tuple[Condition, int] | None] = {}  # of_all's closed answers
        self._version = imports()
        self.venues = sorted(fresh.clocks)

    def _current(self) -> None:
        """Forget the closed days kept when an import has moved the data version since they were measured."""
        version = self.imports()
        if version != self._version:
            self._kept.clear()
            self._all_kept.clear()
            self._version = version

    def days(self, vid: str, start: date, end: date, now_ms: int) -> list[date]:
        """The venue's trading days in the range whose first session has begun."""
        if self.history is None:
            return []
        clock = self.fresh.clocks[vid]
        return [d for d in clock.trading_days(start, end) if (w := clock.windows(d)) and w[0].start_ms <= now_ms]

    async def of(self, vid: str, day: date, now_ms: int) -> DayQuality:
        """The venue's day (one of `days`): kept once closed, else measured (a pending day reads no ticks)."""
        return (await self._of_many([vid], day, now_ms))[0]

    async def of_all(self, day: date, now_ms: int) -> tuple[Condition, int] | None:
        """The all-venue day: the worst condition (market/quality.py `worst`) over the venues with a trading day
        on that date whose first session has begun, and their gaps summed; None when there is none (or no
        history). The venues' days not kept yet are read in one trip to a history thread."""
        self._current()
        if day in self._all_kept:
            return self._all_kept[day]
        found = await self._of_many([vid for vid in self.venues if self.days(vid, day, day, now_ms)], day, now_ms)
        answer = (worst(q.condition for q in found), sum(len(q.gaps) for q in found)) if found else None
        if found and all(q.condition is not Condition.PENDING for q in found):  # every venue closed: it stays
            if len(self._all_kept) >= MAX_KEPT:
                self._all_kept.clear()
            self._all_kept[day] = answer
        return answer

    async def _of_many(self, vids: list[str], day: date, now_ms: int) -> list[DayQuality]:
        """Each venue's day: the kept ones from memory, the others measured together on one history thread (a
        closed day is kept: it changes no more, but for an import, which moves `imports`)."""
        self._current()
        found = {vid: q for vid in vids if (q := self._kept.get((vid, day))) is not None}
        wanted = [vid for vid in vids if vid not in found]
        if wanted:
            assert self.history is not None  # `days` lists none without it
            measured = await self.history.read(lambda _, archive: [self._measure(archive, v, day, now_ms)
                                                                   for v in wanted])
            for vid, q in zip(wanted, measured, strict=True):
                found[vid] = q
                if q.condition is not Condition.PENDING:
                    if len(self._kept) >= MAX_KEPT:
                        self._kept.clear()
                    self._kept[(vid, day)] = q
        return [found[vid] for vid in vids]

    def _measure(self, archive: TickArchive, vid: str, day: date, now_ms: int) -> DayQuality:
        """One venue's day from its ticks (on a history reader thread)."""
        clock, fresh = self.fresh.clocks[vid], self.fresh
        windows = clock.windows(day)
        continuous = [r for r in fresh.rows_of.get(vid, ()) if fresh.venue_of_row[r] == vid]
        ids = [self.ids[r] for r in continuous or fresh.rows_of.get(vid, ())]
        lo, hi = windows[0].start_ms, windows[-1].end_ms + 1
        closed = now_ms >= max(clock.close_ms(day), hi)
        # a pending day's ticks are not read at every request: its condition needs none
        ticks = sorted(t[1] for i in ids for t in archive.read(i, lo, hi)) if closed else []
        return day_quality(ticks, windows, fresh.stale_ms, closed=closed, continuous=bool(continuous))


class QualityApi:
    def __init__(self, qualities: DayQualities, clock: Callable[[], float]) -> None:
        self.qualities, self.clock = qualities, clock

    def register(self, router: Router) -> None:
        router.add("GET", "/api/v1/quality", self.quality, Access.KEYED, name="quality")

    async def quality(self, req: Request) -> Response:
        query = known_query(req, PARAMS)
        venue = query.get("venue")
        known = self.qualities.venues
        if venue is not None and venue not in known:
            raise param_error("venue", f"venue must be one of {', '.join(known)}")
        now_ms = int(self.clock() * 1000)
        start, end = parse_day_range(query, local_date(now_ms / 1000), DEFAULT_DAYS, MAX_DAYS, "a range")
        days: list[dict[str, Any]] = []
        for vid in [venue] if venue is not None else known:
            days += [_entry(vid, day, await self.qualities.of(vid, day, now_ms))
                     for day in self.qualities.days(vid, start, end, now_ms)]
        days.sort(key=lambda d: (d["date"], d["venue"]))
        return Response(200, orjson.dumps({"days": days}), headers=[("cache-control", "private, no-cache")])


def _entry(vid: str, day: date, q: DayQuality) -> dict[str, Any]:
    return {"date": day.isoformat(), "venue": vid, "condition": q.condition.value,
            "gaps": [{"from": iso(a / 1000), "to": iso(b / 1000)} for a, b in q.gaps],
            "lastModified": iso(q.last_ms / 1000) if q.last_ms is not None else None}
