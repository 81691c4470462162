"""Which layout for the tick archive (issue 31)? Write rate, range-query time and bytes on disk of:

- sqlite-pk:     one SQLite (WAL) table, WITHOUT ROWID, PRIMARY KEY (id, ts, seq)   (the clustered key)
- sqlite-rowid:  one SQLite (WAL) table with a rowid, plus an index on (id, ts, seq)
- duckdb:        one DuckDB table, appended from an Arrow batch per commit (optional: DuckDB is not a project
                 dependency, as the measurement chose SQLite; `.venv/bin/pip install duckdb==2.0.0` to include it,
                 else the row says skipped)
- parquet:       one Parquet segment (zstd) per commit, a range read opens the segments whose span overlaps

Each commit is one second of ticks (`--rate` ticks, the group commit of server/store/history/archive.py); the ticks of
`--instruments` instruments interleave in time order as a live feed produces them. Range query: one instrument,
one hour, out of the whole archive (the rebuild of live candles and the flat files read per instrument).

    taskset -c 0 .venv/bin/python -m bench.archive_layout --seconds 40 --rate 50000
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

Tick = tuple[str, int, int, float, float]
T0 = 1_790_000_000_000


def batches(instruments: int, rate: int, seconds: int) -> Iterator[list[Tick]]:
    """`seconds` batches of `rate` ticks; each instrument's ticks spread evenly over the second."""
    rng = random.Random(7)
    ids = [f"inst{i:02d}" for i in range(instruments)]
    seqs = [0] * instruments
    prices = [50.0 + i for i in range(instruments)]
    step = 1000 * instruments / rate  # ms between two ticks of one instrument
    for s in range(seconds):
        batch: list[Tick] = []
        for k in range(rate):
            i = k % instruments
            seqs[i] += 1
            ts = T0 + s * 1000 + int((k // instruments) * step)
            prices[i] = max(1.0, prices[i] + rng.choice((-0.01, 0.0, 0.01)))  # a random walk in cents
            batch.append((ids[i], ts, seqs[i], round(prices[i], 2), float(rng.randint(1, 50))))
        yield batch


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


class SqliteLayout:
    def __init__(self, root: Path, without_rowid: bool) -> None:
        self.conn = sqlite3.connect(root / "a.sqlite3", isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        if without_rowid:
            self.conn.execute("CREATE TABLE ticks (id TEXT NOT NULL, ts INTEGER NOT NULL, seq INTEGER NOT NULL, "
                              "price REAL NOT NULL, volume REAL NOT NULL, PRIMARY KEY (id, ts, seq)) WITHOUT ROWID")
        else:
            self.conn.execute("CREATE TABLE ticks (id TEXT NOT NULL, ts INTEGER NOT NULL, seq INTEGER NOT NULL, "
                              "price REAL NOT NULL, volume REAL NOT NULL)")
            self.conn.execute("CREATE UNIQUE INDEX ticks_key ON ticks (id, ts, seq)")

    def write(self, batch: list[Tick]) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.executemany("INSERT OR IGNORE INTO ticks VALUES (?, ?, ?, ?, ?)", batch)
        self.conn.execute("COMMIT")

    def query(self, inst: str, start: int, end: int) -> int:
        rows = self.conn.execute("SELECT ts, seq, price, volume FROM ticks WHERE id = ? AND ts >= ? AND ts < ? "
                                 "ORDER BY ts, seq", (inst, start, end)).fetchall()
        return len(rows)

    def close(self) -> None:
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.conn.close()


class DuckLayout:
    def __init__(self, root: Path) -> None:
        import duckdb
        import pyarrow as pa

        self.pa = pa
        self.conn = duckdb.connect(str(root / "a.duckdb"))
        self.conn.execute("CREATE TABLE ticks (id VARCHAR, ts BIGINT, seq BIGINT, price DOUBLE, volume DOUBLE)")

    def write(self, batch: list[Tick]) -> None:
        cols = list(zip(*batch, strict=True))
        table = self.pa.table({"id": cols[0], "ts": cols[1], "seq": cols[2], "price": cols[3], "volume": cols[4]})
        self.conn.register("b", table)
        self.conn.execute("INSERT INTO ticks SELECT * FROM b")
        self.conn.unregister("b")

    def query(self, inst: str, start: int, end: int) -> int:
        rows = self.conn.execute("SELECT ts, seq, price, volume FROM ticks WHERE id = ? AND ts >= ? AND ts < ? "
                                 "ORDER BY ts, seq", [inst, start, end]).fetchall()
        return len(rows)

    def close(self) -> None:
        self.conn.execute("CHECKPOINT")
        self.conn.close()


class ParquetLayout:
    def __init__(self, root: Path) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        self.pa, self.pc, self.pq = pa, pc, pq
        self.root = root
        self.segments: list[tuple[int, int, Path]] = []

    def write(self, batch: list[Tick]) -> None:
        cols = list(zip(*batch, strict=True))
        table = self.pa.table({"id": cols[0], "ts": cols[1], "seq": cols[2], "price": cols[3], "volume": cols[4]})
        path = self.root / f"seg{len(self.segments):06d}.parquet"
        tmp = path.with_suffix(".tmp")
        self.pq.write_table(table, tmp, compression="zstd")
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        tmp.rename(path)
        self.segments.append((min(cols[1]), max(cols[1]), path))

    def query(self, inst: str, start: int, end: int) -> int:
        n = 0
        for lo, hi, path in self.segments:
            if hi < start or lo >= end:
                continue
            t = self.pq.read_table(path, filters=[("id", "=", inst), ("ts", ">=", start), ("ts", "<", end)])
            n += t.num_rows
        return n

    def close(self) -> None:
        pass


def measure(name: str, make: Callable[[Path], object], args: argparse.Namespace) -> dict[str, float]:
    root = Path(tempfile.mkdtemp(prefix=f"layout-{name}-", dir=args.dir))
    try:
        layout = make(root)
        data = list(batches(args.instruments, args.rate, args.seconds))
        cpu0, wall0 = time.process_time(), time.perf_counter()
        commits = []
        for batch in data:
            t = time.perf_counter()
            layout.write(batch)  # type: ignore[attr-defined]
            commits.append(time.perf_counter() - t)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        total = args.rate * args.seconds
        span = args.seconds * 1000
        queries = []
        for q in range(args.queries):
            start = T0 + (q * 7919) % max(1, span - args.window_ms)
            t = time.perf_counter()
            layout.query("inst07", start, start + args.window_ms)  # type: ignore[attr-defined]
            queries.append(time.perf_counter() - t)
        layout.close()  # type: ignore[attr-defined]
        size = dir_bytes(root)
        return {"ticks_per_s": total / wall, "ticks_per_cpu_s": total / cpu,
                "commit_p50_ms": statistics.median(commits) * 1000, "commit_max_ms": max(commits) * 1000,
                "query_p50_ms": statistics.median(queries) * 1000, "bytes_per_tick": size / total,
                "mib": size / 2**20}
    finally:
        shutil.rmtree(root, ignore_errors=True)


LAYOUTS: dict[str, Callable[[Path], object]] = {
    "sqlite-pk": lambda root: SqliteLayout(root, without_rowid=True),
    "sqlite-rowid": lambda root: SqliteLayout(root, without_rowid=False),
    "duckdb": DuckLayout,
    "parquet": ParquetLayout,
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=int, default=40, help="commits (one second of ticks each)")
    p.add_argument("--rate", type=int, default=50_000, help="ticks per commit")
    p.add_argument("--instruments", type=int, default=40)
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--window-ms", type=int, default=10_000, help="range query: one instrument, this long")
    p.add_argument("--dir", default=None, help="where the files go (default: the temp dir)")
    p.add_argument("--only", nargs="*", default=list(LAYOUTS))
    args = p.parse_args()
    print(f"{args.seconds} commits x {args.rate} ticks, {args.instruments} instruments; range query: one "
          f"instrument, {args.window_ms} ms window")
    print(f"{'layout':14} {'ticks/s':>10} {'ticks/cpu-s':>12} {'commit p50':>11} {'commit max':>11} "
          f"{'query p50':>10} {'B/tick':>7} {'MiB':>7}")
    for name in args.only:
        try:
            r = measure(name, LAYOUTS[name], args)
        except ImportError as exc:
            print(f"{name:14} skipped: {exc}")
            continue
        print(f"{name:14} {r['ticks_per_s']:>10,.0f} {r['ticks_per_cpu_s']:>12,.0f} {r['commit_p50_ms']:>9.1f}ms "
              f"{r['commit_max_ms']:>9.1f}ms {r['query_p50_ms']:>8.2f}ms {r['bytes_per_tick']:>7.1f} "
              f"{r['mib']:>7.1f}")


if __name__ == "__main__":
    main()
