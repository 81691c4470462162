"""Which contracts a product has on a given trading day, and what each one is (SPEC 19).

A product lists `listed` contracts at once: walking the delivery months from the front (the nearest contract not
yet past its last trading day), a month is listed if it is one of the product's `months` or among the nearest
`serial` months. When the front expires the next month's contract becomes the front and the walk takes one more:
that contract's first trading day is the trading day after the expired front's last. This is the Chinese
exchanges' own rule (a new month is listed the day after the nearest one expires); for CME and ICE, which list
years ahead, it is the day this service starts to show the contract (docs/contracts.md).

Status, on the venue's current trading day T: `listed` while first <= T <= last, `expired` after. A contract not
yet listed is not shown; an expired one stays known (its id always, from EARLIEST_YEAR on; `?symbol=` and the
product's list for a year after its last trading day).

Invariant: a contract's dates depend only on its product's rule and the venue calendar, so they are memoised per
(product, month) for the book's life (the catalogue and the calendars are fixed at start).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from server.market.contracts.expiry import Days, Expiry, add_months, last_trading_day, next_trading_day
from server.market.contracts.rules import MAX_LISTED
from server.market.contracts.specs import ProductSpec
from server.market.contracts.symbols import SymbolDate, contract_id, read_symbol, symbol

EARLIEST_YEAR = 2005  # the PRC holiday package starts in 2004; older contracts are not known
KNOWN_AFTER_EXPIRY = timedelta(days=365)  # an expired contract stays in the list and `?symbol=` this long
_HORIZON = MAX_LISTED + 12  # months: more than the widest listing (rules.py bounds it to MAX_LISTED months)
_YEAR_BACK = 12 + 4  # months before the front that can hold a contract expired within a year (offsets reach -3)


@dataclass(frozen=True, slots=True)
class Contract:
    product: ProductSpec
    year: int
    month: int
    first: date
    last: Expiry
    provisional: bool  # a date of it was counted past the venue's known calendar

    @property
    def id(self) -> str:
        return contract_id(self.product.id, self.year, self.month)

    @property
    def symbol(self) -> str:
        return symbol(self.product.listing.symbol_form, self.product.code, self.year, self.month)

    def status(self, today: date) -> str:
        return "expired" if today > self.last.day else "listed"

    def view(self, today: date) -> dict[str, Any]:
        spec = self.product
        return {"id": self.id, "symbol": self.symbol, "product": spec.id, "venue": spec.venue,
                "month": f"{self.year:04d}-{self.month:02d}", "firstTradingDay": self.first.isoformat(),
                "lastTradingDay": self.last.day.isoformat(), "provisional": self.provisional,
                "tickSize": spec.tick, "multiplier": spec.multiplier, "limitPct": spec.limit_pct or None,
                "status": self.status(today)}


class ContractBook:
    """Every product's contracts, counted on its venue's calendar (`calendars`: venue id -> its days)."""

    def __init__(self, products: Mapping[str, ProductSpec], calendars: Mapping[str, Days]) -> None:
        self.products = products
        self.calendars = calendars
        self._expiries: dict[tuple[str, int, int], Expiry] = {}
        self._firsts: dict[tuple[str, int, int], date] = {}  # memoised as the expiries are (the module's invariant)

    def known(self, product: ProductSpec, today: date) -> list[Contract]:
        """The listed contracts and those expired within KNOWN_AFTER_EXPIRY, by month."""
        fy, fm = self._front(product, today)
        expired = [self._contract(product, y, m) for y, m in self._months_back(product, fy, fm, _YEAR_BACK)
                   if self._expiry(product, y, m).day >= today - KNOWN_AFTER_EXPIRY]
        return [*reversed(expired), *(self._contract(product, y, m) for y, m in self._listed_from(product, fy, fm))]

    def contract(self, product: ProductSpec, year: int, month: int, today: date) -> Contract | None:
        """The contract delivering in that month if it has been listed by `today` (None: no such contract, or not
        listed yet, or before EARLIEST_YEAR)."""
        if year < EARLIEST_YEAR:
            return None
        fy, fm = self._front(product, today)
        if (year, month) in self._listed_from(product, fy, fm) or (
                (year, month) < (fy, fm) and product.listing.has(0, month)):
            return self._contract(product, year, month)
        return None

    def resolve(self, text: str, today_of: Mapping[str, date]) -> Contract | None:
        """The contract an exchange symbol names: listed, or expired within KNOWN_AFTER_EXPIRY, the nearest one
        when a one-digit year fits several (`today_of`: venue id -> its current trading day)."""
        for product in self.products.values():
            found = read_symbol(product.listing.symbol_form, product.code, text)
            if found is not None:
                today = today_of[product.venue]
                fits = [c for c in (self.contract(product, y, found.month, today) for y in _years(found, today))
                        if c is not None and c.last.day >= today - KNOWN_AFTER_EXPIRY]
                if fits:
                    return min(fits, key=lambda c: abs(c.year * 12 + c.month - today.year * 12 - today.month))
        return None

    def _contract(self, product: ProductSpec, year: int, month: int) -> Contract:
        last = self._expiry(product, year, month)
        first = self._first_day(product, year, month)
        days = self.calendars[product.venue]
        return Contract(product, year, month, first, last, last.provisional or first > days.known_until)

    def _expiry(self, product: ProductSpec, year: int, month: int) -> Expiry:
        key = (product.id, year, month)
        found = self._expiries.get(key)
        if found is None:
            found = self._expiries[key] = last_trading_day(product.listing, self.calendars[product.venue], year, month)
        return found

    def _front(self, product: ProductSpec, today: date) -> tuple[int, int]:
        """The nearest contract month whose last trading day is `today` or later."""
        y, m = add_months(today.year, today.month, -1)
        while not (product.listing.has(0, m) and self._expiry(product, y, m).day >= today):
            y, m = add_months(y, m, 1)
        return y, m

    def _listed_from(self, product: ProductSpec, year: int, month: int) -> list[tuple[int, int]]:
        """The months listed while (year, month) is the front."""
        rule, out = product.listing, list[tuple[int, int]]()
        for k, (y, m) in enumerate(_months_from(year, month)):
            if len(out) == rule.listed or k == _HORIZON:
                break
            if rule.has(k, m):
                out.append((y, m))
        return out

    @staticmethod
    def _months_back(product: ProductSpec, year: int, month: int, horizon: int = _HORIZON) -> Iterator[tuple[int, int]]:
        """The months before (year, month) that can be a front (so were contracts), nearest first."""
        for k in range(1, horizon):
            y, m = add_months(year, month, -k)
            if product.listing.has(0, m):
                yield y, m

    def _first_day(self, product: ProductSpec, year: int, month: int) -> date:
        """The trading day after the last of the latest front under which this month was not yet listed."""
        key = (product.id, year, month)
        found = self._firsts.get(key)
        if found is None:
            found = self._firsts[key] = self._count_first_day(product, year, month)
        return found

    def _count_first_day(self, product: ProductSpec, year: int, month: int) -> date:
        for y, m in self._months_back(product, year, month):
            if (year, month) not in self._listed_from(product, y, m):
                return next_trading_day(self.calendars[product.venue], self._expiry(product, y, m).day)
        raise AssertionError("unreachable: rules.parse_listing keeps a listing within MAX_LISTED months")


def _months_from(year: int, month: int) -> Iterator[tuple[int, int]]:
    k = 0
    while True:
        yield add_months(year, month, k)
        k += 1


def _years(found: SymbolDate, today: date) -> list[int]:
    if found.digits == 2:
        return [found.year]
    decade = today.year - today.year % 10
    return [y for y in (decade - 10 + found.year, decade + found.year, decade + 10 + found.year) if y >= EARLIEST_YEAR]
