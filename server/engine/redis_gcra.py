"""GCRA in Redis: one Lua script, atomic, on Redis server time, so every hub draws from one bucket.

The arithmetic is `Gcra.check`'s, in integer microseconds (Lua numbers are doubles:
nanoseconds since 1970 do not fit in 53 bits, microseconds do). The script returns
what the local `Gcra` computes, so the App builds the same headers either way.
A rate above 60,000,000 per minute is treated as that (one request per microsecond).

While Redis cannot be reached, each hub answers from its local buckets (the
process-local `Gcra` the App already uses for its own buckets): logged once when
it starts and once when Redis is back, counted per request in
`market_ratelimit_fallback_total`. A probe task pings Redis every PROBE_S while
it is down; no request ever waits for a dead Redis after the first failure.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import NoScriptError, RedisError

from server.api.auth.limits import Decision, Gcra, Rate, bounded_rate
from server.core.metrics import Registry
from server.engine import Pending, RateFields
from server.engine.redis_client import AutoPipeline, Packed

log = logging.getLogger("market.ratelimit")

PROBE_S = 0.5
AWAIT = Pending.AWAIT  # a module global: Python 3.11's EnumType.__getattr__ makes `Pending.AWAIT` a slow lookup

# KEYS[1] bucket; ARGV[1] requests per minute (1..MAX_RATE, already bounded)
# returns {allowed 0|1, remaining, reset_us, retry_after_us}
GCRA_LUA = """
local rate = tonumber(ARGV[1])
local interval = math.floor(60000000 / rate)
if interval < 1 then interval = 1 end
local window = interval * rate
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = now
local stored = redis.call('GET', KEYS[1])
if stored then
  local s = tonumber(stored)
  if s and s > now then tat = s end
end
local new_tat = tat + interval
local allow_at = new_tat - window
if now < allow_at then
  return {0, 0, tat - now, allow_at - now}
end
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.floor((new_tat - now) / 1000) + 1)
return {1, math.floor((window - (new_tat - now)) / interval), new_tat - now, 0}
"""


SCRIPT = GCRA_LUA.encode()
SCRIPT_SHA = hashlib.sha1(SCRIPT).hexdigest().encode()  # Redis names a script by its SHA-1
MAX_PACKED = 4096  # packed EVALSHA commands kept (bucket, rate); emptied when full


class RedisGcra:
    """The shared limiter of the Redis engine (see the module doc).

    `client` pings while Redis is down; the checks themselves go through `fast`, an auto-pipelined
    connection (redis_client.py): EVALSHA, and EVAL once after a Redis restart forgot the script."""

    def __init__(self, client: Redis, prefix: str, local: Gcra, clock: Callable[[], float],
                 registry: Registry, fast: AutoPipeline) -> None:
        self.client = client
        self.fast = fast
        self.prefix = prefix + "rl:"
        self.local = local
        self.clock = clock
        self.down = False
        self._packed: dict[tuple[str, int], Packed] = {}
        self._probe: asyncio.Task[None] | None = None
        self.fallbacks = registry.counter(
            "market_ratelimit_fallback_total",
            "Rate-limit checks answered from this hub's local buckets because Redis could not be reached.")
        registry.gauge("market_ratelimit_redis_up", "1 while rate limits are checked in Redis (0: local fallback).",
                       lambda: 0.0 if self.down else 1.0)

    def decide(self, key: str, per_minute: int, now: float, policy: str) -> Decision | Pending:
        """Pending.AWAIT while Redis is reachable (the caller awaits `check`); this hub's buckets while it is away."""
        if not self.down:
            return AWAIT
        self.fallbacks.inc()
        return self.local.check(key, per_minute, now, policy)

    def take(self, key: str, rate: Rate, now: float) -> RateFields | Pending | None:
        """The hot path's `decide` (`Gcra.take` while Redis is away)."""
        if not self.down:
            return AWAIT
        self.fallbacks.inc()
        return self.local.take(key, rate, now)

    async def check(self, key: str, per_minute: int, policy: str) -> Decision:
        if not self.down:
            limit = bounded_rate(per_minute)
            try:
                try:
                    reply = await self._evalsha(key, limit)  # the future itself: no coroutine per call
                except NoScriptError:  # a restarted Redis forgot the script
                    reply = await self.fast.call(b"EVAL", SCRIPT, 1, self.prefix + key, limit)
                allowed, remaining, reset_us, retry_us = reply
            except (RedisError, OSError, TypeError, ValueError) as exc:
                self._lost(exc)
            else:
                return Decision(allowed == 1, limit, remaining, reset_us / 1e6, retry_us / 1e6, policy)
        self.fallbacks.inc()
        return self.local.check(key, per_minute, self.clock(), policy)

    def _evalsha(self, key: str, limit: int) -> asyncio.Future[Any]:
        packed = self._packed.get((key, limit))
        if packed is None:  # the EVALSHA of one bucket and rate, packed once: a busy key repeats it
            if len(self._packed) >= MAX_PACKED:
                self._packed.clear()
            packed = self._packed[(key, limit)] = self.fast.pack(b"EVALSHA", SCRIPT_SHA, 1, self.prefix + key, limit)
        return self.fast.call(packed)

    def _lost(self, exc: BaseException) -> None:
        if self.down:
            return
        self.down = True
        log.warning("rate limits: Redis unreachable (%s); using this hub's local buckets until it is back",
                    type(exc).__name__)
        self._probe = asyncio.get_running_loop().create_task(self._wait_for_redis(), name="ratelimit-probe")

    async def _wait_for_redis(self) -> None:
        while True:
            await asyncio.sleep(PROBE_S)
            try:
                await self.client.ping()
            except (RedisError, OSError):
                continue
            self.down = False
            log.info("rate limits: Redis is back; buckets are shared again")
            return

    async def stop(self) -> None:
        if self._probe is not None:
            self._probe.cancel()
        await self.fast.aclose()
