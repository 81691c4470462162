"""The main contract and the continuous series on a real demo server (SPEC 19, issue 39 items 5 and 6): a product's
quote is its main contract's with `contract` naming it, its candles are each day's main's spliced at the rolls,
`/api/v1/instruments/{product}/rolls`, `?adjust=`, `.c.N`/`.n.N`, the curve, and the roll frame on the stream.

Clocks: Wednesday 2026-11-25 10:00 in Shanghai (ZCE in session); and Thursday 2026-11-12 20:59:20, forty seconds
before ZCE's night session of Friday's trading day, for which the demo (the default seed, 42) rolls methanol from MA612
to MA701 by the rule (its history's open interest at Thursday's close: MA701 more than 10% above MA612): the first
tick at 21:00 comes after the roll frame (the demo moves in session hours only there).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
from collections.abc import Iterator
from datetime import datetime

import httpx
import pytest
from jsonschema import Draft7Validator
from websockets.asyncio.client import connect

from tests.conftest import ServerProcess
from tests.contract.test_schemas import errors_of, validator

WEDNESDAY = "2026-11-25T10:00:00+08:00"
BEFORE_ROLL = "2026-11-12T20:59:20+08:00"  # started and subscribed well before 21:00


def _server(tmp: pytest.TempPathFactory, name: str, clock: str, *extra: str) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp.mktemp(name) / "data", "granian", "--clock-start", clock, *extra)
    yield server
    assert server.stop() == 0, server.output()


@pytest.fixture(scope="module")
def wed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _server(tmp_path_factory, "main-wed", WEDNESDAY)


@pytest.fixture(scope="module")
def http(wed: ServerProcess) -> Iterator[httpx.Client]:
    with wed.client(headers={"X-SERVICE-Key": wed.demo_key}) as client:
        yield client


def _get(http: httpx.Client, path: str, **params: object) -> dict:
    resp = http.get(path, params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()  # type: ignore[no-any-return]


def test_a_products_quote_is_its_main_contracts(http: httpx.Client) -> None:
    for product in ("methanol", "pp", "brent"):
        main = _get(http, f"/api/v1/quotes/{product}")["contract"]
        assert main.startswith(product + "-")
        quotes = _get(http, "/api/v1/quotes", ids=f"{product},{main}")["quotes"]  # one answer: one state
        series, contract = quotes if quotes[0]["id"] == product else quotes[::-1]
        if series["contract"] != main:
            continue  # rolled between the two requests (a day began): the next product checks the rule
        for field in ("price", "openInterest", "volume", "bid", "ask", "prevSettle", "limitUp"):
            assert series[field] == contract[field], (product, field)
    assert "contract" not in _get(http, "/api/v1/quotes/methanol-ec")


def test_rolls_are_listed_by_the_rule_and_the_candles_splice_at_them(http: httpx.Client) -> None:
    body = _get(http, "/api/v1/instruments/methanol/rolls")
    rolls = body["rolls"]
    assert body["contract"] == _get(http, "/api/v1/quotes/methanol")["contract"]
    assert len(rolls) >= 3 and [r["tradingDay"] for r in rolls] == sorted(r["tradingDay"] for r in rolls)
    for before, after in itertools.pairwise(rolls):
        assert before["to"] == after["from"]
    for roll in rolls:
        assert roll["to"] > roll["from"]  # a later month: never back
        for key, cid in (("fromClose", roll["from"]), ("toClose", roll["to"])):
            days = [c for c in _get(http, f"/api/v1/kline/{cid}", days=90)["series"] if c["t"] < roll["tradingDay"]]
            assert days and days[-1]["c"] == roll[key], (roll, key)
    series = _get(http, "/api/v1/kline/methanol", days=90)["series"]
    by_contract = {cid: {c["t"]: c for c in _get(http, f"/api/v1/kline/{cid}", days=90)["series"]}
                   for cid in {rolls[0]["from"], *(r["to"] for r in rolls)}}
    for candle in series[:-1]:  # the live day's candle moves with every tick
        main = rolls[0]["from"]
        for roll in rolls:
            if roll["tradingDay"] <= candle["t"]:
                main = roll["to"]
        assert candle == by_contract[main][candle["t"]], (candle["t"], main)


def test_timescale_marks_mark_each_roll_of_a_products_main(http: httpx.Client) -> None:
    """SPEC 14: `timescale_marks` marks each main-contract roll (SPEC 19) on the chart's time axis, at the new main's
    first trading day (00:00 UTC, as a daily bar's time), beside the holiday closures; a contract has no rolls."""
    rolls = _get(http, "/api/v1/instruments/methanol/rolls")["rolls"]
    days = [datetime.fromisoformat(r["tradingDay"] + "T00:00:00+00:00") for r in rolls]
    span = {"from": int(days[0].timestamp()) - 86400, "to": int(days[-1].timestamp()), "resolution": "1D"}
    marks = _get(http, "/api/v1/udf/timescale_marks", symbol="methanol", **span)
    on_rolls = [m for m in marks if m["label"] == "R"]
    assert [m["time"] for m in on_rolls] == [int(d.timestamp()) for d in days]  # `to` counted in
    for mark, roll in zip(on_rolls, rolls, strict=True):
        assert mark["id"] == "roll-" + roll["tradingDay"].replace("-", "")
        assert f"{roll['from']} -> {roll['to']}" in mark["tooltip"][0]
    assert [m["time"] for m in marks] == sorted(m["time"] for m in marks)
    assert {m["label"] for m in marks} <= {"R", "H"}
    later = _get(http, "/api/v1/udf/timescale_marks", symbol="methanol", **{**span, "from": span["to"] + 1,
                                                                            "to": span["to"] + 86400})
    assert [m for m in later if m["label"] == "R"] == []  # outside the range: none
    contract = _get(http, "/api/v1/udf/timescale_marks", symbol=rolls[-1]["to"], **span)
    assert [m for m in contract if m["label"] == "R"] == []


@pytest.mark.parametrize("bad", ["methanol-ec", "methanol-202701", "nothing"])
def test_rolls_of_anything_but_a_product_are_404(http: httpx.Client, bad: str) -> None:
    assert http.get(f"/api/v1/instruments/{bad}/rolls").status_code == 404


async def _until_a_tick(srv: ServerProcess, product: str) -> list[dict]:
    """Subscribe to `product`; its roll frames and ticks up to and including its first tick."""
    async with connect(f"{srv.ws_base}/ws/quotes", additional_headers={"X-SERVICE-Key": srv.demo_key}) as ws:
        await ws.send(json.dumps({"op": "subscribe", "ids": [product], "reqId": "s"}))
        seen: list[dict] = []
        while not seen or seen[-1]["type"] != "tick":  # ZCE opens at 21:00: the first tick of Friday's day
            msg = json.loads(await asyncio.wait_for(ws.recv(), 90))
            if msg["type"] in ("roll", "tick") and msg["id"] == product:  # (not the default set's)
                seen.append(msg)
        return seen


def test_a_roll_frame_comes_before_the_first_tick_of_the_new_main(tmp_path_factory: pytest.TempPathFactory) -> None:
    for srv in _server(tmp_path_factory, "main-roll", BEFORE_ROLL, "--demo-hours", "sessions"):  # no tick before 21:00
        with srv.client(headers={"X-SERVICE-Key": srv.demo_key}) as client:
            # decided after Thursday's close; the quote names the contract whose price it shows until Friday's first
            assert client.get("/api/v1/instruments/methanol/rolls").json()["contract"] == "methanol-202701"
            assert client.get("/api/v1/quotes/methanol").json()["contract"] == "methanol-202612"
            doc = client.get("/asyncapi.json").json()
        frames = asyncio.run(_until_a_tick(srv, "methanol"))
        for frame, name in zip(frames, ("Roll", "Tick"), strict=True):
            check = validator(doc, doc["channels"]["quotes"]["messages"][name]["payload"], strict=True,
                              draft=Draft7Validator)
            assert errors_of(check, frame) == [], (name, frame)
        assert frames[0] == {"type": "roll", "id": "methanol", "from": "methanol-202612", "to": "methanol-202701",
                             "tradingDay": "2026-11-13"}
        assert len(frames) == 2 and frames[1]["id"] == "methanol" and frames[1]["contract"] == "methanol-202701"


def test_the_curve_lists_the_listed_contracts_with_the_spread_to_the_main(http: httpx.Client) -> None:
    curve = _get(http, "/api/v1/curve/methanol")
    points = curve["contracts"]
    ids = [p["id"] for p in points]
    assert ids == sorted(ids) and ids[0] == "methanol-202612" and ids[-1] == "methanol-202711"  # MA611 expired
    assert curve["main"] in ids
    main = next(p for p in points if p["id"] == curve["main"])
    assert main["spread"] == 0
    for p in points:
        assert p["spread"] == round(p["price"] - main["price"], 2)
        assert {"symbol", "month", "settle", "prevSettle", "openInterest", "volume"} <= set(p)
    assert max(points, key=lambda p: p["openInterest"])["id"] >= curve["main"]  # OI leads the main or has rolled
    for bad, status in (("usdcny", 404), ("methanol-202701", 404), ("nothing", 404)):
        assert http.get(f"/api/v1/curve/{bad}").status_code == status
    assert http.get("/api/v1/curve/methanol", params={"day": "1"}).status_code == 400


@pytest.mark.parametrize("mode", ["diff", "ratio"])
def test_adjust_moves_every_bar_before_a_roll_by_its_gap(http: httpx.Client, mode: str) -> None:
    rolls = _get(http, "/api/v1/instruments/methanol/rolls")["rolls"]
    raw = _get(http, "/api/v1/kline/methanol", days=90)["series"]
    adjusted = _get(http, "/api/v1/kline/methanol", days=90, adjust=mode)
    assert adjusted["adjust"] == mode
    for before, after in zip(raw[:-1], adjusted["series"][:-1], strict=True):  # the live bar moves between calls
        later = [r for r in rolls if r["tradingDay"] > before["t"]]
        for key in ("o", "h", "l", "c"):
            if mode == "diff":
                want = before[key] + sum(r["toClose"] - r["fromClose"] for r in later)
            else:
                want = before[key] * math.prod(r["toClose"] / r["fromClose"] for r in later)
            assert after[key] == pytest.approx(want, abs=0.011), (before["t"], key)
        assert after["v"] == before["v"]
    newest = [c for c in raw if c["t"] >= rolls[-1]["tradingDay"]][:-1]
    assert newest and all(c in adjusted["series"] for c in newest)  # after the last roll: the traded prices
    resp = http.get("/api/v1/kline/methanol", params={"adjust": "back"})
    assert resp.status_code == 400 and resp.json()["errors"][0]["field"] == "adjust"


def test_continuous_ids_name_a_contract_by_expiry_or_open_interest(http: httpx.Client) -> None:
    curve = _get(http, "/api/v1/curve/methanol")["contracts"]
    assert _get(http, "/api/v1/quotes/methanol.c.0")["id"] == curve[0]["id"]  # the front
    assert _get(http, "/api/v1/quotes/methanol.c.2")["id"] == curve[2]["id"]
    by_oi = sorted(curve, key=lambda p: -_get(http, "/api/v1/kline/" + p["id"], days=2)["series"][0]["oi"])
    assert _get(http, "/api/v1/quotes/methanol.n.0")["id"] == by_oi[0]["id"]  # the largest at the previous close
    both = _get(http, "/api/v1/quotes", ids="methanol.c.1,methanol.n.1")["quotes"]
    assert {q["id"] for q in both} == {curve[1]["id"], by_oi[1]["id"]}
    assert _get(http, "/api/v1/kline/methanol.c.0", days=3)["id"] == curve[0]["id"]
    assert _get(http, "/api/v1/udf/symbols", symbol="methanol.n.0")["name"] == by_oi[0]["id"]
    assert http.get("/api/v1/quotes/methanol.c.40").status_code == 404
    assert http.get("/api/v1/quotes", params={"ids": "usdcny.c.0"}).status_code == 400


async def _subscribe(srv: ServerProcess, ids: list[str]) -> tuple[dict, list[dict]]:
    """Subscribe to ``ids``: the ack (or the error) and, after an ack, the frames up to a tick of every id it names."""
    async with connect(f"{srv.ws_base}/ws/quotes", additional_headers={"X-SERVICE-Key": srv.demo_key}) as ws:
        await ws.send(json.dumps({"op": "subscribe", "ids": ids, "reqId": "c"}))
        while True:  # what arrives before the ack is the default set's
            ack = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if ack.get("reqId") == "c":
                break
        if ack["type"] != "subscribed":
            return ack, []
        frames, waiting = [], set(ack["ids"])
        while waiting:  # the demo ticks every contract of a venue in session
            frame = json.loads(await asyncio.wait_for(ws.recv(), 30))
            frames.append(frame)
            if frame["type"] == "tick":
                waiting.discard(frame["id"])
        return ack, frames


def test_a_continuous_id_subscribes_to_the_contract_it_names_now(wed: ServerProcess, http: httpx.Client) -> None:
    curve = _get(http, "/api/v1/curve/methanol")["contracts"]
    front, by_oi = curve[0]["id"], _get(http, "/api/v1/quotes/methanol.n.0")["id"]
    ack, frames = asyncio.run(_subscribe(wed, ["methanol.c.0", "methanol.n.0"]))
    doc = http.get("/asyncapi.json").json()
    check = validator(doc, doc["channels"]["quotes"]["messages"]["Subscribed"]["payload"], strict=True,
                      draft=Draft7Validator)
    assert errors_of(check, ack) == [], ack
    assert ack["resolved"] == {"methanol.c.0": front, "methanol.n.0": by_oi}
    assert ack["ids"] == sorted({front, by_oi})  # the session holds the contracts (catalogue order: by expiry)
    snapshot = next(f for f in frames if f["type"] == "snapshot")
    assert {q["id"] for q in snapshot["quotes"]} == {front, by_oi}
    assert {f["id"] for f in frames if f["type"] == "tick"} == {front, by_oi}  # the contracts' own ticks
    plain, _ = asyncio.run(_subscribe(wed, [front]))
    assert "resolved" not in plain and plain["ids"] == [front]


@pytest.mark.parametrize("bad", ["methanol.c.40", "usdcny.c.0", "methanol.x.0", "methanol.n.0x"])
def test_an_unresolvable_continuous_id_is_an_unknown_id_on_the_stream(wed: ServerProcess, bad: str) -> None:
    error, _ = asyncio.run(_subscribe(wed, ["methanol.c.0", bad]))
    assert error["type"] == "error" and error["code"] == "unknown_ids" and bad in error["detail"], error
