"""A CTP record file replayed through `--feed ctp-jsonl:PATH` on a real server (SPEC 19, issue 39 item 7).

Done-when: the per-contract candles the server serves equal an aggregation written here, from what the scenario
knows of each record it wrote (its instant and its trading day), not from the server's code: the running totals
are differenced per contract and trading day in this file, the candles built by hand.

The file (tests/ctp_records.py): ZCE MA701 and MA705, DCE pp2701 and INE sc2701, written as those exchanges write
them (CZCE's TradingDay is the calendar day at night, DCE's ActionDay the trading day, INE's ActionDay the calendar
day and TradingDay the trading day), through Tuesday 2026-11-24's night
session and Wednesday's day session (trading day Wednesday 25th), then Thursday's first records just after
Wednesday's close (where every running total falls back: a new day), then a few bad records. The server's clock
starts on Wednesday 2026-11-25 at 14:58 in Shanghai, so every record is in the past or within the five minutes a
record may lead; a live feed's hub puts a record of a trading day before its live one into the live candle (SPEC
10's live feed), so the file runs in time order through the day the clock is in.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import orjson
import pytest

from tests.conftest import ServerProcess
from tests.ctp_records import DBL_MAX, Written, record, session_file

CLOCK_START = "2026-11-25T14:58:00+08:00"
SHANGHAI = ZoneInfo("Asia/Shanghai")
CONTRACTS = {"MA701": "methanol-202701", "MA705": "methanol-202705", "pp2701": "pp-202701", "sc2701": "sc-202701"}
TICKS = {"MA701": 1.0, "MA705": 1.0, "pp2701": 1.0, "sc2701": 0.1}
# (trading day, night start, day start, records per contract): one a second. Thursday's records are stamped just
# after Wednesday's close (and its 60 s grace), the next trading day by the calendar's rule, so the test never waits
# for a real close and every record is at most five minutes ahead of the clock.
DAYS = [("2026-11-25", "2026-11-24T21:00:00+08:00", "2026-11-25T14:50:00+08:00", 240),
        ("2026-11-26", "2026-11-25T15:01:05+08:00", None, 60)]


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)  # the server reads the file on its own schedule: poll, bounded
    raise AssertionError("condition not met in time")


def metric(http: httpx.Client, name: str) -> float:
    line = next(x for x in http.get("/metrics").text.splitlines() if x.startswith(name + " "))
    return float(line.split()[1])


@pytest.fixture(scope="module", params=["granian", "robyn"])
def replay(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, list[Written]]]:
    tmp = tmp_path_factory.mktemp("ctp")
    path = tmp / "depth.jsonl"
    written = session_file(path, list(CONTRACTS), DAYS)
    last = [w for w in written if w.code == "MA701"][-1].record
    bad = [last | {"Volume": last["Volume"] - 1, "UpdateTime": "15:02:10"},  # a total that fell within the day
           last | {"LastPrice": DBL_MAX, "UpdateTime": "15:02:11"},  # no trade price
           last | {"InstrumentID": "XX605", "UpdateTime": "15:02:12"}]  # no such contract: an unknown id
    with path.open("ab") as fh:
        fh.write(b"".join(orjson.dumps(r) + b"\n" for r in bad))
    srv = ServerProcess(tmp / "data", request.param, "--feed", f"ctp-jsonl:{path}", "--clock-start", CLOCK_START)
    http = srv.client(headers={"X-SERVICE-Key": srv.demo_key})
    try:
        wait_for(lambda: metric(http, "market_feed_bad_lines") == 2 and metric(http, "market_feed_unknown_ids") == 1)
        yield http, written
    finally:
        http.close()
        assert srv.stop() == 0, srv.output()


def normalised(written: list[Written]) -> dict[str, list[tuple[float, str, float, float]]]:
    """Per contract id: (ts, trading day, price, this tick's volume), the running totals differenced here."""
    out: dict[str, list[tuple[float, str, float, float]]] = defaultdict(list)
    before: dict[tuple[str, str], float] = {}
    for w in written:
        cum = float(w.record["Volume"])
        out[CONTRACTS[w.code]].append((w.ts, w.day, float(w.record["LastPrice"]), cum - before.get((w.code, w.day), 0)))
        before[(w.code, w.day)] = cum
    return out


def daily(ticks: list[tuple[float, str, float, float]], tick_size: float) -> list[dict[str, Any]]:
    by_day: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for _, day, price, volume in ticks:
        by_day[day].append((price, volume))
    out = []
    for day, rows in sorted(by_day.items()):
        prices = [p for p, _ in rows]
        volume = sum(v for _, v in rows)
        vwap = sum(p * v for p, v in rows) / volume
        out.append({"t": day, "o": prices[0], "h": max(prices), "l": min(prices), "c": prices[-1], "v": round(volume),
                    "settle": round(math.floor(vwap / tick_size + 0.5) * tick_size, 6)})
    return out


def minutes(ticks: list[tuple[float, str, float, float]]) -> list[dict[str, Any]]:
    buckets: dict[float, list[tuple[float, float]]] = defaultdict(list)
    for ts, _, price, volume in ticks:
        buckets[ts // 60 * 60].append((price, volume))
    return [{"t": datetime.fromtimestamp(start, SHANGHAI).isoformat(timespec="milliseconds"), "o": rows[0][0],
             "h": max(p for p, _ in rows), "l": min(p for p, _ in rows), "c": rows[-1][0],
             "v": round(sum(v for _, v in rows))} for start, rows in sorted(buckets.items())]


def series(http: httpx.Client, inst: str, **params: str | int) -> list[dict[str, Any]]:
    resp = http.get(f"/api/v1/kline/{inst}", params=params)
    assert resp.status_code == 200, resp.text
    return list(resp.json()["series"])


@pytest.mark.parametrize("code", list(CONTRACTS))
def test_each_contracts_candles_equal_an_independent_aggregation(replay: tuple[httpx.Client, list[Written]],
                                                                 code: str) -> None:
    http, written = replay
    cid = CONTRACTS[code]
    ticks = normalised(written)[cid]
    wait_for(lambda: http.get(f"/api/v1/quotes/{cid}").json().get("seq") == len(ticks))
    expected = daily(ticks, TICKS[code])
    got = [c for c in series(http, cid, interval="1d", limit=5) if c["t"] in {d for d, *_ in DAYS}]
    assert [{k: c[k] for k in ("t", "o", "h", "l", "c", "v")} for c in got] == \
        [{k: e[k] for k in ("t", "o", "h", "l", "c", "v")} for e in expected]
    assert got[0]["s"] == expected[0]["settle"] and got[1]["s"] is None  # Wednesday settled at its VWAP
    assert series(http, cid, interval="1m", limit=1000) == minutes(ticks)
    last = written[max(i for i, w in enumerate(written) if w.code == code)].record
    q = http.get(f"/api/v1/quotes/{cid}").json()
    assert (q["volume"], q["turnover"], q["openInterest"], q["tradingDay"]) == (
        last["Volume"], round(last["Turnover"]), last["OpenInterest"], "2026-11-26")


def test_a_night_record_is_dated_by_the_calendar_whatever_its_fields_say(
        replay: tuple[httpx.Client, list[Written]]) -> None:
    http, written = replay
    czce = next(w for w in written if w.code == "MA701")
    dce = next(w for w in written if w.code == "pp2701")
    assert (czce.record["TradingDay"], dce.record["ActionDay"]) == ("20261124", "20261125")  # the exchanges' habits
    for cid, w in (("methanol-202701", czce), ("pp-202701", dce)):
        first = series(http, cid, interval="1m", limit=1000)[0]
        assert first["t"] == "2026-11-24T21:00:00.000+08:00"  # Tuesday evening, under Wednesday's daily candle
        assert first["o"] == w.record["LastPrice"]


def test_bad_records_are_counted_and_a_record_with_an_empty_side_has_no_bid(
        replay: tuple[httpx.Client, list[Written]]) -> None:
    http, written = replay
    assert (metric(http, "market_feed_bad_lines"), metric(http, "market_feed_unknown_ids")) == (2, 1)
    for code, cid in CONTRACTS.items():
        last = written[max(i for i, w in enumerate(written) if w.code == code)].record
        q = http.get(f"/api/v1/quotes/{cid}").json()
        assert q["bid"] == (None if last["BidPrice1"] == DBL_MAX else last["BidPrice1"])
        assert q["ask"] == last["AskPrice1"] and q["askSize"] == last["AskVolume1"]


def test_the_generator_writes_what_the_exchanges_send(tmp_path: Path) -> None:
    written = session_file(tmp_path / "f.jsonl", ["MA701", "pp2701"], DAYS)
    lines = (tmp_path / "f.jsonl").read_bytes().splitlines()
    assert [orjson.loads(x) for x in lines] == [w.record for w in written]
    empty = [w.record for w in written if w.record["BidPrice1"] == DBL_MAX]
    assert empty and all(r["BidVolume1"] == 0 for r in empty)  # an empty side as CTP sends it


def test_the_main_contracts_records_move_the_products_series_once_its_main_is_decided(tmp_path: Path) -> None:
    """Wednesday's records leave MA705 with four times MA701's open interest; at Wednesday's close (15:01 with the
    closing tick's grace, a few seconds after the clock starts) the hub decides Thursday's main from them; Thursday's
    records of MA705 then move `methanol` too, MA701's only their own row (SPEC 19's main continuous series)."""
    path = tmp_path / "depth.jsonl"
    wednesday = [record("MA701", "2026-11-25T14:50:00+08:00", 2400, volume=10, turnover=240_000, oi=500),
                 record("MA705", "2026-11-25T14:50:00+08:00", 2450, volume=30, turnover=735_000, oi=2000)]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in wednesday))
    srv = ServerProcess(tmp_path / "data", "granian", "--feed", f"ctp-jsonl:{path}", "--clock-start",
                        "2026-11-25T15:00:45+08:00")
    http = srv.client(headers={"X-SERVICE-Key": srv.demo_key})
    try:
        wait_for(lambda: http.get("/api/v1/quotes/methanol").json()["contract"] == "methanol-202705")
        # Thursday's main, decided at the close: the barrier before Thursday's records (the clock passes 15:01)
        thursday = [record("MA705", f"2026-11-25T15:01:{s:02d}+08:00", 2451 + s % 3, volume=s, turnover=2451.0 * s * 10,
                           oi=2000 + s) for s in range(10, 40, 3)]
        thursday += [record("MA701", "2026-11-25T15:01:20+08:00", 2399, volume=1, turnover=23_990, oi=501)]
        with path.open("ab") as fh:
            fh.write(b"".join(orjson.dumps(r) + b"\n" for r in thursday))
        main_ticks = [r for r in thursday if r["InstrumentID"] == "MA705"]
        q = wait_for(lambda: (q := http.get("/api/v1/quotes/methanol-202705").json())["seq"] == 1 + len(main_ticks)
                     and q)
        p = wait_for(lambda: (p := http.get("/api/v1/quotes/methanol").json())["seq"] == len(main_ticks) and p)
        assert (p["price"], p["contract"], p["tradingDay"]) == (main_ticks[-1]["LastPrice"], "methanol-202705",
                                                                "2026-11-26")
        assert (p["volume"], p["openInterest"]) == (q["volume"], q["openInterest"]) == (37, 2037)
        daily_product = series(http, "methanol", interval="1d", limit=1)[-1]
        daily_main = series(http, "methanol-202705", interval="1d", limit=1)[-1]
        assert daily_product["t"] == daily_main["t"] == "2026-11-26"
        assert {k: daily_product[k] for k in "ohlcv"} == {k: daily_main[k] for k in "ohlcv"}
        assert series(http, "methanol", interval="1m", limit=5)[-1] == series(http, "methanol-202705", interval="1m",
                                                                             limit=5)[-1]
        assert http.get("/api/v1/quotes/methanol-202701").json()["price"] == 2399.0  # its own row only
    finally:
        http.close()
        assert srv.stop() == 0, srv.output()


