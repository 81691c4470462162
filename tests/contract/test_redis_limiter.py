"""The Redis engine's GCRA (one Lua script on Redis time) against real Redis, in process.

Exact burst, refusal, Retry-After; two App pipelines sharing one bucket; the local fallback
when Redis goes away (a private redis-server killed and started again) and the way back.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path

import pytest

from server.api.core.pipeline import App, build_app
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.config import EngineKind, Settings
from server.core.limits import Gcra, shared_rate
from server.core.metrics import HttpMetrics, Registry
from server.core.usage import UsageMeter
from server.engine.redis_client import AutoPipeline
from server.engine.redis_engine import RedisEngine, connect
from server.engine.redis_gcra import RedisGcra
from server.store.accounts.key_cache import KeyCache
from server.store.sql.db import open_db
from server.store.sql.sqlite_repos import SqliteKeys
from server.store.sql.sqlite_sync import KeyRepo
from server.store.sql.storage import SqliteStorage
from tests.conftest import free_port
from tests.redis_service import OwnRedis, redis_prefix, require_redis


@pytest.fixture
def redis_url() -> str:
    return require_redis()


@pytest.fixture
def prefix(redis_url: str) -> Iterator[str]:
    with redis_prefix(redis_url) as p:
        yield p


def _limiter(url: str, prefix: str, clock: float = 1000.0) -> tuple[RedisGcra, Gcra, Registry]:
    local, registry = Gcra(), Registry()
    return RedisGcra(connect(url), prefix, local, lambda: clock, registry, AutoPipeline(url, 0.5)), local, registry


def test_burst_of_n_then_refusal_with_retry_after(redis_url: str, prefix: str) -> None:
    async def scenario() -> None:
        gcra, local, _ = _limiter(redis_url, prefix)
        decisions = [await gcra.check("key:k1", 6, "free") for _ in range(7)]  # one request per 10 s after 6
        assert [d.allowed for d in decisions] == [True] * 6 + [False]
        assert [d.remaining for d in decisions] == [5, 4, 3, 2, 1, 0, 0]
        assert all(d.limit == 6 for d in decisions)
        refused = decisions[-1]
        assert 9.0 < refused.retry_after <= 10.0 and refused.retry_after_s == 10
        assert 50.0 < refused.reset <= 60.0
        headers = dict(refused.headers())
        assert headers["retry-after"] == "10" and headers["x-ratelimit-remaining"] == "0"
        assert headers["ratelimit-policy"] == '"free";q=6;w=60'
        assert local.store.get("key:k1") is None and gcra.fallbacks.value() == 0  # nothing was decided here
        await gcra.client.aclose()

    asyncio.run(scenario())


def test_same_arithmetic_as_the_local_gcra(redis_url: str, prefix: str) -> None:
    """Fresh buckets at several rates: the first decisions match the local Gcra's (headers included).

    The shared bucket runs on Redis time, which moves between two checks; the local one is held at one
    instant. So at a fast rate (6000/min refills one request every 10 ms) the shared bucket may have refilled
    as many requests as fit in the time that really passed, measured around the checks, and no more."""
    async def scenario() -> None:
        gcra, _, _ = _limiter(redis_url, prefix)
        local = Gcra()
        for rate in (1, 7, 60, 600, 6000):
            started = time.monotonic()
            for _ in range(3):
                shared = await gcra.check(f"key:r{rate}", rate, "p")
                elapsed = time.monotonic() - started
                refilled = math.ceil(elapsed * rate / 60.0)  # at most this many came back while Redis time moved
                mine = local.check(f"key:r{rate}", rate, 5000.0, "p")
                assert (shared.allowed, shared.limit) == (mine.allowed, mine.limit)
                assert mine.remaining <= shared.remaining <= min(rate, mine.remaining + refilled)
                assert mine.reset - elapsed - 0.05 <= shared.reset <= mine.reset + 0.05
        await gcra.client.aclose()

    asyncio.run(scenario())


def test_concurrent_checks_share_one_connection_attempt_and_one_bucket(redis_url: str, prefix: str) -> None:
    """50 checks in flight on a client that has not connected yet: one bucket, exact remaining counts."""
    async def scenario() -> None:
        gcra, _, _ = _limiter(redis_url, prefix)
        decisions = await asyncio.gather(*(gcra.check("key:c", 40, "p") for _ in range(50)))
        assert sorted(d.remaining for d in decisions if d.allowed) == list(range(40))
        assert sum(not d.allowed for d in decisions) == 10 and gcra.fallbacks.value() == 0
        await gcra.stop()
        await gcra.client.aclose()

    asyncio.run(scenario())


def test_one_iterations_requests_share_one_script_call_per_bucket(redis_url: str, prefix: str) -> None:
    """45 hot-path takes (`join`) in one loop iteration, 40 on a bucket of 30/min and 5 on another: one script call per
    bucket, and the answers are those of the local Gcra taking the same requests one by one at one instant
    (one script call reads Redis time once): the first 30 admitted in order with their own fields, 10 refused."""
    async def scenario() -> None:
        gcra, _, _ = _limiter(redis_url, prefix)
        busy, calm = shared_rate(30, "p"), shared_rate(600, "q")
        joined = [gcra.join("key:busy", busy) for _ in range(40)] + [gcra.join("key:calm", calm) for _ in range(5)]
        assert [place for _, place in joined] == [*range(40), *range(5)]
        assert [(b.bucket, b.n) for b in gcra._due] == [("key:busy", 40), ("key:calm", 5)]  # not sent yet
        answers = [(await future)[place] for future, place in joined]
        local = Gcra()
        assert answers[:40] == [local.take("key:busy", busy, 5000.0) for _ in range(40)]
        assert answers[30:40] == [None] * 10 and all(answers[:30])
        assert answers[40:] == [local.take("key:calm", calm, 5000.0) for _ in range(5)]
        refused = await gcra.check("key:busy", 30, "p")  # the batch left the bucket where 30 requests put it
        assert not refused.allowed and refused.retry_after_s == 2
        assert gcra.fallbacks.value() == 0
        await gcra.stop()
        await gcra.client.aclose()

    asyncio.run(scenario())


def test_the_bucket_expires_when_full_again(redis_url: str, prefix: str) -> None:
    async def scenario() -> None:
        gcra, _, _ = _limiter(redis_url, prefix)
        await gcra.check("key:ttl", 600, "p")  # one request at 600/min: full again after 100 ms
        ttl = await gcra.client.pttl(prefix + "rl:key:ttl")
        assert 0 < ttl <= 101
        await gcra.client.aclose()

    asyncio.run(scenario())


def _app(data_dir: Path, settings: Settings, shared: RedisGcra) -> App:
    router = Router()
    router.add("GET", "/api/v1/quotes", lambda req: Response(200, b"{}"), Access.KEYED, name="quotes")
    keys = KeyCache(SqliteKeys(SqliteStorage(data_dir)), KeyRepo(open_db(data_dir)).active_by_hash())
    return build_app(settings, router, keys, HttpMetrics(Registry()), shared, shared.local, time.time, nullcontext(),
                     UsageMeter())


def test_two_apps_share_one_bucket(redis_url: str, prefix: str, tmp_path: Path) -> None:
    """Two pipelines (two hubs) on one prefix: a key with 6/min gets 6 between them, then 429 from either."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    _, secret = KeyRepo(open_db(data_dir)).create("enterprise", 6, "shared")
    settings = Settings(data_dir=data_dir, engine=EngineKind.REDIS, redis_url=redis_url, redis_prefix=prefix)

    async def scenario() -> None:
        a = _app(data_dir, settings, _limiter(redis_url, prefix)[0])
        b = _app(data_dir, settings, _limiter(redis_url, prefix)[0])
        statuses, remaining = [], []
        for i in range(8):
            resp = await (a if i % 2 == 0 else b).handle(
                Request("GET", "/api/v1/quotes", headers={"x-service-key": secret}, client_ip="127.0.0.1"))
            statuses.append(resp.status)
            remaining.append(dict(resp.headers)["x-ratelimit-remaining"])
        assert statuses == [200] * 6 + [429, 429]
        assert remaining == ["5", "4", "3", "2", "1", "0", "0", "0"]
        for app in (a, b):
            await app.admission.limiter.client.aclose()  # type: ignore[attr-defined]

    asyncio.run(scenario())


