"""Feed sources: the synthetic demo feed and the JSON-lines feeds (file or stdin), and their supervisor.

A source only yields batches of ticks (`batches()`, an async iterator); it owns no market state: the root
builds the state and the tick path applies what the source yields. The ``FeedSupervisor`` runs a source and
restarts it when it fails, so a feed is never dead without the log, ``/readyz`` and the metrics saying so. The
jsonl source's file-following reader thread is ``server.feeds.lines``; its parser is ``server.feeds.jsonl`` (ids
and exchange symbols: ``server.feeds.symbols``) for ``jsonl:``, ``server.feeds.ctp_lines`` over the pure
normaliser ``server.feeds.ctp`` for ``ctp-jsonl:`` (CTP depth records); ``server.feeds.routes`` says which rows a
tick moves (a contract's and its product's main series).
May import `core`, `config`, `market`, `engine` and `store` (layer 4).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import stat
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Protocol

import numpy as np

from server.config import FeedSettings
from server.feeds.ctp import CtpNormaliser
from server.feeds.ctp_lines import CtpParser
from server.feeds.jsonl import JsonlParser, Limits
from server.feeds.lines import FeedReadError, LineReader
from server.feeds.symbols import ContractSymbols
from server.market.catalogue import Catalogue
from server.market.contracts.listing import ContractBook
from server.market.demo import DemoWalk
from server.market.tick import Tick
from server.market.venues.clock import VenueClock
from server.market.venues.data import Publication
from server.market.venues.feed import in_session, prints_between

log = logging.getLogger("market.feed")

OnTicks = Callable[[list[Tick]], None]
CHUNKS_PER_STEP = 8  # chunks applied per loop step before yielding to other tasks


class FeedUnavailable(Exception):
    """The feed cannot start (a jsonl file that is missing or unreadable at start)."""


class FeedSource(Protocol):
    def batches(self) -> AsyncGenerator[list[Tick], None]:
        """The ticks, batch by batch; ends at the end of the input (stdin), raises when it cannot be read."""
        ...

    def ready(self) -> bool: ...

    def close(self) -> None:
        """Stop reading (at shutdown, once nothing runs the iterator any more)."""
        ...

    def stats(self) -> dict[str, int]: ...

    def resume_from(self, prices: np.ndarray) -> None:
        """Continue from these prices (a hub taking over the feed from another, Redis engine)."""
        ...


class LineParser(Protocol):
    """One line of a JSON-lines feed into a tick, or None (a blank line, or a rejection it counts)."""

    bad_lines: int
    unknown_ids: int

    def parse(self, line: bytes | str, now: float, not_before: float = ...) -> Tick | None: ...


def line_parser(kind: str, catalogue: Catalogue, book: ContractBook, clock_of: Callable[[str], VenueClock],
                within_limits: Limits) -> LineParser:
    """The parser of a `jsonl` or `ctp-jsonl` feed: `book` the contracts (symbols resolve on its products'
    venues), `clock_of` a venue id's clock, `within_limits` the market state's daily limits."""
    if kind == "ctp-jsonl":
        return CtpParser(CtpNormaliser(book.products, book, clock_of), catalogue.index, within_limits)
    venues = {p.venue for p in book.products.values()}
    return JsonlParser(catalogue, within_limits, ContractSymbols(book, clock_of, venues))


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


class FeedSupervisor:
    """Runs a feed source; a failure is logged with its cause and the source run again after a backoff.

    ``up`` is False from a failure until the source runs again (``/readyz`` answers 503 meanwhile);
    ``on_restart`` is called once per restart (the restarts metric). A source whose ``batches`` end
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
                async with contextlib.aclosing(self.feed.batches()) as batches:  # its reader stops on a failure
                    async for batch in batches:
                        self.on_ticks(batch)
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
    """The demo walk's next batch every tick interval (the walk's prices are the state's: see build_demo_state).

    With `hours` (SPEC 16, `--demo-hours sessions`): a continuous instrument moves only while its venue is in
    session, and an assessment or monthly price prints once, at its publication time (the walk's price then).
    Without (`--demo-hours always`, for load tests): every instrument may move on every tick."""

    def __init__(self, walk: DemoWalk, interval_s: float, clock: Callable[[], float],
                 hours: Sequence[VenueClock] | None) -> None:
        self.walk = walk
        self.interval = interval_s
        self.clock = clock
        self.hours = hours
        self._published = [i for i, c in enumerate(hours or ()) if c.venue.publication is not Publication.CONTINUOUS]
        self._last_ms = int(clock() * 1000)

    async def batches(self) -> AsyncGenerator[list[Tick], None]:
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while True:
            next_at += self.interval
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            now = self.clock()
            batch = self.walk.next_batch(now, self.interval)
            if self.hours is not None:
                batch = self.in_hours(batch, int(now * 1000))
            if batch:
                yield batch

    def in_hours(self, batch: list[Tick], now_ms: int) -> list[Tick]:
        """The walk's ticks of instruments in session, plus the publications due since the last batch."""
        hours, after = self.hours, self._last_ms
        assert hours is not None
        self._last_ms = now_ms
        out = [t for t in batch
               if hours[t.row].venue.publication is Publication.CONTINUOUS and in_session(hours[t.row], now_ms)]
        if self._published:
            prices = self.walk.live_prices()
            for row in self._published:
                out += [Tick(row, float(prices[row]), at / 1000, 1.0)
                        for at, _ in prints_between(hours[row], after, now_ms)]
        return out

    def ready(self) -> bool:
        return True

    def close(self) -> None:
        """The demo feed keeps nothing."""

    def resume_from(self, prices: np.ndarray) -> None:
        self.walk.resume(prices)

    def stats(self) -> dict[str, int]:
        return {}


