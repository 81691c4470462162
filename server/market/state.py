"""The market state: current prices, per-instrument sequence numbers, candles.

Single writer: only ``apply``, ``restore`` and ``roll`` change it, and each change bumps
``version`` so readers can cache serialised views per version. Nothing outside writes its fields. Views return
plain dicts and lists ready for orjson; they never mutate anything.

Ticks are attributed to ``trading_day(tick.ts)``; a late tick whose trading day
is before the live candle's day still counts toward the live candle.

Intraday buckets (1m, 5m, 15m, 1h) are updated by the same call that updates the
live daily candle, with the tick's own timestamp, never before the live trading
day's session (``session_start``): so the live daily candle is, by construction,
the aggregate of the intraday buckets that start in its session (a tick stamped
before that session counts toward the session's first bucket, as it counts
toward the live daily candle). README "Decisions" states the rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

import numpy as np

from server.market.catalogue import Catalogue
from server.market.daily import CandleBook
from server.market.demo import DemoWalk
from server.market.intraday import IntradayBook, session_start
from server.market.inventory import InventoryBook
from server.market.ranges import CandleRanges
from server.market.spreads import SpreadCalculator
from server.market.tick import Tick
from server.market.timefmt import day_start, iso, trading_day
from server.market.venue_clock import VenueClock

_DAY_OFFSET_S = 8 * 3600


@dataclass(slots=True)
class AppliedTick:
    row: int
    id: str
    price: float
    change: float
    ts: float
    seq: int


def _finite_or_none(value: float, decimals: int) -> float | None:
    return round(value, decimals) if math.isfinite(value) else None


def price_text(price: float, decimals: int, unit: str) -> str:
    """'2,415.00 CNY/t' style text; 'n/a' before the first price."""
    if not math.isfinite(price):
        return f"n/a {unit}"
    return f"{price:,.{decimals}f} {unit}"


class MarketState:
    def __init__(
        self, catalogue: Catalogue, candles: CandleBook, demo: bool, epoch: str,
        inventory: InventoryBook | None = None, intraday: IntradayBook | None = None,
        clocks: Sequence[VenueClock] = (),
    ) -> None:
        """`clocks`: each instrument's venue clock, in row order (a quote's `tradingDay`; SPEC 16)."""
        n = len(catalogue.instruments)
        if candles.n != n:
            raise ValueError("candle book and catalogue disagree on the instrument count")
        self.catalogue = catalogue
        self.clocks = tuple(clocks)
        if self.clocks and len(self.clocks) != n:
            raise ValueError("venue clocks and catalogue disagree on the instrument count")
        self.candles = candles
        self.demo = demo
        self.epoch = epoch
        self.inventory = inventory
        self.intraday = intraday if intraday is not None else IntradayBook(n)
        if self.intraday.n != n:
            raise ValueError("intraday book and catalogue disagree on the instrument count")
        self.prices: np.ndarray = candles.live_arrays()[3]
        self.seq = np.zeros(n, dtype=np.int64)
        self.updated_ts = np.full(n, np.nan)
        self.version = 0
        self.updated = 0.0
        self._ids = [inst.id for inst in catalogue.instruments]
        self._decimals = [inst.decimals for inst in catalogue.instruments]
        self._spreads = SpreadCalculator(catalogue)
        self.ranges = CandleRanges(candles, self.intraday, self._decimals)  # range queries (SPEC 14)
        self._day_key = -1
        self._day = date.min
        self._session_day = date.min
        self._session_floor = 0

    # --- writing -------------------------------------------------------------
    def _trading_day(self, ts: float) -> date:
        key = int((ts + _DAY_OFFSET_S) // 86400)
        if key != self._day_key:
            self._day_key, self._day = key, trading_day(ts)
        return self._day

    def apply(self, ticks: list[Tick], seqs: list[int] | None = None) -> list[AppliedTick]:
        """Apply ticks in order; bumps ``version`` once per non-empty batch.

        ``seqs``: the seq of each tick as the tick log numbered it (Redis engine: every hub applies the
        same numbers); without it each instrument's seq counts up here."""
        if not ticks:
            return []
        if seqs is None:
            out = [self._apply_one(t) for t in ticks]
        else:
            out = [self._apply_one(t, s) for t, s in zip(ticks, seqs, strict=True)]
        self.version += 1
        self.updated = max(self.updated, max(t.ts for t in ticks))
        return out

    def _apply_one(self, tick: Tick, seq: int = 0) -> AppliedTick:
        row = tick.row
        candles = self.candles
        seq = seq or int(self.seq[row]) + 1
        candles.apply_tick(row, tick.price, tick.volume, self._trading_day(tick.ts), seq)
        live_day = candles.last_day()  # the candle the tick went into (a late tick: the live one)
        if live_day != self._session_day:
            self._session_day, self._session_floor = live_day, int(session_start(live_day))
        self.intraday.apply(row, tick.price, tick.volume, tick.ts, self._session_floor, seq)
        self.prices[row] = tick.price
        self.seq[row] = seq
        self.updated_ts[row] = tick.ts
        prev = self.candles.prev_close(row)
        change = tick.price - prev if math.isfinite(prev) else 0.0
        return AppliedTick(row, self._ids[row], tick.price, round(change, self._decimals[row]), tick.ts, seq)

    def restore(self, last: list[tuple[Tick, int]], seqs: dict[str, int], untouched_at: float | None) -> None:
        """Continue from a shared tick log (a hub joining others, or restarting on Redis): each instrument's newest
        tick as every hub shows it (its volume was counted there), every instrument's seq, and for a demo state the
        time of the prices no tick has moved yet (`untouched_at`: the same on every hub)."""
        self.apply([Tick(t.row, t.price, t.ts, 0.0) for t, _ in last], [seq for _, seq in last])
        if untouched_at is not None:
            untouched = np.ones(len(self.updated_ts), dtype=bool)
            untouched[[t.row for t, _ in last]] = False
            self.updated_ts[untouched] = untouched_at
            self.updated = float(np.nanmax(self.updated_ts))
        for inst_id, seq in seqs.items():
            row = self.catalogue.index.get(inst_id)
            if row is not None:
                self.seq[row] = seq
        self.version += 1

    def history_start(self) -> float:
        """The earliest tick time the state keeps (the first held trading day's start); -inf with no history."""
        return day_start(self.candles.first_day()) if len(self.candles) else -math.inf

    def roll(self, now: float) -> bool:
        """Roll candles to ``trading_day(now)``; True (and a new version) if anything changed."""
        if self.candles.roll_to(trading_day(now)):
            self.version += 1
            return True
        return False

    # --- views ---------------------------------------------------------------
    def updated_iso(self) -> str | None:
        """Time of the newest tick applied; None before the first one (never an invented 1970)."""
        return iso(self.updated) if self.updated > 0 and math.isfinite(self.updated) else None

    def quote(self, row: int) -> dict:
        inst = self.catalogue.instruments[row]
        dec = inst.decimals
        price = float(self.prices[row])
        prev = self.candles.prev_close(row)
        change = price - prev
        pct = 100.0 * change / prev if math.isfinite(change) and prev else math.nan
        ts = float(self.updated_ts[row])
        return {
            "id": inst.id,
            "kind": inst.kind,
            "name": inst.name,
            "price": _finite_or_none(price, dec),
            "priceText": price_text(price, dec, inst.price_unit),
            "change": _finite_or_none(change, dec),
            "changePct": _finite_or_none(pct, 2),
            "source": inst.source,
            "unit": inst.unit,
            "currency": inst.currency,
            "updated": iso(ts) if math.isfinite(ts) else None,
            "venue": inst.venue,
            "tradingDay": self._trading_day_of(row, ts),
        }

    def _trading_day_of(self, row: int, ts: float) -> str | None:
        """The trading day (of the instrument's venue) its newest tick belongs to; None before the first."""
        if not self.clocks or not math.isfinite(ts):
            return None
        return self.clocks[row].trading_day(int(ts * 1000)).isoformat()

    def quote_extended(self, row: int) -> dict:
        dec = self._decimals[row]
        o, h, low, _c, v = self.candles.live(row) if len(self.candles) else (math.nan,) * 4 + (0.0,)
        out = self.quote(row)
        out.update({
            "extended": True,
            "open": _finite_or_none(o, dec),
            "high": _finite_or_none(h, dec),
            "low": _finite_or_none(low, dec),
            "prevClose": _finite_or_none(self.candles.prev_close(row), dec),
            "volume": round(v),
            "seq": int(self.seq[row]),
        })
        return out

    def quotes(self, rows: list[int]) -> list[dict]:
        return [self.quote(row) for row in rows]

    def kline(self, row: int, days: int) -> list[dict]:
        return self.candles.series(row, days, self._decimals[row])

    def kline_intraday(self, row: int, interval: str, limit: int) -> list[dict]:
        """The newest ``limit`` buckets of ``interval`` (1m, 5m, 15m, 1h) that had a tick, ascending."""
        return self.intraday.series(interval, row, limit, self._decimals[row])

    def kline_intraday_json(self, row: int, interval: str, limit: int) -> bytes:
        """``orjson.dumps(kline_intraday(...))``, byte for byte, from the buckets' kept texts."""
        return self.intraday.series_json(interval, row, limit, self._decimals[row])

    def spreads(self) -> list[dict]:
        return self._spreads.compute(self.prices)

    def inventory_items(self) -> list[dict]:
        return self.inventory.items() if self.inventory is not None else []

    def categories(self) -> list[dict]:
        return [self.category(cat.id) for cat in self.catalogue.categories]

    def category(self, category_id: str) -> dict:
        """One category view; raises KeyError for an unknown id."""
        cat = self.catalogue.category_index[category_id]
        rows = [self.catalogue.index[iid] for iid in cat.instrument_ids]
        return {"id": cat.id, "name": cat.name, "count": len(rows), "quotes": self.quotes(rows)}


def build_demo_state(
    catalogue: Catalogue, seed: int, now: float, capacity: int = 90, clocks: Sequence[VenueClock] = (),
) -> tuple[MarketState, DemoWalk]:
    """The demo walk plus a state whose history ends in today's live candle at the live price.

    The intraday rings are seeded from the daily history (each day's buckets aggregate to its candle),
    ending at ``now`` in the live price; the live candle keeps the volume of the elapsed session."""
    feed = DemoWalk(catalogue, seed)
    history = feed.history(trading_day(now), capacity)
    days, o, h, low, c, v = history
    buckets, v[:, -1] = feed.intraday_history(history, now)
    candles = CandleBook(len(catalogue.instruments), capacity)
    candles.load_history(days, o, h, low, c, v)
    intraday = IntradayBook(len(catalogue.instruments))
    for name, arrays in buckets.items():
        intraday.rings[name].load(*arrays)
    state = MarketState(catalogue, candles, demo=True, epoch=f"demo-{seed}-{int(now)}",
                        inventory=InventoryBook(catalogue, seed), intraday=intraday, clocks=clocks)
    state.updated_ts[:] = now
    state.updated = now
    return state, feed
