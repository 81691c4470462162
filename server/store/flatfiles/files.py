"""Flat files (SPEC 18): one file per dataset per closed trading day, CSV.gz or Parquet, made once and reused.

Datasets: `ticks` (columns `id,ts,seq,price,volume`, `ts` ISO 8601 with the +08:00 offset), `candles-1m` and
`candles-1d` (`id,t,o,h,l,c,v`, `t` as in `/kline`: ISO 8601 for 1m, the trading day's date for 1d). Rows come
by instrument, then time. The producers stream: rows are pulled from the archive's cursors and written in
batches (`BATCH` rows at a time into Arrow, `ROW_GROUP` rows per Parquet row group; line by line through gzip
for CSV), so memory stays bounded
whatever the day's size (bench/flatfiles_rss.py).

`day_file(...)` returns the day's file, producing it on first use into `<root>/<dataset>/<day>.<fmt>` (written
to a temporary name and renamed, so a reader never sees half a file) with a `.json` sidecar holding its byte
size, sha256 (the strong ETag) and row count. Only call it for a day that has closed: a file is never remade.
Blocking (reads the archive, writes the file): run it on a storage thread.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path
from typing import Any

from server.market.timefmt import iso
from server.market.timefmt import trading_day as default_trading_day
from server.store.history.archive import TickArchive
from server.store.history.candle_store import CandleStore

DATASETS = ("ticks", "candles-1m", "candles-1d")
FORMATS = ("csv.gz", "parquet")
BATCH = 10_000  # rows converted from Python at a time (Python's objects are what memory goes to)
ROW_GROUP = 100_000  # rows per Parquet row group
VERSION = ".version"  # the data version's file in the flat files' root (`data_version`)
HEADERS = {"ticks": ("id", "ts", "seq", "price", "volume"), "candles-1m": ("id", "t", "o", "h", "l", "c", "v"),
           "candles-1d": ("id", "t", "o", "h", "l", "c", "v")}


@dataclass(frozen=True)
class FlatFile:
    dataset: str
    date: str  # the trading day, YYYY-MM-DD
    fmt: str
    bytes: int
    sha256: str
    rows: int


def check(dataset: str, fmt: str) -> None:
    if dataset not in DATASETS:
        raise ValueError(f"unknown dataset {dataset!r} (one of {', '.join(DATASETS)})")
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")


def day_rows(dataset: str, archive: TickArchive, candles: CandleStore, start_ms: int, end_ms: int) -> Iterator[tuple]:
    """The dataset's rows of the day [start_ms, end_ms), by instrument then time, as stored (times in ms)."""
    if dataset == "ticks":
        for inst in archive.instruments():
            yield from archive.read(inst, start_ms, end_ms)
    else:
        yield from candles.read_all(dataset.removeprefix("candles-"), start_ms, end_ms)


def _time_text(dataset: str, trading_day: Callable[[int], date]) -> Callable[[int | date], str]:
    """A row's time as text: a daily row's trading day (given as a date, or as ms the trading day is read from),
    else ISO 8601 with the +08:00 offset."""
    if dataset == "candles-1d":
        return lambda t: t.isoformat() if isinstance(t, date) else trading_day(t).isoformat()
    return lambda ms: iso(ms / 1000)  # type: ignore[operator]


def write_csv_gz(dataset: str, rows: Iterable[tuple], out: Path, trading_day: Callable[[int], date]) -> int:
    """Rows as CSV, gzipped (no name, mtime 0: the same rows make the same bytes on every hub); the row count. Lines are
    built BATCH at a time and handed to gzip together (3x less CPU than csv.writer per row); numbers are written
    as csv.writer writes them (`str`), an id that needs quoting is quoted as it would quote it."""
    text = _time_text(dataset, trading_day)
    quoted: dict[str, str] = {}
    n = 0
    with open(out, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0, compresslevel=6) as gz:
        gz.write((",".join(HEADERS[dataset]) + "\n").encode())
        for batch in _batches(rows, BATCH):
            lines = [",".join((quoted.get(r[0]) or _quote(r[0], quoted), text(r[1]), *map(str, r[2:])))
                     for r in batch]
            lines.append("")
            gz.write("\n".join(lines).encode())
            n += len(batch)
    return n


