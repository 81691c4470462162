"""/metrics of a real server, read with prometheus_client's parser: exact counts per route and status."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import ServerProcess


def _samples(http: httpx.Client) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    resp = http.get("/metrics")
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(resp.text)
        for s in family.samples
    }


def test_metrics_count_requests_exactly(server: ServerProcess, http: httpx.Client) -> None:
    healthz_200 = ("market_http_requests_total", frozenset({("route", "healthz"), ("status", "200")}))
    quotes_401 = ("market_http_requests_total", frozenset({("route", "quotes"), ("status", "401")}))
    healthz_count = ("market_http_request_seconds_count", frozenset({("route", "healthz")}))
    before = _samples(http)
    for _ in range(7):
        assert http.get("/healthz").status_code == 200
    for _ in range(3):
        assert http.get("/api/v1/quotes", headers={"X-SERVICE-Key": "mk_not-a-key"}).status_code == 401
    after = _samples(http)
    assert after[healthz_200] - before.get(healthz_200, 0) == 7
    assert after[healthz_count] - before.get(healthz_count, 0) == 7
    assert after[quotes_401] - before.get(quotes_401, 0) == 3
    inf_bucket = ("market_http_request_seconds_bucket", frozenset({("route", "healthz"), ("le", "+Inf")}))
    assert after[inf_bucket] == after[healthz_count]
    assert ("market_ws_connections", frozenset()) in after
