"""Two real hubs on one Redis prefix (`--engine redis`) and one data dir: shared limits, revocations.

Hub A runs on Granian, hub B on Robyn (one market, both runtimes). They share SQLite in one data
dir (WAL; the PostgreSQL store serves the same purpose across machines) and a fresh Redis prefix.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import redis
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.conftest import ServerProcess, free_port, run_cli
from tests.redis_service import OwnRedis, redis_prefix, require_redis

FREE_RATE = 60


@pytest.fixture
def hubs(tmp_path: Path) -> Iterator[tuple[ServerProcess, ServerProcess, str]]:
    url = require_redis()
    with redis_prefix(url) as prefix:
        data_dir = tmp_path / "data"
        flags = ("--engine", "redis", "--redis-url", url, "--redis-prefix", prefix, "--public-rate", "100000")
        a = ServerProcess(data_dir, "granian", *flags)
        b = ServerProcess(data_dir, "robyn", *flags)
        try:
            yield a, b, prefix
        finally:
            codes = [hub.stop() for hub in (a, b)]
            assert codes == [0, 0], f"{codes}\n{a.log_path.read_text()}\n{b.log_path.read_text()}"


def test_a_free_keys_61st_request_is_refused_whichever_hub_it_reaches(
        hubs: tuple[ServerProcess, ServerProcess, str]) -> None:
    a, b, _ = hubs
    _, key = a.create_key("free")
    headers = {"X-SERVICE-Key": key}
    with a.client(headers=headers) as ca, b.client(headers=headers) as cb:
        started = time.monotonic()
        statuses: list[int] = []
        refused: httpx.Response | None = None
        for i in range(3 * FREE_RATE):  # bounded: per-hub buckets would allow 2 x 60 before refusing
            resp = (ca if i % 2 == 0 else cb).get("/api/v1/quotes")
            statuses.append(resp.status_code)
            if resp.status_code == 429:
                refused = resp
                break
        elapsed = time.monotonic() - started
    assert refused is not None, f"no refusal in {len(statuses)} requests alternating between two hubs"
    assert set(statuses[:-1]) == {200}
    # a burst of exactly 60 from the shared bucket, plus at most one refill per second the run took
    assert FREE_RATE <= len(statuses) - 1 <= FREE_RATE + int(elapsed) + 1, (len(statuses), elapsed)
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.headers["x-ratelimit-limit"] == "60" and refused.headers["x-ratelimit-remaining"] == "0"
    assert refused.json()["retryAfter"] >= 1


async def _closed_code(ws: object, timeout: float) -> int | None:
    """Read until the server closes the connection; its close code."""
    async def drain() -> None:
        try:
            async for _ in ws:  # type: ignore[attr-defined]
                pass
        except ConnectionClosed:
            pass

    await asyncio.wait_for(drain(), timeout)
    return ws.close_code  # type: ignore[attr-defined,no-any-return]


def test_a_revoked_key_is_refused_by_both_hubs_and_its_socket_on_the_other_closes_4001(
        hubs: tuple[ServerProcess, ServerProcess, str]) -> None:
    a, b, prefix = hubs
    key_id, key = a.create_key("professional")
    for hub in (a, b):
        assert httpx.get(hub.base + "/api/v1/quotes", headers={"X-SERVICE-Key": key}).status_code == 200

    async def scenario() -> tuple[int | None, float, float]:
        async with connect(f"{b.ws_base}/ws/quotes?key={key}", max_queue=None) as ws:
            assert json.loads(await ws.recv())["type"] == "snapshot"
            out = await asyncio.to_thread(
                run_cli, a.data_dir, "keys", "revoke", key_id, "--engine", "redis", "--redis-prefix", prefix)
            assert out.returncode == 0, out.stderr
            assert "told 2 hub(s) over Redis" in out.stdout
            revoked_at = time.monotonic()
            code = await _closed_code(ws, 2.0)
            closed_after = time.monotonic() - revoked_at
        refused_after = await asyncio.to_thread(_refused_by_both, (a, b), key, revoked_at)
        return code, closed_after, refused_after

    code, closed_after, refused_after = asyncio.run(scenario())
    assert code == 4001
    assert closed_after < 1.0, closed_after
    assert refused_after < 1.0, refused_after


def _refused_by_both(hubs: tuple[ServerProcess, ...], key: str, since: float) -> float:
    """Poll both hubs until each answers 401 for the key (bounded); seconds since `since`."""
    pending = list(hubs)
    for _ in range(200):
        pending = [h for h in pending
                   if httpx.get(h.base + "/api/v1/quotes", headers={"X-SERVICE-Key": key}).status_code != 401]
        if not pending:
            return time.monotonic() - since
        time.sleep(0.01)  # polling another process's state: nothing to await
    raise AssertionError(f"still accepted by {[h.base for h in pending]}")


def _metric(hub: ServerProcess, name: str) -> float:
    for line in httpx.get(hub.base + "/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in {hub.base}/metrics")


def _poll(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.05)  # polling other processes: nothing to await


def test_hubs_survive_a_redis_restart_and_share_again_without_a_restart(tmp_path: Path) -> None:
    """Redis killed mid-run: both hubs keep answering from local buckets (counted); Redis started
    again: both go back to the shared buckets and the revocation channel by themselves."""
    own = OwnRedis(free_port(), tmp_path)
    own.start()
    data_dir = tmp_path / "data"
    flags = ("--engine", "redis", "--redis-url", own.url, "--redis-prefix", "hubs:", "--public-rate", "100000")
    a = ServerProcess(data_dir, "granian", *flags)
    b = ServerProcess(data_dir, "robyn", *flags)
    try:
        key_id, key = a.create_key("enterprise", "--rate", "6")  # one request per 10 s after a burst of 6
        headers = {"X-SERVICE-Key": key}

        def remaining(hub: ServerProcess) -> str:
            resp = httpx.get(hub.base + "/api/v1/quotes", headers=headers)
            assert resp.status_code == 200, resp.text
            return resp.headers["x-ratelimit-remaining"]

        assert [remaining(a), remaining(b)] == ["5", "4"]  # one bucket in Redis
        own.stop()
        assert [remaining(a), remaining(b)] == ["5", "5"]  # Redis gone: each hub's own (fresh) bucket
        for hub in (a, b):
            assert _metric(hub, "market_ratelimit_redis_up") == 0
            assert _metric(hub, "market_ratelimit_fallback_total") == 1
        own.start()  # an empty Redis on the same port
        for hub in (a, b):
            _poll(lambda hub=hub: _metric(hub, "market_ratelimit_redis_up") == 1, f"{hub.base} back on Redis")
        assert [remaining(a), remaining(b)] == ["5", "4"]  # shared again (the restarted Redis had no bucket)
        assert _metric(a, "market_ratelimit_fallback_total") == 1

        client = redis.Redis.from_url(own.url)
        _poll(lambda: client.pubsub_numsub("hubs:keys:revoked")[0][1] == 2, "both hubs subscribed again")
        client.close()
        out = run_cli(a.data_dir, "keys", "revoke", key_id, "--engine", "redis", "--redis-url", own.url,
                      "--redis-prefix", "hubs:")
        assert out.returncode == 0 and "told 2 hub(s)" in out.stdout, out.stdout + out.stderr
        _refused_by_both((a, b), key, time.monotonic())
    finally:
        codes = [hub.stop() for hub in (a, b)]
        own.stop()
    assert codes == [0, 0], f"{codes}\n{a.log_path.read_text()}\n{b.log_path.read_text()}"
    for hub in (a, b):
        log = hub.log_path.read_text()
        assert log.count("rate limits: Redis unreachable") == 1 and log.count("Redis is back") == 1, log
