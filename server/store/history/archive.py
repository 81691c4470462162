"""The tick archive seam (SPEC 18): every accepted tick, written in group commits off the event loop.

`TickArchive` is one connection's view of the archive (SQLite: server/store/history/archive_sqlite.py, PostgreSQL:
store/history/archive_pg.py); like the repositories of server/store/sql/sqlite_sync.py it is used by one thread only.
`ArchiveWriter` owns one archive on its own thread:

- `submit(ticks)` is called on the event loop (or any thread): it appends to an in-memory buffer under a lock and
  returns at once; it never touches the database.
- the writer thread commits the buffer every `interval_s` (0.5 s) and as soon as it holds `batch` ticks (group
  commit: one transaction per round). A tick is durable once its round committed: it waits at most `interval_s`
  plus one commit (~0.1 s for 50,000 ticks on SQLite), so a `kill -9` loses at most the last second of ticks.
- a failed commit (disk full, database locked, PostgreSQL gone) logs one line, keeps the ticks in the buffer (in
  order, ahead of newer ones), marks the writer not `writable` and retries every `retry_s`; the first commit that
  succeeds again logs one line and clears the flag. The database rolls the failed transaction back: nothing half
  written, nothing corrupt.
- `flush()` waits until everything submitted before the call is committed; `close()` flushes and stops.

Invariant: only the writer thread calls the archive's methods; only `submit` and the writer thread touch the
buffer, always under `_lock`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

log = logging.getLogger("market.archive")

# (instrument id, ts in epoch ms, seq (per instrument, from the feed), price, volume)
Tick = tuple[str, int, int, float, float]
# the same with the tick's detail (a futures tick's book, open interest, published settle and limits, SPEC 19) as
# server/market/tick.py's `detail_compact` writes it; None for a tick without one (every tick that is not a futures
# product's, imported ticks): what a live feed archives and its replay reads back
DetailedTick = tuple[str, int, int, float, float, str | None]


class TickArchive(Protocol):
    """One connection to the tick archive; every method runs on the thread that opened it."""

    def append(self, ticks: Sequence[Tick | DetailedTick]) -> None:
        """Write `ticks` in one transaction (a tick without a detail: NULL). Idempotent: a tick already held (same
        id, ts, seq) is skipped."""

    def read(self, inst: str, start_ms: int, end_ms: int) -> Iterator[Tick]:
        """The ticks of `inst` with start_ms <= ts < end_ms, by (ts, seq); streamed, in bounded memory."""

    def read_detailed(self, inst: str, start_ms: int, end_ms: int) -> Iterator[DetailedTick]:
        """`read` with each tick's detail (None where it has none): the live session's replay."""

    def instruments(self) -> list[str]:
        """Every instrument id that has ticks in the archive, sorted."""

    def last(self) -> tuple[int, int] | None:
        """(ts, seq) of the newest tick held (by ts), or None when the archive is empty."""

    def earliest(self, inst: str) -> int | None:
        """ts of the oldest tick of `inst` held, or None."""

    def prune(self, before_ms: int) -> int:
        """Delete the ticks with ts < before_ms (PostgreSQL: whole partitions); returns how many went."""

    def size_bytes(self) -> int:
        """Bytes the archive takes on disk (for /metrics)."""

    def close(self) -> None: ...


@dataclass(frozen=True)
class ArchiveStats:
    """What /metrics and /readyz show of the writer; a consistent snapshot."""

    writable: bool  # False from a failed commit until one succeeds again (/readyz 503)
    buffered: int  # ticks accepted and not committed yet
    committed: int  # ticks committed by this writer since it started
    commits: int
    failures: int  # failed commit attempts
    dropped: int  # ticks refused because the buffer was full (only while commits fail)
    last_ts: int | None  # ts of the newest tick committed
    last_seq: int | None  # its seq
    lag_s: float  # age of the oldest tick in the buffer (0 when empty)
    commit_s: float  # duration of the last successful commit
    size_bytes: int  # of the archive, measured after the last commit (every `size_every_s`)


class ArchiveWriter:
    """Group commits of submitted ticks on a dedicated thread (see the module docstring)."""

    def __init__(self, open_archive: Callable[[], TickArchive], *, interval_s: float = 0.5, batch: int = 50_000,
                 retry_s: float = 1.0, max_buffered: int = 5_000_000, size_every_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._open_archive = open_archive
        self._interval_s, self._batch, self._retry_s = interval_s, batch, retry_s
        self._max_buffered, self._size_every_s, self._clock = max_buffered, size_every_s, clock
        self._lock = threading.Condition()
        self._buffer: list[Tick | DetailedTick] = []
        self._arrivals: deque[list[float]] = deque()  # [ticks, clock() when accepted] per submit still buffered
        self._submitted = 0  # ticks accepted, ever
        self._done = 0  # ticks committed, ever
        self._stopping = False
        self._stats = ArchiveStats(True, 0, 0, 0, 0, 0, None, None, 0.0, 0.0, 0)
        self._size_at = 0.0
        self._stop = threading.Event()  # set by close(): ends a retry wait
        self._opened = threading.Event()
        self._open_error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="archive-writer", daemon=True)
        self._thread.start()
        self._opened.wait()
        if self._open_error is not None:
            raise self._open_error

    # --- any thread (the event loop) ------------------------------------------------------------

    def submit(self, ticks: Sequence[Tick | DetailedTick]) -> bool:
        """Accept `ticks` (in feed order). False, and nothing accepted, when closed or when the buffer already
        holds `max_buffered` ticks (only while commits keep failing: the caller counts them as lost)."""
        if not ticks:
            return True
        with self._lock:
            if self._stopping or len(self._buffer) >= self._max_buffered:
                if not self._stopping:
                    self._stats = _replace(self._stats, dropped=self._stats.dropped + len(ticks))
                return False
            self._arrivals.append([len(ticks), self._clock()])
            self._buffer.extend(ticks)
            self._submitted += len(ticks)
            if len(self._buffer) >= self._batch:
                self._lock.notify_all()
        return True

    def flush(self, timeout: float | None = None) -> bool:
        """Block until every tick submitted before this call is committed; False on timeout. Not on the loop."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            target = self._submitted
            self._lock.notify_all()
            while self._done < target:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._lock.wait(left)
        return True

    def close(self, timeout: float | None = 30.0) -> bool:
        """Flush, stop the thread and close the archive; idempotent. False when ticks could not be committed
        within `timeout` (they are logged as lost: the archive stayed unwritable)."""
        flushed = self.flush(timeout)
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
        self._stop.set()
        self._thread.join(timeout)
        if not flushed:
            log.error("archive: closed with %d ticks not committed (the archive could not be written)",
                      self.stats().buffered)
        return flushed

    def stats(self) -> ArchiveStats:
        with self._lock:
            lag = max(0.0, self._clock() - self._arrivals[0][1]) if self._arrivals else 0.0
            return _replace(self._stats, buffered=len(self._buffer), lag_s=lag)

    @property
    def writable(self) -> bool:
        return self._stats.writable

    # --- the writer thread ------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            archive = self._open_archive()
        except BaseException as exc:  # reported to the constructor's caller
            self._open_error = exc
            self._opened.set()
            return
        self._opened.set()
        self._refresh_size(archive)
        try:
            while self._round(archive):
                pass
        finally:
            archive.close()

    def _round(self, archive: TickArchive) -> bool:
        """Wait for work, commit one batch; False when stopping with nothing left (or nothing committable)."""
        with self._lock:
            if not self._buffer and not self._stopping:
                self._lock.wait(self._interval_s)
            batch = self._buffer[: self._batch]
            if not batch:
                return not self._stopping
        if self._commit(archive, batch):
            return True
        # wait out the outage: not woken by submit/flush (a full buffer would otherwise retry on every batch)
        return not self._stop.wait(self._retry_s)

    def _commit(self, archive: TickArchive, batch: list[Tick | DetailedTick]) -> bool:
        started = time.perf_counter()
        try:
            archive.append(batch)
        except Exception as exc:  # disk full, locked, connection lost: keep the ticks, retry
            self._failed(exc)
            return False
        took = time.perf_counter() - started
        with self._lock:
            del self._buffer[: len(batch)]
            self._forget_arrivals(len(batch))
            self._done += len(batch)
            if not self._stats.writable:
                log.warning("archive: writable again; %d ticks committed after the failure", len(batch))
            last = batch[-1]
            self._stats = _replace(self._stats, writable=True, committed=self._stats.committed + len(batch),
                                   commits=self._stats.commits + 1, last_ts=last[1], last_seq=last[2],
                                   commit_s=took)
            self._lock.notify_all()
        self._maybe_refresh_size(archive)
        return True

    def _forget_arrivals(self, n: int) -> None:
        """Drop the arrival records of the `n` oldest ticks (just committed); under `_lock`."""
        while n > 0 and self._arrivals:
            first = self._arrivals[0]
            if first[0] <= n:
                n -= int(first[0])
                self._arrivals.popleft()
            else:
                first[0] -= n
                n = 0

    def _failed(self, exc: Exception) -> None:
        with self._lock:
            if self._stats.writable:  # one line per outage, not one per retry
                log.error("archive: commit failed, ticks kept in memory and retried every %.1f s: %s: %s",
                          self._retry_s, type(exc).__name__, exc)
            self._stats = _replace(self._stats, writable=False, failures=self._stats.failures + 1)

    def _maybe_refresh_size(self, archive: TickArchive) -> None:
        if self._clock() - self._size_at >= self._size_every_s:
            self._refresh_size(archive)

    def _refresh_size(self, archive: TickArchive) -> None:
        self._size_at = self._clock()
        try:
            size = archive.size_bytes()
        except Exception:  # a metric: never a reason to stop writing
            return
        with self._lock:
            self._stats = _replace(self._stats, size_bytes=size)


def with_detail(ticks: Sequence[Tick | DetailedTick]) -> list[DetailedTick]:
    """Every tick as a `DetailedTick` (None where it came without a detail), for a statement of six columns."""
    return [t if len(t) == 6 else (*t, None) for t in ticks]  # type: ignore[misc]


def _replace(stats: ArchiveStats, **changes: object) -> ArchiveStats:
    return replace(stats, **changes)  # type: ignore[arg-type]
