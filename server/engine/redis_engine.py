"""The Redis engine: rate-limit buckets and key revocations shared by every hub on one Redis.

Every key and channel starts with `--redis-prefix` (default `market:`), so several
deployments (or test runs) can share one Redis. Commands fail fast (no retries,
short timeouts): a hub that cannot reach Redis falls back (see redis_gcra.py), it
never queues requests behind a dead connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable

import orjson
from redis.asyncio import Redis
from redis.asyncio.client import PubSub
from redis.exceptions import RedisError

from server.config import EngineKind, EngineSettings
from server.core.limits import Gcra
from server.core.login_throttle import LoginThrottle
from server.core.metrics import Registry
from server.core.redis_url import RedisTarget, parse_redis_url
from server.engine import (
    EngineUnavailable,
    Limiter,
    LoginFailures,
    ResumeHistory,
    RevocationChannel,
    RevocationListener,
    TickBus,
    TickInbox,
    TickLog,
    settle,
)
from server.engine.redis_client import POOL_SIZE, AutoPipeline, async_client, sync_client
from server.engine.redis_gcra import RedisGcra
from server.engine.redis_inbox import RedisInbox
from server.engine.redis_logins import RedisLogins
from server.engine.redis_ticks import RedisTicks, shared_epoch

log = logging.getLogger("market.engine")

TIMEOUT_S = 0.5  # connect and command timeout: a request never waits longer for Redis (then: local fallback)
RECONNECT_S = 0.5
REVOCATIONS = "keys:revoked"  # channel, after the prefix
__all__ = ["POOL_SIZE", "RedisEngine", "check_reachable", "connect", "publish_revocations"]


def connect(url: str | RedisTarget) -> Redis:
    """The engine's pooled asyncio client (POOL_SIZE connections; requests beyond wait at most TIMEOUT_S)."""
    return async_client(url, TIMEOUT_S)


def _target(url: str) -> RedisTarget:
    try:
        return parse_redis_url(url)
    except ValueError as exc:
        raise EngineUnavailable(str(exc)) from None


def check_reachable(url: str) -> None:
    """At start (or from the CLI): PING once, or EngineUnavailable naming where (never the credentials)."""
    target = _target(url)
    try:
        with sync_client(target, 2.0) as client:
            client.ping()
    except (RedisError, OSError) as exc:
        raise EngineUnavailable(f"--engine redis: cannot reach Redis at {target.location()} ({exc})") from None


def publish_revocations(url: str, prefix: str, key_ids: set[str], sender: str = "cli") -> int:
    """Tell every hub now (from the CLI); returns how many hubs were listening, or EngineUnavailable."""
    target = _target(url)
    try:
        with sync_client(target, 2.0) as client:
            return int(client.publish(prefix + REVOCATIONS, _message(sender, key_ids)))
    except (RedisError, OSError) as exc:
        raise EngineUnavailable(f"cannot reach Redis at {target.location()} ({exc})") from None


def _message(sender: str, key_ids: set[str]) -> bytes:
    return orjson.dumps({"from": sender, "keys": sorted(key_ids)})