def _quote(inst: str, known: dict[str, str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow((inst,))
    known[inst] = buf.getvalue()
    return known[inst]


def _arrow_schema(dataset: str) -> Any:
    import pyarrow as pa

    t = pa.timestamp("ms", tz="+08:00")
    if dataset == "ticks":
        return pa.schema([("id", pa.string()), ("ts", t), ("seq", pa.int64()), ("price", pa.float64()),
                          ("volume", pa.float64())])
    when = pa.date32() if dataset == "candles-1d" else t
    return pa.schema([("id", pa.string()), ("t", when), *((c, pa.float64()) for c in "ohlcv")])


def write_parquet(dataset: str, rows: Iterable[tuple], out: Path, trading_day: Callable[[int], date]) -> int:
    """Rows as Parquet (zstd), converted BATCH rows at a time, ROW_GROUP rows per row group; returns the count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _arrow_schema(dataset)
    daily = dataset == "candles-1d"
    n = 0
    pending: list[Any] = []  # Arrow batches of the row group being gathered (~30 bytes a row)
    with pq.ParquetWriter(out, schema, compression="zstd") as writer:
        for batch in _batches(rows, BATCH):
            cols = list(zip(*batch, strict=True))
            if daily:
                cols[1] = tuple(t if isinstance(t, date) else trading_day(t) for t in cols[1])
            arrays = [pa.array(c, type=f.type) for c, f in zip(cols, schema, strict=True)]
            pending.append(pa.record_batch(arrays, schema=schema))
            n += len(batch)
            if len(pending) * BATCH >= ROW_GROUP:
                writer.write_table(pa.Table.from_batches(pending, schema), row_group_size=ROW_GROUP)
                pending = []
        if pending or n == 0:
            writer.write_table(pa.Table.from_batches(pending, schema) if pending else schema.empty_table())
    return n


def _batches(rows: Iterable[tuple], size: int) -> Iterator[list[tuple]]:
    batch: list[tuple] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def digest(path: Path) -> tuple[int, str]:
    """(bytes, sha256 hex) of a file, read in 1 MiB pieces."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while piece := fh.read(1 << 20):
            h.update(piece)
            size += len(piece)
    return size, h.hexdigest()


def file_path(root: Path, dataset: str, day: date, fmt: str) -> Path:
    check(dataset, fmt)
    return root / dataset / f"{day.isoformat()}.{fmt}"


def cached(root: Path, dataset: str, day: date, fmt: str) -> FlatFile | None:
    """The day's file if it was made already (its sidecar is written last, so its presence means complete)."""
    meta = file_path(root, dataset, day, fmt).with_name(f"{day.isoformat()}.{fmt}.json")
    try:
        return FlatFile(**json.loads(meta.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def day_file(root: Path, dataset: str, day: date, fmt: str, rows: Callable[[], Iterable[tuple]],
             trading_day: Callable[[int], date] | None = None) -> FlatFile:
    """The day's file, made from `rows()` on first use (see the module docstring)."""
    found = cached(root, dataset, day, fmt)
    if found is not None:
        return found
    out = file_path(root, dataset, day, fmt)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    write = write_csv_gz if fmt == "csv.gz" else write_parquet
    try:
        n = write(dataset, rows(), tmp, trading_day or _default_day)
        size, sha = digest(tmp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    info = FlatFile(dataset, day.isoformat(), fmt, size, sha, n)
    meta = out.with_name(f"{out.name}.json")
    meta_tmp = meta.with_name(f".{meta.name}.tmp")
    meta_tmp.write_text(json.dumps(asdict(info)))
    os.replace(meta_tmp, meta)
    return info


def _default_day(ms: int) -> date:
    return default_trading_day(ms / 1000)


def data_version(root: Path) -> str:
    """The flat files' data version: moved by every import (`drop_days(..., new_rows=True)`) of the data dir,
    from any process; a hub remembers which days have no rows per version (server/store/flatfiles/days.py)."""
    try:
        return (root / VERSION).read_text()
    except OSError:
        return ""


def move_version(root: Path) -> None:
    """A new data version (unique: the time in ns and the pid), written whole (a temporary name, then renamed).
    No data dir (an admin command on PostgreSQL given one that does not exist): no hub keeps flat files or empty
    days there, so there is nothing to move and the dir is not made."""
    if not root.parent.is_dir():
        return
    root.mkdir(exist_ok=True)
    tmp = root / f".version.{os.getpid()}.tmp"
    tmp.write_text(f"{time.time_ns()}-{os.getpid()}")
    os.replace(tmp, root / VERSION)


def drop_days(root: Path, dataset: str, first: date, last: date, new_rows: bool = True) -> int:
    """Delete the dataset's files (both formats, with their sidecars) of days first..last: an import changed
    them, so they are made again on their next request. Returns how many days had files. `new_rows` (an import:
    rows may have come to days that had none) moves the data version, so hubs look at their empty days again;
    the retention's drop and a hub dropping a file it found empty do not."""
    if new_rows:
        move_version(root)
    return len(dropped_days(root, dataset, first, last))


def dropped_days(root: Path, dataset: str, first: date, last: date) -> set[str]:
    """`drop_days`, answering the days (YYYY-MM-DD) that had files."""
    folder = root / dataset
    dropped: set[str] = set()
    if not folder.is_dir():
        return dropped
    for path in folder.iterdir():
        day = path.name.lstrip(".")[:10]
        if day[:4].isdigit() and first.isoformat() <= day <= last.isoformat():
            path.unlink(missing_ok=True)
            dropped.add(day)
    return dropped
