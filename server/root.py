"""The composition root: the one module that builds every part of a hub from `Settings`, and the one start-up
and shutdown both runtime adapters call (server/serve.py for Granian, server/http/robyn_app.py for Robyn).

`build` makes each part with only what it uses and connects them (starlette's `Starlette(routes=...,
lifespan=...)`, uvicorn's `Server`): no part looks another up, opens its own storage or makes its own
limiter, and nothing but this module imports the parts' wiring. The engine is chosen here, once
(`make_engine`); everything else sees only the engine's protocols (server/engine/__init__.py).

Order (docs/architecture.md explains each part):

- start: storage, engine, key watch (first refresh), housekeeping, tick path (memory: the feed; Redis: join
  the tick log, compete for the feed lease), then the services (outbox worker, public-site tasks, stream);
- stop (server/lifecycle.py runs it after HTTP has stopped): the services in reverse, then the core in
  reverse, the engine, the feed's flush and storage last.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import orjson

from server.api.auth.keys import KeyCache
from server.api.auth.limits import Gcra
from server.api.auth.watch import KeyWatch
from server.api.console.routes import register_console
from server.api.core.cache import VersionedCache
from server.api.core.pipeline import App
from server.api.core.router import Router
from server.api.docs.asyncapi import register_asyncapi
from server.api.keyed import MarketApi
from server.api.ops import OpsApi
from server.api.site.routes import register_public_site
from server.api.web import WebApi
from server.bus import AppliedTicks
from server.config import EngineKind, Runtime, Settings, settings_clock
from server.core.client_ip import peer_host, robyn_peer
from server.core.metrics import HttpMetrics, Registry
from server.engine import Engine
from server.feeds import make_feed
from server.lifecycle import HttpRuntime, shutdown
from server.market.catalogue import default_catalogue
from server.market.history import TickHistory
from server.market.inventory import InventoryBook
from server.notify.channels import configured_channels
from server.notify.worker import OutboxWorker
from server.store.backend import open_repositories
from server.store.repositories import Repositories
from server.stream.messages import tick_frame
from server.stream.service import StreamService
from server.ticks import Housekeeping, TickPath

log = logging.getLogger("market.hub")

SERVICE_STOP_S = 3.0


class Service(Protocol):
    """A part with a life: started in order, stopped in reverse (stream server, outbox worker, key watch...)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class Node:
    """One hub process: the parts `build` made, what the adapters and tests reach, and the start/stop order."""

    def __init__(self, settings: Settings, repos: Repositories, engine: Engine, app: App, ticks: TickPath,
                 core: list[Service], services: list[Service], keys: KeyCache, outbox: OutboxWorker,
                 started: threading.Event) -> None:
        self.settings = settings
        self.repos, self.storage = repos, repos.storage
        self.engine, self.app, self.ticks = engine, app, ticks
        self.state, self.catalogue, self.epoch = ticks.state, ticks.state.catalogue, ticks.epoch
        self.keys, self.outbox = keys, outbox
        self.core, self.services = core, services
        self.started = started  # set once every part runs (/readyz)

    async def start(self) -> None:
        await self.storage.open()  # PostgreSQL's async pool lives on this loop (no-op for SQLite)
        await self.engine.start()
        for part in self.core:
            await part.start()
        for service in self.services:
            await service.start()
        self.started.set()
        log.info("hub started epoch=%s feed=%s", self.epoch, self.settings.feed)

    async def stop_services(self) -> None:
        """Stop the services (WebSockets close with 1001, then the public-site tasks and the outbox worker)."""
        services, self.services = self.services, []  # a stop that ran out of budget is not repeated
        for service in reversed(services):
            try:
                await asyncio.wait_for(service.stop(), SERVICE_STOP_S)
            except Exception:
                log.exception("service stop failed")

    async def stop_core(self) -> None:
        """Stop the core parts, the engine, then flush the feed and close storage."""
        core, self.core = self.core, []
        for part in reversed(core):
            try:
                await part.stop()
            except Exception:
                log.exception("stop failed")
        await self.engine.stop()
        try:
            self.ticks.flush()  # the loop's work has stopped: waiting for the writer here delays nobody
        finally:
            await self.storage.aclose()
        log.info("hub stopped")

    async def stop(self) -> None:
        """Services, then the core (what lifecycle.shutdown runs after HTTP; for in-process use and tests)."""
        await self.stop_services()
        await self.stop_core()


def make_engine(settings: Settings, registry: Registry, local: Gcra, clock: Callable[[], float],
                ids: list[str]) -> Engine:
    """The engine, chosen once (the only place that reads `settings.engine`). `local`: this hub's own buckets
    (on Redis, its fallback while Redis is away); `ids`: the instrument ids in row order (a shared log's names)."""
    if settings.engine is EngineKind.REDIS:
        from server.engine.redis_engine import RedisEngine  # imports redis-py only when it is used

        return RedisEngine(settings, registry, local, clock, ids)
    from server.engine.memory import MemoryEngine

    return MemoryEngine(local, clock)


