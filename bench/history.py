"""Issue 31's figures for the durable history (store/history/: archive*.py, candle_store.py, backfill.py;
store/flatfiles/files.py).

    taskset -c 0 .venv/bin/python -m bench.history ingest   # ArchiveWriter: 50k ticks/s offered for 30 s
    taskset -c 0 .venv/bin/python -m bench.history ingest --pg postgresql://postgres@127.0.0.1:5432/wt31_bench
    taskset -c 0 .venv/bin/python -m bench.history paging   # a year of 1m bars paged 1,000 at a time
    taskset -c 0 .venv/bin/python -m bench.history import   # a year of 1m candles for 40 instruments (CSV)
    taskset -c 0 .venv/bin/python -m bench.history import --instruments 1 --pg postgresql://.../wt31_bench
    taskset -c 0 .venv/bin/python -m bench.history flatfiles  # a day of ticks for 40 instruments: extra RSS

Everything goes to a temporary data dir (`--dir` to choose where), removed at the end.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path

from server.store.flatfiles.byte_range import iter_file, parse_range
from server.store.flatfiles.files import day_file, day_rows, file_path
from server.store.history.archive import ArchiveWriter, Tick
from server.store.history.archive_sqlite import SqliteTickArchive
from server.store.history.backfill import import_candles
from server.store.history.candle_store import Bar, SqliteCandleStore

T0 = 1_767_196_800_000  # 2026-01-01 00:00 +08:00
MINUTE = 60_000
DAY = 86_400_000


def weekday_minutes(days: int) -> Iterator[int]:
    """Bucket starts of every minute of the weekdays among `days` days from T0 (a 24-hour market: the most)."""
    for d in range(days):
        start = T0 + d * DAY
        if date.fromtimestamp(start / 1000).weekday() < 5:
            yield from range(start, start + DAY, MINUTE)


def bars_of(inst: str, days: int, rng: random.Random) -> Iterator[Bar]:
    price = 50.0 + rng.random() * 50
    for t in weekday_minutes(days):
        o = price
        price = max(1.0, price + rng.uniform(-0.2, 0.2))
        hi, lo = max(o, price) + 0.05, min(o, price) - 0.05
        yield (inst, t, round(o, 2), round(hi, 2), round(lo, 2), round(price, 2), float(rng.randint(1, 500)))


# --- ingest ----------------------------------------------------------------------------------------------

def bench_ingest(root: Path, args: argparse.Namespace) -> None:
    """Offer `rate` ticks a second in 10 slices a second (as a feed's batches arrive) for `seconds`; the writer
    thread commits them. Reports what was committed, the largest lag and the process's CPU per tick."""
    load0 = f"{os.getloadavg()[0]:.2f}"
    if args.pg:
        from server.store.history.archive_pg import PgTickArchive

        writer = ArchiveWriter(lambda: PgTickArchive(args.pg))
    else:
        writer = ArchiveWriter(lambda: SqliteTickArchive(root))
    ids = [f"inst{i:02d}" for i in range(40)]
    seqs = dict.fromkeys(ids, 0)
    slice_n = args.rate // 10
    t_start = time.perf_counter()
    cpu0 = time.process_time()
    worst_lag, worst_buffer, lags = 0.0, 0, []
    for k in range(args.seconds * 10):
        batch: list[Tick] = []
        now_ms = T0 + k * 100
        for j in range(slice_n):
            inst = ids[j % 40]
            seqs[inst] += 1
            batch.append((inst, now_ms + j * 100 // slice_n, seqs[inst], 80.0 + (j % 300) / 100, 1.0))
        writer.submit(batch)
        s = writer.stats()
        worst_lag, worst_buffer = max(worst_lag, s.lag_s), max(worst_buffer, s.buffered)
        lags.append(s.lag_s)
        time.sleep(max(0.0, t_start + (k + 1) * 0.1 - time.perf_counter()))  # paced: `rate` a second
    offered_s = time.perf_counter() - t_start
    writer.flush()
    drained_s = time.perf_counter() - t_start
    cpu = time.process_time() - cpu0
    s = writer.stats()
    writer.close()
    total = args.rate * args.seconds
    print(f"load average before/after: {load0} / {os.getloadavg()[0]:.2f}")
    print(f"offered {total:,} ticks in {offered_s:.1f} s ({total / offered_s:,.0f}/s); all committed after "
          f"{drained_s:.1f} s; commits {s.commits}, last commit {s.commit_s * 1000:.0f} ms; worst lag "
          f"{worst_lag:.2f} s (p50 {statistics.median(lags):.2f}, p99 {sorted(lags)[int(len(lags) * 0.99)]:.2f}), "
          f"worst buffer {worst_buffer:,}; CPU {cpu:.1f} s ({cpu / total * 1e6:.2f} us/tick, "
          f"generation included); {s.size_bytes / total:.1f} B/tick on disk")


# --- paging ---------------------------------------------------------------------------------------------

def bench_paging(root: Path, args: argparse.Namespace) -> None:
    store = SqliteCandleStore(root)
    rng = random.Random(1)
    t = time.perf_counter()
    n = 0
    for i in range(args.instruments):
        rows = list(bars_of(f"inst{i:02d}", 365, rng))
        store.put_closed("1m", rows)
        n += len(rows)
    print(f"stored {n:,} 1m bars ({args.instruments} instruments x a year of weekdays) in "
          f"{time.perf_counter() - t:.1f} s")
    store.close()
    reader = SqliteCandleStore(root, readonly=True)
    for rnd in range(2):
        times, pages, start = [], 0, T0
        nxt: int | None = start
        while nxt is not None:
            t = time.perf_counter()
            page = reader.range("1m", "inst07", nxt, T0 + 366 * DAY, 1000)
            times.append(time.perf_counter() - t)
            nxt, pages = page.next, pages + 1
        times.sort()
        print(f"round {rnd + 1}: {pages} pages of 1,000 bars (inst07's year): median "
              f"{statistics.median(times) * 1000:.2f} ms, p95 {times[int(len(times) * 0.95)] * 1000:.2f} ms, "
              f"max {times[-1] * 1000:.2f} ms")
    reader.close()


# --- import ---------------------------------------------------------------------------------------------

def bench_import(root: Path, args: argparse.Namespace) -> None:
    rng = random.Random(2)
    csv_path = root / "year-1m.csv"
    known = {f"inst{i:02d}" for i in range(args.instruments)}
    with open(csv_path, "w") as fh:
        fh.write("id,t,o,h,l,c,v\n")
        for inst in sorted(known):
            fh.writelines(f"{b[0]},{b[1]},{b[2]},{b[3]},{b[4]},{b[5]},{b[6]:.0f}\n" for b in bars_of(inst, 365, rng))
    size = csv_path.stat().st_size
    if args.pg:
        from server.store.history.archive_pg import PgCandleStore

        store: SqliteCandleStore | PgCandleStore = PgCandleStore(args.pg)
    else:
        store = SqliteCandleStore(root / "data")
    t, cpu0 = time.perf_counter(), time.process_time()
    report = import_candles(store, "1m", csv_path, known)
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu0
    store.close()
    print(f"imported {report.rows:,} 1m bars ({args.instruments} instruments, a year of weekdays, 24 h a day; "
          f"{size / 2**20:.0f} MiB CSV) in {wall:.1f} s ({report.rows / wall:,.0f} rows/s, CPU {cpu:.1f} s); "
          f"bad {report.bad}")


# --- flat files -----------------------------------------------------------------------------------------

def rss_kib(field: str = "VmRSS") -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux >= 4.0)


def bench_flatfiles(root: Path, args: argparse.Namespace) -> None:
    archive = SqliteTickArchive(root / "data")
    per_inst = args.ticks_per_s * 86_400
    rng = random.Random(3)
    for i in range(40):
        inst, price = f"inst{i:02d}", 50.0 + i
        for at in range(0, per_inst, 200_000):
            chunk = []
            for k in range(at, min(per_inst, at + 200_000)):
                price = max(1.0, price + rng.choice((-0.01, 0.0, 0.01)))
                ts = T0 + k * 1000 // args.ticks_per_s
                chunk.append((inst, ts, k + 1, round(price, 2), float(rng.randint(1, 9))))
            archive.append(chunk)
    total = per_inst * 40
    candles = SqliteCandleStore(root / "data")
    gc.collect()
    before_import = rss_kib()
    import pyarrow.parquet  # noqa: F401  (loaded once per process: its own cost, reported apart)

    print(f"importing pyarrow.parquet: +{(rss_kib() - before_import) / 1024:.1f} MiB RSS (once per process)")
    for fmt in ("csv.gz", "parquet"):
        reset_peak()
        base = rss_kib()
        t = time.perf_counter()
        info = day_file(root / "flat", "ticks", date(2026, 1, 1), fmt,
                        lambda: day_rows("ticks", archive, candles, T0, T0 + DAY))
        made = time.perf_counter() - t
        peak_make = rss_kib("VmHWM") - base
        reset_peak()
        base = rss_kib()
        path = file_path(root / "flat", "ticks", date(2026, 1, 1), fmt)
        rng_hdr = parse_range(f"bytes={info.bytes // 3}-", info.bytes)
        assert rng_hdr is not None
        served = sum(len(c) for c in iter_file(path)) + sum(len(c) for c in iter_file(path, rng_hdr.start))
        peak_serve = rss_kib("VmHWM") - base
        print(f"{fmt:8} {info.rows:,} ticks ({total:,} archived) -> {info.bytes / 2**20:.1f} MiB in {made:.1f} s; "
              f"extra peak RSS producing {peak_make / 1024:.1f} MiB, serving whole + a range "
              f"({served / 2**20:.0f} MiB read) {peak_serve / 1024:.1f} MiB")
    archive.close()
    candles.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["ingest", "paging", "import", "flatfiles"])
    p.add_argument("--dir", default=None)
    p.add_argument("--pg", default=None, help="ingest, import: a PostgreSQL URL (an empty database of the bench's own)")
    p.add_argument("--rate", type=int, default=50_000, help="ingest: ticks offered per second")
    p.add_argument("--seconds", type=int, default=30, help="ingest: for how long")
    p.add_argument("--instruments", type=int, default=40, help="paging/import: instruments")
    p.add_argument("--ticks-per-s", type=int, default=1, help="flatfiles: ticks per second per instrument")
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="history-bench-", dir=args.dir))
    print(f"pid {os.getpid()}, cpu affinity {sorted(os.sched_getaffinity(0))}, dir {root}")
    try:
        {"ingest": bench_ingest, "paging": bench_paging, "import": bench_import, "flatfiles": bench_flatfiles}[
            args.what](root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
