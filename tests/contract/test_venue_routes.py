"""Venues, sessions and trading days as clients see them (SPEC 16), through a real server on a fixed clock.

The server runs on a fake clock (hidden --clock-start: Thursday 2026-10-08 10:05 in Shanghai, the first trading day
after National Day) and a JSON-lines feed whose ticks are stamped at the instants the rule is about: a Tuesday
night session, the evening before National Day, a Friday night, INE crude's night session after midnight. Every
expectation is a fixed date from the exchanges' calendars; nothing depends on today's date.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import nullcontext
from datetime import datetime

import httpx
import pytest

from tests.conftest import ServerProcess, engine_variants
from tests.redis_service import redis_prefix, require_redis

SERVERS = [("granian", "memory"), ("robyn", "memory"), ("granian", "redis")]
CLOCK_START = "2026-10-08T10:05:00+08:00"
# instrument -> (tick time, the trading day it belongs to)
TICKS = {
    "methanol": ("2026-09-29T21:30:00+08:00", "2026-09-30"),  # ZCE, Tuesday night -> Wednesday
    "pp": ("2026-09-30T21:30:00+08:00", "2026-10-08"),  # DCE, the evening before National Day -> the day after it
    "lpg": ("2026-09-18T21:30:00+08:00", "2026-09-21"),  # DCE, Friday night -> Monday
    "sc": ("2026-09-22T01:30:00+08:00", "2026-09-22"),  # INE crude, Tuesday 01:30 (Monday's night) -> Tuesday
    "brent": ("2026-10-07T23:30:00+01:00", "2026-10-08"),  # ICE Futures Europe, after its close -> next day
}


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


@pytest.fixture(scope="module", params=engine_variants(SERVERS))
def venue_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    runtime, engine = request.param
    root = tmp_path_factory.mktemp(f"venues-{runtime}-{engine}")
    feed = root / "ticks.jsonl"
    feed.write_text("".join(json.dumps({"id": iid, "price": 100.0 + n, "ts": _ts(at), "volume": 1}) + "\n"
                            for n, (iid, (at, _)) in enumerate(TICKS.items())))
    with redis_prefix(require_redis()) if engine == "redis" else nullcontext() as prefix:
        flags = ["--feed", f"jsonl:{feed}", "--clock-start", CLOCK_START]
        if engine == "redis":
            flags += ["--engine", "redis", "--redis-url", require_redis(), "--redis-prefix", str(prefix)]
        srv = ServerProcess(root / "data", runtime, *flags)
        client = srv.client(headers={"X-SERVICE-Key": srv.demo_key})
        try:
            _wait_for_ticks(client)
            yield client
        finally:
            client.close()
            assert srv.stop() == 0, srv.output()


def _wait_for_ticks(client: httpx.Client) -> None:
    """The feed file is read at start: wait until every tick of it is applied (bounded)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        quotes = client.get("/api/v1/quotes", params={"ids": ",".join(TICKS)}).json()["quotes"]
        if all(q["updated"] is not None for q in quotes):
            return
        time.sleep(0.1)
    raise AssertionError("the feed's ticks were not applied")


def test_a_quote_names_its_venue_and_the_trading_day_of_its_tick(venue_server: httpx.Client) -> None:
    quotes = {q["id"]: q for q in venue_server.get("/api/v1/quotes", params={"ids": ",".join(TICKS)}).json()["quotes"]}
    assert {iid: q["tradingDay"] for iid, q in quotes.items()} == {iid: day for iid, (_, day) in TICKS.items()}
    assert {iid: q["venue"] for iid, q in quotes.items()} == {
        "methanol": "zce", "pp": "dce", "lpg": "dce", "sc": "ine", "brent": "ice-eu"}


def test_a_single_quote_says_whether_its_market_is_open(venue_server: httpx.Client) -> None:
    methanol = venue_server.get("/api/v1/quotes/methanol").json()
    assert methanol["marketStatus"] == "open"  # 10:05: the first morning window (09:00-10:15)
    assert methanol["nextClose"] == "2026-10-08T10:15:00.000+08:00"
    assert methanol["nextOpen"] == "2026-10-08T10:30:00.000+08:00"  # after the 10:15-10:30 break
    brent = venue_server.get("/api/v1/quotes/brent").json()
    # 23:00 in London (BST, +01:00), answered in +08:00 as every timestamp of the API
    assert brent["marketStatus"] == "open" and brent["nextClose"] == "2026-10-09T06:00:00.000+08:00"


def test_venues_list_status_and_calendar_horizon(venue_server: httpx.Client) -> None:
    venues = {v["id"]: v for v in venue_server.get("/api/v1/venues").json()["venues"]}
    assert {"shfe", "ine", "dce", "zce", "ice-eu", "cme"} <= set(venues)
    zce = venues["zce"]
    assert zce["status"] == "open" and zce["tradingDay"] == "2026-10-08" and zce["timeZone"] == "Asia/Shanghai"
    assert zce["calendarKnownUntil"] == "2026-12-31" and {"methanol", "pta", "urea"} <= set(zce["instruments"])
    assert venues["cme"]["timeZone"] == "America/Chicago"


