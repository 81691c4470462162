"""`GET /api/v1/curve/{product}` (SPEC 19, issue 39 item 6): a futures product's term structure for a curve chart.

The product's contracts listed on its venue's current trading day, in expiry order, each with the quote's field
names (`id`, `symbol`, `month`, `lastTradingDay`, `price`, `change`, `settle`, `prevSettle`, `openInterest`,
`volume`) and `spread`: its price minus the main contract's (the calendar spread; null while either has no price);
`main` names the product's main contract. Remembered per data version (a roll or a new listing day moves it).
An id that is not a futures product with contracts is 404; the route takes no query parameter.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import orjson

from server.api.core.query import known_query
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.core.errors import ApiError
from server.market.state import MarketState

NO_PARAMS: frozenset[str] = frozenset()
FIELDS = ("price", "change", "settle", "prevSettle", "openInterest", "volume")


class CurveApi:
    def __init__(self, state: MarketState, clock: Callable[[], float] = time.time) -> None:
        self.state = state
        self.clock = clock

    def register(self, router: Router) -> None:
        router.add("GET", "/api/v1/curve/{product}", self.curve, Access.KEYED, name="curve", version=self.state)

    def curve(self, req: Request) -> Response:
        known_query(req, NO_PARAMS)
        product = req.path_params["product"]
        state = self.state
        row = state.catalogue.index.get(product)
        if row is None or not state.mains.is_series(row):
            raise ApiError("not_found", f"{product!r} is not a futures product with contracts (methanol, brent...).")
        return Response(200, orjson.dumps(self.view(row)))

    def view(self, row: int) -> dict:
        state, insts = self.state, self.state.catalogue.instruments
        now_ms = int(self.clock() * 1000)
        today = state.clocks[row].trading_day(now_ms).isoformat() if state.clocks else ""
        main = state.mains.main[row]
        main_price = float(state.prices[main]) if main is not None else math.nan
        dec = insts[row].decimals
        contracts = []
        for r in state.mains.contracts[row]:
            inst = insts[r]
            if inst.last_trading_day < today:
                continue  # expired
            quote = state.quote(r)
            spread = float(state.prices[r]) - main_price
            contracts.append({"id": inst.id, "symbol": inst.symbol, "month": inst.month,
                              "lastTradingDay": inst.last_trading_day, **{f: quote.get(f) for f in FIELDS},
                              "spread": round(spread, dec) if math.isfinite(spread) else None})
        return {"id": insts[row].id, "updated": state.updated_iso(), "demo": state.demo,
                "main": insts[main].id if main is not None else None, "contracts": contracts}