def build(settings: Settings, clock: Callable[[], float] | None = None) -> Node:
    """Every part of a hub, wired; nothing runs until `Node.start`."""
    clock = clock or settings_clock(settings)
    registry = Registry()
    catalogue = default_catalogue()
    ids = [inst.id for inst in catalogue.instruments]
    # SQLite on its own threads, or PostgreSQL over an async pool; every call from the loop is awaited
    # (docs/storage.md). A committed record wakes the outbox worker (built below, with the outbox repository).
    channels = [(c.kind, c.target) for c in configured_channels(settings)]
    repos = open_repositories(settings, channels, clock, lambda: outbox.wake())
    buckets = Gcra()  # this hub's own buckets (and, on the redis engine, its fallback while Redis is away)
    engine = make_engine(settings, registry, buckets, clock, ids)
    epoch = engine.epoch(f"{int(clock())}-{os.urandom(3).hex()}")  # redis: the shared tick history's, if any
    feed = make_feed(settings, catalogue, repos.candles, clock, epoch)
    keys = KeyCache(repos.keys)  # filled by the key watch's start, before anything is served
    router = Router()
    robyn = settings.runtime is Runtime.ROBYN  # Robyn answers remembered bodies on actix's thread (a lock)
    app = App(settings, router, keys, HttpMetrics(registry), engine.limiter, buckets, clock,
              lock=threading.Lock() if robyn else None, parse_peer=robyn_peer if robyn else peer_host)
    history = TickHistory(len(ids), tick_frame)  # resumes (SPEC 7)
    applied = AppliedTicks()
    ticks = TickPath(feed, engine.bus, engine.ticks, engine.history, history, applied, registry, epoch)
    watch = KeyWatch(keys, engine.revocations)
    engine.revocations.subscribe(watch.on_revoked)
    started = threading.Event()  # set by Node.start once every part runs
    MarketApi(ticks.state, InventoryBook(catalogue, settings.seed), VersionedCache(), clock).register(router)
    WebApi(settings).register(router)  # the dashboard at / and /static/..., /api/config
    OpsApi(settings, router, registry, repos.storage, lambda: started.is_set() and ticks.ready(), epoch,
           engine.node).register(router)
    outbox = OutboxWorker(settings, registry, repos.outbox, clock)
    tick_log = engine.ticks
    site = register_public_site(  # /api/... public-site routes; SPEC 12: evidence anchored by the lease holder
        settings, router, repos, ticks.state, clock, app.check_bucket, shared=tick_log.shared,
        may_anchor=lambda: tick_log.leading, registry=registry)
    ticks.before_apply.append(site.snapshots.before_ticks)
    stream = StreamService(settings, ticks.state, catalogue, epoch, registry, keys, buckets, history, clock)
    applied.subscribe(stream.core.on_ticks)
    watch.listeners.append(stream.on_revoked)
    register_asyncapi(router, settings)  # /asyncapi.json describes the stream
    usage = register_console(  # issue 32: /api/console/... and the usage flusher (stopped after the others)
        settings, router, repos, clock, check_bucket=app.check_bucket, client_ip=app.client_ip,
        revoke=engine.revocations.publish, channels=channels, wake=lambda: outbox.wake(), meter=app.meter)
    stream.core.meter = app.meter
    core: list[Service] = [watch, Housekeeping(ticks.state, buckets.store, clock), ticks]
    return Node(settings, repos, engine, app, ticks, core, [usage, outbox, site, stream], keys, outbox, started)


async def start_up(settings: Settings) -> Node:
    """What both runtimes run before they accept connections: build, announce, start."""
    node = build(settings)
    announce(node)
    await node.start()
    return node


async def shut_down(node: Node, http: HttpRuntime) -> None:
    """What both runtimes run on SIGTERM/SIGINT: server/lifecycle.py's order, bounded."""
    await shutdown(node, http)


def announce(node: Node) -> None:
    s = node.settings
    secret = ensure_demo_key(node) if s.demo_key else None  # several workers: the one that creates it prints it
    if s.worker_id:  # the supervisor printed the addresses once
        print(f"market-server[worker {s.worker_id}]: pid {os.getpid()} node {node.engine.node}", flush=True)
    else:
        print(f"market-server: HTTP http://{s.host}:{s.port}  WebSocket ws://{s.host}:{s.ws_port}/ws/quotes "
              f"runtime={s.runtime.value} feed={s.feed} node={node.engine.node}", flush=True)
    key_file = s.data_dir / "demo-key.txt"
    if secret:
        print(f"market-server: demo key (professional, shown once, saved to {key_file}):\n  {secret}", flush=True)
    elif s.demo_key and s.worker_id <= 1:  # a later start: say where the first start's key is
        where = f"is in {key_file}" if key_file.is_file() else f"was shown on the first start ({key_file} is gone)"
        print(f"market-server: the API key made on the first start {where}; more: market-server keys create "
              f"--plan professional --data-dir {s.data_dir}", flush=True)


def ensure_demo_key(node: Node) -> str | None:
    """On the first start of a data dir, create one professional demo key and save it (mode 0600)."""
    path: Path = node.settings.data_dir / "demo-key.txt"
    secret = node.repos.keys.create_demo_key_blocking()  # start-up: before anything is served
    if secret is None:
        return None
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(secret + "\n")
    return secret


def bench_static_body(node: Node) -> bytes | None:
    """With --bench-static: the quotes body as it is now, served by the runtime itself (the ceiling)."""
    if not node.settings.bench_static:
        return None
    rows = list(range(len(node.catalogue.instruments)))
    return orjson.dumps({"updated": "static", "count": len(rows), "demo": True, "quotes": node.state.quotes(rows)})
