"""Range queries below the rings (SPEC 18): an intraday range that starts before the oldest bucket an instrument's
ring holds reads the older part from the durable history's candle store, on a history reader thread.

The rings stay the cache of the recent part: a range inside them never comes here (the plain path answers it,
remembered per data version). Here the stored part and the ring part are joined in one answer with the same
format and paging as SPEC 14 (`from`: the earliest `limit` and `next`; no `from`: the latest `limit` before `to`).
Bars are formatted as the ring formats its buckets (prices rounded to the instrument's decimals, volume to a
whole number), so a bucket reads the same whether it came from the ring or the store.
"""

from __future__ import annotations

import math
from datetime import date, timedelta
from typing import Any

import numpy as np

from server.market.candles.intraday import bucket_iso
from server.market.candles.ranges import DAILY, CandleRanges
from server.market.timefmt import day_start, local_date
from server.store.history.candle_rows import Candle
from server.store.history.candle_store import Bar, CandleStore, Page
from server.store.history.threads import History
from server.store.sql.repositories import Candles

FAR_MS = 1 << 53


class DeepRanges:
    def __init__(self, history: History, ids: list[str], decimals: list[int], daily: Candles | None = None) -> None:
        """`daily`: the daily candles' table (every trading day stored or imported), read below the daily book."""
        self.history = history
        self.ids = ids
        self.decimals = decimals
        self.daily = daily

    def below(self, ranges: CandleRanges, row: int, interval: str, start: float) -> float | None:
        """The ring's (or the daily book's) oldest bucket start (epoch s) when a range from ``start`` reaches below
        it, else None."""
        if interval == DAILY and self.daily is None:
            return None
        starts, _ = ranges.held(row, interval)
        oldest = float(starts[0]) if len(starts) else math.inf
        return oldest if start < oldest else None

    async def series(self, ranges: CandleRanges, row: int, interval: str, start: float, end: float, limit: int,
                     earliest: bool, oldest: float) -> tuple[list[dict[str, Any]], str | None]:
        """SPEC 14's answer over the store below ``oldest`` and the ring from it."""
        if interval == DAILY:
            return await self._daily(ranges, row, start, end, limit, earliest, oldest)
        inst = self.ids[row]
        lo, hi = _ms(start), _ms(min(end, oldest))
        if earliest:
            page: Page = await self.history.read(lambda c, _a: _range(c, interval, inst, lo, hi, limit))
            stored = self._format(row, page.rows)
            if page.next is not None:
                return stored, bucket_iso(np.array([page.next // 1000]))[0]
            if end <= oldest:
                return stored, None
            room = limit - len(stored)
            if room > 0:
                more, nxt = ranges.series(row, interval, oldest, end, room, True)
                return stored + more, nxt
            first, _ = ranges.series(row, interval, oldest, end, 1, True)
            return stored, first[0]["t"] if first else None
        recent, _ = ranges.series(row, interval, max(start, oldest), end, limit, False) if end > oldest else ([], None)
        if len(recent) < limit:
            older = await self.history.read(lambda c, _a: c.latest(interval, inst, hi, limit - len(recent)))
            recent = self._format(row, [b for b in older if b[1] >= lo]) + recent
        return recent, None

    async def _daily(self, ranges: CandleRanges, row: int, start: float, end: float, limit: int, earliest: bool,
                     oldest: float) -> tuple[list[dict[str, Any]], str | None]:
        """The same over the daily candles' table below the daily book's first day (``oldest``: its 00:00 +08:00),
        formatted as the book formats a candle."""
        assert self.daily is not None
        inst, dec = self.ids[row], self.decimals[row]
        first, last = _first_day(start), _last_day(min(end, oldest))

        def fmt(candles: list[Candle]) -> list[dict[str, Any]]:
            return [{"t": d.isoformat(), "o": round(o, dec), "h": round(h, dec), "l": round(lo, dec),
                     "c": round(c, dec), "v": round(v)} for _i, d, o, h, lo, c, v in candles]

        if earliest:
            stored = await self.daily.between(first, last, inst, limit + 1) if first <= last else []
            if len(stored) > limit:
                return fmt(stored[:limit]), stored[limit][1].isoformat()
            out = fmt(stored)
            if end <= oldest:
                return out, None
            if len(out) < limit:
                more, nxt = ranges.series(row, DAILY, oldest, end, limit - len(out), True)
                return out + more, nxt
            after, _ = ranges.series(row, DAILY, oldest, end, 1, True)
            return out, after[0]["t"] if after else None
        recent, _ = ranges.series(row, DAILY, max(start, oldest), end, limit, False) if end > oldest else ([], None)
        if len(recent) < limit and first <= last:
            recent = fmt(await self.daily.between(first, last, inst, limit - len(recent), newest=True)) + recent
        return recent, None

    async def earliest(self, inst: str, intervals: list[str]) -> dict[str, str | None]:
        """The first stored bucket of each interval (its `t` as /kline writes it; None: none stored); 1d's from the
        daily candles' table."""
        intraday = [iv for iv in intervals if iv != DAILY]
        firsts = await self.history.read(lambda c, _a: {iv: c.earliest(iv, inst) for iv in intraday})
        out = {iv: (bucket_iso(np.array([ms // 1000]))[0] if ms is not None else None) for iv, ms in firsts.items()}
        if DAILY in intervals and self.daily is not None:
            first = await self.daily.between(date(1970, 1, 1), date(9999, 12, 30), inst, 1)
            out[DAILY] = first[0][1].isoformat() if first else None
        return out

    def _format(self, row: int, bars: list[Bar]) -> list[dict[str, Any]]:
        dec = self.decimals[row]
        times = bucket_iso(np.array([b[1] // 1000 for b in bars], dtype=np.int64)) if bars else []
        return [{"t": t, "o": round(b[2], dec), "h": round(b[3], dec), "l": round(b[4], dec), "c": round(b[5], dec),
                 "v": round(b[6])} for t, b in zip(times, bars, strict=True)]


def _first_day(t: float) -> date:
    """The first day whose 00:00 +08:00 is at or after ``t``."""
    if t == -math.inf:
        return date(1970, 1, 1)
    day = local_date(t)
    return day if day_start(day) >= t else day + timedelta(days=1)


def _last_day(t: float) -> date:
    """The last day whose 00:00 +08:00 is before ``t``."""
    if t == math.inf:
        return date(9999, 12, 30)
    day = local_date(t)
    return day if day_start(day) < t else day - timedelta(days=1)


def _ms(t: float) -> int:
    if t == -math.inf:
        return -FAR_MS
    return FAR_MS if t == math.inf else int(t * 1000)


def _range(candles: CandleStore, interval: str, inst: str, lo: int, hi: int, limit: int) -> Page:
    return candles.range(interval, inst, lo, hi, limit) if lo < hi else Page([], None)
