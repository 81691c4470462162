"""The contracts' reference data (SPEC 19) behind `GET /api/v1/instruments?product=|symbol=` and
`GET /api/v1/instruments/{product}-{YYYYMM}` (server/api/market/reference.py routes them).

Every answer is on the server's clock: a contract's status is read on its venue's current trading day (after the
close of its last trading day it is `expired`). Bad form is 400 (`invalid_parameter`, naming the field); a product
or symbol that names nothing is 404.
"""

from __future__ import annotations

import re
from datetime import date

import orjson

from server.api.core.query import param_error
from server.core.errors import ApiError
from server.market.contracts.listing import Contract, ContractBook
from server.market.contracts.specs import PRODUCT_ID
from server.market.contracts.symbols import SHAPE, read_id
from server.market.venues.book import VenueBook

PARAMS = frozenset({"product", "symbol"})
# the forms of the two parameters, as the OpenAPI document states them (matched as its validators do: re.search)
PRODUCT_PATTERN = "^" + PRODUCT_ID.pattern + "$"
SYMBOL_PATTERN = "^" + SHAPE.pattern + "$"


class ContractViews:
    def __init__(self, contracts: ContractBook, venues: VenueBook) -> None:
        self.contracts = contracts
        self.venues = venues

    def listing(self, query: dict[str, str], now_ms: int) -> bytes:
        """`{product, instruments: [contract]}` for `?product=` (listed and expired within a year, by month) or
        `?symbol=` (the one contract it names)."""
        if "product" in query and "symbol" in query:
            raise param_error("symbol", "give product or symbol, not both")
        if "symbol" in query:
            found = self._by_symbol(query["symbol"], now_ms)
            return orjson.dumps({"product": found.product.id, "instruments": [self._view(found, now_ms)]})
        pid = query.get("product", "")
        if not re.search(PRODUCT_PATTERN, pid):
            raise param_error("product", "product must be a product id such as methanol or brent")
        product = self.contracts.products.get(pid)
        if product is None:
            raise ApiError("not_found", f"Unknown futures product {pid!r}.")
        today = self._today(product.venue, now_ms)
        return orjson.dumps({"product": pid, "instruments": [c.view(today)
                                                             for c in self.contracts.known(product, today)]})

    def one(self, contract_id: str, now_ms: int) -> bytes | None:
        """A contract's view by id; None when `contract_id` is not a listed or expired contract's id."""
        parts = read_id(contract_id)
        product = self.contracts.products.get(parts[0]) if parts else None
        if parts is None or product is None:
            return None
        today = self._today(product.venue, now_ms)
        found = self.contracts.contract(product, parts[1], parts[2], today)
        return orjson.dumps(found.view(today)) if found is not None else None

    def _by_symbol(self, text: str, now_ms: int) -> Contract:
        if not re.search(SYMBOL_PATTERN, text):
            raise param_error("symbol", "symbol must be an exchange code such as MA605, pp2605 or CLM6 (month 01-12)")
        today_of = {v: self._today(v, now_ms) for v in {p.venue for p in self.contracts.products.values()}}
        found = self.contracts.resolve(text, today_of)
        if found is None:
            raise ApiError("not_found", f"No listed contract, nor one expired within a year, has the symbol {text!r}.")
        return found

    def _view(self, contract: Contract, now_ms: int) -> dict[str, object]:
        return contract.view(self._today(contract.product.venue, now_ms))

    def _today(self, venue_id: str, now_ms: int) -> date:
        return self.venues.clock(venue_id).trading_day(now_ms)