class JsonlSource:
    """Reads JSON lines in a thread (`{"id","price","ts","volume"?}`, or CTP depth records) and yields their ticks
    in batches."""

    def __init__(self, parser: LineParser, path: str, clock: Callable[[], float],
                 not_before: Callable[[], float], routes: Callable[[Tick], list[Tick]] = lambda t: [t]) -> None:
        """`parser`: `line_parser`'s; `not_before`: the earliest tick time the market state keeps (older lines are
        bad lines); `routes`: the ticks one line's tick makes (server/feeds/routes.py: a product's main series)."""
        self.path = path
        self.clock = clock
        self.not_before = not_before
        self.parser = parser
        self.routes = routes
        self.reader = LineReader(path)
        self.ticks_received = 0

    async def batches(self) -> AsyncGenerator[list[Tick], None]:
        """Lines as they are read; ends at the end of stdin, raises when the file cannot be read."""
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
                    ticks = self._parse(chunk)
                    if ticks:
                        yield ticks
                await asyncio.sleep(0)  # a long backlog is applied in steps, not in one stall
        finally:
            self.reader.stop()

    def _parse(self, lines: list[bytes]) -> list[Tick]:
        now, not_before, parse = self.clock(), self.not_before(), self.parser.parse
        ticks = [t for t in (parse(raw, now, not_before) for raw in lines) if t is not None]
        self.ticks_received += len(ticks)
        routes = self.routes
        return [out for t in ticks for out in routes(t)]

    def ready(self) -> bool:
        return self.reader.failing is None

    def stats(self) -> dict[str, int]:
        return {"bad_lines": self.parser.bad_lines, "unknown_ids": self.parser.unknown_ids}

    def resume_from(self, prices: np.ndarray) -> None:
        """Prices come from the lines; the hub drops lines the previous leader already published."""

    def close(self) -> None:
        self.reader.stop()


__all__ = ["FeedReadError", "FeedSource", "FeedSupervisor", "FeedUnavailable", "LineParser", "LineReader",
           "line_parser"]
