"""The tick archive on SQLite and its writer thread (issue 31): group commits, flush/close, a failed commit
that keeps its ticks (a full disk on a small tmpfs), idempotent appends, paged candle ranges."""

from __future__ import annotations

import logging
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.store.history.archive import ArchiveWriter, Tick
from server.store.history.archive_sqlite import HISTORY_DB, SqliteTickArchive
from server.store.history.candle_store import Bar, SqliteCandleStore
from tests.conftest import ROOT
from tests.tmpfs import small_tmpfs

T0 = 1_790_000_000_000


def ticks(n: int, inst: str = "brent", t0: int = T0, seq0: int = 1) -> list[Tick]:
    return [(inst, t0 + k * 10, seq0 + k, 80.0 + k / 100, 1.0) for k in range(n)]


def test_append_read_idempotent(tmp_path: Path) -> None:
    a = SqliteTickArchive(tmp_path)
    a.append(ticks(100) + ticks(50, "wti"))
    a.append(ticks(100))  # the same ticks again (a fenced re-write): nothing doubles
    assert list(a.read("brent", T0, T0 + 1_000_000)) == ticks(100)
    assert list(a.read("brent", T0 + 100, T0 + 200)) == ticks(100)[10:20]  # half-open
    assert a.instruments() == ["brent", "wti"]
    assert a.last() == (T0 + 990, 100)
    assert a.earliest("wti") == T0 and a.earliest("gold") is None
    assert a.size_bytes() > 0
    assert a.prune(T0 + 500) == 100
    assert a.earliest("brent") == T0 + 500
    a.close()


def test_empty_archive(tmp_path: Path) -> None:
    a = SqliteTickArchive(tmp_path)
    assert a.last() is None and a.instruments() == [] and list(a.read("x", 0, 2**62)) == []
    assert a.prune(2**62) == 0
    a.close()


def test_writer_group_commits_and_close_loses_nothing(tmp_path: Path) -> None:
    w = ArchiveWriter(lambda: SqliteTickArchive(tmp_path), interval_s=0.05, batch=1000)
    for k in range(20):
        assert w.submit(ticks(250, t0=T0 + k * 10_000, seq0=1 + k * 250))
    assert w.close()
    s = w.stats()
    assert s.committed == 5000 and s.buffered == 0 and s.writable and s.last_seq == 5000
    assert s.commits >= 5  # batches of at most 1,000
    assert not w.submit(ticks(1))  # closed
    a = SqliteTickArchive(tmp_path)
    assert sum(1 for _ in a.read("brent", 0, 2**62)) == 5000
    a.close()


def test_flush_waits_for_commit(tmp_path: Path) -> None:
    w = ArchiveWriter(lambda: SqliteTickArchive(tmp_path), interval_s=10.0, batch=10**6)
    w.submit(ticks(10))
    assert w.flush(5.0)
    reader = SqliteTickArchive(tmp_path, readonly=True)
    assert len(list(reader.read("brent", 0, 2**62))) == 10
    reader.close()
    w.close()


