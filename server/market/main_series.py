"""Each futures product's main contract as days pass (SPEC 19): the product's row is its main continuous series.

`MainSeries` keeps, per product row with contract rows, the main contract of the newest trading day it was asked
about and every roll so far. The main of a trading day D is decided once, the first time D is asked for (the
product's first tick of D, the housekeeping round's roll, or the demo feed before it publishes D's first tick), by
server/market/contracts/main.py's rule from the candle book's closing open interest of the venue's trading day
before D, which is complete by then: every hub decides the same from the same ticks. The demo's history seeds it
(`seed`: the replay of the same rule over the history). Read by the market state (the product quote's `contract`,
the roll frame) and the demo walk (which contract's ticks the product row repeats).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import date, datetime, timedelta

import numpy as np

from server.market.candles.daily import CandleBook
from server.market.catalogue import Catalogue
from server.market.contracts.main import Candidate, Roll, next_main
from server.market.venues.clock import VenueClock

ADJUST_MODES = ("diff", "ratio")  # `?adjust=`: a product's series back-adjusted at its rolls (SPEC 19)
_CONTINUOUS = re.compile(r"([a-z0-9][a-z0-9-]*)\.([cn])\.([0-9]{1,2})")


class MainSeries:
    def __init__(self, catalogue: Catalogue, candles: CandleBook, clocks: Sequence[VenueClock]) -> None:
        self.catalogue = catalogue
        self.candles = candles
        self.clocks = clocks
        index = catalogue.index
        self.contracts: dict[int, tuple[int, ...]] = {index[p]: rows for p, rows in catalogue.contract_rows.items()}
        self.last_day = {r: date.fromisoformat(catalogue.instruments[r].last_trading_day).toordinal()
                         for rows in self.contracts.values() for r in rows}
        self.main: dict[int, int | None] = dict.fromkeys(self.contracts)
        self.day: dict[int, int] = dict.fromkeys(self.contracts, 0)  # the trading day (ordinal) `main` is for
        self.rolls: dict[int, list[Roll]] = {p: [] for p in self.contracts}

    def is_series(self, row: int) -> bool:
        return row in self.contracts

    def seed(self, product: int, main: int | None, day: int, rolls: list[Roll]) -> None:
        self.main[product], self.day[product], self.rolls[product] = main, day, list(rolls)

    def main_on(self, product: int, day: int) -> int | None:
        """The main contract row of trading day `day` (ordinal); decided now if `day` is newer than the last one."""
        if day <= self.day[product]:
            return self.main[product]
        before = self._previous(product, day)
        col = self._column(before)
        current = self.main[product]
        if col is not None:
            rows = self.contracts[product]
            oi, close = self.candles.oi[list(rows), col], self.candles.c[list(rows), col]
            traded = ~np.isnan(self.candles.o[list(rows), col]) | ~np.isnan(oi)
            candidates = [Candidate(r, self.last_day[r], float(oi[k])) for k, r in enumerate(rows) if traded[k]]
            decided = next_main(current, candidates, before)
            if decided != current and current is not None and isinstance(decided, int):
                closes: dict[int, float] = dict(zip(rows, close.tolist(), strict=True))
                self.rolls[product].append(Roll(day, current, decided, closes.get(current, math.nan),
                                                closes.get(decided, math.nan)))
            current = decided if isinstance(decided, int) else current
        self.main[product], self.day[product] = current, day
        return current

    def main_at(self, product: int, ts: float) -> int | None:
        """The main contract row at the instant `ts` (its venue's trading day then)."""
        return self.main_on(product, self._day_of(product, ts))

    def replay(self, now: float) -> None:
        """A live hub's start: the rule over the held days before each product's trading day at `now`, oldest first,
        each day from the day before's closing open interest, as a hub running through them decided it. So the rolls
        of the stored history (SPEC 18) are known after a restart (`/rolls`, `?adjust=`), the same on every hub that
        loads the same days. The first held day has no day before it: no main, then the largest open interest."""
        candles = self.candles
        cols = candles.order()
        for product in self.contracts:
            today = self._day_of(product, now)
            for col in cols[candles.opened[product, cols]].tolist():
                day = int(candles.days[col])
                if 0 < day < today:
                    self.main_on(product, day)

    def advance(self, now: float) -> None:
        """Decide every product's main for its venue's trading day at `now` (the housekeeping round)."""
        for product in self.contracts:
            self.main_at(product, now)

    def roll_views(self, product: int) -> list[dict]:
        """`{tradingDay, from, to, fromClose, toClose}` of each roll, oldest first (ids, the closes rounded)."""
        insts, dec = self.catalogue.instruments, self.catalogue.instruments[product].decimals
        return [{"tradingDay": date.fromordinal(r.day).isoformat(), "from": insts[r.from_key].id,
                 "to": insts[r.to_key].id, "fromClose": _num(r.from_close, dec), "toClose": _num(r.to_close, dec)}
                for r in self.rolls[product]]

    def resolve(self, text: str, now: float) -> int | None:
        """The contract row a continuous id names (SPEC 19, Databento's ranks, counted from 0): `{product}.c.N` the
        Nth nearest expiry among the contracts listed on the venue's current trading day, `{product}.n.N` the Nth
        largest open interest at the previous trading day's close (ties: the nearer expiry). None: no such id, or
        no such rank."""
        m = _CONTINUOUS.fullmatch(text)
        product = self.catalogue.index.get(m[1]) if m else None
        if m is None or product is None or product not in self.contracts:
            return None
        rank, today = int(m[3]), self._day_of(product, now)
        listed = [r for r in self.contracts[product] if self.last_day[r] >= today and self._listed(r, today)]
        if m[2] == "n":
            col = self._column(self._previous(product, today))
            if col is None:
                return None
            oi = self.candles.oi[:, col]
            listed.sort(key=lambda r: (-(float(oi[r]) if math.isfinite(oi[r]) else 0.0), self.last_day[r]))
        return listed[rank] if rank < len(listed) else None

    def _listed(self, row: int, today: int) -> bool:
        first = self.catalogue.instruments[row].first_trading_day
        return not first or date.fromisoformat(first).toordinal() <= today

    def adjust(self, product: int, bars: list[dict], mode: str, intraday: bool) -> list[dict]:
        """`bars` (as /kline writes them) with every bar before a roll shifted (`diff`: plus the new main's close
        minus the old one's on the day before the roll) or scaled (`ratio`: times their quotient), cumulatively over
        the later rolls: the newest bars stay the traded prices (SPEC 19). Any other row (no rolls): unchanged."""
        rolls = self.rolls.get(product) or []
        if not rolls or not bars:
            return bars
        dec = self.catalogue.instruments[product].decimals
        steps = [(r.day, r.to_close - r.from_close if mode == "diff" else r.to_close / r.from_close)
                 for r in rolls if math.isfinite(r.to_close) and math.isfinite(r.from_close) and r.from_close]
        out = []
        for bar in bars:
            day = self._bar_day(product, bar["t"], intraday)
            shift, scale = 0.0, 1.0
            for roll_day, step in steps:
                if day < roll_day:
                    shift, scale = (shift + step, scale) if mode == "diff" else (shift, scale * step)
            if shift or scale != 1.0:
                bar = dict(bar)
                for key in ("o", "h", "l", "c", "s"):
                    if bar.get(key) is not None:
                        bar[key] = round(bar[key] * scale + shift, dec)
            out.append(bar)
        return out

    def _bar_day(self, product: int, t: str, intraday: bool) -> int:
        """The trading day (ordinal) of a /kline bar: its date, or its bucket start's trading day."""
        if not intraday:
            return date.fromisoformat(t[:10]).toordinal()
        return self._day_of(product, datetime.fromisoformat(t).timestamp())

    def _day_of(self, product: int, ts: float) -> int:
        if self.clocks:
            return self.clocks[product].trading_day(int(ts * 1000)).toordinal()
        return date.fromtimestamp(ts).toordinal()

    def _previous(self, product: int, day: int) -> int:
        d = date.fromordinal(day)
        if self.clocks:
            before = self.clocks[product].previous_trading_day(d)
            return before.toordinal() if before is not None else day - 1
        d -= timedelta(days=1)
        while d.weekday() >= 5:
            d -= timedelta(days=1)
        return d.toordinal()

    def _column(self, day: int) -> int | None:
        candles = self.candles
        cols = candles.order()
        found = np.flatnonzero(candles.days[cols] == day)
        return int(cols[found[0]]) if len(found) else None


def _num(value: float, decimals: int) -> float | None:
    return round(value, decimals) if math.isfinite(value) else None
