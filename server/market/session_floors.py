"""Where each instrument's trading day begins (SPEC 16): the session floors server/market/state.py's intraday
buckets start from."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date

from server.market.candles.daily import CandleBook
from server.market.candles.intraday import session_start
from server.market.venues.clock import VenueClock


class SessionFloors:
    """Where each instrument's trading day begins: its venue's previous trading day's close (a night session
    belongs to the day after it, SPEC 16); ``session_start`` without venue clocks."""

    def __init__(self, clocks: Sequence[VenueClock], candles: CandleBook) -> None:
        self.clocks = clocks
        self.candles = candles

    def of(self, row: int, day: date) -> int:
        """The first instant (epoch seconds) of ``day``'s ticks for ``row``."""
        if not self.clocks:
            return int(session_start(day))
        clock = self.clocks[row]
        previous = clock.previous_trading_day(day)
        return clock.close_ms(previous) // 1000 if previous is not None else int(session_start(day))

    def back(self, row: int, days: int) -> float:
        """The first instant of ``row``'s most recent ``days`` shown trading days (its live candle's day counts once it
        has traded)."""
        if not len(self.candles):
            return -math.inf
        shown = self.candles.shown_columns(row)
        if not len(shown):
            return -math.inf
        first = date.fromordinal(int(self.candles.days[shown[-days] if len(shown) >= days else shown[0]]))
        return float(self.of(row, first))
