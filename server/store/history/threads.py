"""The history's threads, for the hub (SPEC 18): what the root builds once and hands to the tick path, the candle
roll-over, the HTTP routes and the retention job. Nothing here runs on the event loop's thread.

- `submit_ticks(ticks)`: on the loop, per batch of accepted ticks: the archive writer's buffer (server/store/
  archive.py), never a database call.
- `put_closed(interval, rows)`: awaited on the loop when buckets close; runs on the single candle-writer thread
  (which also runs backfill chunks and retention, so history writes other than ticks never race each other).
- `read(fn)`: awaited by range queries, `earliest`, flat-file listing; `fn(candles, archive)` runs on one of the
  reader threads, each with its own connections (SQLite WAL readers never wait for the writers).
- `*_blocking`: the same for start-up (rebuilding the live candles) and the CLI.

Same discipline as `SqliteStorage` (server/store/sql/storage.py): a connection is used only by the thread that opened
it, `fn` must not keep it, and a call after `close()` raises `StorageClosed`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from server.core.background import cancel_and_wait
from server.store.history.archive import ArchiveStats, ArchiveWriter, DetailedTick, Tick, TickArchive
from server.store.history.candle_store import Bar, CandleStore
from server.store.history.retention import Retention, prune
from server.store.sql.storage import StorageClosed

log = logging.getLogger("market.archive")
T = TypeVar("T")
Fn = Callable[[CandleStore, TickArchive], T]


class HistoryRounds:
    """A background job on the history: `round()` at start and every `every_s` after, until stopped or the history
    closes; a failed round is logged and tried again at the next one (the retention, the flat files)."""

    name = "history"  # what the log calls a failed round

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def round(self) -> object:
        raise NotImplementedError

    async def _run(self) -> None:
        while True:
            try:
                await self.round()
            except StorageClosed:
                return
            except Exception:
                log.exception("%s round failed (retried at the next round)", self.name)
            await asyncio.sleep(self.every_s)


class History:
    def __init__(self, open_archive: Callable[[], TickArchive], open_candles: Callable[[], CandleStore],
                 readers: int = 2, interval_s: float = 0.5) -> None:
        self._open_archive, self._open_candles = open_archive, open_candles
        self._local = threading.local()
        self._opened: list[tuple[CandleStore, TickArchive]] = []
        self._opened_lock = threading.Lock()
        self._closed = False
        self.writer = ArchiveWriter(open_archive, interval_s=interval_s)
        self._candle_writer = ThreadPoolExecutor(1, thread_name_prefix="history-writer")
        self._readers = ThreadPoolExecutor(readers, thread_name_prefix="history-reader")

    @classmethod
    def sqlite(cls, data_dir: Path, interval_s: float = 0.5) -> History:
        from server.store.history.archive_sqlite import SqliteTickArchive
        from server.store.history.candle_store import SqliteCandleStore

        return cls(lambda: SqliteTickArchive(data_dir), lambda: SqliteCandleStore(data_dir),
                   interval_s=interval_s)

    @classmethod
    def postgres(cls, url: str, interval_s: float = 0.5) -> History:
        from server.store.history.archive_pg import PgCandleStore, PgTickArchive

        return cls(lambda: PgTickArchive(url), lambda: PgCandleStore(url), interval_s=interval_s)

    # --- the event loop ---------------------------------------------------------------------------

    def submit_ticks(self, ticks: Sequence[Tick | DetailedTick]) -> bool:
        return self.writer.submit(ticks)

    async def put_closed(self, interval: str, rows: Sequence[Bar]) -> None:
        await self._submit(self._candle_writer, lambda candles, _: candles.put_closed(interval, rows))

    async def read(self, fn: Fn[T]) -> T:
        return await self._submit(self._readers, fn)

    async def prune(self, now: float, retention: Retention | None = None) -> dict[str, int]:
        """The retention job's round (on the candle-writer thread: short transactions, see retention.py)."""
        return await self._submit(self._candle_writer, lambda candles, archive: prune(archive, candles, now, retention))

    def stats(self) -> ArchiveStats:
        return self.writer.stats()

    @property
    def writable(self) -> bool:
        return self.writer.writable

    # --- start-up, shutdown, CLI --------------------------------------------------------------------

    def read_blocking(self, fn: Fn[T]) -> T:
        self._check_open()
        return self._readers.submit(self._call, fn).result()

    def write_blocking(self, fn: Fn[T]) -> T:
        self._check_open()
        return self._candle_writer.submit(self._call, fn).result()

    def close(self, timeout: float | None = 30.0) -> bool:
        """Commit every accepted tick, finish queued calls, close every connection; idempotent. False when ticks
        could not be committed (logged by the writer)."""
        if self._closed:
            return True
        self._closed = True
        flushed = self.writer.close(timeout)
        self._candle_writer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        with self._opened_lock:
            opened, self._opened = self._opened, []
        for candles, archive in opened:
            candles.close()
            archive.close()
        return flushed

    # --- internals --------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StorageClosed("history is closed")

    async def _submit(self, pool: ThreadPoolExecutor, fn: Fn[T]) -> T:
        self._check_open()
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, self._call, fn)
        except RuntimeError as exc:  # "cannot schedule new futures after shutdown"
            if self._closed:
                raise StorageClosed("history is closed") from exc
            raise

    def _call(self, fn: Fn[T]) -> T:
        pair: tuple[CandleStore, TickArchive] | None = getattr(self._local, "pair", None)
        if pair is None:
            pair = (self._open_candles(), self._open_archive())
            self._local.pair = pair
            with self._opened_lock:
                self._opened.append(pair)
        return fn(*pair)
