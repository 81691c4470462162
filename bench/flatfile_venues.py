"""Issue 39 item 9's cost: making a trading day's per-venue flat files beside the all-venue ones.

    taskset -c 0 .venv/bin/python -m bench.flatfile_venues [--every-s 2] [--dir DIR]

Every catalogue instrument ticks every `--every-s` seconds through its venue's session windows of Wednesday
2026-11-18 (an assessment once a second through its publication window), into a SQLite history (ticks and their
1m bars) in a temporary data dir. Then, on a clock where every venue has closed that day, the ticks and
candles-1m files (csv.gz and Parquet) are made once for the all-venue set and once for every venue's set
(server/store/flatfiles/scopes.py), none made before; CPU time of the process is the figure (wall time on a
shared machine is mostly other processes'). The all-venue set runs before and after the venues' so neither gets
a colder page cache.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from datetime import date
from pathlib import Path

from server.market.venues.book import VenueBook
from server.market.venues.data import INSTRUMENT_VENUES
from server.store.flatfiles.days import FlatFileDays
from server.store.flatfiles.scopes import FlatFileSets
from server.store.history.archive_sqlite import SqliteTickArchive
from server.store.history.candle_store import SqliteCandleStore
from server.store.history.threads import History
from server.store.sql.sqlite_repos import SqliteCandles
from server.store.sql.storage import SqliteStorage

DAY = date(2026, 11, 18)
DATASETS = ("ticks", "candles-1m")
FORMATS = ("csv.gz", "parquet")


def fill(root: Path, book: VenueBook, every_ms: int) -> int:
    """Write the day's ticks and 1m bars; the tick count."""
    archive, store = SqliteTickArchive(root), SqliteCandleStore(root)
    n = 0
    for k, inst in enumerate(sorted(INSTRUMENT_VENUES)):
        clock = book.for_instrument(inst)
        step = every_ms if clock.venue.publication.value == "continuous" else 1000
        ticks = [(inst, t, i + 1, 100.0 + k + (i % 50) * 0.01, 1.0)
                 for i, t in enumerate(t for w in clock.windows(DAY) for t in range(w.start_ms, w.end_ms, step))]
        archive.append(ticks)
        bars: dict[int, list[float]] = {}
        for _i, t, _s, p, v in ticks:
            b = bars.setdefault(t - t % 60_000, [p, p, p, p, 0.0])
            b[1], b[2], b[3], b[4] = max(b[1], p), min(b[2], p), p, b[4] + v
        store.put_closed("1m", [(inst, t, *b) for t, b in bars.items()])  # type: ignore[misc]
        n += len(ticks)
    archive.close()
    store.close()
    return n


async def make(sets: list[FlatFileDays]) -> tuple[float, float, int, int]:
    """CPU seconds (of the process: the history's reader threads included), wall seconds, files with rows, bytes:
    every dataset and format of DAY for each set, made from nothing."""
    for days in sets:
        shutil.rmtree(days.root, ignore_errors=True)
    cpu, wall = time.process_time(), time.perf_counter()
    files = size = 0
    for days in sets:
        for dataset in DATASETS:
            for fmt in FORMATS:
                info = await days.file(dataset, DAY, fmt)
                files, size = files + bool(info.rows), size + info.bytes * bool(info.rows)
    return time.process_time() - cpu, time.perf_counter() - wall, files, size


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--every-s", type=float, default=2.0, help="seconds between two ticks of a traded instrument")
    p.add_argument("--dir", help="the data dir's parent (default: a temporary one)")
    args = p.parse_args()
    parent = Path(tempfile.mkdtemp(dir=args.dir))
    try:
        book = VenueBook()
        ticks = fill(parent, book, int(args.every_s * 1000))
        ids = sorted(INSTRUMENT_VENUES)
        storage = SqliteStorage(parent)
        history = History.sqlite(parent)
        sets = FlatFileSets.build(history, SqliteCandles(storage), ids, [INSTRUMENT_VENUES[i][0] for i in ids],
                                  [book.for_instrument(i) for i in ids], book.venues, parent / "flatfiles",
                                  {"ticks": 3650, "1m": 3650, "1d": 3650})
        print(f"{ticks:,} ticks of {len(ids)} instruments on {DAY} (every {args.every_s:g} s in session)")
        first = asyncio.run(make([sets.all]))
        venues = asyncio.run(make(list(sets.venues.values())))
        again = asyncio.run(make([sets.all]))
        for name, (cpu, wall, files, size) in (("all-venue", first), ("every venue", venues),
                                               ("all-venue again", again)):
            print(f"{name:>16}: {cpu:6.2f} s CPU  {wall:6.2f} s wall  {files:3} files  {size / 1e6:7.2f} MB")
        print(f"every venue's files cost {venues[0] / min(first[0], again[0]):.2f}x the all-venue files' CPU")
        history.close()
        storage.close()
    finally:
        shutil.rmtree(parent, ignore_errors=True)


if __name__ == "__main__":
    main()
