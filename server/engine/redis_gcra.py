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

from server.core.limits import Decision, Gcra, Rate, shared_rate
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
    """The requests of one bucket taken in one loop iteration: one script call, one future of its answer (the hot
    path's: each request's fields; check's: the script's reply)."""

    __slots__ = ("bucket", "future", "hot", "interval", "n", "rate", "window")

    def __init__(self, bucket: str, rate: Rate, hot: bool, future: asyncio.Future[Any]) -> None:
        self.bucket, self.rate, self.hot, self.future, self.n = bucket, rate, hot, future, 0
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
        # bucket -> the batch still taking requests in this loop iteration (the hot path's; check's)
        self._hot: dict[str, _Batch] = {}
        self._checks: dict[str, _Batch] = {}
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

    def join(self, key: str, rate: Rate) -> tuple[asyncio.Future[list[RateFields | None]], int]:
        """`take` in Redis (after it answered Pending.AWAIT): the future of the answers of this loop iteration's
        requests on the bucket, in order, and this request's place among them (see the module doc)."""
        batch = self._hot.get(key)
        if batch is None or batch.rate is not rate:  # a key whose rate changed starts a batch of its own
            batch = self._hot[key] = self._batch(key, rate, True)
        batch.n += 1
        return batch.future, batch.n - 1

    async def check(self, key: str, per_minute: int, policy: str) -> Decision:
        """One request from the bucket, with the refusal's Retry-After when refused."""
        rate = shared_rate(per_minute, policy)
        if not self.down:
            batch = self._checks.get(key)
            if batch is None or batch.rate is not rate:
                batch = self._checks[key] = self._batch(key, rate, False)
            batch.n += 1
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

    def _batch(self, key: str, rate: Rate, hot: bool) -> _Batch:
        if not self._due:
            asyncio.get_running_loop().call_soon(self._send)  # after every request of this loop iteration
        batch = _Batch(key, rate, hot, asyncio.get_running_loop().create_future())
        self._due.append(batch)
        return batch

    def _send(self) -> None:
        due, self._due, self._hot, self._checks = self._due, [], {}, {}
        for batch in due:
            self._call(batch, b"EVALSHA", SCRIPT_SHA)
        self.fast.flush()  # written now, not one loop iteration later

    def _call(self, batch: _Batch, command: bytes, script: bytes) -> None:
        try:
            reply = self.fast.call(command, script, 1, self.prefix + batch.bucket, batch.rate.per_minute, batch.n)
        except RedisError as exc:  # the client is closed
            self._failed(batch, exc)
            return
        reply.add_done_callback(lambda done: self._answered(batch, done))

    def _answered(self, batch: _Batch, reply: asyncio.Future[Any]) -> None:
        if reply.cancelled():
            self._failed(batch, RedisError("the script call was cancelled"))
            return
        exc = reply.exception()
        if isinstance(exc, NoScriptError):  # a restarted Redis forgot the script: send it whole, once
            self._call(batch, b"EVAL", SCRIPT)
            self.fast.flush()
        elif exc is not None:
            self._failed(batch, exc)
        elif not batch.future.done():
            batch.future.set_result(self._answers(batch, reply.result()) if batch.hot else reply.result())

    @staticmethod
    def _answers(batch: _Batch, reply: list[int]) -> list[RateFields | None]:
        """Each request's header fields (the first k admitted, in order), None for each refused one."""
        k, now, tat = reply
        interval, window, rate = batch.interval, batch.window, batch.rate
        memo = rate.fields
        answers: list[RateFields | None] = []
        ahead = tat - now
        for _ in range(k):
            ahead += interval  # how far the bucket's time runs ahead of now once this request is taken
            remaining = (window - ahead) // interval
            reset = -(-ahead // SECOND_US)  # ceil(ahead / 1 s): 1..60
            out = memo.get(remaining * 64 + reset)
            answers.append(out if out is not None else rate.allowed_fields(remaining, reset, ahead / SECOND_US))
        answers += [None] * (batch.n - k)
        return answers

    def _failed(self, batch: _Batch, exc: BaseException) -> None:
        """A batch whose script call failed: the hot path's requests are answered from this hub's buckets;
        `check`'s callers get the error (and fall back themselves)."""
        if batch.future.done():
            return
        if not batch.hot:
            batch.future.set_exception(exc)
            batch.future.exception()  # marked retrieved: every waiter may have been cancelled
            return
        self._lost(exc)
        self.fallbacks.inc(amount=batch.n)
        take, bucket, rate, now = self.local.take, batch.bucket, batch.rate, self.clock()
        batch.future.set_result([take(bucket, rate, now) for _ in range(batch.n)])

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