async def wait_until_up(gcra: RedisGcra) -> None:
    for _ in range(100):  # the probe pings every 0.5 s: bounded at 10 s
        if not gcra.down:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the limiter never went back to Redis")


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    """A private redis-server the test may stop and start again; stopped at the end whatever happened."""
    server = OwnRedis(free_port(), tmp_path)
    server.start()
    yield server
    server.stop()


def test_fallback_while_redis_is_down_and_back_when_it_returns(
        own_redis: OwnRedis, caplog: pytest.LogCaptureFixture) -> None:
    """Redis killed: local buckets answer (logged once, counted); started again: shared buckets again."""
    server = own_redis
    caplog.set_level(logging.INFO, logger="market.ratelimit")

    async def scenario() -> None:
        gcra, _, _ = _limiter(server.url, "fb:")
        fallbacks = gcra.fallbacks
        assert (await gcra.check("key:f", 6, "free")).remaining == 5  # in Redis
        server.stop()
        first = await gcra.check("key:f", 6, "free")  # Redis gone: the local bucket (fresh) answers
        assert first.allowed and first.remaining == 5 and gcra.down
        for _ in range(5):
            await gcra.check("key:f", 6, "free")
        assert not (await gcra.check("key:f", 6, "free")).allowed  # the local bucket is exact too
        assert fallbacks.value() == 7
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and "Redis unreachable" in warnings[0].getMessage()
        server.start()  # a new, empty Redis on the same port
        await wait_until_up(gcra)
        back = await gcra.check("key:f", 6, "free")
        assert back.allowed and back.remaining == 5  # the shared bucket (empty after the restart)
        assert fallbacks.value() == 7
        assert any("Redis is back" in r.getMessage() for r in caplog.records)
        await gcra.stop()
        await gcra.client.aclose()

    asyncio.run(scenario())


