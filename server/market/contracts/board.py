"""The futures board (SPEC 19): what each futures product's quote shows beside its price, and its settlement.

Per instrument row (rows that are not futures products keep NaNs and are never asked): the best bid and ask and
their sizes, open interest (and the previous day's, for `oiChange`), the trading day's cumulative turnover (its
volume is the live daily candle's), the previous and the day's settlement, the day's limits, and the sums a
settlement is weighed from. Only `apply` (a tick), `seed_day` (a demo's start) and `new_day` (the row's trading
day moved on) change it; the market state calls them. The arithmetic is server/market/contracts/settlement.py's.

Conventions: a tick's `cum_volume` is turned into this tick's volume against the day's volume so far (a total
below it counts nothing); turnover is the feed's running total when it sends one, else price * volume *
multiplier summed. A feed's published settle and limits win over computed ones until the next trading day.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import numpy as np

from server.market.contracts.settlement import in_window, limits, settle_price, window_minutes
from server.market.contracts.specs import PRODUCTS, ProductSpec
from server.market.contracts.symbols import read_id
from server.market.tick import TickDetail

_NAN = math.nan


def spec_of(products: Mapping[str, ProductSpec], instrument_id: str) -> ProductSpec | None:
    """The product specification of a product id or of one of its contracts' ids (`methanol-202605`)."""
    spec = products.get(instrument_id)
    if spec is None:
        parts = read_id(instrument_id)
        spec = products.get(parts[0]) if parts is not None else None
    return spec


def _num(value: float, decimals: int) -> float | None:
    return round(value, decimals) if math.isfinite(value) else None


def _count(value: float) -> int | None:
    return round(value) if math.isfinite(value) else None


