"""The console across two hubs (SPEC 17 on the Redis engine): hub A on Granian, hub B on Robyn, one Redis prefix
and one store. A rotation through hub A closes the old secret's stream on hub B with 4001 within a second; a plan
change reaches hub B's rate within a second; usage made on both hubs is summed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from server.core.login_throttle import LOCK_AFTER, MAX_BACKOFF_S
from tests.conftest import ServerProcess, run_cli
from tests.redis_service import redis_prefix, require_redis

PASSWORD = "correct horse"


@pytest.fixture
def hubs(tmp_path: Path) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    url = require_redis()
    with redis_prefix(url) as prefix:
        flags = ("--engine", "redis", "--redis-url", url, "--redis-prefix", prefix, "--public-rate", "100000",
                 "--trusted-proxies", "127.0.0.1")  # the stuffing test's addresses, through a trusted proxy
        a = ServerProcess(tmp_path / "data", "granian", *flags)
        b = ServerProcess(tmp_path / "data", "robyn", *flags)
        try:
            yield a, b
        finally:
            codes = [hub.stop() for hub in (a, b)]
            assert codes == [0, 0], f"{codes}\n{a.output()[-2000:]}\n{b.output()[-2000:]}"


def until(check: object, timeout: float, every: float = 0.05) -> float | None:
    """Seconds until `check()` held (polling another process), or None."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if check():  # type: ignore[operator]
            return time.monotonic() - started
        time.sleep(every)
    return None


def limit(hub: ServerProcess, key: str) -> str | None:
    return httpx.get(hub.base + "/api/v1/quotes", headers={"X-SERVICE-Key": key}).headers.get("x-ratelimit-limit")


def test_plan_rotation_and_usage_across_hubs(hubs: tuple[ServerProcess, ServerProcess]) -> None:
    a, b = hubs
    with a.client() as ca:
        assert ca.post("/api/auth/register", json={"email": "hubs@example.com", "password": PASSWORD}).is_success
        token = ca.post("/api/auth/login", json={"email": "hubs@example.com", "password": PASSWORD}).json()["token"]
        ca.headers["Authorization"] = f"Bearer {token}"
        key = ca.post("/api/console/keys", json={"label": "both"}).json()
        assert limit(a, key["key"]) == "60" and until(lambda: limit(b, key["key"]) == "60", 3.0) is not None
        sub = ca.post("/api/console/subscription", json={"plan": "professional"}).json()
        assert run_cli(a.data_dir, "subscriptions", "approve", sub["id"]).returncode == 0
        took = until(lambda: limit(b, key["key"]) == "600", 3.0)
        assert took is not None and took < 1.5, took  # the refresh runs each second
        assert until(lambda: limit(a, key["key"]) == "600", 3.0) is not None  # hub a's own refresh too
        for hub in (a, b):  # a known number of answered requests on each hub (the polls above vary with timing)
            for _ in range(3):
                assert limit(hub, key["key"]) == "600"
        code, took = asyncio.run(_rotate_while_streaming(b, ca, key))
        assert code == 4001 and took < 1.0, (code, took)
        usage = until(lambda: _usage(ca, key["id"]) >= 6, 15.0, every=1.0)  # one flush (5 s) on each hub
        assert usage is not None


async def _rotate_while_streaming(b: ServerProcess, ca: httpx.Client, key: dict[str, str]) -> tuple[int, float]:
    async with connect(f"{b.ws_base}/ws/quotes?key={key['key']}") as ws:
        await asyncio.wait_for(ws.recv(), 5.0)
        started = time.monotonic()
        resp = await asyncio.to_thread(ca.post, f"/api/console/keys/{key['id']}/rotate")
        assert resp.status_code == 201
        try:
            while True:
                await asyncio.wait_for(ws.recv(), 3.0)
        except ConnectionClosed:
            pass
        return ws.close_code or 0, time.monotonic() - started


def _usage(c: httpx.Client, key_id: str) -> int:
    items = c.get("/api/console/usage", params={"key": key_id}).json()["items"]
    return sum(int(i["requests"]) for i in items)


def test_failed_logins_count_on_every_hub(hubs: tuple[ServerProcess, ServerProcess]) -> None:
    """Issue 45: wrong passwords for one account sent in turn to two hubs (on Redis) from ten addresses lock it on
    both: the right password then answers 429 with the lockout's Retry-After, which neither hub's half of the
    failures would reach alone."""
    a, b = hubs
    email = "stuffed@example.com"
    assert httpx.post(a.base + "/api/auth/register", json={"email": email, "password": PASSWORD}).status_code == 201
    for n in range(LOCK_AFTER):
        hub = (a, b)[n % 2]
        resp = httpx.post(hub.base + "/api/auth/login", json={"email": email, "password": "wrong guess"},
                          headers={"X-Forwarded-For": f"198.51.100.{n + 1}"})
        assert resp.status_code in (401, 429), resp.text
    for hub in (a, b):
        right = httpx.post(hub.base + "/api/auth/login", json={"email": email, "password": PASSWORD},
                           headers={"X-Forwarded-For": "198.51.100.200"})
        assert right.status_code == 429 and int(right.headers["retry-after"]) > MAX_BACKOFF_S, right.text
