"""Keyed market-data endpoints (/api/v1): quotes, candles, spreads, inventory.

Every body is built from the market state's views and serialised once per
data version by the shared cache; a request for data already serialised
costs a dict lookup.

Each endpoint names the query parameters it defines; any other is a 400
``unknown_parameter`` naming it (a silently ignored ``interval=1h`` misleads).
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from server.api.core.cache import VersionedCache
from server.api.core.query import known_query as _query
from server.api.core.query import param_error as _param
from server.api.core.query import parse_count as _count
from server.api.core.query import parse_instant as instant
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.api.market.curve import CurveApi
from server.api.market.deep_ranges import DeepRanges
from server.api.market.udf import UdfApi
from server.core.errors import ApiError
from server.market.candles.intraday import INTERVALS, INTRADAY_CAPACITY
from server.market.inventory import InventoryBook
from server.market.main_series import ADJUST_MODES
from server.market.state import MarketState
from server.market.timefmt import iso

MAX_IDS = 100
MAX_DAYS = 90
DAILY = "1d"
KLINE_INTERVALS = (*INTERVALS, DAILY)  # 1m, 5m, 15m, 1h, 1d
DEFAULT_LIMIT = 300
DEFAULT_DAILY_LIMIT = MAX_DAYS  # a range query's limit with interval=1d (SPEC 14)
MAX_LIMIT = INTRADAY_CAPACITY
# the query parameters each endpoint defines; the OpenAPI document lists the same
QUOTES_PARAMS = frozenset({"kind", "ids", "product"})
KLINE_PARAMS = frozenset({"interval", "days", "limit", "from", "to", "adjust"})
ADJUST = ADJUST_MODES  # a futures product's continuous series, back-adjusted at the rolls (SPEC 19)
NO_PARAMS: frozenset[str] = frozenset()


class MarketApi:
    def __init__(self, state: MarketState, inventory: InventoryBook, cache: VersionedCache,
                 clock: Callable[[], float] = time.time, deep: DeepRanges | None = None) -> None:
        """`deep`: a live feed's stored history, which range queries reaching below the rings read (SPEC 18)."""
        self.state = state
        self.clock = clock  # the UDF datafeed's `time`
        self.inventory = inventory
        self.cache = cache
        self.catalogue = state.catalogue
        self._all_rows = self.catalogue.listed_rows  # the products, assessments and FX: no contracts (SPEC 19)
        self.deep = deep

    def register(self, router: Router) -> None:
        # each answer is a function of (path, query, data version): the pipeline remembers it per version
        v = self.state  # its `version` attribute (read on every remembered answer without a call)
        router.add("GET", "/api/v1/quotes", self.quotes, Access.KEYED, name="quotes", version=v)
        # a single quote says whether its market is open now: remembered per data version and minute (every
        # session window starts and ends on a minute)
        router.add("GET", "/api/v1/quotes/{id}", self.quote, Access.KEYED, name="quote", version=self._quote_version)
        router.add("GET", "/api/v1/kline/{id}", self.kline, Access.KEYED, name="kline", version=v)
        router.add("GET", "/api/v1/spreads", self.spreads, Access.KEYED, name="spreads", version=v)
        router.add("GET", "/api/v1/inventory", self.inventory_items, Access.KEYED, name="inventory", version=v)
        UdfApi(self.state, self.cache, self.clock, self.deep).register(router)  # TradingView's datafeed (SPEC 14)
        CurveApi(self.state, self.clock).register(router)  # a futures product's term structure (SPEC 19)


    def _quote_version(self) -> object:
        return self.state.version, int(self.clock() // 60)

    def _cached(self, key: tuple[Any, ...], build: Any) -> Response:
        return Response(200, self.cache.get(key, self.state.version, build))

    def _envelope(self, **fields: Any) -> bytes:
        return orjson.dumps({"updated": self.state.updated_iso(), "demo": self.state.demo, **fields})

    def quotes(self, req: Request) -> Response:
        query = _query(req, QUOTES_PARAMS)
        kind, ids, product = query.get("kind"), query.get("ids"), query.get("product")
        owner = req.owner
        if product is not None:
            shown = self._product_rows(product)
            rows = shown if kind is None and ids is None else self._select_rows(kind, ids, shown, owner)
        else:
            rows = self._all_rows if kind is None and ids is None else self._select_rows(kind, ids, None, owner)
            owned = self.catalogue.owned.get(owner) if owner is not None else None
            if owned and kind is None and ids is None:  # an account's own instruments after ours (SPEC 20)
                rows = (*rows, *owned)
        key = ("quotes",) if rows is self._all_rows else ("quotes", rows)  # hashing every row costs per request

        def build() -> bytes:
            quotes = self.state.quotes(list(rows))
            return orjson.dumps(
                {"updated": self.state.updated_iso(), "count": len(quotes), "demo": self.state.demo, "quotes": quotes}
            )

        return self._cached(key, build)

    def _product_rows(self, product: str) -> tuple[int, ...]:
        """`?product=`: the product's contracts in expiry order (SPEC 19), those shown since the hub started (with
        kind or ids: those of them that are of that kind, or named)."""
        rows = self.catalogue.contract_rows.get(product)
        if rows is None:
            raise _param("product", f"product must be a futures product id: {', '.join(self.catalogue.contract_rows)}")
        return rows

    def _select_rows(self, kind: str | None, ids: str | None, within: tuple[int, ...] | None = None,
                     owner: str | None = None) -> tuple[int, ...]:
        """The rows of `kind` among the listed ones (or `within`), narrowed to `ids` (which may name contracts, and
        the instruments `owner`'s account declared: another's are unknown ids, SPEC 20)."""
        rows: tuple[int, ...] | list[int] = self._all_rows if within is None else within
        if kind is not None:
            if kind not in self.catalogue.kinds:
                raise _param("kind", f"kind must be one of {', '.join(sorted(self.catalogue.kinds))}")
            rows = self.catalogue.rows_of_kind(kind) if within is None else [
                r for r in within if self.catalogue.instruments[r].kind == kind]
        if ids is None:
            return tuple(rows)
        wanted = [i.strip() for i in ids.split(",") if i.strip()]
        if not wanted:
            raise _param("ids", "ids must list at least one instrument id")
        if len(wanted) > MAX_IDS:
            raise _param("ids", f"ids may list at most {MAX_IDS} instrument ids")
        rows_of = {i: self._resolve(i, owner) for i in wanted}
        unknown = [i for i, r in rows_of.items() if r is None]
        if unknown:
            raise _param("ids", f"unknown instrument ids: {', '.join(unknown)}")
        chosen = sorted({r for r in rows_of.values() if r is not None})  # in row order; ids may name contracts
        instruments, inside = self.catalogue.instruments, None if within is None else set(within)
        return tuple(r for r in chosen if (kind is None or instruments[r].kind == kind)
                     and (inside is None or r in inside))

    def _resolve(self, inst_id: str, owner: str | None) -> int | None:
        """An instrument's row, or the contract a continuous id names now (`methanol.c.0`, `methanol.n.1`); None for
        an unknown id, and for another account's declared instrument (SPEC 20: as if it did not exist)."""
        row = self.catalogue.index.get(inst_id)
        if row is not None:
            return row if self.catalogue.visible(row, owner) else None
        return self.state.mains.resolve(inst_id, self.clock())

    def _row(self, req: Request) -> int:
        inst_id = req.path_params["id"]
        row = self._resolve(inst_id, req.owner)
        if row is None:
            raise ApiError("not_found", f"Unknown instrument id {inst_id!r}.")
        return row

    def quote(self, req: Request) -> Response:
        _query(req, NO_PARAMS)
        row = self._row(req)
        return Response(200, orjson.dumps({**self.state.quote_extended(row), **self._market_status(row)}))

    def _market_status(self, row: int) -> dict[str, Any]:
        """SPEC 16: `marketStatus` (open, break, closed) of the instrument's venue now, `nextOpen`, `nextClose`."""
        if not self.state.clocks:
            return {}
        clock, now_ms = self.state.clocks[row], int(self.clock() * 1000)
        next_open, next_close = clock.next_open(now_ms), clock.next_close(now_ms)
        return {"marketStatus": clock.status(now_ms).value,
                "nextOpen": None if next_open is None else iso(next_open / 1000),
                "nextClose": None if next_close is None else iso(next_close / 1000)}

    def kline(self, req: Request) -> Response:
        query = _query(req, KLINE_PARAMS)
        adjust = query.pop("adjust", None)
        if adjust is not None and adjust not in ADJUST:
            raise _param("adjust", "adjust must be diff or ratio (a futures product's series adjusted at its rolls)")
        answer = self._kline(req, query)
        if adjust is None:
            return answer
        if isinstance(answer, Response):
            return _adjusted(self.state, answer, adjust)
        return _adjusted_later(self.state, answer, adjust)  # type: ignore[return-value]

    def _kline(self, req: Request, query: dict[str, str]) -> Response:
        row = self._row(req)
        interval = query.get("interval", DAILY)
        if interval not in KLINE_INTERVALS:
            raise _param("interval", f"interval must be one of {', '.join(KLINE_INTERVALS)}")
        inst = self.catalogue.instruments[row]
        inst_id = inst.id
        if interval != DAILY and inst.publication != "continuous":
            every = "day" if inst.publication == "daily" else "month"
            raise _param("interval", f"{inst_id} is published once a {every}: it has daily candles only (interval=1d)")
        if "from" in query or "to" in query:
            return self._kline_range(row, inst_id, interval, query)
        # days and limit apply to every interval, together too (the OpenAPI document cannot say "only with 1d",
        # so the server takes every combination it allows; issue 21): days keeps the candles of the most recent N
        # trading days, limit the most recent N candles
        if interval == DAILY:
            days = _count("days", query.get("days"), MAX_DAYS, MAX_DAYS)
            days = min(days, _count("limit", query.get("limit"), MAX_LIMIT, MAX_DAYS))
            # the key of the daily series is unchanged: ?interval=1d and no interval share one entry
            return self._cached(("kline", row, days), lambda: self._envelope(
                id=inst_id, interval=DAILY, series=self.state.kline(row, days)))
        limit = _count("limit", query.get("limit"), MAX_LIMIT, DEFAULT_LIMIT)
        if "days" in query:
            days = _count("days", query["days"], MAX_DAYS, MAX_DAYS)
            return self._cached(("kline", row, interval, limit, days), lambda: self._envelope(
                id=inst_id, interval=interval, series=orjson.Fragment(self.state.ranges.json(
                    row, interval, self._since_trading_days(row, days), math.inf, limit, False)[0])))
        return self._cached(("kline", row, interval, limit), lambda: self._envelope(
            id=inst_id, interval=interval,
            series=orjson.Fragment(self.state.kline_intraday_json(row, interval, limit))))

    def _since_trading_days(self, row: int, days: int) -> float:
        """The first instant of the instrument's most recent ``days`` trading days (its live candle's day counts once
        traded): its venue's close before the first of them (a night session belongs to the day after it, SPEC 16)."""
        return self.state.floors.back(row, days)

    def _kline_range(self, row: int, inst_id: str, interval: str, query: dict[str, str]) -> Response:
        """SPEC 14: candles whose bucket start is in [from, to); with from the earliest ``limit`` and ``next``, without
        it the latest ``limit`` before ``to``. Served from the cache per (resolved range, data version)."""
        if "days" in query:
            raise _param("days", "days cannot be combined with from/to; a range query takes limit "
                                 f"(1..{MAX_LIMIT}) with every interval")
        start = instant("from", query["from"]) if "from" in query else -math.inf
        end = instant("to", query["to"]) if "to" in query else math.inf
        if start >= end:
            raise _param("to", "to must be after from (the range is half-open: from <= t < to)")
        limit = _count("limit", query.get("limit"), MAX_LIMIT,
                       DEFAULT_DAILY_LIMIT if interval == DAILY else DEFAULT_LIMIT)
        earliest = "from" in query
        oldest = self.deep.below(self.state.ranges, row, interval, start) if self.deep is not None else None
        if oldest is not None:
            return self._deep_range(row, inst_id, interval, start, end, limit, earliest, oldest)  # type: ignore[return-value]

        def build() -> bytes:
            series, nxt = self.state.ranges.json(row, interval, start, end, limit, earliest)
            return self._envelope(id=inst_id, interval=interval, series=orjson.Fragment(series), next=nxt)

        return self._cached(("kline-range", row, interval, start, end, limit, earliest), build)

    async def _deep_range(self, row: int, inst_id: str, interval: str, start: float, end: float, limit: int,
                          earliest: bool, oldest: float) -> Response:
        """A range reaching below the ring: the stored part read on a history thread, joined with the ring's."""
        assert self.deep is not None
        series, nxt = await self.deep.series(self.state.ranges, row, interval, start, end, limit, earliest, oldest)
        return Response(200, self._envelope(id=inst_id, interval=interval, series=series, next=nxt))

    def spreads(self, req: Request) -> Response:
        _query(req, NO_PARAMS)
        return self._cached(("spreads",), lambda: self._envelope(spreads=self.state.spreads()))

    def inventory_items(self, req: Request) -> Response:
        _query(req, NO_PARAMS)
        # the inventory series are synthetic whatever the price feed is: demo is the book's, not the state's
        return self._cached(("inventory",),
                            lambda: self._envelope(demo=self.inventory.demo, items=self.inventory.items()))


def _adjusted(state: MarketState, answer: Response, adjust: str) -> Response:
    """A /kline answer back-adjusted at the product's rolls (SPEC 19), wherever its candles came from: the rings, the
    daily book or the stored history below them adjust alike (each bar's trading day against the rolls)."""
    if answer.status != 200:
        return answer
    body = orjson.loads(answer.body)
    row = state.catalogue.index[body["id"]]
    body["series"] = state.mains.adjust(row, body["series"], adjust, body["interval"] != DAILY)
    body["adjust"] = adjust
    return Response(200, orjson.dumps(body))


async def _adjusted_later(state: MarketState, pending: Awaitable[Response], adjust: str) -> Response:
    """The same for a range reaching the stored history (answered on a history thread)."""
    return _adjusted(state, await pending, adjust)
