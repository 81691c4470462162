"""GCRA in Redis: one Lua script, atomic, on Redis server time, so every hub draws from one bucket.

The arithmetic is `Gcra.check`'s, in integer microseconds (Lua numbers are doubles:
nanoseconds since 1970 do not fit in 53 bits, microseconds do). A rate above 60,000,000
per minute is treated as that (one request per microsecond).

The requests of one bucket that arrive in the same event-loop iteration share one script call:
the script takes n requests at once and admits the longest prefix the bucket allows (GCRA admits
in order, and a refusal leaves the bucket as it was, so once one is refused every later one of
the same instant is refused too). It answers (k admitted, now, the bucket's time before them);
each request works out its own answer from its place in the batch, the same fields a script call
of its own would have given. On a busy key this turns 32 script calls, replies and futures into one
(bench/README.md, "Redis engine vs memory engine").

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

from server.api.auth.limits import Decision, Gcra, Rate, shared_rate
from server.core.metrics import Registry
from server.engine import Pending, RateFields
from server.engine.redis_client import AutoPipeline

log = logging.getLogger("market.ratelimit")

PROBE_S = 0.5
AWAIT = Pending.AWAIT  # a module global: Python 3.11's EnumType.__getattr__ makes `Pending.AWAIT` a slow lookup
MINUTE_US = 60_000_000
SECOND_US = 1_000_000

# KEYS[1] bucket; ARGV[1] requests per minute (1..MAX_RATE, already bounded); ARGV[2] n requests (>= 1)
# admits the first k of the n (request j is allowed when now >= tat + j * interval - window);
# returns {k, now_us, tat_us}: tat is the bucket's time before these n, at least now
GCRA_LUA = """
local rate = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
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
local k = math.floor((now + window - tat) / interval)
if k > n then k = n end
if k < 1 then return {0, now, tat} end
local new_tat = tat + k * interval
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.floor((new_tat - now) / 1000) + 1)
return {k, now, tat}
"""


SCRIPT = GCRA_LUA.encode()
SCRIPT_SHA = hashlib.sha1(SCRIPT).hexdigest().encode()  # Redis names a script by its SHA-1


class _Batch:
    """The requests of one bucket taken in one loop iteration: one script call, one future of its reply."""

    __slots__ = ("bucket", "future", "interval", "n", "rate", "window")

    def __init__(self, bucket: str, rate: Rate, future: asyncio.Future[Any]) -> None:
        self.bucket, self.rate, self.future, self.n = bucket, rate, future, 0
        self.interval = max(1, MINUTE_US // rate.per_minute)  # the script's constants, in microseconds
        self.window = self.interval * rate.per_minute


class RedisGcra:
    """The shared limiter of the Redis engine (see the module doc).

    `client` pings while Redis is down; the script calls go through `fast`, an auto-pipelined connection
    (redis_client.py): EVALSHA, and EVAL once after a Redis restart forgot the script."""

    def __init__(self, client: Redis, prefix: str, local: Gcra, clock: Callable[[], float],
                 registry: Registry, fast: AutoPipeline) -> None:
        self.client = client
        self.fast = fast
        self.prefix = prefix + "rl:"
        self.local = local
        self.clock = clock
        self.down = False
        self._open: dict[str, _Batch] = {}  # bucket -> the batch still taking requests in this loop iteration
        self._due: list[_Batch] = []  # the batches the next _send sends
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

    async def take_awaited(self, key: str, rate: Rate) -> RateFields | None:
        """`take` in Redis: an allowed request's header fields, or None for a refusal (the bucket as it was)."""
        if not self.down:
            batch = self._join(key, rate)
            j = batch.n
            try:
                k, now, tat = await batch.future
            except (RedisError, OSError, TypeError, ValueError) as exc:
                self._lost(exc)
            else:
                if j > k:
                    return None
                interval = batch.interval
                ahead = tat + j * interval - now  # how far the bucket's time runs ahead of now once j is taken
                remaining = (batch.window - ahead) // interval
                reset = -(-ahead // SECOND_US)  # ceil(ahead / 1 s): 1..60
                out = rate.fields.get(remaining * 64 + reset)
                return out if out is not None else rate.allowed_fields(remaining, reset, ahead / SECOND_US)
        self.fallbacks.inc()
        return self.local.take(key, rate, self.clock())

    async def check(self, key: str, per_minute: int, policy: str) -> Decision:
        """One request from the bucket, with the refusal's Retry-After when refused."""
        rate = shared_rate(per_minute, policy)
        if not self.down:
            batch = self._join(key, rate)
            j = batch.n
            try:
                k, now, tat = await batch.future
            except (RedisError, OSError, TypeError, ValueError) as exc:
                self._lost(exc)
            else:
                interval, limit = batch.interval, rate.per_minute
                if j <= k:
                    ahead = tat + j * interval - now
                    return Decision(True, limit, (batch.window - ahead) // interval, ahead / SECOND_US, 0.0, policy)
                after = tat + k * interval - now  # the bucket's time once the admitted ones were taken
                return Decision(False, limit, 0, after / SECOND_US, (after + interval - batch.window) / SECOND_US,
                                policy)
        self.fallbacks.inc()
        return self.local.check(key, per_minute, self.clock(), policy)

    def _join(self, key: str, rate: Rate) -> _Batch:
        """This loop iteration's batch of `key` with this request counted in it (`batch.n` is its place)."""
        batch = self._open.get(key)
        if batch is None or batch.rate is not rate:  # a key whose rate changed starts a batch of its own
            if not self._due:
                asyncio.get_running_loop().call_soon(self._send)  # after every request of this iteration
            batch = self._open[key] = _Batch(key, rate, asyncio.get_running_loop().create_future())
            self._due.append(batch)
        batch.n += 1
        return batch

    def _send(self) -> None:
        due, self._due, self._open = self._due, [], {}
        for batch in due:
            self._call(batch, b"EVALSHA", SCRIPT_SHA)

    def _call(self, batch: _Batch, command: bytes, script: bytes) -> None:
        try:
            reply = self.fast.call(command, script, 1, self.prefix + batch.bucket, batch.rate.per_minute, batch.n)
        except RedisError as exc:  # the client is closed
            _settle(batch.future, exc)
            return
        reply.add_done_callback(lambda done: self._answered(batch, done))

    def _answered(self, batch: _Batch, reply: asyncio.Future[Any]) -> None:
        if reply.cancelled():
            _settle(batch.future, RedisError("the script call was cancelled"))
            return
        exc = reply.exception()
        if isinstance(exc, NoScriptError):  # a restarted Redis forgot the script: send it whole, once
            self._call(batch, b"EVAL", SCRIPT)
        elif exc is not None:
            _settle(batch.future, exc)
        elif not batch.future.done():
            batch.future.set_result(reply.result())

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


def _settle(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
        future.exception()  # marked retrieved: every waiter of the batch may have been cancelled