def test_the_calendar_around_national_day(venue_server: httpx.Client) -> None:
    cal = venue_server.get("/api/v1/venues/zce/calendar", params={"from": "2026-09-28", "to": "2026-10-10"}).json()
    assert [d["date"] for d in cal["days"]] == ["2026-09-28", "2026-09-29", "2026-09-30", "2026-10-08", "2026-10-09"]
    days = {d["date"]: d["sessions"] for d in cal["days"]}
    # Wednesday's night session was Tuesday evening; none before the day after the holiday
    assert days["2026-09-30"][0] == {"start": "2026-09-29T21:00:00+08:00", "end": "2026-09-29T23:00:00+08:00"}
    assert days["2026-10-08"][0]["start"] == "2026-10-08T09:00:00+08:00"
    shut = {h["date"] for h in cal["holidays"]}
    assert {"2026-10-01", "2026-10-02", "2026-10-05", "2026-10-06", "2026-10-07"} <= shut
    assert "2026-10-10" not in [d["date"] for d in cal["days"]]  # a make-up Saturday: the exchanges stay shut


@pytest.mark.parametrize(("path", "params", "status", "field"), [
    ("/api/v1/venues/zce/calendar", {"from": "2026-01-01", "to": "2027-01-02"}, 400, "to"),  # 367 days
    ("/api/v1/venues/zce/calendar", {"from": "2026-10-09", "to": "2026-10-08"}, 400, "to"),
    ("/api/v1/venues/zce/calendar", {"from": "2026-13-01", "to": "2026-12-31"}, 400, "from"),
    ("/api/v1/venues/zce/calendar", {"to": "2026-12-31"}, 400, "from"),
    ("/api/v1/venues/zce/calendar", {"from": "2026-10-01", "to": "2026-10-02", "tz": "x"}, 400, None),
    ("/api/v1/venues/nyse/calendar", {"from": "2026-10-01", "to": "2026-10-02"}, 404, None),
    ("/api/v1/instruments/nope", {}, 404, None),
    ("/api/v1/kline/methanol-cfr", {"interval": "1m"}, 400, "interval"),  # published once a day
])
def test_bad_reference_queries_are_clear_errors(venue_server: httpx.Client, path: str, params: dict[str, str],
                                                status: int, field: str | None) -> None:
    resp = venue_server.get(path, params=params)
    assert resp.status_code == status and resp.headers["content-type"] == "application/problem+json"
    if field is not None:
        assert resp.json()["errors"][0]["field"] == field


def test_reference_data_and_udf_symbols(venue_server: httpx.Client) -> None:
    instruments = {i["id"]: i for i in venue_server.get("/api/v1/instruments").json()["instruments"]}
    assert instruments["methanol-cfr"]["publication"] == "daily" and instruments["methanol-cfr"]["intervals"] == ["1d"]
    one = venue_server.get("/api/v1/instruments/sc").json()
    earliest = one.pop("earliest")  # the single instrument adds the first candle held per interval (SPEC 18)
    assert instruments["sc"] == one and list(earliest) == one["intervals"]
    daily = venue_server.get("/api/v1/kline/sc", params={"days": 90}).json()["series"]
    first_1m = venue_server.get("/api/v1/kline/sc", params={"interval": "1m", "limit": 1000}).json()["series"][0]
    assert earliest["1d"] <= daily[0]["t"] and earliest["1m"] == first_1m["t"]
    cfr = venue_server.get("/api/v1/instruments/methanol-cfr").json()["earliest"]
    cfr_daily = venue_server.get("/api/v1/kline/methanol-cfr").json()["series"]
    assert cfr == {"1d": cfr_daily[0]["t"] if cfr_daily else None}  # an assessment: daily candles only
    assert instruments["sc"]["venue"] == "ine" and "1m" in instruments["sc"]["intervals"]
    sc = venue_server.get("/api/v1/udf/symbols", params={"symbol": "sc"}).json()
    assert sc["session"] == "2100F-0230,0900-1015,1030-1130,1330-1500:3456|2100F3-0230,0900-1015,1030-1130,1330-1500:2"
    assert sc["timezone"] == "Asia/Shanghai" and sc["exchange"] == sc["listed_exchange"] == "INE"
    assert (sc["minmov"], sc["pricescale"]) == (1, 10)  # SC's tick: 0.1 CNY/bbl
    assert "20261001" in sc["session_holidays"].split(",") and sc["has_intraday"] is True
    cfr = venue_server.get("/api/v1/udf/symbols", params={"symbol": "methanol-cfr"}).json()
    assert cfr["has_intraday"] is False and cfr["supported_resolutions"] == ["1D"]
    assert venue_server.get("/api/v1/udf/symbols", params={"symbol": "brent"}).json()["timezone"] == "Europe/London"
