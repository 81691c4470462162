"""The public bucket at its default of 60/min per client IP, X-Forwarded-For trust, and the market refresh.

Each test starts its own server: the shared fixture runs with a huge public rate.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import RUNTIMES, ServerProcess

PUBLIC_PATHS = ("/api/market", "/api/news?limit=1", "/api/research?limit=1", "/api/market/fx",
                "/api/receipt/WR-NB-000101", "/api/verify-anchor?hash=bad")


def _exhaust(c: httpx.Client, headers: dict[str, str] | None = None) -> tuple[httpx.Response, float]:
    """Spend a fresh 60/min bucket across all public endpoints; the first refusal and when it was sent.

    GCRA refills one request per second, so exactly 60 are admitted when this takes
    under a second, and at most one more per second elapsed on a slow machine.
    """
    started = time.monotonic()
    admitted = 0
    for i in range(200):
        sent = time.monotonic()
        resp = c.get(PUBLIC_PATHS[i % len(PUBLIC_PATHS)], headers=headers)
        assert resp.headers["x-ratelimit-limit"] == "60"
        if resp.status_code == 429:
            break
        admitted += 1
    elapsed = time.monotonic() - started
    assert 60 <= admitted <= 60 + int(elapsed), (admitted, elapsed)
    if elapsed < 1.0:
        assert admitted == 60  # the 61st request was the first refused
    _refused(resp)
    return resp, sent


def _same_bucket(resp: httpx.Response, dry_since: float) -> None:
    """A request to the bucket that ran dry at `dry_since`: refused, or admitted on a token refilled since.

    The bucket refills one request per second, and the next refill can be a millisecond after the refusal,
    so "still refused" would race the clock. Whole seconds since then bound the tokens it can have found:
    remaining 0 within the first second, never the 59 of a bucket of its own."""
    if resp.status_code == 429:
        _refused(resp)
        return
    refilled = int(time.monotonic() - dry_since)
    assert resp.headers["x-ratelimit-limit"] == "60"
    assert int(resp.headers["x-ratelimit-remaining"]) <= refilled, (resp.headers, refilled)


def _refused(resp: httpx.Response) -> None:
    assert resp.status_code == 429, resp.text
    assert resp.headers["content-type"] == "application/problem+json"
    assert int(resp.headers["retry-after"]) >= 1 and resp.json()["retryAfter"] >= 1
    assert resp.json()["code"] == "rate_limited" and resp.headers["access-control-allow-origin"] == "*"
    assert resp.headers["x-ratelimit-remaining"] == "0"


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_61st_public_request_is_429_and_forwarded_for_is_ignored_from_untrusted_peers(
    runtime: str, tmp_path: Path
) -> None:
    srv = ServerProcess(tmp_path / "data", runtime)
    try:
        with srv.client() as c:
            _, dry_since = _exhaust(c, {"X-Forwarded-For": "203.0.113.1"})
            _same_bucket(c.get("/api/news"), dry_since)
            _same_bucket(c.post("/api/cooperation", json={}), dry_since)  # every public endpoint shares the bucket
            _same_bucket(c.get("/api/market", headers={"X-Forwarded-For": "203.0.113.99"}), dry_since)  # spoofing
            assert c.get("/healthz").status_code == 200  # open endpoints are not limited
    finally:
        assert srv.stop() == 0


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_forwarded_for_is_honoured_from_a_trusted_proxy_and_market_refreshes(runtime: str, tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path / "data", runtime, "--trusted-proxies", "127.0.0.1", "--market-refresh-s", "1")
    try:
        with srv.client() as c:
            a = {"X-Forwarded-For": "203.0.113.7"}
            _, dry_since = _exhaust(c, a)
            _same_bucket(c.get("/api/news", headers=a), dry_since)
            _same_bucket(c.get("/api/news", headers={"X-Forwarded-For": "198.51.100.1, 203.0.113.7"}),
                         dry_since)  # the rightmost hop
            other = c.get("/api/news", headers={"X-Forwarded-For": "203.0.113.8"})
            assert other.status_code == 200 and other.headers["x-ratelimit-remaining"] == "59"  # its own bucket
            own = c.get("/api/news")  # the proxy's own address has its own bucket
            assert own.status_code == 200 and own.headers["x-ratelimit-remaining"] == "59"
            _market_refreshes(c, {"X-Forwarded-For": "203.0.113.9"})
    finally:
        assert srv.stop() == 0


def _market_refreshes(c: httpx.Client, headers: dict[str, str]) -> None:
    first = c.get("/api/market", headers=headers)
    assert first.json()["refreshSeconds"] == 1
    assert re.fullmatch(r"public, max-age=[01]", first.headers["cache-control"])
    deadline = time.monotonic() + 5.0
    resp = first
    while resp.headers["etag"] == first.headers["etag"] and time.monotonic() < deadline:
        time.sleep(0.2)  # waiting for the server's own refresh timer
        resp = c.get("/api/market", headers=headers)
    assert resp.headers["etag"] != first.headers["etag"], "snapshot not rebuilt within 5 s"
    assert resp.json()["updated"] > first.json()["updated"]
    assert c.get("/api/market", headers=headers | {"If-None-Match": first.headers["etag"]}).status_code == 200
