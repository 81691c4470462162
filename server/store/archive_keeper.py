"""A live feed's ticks in the durable archive (SPEC 18), and today's candles back from it at start.

- `ArchiveKeeper.on_ticks` listens to the applied ticks on the loop and hands each batch to the archive writer's
  buffer (server/store/archive.py: group commits off the loop, at least every half second); it never waits.
- `ArchiveKeeper.replay(state)` runs once at start, before anything is served: the ticks of each instrument's
  live trading day (from its session's start: the venue's previous close) are applied again, in the order they
  were accepted (their seq), through the market state's own tick path. So after a restart, even `kill -9`, the
  live daily candle and today's intraday buckets are exactly what they were, less at most the last second of
  ticks (the writer's group commit); a live candle the previous run stored (its shutdown flush) is replaced by
  the replay for every instrument the archive has ticks of, never added to.
- `close()` commits what is buffered (at shutdown, after the feed stopped).

Not yet (issue 31): closed intraday buckets of earlier days are not stored, so after a restart the rings hold
today's session only; the Redis engine does not archive (its lease holder would, fenced as in SPEC 15).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from server.core.metrics import Registry
from server.market.daily import unopen_live
from server.market.state import AppliedTick, MarketState
from server.market.tick import Tick
from server.store.archive import TickArchive
from server.store.candle_store import CandleStore
from server.store.history import History

log = logging.getLogger("market.archive")

FAR_MS = 1 << 53  # "until now and later": the archive's read takes [start, end)


class ArchiveKeeper:
    def __init__(self, history: History) -> None:
        self.history = history
        self.lost = 0  # ticks the writer refused (its buffer full while commits kept failing)

    def on_ticks(self, applied: list[AppliedTick]) -> None:
        """An applied-ticks listener: the batch into the writer's buffer (no I/O here)."""
        if not self.history.submit_ticks([(t.id, int(t.ts * 1000), t.seq, t.price, t.volume) for t in applied]):
            self.lost += len(applied)

    def replay(self, state: MarketState) -> int:
        """Apply each instrument's archived ticks of its live trading day again (see the module docstring);
        returns how many. Blocking: start-up only."""
        ids = [inst.id for inst in state.catalogue.instruments]
        starts = [int(state.floors.of(row, state.candles.live_day(row)) * 1000) if len(state.candles) else 0
                  for row in range(len(ids))]

        def read(_candles: CandleStore, archive: TickArchive) -> list[list[tuple[str, int, int, float, float]]]:
            return [list(archive.read(inst, start, FAR_MS)) for inst, start in zip(ids, starts, strict=True)]

        per_row = self.history.read_blocking(read)
        batch: list[Tick] = []
        seqs: list[int] = []
        rows = []
        for row, ticks in enumerate(per_row):
            if not ticks:
                continue
            rows.append(row)
            for _, ts_ms, seq, price, volume in sorted(ticks, key=lambda t: t[2]):  # accepted order
                batch.append(Tick(row, price, ts_ms / 1000, volume))
                seqs.append(seq)
        if not batch:
            return 0
        unopen_live(state.candles, rows)  # the stored live candle of a previous run is replaced, not added to
        state.apply(batch, seqs)
        log.info("replayed %d archived ticks of today's sessions (%d instruments)", len(batch), len(rows))
        return len(batch)

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
