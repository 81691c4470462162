"""The remembered-answer path (App.serve_hot, issue 13.0/13.2) answers exactly what the full pipeline answers, on
both runtimes: same status, header names and body; the same rate-limit bucket (a free key's burst is exact across
both paths); every request counted once in the metrics. A quiet jsonl feed keeps the data version still, so the
first request of a path runs the pipeline and the following ones are answered from memory."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import RUNTIMES, ServerProcess

PER_REQUEST = {"date", "x-request-id", "x-ratelimit-remaining", "ratelimit", "x-ratelimit-reset", "content-length"}


@pytest.fixture(scope="module", params=RUNTIMES)
def quiet(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp(f"hot-{request.param}")
    ticks = root / "ticks.jsonl"
    ticks.write_text("")
    srv = ServerProcess(root / "data", request.param, "--feed", f"jsonl:{ticks}")
    yield srv
    assert srv.stop() == 0, srv.output()


def _metric(srv: ServerProcess, route: str, status: str) -> float:
    text = httpx.get(srv.base + "/metrics", headers={"Accept-Encoding": "identity"}).text
    prefix = f'market_http_requests_total{{route="{route}",status="{status}"}}'
    return next((float(line.split()[-1]) for line in text.splitlines() if line.startswith(prefix)), 0.0)


@pytest.mark.parametrize("path", ["/api/v1/quotes?kind=oil", "/api/v1/spreads", "/api/v1/quotes/wti", "/api/market",
                                  "/api/market/methanol"])
def test_remembered_answer_equals_the_pipelines(quiet: ServerProcess, path: str) -> None:
    headers = {"X-SERVICE-Key": quiet.demo_key, "Accept-Encoding": "identity", "Origin": "https://a.example"}
    with httpx.Client(base_url=quiet.base, timeout=10) as c:
        first = c.get(path, headers=headers)  # the pipeline (nothing remembered for this path yet)
        again = [c.get(path, headers=headers) for _ in range(3)]  # remembered
        head = c.head(path, headers=headers)
    for resp in [*again, head]:
        assert resp.status_code == first.status_code == 200
        assert {k for k in resp.headers if k not in PER_REQUEST} == {k for k in first.headers if k not in PER_REQUEST}
        for name in ("etag", "vary", "content-type", "access-control-allow-origin", "x-ratelimit-limit",
                     "ratelimit-policy", "access-control-expose-headers"):
            assert resp.headers.get(name) == first.headers.get(name), name
    assert all(r.content == first.content for r in again) and head.content == b""
    ids = {r.headers["x-request-id"] for r in [first, *again, head]}
    assert len(ids) == 5  # one per request
    echoed = httpx.get(quiet.base + path, headers={**headers, "X-Request-ID": "trace-42"})
    assert echoed.headers["x-request-id"] == "trace-42"


def test_a_free_keys_burst_is_exact_across_both_paths(quiet: ServerProcess) -> None:
    """GCRA at 60/min allows a burst of 60 plus one per second the burst lasted (SPEC 5), whichever path answers."""
    _, key = quiet.create_key("free")
    with httpx.Client(base_url=quiet.base, timeout=10) as c:
        started = time.monotonic()
        allowed, refused = 0, None
        for _ in range(200):
            resp = c.get("/api/v1/inventory", headers={"X-SERVICE-Key": key})
            if resp.status_code != 200:
                refused = resp
                break
            allowed += 1
        elapsed = time.monotonic() - started
    assert refused is not None and refused.status_code == 429
    assert 60 <= allowed <= 60 + math.ceil(elapsed), (allowed, elapsed)
    assert int(refused.headers["retry-after"]) >= 1 and refused.headers["x-ratelimit-remaining"] == "0"
    assert refused.json()["code"] == "rate_limited"


def test_every_request_is_counted_once(quiet: ServerProcess) -> None:
    headers = {"X-SERVICE-Key": quiet.demo_key}
    httpx.get(quiet.base + "/api/v1/quotes/brent", headers=headers)  # remembered from here on
    before = _metric(quiet, "quote", "200")
    with httpx.Client(base_url=quiet.base, timeout=10) as c:
        for _ in range(25):
            assert c.get("/api/v1/quotes/brent", headers=headers).status_code == 200
        etag = c.get("/api/v1/quotes/brent", headers=headers).headers["etag"]
        not_modified = c.get("/api/v1/quotes/brent", headers={**headers, "If-None-Match": etag})
    assert not_modified.status_code == 304 and not_modified.content == b""
    assert _metric(quiet, "quote", "200") == before + 26
    assert _metric(quiet, "quote", "304") >= 1


def test_refusals_still_come_from_the_pipeline(quiet: ServerProcess) -> None:
    httpx.get(quiet.base + "/api/v1/spreads", headers={"X-SERVICE-Key": quiet.demo_key})  # remembered
    missing = httpx.get(quiet.base + "/api/v1/spreads")
    wrong = httpx.get(quiet.base + "/api/v1/spreads", headers={"X-SERVICE-Key": "mk_not-a-key"})
    for resp in (missing, wrong):
        assert resp.status_code == 401 and resp.headers["content-type"] == "application/problem+json"
        assert "x-request-id" in resp.headers and "x-ratelimit-limit" in resp.headers
    body = httpx.request("GET", quiet.base + "/api/v1/spreads", headers={"X-SERVICE-Key": quiet.demo_key},
                         content=b"{}")
    assert body.status_code == 200  # a GET with a body goes through the pipeline and is answered the same


def test_interleaved_remembered_answers_keep_their_own_fields(quiet: ServerProcess) -> None:
    """A runtime may hand out one response object per remembered variant and status (Robyn does, setting the
    per-request fields on it): interleaved requests of two keys with different rates, 200s and 304s, identity and
    gzip, each get their own status, body, rate-limit fields and request id."""
    _, slow = quiet.create_key("free")  # 60/min: its remaining count moves with every request
    _, fast = quiet.create_key("enterprise", "--rate", "100000")
    path = "/api/v1/spreads"
    with httpx.Client(base_url=quiet.base, timeout=10) as c:
        plain = {"Accept-Encoding": "identity"}
        first = c.get(path, headers={**plain, "X-SERVICE-Key": fast})  # the pipeline: remembered from here on
        etag = first.headers["etag"]
        answers = []
        for i in range(12):
            key = slow if i % 2 else fast
            kinds = ({**plain, "If-None-Match": etag}, {"Accept-Encoding": "gzip"}, plain)
            extra = kinds[i % 3]
            answers.append((key, extra, c.get(path, headers={"X-SERVICE-Key": key, **extra})))
    ids = {resp.headers["x-request-id"] for _, _, resp in answers}
    assert len(ids) == len(answers)
    slow_remaining = []
    for key, extra, resp in answers:
        limit = "60" if key == slow else "100000"
        assert resp.headers["x-ratelimit-limit"] == limit and f"q={limit}" in resp.headers["ratelimit-policy"]
        remaining = resp.headers["x-ratelimit-remaining"]
        assert f"r={remaining};" in resp.headers["ratelimit"]
        if key == slow:
            slow_remaining.append(int(remaining))
        if "If-None-Match" in extra:
            assert resp.status_code == 304 and resp.content == b"" and resp.headers["etag"] == etag
        elif extra["Accept-Encoding"] == "gzip":
            assert resp.status_code == 200 and resp.headers["content-encoding"] == "gzip"
            assert resp.json() == first.json() and resp.headers["etag"] != etag
        else:
            assert resp.status_code == 200 and resp.content == first.content and resp.headers["etag"] == etag
            assert "content-encoding" not in resp.headers
    assert slow_remaining == sorted(slow_remaining, reverse=True) and len(set(slow_remaining)) == len(slow_remaining)
