"""The composition root: the one module that builds every part of a hub from `Settings`, and the one start-up
and shutdown both runtime adapters call (server/serve.py for Granian, server/http/robyn_app.py for Robyn).

`build` makes each part with only what it uses and connects them (starlette's `Starlette(routes=...,
lifespan=...)`, uvicorn's `Server`): no part looks another up, opens its own storage or makes its own
limiter, and nothing but this module (and server/history_parts.py, its helper) imports the parts' wiring. The
engine is chosen here, once (`make_engine`); all else sees only the engine's protocols (server/engine/__init__.py).

Order (docs/architecture.md explains each part):

- start: storage, engine, key watch (first refresh), housekeeping, tick path (memory: the feed; Redis: join
  the tick log, compete for the feed lease), then the services (outbox worker, public-site tasks, stream);
- stop (server/lifecycle.py runs it after HTTP has stopped): the services in reverse, then the core in
  reverse, the engine, the feed's flush and storage last.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import orjson

from server.api.auth.tokens import TokenService, load_external_key, load_secret
from server.api.auth.watch import KeyWatch
from server.api.console.routes import register_console
from server.api.core.cache import VersionedCache
from server.api.core.pipeline import App, build_app
from server.api.core.router import Router
from server.api.docs.asyncapi import register_asyncapi
from server.api.market.deep_ranges import DeepRanges
from server.api.market.flatfiles import FlatFilesApi
from server.api.market.ingest import IngestApi, Publish
from server.api.market.keyed import MarketApi
from server.api.market.quality import DayQualities, QualityApi
from server.api.market.reference import ReferenceApi
from server.api.market.sources import ConsoleSources, DeclaredInstruments, bind_at_build, clock_of, register_sources
from server.api.ops.availability import AvailabilityRecorder, Readings, keyed_routes, this_hub
from server.api.ops.health import OpsApi
from server.api.ops.incident_watch import IncidentWatch
from server.api.ops.incidents import IncidentBoard, IncidentsApi
from server.api.ops.status import Component, StatusApi, StorageProbe, up_down
from server.api.ops.uptime import UptimeApi
from server.api.ops.web import WebApi
from server.api.site.accounts import lockout_mail
from server.api.site.routes import SiteTasks, register_public_site
from server.config import (
    AuthSettings,
    DemoHours,
    EngineKind,
    EngineSettings,
    FeedSettings,
    HttpSettings,
    NotifySettings,
    ProcessSettings,
    Runtime,
    Settings,
    StorageSettings,
    StreamSettings,
    settings_clock,
)
from server.core.client_ip import granian_peer, robyn_peer
from server.core.heap import release_free_heap
from server.core.keys import ApiKey
from server.core.limits import Gcra
from server.core.metrics import HttpMetrics, Registry
from server.core.usage import UsageMeter
from server.engine import Engine
from server.feeds import DemoSource, FeedSource, JsonlSource, line_parser
from server.feeds.routes import MainRoutes, decided_main
from server.history_parts import archive_writer, history_opener, history_parts
from server.lifecycle import HttpRuntime, shutdown
from server.market.applied import AppliedTicks
from server.market.candles.trading_axis import VenueAxis
from server.market.catalogue import Catalogue, default_catalogue, with_slots
from server.market.contracts.listing import ContractBook
from server.market.contracts.rows import with_contracts
from server.market.contracts.specs import load_products
from server.market.freshness import Freshness, freshness_of, venue_clocks
from server.market.inventory import InventoryBook
from server.market.state import MarketState, build_demo_state, reset_row
from server.market.venues.book import VenueBook
from server.market.venues.feed import open_at_minute
from server.notify.channels import configured_channels
from server.notify.worker import OutboxWorker
from server.store.accounts.console_store import ConsoleStore
from server.store.accounts.key_cache import KeyCache
from server.store.availability.store import AvailabilityStore
from server.store.flatfiles.scopes import FlatFileSets
from server.store.history.archive_gap import store_missing_days
from server.store.history.archive_keeper import ArchiveKeeper
from server.store.history.candle_book import CandleKeeper, load_candle_book
from server.store.history.threads import History
from server.store.sql.backend import open_repositories
from server.store.sql.repositories import Candles, Repositories, Storage
from server.stream.delivery.resume_history import TickHistory
from server.stream.protocol.messages import tick_frame
from server.stream.service import StreamService, stream_limits
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
                 started: threading.Event, keeper: CandleKeeper | None) -> None:
        self.settings = settings
        self.repos, self.storage = repos, repos.storage
        self.engine, self.app, self.ticks = engine, app, ticks
        self.state, self.catalogue, self.epoch = ticks.state, ticks.state.catalogue, ticks.epoch
        self.keys, self.outbox, self.core, self.services = keys, outbox, core, services
        self.started, self.keeper = started, keeper  # set once every part runs (/readyz); a live feed's candles

    async def start(self) -> None:
        await self.storage.open()  # PostgreSQL's async pool lives on this loop (no-op for SQLite)
        await self.engine.start()
        for part in self.core:
            await part.start()
        for service in self.services:
            await service.start()
        release_free_heap()  # the state's start-up temporaries (server/core/heap.py): ~80 MB of a demo hub's RSS
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
            self.ticks.close_feed()
            if self.keeper is not None:  # the loop's work has stopped: waiting for the writer here delays nobody
                self.keeper.flush()
        finally:
            await self.storage.aclose()
        log.info("hub stopped")

    async def stop(self) -> None:
        """Services, then the core (what lifecycle.shutdown runs after HTTP; for in-process use and tests)."""
        await self.stop_services()
        await self.stop_core()


def make_engine(settings: EngineSettings, registry: Registry, local: Gcra, clock: Callable[[], float],
                ids: list[str]) -> Engine:
    """The engine, chosen once (the only place that reads `settings.engine`). `local`: this hub's own buckets
    (on Redis, its fallback while Redis is away); `ids`: the instrument ids in row order (a shared log's names)."""
    if settings.engine is EngineKind.REDIS:
        from server.engine.redis_engine import RedisEngine  # imports redis-py only when it is used

        return RedisEngine(settings, registry, local, clock, ids)
    from server.engine.memory import MemoryEngine

    return MemoryEngine(local, clock)


def build(settings: Settings, clock: Callable[[], float] | None = None) -> Node:
    """Every part of a hub, wired; nothing runs until `Node.start`. A part is handed the settings group it reads
    (`group(NotifySettings)`...); the App, the stream and the public site still take the whole `Settings`."""
    group = settings.group
    clock = clock or settings_clock(group(ProcessSettings))
    (venues, catalogue), registry = load_catalogue(settings, clock), Registry()
    # SQLite on its threads or PostgreSQL's async pool (docs/storage.md); a committed record wakes the outbox worker
    notify = group(NotifySettings)
    channels = configured_channels(notify)  # the outbox writes a job per channel; the worker delivers on them
    specs = [(c.kind, c.target) for c in channels]
    repos = open_repositories(group(StorageSettings), specs, clock, lambda: outbox.wake())
    bind_at_build(catalogue, venues, ConsoleStore(repos.storage))  # SPEC 20: the declared instruments' rows
    # this hub's own buckets (and, on the redis engine, its fallback while Redis is away); the key cache is filled by
    # the key watch's start
    keys, router, buckets = KeyCache(repos.keys), Router(), Gcra()
    engine = make_engine(group(EngineSettings), registry, buckets, clock, catalogue.log_ids())
    epoch = engine.epoch(f"{int(clock())}-{os.urandom(3).hex()}")  # redis: the shared tick history's, if any
    state, feed, keeper = make_market(group(FeedSettings), catalogue, repos.candles, clock, epoch, venues,
                                      history_opener(group(StorageSettings)), archive_writer(settings, engine))
    archive_ok, jobs, deep, flat = history_parts(keeper, registry, group(StorageSettings), clock, venues, repos.candles)
    meter = UsageMeter(clock())  # the console's usage per key (SPEC 17), counted by the pipeline and the stream
    app = make_app(settings, router, keys, registry, engine, buckets, clock, meter, catalogue)
    history, applied = TickHistory(len(catalogue.ids), tick_frame), AppliedTicks()  # resumes (SPEC 7)
    fresh = feed_freshness(state, applied, group(FeedSettings), clock)  # SPEC 20: a silent feed in session
    ticks = TickPath(state, feed, engine, history, applied, registry, epoch)
    watch = KeyWatch.subscribed(keys, engine.revocations, group(AuthSettings).key_refresh_s)
    started = threading.Event()  # set by Node.start once every part runs
    declared, ingest = register_market(settings, router, state, venues, clock, deep, flat, fresh, keeper,
                                       ConsoleStore(repos.storage), [app.admission.known.clear], ticks.ingest, meter)
    http, stream_settings = group(HttpSettings), group(StreamSettings)
    WebApi(http, group(FeedSettings), stream_settings).register(router)  # the dashboard at /, /static/..., /api/config
    OpsApi(http, group(ProcessSettings), router, registry, repos.storage,
           lambda: started.is_set() and ticks.ready() and archive_ok(), epoch, engine.node).register(router)
    outbox = OutboxWorker(notify, registry, repos.outbox, channels, clock)
    # SPEC 20: incidents and maintenance as last read (the status routes answer it); a hub with mail writes their mail
    board = IncidentBoard(ConsoleStore(repos.storage), clock, mail=bool(notify.smtp_url), wake=outbox.wake)
    site, usage = make_sites(settings, router, repos, state, app, engine, registry, specs, outbox, meter, clock,
                             board, declared.console_sources())
    applied.subscribe_before(site.snapshots.before_ticks)
    stream = make_stream(settings, state, epoch, registry, keys, buckets, history, clock, meter, fresh, applied, watch,
                         ingest)
    probe, status, status_tasks = register_status(router, fresh, venues, clock, repos.storage, stream, outbox,
                                                     engine, board, settings)
    follow_keeper(keeper, applied, ticks)
    register_asyncapi(router, http, stream_settings)  # /asyncapi.json describes the stream
    core: list[Service] = [watch, declared, Housekeeping(state, buckets.store, clock), ticks, probe, board, *jobs]
    recorder = availability_recorder(settings, repos.storage, app, stream, ticks, status, clock)
    return Node(settings, repos, engine, app, ticks, core, [usage, outbox, site, stream, *status_tasks, recorder],
                keys, outbox, started, keeper)


def load_catalogue(settings: Settings, clock: Callable[[], float]) -> tuple[VenueBook, Catalogue]:
    """Every venue's sessions and holidays (SPEC 16), and the catalogue: the products, spot assessments and FX, then
    every futures contract shown (SPEC 19, contracts/rows.py)."""
    venues = VenueBook.load(settings.calendar_file)
    listed = with_contracts(default_catalogue(), load_products(settings.catalogue_file), venues, clock())
    return venues, with_slots(listed, settings.custom_instruments)  # SPEC 20: rows for declared instruments


def make_stream(settings: Settings, state: MarketState, epoch: str, registry: Registry, keys: KeyCache, buckets: Gcra,
                history: TickHistory, clock: Callable[[], float], meter: UsageMeter, fresh: Freshness,
                applied: AppliedTicks, watch: KeyWatch, ingest: IngestApi) -> StreamService:
    """The WebSocket stream (SPEC 7): told of every applied tick, of revoked keys and of changed plans; `ingest`:
    /ws/ingest's batches (SPEC 20)."""
    stream = StreamService(settings, state, state.catalogue, epoch, registry, keys, buckets, history, clock,
                           stream_limits(settings), meter, fresh.stale, ingest.framer(keys.by_id))
    applied.subscribe(stream.core.fanout.on_ticks)
    watch.listeners.append(stream.on_revoked)
    watch.refreshed.append(lambda cache: stream.on_plans(cache.by_id))
    return stream


def follow_keeper(keeper: CandleKeeper | None, applied: AppliedTicks, ticks: TickPath) -> None:
    """A live feed's keeper: told of every applied tick (after the stream) and of a new lease holder."""
    if keeper is not None:
        applied.subscribe(keeper.on_ticks)
        ticks.lead_listeners.append(keeper.on_lead)  # a shared archive: a new lease holder writes what it applied


def availability_recorder(settings: Settings, storage: Storage, app: App, stream: StreamService, ticks: TickPath,
                          status: StatusApi, clock: Callable[[], float]) -> Service:
    """SPEC 20: this hub's row per minute, from the counters the parts keep and the status's components
    (docs/sla.md). The last service: it starts after the stream it samples, and writes its last minute first."""
    metrics = stream.core.fanout.metrics
    frames = [metrics.delivered, metrics.candles]
    readings = Readings(app.metrics, keyed_routes(app.router), frames, ticks.feed_to_frame)
    return AvailabilityRecorder(this_hub(settings.port, settings.worker_id), AvailabilityStore(storage), readings,
                                status.levels, clock)


def register_market(settings: Settings, router: Router, state: MarketState, venues: VenueBook,
                    clock: Callable[[], float], deep: DeepRanges | None, flat: FlatFileSets | None, fresh: Freshness,
                    keeper: CandleKeeper | None, store: ConsoleStore, changed: list[Callable[[], object]],
                    publish: Publish, meter: UsageMeter) -> tuple[DeclaredInstruments, IngestApi]:
    """The keyed market-data and reference routes (SPEC 6, 16, 18, 19, 20); the dedicated data sources' binding and
    ingest route (SPEC 20, docs/ingest.md: `publish` is the tick path's ingest, `changed` told of a bound row)."""
    catalogue = state.catalogue
    MarketApi(state, InventoryBook(catalogue, settings.seed), VersionedCache(), clock, deep).register(router)
    ReferenceApi(catalogue, venues, clock, state, deep, load_products(settings.catalogue_file)).register(router)
    history = keeper.archive.history if keeper is not None and keeper.archive is not None else None
    qualities = DayQualities(fresh, catalogue.ids, history, flat.import_version if flat is not None else lambda: "")
    FlatFilesApi(flat, clock, venues, qualities, catalogue).register(router)  # day files, their condition
    QualityApi(qualities, clock).register(router)
    return register_sources(router, state, venues, store, clock, changed, settings.ingest_rate, publish, meter)


def feed_freshness(state: MarketState, applied: AppliedTicks, feed: FeedSettings,
                   clock: Callable[[], float]) -> Freshness:
    """Each venue's feed freshness (market/freshness.py), told of every applied tick at the hub's time."""
    first = state.catalogue.custom_from  # the declared instruments (SPEC 20) are no venue's feed
    publications = [inst.publication for inst in state.catalogue.instruments[:first]]
    fresh = freshness_of(state.clocks[:first], publications, feed.stale_after, int(clock() * 1000),
                         max(feed.feed_outage_s, feed.stale_after))
    applied.subscribe(lambda batch: fresh.on_ticks((t.row for t in batch if t.row < first), int(clock() * 1000)))
    return fresh


def register_status(router: Router, fresh: Freshness, venues: VenueBook, clock: Callable[[], float],
                    storage: Storage, stream: StreamService, outbox: OutboxWorker, engine: Engine,
                    board: IncidentBoard, settings: Settings) -> tuple[Service, StatusApi, list[Service]]:
    """/api/v1/status, /api/v1/status/incidents and /api/v1/status/uptime (SPEC 20) from flags the parts keep,
    the incident board and the availability rows; returns the storage probe it reads (a core part), the route's
    object (the availability recorder samples its components) and two services: the watch that opens incidents by
    itself and the daily uptime's background computation."""
    probe = StorageProbe(storage)
    components = [Component("rest", "REST API", up_down(lambda: True)),  # it is answering
                  Component("stream", "WebSocket stream", up_down(lambda: stream.listening)),
                  Component("storage", "Storage", probe.level),
                  Component("notifications", "Notifications", up_down(lambda: outbox.running))]
    if engine.kind is EngineKind.REDIS:
        components.append(Component("redis", "Redis engine", up_down(engine.bus.healthy)))
    named = {vid: (venues.venues[vid].name["en"], clock_) for vid, clock_ in fresh.clocks.items()}
    status = StatusApi(components, fresh, named, clock, board)
    status.register(router)
    IncidentsApi(board, clock).register(router)
    watch = IncidentWatch(board, board.store, status.levels, lambda: probe.ok, lambda: engine.ticks.leading, clock,
                          fresh.major_ms / 1000, settings.group(StorageSettings).storage_outage_s)
    uptime = UptimeApi(AvailabilityStore(storage), ["rest", "stream", "storage", *(f"feed:{v}" for v in fresh.clocks)],
                       open_at_minute(fresh.clocks), clock)  # the SLA report's components (api/console/routes.py)
    uptime.register(router)
    return probe, status, [watch, uptime]


def make_sites(settings: Settings, router: Router, repos: Repositories, state: MarketState, app: App, engine: Engine,
               registry: Registry, channels: list[tuple[str, str]], outbox: OutboxWorker, meter: UsageMeter,
               clock: Callable[[], float], board: IncidentBoard,
               sources: ConsoleSources) -> tuple[SiteTasks, Service]:
    """The public site (/api/...) and the service console (/api/console/...), on one token service (SPEC 8, 17):
    the site's tasks, and the console's usage flusher (stopped after the other services)."""
    tokens = TokenService(load_secret(settings.jwt_secret, settings.data_dir),  # the accounts' JWTs
                          load_external_key(settings.jwt_public_key), clock)
    site = register_public_site(  # SPEC 12: evidence anchored by the lease holder
        router, repos, state, tokens, clock, app.check_bucket, refresh_s=settings.market_refresh_s,
        inquiry_rate=settings.inquiry_rate, shared=engine.ticks.shared, may_anchor=lambda: engine.ticks.leading,
        registry=registry, logins=engine.logins,  # a locked account's owner is e-mailed if mail is set (issue 45)
        tell_owner=lockout_mail(ConsoleStore(repos.storage), outbox.wake, clock) if settings.smtp_url else None)
    usage = register_console(settings, router, repos, tokens, clock, check_bucket=app.check_bucket,
                             client_ip=app.client_ip, revoke=engine.revocations.publish, channels=channels,
                             wake=outbox.wake, meter=meter, incidents_changed=board.poke,
                             venues=venue_clocks(state.clocks[:state.catalogue.custom_from])[0],  # SPEC 20: a
                             sources=sources)  # feed:{venue} each in the SLA; the declared instruments' routes
    return site, usage


def make_app(settings: Settings, router: Router, keys: KeyCache, registry: Registry, engine: Engine, buckets: Gcra,
             clock: Callable[[], float], meter: UsageMeter, catalogue: Catalogue) -> App:
    """The HTTP pipeline, with the runtime's guard: Robyn answers remembered bodies on actix's thread (a lock). An
    ingest key's answers and those of a key whose account declared instruments are never shared (SPEC 20)."""
    private: Callable[[ApiKey], bool] = lambda key: key.scope != "read" or key.owner in catalogue.owned  # noqa: E731
    robyn = settings.runtime is Runtime.ROBYN
    guard = threading.Lock() if robyn else contextlib.nullcontext()
    return build_app(settings, router, keys, HttpMetrics(registry), engine.limiter, buckets, clock, guard, meter,
                     robyn_peer if robyn else granian_peer, private)


def make_market(settings: FeedSettings, catalogue: Catalogue, candles: Candles, clock: Callable[[], float],
                epoch: str, venues: VenueBook, open_history: Callable[[], History] | None = None,
                may_write: Callable[[], bool] | None = None) -> tuple[MarketState, FeedSource, CandleKeeper | None]:
    """The market state, the feed source that moves it and, for a live feed, the keeper of its daily candles and
    (`open_history`: the durable history, SPEC 18) of its tick archive, replayed into the state first."""
    clocks = [clock_of(venues, inst) for inst in catalogue.instruments]
    if settings.is_demo:
        state, walk = build_demo_state(catalogue, settings.seed, clock(), clocks=clocks)
        for row in range(catalogue.custom_from, len(clocks)):  # declared instruments: their owners' ticks only
            reset_row(state, row, clocks[row], clock())
        hours = clocks if settings.demo_hours is DemoHours.SESSIONS else None
        return state, DemoSource(walk, settings.tick_interval_ms / 1000.0, clock, hours), None
    now = clock()
    history = open_history() if open_history is not None else None
    if history is not None:  # the daily candles of sessions a killed hub had not stored, from its archived ticks
        store_missing_days(history, candles, [i.id for i in catalogue.instruments], clocks, int(now * 1000))
    book = load_candle_book(catalogue, candles, VenueAxis([c.days for c in clocks], catalogue.trading_spans()),
                            max(c.trading_day(int(now * 1000)) for c in clocks))
    state = MarketState(catalogue, book, demo=False, epoch=epoch, clocks=clocks)
    state.mains.replay(now)  # the main contracts and rolls of the stored days (SPEC 19), as a running hub decided
    state.roll(now)  # each instrument's live candle: its venue's trading day now
    archive = ArchiveKeeper(history, state, may_write) if history is not None else None
    if archive is not None:  # the candles as they were before a restart (even kill -9):
        archive.restore_closed()  # earlier sessions' intraday buckets, as stored
        archive.store_missing_bars()  # those of sessions a killed hub had not stored, from the archived ticks
        archive.replay()  # and today's, from the archived ticks
    contracts = ContractBook(load_products(settings.catalogue_file), venues.calendars)
    parser = line_parser(settings.feed_kind, catalogue, contracts, venues.clock, state.futures.within_limits)
    routes = MainRoutes(catalogue, decided_main(state.mains))  # a contract's tick moves its product's main series
    feed = JsonlSource(parser, settings.feed_path or "-", clock, state.history_start, routes.ticks)
    return state, feed, CandleKeeper(catalogue, book, candles, archive)


async def start_up(settings: Settings) -> Node:
    """What both runtimes run before they accept connections: build, announce, start."""
    node = build(settings)
    await start_built(node)
    return node


async def start_built(node: Node) -> None:
    """Announce and start a built hub (Robyn builds it before its server starts, then starts it on its loop)."""
    announce(node)
    await node.start()


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
    rows = list(range(node.catalogue.custom_from))  # not the rows of declared instruments (SPEC 20)
    return orjson.dumps({"updated": "static", "count": len(rows), "demo": True, "quotes": node.state.quotes(rows)})
