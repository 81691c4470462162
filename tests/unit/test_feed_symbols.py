"""A jsonl line naming its contract by exchange symbol (SPEC 19): resolved on the venue's current trading day."""

from __future__ import annotations

from datetime import datetime

import pytest

from server.feeds.jsonl import JsonlParser
from server.feeds.symbols import ContractSymbols
from server.market.catalogue import default_catalogue
from server.market.contracts.listing import ContractBook
from server.market.contracts.specs import PRODUCTS
from server.market.venues.book import VenueBook

VENUES = VenueBook.load()
SYMBOLS = ContractSymbols(ContractBook(PRODUCTS, VENUES.calendars), VENUES.clock, {p.venue for p in PRODUCTS.values()})
CAT = default_catalogue()


def at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


@pytest.mark.parametrize(("symbol", "when", "expected"), [
    ("MA605", "2026-11-25T10:00:00+08:00", "methanol-202605"),
    ("MA601", "2026-11-25T10:00:00+08:00", "methanol-202601"),
    ("MA611", "2026-11-25T10:00:00+08:00", "methanol-202611"),  # expired on 13 Nov: the nearest still
    ("MA609", "2026-11-25T10:00:00+08:00", "methanol-202609"),  # expired within the year, the nearest
    ("pp2605", "2026-11-25T10:00:00+08:00", "pp-202605"),
    ("MA705", "2026-11-25T10:00:00+08:00", "methanol-202705"),  # listed: the contracts a 2026 feed sends
    ("PP2605", "2026-11-25T10:00:00+08:00", None),  # DCE writes lower case: case counts
    ("sc2612", "2026-11-30T10:00:00+08:00", "sc-202612"),  # its last trading day
    ("XY605", "2026-11-25T10:00:00+08:00", None),
])
def test_a_symbol_names_the_contract_of_its_venues_trading_day(symbol: str, when: str, expected: str | None) -> None:
    assert SYMBOLS(symbol, at(when)) == expected


def test_a_line_names_its_instrument_by_id_or_by_symbol_never_both() -> None:
    parser = JsonlParser(CAT, symbols=lambda text, now: {"MA605": "methanol"}.get(text))
    now = at("2026-11-25T10:00:00+08:00")
    tick = parser.parse('{"symbol":" MA605","price":2400,"volume":2}', now)
    assert tick is not None and (tick.row, tick.volume) == (CAT.index["methanol"], 2.0)
    assert parser.parse('{"symbol":"MA605","id":"methanol","price":2400}', now) is None and parser.bad_lines == 1
    assert parser.parse('{"symbol":5,"price":2400}', now) is None and parser.bad_lines == 2
    assert parser.parse('{"symbol":"MA605","price":-1}', now) is None and parser.bad_lines == 3
    assert parser.parse('{"symbol":"MA606","price":2400}', now) is None and parser.unknown_ids == 1
