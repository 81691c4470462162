"""Feed sources: the synthetic demo feed and a JSON-lines feed (file or stdin), and their supervisor.

A source owns the market state it writes (single writer) and pushes each
batch of ticks to the hub's callback; nothing else mutates the state. The
``FeedSupervisor`` runs a source and restarts it when it fails, so a feed is
never dead without the log, ``/readyz`` and the metrics saying so.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import queue
import sys
import threading
from collections.abc import Callable
from datetime import date
from typing import BinaryIO, Protocol

import numpy as np

from server.config import Settings
from server.market.candles import CandleBook
from server.market.catalogue import Catalogue
from server.market.feed import JsonlParser, Tick
from server.market.state import MarketState, build_demo_state
from server.market.timefmt import day_start, trading_day, trading_days_back
from server.store.db import STORAGE_ERRORS
from server.store.repositories import Candles

log = logging.getLogger("market.feed")

OnTicks = Callable[[list[Tick]], None]
HISTORY_DAYS = 90
POLL_S = 0.05  # how often a followed file is checked for growth, rotation or truncation
CHUNK = 65536
QUEUE_CHUNKS = 64  # chunks read ahead of the loop before the reader waits (back-pressure)
CHUNKS_PER_STEP = 8  # chunks applied per loop step before yielding to other tasks


class FeedUnavailable(Exception):
    """The feed cannot start (a jsonl file that is missing or unreadable at start)."""


class FeedSource(Protocol):
    state: MarketState

    async def run(self, on_ticks: OnTicks) -> None: ...

    def ready(self) -> bool: ...

    def flush(self) -> None: ...

    def stats(self) -> dict[str, int]: ...


def check_feed_source(settings: Settings) -> None:
    """Raise FeedUnavailable (one line for the operator) when a jsonl file cannot be opened at start."""
    path = settings.feed_path
    if path is None or path == "-":
        return
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise FeedUnavailable(f"--feed {settings.feed}: cannot read {path}: {exc.strerror or exc}") from None


def make_feed(
    settings: Settings, catalogue: Catalogue, candles: Candles, clock: Callable[[], float], epoch: str
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


class FeedReadError(Exception):
    """The jsonl file could not be read (the reader keeps retrying; the feed reports it as a failure)."""


Chunk = list[bytes] | Exception | None  # lines, a read failure, or None at the end of stdin


class LineReader:
    """Complete lines of a file as it grows (like ``tail -F``), or of stdin until EOF, on its own thread.

    The file is read from its start, then polled every ``poll_s``: appended lines are read; a file
    replaced under the same name (rotation) is read from its start once the old one is drained; a
    file that shrank (truncation) is read again from its start; a file that disappeared is waited
    for. A line counts once its newline is written (stdin's last line counts without one). A read
    failure (the path became a directory, permissions) is handed to the loop once as an exception,
    ``failing`` says why until a read works again; the reader keeps retrying meanwhile.
    """

    def __init__(self, path: str, poll_s: float = POLL_S) -> None:
        self.path = path
        self.poll_s = poll_s
        self.failing: str | None = None
        self._chunks: queue.Queue[Chunk] = queue.Queue(maxsize=QUEUE_CHUNKS)
        self._notify: Callable[[], object] = lambda: None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._followed: _FollowedFile | None = None

    def start(self, notify: Callable[[], object]) -> None:
        """Start reading unless a reader runs; ``notify`` is called from the reader thread after each chunk."""
        self._notify = notify
        if self._thread is None or (not self._thread.is_alive() and self.path != "-"):
            self._thread = threading.Thread(target=self._run, daemon=True, name="jsonl-feed")
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def take(self, limit: int) -> list[Chunk]:
        """Up to ``limit`` chunks read so far, without waiting."""
        out: list[Chunk] = []
        while len(out) < limit:
            try:
                out.append(self._chunks.get_nowait())
            except queue.Empty:
                break
        return out

    # --- reader thread -------------------------------------------------------------------------
    def _put(self, chunk: Chunk) -> None:
        while not self._stop.is_set():
            try:
                self._chunks.put(chunk, timeout=0.25)
                break
            except queue.Full:
                continue
        try:
            self._notify()
        except RuntimeError:  # the loop is closed: the server is stopping
            self._stop.set()

    def _run(self) -> None:
        try:
            if self.path == "-":
                self._read_stdin(sys.stdin.buffer)
                self._put(None)
            else:
                self._follow()
        except Exception as exc:  # a bug, not an I/O condition: the feed fails with it and is restarted
            self._put(exc)

    def _read_stdin(self, stream: BinaryIO) -> None:
        partial = b""
        while not self._stop.is_set():
            data = stream.read1(CHUNK)  # type: ignore[attr-defined]
            if not data:
                break
            lines, partial = _split_lines(partial + data)
            if lines:
                self._put(lines)
        if partial.strip():
            self._put([partial])

    def _follow(self) -> None:
        followed = self._followed  # kept on self: a reader started again resumes where this one was
        waiting_logged = False
        while not self._stop.is_set():
            try:
                if followed is None:
                    self._followed = followed = _FollowedFile.open(self.path)
                    if followed is None:
                        if not waiting_logged:
                            log.warning("jsonl feed: %s is missing; waiting for it to appear", self.path)
                            waiting_logged = True
                        self._stop.wait(self.poll_s)
                        continue
                    self._recovered()
                    waiting_logged = False
                lines = followed.read_lines()
                if lines:
                    self._put(lines)
                    continue
                if followed.replaced_or_truncated(self.path):
                    self._drain(followed)  # what was appended to the old file before it was replaced
                    followed.close()
                    self._followed = followed = None
                    continue
            except OSError as exc:
                if followed is not None:
                    followed.close()
                    self._followed = followed = None
                self._failed(exc)
            self._stop.wait(self.poll_s)

    def _drain(self, followed: _FollowedFile) -> None:
        while lines := followed.read_lines():
            self._put(lines)
        if followed.partial.strip():
            self._put([followed.partial])

    def _failed(self, exc: OSError) -> None:
        if self.failing is None:
            self.failing = f"cannot read {self.path}: {exc.strerror or exc}"
            self._put(FeedReadError(self.failing))

    def _recovered(self) -> None:
        if self.failing is not None:
            log.info("jsonl feed: reading %s again", self.path)
            self.failing = None


class _FollowedFile:
    """One open generation of a followed file: where we are in it and the unfinished last line."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        st = os.fstat(fh.fileno())
        self.identity = (st.st_dev, st.st_ino)
        self.offset = 0
        self.partial = b""

    @classmethod
    def open(cls, path: str) -> _FollowedFile | None:
        """The file at ``path``, or None while it does not exist (other errors raise OSError)."""
        try:
            fh = open(path, "rb", buffering=0)  # noqa: SIM115 - closed by close()
        except FileNotFoundError:
            return None
        return cls(fh)  # type: ignore[arg-type]

    def read_lines(self) -> list[bytes]:
        data = self.fh.read(CHUNK)
        if not data:
            return []
        self.offset += len(data)
        lines, self.partial = _split_lines(self.partial + data)
        return lines

    def replaced_or_truncated(self, path: str) -> bool:
        """At EOF: True when ``path`` is now another file; rewinds when this one was truncated."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return False  # renamed away, nothing new yet: keep the old one until a new one appears
        if (st.st_dev, st.st_ino) != self.identity:
            return True
        if st.st_size < self.offset:
            log.info("jsonl feed: %s was truncated; reading it from the start", path)
            self.fh.seek(0)
            self.offset, self.partial = 0, b""
        return False

    def close(self) -> None:
        self.fh.close()


def _split_lines(data: bytes) -> tuple[list[bytes], bytes]:
    """Complete non-blank lines in ``data`` and the unfinished rest."""
    *lines, rest = data.split(b"\n")
    return [line for line in lines if line.strip()], rest


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
            except STORAGE_ERRORS:
                log.exception("persisting closed candles failed; the next roll-over or the final flush retries")

    def ready(self) -> bool:
        return self.reader.failing is None

    def stats(self) -> dict[str, int]:
        return {"bad_lines": self.parser.bad_lines, "unknown_ids": self.parser.unknown_ids}

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
