"""Range queries over the held candles (SPEC 14): every candle of an instrument and interval with its start in
[start, end), the earliest or the latest `limit` of them, and the `t` of the next page. Daily candles come from the
`CandleBook`, intraday ones from the `IntradayBook`; nothing here writes."""

from __future__ import annotations

from datetime import date

import numpy as np
import orjson

from server.market.candles.daily import CandleBook
from server.market.candles.intraday import IntradayBook, bucket_iso, joined, window

_DAY_OFFSET_S = 8 * 3600
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
DAILY = "1d"


class CandleRanges:
    def __init__(self, candles: CandleBook, intraday: IntradayBook, decimals: list[int]) -> None:
        self.candles = candles
        self.intraday = intraday
        self._decimals = decimals

    def held(self, row: int, interval: str) -> tuple[np.ndarray, np.ndarray]:
        """(starts, columns) of every candle of ``row`` held for ``interval``, ascending: the bucket start in epoch
        seconds, for 1d the trading day's 00:00 Asia/Shanghai (the instant its ``YYYY-MM-DD`` names)."""
        if interval == DAILY:
            ordinals, cols = self.candles.held(row)
            return (ordinals.astype(np.int64) - _EPOCH_ORDINAL) * 86400 - _DAY_OFFSET_S, cols
        return self.intraday.rings[interval].held(row)

    def format(self, row: int, interval: str, cols: np.ndarray) -> list[dict]:
        """The served candles at these columns (the same format as the plain /kline series)."""
        if interval == DAILY:
            return self.candles.format(row, cols.tolist(), self._decimals[row])
        return self.intraday.rings[interval].format(row, cols, self._decimals[row])

    def series(self, row: int, interval: str, start: float, end: float, limit: int,
                    earliest: bool) -> tuple[list[dict], str | None]:
        """Candles with start <= bucket start < end (SPEC 14): the earliest ``limit`` and the ``t`` of the first one
        left out (``earliest``), or the latest ``limit`` and None."""
        starts, cols = self.held(row, interval)
        lo, hi, nxt = window(starts, start, end, limit, earliest)
        series = self.format(row, interval, cols[lo:hi])
        return series, self._next(interval, starts, cols, nxt)

    def json(self, row: int, interval: str, start: float, end: float, limit: int,
                         earliest: bool) -> tuple[bytes, str | None]:
        """``series`` with the series as its JSON (``orjson.dumps`` of it, byte for byte): intraday candles from
        the buckets' kept texts (a bucket's text is built once; only the newest can change), daily ones dumped."""
        starts, cols = self.held(row, interval)
        lo, hi, nxt = window(starts, start, end, limit, earliest)
        if interval == DAILY:
            series = orjson.dumps(self.format(row, interval, cols[lo:hi]))
        else:
            series = joined(self.intraday.rings[interval].texts(row, cols[lo:hi], self._decimals[row]))
        return series, self._next(interval, starts, cols, nxt)

    def _next(self, interval: str, starts: np.ndarray, cols: np.ndarray, nxt: int | None) -> str | None:
        """The ``t`` of the candle at index ``nxt`` of ``held`` (a range's ``next``), None for None."""
        if nxt is None:
            return None
        if interval == DAILY:
            return date.fromordinal(int(self.candles.days[cols[nxt]])).isoformat()
        return bucket_iso(starts[nxt:nxt + 1])[0]
