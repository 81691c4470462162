"""Intraday candles over real HTTP on both runtimes (SPEC 6): intervals, limit, bad and unknown parameters,
bucket timestamps, absent buckets, and today's 1d candle as the aggregate of today's intraday buckets.

Two servers per runtime on a fake clock (hidden --clock-start), so the test holds on any calendar day: the demo
feed on a Wednesday, and a jsonl feed on a Saturday (its ticks count for Monday's daily candle).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

import httpx
import pytest

from server.market.timefmt import TZ
from tests.conftest import RUNTIMES, ServerProcess

WEDNESDAY = "2026-11-18T10:30:00+08:00"
SATURDAY = "2026-11-21T12:00:00+08:00"
INTRADAY = {"1m": 60, "5m": 300, "15m": 900, "1h": 3600}
BUCKET_T = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:00\.000\+08:00$")
ENDPOINTS = ["/api/v1/quotes", "/api/v1/quotes/brent", "/api/v1/kline/brent", "/api/v1/spreads", "/api/v1/inventory"]


def _problem(resp: httpx.Response, code: str, field: str) -> str:
    assert resp.status_code == 400, resp.text
    assert resp.headers["content-type"] == "application/problem+json"
    body = resp.json()
    assert body["code"] == code and body["status"] == 400 and "/problems/" in body["type"]
    assert [e["field"] for e in body["errors"]] == [field]
    assert field in body["detail"]
    return str(body["detail"])


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


@pytest.fixture(scope="module", params=RUNTIMES)
def demo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    data = tmp_path_factory.mktemp(f"intraday-{request.param}") / "data"
    srv = ServerProcess(data, request.param, "--clock-start", WEDNESDAY)
    with srv.client(headers={"X-SERVICE-Key": srv.demo_key}) as client:
        yield client
    assert srv.stop() == 0, srv.output()


def _kline(http: httpx.Client, **params: str | int) -> dict:
    resp = http.get("/api/v1/kline/brent", params=params)
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def _today_consistent(http: httpx.Client, inst: str) -> tuple[dict, dict[str, list[dict]]]:
    """The live daily candle and every interval's buckets, read at one data version (same `updated`)."""
    for _ in range(50):
        daily = http.get(f"/api/v1/kline/{inst}", params={"days": 1}).json()
        buckets = {i: http.get(f"/api/v1/kline/{inst}", params={"interval": i, "limit": 1000}).json()
                   for i in INTRADAY}
        if all(b["updated"] == daily["updated"] for b in buckets.values()):
            return daily["series"][-1], {i: b["series"] for i, b in buckets.items()}
    raise AssertionError("no consistent read in 50 attempts")  # ticks every 250 ms: each try takes a few ms


def _aggregate(buckets: list[dict]) -> dict:
    return {"o": buckets[0]["o"], "h": max(b["h"] for b in buckets), "l": min(b["l"] for b in buckets),
            "c": buckets[-1]["c"], "v": sum(b["v"] for b in buckets)}


def _sessions(http: httpx.Client, inst: str, day: str) -> tuple[float, float]:
    """(first window start of trading day ``day``, last window end of the trading day before it) of the
    instrument's venue, from its calendar: where ``day``'s buckets begin and the previous day's end."""
    venue = http.get(f"/api/v1/instruments/{inst}").json()["venue"]
    start = (datetime.fromisoformat(day) - timedelta(days=7)).date().isoformat()
    days = http.get(f"/api/v1/venues/{venue}/calendar", params={"from": start, "to": day}).json()["days"]
    assert days[-1]["date"] == day
    return _ts(days[-1]["sessions"][0]["start"]), _ts(days[-2]["sessions"][-1]["end"])


