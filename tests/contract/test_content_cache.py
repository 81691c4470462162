"""/api/news and /api/research answered from remembered bytes keyed by the content version (issue 22 item 1).

Real servers; content imported with the CLI (another process). Storage reads are counted by the server
(`market_content_reads_total` on /metrics): a remembered answer makes none. An import shows within 1 s
(the version is polled every 0.5 s), on every hub of a shared database on the Redis engine too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import ServerProcess, run_cli
from tests.redis_service import redis_hub_pair, require_redis

VISIBLE_WITHIN_S = 1.0


def reads(http: httpx.Client, kind: str) -> float:
    resp = http.get("/metrics")
    assert resp.status_code == 200
    for family in text_string_to_metric_families(resp.text):
        for s in family.samples:
            if s.name == "market_content_reads_total" and s.labels.get("kind") == kind:
                return s.value
    return 0.0


def import_news(data_dir: Path, tmp_path: Path, title: str, published: str) -> None:
    path = tmp_path / f"{title}.json"
    path.write_text(json.dumps([{"kind": "news", "title": {"zh": title, "en": title}, "summary": "s",
                                 "publishedAt": published}]))
    out = run_cli(data_dir, "content", "import", str(path))
    assert out.returncode == 0, out.stderr


def wait_for_top(http: httpx.Client, title: str, started: float) -> float:
    """Poll /api/news (an answer remembered before the import) until its newest item is `title`; how long after
    `started` it showed (fails past 1 s)."""
    while True:
        top = http.get("/api/news").json()["items"][0]["title"]["en"]
        waited = time.monotonic() - started
        if top == title:
            return waited
        assert waited < VISIBLE_WITHIN_S, f"{title!r} not visible after {waited:.2f}s (top {top!r})"


def test_answers_are_remembered_per_query_and_an_import_shows_within_a_second(
        server: ServerProcess, http: httpx.Client, tmp_path: Path) -> None:
    first = http.get("/api/news")
    assert first.status_code == 200
    before = reads(http, "news")
    again = [http.get("/api/news") for _ in range(20)]
    assert {r.headers["etag"] for r in again} == {first.headers["etag"]}
    assert {r.content for r in again} == {first.content}
    assert reads(http, "news") == before  # twenty answers, no storage read
    assert http.get("/api/news", headers={"If-None-Match": first.headers["etag"]}).status_code == 304

    # every query variant apart, each correct, each read once
    whole = http.get("/api/news", params={"limit": 100}).json()["items"]
    variants = [({"limit": 5}, whole[:5], 5, 0), ({"limit": 5, "offset": 3}, whole[3:8], 5, 3),
                ({"offset": 2}, whole[2:22], 20, 2), ({"limit": 100}, whole, 100, 0)]
    for params, items, limit, offset in variants:
        for _ in range(3):
            body = http.get("/api/news", params=params).json()
            assert (body["items"], body["limit"], body["offset"]) == (items, limit, offset), params
    after_variants = reads(http, "news")
    assert after_variants - before == 4  # limit=100 (whole) and the three others, once each
    research = http.get("/api/research", params={"limit": 2}).json()
    assert research["limit"] == 2 and all("author" in it for it in research["items"])
    assert reads(http, "news") == after_variants

    # an import by another process moves the version: a new answer within 1 s, then remembered again
    title = f"cache probe {server.runtime} {time.time_ns()}"
    import_news(server.data_dir, tmp_path, title, "2099-12-01T00:00:00+08:00")
    wait_for_top(http, title, time.monotonic())
    fresh = http.get("/api/news")
    assert fresh.json()["items"][0]["title"]["en"] == title
    assert fresh.headers["etag"] != first.headers["etag"]
    assert fresh.json()["total"] == first.json()["total"] + 1
    settled = reads(http, "news")
    assert http.get("/api/news").headers["etag"] == fresh.headers["etag"]
    assert reads(http, "news") == settled


@pytest.fixture
def hubs(tmp_path: Path) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    with redis_hub_pair(tmp_path / "data", "--public-rate", "100000", url=require_redis()) as pair:
        yield pair


def test_two_redis_hubs_both_show_an_import_within_a_second_and_remember_it(
        hubs: tuple[ServerProcess, ServerProcess], tmp_path: Path) -> None:
    a, b = hubs
    with a.client() as ca, b.client() as cb:
        etags = {ca.get("/api/news").headers["etag"], cb.get("/api/news").headers["etag"]}
        assert len(etags) == 1  # same database, same bytes, same ETag on both hubs
        for client in (ca, cb):  # the shared limiter sends every request through the pipeline: still no read
            client.get("/api/news")
            before = reads(client, "news")
            for _ in range(10):
                assert client.get("/api/news").headers["etag"] in etags
            assert reads(client, "news") == before
        title = f"two hubs {time.time_ns()}"
        import_news(a.data_dir, tmp_path, title, "2099-12-02T00:00:00+08:00")
        started = time.monotonic()
        for client in (ca, cb):
            wait_for_top(client, title, started)
        assert ca.get("/api/news").headers["etag"] == cb.get("/api/news").headers["etag"] not in etags
