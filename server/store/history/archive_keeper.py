"""A live feed's ticks in the durable archive (SPEC 18), and today's candles back from it at start.

- `ArchiveKeeper.on_ticks` listens to the applied ticks on the loop and hands each batch to the archive writer's
  buffer (server/store/history/archive.py: group commits off the loop, at least every half second); it never waits.
- `ArchiveKeeper.replay(state)` runs once at start, before anything is served: the ticks of each instrument's
  live trading day (from its session's start: the venue's previous close) are applied again, in the order they
  were accepted (their seq), through the market state's own tick path. So after a restart, even `kill -9`, the
  live daily candle and today's intraday buckets are exactly what they were, less at most the last second of
  ticks (the writer's group commit); a live candle the previous run stored (its shutdown flush) is replaced by
  the replay for every instrument the archive has ticks of, never added to.
- `restore_closed()` loads the stored intraday buckets of earlier sessions into the rings, and
  `store_missing_bars()` first rebuilds, stores and loads those of sessions a killed hub never stored
  (server/store/history/archive_gap.py).
- `close()` commits what is buffered (at shutdown, after the feed stopped).

Many hubs on one archive (the Redis engine with `--database-url`, SPEC 18): every hub applies every tick from the
Redis stream, but only the feed's lease holder writes them (`may_write`). Each hub keeps the ticks it applied in
the last RECENT_S seconds; one that takes the lease (`on_lead`) first writes those again: what the last holder
applied but had not committed when it stopped (at most its last group commit, under a second) is not lost, and
the archive keeps one row per tick (it ignores a tick it holds: (id, ts, seq) is its key), so nothing is written
twice. With a data dir of its own (SQLite) each hub writes its own archive, every tick.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from functools import partial

from server.core.metrics import Registry
from server.market.candles.daily import unopen_live
from server.market.state import AppliedTick, MarketState
from server.market.tick import Tick, detail_compact, detail_of
from server.store.history.archive import DetailedTick, TickArchive
from server.store.history.archive_gap import DAY_MS, GAP_DAYS, missing_bars, read_detailed, read_ticks
from server.store.history.candle_store import Bar, CandleStore
from server.store.history.retention import Retention
from server.store.history.threads import History, HistoryRounds

log = logging.getLogger("market.archive")

FAR_MS = 1 << 53  # "until now and later": the archive's read takes [start, end)
# a hub keeps the ticks it applied this long: more than a lease holder can leave uncommitted when it stops (its
# group commit, under a second) plus the lease's expiry (3 s) and a slow take-over
RECENT_S = 30.0


class ArchiveKeeper:
    def __init__(self, history: History, state: MarketState, may_write: Callable[[], bool] | None = None) -> None:
        """`may_write`: on a shared archive, whether this hub holds the feed's lease (None: it always writes)."""
        self.history = history
        self.state = state
        self.may_write = may_write
        self.recent: deque[tuple[float, list[DetailedTick]]] = deque()  # (monotonic, batch): the last RECENT_S
        self.lost = 0  # ticks the writer refused (its buffer full while commits kept failing)
        # interval -> row -> the bucket start (s) after which the ring's buckets are not stored yet: loaded ones
        # are, and the newest stored is stored again (it may have grown); a bucket the retention job deleted from
        # the store is never written back from the ring
        self.stored_after = {name: [-(2**62)] * ring.n for name, ring in state.intraday.rings.items()}

    def on_ticks(self, applied: list[AppliedTick]) -> None:
        """An applied-ticks listener: the batch into the writer's buffer (no I/O here); on a shared archive only
        while this hub holds the feed's lease, and kept for RECENT_S in case it takes the lease."""
        rows = [(t.id, int(t.ts * 1000), t.seq, t.price, t.volume,
                 None if t.detail is None else detail_compact(t.detail)) for t in applied]
        if self.may_write is not None:
            now = time.monotonic()
            recent = self.recent
            recent.append((now, rows))
            while recent[0][0] < now - RECENT_S:
                recent.popleft()
            if not self.may_write():
                return
        self._submit(rows)

    def on_lead(self, leading: bool) -> None:
        """The lease came to this hub (a listener of the tick path's lead changes): the ticks it applied in the
        last RECENT_S go to the archive first (see the module docstring); the archive skips those it holds."""
        if leading and self.may_write is not None and self.recent:
            rows = [tick for _, batch in self.recent for tick in batch]
            self._submit(rows)
            log.info("took the feed's lease: %d recently applied ticks handed to the archive (those it holds are "
                     "skipped)", len(rows))

    def _submit(self, rows: list[DetailedTick]) -> None:
        if not self.history.submit_ticks(rows):
            self.lost += len(rows)

    def restore_closed(self) -> int:
        """Each intraday ring's stored buckets from before each instrument's live session (the newest `capacity`),
        as the previous runs stored them (`closed_bars`); returns how many. Blocking: start-up only, before
        `replay`."""
        state = self.state
        ids = [inst.id for inst in state.catalogue.instruments]
        floors = [self._floor_ms(row) for row in range(len(ids))]
        rings = state.intraday.rings

        def read(candles: CandleStore, _archive: TickArchive) -> dict[str, list[list[Bar]]]:
            return {name: [candles.latest(name, inst, floor, ring.capacity) for inst, floor in zip(ids, floors,
                                                                                                     strict=True)]
                    for name, ring in rings.items()}

        stored = self.history.read_blocking(read)
        n = 0
        for name, per_row in stored.items():
            for row, bars in enumerate(per_row):
                if bars:
                    rings[name].load_row(row, [(b[1] // 1000, b[2], b[3], b[4], b[5], b[6]) for b in bars])
                    self.stored_after[name][row] = bars[-1][1] // 1000
                    n += len(bars)
        return n

    def store_missing_bars(self) -> int:
        """The intraday buckets of sessions after the newest stored ones and before the live one, rebuilt from the
        archived ticks (store/history/archive_gap.py), stored and loaded into the rings; how many. Blocking: start-up
        only, after `restore_closed`, before `replay`."""
        state = self.state
        if not state.clocks:
            return 0
        ids = [inst.id for inst in state.catalogue.instruments]
        spans = []
        for row in range(len(ids)):
            live = self._floor_ms(row)
            stored = max((after[row] + state.intraday.rings[name].seconds) * 1000
                         for name, after in self.stored_after.items())
            spans.append((max(live - GAP_DAYS * DAY_MS, stored), live))
        bars: dict[str, list[Bar]] = {name: [] for name in state.intraday.rings}
        for row, (lo, hi) in enumerate(spans):  # one instrument's ticks in memory at a time
            if lo >= hi:
                continue
            ticks = self.history.read_blocking(partial(read_ticks, inst=ids[row], start=lo, end=hi))
            if ticks:
                for name, made in missing_bars(ids[row], state.clocks[row], partial(state.floors.of, row),
                                               ticks).items():
                    bars[name] += made
        total = sum(len(made) for made in bars.values())
        if total:
            for name, made in bars.items():
                def put(candles: CandleStore, _archive: TickArchive, n: str = name, b: list[Bar] = made) -> None:
                    candles.put_closed(n, b)

                self.history.write_blocking(put)
            self.restore_closed()
            log.info("rebuilt %d intraday buckets of sessions not stored before (from the archived ticks)", total)
        return total

    def closed_bars(self) -> dict[str, list[Bar]]:
        """On the loop: the intraday buckets not stored yet, per interval, for `store_closed` (upserts: the newest,
        stored while open, is stored again whole later); a restart loads those before the live session and replays
        the session's ticks, so a bucket is never counted twice."""
        ids = [inst.id for inst in self.state.catalogue.instruments]
        out: dict[str, list[Bar]] = {}
        for name, ring in self.state.intraday.rings.items():
            rows: list[Bar] = []
            after = self.stored_after[name]
            for row, inst in enumerate(ids):
                starts, cols = ring.held(row)
                new = starts > after[row]
                starts, cols = starts[new], cols[new]
                if len(starts):
                    after[row] = int(starts[-1]) - 1
                for t, col in zip(starts.tolist(), cols.tolist(), strict=True):
                    rows.append((inst, t * 1000, float(ring.o[row, col]), float(ring.h[row, col]),
                                 float(ring.l[row, col]), float(ring.c[row, col]), float(ring.v[row, col])))
            out[name] = rows
        return out

    async def store_closed(self) -> None:
        """The buckets of earlier sessions into the candle store (at a roll of the live day: off the loop)."""
        for name, rows in self.closed_bars().items():  # taken on the loop, written on the writer thread
            if rows:
                await self.history.put_closed(name, rows)

    def store_closed_blocking(self) -> None:
        """The same at shutdown (once the loop's work has stopped)."""
        for name, rows in self.closed_bars().items():
            if rows:
                def put(candles: CandleStore, _archive: TickArchive, n: str = name, r: list[Bar] = rows) -> None:
                    candles.put_closed(n, r)

                self.history.write_blocking(put)

    def _floor_ms(self, row: int) -> int:
        """Where `row`'s live trading day begins (its venue's previous close), epoch ms."""
        state = self.state
        return int(state.floors.of(row, state.candles.live_day(row)) * 1000) if len(state.candles) else 0

    def replay(self) -> int:
        """Apply each instrument's archived ticks of its live trading day again (see the module docstring), one
        instrument at a time (its session's ticks in memory, not every instrument's); returns how many. Blocking:
        start-up only."""
        state = self.state
        total = instruments = 0
        for row, inst in enumerate(i.id for i in state.catalogue.instruments):
            ticks = self.history.read_blocking(partial(read_detailed, inst=inst, start=self._floor_ms(row),
                                                       end=FAR_MS))
            if not ticks:
                continue
            ticks.sort(key=lambda t: t[2])  # the order they were accepted in
            unopen_live(state.candles, [row])  # the stored live candle of a previous run is replaced, not added to
            state.apply([Tick(row, price, ts_ms / 1000, volume, None if detail is None else detail_of(detail))
                         for _, ts_ms, _, price, volume, detail in ticks], [t[2] for t in ticks])
            total += len(ticks)
            instruments += 1
        if total:
            log.info("replayed %d archived ticks of today's sessions (%d instruments)", total, instruments)
        return total

    def close(self) -> bool:
        return self.history.close()

    def register_metrics(self, registry: Registry) -> Callable[[], bool]:
        """The archive's size, lag and commit time in /metrics; returns the writable check /readyz adds."""
        stats = self.history.stats
        registry.gauge("market_archive_size_bytes", "Size of the tick archive (measured after commits).",
                       lambda: float(stats().size_bytes))
        registry.gauge("market_archive_lag_seconds", "Age of the oldest accepted tick not committed yet.",
                       lambda: stats().lag_s)
        registry.gauge("market_archive_commit_seconds", "Duration of the archive's last group commit.",
                       lambda: stats().commit_s)
        registry.gauge("market_archive_committed_ticks", "Ticks committed to the archive since start.",
                       lambda: float(stats().committed))
        registry.gauge("market_archive_writable", "1 while the archive accepts writes, 0 after a failed commit.",
                       lambda: float(stats().writable))
        registry.gauge("market_archive_lost_ticks", "Ticks not archived (the buffer was full while commits failed).",
                       lambda: float(self.lost))
        return lambda: self.history.writable


class RetentionJob(HistoryRounds):
    """The history's retention (SPEC 18): a pruning round at start and every `every_s` after, on the history's
    writer thread (short transactions: the archive's commits and the candle writes wait at most one step)."""

    name = "retention"

    def __init__(self, history: History, retention: Retention, clock: Callable[[], float],
                 every_s: float = 3600.0) -> None:
        super().__init__(every_s)
        self.history, self.retention, self.clock = history, retention, clock

    async def round(self) -> dict[str, int]:
        deleted = await self.history.prune(self.clock(), self.retention)
        if any(deleted.values()):
            log.info("retention: deleted %s", ", ".join(f"{n} {kind}" for kind, n in deleted.items() if n))
        return deleted
