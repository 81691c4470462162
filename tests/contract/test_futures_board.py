"""The futures board on a real server fed by JSON lines (SPEC 19): a futures quote's fields, change against
prevSettle, the settlement when a day ends (computed, and a feed's published one winning), daily limits (a line
beyond them skipped and counted, one at a limit taken), the tick frame's keys and the daily candle's oi and s.

The server's clock starts on Wednesday 2026-11-25 at 14:57 in Shanghai (ZCE and DCE in session until 15:00); a
line stamped 15:01 (Thursday's trading day, within the five minutes a line may lead the clock) moves a product's
day on at once, so the test never waits for a real close.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.conftest import ServerProcess

CLOCK_START = "2026-11-25T14:57:00+08:00"  # a Wednesday, in session


def ts(hhmmss: str) -> str:
    """That time on Wednesday 2026-11-25 in Shanghai (from 15:00 on, Thursday's trading day at ZCE and DCE)."""
    return f"2026-11-25T{hhmmss}+08:00"


class Feed:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.write_text("")

    def write(self, *lines: dict[str, Any]) -> None:
        with self.path.open("a") as fh:
            fh.write("".join(json.dumps(line) + "\n" for line in lines))


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)  # the server applies the file's lines on its own schedule: poll, bounded
    raise AssertionError("condition not met in time")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Feed, httpx.Client]]:
    tmp = tmp_path_factory.mktemp("futures")
    feed = Feed(tmp / "ticks.jsonl")
    feed.write(
        {"id": "methanol", "price": 2400, "volume": 10, "ts": ts("14:50:00")},
        {"id": "methanol", "price": 2410, "volume": 30, "ts": ts("14:51:00"), "bid": 2409, "ask": 2411,
         "bidSize": 5, "askSize": 7, "oi": 1000},
        {"id": "pp", "price": 7000, "volume": 10, "ts": ts("14:50:00"), "settle": 6990, "oi": 500},
    )
    srv = ServerProcess(tmp / "data", "granian", "--feed", f"jsonl:{feed.path}", "--clock-start", CLOCK_START)
    http = srv.client(headers={"X-SERVICE-Key": srv.demo_key})
    yield srv, feed, http
    http.close()
    assert srv.stop() == 0, srv.output()


def quote(http: httpx.Client, inst: str) -> dict[str, Any]:
    resp = http.get(f"/api/v1/quotes/{inst}")
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def bad_lines(http: httpx.Client) -> float:
    line = next(x for x in http.get("/metrics").text.splitlines() if x.startswith("market_feed_bad_lines "))
    return float(line.split()[1])


def test_a_futures_quote_before_its_first_settlement(live: tuple[ServerProcess, Feed, httpx.Client]) -> None:
    _, _, http = live
    q = wait_for(lambda: (q := quote(http, "methanol"))["seq"] == 2 and q)
    assert (q["price"], q["bid"], q["ask"], q["bidSize"], q["askSize"]) == (2410.0, 2409.0, 2411.0, 5, 7)
    assert (q["openInterest"], q["volume"], q["turnover"]) == (1000, 40, (2400 * 10 + 2410 * 30) * 10)
    assert q["prevSettle"] is None and q["limitUp"] is None and q["limitDown"] is None  # nothing settled yet
    pp = wait_for(lambda: (q := quote(http, "pp"))["seq"] == 1 and q)
    assert pp["settle"] == 6990.0 and pp["openInterest"] == 500  # the feed published the day's settlement
    fx = quote(http, "usdcny")  # FX keeps its previous close: none of the board's fields
    assert not {"bid", "prevSettle", "openInterest", "limitUp"} & set(fx)


