"""Feed sources: the synthetic demo feed and a JSON-lines feed (file or stdin), and their supervisor.

A source owns the market state it writes (single writer) and pushes each
batch of ticks to the hub's callback; nothing else mutates the state. The
``FeedSupervisor`` runs a source and restarts it when it fails, so a feed is
never dead without the log, ``/readyz`` and the metrics saying so. The jsonl
source's file-following reader thread is ``server.feeds.lines``.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import math
import os
import stat
from collections.abc import Callable
from datetime import date
from typing import Protocol

import numpy as np

from server.config import FeedSettings
from server.core.background import log_round_failure
from server.feeds.lines import FeedReadError, LineReader
from server.market.candles import CandleBook
from server.market.catalogue import Catalogue
from server.market.feed import JsonlParser, Tick
from server.market.state import MarketState, build_demo_state
from server.market.timefmt import day_start, trading_day, trading_days_back
from server.store.db import storage_errors
from server.store.repositories import Candles

log = logging.getLogger("market.feed")

OnTicks = Callable[[list[Tick]], None]
HISTORY_DAYS = 90
CHUNKS_PER_STEP = 8  # chunks applied per loop step before yielding to other tasks


class FeedUnavailable(Exception):
    """The feed cannot start (a jsonl file that is missing or unreadable at start)."""


class FeedSource(Protocol):
    state: MarketState

    async def run(self, on_ticks: OnTicks) -> None: ...

    def ready(self) -> bool: ...

    def flush(self) -> None: ...

    def stats(self) -> dict[str, int]: ...

    def resume_from(self, prices: np.ndarray) -> None:
        """Continue from these prices (a hub taking over the feed from another, Redis engine)."""
        ...


def check_feed_source(settings: FeedSettings) -> None:
    """Raise FeedUnavailable (one line for the operator) when a jsonl file cannot be opened at start."""
    path = settings.feed_path
    if path is None or path == "-":
        return
    try:
        if stat.S_ISFIFO(os.stat(path).st_mode):  # opening a named pipe would wait for (or break) its writer
            if not os.access(path, os.R_OK):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
            return
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise FeedUnavailable(f"--feed {settings.feed}: cannot read {path}: {exc.strerror or exc}") from None


def make_feed(
    settings: FeedSettings, catalogue: Catalogue, candles: Candles, clock: Callable[[], float], epoch: str
) -> FeedSource:
    if settings.is_demo:
        return DemoSource(catalogue, settings, clock)
    return JsonlSource(catalogue, settings.feed_path or "-", candles, clock, epoch)


class FeedSupervisor:
    """Runs a feed source; a failure is logged with its cause and the source run again after a backoff.

    ``up`` is False from a failure until the source runs again (``/readyz`` answers 503 meanwhile);
    ``on_restart`` is called once per restart (the restarts metric). A source whose ``run`` returns
    (stdin at EOF) has ended cleanly: it is not restarted and the last prices keep being served.
    """

    def __init__(
        self, feed: FeedSource, on_ticks: OnTicks, on_restart: Callable[[], None] = lambda: None,
        backoff_s: tuple[float, float] = (0.5, 30.0),
    ) -> None:
        self.feed = feed
        self.on_ticks = on_ticks
        self.on_restart = on_restart
        self.backoff_s = backoff_s
        self.up = False
        self.ended = False
        self.restarts = 0
        self.last_failure: str | None = None

    def ready(self) -> bool:
        return self.up and self.feed.ready()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        delay = self.backoff_s[0]
        while True:
            started = loop.time()
            self.up = True
            try:
                await self.feed.run(self.on_ticks)
            except asyncio.CancelledError:
                self.up = False
                raise
            except Exception as exc:
                self.up = False
                if loop.time() - started > 10 * self.backoff_s[1]:
                    delay = self.backoff_s[0]  # it ran a good while: this is a new failure, not a loop
                self.last_failure = f"{type(exc).__name__}: {exc}"
                trace = None if isinstance(exc, FeedReadError) else exc  # an I/O condition needs no traceback
                log.error("feed failed (%s); restarting in %.1f s", self.last_failure, delay, exc_info=trace)
                await asyncio.sleep(delay)
                delay = min(2 * delay, self.backoff_s[1])
                self.restarts += 1
                self.on_restart()
                log.info("feed restarted (restart %d)", self.restarts)
                continue
            self.ended = True
            return


class DemoSource:
    def __init__(self, catalogue: Catalogue, settings: FeedSettings, clock: Callable[[], float]) -> None:
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

    def resume_from(self, prices: np.ndarray) -> None:
        self.feed.resume(prices)

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
        self.reader = LineReader(path)
        self.ticks_received = 0
        self._persisted_day = self.candles.last_day()

    async def run(self, on_ticks: OnTicks) -> None:
        """Apply lines as they are read; returns at the end of stdin, raises when the file cannot be read."""
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        self.reader.start(lambda: loop.call_soon_threadsafe(wake.set))
        try:
            while True:
                wake.clear()
                chunks = self.reader.take(CHUNKS_PER_STEP)
                if not chunks:
                    await wake.wait()
                    continue
                for chunk in chunks:
                    if chunk is None:
                        log.info("jsonl feed ended: %d ticks, %d bad lines, %d unknown ids",
                                 self.ticks_received, self.parser.bad_lines, self.parser.unknown_ids)
                        return
                    if isinstance(chunk, Exception):
                        raise chunk
                    await self._apply(chunk, on_ticks)
                await asyncio.sleep(0)  # a long backlog is applied in steps, not in one stall
        except asyncio.CancelledError:
            self.reader.stop()
            raise

    async def _apply(self, lines: list[bytes], on_ticks: OnTicks) -> None:
        now = self.clock()
        not_before = day_start(self.candles.first_day()) if len(self.candles) else -math.inf
        parse = self.parser.parse
        ticks = [t for t in (parse(raw, now, not_before) for raw in lines) if t is not None]
        if ticks:
            self.ticks_received += len(ticks)
            on_ticks(ticks)
            await self._persist_closed()

    async def _persist_closed(self) -> None:
        """At a day's roll-over, upsert the candles we traded on the storage's writer (the loop only awaits it)."""
        day = self.candles.last_day()
        if day != self._persisted_day:
            self._persisted_day = day
            try:
                await self.repo.upsert(export_candles(self.catalogue, self.candles))
            except storage_errors() as exc:  # the next roll-over or the final flush retries
                log_round_failure(log, "persisting closed candles", exc)

    def ready(self) -> bool:
        return self.reader.failing is None

    def stats(self) -> dict[str, int]:
        return {"bad_lines": self.parser.bad_lines, "unknown_ids": self.parser.unknown_ids}

    def resume_from(self, prices: np.ndarray) -> None:
        """Prices come from the lines; the hub drops lines the previous leader already published."""

    def flush(self) -> None:
        """Persist the candles this process traded (closed ones and today's, upserted); at shutdown."""
        self.reader.stop()
        self.repo.upsert_blocking(export_candles(self.catalogue, self.candles))


def load_candles(catalogue: Catalogue, repo: Candles, today: date) -> CandleBook:
    """The last 90 trading days from storage; a day without a stored candle is unopened at the previous close."""
    days = trading_days_back(today, HISTORY_DAYS)
    n = len(catalogue.instruments)
    grid = np.full((5, n, len(days)), np.nan)
    col = {d: i for i, d in enumerate(days)}
    for inst_id, day, o, h, lo, c, v in repo.since_blocking(days[0]):  # start-up: before the server accepts
        row = catalogue.index.get(inst_id)
        if row is not None and day in col:
            grid[:, row, col[day]] = (o, h, lo, c, v)
    _carry_close(grid)
    book = CandleBook(n, HISTORY_DAYS)
    book.load_history(days, grid[0], grid[1], grid[2], grid[3], grid[4])
    return book


def _carry_close(grid: np.ndarray) -> None:
    """A day without a stored candle carries the previous close (open/high/low stay NaN, volume 0).

    The candle book reads such a day as flat at that close; it is never written back to storage.
    """
    for j in range(1, grid.shape[2]):
        missing = np.isnan(grid[3, :, j])
        grid[3, missing, j] = grid[3, missing, j - 1]
    grid[4] = np.nan_to_num(grid[4])


def export_candles(catalogue: Catalogue, book: CandleBook) -> list[tuple[str, date, float, float, float, float, float]]:
    """The candles this process applied ticks to: never a flat fill over an imported candle."""
    ids = [inst.id for inst in catalogue.instruments]
    return [(ids[row], day, o, h, lo, c, v) for row, day, (o, h, lo, c, v) in book.ticked_candles()]


__all__ = ["FeedReadError", "FeedSource", "FeedSupervisor", "FeedUnavailable", "LineReader", "make_feed"]
