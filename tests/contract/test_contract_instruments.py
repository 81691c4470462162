"""Futures contracts as instruments on a real demo server (SPEC 19, docs/contracts.md): every contract shown in the
demo's 90-day window has a row, so quotes, candles, the stream and UDF answer for its id like any other; the
unfiltered quote list, `kind` and the public categories still list only the source documents' instruments.

The server's clock starts on Wednesday 2026-11-25 at 10:00 in Shanghai (ZCE in session): MA611 expired on 13 Nov
(the 10th trading day of November), MA612 is the front, MA711 the newest listed (docs/contracts.md).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator

import httpx
import pytest
from websockets.asyncio.client import connect

from server.market.catalogue import default_catalogue
from tests.conftest import ServerProcess

CLOCK_START = "2026-11-25T10:00:00+08:00"
CONTRACT = re.compile(r"[a-z0-9-]+-[0-9]{6}")


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path_factory.mktemp("contract-rows") / "data", "granian", "--clock-start", CLOCK_START)
    yield server
    assert server.stop() == 0, server.output()


@pytest.fixture(scope="module")
def http(srv: ServerProcess) -> Iterator[httpx.Client]:
    with srv.client(headers={"X-SERVICE-Key": srv.demo_key}) as client:
        yield client


def _get(http: httpx.Client, path: str, **params: object) -> dict:
    resp = http.get(path, params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()  # type: ignore[no-any-return]


def test_the_unfiltered_lists_hold_the_products_only(http: httpx.Client) -> None:
    ids = [q["id"] for q in _get(http, "/api/v1/quotes")["quotes"]]
    assert ids == [inst.id for inst in default_catalogue().instruments]
    assert not [q for q in _get(http, "/api/v1/quotes", kind="chem")["quotes"] if CONTRACT.fullmatch(q["id"])]
    listed = [i["id"] for i in _get(http, "/api/v1/instruments")["instruments"]]
    assert listed == ids
    site = http.get("/api/market/methanol").json()
    assert [q["id"] for q in site["quotes"]] == ["methanol", "methanol-ec", "methanol-cfr"]


def test_a_contract_quotes_like_any_instrument(http: httpx.Client) -> None:
    quote = _get(http, "/api/v1/quotes/methanol-202612")
    assert quote["name"] == {"zh": "甲醇 MA612", "en": "Methanol MA612"}
    assert (quote["kind"], quote["venue"], quote["unit"]["en"], quote["tradingDay"]) == ("chem", "zce", "CNY/t",
                                                                                        "2026-11-25")
    assert quote["price"] is not None and quote["price"] == int(quote["price"])  # on MA's tick of 1
    assert quote["prevSettle"] is not None and quote["limitUp"] > quote["limitDown"]
    both = _get(http, "/api/v1/quotes", ids="methanol-202701,methanol")["quotes"]
    assert [q["id"] for q in both] == ["methanol", "methanol-202701"]
    bad = http.get("/api/v1/quotes", params={"ids": "methanol-202613"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "ids"


def test_a_product_lists_its_contract_quotes_by_expiry(http: httpx.Client) -> None:
    quotes = _get(http, "/api/v1/quotes", product="methanol")["quotes"]
    ids = [q["id"] for q in quotes]
    assert ids[0] == "methanol-202608" and ids[-1] == "methanol-202711"  # listed since late July, 90 days back
    assert "methanol-202612" in ids and ids == sorted(ids) and len(ids) == 16
    named = _get(http, "/api/v1/quotes", product="methanol", ids="methanol-202701,pp,methanol-202612")["quotes"]
    assert [q["id"] for q in named] == ["methanol-202612", "methanol-202701"]  # of the product's, those named
    assert _get(http, "/api/v1/quotes", product="methanol", kind="oil")["quotes"] == []
    resp = http.get("/api/v1/quotes", params={"product": "methanol-ec"})  # a spot assessment has no contracts
    assert resp.status_code == 400 and resp.json()["errors"][0]["field"] == "product", resp.text


def test_a_contract_has_daily_and_intraday_candles(http: httpx.Client) -> None:
    daily = _get(http, "/api/v1/kline/methanol-202612", days=5)["series"]
    assert daily[-1]["t"] == "2026-11-25" and all("oi" in c and "s" in c for c in daily)
    bars = _get(http, "/api/v1/kline/methanol-202612", interval="5m", limit=10)["series"]
    assert bars and all(b["t"] < "2026-11-25T10:05" for b in bars)
    udf = _get(http, "/api/v1/udf/symbols", symbol="methanol-202612")
    assert (udf["name"], udf["minmov"], udf["pricescale"]) == ("methanol-202612", 1, 1)
    ref = _get(http, "/api/v1/instruments/methanol-202612")
    assert (ref["symbol"], ref["lastTradingDay"], ref["status"]) == ("MA612", "2026-12-14", "listed")
    assert ref["earliest"]["1d"] is not None


def test_a_contract_streams_its_ticks(srv: ServerProcess) -> None:
    async def run() -> tuple[dict, dict]:
        async with connect(f"{srv.ws_base}/ws/quotes", additional_headers={"X-SERVICE-Key": srv.demo_key}) as ws:
            await ws.send(json.dumps({"op": "subscribe", "ids": ["methanol-202701"], "reqId": "s"}))
            snapshot = None
            while True:
                msg = json.loads(await asyncio.wait_for(ws.recv(), 30))
                if msg["type"] == "snapshot":
                    snapshot = msg
                elif msg["type"] == "tick" and snapshot is not None:
                    return snapshot, msg

    snapshot, tick = asyncio.run(run())
    assert [q["id"] for q in snapshot["quotes"]] == ["methanol-202701"]
    assert tick["id"] == "methanol-202701" and {"bid", "ask", "oi", "vol"} <= set(tick)
