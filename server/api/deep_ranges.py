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
from typing import Any

import numpy as np

from server.market.intraday import bucket_iso
from server.market.ranges import DAILY, CandleRanges
from server.store.candle_store import Bar, CandleStore, Page
from server.store.history import History

FAR_MS = 1 << 53


class DeepRanges:
    def __init__(self, history: History, ids: list[str], decimals: list[int]) -> None:
        self.history = history
        self.ids = ids
        self.decimals = decimals

    @staticmethod
    def below(ranges: CandleRanges, row: int, interval: str, start: float) -> float | None:
        """The ring's oldest bucket start (epoch s) when a range from ``start`` reaches below it, else None."""
        if interval == DAILY:
            return None
        starts, _ = ranges.held(row, interval)
        oldest = float(starts[0]) if len(starts) else math.inf
        return oldest if start < oldest else None

    async def series(self, ranges: CandleRanges, row: int, interval: str, start: float, end: float, limit: int,
                     earliest: bool, oldest: float) -> tuple[list[dict[str, Any]], str | None]:
        """SPEC 14's answer over the store below ``oldest`` and the ring from it."""
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

    async def earliest(self, inst: str, intervals: list[str]) -> dict[str, str | None]:
        """The first stored bucket of each interval (its `t` as /kline writes it; None: none stored)."""
        firsts = await self.history.read(lambda c, _a: {iv: c.earliest(iv, inst) for iv in intervals})
        return {iv: (bucket_iso(np.array([ms // 1000]))[0] if ms is not None else None) for iv, ms in firsts.items()}

    def _format(self, row: int, bars: list[Bar]) -> list[dict[str, Any]]:
        dec = self.decimals[row]
        times = bucket_iso(np.array([b[1] // 1000 for b in bars], dtype=np.int64)) if bars else []
        return [{"t": t, "o": round(b[2], dec), "h": round(b[3], dec), "l": round(b[4], dec), "c": round(b[5], dec),
                 "v": round(b[6])} for t, b in zip(times, bars, strict=True)]


def _ms(t: float) -> int:
    if t == -math.inf:
        return -FAR_MS
    return FAR_MS if t == math.inf else int(t * 1000)


def _range(candles: CandleStore, interval: str, inst: str, lo: int, hi: int, limit: int) -> Page:
    return candles.range(interval, inst, lo, hi, limit) if lo < hi else Page([], None)
