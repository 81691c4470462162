"""A dedicated data source on the Redis engine (SPEC 20): two hubs (Granian, Robyn) on one Redis prefix and one
store. An instrument declared through hub A is bound on hub B within its refresh; ticks published to the feed lease
holder (the other hub answers 503 with Retry-After, nothing kept) are applied by both hubs, and each serves them to
the owner's read key only."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, run_cli
from tests.redis_service import redis_prefix, require_redis

PASSWORD = "correct horse"
INSTRUMENT = {"id": "acme.blend", "name": {"zh": "定制", "en": "Blend"}, "unit": {"zh": "美元/桶", "en": "USD/bbl"},
              "currency": "USD", "decimals": 2, "venue": "ice-eu"}


@pytest.fixture
def hubs(tmp_path: Path) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    url = require_redis()
    with redis_prefix(url) as prefix:
        flags = ("--engine", "redis", "--redis-url", url, "--redis-prefix", prefix, "--public-rate", "100000")
        a = ServerProcess(tmp_path / "data", "granian", *flags)
        b = ServerProcess(tmp_path / "data", "robyn", *flags)
        try:
            yield a, b
        finally:
            codes = [hub.stop() for hub in (a, b)]
            assert codes == [0, 0], f"{codes}\n{a.output()[-2000:]}\n{b.output()[-2000:]}"


def until(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)  # another process's refresh: nothing to await


def _account(hub: ServerProcess, email: str, namespace: str) -> httpx.Client:
    c = hub.client()
    assert c.post("/api/auth/register", json={"email": email, "password": PASSWORD}).status_code == 201
    for args in (("plan", email, "enterprise", "--rate", "100000"), ("namespace", email, namespace)):
        assert run_cli(hub.data_dir, "users", *args).returncode == 0
    token = c.post("/api/auth/login", json={"email": email, "password": PASSWORD}).json()["token"]
    c.headers["Authorization"] = f"Bearer {token}"
    return c


def _quote(hub: ServerProcess, secret: str) -> httpx.Response:
    return httpx.get(f"{hub.base}/api/v1/quotes/acme.blend", headers={"X-SERVICE-Key": secret}, timeout=10.0)


def test_every_hub_serves_an_accounts_instruments_to_it_alone(hubs: tuple[ServerProcess, ServerProcess]) -> None:
    a, b = hubs
    acme, other = _account(a, "acme@example.com", "acme"), _account(a, "other@example.com", "other")
    assert acme.post("/api/console/instruments", json=INSTRUMENT).status_code == 201
    publisher, reader = (acme.post("/api/console/keys", json={"scope": s}).json()["key"] for s in ("ingest", "read"))
    stranger = other.post("/api/console/keys", json={}).json()["key"]
    assert until(lambda: _quote(b, reader).status_code == 200)  # hub B bound it within its refresh
    line = b'{"id": "acme.blend", "price": 81.5, "volume": 2}'
    answers = {}
    for hub in (a, b):
        resp = until(lambda hub=hub: (r := httpx.post(f"{hub.base}/api/v1/ingest", content=line, headers={
            "X-SERVICE-Key": publisher, "content-type": "application/x-ndjson"})).status_code in (200, 503) and r)
        answers[hub.runtime] = resp
    assert sorted(r.status_code for r in answers.values()) == [200, 503], answers  # the lease holder publishes
    refused = next(r for r in answers.values() if r.status_code == 503)
    assert refused.headers["retry-after"] == "1" and refused.json()["code"] == "not_ready"
    for hub in (a, b):
        assert until(lambda hub=hub: _quote(hub, reader).json().get("price") == 81.5), hub.runtime
        assert _quote(hub, reader).json()["volume"] == 2  # applied once on each hub
        assert _quote(hub, stranger).status_code == 404
