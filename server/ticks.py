"""The tick path: feed -> the engine's tick bus -> market state -> applied-tick listeners.

One way, each hop named (docs/architecture.md draws it):

1. `FeedSupervisor` runs the feed source (demo walk or JSON lines) and hands each batch to `TickPath.on_feed`;
2. `on_feed` appends the batch to the engine's tick bus (`TickBus.append`: numbered, and on Redis shared);
3. the bus hands every numbered batch back to `TickPath.on_batch` (memory: at once, in the same call;
   Redis: read from the stream, on every hub, the leader included);
4. `on_batch` tells the `AppliedTicks` listeners a batch is coming (`before`: the public market snapshot closes
   a refresh boundary there) and applies it to the `MarketState` (the single writer);
5. the applied ticks go to the `AppliedTicks` listeners (the stream core frames them, records them in the
   resume history and sends them; a live feed's candle keeper writes closed days).

The root builds the market state and the feed source; the feed only yields ticks, and the state changes only
through its own methods (`apply`, `restore`, `roll`).

At start the tick path continues from the engine's tick log (each instrument's seq and newest tick) and
loads the resume history of ticks from before it (Redis: the stream's tail; memory: none). The feed runs
only while this hub holds the feed lease (`on_lead`); on the memory engine it always does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from time import perf_counter

import numpy as np

from server.core.background import cancel_and_wait
from server.core.limits import LimiterStore
from server.core.metrics import Registry
from server.engine import Engine, Numbered, Once, Put, ResumeHistory, TickBus, TickInbox, TickLog
from server.feeds import FeedSource, FeedSupervisor
from server.market.applied import AppliedTicks
from server.market.state import AppliedTick, MarketState
from server.market.tick import Tick
from server.stream.delivery.resume_history import TickHistory, logged_tick

log = logging.getLogger("market.ticks")

PRUNE_EVERY = 60  # housekeeping rounds (seconds) between prunes of the full rate-limit buckets


class TickPath:
    def __init__(self, state: MarketState, feed: FeedSource, engine: Engine, history: TickHistory,
                 listeners: AppliedTicks, registry: Registry, epoch: str) -> None:
        """`engine`: its bus, tick log, resume-history source and ingest inbox are the seams used; `history`: this
        hub's resume history (filled by the stream core from every applied batch, and here from `earlier` at start);
        `listeners`: who hears of batches and gets applied ticks."""
        self.feed = feed
        self.state = state
        self.bus: TickBus = engine.bus
        self.tick_log: TickLog = engine.ticks
        self.earlier: ResumeHistory = engine.history
        self.inbox: TickInbox = engine.inbox
        self.history = history
        self.listeners = listeners
        self.epoch = epoch
        self.applied = registry.counter("market_ticks_applied_total", "Ticks applied to the market state.")
        # SPEC 20's feed-to-frame latency: from a batch's arrival from the bus to its frames written (docs/sla.md)
        self.feed_to_frame = registry.histogram("market_feed_to_frame_seconds",
                                                "From a tick batch's arrival at this hub to its frames written.")
        for name in ("bad_lines", "unknown_ids"):
            registry.gauge(f"market_feed_{name}", f"Feed lines skipped ({name.replace('_', ' ')}).",
                           self._feed_stat(name))
        restarts = registry.counter("market_feed_restarts_total", "Feed restarts after a failure.")
        self.supervisor = FeedSupervisor(feed, self.on_feed, on_restart=restarts.inc)
        registry.gauge("market_feed_up", "1 while the feed runs (0: failed, restarting).",
                       lambda: float(self.supervisor.ready()))
        self._feed_task: asyncio.Task[None] | None = None
        self._published_ts: np.ndarray | None = None  # per instrument: newest tick ts when this hub took the feed
        self.lead_listeners: list[Callable[[bool], None]] = []

    def _feed_stat(self, name: str) -> Callable[[], float]:
        return lambda: float(self.feed.stats().get(name, 0))

    def ready(self) -> bool:
        """The tick bus is reachable and current here, and (on the lease holder) the feed runs."""
        return self.bus.healthy() and (not self.tick_log.leading or self.supervisor.ready())

    async def start(self) -> None:
        """Continue from the tick log, then start the bus (the lease holder's feed starts in `on_lead`)."""
        await self._join()

    async def stop(self) -> None:
        """Stop the feed (the tick log is the engine's: it stops with it)."""
        task, self._feed_task = self._feed_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def close_feed(self) -> None:
        """The feed stops reading (once the loop's work has stopped)."""
        self.feed.close()

    # --- the hops --------------------------------------------------------------------------------------------
    def on_feed(self, ticks: list[Tick]) -> None:
        """Hop 2: the feed's batch onto the tick bus (applied when the bus hands it back, as on every hub)."""
        published = self._published_ts
        if published is not None:  # a replayed file after taking the feed over: drop what was published before
            ticks = [t for t in ticks if t.ts > published[t.row]]
        seq = self.state.seq
        self.bus.append(ticks, [int(seq[t.row]) for t in ticks])

    def ingest(self, account: str, ticks: list[Tick], rate: int, once: Once | None = None) -> Put | Awaitable[Put]:
        """A dedicated data source's batch (SPEC 20) onto the tick bus as the feed's go (numbered, archived, streamed,
        candled), from any hub, once the account's bucket (`rate` ticks a second) lets it: the engine's inbox
        (memory: at once; Redis: through the lease holder, shared with every hub). 0.0: kept; else the seconds to
        wait, nothing kept; `Replayed`: the batch's Idempotency-Key (`once`) was kept already, nothing kept now;
        InboxUnavailable: nothing kept."""
        seq = self.state.seq
        return self.inbox.put(account, ticks, rate, [int(seq[t.row]) for t in ticks], once)

    def on_batch(self, batch: Numbered) -> None:
        """Hop 4: a numbered batch from the bus, applied."""
        arrived = perf_counter()
        ticks = [tick for tick, _ in batch]
        if ticks:
            self.listeners.before(ticks)
        applied = self.state.apply(ticks, [seq for _, seq in batch])
        self._publish(applied)
        if applied:
            self.feed_to_frame.observe(perf_counter() - arrived)

    def _publish(self, applied: list[AppliedTick]) -> None:
        if applied:
            self.applied.inc(amount=len(applied))
            self.listeners.publish(applied)

    # --- joining the log, leading the feed ---------------------------------------------------------------------
    async def _join(self) -> None:
        """Continue every instrument's seq from the log, then read it (and compete for the feed lease)."""
        state, tick_log = self.state, self.tick_log
        seqs = await tick_log.load_seqs()
        last = await tick_log.last_ticks()  # the prices and times the other hubs show (volume counted there)
        started = self.epoch.split("-", 1)[0]
        # demo prices no tick moved yet: as of the history's start (the epoch's), the same on every hub
        state.restore(last, seqs, float(started) if state.demo and started.isdigit() else None)
        for batch in await self.earlier.tail(self.history.covered):  # resumes of ticks from before this hub
            self.history.add([logged_tick(state, tick, seq) for tick, seq in batch])
        self.bus.start(self.on_batch, self.on_lead)
        await tick_log.lease_tried()  # a lone hub leads (feed, evidence anchoring) before it is ready

    def on_lead(self, leading: bool) -> None:
        """The feed runs on the lease holder only; `lead_listeners` hear of every change (a shared archive)."""
        for listener in self.lead_listeners:
            listener(leading)
        if leading:
            # a replayed jsonl file starts after these (NaN: that instrument never ticked)
            self._published_ts = np.nan_to_num(self.state.updated_ts, nan=-np.inf)
            self.feed.resume_from(self.state.prices)  # the demo walk goes on from the prices every hub shows
            self._feed_task = asyncio.get_running_loop().create_task(self.supervisor.run(), name="feed")
        elif self._feed_task is not None:
            self._feed_task.cancel()
            self._feed_task = None


class Housekeeping:
    """Every second: roll candles at local midnight; every minute: drop the rate-limit buckets that are full."""

    def __init__(self, state: MarketState, buckets: LimiterStore, clock: Callable[[], float]) -> None:
        self.state = state
        self.buckets = buckets
        self.clock = clock
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="housekeeping")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def _run(self) -> None:
        rounds = 0
        while True:
            await asyncio.sleep(1.0)
            now = self.clock()
            self.state.roll(now)
            rounds += 1
            if rounds % PRUNE_EVERY == 0:
                self.buckets.prune(now)