def test_a_published_pre_settlement_price_wins_over_ours(tmp_path: Path) -> None:
    """SPEC 19, a feed's published values win: CTP's PreSettlementPrice is the contract's prevSettle (so `change`,
    `changePct` and the limits it sets) when it is not ours, on a live hub's first day (no settlement of its own)
    and after a close (ours is Wednesday's VWAP); limits the record publishes win over those; a record without one
    leaves the board's own."""
    path = tmp_path / "depth.jsonl"
    wednesday = [record("MA701", "2026-11-25T14:50:00+08:00", 2400, volume=10, turnover=240_000, oi=500,
                        pre_settle=2390),
                 record("MA701", "2026-11-25T14:51:00+08:00", 2410, volume=40, turnover=963_000, oi=510,
                        pre_settle=2390),
                 record("MA705", "2026-11-25T14:50:00+08:00", 2450, volume=30, turnover=735_000, oi=2000)]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in wednesday))
    srv = ServerProcess(tmp_path / "data", "granian", "--feed", f"ctp-jsonl:{path}", "--clock-start", CLOCK_START)
    http = srv.client(headers={"X-SERVICE-Key": srv.demo_key})
    try:
        a = wait_for(lambda: (q := http.get("/api/v1/quotes/methanol-202701").json())["seq"] == 2 and q)
        assert (a["prevSettle"], a["change"], a["changePct"]) == (2390.0, 20.0, round(100 * 20 / 2390, 2))
        assert (a["limitDown"], a["limitUp"]) == (2223.0, 2557.0)  # 2390 -/+ 7%, inward to the tick
        b = wait_for(lambda: (q := http.get("/api/v1/quotes/methanol-202705").json())["seq"] == 1 and q)
        assert b["prevSettle"] is None and b["limitUp"] is None  # nothing published, nothing of its own yet
        # Thursday (after Wednesday's close): ours is Wednesday's VWAP, (2400*10 + 2410*30) / 40 = 2407.5 -> 2408
        thursday = [record("MA701", "2026-11-25T15:01:05+08:00", 2420, volume=2, turnover=48_400, oi=511,
                           pre_settle=2407),
                    record("MA705", "2026-11-25T15:01:05+08:00", 2455, volume=1, turnover=24_550, oi=2001,
                           pre_settle=2449, limits=(2600, 2300)),
                    record("MA701", "2026-11-25T15:01:06+08:00", 2421, volume=3, turnover=72_610, oi=512)]
        with path.open("ab") as fh:
            fh.write(b"".join(orjson.dumps(r) + b"\n" for r in thursday))
        a = wait_for(lambda: (q := http.get("/api/v1/quotes/methanol-202701").json())["seq"] == 4 and q)
        assert (a["tradingDay"], a["prevSettle"], a["change"]) == ("2026-11-26", 2407.0, 14.0)
        assert a["changePct"] == round(100 * 14 / 2407, 2)
        assert (a["limitDown"], a["limitUp"]) == (2239.0, 2575.0)  # from the published 2407, not our 2408
        b = wait_for(lambda: (q := http.get("/api/v1/quotes/methanol-202705").json())["seq"] == 2 and q)
        assert (b["prevSettle"], b["change"], b["limitDown"], b["limitUp"]) == (2449.0, 6.0, 2300.0, 2600.0)
        wednesday_candle = series(http, "methanol-202701", interval="1d", limit=2)[0]
        assert (wednesday_candle["t"], wednesday_candle["s"]) == ("2026-11-25", 2408.0)  # the day's own settlement
    finally:
        http.close()
        assert srv.stop() == 0, srv.output()