def test_writer_open_error_is_raised(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises((OSError, sqlite3.Error)):
        ArchiveWriter(lambda: SqliteTickArchive(tmp_path / "file" / "sub"))


class FlakyArchive:
    """Fails `fail` appends, then delegates: a lost connection or a full disk that comes back."""

    def __init__(self, inner: SqliteTickArchive, fail: int) -> None:
        self.inner, self.fail = inner, fail

    def append(self, batch: list[Tick]) -> None:
        if self.fail > 0:
            self.fail -= 1
            raise sqlite3.OperationalError("database or disk is full")
        self.inner.append(batch)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_failed_commit_keeps_ticks_logs_once_and_retries(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "market.archive")
    w = ArchiveWriter(lambda: FlakyArchive(SqliteTickArchive(tmp_path), 3), interval_s=0.01,  # type: ignore
                      retry_s=0.01)
    w.submit(ticks(10))
    assert w.flush(5.0)
    s = w.stats()
    assert s.failures == 3 and s.writable and s.committed == 10
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "database or disk is full" in errors[0].getMessage()
    assert any("writable again" in r.getMessage() for r in caplog.records)
    w.close()


def test_buffer_cap_refuses_while_unwritable(tmp_path: Path) -> None:
    w = ArchiveWriter(lambda: FlakyArchive(SqliteTickArchive(tmp_path), 10**9), interval_s=0.01,  # type: ignore
                      retry_s=0.01, max_buffered=100)
    assert w.submit(ticks(100))
    assert not w.submit(ticks(1))
    assert w.stats().dropped == 1 and w.stats().buffered == 100
    assert not w.close(timeout=0.2)


def test_submit_from_many_threads_keeps_every_tick(tmp_path: Path) -> None:
    w = ArchiveWriter(lambda: SqliteTickArchive(tmp_path), interval_s=0.01, batch=500)

    def feed(inst: str) -> None:
        for k in range(40):
            w.submit(ticks(50, inst, T0 + k * 1000, 1 + k * 50))

    threads = [threading.Thread(target=feed, args=(f"i{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert w.close()
    a = SqliteTickArchive(tmp_path)
    for n in range(4):
        got = list(a.read(f"i{n}", 0, 2**62))
        assert [t[2] for t in got] == list(range(1, 2001))
    a.close()


# --- a real full disk -------------------------------------------------------------------------------

@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs to fill."""
    with small_tmpfs(tmp_path / "fs", "2m") as mnt:
        yield mnt


def test_full_disk_keeps_ticks_and_file_intact(small_fs: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "market.archive")
    data = small_fs / "data"
    w = ArchiveWriter(lambda: SqliteTickArchive(data), interval_s=0.02, batch=5000, retry_s=0.05)
    filler = small_fs / "filler"
    filler.write_bytes(b"\0" * (1024 * 1024))  # leave the archive well under 1 MiB
    n, k = 0, 0
    while w.writable and k < 400:
        w.submit(ticks(1000, t0=T0 + k * 100_000, seq0=1 + k * 1000))
        n += 1000
        k += 1
        w.flush(2.0)
    assert not w.writable, "the tmpfs never filled"
    assert w.stats().buffered > 0
    assert sum("database or disk is full" in r.getMessage() for r in caplog.records) == 1
    filler.unlink()  # space again: the kept ticks go in
    assert w.flush(10.0) and w.writable
    assert w.close()
    a = SqliteTickArchive(data)
    assert a.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert sum(1 for _ in a.read("brent", 0, 2**62)) == n
    a.close()
    assert (data / HISTORY_DB).exists()


# --- candles --------------------------------------------------------------------------------------------

def bars(n: int, inst: str = "brent", step: int = 60_000) -> list[Bar]:
    return [(inst, T0 + k * step, 1.0, 2.0, 0.5, 1.5, float(k)) for k in range(n)]


def test_candle_store_pages_whole_range(tmp_path: Path) -> None:
    s = SqliteCandleStore(tmp_path)
    s.put_closed("1m", bars(2500) + bars(10, "wti"))
    s.put_closed("1m", [("brent", T0, 9.0, 9.0, 9.0, 9.0, 9.0)])  # a bucket stored again replaces it
    got: list[Bar] = []
    start: int | None = T0
    while start is not None:
        page = s.range("1m", "brent", start, T0 + 10**10, 1000)
        got += page.rows
        start = page.next
    assert len(got) == 2500 and got[0][2] == 9.0 and got[1:] == bars(2500)[1:]
    assert s.range("1m", "brent", T0, T0 + 60_000 * 3, 10).rows == got[:3]
    assert s.range("1m", "brent", T0 + 10**10, T0 + 10**11, 10).rows == []
    assert s.latest("1m", "brent", T0 + 60_000 * 5, 2) == bars(5)[3:]
    assert s.earliest("1m", "brent") == T0 and s.earliest("5m", "brent") is None
    assert len(list(s.read_all("1m", T0, T0 + 60_000 * 3))) == 6
    assert s.prune("1m", T0 + 60_000 * 2500) == 2510
    s.close()


def test_candle_store_bad_inputs(tmp_path: Path) -> None:
    s = SqliteCandleStore(tmp_path)
    with pytest.raises(ValueError, match="unknown interval"):
        s.put_closed("2m", bars(1))
    with pytest.raises(ValueError, match="unknown interval"):
        s.range("1w", "brent", 0, 1, 10)
    with pytest.raises(ValueError, match="limit"):
        s.range("1m", "brent", 0, 1, 0)
    s.close()


KILLED_WRITER = """
import sys, time
from pathlib import Path
from server.store.history.archive import ArchiveWriter
from server.store.history.archive_sqlite import SqliteTickArchive
w = ArchiveWriter(lambda: SqliteTickArchive(Path(sys.argv[1])), interval_s=0.05)
w.submit([("brent", 1_790_000_000_000 + k, k + 1, 80.0, 1.0) for k in range(10_000)])
w.flush()
print("flushed", flush=True)
k, told = 10_000, 0
while True:  # keeps writing until killed mid-stream; says each time more is committed
    w.submit([("brent", 1_790_000_000_000 + k + j, k + j + 1, 80.0, 1.0) for j in range(1000)])
    k += 1000
    stats = w.stats()
    if stats.committed > told:
        told = stats.committed
        print(told, stats.buffered, flush=True)
    time.sleep(0.001)
"""


def test_kill_9_keeps_every_committed_tick(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "flushed"
        committed, buffered = 0, 0
        while committed < 15_000 or buffered == 0:  # a few commits after the flush, and ticks waiting for the next
            committed, buffered = map(int, proc.stdout.readline().split())
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        proc.kill()
    a = SqliteTickArchive(tmp_path)
    assert a.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    seqs = [t[2] for t in a.read("brent", 0, 2**62)]
    assert len(seqs) >= committed and seqs == list(range(1, len(seqs) + 1))  # a prefix: no gap, nothing torn
    a.close()


def test_lag_is_the_age_of_the_oldest_uncommitted_tick(tmp_path: Path) -> None:
    now = [100.0]
    w = ArchiveWriter(lambda: FlakyArchive(SqliteTickArchive(tmp_path), 10**9), interval_s=0.01,  # type: ignore
                      retry_s=0.01, clock=lambda: now[0])
    assert w.stats().lag_s == 0.0
    w.submit(ticks(3))
    now[0] = 101.5
    w.submit(ticks(2, seq0=4))
    now[0] = 102.0
    assert w.stats().lag_s == 2.0 and w.stats().buffered == 5
    w._forget_arrivals(4)  # the first submit and one tick of the second committed
    assert w.stats().lag_s == 0.5
    w._forget_arrivals(1)
    assert w.stats().lag_s == 0.0
    w.close(timeout=0.1)


def test_the_history_file_is_durable_and_shared_as_documented(tmp_path: Path) -> None:
    """Issue 46's mutation run on archive_sqlite.py: what the module docstring promises had no test. WAL with
    synchronous=NORMAL (a killed process keeps its commits; readers never block the writer), autocommit outside
    `write_tx`, a 10 s busy wait, one connection usable from the history's threads, a nested data dir made; a
    read-only archive cannot write and makes no tables."""
    data = tmp_path / "a" / "b"
    archive = SqliteTickArchive(data)
    conn = archive.conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 10_000
    assert conn.isolation_level is None and conn.execute("PRAGMA query_only").fetchone()[0] == 0
    done: list[bool] = []

    def append_elsewhere() -> None:  # the history's writer thread, not the one that opened the connection
        archive.append([("brent", 1, 1, 80.0, 1.0)])
        done.append(True)

    thread = threading.Thread(target=append_elsewhere)
    thread.start()
    thread.join()
    assert done == [True] and archive.earliest("brent") == 1
    reader = SqliteTickArchive(data, readonly=True)
    assert reader.conn.execute("PRAGMA query_only").fetchone()[0] == 1 and list(reader.read("brent", 0, 2)) == [
        ("brent", 1, 1, 80.0, 1.0)]
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.append([("brent", 2, 2, 80.0, 1.0)])
    reader.close()
    archive.close()
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    blank = SqliteTickArchive(fresh, readonly=True)
    tables = blank.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    assert tables == []
    blank.close()


def test_the_writers_stats_count_each_batch_and_the_newest_tick(tmp_path: Path) -> None:
    """archive.py's first mutation run: the stats /metrics shows (commits, committed, the newest tick, size, the
    commit's time) and the batch bound had no exact test. Five ticks in one submit, batches of two: three commits."""
    now = [100.0]
    writer = ArchiveWriter(lambda: SqliteTickArchive(tmp_path / "d"), interval_s=0.01, batch=2, size_every_s=0.0,
                           clock=lambda: now[0])
    first = writer.stats()
    assert (first.writable, first.buffered, first.committed, first.commits, first.last_ts, first.last_seq,
            first.lag_s, first.failures, first.dropped) == (True, 0, 0, 0, None, None, 0.0, 0, 0)
    assert writer.submit([]) and writer.stats().buffered == 0
    ticks = [("brent", 1000 + k, k + 1, 80.0 + k, 1.0) for k in range(5)]
    assert writer.submit(ticks[:3]) and writer.submit(ticks[3:])
    assert writer.flush(10.0)
    stats = writer.stats()
    assert (stats.committed, stats.commits, stats.last_ts, stats.last_seq, stats.buffered, stats.lag_s) == (
        5, 3, 1004, 5, 0, 0.0)
    assert stats.commit_s > 0 and stats.size_bytes > 0 and writer.writable
    assert writer.close() and not writer.submit(ticks) and writer.stats().dropped == 0  # closed: not "dropped"
    archive = SqliteTickArchive(tmp_path / "d")
    assert list(archive.read("brent", 0, 2**62)) == ticks
    archive.close()


def test_prune_deletes_exactly_the_older_ticks_an_hour_at_a_time(tmp_path: Path) -> None:
    """archive_sqlite's second mutation run: prune was tested only through the retention job's module. Five hours of
    one instrument (one step is an hour) and one tick of another: everything before the bound goes, a tick at the
    bound stays, and a second prune finds nothing."""
    hour, start = 3_600_000, 1_790_000_040_000
    rows = [("brent", start + k * 600_000, k + 1, 80.0, 1.0) for k in range(30)] + [("wti", start + 2 * hour, 1, 70.0,
                                                                                       1.0)]
    archive = SqliteTickArchive(tmp_path / "d")
    archive.append(rows)
    assert archive.last() == (start + 29 * 600_000, 30)
    bound = start + 3 * hour  # brent's 19th tick is at the bound
    assert archive.prune(bound) == 18 + 1
    assert archive.earliest("brent") == bound and archive.earliest("wti") is None
    assert [t[2] for t in archive.read("brent", 0, 2**62)] == list(range(19, 31))
    assert archive.prune(bound) == 0 and archive.prune(start) == 0
    archive.close()
