"""The baseline: `GET /api/v1/quotes` and `GET /api/v1/kline/{id}` written the conventional way.

What a typical team ships: FastAPI on uvicorn (uvloop + httptools), pydantic response
models, the key checked by a dependency, every body built and validated per request.
The data comes from the same market core (`build_demo_state`) and a demo-feed ticker runs
in the same process every 250 ms, as in our server, so the bodies are equivalent.
It does less than our server does per request (no rate limiting, request ids, CORS or
metrics), which favours the baseline.

    BASELINE_KEY=secret python bench/baselines/fastapi_app.py --port 8100
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import time
from collections.abc import AsyncIterator
from typing import Annotated, Literal

import uvicorn
from fastapi import Depends, FastAPI, Header, HTTPException, Query
from pydantic import BaseModel

from server.market.catalogue import default_catalogue
from server.market.contracts.rows import with_contracts
from server.market.contracts.specs import load_products
from server.market.state import build_demo_state
from server.market.timefmt import iso
from server.market.venues.book import VenueBook

TICK_INTERVAL_S = 0.25


class LocalizedText(BaseModel):
    zh: str
    en: str


class Quote(BaseModel):
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
    # a futures product's main series names the contract it shows (SPEC 19): set on those quotes only, as ours
    contract: str | None = None
    # a futures product's board (SPEC 19): set on futures quotes only (the routes exclude what is unset), as ours
    bid: float | None = None
    ask: float | None = None
    bidSize: float | None = None
    askSize: float | None = None
    openInterest: float | None = None
    oiChange: float | None = None
    volume: float | None = None
    turnover: float | None = None
    prevSettle: float | None = None
    settle: float | None = None
    limitUp: float | None = None
    limitDown: float | None = None


class QuotesResponse(BaseModel):
    updated: str
    count: int
    demo: bool
    quotes: list[Quote]


class Candle(BaseModel):
    t: str
    o: float
    h: float
    l: float  # noqa: E741
    c: float
    v: int
    oi: float | None = None  # a futures candle's open interest and settlement (SPEC 19)
    s: float | None = None


class KlineResponse(BaseModel):
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
KEY_HASHES = {hashlib.sha256(k.encode()).hexdigest() for k in os.environ.get("BASELINE_KEY", "").split(",") if k}


async def ticker() -> None:
    while True:
        await asyncio.sleep(TICK_INTERVAL_S)
        state.apply(feed.next_batch(time.time(), TICK_INTERVAL_S))


@contextlib.asynccontextmanager
async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
    task = asyncio.create_task(ticker())
    yield
    task.cancel()


app = FastAPI(title="baseline", lifespan=lifespan)


def require_key(x_service_key: Annotated[str | None, Header()] = None) -> str:
    if not x_service_key or hashlib.sha256(x_service_key.encode()).hexdigest() not in KEY_HASHES:
        raise HTTPException(status_code=401, detail="Unknown or missing API key")
    return x_service_key


@app.get("/api/v1/quotes", response_model=QuotesResponse, response_model_exclude_unset=True)
async def quotes(
    _key: Annotated[str, Depends(require_key)],
    kind: Literal["oil", "chem", "fx"] | None = None,
) -> QuotesResponse:
    rows = catalogue.rows_of_kind(kind) if kind else list(catalogue.listed_rows)  # no contract rows, as ours
    items = [Quote(**q) for q in state.quotes(rows)]
    return QuotesResponse(updated=iso(state.updated), count=len(items), demo=state.demo, quotes=items)


@app.get("/api/v1/kline/{instrument_id}", response_model=KlineResponse, response_model_exclude_unset=True)
async def kline(
    instrument_id: str,
    _key: Annotated[str, Depends(require_key)],
    days: Annotated[int, Query(ge=1, le=90)] = 90,
) -> KlineResponse:
    row = catalogue.index.get(instrument_id)
    if row is None:
        raise HTTPException(status_code=404, detail=f"Unknown instrument id {instrument_id!r}")
    series = [Candle(**c) for c in state.kline(row, days)]
    return KlineResponse(id=instrument_id, updated=iso(state.updated), demo=state.demo, interval="1d", series=series)


def main() -> None:
    parser = argparse.ArgumentParser(description="FastAPI + uvicorn baseline")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False,
                loop="uvloop", http="httptools")


if __name__ == "__main__":
    main()