@pytest.mark.parametrize("interval", list(INTRADAY))
def test_every_interval_serves_recent_buckets_with_offset_timestamps(demo: httpx.Client, interval: str) -> None:
    body = _kline(demo, interval=interval)
    assert body["id"] == "brent" and body["interval"] == interval and body["demo"] is True
    series = body["series"]
    assert len(series) == 300  # the default limit; the demo seeded 1,000
    starts = [_ts(c["t"]) for c in series]
    assert all(BUCKET_T.match(c["t"]) for c in series)
    assert all(s % INTRADAY[interval] == 0 for s in starts) and starts == sorted(set(starts))
    assert starts[-1] <= _ts(body["updated"]) < starts[-1] + INTRADAY[interval]  # the last bucket holds now
    for c in series:
        assert c["l"] <= min(c["o"], c["c"]) <= max(c["o"], c["c"]) <= c["h"] and c["v"] >= 0
    assert len(_kline(demo, interval=interval, limit=1000)["series"]) == 1000
    one = _kline(demo, interval=interval, limit=1)["series"]
    assert len(one) == 1 and one[0]["t"] == _kline(demo, interval=interval, limit=2)["series"][-1]["t"]


def test_daily_interval_is_the_default_and_keeps_days(demo: httpx.Client) -> None:
    default, explicit = _kline(demo, days=5), _kline(demo, interval="1d", days=5)
    assert default["interval"] == explicit["interval"] == "1d"
    assert [c["t"] for c in default["series"]] == [c["t"] for c in explicit["series"]]
    assert default["series"][-1]["t"] == "2026-11-18" and len(_kline(demo)["series"]) == 90


@pytest.mark.parametrize(("params", "field"), [
    ({"interval": "2m"}, "interval"), ({"interval": ""}, "interval"), ({"interval": "1H"}, "interval"),
    ({"interval": "1d "}, "interval"),
    ({"interval": "5m", "limit": "0"}, "limit"), ({"interval": "5m", "limit": "1001"}, "limit"),
    ({"interval": "5m", "limit": "-1"}, "limit"), ({"interval": "5m", "limit": "1.5"}, "limit"),
    ({"interval": "5m", "limit": ""}, "limit"), ({"interval": "1h", "limit": "ten"}, "limit"),
    ({"interval": "1m", "days": "0"}, "days"), ({"interval": "1d", "limit": "1001"}, "limit"),
])
def test_bad_interval_and_limit_are_400_naming_the_parameter(demo: httpx.Client, params: dict, field: str) -> None:
    _problem(demo.get("/api/v1/kline/brent", params=params), "invalid_parameter", field)


@pytest.mark.parametrize("path", ENDPOINTS)
def test_unknown_parameter_on_every_v1_endpoint(demo: httpx.Client, path: str) -> None:
    detail = _problem(demo.get(path, params={"bogus": "1"}), "unknown_parameter", "bogus")
    assert "'bogus'" in detail
    _problem(demo.get(path, params={"Interval": "1h"}), "unknown_parameter", "Interval")  # names are exact
    body = demo.get(path, params={"x": "", "y": "2"}).json()
    assert body["code"] == "unknown_parameter" and [e["field"] for e in body["errors"]] == ["x", "y"]


def test_unknown_parameter_is_documented(demo: httpx.Client) -> None:
    doc = demo.get("/openapi.json").json()
    kline = doc["paths"]["/api/v1/kline/{id}"]["get"]
    params = {p["name"]: p for p in kline["parameters"] if p["in"] == "query"}
    assert params["interval"]["schema"]["enum"] == ["1m", "5m", "15m", "1h", "1d"]
    limit = params["limit"]
    assert (limit["schema"]["minimum"], limit["schema"]["maximum"]) == (1, 1000) and "300" in limit["description"]
    for path in ENDPOINTS:
        path = path.replace("brent", "{id}")
        assert "unknown_parameter" in doc["paths"][path]["get"]["responses"]["400"]["description"], path


