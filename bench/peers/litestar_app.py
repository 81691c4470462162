"""The REST peer: `GET /api/v1/quotes` and `GET /api/v1/kline/{id}` in Litestar + msgspec, written the fast way.

What a performance-minded team would ship on the same runtime class as ours (Granian, here embedded in one
process on uvloop, one worker, HTTP/1.1, as `market-server serve` runs it), over the same market core
(`build_demo_state`) with its own 250 ms demo ticker in the process:

- bodies are msgspec Structs encoded once per data version and kept as bytes (a dict per version, emptied when
  the version moves on), so a request for data already encoded costs Litestar's routing, its parameter parsing
  (`kind`, `days` validated by Litestar's msgspec signature model) and a dict lookup;
- the key is checked by a guard: one header read and a set lookup of the raw key (401 otherwise);
- it does NOT rate-limit, send rate-limit headers, request ids, CORS headers or ETags, count metrics, compress,
  or validate unknown query parameters: all of which our server does per request. Those omissions favour it.

    PEER_KEY=secret python bench/peers/litestar_app.py --port 8200
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import uvloop
from granian.constants import HTTPModes, Interfaces
from granian.server.embed import Server
from litestar import Litestar, Response, get
from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, NotFoundException
from litestar.handlers.base import BaseRouteHandler
from litestar.params import Parameter

ROOT = Path(__file__).resolve().parent.parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from server.market.catalogue import default_catalogue  # noqa: E402
from server.market.contracts.rows import with_contracts  # noqa: E402
from server.market.contracts.specs import load_products  # noqa: E402
from server.market.state import build_demo_state  # noqa: E402
from server.market.timefmt import iso  # noqa: E402
from server.market.venues.book import VenueBook  # noqa: E402

TICK_INTERVAL_S = 0.25
JSON = "application/json"


class LocalizedText(msgspec.Struct):
    zh: str
    en: str


Board = float | None | msgspec.UnsetType


class Quote(msgspec.Struct):
    id: str
    kind: str
    name: LocalizedText
    price: float | None
    priceText: str
    change: float | None
    changePct: float | None
    source: LocalizedText
    unit: LocalizedText
    currency: str
    updated: str | None
    venue: str
    tradingDay: str | None
    # a futures product's main series names the contract it shows (SPEC 19): present on those quotes only, as ours
    contract: str | msgspec.UnsetType | None = msgspec.UNSET
    # a futures product's board (SPEC 19): present on futures quotes only, as ours
    bid: Board = msgspec.UNSET
    ask: Board = msgspec.UNSET
    bidSize: Board = msgspec.UNSET
    askSize: Board = msgspec.UNSET
    openInterest: Board = msgspec.UNSET
    oiChange: Board = msgspec.UNSET
    volume: Board = msgspec.UNSET
    turnover: Board = msgspec.UNSET
    prevSettle: Board = msgspec.UNSET
    settle: Board = msgspec.UNSET
    limitUp: Board = msgspec.UNSET
    limitDown: Board = msgspec.UNSET


class QuotesBody(msgspec.Struct):
    updated: str
    count: int
    demo: bool
    quotes: list[Quote]


class Candle(msgspec.Struct):
    t: str
    o: float
    h: float
    l: float  # noqa: E741
    c: float
    v: int
    oi: Board = msgspec.UNSET  # a futures candle's open interest and settlement (SPEC 19)
    s: Board = msgspec.UNSET


class KlineBody(msgspec.Struct):
    id: str
    updated: str
    demo: bool
    interval: str
    series: list[Candle]


# the catalogue and demo state as our server builds them (server/root.py): the products, then their contract rows
# (so a product quote names its main `contract`), each on its venue's clock
venues = VenueBook.load()
catalogue = with_contracts(default_catalogue(), load_products(), venues, time.time())
state, feed = build_demo_state(catalogue, seed=42, now=time.time(),
                               clocks=[venues.for_instrument(inst.id) for inst in catalogue.instruments])
KEYS = frozenset(k for k in os.environ.get("PEER_KEY", "").split(",") if k)
encoder = msgspec.json.Encoder()
_cache: dict[Any, bytes] = {}
_cache_version: list[int] = [-1]


def cached(key: Any, build: Any) -> Response[bytes]:
    if state.version != _cache_version[0]:
        _cache.clear()
        _cache_version[0] = state.version
    body = _cache.get(key)
    if body is None:
        body = _cache[key] = encoder.encode(build())
    return Response(body, media_type=JSON)


def require_key(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    if connection.headers.get("x-service-key") not in KEYS:
        raise NotAuthorizedException("Unknown or missing API key")


@get("/api/v1/quotes", guards=[require_key], sync_to_thread=False)
def quotes(kind: Literal["oil", "chem", "fx"] | None = None) -> Response[bytes]:
    def build() -> QuotesBody:
        rows = catalogue.rows_of_kind(kind) if kind else list(catalogue.listed_rows)  # no contract rows, as ours
        items = msgspec.convert(state.quotes(rows), list[Quote])
        return QuotesBody(iso(state.updated), len(items), state.demo, items)

    return cached(("quotes", kind), build)


@get("/api/v1/kline/{instrument_id:str}", guards=[require_key], sync_to_thread=False)
def kline(instrument_id: str, days: Annotated[int, Parameter(ge=1, le=90)] = 90) -> Response[bytes]:
    row = catalogue.index.get(instrument_id)
    if row is None:
        raise NotFoundException(f"Unknown instrument id {instrument_id!r}")

    def build() -> KlineBody:
        series = msgspec.convert(state.kline(row, days), list[Candle])
        return KlineBody(instrument_id, iso(state.updated), state.demo, "1d", series)

    return cached(("kline", row, days), build)


app = Litestar([quotes, kline], openapi_config=None, debug=False)


async def ticker() -> None:
    while True:
        await asyncio.sleep(TICK_INTERVAL_S)
        state.apply(feed.next_batch(time.time(), TICK_INTERVAL_S))


async def serve(host: str, port: int) -> None:
    tick = asyncio.get_running_loop().create_task(ticker())
    server = Server(app, address=host, port=port, interface=Interfaces.ASGINL, http=HTTPModes.http1,
                    websockets=False, log_enabled=False)
    try:
        await server.serve()
    finally:
        tick.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description="Litestar + msgspec peer on Granian")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8200)
    args = parser.parse_args()
    uvloop.run(serve(args.host, args.port))


if __name__ == "__main__":
    main()
