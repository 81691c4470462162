"""What the Redis client costs on the engine's hot paths: CPU us per operation and operations per second.

    .venv/bin/python -m bench.redis_client_cost [--redis-url URL] [--number N] [--repeat R]

Measures whatever client this checkout's Redis engine uses (issue 19 item 4 replaced the hand-written
`server/engine/resp.py` by redis-py + hiredis under a thin auto-pipelining layer): to compare, run this
script in a checkout of each commit, e.g. for the hand-written client

    git worktree add --detach /tmp/old 01e268e      # the commit that added this script, before the change
    cp bench/redis_client_cost.py /tmp/old/bench/   # this version (it runs on either client)
    cd /tmp/old && /work/main/.venv/bin/python -m bench.redis_client_cost

It builds a real `RedisEngine` (the engine's own connections, scripts and keys under a fresh
`bench-<hex>:` prefix, deleted at the end) on uvloop, like the hub, and times, best of R runs of N:

- `gcra x1`: `RedisGcra.check` (one EVALSHA of the GCRA script per keyed request), one at a time;
- `gcra x32`: the same with 32 checks in flight (a loaded hub: they share writes);
- `append`: one tick batch (12 ticks) appended with the tick log's script (lease check, seqs, XADD),
  one at a time as the hub's writer does, on the tick log's append connection;
- `evalsha x1`, `evalsha x32`: the GCRA script through redis-py's own `Redis.evalsha` on a pooled
  client (no auto-pipeline), for scale;
- `read`: XREAD of one batch at a time from the stream those appends filled, decoded to ticks, on the
  tick log's reader connection (what each hub does per batch).

CPU is this process's `time.process_time` per operation (what the hub pays; robust to a loaded
machine); ops/s is wall time and follows the machine's load, printed beside it (1-minute average).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import redis
import redis.asyncio
import uvloop

from server.config import EngineKind, Settings
from server.core.limits import Gcra
from server.core.metrics import Registry
from server.engine.redis_engine import RedisEngine
from server.engine.redis_ticks import APPEND_LUA, APPEND_SHA, MAXLEN

IDS = [f"i{n}" for n in range(12)]


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _call(conn: Any, *args: Any) -> Awaitable[Any]:
    """One command on an engine connection: the hand-written client took encoded bytes, the library's
    auto-pipeline takes the arguments."""
    if hasattr(conn, "_open") and hasattr(conn, "_connecting"):  # server/engine/resp.py's RespClient
        from server.engine.resp import encode  # type: ignore[import-not-found, unused-ignore]

        return conn.call(encode(*(a if isinstance(a, bytes) else str(a).encode() for a in args)))  # type: ignore[no-any-return]
    return conn.call(*args)  # type: ignore[no-any-return]


async def _timed(fn: Callable[[], Awaitable[object]], number: int, concurrency: int) -> tuple[float, float]:
    """(CPU us per op, ops per second of wall time) for `number` calls with `concurrency` in flight."""
    async def worker(n: int) -> None:
        for _ in range(n):
            await fn()

    per = number // concurrency
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker(per) for _ in range(concurrency)))
    done = per * concurrency
    return (time.process_time() - cpu) / done * 1e6, done / (time.perf_counter() - wall)


async def run(url: str, number: int, repeat: int) -> dict[str, tuple[float, float]]:
    prefix = f"bench-{uuid.uuid4().hex[:8]}:"
    settings = Settings(engine=EngineKind.REDIS, redis_url=url, redis_prefix=prefix)
    engine = RedisEngine(settings, Registry(), Gcra(), time.time, IDS)
    log = engine.tick_log
    log.epoch = "bench"
    sync = redis.Redis.from_url(url)
    sync.set(log.lease, log.node, px=600_000)  # this process leads: the append script checks the lease

    async def gcra() -> None:
        await engine.gcra.check("key:bench", 1_000_000_000, "bench")

    from server.engine.redis_gcra import SCRIPT, SCRIPT_SHA

    pooled = redis.asyncio.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5, max_connections=32)

    async def plain() -> None:  # redis-py's own client command, no auto-pipeline: a pooled redis.asyncio.Redis
        await pooled.evalsha(SCRIPT_SHA.decode(), 1, engine.gcra.prefix + "key:plain", 1_000_000_000, 1)

    floors = [0] * len(IDS)
    batch_no = 0

    async def append() -> None:
        nonlocal batch_no
        batch_no += 1
        args: list[Any] = [APPEND_SHA, 8, log.lease, log.seqs, log.stream, log.epoch_key, log.replid_key,
                           log.seqfloor_key, log.inbox, log.inbox_pos, log.node, MAXLEN, log.epoch, 0, "", ""]
        # RedisTicks.append's arguments (args_of)
        now = time.time()
        for row, inst_id in enumerate(IDS):
            args += [inst_id, repr(100.0 + batch_no % 7 + row / 100), repr(now), repr(1.0), floors[row], "-"]
        try:
            seqs = await _call(log.fast, b"EVALSHA", *args)
        except Exception as exc:  # NOSCRIPT the first time: load it with EVAL
            if "NOSCRIPT" not in f"{type(exc).__name__} {exc}" and "NoScript" not in type(exc).__name__:
                raise
            seqs = await _call(log.fast, b"EVAL", APPEND_LUA.encode(), *args[1:])
        assert len(seqs) == len(IDS)

    last = "0-0"

    async def read() -> None:
        nonlocal last
        answer = await _call(log.reader, b"XREAD", b"COUNT", b"1", b"STREAMS", log.stream.encode(), last.encode())
        entry_id, fields = answer[0][1][0]
        last = entry_id.decode()
        body = dict(zip(fields[::2], fields[1::2], strict=True))[b"b"]
        assert len(log._decode(body)) == len(IDS)

    figures: dict[str, tuple[float, float]] = {}
    try:
        await gcra()
        await append()
        await pooled.script_load(SCRIPT)
        for name, fn, conc in (("gcra x1", gcra, 1), ("gcra x32", gcra, 32), ("append", append, 1),
                               ("evalsha x1", plain, 1), ("evalsha x32", plain, 32)):
            figures[name] = min([await _timed(fn, number, conc) for _ in range(repeat)])
        reads = []
        for _ in range(repeat):  # the first `number` batches still in the stream (it keeps about MAXLEN), each time
            last = "0-0"
            reads.append(await _timed(read, number, 1))
        figures["read"] = min(reads)
        assert engine.gcra.fallbacks.value() == 0, "Redis was not reachable for the whole run"
    finally:
        await pooled.aclose()
        await engine.stop()
        keys = list(sync.scan_iter(match=prefix + "*", count=1000))
        if keys:
            sync.delete(*keys)
        sync.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--number", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.number > MAXLEN // 2:
        parser.error(f"--number: at most {MAXLEN // 2} (the tick stream keeps about {MAXLEN} batches to read back)")
    client = "hand-written resp.py" if os.path.exists(os.path.join(os.path.dirname(__file__), "..", "server",
                                                                   "engine", "resp.py")) else "redis-py + hiredis"
    print(f"client: {client}; CPU: {cpu_model()}; load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    for name, (cpu_us, ops) in uvloop.run(run(args.redis_url, args.number, args.repeat)).items():
        print(f"{name:10} {cpu_us:8.2f} us CPU/op {ops:10.0f} ops/s")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
