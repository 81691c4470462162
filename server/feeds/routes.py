"""Which instrument rows a feed's tick moves (SPEC 19): a contract's, and its product's main continuous series.

A tick for a futures contract also moves its product's row while that contract is the product's main; a tick for a
product (a jsonl line naming `methanol`) applies to its current main contract, so it moves that contract's row and
the product's. Both ticks go onto the tick bus together (the bus numbers each; every hub applies the same batch).
`main_of` answers a product row's main contract row for a tick's trading day *as decided* (None while none is: then
a product's tick moves the product's row alone, as before contracts, and a contract's tick its own row); it must
never decide a new day's main itself: lines of the day before may still be unapplied in the same read chunk, or on
the Redis bus, and every hub decides from the applied ticks (docs/futures.md, "Product lines, contract ticks and
the main series"). Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from server.market.catalogue import Catalogue
from server.market.main_series import MainSeries
from server.market.tick import Tick

MainOf = Callable[[int, float], int | None]  # (a product row, a tick's ts) -> its main's row as decided, or None


def no_main(row: int, ts: float) -> int | None:
    """No main contract is known."""
    return None


def decided_main(mains: MainSeries) -> MainOf:
    """The main contract of a product row for the trading day of ``ts`` if `mains` has decided that day's (at the
    venue's close by the housekeeping round, or by the product's first tick of the day), else None. Never decides."""
    def main_of(product: int, ts: float) -> int | None:
        if not mains.is_series(product) or not mains.clocks:
            return None
        day = mains.clocks[product].trading_day(int(ts * 1000)).toordinal()
        return mains.main[product] if mains.day[product] == day else None
    return main_of


class MainRoutes:
    def __init__(self, catalogue: Catalogue, main_of: MainOf = no_main) -> None:
        self.product_of = catalogue.product_of
        self.main_of = main_of
        index = catalogue.index
        self.products = frozenset(index[p] for p in catalogue.contract_rows)  # product rows that have contracts

    def ticks(self, tick: Tick) -> list[Tick]:
        """The ticks ``tick`` makes: itself, or its main contract's and its product's (a product's), or itself and
        its product's (its product's main contract's)."""
        row = tick.row
        if row in self.products:
            main = self.main_of(row, tick.ts)
            return [tick] if main is None else [replace(tick, row=main), tick]
        product = self.product_of(row)
        if product != row and self.main_of(product, tick.ts) == row:
            return [tick, replace(tick, row=product)]
        return [tick]
