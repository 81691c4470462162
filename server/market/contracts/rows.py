"""Futures contracts as instrument rows (SPEC 19): quotes, candles, the stream and the history for contract ids.

`with_contracts` appends to the catalogue one row per contract of each futures product that the catalogue lists,
for every contract listed on any of the product's venue's last `HISTORY_DAYS` trading days or today: products
first (their rows unchanged), then each product's contracts in expiry order. A contract row takes its product's
kind, unit, decimals, venue, session and demo calibration; its name is the product's short name and the exchange
symbol (`甲醇 MA605`, `Methanol MA605`).

The rows are fixed at start (a hot path indexes arrays by row): a contract listed while the hub runs gets its row at
the next start (docs/contracts.md). Every hub started on the same trading days builds the same rows in the same
order; the tick log names ticks by id, so hubs that differ (one started before a listing day, one after) still
agree on every id both have.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import date

from server.market.catalogue import Catalogue, Instrument
from server.market.contracts.listing import Contract, ContractBook
from server.market.contracts.specs import ProductSpec
from server.market.venues.book import VenueBook

HISTORY_DAYS = 90  # the demo's history window (server/market/state.py `build_demo_state`)


def short_name(name: str) -> str:
    """A product's name without its parenthesis: `Methanol (ZCE MA)` -> `Methanol`."""
    return name.split(" (")[0].split("(")[0].strip()


def contracts_in_window(book: ContractBook, product: ProductSpec, today: date, first_day: date) -> list[Contract]:
    """The product's contracts listed on some trading day from `first_day` to `today`, by expiry."""
    return sorted((c for c in book.known(product, today) if c.last.day >= first_day and c.first <= today),
                  key=lambda c: (c.last.day, c.year, c.month))


def contract_instrument(product: Instrument, contract: Contract, venue_name: Mapping[str, str]) -> Instrument:
    """The row of one contract: its product's row with the contract's id, name (`甲醇 MA605`), source (the venue and
    the symbol) and reference fields."""
    code = contract.symbol
    name = {lang: f"{short_name(text)} {code}" for lang, text in product.name.items()}
    source = {lang: f"{venue_name.get(lang, product.venue)} {code}" for lang in product.source}
    return replace(product, id=contract.id, name=name, source=source, product=product.id, symbol=code,
                   month=f"{contract.year:04d}-{contract.month:02d}", first_trading_day=contract.first.isoformat(),
                   last_trading_day=contract.last.day.isoformat())


def with_contracts(catalogue: Catalogue, products: Mapping[str, ProductSpec], venues: VenueBook,
                   now: float, history_days: int = HISTORY_DAYS) -> Catalogue:
    """The catalogue with a row for every contract of its futures products shown in the window (module doc)."""
    book = ContractBook(products, venues.calendars)
    now_ms = int(now * 1000)
    rows: list[Instrument] = []
    for inst in catalogue.instruments:
        spec = products.get(inst.id)
        if spec is None or inst.product:
            continue
        clock = venues.for_instrument(inst.id)
        today = clock.trading_day(now_ms)
        back = clock.trading_days_back(today, history_days)
        first_day = back[0] if back else today
        named = venues.venues[inst.venue].name
        rows += [contract_instrument(inst, c, named) for c in contracts_in_window(book, spec, today, first_day)]
    return Catalogue((*catalogue.instruments, *rows), catalogue.categories)
