"""The market state: current prices, per-instrument sequence numbers, candles.

Single writer: only ``apply``, ``restore`` and ``roll`` change it (a futures product's board and settlement too,
through ``FuturesDays``: server/market/futures.py, docs/futures.md), and each change bumps
``version`` so readers can cache serialised views per version. Nothing outside writes its fields. Views return
plain dicts and lists ready for orjson; they never mutate anything.

With venue clocks (SPEC 16), a tick belongs to its venue's trading day (``VenueClock.trading_day``, one dict
lookup) and is bucketed intraday at ``VenueClock.bucket_ts`` (the closing tick counts in the window it closes);
without them (unit tests) to ``timefmt.trading_day``. A late tick whose trading day is before its instrument's
live candle's day still counts toward the live candle.

Intraday buckets (1m, 5m, 15m, 1h) are updated by the same call that updates the
live daily candle, never before the live trading day's session (the previous trading
day's close, or ``session_start`` without clocks): so the live daily candle is, by
construction, the aggregate of the intraday buckets that start in its session (a tick
stamped before that session counts toward the session's first bucket, as it counts
toward the live daily candle). README "Decisions" states the rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

import numpy as np

from server.market.candles.daily import CandleBook
from server.market.candles.daily import reset_row as reset_candles
from server.market.candles.intraday import IntradayBook
from server.market.candles.ranges import CandleRanges
from server.market.candles.trading_axis import VenueAxis, WeekdayAxis, axis_columns, axis_days_back
from server.market.catalogue import Catalogue
from server.market.contracts.main import Roll
from server.market.demo import DemoWalk, History, fit_to_venues, venue_sessions, weekday_sessions
from server.market.demo_contracts import (
    bucket_days,
    derive_buckets,
    derive_daily,
    expiry_closes,
    mask_untraded,
    replay_mains,
    splice_daily,
    trade_windows,
    traded_mask,
    trim_buckets,
)
from server.market.futures import FuturesDays
from server.market.inventory import InventoryBook
from server.market.main_series import MainSeries
from server.market.session_floors import SessionFloors
from server.market.spreads import SpreadCalculator
from server.market.tick import Tick, TickDetail
from server.market.timefmt import day_start, iso, trading_day
from server.market.venues.clock import VenueClock

_DAY_OFFSET_S = 8 * 3600


@dataclass(slots=True)
class AppliedTick:
    row: int
    id: str
    price: float
    change: float
    ts: float
    seq: int
    volume: float = 0.0
    book: dict | None = None  # a futures tick's frame keys beside the price: bid, ask, oi, vol (SPEC 19)
    detail: TickDetail | None = None  # the tick's own detail as the feed sent it (the archive keeps it)
    roll: dict | None = None  # a product's first tick of a new main: the roll frame sent before it (SPEC 19)


def _finite_or_none(value: float, decimals: int) -> float | None:
    return round(value, decimals) if math.isfinite(value) else None


def _trading_day_of(clocks: Sequence[VenueClock], row: int, ts: float) -> str | None:
    """The trading day (of the instrument's venue) its newest tick belongs to; None before the first."""
    if not clocks or not math.isfinite(ts):
        return None
    return clocks[row].trading_day(int(ts * 1000)).isoformat()


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
        self.clocks = list(clocks)  # a reserved row's changes when it is bound (SPEC 20: `reset_row`)
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
        self._ids, self._decimals = catalogue.ids, catalogue.decimals  # the catalogue's lists (`bind` changes them)
        self._spreads = SpreadCalculator(catalogue)
        self.ranges = CandleRanges(candles, self.intraday, self._decimals)  # range queries (SPEC 14)
        self._day_key = -1
        self._day = date.min
        self._day_of = [clock.trading_day for clock in self.clocks] or None  # row -> its venue's trading day
        self._bucket_of = [clock.bucket_ts for clock in self.clocks] or None
        self._floor_day = np.zeros(n, dtype=np.int64)  # the live day each row's session floor is for
        self._floor = [0] * n
        self.floors = SessionFloors(self.clocks, candles)
        self.futures = FuturesDays(self._ids, candles, [clock.local for clock in self.clocks], self._day_of)
        self.mains = MainSeries(catalogue, candles, self.clocks)  # each product row's main contract (SPEC 19)
        self.streamed_main: dict[int, int | None] = {}  # the main each product's ticks were last sent under

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
        day_of = self._day_of
        if day_of is None:
            day = self._trading_day(tick.ts)
            bucket_ts = tick.ts
        else:
            ms = int(tick.ts * 1000)
            day = day_of[row](ms)
            bucket_ts = self._bucket_of[row](ms) / 1000  # type: ignore[index]
        futures = self.futures.is_futures(row)
        volume = self.futures.before_tick(row, day, tick) if futures else tick.volume
        if futures and self.mains.is_series(row):
            main = self.mains.main_on(row, day.toordinal())
            if main is not None:
                self.futures.board.follow(row, main)
        candles.apply_tick(row, tick.price, volume, day, seq)
        live = candles.days[candles.row_col[row]]  # the candle the tick went into (a late tick: the live one)
        if live != self._floor_day[row]:
            self._floor_day[row] = live
            self._floor[row] = self.floors.of(row, date.fromordinal(int(live)))
        self.intraday.apply(row, tick.price, volume, bucket_ts, self._floor[row], seq)
        self.prices[row] = tick.price
        self.seq[row] = seq
        self.updated_ts[row] = tick.ts
        change = round(tick.price - self.futures.reference_price(row), self._decimals[row])
        applied = AppliedTick(row, self._ids[row], tick.price, change if math.isfinite(change) else 0.0, tick.ts,
                              seq, volume)
        if futures:
            applied.book = self.futures.after_tick(row, tick, volume, self._decimals[row])
            applied.detail = tick.detail
            if self.mains.is_series(row):
                self._as_main(applied, day)
        return applied

    def _as_main(self, applied: AppliedTick, day: date) -> None:
        """A product's tick is its main contract's (SPEC 19): `contract` in the frame; the roll frame before the first
        tick under a new main."""
        row = applied.row
        main = self.mains.main_on(row, day.toordinal())
        assert applied.book is not None
        applied.book["contract"] = self._ids[main] if main is not None else None
        before = self.streamed_main.get(row)
        if main != before and before is not None and main is not None:
            applied.roll = {"type": "roll", "id": applied.id, "from": self._ids[before], "to": self._ids[main],
                            "tradingDay": day.isoformat()}
        self.streamed_main[row] = main

    def restore(self, last: list[tuple[Tick, int]], seqs: dict[str, int], untouched_at: float | None) -> None:
        """Continue from a shared tick log (a hub joining others, or restarting on Redis): each instrument's newest
        tick as every hub shows it (its volume was counted there), every instrument's seq, and for a demo state the
        time of the prices no tick has moved yet (`untouched_at`: the same on every hub).

        A live feed's state already holds its archived ticks (the archive's replay, before this): a tick of the log
        older (by seq) than the one the state holds for its instrument is not applied over it (a log that lost its
        newest entries), and no seq goes back; the log's newest tick that the replay applied already is applied
        again (its volume not counted twice): the same price, and its time as the log keeps it. A tick of an earlier
        trading day than its instrument's unopened live candle sets the price only: a trading day's candle exists
        from its own first tick (SPEC 16), so a hub restarted on a weekend shows what the others show."""
        current: list[tuple[Tick, int]] = []
        earlier: list[tuple[Tick, int]] = []
        for t, seq in last:
            if seq >= self.seq[t.row]:
                (earlier if self._before_unopened_day(t) else current).append((t, seq))
        self.apply([Tick(t.row, t.price, t.ts, 0.0) for t, _ in current], [seq for _, seq in current])
        for t, seq in earlier:
            self.prices[t.row], self.seq[t.row], self.updated_ts[t.row] = t.price, seq, t.ts
            self.updated = max(self.updated, t.ts)
        if untouched_at is not None:
            untouched = np.ones(len(self.updated_ts), dtype=bool)
            untouched[[t.row for t, _ in last]] = False
            self.updated_ts[untouched] = untouched_at
            self.updated = float(np.nanmax(self.updated_ts))
        for inst_id, seq in seqs.items():
            row = self.catalogue.index.get(inst_id)
            if row is not None and seq > self.seq[row]:
                self.seq[row] = seq
        self.version += 1

    def _before_unopened_day(self, tick: Tick) -> bool:
        """True when ``tick``'s trading day is before its row's live candle's day and that candle has no tick yet."""
        candles, row = self.candles, tick.row
        if not len(candles) or not math.isnan(candles.live(row)[0]):
            return False
        day = self._day_of[row](int(tick.ts * 1000)) if self._day_of is not None else trading_day(tick.ts)
        return day.toordinal() < candles.days[candles.row_col[row]]

    def history_start(self) -> float:
        """The earliest tick time the state keeps (the first held trading day's start); -inf with no history."""
        return day_start(self.candles.first_day()) if len(self.candles) else -math.inf

    def roll(self, now: float) -> bool:
        """Each instrument's candles to its venue's trading day at ``now`` (``trading_day(now)`` without clocks);
        True (and a new version) if anything changed."""
        if self._day_of is None:
            changed = self.candles.roll_to(trading_day(now))
        else:
            ms = int(now * 1000)
            changed = self.candles.advance(np.array([f(ms).toordinal() for f in self._day_of], dtype=np.int32))
        if changed:
            self.futures.settle_moved(self.futures.board.rows)
            self.mains.advance(now)
            self.version += 1
        return changed

    # --- views ---------------------------------------------------------------
    def updated_iso(self) -> str | None:
        """Time of the newest tick applied; None before the first one (never an invented 1970)."""
        return iso(self.updated) if self.updated > 0 and math.isfinite(self.updated) else None

    def quote(self, row: int, board: bool = True) -> dict:
        """`board`: a futures product's board fields too (SPEC 19; the keyed API and the stream). The public
        site's category views (`category`) keep the source document's fields: its snapshot is one set of bytes
        for every hub of a refresh (SPEC 12), and a hub's day volume counts the ticks since it joined."""
        inst = self.catalogue.instruments[row]
        dec = inst.decimals
        price = float(self.prices[row])
        prev = self.futures.reference_price(row)
        change = price - prev
        pct = 100.0 * change / prev if math.isfinite(change) and prev else math.nan
        ts = float(self.updated_ts[row])
        out = {
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
            "tradingDay": _trading_day_of(self.clocks, row, ts),
        }
        if self.mains.is_series(row):  # the main continuous series names the contract whose price it shows (SPEC 19)
            main = self.streamed_main.get(row, self.mains.main[row])
            out["contract"] = self._ids[main] if main is not None else None
        return out | self.futures.fields(row, dec) if board and self.futures.is_futures(row) else out

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
        quotes = [self.quote(row, board=False) for row in rows]
        return {"id": cat.id, "name": cat.name, "count": len(rows), "quotes": quotes}


def reset_row(state: MarketState, row: int, clock: VenueClock | None, now: float) -> None:
    """A reserved row bound to a declared instrument, or freed (SPEC 20, docs/ingest.md): no price and no candle, on
    `clock`'s trading days from now on (the state's one writer outside its methods: the tick path's loop runs it)."""
    if clock is not None and state._day_of is not None and state._bucket_of is not None:
        state.clocks[row] = clock
        state._day_of[row], state._bucket_of[row] = clock.trading_day, clock.bucket_ts
        if isinstance(state.candles.axis, VenueAxis):
            state.candles.axis.rebind(row, clock.days)
    day = state._day_of[row](int(now * 1000)) if state._day_of is not None else trading_day(now)
    reset_candles(state.candles, row, day.toordinal())
    state.intraday.reset_row(row)
    state.prices[row] = state.updated_ts[row] = np.nan
    state._floor_day[row] = 0
    state.version += 1


def _demo_candles(n: int, columns: int, axis: VenueAxis | WeekdayAxis, days: list[date], history: History,
                  oi: np.ndarray, settle: np.ndarray, live_days: list[date]) -> tuple[CandleBook, np.ndarray]:
    """The demo's daily candle book, advanced to each row's live day; with the rows whose live candle is that day."""
    _, o, h, low, c, v = history
    candles = CandleBook(n, columns, axis)
    candles.load_history(days, o, h, low, c, v, oi, settle)
    candles.advance(np.array([d.toordinal() for d in live_days], dtype=np.int32))
    live = candles.days[candles.row_col] == np.array([d.toordinal() for d in live_days])  # not an expired contract
    candles.s[np.flatnonzero(live), candles.row_col[live]] = np.nan  # today settles at its close
    candles.oi[np.isnan(candles.o)] = candles.s[np.isnan(candles.o)] = np.nan  # days not begun have neither
    return candles, live


def _seed_mains(state: MarketState, feed: DemoWalk, mains: dict[int, tuple[np.ndarray, list[Roll]]],
                live_ords: np.ndarray) -> None:
    """Each product's main series in the demo state, continuing from the history's decisions (replay_mains)."""
    candles = state.candles
    for product, (by_col, rolls) in mains.items():  # the main series continue from the history's decisions
        main = int(by_col[candles.row_col[product]]) if by_col[candles.row_col[product]] >= 0 else None
        state.mains.seed(product, main, int(live_ords[product]), rolls)
        traded = np.flatnonzero((by_col >= 0) & ~np.isnan(candles.o[product, :len(by_col)]))
        state.streamed_main[product] = int(by_col[traded[-1]]) if len(traded) else main  # its newest candle's
        if main is not None:
            feed.oi[product] = feed.oi[main]
            state.futures.board.follow(product, main)
    feed.mains = state.mains


def _seed_board(state: MarketState, feed: DemoWalk, live: np.ndarray, seed: int) -> None:
    """The futures board's day so far in the demo state, as each live candle tells it; then the feed's limits."""
    candles = state.candles
    lots = np.random.default_rng([seed, 19]).integers(1, 81, size=(len(state.futures.board.rows), 2))  # book sizes
    for k, row in enumerate(state.futures.board.rows):  # the board's day so far, as the live candle tells it
        _, high, low_, close, volume = candles.live(row)
        before = candles.shown_columns(row)
        before = before[before != candles.row_col[row]]  # the days before the live one (shown or not yet)
        oi_prev = float(candles.oi[row, before[-1]]) if len(before) else math.nan
        oi_now = float(feed.oi[row]) if live[row] else float(candles.oi[row, candles.row_col[row]])
        state.futures.board.seed_day(row, (high + low_ + 2 * close) / 4, volume, close, oi_now, oi_prev, lots[k])
    feed.bounds = state.futures.bounds()


def build_demo_state(
    catalogue: Catalogue, seed: int, now: float, capacity: int = 90, clocks: Sequence[VenueClock] = (),
) -> tuple[MarketState, DemoWalk]:
    """The demo walk plus a state whose history ends in each instrument's live candle at the live price.

    With venue clocks the history has candles on each venue's trading days only, and intraday buckets inside their
    session windows only (none for an assessment; SPEC 16). The intraday rings are seeded from the daily history
    (each day's buckets aggregate to its candle), ending at ``now`` in the live price; the live candle keeps the
    volume of the elapsed session, and a trading day whose session has not begun has no candle yet."""
    feed = DemoWalk(catalogue, seed)
    feed.place(now, expiry_closes(feed, clocks))  # the contracts on their products' curves (SPEC 19)
    n = len(catalogue.instruments)
    ms = int(now * 1000)
    axis = VenueAxis([clock.days for clock in clocks], catalogue.trading_spans()) if clocks else WeekdayAxis(n)
    live_days = [clock.trading_day(ms) for clock in clocks] if clocks else [trading_day(now)] * n
    columns = axis_columns(capacity) if clocks else capacity  # `capacity` trading days of every daily venue
    days = axis_days_back(axis, max(live_days), columns)
    history = feed.history(days[-1], len(days), days)
    opened = np.array([axis.open_rows(day) for day in days]).T
    if clocks:
        started = np.array([bool(clock.windows(day)) and clock.windows(day)[0].start_ms <= ms
                            for clock, day in zip(clocks, live_days, strict=True)])
        fit_to_venues(history, opened, np.array([d.toordinal() for d in live_days]), started, feed.live_prices())
    sessions = venue_sessions(clocks) if clocks else weekday_sessions(n)
    contract = feed.curve.is_contract  # a contract's candles are its product's on the curve (SPEC 19)
    buckets = feed.intraday_history(history, now, [None if contract[r] else s for r, s in enumerate(sessions)])
    live_ords = np.array([d.toordinal() for d in live_days])
    share = derive_daily(feed, history, live_ords)
    oi, settle = feed.board_history(history)
    mask_untraded(history, traded_mask(feed, days), oi, settle)  # a contract only between its first and last day
    mains = replay_mains(feed, history, oi, opened, live_ords)  # each day's main contract, by the rule
    day_of, windows = bucket_days(days, clocks), trade_windows(feed, clocks)
    buckets = {name: trim_buckets(derive_buckets(feed, groups, history, share, day_of, mains), windows)
               for name, groups in buckets.items()}
    splice_daily(history, oi, settle, mains)  # a product's candles: each day's main's
    candles, live = _demo_candles(n, columns, axis, days, history, oi, settle, live_days)
    intraday = IntradayBook(n)
    for name, groups in buckets.items():
        for rows, arrays in groups:
            intraday.rings[name].load(*arrays, rows=rows)
    state = MarketState(catalogue, candles, demo=True, epoch=f"demo-{seed}-{int(now)}",
                        inventory=InventoryBook(catalogue, seed), intraday=intraday, clocks=clocks)
    _seed_mains(state, feed, mains, live_ords)
    state.updated_ts[:] = now
    state.updated_ts[~live] = feed.curve.expiry_ts[~live]  # an expired contract: its last close (SPEC 19)
    state.updated = now
    _seed_board(state, feed, live, seed)
    return state, feed
