"""SQLite off the event loop: one writer thread and a few reader threads, each owning its connection.

Every storage call of the hub is `await storage.write(fn)` or `await storage.read(fn)`,
where `fn(conn)` is a plain synchronous function that runs on a storage thread:

- the writer thread owns the only connection that writes. SQLite allows one writer
  at a time anyway; a single thread makes that order explicit, and while it waits
  for the file's write lock (a CLI import holds it for one chunk) only writes queue
  behind it, never the loop;
- reader threads (WAL: readers never wait for a writer) serve reads, so a page of
  news or a key lookup is not stuck behind a write that waits for the lock.

A connection is used only by the thread that opened it. `fn` must not keep the
connection or a cursor beyond its return. Write functions manage their own
transactions (the repositories use `transaction(conn)`), so one `fn` is one unit
of work: a call never leaves a transaction open.

`read_blocking` / `write_blocking` are for start-up and shutdown (before the
server accepts or after it stopped) and for tests; request paths use the async ones.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from server.store.sql.db import DB_NAME, open_db
from server.store.sql.sqlite_tx import configure

T = TypeVar("T")
READERS = 2


class StorageClosed(RuntimeError):
    """A call after `close()` (shutdown already released the connections)."""


class SqliteStorage:
    """The hub's SQLite file, reached through its own threads (see the module docstring)."""

    def __init__(self, data_dir: Path, readers: int = READERS) -> None:
        self.data_dir = data_dir
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="sqlite-writer")
        self._readers = ThreadPoolExecutor(readers, thread_name_prefix="sqlite-reader")
        self._closed = False
        # opened on the writer thread; creates and seeds the database on first use (raises here if it cannot)
        self._writer.submit(self._open_writer).result()

    # --- calls ---------------------------------------------------------------------------------

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self._submit(self._writer, fn)

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self._submit(self._readers, fn)

    def write_blocking(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        self._check_open()
        return self._writer.submit(self._call, fn, True).result()

    def read_blocking(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        self._check_open()
        return self._readers.submit(self._call, fn, False).result()

    async def open(self) -> None:
        """Nothing to open: the constructor opened the writer (the protocol's hook for PostgreSQL's pool)."""

    async def aclose(self) -> None:
        self.close()

    async def ping(self) -> bool:
        """True when a reader answers `SELECT 1` (the file is there and readable)."""
        try:
            await self.read(lambda c: c.execute("SELECT 1").fetchone())
        except (sqlite3.Error, StorageClosed):
            return False
        return True

    def close(self) -> None:
        """Finish queued calls, then close every connection; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._readers.shutdown(wait=True)
        self._writer.shutdown(wait=True)
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()

    # --- internals -----------------------------------------------------------------------------

    async def _submit(self, pool: ThreadPoolExecutor, fn: Callable[[sqlite3.Connection], T]) -> T:
        self._check_open()
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(pool, self._call, fn, pool is self._writer)
        except RuntimeError as exc:  # "cannot schedule new futures after shutdown"
            if self._closed:
                raise StorageClosed("storage is closed") from exc
            raise

    def _check_open(self) -> None:
        if self._closed:
            raise StorageClosed("storage is closed")

    def _call(self, fn: Callable[[sqlite3.Connection], T], writer: bool) -> T:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open_reader() if not writer else self._open_writer()
        return fn(conn)

    def _open_writer(self) -> sqlite3.Connection:
        conn = open_db(self.data_dir)
        return self._keep(conn)

    def _open_reader(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.data_dir / DB_NAME, isolation_level=None, check_same_thread=False,
                               timeout=10.0)  # closed by close() on another thread
        configure(conn)
        conn.execute("PRAGMA query_only=ON")
        return self._keep(conn)

    def _keep(self, conn: sqlite3.Connection) -> sqlite3.Connection:
        self._local.conn = conn
        with self._conns_lock:
            self._conns.append(conn)
        return conn
