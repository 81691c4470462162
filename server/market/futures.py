"""The futures products' trading days (SPEC 19): the board beside the candle book, settled when a day ends.

`FuturesDays` keeps the market state's `FuturesBoard` (server/market/contracts/board.py) in step with the candle
book: a tick of a futures product first moves the row's day on (the day it leaves settles: its published
settlement, else the product's rule on the board's sums; a settlement the candle already holds stays), then goes
onto the board and into the live candle's `oi` and `s`. A roll of the book (the housekeeping round, the venue's
close) settles the same way. Called only by `MarketState`, its single writer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import date, datetime

import numpy as np

from server.market.candles.daily import CandleBook, move_row
from server.market.contracts.board import FuturesBoard
from server.market.contracts.settlement import within
from server.market.tick import Tick


def _prev_oi(candles: CandleBook, row: int) -> float:
    """The open interest at the close of ``row``'s candle before its live one (NaN: none, or not known)."""
    if not len(candles):
        return math.nan
    cols = candles.order()
    live_day = candles.days[candles.row_col[row]]
    before = cols[candles.opened[row, cols] & (candles.days[cols] < live_day)]
    return float(candles.oi[row, before[-1]]) if len(before) else math.nan


class FuturesDays:
    def __init__(self, ids: Sequence[str], candles: CandleBook, local: Sequence[Callable[[int], datetime]],
                 day_of: Sequence[Callable[[int], date]] | None) -> None:
        """`local`: each row's venue local time of an epoch-ms instant; `day_of`: each row's trading day of one
        (None without venue clocks: no later-day limits)."""
        self.board = FuturesBoard(ids, local)
        self.candles = candles
        self.day_of = day_of
        candles.futures[self.board.rows] = True
        self._col = candles.row_col.copy()  # the live column each futures row's board is for
        for row in self.board.rows:
            self._start_day(row)

    def _start_day(self, row: int) -> None:
        """The row's board begins its live day from the loaded history: the day before's settlement (and so the
        limits) and closing open interest (`oiChange` against it)."""
        self.board.oi[row] = _prev_oi(self.candles, row)
        self.board.new_day(row, float(self.candles.row_prev_settle[row]))

    def is_futures(self, row: int) -> bool:
        return self.board.specs[row] is not None

    def before_tick(self, row: int, day: date, tick: Tick) -> float:
        """A futures tick of trading day ``day`` is coming: the row's day moves on first (the day it leaves
        settles); this tick's volume (a feed's running total made an increment, against the right day's)."""
        candles = self.candles
        move_row(candles, row, day)
        self.settle_moved([row])
        return self.board.tick_volume(tick.volume, tick.detail, float(candles.v[row, candles.row_col[row]]))

    def after_tick(self, row: int, tick: Tick, volume: float, decimals: int) -> dict:
        """The tick onto the board and into the live candle's `oi` and `s`; the tick frame's keys."""
        board, candles = self.board, self.candles
        self.settle_moved([row])  # a late tick's day is the live one; the first tick of a row without a day
        board.apply(row, tick.price, volume, tick.ts, tick.detail)
        col = candles.row_col[row]
        candles.oi[row, col] = board.oi[row]
        candles.s[row, col] = board.settle[row]
        bid, ask, oi = board.bid[row], board.ask[row], board.oi[row]
        return {"bid": round(bid, decimals) if math.isfinite(bid) else None,
                "ask": round(ask, decimals) if math.isfinite(ask) else None,
                "oi": round(oi) if math.isfinite(oi) else None, "vol": round(float(candles.v[row, col]))}

    def settle_moved(self, rows: Sequence[int]) -> None:
        """Rows whose live candle moved to a later day: the day they left settles and sets the new day's limits."""
        candles, board = self.candles, self.board
        for row in rows:
            col, old = candles.row_col[row], self._col[row]
            if col == old:
                continue
            if candles.days[col] < candles.days[old]:  # the first roll at start put the row on its venue's day,
                self._col[row] = col                   # before the axis' newest: that day's board, from the loaded day
                self._start_day(row)                   # before it (nothing was applied to the board yet)
                continue
            if math.isnan(candles.s[row, old]):
                candles.s[row, old] = board.settlement(row)
            self._col[row] = col
            board.new_day(row, float(candles.s[row, old]))

    def fields(self, row: int, decimals: int) -> dict:
        """A futures quote's board fields, with the day's volume so far (the live candle's)."""
        candles = self.candles
        return self.board.fields(row, decimals) | {"volume": round(float(candles.v[row, candles.row_col[row]]))}

    def reference_price(self, row: int) -> float:
        """What `change` is taken against: a futures product's previous settlement (its previous close while no
        settlement is known), any other instrument's previous close."""
        prev = self.board.prev_settle[row]
        return prev if math.isfinite(prev) else self.candles.prev_close(row)

    def within_limits(self, row: int, price: float, ts: float) -> bool:
        """Whether ``price`` lies within the daily limits of the trading day of ``ts`` (a limit price is within);
        for a tick of a later day than the row's live one, the limits that day will have."""
        board = self.board
        if board.specs[row] is None:
            return True
        down, up = float(board.limit_down[row]), float(board.limit_up[row])
        if self.day_of is not None and self.day_of[row](int(ts * 1000)).toordinal() > self.candles.row_day[row]:
            down, up = board.next_limits(row)
        return within(price, down, up)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(limitDown, limitUp) of every row, NaN where none: the arrays themselves (the demo walk stays inside)."""
        return self.board.limit_down, self.board.limit_up
