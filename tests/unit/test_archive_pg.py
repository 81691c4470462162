"""The tick archive and the candle store on real PostgreSQL (issue 31): day partitions made on demand and
dropped by retention, idempotent appends, streamed reads, paged candle ranges. One fresh schema per test
(tests/pg_service.py); skipped with a reason when PostgreSQL is unreachable unless MARKET_REQUIRE_SERVICES=1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from server.store.history.archive import ArchiveWriter, Tick
from server.store.history.archive_pg import DAY_MS, PgCandleStore, PgTickArchive, partition_day, partition_name
from server.store.history.backfill import import_candles, import_ticks
from server.store.history.candle_store import Bar
from tests.pg_service import pg_schema

T0 = 1_790_000_000_000  # 2026-09-21 UTC, 12:53


@pytest.fixture
def url() -> Iterator[str]:
    with pg_schema() as u:
        yield u


def ticks(n: int, inst: str = "brent", t0: int = T0, step: int = 10, seq0: int = 1) -> list[Tick]:
    return [(inst, t0 + k * step, seq0 + k, 80.0 + k / 100, 1.0) for k in range(n)]


def test_partitions_on_demand_and_reads(url: str) -> None:
    a = PgTickArchive(url)
    three_days = ticks(30, step=DAY_MS // 10)  # spans 3 or 4 UTC days
    a.append(three_days)
    a.append(three_days)  # again: nothing doubles
    a.append(ticks(5, "wti"))
    days = {partition_day(t[1]) for t in three_days}
    assert {name for name, _ in a.partitions()} == {partition_name(d) for d in days}
    assert list(a.read("brent", 0, 2**62)) == three_days
    assert list(a.read("brent", three_days[3][1], three_days[6][1])) == three_days[3:6]
    assert a.instruments() == ["brent", "wti"]
    assert a.last() == (three_days[-1][1], 30)
    assert a.earliest("brent") == T0 and a.earliest("gold") is None
    assert a.size_bytes() > 0
    a.close()


def test_prune_drops_whole_partitions(url: str) -> None:
    a = PgTickArchive(url)
    data = ticks(40, step=DAY_MS // 10)
    a.append(data)
    cut = data[25][1]
    before = len(a.partitions())
    assert a.prune(cut) == 25
    assert len(a.partitions()) < before
    assert list(a.read("brent", 0, 2**62)) == data[25:]
    a.append(ticks(3, t0=T0))  # a dropped day's partition is made again when needed
    assert len(list(a.read("brent", 0, 2**62))) == 18
    a.close()


def test_writer_over_postgres(url: str) -> None:
    w = ArchiveWriter(lambda: PgTickArchive(url), interval_s=0.02, batch=2000)
    for k in range(10):
        w.submit(ticks(500, t0=T0 + k * 10_000, seq0=1 + k * 500))
    assert w.close()
    assert w.stats().committed == 5000
    a = PgTickArchive(url)
    assert sum(1 for _ in a.read("brent", 0, 2**62)) == 5000
    a.close()


def test_candles_on_postgres(url: str) -> None:
    s = PgCandleStore(url)
    rows: list[Bar] = [("brent", T0 + k * 60_000, 1.0, 2.0, 0.5, 1.5, float(k)) for k in range(25)]
    s.put_closed("1m", rows)
    s.put_closed("1m", [("brent", T0, 8.0, 8.0, 8.0, 8.0, 8.0), ("brent", T0, 9.0, 9.0, 9.0, 9.0, 9.0)])  # last wins
    page = s.range("1m", "brent", T0, T0 + 10**9, 10)
    assert len(page.rows) == 10 and page.rows[0][2] == 9.0 and page.next == rows[10][1]
    assert s.range("1m", "brent", rows[20][1], T0 + 10**9, 10).next is None
    assert s.latest("1m", "brent", rows[5][1], 2) == rows[3:5]
    assert s.earliest("1m", "brent") == T0 and s.earliest("1d", "brent") is None
    assert len(list(s.read_all("1m", T0, T0 + 10**9))) == 25
    assert s.prune("1m", rows[10][1]) == 10
    with pytest.raises(ValueError):
        s.put_closed("7m", rows)
    s.close()


def test_history_threads_on_postgres(url: str) -> None:
    from server.store.history.threads import History

    h = History.postgres(url, interval_s=0.02)
    h.submit_ticks(ticks(20))
    h.write_blocking(lambda c, a: c.put_closed("5m", [("brent", T0, 1, 2, 0.5, 1.5, 3)]))
    assert h.writer.flush(5.0)
    assert h.read_blocking(lambda c, a: (a.last(), c.earliest("5m", "brent"))) == ((T0 + 190, 20), T0)
    assert h.close()


def test_backfill_into_postgres(url: str, tmp_path: Path) -> None:
    root = tmp_path
    (root / "t.csv").write_text(f"id,ts,seq,price,volume\nbrent,{T0 / 1000},1,80,1\nbrent,{(T0 + 1) / 1000},2,81,1\n"
                              f"gold,{T0 / 1000},1,1,1\n")
    (root / "c.csv").write_text(f"brent,{T0 - T0 % 60_000},1,2,0.5,1.5,3\nbrent,{T0 - T0 % 60_000 + 1},1,2,0.5,1.5,3\n")
    a, s = PgTickArchive(url), PgCandleStore(url)
    r = import_ticks(a, root / "t.csv", {"brent"})
    assert (r.rows, r.bad, r.errors) == (2, 1, ["line 4: unknown instrument 'gold'"])
    assert [t[2] for t in a.read("brent", 0, 2**62)] == [1, 2]
    r = import_candles(s, "1m", root / "c.csv", {"brent"})
    assert (r.rows, r.bad) == (1, 1) and s.earliest("1m", "brent") == T0 - T0 % 60_000
    a.close()
    s.close()


def test_writer_survives_a_lost_connection(url: str) -> None:
    from server.store.sql.pg import connect

    archives: list[PgTickArchive] = []

    def open_archive() -> PgTickArchive:
        archives.append(PgTickArchive(url))
        return archives[-1]

    w = ArchiveWriter(open_archive, interval_s=0.02, retry_s=0.05)
    w.submit(ticks(10))
    assert w.flush(5.0)
    with connect(url) as admin:  # PostgreSQL drops the writer's connection (a restart, a failover)
        admin.execute("SELECT pg_terminate_backend(%s)", (archives[0].conn.info.backend_pid,))
    w.submit(ticks(10, seq0=11, t0=T0 + 1000))
    assert w.flush(10.0)
    s = w.stats()
    assert s.committed == 20 and s.writable and s.failures >= 1
    w.close()
    a = PgTickArchive(url)
    assert [t[2] for t in a.read("brent", 0, 2**62)] == list(range(1, 21))
    a.close()


def test_partition_dropped_under_the_writer_is_made_again(url: str) -> None:
    a, pruner = PgTickArchive(url), PgTickArchive(url)
    a.append(ticks(1))
    pruner.prune(T0 + 2 * DAY_MS)  # drops the partition a's cache still lists
    with pytest.raises(psycopg.errors.CheckViolation, match="no partition"):
        a.append(ticks(1))
    a.append(ticks(1))  # the retry finds the cache cleared and makes the partition
    assert len(list(a.read("brent", 0, 2**62))) == 1
    a.close()
    pruner.close()


def test_candle_reader_reconnects(url: str) -> None:
    from server.store.sql.pg import connect

    s = PgCandleStore(url)
    s.put_closed("1h", [("brent", T0, 1, 2, 0.5, 1.5, 3)])
    with connect(url) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (s.conn.info.backend_pid,))
    with pytest.raises(psycopg.OperationalError):
        s.earliest("1h", "brent")  # the call that finds the connection gone fails (a 503 to retry)
    assert s.earliest("1h", "brent") == T0  # the next one connects again
    s.close()
