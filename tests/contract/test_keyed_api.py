"""The keyed market-data API over real HTTP, on both runtimes (SPEC 4-6)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import httpx
import pytest
from openapi_spec_validator import validate

from tests.conftest import RUNTIMES, ServerProcess, run_cli

WEDNESDAY = "2026-11-18T10:30:00+08:00"
SATURDAY = "2026-11-21T12:00:00+08:00"
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?\+08:00$")
QUOTE_FIELDS = {"id", "kind", "name", "price", "priceText", "change", "changePct", "source", "unit",
                "currency", "updated", "venue", "tradingDay"}


@pytest.fixture(scope="module", params=RUNTIMES)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The module's servers run on a fixed weekday clock: no test takes a branch on today's date."""
    srv = ServerProcess(tmp_path_factory.mktemp(f"keyed-{request.param}") / "data", request.param,
                        "--public-rate", "100000", "--clock-start", WEDNESDAY)
    yield srv
    assert srv.stop() == 0, srv.output()


def _problem(resp: httpx.Response, status: int, code: str) -> dict:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == "application/problem+json"
    body = resp.json()
    assert body["status"] == status and body["code"] == code
    assert {"type", "title", "detail"} <= body.keys()
    return body


def test_quotes_envelope_in_catalogue_order(http: httpx.Client, pro_key: str) -> None:
    resp = http.get("/api/v1/quotes", headers={"X-SERVICE-Key": pro_key})
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "application/json"
    body = resp.json()
    assert body["demo"] is True and ISO.match(body["updated"])
    assert body["count"] == len(body["quotes"]) >= 40
    assert {q["kind"] for q in body["quotes"]} == {"oil", "chem", "fx"}
    for q in body["quotes"]:
        assert q.keys() >= QUOTE_FIELDS
        assert set(q["name"]) == {"zh", "en"}
        assert q["price"] > 0
        assert float(q["priceText"].split(" ")[0].replace(",", "")) == pytest.approx(q["price"])
    ids = [q["id"] for q in body["quotes"]]
    assert len(set(ids)) == len(ids)
    assert "brent" in ids and "usdcny" in ids


def test_kind_and_ids_filters_intersect(http: httpx.Client, pro_key: str) -> None:
    h = {"X-SERVICE-Key": pro_key}
    oil = http.get("/api/v1/quotes", params={"kind": "oil"}, headers=h).json()
    assert oil["count"] > 5 and {q["kind"] for q in oil["quotes"]} == {"oil"}
    both = http.get("/api/v1/quotes", params={"kind": "oil", "ids": "usdcny,wti,brent"}, headers=h).json()
    assert [q["id"] for q in both["quotes"]] == ["brent", "wti"]  # catalogue order, fx dropped
    assert both["count"] == 2


@pytest.mark.parametrize(
    ("params", "field"),
    [({"kind": "metals"}, "kind"), ({"ids": "brent,nope,zzz"}, "ids"), ({"ids": ""}, "ids"),
     ({"ids": ",".join(["brent"] * 101)}, "ids")],
)
def test_bad_filters_are_400(http: httpx.Client, pro_key: str, params: dict, field: str) -> None:
    body = _problem(http.get("/api/v1/quotes", params=params, headers={"X-SERVICE-Key": pro_key}),
                    400, "invalid_parameter")
    assert body["errors"][0]["field"] == field
    if params.get("ids") == "brent,nope,zzz":
        assert "nope" in body["detail"] and "zzz" in body["detail"] and "brent" not in body["detail"]


def test_single_quote_extended(http: httpx.Client, pro_key: str) -> None:
    """On a Wednesday morning (the module's servers run on a fixed clock): the day's candle has begun."""
    q = http.get("/api/v1/quotes/brent", headers={"X-SERVICE-Key": pro_key}).json()
    assert q["id"] == "brent" and q["extended"] is True
    assert {"open", "high", "low", "prevClose", "volume", "seq"} <= q.keys()
    assert q["low"] <= q["price"] <= q["high"]
    # brent is a futures product (SPEC 19): its change is against the previous settlement, not the close
    assert isinstance(q["prevSettle"], float) and q["bid"] <= q["ask"] and q["limitUp"] is None  # ICE: no limits
    assert q["change"] == pytest.approx(q["price"] - q["prevSettle"], abs=0.011)
    assert q["changePct"] == pytest.approx(100 * q["change"] / q["prevSettle"], abs=0.011)
    _problem(http.get("/api/v1/quotes/gold", headers={"X-SERVICE-Key": pro_key}), 404, "not_found")