def test_todays_daily_candle_is_the_aggregate_of_todays_buckets_on_a_weekday(demo: httpx.Client) -> None:
    for inst in ("brent", "methanol", "usdcny"):
        live, buckets = _today_consistent(demo, inst)
        assert live["t"] == "2026-11-18"
        start, previous_end = _sessions(demo, inst, live["t"])  # the venue's windows (SPEC 16)
        for interval, series in buckets.items():
            sec = INTRADAY[interval]
            today = [b for b in series if _ts(b["t"]) >= start // sec * sec]
            assert _aggregate(today) == {k: live[k] for k in "ohlcv"}, (inst, interval)
            earlier = [b for b in series if _ts(b["t"]) < start // sec * sec]
            assert earlier and _ts(earlier[-1]["t"]) == (previous_end - 1) // sec * sec  # yesterday's last bucket


# --- a jsonl feed on a Saturday: exact buckets, gaps, weekend ticks count for Monday ---------------------------

def _at(day: int, hh: int, mm: int, ss: int = 0) -> float:
    return datetime(2026, 11, day, hh, mm, ss, tzinfo=TZ).timestamp()


TICKS = [  # (id, price, ts, volume); the clock reads Saturday 2026-11-21 12:00 (+08:00)
    # Friday's closing tick (15:00:00 on ZCE), read after Monday's candle went live: counts for Monday (SPEC 16)
    ("methanol", 2400.0, _at(20, 15, 0), 3),
    ("brent", 80.0, _at(21, 9, 0, 10), 10),
    ("brent", 81.5, _at(21, 9, 0, 40), 5),
    ("brent", 79.0, _at(21, 9, 3, 5), 2),
    ("methanol", 2410.0, _at(21, 10, 0), 4),
    ("brent", 80.2, _at(21, 11, 59, 30), 1),
]


@pytest.fixture(scope="module", params=RUNTIMES)
def saturday(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    root = tmp_path_factory.mktemp(f"intraday-jsonl-{request.param}")
    feed = root / "ticks.jsonl"
    feed.write_text("".join(json.dumps({"id": i, "price": p, "ts": ts, "volume": v}) + "\n" for i, p, ts, v in TICKS))
    srv = ServerProcess(root / "data", request.param, "--feed", f"jsonl:{feed}", "--clock-start", SATURDAY)
    with srv.client(headers={"X-SERVICE-Key": srv.demo_key}) as client:
        deadline = time.monotonic() + 10
        while client.get("/api/v1/quotes/brent").json()["seq"] < 4:  # the server reads the file on its own
            assert time.monotonic() < deadline, "the feed's lines were not applied"
            time.sleep(0.05)
        yield client
    assert srv.stop() == 0, srv.output()


def _series(http: httpx.Client, inst: str, **params: str | int) -> list[dict]:
    resp = http.get(f"/api/v1/kline/{inst}", params=params)
    assert resp.status_code == 200, resp.text
    return list(resp.json()["series"])


def _t(ts: float) -> str:
    return datetime.fromtimestamp(ts, TZ).isoformat(timespec="milliseconds")


def _c(ts: float, o: float, h: float, low: float, c: float, v: int) -> dict:
    return {"t": _t(ts), "o": o, "h": h, "l": low, "c": c, "v": v}


def test_jsonl_buckets_are_exact_and_absent_without_ticks(saturday: httpx.Client) -> None:
    assert _series(saturday, "brent", interval="1m") == [
        _c(_at(21, 9, 0), 80.0, 81.5, 80.0, 81.5, 15),  # 09:01, 09:02 and 09:04..11:58 had no tick: absent
        _c(_at(21, 9, 3), 79.0, 79.0, 79.0, 79.0, 2),
        _c(_at(21, 11, 59), 80.2, 80.2, 80.2, 80.2, 1),
    ]
    assert _series(saturday, "brent", interval="5m") == [_c(_at(21, 9, 0), 80.0, 81.5, 79.0, 79.0, 17),
                                                         _c(_at(21, 11, 55), 80.2, 80.2, 80.2, 80.2, 1)]
    assert _series(saturday, "brent", interval="15m")[-1] == _c(_at(21, 11, 45), 80.2, 80.2, 80.2, 80.2, 1)
    assert _series(saturday, "brent", interval="1h") == [_c(_at(21, 9, 0), 80.0, 81.5, 79.0, 79.0, 17),
                                                         _c(_at(21, 11, 0), 80.2, 80.2, 80.2, 80.2, 1)]
    assert _series(saturday, "brent", interval="1m", limit=2) == _series(saturday, "brent", interval="1m")[-2:]
    assert _series(saturday, "wti", interval="15m") == [] == _series(saturday, "wti")  # no tick: nothing invented


# where Monday 2026-11-23's ticks begin: the venue's previous close (ZCE 15:00 Friday; ICE Futures Europe
# 23:00 London on Friday, 07:00 Saturday in Shanghai)
MONDAY_SESSION = {"methanol": _at(20, 15, 0), "brent": _at(21, 7, 0)}


def test_saturday_ticks_aggregate_into_mondays_daily_candle(saturday: httpx.Client) -> None:
    for inst in ("brent", "methanol"):
        live = _series(saturday, inst, days=1)[0]
        assert live["t"] == "2026-11-23"  # Saturday's ticks count for Monday
        for interval in INTRADAY:
            today = [b for b in _series(saturday, inst, interval=interval, limit=1000)
                     if _ts(b["t"]) >= MONDAY_SESSION[inst]]
            assert _aggregate(today) == {k: live[k] for k in "ohlcv"}, (inst, interval)
    # a futures product's candle carries open interest and settlement (SPEC 19): none known from these lines yet
    assert live == {"t": "2026-11-23", "o": 2400.0, "h": 2410.0, "l": 2400.0, "c": 2410.0, "v": 7, "oi": None,
                    "s": None}
    # the Friday closing tick arrived when Monday's candle was live: it counts toward Monday's session, whose
    # first bucket starts at Friday's close (a bucket never starts before the live trading day's session)
    assert [b["t"] for b in _series(saturday, "methanol", interval="1h")] == [_t(_at(20, 15, 0)), _t(_at(21, 10, 0))]


def test_each_interval_and_limit_has_its_own_cached_body(saturday: httpx.Client) -> None:
    # the cache key holds interval and limit: each combination answers its own body
    bodies = {(i, n): saturday.get("/api/v1/kline/brent", params={"interval": i, "limit": n}).content
              for i in ("1m", "5m") for n in (1, 2)}
    assert len(set(bodies.values())) == 4
    assert bodies[("1m", 1)] == saturday.get("/api/v1/kline/brent", params={"interval": "1m", "limit": 1}).content


def test_days_and_limit_apply_to_every_interval_together_too(saturday: httpx.Client) -> None:
    """The OpenAPI document allows days and limit with every interval, so the server answers every combination
    (issue 21: it answered 400 to days with an intraday interval and to limit with 1d, which the schema allows)."""
    daily = _series(saturday, "methanol", days=90)
    assert _series(saturday, "methanol", interval="1d", limit=10) == daily[-10:] == _series(saturday, "methanol",
                                                                                            days=10)
    assert _series(saturday, "methanol", days=5, limit=3) == daily[-3:] == _series(saturday, "methanol", days=3,
                                                                                   limit=5)
    for interval in INTRADAY:
        held = _series(saturday, "methanol", interval=interval, limit=1000)
        today = [b for b in held if _ts(b["t"]) >= MONDAY_SESSION["methanol"]]  # Monday's session: Friday 15:00
        assert today and _series(saturday, "methanol", interval=interval, days=1) == today, interval
        assert _series(saturday, "methanol", interval=interval, days=1, limit=1) == today[-1:]
        assert _series(saturday, "methanol", interval=interval, days=90) == held[-300:]  # the default limit

