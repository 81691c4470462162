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
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np

from server.api.auth.keys import KeyCache
from server.api.auth.limits import Gcra
from server.api.core.cache import VersionedCache
from server.api.core.pipeline import App
from server.api.core.router import Router
from server.api.keyed import MarketApi
from server.api.ops import OpsApi
from server.api.site.routes import register_public_site
from server.api.web import WebApi
from server.bus import LocalTickBus
from server.config import Settings, settings_clock
from server.core.background import log_round_failure
from server.core.metrics import HttpMetrics, Registry
from server.engine import Engine, TickLog, make_engine
from server.feeds import FeedSource, FeedSupervisor, make_feed
from server.market.catalogue import default_catalogue
from server.market.feed import Tick
from server.market.history import TickHistory, logged_tick
from server.market.inventory import InventoryBook
from server.market.state import AppliedTick
from server.notify.channels import configured_channels
from server.notify.worker import OutboxWorker
from server.store.backend import open_repositories
from server.store.db import storage_errors
from server.store.storage import StorageClosed
from server.stream.messages import tick_frame
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
        self.registry = Registry()
        self.limiter = Gcra()  # this hub's buckets (and, on the redis engine, its fallback while Redis is away)
        self.engine: Engine = make_engine(settings, self.registry, self.limiter, clock,
                                          [inst.id for inst in self.catalogue.instruments])  # chosen once, here
        self.epoch = self.engine.epoch(self.epoch)  # redis: the tick history's epoch, kept while the stream lives
        self.feed: FeedSource = make_feed(settings, self.catalogue, self.repos.candles, clock, self.epoch)
        self.state = self.feed.state
        self.inventory = InventoryBook(self.catalogue, settings.seed)
        self.bus = LocalTickBus()
        self.cache = VersionedCache()
        self.router = Router()
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
        MarketApi(self.state, self.inventory, self.cache, clock).register(self.router)  # clock: UDF `time`
        WebApi(settings).register(self.router)  # the dashboard at / and /static/..., /api/config
        OpsApi(self).register(self.router)
        self.services: list[Service] = []
        self.outbox = OutboxWorker(settings, self.registry, self.repos.outbox, clock)
        self.services.append(self.outbox)
        self.revocation_listeners: list[Callable[[set[str]], None]] = []
        # called with a batch's newest tick time just before the batch is applied (the market snapshot
        # closes a refresh boundary there: the same state on every hub)
        self.before_apply: list[Callable[[float], None]] = []
        self.engine.revocations.subscribe(self._on_revoked)
        register_public_site(self)  # /api/... public-site routes + snapshot/anchoring service
        self.history = TickHistory(len(self.catalogue.instruments), tick_frame)  # resumes (SPEC 7)
        self.services.append(StreamService(self))  # /ws/quotes on --ws-port; also serves /asyncapi.json
        self._tasks: list[asyncio.Task[None]] = []
        self._feed_task: asyncio.Task[None] | None = None
        self._published_ts: np.ndarray | None = None  # per instrument: newest tick ts when this hub took the feed
        self.started = False

    def _feed_stat(self, name: str) -> Callable[[], float]:
        return lambda: float(self.feed.stats().get(name, 0))

    def ready(self) -> bool:
        ticks = self.engine.ticks
        if ticks is None:
            return self.started and self.feed_supervisor.ready()
        # redis: the tick stream is reachable and current here, and the leader's own feed runs
        return self.started and ticks.healthy() and (not ticks.leading or self.feed_supervisor.ready())

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        await self.storage.open()  # PostgreSQL's async pool lives on this loop (no-op for SQLite)
        await self.engine.start()
        await self.keys.refresh()  # known keys are answered from memory from the first request on
        self._tasks = [
            loop.create_task(self._refresh_keys(), name="keys"),
            loop.create_task(self._housekeeping(), name="housekeeping"),
        ]
        if self.engine.ticks is None:
            self._tasks.append(loop.create_task(self.feed_supervisor.run(), name="feed"))
        else:
            await self._join_tick_log(self.engine.ticks)
        for service in self.services:
            await service.start()
        self.started = True
        log.info("hub started epoch=%s feed=%s", self.epoch, self.settings.feed)

    def _on_ticks(self, ticks: list[Tick]) -> None:
        if self.engine.ticks is not None:  # redis: into the shared log; applied when read back, as on every hub
            if self._published_ts is not None:  # just took the feed over: drop what the last leader published
                ticks = [t for t in ticks if t.ts > self._published_ts[t.row]]
            self.engine.ticks.append(ticks, [int(self.state.seq[t.row]) for t in ticks])
            return
        self._before_apply(ticks)
        self._publish(self.state.apply(ticks))

    def _before_apply(self, ticks: list[Tick]) -> None:
        if ticks and self.before_apply:
            newest = max(t.ts for t in ticks)
            for observer in self.before_apply:
                observer(newest)

    def _publish(self, applied: list[AppliedTick]) -> None:
        if applied:
            self.ticks_applied.inc(amount=len(applied))
            self.bus.publish(applied)

    async def _join_tick_log(self, tick_log: TickLog) -> None:
        """Continue every instrument's seq from the log, then read it (and compete for the feed lease)."""
        rows = {inst.id: row for row, inst in enumerate(self.catalogue.instruments)}
        seqs = await tick_log.load_seqs()
        last = await tick_log.last_ticks()  # the prices and times the other hubs show (volume counted there)
        self.state.apply([Tick(t.row, t.price, t.ts, 0.0) for t, _ in last], [seq for _, seq in last])
        started = self.epoch.split("-", 1)[0]
        if self.state.demo and started.isdigit():  # demo prices no tick moved yet: as of the history's start
            untouched = np.ones(len(self.state.updated_ts), dtype=bool)  # (the epoch's), the same on every hub
            untouched[[t.row for t, _ in last]] = False
            self.state.updated_ts[untouched] = float(started)
            self.state.updated = float(np.nanmax(self.state.updated_ts))
        for inst_id, seq in seqs.items():
            if inst_id in rows:
                self.state.seq[rows[inst_id]] = seq
        for batch in await tick_log.tail(self.history.covered):  # resumes of ticks from before this hub
            self.history.add([logged_tick(self.state, tick, seq) for tick, seq in batch])
        tick_log.start(self._on_replicated, self._on_lead)
        await tick_log.lease_tried()  # a lone hub leads (feed, evidence anchoring) before it is ready

    def _on_replicated(self, batch: list[tuple[Tick, int]]) -> None:
        self._before_apply([tick for tick, _ in batch])
        self._publish(self.state.apply([tick for tick, _ in batch], [seq for _, seq in batch]))

    def _on_lead(self, leading: bool) -> None:
        """The feed runs on the lease holder only."""
        if leading:
            # a replayed jsonl file starts after these (NaN: that instrument never ticked)
            self._published_ts = np.nan_to_num(self.state.updated_ts, nan=-np.inf)
            self.feed.resume_from(self.state.prices)  # the demo walk goes on from the prices every hub shows
            self._feed_task = asyncio.get_running_loop().create_task(self.feed_supervisor.run(), name="feed")
            self._tasks.append(self._feed_task)
        elif self._feed_task is not None:
            self._feed_task.cancel()
            self._feed_task = None

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
            except storage_errors() as exc:  # PostgreSQL away: known keys stay served
                log_round_failure(log, "key refresh", exc)
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
    secret = hub.repos.keys.create_demo_key_blocking()  # start-up: before anything is served
    if secret is None:
        return None
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(secret + "\n")
    return secret