def test_on_a_weekend_the_live_trading_day_has_not_begun(tmp_path: Path) -> None:
    """SPEC 16: on Saturday the live trading day is Monday's, whose candle has no tick yet."""
    # the demo moves only in session (every test server's demo otherwise ticks at any hour: a Saturday tick would
    # open Monday's candle before the request)
    srv = ServerProcess(tmp_path / "data", "granian", "--clock-start", SATURDAY, "--demo-hours", "sessions")
    try:
        q = httpx.get(srv.base + "/api/v1/quotes/brent", headers={"X-SERVICE-Key": srv.demo_key}).json()
        assert q["open"] is q["low"] is q["high"] is None and q["volume"] == 0
        assert q["prevClose"] == q["price"]  # no tick since Friday's close
        # a futures product's change is against Friday's settlement (SPEC 19), which is not its last price
        assert q["change"] == pytest.approx(q["price"] - q["prevSettle"], abs=0.011)
    finally:
        assert srv.stop() == 0, srv.output()


def test_kline_series(http: httpx.Client, pro_key: str) -> None:
    h = {"X-SERVICE-Key": pro_key}
    body = http.get("/api/v1/kline/methanol", headers=h).json()
    assert body["id"] == "methanol" and body["demo"] is True
    series = body["series"]
    assert len(series) == 90
    days = [date.fromisoformat(c["t"]) for c in series]
    assert days == sorted(days) and len(set(days)) == 90
    assert all(d.weekday() < 5 for d in days)
    for c in series:
        assert c["l"] <= min(c["o"], c["c"]) and c["h"] >= max(c["o"], c["c"])
    quote = http.get("/api/v1/quotes/methanol", headers=h).json()
    assert series[-1]["c"] == pytest.approx(quote["price"], rel=0.02)  # last is the live candle
    ten = http.get("/api/v1/kline/methanol", params={"days": "10"}, headers=h).json()["series"]
    assert [c["t"] for c in ten] == [c["t"] for c in series[-10:]]
    assert len(http.get("/api/v1/kline/methanol", params={"days": "1"}, headers=h).json()["series"]) == 1


@pytest.mark.parametrize("days", ["0", "91", "-1", "abc", "10.5", "", "1e1", " 5"])
def test_kline_bad_days(http: httpx.Client, pro_key: str, days: str) -> None:
    resp = http.get("/api/v1/kline/brent", params={"days": days}, headers={"X-SERVICE-Key": pro_key})
    assert _problem(resp, 400, "invalid_parameter")["errors"][0]["field"] == "days"


def test_kline_unknown_instrument(http: httpx.Client, pro_key: str) -> None:
    _problem(http.get("/api/v1/kline/gold", headers={"X-SERVICE-Key": pro_key}), 404, "not_found")


def test_spreads_formula(http: httpx.Client, pro_key: str) -> None:
    body = http.get("/api/v1/spreads", headers={"X-SERVICE-Key": pro_key}).json()
    assert [s["pair"] for s in body["spreads"]] == ["methanol", "PTA", "PP", "PE", "PVC"]
    for s in body["spreads"]:
        intl = s["cfrUsd"] * s["fx"] * (1 + s["tariff"]) * (1 + s["vat"]) + s["portFee"]
        assert s["vat"] == 0.13
        assert s["intl"] == pytest.approx(intl, abs=0.02)
        assert s["basis"] == pytest.approx((s["shfe"] + s["dce"]) / 2 - s["intl"], abs=0.02)
        assert s["basisPct"] == pytest.approx(100 * s["basis"] / s["intl"], abs=0.01)
        assert s["note"]


def test_inventory(http: httpx.Client, pro_key: str) -> None:
    body = http.get("/api/v1/inventory", headers={"X-SERVICE-Key": pro_key}).json()
    assert body["demo"] is True and len(body["items"]) >= 5
    for item in body["items"]:
        assert item["type"] in {"port", "social", "factory"}
        last_week = item["level"] - item["wow"]
        assert item["wowPct"] == pytest.approx(100 * item["wow"] / last_week, abs=0.01)


@pytest.mark.parametrize("path", ["/api/v1/quotes", "/api/v1/quotes/brent", "/api/v1/kline/brent",
                                  "/api/v1/spreads", "/api/v1/inventory"])
def test_every_keyed_endpoint_needs_a_key(http: httpx.Client, path: str) -> None:
    missing = _problem(http.get(path), 401, "unauthorized")
    assert "X-SERVICE-Key" in missing["detail"]
    _problem(http.get(path, headers={"X-SERVICE-Key": "mk_not_a_real_key"}), 401, "unauthorized")


def test_common_headers(http: httpx.Client, pro_key: str) -> None:
    resp = http.get("/api/v1/spreads", headers={"X-SERVICE-Key": pro_key, "X-Request-ID": "abc-123"})
    assert resp.headers["x-request-id"] == "abc-123"
    assert resp.headers["access-control-allow-origin"] == "*"
    assert "X-RateLimit-Remaining" in resp.headers["access-control-expose-headers"]
    assert resp.headers["x-ratelimit-limit"] == "600"
    assert resp.headers["ratelimit-policy"] == '"professional";q=600;w=60'
    generated = http.get("/healthz").headers["x-request-id"]
    assert generated and generated != http.get("/healthz").headers["x-request-id"]
    err = http.get("/api/v1/quotes/zzz", headers={"X-SERVICE-Key": pro_key})
    assert err.headers["access-control-allow-origin"] == "*" and "x-ratelimit-remaining" in err.headers


