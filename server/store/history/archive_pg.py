"""The history on PostgreSQL (`--database-url`): the tick archive, partitioned by time, and the stored candles.

`archive_ticks` is range-partitioned on `ts` (epoch ms), one partition per UTC day (`archive_ticks_pYYYYMMDD`),
created on demand by the first append that needs it. Retention drops whole partitions (no vacuum debt); only the
partition that straddles the cut-off is deleted from row by row. The primary key (id, ts, seq) includes the
partition key, as PostgreSQL requires, and keeps a re-written tick (a fenced writer's retry) from doubling.

An append copies the batch into a temporary table (COPY: the fastest way in) and inserts from it with
`ON CONFLICT DO NOTHING`, in one transaction. Partitions are created under an advisory lock, so two writers (a
leader change) or a writer and the retention job never race on the same DDL.

`ensure_history_schema` creates the tables (idempotent, under the same lock); every class calls it on open.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime
from typing import Any

import psycopg
from psycopg.rows import DictRow, tuple_row

from server.store.history.archive import DetailedTick, Tick, with_detail
from server.store.history.candle_store import CHUNK, INTERVALS, Bar, Page, check_limit, page_of, table
from server.store.sql.pg import connect
from server.store.sql.pg_locks import lock_sql

HISTORY_LOCK = "market-history:"  # partition DDL and schema creation, one process at a time
DAY_MS = 86_400_000
READ_CHUNK = 5000

PG_HISTORY_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS archive_ticks (id text NOT NULL, ts bigint NOT NULL, seq bigint NOT NULL, "
    "price double precision NOT NULL, volume double precision NOT NULL, detail text, PRIMARY KEY (id, ts, seq)) "
    "PARTITION BY RANGE (ts)",
    *(f"CREATE TABLE IF NOT EXISTS bars_{interval} (id text NOT NULL, t bigint NOT NULL, o double precision "
      "NOT NULL, h double precision NOT NULL, l double precision NOT NULL, c double precision NOT NULL, "
      "v double precision NOT NULL, PRIMARY KEY (id, t))" for interval in INTERVALS),
    "CREATE TABLE IF NOT EXISTS history_ids (id text PRIMARY KEY)",
)
UPSERT_BARS = ("INSERT INTO {table} (id, t, o, h, l, c, v) SELECT id, t, o, h, l, c, v FROM bar_in "
               "ON CONFLICT (id, t) DO UPDATE SET o = EXCLUDED.o, h = EXCLUDED.h, l = EXCLUDED.l, "
               "c = EXCLUDED.c, v = EXCLUDED.v")


def ensure_history_schema(conn: psycopg.Connection[Any]) -> None:
    with conn.transaction():
        conn.execute(lock_sql(HISTORY_LOCK))
        for statement in PG_HISTORY_SCHEMA:
            conn.execute(statement)
        if conn.execute(DETAIL_HELD).fetchone() is None:  # an archive made before SPEC 19's detail gets the column
            conn.execute("ALTER TABLE archive_ticks ADD COLUMN detail text")  # (its partitions too; NULL before)


# asked first: an ALTER TABLE takes an exclusive lock on the archive (and every partition) even when it has nothing
# to do, and every history connection runs this when it opens
DETAIL_HELD = ("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
               "AND table_name = 'archive_ticks' AND column_name = 'detail'")


def partition_name(day: date) -> str:
    return f"archive_ticks_p{day:%Y%m%d}"


def partition_day(ts_ms: int) -> date:
    return datetime.fromtimestamp(ts_ms / 1000, UTC).date()


def day_ms(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


def note_ids(conn: psycopg.Connection[Any], ids: set[str]) -> None:
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO history_ids (id) VALUES (%s) ON CONFLICT DO NOTHING", [(i,) for i in ids])


def held_ids(conn: psycopg.Connection[DictRow]) -> list[str]:
    return [r["id"] for r in conn.execute("SELECT id FROM history_ids ORDER BY id").fetchall()]


class PgConnection:
    """One autocommit connection, made again on first use after it was lost (PostgreSQL restarted or failed
    over): the archive writer's retry and the history's reader threads recover without a restart."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.conn = connect(url)
        ensure_history_schema(self.conn)

    def live(self) -> psycopg.Connection[DictRow]:
        if self.conn.closed or self.conn.broken:
            self.conn = connect(self.url)
        return self.conn

    def close(self) -> None:
        self.conn.close()


