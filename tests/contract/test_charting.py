"""Range queries on /api/v1/kline and the TradingView UDF datafeed (SPEC 14), over real HTTP on both runtimes and
both engines.

A jsonl feed replays 2,400 seeded ticks of three instruments (one Saturday morning, so every bucket is in Monday's
session) into servers on a fake clock (hidden --clock-start). The expected candles are an independent aggregation
of those ticks here in the test (bucket = floor(ts / length) * length); every range query, page walk and UDF
history answer is held to it, and to the plain /kline call for the same buckets. A demo-feed server (90 trading
days of history, a tick a minute) covers the daily interval; its checks leave the live candle out where a tick may
land between two calls.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from contextlib import nullcontext
from datetime import UTC, date, datetime, timedelta

import httpx
import pytest

from server.market.catalogue import default_catalogue
from server.market.timefmt import TZ
from tests.conftest import ServerProcess, engine_variants
from tests.redis_service import redis_prefix, require_redis

SATURDAY_NOON = "2026-11-21T12:00:00+08:00"
WEDNESDAY = "2026-11-18T10:30:00+08:00"
INTRADAY = {"1m": 60, "5m": 300, "15m": 900, "1h": 3600}
UDF_RES = {"1m": "1", "5m": "5", "15m": "15", "1h": "60", "1d": "1D"}
DECIMALS = {"brent": 2, "methanol": 0, "usdcny": 4}
N_TICKS = 2400
MONDAY = "2026-11-23"
SERVERS = [("granian", "memory"), ("robyn", "memory"), ("granian", "redis"), ("robyn", "redis")]


def _at(hh: int, mm: int, ss: float = 0.0) -> float:
    return datetime(2026, 11, 21, hh, mm, tzinfo=TZ).timestamp() + ss


def _ticks() -> list[tuple[str, float, float, int]]:
    """(id, price, ts, volume), ascending by ts, between Saturday 08:00 and 11:59 (+08:00): all of them Monday's
    (SPEC 16: ICE's Friday closes at 07:00 Saturday in Shanghai time, CFETS's at 03:00, ZCE's at 15:00 Friday)."""
    rng = random.Random(20)
    stamps = sorted(rng.uniform(_at(8, 0), _at(11, 59, 59)) for _ in range(N_TICKS))
    prices = {"brent": 80.0, "methanol": 2400.0, "usdcny": 7.1}
    out = []
    for ts in stamps:
        inst = rng.choice(list(DECIMALS))
        step = 10 ** -DECIMALS[inst]
        prices[inst] = round(max(step, prices[inst] + rng.randint(-20, 20) * step), DECIMALS[inst])
        out.append((inst, prices[inst], round(ts, 3), rng.randint(1, 50)))
    return out


TICKS = _ticks()


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, TZ).isoformat(timespec="milliseconds")