def test_hot_batches_fall_back_when_redis_dies_and_resend_the_script_after_a_restart(own_redis: OwnRedis) -> None:
    """A batch of the hot path sent to a Redis that was just killed: its requests are answered from this hub's
    buckets (exact there too), never with an error; after a restart (the script forgotten: NOSCRIPT) a batch is
    answered from Redis again, through EVAL."""
    server = own_redis
    rate = shared_rate(2, "free")

    async def answers(gcra: RedisGcra, n: int) -> list[object]:
        joined = [gcra.join("key:h", rate) for _ in range(n)]
        return [(await future)[place] for future, place in joined]

    async def scenario() -> None:
        gcra, local, _ = _limiter(server.url, "hb:")
        first = await answers(gcra, 1)
        assert first == [Gcra().take("key:h", rate, 0.0)] and local.store.get("key:h") is None  # from Redis
        server.stop()
        fallen = await answers(gcra, 3)  # the local bucket (fresh): two admitted, the third refused
        mine = Gcra()
        assert fallen == [mine.take("key:h", rate, 0.0) for _ in range(3)] and fallen[2] is None
        assert gcra.down and gcra.fallbacks.value() == 3
        server.start()  # empty: the script and the bucket are gone
        await wait_until_up(gcra)
        assert await answers(gcra, 3) == fallen and gcra.fallbacks.value() == 3  # Redis's bucket, via EVAL
        await gcra.stop()
        await gcra.client.aclose()

    asyncio.run(scenario())


def test_an_unreachable_redis_at_first_use_falls_back(tmp_path: Path) -> None:
    """Nothing listens on the port: the first check answers locally at once, never raises."""
    async def scenario() -> None:
        gcra, _, registry = _limiter(f"redis://127.0.0.1:{free_port()}/0", "none:")
        decision = await gcra.check("key:x", 60, "free")
        assert decision.allowed and decision.remaining == 59 and gcra.down
        assert gcra.fallbacks.value() == 1
        assert b"market_ratelimit_fallback_total 1.0" in registry.render()
        await gcra.stop()

    asyncio.run(scenario())


def test_engine_revocations_reach_the_other_hub(redis_url: str, prefix: str) -> None:
    """Two engines on one prefix: one publishes, the other's listener runs; the publisher hears itself once."""
    settings = Settings(engine=EngineKind.REDIS, redis_url=redis_url, redis_prefix=prefix)

    async def scenario() -> None:
        a = RedisEngine(settings, Registry(), Gcra(), lambda: 0.0, ["brent"])
        b = RedisEngine(settings, Registry(), Gcra(), lambda: 0.0, ["brent"])
        heard_a: list[set[str]] = []
        heard_b: asyncio.Queue[set[str]] = asyncio.Queue()
        a.revocations.subscribe(heard_a.append)
        b.revocations.subscribe(heard_b.put_nowait)
        await a.start()
        await b.start()
        await asyncio.wait_for(a.channel.subscribed.wait(), 5)
        await asyncio.wait_for(b.channel.subscribed.wait(), 5)
        await a.revocations.publish({"key_1", "key_2"})
        assert await asyncio.wait_for(heard_b.get(), 2) == {"key_1", "key_2"}
        assert heard_a == [{"key_1", "key_2"}]  # delivered here directly, its own message ignored
        await a.stop()
        await b.stop()
        assert heard_a == [{"key_1", "key_2"}]

    asyncio.run(scenario())