def test_ops_endpoints(http: httpx.Client) -> None:
    assert http.get("/healthz").json() == {"status": "ok"}
    assert http.get("/readyz").json()["status"] == "ready"
    metrics = http.get("/metrics")
    assert metrics.headers["content-type"].startswith("text/plain")
    assert 'market_http_requests_total{route="healthz",status="200"}' in metrics.text
    spec = http.get("/openapi.json").json()
    assert spec["openapi"].startswith("3.1")
    validate(spec)  # a valid OpenAPI 3.1 document
    quotes = spec["paths"]["/api/v1/quotes"]["get"]
    assert {"401", "429", "400"} <= quotes["responses"].keys()
    assert "X-RateLimit-Remaining" in quotes["responses"]["200"]["headers"]
    assert {"/api/v1/quotes", "/api/v1/kline/{id}", "/api/v1/spreads"} <= spec["paths"].keys()
    docs = http.get("/docs")
    assert docs.status_code == 200 and "text/html" in docs.headers["content-type"]
    assert http.get("/static/vendor/swagger-ui-bundle.js").status_code == 200


def test_free_key_61st_request_is_429(server: ServerProcess) -> None:
    """61 requests in flight at once: exactly 60 succeed and one is refused when the burst fits in the
    1 s refill slot; on a machine so loaded that it does not, one more per whole second may pass."""
    import asyncio
    import time

    _, key = server.create_key("free")

    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=server.base, timeout=10.0) as client:
            return list(await asyncio.gather(
                *(client.get("/api/v1/quotes/brent", headers={"X-SERVICE-Key": key}) for _ in range(61))))

    started = time.monotonic()
    responses = asyncio.run(burst())
    elapsed = time.monotonic() - started  # bounds the server's span from the first answer to the last
    admitted = sorted(int(r.headers["x-ratelimit-remaining"]) for r in responses if r.status_code == 200)
    refused = [r for r in responses if r.status_code == 429]
    assert len(admitted) + len(refused) == 61
    assert 60 <= len(admitted) <= 60 + int(elapsed), (len(admitted), elapsed)
    if elapsed < 1.0:
        assert admitted == list(range(60))  # 59, 58, ... 0: one per request
    for _ in range(60):  # refills let every request of the burst through: the next ones find the bucket dry
        if refused:
            break
        resp = httpx.get(server.base + "/api/v1/quotes/brent", headers={"X-SERVICE-Key": key})
        if resp.status_code == 429:
            refused.append(resp)
    assert refused, "a 60/min bucket kept admitting"
    body = _problem(refused[0], 429, "rate_limited")
    assert int(refused[0].headers["retry-after"]) >= 1
    assert body["retryAfter"] == int(refused[0].headers["retry-after"])
    assert refused[0].headers["x-ratelimit-limit"] == "60"
    assert refused[0].headers["x-ratelimit-remaining"] == "0"


def test_enterprise_rate_from_cli(server: ServerProcess, http: httpx.Client) -> None:
    _, key = server.create_key("enterprise", "--rate", "1234")
    resp = http.get("/api/v1/spreads", headers={"X-SERVICE-Key": key})
    assert resp.headers["x-ratelimit-limit"] == "1234"


def test_key_created_and_revoked_while_running(server: ServerProcess, http: httpx.Client) -> None:
    key_id, key = server.create_key("professional", "--label", "ci")
    assert http.get("/api/v1/inventory", headers={"X-SERVICE-Key": key}).status_code == 200  # works at once
    listed = run_cli(server.data_dir, "keys", "list", "--json")
    assert key_id in listed.stdout and key not in listed.stdout
    assert run_cli(server.data_dir, "keys", "revoke", key_id).returncode == 0
    import time

    deadline = time.monotonic() + 5.0
    status = 200
    while time.monotonic() < deadline and status == 200:
        time.sleep(0.05)  # the server re-reads keys every second; nothing to await from here
        status = http.get("/api/v1/inventory", headers={"X-SERVICE-Key": key}).status_code
    assert status == 401
    assert run_cli(server.data_dir, "keys", "revoke", key_id).returncode == 1  # already revoked


def test_keys_are_stored_hashed(server: ServerProcess) -> None:
    import sqlite3

    _, key = server.create_key("free")
    conn = sqlite3.connect(server.data_dir / "market.sqlite3")
    dump = "\n".join(conn.iterdump())
    assert key not in dump
    assert key not in server.output()