def aggregate(inst: str, seconds: int) -> list[dict]:
    """The independent aggregation: one candle per bucket that had a tick, ascending."""
    buckets: dict[int, dict] = {}
    for i, price, ts, vol in TICKS:
        if i != inst:
            continue
        start = int(ts // seconds) * seconds
        b = buckets.get(start)
        if b is None:
            buckets[start] = {"t": _iso(start), "o": price, "h": price, "l": price, "c": price, "v": vol}
        else:
            b["h"], b["l"], b["c"], b["v"] = max(b["h"], price), min(b["l"], price), price, b["v"] + vol
    return [buckets[k] for k in sorted(buckets)]


@pytest.fixture(scope="module", params=engine_variants(SERVERS))
def replay(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    runtime, engine = request.param
    root = tmp_path_factory.mktemp(f"charting-{runtime}-{engine}")
    feed = root / "ticks.jsonl"
    feed.write_text("".join(json.dumps({"id": i, "price": p, "ts": ts, "volume": v}) + "\n" for i, p, ts, v in TICKS))
    flags = ["--feed", f"jsonl:{feed}", "--clock-start", SATURDAY_NOON, "--plan-rate", "professional=100000"]
    with redis_prefix(require_redis()) if engine == "redis" else nullcontext() as prefix:
        if prefix is not None:
            flags += ["--engine", "redis", "--redis-url", require_redis(), "--redis-prefix", prefix]
        else:
            flags += ["--engine", "memory"]
        srv = ServerProcess(root / "data", runtime, *flags)
        counts = {inst: sum(1 for t in TICKS if t[0] == inst) for inst in DECIMALS}
        with srv.client(headers={"X-SERVICE-Key": srv.demo_key}) as client:
            deadline = time.monotonic() + 30
            while any(client.get(f"/api/v1/quotes/{i}").json()["seq"] < n for i, n in counts.items()):
                assert time.monotonic() < deadline, "the feed's lines were not applied"
                time.sleep(0.05)  # the server reads the file on its own: nothing to await
            yield client
        assert srv.stop() == 0, srv.output()


def _get(http: httpx.Client, path: str, **params: str | int) -> dict:
    resp = http.get(path, params=params)
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def _kline(http: httpx.Client, inst: str, **params: str | int) -> dict:
    return _get(http, f"/api/v1/kline/{inst}", **params)


def _problem(resp: httpx.Response, field: str, status: int = 400, code: str = "invalid_parameter") -> dict:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == "application/problem+json"
    body = dict(resp.json())
    assert body["code"] == code and body["status"] == status and body["type"] == f"/problems/{code}"
    if field:
        assert [e["field"] for e in body["errors"]] == [field], body
        assert field in body["detail"], body
    return body


# --- range queries ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("interval", list(INTRADAY))
def test_a_range_is_the_independent_aggregation_of_its_buckets(replay: httpx.Client, interval: str) -> None:
    sec = INTRADAY[interval]
    for inst in DECIMALS:
        expected = aggregate(inst, sec)
        assert len(expected) <= 1000
        plain = _kline(replay, inst, interval=interval, limit=1000)["series"]
        assert plain == expected  # the plain call first: the aggregation is right
        start, end = _at(2, 0), _at(9, 30)  # half-open: [02:00, 09:30)
        want = [c for c in expected if start <= datetime.fromisoformat(c["t"]).timestamp() < end]
        utc = datetime.fromtimestamp(start, UTC).isoformat().replace("+00:00", "Z")
        for lo, hi in ((_iso(start), _iso(end)), (str(int(start * 1000)), str(int(end * 1000))),
                       (utc, str(int(end * 1000)))):
            body = _kline(replay, inst, interval=interval, **{"from": lo, "to": hi, "limit": 1000})
            assert body["series"] == want, (inst, lo, hi)
            assert body["next"] is None and body["interval"] == interval and body["id"] == inst


@pytest.mark.parametrize("interval", list(INTRADAY))
def test_paging_with_next_walks_every_bucket_once(replay: httpx.Client, interval: str) -> None:
    inst = "brent"
    expected = aggregate(inst, INTRADAY[interval])
    pages, cursor = [], "2026-11-21"  # a date: 00:00 Asia/Shanghai
    while cursor is not None:
        body = _kline(replay, inst, interval=interval, **{"from": cursor, "limit": 7})
        assert len(body["series"]) <= 7
        pages.append(body["series"])
        if body["next"] is not None:
            assert len(body["series"]) == 7 and body["next"] > body["series"][-1]["t"]
        cursor = body["next"]
    walked = [c for page in pages for c in page]
    assert walked == expected
    assert len(pages) == -(-len(expected) // 7)


def test_without_from_the_latest_limit_before_to(replay: httpx.Client) -> None:
    expected = aggregate("methanol", 300)
    to = expected[-5]["t"]
    body = _kline(replay, "methanol", interval="5m", to=to, limit=10)
    assert body["series"] == expected[-15:-5] and body["next"] is None
    # only from: up to the live candle; the default limit is 300
    body = _kline(replay, "methanol", interval="5m", **{"from": expected[0]["t"]})
    assert body["series"] == expected[:300]
    assert body["next"] == (expected[300]["t"] if len(expected) > 300 else None)
    # from exactly at a bucket start includes it; one millisecond later excludes it (bucket start >= from)
    t0 = datetime.fromisoformat(expected[3]["t"]).timestamp()
    assert _kline(replay, "methanol", interval="5m", **{"from": str(int(t0 * 1000)), "limit": 1})["series"] == \
        [expected[3]]
    assert _kline(replay, "methanol", interval="5m", **{"from": str(int(t0 * 1000) + 1), "limit": 1})["series"] == \
        [expected[4]]


def test_the_replayed_saturday_is_mondays_trading_day(replay: httpx.Client) -> None:
    """The daily bounds are held on the demo hub's 90 days (test_daily_bounds_are_half_open): one candle here."""
    live = _kline(replay, "brent", days=1)["series"]
    assert [c["t"] for c in live] == [MONDAY]


@pytest.mark.parametrize(("lo", "hi"), [("2020-01-01", "2020-02-01"), ("2027-01-01", None), (None, "2026-11-20")])
def test_a_range_outside_the_held_history_is_an_empty_series(replay: httpx.Client, lo: str | None,
                                                            hi: str | None) -> None:
    params = {k: v for k, v in (("from", lo), ("to", hi)) if v is not None}
    for interval in (*INTRADAY, "1d"):
        body = _kline(replay, "brent", interval=interval, **params)
        assert body["series"] == [] and body["next"] is None


@pytest.mark.parametrize(("params", "field"), [
    ({"days": "5", "from": "2026-11-20"}, "days"),
    ({"days": "5", "to": "2026-11-20"}, "days"),
    ({"from": "2026-11-21", "to": "2026-11-21"}, "to"),  # from >= to
    ({"from": "2026-11-21T10:00:00+08:00", "to": "2026-11-21T09:00:00+08:00"}, "to"),
    ({"from": "1763700000000", "to": "1763600000000"}, "to"),
    ({"from": "yesterday"}, "from"), ({"to": "2026-11-31"}, "to"), ({"from": ""}, "from"),
    ({"from": "2026-11-21T10:00:00"}, "from"),  # no offset
    ({"to": "1.5e12"}, "to"), ({"from": "2026-11-21 10:00"}, "from"),
    ({"interval": "1m", "from": "2026-11-21", "limit": "0"}, "limit"),
    ({"interval": "1m", "from": "2026-11-21", "limit": "1001"}, "limit"),
    ({"interval": "1m", "to": "2026-11-21", "limit": "x"}, "limit"),
    ({"interval": "1m", "to": "2026-11-21", "days": "3"}, "days"),
    ({"interval": "2m", "from": "2026-11-21"}, "interval"),
])
def test_every_bad_combination_is_a_400_naming_the_parameter(replay: httpx.Client, params: dict, field: str) -> None:
    _problem(replay.get("/api/v1/kline/brent", params=params), field)


def test_an_unencoded_plus_offset_is_read_as_meant(replay: httpx.Client) -> None:
    # "+08:00" typed into a URL arrives as " 08:00" (a "+" is a space in a query string)
    raw = replay.get("/api/v1/kline/brent?interval=1h&from=2026-11-21T09:00:00+08:00&limit=1")
    assert raw.status_code == 200, raw.text
    assert raw.json()["series"][0]["t"] == "2026-11-21T09:00:00.000+08:00"


def test_a_range_and_the_plain_call_serve_equal_candles_and_the_range_is_cached(replay: httpx.Client) -> None:
    plain = _kline(replay, "usdcny", interval="15m", limit=1000)["series"]
    ranged = _kline(replay, "usdcny", interval="15m", **{"from": plain[0]["t"], "limit": 1000})
    assert ranged["series"] == plain
    a = replay.get("/api/v1/kline/usdcny", params={"interval": "15m", "from": plain[0]["t"]})
    b = replay.get("/api/v1/kline/usdcny", params={"interval": "15m", "from": plain[0]["t"]})
    assert a.content == b.content and a.headers["etag"] == b.headers["etag"]


def test_openapi_documents_range_queries(replay: httpx.Client) -> None:
    doc = replay.get("/openapi.json").json()
    op = doc["paths"]["/api/v1/kline/{id}"]["get"]
    params = {p["name"]: p for p in op["parameters"]}
    assert "epoch milliseconds" in params["from"]["description"] and "YYYY-MM-DD" in params["from"]["description"]
    assert "half-open" in params["to"]["description"] and "same formats" in params["to"]["description"]
    assert "next" in doc["components"]["schemas"]["CandleSeries"]["properties"]
    described = op["responses"]["400"]["description"]
    assert "from" in described and "days" in described
    for path in ("config", "symbols", "search", "history", "time", "timescale_marks"):
        assert f"/api/v1/udf/{path}" in doc["paths"], path


# --- the UDF datafeed ------------------------------------------------------------------------------------------

def _epoch(t: str) -> int:
    if len(t) == 10:  # a trading day: UDF's daily bar time is its date at 00:00 UTC
        return int(datetime.combine(date.fromisoformat(t), datetime.min.time()).replace(
            tzinfo=TZ).timestamp()) + 8 * 3600
    return int(datetime.fromisoformat(t).timestamp())


def _columns(series: list[dict]) -> dict:
    return {"s": "ok", "t": [_epoch(c["t"]) for c in series], **{k: [c[k] for c in series] for k in "ohlcv"}}


def _udf(http: httpx.Client, path: str, **params: str | int) -> httpx.Response:
    return http.get(f"/api/v1/udf/{path}", params=params)


def _udf_error(resp: httpx.Response, status: int, code: str, field: str = "") -> dict:
    body = _problem(resp, field, status, code)
    assert body["s"] == "error" and body["errmsg"] == body["detail"]
    return body


def test_udf_config_and_time(replay: httpx.Client) -> None:
    config = _udf(replay, "config").json()
    assert config["supported_resolutions"] == ["1", "5", "15", "60", "1D"]
    assert config["supports_search"] is True and config["supports_time"] is True
    assert config["supports_timescale_marks"] is True
    resp = _udf(replay, "time")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/plain")
    assert abs(int(resp.text) - datetime.fromisoformat(SATURDAY_NOON).timestamp()) < 600  # the server's clock


def test_udf_symbols_and_search(replay: httpx.Client) -> None:
    info = _udf(replay, "symbols", symbol="brent").json()
    assert {k: info[k] for k in ("name", "ticker", "type", "session", "timezone", "minmov", "pricescale",
                                 "has_intraday", "supported_resolutions", "volume_precision", "data_status")} == {
        # SPEC 16: ICE Futures Europe's hours in London time (Sunday's session opens at 23:00)
        "name": "brent", "ticker": "brent", "type": "commodity", "session": "0100-2300:3456|2300F-2300:2",
        "timezone": "Europe/London",
        "minmov": 1, "pricescale": 100, "has_intraday": True, "supported_resolutions": ["1", "5", "15", "60", "1D"],
        "volume_precision": 0, "data_status": "streaming"}
    assert "Brent" in info["description"] and info["exchange"] == info["listed_exchange"] == "ICE-EU"
    assert _udf(replay, "symbols", symbol="usdcny").json()["type"] == "forex"
    decimals = {inst.id: inst.decimals for inst in default_catalogue().instruments}
    assert _udf(replay, "symbols", symbol="usdcny").json()["pricescale"] == 10 ** decimals["usdcny"] > 100
    assert _udf(replay, "symbols", symbol=f"{info['exchange']}:brent").json() == info
    found = _udf(replay, "search", query="bren", type="", exchange="", limit=10).json()
    assert [f["symbol"] for f in found] == ["brent"] and found[0]["ticker"] == "brent"
    assert found[0]["type"] == "commodity" and found[0]["description"] == info["description"]
    forex = _udf(replay, "search", query="", type="forex", limit=3).json()
    assert len(forex) == 3 and {f["type"] for f in forex} == {"forex"}
    assert _udf(replay, "search", query="zzzz").json() == []


@pytest.mark.parametrize("interval", list(INTRADAY))
def test_udf_history_is_the_same_candles_as_kline(replay: httpx.Client, interval: str) -> None:
    series = _kline(replay, "brent", interval=interval, limit=1000)["series"]
    assert series == aggregate("brent", INTRADAY[interval])
    first, last = _epoch(series[0]["t"]), _epoch(series[-1]["t"])
    body = _udf(replay, "history", symbol="brent", resolution=UDF_RES[interval], to=last, **{"from": first}).json()
    assert body == _columns(series)  # to counts in
    inner = _udf(replay, "history", symbol="brent", resolution=UDF_RES[interval], to=last - 1,
                 **{"from": first + 1}).json()
    assert inner == _columns(series[1:-1]) if len(series) > 2 else inner["s"] == "no_data"
    back = _udf(replay, "history", symbol="brent", resolution=UDF_RES[interval], to=last, countback=3,
                **{"from": last}).json()
    assert back == _columns(series[-3:])  # countback wins over from


def test_udf_daily_history_and_no_data(replay: httpx.Client) -> None:
    live = _kline(replay, "brent", days=1)["series"]
    t = _epoch(MONDAY)
    assert datetime.fromtimestamp(t, TZ).hour == 8  # 00:00 UTC
    assert _udf(replay, "history", symbol="brent", resolution="1D", to=t, **{"from": t}).json() == _columns(live)
    assert _udf(replay, "history", symbol="brent", resolution="D", to=t, **{"from": t}).json() == _columns(live)
    # a window after every bar: no_data with the newest bar before it
    series = _kline(replay, "brent", interval="1h")["series"]
    later = _epoch(series[-1]["t"]) + 86400
    assert _udf(replay, "history", symbol="brent", resolution="60", to=later + 3600,
                **{"from": later}).json() == {"s": "no_data", "nextTime": _epoch(series[-1]["t"])}
    # before every bar: nothing older
    assert _udf(replay, "history", symbol="brent", resolution="60", to=1000, **{"from": 0}).json() == {
        "s": "no_data"}
    assert _udf(replay, "history", symbol="brent", resolution="60", to=1000, countback=5).json() == {
        "s": "no_data"}


@pytest.mark.parametrize(("params", "status", "code", "field"), [
    ({"resolution": "60", "from": "0", "to": "1"}, 400, "invalid_parameter", "symbol"),
    ({"symbol": "nope", "resolution": "60", "from": "0", "to": "1"}, 400, "invalid_parameter", "symbol"),
    ({"symbol": "brent", "resolution": "2", "from": "0", "to": "1"}, 400, "invalid_parameter", "resolution"),
    ({"symbol": "brent", "from": "0", "to": "1"}, 400, "invalid_parameter", "resolution"),
    ({"symbol": "brent", "resolution": "60", "from": "0"}, 400, "invalid_parameter", "to"),
    ({"symbol": "brent", "resolution": "60", "to": "1", "from": ""}, 400, "invalid_parameter", "from"),
    ({"symbol": "brent", "resolution": "60", "from": "x", "to": "1"}, 400, "invalid_parameter", "from"),
    ({"symbol": "brent", "resolution": "60", "from": "5", "to": "1"}, 400, "invalid_parameter", "to"),
    ({"symbol": "brent", "resolution": "60", "to": "1", "countback": "0"}, 400, "invalid_parameter", "countback"),
    ({"symbol": "brent", "resolution": "60", "to": "1", "countback": "x"}, 400, "invalid_parameter", "countback"),
    ({"symbol": "brent", "resolution": "60", "to": "1", "bogus": "1"}, 400, "unknown_parameter", "bogus"),
])
def test_udf_history_errors_have_both_shapes(replay: httpx.Client, params: dict, status: int, code: str,
                                             field: str) -> None:
    _udf_error(replay.get("/api/v1/udf/history", params=params), status, code, field)


def test_udf_other_errors_have_both_shapes(replay: httpx.Client) -> None:
    _udf_error(_udf(replay, "symbols"), 400, "invalid_parameter", "symbol")
    _udf_error(_udf(replay, "symbols", symbol="nope"), 400, "invalid_parameter", "symbol")
    _udf_error(_udf(replay, "search", type="stock"), 400, "invalid_parameter", "type")
    _udf_error(_udf(replay, "search", limit="0"), 400, "invalid_parameter", "limit")
    _udf_error(_udf(replay, "config", x="1"), 400, "unknown_parameter", "x")
    unkeyed = httpx.get(str(replay.base_url) + "/api/v1/udf/config")
    _udf_error(unkeyed, 401, "unauthorized")
    assert unkeyed.headers["access-control-allow-origin"] == "*"
    _udf_error(_udf(replay, "nothing"), 404, "not_found")
    _udf_error(replay.post("/api/v1/udf/history"), 405, "method_not_allowed")


# --- the daily interval on 90 days of demo history ---------------------------------------------------------------

@pytest.fixture(scope="module", params=["granian", "robyn"])
def demo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    root = tmp_path_factory.mktemp(f"charting-demo-{request.param}")
    srv = ServerProcess(root / "data", request.param, "--clock-start", WEDNESDAY, "--tick-interval-ms", "60000",
                        "--plan-rate", "professional=100000")
    with srv.client(headers={"X-SERVICE-Key": srv.demo_key}) as client:
        yield client
    assert srv.stop() == 0, srv.output()


@pytest.mark.parametrize("k", [30, 60])
def test_daily_bounds_are_half_open(demo: httpx.Client, k: int) -> None:
    """A day is in [from, to) when it starts at or after `from` and before `to`: each bound off by one day fails."""
    full = _kline(demo, "brent")["series"]
    days = [c["t"] for c in full]
    assert _kline(demo, "brent", interval="1d", **{"from": days[k], "to": days[k + 1]})["series"] == [full[k]]
    assert _kline(demo, "brent", interval="1d", to=days[k], limit=3)["series"] == full[k - 3:k]
    assert _kline(demo, "brent", interval="1d", **{"from": days[k], "limit": 3})["series"] == full[k:k + 3]
    assert _kline(demo, "brent", interval="1d", **{"from": days[k - 1], "to": days[k + 2]})["series"] == \
        full[k - 1:k + 2]


def test_daily_ranges_and_pages_over_the_demo_history(demo: httpx.Client) -> None:
    full = _kline(demo, "brent")["series"]
    assert len(full) == 90 and full[-1]["t"] == "2026-11-18"
    days = [c["t"] for c in full]
    body = _kline(demo, "brent", interval="1d", **{"from": days[10], "to": days[20]})
    assert body["series"] == full[10:20] and body["next"] is None
    page = _kline(demo, "brent", **{"from": days[0], "limit": 30})
    assert page["series"] == full[:30] and page["next"] == days[30]
    walked, cursor = [], days[0]
    while cursor is not None:
        page = _kline(demo, "brent", **{"from": cursor, "limit": 40})
        walked += page["series"]
        cursor = page["next"]
    assert walked[:-1] == full[:-1] and walked[-1]["t"] == days[-1]  # the live candle may have ticked meanwhile
    assert _kline(demo, "brent", to=days[-1], limit=5)["series"] == full[-6:-1]
    midday = (datetime.fromisoformat(days[50]).replace(tzinfo=TZ) + timedelta(hours=12)).isoformat()
    assert _kline(demo, "brent", **{"from": midday, "limit": 1})["series"] == [full[51]]  # day start >= from
    udf = _udf(demo, "history", symbol="brent", resolution="1D", to=_epoch(days[-2]),
               **{"from": _epoch(days[0])}).json()
    assert udf == _columns(full[:-1])
    gap = _udf(demo, "history", symbol="brent", resolution="1D", to=_epoch("2026-11-15"),
               **{"from": _epoch("2026-11-14")}).json()  # a weekend: no bar, Friday's before it
    assert gap == {"s": "no_data", "nextTime": _epoch("2026-11-13")}
