"""Feed sources: the synthetic demo feed and a JSON-lines feed (file or stdin).

A source owns the market state it writes (single writer) and pushes each
batch of ticks to the hub's callback; nothing else mutates the state.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import sys
import threading
from collections.abc import Callable
from datetime import date
from typing import Protocol

import numpy as np

from server.config import Settings
from server.market.candles import CandleBook
from server.market.catalogue import Catalogue
from server.market.feed import JsonlParser, Tick
from server.market.state import MarketState, build_demo_state
from server.market.timefmt import trading_day, trading_days_back
from server.store.repositories import Candles

log = logging.getLogger("market.feed")

OnTicks = Callable[[list[Tick]], None]
HISTORY_DAYS = 90


class FeedSource(Protocol):
    state: MarketState

    async def run(self, on_ticks: OnTicks) -> None: ...

    def ready(self) -> bool: ...

    def flush(self) -> None: ...

    def stats(self) -> dict[str, int]: ...


def make_feed(
    settings: Settings, catalogue: Catalogue, candles: Candles, clock: Callable[[], float], epoch: str
) -> FeedSource:
    if settings.is_demo:
        return DemoSource(catalogue, settings, clock)
    return JsonlSource(catalogue, settings.feed_path or "-", candles, clock, epoch)


class DemoSource:
    def __init__(self, catalogue: Catalogue, settings: Settings, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.interval = settings.tick_interval_ms / 1000.0
        self.state, self.feed = build_demo_state(catalogue, settings.seed, clock())

    async def run(self, on_ticks: OnTicks) -> None:
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while True:
            next_at += self.interval
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            on_ticks(self.feed.next_batch(self.clock(), self.interval))

    def ready(self) -> bool:
        return True

    def flush(self) -> None:
        """The demo feed keeps nothing."""

    def stats(self) -> dict[str, int]:
        return {}


class JsonlSource:
    """Reads `{"id","price","ts","volume"?}` lines in a thread; the loop applies them in batches."""

    def __init__(
        self, catalogue: Catalogue, path: str, repo: Candles, clock: Callable[[], float], epoch: str
    ) -> None:
        self.catalogue = catalogue
        self.path = path
        self.repo = repo
        self.clock = clock
        self.parser = JsonlParser(catalogue)
        self.candles = load_candles(catalogue, repo, trading_day(clock()))
        self.state = MarketState(catalogue, self.candles, demo=False, epoch=epoch)
        self.ticks_received = 0
        self._persisted_day = self.candles.last_day()

    async def run(self, on_ticks: OnTicks) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=100_000)
        threading.Thread(target=self._reader, args=(loop, queue), daemon=True, name="jsonl-feed").start()
        while True:
            line = await queue.get()
            batch = self._drain(line, queue)
            if batch:
                self.ticks_received += len(batch)
                on_ticks(batch)
                await self._persist_closed()
            if line is None:
                log.info("jsonl feed ended: %d ticks, %d bad lines, %d unknown ids",
                         self.ticks_received, self.parser.bad_lines, self.parser.unknown_ids)
                return

    def _drain(self, first: bytes | None, queue: asyncio.Queue[bytes | None]) -> list[Tick]:
        now = self.clock()
        lines = [first]
        while not queue.empty() and lines[-1] is not None:
            lines.append(queue.get_nowait())
        ticks = [self.parser.parse(raw, now) for raw in lines if raw is not None]
        return [t for t in ticks if t is not None]

    def _reader(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[bytes | None]) -> None:
        stream = sys.stdin.buffer if self.path == "-" else open(self.path, "rb")  # noqa: SIM115
        try:
            for raw in stream:
                if raw.strip():
                    asyncio.run_coroutine_threadsafe(queue.put(raw), loop).result()
        except Exception:
            log.exception("jsonl feed reader failed")
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
            asyncio.run_coroutine_threadsafe(queue.put(None), loop)

    async def _persist_closed(self) -> None:
        """At a day's roll-over, upsert the buffer on the storage's writer (the loop only awaits it)."""
        day = self.candles.last_day()
        if day != self._persisted_day:
            self._persisted_day = day
            try:
                await self.repo.upsert(export_candles(self.catalogue, self.candles))
            except sqlite3.Error:
                log.exception("persisting closed candles failed; the next roll-over or the final flush retries")

    def ready(self) -> bool:
        return True

    def stats(self) -> dict[str, int]:
        return {"bad_lines": self.parser.bad_lines, "unknown_ids": self.parser.unknown_ids}

    def flush(self) -> None:
        """Persist every candle in the buffer (closed ones and today's, upserted); at shutdown."""
        self.repo.upsert_blocking(export_candles(self.catalogue, self.candles))


def load_candles(catalogue: Catalogue, repo: Candles, today: date) -> CandleBook:
    days = trading_days_back(today, HISTORY_DAYS)
    n = len(catalogue.instruments)
    grid = np.full((5, n, len(days)), np.nan)
    col = {d: i for i, d in enumerate(days)}
    for inst_id, day, o, h, lo, c, v in repo.since_blocking(days[0]):  # start-up: before the server accepts
        row = catalogue.index.get(inst_id)
        if row is not None and day in col:
            grid[:, row, col[day]] = (o, h, lo, c, v)
    _fill_flat(grid)
    book = CandleBook(n, HISTORY_DAYS)
    book.load_history(days, grid[0], grid[1], grid[2], grid[3], grid[4])
    return book


def _fill_flat(grid: np.ndarray) -> None:
    """A day without a stored candle opens flat at the previous close (volume 0)."""
    _, n, width = grid.shape
    for row in range(n):
        for j in range(1, width):
            if np.isnan(grid[0, row, j]) and not np.isnan(grid[3, row, j - 1]):
                grid[:4, row, j] = grid[3, row, j - 1]
                grid[4, row, j] = 0.0
    grid[4] = np.nan_to_num(grid[4])


def export_candles(catalogue: Catalogue, book: CandleBook) -> list[tuple[str, date, float, float, float, float, float]]:
    out = []
    for row, inst in enumerate(catalogue.instruments):
        for candle in book.series(row, HISTORY_DAYS, inst.decimals):
            if candle["c"] == candle["c"]:  # skip NaN (no data yet)
                out.append((inst.id, date.fromisoformat(candle["t"]), candle["o"], candle["h"],
                            candle["l"], candle["c"], float(candle["v"])))
    return out