class FuturesBoard:
    def __init__(self, ids: Sequence[str], local: Sequence[Callable[[int], datetime]] = (),
                 products: Mapping[str, ProductSpec] = PRODUCTS) -> None:
        """`ids`: the instruments in row order; `local`: each row's venue local time of an epoch-ms instant
        (a window settlement's clock; without it, UTC+8)."""
        n = len(ids)
        self.specs: list[ProductSpec | None] = [spec_of(products, i) for i in ids]
        self.rows = [row for row, spec in enumerate(self.specs) if spec is not None]
        self._window = [window_minutes(spec.settle_window) if spec else None for spec in self.specs]
        self._local = list(local) or None
        self.bid, self.ask, self.bid_size, self.ask_size = ([_NAN] * n for _ in range(4))
        self.oi, self.oi_prev, self.last = ([_NAN] * n for _ in range(3))
        self.turnover = [0.0] * n
        self.prev_settle, self.settle = [_NAN] * n, [_NAN] * n  # settle: the day's, once published
        self.limit_down, self.limit_up = np.full(n, _NAN), np.full(n, _NAN)
        self._sums = [[0.0, 0.0, 0.0, 0.0] for _ in range(n)]  # the day's p*v, v; the window's p*v, v

    def is_futures(self, row: int) -> bool:
        return self.specs[row] is not None

    # --- writing -------------------------------------------------------------------------------------------------
    @staticmethod
    def tick_volume(volume: float, detail: TickDetail | None, so_far: float) -> float:
        """This tick's volume: the feed's, or the rise of its running total over the day's ``so_far`` (never
        negative)."""
        if detail is None or detail.cum_volume is None:
            return volume
        return max(detail.cum_volume - so_far, 0.0)

    def apply(self, row: int, price: float, volume: float, ts: float, detail: TickDetail | None) -> None:
        spec = self.specs[row]
        if spec is None:
            return
        sums = self._sums[row]
        sums[0] += price * volume
        sums[1] += volume
        window = self._window[row]
        if window is not None and in_window(self._minute(row, ts), window):
            sums[2] += price * volume
            sums[3] += volume
        self.last[row] = price
        self.turnover[row] += price * volume * spec.multiplier
        if detail is not None:
            self._take(row, detail)

    def _take(self, row: int, d: TickDetail) -> None:
        if d.prev_settle is not None and d.prev_settle != self.prev_settle[row]:
            self._published_prev(row, d.prev_settle)
        for name in ("bid", "ask", "bid_size", "ask_size", "oi", "settle"):
            value = getattr(d, name)
            if value is not None:
                getattr(self, name)[row] = value
        if d.turnover is not None:
            self.turnover[row] = d.turnover
        if d.limit_up is not None:
            self.limit_up[row] = d.limit_up
        if d.limit_down is not None:
            self.limit_down[row] = d.limit_down

    def _published_prev(self, row: int, prev_settle: float) -> None:
        """The feed published the previous day's settlement (CTP's PreSettlementPrice) and it is not ours: it wins
        (SPEC 19), and so do the limits it sets (until limits the feed publishes, taken after it)."""
        spec = self.specs[row]
        assert spec is not None
        self.prev_settle[row] = prev_settle
        self.limit_down[row], self.limit_up[row] = limits(prev_settle, spec.limit_pct, spec.tick)

    def _minute(self, row: int, ts: float) -> int:
        ms = int(ts * 1000)
        if self._local is None:
            return (ms // 60_000 + 8 * 60) % 1440
        local = self._local[row](ms)
        return local.hour * 60 + local.minute

    def seed_day(self, row: int, vwap: float, volume: float, last: float, oi: float, oi_prev: float,
                 sizes: Sequence[float] = (_NAN, _NAN)) -> None:
        """The day so far as a history tells it (the demo's live candle): weighed at ``vwap``, the book a tick
        either side of the last price with ``sizes`` (bid, ask) lots."""
        spec = self.specs[row]
        if spec is None:
            return
        if volume > 0 and math.isfinite(vwap):
            self._sums[row][:2] = [vwap * volume, volume]
            self.turnover[row] = vwap * volume * spec.multiplier
        self.last[row], self.oi[row], self.oi_prev[row] = last, oi, oi_prev
        self.bid[row], self.ask[row] = last - spec.tick, last + spec.tick
        self.bid_size[row], self.ask_size[row] = float(sizes[0]), float(sizes[1])

    def new_day(self, row: int, prev_settle: float) -> None:
        """The row's trading day moved on, the day before settled at ``prev_settle``: the new day's limits."""
        spec = self.specs[row]
        if spec is None:
            return
        self.prev_settle[row] = prev_settle
        self.settle[row] = _NAN
        self.oi_prev[row] = self.oi[row]
        self.turnover[row] = 0.0
        self._sums[row] = [0.0, 0.0, 0.0, 0.0]
        self.limit_down[row], self.limit_up[row] = limits(prev_settle, spec.limit_pct, spec.tick)

    def follow(self, row: int, main: int) -> None:
        """A product row takes its main contract's day references (the main continuous series, SPEC 19): the previous
        settlement, the limits and the previous open interest, so its change and limits are the main's on a roll
        day too."""
        self.prev_settle[row], self.oi_prev[row] = self.prev_settle[main], self.oi_prev[main]
        self.limit_down[row], self.limit_up[row] = self.limit_down[main], self.limit_up[main]

    # --- reading -------------------------------------------------------------------------------------------------
    def settlement(self, row: int) -> float:
        """The day's settlement: the published one, else the product's rule on the day's ticks so far."""
        spec = self.specs[row]
        if spec is None:
            return _NAN
        if math.isfinite(self.settle[row]):
            return self.settle[row]
        pv, v, wpv, wv = self._sums[row]
        if self._window[row] is not None:
            return settle_price(wpv, wv, self.last[row], spec.tick)
        return settle_price(pv, v, self.last[row], spec.tick)

    def next_limits(self, row: int) -> tuple[float, float]:
        """(limitDown, limitUp) of the day after, were the day to settle now."""
        spec = self.specs[row]
        return limits(self.settlement(row), spec.limit_pct, spec.tick) if spec else (_NAN, _NAN)

    def fields(self, row: int, decimals: int) -> dict:
        """The quote's futures fields (SPEC 19)."""
        oi, prev = self.oi[row], self.oi_prev[row]
        return {
            "bid": _num(self.bid[row], decimals),
            "ask": _num(self.ask[row], decimals),
            "bidSize": _count(self.bid_size[row]),
            "askSize": _count(self.ask_size[row]),
            "openInterest": _count(oi),
            "oiChange": _count(oi - prev),
            "turnover": round(self.turnover[row]),
            "prevSettle": _num(self.prev_settle[row], decimals),
            "settle": _num(self.settle[row], decimals),
            "limitUp": _num(float(self.limit_up[row]), decimals),
            "limitDown": _num(float(self.limit_down[row]), decimals),
        }