def test_the_day_settles_then_limits_hold_and_frames_carry_the_book(
        live: tuple[ServerProcess, Feed, httpx.Client]) -> None:
    srv, feed, http = live
    wait_for(lambda: quote(http, "methanol")["seq"] == 2 and quote(http, "pp")["seq"] == 1)
    frames = asyncio.run(_ticks_while(srv, feed, [
        {"id": "methanol", "price": 2420, "volume": 2, "ts": ts("15:01:00"), "oi": 1002, "bid": 2419, "ask": 2421},
        {"id": "pp", "price": 7001, "volume": 1, "ts": ts("15:01:00")},
    ], 2))
    # Wednesday settled: methanol at its day's VWAP (2400*10 + 2410*30) / 40 = 2407.5 -> 2408, pp at the published
    q = quote(http, "methanol")
    assert (q["prevSettle"], q["settle"], q["change"]) == (2408.0, None, 12.0)
    assert q["changePct"] == round(100 * 12 / 2408, 2) and q["prevClose"] == 2410.0
    assert (q["limitDown"], q["limitUp"]) == (2240.0, 2576.0)  # 2408 * (1 -+ 0.07), rounded to the tick inward
    assert (q["openInterest"], q["oiChange"], q["volume"]) == (1002, 2, 2)
    assert quote(http, "pp")["prevSettle"] == 6990.0  # the feed's settlement won over the day's VWAP (7000)
    first = next(f for f in frames if f["id"] == "methanol")
    assert (first["bid"], first["ask"], first["oi"], first["vol"], first["change"]) == (2419.0, 2421.0, 1002, 2, 12.0)
    assert {"bid", "ask", "oi", "vol"} <= set(next(f for f in frames if f["id"] == "pp"))

    before = bad_lines(http)
    feed.write({"id": "methanol", "price": 2577, "ts": ts("15:01:01")},  # one tick above the limit: a bad line
               {"id": "methanol", "price": 2576, "ts": ts("15:01:02"), "volume": 1})  # at the limit: valid
    q = wait_for(lambda: (q := quote(http, "methanol"))["seq"] == 4 and q)
    assert q["price"] == 2576.0 and bad_lines(http) == before + 1
    feed.write({"id": "methanol", "price": 2570, "ts": ts("15:01:03"), "cumVolume": 10})  # the day's total: 3 + 7
    q = wait_for(lambda: (q := quote(http, "methanol"))["seq"] == 5 and q)
    assert q["volume"] == 10 and q["turnover"] == (2420 * 2 + 2576 * 1 + 2570 * 7) * 10

    series = http.get("/api/v1/kline/methanol", params={"interval": "1d", "limit": 2}).json()["series"]
    assert [(c["t"], c["s"], c["oi"]) for c in series] == [("2026-11-25", 2408.0, 1000), ("2026-11-26", None, 1002)]
    pp_day = http.get("/api/v1/kline/pp", params={"interval": "1d", "limit": 2}).json()["series"][0]
    assert (pp_day["t"], pp_day["s"], pp_day["oi"]) == ("2026-11-25", 6990.0, 500)


async def _ticks_while(srv: ServerProcess, feed: Feed, lines: list[dict[str, Any]], count: int) -> list[dict]:
    """Subscribe to methanol and pp, write ``lines``, and return the first ``count`` tick frames."""
    async with connect(f"{srv.ws_base}/ws/quotes", additional_headers={"X-SERVICE-Key": srv.demo_key}) as ws:
        await ws.send(json.dumps({"op": "subscribe", "ids": ["methanol", "pp"], "reqId": "s"}))
        while json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] != "snapshot":
            pass
        feed.write(*lines)
        ticks: list[dict] = []
        while len(ticks) < count:
            msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if msg["type"] == "tick":
                ticks.append(msg)
        return ticks


def test_a_line_names_a_contract_by_id_or_by_exchange_symbol(live: tuple[ServerProcess, Feed, httpx.Client]) -> None:
    _, feed, http = live
    feed.write({"symbol": "MA701", "price": 2390, "volume": 4, "ts": ts("14:52:00"), "oi": 300},  # ZCE's 3 digits
               {"id": "pp-202701", "price": 7010, "volume": 2, "ts": ts("14:52:00")},
               {"symbol": "pp2701", "price": 7012, "cumVolume": 5, "ts": ts("14:52:01")},  # DCE's, lower case
               {"symbol": "PP2701", "price": 7012, "ts": ts("14:52:02")})  # case counts: no such symbol
    ma = wait_for(lambda: (q := quote(http, "methanol-202701"))["seq"] == 1 and q)
    assert (ma["price"], ma["volume"], ma["openInterest"]) == (2390.0, 4, 300)
    pp = wait_for(lambda: (q := quote(http, "pp-202701"))["seq"] == 2 and q)
    assert (pp["price"], pp["volume"]) == (7012.0, 5)
    wait_for(lambda: "market_feed_unknown_ids 1.0" in http.get("/metrics").text.splitlines())
