"""What the Redis engine's shared GCRA costs per keyed request, measured in process.

    .venv/bin/python -m bench.limiter_cost [--redis-url URL] [--number N] [--repeat R] [--concurrency C]

Runs the real pipeline (`App.handle` for a keyed `GET /api/v1/quotes` whose handler returns
cached bytes: routing, key lookup, GCRA, headers, metrics) on both engines and prints:

- `memory handle`: CPU us per request with the memory engine (the local Gcra, nothing awaited);
  best of R repeats of N calls, like bench/metrics_cost.py;
- `redis handle`: the same request with the Redis engine, one at a time on one asyncio loop:
  wall us per request (one Lua script round trip to Redis on loopback) and this process's
  CPU us per request;
- `redis handle xC`: C requests in flight at once (a loaded hub): wall us per request (the
  throughput one hub's loop gets out of it) and CPU us per request;
- `redis script`: `RedisGcra.check` alone, one at a time: wall and CPU us per call.

Redis's own CPU per script call comes from INFO commandstats (EVALSHA calls and usec over the run).
Keys are written under a fresh `bench-<hex>:` prefix and deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import timeit
import uuid
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from pathlib import Path

import redis
import uvloop

from server.api.core.pipeline import App, build_app
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.config import Settings
from server.core.limits import Gcra
from server.core.metrics import HttpMetrics, Registry
from server.core.usage import UsageMeter
from server.engine.memory import MemoryLimiter
from server.engine.redis_client import AutoPipeline
from server.engine.redis_engine import connect
from server.engine.redis_gcra import RedisGcra
from server.store.accounts.key_cache import KeyCache
from server.store.sql.db import open_db
from server.store.sql.sqlite_repos import SqliteKeys
from server.store.sql.sqlite_sync import KeyRepo
from server.store.sql.storage import SqliteStorage

BODY = b'{"quotes":[]}' * 200


def _app(data_dir: Path, shared: RedisGcra | None) -> tuple[App, str]:
    repo = KeyRepo(open_db(data_dir))
    _, secret = repo.create("enterprise", 1_000_000_000, "bench")
    router = Router()
    router.add("GET", "/api/v1/quotes", lambda req: Response(200, BODY), Access.KEYED, name="quotes")
    keys = KeyCache(SqliteKeys(SqliteStorage(data_dir)), repo.active_by_hash())
    local = shared.local if shared is not None else Gcra()
    limiter = shared if shared is not None else MemoryLimiter(local, time.time)
    return build_app(Settings(data_dir=data_dir), router, keys, HttpMetrics(Registry()), limiter, local, time.time,
                     nullcontext(), UsageMeter()), secret


def _memory(data_dir: Path, number: int, repeat: int) -> float:
    app, secret = _app(data_dir, None)
    headers = {"x-service-key": secret}

    def one_request() -> None:
        coro = app.handle(Request("GET", "/api/v1/quotes", "", headers, b"", "127.0.0.1"))
        try:  # noqa: SIM105 - the memory engine never awaits: run the coroutine to its return
            coro.send(None)
        except StopIteration:
            pass

    one_request()
    return min(timeit.repeat(one_request, timer=time.process_time, number=number, repeat=repeat)) / number * 1e6


async def _timed(fn: Callable[[], Awaitable[object]], number: int, concurrency: int) -> tuple[float, float]:
    """(wall us, CPU us) per call for `number` calls with `concurrency` in flight."""
    async def worker(n: int) -> None:
        for _ in range(n):
            await fn()

    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker(number // concurrency) for _ in range(concurrency)))
    done = number // concurrency * concurrency
    return (time.perf_counter() - wall) / done * 1e6, (time.process_time() - cpu) / done * 1e6


async def _redis(url: str, data_dir: Path, number: int, repeat: int,
                 concurrency: int) -> dict[str, tuple[float, float]]:
    prefix = f"bench-{uuid.uuid4().hex[:8]}:"
    gcra = RedisGcra(connect(url), prefix, Gcra(), time.time, Registry(), AutoPipeline(url, 0.5))
    app, secret = _app(data_dir, gcra)
    headers = {"x-service-key": secret}

    async def one_request() -> None:
        resp = await app.handle(Request("GET", "/api/v1/quotes", "", headers, b"", "127.0.0.1"))
        assert resp.status == 200, (resp.status, resp.body[:300])

    async def one_check() -> None:
        await gcra.check("key:bench", 1_000_000_000, "bench")

    figures: dict[str, tuple[float, float]] = {}
    try:
        await one_request()
        for name, fn, conc in (("redis handle", one_request, 1), (f"redis handle x{concurrency}", one_request,
                                                                  concurrency), ("redis script", one_check, 1)):
            runs = [await _timed(fn, number, conc) for _ in range(repeat)]
            figures[name] = min(runs)
        assert gcra.fallbacks.value() == 0, "Redis was not reachable for the whole run"
    finally:
        keys = [k async for k in gcra.client.scan_iter(match=prefix + "*")]
        if keys:
            await gcra.client.delete(*keys)
        await gcra.client.aclose()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--number", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="limiter-cost-") as tmp:
        mem_dir, redis_dir = Path(tmp) / "m", Path(tmp) / "r"
        mem_dir.mkdir()
        redis_dir.mkdir()
        print(f"{'memory handle':22} {'':>14} {_memory(mem_dir, args.number * 5, args.repeat):8.2f} us CPU/request")
        sync = redis.Redis.from_url(args.redis_url)
        before = _evalsha_stats(sync)
        for name, (wall, cpu) in uvloop.run(  # the hub's loop
                _redis(args.redis_url, redis_dir, args.number, args.repeat, args.concurrency)).items():
            print(f"{name:22} {wall:8.2f} us wall {cpu:8.2f} us CPU/request")
        calls, usec = (a - b for a, b in zip(_evalsha_stats(sync), before, strict=True))
        print(f"{'redis server':22} {usec / max(calls, 1):8.2f} us CPU per script call (INFO commandstats)")


def _evalsha_stats(client: redis.Redis) -> tuple[int, int]:
    """(calls, usec) of EVALSHA so far; the difference over the run is ours (nothing is reset)."""
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    return int(stats.get("calls", 0)), int(stats.get("usec", 0))


if __name__ == "__main__":
    main()