class PgTickArchive(PgConnection):
    """`TickArchive` over one PostgreSQL connection (autocommit; each call its own transaction)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self._partitions: set[date] = set()  # known to exist (forgotten when an insert finds one missing)

    def append(self, ticks: Sequence[Tick | DetailedTick]) -> None:
        """As the protocol says. After a lost connection (PostgreSQL restarted, failed over) the next call
        connects again, so the writer's retry succeeds once PostgreSQL is back."""
        self.live()
        self._ensure_partitions({partition_day(t[1]) for t in ticks})
        try:
            self._insert(ticks)
        except psycopg.errors.CheckViolation:  # "no partition ... found for row": dropped by retention meanwhile
            self._partitions.clear()
            raise

    def _insert(self, ticks: Sequence[Tick | DetailedTick]) -> None:
        with self.conn.transaction():
            self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS tick_detail_in (id text, ts bigint, seq bigint, "
                              "price double precision, volume double precision, detail text) ON COMMIT DELETE ROWS")
            with (self.conn.cursor() as cur,
                  cur.copy("COPY tick_detail_in (id, ts, seq, price, volume, detail) FROM STDIN") as cp):
                for t in with_detail(ticks):
                    cp.write_row(t)
            self.conn.execute("INSERT INTO archive_ticks (id, ts, seq, price, volume, detail) SELECT id, ts, seq, "
                              "price, volume, detail FROM tick_detail_in ON CONFLICT DO NOTHING")
            note_ids(self.conn, {t[0] for t in ticks})

    def _ensure_partitions(self, days: set[date]) -> None:
        missing = days - self._partitions
        if not missing:
            return
        with self.conn.transaction():
            self.conn.execute(lock_sql(HISTORY_LOCK))
            for day in sorted(missing):
                start = day_ms(day)
                self.conn.execute(f"CREATE TABLE IF NOT EXISTS {partition_name(day)} PARTITION OF archive_ticks "
                                  f"FOR VALUES FROM ({start}) TO ({start + DAY_MS})")
        self._partitions |= missing

    def read(self, inst: str, start_ms: int, end_ms: int) -> Iterator[Tick]:
        self.live()
        with self.conn.transaction(), self.conn.cursor(name="archive_read", row_factory=tuple_row) as cur:
            cur.itersize = READ_CHUNK  # a server-side cursor: bounded memory whatever the range
            cur.execute("SELECT id, ts, seq, price, volume FROM archive_ticks WHERE id = %s AND ts >= %s "
                        "AND ts < %s ORDER BY ts, seq", (inst, start_ms, end_ms))
            for row in cur:
                yield (row[0], int(row[1]), int(row[2]), float(row[3]), float(row[4]))

    def read_detailed(self, inst: str, start_ms: int, end_ms: int) -> Iterator[DetailedTick]:
        self.live()
        with self.conn.transaction(), self.conn.cursor(name="archive_read", row_factory=tuple_row) as cur:
            cur.itersize = READ_CHUNK
            cur.execute("SELECT id, ts, seq, price, volume, detail FROM archive_ticks WHERE id = %s AND ts >= %s "
                        "AND ts < %s ORDER BY ts, seq", (inst, start_ms, end_ms))
            for row in cur:
                yield (row[0], int(row[1]), int(row[2]), float(row[3]), float(row[4]), row[5])

    def instruments(self) -> list[str]:
        self.live()
        return held_ids(self.conn)

    def last(self) -> tuple[int, int] | None:
        self.live()
        best: tuple[int, int] | None = None
        for inst in self.instruments():  # the key leads with id: one index descent per instrument and partition
            row = self.conn.execute("SELECT ts, seq FROM archive_ticks WHERE id = %s ORDER BY ts DESC, seq DESC "
                                    "LIMIT 1", (inst,)).fetchone()
            if row is not None and (best is None or (row["ts"], row["seq"]) > best):
                best = (int(row["ts"]), int(row["seq"]))
        return best

    def earliest(self, inst: str) -> int | None:
        self.live()
        row = self.conn.execute("SELECT MIN(ts) AS t FROM archive_ticks WHERE id = %s", (inst,)).fetchone()
        return None if row is None or row["t"] is None else int(row["t"])

    def partitions(self) -> list[tuple[str, date]]:
        self.live()
        rows = self.conn.execute("SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                                 "WHERE i.inhparent = 'archive_ticks'::regclass ORDER BY 1").fetchall()
        out = []
        for r in rows:
            stamp = r["name"].rsplit("_p", 1)[-1]
            out.append((r["name"], date(int(stamp[:4]), int(stamp[4:6]), int(stamp[6:8]))))
        return out

    def prune(self, before_ms: int) -> int:
        """Drop the partitions wholly before `before_ms`; delete the older rows of the one that straddles it."""
        self.live()
        deleted = 0
        with self.conn.transaction():
            self.conn.execute(lock_sql(HISTORY_LOCK))
            for name, day in self.partitions():
                if day_ms(day) + DAY_MS <= before_ms:
                    row = self.conn.execute(f"SELECT COUNT(*) AS n FROM {name}").fetchone()
                    deleted += int(row["n"]) if row else 0
                    self.conn.execute(f"DROP TABLE {name}")
                    self._partitions.discard(day)
                elif day_ms(day) < before_ms:
                    cur = self.conn.execute(f"DELETE FROM {name} WHERE ts < %s", (before_ms,))
                    deleted += cur.rowcount
        return deleted

    def size_bytes(self) -> int:
        self.live()
        row = self.conn.execute("SELECT COALESCE(SUM(pg_total_relation_size(i.inhrelid)), 0) AS n FROM pg_inherits i "
                                "WHERE i.inhparent = 'archive_ticks'::regclass").fetchone()
        return int(row["n"]) if row else 0

class PgCandleStore(PgConnection):
    """`CandleStore` over one PostgreSQL connection."""

    def put_closed(self, interval: str, rows: Sequence[Bar]) -> None:
        self.live()
        sql = UPSERT_BARS.format(table=table(interval))
        for at in range(0, len(rows), CHUNK):
            # one row per (id, t), the last one given: an upsert may not touch a row twice in one statement
            chunk = list({(r[0], r[1]): r for r in rows[at:at + CHUNK]}.values())
            with self.conn.transaction(), self.conn.cursor() as cur:
                cur.execute("CREATE TEMP TABLE IF NOT EXISTS bar_in (id text, t bigint, o double precision, "
                            "h double precision, l double precision, c double precision, v double precision) "
                            "ON COMMIT DELETE ROWS")
                with cur.copy("COPY bar_in (id, t, o, h, l, c, v) FROM STDIN") as cp:  # COPY: the fastest way in
                    for r in chunk:
                        cp.write_row(r)
                cur.execute(sql)
                note_ids(self.conn, {r[0] for r in chunk})

    def range(self, interval: str, inst: str, start: int, end: int, limit: int) -> Page:
        self.live()
        sql = (f"SELECT id, t, o, h, l, c, v FROM {table(interval)} WHERE id = %s AND t >= %s AND t < %s "
               "ORDER BY t LIMIT %s")
        rows = self.conn.execute(sql, (inst, start, end, check_limit(limit) + 1)).fetchall()
        return page_of([_bar(r) for r in rows], limit)

    def latest(self, interval: str, inst: str, end: int, limit: int) -> list[Bar]:
        self.live()
        rows = self.conn.execute(f"SELECT id, t, o, h, l, c, v FROM {table(interval)} WHERE id = %s AND t < %s "
                                 "ORDER BY t DESC LIMIT %s", (inst, end, check_limit(limit))).fetchall()
        return [_bar(r) for r in reversed(rows)]

    def earliest(self, interval: str, inst: str) -> int | None:
        self.live()
        row = self.conn.execute(f"SELECT MIN(t) AS t FROM {table(interval)} WHERE id = %s",
                                (inst,)).fetchone()
        return None if row is None or row["t"] is None else int(row["t"])

    def read_all(self, interval: str, start: int, end: int) -> Iterator[Bar]:
        self.live()
        name = table(interval)
        with self.conn.transaction(), self.conn.cursor(name="bars_read") as cur:
            cur.itersize = READ_CHUNK
            cur.execute(f"SELECT id, t, o, h, l, c, v FROM {name} WHERE t >= %s AND t < %s "
                        "ORDER BY id, t", (start, end))
            for row in cur:
                yield _bar(row)

    def prune(self, interval: str, before: int) -> int:
        self.live()
        with self.conn.transaction():
            cur = self.conn.execute(f"DELETE FROM {table(interval)} WHERE t < %s", (before,))
            return cur.rowcount

    def close(self) -> None:
        self.conn.close()


def _bar(r: DictRow) -> Bar:
    return (r["id"], int(r["t"]), float(r["o"]), float(r["h"]), float(r["l"]), float(r["c"]), float(r["v"]))
