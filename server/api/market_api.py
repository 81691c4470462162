"""Keyed market-data endpoints (/api/v1): quotes, candles, spreads, inventory.

Every body is built from the market state's views and serialised once per
data version by the shared cache; a request for data already serialised
costs a dict lookup.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from server.api.cache import VersionedCache
from server.api.errors import ApiError
from server.api.router import Access, Router
from server.api.types import Request, Response
from server.market.inventory import InventoryBook
from server.market.state import MarketState

MAX_IDS = 100
MAX_DAYS = 90
_DAYS = re.compile(r"[0-9]{1,3}")


class MarketApi:
    def __init__(self, state: MarketState, inventory: InventoryBook, cache: VersionedCache) -> None:
        self.state = state
        self.inventory = inventory
        self.cache = cache
        self.catalogue = state.catalogue
        self._all_rows = tuple(range(len(self.catalogue.instruments)))

    def register(self, router: Router) -> None:
        router.add("GET", "/api/v1/quotes", self.quotes, Access.KEYED, name="quotes")
        router.add("GET", "/api/v1/quotes/{id}", self.quote, Access.KEYED, name="quote")
        router.add("GET", "/api/v1/kline/{id}", self.kline, Access.KEYED, name="kline")
        router.add("GET", "/api/v1/spreads", self.spreads, Access.KEYED, name="spreads")
        router.add("GET", "/api/v1/inventory", self.inventory_items, Access.KEYED, name="inventory")

    def _cached(self, key: tuple[Any, ...], build: Any) -> Response:
        return Response(200, self.cache.get(key, self.state.version, build))

    def _envelope(self, **fields: Any) -> bytes:
        return orjson.dumps({"updated": self.state.updated_iso(), "demo": self.state.demo, **fields})

    def quotes(self, req: Request) -> Response:
        query = req.query
        kind, ids = query.get("kind"), query.get("ids")
        rows = self._all_rows if kind is None and ids is None else self._select_rows(kind, ids)
        key = ("quotes",) if rows is self._all_rows else ("quotes", rows)  # hashing every row costs per request

        def build() -> bytes:
            quotes = self.state.quotes(list(rows))
            return orjson.dumps(
                {"updated": self.state.updated_iso(), "count": len(quotes), "demo": self.state.demo, "quotes": quotes}
            )

        return self._cached(key, build)

    def _select_rows(self, kind: str | None, ids: str | None) -> tuple[int, ...]:
        rows: tuple[int, ...] | list[int] = self._all_rows
        if kind is not None:
            if kind not in self.catalogue.kinds:
                raise _param("kind", f"kind must be one of {', '.join(sorted(self.catalogue.kinds))}")
            rows = self.catalogue.rows_of_kind(kind)
        if ids is None:
            return tuple(rows)
        wanted = [i.strip() for i in ids.split(",") if i.strip()]
        if not wanted:
            raise _param("ids", "ids must list at least one instrument id")
        if len(wanted) > MAX_IDS:
            raise _param("ids", f"ids may list at most {MAX_IDS} instrument ids")
        unknown = [i for i in wanted if i not in self.catalogue.index]
        if unknown:
            raise _param("ids", f"unknown instrument ids: {', '.join(unknown)}")
        chosen = {self.catalogue.index[i] for i in wanted}
        return tuple(r for r in rows if r in chosen)

    def _row(self, req: Request) -> int:
        inst_id = req.path_params["id"]
        row = self.catalogue.index.get(inst_id)
        if row is None:
            raise ApiError("not_found", f"Unknown instrument id {inst_id!r}.")
        return row

    def quote(self, req: Request) -> Response:
        row = self._row(req)
        return self._cached(("quote", row), lambda: orjson.dumps(self.state.quote_extended(row)))

    def kline(self, req: Request) -> Response:
        row = self._row(req)
        days = _days(req.query.get("days"))
        inst_id = self.catalogue.instruments[row].id
        return self._cached(
            ("kline", row, days), lambda: self._envelope(id=inst_id, series=self.state.kline(row, days))
        )

    def spreads(self, req: Request) -> Response:
        return self._cached(("spreads",), lambda: self._envelope(spreads=self.state.spreads()))

    def inventory_items(self, req: Request) -> Response:
        # the inventory series are synthetic whatever the price feed is: demo is the book's, not the state's
        return self._cached(("inventory",),
                            lambda: self._envelope(demo=self.inventory.demo, items=self.inventory.items()))


def _days(raw: str | None) -> int:
    if raw is None:
        return MAX_DAYS
    if not _DAYS.fullmatch(raw) or not 1 <= int(raw) <= MAX_DAYS:
        raise _param("days", f"days must be an integer from 1 to {MAX_DAYS}")
    return int(raw)


def _param(field: str, message: str) -> ApiError:
    return ApiError("invalid_parameter", message, errors=[{"field": field, "message": message}])