class RedisRevocations:
    """Pub/sub on `<prefix>keys:revoked`; a message is {"from": sender, "keys": [ids]}.

    A hub runs its own listeners directly (so a revocation it noticed applies even with
    Redis down) and ignores its own messages. A message lost while Redis is down is
    made up for by every hub's one-second key refresh from storage."""

    def __init__(self, client: Redis, prefix: str, node: str) -> None:
        self.client = client
        self.channel = prefix + REVOCATIONS
        self.node = node
        self._listeners: list[RevocationListener] = []
        self._task: asyncio.Task[None] | None = None
        self.subscribed = asyncio.Event()  # set while the subscription is live (tests wait on it)

    def subscribe(self, listener: RevocationListener) -> None:
        self._listeners.append(listener)

    async def publish(self, key_ids: set[str]) -> None:
        self.deliver(key_ids)
        try:
            await self.client.publish(self.channel, _message(self.node, key_ids))
        except (RedisError, OSError) as exc:
            log.warning("could not publish key revocations (%s); other hubs apply them at their next key refresh",
                        type(exc).__name__)

    def deliver(self, key_ids: set[str]) -> None:
        for listener in self._listeners:
            listener(key_ids)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._listen_forever(), name="revocations")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await settle([self._task], 1.0)

    async def _listen_forever(self) -> None:
        warned = False
        while True:
            pubsub = self.client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.channel)
                self.subscribed.set()
                if warned:
                    log.info("key revocations: subscribed to Redis again")
                    warned = False
                await self._pump(pubsub)
            except (RedisError, OSError) as exc:
                self.subscribed.clear()
                if not warned:
                    log.warning("key revocations: Redis subscription lost (%s); retrying every %.1f s",
                                type(exc).__name__, RECONNECT_S)
                    warned = True
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
            await asyncio.sleep(RECONNECT_S)

    async def _pump(self, pubsub: PubSub) -> None:
        while True:
            message = await pubsub.get_message(timeout=TIMEOUT_S / 2)
            if message is None or message.get("type") != "message":
                continue
            try:
                body = orjson.loads(message["data"])
                sender, ids = body["from"], {str(k) for k in body["keys"]}
            except (orjson.JSONDecodeError, KeyError, TypeError):
                log.warning("ignored a malformed message on %s", self.channel)
                continue
            if sender != self.node and ids:
                log.info("keys revoked elsewhere: %s", ", ".join(sorted(ids)))
                self.deliver(ids)


class RedisEngine:
    kind = EngineKind.REDIS

    def __init__(self, settings: EngineSettings, registry: Registry, local: Gcra, clock: Callable[[], float],
                 ids: list[str]) -> None:
        self.settings = settings
        self.target = parse_redis_url(settings.redis_url)  # checked by config validation before this runs
        self.client = connect(self.target)
        self.location = self.target.location()
        self.node = os.urandom(6).hex()
        self.gcra = RedisGcra(self.client, settings.redis_prefix, local, clock, registry,
                              AutoPipeline(self.target, TIMEOUT_S))
        self.channel = RedisRevocations(self.client, settings.redis_prefix, self.node)
        self.limiter: Limiter = self.gcra
        self.logins: LoginFailures = RedisLogins(self.client, settings.redis_prefix, LoginThrottle(clock))
        self.revocations: RevocationChannel = self.channel
        # one Redis Stream is the tick bus, the tick log and the resume history's source
        self.tick_log = RedisTicks(self.target, settings.redis_prefix, self.node, ids)
        self.bus: TickBus = self.tick_log
        self.ticks: TickLog = self.tick_log
        self.history: ResumeHistory = self.tick_log
        self.ingest = RedisInbox(self.target, settings.redis_prefix, self.tick_log, self.gcra.fast,
                                 settings.ingest_inbox_max)
        self.inbox: TickInbox = self.ingest  # SPEC 20's ingest on every hub, through the lease holder
        registry.gauge("market_feed_leader", "1 while this hub holds the feed lease and runs the feed.",
                       lambda: float(self.tick_log.leading))
        registry.gauge("market_replication_lag_seconds", "Age of the newest tick batch when this hub applied it.",
                       lambda: self.tick_log.lag)

    def epoch(self, proposed: str) -> str:
        self.tick_log.epoch = shared_epoch(self.target, self.settings.redis_prefix, proposed)
        return self.tick_log.epoch

    async def start(self) -> None:
        self.channel.start()
        log.info("engine redis at %s node=%s", self.location, self.node)

    async def stop(self) -> None:
        await self.ingest.stop()
        await self.tick_log.stop()
        await self.channel.stop()
        await self.gcra.stop()
        await settle([self.client.aclose()], 1.0)
