"""The hub wires the parts together and owns start and stop.

Data flows one way: feed -> market state -> tick bus / serialised views ->
HTTP and WebSocket adapters. The hub runs on one uvloop loop; on the robyn
runtime that loop is Robyn's, entered through its startup handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from server.api.app import App
from server.api.auth_keys import KeyCache
from server.api.cache import VersionedCache
from server.api.market_api import MarketApi
from server.api.metrics import HttpMetrics, Registry
from server.api.ops import OpsApi
from server.api.public_api import register_public_site
from server.api.ratelimit import Gcra
from server.api.router import Router
from server.api.web import WebApi
from server.bus import LocalTickBus
from server.config import Settings, settings_clock
from server.engine import Engine, make_engine
from server.feeds import FeedSource, FeedSupervisor, make_feed
from server.market.catalogue import default_catalogue
from server.market.feed import Tick
from server.market.inventory import InventoryBook
from server.notify.channels import configured_channels
from server.notify.worker import OutboxWorker
from server.store.backend import open_repositories
from server.store.db import storage_errors, transaction
from server.store.keys import KeyRepo
from server.store.storage import StorageClosed
from server.stream.service import StreamService

log = logging.getLogger("market.hub")

KEY_REFRESH_S = 1.0


class Service(Protocol):
    """Something the hub starts after the core and stops before it (stream server, outbox worker...)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class Hub:
    def __init__(self, settings: Settings, clock: Callable[[], float] | None = None) -> None:
        self.settings = settings
        self.clock = clock = clock or settings_clock(settings)
        self.epoch = f"{int(clock())}-{os.urandom(3).hex()}"
        # SQLite on its own threads, or PostgreSQL over an async pool; every call from the loop is awaited
        # (docs/storage.md)
        channels = [(c.kind, c.target) for c in configured_channels(settings)]
        self.repos = open_repositories(settings, channels, clock, self._wake_outbox)
        self.storage = self.repos.storage
        self.keys = KeyCache(self.repos.keys)  # filled by start(), before anything is served
        self.catalogue = default_catalogue()
        self.feed: FeedSource = make_feed(settings, self.catalogue, self.repos.candles, clock, self.epoch)
        self.state = self.feed.state
        self.inventory = InventoryBook(self.catalogue, settings.seed)
        self.bus = LocalTickBus()
        self.registry = Registry()
        self.cache = VersionedCache()
        self.router = Router()
        self.limiter = Gcra()  # this hub's buckets (and, on the redis engine, its fallback while Redis is away)
        self.engine: Engine = make_engine(settings, self.registry, self.limiter, clock)  # chosen once, here
        self.app = App(settings, self.router, self.keys, HttpMetrics(self.registry), self.limiter, clock,
                       self.engine.limiter)
        self.ticks_applied = self.registry.counter("market_ticks_applied_total", "Ticks applied to the market state.")
        for name in ("bad_lines", "unknown_ids"):
            self.registry.gauge(f"market_feed_{name}", f"Feed lines skipped ({name.replace('_', ' ')}).",
                                self._feed_stat(name))
        restarts = self.registry.counter("market_feed_restarts_total", "Feed restarts after a failure.")
        self.feed_supervisor = FeedSupervisor(self.feed, self._on_ticks, on_restart=restarts.inc)
        self.registry.gauge("market_feed_up", "1 while the feed runs (0: failed, restarting).",
                            lambda: float(self.feed_supervisor.ready()))
        MarketApi(self.state, self.inventory, self.cache).register(self.router)
        WebApi(settings).register(self.router)  # the dashboard at / and /static/..., /api/config
        OpsApi(self).register(self.router)
        self.services: list[Service] = []
        self.outbox = OutboxWorker(settings, self.registry, self.repos.outbox, clock)
        self.services.append(self.outbox)
        self.revocation_listeners: list[Callable[[set[str]], None]] = []
        self.engine.revocations.subscribe(self._on_revoked)
        register_public_site(self)  # /api/... public-site routes + snapshot/anchoring service
        self.services.append(StreamService(self))  # /ws/quotes on --ws-port; also serves /asyncapi.json
        self._tasks: list[asyncio.Task[None]] = []
        self.started = False

    def _feed_stat(self, name: str) -> Callable[[], float]:
        return lambda: float(self.feed.stats().get(name, 0))

    def ready(self) -> bool:
        return self.started and self.feed_supervisor.ready()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        await self.storage.open()  # PostgreSQL's async pool lives on this loop (no-op for SQLite)
        await self.engine.start()
        await self.keys.refresh()  # known keys are answered from memory from the first request on
        self._tasks = [
            loop.create_task(self.feed_supervisor.run(), name="feed"),
            loop.create_task(self._refresh_keys(), name="keys"),
            loop.create_task(self._housekeeping(), name="housekeeping"),
        ]
        for service in self.services:
            await service.start()
        self.started = True
        log.info("hub started epoch=%s feed=%s", self.epoch, self.settings.feed)

    def _on_ticks(self, ticks: list[Tick]) -> None:
        applied = self.state.apply(ticks)
        if applied:
            self.ticks_applied.inc(amount=len(applied))
            self.bus.publish(applied)

    def _wake_outbox(self) -> None:
        """After a record and its jobs committed: deliver now (a stopped worker finds them at its next start)."""
        self.outbox.wake()

    async def _refresh_keys(self) -> None:
        while True:
            await asyncio.sleep(KEY_REFRESH_S)
            try:
                revoked = await self.keys.refresh()
            except StorageClosed:
                return
            except storage_errors():
                log.exception("key refresh failed")
                continue
            if revoked:
                log.info("keys revoked: %s", ", ".join(sorted(revoked)))
                await self.engine.revocations.publish(revoked)  # here at once; other hubs over the engine

    def _on_revoked(self, key_ids: set[str]) -> None:
        """A revocation noticed here or published by another hub or the CLI: refuse the keys, close their sessions."""
        self.keys.forget(key_ids)
        for listener in self.revocation_listeners:
            listener(key_ids)

    async def _housekeeping(self) -> None:
        """Roll candles at local midnight (checked every second); drop full rate-limit buckets."""
        ticks = 0
        while True:
            await asyncio.sleep(1.0)
            now = self.clock()
            self.state.roll(now)
            ticks += 1
            if ticks % 60 == 0:
                self.app.limiter.store.prune(now)

    async def stop_services(self) -> None:
        """Stop services (WebSockets close with 1001, the outbox worker); idempotent."""
        services, self.services = self.services, []
        for service in reversed(services):
            try:
                await asyncio.wait_for(service.stop(), 3.0)
            except Exception:
                log.exception("service stop failed")

    async def stop(self) -> None:
        """Stop services, then the core tasks, then flush storage."""
        await self.stop_services()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.engine.stop()
        try:
            self.feed.flush()  # the loop's work has stopped: waiting for the writer here delays nobody
        finally:
            await self.storage.aclose()
        log.info("hub stopped")


def ensure_demo_key(hub: Hub) -> str | None:
    """On the first start of a data dir, create one professional demo key and save it (mode 0600)."""
    path: Path = hub.settings.data_dir / "demo-key.txt"
    secret = hub.storage.write_blocking(_create_demo_key)  # start-up: before anything is served
    if secret is None:
        return None
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(secret + "\n")
    return secret


def _create_demo_key(conn: sqlite3.Connection) -> str | None:
    """The key and its meta marker in one transaction; None if this data dir already had its demo key."""
    with transaction(conn):
        if conn.execute("SELECT 1 FROM meta WHERE key = 'demo_key'").fetchone():
            return None
        key, secret = KeyRepo(conn).create("professional", label="demo")
        conn.execute("INSERT INTO meta (key, value) VALUES ('demo_key', ?)", (key.id,))
    return secret
